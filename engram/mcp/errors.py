"""Rendering tool outcomes, in one place: results, engram errors, first-contact guidance.

Every tool body returns a pydantic model or raises; :func:`guarded` (applied to every
tool by :mod:`engram.mcp.registry`) turns the outcome into a ``CallToolResult``:

- a model → its compact JSON (``None`` fields left out) as text, once; with structured
  output on (see :mod:`engram.mcp.profiles`), also as structured content;
- an :class:`~engram.errors.EngramError` → ``isError`` with one message that says what
  was wrong and what to do next, in terms of this server's tools (a stale
  ``engram_update`` names the current version and the call that re-reads the item);
- :class:`SetupRequired` (no vault yet) → ``isError`` with the status guidance: what is
  set, what is missing, what each gap costs, and the exact ``setup(...)`` call;
- arguments that fail the input schema → ``isError`` with ``invalid_input: …`` naming
  each argument and what to pass (:func:`render_invalid`, hooked in by the registry);
- anything else is a bug: logged with its traceback on stderr and reported as an
  internal error, so the server keeps serving.

Error results carry no ``structuredContent``: clients (the TypeScript SDK among them)
validate any structured content against the tool's output schema even on errors.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from engram.errors import (
    Busy,
    EngramError,
    FormatError,
    NotFound,
    VaultNotFound,
    VersionConflict,
)
from engram.mcp.models import StatusOut

log = logging.getLogger("engram.mcp")

P = ParamSpec("P")
M = TypeVar("M", bound=BaseModel)


class SetupRequired(Exception):
    """Raised when a tool needs a vault and none is configured; carries the guidance."""

    def __init__(self, status: StatusOut) -> None:
        self.status = status
        super().__init__(status.next_step)


def to_json(model: BaseModel) -> dict[str, Any]:
    """The wire form of a result: JSON-ready, without the fields a view left out."""
    return model.model_dump(mode="json", exclude_none=True)


def ok(model: BaseModel, *, structured: bool = False) -> CallToolResult:
    """A result: the JSON as text; with ``structured``, also as structured content (the
    protocol asks a tool with an output schema for both)."""
    data = to_json(model)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data if structured else None
    )


def failure(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


# CLI phrasing in core hints, said the way an MCP client can act on it. More specific
# forms of a command come before its plain form.
_CLI_TO_TOOLS = (
    (re.compile(r"`engram doctor --fix`"), "engram_doctor(fix=true)"),
    (re.compile(r"`engram doctor`"), "engram_doctor()"),
    (re.compile(r"`engram reindex`"), "engram_reindex()"),
    (re.compile(r"`engram sync`"), "engram_sync()"),
    (re.compile(r"`engram scopes sync`"), "sync_scopes()"),
    (re.compile(r"`engram scopes setup --org PATH_OR_URL`(?: \(MCP: setup\(org_repo=\.\.\.\)\))?"),
     "setup(org_repo='<path or URL of the org vault>')"),
    (re.compile(r"`engram init PATH`"), "setup(vault_path='PATH')"),
    (re.compile(r"`engram init`"), "setup(vault_path='<the vault folder>')"),
    (re.compile(r"`engram endorse ([^` ]+)[^`]*`"), r"endorse(ref='\1', note='why it holds')"),
    (re.compile(r"`engram conflicts --resolve ([^`]+)`"), r"engram_resolve_conflict(ref='\1')"),
    (re.compile(r"`engram conflicts`"), "engram_conflicts()"),
    (re.compile(r'`engram search "([^"`]*)"`'), r"engram_search(query='\1')"),
    (re.compile(r"`engram get ([^` ]+)`"), r"engram_get(ref='\1')"),
    (re.compile(r"`engram list --status forgotten`"), "engram_list(statuses=['forgotten'])"),
    (re.compile(r"`engram list`"), "engram_list()"),
    (re.compile(r"`engram trash list`"), "engram_trash_list()"),
    (re.compile(r"`engram proposals --all`"), "engram_list_proposals(status=null)"),
    (re.compile(r"`engram proposals[^`]*`"), "engram_list_proposals()"),
    (re.compile(r"`engram dismiss ([^` ]+)`"), r"engram_dismiss_proposal(id='\1')"),
    (re.compile(r"`engram forget ([^` ]+)`"), r"engram_update(ref='\1', status='forgotten')"),
    (re.compile(r"`engram resolve ([^` ]+) OTHER --keep [^`]*`"),
     r"contradiction_resolve(old='\1', new='<the other item>', resolution='keep_new', 'keep_old', 'merge' or 'archive')"),
    (re.compile(r"`engram synapses ITEM`"), "synapse_list(ref='<item>')"),
    (re.compile(r"`engram synapses ([^` ]+)`"), r"synapse_list(ref='\1')"),
    (re.compile(r"\(or pass --force "), "(or pass force=true "),
    (re.compile(r"Fix the file, or pass --(?:format|from) jsonl\."),
     "Fix the text (a JSON list of records, or one JSON object per line), or pass records=[...]."),
)


def tools_phrasing(hint: str | None) -> str:
    """Core text that names CLI commands, reworded with this server's tools."""
    text = hint or ""
    for pattern, replacement in _CLI_TO_TOOLS:
        text = pattern.sub(replacement, text)
    return text


