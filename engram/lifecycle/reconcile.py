"""After a merge: finish the learn decisions two clones could not make offline.

``engram sync`` calls :func:`after_merge` with the ids of the items each side created
since the merge base. Two things can need finishing:

- **forked chains** — both clones superseded the same item with different lessons:
  :func:`engram.lifecycle.succession.settle_heads` makes the newer lesson current and
  supersedes the other by it;
- **contradictory new lessons** — each clone *learned* something new (``provenance``
  says ``learned``) and the two contradict: they are settled as ``learn`` would have
  settled them on one machine — the newer supersedes the older when one author wrote
  both, else the newer becomes a disputed draft with a ``dispute`` proposal.

Only lexically related pairs are compared (one search per incoming lesson), and the
decisions read only the items, so every clone that merges reaches the same result.
Items made by ``engram add`` are never settled here: nobody asked for a decision.
"""

from __future__ import annotations

from engram.items import links, writing
from engram.items.state import VaultState
from engram.lifecycle import proposals
from engram.lifecycle.classify import compare, compared_text, lesson_of
from engram.lifecycle.learning import find_candidates
from engram.lifecycle.succession import active, settle_heads, supersede
from engram.store.model import Engram


def learned(item: Engram) -> bool:
    """Whether ``item`` came out of a learn decision (its provenance says so)."""
    return any(isinstance(p, dict) and p.get("action") in ("learned", "supersede") for p in item.provenance or ())


def after_merge(state: VaultState, ours: set[str], theirs: set[str]) -> list[str]:
    """Settle forked chains and contradictory new lessons (see the module docstring);
    one line per decision."""
    done = [f"{s.new.id} supersedes {s.old.id} (forked chain)" for s in settle_heads(state, ours | theirs)]
    with state.lock.hold():
        pairs: set[tuple[str, str]] = set()
        for b_id in sorted(theirs):
            b = active(state, b_id)
            if b is None or not learned(b):
                continue
            for cand in find_candidates(state, compared_text(b), b.situation, 8, exclude=[b.id]):
                if cand.id in ours:
                    pairs.add((cand.id, b.id))
        for a_id, b_id in sorted(pairs):
            a, b = active(state, a_id), active(state, b_id)
            if a is None or b is None or not learned(a):
                continue
            older, newer = sorted((a, b), key=lambda i: (i.activated_at or i.created_at, i.id))
            verdict = compare(lesson_of(newer), lesson_of(older))
            if verdict.relation != "contradicts":
                continue
            why = "learned on two machines; " + "; ".join(verdict.conflicts)
            if older.created_by and older.created_by == newer.created_by:
                supersede(state, older.id, newer.id, reason=why)
                done.append(f"{newer.id} supersedes {older.id} (contradictory lessons from two clones)")
                continue
            writing.update(state, newer.id, {"status": "draft", "verification_status": "disputed"},
                           expected_version=newer.version)
            links.link(state, newer.id, "contradicts", older.id, weight=0.5, evidence=why)
            proposals.propose(state, "dispute", [older.id, newer.id],
                              title=f"Does {newer.title!r} overturn {older.title!r}?", reason=why,
                              payload={"old": older.id, "new": newer.id}, score=verdict.alignment)
            done.append(f"{newer.id} disputes {older.id} (contradictory lessons from two clones)")
    return done
