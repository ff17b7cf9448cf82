"""The viewer over an adopted Obsidian vault, over HTTP: the links people wrote are drawn.

A copy of kepano's real vault plus notes that use the rest of Obsidian's syntax
(``tests/viewer/conftest.py``, fixture ``obsidian``). Each test was written to fail on the
viewer before wikilinks were drawn: the graph had no edges, item pages listed no links,
``[[Note#Heading]]`` was a 404, ``![[…]]`` showed a literal ``!``, ``%% comments %%``
showed, and the frontmatter panel showed ``aliases [null]`` among engram's defaults.
"""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, urlencode

from engram.vault import Vault
from engram.viewer.notes import BACKLINKS_SHOWN, LINKS_SHOWN, MAX_EMBED_DEPTH, MAX_EMBEDS
from tests.conftest import ROOT, VAULTS, shared
from tests.viewer.conftest import HOSTILE, HOSTILE_HEADING, OBSIDIAN_NOTES, Viewer, start, stop


def section(page: str, name: str) -> str:
    return page.split(f'id="{name}"', 1)[1].split("</section>", 1)[0]


def body(page: str) -> str:
    return section(page, "body")


def item(obsidian: Viewer, title: str) -> str:
    reply = obsidian.get(f"/item/{obsidian.ids[title]}")
    assert reply.status == 200, reply.text[-400:]
    return reply.text


def test_the_graph_draws_wikilinks_apart_from_synapses(obsidian: Viewer) -> None:
    everything = json.loads(obsidian.get("/graph.json?limit=500").text)
    assert len(everything["nodes"]) == len(obsidian.ids) and not everything["truncated"]
    links = [e["data"] for e in everything["edges"] if e["data"]["wikilink"]]
    assert everything["wikilinks"] == len(links) >= 80 and everything["synapses"] == 1
    assert {e["kind"] for e in links} == {"links_to"} and all(e["id"].startswith("link:") for e in links)
    typed = [e["data"] for e in everything["edges"] if not e["data"]["wikilink"]]
    assert [(e["kind"], e["id"][:4]) for e in typed] == [("exemplifies", "syn-")]
    ids = obsidian.ids
    assert {"source": ids["Out of Control"], "target": ids["Kevin Kelly"]}.items() <= next(
        e for e in links if e["source"] == ids["Out of Control"] and e["target"] == ids["Kevin Kelly"]
    ).items()
    # focusing on a note shows what it links and what links to it
    around = json.loads(obsidian.get(f"/graph.json?focus={ids['Kevin Kelly']}&depth=1").text)
    titles = {n["data"]["label"] for n in around["nodes"]}
    assert {"Kevin Kelly", "Out of Control", "Reading list", "Idea log", "People"} <= titles
    wider = json.loads(obsidian.get(f"/graph.json?focus={ids['Kevin Kelly']}&depth=2").text)
    assert wider["synapses"] == 1 and wider["wikilinks"] > around["wikilinks"]  # both sorts, counted apart
    only = json.loads(obsidian.get(f"/graph.json?focus={ids['Kevin Kelly']}&edge=links_to").text)
    assert only["wikilinks"] == len(only["edges"]) > 0
    none = json.loads(obsidian.get(f"/graph.json?focus={ids['Kevin Kelly']}&edge=extends").text)
    assert none["edges"] == [] and len(none["nodes"]) == 1
    page = obsidian.get("/graph").text
    assert "wikilinks only" in page and "swatch wikilink" in page and "wikilink (typed in a note)" in page


def test_an_item_page_lists_links_and_backlinks(obsidian: Viewer) -> None:
    page = item(obsidian, "Kevin Kelly")
    backlinks = section(page, "backlinks")
    for title in ("Out of Control", "Reading list", "Idea log"):
        assert f'/item/{obsidian.ids[title]}" class="item-link">{title}</a>' in backlinks, title
    links = section(page, "links")
    assert '>People</a>' in links and "in a property" in links  # categories: [[People]]
    reading = item(obsidian, "Reading list")
    listed = section(reading, "links")
    assert "Someday maybe</span> <span class=\"muted\">not written yet" in listed
    # Idea log is linked ([[Idea log#^remix]]) and embedded: one line, marked as an embed
    line = next(li for li in listed.split("<li>") if f'/item/{obsidian.ids["Idea log"]}"' in li)
    assert listed.count(f'/item/{obsidian.ids["Idea log"]}"') == 1 and ">embed<" in line
    assert "Hidden link" not in reading  # inside a comment: not a link, not shown
    counts = section(reading, "link-counts") if 'id="link-counts"' in reading else ""
    n_links = len(re.findall(r"<li>", listed))
    assert re.search(rf">{n_links} link\(s\)</a> \(\d+ to notes in the vault\)", reading), counts
    assert "No synapses (typed links between items; the wikilinks typed in notes are listed above)." in reading


