"""Roles: reader, writer, curator — per actor, from the committed ``engram.yaml``.

::

    roles:
      alice: curator
      ci-bot: reader
      "*": writer        # everyone not named (the default when "*" is absent)

What each role may do (the rule that refuses is named in the error and the audit log):

- ``reader`` — nothing that writes an item or a synapse (``role.reader-writes``).
- ``writer`` — create items, link them, and change their *own* items freely. On an
  item someone else created a writer may change feedback-style fields only (tags,
  importance, confidence, verification state, extra keys); deleting it, retiring it
  (status archived, superseded, forgotten, frozen, draft), superseding it, rewording it
  (title, summary, content, kind), moving it (domain, visibility, a promotion to team
  or org) or unlinking its edges is refused (``role.others-item``); endorsing it is
  feedback, and allowed, and so is marking it ``org`` once the review promotion its
  author asked for has landed in the org vault (:func:`settles`). A ``learn`` that
  contradicts another author's item marks it ``disputed`` for a curator instead of
  overturning it.
- ``curator`` — everything, including releasing quarantined items
  (``role.curator-only``) and changing any item's status away from ``quarantined``.

Who retires items is the vault's choice, ``retire`` in ``engram.yaml``::

    retire: writer       # (the default) a writer retires its own items, a curator anyone's
    retire: curator      # only curators retire (Tributary's way)

Retiring is archiving, freezing, forgetting or superseding an item (its status into
:data:`RETIRED`, or back out of it: a restore undoes a retirement), deleting it (a purge
included; bringing it back from the trash is the same right, :func:`check_restore`)
and overturning it (a ``supersedes`` edge onto it, a ``learn`` that
contradicts it). With ``retire: curator`` a writer's attempt on its own item is refused
with ``role.curator-only``; on another's it stays ``role.others-item``.

Roles are enforced once ``roles`` is in ``engram.yaml``. Without the section (every
vault made before roles existed, a Co-Engram repository) who acts decides: a person
(the CLI, the viewer) acts as a curator, as before roles existed; an agent session (the
MCP server, :attr:`engram.items.state.VaultState.agent_session`) acts as a writer, so an
agent changes, retires and deletes only the items its actor created — many agents share
one vault, and one misbehaving (or prompt-injected) agent must not rewrite or delete
everyone's knowledge, with the delete synced to every clone. With the section, actors it
does not list get the ``"*"`` role, ``writer`` when ``"*"`` is absent, whoever they are.

Roles guard against mistakes and misbehaving agents on one machine (an agent session
runs as its own actor and the core refuses what the role does not allow). They are not
access control against a person with write access to the git remote: such a person can
edit ``engram.yaml`` or the files directly. ``engram doctor`` and ``engram sync``
report commits that changed another author's item without a curator's role, so it does
not go unseen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from engram.errors import Forbidden, InvalidInput
from engram.store.model import Engram
from engram.store.settings import SETTINGS_FILE, Settings
from mergedriver import codec

Role = Literal["reader", "writer", "curator"]
ROLES: tuple[Role, ...] = ("reader", "writer", "curator")
DEFAULT_ROLE: Role = "writer"
#: The key in ``roles`` that names the role of every actor not listed.
EVERYONE = "*"

#: Fields a writer may change on an item someone else created: feedback, verification,
#: recall evidence and endorsements (vouching for another's item is what they are for).
FEEDBACK_FIELDS = frozenset(
    {"tags", "importance", "confidence", "verificationStatus", "verifications", "reinforcementScore",
     "retrievalCount", "effectiveRetrievals", "failedUses", "lastRetrievedAt", "lastFailedAt",
     "lastEffectiveAt", "lastVerifiedAt", "mergeConflicts", "recalledBy", "recallDays", "endorsements"}
)
#: Statuses that hide an item from others: only its author or a curator may set them.
RETIRING = frozenset({"archived", "superseded", "forgotten", "frozen", "draft", "quarantined"})
#: Statuses of a retired item: moving an item into or out of one is retiring it (or
#: bringing it back), which ``retire: curator`` leaves to curators.
RETIRED = frozenset({"archived", "superseded", "forgotten", "frozen"})
#: The roles ``retire`` may name: the least role that retires items (its own, for a writer).
RETIRERS: tuple[Role, ...] = ("writer", "curator")
#: What stands for a quarantined item's title wherever its text is withheld: from every
#: role but a curator's (MCP answers, the trash listing, the export an agent asks for).
WITHHELD_TITLE = "(quarantined: text withheld)"
#: The role of every actor when ``engram.yaml`` has no ``roles``: a person's, an agent's.
UNCONFIGURED: Mapping[bool, Role] = MappingProxyType({False: "curator", True: "writer"})


@dataclass(frozen=True, slots=True)
class Roles:
    """The ``roles`` mapping of ``engram.yaml``: actor → role, ``"*"`` for the rest."""

    actors: Mapping[str, Role]
    default: Role = DEFAULT_ROLE
    #: False when engram.yaml has no ``roles``: everyone has ``default`` (a curator for a
    #: person, a writer for an agent session; see the module docstring).
    configured: bool = True
    #: The least role that retires items (``retire`` in engram.yaml): writer or curator.
    retire: Role = "writer"

    @classmethod
    def from_settings(cls, settings: Settings, *, agent: bool = False) -> Roles:
        """``roles`` and ``retire`` of ``settings``; ``agent``: the actor is an agent
        session (it decides the role when ``roles`` is absent). Raises InvalidInput."""
        retire = _retire(settings.data.get("retire", "writer"))
        raw = settings.data.get("roles")
        if raw is None:
            return cls(MappingProxyType({}), UNCONFIGURED[agent], configured=False, retire=retire)
        if not isinstance(raw, Mapping):
            raise InvalidInput(
                f"{SETTINGS_FILE}: 'roles' must map actors to roles (reader, writer, curator).",
                field="roles",
                hint='e.g. roles: {alice: curator, "*": writer}',
            )
        actors: dict[str, Role] = {}
        default = DEFAULT_ROLE
        for actor, role in raw.items():
            checked = _role(str(actor), role)
            if str(actor) == EVERYONE:
                default = checked
            else:
                actors[str(actor)] = checked
        return cls(MappingProxyType(actors), default, retire=retire)

    def of(self, actor: str) -> Role:
        return self.actors.get(actor, self.default)

    def curators(self) -> tuple[str, ...]:
        return tuple(sorted(a for a, r in self.actors.items() if r == "curator"))


def _role(actor: str, value: Any) -> Role:
    if value not in ROLES:
        raise InvalidInput(
            f"{SETTINGS_FILE}: roles.{actor} is {value!r}, not one of reader, writer, curator.",
            field="roles",
            hint="Fix the roles section of engram.yaml.",
        )
    role: Role = value
    return role


def _retire(value: Any) -> Role:
    if value not in RETIRERS:
        raise InvalidInput(
            f"{SETTINGS_FILE}: retire is {value!r}, not writer or curator.",
            field="retire",
            hint="retire: writer lets writers retire their own items (the default); retire: curator "
            "leaves retiring to curators.",
        )
    role: Role = value
    return role


def _refuse(actor: str, role: Role, rule: str, what: str, hint: str) -> Forbidden:
    return Forbidden(f"{actor} ({role}) may not {what}.", actor=actor, role=role, rule=rule, hint=hint)


_ASK_CURATOR = "Ask a curator (roles in engram.yaml) to do it, or to give you the curator role."
_CURATORS_RETIRE = (
    "In this vault retiring is a curator's act (retire: curator in engram.yaml): set "
    "verificationStatus=disputed or link a contradicts edge so a curator decides. " + _ASK_CURATOR
)


def _check_retire(actor: str, role: Role, retire: Role, what: str) -> None:
    """Refuse a retirement (of the actor's own item) a writer may not make under ``retire``."""
    if retire == "curator" and role != "curator":
        raise _refuse(actor, role, "role.curator-only", what, _CURATORS_RETIRE)


def require_writer(actor: str, role: Role, what: str) -> None:
    """Refuse any write by a reader (rule ``role.reader-writes``)."""
    if role == "reader":
        raise _refuse(
            actor, role, "role.reader-writes", what,
            "Readers can search and read only; a curator can make you a writer in engram.yaml.",
        )


def require_curator(actor: str, role: Role, what: str) -> None:
    """Refuse unless the actor is a curator (rule ``role.curator-only``)."""
    if role != "curator":
        raise _refuse(actor, role, "role.curator-only", what, _ASK_CURATOR)


def owns(actor: str, item: Engram) -> bool:
    """Whether ``actor`` created ``item`` (an item with no recorded author is nobody's)."""
    return bool(item.created_by) and item.created_by == actor


def check_update(
    actor: str, role: Role, current: Engram, fields: tuple[str, ...], new_status: str,
    *, settles_to: str | None = None, retire: Role = "writer",
) -> None:
    """May ``actor`` change ``fields`` of ``current`` (ending at ``new_status``)?
    ``settles_to``: the new visibility, when the caller accepts a change that only
    :func:`settles` a landed review promotion (any writer may make it). ``retire``: the
    vault's ``retire`` setting (:attr:`Roles.retire`).

    Raises Forbidden naming the rule; see the module docstring for the table.
    """
    require_writer(actor, role, f"change {current.id}")
    if role == "curator" or (settles_to is not None and settles(current, fields, settles_to)):
        return
    if current.status == "quarantined" and new_status != "quarantined":
        raise _refuse(
            actor, role, "role.curator-only", f"release quarantined item {current.id}",
            "Only a curator can release it: `engram quarantine release ID`.",
        )
    if owns(actor, current):
        if "status" in fields and new_status != current.status and RETIRED & {new_status, current.status}:
            verb = "retire" if new_status in RETIRED else "bring back the retired"
            _check_retire(actor, role, retire, f"{verb} {current.id} ({current.status} → {new_status})")
        return
    barred = [f for f in fields if f not in FEEDBACK_FIELDS and not _extra_key(f)]
    if barred:
        what = (
            f"retire {current.id}, which {current.created_by or 'someone else'} created"
            if "status" in barred and new_status in RETIRING
            else f"change {', '.join(barred)} of {current.id}, which "
            f"{current.created_by or 'someone else'} created"
        )
        raise _refuse(
            actor, role, "role.others-item", what,
            "Writers may change only tags, importance, confidence and verification of others' "
            "items (set verificationStatus=disputed to contest one). " + _ASK_CURATOR,
        )


def settles(current: Engram, fields: tuple[str, ...], new_visibility: str) -> bool:
    """Whether a change does nothing but mark a team item ``org`` whose promotion its
    author (or a curator) sent to the org vault for review: what ``engram scopes sync``
    does on any clone once the org's reviewers land it, so any writer may make it. The
    review record on the item is the author's request; a writer cannot add one to
    another's item (``promotions`` is not feedback)."""
    return (
        tuple(fields) == ("visibility",)
        and current.visibility == "team"
        and new_visibility == "org"
        and any(p.get("to") == "org" and p.get("branch") for p in current.promotions or ())
    )


def may_overturn(actor: str, configured: Roles, item: Engram) -> bool:
    """Whether ``actor`` may supersede or overturn ``item`` outright (learn's contradicts):
    its author (unless ``retire: curator``) and curators may; anyone else's contradicting
    lesson becomes ``disputed`` for a curator instead. Without ``roles`` in engram.yaml
    only the author may: an overturn is the one change that stays conservative when roles
    are off."""
    retires = configured.retire == "writer"
    if not configured.configured:
        return retires and owns(actor, item)
    role = configured.of(actor)
    return role == "curator" or (role == "writer" and retires and owns(actor, item))


def check_delete(actor: str, role: Role, current: Engram, *, retire: Role = "writer") -> None:
    """May ``actor`` delete ``current``? Its author (a writer, unless ``retire`` is
    curator) and curators may."""
    require_writer(actor, role, f"delete {current.id}")
    if role != "curator" and not owns(actor, current):
        raise _refuse(
            actor, role, "role.others-item",
            f"delete {current.id}, which {current.created_by or 'someone else'} created",
            "Set verificationStatus=disputed to contest it instead. " + _ASK_CURATOR,
        )
    _check_retire(actor, role, retire, f"delete {current.id} (retire it)")


def check_restore(actor: str, role: Role, item: Engram, *, retire: Role = "writer") -> None:
    """May ``actor`` bring ``item`` back from the trash? Whoever may delete it may: a
    restore is a retirement undone."""
    require_writer(actor, role, f"restore {item.id}")
    if role != "curator" and not owns(actor, item):
        raise _refuse(
            actor, role, "role.others-item",
            f"restore {item.id}, which {item.created_by or 'someone else'} created", _ASK_CURATOR,
        )
    _check_retire(actor, role, retire, f"bring back the deleted {item.id}")


def check_supersede(actor: str, role: Role, target: Engram, *, retire: Role = "writer") -> None:
    """May ``actor`` supersede ``target`` (a ``supersedes`` edge onto it)?"""
    require_writer(actor, role, f"supersede {target.id}")
    if role != "curator" and not owns(actor, target):
        raise _refuse(
            actor, role, "role.others-item",
            f"supersede {target.id}, which {target.created_by or 'someone else'} created",
            "Link it with contradicts (or set verificationStatus=disputed) so a curator decides. " + _ASK_CURATOR,
        )
    _check_retire(actor, role, retire, f"supersede {target.id} (retire it)")


def check_promote(actor: str, role: Role, item: Engram, scope: str) -> None:
    """May ``actor`` move ``item`` up into ``scope`` (team or org)? Promotion moves an
    item (its visibility), so, as for any move: its author and curators may."""
    require_writer(actor, role, f"promote {item.id}")
    if role != "curator" and not owns(actor, item):
        raise _refuse(
            actor, role, "role.others-item",
            f"promote {item.id} to {scope}, which {item.created_by or 'someone else'} created",
            f"Endorse it instead (`engram endorse {item.id} --note WHY`) so its author or a curator promotes it. "
            + _ASK_CURATOR,
        )


def check_unlink(actor: str, role: Role, created_by: str, synapse_id: str) -> None:
    """May ``actor`` remove an edge ``created_by`` someone? Its author and curators may."""
    require_writer(actor, role, f"remove synapse {synapse_id}")
    if role != "curator" and created_by and created_by != actor:
        raise _refuse(
            actor, role, "role.others-item", f"remove synapse {synapse_id}, which {created_by} created",
            _ASK_CURATOR,
        )


#: Every built-in frontmatter key (the codec's list): a field engram adds later is barred
#: on others' items until it is named in FEEDBACK_FIELDS, never let through as an extra.
_BUILTIN = frozenset({"content", *(key for key, _ in codec.ENGRAM_KEYS)})


def _extra_key(name: str) -> bool:
    return name not in _BUILTIN
