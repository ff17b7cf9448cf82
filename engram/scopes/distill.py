"""``distill()``: passive capture from the tools a team already runs.

Two sources, read where they live (nothing to export):

- **agentsync** (the ``agentsync-mcp`` coordination board): ``claims.json`` on the
  board repository's ``agentsync`` branch, one claim per agent ``{task, touches,
  requires, branch, status, updated_at, note, changed_files}``. Every claim that reached
  ``done`` becomes an outcome item: the task, the agent's note, the files it changed.
  agentsync keeps only each agent's latest claim, so a claim that finished and was
  replaced between two sweeps is gone from the live file — distill reads the *git
  history* of ``claims.json`` instead (every commit since the last sweep), so such a
  churning claim is still captured, once.
- **context-keeper** (``context-keeper-mcp``): ``.context/decisions.json`` and
  ``constraints.json``. Each active decision and constraint becomes an item that renders
  every field of context-keeper's schema readably (lists as lists, never a repr) and
  keeps its id (``dec-001``) and ``origin`` in ``source``; an entry later marked ``superseded``
  or ``deprecated`` retires its copy (``superseded`` with ``supersededBy`` the successor's
  copy, or ``archived``); an entry whose text changed updates its copy.

Idempotent twice over. Each captured item carries its source key in ``source``
(``{system, project, ref, key}``), and a sweep looks that key up before writing, so
re-running — on this machine or a teammate's, after a sync — never duplicates. And a
machine-local watermark per source (``.engram/scopes/capture.json``: the last board
commit read, the hash of each decision log file) makes an unchanged source cost a fetch
and a stat and write nothing. Every write goes through :mod:`engram.items.writing`.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput
from engram.items import writing
from engram.items.state import VaultState
from engram.scopes.org import is_url
from engram.scopes.settings import capture_settings
from engram.scopes.status import Fix, Surface
from engram.store import rules
from engram.store.fsio import atomic_write
from engram.store.model import Engram, now

WATERMARKS = ("scopes", "capture.json")
BOARD_CACHE = ("scopes", "agentsync.git")
CLAIMS = "claims.json"
MAX_FILES_LISTED = 40


@dataclass
class SourceReport:
    system: str
    location: str | None
    status: str = "skipped"  # read | unchanged | skipped | error
    reason: str | None = None
    fix: Fix | None = None  # a command for the CLI, a tool call for MCP
    seen: int = 0  # commits (agentsync) or entries (context-keeper) read
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)

    def to_json(self, surface: Surface) -> dict[str, Any]:
        return {"system": self.system, "location": self.location, "status": self.status, "reason": self.reason,
                "fix": self.fix.on(surface) if self.fix else None, "seen": self.seen, "created": self.created, "updated": self.updated,
                "retired": self.retired}


@dataclass
class DistillReport:
    sources: list[SourceReport]

    @property
    def written(self) -> int:
        return sum(len(s.created) + len(s.updated) + len(s.retired) for s in self.sources)

    def to_json(self, surface: Surface) -> dict[str, Any]:
        return {"written": self.written, "sources": [s.to_json(surface) for s in self.sources]}

    def lines(self, surface: Surface) -> list[str]:
        """One line per source; a gap's fix as ``surface`` says it."""
        out = []
        for s in self.sources:
            if s.status in ("read", "unchanged"):
                out.append(f"{s.system}: {s.status} ({s.seen} read): {len(s.created)} new, {len(s.updated)} updated, "
                           f"{len(s.retired)} retired")
            else:
                out.append(f"{s.system}: {s.status} — {s.reason}" + (f" ({s.fix.on(surface)})" if s.fix else ""))
        return out


def distill(
    state: VaultState,
    *,
    agentsync: str | None = None,
    agentsync_branch: str | None = None,
    context_keeper: str | None = None,
) -> DistillReport:
    """Capture done claims from an agentsync board and decisions and constraints from a
    context-keeper ``.context/`` folder (defaults: the ``capture`` settings). A source
    that is not configured or cannot be read is reported with the reason and the fix,
    never silently empty. Raises InvalidInput for a bad argument."""
    cfg = capture_settings(state)
    for name, given in (("agentsync", agentsync), ("context_keeper", context_keeper)):
        if given is not None and not isinstance(given, str):
            raise InvalidInput(f"{name} must be a path or URL.", field=name, hint="e.g. ~/src/project")
        if given and not is_url(given.strip()) and not Path(_resolve(state, given.strip())).exists():
            raise InvalidInput(f"{name}: {_resolve(state, given.strip())} does not exist.", field=name,
                               hint="Pass an existing folder (absolute, or relative to the vault), or a URL.")
    marks = _load_marks(state)
    reports = [
        _agentsync(state, agentsync if agentsync is not None else cfg.agentsync,
                   agentsync_branch or cfg.agentsync_branch or "agentsync", marks),
        _context_keeper(state, context_keeper if context_keeper is not None else cfg.context_keeper, marks),
    ]
    _save_marks(state, marks)
    return DistillReport(reports)


