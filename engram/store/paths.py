"""Where items live: slugs, domain folders, and the guard that keeps writes in the vault.

An engram's path is ``[private/]<domainTags...>/<slug>.md``. Slugs and domain segments
are safe on Linux, macOS and Windows at once:

- Unicode letters, digits and marks are kept (NFC-normalised, lower-cased); every other
  run of characters becomes one ``-``. A mark is kept only on a kept character, so an
  emoji's invisible variation selector never starts a file name.
- No separators, no ``.``/``..``, no leading dot, no trailing dot or space, no Windows
  reserved device names (``con``, ``nul``, ``com1`` …), at most 80 characters and 200
  UTF-8 bytes, so a path segment never exceeds a file system's limit.
- Domain segments are validated, not silently rewritten into something else: a tag that
  names a parent folder or hides a separator is refused with an error. Case and spaces
  are normalised (``Data Science`` → ``data-science``) because macOS and Windows fold
  case and two spellings must not become two folders.

Two items with the same slug in the same folder are told apart by a suffix taken from
the id (``title-4x9k2m.md``), which is stable for the item and distinct across machines.

:func:`resolve_inside` is the last guard: every path the vault writes passes through it
and must resolve (symlinks followed) to a place inside the vault root.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path

from engram.errors import InvalidInput

MAX_SLUG_CHARS = 80
MAX_SEGMENT_BYTES = 200
MAX_DOMAIN_DEPTH = 8
#: First path segments with a meaning of their own; no domain may start with them.
RESERVED_TOP = frozenset({"synapses", "private", "trash"})
#: Vault folders that hold one machine's files — the derived state and private items —
#: which no commit ever carries, whatever a ``.gitignore`` says (see docs/format.md).
STATE_PREFIX = ".engram/"
MACHINE_LOCAL = (STATE_PREFIX, "private/")
_WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"}
    # Windows also reserves COM¹-COM³ and LPT¹-LPT³ (superscript digits; see Microsoft's
    # "Naming Files, Paths, and Namespaces"), which a slug keeps as letters and digits.
    | {f"{port}{n}" for port in ("com", "lpt") for n in [*"0123456789", "¹", "²", "³"]}
)


def machine_local(relpath: str) -> bool:
    """Whether a vault-relative path lies in ``.engram/`` or ``private/`` (:data:`MACHINE_LOCAL`)."""
    return relpath.startswith(MACHINE_LOCAL)


def _simplify(text: str) -> str:
    """Lower-case, NFC, keep letters/digits/marks, collapse the rest into single dashes."""
    text = unicodedata.normalize("NFC", text).lower()
    out: list[str] = []
    dash = False
    for ch in text:
        if ch in "'’":  # "balancer's" → "balancers", not "balancer-s"
            continue
        category = unicodedata.category(ch)
        if category[0] == "M" and (dash or not out):
            continue  # a mark on a dropped character (the U+FE0F of an emoji) is dropped too
        if category[0] in "LNM" or ch == "_":
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-_")


def _cap(segment: str) -> str:
    segment = segment[:MAX_SLUG_CHARS]
    while len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        segment = segment[:-1]
    return segment.rstrip("-_. ")


def slugify(title: str) -> str:
    """A file-name-safe slug for ``title`` (never empty, never reserved)."""
    slug = _cap(_simplify(title)) or "untitled"
    if slug in _WINDOWS_RESERVED:
        slug += "-note"
    return slug


def domain_segment(tag: str) -> str:
    """Validate and normalise one domain tag into a folder name.

    Raises InvalidInput when the tag would name a parent folder, contain a separator, or
    be empty once normalised.
    """
    raw = tag.strip()
    if not raw:
        raise InvalidInput("a domain tag is empty.", field="domainTags", hint="Drop it.")
    if "/" in raw or "\\" in raw or raw in (".", "..") or raw.startswith("."):
        raise InvalidInput(
            f"domain tag {tag!r} is not a folder name (no '/', '\\', '.' or '..').",
            field="domainTags",
            hint="Give each level as its own tag, e.g. --domain engineering/python.",
        )
    segment = _cap(_simplify(raw))
    if not segment:
        raise InvalidInput(
            f"domain tag {tag!r} has no letters or digits.",
            field="domainTags",
            hint="Use words, e.g. 'engineering'.",
        )
    if segment in _WINDOWS_RESERVED:
        segment += "-domain"
    return segment


def normalize_domain(tags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Validate a whole domain path; the first level may not be a reserved folder."""
    segments = tuple(domain_segment(tag) for tag in tags)
    if len(segments) > MAX_DOMAIN_DEPTH:
        raise InvalidInput(
            f"domain is {len(segments)} levels deep; at most {MAX_DOMAIN_DEPTH} are allowed.",
            field="domainTags",
            hint="Use fewer levels and put the rest in tags.",
        )
    if segments and segments[0] in RESERVED_TOP:
        raise InvalidInput(
            f"domain may not start with {segments[0]!r}; that folder is reserved.",
            field="domainTags",
            hint="Choose another top-level domain (use visibility='private' for private items).",
        )
    return segments


