"""Promotion: knowledge climbs private → team → org as it earns trust.

Evidence (frontmatter, merged as sets across machines): ``recalledBy`` (agents whose
searches returned the item) and ``recallDays`` (UTC days it was returned on), folded
from the usage journal by :func:`engram.recall.usage.flush`, plus what is journaled here
and not folded yet; and ``endorsements`` (``{by, at, note}``: someone vouched for it).

- **eligible**: recalled by ≥ ``scopes.minAgents`` distinct agents, or on ≥
  ``scopes.minDays`` distinct days, or endorsed.
- **private → team**: eligible. The item moves out of ``private/`` (an ordinary
  :func:`engram.items.writing.update` of its visibility, so every write check applies);
  the next ``engram sync`` shares it.
- **team → org**: an endorsement is required (recalls alone never reach org), and the
  body must pass the generalization gate (:mod:`engram.scopes.gate`) — or ``org_content``
  restates it (the concrete body is kept as ``example``), or ``force`` overrides (audited,
  and recorded on the promotion). The org copy keeps the id and the author (``createdBy``,
  ``createdAt``), and carries the evidence and a ``promotions`` record (from, to, team,
  by — the promoter —, at, via). It is written into the org clone
  through :func:`engram.items.writing.create` and pushed by :func:`engram.scopes.org.sync_org`
  (compare-and-swap retry), or — when the org vault asks for review (its
  ``scopes.review``) — pushed to a branch ``engram/promote-<id>`` for a person to merge,
  with ``gh pr create`` when ``gh`` is installed and the exact git commands otherwise.
  The team copy stays (its links and concrete body are the team's), marked
  ``visibility: org`` once the org copy is on the org branch.

``promote()`` with no id promotes every eligible item one step (to ``to``, default team).

Trust (:mod:`engram.trust`): before either step writes anything, it runs the checks a
write to a shared item runs, on all of the text that will cross (a move makes every
word new to the wider scope): the actor's role (its author or a curator moves an item;
endorsing is feedback, open to writers), then (:func:`_guard`) secrets and personal data
(refused whatever the setting: a move never rewrites its author's text) and the
instruction screen (refused, not quarantined: the item stays as it is). Into org, this
vault's and the org vault's ``trust`` settings both apply, and the org's roles must let
the actor write. ``force`` overrides eligibility and the gate, never these.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engram.errors import (
    Forbidden,
    InstructionShaped,
    InvalidInput,
    NotEligible,
    NotFound,
    NotGeneral,
    SensitiveData,
)
from engram.items import reading, writing
from engram.items.state import VaultState
from engram.recall.usage import journal_for
from engram.scopes import gate
from engram.scopes.org import (
    REVIEW_PREFIX,
    default_branch,
    ensure_clone,
    org_branch,
    org_state,
    review_required,
    source,
    sync_org,
)
from engram.scopes.settings import scope_settings
from engram.store import rules
from engram.store.model import HIDDEN_STATUSES, Engram, now
from engram.team import gitstore
from engram.team.sync import SyncReport, sync
from engram.trust import policy, roles
from engram.trust.likeness import Encoder
from engram.trust.policy import TrustSettings

ORDER = ("private", "team", "org")
MAX_NOTE_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class Standing:
    """Where one item stands on the way up."""

    id: str
    title: str
    scope: str
    target: str | None  # the next scope up (None: at the top)
    recalled_by: tuple[str, ...]
    recall_days: tuple[str, ...]
    endorsed_by: tuple[str, ...]
    eligible: bool  # enough recalls or an endorsement
    needs: tuple[str, ...]  # what stands between it and ``target``
    tells: tuple[str, ...] = ()  # the gate's findings (org only)
    suggestion: str | None = None

    @property
    def ready(self) -> bool:
        return self.target is not None and not self.needs

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "scope": self.scope, "target": self.target,
            "recalledBy": list(self.recalled_by), "recallDays": list(self.recall_days),
            "endorsedBy": list(self.endorsed_by), "eligible": self.eligible, "ready": self.ready,
            "needs": list(self.needs), "tells": list(self.tells), "suggestion": self.suggestion,
        }


@dataclass(frozen=True, slots=True)
class Promotion:
    """What promoting one item did."""

    id: str
    title: str
    source: str
    to: str
    status: str  # promoted | pending_review | already | duplicate | near_duplicate | refused | not_eligible
    message: str
    org_id: str | None = None
    branch: str | None = None
    pushed: bool = False
    pr_url: str | None = None
    commands: tuple[str, ...] = ()
    tells: tuple[str, ...] = ()
    suggestion: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "from": self.source, "to": self.to, "status": self.status,
            "message": self.message, "orgId": self.org_id, "branch": self.branch, "pushed": self.pushed,
            "prUrl": self.pr_url, "commands": list(self.commands), "tells": list(self.tells),
            "suggestion": self.suggestion,
        }


@dataclass(frozen=True, slots=True)
class Review:
    """``review_promotions``: what may move up, what waits for review, what org items need."""

    eligible: tuple[Standing, ...]
    pending: tuple[Promotion, ...]
    needs_generalization: tuple[Standing, ...]
    org_configured: bool
    min_agents: int
    min_days: int
    gaps: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "eligible": [s.to_json() for s in self.eligible],
            "pending": [p.to_json() for p in self.pending],
            "needsGeneralization": [s.to_json() for s in self.needs_generalization],
            "orgConfigured": self.org_configured, "minAgents": self.min_agents, "minDays": self.min_days,
        }


# ---------------------------------------------------------------------- evidence


def team_name(state: VaultState) -> str:
    """This team's name in provenance: ``scopes.team``, else the origin repository's
    name, else the vault folder's."""
    configured = scope_settings(state).team.strip()
    if configured:
        return configured
    proc = subprocess.run(["git", "remote", "get-url", "origin"], cwd=state.root, capture_output=True,
                          text=True, check=False)
    url = proc.stdout.strip().rstrip("/")
    if proc.returncode == 0 and url:
        return Path(url.replace(":", "/")).name.removesuffix(".git") or state.root.name
    return state.root.name


