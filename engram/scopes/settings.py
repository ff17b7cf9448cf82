"""The ``scopes`` and ``capture`` sections of ``engram.yaml``, and setting their keys.

::

    scopes:
      org: ../org-knowledge.git   # the org vault repository: a path (relative to this vault) or a URL
      orgBranch: main             # default: the branch the org repository's HEAD names
      team: payments              # this team's name in provenance (default: the origin's repo name)
      projects: [ledger]          # names of this team's projects: the gate refuses them at org
      minAgents: 2                # distinct agents whose searches returned an item …
      minDays: 2                  # … or distinct days it was returned on: eligible for promotion
      review: false               # in the ORG vault's own engram.yaml: promotions arrive as branches
    capture:
      agentsync: ..               # the repository holding an agentsync board (path or URL)
      agentsyncBranch: agentsync
      contextKeeper: ../.context  # a context-keeper .context/ folder

:func:`set_keys` is the one writer of these sections. ``engram.yaml`` is a file people
write, so it changes only the lines of the keys it sets (or appends the section); every
other byte — comments, order, quoting — stays as it was. A section written in flow style
(``scopes: {org: …}``) is refused with a hint rather than rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.items.state import VaultState
from engram.store.fsio import atomic_write
from engram.store.settings import SETTINGS_FILE, Settings
from mergedriver import codec


@dataclass(frozen=True, slots=True)
class ScopeSettings:
    org: str = ""
    org_branch: str = ""
    team: str = ""
    projects: tuple[str, ...] = ()
    min_agents: int = 2
    min_days: int = 2
    review: bool = False

    def validated(self) -> ScopeSettings:
        for name, value in (("minAgents", self.min_agents), ("minDays", self.min_days)):
            if not 1 <= value <= 32:
                raise InvalidInput(
                    f"{SETTINGS_FILE}: scopes.{name} is {value}; it must be 1 to 32.",
                    field=f"scopes.{name}", hint="e.g. 2",
                )
        return self


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    agentsync: str = ""
    agentsync_branch: str = "agentsync"
    context_keeper: str = ""


def scope_settings(state: VaultState) -> ScopeSettings:
    return state.settings.section("scopes", ScopeSettings).validated()


def capture_settings(state: VaultState) -> CaptureSettings:
    return state.settings.section("capture", CaptureSettings)


def set_keys(state: VaultState, section: str, values: Mapping[str, Any]) -> bool:
    """Set (or, with ``None``, remove) keys of one top-level section of ``engram.yaml``.

    Only those lines change; True if the file changed. Under the vault lock and audited;
    the vault's settings are reloaded. Raises InvalidInput when the section is not a
    block mapping this editor can change safely.
    """
    path = state.root / SETTINGS_FILE
    with state.lock.hold():
        try:
            before = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            before = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {SETTINGS_FILE}: {exc}.", hint="Fix the file.") from exc
        text = before
        for key, value in values.items():
            text = _set_one(text, section, key, value)
        if text == before:
            return False
        data = codec.load_yaml(text) if text.strip() else {}
        got = data.get(section) if isinstance(data, dict) else None
        for key, value in values.items():
            have = got.get(key) if isinstance(got, dict) else None
            if have != (list(value) if isinstance(value, tuple) else value):
                raise InvalidInput(  # pragma: no cover - a layout the line editor misread
                    f"could not set {section}.{key} in {SETTINGS_FILE} safely.",
                    hint=f"Set it by hand: {section}: {{{key}: {value!r}}}.",
                )
        atomic_write(path, text.encode("utf-8"))
        state.settings = Settings.load(state.root)
        state.audit.record(
            state.actor, "settings", section, target="settings", path=SETTINGS_FILE,
            fields=tuple(f"{section}.{k}" for k in values),
        )
        return True


def _set_one(text: str, section: str, key: str, value: Any) -> str:
    lines = text.splitlines(keepends=True)
    header = re.compile(rf"^{re.escape(section)}:[ \t]*(#.*)?\r?\n?$")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        if any(re.match(rf"^{re.escape(section)}:", line) for line in lines):
            raise InvalidInput(
                f"{SETTINGS_FILE}: '{section}' is written in a form this command does not edit.",
                hint=f"Write it as a block ('{section}:' on its own line, keys indented below) or edit it by hand.",
            )
        if value is None:
            return text
        lead = "" if not text or text.endswith("\n") else "\n"
        return text + lead + f"{section}:\n" + _render(key, value, "  ")
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t")):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # trailing blank lines belong to what follows
    block = lines[start + 1 : end]
    indents = [m.group(1) for line in block if (m := re.match(r"^([ \t]+)[^ \t#\n]", line))]
    indent = min(indents, key=len) if indents else "  "
    own = re.compile(rf"^{re.escape(indent)}{re.escape(key)}:")
    for i, line in enumerate(block):
        if own.match(line):
            stop = i + 1
            while stop < len(block) and (
                not block[stop].strip() or len(block[stop]) - len(block[stop].lstrip()) > len(indent)
                or block[stop].lstrip().startswith("- ")
            ):
                stop += 1
            new = [] if value is None else [_render(key, value, indent)]
            block = block[:i] + new + block[stop:]
            break
    else:
        if value is None:
            return text
        block = [*block, _render(key, value, indent)]
    return "".join(lines[: start + 1] + block + lines[end:])


def _render(key: str, value: Any, indent: str) -> str:
    dumped = codec.dump_yaml({key: list(value) if isinstance(value, tuple) else value})
    return "".join(indent + line + "\n" for line in dumped.splitlines())
