"""Capture in the agent loop: needs, and observations that may become knowledge.

:func:`record_need` files a gap the agent hit ("no staging seed data", "the retry policy
is undocumented") as a ``need`` item — shared with the team (a need is worth knowing
about before it earns anything). A need is the gap, not the reason: the same gap hit
twice, for the same reason or another, reinforces one item and keeps every reason.

:func:`observe` takes what just happened in a session (a sentence or a paragraph the
agent or a hook passes) and decides, in two layers, whether it is worth a person's look:

1. **cheap rules** reject mechanical repetition before anything else runs: too short to
   hold a lesson, a bare action log ("ran the tests", "edited app.py", "git push"),
   progress chatter ("done", "let me check"), mostly code or log output, or the same
   text observed before (a fingerprint in ``.engram/scopes/observed.jsonl``) or already
   in the vault;
2. a **necessity check** keeps what is reusable: a decision or a lesson with its reason
   ("use X because Y", "instead of", "never", "the fix was", "turns out"), scored by its
   markers; an episode with no reason to reuse it ("this morning I looked at …") is not.

What passes becomes a *proposal* (``proposals/capture/…``, the lifecycle's proposal
files: committed, mergeable, one file each), never an item: a person or an agent accepts
it (``engram accept``) or dismisses it. The verdict and the layer that decided come back
either way, so a hook can log why nothing was filed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.items import writing
from engram.items.state import VaultState
from engram.lifecycle import proposals
from engram.store.dedup import fingerprint
from engram.store.fsio import append_line
from engram.store.model import Engram, now
from engram.store.notes import persons_note
from engram.trust import policy, roles

OBSERVED = ("scopes", "observed.jsonl")
MAX_OBSERVATION_CHARS = 8_000
MIN_WORDS = 6

_ACTION = re.compile(
    r"^\s*(?:i\s+|we\s+|the agent\s+)?(?:ran|run|running|re-?ran|executed|edited|editing|opened|opening|read|reading|"
    r"listed|listing|created|creating|deleted|deleting|committed|committing|pushed|pushing|pulled|installed|"
    r"installing|checked out|switched|viewed|looked at|searched|grepped|called|calling|invoked|started|restarted|"
    r"stopped|saved|wrote|writing|updated|updating|renamed|moved|formatted|linted)\b",
    re.IGNORECASE,
)
_CHATTER = re.compile(
    r"^\s*(?:ok(?:ay)?|done|all done|great|good|thanks|now\b|next\b|let me|let's|i(?:'ll| will| am going to)|"
    r"working on|continuing|moving on|tests? (?:pass|passed|are green)|it works|fixed it|looks good|lgtm)\b",
    re.IGNORECASE,
)
_SHELL = re.compile(r"^\s*(?:\$|>>>|#!|git |npm |pip |pytest|make |cd |ls |cat |docker |kubectl )")
#: Markers of a reusable decision or lesson, with their weight in the necessity check.
_MARKERS: tuple[tuple[re.Pattern[str], float, str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), w, label)
    for p, w, label in (
        (r"\bbecause\b|\bsince\b(?! \d)|\bso that\b|\bdue to\b|\bthe reason\b|\bwhich means\b", 1.0, "a reason"),
        (r"\binstead of\b|\brather than\b|\bnot\b.{1,40}\bbut\b|\bover\b .{1,30}\bbecause\b", 1.0, "an alternative"),
        (r"\b(?:we |i )?(?:decided|chose|choose|picked|settled on|went with|standardi[sz]ed on)\b", 1.0, "a decision"),
        (r"\b(?:always|never|must(?:n't)?|don't|do not|avoid|prefer|should(?:n't)?)\b", 0.75, "a rule"),
        (r"\b(?:turns out|root cause|caused by|the fix (?:is|was)|workaround|gotcha|pitfall|lesson|learned)\b", 1.0,
         "a lesson"),
        (r"\b(?:only works|breaks when|fails when|requires|depends on|is needed for|otherwise)\b", 0.5, "a condition"),
    )
)
_EPISODE = re.compile(r"\b(?:today|this morning|this afternoon|just now|right now|currently|at the moment)\b",
                      re.IGNORECASE)
NECESSITY_THRESHOLD = 1.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`observe` decided and why."""

    decision: str  # proposed | rejected
    layer: str  # rules | necessity
    reason: str
    score: float = 0.0
    markers: tuple[str, ...] = ()
    proposal: str | None = None  # the proposal's id when one was filed
    existing: bool = False  # the same proposal was filed before

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "layer": self.layer, "reason": self.reason, "score": self.score,
                "markers": list(self.markers), "proposal": self.proposal, "existing": self.existing}


