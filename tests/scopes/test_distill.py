"""distill() from a real agentsync board and a real context-keeper decision log.

The board is made by agentsync-mcp's own tools (claim, update_status) against a real
bare repository; the decision log by context-keeper-mcp's own CLI (record_entry,
deprecate_entry). Fixtures in their exact on-disk formats cover what the tools
themselves do not produce here (hand-edited statuses, a legacy rationale field, a
commit whose board does not parse).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.vault import Vault
from tests.git_helpers import git

CONTEXT_KEEPER = Path(sys.executable).parent / "context-keeper"


# ---------------------------------------------------------------------- real tools


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project repository with a remote, as agentsync expects (main has a commit)."""
    origin = tmp_path / "project.git"
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    clone = tmp_path / "project"
    git(tmp_path, "clone", "--quiet", str(origin), str(clone))
    (clone / "README.md").write_text("project\n")
    git(clone, "add", "README.md")
    git(clone, "commit", "--quiet", "-m", "start")
    git(clone, "push", "--quiet", "origin", "main")
    git(clone, "remote", "set-head", "origin", "main")
    monkeypatch.setenv("AGENTSYNC_BOARD_REPO", str(clone))
    return clone


def agentsync(monkeypatch: pytest.MonkeyPatch, agent: str) -> object:
    import agentsync_server

    monkeypatch.setenv("AGENTSYNC_AGENT_ID", agent)
    return agentsync_server


def finish_work(board: Path, monkeypatch: pytest.MonkeyPatch, agent: str, task: str, path: str, note: str) -> dict:
    tools = agentsync(monkeypatch, agent)
    branch = f"feat/{agent}-{len(task)}"
    claimed = json.loads(tools.claim(task=task, touches=[path], branch=branch, force=True))  # type: ignore[attr-defined]
    assert claimed["status"] == "claimed", claimed
    git(board, "switch", "--quiet", "-c", branch, "origin/main")
    target = board / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"# {task}\n")
    git(board, "add", path)
    git(board, "commit", "--quiet", "-m", task)
    git(board, "push", "--quiet", "origin", branch)
    git(board, "switch", "--quiet", "main")
    done = json.loads(tools.update_status(status="done", note=note))  # type: ignore[attr-defined]
    assert done["status"] == "updated", done
    return done["claim"]


def keeper(project: Path, tool: str, args: dict) -> dict:
    proc = subprocess.run([str(CONTEXT_KEEPER), tool, json.dumps({"project_dir": str(project), **args})],
                          capture_output=True, text=True, check=False, cwd=project)
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, result
    return result


def decision(project: Path, summary: str, **more: object) -> str:
    return keeper(project, "record_entry", {
        "kind": "decision", "summary": summary,
        "problem": "Two services wrote the same rows and each retried on timeouts, doubling charges.",
        "why_chosen": "An idempotency key makes a retried write a no-op, so retries are safe without locks.",
        **more,
    })["id"]


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Vault]:
    v = Vault.init(tmp_path / "team", actor="distiller")
    yield v
    v.close()


def outcomes(vault: Vault) -> list:
    return sorted(vault.list(domain="outcomes"), key=lambda i: i.title)


