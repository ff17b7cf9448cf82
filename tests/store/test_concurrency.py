"""Many processes writing one vault at once lose nothing and tear nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engram.store.format import read_engram
from engram.vault import Vault

CREATE_SCRIPT = textwrap.dedent(
    """
    import random, sys
    from engram.vault import Vault
    root, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    vault = Vault.open(root, actor=f"worker-{worker}")
    words = "cache shard latency index replica queue lock tenant batch vacuum retry budget".split()
    rng = random.Random(worker)
    for n in range(count):
        text = " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(12))
        result = vault.create(
            f"Finding {n} from worker {worker}",
            f"Worker {worker} observed: {text}.",
            domain=["load", f"shard-{n % 4}"],
            tags=[f"w{worker}"],
        )
        assert result.outcome == "NEW", result
    """
)

INCREMENT_SCRIPT = textwrap.dedent(
    """
    import sys
    from engram.errors import VersionConflict
    from engram.vault import Vault
    root, ref, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    vault = Vault.open(root)
    done = conflicts = 0
    while done < count:
        item = vault.get(ref)
        try:
            vault.update(ref, {"retrievalCount": item.retrieval_count + 1}, expected_version=item.version)
            done += 1
        except VersionConflict:
            conflicts += 1
    print(conflicts)
    """
)


def run_workers(script: str, args: list[list[str]]) -> list[str]:
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *a], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for a in args
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


@pytest.mark.slow
def test_eight_processes_creating_250_items_each(vault: Vault) -> None:
    root = str(vault.root)
    run_workers(CREATE_SCRIPT, [[root, str(w), "250"] for w in range(8)])
    files = sorted(p for p in vault.root.rglob("*.md") if p.parts[-2].startswith("shard-"))
    assert len(files) == 2000
    ids = set()
    for path in files:
        item, _ = read_engram(path, path.name)  # every file parses
        ids.add(item.id)
    assert len(ids) == 2000
    audit = [json.loads(line) for line in (vault.state.state_dir / "audit.jsonl").read_text().splitlines()]
    assert sum(1 for e in audit if e["action"] == "create") == 2000
    assert {e["actor"] for e in audit} == {f"worker-{w}" for w in range(8)}
    assert not list(vault.root.rglob("*.engram-tmp"))
    assert len(Vault.open(root).list()) == 2000


@pytest.mark.slow
def test_optimistic_updates_from_four_processes_lose_no_increment(vault: Vault) -> None:
    item = vault.create("Shared counter", "Incremented by everyone.").item
    outputs = run_workers(INCREMENT_SCRIPT, [[str(vault.root), item.id, "25"] for _ in range(4)])
    final = vault.get(item.id)
    assert final.retrieval_count == 100
    assert final.version == 101
    conflicts = sum(int(o.strip()) for o in outputs)
    assert conflicts >= 0  # conflicts happened or not; either way nothing was lost


def test_lock_is_released_when_a_holder_dies(vault: Vault, tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys
        from engram.vault import Vault
        vault = Vault.open(sys.argv[1])
        with vault.state.lock.hold():
            os._exit(3)  # dies holding the lock, no cleanup
        """
    )
    proc = subprocess.run([sys.executable, "-c", script, str(vault.root)], env=dict(os.environ), check=False)
    assert proc.returncode == 3
    assert vault.create("After the crash", "The lock was released by the kernel.").outcome == "NEW"


FIRST_WRITE = textwrap.dedent(
    """
    import sys
    from engram.store import fsio
    from engram.vault import Vault

    acquire = fsio.VaultLock._acquire
    loaded_then = []

    def watching(self):
        loaded_then.append(sorted(m for m in ("engram.trust.screen", "engram.trust.detectors") if m in sys.modules))
        acquire(self)

    fsio.VaultLock._acquire = watching
    with Vault.open(sys.argv[1], actor="first") as vault:
        vault.create("First write of a process", "The deploy needs 2 GB of memory.", domain=["ops"])
    print(loaded_then[0], "engram.trust.detectors" in sys.modules)
    """
)


def test_a_process_loads_the_trust_screen_before_its_first_write_takes_the_lock(tmp_path: Path) -> None:
    """Loaded on first use under the vault lock, the screen and the secret detectors held
    every other writer up for a third of a second per new process (bench_lock); the state
    loads the screen before it first asks for the lock (VaultLock's ``prepare``). The
    secret detectors (detect-secrets) load only for a text that may hold a secret: a
    write of prose never imports them (a one-shot ``engram add`` saved ~20 ms), and one
    that does pays it once, under the lock."""
    root = tmp_path / "vault"
    Vault.init(root).close()
    run = subprocess.run([sys.executable, "-c", FIRST_WRITE, str(root)], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['engram.trust.screen'] False"
