"""Time travel (``as_of``) answers with the status and the text an item had at T
(issue 29, item 2), read from the versions git holds — after a merge too.

Two real clones of a bare origin: what is known at T is synced; afterwards, on both
machines at once, an item's body is extended, one item archived (frozen), one forgotten,
one created, and the two machines' edits are merged by ``engram sync``.
"""

from __future__ import annotations

from pathlib import Path

from engram.store.model import now
from engram.vault import Vault
from tests.git_helpers import bare_origin, clone_machine, first_machine, git


def after(instant: str) -> None:
    """Wait until the clock has moved past ``instant`` (timestamps have milliseconds)."""
    while now() <= instant:
        pass


def hit(vault: Vault, query: str, item_id: str, at: str) -> dict[str, object] | None:
    found = [h for h in vault.search(query, as_of=at, tier="content", record=False).hits if h.id == item_id]
    return {"status": found[0].status, "content": found[0].content, "title": found[0].title} if found else None


def test_as_of_answers_with_the_status_and_text_of_then_after_a_merge(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    alice = first_machine(tmp_path, origin, "alice")
    window = alice.create("Deploy window", "Deploy on Tuesdays before noon.", domain=["ops"]).item
    warmup = alice.create("Cache warmup runbook", "Warm the cache from the replica before traffic.",
                          domain=["ops"]).item
    drain = alice.create("Legacy queue drain", "Drain the legacy queue with the drain script.", domain=["ops"]).item
    alice.sync()
    bob = clone_machine(tmp_path, origin, "bob")
    then = now()
    after(then)

    # After T, on both machines at once.
    bob.update(window.id, {"content": "Deploy on Tuesdays before noon. Never on Fridays."})
    bob.archive(warmup.id)
    bob.sync()
    alice.update(window.id, {"title": "Deploy window (ops)"})
    alice.forget(drain.id)
    freeze = alice.create("Deploy freeze calendar", "No deploy on Tuesdays in the December freeze.",
                          domain=["ops"]).item
    alice.sync()  # merges bob's commit: both edits of the window are in the merged file
    assert git(alice.root, "rev-list", "--merges", "--count", "HEAD").stdout.strip() != "0"
    bob.sync()

    for vault in (alice, bob):
        now_window = vault.get(window.id)
        assert now_window.title == "Deploy window (ops)" and "Never on Fridays" in now_window.content
        assert vault.get(warmup.id).status == "frozen" and vault.get(drain.id).status == "forgotten"
        # Now: the frozen and forgotten items are out of recall; the new one is in.
        assert hit(vault, "cache warmup replica", warmup.id, now()) is None
        assert hit(vault, "legacy queue drain", drain.id, now()) is None

        # At T: every item with its status and text then.
        assert hit(vault, "deploy tuesdays noon", window.id, then) == {
            "status": "active", "content": "Deploy on Tuesdays before noon.\n", "title": "Deploy window"}
        assert hit(vault, "cache warmup replica", warmup.id, then) == {
            "status": "active", "content": "Warm the cache from the replica before traffic.\n",
            "title": "Cache warmup runbook"}
        assert hit(vault, "legacy queue drain", drain.id, then) == {
            "status": "active", "content": "Drain the legacy queue with the drain script.\n",
            "title": "Legacy queue drain"}
        assert hit(vault, "deploy freeze december", freeze.id, then) is None  # not written yet
        # Words only the later text holds do not find the item at T: if it is found at
        # all, it is by the meaning of its text then, and that text is what comes back.
        found = hit(vault, "never fridays", window.id, then)
        assert found is None or found["content"] == "Deploy on Tuesdays before noon.\n"
        lexical = [h for h in vault.search("never fridays", as_of=then, record=False).hits if h.id == window.id]
        assert all(h.via == "meaning" for h in lexical)
    alice.close()
    bob.close()


def test_as_of_without_committed_history_reads_the_status_from_the_dates(tmp_path: Path) -> None:
    """Versions written between two syncs are not in git: the oldest text git (or the
    file) holds stands for T, and a retirement dated after T is not in force at T."""
    with Vault.init(tmp_path / "solo", actor="solo") as vault:
        old = vault.create("Weekly deploy train", "The deploy train leaves on Tuesday.", domain=["ops"]).item
        then = now()
        after(then)
        new = vault.create("Continuous deployment", "Every merged change ships within the hour.",
                           domain=["ops"]).item
        vault.update(old.id, {"status": "superseded", "supersededBy": new.id,
                              "deactivatedAt": vault.get(new.id).created_at})
        found = hit(vault, "deploy train tuesday", old.id, then)
        assert found is not None and found["status"] == "active"
        assert hit(vault, "continuous deployment", new.id, then) is None
