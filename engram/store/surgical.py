"""Writing into a person's note without rewriting it: surgical frontmatter edits.

engram's canonical writer (:mod:`mergedriver.codec`) orders keys, quotes values its own
way and normalises the body: right for files engram wrote, wrong for a note a person
keeps in Obsidian, whose key order, quoting, comments, properties and whitespace are
theirs. :func:`write_into` is the writer for those files. It changes only what must
change:

- each top-level key whose value changed has its lines (the key line and the indented
  or ``- `` lines under it) replaced by the canonical form of the new value;
- keys engram adds go after the last existing key, in canonical order; keys it removes
  lose their lines; every other line — other keys, comments, blank lines — is kept byte
  for byte, and so are the original line endings and a UTF-8 byte-order mark;
- the body is kept byte for byte unless the content or the derived section changed; a
  new body takes the note's line endings (a Windows note stays CRLF throughout);
- a note without frontmatter gets a ``---`` block at the top; nothing else moves.

Safety: the edited frontmatter is read back, and every key engram did not mean to
touch must read as before and every key it set must read as set; otherwise the edit is
refused with :class:`~mergedriver.codec.CodecError` and the file is left alone.
Frontmatter that is not YAML at all cannot be edited and is refused the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from mergedriver import codec
from mergedriver.yamlio import Instant, dump_mapping, load_raw

_TOP_KEY = re.compile(r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#\-?:'"][^:]*?|-[^\s:][^:]*?))[ \t]*:(?:[ \t]|$)""")
_ORDER = {key: i for i, (key, _) in enumerate(codec.ENGRAM_KEYS)}
_TIMES = {key for key, kind in codec.ENGRAM_KEYS if kind == "time"}
_SENTINEL = object()
_FENCE = re.compile(r"^---[ \t]*$")


def _key_of(line: str) -> str | None:
    """The key a top-level frontmatter line starts, or None (a comment, a continuation)."""
    match = _TOP_KEY.match(line)
    if match is None:
        return None
    double, single, plain = match.groups()
    if double is not None:
        return bytes(double, "utf-8").decode("unicode_escape") if "\\" in double else double
    if single is not None:
        return single.replace("''", "'")
    return plain.rstrip()


def _blocks(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """Frontmatter lines grouped into (key, lines) blocks; key None for loose lines."""
    blocks: list[tuple[str | None, list[str]]] = []
    for line in lines:
        key = _key_of(line)
        if key is not None:
            blocks.append((key, [line]))
        elif blocks and blocks[-1][0] is not None and (line[:1] in (" ", "\t", "-") or not line.strip()):
            blocks[-1][1].append(line)
        else:
            blocks.append((None, [line]))
    # Blank lines and comments after a block belong to what follows, not to the value.
    out: list[tuple[str | None, list[str]]] = []
    for key, block in blocks:
        tail: list[str] = []
        while key is not None and len(block) > 1 and not block[-1].strip():
            tail.insert(0, block.pop())
        out.append((key, block))
        out += [(None, [line]) for line in tail]
    return out


def _render(key: str, value: Any) -> list[str]:
    if key in _TIMES and isinstance(value, str):
        value = Instant(value)
    return dump_mapping({key: value}).rstrip("\n").split("\n")


def _split(text: str) -> tuple[str | None, str | None, list[str], str]:
    """(opening fence line, closing fence line, frontmatter lines, body), every line
    with its own ending; fences are None when the note has no frontmatter."""
    lines = re.split(r"(?<=\n)", text)
    if lines and lines[0].rstrip("\r\n").strip() == "---":
        for j in range(1, len(lines)):
            if _FENCE.match(lines[j].rstrip("\r\n")):
                return lines[0], lines[j], lines[1:j], "".join(lines[j + 1 :])
    return None, None, [], text


def edit_frontmatter(
    data: bytes, changes: Mapping[str, Any], removals: Iterable[str] = (), body: str | None = None
) -> bytes:
    """``data`` with the given frontmatter keys set or removed and, when ``body`` is
    given, the body replaced; every other byte kept. Raises CodecError (see above)."""
    bom = data.startswith(b"\xef\xbb\xbf")
    text = codec.decode(data)
    opening, closing, front, old_body = _split(text)
    newline = "\r\n" if (opening or text.split("\n", 1)[0] + "\n").endswith("\r\n") else "\n"
    bare = [line.rstrip("\r\n") for line in front]
    before: Any = load_raw("".join(line + "\n" for line in bare)) if any(ln.strip() for ln in bare) else {}
    if not isinstance(before, dict):
        raise codec.CodecError("the frontmatter is not a mapping of keys to values")
    removals = [k for k in removals if k not in changes]
    out: list[str] = []
    done: set[str] = set()
    offset = 0
    for key, block in _blocks(bare):
        original = front[offset : offset + len(block)]
        offset += len(block)
        if key is not None and key in removals:
            continue
        if key is not None and key in changes and key not in done:
            out += [line + newline for line in _render(key, changes[key])]
            done.add(key)
            continue
        out += original
    added = sorted((k for k in changes if k not in done), key=lambda k: (_ORDER.get(k, len(_ORDER)), k))
    if added:
        last = max(
            (i for i, line in enumerate(out) if line.strip() and not line.lstrip().startswith("#")), default=-1
        )
        if last >= 0 and not out[last].endswith("\n"):
            out[last] += newline
        out[last + 1 : last + 1] = [line + newline for key in added for line in _render(key, changes[key])]
    new_front = "".join(line.rstrip("\r\n") + "\n" for line in out)
    after = load_raw(new_front) if new_front.strip() else {}
    if not isinstance(after, dict):
        raise codec.CodecError("editing the frontmatter in place would break it")
    for key in {*before, *after}:
        got = after.get(key, _SENTINEL)
        if key in changes:
            if got is _SENTINEL or codec.normalize_unknown(got) != codec.normalize_unknown(_plain(changes[key])):
                raise codec.CodecError(f"editing {key!r} in place would not read back as written")
        elif key in removals:
            if got is not _SENTINEL:
                raise codec.CodecError(f"cannot remove {key!r} in place")
        elif got != before.get(key, _SENTINEL):
            raise codec.CodecError(f"editing the frontmatter in place would change {key!r}")
    head = (opening or "---" + newline) + "".join(out) + (closing or "---" + newline)
    if closing is not None and not closing.endswith("\n"):
        head += newline  # the closing fence was the last line, without a newline
    if body is not None and _crlf_body(old_body, newline):
        body = body.replace("\r\n", "\n").replace("\n", "\r\n")  # the note's own line endings
    result = head + (old_body if body is None else body)
    return (b"\xef\xbb\xbf" if bom else b"") + result.encode("utf-8")


def _crlf_body(old_body: str, newline: str) -> bool:
    """Whether a new body should have CRLF line endings: the old body's, where it had
    lines (all CRLF), else the frontmatter's."""
    lines = old_body.count("\n")
    return old_body.count("\r\n") == lines if lines else newline == "\r\n"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
