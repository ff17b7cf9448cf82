"""Vault settings: one committed file the whole team shares.

``engram.yaml`` at the vault root holds what must be the same on every machine (ranking
weights, dedup thresholds, …). Machine-local state lives under ``.engram/`` and is never
committed. Every key has a default, so a vault without the file (a Co-Engram repository,
say) works as is.

Each concern declares its section as a frozen dataclass and reads it with
:meth:`Settings.section`: YAML keys are camelCase, fields snake_case, and a value of the
wrong type is an :class:`~engram.errors.InvalidInput` naming the file and key. Unknown
keys are ignored so a newer engram's settings do not break an older one, and so two
concerns may each read the keys of one section they care about. A section is parsed
once per loaded file: recall reads its weights on every query.

A file that cannot be taken (not a regular file, above :data:`MAX_SETTINGS_BYTES`, not
UTF-8, not YAML, YAML aliases) does not stop the vault from opening: :attr:`Settings.problem`
records why, every :meth:`Settings.section` raises it as InvalidInput naming the file,
reads that need no setting go on (the index then walks to stay fresh), and ``engram
doctor`` reports it. A teammate's broken push costs an error that says what to fix, never
a hang and never silently different settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from engram.errors import EngramError, FileTooLarge, InvalidInput, UnsafeFile
from engram.store.fsio import read_regular
from mergedriver import codec

SETTINGS_FILE = "engram.yaml"
#: The largest settings file read.
MAX_SETTINGS_BYTES = 256 * 1024

T = TypeVar("T")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True, slots=True)
class Settings:
    data: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    path: Path | None = None
    #: Why the file could not be taken (None when it was, or when there is none).
    problem: str | None = None
    _sections: dict[tuple[str, type], Any] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def load(cls, root: Path) -> Settings:
        path = root / SETTINGS_FILE
        try:
            raw = read_regular(path, SETTINGS_FILE, MAX_SETTINGS_BYTES)[1]
        except FileNotFoundError:
            return cls(path=None)
        except FileTooLarge:
            return cls(path=path, problem=f"is larger than {MAX_SETTINGS_BYTES:,} bytes")
        except UnsafeFile as exc:
            return cls(path=path, problem=exc.problem)
        except EngramError as exc:
            return cls(path=path, problem=f"cannot be read ({exc.message.rstrip('.')})")
        try:
            text = raw.decode("utf-8-sig")
            data = codec.load_yaml(text) if text.strip() else {}
        except UnicodeDecodeError as exc:
            return cls(path=path, problem=f"is not UTF-8 (byte {exc.start} is invalid)")
        except codec.CodecError as exc:
            return cls(path=path, problem=f"is not valid YAML: {str(exc).removeprefix('invalid YAML: ')}")
        if data is None:  # only comments (every setting commented out): all defaults
            data = {}
        if not isinstance(data, dict):
            return cls(path=path, problem="must be a mapping of settings")
        return cls(data=MappingProxyType(data), path=path)

    def check(self) -> None:
        """Raise InvalidInput when the file could not be taken (see the module docstring)."""
        if self.problem is not None:
            raise InvalidInput(
                f"{SETTINGS_FILE} {self.problem}.",
                field=SETTINGS_FILE,
                hint=f"Fix {self.path} (`git log -p -- {SETTINGS_FILE}` shows who changed it), "
                "then run `engram doctor`.",
            )

    def section(self, name: str, kind: type[T]) -> T:
        """Read section ``name`` into the dataclass ``kind`` (defaults for absent keys).

        Raises InvalidInput for a wrong value, or when the file itself was refused."""
        self.check()
        cached: T | None = self._sections.get((name, kind))
        if cached is None:
            cached = self._sections[(name, kind)] = self._read_section(name, kind)
        return cached

    def _read_section(self, name: str, kind: type[T]) -> T:
        raw = self.data.get(name) or {}
        if not isinstance(raw, Mapping):
            raise InvalidInput(
                f"{SETTINGS_FILE}: '{name}' must be a mapping.", hint="Fix the settings file."
            )
        values: dict[str, Any] = {}
        for field in dataclasses.fields(kind):  # type: ignore[arg-type]
            key = _camel(field.name)
            if key not in raw:
                continue
            default = getattr(kind(), field.name)
            values[field.name] = _coerce(f"{name}.{key}", raw[key], default)
        return kind(**values)


def _coerce(key: str, value: Any, default: Any) -> Any:
    what = type(default).__name__
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, int):
        # A count or a limit: 2.5 would reach SQL's LIMIT or range() and fail far from here.
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        what = "whole number"
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, Mapping):
        if isinstance(value, Mapping):
            merged = dict(default)
            for k, v in value.items():
                merged[k] = _coerce(f"{key}.{k}", v, default.get(k, v))
            return MappingProxyType(merged)
    elif isinstance(default, tuple):
        if isinstance(value, list):
            return tuple(value)
    else:
        return value
    raise InvalidInput(
        f"{SETTINGS_FILE}: {key} is {value!r}, expected a {what}.",
        field=key,
        hint="Fix the settings file.",
    )
