"""A person's note that they have not adopted never changes a byte through engram (issue 28).

What other writes do around such a note — a duplicate reinforcing it, a near-duplicate
disputing it, a lesson about it, feedback and recalls, sync, ``doctor --fix`` — is kept
beside it: counters in ``.engram/`` (this machine), typed links in synapse files that
name its derived id. Only the owner's own request (``engram adopt``, or an update or a
typed link that names the note) writes into it. Real files, real git, the real MCP
server through the SDK's in-memory client. A person's note with an id of its own
(Dendron's, or the id line ``engram adopt`` writes) is
``tests/adopt/test_persons_notes_with_ids.py``'s.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from engram.errors import NotAdopted
from engram.mcp import build_server
from engram.store.format import write_engram
from engram.store.notes import derived_id, read_note
from engram.vault import Vault
from tests.mcp_helpers import ok

NOTE = "Ideas/Caching.md"
BODY = "# Caching\n\nCache the parsed config in memory; re-read it only when the file's mtime changes.  \n"
TEXT = b"---\ntags: [perf]   # mine\n---\n" + BODY.encode()
OTHER = "Ideas/Queues.md"
OTHER_TEXT = b"Queues smooth bursts.\nSee [[Caching]].\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder of two notes a person wrote, in git, adopted in place by `engram init`."""
    root = tmp_path / "notes"
    (root / "Ideas").mkdir(parents=True)
    (root / NOTE).write_bytes(TEXT)
    (root / OTHER).write_bytes(OTHER_TEXT)
    Vault.init(root).close()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    return root


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(notes: Path, tmp_path: Path) -> AsyncIterator[Client]:
    with Vault.open(notes) as vault:
        server = build_server(vault, profile="full", config_file=tmp_path / "config" / "engram" / "mcp.yaml")
        async with Client(server) as c:
            yield c


def unchanged(notes: Path) -> bool:
    return (notes / NOTE).read_bytes() == TEXT and (notes / OTHER).read_bytes() == OTHER_TEXT


async def reinforcement(client: Client) -> float:
    found = ok(await client.call_tool("engram_search", {"query": "parsed config mtime", "tier": "catalog", "explain": True}))
    hit = next(h for h in found["hits"] if h["path"] == NOTE)
    return float(hit["explanation"]["parts"]["reinforcement"])


@pytest.mark.anyio
async def test_an_exact_duplicate_reinforces_beside_the_note(client: Client, notes: Path) -> None:
    """The reproduction: engram_create of the note's own text said "nothing new written"
    and added five properties to the note."""
    assert await reinforcement(client) == 0.0
    made = ok(await client.call_tool("engram_create", {"title": "Caching", "content": BODY, "domain": "Ideas"}))
    assert made["outcome"] == "DUPLICATE" and made["path"] == NOTE
    assert made["id"] == derived_id(NOTE) and made["version"] == 1
    assert "a note a person wrote" in made["message"] and "nothing was written" in made["message"]
    assert unchanged(notes)
    # The reinforcement is kept beside the note, and recall weighs it.
    assert await reinforcement(client) > 0.0
    again = ok(await client.call_tool("engram_create", {"title": "Caching", "content": BODY, "domain": "Ideas"}))
    assert again["outcome"] == "DUPLICATE" and unchanged(notes)


@pytest.mark.anyio
async def test_a_near_duplicate_that_contradicts_links_beside_the_note(client: Client, notes: Path) -> None:
    """The reproduction: a later near-duplicate appended `## Synapses (derived) … contradicts`."""
    made = ok(await client.call_tool("engram_create", {
        "title": "Caching", "domain": "Ideas",
        "content": "# Caching\n\nDo not cache the parsed config in memory; re-read it only when the file's mtime changes.\n",
    }))
    assert made["outcome"] == "DISPUTED" and made["related"] == derived_id(NOTE)
    assert unchanged(notes)
    # The link is a synapse file naming the note's derived id; the note itself is the person's.
    note = ok(await client.call_tool("engram_get", {"ref": NOTE, "tier": "content"}))
    assert note["id"] == derived_id(NOTE)
    assert ("contradicts", made["id"]) in {(e["kind"], e["other"]) for e in note["synapses"]}
    new = (notes / made["path"]).read_text()
    assert "## Synapses (derived)" in new and "[[Ideas/Caching|Caching · contradicts]]" in new
    # A dispute about a person's note waits for a person; the note stays current.
    assert note["status"] == "active"


@pytest.mark.anyio
async def test_lessons_feedback_recalls_and_folds_leave_the_note(client: Client, notes: Path) -> None:
    learned = ok(await client.call_tool("engram_learn", {"content": BODY, "confirm": False}))
    assert learned["action"] == "reinforced" and learned["target"] == derived_id(NOTE)
    extended = ok(await client.call_tool("engram_learn", {
        "content": BODY + "\nThe mtime check costs one stat call per read, which profiling showed is negligible.",
        "confirm": False,
    }))
    # New detail about a person's note comes in as an item of its own, linked to it.
    assert extended["action"] == "linked" and extended["path"] != NOTE
    assert extended["target"] == derived_id(NOTE)
    helped = ok(await client.call_tool("engram_reinforce", {"ref": NOTE}))
    assert helped["changes"][0]["id"] == derived_id(NOTE)
    ok(await client.call_tool("engram_report_failure", {"ref": OTHER}))
    ok(await client.call_tool("engram_search", {"query": "queues bursts"}))
    ok(await client.call_tool("engram_maintain", {"stage": "light"}))
    assert unchanged(notes)
    assert await reinforcement(client) > 0.0  # the feedback was folded beside the note


def test_sync_and_doctor_fix_leave_the_notes_and_adopt_keeps_the_links(notes: Path) -> None:
    with Vault.open(notes) as vault:
        made = vault.create("Caching", "# Caching\n\nDo not cache the parsed config in memory; re-read it only"
                            " when the file's mtime changes.\n", domain=["Ideas"])
        assert made.outcome == "DISPUTED"
        vault.create("Caching", BODY, domain=["Ideas"])  # a duplicate
        report = vault.sync()
        assert report.committed and unchanged(notes)
        assert git(notes, "status", "--porcelain", "--", NOTE, OTHER) == ""
        assert git(notes, "log", "--format=%s", "--", NOTE).splitlines() == ["notes"]
        found = vault.doctor()
        assert found.problems == (), found.problems
        vault.doctor(fix=True)
        assert unchanged(notes)
        # The owner adopts the note: the id line and nothing else (it is still theirs, so
        # the link made beside it shows on the other end), and the link follows the id.
        adopted = vault.adopt([NOTE])
        ((_path, new_id),) = adopted.adopted
        assert (notes / NOTE).read_text() == "---\ntags: [perf]   # mine\nid: " + new_id + "\n---\n" + BODY
        assert "[[Ideas/Caching|Caching · contradicts]]" in (notes / str(made.item.path)).read_text()
        edges = vault.synapses(NOTE)
        assert [(e.kind, {e.source, e.target}) for e in edges] == [("contradicts", {new_id, made.id})]
        assert vault.doctor().problems == ()


def test_the_writer_refuses_a_note_that_is_not_adopted(notes: Path) -> None:
    """The guard at the one depth every item write passes: the canonical writer."""
    note = read_note(TEXT, NOTE)
    assert not note.adopted
    with pytest.raises(NotAdopted) as refused:
        write_engram(notes / NOTE, note.item, ["- → [[Ideas/Queues|Queues · similar_to]]"])
    assert refused.value.path == NOTE and "engram adopt" in str(refused.value)
    assert unchanged(notes)
