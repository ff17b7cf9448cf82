"""Skills made of skills, and an explicit invocation (issue 29, item 12).

A composed skill lists its component skills in order (``composedOf``); a step may name
one (``skill:ID``), and there its steps are inlined. :func:`engram.lifecycle.skills.invoke_skill`
returns the steps expanded (components' steps in order, recursively), records the
invocation (a retrieval, audited) and, given an outcome, feeds the success rate. A cycle
is refused with the path it takes, and records nothing.
"""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.vault import Vault
from tests.conftest import snapshot


def _skills(vault: Vault) -> tuple[str, str]:
    check = vault.create_skill("Check the table", ["check free disk", "check the primary key"], domain=["ops"]).id
    repack = vault.create_skill("Repack the table", ["run pg_repack -t TABLE"], domain=["ops"]).id
    return check, repack


def test_a_composed_skill_lists_its_components_in_order_and_expands_them(vault: Vault) -> None:
    check, repack = _skills(vault)
    made = vault.create_skill("Rebuild a bloated table", [f"skill:{repack}", "vacuum analyze TABLE"],
                              components=[check, repack], domain=["ops"])
    assert made.item.composed_of == (check, repack)
    run = vault.invoke_skill(made.id)
    assert [s.text for s in run.steps] == [
        "check free disk", "check the primary key", "run pg_repack -t TABLE", "vacuum analyze TABLE"]
    assert [s.skill for s in run.steps] == [check, check, repack, made.id]
    assert run.outcome is None and run.skill.id == made.id


def test_components_nest_and_a_step_may_name_a_skill_by_title(vault: Vault) -> None:
    check, repack = _skills(vault)
    inner = vault.create_skill("Repack safely", ["skill:Check the table", "skill:Repack the table"], domain=["ops"])
    assert inner.item.composed_of == (check, repack) and inner.item.steps == (f"skill:{check}", f"skill:{repack}")
    outer = vault.create_skill("Nightly table care", ["announce in #ops", f"skill:{inner.id}"], domain=["ops"])
    assert [s.text for s in vault.invoke_skill(outer.id).steps] == [
        "announce in #ops", "check free disk", "check the primary key", "run pg_repack -t TABLE"]


def test_a_cycle_is_refused_with_its_path_and_records_nothing(vault: Vault) -> None:
    check, _ = _skills(vault)
    outer = vault.create_skill("Table care", [f"skill:{check}", "done"], domain=["ops"])
    vault.update(check, {"composedOf": [outer.id], "steps": [f"skill:{outer.id}"]})
    vault.fold()
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="cycle") as err:
        vault.invoke_skill(outer.id, outcome="success")
    assert f"{outer.id} → {check} → {outer.id}" in err.value.message and err.value.hint
    vault.fold()
    assert snapshot(vault) == before and vault.get(outer.id).effective_retrievals == 0


def test_an_invocation_counts_and_its_outcome_feeds_the_success_rate(vault: Vault) -> None:
    check, _ = _skills(vault)
    first = vault.invoke_skill(check, outcome="success", note="went fine")
    assert first.feedback is not None and first.feedback.success_rate == pytest.approx(2 / 3, abs=1e-4)
    second = vault.invoke_skill(check, outcome="failure")
    assert second.skill.success_rate == pytest.approx(0.5) and (second.skill.successes, second.skill.failures) == (1, 1)
    vault.invoke_skill(check)  # no outcome yet: an invocation, not a success
    vault.fold()
    item = vault.get(check)
    assert (item.retrieval_count, item.effective_retrievals, item.failed_uses) == (3, 1, 1)
    assert [e.action for e in vault.state.audit.entries(check) if e.action == "invoke"] == ["invoke"] * 3


@pytest.mark.parametrize("outcome", ["helped", "ok", ""])
def test_a_bad_outcome_is_refused_and_records_nothing(vault: Vault, outcome: str) -> None:
    check, _ = _skills(vault)
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="success or failure"):
        vault.invoke_skill(check, outcome=outcome)
    vault.fold()
    assert snapshot(vault) == before


def test_a_component_that_is_not_a_skill_is_refused_at_creation(vault: Vault) -> None:
    note = vault.create("Disk math", "pg_repack needs twice the table's size free.").item
    before = snapshot(vault)
    with pytest.raises(InvalidInput, match="not a skill") as err:
        vault.create_skill("Repack", ["run it"], components=[note.id])
    assert err.value.hint and snapshot(vault) == before
    with pytest.raises(InvalidInput, match="step or a component"):
        vault.create_skill("Nothing", [], components=[])
