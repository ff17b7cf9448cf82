"""Feedback and fold: the journal contract from ``engram.lifecycle.feedback``'s docstring.

Feedback never rewrites Markdown on the spot; a fold applies every journaled change once,
in one batch, without a version bump; an interrupted fold resumes without counting
anything twice; torn lines and items that are gone are skipped, never fatal; what a
feedback call *says* it will change is what the fold applies; and concurrent feedback
from several processes is all counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.errors import InvalidInput, NotFound
from engram.items import sidecar
from engram.lifecycle.feedback import DONE, FLUSHING, JOURNAL, pending
from engram.vault import Vault
from tests.conftest import ROOT, snapshot


def journal(vault: Vault) -> Path:
    return vault.state.state_dir / JOURNAL


def lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------- journaling


def test_each_call_appends_one_line_that_names_every_change(vault: Vault) -> None:
    a = vault.create("Drain before cordon", "Drain the node before you cordon it.", domain=["k8s"]).item
    b = vault.create("Cordon semantics", "Cordon only stops new pods.", domain=["k8s"]).item
    edge = vault.link(a.id, "extends", b.id, weight=0.9)
    vault.state.actor = "agent-7"
    vault.feedback(a.id, "helped", confidence=0.8, note="it worked on prod")
    vault.feedback(a.id, "failed", confidence=0.4)
    first, second = lines(journal(vault))
    assert first["by"] == "agent-7" and first["id"] == a.id and first["outcome"] == "helped"
    assert first["note"] == "it worked on prod" and first["confidence"] == 0.8
    assert [c["id"] for c in first["changes"]] == [a.id, b.id] and first["changes"][1]["via"] == edge.id
    assert second["note"] is None and [c["id"] for c in second["changes"]] == [a.id]  # failures are not shared
    audit = [e for e in vault.state.audit.entries(a.id) if e.action == "feedback"]
    assert [e.note for e in audit] == ["helped (0.8): it worked on prod", "failed (0.4)"]


def test_pending_feedback_is_the_base_of_the_next_step(vault: Vault) -> None:
    item = vault.create("Pending base", "importance moves from the pending value").item
    one = vault.feedback(item.id, "helped").changes[0]
    two = vault.feedback(item.id, "helped").changes[0]
    assert one.importance_before == 0.5 and two.importance_before == pytest.approx(one.importance_after)
    assert two.importance_delta == pytest.approx(0.1 * (1 - one.importance_after))
    waiting = pending(vault.state)[item.id]
    assert waiting.effective == 2 and waiting.importance == pytest.approx(one.importance_delta + two.importance_delta)


def test_unknown_items_and_bad_arguments_change_nothing(vault: Vault) -> None:
    item = vault.create("Real", "exists").item
    before = snapshot(vault)
    with pytest.raises(NotFound):
        vault.feedback("01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ", "helped")
    with pytest.raises(InvalidInput, match="outcome") as bad:
        vault.feedback(item.id, "HELPED")
    assert bad.value.hint and "helped" in bad.value.hint
    with pytest.raises(InvalidInput):
        vault.feedback(item.id, "helped", confidence=-0.1)
    with pytest.raises(InvalidInput):
        vault.feedback(item.id, "helped", note="x" * 100_000)
    assert snapshot(vault) == before and not journal(vault).exists() and pending(vault.state) == {}


# --------------------------------------------------------------------------- Hebbian shares


def test_only_strong_supportive_edges_carry_a_share(vault: Vault) -> None:
    hub = vault.create("Hub", "the item that helped", domain=["g"]).item
    strong = vault.create("Strong", "linked heavily", domain=["g"]).item
    weak = vault.create("Weak", "linked lightly", domain=["g"]).item
    older = vault.create("Older", "superseded by the hub", domain=["g"]).item
    rival = vault.create("Rival", "disagrees with the hub", domain=["g"]).item
    vault.link(hub.id, "similar_to", strong.id, weight=0.5)  # exactly strongEdge: shares
    vault.link(hub.id, "similar_to", weak.id, weight=0.49)
    vault.link(hub.id, "supersedes", older.id, weight=1.0)
    vault.link(rival.id, "contradicts", hub.id, weight=1.0)
    changes = vault.feedback(hub.id, "helped").changes
    assert [c.id for c in changes] == [hub.id, strong.id]
    assert changes[1].importance_delta == pytest.approx(changes[0].importance_delta * 0.25 * 0.5)
    assert "similar_to weight 0.5" in changes[1].why


def test_a_neighbour_at_full_importance_gets_no_share_and_stays_in_bounds(vault: Vault) -> None:
    item = vault.create("Helper", "it helped").item
    full = vault.create("Full", "already at the top", importance=1.0).item
    vault.link(item.id, "derives_from", full.id, weight=1.0)
    changes = vault.feedback(item.id, "helped").changes
    assert [c.id for c in changes] == [item.id]
    vault.fold()
    assert vault.get(full.id).importance == 1.0


def test_share_failures_setting_lowers_neighbours_too(vault: Vault) -> None:
    (vault.root / "engram.yaml").write_text("lifecycle:\n  shareFailures: true\n  hebbianShare: 0.5\n", encoding="utf-8")
    with Vault.open(vault.root) as fresh:
        a = fresh.create("Broken runbook", "step three is wrong").item
        b = fresh.create("Runbook index", "lists the runbooks").item
        fresh.link(a.id, "derives_from", b.id, weight=1.0)
        changes = fresh.feedback(a.id, "failed").changes
        assert [c.id for c in changes] == [a.id, b.id]
        assert changes[1].importance_delta < 0
        assert changes[1].importance_delta == pytest.approx(changes[0].importance_delta * 0.5)
        fresh.fold()
        assert fresh.get(b.id).importance == pytest.approx(0.5 + changes[1].importance_delta)


def test_bad_lifecycle_settings_are_refused_with_the_key_named(vault: Vault) -> None:
    item = vault.create("Settings", "check").item
    for text, key in (("feedbackStep: 1.5", "feedbackStep"), ("archiveAfterFailures: 0", "archiveAfterFailures"),
                      ("halfLifeDays: {fact: -3}", "halfLifeDays.fact")):
        (vault.root / "engram.yaml").write_text(f"lifecycle:\n  {text}\n", encoding="utf-8")
        with Vault.open(vault.root) as fresh:
            with pytest.raises(InvalidInput, match=key):
                fresh.feedback(item.id, "helped")
            assert not journal(fresh).exists()


# --------------------------------------------------------------------------- folding


def test_fold_with_nothing_to_fold_changes_no_file(vault: Vault) -> None:
    vault.create("Quiet", "nobody used me")
    before = snapshot(vault)
    stats = vault.fold()
    assert (stats.items, stats.feedback, stats.missing) == (0, 0, 0)
    assert snapshot(vault) == before


def test_fold_keeps_the_body_and_a_persons_own_properties_byte_for_byte(vault: Vault) -> None:
    note = vault.root / "notes" / "hand.md"
    note.parent.mkdir(parents=True)
    head = "---\ntags: [ops]\naliases:\n  - Hand note\ncssclass: wide   # my own\n"
    body = "---\n# Hand note\n\nWritten  by hand,\r\nwith a CRLF line and ünïcödé.\n"
    note.write_bytes((head + body).encode("utf-8"))
    vault.refresh()
    item = vault.list()[0]
    vault.feedback(item.id, "helped")
    vault.fold()
    # Not adopted: the note is not written at all; its counters are kept beside it (issue 28).
    assert note.read_bytes() == (head + body).encode("utf-8")
    kept = sidecar.load(vault.state.state_dir)[item.id]
    assert kept.effective == 1 and kept.importance == pytest.approx(0.05)
    # Adopted, it is still the person's: the id line is all engram wrote, and the
    # counters follow the id beside it.
    ((_, new_id),) = vault.adopt(["notes/hand.md"]).adopted
    vault.feedback(new_id, "helped")
    vault.fold()
    assert note.read_bytes() == (head + f"id: {new_id}\n" + body).encode("utf-8")
    kept = sidecar.load(vault.state.state_dir)[new_id]
    assert kept.effective == 2 and kept.importance == pytest.approx(0.1)
    # A file with engram's identity triple is engram's own item: it takes its counters in
    # place, the person's properties and body byte for byte around them.
    own_id = "hand-note-2"
    own = f"---\nid: {own_id}\ntitle: Hand note 2\ncreatedAt: 2026-01-02T03:04:05.000Z\n"
    mine = vault.root / "notes" / "own.md"
    mine.write_bytes((own + head[4:] + body).encode("utf-8"))
    vault.refresh()
    vault.feedback(own_id, "helped")
    vault.fold()
    text = mine.read_bytes().decode("utf-8")
    assert text.startswith(own + head[4:]) and text.endswith(body)
    assert "effectiveRetrievals: 1" in text and vault.get(own_id).importance == pytest.approx(0.55)


def test_an_interrupted_fold_resumes_without_counting_anything_twice(vault: Vault) -> None:
    a = vault.create("Alpha", "first item").item
    b = vault.create("Beta", "second item").item
    vault.feedback(a.id, "helped")
    entry_a = journal(vault).read_text(encoding="utf-8")
    vault.fold()  # a is folded ...
    vault.feedback(b.id, "helped")
    entry_b = journal(vault).read_text(encoding="utf-8")
    journal(vault).unlink()
    # ... and the machine stopped right after: both entries still in the flushing file,
    # a's id recorded done, b's not.
    state = vault.state.state_dir
    (state / FLUSHING).write_text(entry_a + entry_b, encoding="utf-8")
    (state / DONE).write_text(a.id + "\n", encoding="utf-8")
    assert pending(vault.state)[b.id].effective == 1
    vault.feedback(b.id, "failed")  # new feedback while the fold is pending
    stats = vault.fold()
    assert stats.feedback == 3 and stats.items == 1  # a was skipped: it is done
    assert vault.get(a.id).effective_retrievals == 1
    got = vault.get(b.id)
    assert (got.effective_retrievals, got.failed_uses) == (1, 1)
    assert not (state / FLUSHING).exists() and not (state / DONE).exists() and not journal(vault).exists()
    assert vault.fold().feedback == 0


def test_torn_and_foreign_journal_lines_are_skipped_and_the_rest_folds(vault: Vault) -> None:
    item = vault.create("Torn", "the journal was cut mid-line").item
    vault.feedback(item.id, "helped")
    with open(journal(vault), "a", encoding="utf-8") as fh:
        fh.write('["not", "an entry"]\n')
        fh.write(json.dumps({"at": "x", "changes": [{"id": item.id, "importance": "lots"}]}) + "\n")
        fh.write('{"changes": [{"importance": 0.1}]}\n')  # no id: skipped
        fh.write('{"at": "x", "changes": [{"id": "01J8ZQ3K5P7R2V8Y3M4N6ZH0WQ", "effective": 1}]}\n')
        fh.write('{"at": "2026-01-01T00:00:00Z", "chan')  # torn tail
    stats = vault.fold()
    got = vault.get(item.id)
    assert got.effective_retrievals == 1 and got.importance == pytest.approx(0.55)
    assert stats.missing == 1  # a well-formed entry for an item this vault does not hold
    assert not journal(vault).exists()


def test_feedback_for_an_item_deleted_before_the_fold_is_counted_missing(vault: Vault) -> None:
    gone = vault.create("Gone soon", "deleted before the fold").item
    kept = vault.create("Kept", "still here").item
    vault.feedback(gone.id, "helped")
    vault.feedback(kept.id, "failed")
    vault.delete(gone.id)
    stats = vault.fold()
    assert (stats.items, stats.missing) == (1, 1)
    assert vault.get(kept.id).failed_uses == 1


def test_fold_never_moves_a_timestamp_back(vault: Vault) -> None:
    item = vault.create("Stamped", "has a future stamp").item
    vault.update(item.id, {"lastEffectiveAt": "2099-01-01T00:00:00.000Z"})
    version = vault.get(item.id).version
    vault.feedback(item.id, "helped")
    vault.feedback(item.id, "failed")
    vault.fold()
    got = vault.get(item.id)
    assert got.last_effective_at == "2099-01-01T00:00:00.000Z"
    assert got.last_failed_at and got.last_failed_at.startswith("20")
    assert got.version == version  # counters are not an edit


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["helped", "failed"]), st.sampled_from([0.0, 0.3, 1.0])),
                min_size=1, max_size=8),
       st.sampled_from([0.0, 0.2, 0.5, 1.0]))
def test_what_feedback_announces_is_what_the_fold_applies(
    tmp_path: Path, calls: list[tuple[str, float]], start: float
) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp, Vault.init(Path(tmp)) as fresh:
        item = fresh.create("Announced", "the result tells the truth", importance=start).item
        helped = failed = 0
        last = None
        for outcome, confidence in calls:
            last = fresh.feedback(item.id, outcome, confidence=confidence).changes[0]
            helped += outcome == "helped"
            failed += outcome == "failed"
        fresh.fold()
        got = fresh.get(item.id)
        assert last is not None and got.importance == pytest.approx(last.importance_after, abs=1e-5)
        assert (got.effective_retrievals, got.failed_uses) == (helped, failed)
        assert 0.0 <= got.importance <= 1.0


WORKER = """
import sys
from engram.vault import Vault
root, item, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Vault.open(root, actor="worker") as vault:
    for i in range(n):
        vault.feedback(item, "helped" if i % 3 else "failed", confidence=0.5)
