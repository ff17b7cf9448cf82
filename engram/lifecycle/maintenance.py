"""Maintenance stages: ``light``, ``deep`` and ``rem``. They fold and they *propose*.

- **light** folds the usage and feedback journals into frontmatter (:func:`fold`).
- **deep** (light, then) finds exact duplicates (same fingerprint) and near duplicates
  (``dedup.nearThreshold`` similar; candidates from the index, as ``create`` finds them),
  and clusters: the graph of items and their supportive synapses (no ``contradicts``,
  no ``supersedes``) plus near-duplicate pairs, analysed with networkx — connected
  components, and Louvain communities inside large ones (seeded, so deterministic). Each
  duplicate group becomes a ``merge`` proposal.
- **rem** (deep, then) proposes what the graph suggests: a ``pattern`` item over each
  community of at least ``PATTERN_MIN`` items that no pattern consolidates yet; ``link``
  (``similar_to``) for related items in one domain that share no edge; ``retype`` for a
  ``similar_to`` edge whose ends the classifier finds contradictory; ``verify`` upgrades
  for items that keep helping, one rung at a time on rising evidence (:data:`RUNGS`);
  ``stale`` for shared items past their half-life; and ``archive`` for items that fail more than they help.

Nothing is rewritten: every finding is a proposal file (:mod:`engram.lifecycle.proposals`)
for a person or agent to accept or dismiss, and a dismissed proposal stays dismissed. A
person's note (:func:`engram.store.notes.persons_note`) gets no proposal that would write
into it — no merge, verification state or archive; its duplicate groups are reported
only. Links and patterns, files of their own, it may get.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

from engram.errors import InvalidInput
from engram.items.state import VaultState
from engram.lifecycle import proposals
from engram.lifecycle.classify import SAME_CLAIM, compare, compared_text, lesson_of
from engram.lifecycle.feedback import FoldStats, fold
from engram.lifecycle.freshness import freshness
from engram.lifecycle.learning import candidates_of, find_candidates
from engram.lifecycle.settings import lifecycle_settings
from engram.store.dedup import similarity
from engram.store.model import Engram
from engram.store.notes import persons_note
from engram.store.titles import series

Stage = Literal["light", "deep", "rem"]
STAGES: tuple[Stage, ...] = ("light", "deep", "rem")
PATTERN_MIN = 3
RELATED_LINK = 0.5  # classifier alignment at which two unlinked items in one domain get a link proposal
VERIFY_AFTER = 3  # helped this often, never failed: plausible; twice that: probable; three times: verified
#: Each rung of the ladder and the successes (never a failure) it takes: one step per
#: proposal, on rising evidence. Refuted, disputed and stale items are never proposed.
RUNGS = {"unverified": ("plausible", VERIFY_AFTER), "plausible": ("probable", 2 * VERIFY_AFTER),
         "probable": ("verified", 3 * VERIFY_AFTER)}
SUPPORTIVE_EXCLUDED = frozenset({"contradicts", "supersedes"})


@dataclass(frozen=True, slots=True)
class Cluster:
    ids: tuple[str, ...]
    domain: str

    def to_json(self) -> dict[str, Any]:
        return {"ids": list(self.ids), "domain": self.domain, "size": len(self.ids)}


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    stage: str
    folded: FoldStats | None
    duplicates: tuple[tuple[str, ...], ...] = ()
    components: int = 0
    clusters: tuple[Cluster, ...] = ()
    proposed: tuple[str, ...] = ()  # proposals written or refreshed by this run
    kept: tuple[str, ...] = field(default=())  # already decided, left alone

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "folded": self.folded.to_json() if self.folded else None,
                "duplicates": [list(d) for d in self.duplicates], "components": self.components,
                "clusters": [c.to_json() for c in self.clusters], "proposed": list(self.proposed)}


def maintain(state: VaultState, stage: str = "light") -> MaintenanceReport:
    """Run a maintenance stage (see the module docstring). Raises InvalidInput."""
    if stage not in STAGES:
        raise InvalidInput(f"stage {stage!r} is not one of {', '.join(STAGES)}.", field="stage",
                           hint="light, deep or rem.")
    with state.lock.hold():
        folded = fold(state)
        if stage == "light":
            return MaintenanceReport("light", folded)
        state.ensure_fresh()
        items = [i for i in state.index.items("status IN ('active', 'draft')")]
        by_id = {i.id: i for i in items}
        groups = _duplicates(state, items)
        made: list[str] = []
        for group in groups:
            if any(persons_note(by_id[i]) for i in group):
                continue  # reported, never proposed: a merge would write into a person's note
            keep = _keeper([by_id[i] for i in group])
            prop, _ = proposals.propose(
                state, "merge", list(group),
                title=f"Merge {len(group)} duplicates into {keep.title!r}",
                reason="the same knowledge in several items: keep one, the others' text appended and"
                " superseded (nothing lost)",
                payload={"keep": keep.id, "absorb": [i for i in group if i != keep.id]}, score=1.0,
            )
            made.append(prop.id)
        components, clusters = _clusters(state, items, groups)
        if stage == "rem":
            made += _rem(state, items, by_id, clusters)
        return MaintenanceReport(stage, folded, tuple(groups), components, tuple(clusters), tuple(made))


def _keeper(group: list[Engram]) -> Engram:
    """The item a merge keeps: the most reinforced, then the oldest."""
    return sorted(group, key=lambda i: (-(i.reinforcement_score + i.effective_retrievals), i.created_at, i.id))[0]


def _duplicates(state: VaultState, items: list[Engram]) -> list[tuple[str, ...]]:
    import networkx as nx

    graph: nx.Graph[str] = nx.Graph()
    # A note with no text holds no knowledge to merge, only its place: two empty "2021"
    # pages of two hierarchies (a Dendron or Obsidian folder note each) are no duplicates.
    known = {i.id: i for i in items if i.content.strip()}
    # Duplicates are looked for within one visibility: merging copies the absorbed items'
    # text into the kept one, and a private note's text must never land in a shared item.
    by_fp: dict[tuple[str, str], list[str]] = {}
    for row in state.index.item_rows("status IN ('active', 'draft')"):
        if row.id in known:
            by_fp.setdefault((row.fingerprint, known[row.id].visibility), []).append(row.id)
    for ids in by_fp.values():
        for a, b in itertools.pairwise(sorted(ids)):
            graph.add_edge(a, b)
    threshold = state.dedup_settings.near_threshold
    for item in known.values():
        for cand, cos in candidates_of(state, compared_text(item), item.situation, 5, exclude=[item.id]):
            # Two notes of a series ("Standup 2026-12-01" / "… 12-02") are nearly the same
            # words by their template, and never one piece of knowledge.
            if cand.id not in known or cand.visibility != item.visibility or series(item.title, cand.title):
                continue
            # Nearly the same words, or the same claim in other words with nothing against it.
            if similarity(item.title, item.content, cand.title, cand.content, threshold) >= threshold or (
                cos is not None and cos >= SAME_CLAIM and compare(lesson_of(item), lesson_of(cand, cos)).relation == "duplicate"
            ):
                graph.add_edge(*sorted((item.id, cand.id)))
    return sorted(tuple(sorted(c)) for c in nx.connected_components(graph) if len(c) > 1)


def _clusters(state: VaultState, items: list[Engram], groups: list[tuple[str, ...]]) -> tuple[int, list[Cluster]]:
    import networkx as nx

    graph: nx.Graph[str] = nx.Graph()
    ids = {i.id for i in items}
    graph.add_nodes_from(sorted(ids))
    for syn in state.index.synapses("1"):
        if syn.kind not in SUPPORTIVE_EXCLUDED and syn.source in ids and syn.target in ids:
            graph.add_edge(syn.source, syn.target, weight=syn.weight)
    for group in groups:
        for a, b in itertools.pairwise(group):
            graph.add_edge(a, b, weight=1.0)
    domains = {i.id: i.domain for i in items}
    clusters: list[Cluster] = []
    components = [c for c in nx.connected_components(graph)]
    for comp in components:
        if len(comp) < 2:
            continue
        parts = [comp]
        if len(comp) > 2 * PATTERN_MIN:
            parts = list(nx.community.louvain_communities(graph.subgraph(comp), weight="weight", seed=0))
        for part in parts:
            if len(part) >= 2:
                members = tuple(sorted(part))
                top = sorted(domains[m] for m in members)
                clusters.append(Cluster(members, max(set(top), key=top.count)))
    clusters.sort(key=lambda c: (-len(c.ids), c.ids))
    return len(components), clusters


def _rem(state: VaultState, items: list[Engram], by_id: dict[str, Engram], clusters: list[Cluster]) -> list[str]:
    settings = lifecycle_settings(state)
    made: list[str] = []

    def add(kind: str, targets: list[str], title: str, reason: str, payload: dict[str, Any], score: float,
            discriminator: str = "") -> None:
        prop, _ = proposals.propose(state, kind, targets, title=title, reason=reason, payload=payload,
                                    score=score, discriminator=discriminator)
        made.append(prop.id)

    consolidated = {s.target for s in state.index.synapses("kind = 'consolidates'")}
    for cluster in clusters:
        members = [by_id[i] for i in cluster.ids if i in by_id and by_id[i].kind != "pattern"]
        if len(members) >= PATTERN_MIN and not set(cluster.ids) <= consolidated:
            # The pattern names its members' titles: it is as private as its most private member.
            visibility = proposals.narrowest([m.visibility for m in members])
            add("pattern", list(cluster.ids), f"A pattern over {len(members)} related items in {cluster.domain or 'the vault'}",
                "these items link to each other or say nearly the same: one pattern item could state what they share",
                {"domain": cluster.domain, "members": list(cluster.ids), "visibility": visibility,
                 "title": f"Pattern: {members[0].title}", "content": "\n".join(f"- {m.title}" for m in members)},
                len(members) / 10)
    linked = {(s.source, s.target) for s in state.index.synapses("1")}
    linked |= {(b, a) for a, b in linked}
    for item in items:
        for cand in find_candidates(state, compared_text(item), item.situation, 4, exclude=[item.id]):
            if cand.domain != item.domain or (item.id, cand.id) in linked or cand.id < item.id:
                continue
            c = compare(lesson_of(item), lesson_of(cand))
            if c.alignment >= RELATED_LINK and c.relation in ("novel", "extends"):
                add("link", [item.id, cand.id], f"Link {item.title!r} and {cand.title!r}",
                    f"same domain, alignment {c.alignment:.2f}, no edge between them",
                    {"source": item.id, "kind": "similar_to", "target": cand.id}, c.alignment, "similar_to")
    for syn in state.index.synapses("kind = 'similar_to'"):
        a, b = by_id.get(syn.source), by_id.get(syn.target)
        if a is None or b is None:
            continue
        c = compare(lesson_of(a), lesson_of(b))
        if c.relation == "contradicts":
            add("retype", [a.id, b.id], f"Retype the link between {a.title!r} and {b.title!r} to contradicts",
                "; ".join(c.conflicts), {"synapse": syn.id, "from": "similar_to", "to": "contradicts",
                                         "source": a.id, "target": b.id}, c.alignment, "contradicts")
    for item in items:
        if persons_note(item):
            continue  # a verification state or an archive would be written into the note
        ok, bad = item.effective_retrievals, item.failed_uses
        rung = RUNGS.get(item.verification_status)
        if bad == 0 and rung is not None and ok >= rung[1]:
            to = rung[0]
            add("verify", [item.id], f"Verify {item.title!r} as {to}", f"helped {ok} time(s), never failed",
                {"to": to}, ok / (ok + 1), to)
        if (item.status == "active" and item.visibility in ("team", "org")
                and item.verification_status not in ("stale", "refuted")):
            score, age = freshness(item, settings)
            if score < settings.stale_below:
                add("stale", [item.id], f"Mark {item.title!r} stale", f"freshness {score:.2f} after {age:.0f} days"
                    + (f"; holds while: {item.valid_while}" if item.valid_while else ""), {"to": "stale"}, 1 - score)
        if item.status == "active" and bad >= settings.archive_after_failures and bad > ok:
            add("archive", [item.id], f"Archive {item.title!r}", f"failed {bad} time(s), helped {ok}",
                {"status": "frozen"}, bad / (bad + ok))
    return made
