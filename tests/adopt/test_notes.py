"""Any Markdown note reads as an item; wikilinks are found and resolved as Obsidian does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import FormatError
from engram.index import wikilinks as wl
from engram.store.notes import DERIVED, FILE, derived_id, read_note
from engram.vault import Vault

# ---------------------------------------------------------------------- reading notes


def test_a_note_without_frontmatter_is_named_by_its_file_and_folder() -> None:
    note = read_note(b"# Heading\nSome text.  \n", "References/Kevin Kelly.md")
    assert note.identity == DERIVED and note.item.id == derived_id("References/Kevin Kelly.md")
    assert note.item.title == "Kevin Kelly" and note.item.kind == "note"
    assert note.item.domain_tags == ("References",) and note.item.content == "# Heading\nSome text.  \n"


def test_the_derived_id_is_a_pure_function_of_the_nfc_path() -> None:
    composed, decomposed = "Caf\u00e9.md", "Cafe\u0301.md"  # macOS writes the second form
    assert derived_id(composed) == derived_id(decomposed) != derived_id("Other.md")
    assert derived_id("a.md").startswith("note-") and len(derived_id("a.md")) == 21


def test_a_property_that_clashes_with_an_engram_key_stays_the_persons() -> None:
    data = b'---\nstatus:\n  - "[[Published]]"\nkind: book\ntags:\n  - 0\xf0\x9f\x8c\xb2\ncreated: 2023-09-14\n---\nx\n'
    note = read_note(data, "Clippings/Buy wisely.md")
    assert note.clashes == ("status", "kind")
    assert note.item.status == "active" and note.item.kind == "note" and note.item.tags == ("0🌲",)
    assert note.item.created_at == "2023-09-14T00:00:00.000Z"  # Obsidian's `created`, in memory
    assert note.properties["status"] == ["[[Published]]"]


def test_dendron_notes_keep_their_ids_and_map_their_fields() -> None:
    data = b"---\nid: c378b702-7d49-4e91-be6e-b2078103c86e\ntitle: Careers\ndesc: 'Join us'\nupdated: 1636510026672\ncreated: 1616983302480\n---\n\nHelp us.\n"
    note = read_note(data, "vault/careers.md")
    assert note.identity == FILE and note.item.id == "c378b702-7d49-4e91-be6e-b2078103c86e"
    assert note.item.title == "Careers" and note.item.summary == "Join us"
    assert note.item.updated_at == "2021-11-10T02:07:06.672Z" and note.item.created_at.startswith("2021-03-29")


def test_a_template_with_placeholders_is_read_by_name_and_keeps_its_links() -> None:
    data = b'---\ncategories:\n  - "[[Books]]"\ncreated: {{date}}\n---\nA template\n'
    note = read_note(data, "Templates/Book Template.md")
    assert note.front_error and note.identity == DERIVED
    assert [link.text for link in wl.property_links(note.properties)] == ["Books"]


def test_an_engram_item_with_broken_yaml_is_still_a_format_error() -> None:
    with pytest.raises(FormatError, match="invalid YAML"):
        read_note(b"---\nid: 01BROKEN\ntitle: [oops\n---\nbody\n", "x/broken.md")


# ---------------------------------------------------------------------- extraction


def test_every_wikilink_form_is_found_outside_code_and_comments() -> None:
    body = (
        "See [[Note]], [[Note|alias]], [[folder/Other#Heading]], [[Third#^block|x]] and ![[Embedded]].\n"
        "| a | [[Table\\|alias]] |\n"
        "`[[inline code]]` and %% [[commented]] %% and <!-- [[html]] -->\n"
        "```\n[[fenced]]\n```\n"
        "~~~~\n```\n[[still fenced]]\n~~~~\n"
        "[[never closed\nnext line]] ![[photo.png]]\n"
    )
    found = [(link.text, link.embed) for link in wl.extract(body)]
    assert found == [
        ("Note", False), ("folder/Other", False), ("Third", False), ("Embedded", True),
        ("Table", False), ("photo.png", True),
    ]


def test_a_stray_backtick_does_not_hide_the_next_paragraph() -> None:
    assert [link.text for link in wl.extract("one ` tick\n\n[[Seen]] `x`\n")] == ["Seen"]


# ---------------------------------------------------------------------- resolution


def cands(*paths: str) -> list[wl.Candidate]:
    return [wl.Candidate(p, p) for p in paths]


@pytest.mark.parametrize(
    ("text", "source", "paths", "status", "target"),
    [
        ("Notes/Trip", "a.md", ("Notes/Trip.md", "Other/Trip.md"), "ok", "Notes/Trip.md"),  # exact path
        ("../Other/Trip", "Notes/x.md", ("Notes/Trip.md", "Other/Trip.md"), "ok", "Other/Trip.md"),  # relative
        ("Trip", "Notes/x.md", ("Notes/Trip.md", "Other/Trip.md"), "ok", "Notes/Trip.md"),  # same folder
        ("trip", "a.md", ("Deep/Down/Trip.md",), "ok", "Deep/Down/Trip.md"),  # unique name, any case
        ("Down/Trip.md", "a.md", ("Deep/Down/Trip.md", "Up/Trip.md"), "ok", "Deep/Down/Trip.md"),  # path suffix
        ("Trip", "a.md", ("Notes/Trip.md", "Other/Trip.md"), "ambiguous", None),  # never guessed
        ("Trip", "a.md", (), "missing", None),
        ("photo.png", "a.md", (), "file", None),  # an attachment, not a note
        ("pod.json", "a.md", ("vault/pod.json.md",), "ok", "vault/pod.json.md"),
    ],
)
def test_resolution_follows_obsidian(text: str, source: str, paths: tuple[str, ...], status: str, target: str | None) -> None:
    answer = wl.resolve(text, source, cands(*paths))
    assert answer.status == status
    assert (answer.target.path if answer.target else None) == target
    if status == "ambiguous":
        assert answer.choices == tuple(sorted(paths))


def test_links_re_resolve_when_notes_come_and_go(vault: Vault) -> None:
    (vault.root / "Trip.md").write_text("Off to [[Kyoto]].\n")
    trip = vault.get("Trip.md").id

    def status() -> list[tuple[str, str | None]]:
        return [(w.status, w.target_path) for w in vault.wikilinks(trip).outgoing]

    assert status() == [("missing", None)]
    (vault.root / "places").mkdir()
    (vault.root / "places/Kyoto.md").write_text("A city.\n")
    assert status() == [("ok", "places/Kyoto.md")]
    (vault.root / "more").mkdir()
    (vault.root / "more/Kyoto.md").write_text("Another.\n")
    assert status() == [("ambiguous", None)]
    assert vault.doctor().adoption.ambiguous == (("Trip.md", "Kyoto", ("more/Kyoto.md", "places/Kyoto.md")),)
    (vault.root / "more/Kyoto.md").unlink()
    assert status() == [("ok", "places/Kyoto.md")]


def test_a_typed_link_to_a_note_adopts_it_and_keeps_its_bytes(vault: Vault) -> None:
    note = vault.root / "People" / "Steph Ango.md"
    note.parent.mkdir()
    original = b"---\ncategories:\n  - \"[[People]]\"\n---\nMakes [[Obsidian]].  \n"
    note.write_bytes(original)
    item = vault.create("Obsidian", "A notes app.").item
    before = vault.get("People/Steph Ango.md").id
    syn = vault.link("People/Steph Ango.md", "contextualizes", item.id)
    after = vault.get("People/Steph Ango.md")
    assert before.startswith("note-") and not after.id.startswith("note-") and syn.source == after.id
    # The id line and nothing else: the note is still the person's, so the typed link
    # shows on engram's end, where Obsidian's graph sees it too.
    assert note.read_bytes() == b'---\ncategories:\n  - "[[People]]"\nid: ' + after.id.encode() + b"\n---\nMakes [[Obsidian]].  \n"
    assert "[[People/Steph Ango|Steph Ango · contextualizes]]" in (vault.root / str(item.path)).read_text()
    assert vault.doctor().problems == ()
    # An update writes the keys it changes, in place.
    vault.update(after.id, {"importance": 0.8})
    text = note.read_text()
    assert text.startswith('---\ncategories:\n  - "[[People]]"\nid: ') and "importance: 0.8\n" in text
    assert "Makes [[Obsidian]].  \n" in text


# ---------------------------------------------------------------------- any input

_pieces = st.sampled_from(
    ["---\n", "id: ", "01ABC\n", "title: ", "[oops\n", "status: [[x]]\n", "{{date}}\n", "kind: fact\n",
     "- a\n", "tags: [a, b]\n", "created: 1616983302480\n", "\t", "  \n", "[[Note|alias]]", "```\n", "\r\n",
     "é", "\x00", "%% c %%", "version: 0.5.6\n", "domainTags: [../x]\n", "visibility: private\n"]
)


@settings(max_examples=300)
@given(st.lists(_pieces, max_size=14).map("".join), st.sampled_from(["a.md", "x/Note.md", "private/p.md"]))
def test_any_file_reads_as_a_note_or_a_format_error(text: str, rel: str) -> None:
    try:
        note = read_note(text.encode("utf-8"), rel)
    except FormatError:
        return
    assert note.item.id and note.item.title and note.item.path == rel
    wl.extract(note.item.content)
    wl.property_links(note.properties)


def test_the_adoption_summary_reads_the_index_as_it_is_when_told(vault: Vault) -> None:
    """`engram init` refreshes, then summarises without a second refresh: one at once
    re-read every racily stamped note (those written in the last two seconds: a third of
    a 6,571-note folder just copied) for no news. Told to, it still refreshes."""
    (vault.root / "one.md").write_text("A person's note.\n", encoding="utf-8")
    vault.refresh()
    (vault.root / "two.md").write_text("Written after the refresh.\n", encoding="utf-8")
    assert vault.adoption(refresh=False).items == 1
    assert vault.adoption().items == 2
