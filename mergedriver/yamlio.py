"""YAML for the codec: typing without guessing, canonical output, and a fast path.

Reading: a safe loader (libyaml's when present) that resolves only ``null``, ``true`` /
``false`` and plain decimal numbers implicitly; everything else stays text, and numbers
keep their source text (:class:`Number`) until the schema says what a field holds. Files
engram writes take a line-by-line reader (:func:`fast_mapping`) that yields exactly what
the loader would, about ten times faster; any other shape goes to the loader.

Bounds: YAML is read from files teammates push, so reading is bounded. Aliases
(``*name``) are refused — a 600-byte "billion laughs" document expands to gigabytes once
anything walks it — and so is nesting deeper than :data:`MAX_DEPTH`; libyaml itself stops
at 1,000 levels, but recursive walks of the result would not. The caller caps the input
size (:mod:`mergedriver.codec`), so the work per file is linear in a bounded input.

Writing: block style, lists indented under their key, nothing folded; strings YAML 1.1
would misread are quoted, canonical instants (:class:`Instant`) are written plain as
Co-Engram writes them. :func:`dump_mapping` writes simple entries directly and hands the
rest to PyYAML entry by entry, byte-identical to a whole-mapping dump.

Imports only the standard library and PyYAML: the merge driver depends on it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import yaml


class CodecError(ValueError):
    """Bytes that are not a valid engram or synapse file."""


_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"


class Number(str):
    """A plain YAML scalar that looks like a number; keeps its source text."""

    __slots__ = ()

    def value(self) -> int | float:
        text = self.replace("_", "")
        try:
            return int(text)
        except ValueError:
            lowered = text.lower()
            if lowered in (".inf", "+.inf"):
                return math.inf
            if lowered == "-.inf":
                return -math.inf
            if lowered == ".nan":
                return math.nan
            return float(text)


#: The deepest nesting of mappings and lists a document may have (frontmatter is flat;
#: ``source`` or ``validWhile`` hold a level or two).
MAX_DEPTH = 64


class Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Safe loader with YAML 1.2-like implicit typing, no timestamp guessing, no aliases."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # A node is constructed twice only when an alias refers to it again: refuse it
        # here, before anything can expand the shared structure.
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(
                None, None,
                "YAML aliases (*name) are not allowed (write the value out); the value "
                "an alias repeats is",
                node.start_mark,
            )
        return super().construct_object(node, deep)


# Only null, true/false and decimal numbers are resolved implicitly; everything else a
# plain scalar can hold stays a string.
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
INT_RE = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")
_FLOAT_RE = re.compile(
    r"^(?:[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
Loader.yaml_implicit_resolvers = {}
Loader.add_implicit_resolver(_NULL, _NULL_RE, ["~", "n", "N", ""])
Loader.add_implicit_resolver(_BOOL, _BOOL_RE, list("tTfF"))
Loader.add_implicit_resolver(_INT, INT_RE, list("-+0123456789"))
Loader.add_implicit_resolver(_FLOAT, _FLOAT_RE, list("-+0123456789."))


def _construct_number(loader: yaml.SafeLoader, node: yaml.Node) -> Number:
    return Number(loader.construct_scalar(node))  # type: ignore[arg-type]


Loader.add_constructor(_INT, _construct_number)
Loader.add_constructor(_FLOAT, _construct_number)


_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_TIMESTAMP_LIKE = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?$")


class Instant(str):
    """A canonical timestamp value: written plain, as Co-Engram writes them."""

    __slots__ = ()


class _Dumper(yaml.SafeDumper):
    """Block style, sequences indented under their key, long lines never folded."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


# The dumper does not detect timestamps itself, so known time fields (``Instant``) are
# written plain; any other string that looks like a date is quoted explicitly below so
# YAML 1.1 readers (Obsidian, Co-Engram) still read it as text.
_Dumper.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items()
}


_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


def reads_typed(text: str) -> bool:
    """Whether :class:`Loader` would read ``text``, written plain, as null, a boolean or
    a number. The writer quotes such text: PyYAML's own resolver is YAML 1.1's, which
    takes ``1e3`` or ``0E0`` (no dot) for text, so it would write them plain and this
    reader would give back a float."""
    return bool(_NULL_RE.match(text) or _BOOL_RE.match(text) or INT_RE.match(text) or _FLOAT_RE.match(text))


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if _UNSAFE_CHARS.search(data):
        # YAML treats NEL and the Unicode separators as line breaks and folds them
        # away unless they are escaped, which only double quotes do.
        style: str | None = '"'
    elif "\n" in data:
        style = "|"
    elif _TIMESTAMP_LIKE.match(data) or reads_typed(data):
        style = "'"
    else:
        style = None
    return dumper.represent_scalar(_STR, data, style=style)