def test_heading_block_and_alias_links_open_the_note_at_the_place(obsidian: Viewer) -> None:
    ids = obsidian.ids
    html = body(item(obsidian, "Reading list"))
    assert f'<a href="/item/{ids["Out of Control"]}#h-ideas" class="wikilink">the ideas in Out of Control</a>' in html
    assert f'<a href="/item/{ids["Idea log"]}#block-remix" class="wikilink">Idea log &gt; ^remix</a>' in html
    assert f'<a href="/item/{ids["Reading list"]}#h-ideas" class="wikilink">ideas below</a>' in html
    assert '<a href="#h-cover" class="wikilink">Cover</a>' in html
    assert '<h2 id="h-ideas">Ideas</h2>' in html and '<p id="block-remix">Everything is a remix.</p>' in html
    log = body(item(obsidian, "Idea log"))
    assert '<h2 id="h-first-idea">First idea</h2>' in log and '<li id="block-listed">' in log
    # a Markdown image with a relative path is served from the vault too; a missing one says so
    cover = urlencode({"name": "../Attachments/out-of-control.jpg", "from": ids["Idea log"]}).replace("&", "&amp;")
    assert f'<img src="/attachment?{cover}" alt="the cover" />' in log and "[missing image: nowhere.png]" in log
    # /go resolves a heading link written as text too (the derived section and old links)
    reply = obsidian.get("/go?" + urlencode({"ref": "Idea log#Second idea"}))
    assert reply.status == 303 and reply.headers["location"] == f"/item/{ids['Idea log']}#h-second-idea"


def test_embeds_are_drawn_and_bounded(obsidian: Viewer) -> None:
    ids = obsidian.ids
    html = body(item(obsidian, "Reading list"))
    assert "!<" not in html and "![[" not in html  # no literal "!" left before an embed
    assert "<p><div" not in html and "<p><img" not in html  # an embed alone is not wrapped in a paragraph
    image = f'<img src="/attachment?name=out-of-control.jpg&amp;from={ids["Reading list"]}" alt="out-of-control.jpg"'
    assert image in html and 'width="120"' in html
    # a note embed is its body in a box; a section embed is that section only
    assert f'<div class="embed"><p class="embed-title"><a href="/item/{ids["Kevin Kelly"]}">Kevin Kelly</a></p>' in html
    section_embed = html.split(f'href="/item/{ids["Idea log"]}#h-second-idea"', 1)[1].split("</div>", 1)[0]
    assert "Creativity is combinatory uniqueness." in section_embed and "First idea" not in section_embed
    assert "Not embedded anywhere" not in html
    assert '<span class="embed file">embedded file Daily.base: not shown here</span>' in html
    # embedded headings carry no ids: the page's anchors are its own note's
    assert html.count('id="h-second-idea"') == 0
    # a cycle stops at once; a chain stops at the depth bound
    loop = body(item(obsidian, "Loop A"))
    assert loop.count("Loop B embeds Loop A") == 1 and "is embedded above it: not repeated" in loop
    deep = body(item(obsidian, "Depth 1"))
    assert "Level 4." in deep and "Level 5." not in deep and "embeds nest 3 deep at most" in deep


def test_comments_are_hidden(obsidian: Viewer) -> None:
    html = body(item(obsidian, "Reading list"))
    assert "private aside" not in html and "%%" not in html
    assert "A whole block the owner hid" not in html and "Hidden link" not in html
    assert "A note not written yet" in html and "<h2 id=\"h-cover\">Cover</h2>" in html


def test_the_persons_properties_stand_apart_from_engrams_fields(obsidian: Viewer) -> None:
    page = item(obsidian, "Reading list")
    props = section(page, "properties")
    assert f'<th>categories</th><td><a href="/item/{obsidian.ids["Books"]}" class="wikilink">Books</a></td>' in props
    assert '<th>aliases</th><td><span class="muted">empty</span></td>' in props
    assert '<th>status</th><td><span class="muted">empty</span></td>' in props  # left empty: theirs
    assert "null" not in page and "[None]" not in page
    fields = section(page, "engram-fields")
    assert "<h3>In the file</h3>" in fields and "<th>tags</th><td>reading</td>" in fields
    derived = fields.split("Derived, not in the file", 1)[1]
    for key in ("id", "title", "kind", "domainTags", "importance"):
        assert f"<th>{key}</th>" in derived, key
    assert "<th>categories</th>" not in fields and "<th>kind</th>" not in props
    assert "<th>createdBy</th>" not in derived  # an empty derived value is left out


def test_images_are_served_from_the_vault_only(obsidian: Viewer) -> None:
    ids = obsidian.ids
    root: Path = obsidian.vault.root
    reply = obsidian.request("GET", "/attachment?" + urlencode({"name": "out-of-control.jpg", "from": ids["Reading list"]}))
    assert reply.status == 200 and reply.headers["content-type"] == "image/jpeg"
    assert int(reply.headers["content-length"]) == (root / "Attachments" / "out-of-control.jpg").stat().st_size
    assert "sandbox" in reply.headers["content-security-policy"]  # beside the pages' own policy
    svg = obsidian.get("/attachment?" + urlencode({"name": "evil.svg"}))
    assert svg.status == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert "sandbox" in svg.headers["content-security-policy"]  # its script never runs
    for name, status, says in (
        ("../../../../etc/passwd.png", 400, "leaves the vault"),
        ("/etc/hostname", 400, "is not an image"),
        (".obsidian/app.json", 400, "is not an image"),
        ("escape.png", 422, "not a regular file"),  # a symlink to /etc/hostname
        ("hidden.png", 404, "no image"),  # only in a hidden folder
        (".trash/hidden.png", 404, "no image"),
        ("nothing.png", 404, "no image"),
    ):
        got = obsidian.get("/attachment?" + urlencode({"name": name, "from": ids["Reading list"]}))
        assert got.status == status and says in unescape(got.text), (name, got.status, got.text[-300:])
        assert "ubuntu" not in got.text and "root:" not in got.text


