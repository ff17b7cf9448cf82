"""What an engram before issue 28 wrote into a person's note — usage and reinforcement
counters, a ``## Synapses (derived)`` section — leaves it only when the person says yes
(issue 28): doctor names it and shows the diff, never fixes it on its own (not even with
``--fix`` off a terminal), and ``--accept PATH`` takes out exactly those lines, the
counters moving beside the note so recall weighs it as before. Real files, the real CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from engram.items import sidecar
from engram.vault import Vault
from tests.terminal_helpers import cli_command

# A person's note (id from `engram adopt`, no createdAt) as an older engram left it after
# a duplicate, recalls and a contradiction: the person's lines and comment, then engram's.
TOUCHED = """---
tags: [ops, deploy]   # mine
id: 01J8ZQ3V5W6X7Y8Z9A0B1C2D3E
reinforcementScore: 1.0
retrievalCount: 3
lastRetrievedAt: 2026-11-02T10:00:00.000Z
---
# Deploying

Ask in the channel first.

## Synapses (derived)
- → [[Other note|Other note · contradicts]]
"""
CLEAN = """---
tags: [ops, deploy]   # mine
id: 01J8ZQ3V5W6X7Y8Z9A0B1C2D3E
---
# Deploying

Ask in the channel first.
"""
UNTOUCHED = "---\ntags: [ops]\nretrieval: manual\n---\n# Untouched\nA note engram never wrote into.\n"


def doctor(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_command("--vault", str(root), "doctor", *args), capture_output=True, text=True,
                          check=False, stdin=subprocess.DEVNULL)


def test_old_counters_and_a_derived_section_leave_a_persons_note_only_on_their_yes(vault: Vault) -> None:
    note = vault.root / "ops" / "Deploying.md"
    note.parent.mkdir()
    note.write_text(TOUCHED)
    (vault.root / "ops" / "Untouched.md").write_text(UNTOUCHED)
    (vault.root / "Other note.md").write_text("# Other note\nText.\n")

    found = json.loads(doctor(vault.root, "--json").stdout)["problems"]
    residue = [p for p in found if p["code"] == "old-residue"]
    assert [p["path"] for p in residue] == ["ops/Deploying.md"] and residue[0]["needsConsent"]
    message, diff = residue[0]["message"], residue[0]["diff"]
    assert "reinforcementScore, retrievalCount, lastRetrievedAt" in message and "Synapses (derived)" in message
    assert "-reinforcementScore: 1.0" in diff and "-## Synapses (derived)" in diff and "-tags" not in diff

    fixed = doctor(vault.root, "--fix")  # no terminal to ask on: nothing is taken
    assert fixed.returncode == 1 and "needs your yes" in fixed.stdout
    assert "wait(s) for your yes (`engram doctor --accept PATH`)" in fixed.stdout.strip().splitlines()[-1]
    assert note.read_text() == TOUCHED

    accepted = doctor(vault.root, "--accept", "ops/Deploying.md")
    assert accepted.returncode == 0, accepted.stdout
    assert note.read_text() == CLEAN  # the person's lines and comment byte for byte, engram's gone
    assert (vault.root / "ops" / "Untouched.md").read_text() == UNTOUCHED
    kept = sidecar.load(vault.root / ".engram")["01J8ZQ3V5W6X7Y8Z9A0B1C2D3E"]
    assert (kept.reinforcement, kept.retrievals, kept.last_retrieved) == (1.0, 3, "2026-11-02T10:00:00.000Z")
    assert [e.action for e in vault.audit()][-1] == "clear-residue"
    assert "old-residue" not in doctor(vault.root, "--json").stdout  # nothing left to find


# An older engram wrote a counter whenever it changed, down to 0 too (a score decayed).
ZEROED = """---
aliases: [Runbook]
reinforcementScore: 0.0
failedUses: 0
---
# Runbook

Steps.
"""
ZEROED_CLEAN = "---\naliases: [Runbook]\n---\n# Runbook\n\nSteps.\n"
# A person's own properties under counters' names, with values engram never writes there.
PERSONS_OWN = """---
retrievalCount: manual
lastRetrievedAt: last week
failedUses: "2"
effectiveRetrievals: -1
reinforcementScore:
---
# My tracking

