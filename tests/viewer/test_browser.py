"""End to end in headless Chromium (Debian's ``chromium``, driven by Playwright): open
every page of the demo vault, filter, open an item, edit it, resolve a conflict, delete
with confirmation, draw the graph, and the ``<script>`` item stays text.

One browser for the package (``tests/viewer/conftest.py``); each test opens its own page
and fails on any console error (a Content-Security-Policy violation included). Screenshots go to
``test-artifacts/viewer/`` (gitignored). Chromium must be installed (``.ci/run`` does it):
these tests fail, not skip, without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.viewer.conftest import HOSTILE, XSS, Viewer, browse, shot


@pytest.fixture
def page(browser: Browser, running: Viewer) -> Iterator[Page]:
    with browse(browser, running.url) as opened:
        yield opened


def test_every_page_opens_from_the_menu(page: Page) -> None:
    page.goto("/")
    expect(page.locator("h1")).to_have_text("Overview")
    expect(page.locator("#health-status")).to_contain_text("problem", timeout=120_000)  # doctor: slow on a busy machine
    shot(page, "overview")
    for label, heading in (("Items", "Items"), ("Graph", "Graph"), ("Search", "Search"),
                           ("Conflicts", "Conflicts"), ("Proposals", "Proposals"),
                           ("Stale", "Stale items"), ("Audit log", "Audit log"),
                           ("Merges", "Merge statistics"), ("Health", "Health")):
        page.locator("header nav").get_by_role("link", name=label, exact=True).click()
        expect(page.locator("h1")).to_have_text(heading)
        expect(page.locator("header nav a.here")).to_have_text(label)
        shot(page, label.lower().replace(" ", "-"))


def test_filtering_the_items_table_updates_it_in_place(page: Page) -> None:
    page.goto("/items")
    total = int(page.locator("#total").inner_text().split()[0])
    page.locator("#q").fill("flaky")
    expect(page.locator("#total")).to_have_text(re.compile(r"^2 item\(s\)"))
    expect(page).to_have_url(re.compile(r"q=flaky"))
    page.locator("select[name=kind]").select_option("procedure")
    expect(page.locator("#items-table tbody tr")).to_have_count(1)
    expect(page.locator("#items-table")).to_contain_text("Quarantine a flaky test within one day")
    shot(page, "items-filtered")
    page.locator("#q").fill("")
    page.locator("select[name=kind]").select_option("")
    expect(page.locator("#total")).to_have_text(re.compile(rf"^{total} item\(s\)"))
    page.get_by_role("link", name="Title").click()  # sort by title, A→Z
    expect(page).to_have_url(re.compile(r"sort=title"))
    first = page.locator("#items-table tbody tr td:first-child").first.inner_text()
    assert first == XSS  # "<" sorts before letters; shown as text


def test_open_an_item_and_edit_it(page: Page, running: Viewer) -> None:
    page.goto("/items?q=immutable")
    page.get_by_role("link", name="Prefer immutable value objects").click()
    expect(page.locator("h1")).to_have_text("Prefer immutable value objects")
    expect(page.locator("#synapses")).to_contain_text("Copy a frozen dataclass with dataclasses.replace")
    before = running.vault.get(running.ids["frozen"])
    page.get_by_role("link", name="Edit", exact=True).click()
    page.locator("input[name=summary]").fill("Immutable values need no locks")
    body = page.locator("textarea[name=content]")
    body.fill(body.input_value() + "\nAdded from the viewer.\n")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".notice")).to_have_text(f"Saved as version {before.version + 1}.")
    expect(page.locator("#body")).to_contain_text("Added from the viewer.")
    shot(page, "item-edited")
    after = running.vault.get(before.id)
    assert after.summary == "Immutable values need no locks"
    assert after.content == before.content + "\nAdded from the viewer.\n"
    assert running.vault.history(before.id)[-1].fields == ("summary", "content")


def test_a_stale_edit_in_the_browser_shows_what_changed(page: Page, running: Viewer) -> None:
    ref = running.ids["flaky"]
    page.goto(f"/item/{ref}/edit")
    running.vault.update(ref, {"importance": 0.77})  # someone else, meanwhile
    page.locator("input[name=title]").fill("Flaky tests hide real failures")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#stale")).to_contain_text("Someone changed this item")
    expect(page.locator("#stale")).to_contain_text("(importance)")
    expect(page.locator("input[name=title]")).to_have_value("Flaky tests hide real failures")
    shot(page, "stale-edit")
    assert running.vault.get(ref).title == "Flaky integration tests hide real failures"


def test_resolve_a_conflict_after_editing_out_the_block(page: Page, running: Viewer) -> None:
    ref = running.ids["answer"]
    page.goto("/conflicts")
    row = page.locator("#conflicts tr", has_text="Answer to everything")
    row.get_by_role("button", name="Resolve…").click()
    expect(page.locator("h1")).to_contain_text("still holds conflict blocks")
    page.get_by_role("link", name="Cancel").click()  # to the edit form
    page.locator("textarea[name=content]").fill("the answer is 42\n")
    page.get_by_role("button", name="Save").click()
    page.goto("/conflicts")
    page.locator("#conflicts tr", has_text="Answer to everything").get_by_role("button", name="Resolve").click()
    expect(page.locator(".notice")).to_contain_text("Cleared the flag on Answer to everything")
    shot(page, "conflict-resolved")
    assert running.vault.get(ref).merge_conflicts is None
    assert running.vault.get(ref).content == "the answer is 42\n"


def test_accept_a_proposal(page: Page, running: Viewer) -> None:
    ref = running.ids["proposal-link"]
    page.goto("/")
    page.get_by_role("link", name=re.compile(r"open proposal\(s\)")).click()
    expect(page.locator("h1")).to_have_text("Proposals")
    row = page.locator("#proposals tr", has_text=ref)
    row.get_by_role("button", name="Accept", exact=True).click()
    expect(page.locator(".notice")).to_contain_text("accepted by tester")
    shot(page, "proposal-accepted")
    assert running.vault.proposal(ref).status == "accepted"
    linked = {s.other(running.ids["busy"]) for s in running.vault.synapses(running.ids["busy"], kind="similar_to")}
    assert running.ids["repack"] in linked


def test_delete_asks_for_confirmation(page: Page, running: Viewer) -> None:
    made = running.vault.create("Scratch item for the browser", "bye", domain=["tmp"])
    page.goto(f"/item/{made.id}")
    page.get_by_role("link", name="Delete…").click()
    expect(page.locator("h1")).to_have_text("Delete Scratch item for the browser?")
    assert running.vault.get(made.id)  # still there while asking
    page.get_by_role("button", name="Delete").click()
    expect(page.locator("h1")).to_have_text("Deleted")
    assert running.vault.list(domain="tmp", include_hidden=True) == [] or all(
        i.id != made.id for i in running.vault.list(domain="tmp")
    )


def test_the_graph_draws_a_neighbourhood_with_contradictions_as_warnings(page: Page, running: Viewer) -> None:
    page.goto(f"/graph?focus={running.ids['retry']}&depth=2")
    graph = page.locator("#graph")
    expect(graph).to_have_attribute("data-ready", "1")
    expect(graph).to_have_attribute("data-warnings", "1")
    expect(page.locator("#graph-status")).to_contain_text("1 contradiction(s)")
    assert int(graph.get_attribute("data-nodes") or 0) >= 4
    shot(page, "graph")


def test_the_script_item_renders_as_text(page: Page, running: Viewer) -> None:
    page.goto(f"/item/{running.ids['xss']}")
    expect(page.locator("h1#item-title")).to_have_text(XSS)
    expect(page.locator("#body")).to_contain_text("<img src=x onerror=alert(2)>")
    assert page.locator("#body script, #body img").count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    shot(page, "xss-as-text")
    page.goto("/items?q=script")
    expect(page.locator("#items-table")).to_contain_text(XSS)
    page.goto(f"/graph?focus={running.ids['xss']}")
    expect(page.locator("#graph")).to_have_attribute("data-ready", "1")
    page.goto("/search?q=script+alert")
    expect(page.locator("ol.hits")).to_contain_text(XSS)


# ---------------------------------------------------------------------- an adopted Obsidian vault

#: Pixels of the graph's canvases drawn in one colour (Cytoscape draws on canvases).
COUNT_COLOUR = """([r, g, b]) => {
  let n = 0;
  for (const c of document.querySelectorAll('#graph canvas')) {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0 && Math.abs(d[i] - r) < 20 && Math.abs(d[i + 1] - g) < 20 && Math.abs(d[i + 2] - b) < 20) n++;
    }
  }
  return n;
}"""
WIKILINK_BLUE = [0x3B, 0x82, 0xC4]


@pytest.fixture
def vault_page(browser: Browser, obsidian: Viewer) -> Iterator[Page]:
    with browse(browser, obsidian.url) as opened:
        yield opened


def test_an_adopted_vaults_graph_draws_the_wikilinks(vault_page: Page, obsidian: Viewer) -> None:
    page = vault_page
    page.goto("/graph?limit=500")
    graph = page.locator("#graph")
    expect(graph).to_have_attribute("data-ready", "1", timeout=30_000)
    drawn = int(graph.get_attribute("data-wikilinks") or 0)
    everything = obsidian.vault.neighbourhood(None, limit=500)
    assert drawn == len([e for e in everything.edges if e.wikilink]) >= 80
    expect(page.locator("#graph-status")).to_contain_text(f"{len(everything.nodes)} item(s), {drawn} wikilink(s), 1 synapse(s)")
    expect(page.locator("#graph-legend")).to_contain_text("wikilink (typed in a note)")
    assert page.evaluate(COUNT_COLOUR, WIKILINK_BLUE) > 2_000  # the edges are on the canvas, in their own colour
    shot(page, "obsidian-graph")
    page.goto(f"/graph?focus={obsidian.ids['Kevin Kelly']}&depth=2")
    expect(graph).to_have_attribute("data-ready", "1")
    assert int(graph.get_attribute("data-nodes") or 0) >= 10 and int(graph.get_attribute("data-wikilinks") or 0) >= 10
    expect(graph).to_have_attribute("data-synapses", "1")  # the agent's typed synapse, beside them
    assert page.evaluate(COUNT_COLOUR, WIKILINK_BLUE) > 200
    shot(page, "obsidian-graph-focus")


def test_an_adopted_notes_page_lists_links_and_follows_them(vault_page: Page, obsidian: Viewer) -> None:
    page = vault_page
    ids = obsidian.ids
    page.goto(f"/item/{ids['Kevin Kelly']}")
    incoming = {row.source_id for row in obsidian.vault.wikilinks(ids["Kevin Kelly"]).incoming}
    expect(page.locator("#backlinks li")).to_have_count(len(incoming))
    for title in ("Out of Control", "Reading list", "Idea log"):
        expect(page.locator("#backlinks")).to_contain_text(title)
    expect(page.locator("#links")).to_contain_text("People")
    expect(page.locator("#link-counts")).to_contain_text(f"{len(incoming)} backlink(s)")
    shot(page, "obsidian-item")
    page.locator("#backlinks").get_by_role("link", name="Reading list").click()
    expect(page.locator("h1#item-title")).to_have_text("Reading list")
    body = page.locator("#body")
    expect(body).not_to_contain_text("private aside")
    expect(body).not_to_contain_text("%%")
    cover = body.locator("img.embed-image").first
    expect(cover).to_be_visible()
    assert cover.evaluate("i => i.complete && i.naturalWidth") > 0  # the image came from the vault
    expect(body.locator(".embed").first).to_contain_text("Kevin Kelly")
    expect(page.locator("#properties")).to_contain_text("categories")
    expect(page.locator("#properties")).not_to_contain_text("null")
    shot(page, "obsidian-embeds")
    page.get_by_role("link", name="ideas below").click()
    expect(page).to_have_url(re.compile(r"#h-ideas$"))
    expect(page.locator("#h-ideas")).to_be_in_viewport()
    page.get_by_role("link", name="Idea log > ^remix").click()
    expect(page).to_have_url(re.compile(rf"/item/{ids['Idea log']}#block-remix$"))
    expect(page.locator("#block-remix")).to_be_in_viewport()
    expect(page.locator("h1#item-title")).to_have_text("Idea log")
    shot(page, "obsidian-block-link")


def test_a_hostile_note_runs_nothing(vault_page: Page, obsidian: Viewer) -> None:
    page = vault_page
    page.goto(f"/item/{obsidian.ids['Links to the hostile note']}")
    expect(page.locator("#body")).to_contain_text("Text under the heading.")
    page.locator("#body a.wikilink").first.click()
    expect(page.locator("h1#item-title")).to_have_text(HOSTILE)
    heading = page.locator("#body h2").first
    expect(heading).to_have_text('<script>alert(2)</script> & "quoted"')
    expect(heading).to_be_in_viewport()
    svg = page.locator('#body img[alt="evil.svg"]')
    expect(svg).to_be_visible()
    assert svg.evaluate("i => i.complete && i.naturalWidth") > 0
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    shot(page, "obsidian-hostile")