def project_names(state: VaultState, item: Engram | None = None) -> tuple[str, ...]:
    """The names the gate refuses at org: the team, its projects, the item's source project,
    and the teams the item came through."""
    names = [team_name(state), *scope_settings(state).projects]
    if item is not None:
        if isinstance(item.source, dict) and isinstance(item.source.get("project"), str):
            names.append(item.source["project"])
        names += [str(p["team"]) for p in item.promotions or () if isinstance(p.get("team"), str)]
    return tuple(dict.fromkeys(n for n in names if n))


def _endorsers(item: Engram) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(e.get("by", "")) for e in item.endorsements or () if e.get("by")))


def _notes(item: Engram) -> list[str]:
    return [str(e["note"]) for e in item.endorsements or () if isinstance(e.get("note"), str) and e["note"].strip()]


def standing(state: VaultState, item: Engram, *, gate_check: bool = True) -> Standing:
    """Where ``item`` (of this vault) stands (see the module docstring)."""
    s = scope_settings(state)
    pending = journal_for(state).pending().get(item.id)
    agents = tuple(sorted(set(item.recalled_by or ()) | (pending.agents if pending else set())))
    days = tuple(sorted(set(item.recall_days or ()) | (pending.days if pending else set())))
    endorsed = _endorsers(item)
    eligible = len(agents) >= s.min_agents or len(days) >= s.min_days or bool(endorsed)
    scope = item.visibility if item.visibility in ORDER else "team"
    target = ORDER[ORDER.index(scope) + 1] if scope != "org" else None
    needs: list[str] = []
    tells: tuple[str, ...] = ()
    suggestion = None
    if not eligible:
        needs.append(
            f"recalls by {s.min_agents} agents (has {len(agents)}) or on {s.min_days} days (has {len(days)}),"
            " or an endorsement"
        )
    if target == "org":
        if not endorsed:
            needs.append("an endorsement (org requires one)")
        if source(state) is None:
            needs.append("an org vault (scopes.org)")
        if gate_check:
            found = gate.tells(item.content, project_names(state, item))
            if found:
                tells = tuple(t.reason for t in found)
                suggestion = gate.suggest(item.content, found, _notes(item), project_names(state, item))
                needs.append("a general restatement (org_content)")
    if item.status in HIDDEN_STATUSES or item.status in ("superseded", "archived"):
        needs.append(f"an active item (this one is {item.status})")
    return Standing(item.id, item.title, scope, target, agents, days, endorsed, eligible, tuple(needs), tells,
                    suggestion)


# ---------------------------------------------------------------------- endorse


