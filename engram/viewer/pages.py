"""The reading pages: overview, items, one item, graph, search, queues (conflicts, proposals,
stale items, quarantine), audit, merges, health.

Each handler reads its query parameters (:mod:`engram.viewer.params`), makes one or a
few :class:`~engram.vault.Vault` calls, and renders a template. Every listing is paged
or bounded on the server (a table page, a graph neighbourhood, a page of the audit log),
so a page costs the same in a 100-item vault and a 100k-item one. Searches run with
``record=False``: looking in the viewer does not heat items for the agents' recall.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from engram.errors import EngramError
from engram.index.wikilinks import LINK_KIND
from engram.store.model import ENGRAM_KINDS, STATUSES, SYNAPSE_KINDS, VISIBILITIES
from engram.viewer import notes
from engram.viewer.context import Viewer, viewer_of
from engram.viewer.health import STALE_LIMIT
from engram.viewer.markup import parse_wikilink
from engram.viewer.params import Params

PAGE_SIZES = (25, 50, 100, 200)
PROPOSAL_STATUSES = ("open", "accepted", "dismissed", "all")
COLUMNS = (
    ("title", "Title"), ("kind", "Kind"), ("domain", "Domain"), ("status", "Status"),
    ("importance", "Importance"), ("retrievals", "Recalls"), ("updated", "Updated"),
)
#: Sorts that start A→Z; the others (numbers, dates) start with the largest.
ASCENDING_FIRST = frozenset({"title", "kind", "domain", "status"})
def overview(request: Request) -> Response:
    viewer = viewer_of(request)
    vault = viewer.vault
    return viewer.page(
        request, "overview.html",
        counts=vault.census(),
        recent=vault.activity(limit=15),
        conflicts=vault.conflicts(),
        proposals=vault.proposals(),
        health=viewer.health.current(),
    )


def _item_filters(p: Params) -> dict[str, Any]:
    return {
        "domain": p.text("domain"),
        "kinds": p.many("kind"),
        "tags": p.many("tag"),
        "statuses": p.many("status"),
        "visibility": p.many("visibility"),
        "min_importance": p.number("min_importance"),
        "include_hidden": p.flag("hidden"),
    }


def items(request: Request) -> Response:
    viewer = viewer_of(request)
    p = Params(request)
    per = p.integer("per", 50, choices=PAGE_SIZES)
    number = p.integer("page", 1, low=1)
    sort = p.text("sort") or "updated"
    descending = (p.text("order") or ("asc" if sort in ASCENDING_FIRST else "desc")) == "desc"
    found = viewer.vault.browse(
        **_item_filters(p), title=p.text("q"), sort=sort, descending=descending,
        limit=per, offset=(number - 1) * per,
    )
    pages = max(1, -(-found.total // per))
    columns = [
        (key, label, ("asc" if descending else "desc") if key == sort
         else ("asc" if key in ASCENDING_FIRST else "desc"))
        for key, label in COLUMNS
    ]
    return viewer.page(
        request, "items.html", fragment="_items_results.html", found=found, number=number, pages=pages, per=per, columns=columns,
        sort=sort, descending=descending, page_sizes=PAGE_SIZES,
        kinds=ENGRAM_KINDS, statuses=STATUSES, visibilities=VISIBILITIES,
    )


def item(request: Request) -> Response:
    viewer = viewer_of(request)
    vault = viewer.vault
    found = vault.get(request.path_params["id"])
    around = vault.neighbourhood(found.id, depth=1, include_hidden=True, synapse_kinds=SYNAPSE_KINDS, limit=500)
    titles = {n.id: n for n in around.nodes}
    typed = vault.wikilinks(found.id, limit=notes.BACKLINKS_SHOWN)
    props = vault.properties(found.id)
    resolver = notes.NoteResolver(vault, found.id, typed.outgoing)
    return viewer.page(
        request, "item.html", item=found, synapses=vault.synapses(found.id),
        body=notes.body_html(vault, found.id, found.content, typed), links=notes.link_lists(vault, found.id, typed),
        props=props, written=notes.property_rows(props.written, resolver),
        fields=notes.property_rows(props.fields), derived_fields=notes.property_rows(props.derived, skip_empty=True),
        lineage=vault.lineage(found.id), neighbours=titles, cut=around.truncated,
        derived=vault.derived_section(found.id), history=vault.timeline(found.id),
        proposals=vault.proposals(target=found.id),
        successor=titles.get(found.superseded_by or "") if found.superseded_by else None,
    )


def go(request: Request) -> Response:
    """Open the item a wikilink names (path, id or title), at the heading or block it
    names (``Note#Heading``, ``Note#^block``)."""
    viewer = viewer_of(request)
    link = parse_wikilink(Params(request).text("ref") or "")
    return RedirectResponse(notes.item_href(viewer.vault.get(link.target).id, link.anchor), status_code=303)


def attachment(request: Request) -> Response:
    """An image a note embeds, from inside the vault only (see
    :mod:`engram.items.attachments`); sandboxed, so an SVG's script never runs."""
    viewer = viewer_of(request)
    p = Params(request)
    found = viewer.vault.attachment(p.text("name") or "", p.text("from"))
    name = found.path.rsplit("/", 1)[-1]
    return Response(found.data, media_type=found.media_type, headers={
        "cache-control": "no-store",
        "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
        "content-disposition": f"inline; filename*=UTF-8''{quote(name, safe='')}",
    })


def _graph_args(p: Params) -> dict[str, Any]:
    return {
        "ref": p.text("focus"),
        "depth": p.integer("depth", 2, low=1, high=3),
        "domain": p.text("domain"),
        "kinds": p.many("kind"),
        "min_importance": p.number("min_importance"),
        "synapse_kinds": p.many("edge"),
        "limit": p.integer("limit", 150, low=1, high=500),
    }


def graph(request: Request) -> Response:
    viewer = viewer_of(request)
    p = Params(request)
    args = _graph_args(p)  # validated here too, so a bad filter shows on the page
    focus = viewer.vault.get(args["ref"]) if args["ref"] else None
    return viewer.page(
        request, "graph.html", focus=focus, depth=args["depth"], kinds=ENGRAM_KINDS,
        edge_kinds=SYNAPSE_KINDS, link_kind=LINK_KIND, data_query=request.url.query,
    )


def graph_json(request: Request) -> Response:
    """The neighbourhood as Cytoscape.js elements: typed synapses (``contradicts`` ones are
    warnings) and the wikilinks typed in notes (``wikilink``: drawn apart)."""
    viewer = viewer_of(request)
    found = viewer.vault.neighbourhood(**_graph_args(Params(request)))
    nodes = [
        {"data": {"id": n.id, "label": n.title, "kind": n.kind, "domain": n.domain,
                  "status": n.status, "importance": n.importance, "hops": n.hops,
                  "focus": n.id == found.focus}}
        for n in found.nodes
    ]
    edges = [
        {"data": {"id": e.id, "source": e.source, "target": e.target, "kind": e.kind,
                  "weight": e.weight, "warning": e.kind == "contradicts", "wikilink": e.wikilink}}
        for e in found.edges
    ]
    links = sum(1 for e in found.edges if e.wikilink)
    return JSONResponse(
        {"focus": found.focus, "truncated": found.truncated, "nodes": nodes, "edges": edges,
         "synapses": len(edges) - links, "wikilinks": links},
        headers={"cache-control": "no-store"},
    )


def search(request: Request) -> Response:
    viewer = viewer_of(request)
    p = Params(request)
    text = p.text("q")
    result = None
    if text:
        result = viewer.vault.search(
            text, limit=p.integer("limit", 20, low=1, high=100), domain=p.text("domain"),
            kinds=p.many("kind"), tier="digest", record=False,
        )
    return viewer.page(request, "search.html", result=result, kinds=ENGRAM_KINDS)


def conflicts(request: Request) -> Response:
    viewer = viewer_of(request)
    resolved = Params(request).text("resolved")
    return viewer.page(
        request, "conflicts.html", flagged=viewer.vault.conflicts(),
        resolved=viewer.vault.get(resolved) if resolved else None,
    )


AUDIT_PAGE = 50


def audit(request: Request) -> Response:
    viewer = viewer_of(request)
    p = Params(request)
    number = p.integer("page", 1, low=1)
    entries = viewer.vault.activity(
        limit=AUDIT_PAGE + 1, offset=(number - 1) * AUDIT_PAGE,
        actor=p.text("actor"), action=p.text("action"), item=p.text("item"),
    )
    return viewer.page(
        request, "audit.html", entries=entries[:AUDIT_PAGE], number=number,
        more=len(entries) > AUDIT_PAGE,
    )


def merges(request: Request) -> Response:
    viewer = viewer_of(request)
    days = Params(request).optional_integer("days", low=1)
    return viewer.page(
        request, "merges.html", days=days, stats=viewer.vault.merge_stats(days),
        anomalies=viewer.vault.merge_anomalies(days),
    )


def health(request: Request) -> Response:
    viewer = viewer_of(request)
    current = viewer.health.current()
    by_code: dict[str, int] = {}
    if current.report is not None:
        for problem in current.report.problems:
            by_code[problem.code] = by_code.get(problem.code, 0) + 1
    return viewer.page(request, "health.html", health=current, by_code=by_code, shown=200)


def health_summary(request: Request) -> Response:
    """The overview's health box alone (polled by htmx while the first check runs)."""
    viewer = viewer_of(request)
    return viewer.page(request, "_health_summary.html", health=viewer.health.current())


def proposals(request: Request) -> Response:
    """What maintenance (or a disputed lesson) proposes, to accept or dismiss."""
    viewer = viewer_of(request)
    p = Params(request)
    tab = p.text("status") or "open"
    if tab not in PROPOSAL_STATUSES:
        tab = "open"  # an unknown tab shows the open ones rather than an error page
    found = viewer.vault.proposals(status=None if tab == "all" else tab, kind=p.text("kind"))
    return viewer.page(
        request, "proposals.html", found=found, tab=tab, statuses=PROPOSAL_STATUSES,
        titles=_titles(viewer, {t for prop in found for t in prop.targets}),
        decided=viewer.vault.proposal(p.text("decided") or "") if p.text("decided") else None,
    )


def quarantine(request: Request) -> Response:
    """Items the instruction screen held back, with the rules that fired and where; a
    curator releases them here (``engram quarantine list`` / ``release``)."""
    viewer = viewer_of(request)
    released = Params(request).text("released")
    return viewer.page(
        request, "quarantine.html", held=viewer.vault.quarantined(),
        curator=viewer.vault.state.role == "curator", role=viewer.vault.state.role,
        released=viewer.vault.get(released) if released else None,
    )


def _titles(viewer: Viewer, ids: set[str]) -> dict[str, str]:
    """Titles of the items ``ids`` name that still exist (proposals are few: one read each)."""
    found: dict[str, str] = {}
    for ref in sorted(ids):
        try:
            found[ref] = viewer.vault.get(ref).title
        except EngramError:
            continue
    return found


def stale(request: Request) -> Response:
    """Shared items oldest-verified first, with their premises: what to re-check (the
    report weighs every shared item, so it is made in the background)."""
    viewer = viewer_of(request)
    verified = Params(request).text("verified")
    return viewer.page(
        request, "stale.html", fragment="_stale_panel.html", state=viewer.stale.current(),
        limit=STALE_LIMIT, verified=viewer.vault.get(verified) if verified else None,
    )
