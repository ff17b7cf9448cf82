"""The git merge driver shim: ``python -m mergedriver %O %A %B %L %P``.

git calls it once per file that changed on both sides, with the base (``%O``), ours
(``%A``, which is also where the result goes), theirs (``%B``), the conflict-marker size
(``%L``) and the file's path in the work tree (``%P``), from the top of the work tree.

Contract:

- exit 0: ``%A`` holds the finished merge (a structured merge, possibly with conflicts
  kept in a callout and flagged in the frontmatter; or a clean text merge). A kept
  conflict does not stop git — the item carries it for review, so clones converge
  without anyone resolving markers; set ``ENGRAM_MERGE_STRICT=1`` to exit 1 instead and
  have git stop on it;
- exit 1: ``%A`` holds a text merge with conflict markers (or ours, unchanged, when the
  input was binary or unreadable) and git reports a conflict; no side is ever dropped,
  because git keeps all three versions in its index until the conflict is resolved;
- exit 2: wrong arguments; a usage message on stderr and nothing written.

Inputs are bounded: a side larger than :data:`MAX_INPUT_BYTES` is not read at all (exit
1, ours unchanged), and sides above the codec's limits, or with YAML aliases, are merged
as text (:mod:`mergedriver.codec`), so a hostile file from a peer costs a conflict, never
a driver that runs for minutes.

``%A`` is replaced atomically (a temp file in the same folder, then a rename), so it is
never left truncated. Each merge appends a record to the vault's
``.engram/merges.jsonl``; a record that cannot be written never fails the merge.

This module and everything it imports use only the standard library and PyYAML, so the
driver starts fast (``tests/test_merge_driver_cli.py`` enforces it).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from mergedriver.merge import MergeResult, merge_file, merge_text
from mergedriver.records import append_records, find_state_dir

USAGE = (
    "usage: python -m mergedriver BASE OURS THEIRS [MARKER_SIZE] [PATH]\n"
    "git runs it as the merge driver `engram`; register it in a clone with\n"
    "`engram merge-driver install` (the command line is `... %O %A %B %L %P`).\n"
)


#: The largest side the driver reads (structured merges stop far below, at the codec's
#: limits; between the two, git's own text merge runs).
MAX_INPUT_BYTES = 64 * 1024 * 1024


class _Usage(Exception):
    pass


def _parse_args(args: list[str]) -> tuple[Path, Path, Path, int, str]:
    if not 3 <= len(args) <= 5:
        raise _Usage(f"expected 3 to 5 arguments, got {len(args)}")
    marker_size = 7
    if len(args) >= 4:
        try:
            marker_size = int(args[3])
        except ValueError:
            raise _Usage(f"MARKER_SIZE must be a whole number, not {args[3]!r}") from None
        if not 1 <= marker_size <= 256:
            raise _Usage(f"MARKER_SIZE must be from 1 to 256, not {marker_size}")
    path = args[4] if len(args) == 5 else ""
    return Path(args[0]), Path(args[1]), Path(args[2]), marker_size, path


def _read(path: Path, which: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_INPUT_BYTES:
                raise OSError(f"{which} is {size:,} bytes, over the {MAX_INPUT_BYTES:,} the driver reads")
            return handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(f"cannot read {which} ({path}): {exc.strerror or exc}") from exc


def _write_atomically(target: Path, data: bytes) -> None:
    # os.open with O_EXCL rather than tempfile: the module costs the driver ~5 ms to load.
    tmp = target.parent / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.engram-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _merge(base: bytes, ours: bytes, theirs: bytes, path: str, marker_size: int) -> MergeResult:
    try:
        return merge_file(base, ours, theirs, path, marker_size)
    except Exception as exc:  # noqa: BLE001 - a bug must still leave git a conflict, not a crash
        text = merge_text(base, ours, theirs, marker_size)
        return MergeResult(text.data, False, False, "fallback", {}, (), f"internal error: {exc!r}")


def _report(result: MergeResult, path: str) -> None:
    name = path or "the file"
    if result.kind == "fallback":
        print(
            f"engram merge: {name}: {result.reason}; merged as text with conflict markers. "
            "Fix the file, then `git add` it.",
            file=sys.stderr,
        )
    elif not result.clean:
        print(
            f"engram merge: {name}: kept {len(result.conflicts)} conflict(s) for review; "
            "the item is flagged (see `engram conflicts`).",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    """Run the driver; returns the exit status (see the module docstring)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    try:
        base_path, ours_path, theirs_path, marker_size, path = _parse_args(args)
    except _Usage as exc:
        sys.stderr.write(f"engram merge driver: {exc}.\n{USAGE}")
        return 2
    try:
        ours = _read(ours_path, "ours")
        theirs = _read(theirs_path, "theirs")
        base = _read(base_path, "base")
    except OSError as exc:
        print(f"engram merge: {exc}; left the file for git to report as a conflict.", file=sys.stderr)
        return 1
    result = _merge(base, ours, theirs, path, marker_size)
    if result.data != ours:
        try:
            _write_atomically(ours_path, result.data)
        except OSError as exc:
            print(f"engram merge: cannot write the result to {ours_path}: {exc}.", file=sys.stderr)
            return 1
    if result.kind != "trivial":
        append_records(find_state_dir(Path.cwd(), path), [result.record(path)], via="driver")
    _report(result, path)
    strict = os.environ.get("ENGRAM_MERGE_STRICT") == "1"
    return 0 if result.ok and (result.clean or not strict) else 1


if __name__ == "__main__":
    sys.exit(main())