def endorse(state: VaultState, ref: str, note: str = "") -> tuple[Engram, str]:
    """Vouch for an item: add an endorsement (who, when, why) — the trust signal that a
    promotion to org requires. An item only in the org vault is endorsed there and pushed.
    Returns (the item, its scope). Raises NotFound, InvalidInput."""
    note = _note(note)
    record = {"by": state.actor, "at": now(), **({"note": note} if note else {})}
    try:
        item = reading.get(state, ref)
        where = state
    except NotFound:
        org = org_state(state)
        if org is None:
            raise
        item = reading.get(org, ref)
        where = org
    updated = writing.update(where, item.id, {"endorsements": [*(item.endorsements or ()), record]},
                             expected_version=item.version)
    if where is not state:
        sync_org(state, message=f"engram: {state.actor} endorses {item.id}")
        return updated, "org"
    return updated, updated.visibility


def _note(note: str | None) -> str:
    if note is None:
        return ""
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS or "\x00" in note:
        raise InvalidInput(f"note must be text of at most {MAX_NOTE_CHARS} characters.", field="note",
                           hint="Say in a sentence why it holds.")
    return note.strip()


# ---------------------------------------------------------------------- promote


def promote(
    state: VaultState,
    ref: str | None = None,
    to: str | None = None,
    *,
    org_content: str | None = None,
    force: bool = False,
) -> list[Promotion]:
    """Promote one item (``ref``) or, with no ``ref``, every eligible item one step (to
    ``to``, default team). See the module docstring. For one item a refusal raises
    NotEligible or NotGeneral (with the tells and a suggested restatement); a sweep
    reports refusals in the list instead. Raises NotFound, InvalidInput, GitError."""
    if to is not None and to not in ORDER[1:]:
        raise InvalidInput(f"to must be team or org, not {to!r}.", field="to", hint="Use team or org.")
    if ref is None:
        if org_content is not None:
            raise InvalidInput("org_content restates one item.", field="org_content", hint="Pass the item's id too.")
        return _sweep(state, to or "team", force)
    item = reading.get(state, ref)
    here = item.visibility if item.visibility in ORDER else "team"
    target = to or (ORDER[ORDER.index(here) + 1] if here != "org" else "org")
    if ORDER.index(target) < ORDER.index(here) or (target == here and here != "org"):
        raise InvalidInput(f"{item.id} is already {here}; promotion goes up (private → team → org).",
                           field="to", hint="Pass to='org' to go on up.")
    out: list[Promotion] = []
    if here == "private":
        item, step = _to_team(state, item, force, single=True)
        out.append(step)
        if target == "team":
            return out
    out.append(_to_org(state, item, org_content, force, single=True))
    return out


def _sweep(state: VaultState, to: str, force: bool) -> list[Promotion]:
    state.ensure_fresh()
    scope = "private" if to == "team" else "team"
    out: list[Promotion] = []
    for item in state.index.items("visibility = ? ORDER BY created_at, id", (scope,)):
        st = standing(state, item)
        if not st.eligible and not force:
            continue
        if to == "org" and item.promotions and any(p.get("to") == "org" for p in item.promotions):
            continue
        if to == "team":
            out.append(_to_team(state, item, force, single=False)[1])
        else:
            out.append(_to_org(state, item, None, force, single=False))
    return out


def _record(state: VaultState, src: str, to: str, **more: Any) -> dict[str, Any]:
    return {"from": src, "to": to, "team": team_name(state), "by": state.actor, "at": now(),
            **{k: v for k, v in more.items() if v not in (None, False, (), [])}}


def _guard(item: Engram, scope: str, trust: TrustSettings, encoder: Encoder | None) -> None:
    """The trust checks a write to a shared item passes, for ``item`` moving into
    ``scope`` under one vault's ``trust`` settings: secrets and personal data (refused)
    and the instruction screen (refused too: a promoted item is read by every agent of
    the wider scope). Raises SensitiveData, InstructionShaped. The role check
    (:func:`engram.trust.roles.check_promote`) runs first, apart."""
    screening = policy.check_move(item, scope, trust, encoder)
    if screening.quarantine:
        raise InstructionShaped(
            f"{item.id} reads as instructions to whoever recalls it ({screening.reason()}), and {scope} "
            "knowledge is read by every agent there, so it was not promoted and nothing was changed.",
            field="content",
            rule=",".join(screening.rules),
            hint=f"Restate it as a plain fact or procedure (`engram update {item.id} --body -`) and promote it again; "
            f"if it is a false positive, a curator can vouch for it (`engram quarantine release {item.id}`).",
        )


