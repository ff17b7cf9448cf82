"""What a note's page is made of besides its body: its frontmatter split by owner
(``Vault.properties``) and the images it embeds (``Vault.attachment``), found the way
Obsidian finds them and never read from outside the vault."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from engram.errors import InvalidInput, NotFound, UnsafeFile
from engram.vault import Vault

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*") if p.is_file() and ".engram" not in p.parts
    }


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    for folder in ("Notes/Sub", "Attachments", "Elsewhere/deep", ".obsidian", ".trash"):
        (root / folder).mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text('{"attachmentFolderPath": "Attachments"}')
    (root / "Notes" / "Trip.md").write_text(
        "---\ncategories:\n  - \"[[Trips]]\"\naliases:\n  -\nstatus: \"[[Published]]\"\nkind:\ntags: [travel]\n"
        "created: 2023-09-12\n---\nBody.\n"
    )
    (root / "Notes" / "Sub" / "Local.md").write_text("![[here.png]]\n")
    (root / "Notes" / "Sub" / "here.png").write_bytes(PNG + b"sub")
    (root / "Attachments" / "cover.png").write_bytes(PNG + b"cover")
    (root / "Elsewhere" / "deep" / "cover.png").write_bytes(PNG + b"deep")
    (root / "Elsewhere" / "deep" / "only-here.png").write_bytes(PNG + b"only")
    (root / ".trash" / "gone.png").write_bytes(PNG + b"trash")
    (root / "Attachments" / "note.txt.png").mkdir()
    os.symlink("/etc/hostname", root / "Attachments" / "outside.png")
    return root


def test_properties_keep_the_persons_frontmatter_apart_from_engrams_fields(notes: Path) -> None:
    with Vault.init(notes) as vault:
        before = digest(notes)
        props = vault.properties("Notes/Trip.md")
        written = dict(props.written)
        # the person's keys, in file order, as written: a clash (status) and empty keys included
        assert list(written) == ["categories", "aliases", "status", "kind", "created"]
        assert written["aliases"] == [None] and written["status"] == "[[Published]]" and written["kind"] is None
        assert dict(props.fields) == {"tags": ["travel"]}
        derived = dict(props.derived)
        assert derived["kind"] == "note" and derived["title"] == "Trip" and derived["status"] == "active"
        assert derived["id"].startswith("note-") and props.identity == "derived"
        assert derived["createdAt"].startswith("2023-09-12")  # filled from `created`, in memory only
        assert not set(derived) & {"categories", "aliases", "created"}
        assert digest(notes) == before  # a view: nothing written
        made = vault.create("An engram item", "text", domain=["agents"]).id
        own = vault.properties(made)
        assert own.written == () and own.derived == () and own.identity == "file"
        assert {"id", "title", "contentHash", "version"} <= dict(own.fields).keys()


def test_an_image_is_found_where_obsidian_looks(notes: Path) -> None:
    with Vault.init(notes) as vault:
        trip = "Notes/Trip.md"
        assert vault.find_attachment("cover.png", trip) == "Attachments/cover.png"  # the attachment folder
        assert vault.find_attachment("Elsewhere/deep/cover.png", trip) == "Elsewhere/deep/cover.png"  # a path
        assert vault.find_attachment("../Attachments/cover.png", trip) == "Attachments/cover.png"  # relative
        assert vault.find_attachment("here.png", "Notes/Sub/Local.md") == "Notes/Sub/here.png"  # beside the note
        assert vault.find_attachment("deep/cover.png", trip) == "Elsewhere/deep/cover.png"  # a path's tail
        assert vault.find_attachment("only-here.png") == "Elsewhere/deep/only-here.png"  # anywhere, by name
        found = vault.attachment("cover.png", trip)
        assert (found.path, found.media_type, found.data) == ("Attachments/cover.png", "image/png", PNG + b"cover")


@pytest.mark.parametrize(
    ("name", "error", "says"),
    [
        ("../../../etc/passwd.png", InvalidInput, "leaves the vault"),
        ("/etc/hostname", InvalidInput, "is not an image"),
        ("Notes/Trip.md", InvalidInput, "is not an image"),
        (".obsidian/app.json", InvalidInput, "is not an image"),
        ("", InvalidInput, "is not a file name"),
        ("a\0b.png", InvalidInput, "is not a file name"),
        ("gone.png", NotFound, "no image 'gone.png'"),  # only in a hidden folder
        (".trash/gone.png", NotFound, "no image"),
        ("note.txt.png", NotFound, "no image"),  # a folder of that name
        ("nothing.png", NotFound, "no image"),
    ],
)
def test_nothing_outside_the_vault_or_hidden_is_read(notes: Path, name: str, error: type[Exception], says: str) -> None:
    with Vault.init(notes) as vault, pytest.raises(error, match=says):
        vault.attachment(name, "Notes/Trip.md")


def test_a_symlink_in_place_of_an_image_is_refused(notes: Path) -> None:
    with Vault.init(notes) as vault:
        with pytest.raises(UnsafeFile, match="not a regular file"):
            vault.attachment("Attachments/outside.png")
        with pytest.raises(UnsafeFile):  # found by name, refused all the same
            vault.attachment("outside.png", "Notes/Trip.md")
