"""The viewer over HTTP: every page answers, escapes what it shows, and writes only
through the vault with the version check; bad input is a clear 400."""

from __future__ import annotations

import json
import re

from tests.viewer.conftest import XSS, Viewer

PAGES = ("/", "/items", "/graph", "/search", "/search?q=vacuum", "/conflicts", "/proposals", "/proposals?status=all",
         "/stale", "/quarantine", "/audit", "/merges", "/health")


def test_every_page_answers(running: Viewer) -> None:
    for path in PAGES:
        reply = running.get(path)
        assert reply.status == 200, (path, reply.text[:300])
        assert "<title>" in reply.text and "/static/viewer.css" in reply.text
    item = running.get(f"/item/{running.ids['repack']}")
    assert item.status == 200 and "Use pg_repack instead of VACUUM FULL on live tables" in item.text
    assert running.get("/static/htmx.min.js").status == 200
    assert running.get("/static/cytoscape.min.js").status == 200


def test_the_overview_counts_by_kind_domain_and_scope(running: Viewer) -> None:
    text = running.get("/").text
    counts = running.vault.census()
    assert f"<strong>{counts.items}</strong> items" in text
    for section in ("By kind", "By domain", "By scope", "By status", "Recent activity", "Health"):
        assert section in text
    assert 'href="/items?hidden=1&amp;domain=ops">ops</a>' in text
    flagged = running.vault.conflicts()  # other tests resolve some: read what is there now
    if flagged:
        assert f"{len(flagged)} item(s) flagged by a merge" in text and flagged[0].title in text
    else:
        assert "No item is flagged by a merge." in text


def test_items_filter_sort_and_page_on_the_server(running: Viewer) -> None:
    page = running.get("/items?kind=procedure&sort=title&order=asc").text
    rows = re.findall(r'class="item-link[^"]*">([^<]+)</a>', page)
    expected = sorted((i.title for i in running.vault.list(kinds=["procedure"])), key=str.casefold)
    assert rows == expected and len(rows) >= 3
    one = running.get("/items?per=25&sort=title&q=flaky").text
    assert re.findall(r'class="item-link[^"]*">([^<]+)</a>', one) == [
        "Flaky integration tests hide real failures", "Quarantine a flaky test within one day",
    ]
    # an htmx request gets the table alone
    fragment = running.get("/items?q=flaky", **{"HX-Request": "true"}).text
    assert "<html" not in fragment and 'id="items-table"' in fragment and "2 item(s)" in fragment


def test_bad_parameters_are_a_400_that_says_what_to_do(running: Viewer) -> None:
    for path, message in (
        ("/items?page=abc", "page must be a whole number, not &#39;abc&#39;"),
        ("/items?per=7", "per must be one of 25, 50, 100, 200, not 7"),
        ("/items?sort=evil", "cannot sort by &#39;evil&#39;"),
        ("/items?min_importance=lots", "min_importance must be a number"),
        ("/items?kind=nope", "unknown kind &#39;nope&#39;"),
        ("/graph?depth=9", "depth must be 1 to 3, not 9"),
    ):
        reply = running.get(path)
        assert reply.status == 400 and message in reply.text, (path, reply.text[-600:])
    missing = running.get("/item/01NOSUCHITEM0000000000000")
    assert missing.status == 404 and "no item matches" in missing.text
    assert running.get("/no/such/page").status == 404


def test_a_script_title_is_text_everywhere(running: Viewer) -> None:
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for path in (f"/item/{running.ids['xss']}", "/items?q=script", "/search?q=script+alert",
                 "/graph?focus=" + running.ids["xss"], f"/item/{running.ids['retry']}", "/"):
        text = running.get(path).text
        assert XSS not in text and "<img src=x" not in text and 'href="javascript:' not in text, path
        if path != "/":
            assert escaped in text, path
    body = running.get(f"/item/{running.ids['xss']}").text
    assert "&lt;img src=x onerror=alert(2)&gt;" in body  # raw HTML in a body is shown as text
    assert 'href="javascript:' not in body  # markdown-it refuses the link
    nodes = json.loads(running.get(f"/graph.json?focus={running.ids['xss']}").text)["nodes"]
    assert XSS in [n["data"]["label"] for n in nodes]  # JSON carries it as data; Cytoscape draws text