def test_distill_from_a_real_board_and_decision_log_twice_writes_nothing_the_second_time(
    vault: Vault, board: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    finish_work(board, monkeypatch, "ann", "Add retry middleware", "src/retry.py",
                "Retries are safe only with idempotency keys; the middleware adds them.")
    finish_work(board, monkeypatch, "ben", "Fix the flaky ledger test", "tests/test_ledger.py",
                "The test raced the clock; it now freezes time.")
    # ben moves on before anyone distills: his done claim is replaced on the live board.
    tools = agentsync(monkeypatch, "ben")
    tools.claim(task="Speed up the importer", touches=["src/importer.py"], branch="feat/fast", force=True)  # type: ignore[attr-defined]
    live = json.loads(git(board, "show", "origin/agentsync:claims.json").stdout)["claims"]
    assert live["ben"]["status"] == "in-progress"

    project = tmp_path / "project"
    first = decision(project, "Use idempotency keys for payment writes")
    con = keeper(project, "record_entry", {
        "kind": "constraint", "rule": "Never retry a payment write without its idempotency key",
        "reason": "A retry without the key charged customers twice during the March incident.",
    })["id"]
    assert (project / ".context" / "decisions.json").is_file()

    vault.configure_scopes(agentsync_repo=str(board), context_keeper=str(project / ".context"))
    report = vault.distill()
    assert [s.status for s in report.sources] == ["read", "read"]
    titles = [i.title for i in outcomes(vault)]
    assert titles == ["Add retry middleware", "Fix the flaky ledger test"]  # ben's, though churned away
    ann = outcomes(vault)[0]
    assert "Retries are safe only with idempotency keys" in ann.content
    assert "`src/retry.py`" in ann.content and ann.source["agent"] == "ann"
    assert ann.kind == "observation" and "agentsync" in ann.tags
    made = {i.source["ref"]: i for i in vault.list(kinds=["decision", "fact"])}
    assert set(made) == {first, con}
    assert "**Why:** An idempotency key makes a retried write a no-op" in made[first].content
    assert made[con].title == "Never retry a payment write without its idempotency key"

    again = vault.distill()
    assert again.written == 0 and [s.status for s in again.sources] == ["unchanged", "unchanged"]
    files = {p: p.read_bytes() for p in vault.root.rglob("*.md") if ".engram" not in p.parts}

    # New work and a superseding decision: only those are written.
    finish_work(board, monkeypatch, "ann", "Document the retry policy", "docs/retry.md", "Written down.")
    second = decision(project, "Idempotency keys expire after 24 hours", supersedes=[first])
    third = vault.distill()
    assert len(outcomes(vault)) == 3
    agents = next(s for s in third.sources if s.system == "agentsync")
    ck = next(s for s in third.sources if s.system == "context-keeper")
    assert len(agents.created) == 1 and len(ck.created) == 1 and ck.retired == [made[first].id]
    old = vault.get(made[first].id)
    new = next(i for i in vault.list(kinds=["decision"]) if i.source["ref"] == second)
    assert old.status == "superseded" and old.superseded_by == new.id
    assert all(p.read_bytes() == data for p, data in files.items() if p.exists() and p.stem not in (old.slug,))

    keeper(project, "deprecate_entry", {"id": con, "reason": "replaced by the gateway's own dedup"})
    fourth = vault.distill()
    assert vault.get(made[con].id).status == "archived"
    assert next(s for s in fourth.sources if s.system == "context-keeper").retired == [made[con].id]
    assert vault.distill().written == 0


def test_every_field_of_context_keepers_decision_and_constraint_schema_is_rendered_readably(
    vault: Vault, tmp_path: Path
) -> None:
    """Issue 29 item 4: ``alternatives`` came out as a Python repr and
    ``constraints_created``, ``related_to``, ``retrieval_hints``, ``scope``, ``hardness``
    and ``origin`` were dropped. The log is written by context-keeper itself, using every
    field its ``record_entry`` schema has for the two kinds distill captures."""
    project = tmp_path / "payments"
    project.mkdir()
    con = keeper(project, "record_entry", {
        "kind": "constraint", "rule": "Never retry a payment write without its idempotency key",
        "reason": "A retry without the key charged customers twice during the March incident.",
        "triggering_incident": "INC-42: 311 customers charged twice on 3 March",
        "enforced_by": "tests/test_payments.py::test_retry_carries_key",
        "scope": "src/payments/", "hardness": "advisory", "tags": ["payments"],
        "retrieval_hints": ["retry safety", "double charge"], "origin": "user",
    })["id"]
    dec = decision(
        project, "Use idempotency keys for payment writes",
        what_we_tried="Row-level locks for a week; p99 latency tripled.",
        tradeoffs="Every client must generate and keep a key per logical write.",
        alternatives=[{"option": "row locks", "reason_rejected": "deadlocks under load"},
                      {"option": "an exactly-once queue"}],
        constraints_created=["every payment write carries an idempotency key", "keys live 24 hours"],
        related_to=[con], tags=["payments", "reliability"], retrieval_hints=["why no locks on payments"],
        origin="agent",
    )
    vault.distill(context_keeper=str(project))
    made = {i.source["ref"]: i for i in vault.list(kinds=["decision", "fact"])}
    assert made[dec].content == (
        "Use idempotency keys for payment writes\n\n"
        "**Problem:** Two services wrote the same rows and each retried on timeouts, doubling charges.\n\n"
        "**Why:** An idempotency key makes a retried write a no-op, so retries are safe without locks.\n\n"
        "**Tried:** Row-level locks for a week; p99 latency tripled.\n\n"
        "**Trade-offs:** Every client must generate and keep a key per logical write.\n\n"
        "**Alternatives considered:**\n\n"
        "- row locks — rejected: deadlocks under load\n"
        "- an exactly-once queue\n\n"
        "**Constraints it creates:**\n\n"
        "- every payment write carries an idempotency key\n"
        "- keys live 24 hours\n\n"
        "**Related:**\n\n"
        f"- `{con}`: Never retry a payment write without its idempotency key\n\n"
        "**Also asked as:** why no locks on payments\n"
    )
    assert made[con].content == (
        "Never retry a payment write without its idempotency key\n\n"
        "**Why:** A retry without the key charged customers twice during the March incident.\n\n"
        "**Incident:** INC-42: 311 customers charged twice on 3 March\n\n"
        "**Enforced by:** tests/test_payments.py::test_retry_carries_key\n\n"
        "**Scope:** src/payments/\n\n"
        "**Hardness:** advisory\n\n"
        "**Also asked as:** retry safety; double charge\n"
    )
    assert made[dec].source["origin"] == "agent" and made[con].source["origin"] == "user"
    assert {"payments", "reliability"} <= set(made[dec].tags)
    assert "{'" not in made[dec].content and "[" not in made[dec].content


def test_a_teammate_distilling_after_a_sync_writes_nothing(
    tmp_path: Path, board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source key in each item makes distill idempotent across machines, not only
    across runs (each machine has its own watermark)."""
    from tests.scopes.helpers import team

    finish_work(board, monkeypatch, "ann", "Add retry middleware", "src/retry.py", "Keys first.")
    alice, bob = team(tmp_path, "payments", None, "alice", "bob")
    alice.configure_scopes(agentsync_repo=str(board))
    assert len(alice.distill().sources[0].created) == 1
    alice.sync()
    bob.sync()
    assert bob.distill().written == 0
    assert len(bob.list(domain="outcomes")) == 1
    alice.close()
    bob.close()


# ---------------------------------------------------------------------- fixtures


def commit_board(repo: Path, claims: dict | str, message: str) -> None:
    text = claims if isinstance(claims, str) else json.dumps({"claims": claims}, indent=2)
    (repo / "claims.json").write_text(text)
    git(repo, "add", "claims.json")
    git(repo, "commit", "--quiet", "-m", message)


def test_fixture_board_history_with_hand_edited_status_and_a_broken_commit(vault: Vault, tmp_path: Path) -> None:
    repo = tmp_path / "fixture-board"
    git(tmp_path, "init", "--quiet", "--initial-branch=agentsync", str(repo))
    claim = {"task": "Ship the exporter", "touches": ["src/export.py"], "requires": [], "branch": "feat/export",
             "status": "in-progress", "updated_at": "2026-05-01T10:00:00+00:00", "instance": "ab12cd34", "note": None}
    commit_board(repo, {"dee": claim}, "agentsync: dee claims 'Ship the exporter'")
    done = {**claim, "status": "DONE - shipped to origin/main as 56052d8", "note": "Exports stream now.",
            "changed_files": [{"status": "A", "path": "src/export.py"}], "changed_files_repo": "fixture-board"}
    commit_board(repo, {"dee": done}, "agentsync: dee -> done")
    commit_board(repo, "{ not json", "a bad hand edit")
    commit_board(repo, {"dee": {**claim, "task": "Next thing", "status": "planning"}}, "agentsync: dee claims")
    report = vault.distill(agentsync=str(repo))
    (made,) = outcomes(vault)
    assert made.title == "Ship the exporter" and "Exports stream now." in made.content
    assert "- A `src/export.py`" in made.content
    assert report.sources[0].seen == 4
    assert vault.distill(agentsync=str(repo)).written == 0


def test_fixture_decision_log_with_a_legacy_rationale(vault: Vault, tmp_path: Path) -> None:
    ctx = tmp_path / "legacy" / ".context"
    ctx.mkdir(parents=True)
    (ctx / "decisions.json").write_text(json.dumps([
        {"id": "dec-001", "summary": "Store money as integer cents", "rationale": "Floats lose cents in sums.",
         "status": "active", "created_at": "2025-01-02T00:00:00+00:00"},
        {"id": "dec-002", "summary": "Old idea", "why_chosen": "x", "status": "deprecated"},
    ]))
    report = vault.distill(context_keeper=str(ctx.parent))
    (made,) = vault.list(kinds=["decision"])
    assert made.source["ref"] == "dec-001" and "**Why:** Floats lose cents in sums." in made.content
    assert report.sources[1].seen == 2 and report.sources[0].status == "skipped"


def test_sources_that_are_missing_or_broken_are_reported_with_the_fix(vault: Vault, tmp_path: Path) -> None:
    report = vault.distill()
    assert [s.status for s in report.sources] == ["skipped", "skipped"]
    fix = report.sources[0].fix
    assert fix is not None and "setup(agentsync_repo=" in fix.mcp and fix.cli.startswith("engram scopes setup --agentsync")
    empty = tmp_path / "no-board"
    git(tmp_path, "init", "--quiet", str(empty))
    broken = tmp_path / "p" / ".context"
    broken.mkdir(parents=True)
    (broken / "decisions.json").write_text("[{")
    report = vault.distill(agentsync=str(empty), context_keeper=str(broken))
    assert [s.status for s in report.sources] == ["error", "error"]
    assert "has no 'agentsync' branch" in report.sources[0].reason
    assert "is not valid JSON" in report.sources[1].reason
    assert vault.list() == []
    assert shutil.which("git")
