"""A small demo vault with real-looking team knowledge and edges.

:func:`build_demo` lays out a vault a newcomer can open in Obsidian or query with the
CLI: a dozen items across engineering, operations and product, linked by several synapse
kinds (one of them a contradiction, which recall and the viewer show as a warning). It uses only the public :class:`~engram.vault.Vault` API, so the demo is also a
smoke test of it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from engram.errors import InvalidInput
from engram.vault import Vault

DEMO_MARKER = ".engram/demo"


@dataclass(frozen=True, slots=True)
class Seed:
    key: str
    title: str
    domain: str
    kind: str
    tags: tuple[str, ...]
    summary: str
    body: str
    importance: float = 0.5


SEEDS: tuple[Seed, ...] = (
    Seed(
        "repack", "Use pg_repack instead of VACUUM FULL on live tables", "ops/postgres",
        "procedure", ("postgres", "maintenance"),
        "VACUUM FULL takes an exclusive lock; pg_repack rebuilds online",
        "`VACUUM FULL` rewrites the table under an ACCESS EXCLUSIVE lock, so every query\n"
        "on it waits. `pg_repack -t orders --no-superuser-check` rebuilds it online and\n"
        "swaps it in with a brief lock at the end.\n\n"
        "Run it outside the nightly batch window: it needs twice the table's disk space.",
        0.8,
    ),
    Seed(
        "bloat", "Table bloat after mass deletes", "ops/postgres", "observation",
        ("postgres", "incident"),
        "Deleting 40% of orders left the table at its old size for weeks",
        "After the March retention job deleted 40% of `orders`, the table stayed at\n"
        "180 GB: autovacuum marks the space reusable but never returns it to the OS.\n"
        "Sequential scans kept reading the dead pages.",
        0.6,
    ),
    Seed(
        "autovac", "Tune autovacuum per table for hot tables", "ops/postgres", "pattern",
        ("postgres", "performance"),
        "Lower autovacuum_vacuum_scale_factor on large, busy tables",
        "The default scale factor (0.2) waits for 20% of a table to be dead before\n"
        "vacuuming. For `orders` we set `autovacuum_vacuum_scale_factor = 0.01` with\n"
        "`ALTER TABLE ... SET (...)`, which keeps bloat under 5%.",
        0.7,
    ),
    Seed(
        "frozen", "Prefer immutable value objects", "engineering/python", "pattern",
        ("design", "python"),
        "Values that never change are safe to share between threads and caches",
        "Make value types immutable (frozen dataclasses, tuples). Sharing them needs no\n"
        "locks and no defensive copies, and they can be dictionary keys.",
        0.7,
    ),
    Seed(
        "replace", "Copy a frozen dataclass with dataclasses.replace", "engineering/python",
        "procedure", ("python", "gotcha"),
        "Assigning to a frozen dataclass raises; build a modified copy instead",
        "Assigning to a field of a frozen dataclass raises `FrozenInstanceError`:\n\n"
        "```python\nfrom dataclasses import replace\nupdated = replace(item, title=\"new\")\n```",
        0.5,
    ),
    Seed(
        "retry", "Retry idempotent HTTP calls with jittered backoff", "engineering/services",
        "pattern", ("http", "reliability"),
        "Exponential backoff with full jitter avoids synchronized retry storms",
        "Retry only idempotent requests (GET, PUT with a key). Sleep a random time in\n"
        "`[0, base * 2**attempt]`, cap it at 30 s, and give up after 5 attempts.",
        0.6,
    ),
    Seed(
        "idem", "Send an Idempotency-Key with every payment request", "engineering/services",
        "decision", ("payments", "http"),
        "The payments API deduplicates on Idempotency-Key for 24 hours",
        "We decided (2026-05) that every POST to the payments provider carries an\n"
        "`Idempotency-Key` derived from our order id, so a retried request can never\n"
        "charge a customer twice.",
        0.9,
    ),
    Seed(
        "retryall", "Retry any HTTP call that times out", "engineering/services", "hypothesis",
        ("http", "reliability"),
        "A timeout means the request failed, so sending it again is always safe",
        "Some of our services retry every call that times out. A timeout only says that no\n"
        "answer arrived in time: a POST may have gone through, and sending it again repeats\n"
        "its side effect.",
        0.3,
    ),
    Seed(
        "timeouts", "Client timeouts must be shorter than the load balancer's", "ops/networking",
        "fact", ("http", "timeouts"),
        "The ALB idle timeout is 60 s; clients use 55 s",
        "If the client waits longer than the load balancer, the balancer closes the\n"
        "connection first and the client sees a reset instead of a clean timeout.",
        0.6,
    ),
    Seed(
        "onboard", "New services need a runbook before launch", "product/process", "decision",
        ("process", "launch"),
        "No runbook, no launch: on-call must know how to restart and roll back",
        "Agreed at the 2026-04 retro: a service launches only with a runbook covering\n"
        "restart, rollback, dashboards and the owning team's channel.",
        0.5,
    ),
    Seed(
        "flaky", "Flaky integration tests hide real failures", "engineering/testing",
        "hypothesis", ("testing", "ci"),
        "Teams that tolerate flaky tests start ignoring red builds",
        "Hypothesis from two teams' CI history: once more than 2% of runs fail\n"
        "spuriously, red builds get re-run instead of read. Quarantine flaky tests\n"
        "within a day.",
        0.4,
    ),
    Seed(
        "quarantine", "Quarantine a flaky test within one day", "engineering/testing",
        "procedure", ("testing", "ci"),
        "Mark it, file an issue, and fix or delete it within a week",
        "Add the `@pytest.mark.quarantine` marker, open an issue linking the failing\n"
        "runs, and assign it. Quarantined tests still run nightly but never block merges.",
        0.5,
    ),
)

EDGES: tuple[tuple[str, str, str, str], ...] = (
    ("repack", "derives_from", "bloat", "pg_repack was adopted after the March bloat incident"),
    ("autovac", "contextualizes", "bloat", "per-table autovacuum keeps bloat from building up"),
    ("repack", "similar_to", "autovac", "both are answers to table bloat"),
    ("replace", "extends", "frozen", "replace() is how you 'modify' an immutable value"),
    ("idem", "depends_on", "retry", "idempotency keys make payment retries safe"),
    ("retry", "depends_on", "timeouts", "backoff only helps if timeouts are set right"),
    ("retryall", "contradicts", "retry", "only idempotent requests are safe to retry"),
    ("quarantine", "derives_from", "flaky", "the procedure follows from the hypothesis"),
    ("onboard", "exemplifies", "timeouts", "runbooks list the timeout settings per service"),
)


def build_demo(path: Path, *, replace_existing: bool = True) -> Vault:
    """Create the demo vault at ``path`` (rebuilding an earlier demo there)."""
    if path.exists() and any(path.iterdir()):
        if replace_existing and (path / DEMO_MARKER).exists():
            shutil.rmtree(path)
        else:
            raise InvalidInput(
                f"{path} exists and is not an engram demo vault.",
                hint="Pass a new folder: engram demo PATH.",
            )
    vault = Vault.init(path, actor="demo")
    (vault.root / DEMO_MARKER).write_text("built by engram demo\n", encoding="utf-8")
    ids: dict[str, str] = {}
    for seed in SEEDS:
        result = vault.create(
            seed.title,
            seed.body,
            domain=seed.domain.split("/"),
            kind=seed.kind,
            tags=seed.tags,
            summary=seed.summary,
            importance=seed.importance,
            confidence=0.8,
        )
        ids[seed.key] = result.id
    for source, kind, target, why in EDGES:
        vault.link(ids[source], kind, ids[target], weight=0.8, evidence=why, confidence=0.9)
    return vault