def test_item_page_shows_frontmatter_body_synapses_lineage_history(running: Viewer) -> None:
    text = running.get(f"/item/{running.ids['quarantine']}").text
    item = running.vault.get(running.ids["quarantine"])
    assert "<th>contentHash</th>" in text and item.content_hash in text
    assert "<code>@pytest.mark.quarantine</code>" in text  # the body is rendered Markdown
    # the derived wikilink becomes a link that opens the other item
    assert 'href="/go?ref=engineering%2Ftesting%2Fflaky-integration-tests-hide-real-failures"' in text
    go = running.get("/go?ref=engineering%2Ftesting%2Fflaky-integration-tests-hide-real-failures")
    assert go.status == 303 and go.headers["location"] == f"/item/{running.ids['flaky']}"
    assert 'id="lineage"' in text and "derives from" in text
    assert 'id="history"' in text and ">create<" in text
    warn = running.get(f"/item/{running.ids['retry']}").text
    assert 'class="contradicts"' in warn and "⚠ contradicts" in warn


def test_graph_json_is_a_bounded_neighbourhood(running: Viewer) -> None:
    data = json.loads(running.get(f"/graph.json?focus={running.ids['retry']}&depth=1").text)
    assert data["focus"] == running.ids["retry"]
    ids = {n["data"]["id"] for n in data["nodes"]}
    assert ids == {running.ids["retry"], running.ids["timeouts"], running.ids["xss"], running.ids["retryall"],
                   running.vault.list(kinds=["decision"], domain="engineering")[0].id}
    warnings = [e["data"] for e in data["edges"] if e["data"]["warning"]]
    assert [w["kind"] for w in warnings] == ["contradicts"]
    capped = json.loads(running.get("/graph.json?limit=3").text)
    assert len(capped["nodes"]) == 3 and capped["truncated"] is True
    only = json.loads(running.get(f"/graph.json?focus={running.ids['retry']}&edge=contradicts").text)
    assert {e["data"]["kind"] for e in only["edges"]} == {"contradicts"}


def test_search_explains_each_hit_and_does_not_count_as_a_recall(running: Viewer) -> None:
    before = running.vault.get(running.ids["repack"]).retrieval_count
    text = running.get("/search?q=vacuum+full").text
    assert "why here" in text and "matched" in text and "score parts" in text and "lexical rank 1" in text
    graph_hit = running.get("/search?q=charge+a+customer+twice").text
    assert "a link from a hit" in graph_hit and "expansion path" in graph_hit
    warned = running.get("/search?q=jittered+backoff").text
    assert "⚠ contradicted by" in warned and "Retry any HTTP call that times out" in warned
    nothing = running.get("/search?q=zzzqqq+xxyyzz").text
    assert 'id="abstained"' in nothing
    running.vault.flush_usage()
    assert running.vault.get(running.ids["repack"]).retrieval_count == before


def test_audit_and_merges_pages(running: Viewer) -> None:
    text = running.get("/audit?action=link").text
    assert text.count(">link</a>") >= 8 and ">create</a>" not in text
    assert "Merge statistics" in running.get("/merges").text
    assert running.get("/merges?days=0").status == 400


def test_proposals_list_what_maintenance_proposes(running: Viewer) -> None:
    text = running.get("/proposals?status=all").text
    for kind in ("merge", "link", "pattern"):
        assert running.ids[f"proposal-{kind}"] in text
    assert "Merge 2 duplicates into &#39;Tune autovacuum per table for hot tables&#39;" in text
    assert 'action="/proposals/' + running.ids["proposal-merge"] + '/accept"' in text or "accepted" in text
    assert running.get("/proposals?status=nonsense").status == 200  # an unknown tab shows the open ones


def test_lineage_follows_the_whole_succession_chain(running: Viewer) -> None:
    text = running.get(f"/item/{running.ids['v1']}").text
    lineage = text.split('id="lineage"')[1].split("</section>")[0]
    assert "Led to" in lineage and "Deploy runbook v2" in lineage and "Deploy runbook v3" in lineage
    assert "The current item on this chain is" in lineage and running.ids["v3"] in lineage
    newest = running.get(f"/item/{running.ids['v3']}").text.split('id="lineage"')[1].split("</section>")[0]
    assert "Came from" in newest and "Deploy runbook v1" in newest and "current item" not in newest


def test_stale_lists_shared_items_to_reverify(running: Viewer) -> None:
    running.get("/stale")
    stale = running.server.config.app.state.viewer.stale  # type: ignore[union-attr]
    assert stale.wait(60)
    report = running.vault.stale_report(limit=200)
    text = running.get("/stale").text
    assert f"{report.checked} shared items checked" in text
    for entry in report.entries:
        assert entry.title.replace("'", "&#39;") in text
    if not report.entries:
        assert "Nothing is stale." in text