"""


def test_feedback_from_several_processes_is_all_counted(vault: Vault) -> None:
    item = vault.create("Shared counter", "three processes report on me").item
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(vault.root), item.id, "6"],
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    errors = [p.communicate(timeout=240)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert len(lines(journal(vault))) == 18  # no line torn or lost under the lock
    vault.fold()
    got = vault.get(item.id)
    assert (got.effective_retrievals, got.failed_uses) == (12, 6)
    assert 0.0 < got.importance < 1.0


def test_a_journal_line_with_a_bad_time_still_folds_and_never_blocks_the_fold(vault: Vault) -> None:
    """A foreign or hand-edited line whose ``at`` is no instant used to make every fold
    (and so every sync) fail, blaming the item's file; its counts fold, its stamp does not."""
    item = vault.create("Bad stamp", "the journal line has a bad time").item
    vault.feedback(item.id, "helped")
    with open(journal(vault), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"at": "yesterday", "changes": [{"id": item.id, "effective": 1, "failed": 1}]}) + "\n")
        fh.write(json.dumps({"at": "2026-06-22T12:00:00+02:00", "changes": [{"id": item.id, "failed": 1}]}) + "\n")
    stats = vault.fold()
    got = vault.get(item.id)
    assert stats.feedback == 3 and (got.effective_retrievals, got.failed_uses) == (2, 2)
    assert got.last_failed_at is not None and got.last_effective_at is not None
    assert got.last_failed_at == "2026-06-22T10:00:00.000Z"  # the offset stamp, in canonical form
    assert "yesterday" not in (vault.root / got.path).read_text(encoding="utf-8")  # type: ignore[operator]
