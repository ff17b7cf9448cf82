"""A person's note with an id of its own stays theirs too (issue 28).

engram's own item is a file whose frontmatter holds engram's identity triple together:
``id``, ``title`` and ``createdAt``. Any other note with an id — a Dendron note (``id``,
``title``, ``desc``, ``updated`` and ``created`` as epoch milliseconds), or a note that
``engram adopt`` gave an id line — is a person's: searches, a flushed usage journal,
``engram link``, a duplicate created or learned, ``doctor --fix`` and a two-clone sync
round leave its bytes as its owner wrote them. Its counters are kept beside it
(``.engram/notes.json``), its typed links are synapse files shown on the other ends.

Each test runs on both kinds of note. Real files, real git (a bare origin and two
clones), the real CLI for ``engram link``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engram.items import sidecar
from engram.store.format import render_engram
from engram.store.model import Engram
from engram.store.notes import persons_note, read_note
from engram.vault import Vault
from tests.git_helpers import bare_origin, clone_machine, git
from tests.mcp_helpers import engram_command

BODY = b"# Caching\n\nCache the parsed config in memory; re-read it only when the file's mtime changes.\n"
DENDRON = "vault/pkg.caching.md"
DENDRON_TEXT = (
    b"---\nid: ChcCM1Q2qrDTy7YnLUHiL\ntitle: Caching\ndesc: ''\nupdated: 1653409628830\n"
    b"created: 1639113925844\n---\n\n" + BODY
)
PLAIN = "Ideas/Caching.md"
PLAIN_TEXT = b"---\ntags: [perf]   # mine\n---\n" + BODY
#: A second note of the person's, with an id and nothing else engram keeps, for links
#: between two of their notes.
OTHER = "Ideas/Queues.md"
OTHER_TEXT = b"---\nid: queues-note\naliases: [Bursts]\n---\nQueues smooth bursts of writes.\nSee [[Caching]].\n"
QUERY = "parsed config mtime"


class Notes:
    """A folder of the person's notes, in git, adopted in place by ``engram init``."""

    def __init__(self, root: Path, rel: str) -> None:
        self.root, self.rel = root, rel
        self.note = (root / rel).read_bytes()  # what the owner wrote (after their adopt)
        self.other = (root / OTHER).read_bytes()

    def unchanged(self, root: Path | None = None) -> bool:
        root = root or self.root
        return (root / self.rel).read_bytes() == self.note and (root / OTHER).read_bytes() == self.other

    def note_id(self, vault: Vault) -> str:
        return vault.get(self.rel).id


@pytest.fixture(params=["dendron", "adopted"])
def notes(request: pytest.FixtureRequest, tmp_path: Path) -> Notes:
    root = tmp_path / "notes"
    (root / "Ideas").mkdir(parents=True)
    (root / OTHER).write_bytes(OTHER_TEXT)
    if request.param == "dendron":
        rel = DENDRON
        (root / "vault").mkdir()
        (root / DENDRON).write_bytes(DENDRON_TEXT)
        Vault.init(root).close()
    else:
        rel = PLAIN
        (root / PLAIN).write_bytes(PLAIN_TEXT)
        with Vault.init(root) as vault:
            ((_, new_id),) = vault.adopt([PLAIN]).adopted
        # `engram adopt` writes the id line and nothing else.
        assert (root / PLAIN).read_bytes() == b"---\ntags: [perf]   # mine\nid: " + new_id.encode() + b"\n---\n" + BODY
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    return Notes(root, rel)


@pytest.mark.parametrize(("front", "persons"), [
    (DENDRON_TEXT.split(b"\n---\n")[0][4:], True),
    (b"id: 01JAPX3T0000000000000000A", True),  # the id line `engram adopt` writes
    (b"id: 01JAPX3T0000000000000000A\ntitle: Caching", True),
    (b"title: Caching\ncreatedAt: 2026-01-02T03:04:05.000Z", True),  # no id: a derived one
    (b"id: 01JAPX3T0000000000000000A\ntitle: Caching\ncreatedAt: not a time", True),
    (b"id: 01JAPX3T0000000000000000A\ntitle: Caching\ncreatedAt: 2026-01-02T03:04:05.000Z", False),
    (b"cssclass: wide  # mine\nid: 01JAPX3T0000000000000000A\ntitle: Caching\ncreatedAt: 2026-01-02", False),
])
def test_a_note_is_engrams_own_only_with_id_title_and_created_at_in_its_frontmatter(front: bytes, persons: bool) -> None:
    note = read_note(b"---\n" + front + b"\n---\n" + BODY, "Ideas/Caching.md")
    assert persons_note(note.item) is persons and note.by_person is persons
    # Dendron's `created` fills createdAt in memory; only the frontmatter's own keys decide.
    dendron = read_note(DENDRON_TEXT, DENDRON).item
    assert dendron.created_at.startswith("2021-12-10") and persons_note(dendron)
    # Every file engram's canonical writer makes is its own.
    made = Engram("01JAPX3T0000000000000000B", "Made", BODY.decode(), created_at="2026-01-02T03:04:05.000Z")
    assert not persons_note(read_note(render_engram(made), "made.md").item)


