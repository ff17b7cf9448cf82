"""``restamp``: derived parts of an item brought up to date, every other byte kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.format import restamp
from mergedriver import codec

ID = "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ"
line = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r\n"), max_size=30)
links = st.lists(st.sampled_from(["- → [[a/b|B · causes]]", "- ← [[c|C · extends]]", "- → [[d|D · similar_to]]"]),
                 unique=True, max_size=3)


def item(content: str, derived: list[str], **meta: object) -> bytes:
    base = {"id": ID, "title": "T", "contentHash": codec.content_hash(content),
            "contentSize": len(codec.canonical_content(content).encode()), **meta}
    return codec.render_engram(base, content, derived)


@settings(max_examples=150)
@given(st.lists(line, min_size=1, max_size=8), st.lists(line, max_size=3), links, links)
def test_restamp_fixes_hash_and_links_and_keeps_the_persons_bytes(
    before: list[str], added: list[str], old_links: list[str], new_links: list[str]
) -> None:
    before = [f"p{n} {text}" for n, text in enumerate(before)]  # a real first line to edit after
    original = item("\n".join(before) + "\n", old_links)
    assert restamp(original) == original  # nothing stale: nothing changes
    # a person edits the body (trailing spaces and all) without touching the hash
    content = codec.canonical_content("\n".join(before) + "\n")  # what the writer put on disk
    edited_content = content + "".join(f"added {a}  \n" for a in added)
    cut = original.index(b"\n---\n") + 5
    edited = original[:cut] + original[cut:].replace(content.encode(), edited_content.encode(), 1)
    out = restamp(edited, new_links)
    meta, merged, derived = codec.parse_engram(out)
    assert meta["contentHash"] == codec.content_hash(merged)
    assert derived == "\n".join(new_links)
    assert codec.parse_engram(edited)[1] == merged  # the content is what the person wrote
    assert out[out.index(b"\n---\n") + 5 :].startswith(edited_content.encode())  # byte for byte
    assert restamp(out, new_links) == out  # idempotent


def test_restamp_keeps_key_order_comments_and_quoting() -> None:
    text = (
        "---\ntitle: 'Quoted: yes'\n# a person's comment\nid: " + ID + "\nstatus: active  # trailing\n"
        "contentSize: 1\ncontentHash: sha256:stale\ntags: [a, b]\n---\nbody with two spaces  \n"
    )
    out = restamp(text.encode()).decode()
    assert out.startswith("---\ntitle: 'Quoted: yes'\n# a person's comment\nid: ")
    assert "status: active  # trailing\n" in out and "tags: [a, b]\n" in out and "two spaces  \n" in out
    assert "contentHash: sha256:stale" not in out
    meta, content, _ = codec.parse_engram(out.encode())
    assert meta["contentHash"] == codec.content_hash(content) and meta["contentSize"] == len(content.encode())


def test_without_plain_stamp_lines_the_canonical_writer_takes_over() -> None:
    text = "---\nid: " + ID + "\ntitle: T\n---\nbody\n"
    out = restamp(text.encode())
    assert out == codec.render_engram({"id": ID, "title": "T", "contentHash": codec.content_hash("body\n"),
                                       "contentSize": 5}, "body\n")