WHY = "**Why it matters:**"
_WHY_LINE = re.compile(r"^\*\*Why it matters:\*\*[ \t]*(.*)$", re.MULTILINE)


def record_need(
    state: VaultState, content: str, why: str = "", *, tags: Sequence[str] = (), domain: Sequence[str] = ("needs",),
) -> writing.CreateResult:
    """File a gap the agent hit as a ``need`` item (the title is its first line; ``why``
    says what it blocks). Raises InvalidInput.

    A need is the gap, not the reason: the same gap recorded again — by anyone, for any
    reason — reinforces the one live need (``DUPLICATE``), and a reason it does not
    hold yet is kept (``EXTENDED``): appended after its text as another ``Why it
    matters`` paragraph, or, when the actor may not change another author's text (a
    writer under ``roles``), as an endorsement of the need whose note is the reason. A
    reason the instruction screen flags is filed as a need of its own (quarantined),
    never written into the existing one.
    """
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("the need is empty.", field="content", hint="Say what is missing, e.g. 'no staging seed data'.")
    gap = content.strip()
    first = " ".join(gap.splitlines()[0].split())
    title = first if len(first) <= 200 else first[:199].rstrip() + "…"
    reason = " ".join(why.split()) if isinstance(why, str) else ""
    body = gap + (f"\n\n{WHY} {reason}" if reason else "") + "\n"
    with state.lock.hold():
        state.ensure_indexed()
        known = _same_need(state, title, gap)
        if known is not None and not (reason and state.trust.screen and policy.screen({"why": reason}, state.trust, state.encoder).quarantine):
            return _again(state, known, reason, tags)
        return writing.create(state, title, body, domain=list(domain), kind="need", tags=["need", *tags],
                              summary=reason[:2000])


def _gap(body: str) -> str:
    """The need's own text: its body up to the first reason."""
    found = _WHY_LINE.search(body)
    return (body[: found.start()] if found else body).strip()


def _same_need(state: VaultState, title: str, gap: str) -> Engram | None:
    """The oldest live need about the same gap (same title and text, whatever the reasons)."""
    key = fingerprint("", gap)
    for item in state.index.items(
        "kind = 'need' AND title_key = ? AND status NOT IN ('forgotten', 'quarantined')",
        (title.casefold(),), "ORDER BY created_at, path",
    ):
        if fingerprint("", _gap(item.content)) == key and item.path is not None:
            return item if persons_note(item) else state.read(item.path)[0]
    return None


def _again(state: VaultState, need: Engram, reason: str, tags: Sequence[str]) -> writing.CreateResult:
    """Reinforce a known need and keep a reason it lacks (see :func:`record_need`). A
    person's note (:func:`engram.store.notes.persons_note`) is reinforced beside it, never written."""
    if persons_note(need):
        return writing.CreateResult("DUPLICATE", need, 1.0, writing.reinforce_beside(state, need), need.id)
    held = [*_WHY_LINE.findall(need.content), need.summary,
            *(str(e.get("note", "")) for e in need.endorsements or ())]
    fresh = bool(reason) and fingerprint("", reason) not in {fingerprint("", r) for r in held if r}
    changes: dict[str, Any] = {"reinforcement_score": round(need.reinforcement_score + 1.0, 6)}
    if set(tags) - set(need.tags):
        changes["tags"] = [*need.tags, *(t for t in tags if t not in need.tags)]
    note = f"Known need: reinforced {need.id} ({need.path})"
    if fresh and (state.role == "curator" or roles.owns(state.actor, need)):
        changes["content"] = need.content.rstrip("\n") + f"\n\n{WHY} {reason}\n"
        note += "; your reason was added after its text"
    elif fresh:
        record = {"by": state.actor, "at": now(), "note": reason[:2000]}
        changes["endorsements"] = [*(need.endorsements or ()), record]
        note += (f"; your reason was kept as your endorsement of it (only {need.created_by or 'its author'} or a"
                 " curator changes its text)")
    else:
        note += "; it already holds this reason"
    updated = writing.update(state, need.id, changes, expected_version=need.version)
    return writing.CreateResult("EXTENDED" if fresh else "DUPLICATE", updated, 1.0, note + ".", need.id)