def _represent_instant(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(_STR, str(data))


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(Instant, _represent_instant)


def load_yaml(text: str) -> Any:
    """Parse YAML text with the codec's typing rules; raise CodecError on bad YAML."""
    return _plain(load_raw(text))


# --------------------------------------------------------------------------- fast path
# Files engram writes are flat mappings of plain or single-quoted scalars and indented
# lists of them. Reading those line by line is ~10x cheaper than PyYAML and matters when
# a 100k-item vault is indexed. Anything else (block scalars, double quotes, nesting,
# comments, flow collections, continuation lines …) returns None and goes to PyYAML. A
# property test holds the two paths to identical results.

_PLAIN_START = re.compile(r"^[^-?:,\[\]{}#&*!|>'\"%@`\s]")
_NOT_FAST = object()
#: Identifier-shaped keys YAML would type (null/bool): leave those to PyYAML.
_TYPED_KEYS = frozenset(
    w for base in ("null", "true", "false") for w in (base, base.title(), base.upper())
)


def _fast_scalar(text: str) -> Any:
    if not text or text != text.strip() or not text.isprintable():
        return _NOT_FAST
    first = text[0]
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            return _NOT_FAST
        return inner.replace("''", "'")
    if first in "-+.0123456789" and (INT_RE.match(text) or _FLOAT_RE.match(text)):
        return Number(text)
    if not _PLAIN_START.match(text) or " #" in text or ": " in text or text[-1] == ":":
        return _NOT_FAST
    if first in "~nNtTfF":
        if _NULL_RE.match(text):
            return None
        if _BOOL_RE.match(text):
            return text.lower() == "true"
    return text


#: Remembered answers, bounded: what a short ``key: value`` line reads as, what a short
#: scalar reads as, which keys were checked. ``kind: fact``, ``status: active``,
#: ``version: 1`` recur in every file, and looking one up costs a fraction of reading it
#: again; a cold index reads every file. A line's reading does not depend on the lines
#: around it (those are checked on every read), so the answers are exact.
_LINE_MEMO: dict[str, tuple[str, Any]] = {}
_SCALAR_MEMO: dict[str, Any] = {}
_GOOD_KEYS: set[str] = set()
_LINE_LEN, _SCALAR_LEN, _MEMO_MAX = 48, 24, 1 << 14
_MISSING = object()


def _memo_scalar(text: str) -> Any:
    value = _SCALAR_MEMO.get(text, _MISSING)
    if value is _MISSING:
        value = _fast_scalar(text)
        if len(text) <= _SCALAR_LEN and len(_SCALAR_MEMO) < _MEMO_MAX:
            _SCALAR_MEMO[text] = value
    return value


def _good_key(key: str) -> bool:
    if key in _GOOD_KEYS:
        return True
    if not (key.isascii() and key.isidentifier()) or key in _TYPED_KEYS:
        return False
    if len(_GOOD_KEYS) < _MEMO_MAX:
        _GOOD_KEYS.add(key)
    return True


def fast_mapping(text: str) -> dict[str, Any] | None:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: dict[str, Any] = {}
    memo = _LINE_MEMO
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        i += 1
        known = memo.get(line)
        if known is not None:
            key, value = known
        else:
            if line[-1:] == ":":
                key, rest = line[:-1], ""
            else:
                key, sep, rest = line.partition(": ")
                if not sep:
                    return None
            if not _good_key(key):
                return None
            if not rest:
                items: list[Any] = []
                while i < n and lines[i].startswith("  - "):
                    item = _memo_scalar(lines[i][4:])
                    if item is _NOT_FAST:
                        return None
                    items.append(item)
                    i += 1
                value = items if items else None
            elif rest == "[]":
                value = []
            else:
                value = _memo_scalar(rest) if len(rest) <= _SCALAR_LEN else _fast_scalar(rest)
                if value is _NOT_FAST:
                    return None
                if len(line) <= _LINE_LEN and len(memo) < _MEMO_MAX:
                    memo[line] = (key, value)
        if i < n and lines[i][:1] in (" ", "\t"):
            return None  # a continuation line or a nested block
        out[key] = value
    return out


def load_raw(text: str) -> Any:
    """Parse YAML, keeping number-like scalars as source text (``Number``)."""
    fast = fast_mapping(text)
    if fast is not None:
        return fast
    try:
        data = yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise CodecError(f"invalid YAML: {_yaml_problem(exc)}") from exc
    except RecursionError as exc:  # absurdly nested input
        raise CodecError("invalid YAML: nesting too deep") from exc
    _check_depth(data)
    return data


def _check_depth(data: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH (iteratively: the walk itself must not recurse)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise CodecError(f"invalid YAML: nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


def dump_yaml(data: Any) -> str:
    """Emit YAML in the canonical style (block, indented lists, no folding)."""
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 30,
    )


# A string that any YAML reader takes as the same plain text: starts with a letter or
# digit, no indicator sequences, no leading/trailing space. Whether the dumper's
# resolver would type it (``yes``, ``12``, ``null`` …) is checked separately.
_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9 _.,/()+@'=-]*$")
_PLAIN_TYPED = re.compile(r"[ ,]$| #|: ")


#: :func:`_plain_text`'s answers for short texts: keys and values such as ``kind: fact``
#: recur in every file written, and the answer costs a PyYAML resolver call.
_PLAIN_MEMO: dict[str, bool] = {}
_PLAIN_MEMO_MAX = 1 << 16


def _plain_text(value: str) -> bool:
    """Whether PyYAML emits the text ``value`` plain (see :func:`_plain_scalar`)."""
    known = _PLAIN_MEMO.get(value) if type(value) is str else None
    if known is not None:
        return known
    plain = not (not _PLAIN_SAFE.fullmatch(value) or _PLAIN_TYPED.search(value) or _TIMESTAMP_LIKE.match(value)
                 or reads_typed(value))  # fullmatch: "$" alone would let a trailing newline through
    plain = plain and _Dumper.resolve(_Dumper, yaml.ScalarNode, value, (True, False)) == _STR  # type: ignore[no-untyped-call,arg-type]
    if type(value) is str and len(value) <= 200 and len(_PLAIN_MEMO) < _PLAIN_MEMO_MAX:
        _PLAIN_MEMO[value] = plain
    return plain


def _plain_scalar(value: Any) -> str | None:
    """The text PyYAML would emit for a simple scalar, or None to let PyYAML decide."""
    if isinstance(value, Instant):
        return str(value)
    if isinstance(value, str):
        return value if _plain_text(value) else None
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        text = repr(value).lower()
        if "." not in text and "e" in text:
            text = text.replace("e", ".0e", 1)
        return text
    return None


def reads_back_plain(value: str) -> bool:
    """Whether ``value`` is written as plain text and read back as the same text (so
    ``load_yaml(dump_yaml(value)) == value`` without asking PyYAML); False means "ask"."""
    return _plain_scalar(value) == value


_ANALYZER = _Dumper(None, allow_unicode=True)  # type: ignore[arg-type]  # never writes: only its analyze_scalar is used


def _quoted_scalar(value: str) -> str | None:
    """A one-line text as PyYAML emits it (plain or single-quoted), or None to let
    PyYAML decide. The same analysis and style choice as its emitter, for a scalar that
    is a mapping value or a block sequence item."""
    if not value.isprintable() or _UNSAFE_CHARS.search(value):
        return None  # escapes or a block: _represent_str's other styles
    if _TIMESTAMP_LIKE.match(value) or reads_typed(value):
        return "'" + value.replace("'", "''") + "'"  # quoted by _represent_str
    analysis = _ANALYZER.analyze_scalar(value)
    if analysis.multiline:
        return None
    typed = _Dumper.resolve(_Dumper, yaml.ScalarNode, value, (True, False)) != _STR  # type: ignore[no-untyped-call,arg-type]
    if not typed and analysis.allow_block_plain:
        return value
    if analysis.allow_single_quoted:
        return "'" + value.replace("'", "''") + "'"
    return None


def _scalar(value: Any) -> str | None:
    found = _plain_scalar(value)
    if found is None and isinstance(value, str):
        found = _quoted_scalar(value)
    return found


def dump_mapping(data: Mapping[str, Any]) -> str:
    """``dump_yaml`` for a flat mapping, byte-identical, ten times faster.

    Frontmatter is mostly short text, numbers and lists of words; those are written
    directly and anything else (nested values, text needing quotes or a block) goes
    through PyYAML one entry at a time, which emits exactly what a whole-mapping dump
    would. A property test holds the two paths equal.
    """
    parts: list[str] = []
    for key, value in data.items():
        if _plain_scalar(key) == key:
            scalar = _scalar(value)
            if scalar is not None:
                parts.append(f"{key}: {scalar}\n")
                continue
            if isinstance(value, list) and not value:
                parts.append(f"{key}: []\n")
                continue
            if isinstance(value, dict) and value and all(_plain_scalar(k) == k for k in value):
                inner = {k: _scalar(v) for k, v in value.items()}
                if all(v is not None for v in inner.values()):  # e.g. an import's source
                    parts.append(f"{key}:\n" + "".join(f"  {k}: {v}\n" for k, v in inner.items()))
                    continue
            if isinstance(value, list):
                items = [_scalar(v) for v in value]
                if all(item is not None and not isinstance(v, (list, dict)) for item, v in zip(items, value, strict=True)):
                    parts.append(f"{key}:\n" + "".join(f"  - {item}\n" for item in items))
                    continue
        parts.append(dump_yaml({key: value}))
    # PyYAML ends a document with "..." when its last scalar keeps trailing newlines;
    # only the whole mapping's last entry may carry that marker.
    for i in range(len(parts) - 1):
        if parts[i].endswith("\n...\n"):
            parts[i] = parts[i][:-4]
    return "".join(parts) if parts else dump_yaml({})


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)


def key_text(key: Any) -> str:
    """A mapping key as text, spelled as YAML spells it (``null``, ``true``, ``1.5``)."""
    if isinstance(key, str):
        return str(key)  # drops the Number marker, keeps the source text
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _plain(value: Any) -> Any:
    """Turn loader output into plain Python values (numbers become int/float)."""
    if isinstance(value, Number):
        return value.value()
    if isinstance(value, dict):
        return {key_text(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