def split_domain(text: str) -> tuple[str, ...]:
    """Split a ``a/b/c`` domain path as typed by a user into raw tags (not validated)."""
    text = text.strip().strip("/\\")
    return tuple(re.split(r"[/\\]", text)) if text else ()


def id_suffix(item_id: str) -> str:
    """Six characters of the id's random part, lower-case: the tie-breaker for slugs."""
    return item_id[-6:].lower()


def item_relpath(
    domain: tuple[str, ...], slug: str, *, private: bool = False, suffix: str | None = None
) -> str:
    """The vault-relative POSIX path for an item."""
    name = f"{slug}-{suffix}" if suffix else slug
    parts = (("private",) if private else ()) + tuple(domain) + (f"{name}.md",)
    return "/".join(parts)


def resolve_inside(root: Path, relpath: str) -> Path:
    """Absolute path of ``relpath`` under ``root``; refuse anything that escapes it, or
    that goes through a symlink (engram reads and writes only real files and folders)."""
    if relpath.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", relpath):
        raise InvalidInput(f"path {relpath!r} is absolute.", hint="Use a path inside the vault.")
    parts = [p for p in re.split(r"[/\\]", relpath) if p not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"path {relpath!r} leaves the vault.", hint="Use a path inside the vault.")
    target = root.joinpath(*parts)
    # Only a link below the root can lead elsewhere, so lstat each component under it (a
    # missing one ends the walk: nothing below it exists to be a link). A realpath of the
    # whole path, root included, cost ~0.09 ms a call, and every read of a note pays it.
    at = str(root)
    for part in parts:
        at = os.path.join(at, part)
        try:
            linked = stat.S_ISLNK(os.lstat(at).st_mode)
        except OSError:
            break
        if linked:
            resolved_root, resolved = root.resolve(), target.resolve()
            if resolved != resolved_root and resolved_root not in resolved.parents:
                raise InvalidInput(
                    f"path {relpath!r} resolves outside the vault (through a symlink?).",
                    hint="Remove the link or use a path inside the vault.",
                )
            raise InvalidInput(
                f"path {relpath!r} goes through a symbolic link; engram does not follow links.",
                hint="Replace the link with the file or folder itself (`engram doctor` lists links).",
            )
    return target


def expected_paths(
    domain: tuple[str, ...], slug: str | None, title: str, item_id: str, rel: str, *, private: bool = False
) -> tuple[str, str]:
    """Where engram itself would put an item now at ``rel``: its natural path and the
    id-suffixed one (used when the natural path is taken).

    An item without a ``slug`` (a file written by another tool) keeps its file name when
    that is already a slug, else its title's slug — the same choice ``doctor`` makes.
    """
    stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
    slug = slug or (stem if slugify(stem) == stem else slugify(title))
    return (
        item_relpath(domain, slug, private=private),
        item_relpath(domain, slug, private=private, suffix=id_suffix(item_id)),
    )
