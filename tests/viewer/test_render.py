"""Markdown and templates escape whatever an item holds; wikilinks open items."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
@given(st.text(alphabet=st.sampled_from(list("<>\"'/=&[]|()!:`*_ \nascriptimgonerrorjavhef1")), max_size=120))
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