def _refusal(state: VaultState, item: Engram, check: Callable[[], None], *, single: bool,
             base: dict[str, Any]) -> Promotion | None:
    """Run ``check`` with its refusal audited, whatever refused it (a role, trust,
    eligibility, the gate); for a sweep, a refusal is a list entry."""
    try:
        with state.refusals_audited("promote", item.id):
            check()
    except (Forbidden, SensitiveData, InstructionShaped, NotEligible, NotGeneral) as exc:
        if single:
            raise
        if isinstance(exc, NotEligible):
            return Promotion(**base, status="not_eligible", message=exc.message)
        if isinstance(exc, NotGeneral):
            return Promotion(**base, status="refused", message=exc.message, tells=exc.tells,
                             suggestion=exc.suggestion)
        return Promotion(**base, status="refused", message=exc.message)
    return None


def _to_team(state: VaultState, item: Engram, force: bool, *, single: bool) -> tuple[Engram, Promotion]:
    base: dict[str, Any] = {"id": item.id, "title": item.title, "source": "private", "to": "team"}
    refused = _refusal(state, item, lambda: roles.check_promote(state.actor, state.role, item, "team"),
                       single=single, base=base)
    if refused is not None:
        return item, refused
    st = standing(state, item, gate_check=False)

    def earned() -> None:
        if not st.eligible and not force:
            raise NotEligible(f"{item.id} has not earned team scope yet: it needs {st.needs[0]}.",
                              needs=st.needs, hint=f"Endorse it (`engram endorse {item.id} --note WHY`), or pass force.")

    refused = _refusal(state, item, earned, single=single, base=base)
    if refused is not None:
        return item, refused
    refused = _refusal(state, item, lambda: _guard(item, "team", state.trust, state.encoder), single=single, base=base)
    if refused is not None:
        return item, refused
    record = _record(state, "private", "team", forced=force and not st.eligible)
    updated = writing.update(
        state, item.id, {"visibility": "team", "promotions": [*(item.promotions or ()), record]},
        expected_version=item.version,
    )
    if record.get("forced"):
        state.audit.record(state.actor, "promote-forced", item.id, path=updated.path, fields=("visibility",))
    return updated, Promotion(item.id, item.title, "private", "team", "promoted",
                              f"shared with the team at {updated.path}; `engram sync` publishes it.")


