"""Writing through the viewer: the same writer, version check and audit as the CLI."""

from __future__ import annotations

from engram.viewer.actions import form_values
from tests.viewer.conftest import Viewer, form_fields


def edit_form(running: Viewer, ref: str) -> dict[str, str]:
    """The edit form's fields as the page renders them (what a browser would send back)."""
    fields = form_fields(running.get(f"/item/{ref}/edit").text, f"/item/{ref}/edit")
    fields.pop("_csrf")
    return fields


def test_a_form_sent_back_unchanged_writes_nothing(running: Viewer) -> None:
    item = running.vault.get(running.ids["repack"])
    path = running.vault.abspath(item.path or "")
    before = path.read_bytes()
    form = edit_form(running, item.id)
    assert {k: form[k] for k in form_values(item)} == form_values(item)
    # as a browser sends it: the textarea's line breaks as CRLF
    reply = running.post(f"/item/{item.id}/edit", {**form, "content": form["content"].replace("\n", "\r\n")})
    assert reply.status == 303 and reply.headers["location"] == f"/item/{item.id}?saved=unchanged"
    assert path.read_bytes() == before


def test_an_edit_writes_only_what_changed_and_is_audited(running: Viewer) -> None:
    item = running.vault.get(running.ids["frozen"])
    form = edit_form(running, item.id)
    reply = running.post(f"/item/{item.id}/edit", {**form, "importance": "0.95", "tags": form["tags"] + ", immutability"})
    assert reply.status == 303 and reply.headers["location"] == f"/item/{item.id}?saved={item.version + 1}"
    after = running.vault.get(item.id)
    assert after.importance == 0.95 and after.tags == (*item.tags, "immutability")
    assert after.content == item.content and after.title == item.title
    last = running.vault.history(item.id)[-1]
    assert (last.action, last.actor, set(last.fields)) == ("update", "tester", {"importance", "tags"})
    assert "Saved as version" in running.get(reply.headers["location"]).text


def test_a_stale_edit_shows_what_changed_and_keeps_the_text(running: Viewer) -> None:
    item = running.vault.get(running.ids["timeouts"])
    form = edit_form(running, item.id)
    running.vault.update(item.id, {"summary": "Changed by someone else"}, expected_version=item.version)
    mine = {**form, "content": form["content"] + "\nMy addition.\n"}
    reply = running.post(f"/item/{item.id}/edit", mine)
    assert reply.status == 409
    assert f"is at version {item.version + 1}, not {item.version}" in reply.text
    assert "by tester" in reply.text and "(summary)" in reply.text  # as the CLI says it
    assert "My addition." in reply.text  # the person's text is kept
    assert "now: <code>Changed by someone else</code>" in reply.text
    assert f'name="version" value="{item.version + 1}"' in reply.text
    assert running.vault.get(item.id).content == item.content  # nothing written
    # saving again puts the person's version on top
    again = edit_form(running, item.id) | {"content": mine["content"], "summary": form["summary"]}
    assert running.post(f"/item/{item.id}/edit", again).status == 303
    final = running.vault.get(item.id)
    assert final.content.endswith("My addition.\n") and final.summary == item.summary


def test_a_bad_value_comes_back_with_the_reason(running: Viewer) -> None:
    item = running.vault.get(running.ids["repack"])
    reply = running.post(f"/item/{item.id}/edit", {**edit_form(running, item.id), "importance": "7"})
    assert reply.status == 400 and "importance" in reply.text
    assert running.vault.get(item.id) == item


def test_delete_asks_first_then_moves_to_the_trash(running: Viewer) -> None:
    made = running.vault.create("Throwaway note", "to be deleted", domain=["tmp"])
    confirm = running.get(f"/item/{made.id}/delete")
    assert confirm.status == 200 and "Delete Throwaway note?" in confirm.text and "trash" in confirm.text
    assert running.vault.get(made.id).id == made.id  # asking deleted nothing
    stale = running.post(f"/item/{made.id}/delete", {"version": "99"})
    assert stale.status == 409 and "not 99" in stale.text
    done = running.post(f"/item/{made.id}/delete", {"version": "1"})
    assert done.status == 200 and ".engram/trash/" in done.text
    assert (running.vault.root / ".engram" / "trash" / made.id).is_dir()
    assert running.get(f"/item/{made.id}").status == 404


def test_resolving_a_conflict_with_blocks_left_asks_first(running: Viewer) -> None:
    ref = running.ids["answer2"]
    page = running.get("/conflicts").text
    assert "Second flagged answer" in page and "content: both sides changed the same lines" in page
    ask = running.post(f"/conflicts/{ref}/resolve", {})
    assert ask.status == 409 and "still holds 1 conflict block" in ask.text and 'name="force" value="1"' in ask.text
    assert running.vault.get(ref).merge_conflicts  # unchanged
    forced = running.post(f"/conflicts/{ref}/resolve", {"force": "1"})
    assert forced.status == 303
    assert running.vault.get(ref).merge_conflicts is None
    assert "Cleared the flag on" in running.get(forced.headers["location"]).text
    assert running.vault.history(ref)[-1].action == "resolve"


def test_accepting_a_merge_proposal_asks_first_then_carries_it_out(running: Viewer) -> None:
    ref = running.ids["proposal-merge"]
    ask = running.post(f"/proposals/{ref}/accept", {})
    assert ask.status == 200 and "Accept: Merge 2 duplicates" in ask.text and 'name="confirmed" value="1"' in ask.text
    assert running.vault.proposal(ref).status == "open"  # asking changed nothing
    done = running.post(f"/proposals/{ref}/accept", {"confirmed": "1", "note": "same text twice"})
    assert done.status == 303 and done.headers["location"] == f"/proposals?decided={ref}"
    decided = running.vault.proposal(ref)
    assert (decided.status, decided.decided_by, decided.note) == ("accepted", "tester", "same text twice")
    assert "accepted by tester" in running.get(done.headers["location"]).text
    again = running.post(f"/proposals/{ref}/accept", {"confirmed": "1"})
    assert again.status == 400 and "accepted already" in again.text


def test_dismissing_a_proposal_changes_no_item(running: Viewer) -> None:
    ref = running.ids["proposal-pattern"]
    before = running.vault.census().items
    done = running.post(f"/proposals/{ref}/dismiss", {})
    assert done.status == 303
    assert running.vault.proposal(ref).status == "dismissed"
    assert running.vault.census().items == before


def test_verifying_a_stale_item_stamps_it(running: Viewer) -> None:
    ref = running.ids["timeouts"]
    done = running.post(f"/item/{ref}/verify", {"note": "checked the ALB settings"})
    assert done.status == 303 and done.headers["location"] == f"/stale?verified={ref}"
    assert running.vault.get(ref).last_verified_at is not None
    assert "verified now" in running.get(done.headers["location"]).text
