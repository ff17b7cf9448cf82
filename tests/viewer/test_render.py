"""Markdown and templates escape whatever an item holds; wikilinks open items; Obsidian's
comments, heading and block anchors and embeds are rendered as Obsidian shows them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.viewer.markup import WikiLink, hide_comments, parse_wikilink, render
from engram.viewer.render import environment, markdown, query

DANGER = ("<script", "<img", "<iframe", "<svg", "<a href=\"javascript:", "onerror=", "<style")


def test_wikilinks_become_links_to_the_item_they_name() -> None:
    html = str(markdown("See [[ops/postgres/repack|Use pg_repack · derives_from]] and [[Plain title]]."))
    assert '<a href="/go?ref=ops%2Fpostgres%2Frepack" class="wikilink">Use pg_repack · derives_from</a>' in html
    assert '<a href="/go?ref=Plain+title" class="wikilink">Plain title</a>' in html
    assert str(markdown("[[ ]] and [[unclosed")) == "<p>[[ ]] and [[unclosed</p>\n"
    label = str(markdown('[[x|<b onmouseover="1">hi</b>]]'))
    assert "<b" not in label and "&lt;b onmouseover=&quot;1&quot;&gt;hi&lt;/b&gt;" in label


def test_raw_html_and_script_links_are_text() -> None:
    html = str(markdown('<script>alert(1)</script>\n\n<div onclick="x">d</div>\n\n[a](javascript:alert(1)) [b](https://example.com)'))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;div onclick=&quot;x&quot;&gt;" in html
    assert 'href="javascript:' not in html and '<a href="https://example.com">b</a>' in html


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list("<>\"'/=&[]|()!:`*_ \nascriptimgonerrorjavhef1%#^")), max_size=120))
def test_no_markup_in_a_body_survives_rendering(text: str) -> None:
    html = str(markdown(text)).lower()
    for bad in DANGER:
        assert bad not in html, (text, html)


def test_templates_escape_every_value() -> None:
    env = environment()
    assert env.autoescape is True
    rendered = env.from_string("{{ x }}|{{ query({'q': x}) }}").render(x='<script>"x"</script>', query=query)
    assert rendered.startswith("&lt;script&gt;&#34;x&#34;&lt;/script&gt;|?q=%3Cscript")


def test_query_keeps_the_other_parameters() -> None:
    assert query({"kind": "fact", "page": "3"}, page=None, sort="title") == "?kind=fact&sort=title"
    assert query({"kind": ["a", "b"]}) == "?kind=a&kind=b"
    assert query({}) == "?"


def test_wikilinks_parse_as_obsidian_writes_them() -> None:
    assert parse_wikilink("Note") == WikiLink("Note")
    assert parse_wikilink("folder/Note.md|shown") == WikiLink("folder/Note.md", alias="shown")
    assert parse_wikilink("Note#Heading") == WikiLink("Note", heading="Heading")
    assert parse_wikilink("Note#Top#Sub heading") == WikiLink("Note", heading="Sub heading")
    assert parse_wikilink("Note#^abc-1|x") == WikiLink("Note", block="abc-1", alias="x")
    assert parse_wikilink("#Local") == WikiLink("", heading="Local")
    assert parse_wikilink("Note\\|in a table") == WikiLink("Note", alias="in a table")
    assert WikiLink("Note", heading="H").label == "Note > H" and WikiLink("", heading="H").label == "H"
    assert WikiLink("Note", heading="Some: Heading!").anchor == "#h-some-heading"
    assert WikiLink("Note", block="b1").anchor == "#block-b1" and WikiLink("Note").anchor == ""


def test_heading_and_block_links_carry_their_anchor() -> None:
    html = render("[[Note#Part two]] [[Note#^b1|that line]] [[#Here]]")
    assert '<a href="/go?ref=Note#h-part-two" class="wikilink">Note &gt; Part two</a>' in html
    assert '<a href="/go?ref=Note#block-b1" class="wikilink">that line</a>' in html
    assert '<a href="#h-here" class="wikilink">Here</a>' in html


def test_headings_and_blocks_get_anchor_ids() -> None:
    html = render("# Title\n\n## Title\n\n## **Bold** _it_ `code`\n\nA paragraph ^p1\n\n- one ^li1\n- two\n\n## ???\n")
    assert '<h1 id="h-title">Title</h1>' in html and '<h2 id="h-title-2">Title</h2>' in html
    assert '<h2 id="h-bold-it-code">' in html and '<h2 id="h-section">???</h2>' in html
    assert '<p id="block-p1">A paragraph</p>' in html and '<li id="block-li1">one</li>' in html
    assert "^p1" not in html and "^li1" not in html


def test_comments_are_hidden_but_not_in_code() -> None:
    assert hide_comments("a %%b%% c") == "a  c"
    assert hide_comments("a %%b\nc%% d") == "a \n d"  # one paragraph still
    assert hide_comments("p1\n%%\nhidden\n\nhidden too\n%%\np2") == "p1\n\n\np2"  # two paragraphs
    assert hide_comments("kept %% unclosed\nrest") == "kept "  # hides the rest, as Obsidian does
    assert hide_comments("`%%code%%` and %%x%%") == "`%%code%%` and "
    assert hide_comments("```\n%% fenced %%\n```\n%%x%%y") == "```\n%% fenced %%\n```\ny"
    assert hide_comments("100% sure, 50% less") == "100% sure, 50% less"
    html = render("Shown %%hidden [[Secret]]%% too.\n\n%%\n# Not a heading\n%%\n")
    assert "hidden" not in html and "Secret" not in html and "<h1" not in html and "Shown" in html


def test_embeds_without_a_vault_are_links_and_never_a_literal_bang() -> None:
    html = render("Before\n\n![[Other note]]\n\nInline ![[pic.png]] here")
    assert "!<a" not in html and "![[" not in html
    assert '<a href="/go?ref=Other+note" class="wikilink embed-link">Other note</a>' in html
    assert "<p>Before</p>" in html