def screen(state: VaultState, text: str) -> Verdict:
    """The two layers of :func:`observe`, without filing anything."""
    if not isinstance(text, str):
        raise InvalidInput("the observation must be text.", field="text", hint="Pass what happened, in words.")
    if len(text) > MAX_OBSERVATION_CHARS:
        raise InvalidInput(f"the observation is over {MAX_OBSERVATION_CHARS:,} characters.", field="text",
                           hint="Pass the lesson, not the whole transcript.")
    body = text.strip()
    words = re.findall(r"[^\W\d_]{2,}", body)
    if len(words) < MIN_WORDS:
        return Verdict("rejected", "rules", f"too short to hold a reusable lesson ({len(words)} words)")
    if _SHELL.match(body):
        return Verdict("rejected", "rules", "a command line, not a lesson")
    letters = sum(ch.isalpha() or ch.isspace() for ch in body)
    if letters / max(1, len(body)) < 0.7:
        return Verdict("rejected", "rules", "mostly code or log output")
    first = re.split(r"(?<=[.!?])\s", body, maxsplit=1)[0]
    markers = _markers(body)
    if (_ACTION.match(first) or _CHATTER.match(first)) and not markers:
        return Verdict("rejected", "rules", "a log of what was done, with nothing to reuse")
    print_ = fingerprint("", body)
    if print_ in _seen(state):
        return Verdict("rejected", "rules", "observed before (the same text)")
    state.ensure_fresh()
    if state.index.item_rows("fingerprint = ?", (fingerprint(_title(body), body),)):
        return Verdict("rejected", "rules", "the vault holds this already")
    score = round(sum(w for _, w, _label in markers), 2)
    labels = tuple(label for _, _, label in markers)
    if _EPISODE.search(body) and not any(label in ("a reason", "a lesson", "a decision") for label in labels):
        return Verdict("rejected", "necessity", "an episode of this session, with no reason to reuse it", score, labels)
    if score < NECESSITY_THRESHOLD:
        return Verdict("rejected", "necessity", "no decision, rule or lesson to reuse (no reason, alternative or "
                       "finding stated)", score, labels)
    return Verdict("proposed", "necessity", "reusable: it states " + ", ".join(dict.fromkeys(labels)), score, labels)


def _markers(text: str) -> list[tuple[re.Pattern[str], float, str]]:
    return [m for m in _MARKERS if m[0].search(text)]


def _title(text: str) -> str:
    first = " ".join(re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0].split())
    return first if len(first) <= 200 else first[:199].rstrip() + "…"


def _seen(state: VaultState) -> set[str]:
    try:
        lines = state.state_dir.joinpath(*OBSERVED).read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    out: set[str] = set()
    for line in lines[-5000:]:
        try:
            out.add(str(json.loads(line)["fp"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def remember(state: VaultState, text: str, verdict: Verdict) -> None:
    """Journal an observation's fingerprint (machine-local) so a repeat is rejected cheaply."""
    line = json.dumps({"at": now(), "fp": fingerprint("", text.strip()), "decision": verdict.decision},
                      separators=(",", ":"))
    path = state.state_dir.joinpath(*OBSERVED)
    path.parent.mkdir(parents=True, exist_ok=True)
    append_line(path, line)


def observe(
    state: VaultState, text: str, *, domain: Sequence[str] = ("captured",), tags: Sequence[str] = (),
) -> Verdict:
    """Screen what just happened (see the module docstring) and, if it is a reusable
    decision or lesson, file a ``capture`` proposal for it — never an item. The same text
    observed again is rejected by the rules; the same proposal is never filed twice.
    Raises InvalidInput, and (nothing filed) SensitiveData for a secret or personal data,
    InstructionShaped for text written to the agent that would read it."""
    verdict = screen(state, text)
    remember(state, text, verdict)
    if verdict.decision != "proposed":
        return verdict
    # A proposal file is committed and read by agents: it passes the trust checks of any
    # shared text first (instruction-shaped text and secrets are refused, audited;
    # ``trust: redact`` settings redact), and is checked again as an item on accept.
    with state.refusals_audited("observe", "observation", target="proposal"):
        body = policy.admit_text(text.strip(), "observation", state.trust, shared=True, encoder=state.encoder)
    kind = "decision" if "a decision" in verdict.markers else "pattern" if "a rule" in verdict.markers else "observation"
    payload = {
        "title": _title(body), "content": body + "\n", "kind": kind, "domain": "/".join(domain),
        "tags": ["observed", *tags], "source": {"system": "observe", "by": state.actor, "at": now()},
    }
    proposal, created = proposals.propose(
        state, "capture", [], title=_title(body), reason=f"observed: {verdict.reason}", payload=payload,
        score=verdict.score, discriminator=fingerprint("", body),
    )
    return Verdict(verdict.decision, verdict.layer, verdict.reason, verdict.score, verdict.markers, proposal.id,
                   existing=not created)
