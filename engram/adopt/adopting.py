"""``engram adopt [PATH...]`` and the adoption summary ``doctor`` reports.

An adopted vault works without ``adopt``: every note is indexed, searchable and linked
from the start, with a derived id (:mod:`engram.store.notes`). ``adopt`` is for a person
who wants the identity in the file — so that it survives renames made outside engram
and a teammate's fresh clone names the note the same way — and it writes exactly one
key, ``id``, into each note that lacks one, through the surgical editor (every other
byte stays). Writes that need an id (a typed link, an update) adopt the notes they touch
on their own. An adopted note is still the person's (its frontmatter lacks engram's
``title``/``createdAt``: :func:`engram.store.notes.persons_note`): its counters stay
beside it and its typed links show on their other ends, so the id line is all that
engram ever writes into it unasked.

A note of those ``adopt`` is given may hold what an engram before issue 28 wrote into it
— usage counters, a ``## Synapses (derived)`` section (:func:`engram.items.repair.residue_of`;
``doctor`` calls it ``old-residue``). Adopting asks for an id line and nothing more, so
``adopt`` leaves that residue where it is and names each such note in its report, with
what it holds. Taking it out is a second request a person makes in the same command,
``clean_residue`` (``engram adopt --clean-residue``): then, for the notes given, exactly
those lines go (the counters move beside the note, :mod:`engram.items.sidecar`), every
other byte stays, and each clean-up is audited (``clear-residue``), as ``doctor --accept``
does it.

Invariants: a dry run writes nothing; a note whose frontmatter is not YAML is skipped
with the reason, never half-edited; an Obsidian template (a note in the templates
folder ``.obsidian/templates.json`` or Templater's settings name,
:mod:`engram.store.obsidian`) is skipped and said so — every note made from it would
copy its id; running ``adopt`` twice adopts nothing the second time. Every adoption is
audited (``adopt``) like any other write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engram.errors import EngramError, InvalidInput
from engram.items import repair
from engram.items.state import VaultState
from engram.store.format import read_bytes
from engram.store.notes import Note, read_note
from engram.store.obsidian import in_folders, template_folders
from engram.trust import roles


@dataclass(frozen=True, slots=True)
class AdoptReport:
    """What ``adopt`` did (or, on a dry run, would do)."""

    adopted: tuple[tuple[str, str], ...]  # (path, id written); on a dry run, id ""
    skipped: tuple[tuple[str, str], ...]  # (path, why)
    already: int  # notes that already carry an id
    dry_run: bool = False
    #: Notes holding an older engram's residue: (path, what it holds, taken out). It is
    #: taken out only when asked (``clean_residue``), never on a dry run.
    residue: tuple[tuple[str, str, bool], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "dryRun": self.dry_run,
            "adopted": [{"path": p, "id": i} for p, i in self.adopted],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "already": self.already,
            "residue": [{"path": p, "holds": w, "cleaned": c} for p, w, c in self.residue],
        }


@dataclass(frozen=True, slots=True)
class Adoption:
    """How far a vault is adopted, and what does not resolve (for ``doctor``)."""

    items: int = 0
    with_id: int = 0  # the id is in the file (engram items, adopted notes, Dendron notes)
    indexed_only: int = 0  # a derived id, nothing written
    adoptable: int = 0  # of those, what `engram adopt` would give an id
    not_yaml: tuple[str, ...] = ()  # notes whose frontmatter is not YAML (adopt skips them)
    clashes: tuple[tuple[str, str], ...] = ()  # (path, keys) engram read as the person's properties
    links: int = 0  # wikilinks that resolve to a note
    unresolved: tuple[tuple[str, str], ...] = ()  # (path, link text): no such note yet
    ambiguous: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (path, text, candidates)
    edited_outside: tuple[str, ...] = field(default=())  # hashes the next write brings up to date

    def lines(self) -> list[str]:
        out = [
            f"adoption: {self.items} note(s): {self.with_id} carry an id, {self.indexed_only} indexed only"
            + (f" (`engram adopt` would write an id into {self.adoptable})" if self.adoptable else ""),
            f"wikilinks: {self.links} resolve, {len(self.unresolved)} point at no note yet,"
            f" {len(self.ambiguous)} ambiguous",
        ]
        if self.not_yaml:
            out.append(f"{len(self.not_yaml)} note(s) have frontmatter that is not YAML (read by name and body)")
        if self.clashes:
            out.append(f"{len(self.clashes)} note(s) have properties engram reads as the person's own (not engram fields)")
        if self.edited_outside:
            out.append(f"{len(self.edited_outside)} item(s) edited outside engram: the next sync records the edit")
        return out


def adopt(
    state: VaultState, paths: Sequence[str] = (), *, dry_run: bool = False, clean_residue: bool = False
) -> AdoptReport:
    """Write an id into every note under ``paths`` (files or folders, vault-relative or
    absolute; default the whole vault) that has only a derived one, and name the notes
    there that hold an older engram's residue; with ``clean_residue``, take that residue
    out of them too (see the module docstring). Returns what was adopted, skipped (with
    why), already adopted, and the residue found (and taken out). Raises InvalidInput for
    a path outside the vault or with no notes, Forbidden for a reader (dry run or not)."""
    with state.refusals_audited("adopt", ", ".join(paths) or "(the whole vault)"):
        roles.require_writer(state.actor, state.role, "adopt notes")
    with state.lock.hold():
        state.refresh()
        rows = state.index.query("SELECT path, identity, by_person FROM items ORDER BY path")
        wanted = _select([(r["path"], r["identity"]) for r in rows], [_relative(state, p) for p in paths])
        persons = {r["path"] for r in rows if r["by_person"]}  # engram's own items hold no residue
        adopted: list[tuple[str, str]] = []
        skipped: list[tuple[str, str]] = []
        residue: list[tuple[str, str, bool]] = []
        already = 0
        templates = template_folders(state.root)
        for rel, identity in wanted:
            folder = in_folders(rel, templates)
            try:
                note = None
                if rel in persons:
                    data = read_bytes(state.abspath(rel), rel)
                    # a note with an id is parsed only when it may hold residue (most: not)
                    if identity != "file" or repair.may_hold_residue(data):
                        note = read_note(data, rel)
                if identity == "file":
                    already += 1
                elif folder is not None:
                    skipped.append((rel, template_reason(folder)))
                elif note is not None and note.front_error is not None:
                    skipped.append((rel, f"its frontmatter is not YAML ({note.front_error}); fix it, then adopt again"))
                    continue
                elif dry_run:
                    adopted.append((rel, ""))
                else:
                    adopted.append((rel, state.claim(rel).id))
                if note is not None:
                    residue += _residue(state, rel, note, clean=clean_residue and not dry_run)
            except (EngramError, FileNotFoundError) as exc:
                skipped.append((rel, str(exc)))
        return AdoptReport(tuple(adopted), tuple(skipped), already, dry_run, tuple(residue))


def _residue(state: VaultState, rel: str, note: Note, *, clean: bool) -> list[tuple[str, str, bool]]:
    """``[(rel, what it holds, taken out)]`` when the note holds an older engram's residue."""
    keys, section = repair.residue_of(note)
    if not keys and not section:
        return []
    return [(rel, repair.describe_residue(keys, section), clean and repair.clear_residue(state, rel))]


