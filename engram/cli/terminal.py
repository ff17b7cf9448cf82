"""What the CLI writes to a terminal: text, never instructions to the terminal.

Titles, bodies, evidence and error messages the CLI prints are other people's (and
agents') text: a title written over MCP, pulled from a teammate or typed into a note can
hold escape sequences that clear the screen, retitle the window, recolour what follows,
or (bidirectional overrides) make a line read differently from what it holds. Stored
text is kept exactly as written; the CLI's output is what is made safe, in one place:
:class:`EngramGroup.invoke <engram.cli.EngramGroup>` runs every command with
``sys.stdout`` and ``sys.stderr`` wrapped in :class:`Escaping`, so every ``click.echo``,
prompt and error message goes through :func:`escape`.

:func:`escape` writes each C0 control character but newline and tab, DEL, each C1
control character and each bidirectional embedding, override and isolate as ``\\uXXXX``:
visible in plain text, and the JSON escape of the same character inside a ``--json``
string, so JSON output stays valid and decodes to the exact stored text.

Progress bars draw with ``\\r`` and cursor codes of their own: they write to
:func:`raw_stderr`. :func:`terminal_progress` decides whether a command shows them:
only when standard error is a terminal (a pipe, a log or a test gets nothing), and each
only once its step has run :data:`BAR_AFTER` seconds, so quick steps stay silent and a
long one (indexing a big vault, doctor reading every note) says what it does. Binary writers (the MCP stdio transport uses ``sys.stdout.buffer``)
are not wrapped; what they send is JSON, whose strings carry no raw control characters.
"""

from __future__ import annotations

import io
import re
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, TextIO

import click

from engram.store.progress import Bar, Progress

#: C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape(text: str) -> str:
    """``text`` with every character that could drive a terminal written as ``\\uXXXX``."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class Escaping(io.TextIOBase):
    """A text stream that escapes what it is given (:func:`escape`) and passes it on."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.raw = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.raw.write(escape(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        """The wrapped stream is not ours to close (nor is flushing it at collection)."""

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)

    @property
    def buffer(self) -> Any:
        return self.raw.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


@contextmanager
def escaped_output() -> Iterator[None]:
    """Run the block with ``sys.stdout`` and ``sys.stderr`` escaping (see the module
    docstring); nested use wraps once."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = out if isinstance(out, Escaping) else Escaping(out)
    sys.stderr = err if isinstance(err, Escaping) else Escaping(err)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):  # the reader went away, or the stream was closed
                stream.flush()
        sys.stdout, sys.stderr = out, err


def raw_stderr() -> TextIO:
    """Standard error without the escaping: for progress bars, which draw with ``\\r``."""
    err = sys.stderr
    return err.raw if isinstance(err, Escaping) else err


#: Seconds a step runs before its bar shows: a shorter step is over before a person wonders.
BAR_AFTER = 1.0


class LateBar:
    """A ``click.progressbar`` (the bar ``engram import`` draws) that appears only once
    its step has run ``after`` seconds, counting what was done before it appeared."""

    def __init__(self, label: str, length: int, stream: TextIO, after: float) -> None:
        self.label, self.length, self.stream, self.after = label, length, stream, after
        self.started = time.monotonic()
        self.done = 0
        self.bar: Any = None

    def __enter__(self) -> LateBar:
        self.started = time.monotonic()
        return self

    def update(self, n_steps: int) -> None:
        if self.bar is not None:
            self.bar.update(n_steps)
            return
        self.done += n_steps
        if time.monotonic() - self.started >= self.after:
            self.bar = click.progressbar(length=self.length, label=self.label, file=self.stream)
            self.bar.__enter__()
            self.bar.update(self.done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def terminal_progress(stream: TextIO | None = None, *, after: float | None = None) -> Progress | None:
    """Progress bars on ``stream`` (default: :func:`raw_stderr`) when it is a terminal,
    else None: nothing is drawn into a pipe, a file or a test's captured output. Each
    bar appears once its step has run ``after`` seconds (default :data:`BAR_AFTER`)."""
    out = raw_stderr() if stream is None else stream
    delay = BAR_AFTER if after is None else after
    try:
        if not out.isatty():
            return None
    except (AttributeError, ValueError):  # closed, or not a real stream
        return None

    def progress(label: str, length: int) -> AbstractContextManager[Bar]:
        return LateBar(label, length, out, delay)

    return progress