Mine.
"""


def test_a_counter_an_older_engram_left_at_zero_is_residue_a_persons_own_value_is_not(vault: Vault) -> None:
    """The reproduction: doctor looked for residue only where the counters read as
    non-zero, so `failedUses: 0` stayed in the note for good."""
    zeroed, own = vault.root / "Runbook.md", vault.root / "My tracking.md"
    zeroed.write_text(ZEROED)
    own.write_text(PERSONS_OWN)
    found = [p for p in json.loads(doctor(vault.root, "--json").stdout)["problems"] if p["code"] == "old-residue"]
    assert [p["path"] for p in found] == ["Runbook.md"]
    assert "the counters reinforcementScore, failedUses" in found[0]["message"]
    assert "-failedUses: 0" in found[0]["diff"] and "-aliases" not in found[0]["diff"]
    accepted = doctor(vault.root, "--accept", "Runbook.md")
    assert accepted.returncode == 0, accepted.stdout
    assert zeroed.read_text() == ZEROED_CLEAN and own.read_text() == PERSONS_OWN
    assert "old-residue" not in doctor(vault.root, "--json").stdout


def adopt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_command("--vault", str(root), "adopt", *args), capture_output=True, text=True,
                          check=False, stdin=subprocess.DEVNULL)


def test_adopt_names_old_residue_and_takes_it_out_only_when_asked(vault: Vault) -> None:
    """The reproduction: `engram adopt` passed over a note holding an older engram's
    counters in silence (it already had an id), so a person adopting their vault never
    learnt of them. Adopting asks for an id line: adopt names the residue and leaves it;
    --clean-residue is the asking that takes it out, for the notes given and no other."""
    (vault.root / "ops").mkdir()
    touched, zeroed = vault.root / "ops" / "Deploying.md", vault.root / "Runbook.md"
    touched.write_text(TOUCHED)
    zeroed.write_text(ZEROED)  # no id yet: adopt gives it one
    (vault.root / "ops" / "Untouched.md").write_text(UNTOUCHED)

    told = adopt(vault.root)
    assert told.returncode == 0, told.stderr
    assert ("ops/Deploying.md holds the counters reinforcementScore, retrievalCount, lastRetrievedAt and a "
            "'## Synapses (derived)' section, which an older engram wrote into it; left as it is") in told.stdout
    assert "Runbook.md holds the counters reinforcementScore, failedUses" in told.stdout
    assert "2 note(s) hold what an older engram wrote into them, which adopt leaves" in told.stdout
    assert "`engram adopt --clean-residue Runbook.md ops/Deploying.md`" in told.stdout
    assert touched.read_text() == TOUCHED  # already had an id: not a byte changed
    added = [line for line in zeroed.read_text().splitlines() if line not in ZEROED.splitlines()]
    assert len(added) == 1 and added[0].startswith("id: ")  # the id line, and nothing else: the zero counters
    assert zeroed.read_text().replace(added[0] + "\n", "") == ZEROED  # stay until asked
    adopted_runbook, adopted_untouched = zeroed.read_text(), (vault.root / "ops" / "Untouched.md").read_text()

    dry = adopt(vault.root, "--clean-residue", "--dry-run", "--json")
    assert {r["path"]: r["cleaned"] for r in json.loads(dry.stdout)["residue"]} == {
        "Runbook.md": False, "ops/Deploying.md": False}
    assert touched.read_text() == TOUCHED and zeroed.read_text() == adopted_runbook

    cleaned = adopt(vault.root, "ops/", "--clean-residue")
    assert cleaned.returncode == 0, cleaned.stderr
    assert "cleaned ops/Deploying.md: took out the counters reinforcementScore" in cleaned.stdout
    assert "1 cleaned of an older engram's residue" in cleaned.stdout
    assert touched.read_text() == CLEAN  # exactly engram's lines went
    assert zeroed.read_text() == adopted_runbook  # not under ops/: not asked
    assert (vault.root / "ops" / "Untouched.md").read_text() == adopted_untouched  # no residue: just its id
    kept = sidecar.load(vault.root / ".engram")["01J8ZQ3V5W6X7Y8Z9A0B1C2D3E"]
    assert (kept.reinforcement, kept.retrievals) == (1.0, 3)
    assert [e.path for e in vault.audit() if e.action == "clear-residue"] == ["ops/Deploying.md"]
    residue = [p["path"] for p in json.loads(doctor(vault.root, "--json").stdout)["problems"]
               if p["code"] == "old-residue"]
    assert residue == ["Runbook.md"]
