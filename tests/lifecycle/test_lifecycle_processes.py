"""Lifecycle writers in real, concurrent processes on one vault (one MCP server per agent).

Every lifecycle write holds the vault lock, so: a proposal accepted by several agents at
once is carried out exactly once and the others are told it is decided; feedback racing
folds is counted exactly once; maintenance racing itself leaves one well-formed file per
finding.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from engram.lifecycle import proposals
from engram.store.format import read_proposal
from engram.vault import Vault
from tests.conftest import ROOT

PRELUDE = """
import sys, time
from engram.errors import EngramError
from engram.vault import Vault
root, start = sys.argv[1], float(sys.argv[2])
while time.time() < start:
    time.sleep(0.005)
"""


def run_all(scripts: list[tuple[str, list[str]]], root: Path) -> list[tuple[int, str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", PRELUDE + body, str(root), str(start), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for body, args in scripts]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append((proc.returncode, stdout, stderr))
    return out


ACCEPT = """
actor = sys.argv[3]
with Vault.open(root, actor=actor) as vault:
    try:
        vault.accept(sys.argv[4], note=actor)
        print("accepted")
    except EngramError as exc:
        print("refused", exc.message)
"""


def test_a_proposal_accepted_by_three_agents_at_once_is_carried_out_once(vault: Vault) -> None:
    item = vault.create("Flaky deploy hook", "Run the hook twice if it fails.").item
    prop, _ = proposals.propose(vault.state, "archive", [item.id], title="Archive it", reason="fails",
                                payload={"status": "frozen"})
    results = run_all([(ACCEPT, [f"agent-{n}", prop.id]) for n in range(3)], vault.root)
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    said = [out.split()[0] for _, out, _ in results]
    assert said.count("accepted") == 1 and said.count("refused") == 2, said
    winner = f"agent-{said.index('accepted')}"
    assert all("accepted already (by " + winner in out for _, out, _ in results if out.startswith("refused"))
    vault.refresh()
    got = vault.get(item.id)
    assert got.status == "frozen" and got.version == item.version + 1  # one write, not three
    decided = vault.proposal(prop.id)
    assert (decided.status, decided.decided_by, decided.note) == ("accepted", winner, winner)


FEEDBACK = """
item = sys.argv[3]
with Vault.open(root, actor="agent") as vault:
    for _ in range(int(sys.argv[4])):
        vault.feedback(item, "helped", confidence=0.2)
"""
FOLD = """
with Vault.open(root, actor="maintainer") as vault:
    for _ in range(int(sys.argv[3])):
        vault.fold()
        time.sleep(0.01)
"""


def test_feedback_racing_folds_is_counted_exactly_once(vault: Vault) -> None:
    item = vault.create("Counted once", "every helped call is one count").item
    results = run_all([(FEEDBACK, [item.id, "10"]), (FEEDBACK, [item.id, "10"]), (FOLD, ["6"])], vault.root)
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    vault.fold()
    got = vault.get(item.id)
    assert got.effective_retrievals == 20 and got.version == item.version
    assert 0.5 < got.importance < 1.0
    state = vault.state.state_dir
    assert not any((state / name).exists() for name in ("feedback.jsonl", "feedback.flushing.jsonl",
                                                          "feedback.flushing.done"))


MAINTAIN = """
with Vault.open(root, actor=sys.argv[3]) as vault:
    vault.maintain("rem")
"""


def test_maintenance_racing_itself_leaves_one_well_formed_file_per_finding(vault: Vault) -> None:
    text = "Cap retries at 3 per request and back off exponentially."
    for _ in range(2):
        vault.create("Retry budgets", text, domain=["eng"], dedupe=False)
    flaky = vault.create("Flaky cron", "The cleanup cron fails on Sundays.", domain=["ops"]).item
    for _ in range(3):
        vault.feedback(flaky.id, "failed")
    results = run_all([(MAINTAIN, [f"bot-{n}"]) for n in range(2)], vault.root)
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    files = sorted((vault.root / "proposals").glob("*/prop-*.yaml"))
    for path in files:  # every file parses: none torn
        read_proposal(path, path.relative_to(vault.root).as_posix())
    found = vault.proposals(status=None)
    assert len(found) == len(files) == len({p.id for p in found})
    assert {p.kind for p in found} >= {"merge", "archive"}
    assert vault.get(flaky.id).failed_uses == 3  # folded once by whichever ran first
    assert vault.maintain("rem").proposed and len(vault.proposals(status=None)) == len(files)