def _to_org(state: VaultState, item: Engram, org_content: str | None, force: bool, *, single: bool) -> Promotion:
    base: dict[str, Any] = {"id": item.id, "title": item.title, "source": "team", "to": "org"}
    refused = _refusal(state, item, lambda: roles.check_promote(state.actor, state.role, item, "org"),
                       single=single, base=base)
    if refused is not None:
        return refused
    st = standing(state, item, gate_check=False)
    if source(state) is None:
        raise InvalidInput("no org vault is configured for this vault.", field="scopes.org",
                           hint="Name it with `engram scopes setup --org PATH_OR_URL`.")
    body = item.content if org_content is None else rules.content_text(org_content)
    projects = project_names(state, item)
    found = gate.tells(body, projects)

    def earned() -> None:  # an endorsement, then the generalization gate
        if not st.endorsed_by and not force:
            raise NotEligible(f"{item.id} needs an endorsement before it can reach org (recalls alone never do).",
                              needs=("an endorsement (org requires one)",), rule="scope.needs-endorsement",
                              hint=f"Endorse it first: `engram endorse {item.id} --note WHY`.")
        if found and not force:
            reasons = tuple(t.reason for t in found)
            suggestion = gate.suggest(body, found, _notes(item), projects)
            raise NotGeneral(f"{item.id} reads project-specific, and org is read by every team: it "
                             + "; ".join(reasons) + ".", tells=reasons, suggestion=suggestion,
                             hint=f"Restate it as the general rule with org_content (the concrete body is kept as "
                             f"the example), e.g. {suggestion!r}; or pass force to promote it as is (audited).")

    refused = _refusal(state, item, earned, single=single, base=base)
    if refused is not None:
        return refused
    # What the org copy will hold: the (restated) body, the concrete one as the example.
    bound = replace(item, content=body, example=item.content if org_content is not None else item.example)
    refused = _refusal(state, item, lambda: _guard(bound, "org", state.trust, state.encoder), single=single, base=base)
    if refused is not None:
        return refused
    org = ensure_clone(state)

    def org_checks() -> None:  # the org vault's own roles and trust settings
        roles.require_writer(state.actor, org.role, f"promote {item.id} into the org vault")
        _guard(bound, "org", org.trust, state.encoder)

    refused = _refusal(state, item, org_checks, single=single, base=base)
    if refused is not None:
        return refused
    if not review_required(org):
        sync_org(state)  # compare against what the org holds now
    if _in_vault(org, item.id):
        _mark_promoted(state, item, org_id=item.id, via="push")
        return Promotion(**base, status="already", message=f"{item.id} is in the org vault already.", org_id=item.id)
    forced_tells = tuple(t.reason for t in found) if found else ()
    record = _record(state, "team", "org", via="review" if review_required(org) else "push",
                     forced=bool(force and (found or not st.endorsed_by)), tells=list(forced_tells) or None,
                     origin=source(state))
    if record.get("forced"):
        state.audit.record(state.actor, "promote-forced", item.id, path=item.path, fields=forced_tells or ("endorsement",))
    fields: dict[str, Any] = {
        "endorsements": list(item.endorsements or ()),
        "promotions": [*(item.promotions or ()), record],
        "recalled_by": list(st.recalled_by), "recall_days": list(st.recall_days),
        "verification_status": item.verification_status, "last_verified_at": now(),
    }
    fields = {k: v for k, v in fields.items() if v not in ([], ())}
    if org_content is not None:
        fields["example"] = item.content
    if item.valid_while is not None:
        fields["valid_while"] = item.valid_while
    if review_required(org):
        return _via_review(state, org, item, body, fields, record, base)
    result = _create_in_org(org, item, body, fields, force)
    if result.outcome == "UPDATE":
        return Promotion(**base, status="near_duplicate", org_id=result.id,
                         message=f"the org vault holds a near-identical item {result.id} ({result.item.title!r}); "
                         "endorse that one, or pass force to add this one beside it.")
    # An unreachable org is reported in ``offline``: the commit stays for the next sync.
    report = sync_org(state, message=f"engram: promote {item.id} from {team_name(state)}")
    status = "duplicate" if result.outcome == "DUPLICATE" else "promoted"
    _mark_promoted(state, item, org_id=result.id, via="push", record=record)
    msg = f"in the org vault as {result.id}"
    if status == "duplicate":
        msg += " (it held the same knowledge; reinforced)"
    msg += "; pushed" if report.pushed else f"; not pushed yet ({report.offline}): run `engram scopes sync`"
    return Promotion(**base, status=status, message=msg, org_id=result.id, pushed=report.pushed)


def _in_vault(org: VaultState, item_id: str) -> bool:
    org.ensure_fresh()
    return bool(org.index.item_rows("id = ?", (item_id,)))


def _create_in_org(org: VaultState, item: Engram, body: str, fields: dict[str, Any], force: bool) -> writing.CreateResult:
    """Write the org copy: the same id, and the same author (``createdBy``/``createdAt``
    are the item's, whoever promotes it); the promoter is ``updatedBy`` and the ``by`` of
    the promotions record in ``fields``."""
    authorship = {k: v for k, v in (("createdBy", item.created_by), ("createdAt", item.created_at)) if v}
    return writing.create(
        org, item.title, body, domain=item.domain_tags, kind=item.kind, tags=item.tags, summary=item.summary,
        importance=item.importance, confidence=item.confidence, source_type=item.source_type, status="active",
        visibility="org", source=item.source, dedupe=not force, fields=fields,
        preserve={"id": item.id, **authorship},
    )


def _mark_promoted(state: VaultState, item: Engram, *, org_id: str, via: str,
                   record: dict[str, Any] | None = None) -> None:
    current = reading.get(state, item.id)
    changes: dict[str, Any] = {}
    if via == "push" and current.visibility != "org":
        changes["visibility"] = "org"
    if record is not None and record not in list(current.promotions or ()):
        changes["promotions"] = [*(current.promotions or ()), {**record, **({"orgId": org_id} if org_id != item.id else {})}]
    if changes:
        writing.update(state, item.id, changes, expected_version=current.version)


