"""Regular expressions compiled on first use, not at import.

A module that holds many patterns (the instruction screen has over a hundred) would
otherwise compile all of them whenever it is imported — and every ``engram`` command,
git hook and server start imports the modules below the one it needs. A
:class:`LazyPattern` is written where ``re.compile`` was and used the same way
(``search``, ``match``, ``fullmatch``, ``finditer``, ``findall``, ``sub``); it compiles
once, on the first call, and then costs one attribute read per call. Only for
``str`` patterns; imports nothing but :mod:`re`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any


class LazyPattern:
    """``re.compile(pattern, flags)``, done on first use."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    @property
    def pattern(self) -> str:
        return self._source

    @property
    def flags(self) -> int:
        return self.compiled.flags

    def search(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return (self._compiled or self.compiled).search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return (self._compiled or self.compiled).match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return (self._compiled or self.compiled).fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> Iterator[re.Match[str]]:
        return (self._compiled or self.compiled).finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> list[Any]:
        return (self._compiled or self.compiled).findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return (self._compiled or self.compiled).sub(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags!r})"