class _Elements(HTMLParser):
    """Every element of a page as (tag, attributes): what a browser would build."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(page)
    return parser.found


def test_a_hostile_note_name_heading_and_alias_stay_text(obsidian: Viewer) -> None:
    ids = obsidian.ids
    for title in (HOSTILE, "Links to the hostile note"):
        page = item(obsidian, title)
        for tag, attrs in elements(page):
            assert not any(name.startswith("on") for name in attrs), (title, tag, attrs)
            assert tag not in ("b", "iframe", "svg", "object", "embed"), (title, tag)
            assert tag != "script" or (attrs.get("src") or "").startswith("/static/"), (title, attrs)
            assert tag != "img" or (attrs.get("src") or "").startswith("/attachment?"), (title, attrs)
            href = attrs.get("href") or ""
            assert tag != "a" or not href.lower().startswith(("javascript:", "data:")), (title, href)
    page = item(obsidian, HOSTILE)
    assert '<h1 id="item-title">&lt;img src=x onerror=alert(1)&gt;</h1>' in page
    assert '<h2 id="h-script-alert-2-script-quoted">&lt;script&gt;alert(2)&lt;/script&gt; &amp; &quot;quoted&quot;</h2>' in body(page)
    assert '>&quot; onmouseover=&quot;alert(3)</a>' in body(page)  # the alias is text
    assert "missing image escape.png" in body(page)  # the symlink out of the vault is not followed
    assert 'src="/attachment?name=evil.svg' in body(page)
    assert "&lt;b&gt;bold&lt;/b&gt;" in section(page, "properties")
    linking = body(item(obsidian, "Links to the hostile note"))
    assert f'href="/item/{quote(ids[HOSTILE], safe="")}#h-script-alert-2-script-quoted"' in linking
    assert unescape(HOSTILE_HEADING) in unescape(linking) and "Text under the heading." in linking  # the section embed
    data = json.loads(obsidian.get(f"/graph.json?focus={ids[HOSTILE]}").text)
    assert HOSTILE in [n["data"]["label"] for n in data["nodes"]]  # JSON data; Cytoscape draws text


def test_adoption_and_viewing_change_no_byte(obsidian: Viewer) -> None:
    root: Path = obsidian.vault.root
    for title in ("Reading list", "Kevin Kelly", HOSTILE, "Loop A", "Depth 1"):
        item(obsidian, title)
    obsidian.get("/graph.json?limit=500")
    source = shared(VAULTS / "kepano-obsidian")
    for path in source.rglob("*.md"):
        rel = path.relative_to(source)
        assert (root / rel).read_bytes() == path.read_bytes(), rel
    for name, text in OBSIDIAN_NOTES.items():
        assert (root / name).read_text(encoding="utf-8") == text, name


def test_a_hub_lists_its_first_backlinks_and_counts_them_all(tmp_path: Path) -> None:
    """A category note thousands link to stays one bounded page (written to fail before
    the bound: every backlink was read, titled and listed)."""
    root = tmp_path / "hub"
    (root / "People").mkdir(parents=True)
    (root / "People.md").write_text("# People\n")
    total = BACKLINKS_SHOWN + 40
    for n in range(total):
        (root / "People" / f"Person {n:04d}.md").write_text(f'---\ncategories:\n  - "[[People]]"\n---\nSee [[People]] ({n}).\n')
    vault = Vault.init(root)
    viewer = start(vault, {})
    try:
        hub = vault.get("People.md").id
        page = viewer.get(f"/item/{hub}").text
        listed = section(page, "backlinks")
        assert listed.count("<li>") <= BACKLINKS_SHOWN and listed.count("<li>") >= BACKLINKS_SHOWN // 2
        shown = listed.count("<li>")
        assert f"and {total - shown} more notes link here" in listed
        assert f">{total} backlink(s)</a>" in page
        assert vault.wikilinks(hub, limit=10).incoming_notes == total == len(vault.wikilinks(hub).incoming) // 2
    finally:
        stop(viewer)
        vault.close()


def test_the_docs_state_the_bounds_the_code_keeps() -> None:
    text = (ROOT / "docs" / "viewer.md").read_text(encoding="utf-8")
    said = {3: "three", 40: "forty"}
    assert f"Embeds\n  nest {said[MAX_EMBED_DEPTH]} deep at most and {said[MAX_EMBEDS]} per page" in text
    assert f"the first {BACKLINKS_SHOWN} by path" in text and f"{LINKS_SHOWN} at most" in text
    assert f"its first {BACKLINKS_SHOWN}\nbacklinks" in text