def _via_review(state: VaultState, org: VaultState, item: Engram, body: str, fields: dict[str, Any],
                record: dict[str, Any], base: dict[str, Any]) -> Promotion:
    """Put the org copy on a branch of its own and push that branch for review."""
    branch = REVIEW_PREFIX + item.id.lower()
    with gitstore.GitRepo(org.root) as repo:
        main = org_branch(state) or default_branch(repo)
        repo.run("fetch", "--quiet", "origin", check=False)
        start = f"origin/{main}" if repo.rev(f"origin/{main}") else "HEAD"
        repo.run("switch", "--quiet", "-C", branch, start)
        try:
            org.refresh()
            # No dedup on a review branch: the reviewer judges overlap with what org holds.
            _create_in_org(org, item, body, fields, force=True)
            report = sync(org, branch=branch, message=f"engram: promote {item.id} from {team_name(state)} (review)")
        finally:
            repo.run("switch", "--quiet", main, check=False)
            org.refresh()
    rec = {**record, "branch": branch}
    current = reading.get(state, item.id)
    writing.update(state, item.id, {"promotions": [*(current.promotions or ()), rec]}, expected_version=current.version)
    url, commands = _review_request(org, branch, main, item)
    pushed = report.pushed
    msg = (f"pushed to branch {branch} of the org vault for review" if pushed
           else f"committed to branch {branch}; the push failed ({report.offline}): push it with the commands below")
    if url:
        msg += f"; pull request: {url}"
    return Promotion(**base, status="pending_review", message=msg, org_id=item.id, branch=branch, pushed=pushed,
                     pr_url=url, commands=commands)


def _review_request(org: VaultState, branch: str, main: str, item: Engram) -> tuple[str | None, tuple[str, ...]]:
    """Open a pull request with ``gh`` when it is installed; else the git commands that do
    the review by hand (they are returned either way)."""
    clone = str(org.root)
    commands = (
        f"git -C {clone} push origin {branch}",
        f"git -C {clone} fetch origin {branch}",
        f"git -C {clone} diff origin/{main}...origin/{branch}",
        f"git -C {clone} switch {main} && git -C {clone} merge --no-ff origin/{branch} && git -C {clone} push origin {main}",
    )
    if shutil.which("gh") is None:
        return None, commands
    proc = subprocess.run(
        ["gh", "pr", "create", "--head", branch, "--base", main, "--title", f"Promote to org: {item.title}"[:200],
         "--body", f"engram promotion of `{item.id}`.\n\n{item.content[:3000]}"],
        cwd=org.root, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, timeout=60,
    )
    url = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else None
    return url, commands


# ---------------------------------------------------------------------- review


def review_promotions(state: VaultState) -> Review:
    """What may move up (with what each still needs), what waits for review on an org
    branch, and which org items read project-specific (the gate's tells)."""
    state.ensure_fresh()
    s = scope_settings(state)
    org = org_state(state)
    in_org: set[str] = set()
    if org is not None:
        org.ensure_fresh()
        in_org = {r["id"] for r in org.index.query("SELECT id FROM items")}
    eligible: list[Standing] = []
    pending: list[Promotion] = []
    live = f"status NOT IN ({','.join('?' * len(HIDDEN_STATUSES))})"
    for item in state.index.items(f"visibility IN ('private', 'team') AND {live} ORDER BY created_at, id",
                                  HIDDEN_STATUSES):
        review = [p for p in item.promotions or () if p.get("to") == "org" and p.get("branch")]
        if review and item.id not in in_org:
            pending.append(Promotion(item.id, item.title, "team", "org", "pending_review",
                                     f"waiting for review on branch {review[-1]['branch']} of the org vault",
                                     branch=str(review[-1]["branch"]), org_id=item.id))
            continue
        if item.id in in_org:
            continue
        st = standing(state, item)
        if st.eligible:
            eligible.append(st)
    general: list[Standing] = []
    if org is not None:
        for item in org.index.items(f"{live} ORDER BY created_at, id", HIDDEN_STATUSES):
            names = project_names(state, item)
            found = gate.tells(item.content, names)
            if found:
                general.append(Standing(
                    item.id, item.title, "org", None, tuple(item.recalled_by or ()), tuple(item.recall_days or ()),
                    _endorsers(item), True, ("a general restatement (generalize)",),
                    tuple(t.reason for t in found), gate.suggest(item.content, found, _notes(item), names),
                ))
    return Review(tuple(eligible), tuple(pending), tuple(general), source(state) is not None, s.min_agents, s.min_days)