def next_step(exc: EngramError) -> str:
    """What the caller should do about ``exc``, naming this server's tools."""
    if isinstance(exc, VersionConflict):
        return (
            f"Call engram_get(ref='{exc.item_id}') to re-read it, re-apply your change to what "
            f"is there now, and pass expected_version={exc.actual}."
        )
    if isinstance(exc, VaultNotFound):
        return "Call status() to see what is configured, then setup(vault_path='...')."
    if isinstance(exc, NotFound):
        if exc.ref and exc.ref.startswith("syn-"):
            return "synapse_list(ref='<item>') lists an item's synapses with their ids."
        if "`engram proposals" in (exc.hint or ""):
            return ("engram_list_proposals() lists the open proposals with their ids "
                    "(status=null lists decided ones too).")
        if "`engram trash list`" in (exc.hint or ""):
            return "engram_trash_list() lists what the trash holds, with the ids engram_restore takes."
        return (
            "Find the item with engram_search or engram_list; a ref is an id (or its first 6+ "
            "characters), a vault-relative path, or the exact title."
        )
    if isinstance(exc, Busy):
        return "Another engram process holds the vault's write lock; retry in a few seconds."
    if isinstance(exc, FormatError):
        return "Fix the file by hand (or restore it with git), then run engram_doctor()."
    return tools_phrasing(exc.hint)


def render_error(exc: EngramError) -> CallToolResult:
    step = next_step(exc)
    return failure(f"{exc.code}: {exc.message}" + (f" {step}" if step else ""))


def render_invalid(tool: str, exc: ValidationError, schema: Mapping[str, Any]) -> CallToolResult:
    """Arguments that do not fit the tool's input schema, in the house style: what was
    wrong with which argument, and what to pass instead (never pydantic's text and URL)."""
    problems: list[str] = []
    fixes: dict[str, str] = {}
    props: Mapping[str, Any] = schema.get("properties", {})
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        name = loc[0] if loc else "arguments"
        where = ".".join(loc) or "arguments"
        if err.get("type") == "missing":
            problems.append(f"{where} is required")
        else:
            msg = str(err.get("msg", "is not valid"))
            problems.append(f"{where}: {msg[:1].lower()}{msg[1:]} (got {json.dumps(err.get('input'), default=str)[:40]})")
        prop = props.get(name, {})
        kind = prop.get("type") or next((o.get("type") for o in prop.get("anyOf", ()) if o.get("type") != "null"), "value")
        about = str(prop.get("description", "")).split(". ")[0].rstrip(".")
        fixes[name] = f"{name}=<{kind}{': ' + about[:60] if about else ''}>"
    return failure(
        f"invalid_input: {tool} got arguments it cannot use: {'; '.join(problems)}. "
        f"Pass {', '.join(fixes.values())}."
    )


def render_guidance(tool: str, status: StatusOut) -> CallToolResult:
    """First contact: why ``tool`` cannot run yet, and the whole status as JSON."""
    missing = "; ".join(f"{g.setting}: {g.problem} ({g.cost})" for g in status.gaps)
    text = (
        f"setup_required: {tool} needs an engram vault and none is configured yet. "
        f"{missing}. Next: {status.next_step}\n\n"
        + json.dumps(to_json(status), ensure_ascii=False, indent=1)
    )
    return failure(text)


def guarded(name: str, fn: Callable[P, M], *, structured: bool = False) -> Callable[P, CallToolResult]:
    """Wrap a tool body so every outcome is rendered here (see the module docstring).

    The wrapper keeps ``fn``'s signature (``functools.wraps``), so the SDK still derives
    the input schema (and, with ``structured``, the output schema) from the body's
    annotations.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return ok(fn(*args, **kwargs), structured=structured)
        except SetupRequired as exc:
            return render_guidance(name, exc.status)
        except EngramError as exc:
            return render_error(exc)
        except Exception as exc:
            log.exception("tool %s failed unexpectedly", name)
            return failure(
                f"internal_error: {name} failed with {type(exc).__name__}: {exc}. This is a bug "
                "in engram; the vault's writes are atomic, so nothing was half-written. Retry "
                "once; if it fails again, run engram_doctor() and report the bug."
            )

    return wrapper