def template_reason(folder: str) -> str:
    """Why ``adopt`` leaves a template alone."""
    return (f"an Obsidian template (the templates folder {folder}/): every note made from it would copy an id"
            " written here, so it gets none")


def _relative(state: VaultState, ref: str) -> str:
    path = Path(ref)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(state.root).as_posix()
        except ValueError:
            raise InvalidInput(f"{ref} is outside the vault {state.root}.", hint="Pass a path inside the vault.") from None
    rel = path.as_posix().removeprefix("./").rstrip("/")
    state.abspath(rel or ".")  # refuses paths that leave the vault
    return "" if rel == "." else rel


def _select(rows: list[tuple[str, str]], prefixes: list[str]) -> list[tuple[str, str]]:
    if not prefixes or "" in prefixes:
        return rows
    out = [r for r in rows if any(r[0] == p or r[0].startswith(p + "/") for p in prefixes)]
    if not out:
        raise InvalidInput(
            f"no notes under {', '.join(prefixes)}.", hint="Pass note files or folders inside the vault (`engram list` shows items)."
        )
    return out


def summary(state: VaultState, *, refresh: bool = True) -> Adoption:
    """The adoption summary of the vault (see :class:`Adoption`). ``refresh=False`` reads
    the index as it is, for a caller that has just refreshed it: a second refresh at once
    re-reads every racily stamped file — in a folder just copied or cloned, the notes
    written in the last two seconds, a third of a 6,571-note vault's — for no news."""
    if refresh:
        state.ensure_fresh()
    index = state.index
    counts = {r["identity"]: r["n"] for r in index.query("SELECT identity, count(*) AS n FROM items GROUP BY identity")}
    not_yaml: list[str] = []
    clashes: list[tuple[str, str]] = []
    for r in index.query("SELECT path, identity, findings FROM items WHERE findings IS NOT NULL ORDER BY path"):
        found = json.loads(r["findings"])
        if "frontmatter" in found:
            not_yaml.append(r["path"])
        if found.get("clashes"):
            clashes.append((r["path"], ", ".join(found["clashes"])))
    derived = counts.get("derived", 0)
    templates = template_folders(state.root)
    not_adoptable = sum(
        1 for r in index.query("SELECT path, findings FROM items WHERE identity = 'derived'")
        if in_folders(r["path"], templates) is not None or '"frontmatter"' in (r["findings"] or "")
    )
    edited = [
        r["path"]
        for r in index.query(
            "SELECT path FROM items WHERE by_person = 0 AND content_hash != body_hash ORDER BY path"
        )
    ]
    links = index.links()
    return Adoption(
        items=sum(counts.values()),
        with_id=counts.get("file", 0),
        indexed_only=derived,
        adoptable=derived - not_adoptable,
        not_yaml=tuple(not_yaml),
        clashes=tuple(clashes),
        links=sum(1 for link in links if link.status == "ok"),
        unresolved=tuple((link.source_path, link.text) for link in links if link.status == "missing"),
        ambiguous=tuple((link.source_path, link.text, link.choices) for link in links if link.status == "ambiguous"),
        edited_outside=tuple(edited),
    )