def settle(state: VaultState) -> list[str]:
    """Mark team items whose review promotion has landed on the org branch as org."""
    org = org_state(state)
    if org is None:
        return []
    org.ensure_fresh()
    in_org = {r["id"] for r in org.index.query("SELECT id FROM items")}
    done: list[str] = []
    state.ensure_fresh()
    for item in state.index.items("visibility = 'team'"):
        if item.id in in_org and any(p.get("to") == "org" for p in item.promotions or ()):
            try:
                writing.update(state, item.id, {"visibility": "org"}, expected_version=item.version, settling=True)
            except Forbidden:  # a reader's clone, or a push made outside review: left to its author
                continue
            done.append(item.id)
    return done


def sync_scopes(state: VaultState) -> tuple[SyncReport, list[str]]:
    """Sync the org clone (clone it first if needed), then mark team items whose review
    promotion has landed there as org. Raises InvalidInput (no org), GitError."""
    report = sync_org(state)
    return report, settle(state)


# ---------------------------------------------------------------------- generalize


def generalize(
    state: VaultState, ref: str, org_content: str | None = None, *, note: str | None = None, force: bool = False,
) -> Promotion:
    """Restate an org item's body as the general rule, keeping the concrete body as its
    ``example`` (the first one, if it has one already). ``org_content`` is the new body;
    without it, the latest endorsement note that reads general is used. The new body must
    pass the gate unless ``force``. Pushed like a promotion (or to a review branch).
    Raises NotFound, InvalidInput, NotGeneral."""
    org = org_state(state)
    if org is None:
        if source(state) is None:
            raise InvalidInput("no org vault is configured for this vault.", field="scopes.org",
                               hint="Name it with `engram scopes setup --org PATH_OR_URL`.")
        org = ensure_clone(state)
    try:
        item = reading.get(org, ref)
    except NotFound:
        raise NotFound(f"no org item matches {ref!r}.", ref=ref,
                       hint="generalize fixes items already in org; promote a team item with org_content.") from None
    names = project_names(state, item)
    body = org_content
    if body is None:
        general = [n for n in _notes(item) if not gate.tells(n, names)]
        if not general:
            raise InvalidInput(f"no org_content given and {item.id} has no endorsement note to restate it with.",
                               field="org_content", hint="Pass org_content='the general rule'.")
        body = general[-1]
    body = rules.content_text(body)
    found = gate.tells(body, names)
    if found and not force:
        reasons = tuple(t.reason for t in found)
        with state.refusals_audited("generalize", item.id):
            raise NotGeneral("the restatement still reads project-specific: " + "; ".join(reasons) + ".",
                             tells=reasons, suggestion=gate.suggest(body, found, (), names),
                             hint="Take out what only one project has, or pass force (audited).")
    base: dict[str, Any] = {"id": item.id, "title": item.title, "source": "org", "to": "org"}
    if body == item.content:
        return Promotion(**base, status="already", message="the org body says exactly that.", org_id=item.id)
    changes: dict[str, Any] = {"content": body, "last_verified_at": now()}
    if item.example is None:
        changes["example"] = item.content
    if note:
        changes["endorsements"] = [*(item.endorsements or ()), {"by": state.actor, "at": now(), "note": _note(note)}]
    if review_required(org):
        branch = REVIEW_PREFIX + item.id.lower() + "-general"
        with gitstore.GitRepo(org.root) as repo:
            main = org_branch(state) or default_branch(repo)
            repo.run("switch", "--quiet", "-C", branch, check=True)
            try:
                org.refresh()
                writing.update(org, item.id, changes)
                report = sync(org, branch=branch, message=f"engram: generalize {item.id} (review)")
            finally:
                repo.run("switch", "--quiet", main, check=False)
                org.refresh()
        url, commands = _review_request(org, branch, main, item)
        return Promotion(**base, status="pending_review", message=f"on branch {branch} for review", org_id=item.id,
                         branch=branch, pushed=report.pushed, pr_url=url, commands=commands)
    writing.update(org, item.id, changes, expected_version=item.version)
    if force and found:
        state.audit.record(state.actor, "generalize-forced", item.id, fields=tuple(t.reason for t in found))
    report = sync_org(state, message=f"engram: generalize {item.id} for org readership")
    return Promotion(**base, status="promoted", message="restated in the org vault" + ("; pushed" if report.pushed else
                     f"; not pushed yet ({report.offline})"), org_id=item.id, pushed=report.pushed)