# ---------------------------------------------------------------------- shared


def _resolve(state: VaultState, raw: str) -> str:
    if is_url(raw):
        return raw
    path = Path(raw).expanduser()
    return str((path if path.is_absolute() else state.root / path).resolve())


def _marks_path(state: VaultState) -> Path:
    return state.state_dir.joinpath(*WATERMARKS)


def _load_marks(state: VaultState) -> dict[str, Any]:
    try:
        data = json.loads(_marks_path(state).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_marks(state: VaultState, marks: Mapping[str, Any]) -> None:
    path = _marks_path(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(marks, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _captured(state: VaultState, key: str) -> Engram | None:
    """The item an earlier sweep (here or on a teammate's machine) made for ``key``."""
    state.ensure_fresh()
    found = state.index.items("json_extract(meta, '$.source.key') = ? ORDER BY created_at", (key,))
    return found[0] if found else None


def _key(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()[:16]


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:199].rstrip() + "…"


def _put(state: VaultState, report: SourceReport, key: str, title: str, body: str, *, domain: list[str],
         kind: str, tags: list[str], summary: str, source: dict[str, Any]) -> Engram:
    """Create the item for ``key``, or update its copy when the source text changed."""
    existing = _captured(state, key)
    if existing is None:
        result = writing.create(state, title, body, domain=domain, kind=kind, tags=tags, summary=summary,
                                source_type="imported", source={**source, "key": key}, dedupe=False)
        report.created.append(result.id)
        return result.item
    changes: dict[str, Any] = {}
    if existing.content != rules.content_text(body):
        changes["content"] = body
    if existing.title != title:
        changes["title"] = title
    if existing.summary != summary.strip():
        changes["summary"] = summary
    if changes:
        updated = writing.update(state, existing.id, changes, expected_version=existing.version)
        report.updated.append(existing.id)
        return updated
    return existing


# ---------------------------------------------------------------------- agentsync


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, encoding="utf-8", errors="replace")


def _agentsync(state: VaultState, raw: str, branch: str, marks: dict[str, Any]) -> SourceReport:
    report = SourceReport("agentsync", None)
    if not raw.strip():
        report.reason = "no agentsync board is configured"
        report.fix = Fix("engram scopes setup --agentsync PATH_OR_URL (or pass --agentsync)",
                         "setup(agentsync_repo='/path/to/the/board/clone') or capture.agentsync in engram.yaml")
        return report
    where = _resolve(state, raw.strip())
    report.location = f"{where} ({branch})"
    cache = state.state_dir.joinpath(*BOARD_CACHE)
    if not (cache / "HEAD").exists():
        cache.mkdir(parents=True, exist_ok=True)
        _git(cache, "init", "--quiet", "--bare")
    # The board's branch and, for a clone, its remote-tracking copy (agentsync pushes there first).
    got = [
        _git(cache, "fetch", "--quiet", "--no-tags", where, f"+refs/heads/{branch}:refs/board/local").returncode == 0,
        _git(cache, "fetch", "--quiet", "--no-tags", where,
             f"+refs/remotes/origin/{branch}:refs/board/remote").returncode == 0,
    ]
    if not any(got):
        report.status = "error"
        report.reason = f"{where} has no '{branch}' branch (or cannot be read)"
        report.fix = Fix.same("point capture.agentsync at the clone or URL that holds the agentsync board")
        return report
    tips = [ref for ref, ok in zip(("refs/board/local", "refs/board/remote"), got, strict=True) if ok]
    mark_key = f"agentsync:{where}:{branch}"
    last = marks.get(mark_key)
    spec = [*tips] + ([f"^{last}"] if last and _git(cache, "cat-file", "-e", f"{last}^{{commit}}").returncode == 0
                      else [])
    log = _git(cache, "log", "--format=%H", "--reverse", "--topo-order", *spec, "--", CLAIMS)
    commits = [c for c in log.stdout.split() if c]
    report.status = "read" if commits else "unchanged"
    report.seen = len(commits)
    project = Path(where.rstrip("/")).name.removesuffix(".git") or "board"
    latest: dict[str, tuple[str, dict[str, Any], str]] = {}
    for commit in commits:
        shown = _git(cache, "show", f"{commit}:{CLAIMS}")
        try:
            doc = json.loads(shown.stdout) if shown.returncode == 0 else {}
        except ValueError:
            continue  # a commit whose board did not parse: agentsync refuses those too
        claims = doc.get("claims") if isinstance(doc, dict) else None
        for agent, claim in (claims or {}).items() if isinstance(claims, dict) else ():
            if not isinstance(claim, dict) or not str(claim.get("status") or "").strip().lower().startswith("done"):
                continue
            key = _key("agentsync", project, str(agent), str(claim.get("task") or ""), str(claim.get("branch") or ""))
            latest[key] = (str(agent), claim, commit)
    for key, (agent, claim, commit) in latest.items():
        title, body, more = _outcome(agent, claim, project, commit)
        _put(state, report, key, title, body, **more)
    tip = max(tips, key=lambda ref: int(_git(cache, "rev-list", "--count", ref).stdout.strip() or 0))
    marks[mark_key] = _git(cache, "rev-parse", tip).stdout.strip()
    return report


def _outcome(agent: str, claim: Mapping[str, Any], project: str, commit: str) -> tuple[str, str, dict[str, Any]]:
    task = " ".join(str(claim.get("task") or "unnamed task").split())
    note = str(claim.get("note") or "").strip()
    branch = str(claim.get("branch") or "").strip()
    files = [c for c in claim.get("changed_files") or [] if isinstance(c, Mapping) and c.get("path")]
    lines = [f"{agent} finished “{task}”" + (f" on branch `{branch}`" if branch else "") + "."]
    if note:
        lines += ["", note]
    if files:
        lines += ["", "Changed files:"]
        lines += [f"- {c.get('status', 'M')} `{c['path']}`" for c in files[:MAX_FILES_LISTED]]
        if len(files) > MAX_FILES_LISTED:
            lines.append(f"- … and {len(files) - MAX_FILES_LISTED} more")
    touched = [str(t) for t in claim.get("touches") or [] if isinstance(t, str)]
    if touched and not files:
        lines += ["", "Touched: " + ", ".join(f"`{t}`" for t in touched[:MAX_FILES_LISTED])]
    summary = note.splitlines()[0] if note else f"{agent} finished {task}."
    source = {"system": "agentsync", "project": project, "agent": agent, "task": task, "branch": branch,
              "commit": commit, "at": str(claim.get("updated_at") or "")}
    return _title(task), "\n".join(lines) + "\n", dict(
        domain=["outcomes", project], kind="observation", tags=["agentsync", "outcome"],
        summary=summary[:2000], source=source,
    )


# ---------------------------------------------------------------------- context-keeper

_FILES = {"decisions.json": "decision", "constraints.json": "constraint"}


def _context_keeper(state: VaultState, raw: str, marks: dict[str, Any]) -> SourceReport:
    report = SourceReport("context-keeper", None)
    if not raw.strip():
        report.reason = "no context-keeper folder is configured"
        report.fix = Fix("engram scopes setup --context-keeper PATH (or pass --context-keeper)",
                         "setup(context_keeper='/path/to/project/.context') or capture.contextKeeper in engram.yaml")
        return report
    folder = Path(_resolve(state, raw.strip()))
    if folder.name != ".context" and (folder / ".context").is_dir():
        folder = folder / ".context"
    report.location = str(folder)
    present = [name for name in _FILES if (folder / name).is_file()]
    if not present:
        report.status = "error"
        report.reason = f"{folder} holds no decisions.json or constraints.json"
        report.fix = Fix.same("point capture.contextKeeper at the project's .context/ folder")
        return report
    project = folder.parent.name or "project"
    entries: dict[str, tuple[str, dict[str, Any]]] = {}
    changed = False
    for name in present:
        data = (folder / name).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        mark_key = f"context-keeper:{folder / name}"
        if marks.get(mark_key) != digest:
            changed = True
        marks[mark_key] = digest
        try:
            parsed = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            report.status = "error"
            report.reason = f"{folder / name} is not valid JSON ({exc})"
            report.fix = Fix.same("repair the file (context-keeper refuses to write over it too)")
            marks.pop(mark_key, None)
            return report
        for entry in parsed if isinstance(parsed, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:
                entries[entry["id"]] = (_FILES[name], entry)
    report.seen = len(entries)
    if not changed:
        report.status = "unchanged"
        return report
    report.status = "read"
    copies: dict[str, Engram] = {}
    for eid, (kind, entry) in entries.items():
        status = str(entry.get("status") or "active")
        key = _key("context-keeper", project, eid)
        if status == "active":
            made = _decision(kind, entry, project, eid, entries)
            if made is not None:
                title, body, more = made
                copies[eid] = _put(state, report, key, title, body, **more)
    for eid, (_kind, entry) in entries.items():
        status = str(entry.get("status") or "active")
        if status not in ("superseded", "deprecated"):
            continue
        copy = _captured(state, _key("context-keeper", project, eid))
        if copy is None or copy.status in ("superseded", "archived"):
            continue
        successor = copies.get(str(entry.get("superseded_by") or ""))
        changes: dict[str, Any] = {"deactivated_at": now()}
        if status == "superseded" or successor is not None:
            changes["status"] = "superseded"
            if successor is not None:
                changes["superseded_by"] = successor.id
        else:
            changes["status"] = "archived"
        writing.update(state, copy.id, changes, expected_version=copy.version)
        report.retired.append(copy.id)
    return report


def _decision(kind: str, e: Mapping[str, Any], project: str, eid: str,
              entries: Mapping[str, tuple[str, dict[str, Any]]]) -> tuple[str, str, dict[str, Any]] | None:
    """The item for one entry, every field of context-keeper's schema (``record_entry``,
    schema_version 4) rendered as Markdown a person reads: prose fields as labelled
    paragraphs, list fields (alternatives, constraints created, related entries) as
    lists, ``origin`` in ``source``. Status and supersession become the item's status."""

    def text(*names: str) -> str:
        for name in names:
            value = e.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, list) and value:
                return "; ".join(_plain(v) for v in value if _plain(v))
        return ""

    if kind == "decision":
        head = text("summary")
        parts = [("Problem", text("problem")), ("Why", text("why_chosen", "rationale")),
                 ("Tried", text("what_we_tried")), ("Trade-offs", text("tradeoffs"))]
        lists = [("Alternatives considered", [_alternative(a) for a in _listed(e, "alternatives")]),
                 ("Constraints it creates", [_plain(c) for c in _listed(e, "constraints_created")])]
        item_kind = "decision"
    else:
        head = text("rule")
        parts = [("Why", text("reason")), ("Incident", text("triggering_incident")),
                 ("Enforced by", text("enforced_by")), ("Scope", text("scope")), ("Hardness", text("hardness"))]
        lists = []
        item_kind = "fact"
    if not head:
        return None
    lists.append(("Related", [_related(r, entries) for r in _listed(e, "related_to")]))
    blocks = [head, *(f"**{label}:** {value}" for label, value in parts if value)]
    blocks += [f"**{label}:**\n\n" + "\n".join(f"- {line}" for line in lines)
               for label, lines in lists if any(lines)]
    hints = text("retrieval_hints")
    if hints:
        blocks.append(f"**Also asked as:** {hints}")
    body = "\n\n".join(blocks) + "\n"
    tags = ["context-keeper", kind]
    for tag in e.get("tags") or []:
        if isinstance(tag, str) and tag.strip() and len(tag) <= 64:
            tags.append(tag)
    source = {"system": "context-keeper", "project": project, "ref": eid,
              "at": str(e.get("updated_at") or e.get("created_at") or "")}
    if isinstance(e.get("origin"), str) and e["origin"]:
        source["origin"] = e["origin"]
    why = text("why_chosen", "rationale", "reason")
    return _title(head), body, dict(
        domain=["decisions" if kind == "decision" else "constraints", project], kind=item_kind,
        tags=tags, summary=(why or head)[:2000], source=source,
    )


def _listed(e: Mapping[str, Any], name: str) -> list[Any]:
    value = e.get(name)
    return value if isinstance(value, list) else []


def _plain(value: Any) -> str:
    """A scalar as one line; a mapping a hand-edited log put where a string belongs as
    ``key: value`` pairs — never a Python repr."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_plain(v)}" for k, v in value.items() if _plain(v))
    if isinstance(value, list):
        return "; ".join(_plain(v) for v in value if _plain(v))
    return " ".join(str(value).split()) if value is not None else ""


def _alternative(alt: Any) -> str:
    if not isinstance(alt, Mapping):
        return _plain(alt)
    option, reason = _plain(alt.get("option")), _plain(alt.get("reason_rejected"))
    rest = _plain({k: v for k, v in alt.items() if k not in ("option", "reason_rejected")})
    line = option + (f" — rejected: {reason}" if reason else "")
    return "; ".join(part for part in (line, rest) if part)


def _related(ref: Any, entries: Mapping[str, tuple[str, dict[str, Any]]]) -> str:
    """A related entry by its context-keeper id and, when the log holds it, its headline."""
    rid = _plain(ref)
    found = entries.get(rid)
    head = _plain(found[1].get("summary") or found[1].get("rule") or found[1].get("name")) if found else ""
    return f"`{rid}`" + (f": {head}" if head else "") if rid else ""