def engram(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(engram_command(*args), cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"engram {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_searches_with_the_usage_journal_flushed_leave_the_note(notes: Notes) -> None:
    with Vault.open(notes.root) as vault:
        note_id = notes.note_id(vault)
        for _ in range(2):
            found = vault.search(QUERY)
            assert note_id in [h.id for h in found.hits]
        vault.flush_usage()
        vault.feedback(note_id, "helped")
        vault.fold()
        assert notes.unchanged()
        kept = sidecar.load(vault.state.state_dir)[note_id]
        assert kept.retrievals == 2 and kept.effective == 1
        vault.doctor(fix=True)
        assert notes.unchanged()
        # The index knows whose note it is, built warm or cold.
        vault.reindex()
        assert [i.by_person for i in vault.state.index.items("path IN (?, ?)", (notes.rel, OTHER))] == [True, True]
        assert [r.by_person for r in vault.state.index.item_rows("id = ?", (note_id,))] == [True]


def test_engram_link_writes_the_synapse_and_leaves_the_note(notes: Notes) -> None:
    with Vault.open(notes.root) as vault:
        mine = vault.create("Config reload", "The config watcher reloads on SIGHUP.", domain=["Ideas"]).item
        note_id = notes.note_id(vault)
    engram(notes.root, "link", notes.rel, "similar_to", str(mine.path))
    engram(notes.root, "link", notes.rel, "depends_on", OTHER)
    assert notes.unchanged()
    with Vault.open(notes.root) as vault:
        edges = {(e.kind, e.other(note_id)) for e in vault.synapses(notes.rel)}
        assert edges == {("similar_to", mine.id), ("depends_on", "queues-note")}
        # The link shows on engram's own end, naming the person's note.
        text = (notes.root / str(mine.path)).read_text()
        assert f"## Synapses (derived)\n- → [[{notes.rel[:-3]}|Caching · similar_to]]\n" in text
        assert vault.doctor().problems == ()
    assert [p for p in git(notes.root, "status", "--porcelain", "--untracked-files=all").stdout.split("\n")
            if p.endswith(".yaml")], "the synapse files are written"


def test_an_exact_duplicate_created_or_learned_is_reinforced_beside_the_note(notes: Notes) -> None:
    with Vault.open(notes.root) as vault:
        note_id = notes.note_id(vault)
        made = vault.create("Caching", BODY.decode(), domain=[notes.rel.split("/")[0]])
        assert made.outcome == "DUPLICATE" and made.item.id == note_id
        learned = vault.learn(BODY.decode())
        assert learned.action == "reinforced" and learned.target is not None and learned.target.id == note_id
        assert notes.unchanged()
        assert sidecar.load(vault.state.state_dir)[note_id].reinforcement == 2.0
        # A near copy that contradicts it links beside it: the note is never superseded unasked.
        near = vault.create("Caching", "# Caching\n\nDo not cache the parsed config in memory; re-read it only"
                            " when the file's mtime changes.\n", domain=[notes.rel.split("/")[0]])
        assert near.outcome == "DISPUTED" and notes.unchanged()
        assert vault.get(note_id).status == "active"


def test_a_two_clone_sync_round_leaves_the_note_byte_for_byte(notes: Notes, tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    git(notes.root, "remote", "add", "origin", str(origin))
    with Vault.open(notes.root, actor="owner") as owner:
        assert owner.sync().pushed
    peer = clone_machine(tmp_path, origin, "peer")
    try:
        note_id = notes.note_id(peer)
        # The teammate's agent searches, links two of the person's notes, copies one.
        assert note_id in [h.id for h in peer.search(QUERY).hits]
        peer.link(notes.rel, "depends_on", OTHER)
        assert peer.create("Caching", BODY.decode(), domain=[notes.rel.split("/")[0]]).outcome == "DUPLICATE"
        peer.create("Team convention", "We review notes weekly.")
        for _ in range(2):
            peer.sync()
            with Vault.open(notes.root, actor="owner") as owner:
                assert owner.search(QUERY).hits
                owner.sync()
    finally:
        peer.close()
    assert notes.unchanged(notes.root) and notes.unchanged(peer.root)
    for rel, wanted in ((notes.rel, notes.note), (OTHER, notes.other)):
        assert git(origin, "show", f"main:{rel}").stdout.encode() == wanted
    assert git(notes.root, "rev-parse", "HEAD").stdout == git(peer.root, "rev-parse", "HEAD").stdout
