"""The generalization gate at the org boundary: pure functions, no I/O.

An org vault is read by every team, so a body that is right in one repository — "append
the regime to dashboard.py", "see PAY-231", "per dec-014" — must be restated as the rule
it stands for before it crosses. :func:`tells` finds the concrete references that mark a
body as one project's runbook:

- ``project``: the team's own name or one of its projects (``scopes.team``,
  ``scopes.projects``, the repository a distilled item came from), as a whole word;
- ``file``: a file name with an extension programs use (``ledger.py``, ``app.yaml``) or
  a path (``./x``, ``../x``, ``~/x``, ``/var/lib/x``, ``src/api/x``);
- ``test``: a test id (``test_refund_twice``, ``TestLedger``, ``tests/x.py::test_y``);
- ``ticket``: a tracker reference (``PAY-231``, ``#482``, ``GH-12``); standards such as
  ``UTF-8``, ``SHA-256``, ``ISO-8601`` or ``RFC-7231`` are not tickets;
- ``decision``: a decision-log id (context-keeper's ``dec-014``, ``con-003``, ``pipe-2``,
  or ``ADR-0003``).

:func:`suggest` drafts a restatement: an endorsement note that reads general is offered
as it is (that is usually where the general lesson was written); otherwise each tell is
replaced by what it stands for ("the project", "the file", "a recorded decision"), a
draft for a person or agent to finish, never written on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_EXTENSIONS = (
    "py|pyi|ipynb|md|rst|txt|json|jsonl|ya?ml|toml|ini|cfg|conf|env|lock|sql|csv|tsv|xml|html?|css|scss"
    "|js|mjs|cjs|jsx|ts|tsx|vue|svelte|go|rs|java|kt|kts|scala|rb|php|cs|fs|swift|m|mm|c|cc|cpp|cxx|h|hpp"
    "|sh|bash|zsh|ps1|bat|tf|tfvars|hcl|gradle|proto|graphql|dockerfile|gd|tscn|pt|ckpt|onnx|parquet|db|sqlite"
)
_FILE = re.compile(rf"(?<![\w.-])(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_EXTENSIONS})(?![\w/])", re.IGNORECASE)
_PATH = re.compile(
    r"(?<![\w/.~-])(?:\.{1,2}/|~/|/)(?:[\w.-]+/)*[\w.-]*\w|(?<![\w/.-])[\w-]+/[\w.-]+/(?:[\w.-]+/)*[\w.-]*\w"
)
_TEST = re.compile(r"(?<![\w/.-])(?:(?:[\w.-]+/)*[\w-]+\.py::\w+(?:::\w+)*|test_[a-z0-9]\w*|Test[A-Z]\w*)")
_TICKET = re.compile(r"(?<![\w-])(?:(?P<key>[A-Z][A-Z0-9]{1,9})-(?P<num>\d+)|#(?P<issue>\d{2,}))(?![\w-])")
_DECISION = re.compile(r"(?<![\w-])(?:(?:dec|con|pipe)-\d+(?:-[0-9a-f]{4})?|ADR-\d+)(?![\w-])", re.IGNORECASE)
#: ``KEY-123`` forms that name standards, algorithms and public registries, not a tracker.
_NOT_TICKETS = frozenset(
    {"UTF", "UCS", "SHA", "MD", "ISO", "IEC", "IEEE", "RFC", "CVE", "CWE", "PEP", "ES", "ECMA", "HTTP", "TLS",
     "SSL", "AES", "RSA", "DES", "IPV", "X", "ANSI", "POSIX", "W3C", "ADR", "H", "HL", "P", "T", "S3", "EC"}
)
KINDS = ("project", "file", "test", "ticket", "decision")
_STANDS_FOR = {
    "project": "the project",
    "file": "the file",
    "test": "the test that covers it",
    "ticket": "",
    "decision": "a recorded decision",
}


@dataclass(frozen=True, slots=True)
class Tell:
    """One concrete reference that ties a body to one project."""

    kind: str  # one of KINDS
    text: str  # what the body says
    start: int
    end: int

    @property
    def reason(self) -> str:
        what = {
            "project": "names its own project", "file": "names a file", "test": "names a test",
            "ticket": "cites a ticket", "decision": "cites a decision-log id",
        }[self.kind]
        return f"{what} ({self.text!r})"


def tells(body: str, projects: Iterable[str] = ()) -> tuple[Tell, ...]:
    """The project-specific references in ``body``, in order, each span once."""
    found: list[Tell] = []
    for name in sorted({p.strip() for p in projects if len(p.strip()) >= 3}, key=len, reverse=True):
        pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", re.IGNORECASE)
        found += [Tell("project", m.group(0), m.start(), m.end()) for m in pattern.finditer(body)]
    found += [Tell("decision", m.group(0), m.start(), m.end()) for m in _DECISION.finditer(body)]
    found += [Tell("test", m.group(0), m.start(), m.end()) for m in _TEST.finditer(body)]
    found += [Tell("file", m.group(0), m.start(), m.end()) for m in _FILE.finditer(body)]
    found += [Tell("file", m.group(0), m.start(), m.end()) for m in _PATH.finditer(body) if "://" not in
              body[max(0, m.start() - 3) : m.start() + 3]]
    for m in _TICKET.finditer(body):
        if m.group("key") and (m.group("key") in _NOT_TICKETS or m.group("key").rstrip("0123456789") in _NOT_TICKETS):
            continue
        found.append(Tell("ticket", m.group(0), m.start(), m.end()))
    kept: list[Tell] = []
    for tell in sorted(found, key=lambda t: (t.start, -(t.end - t.start), KINDS.index(t.kind))):
        if kept and tell.start < kept[-1].end:
            continue  # inside a reference already found (a file inside a path, a project in a file name)
        kept.append(tell)
    return tuple(kept)


def suggest(body: str, found: Sequence[Tell], notes: Sequence[str] = (), projects: Iterable[str] = ()) -> str:
    """A general restatement to start from (see the module docstring)."""
    names = tuple(projects)
    for note in reversed(notes):
        if note.strip() and not tells(note, names):
            return note.strip()
    out: list[str] = []
    pos = 0
    for tell in found:
        out.append(body[pos : tell.start])
        out.append(_STANDS_FOR[tell.kind])
        pos = tell.end
    out.append(body[pos:])
    text = "".join(out)
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)  # "(PAY-12)" with the ticket gone
    text = re.sub(r"\b(the|a) (the|a) ", r"\1 ", text)
    text = re.sub(r"[ \t]+([,.;:])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
