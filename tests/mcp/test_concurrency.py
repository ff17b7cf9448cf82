"""Many sessions, one vault: four `engram serve` processes, 200 creates each, nothing lost.

Each server is a real subprocess driven over stdio by the official client; the four
sessions write at the same time. Afterwards every item is on disk exactly once with
its own id, and each session sees the others' writes on its next call.
"""

from __future__ import annotations

import os
import random
import sys
from contextlib import AsyncExitStack

import anyio
import pytest
from mcp import Client, StdioServerParameters

from engram.store.format import read_engram
from engram.vault import Vault
from tests.mcp_helpers import ok

SESSIONS = 4
CREATES = 200
WORDS = ["cache", "shard", "latency", "index", "replica", "queue", "lock", "tenant", "batch", "vacuum", "retry", "budget"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.slow
@pytest.mark.anyio
async def test_four_servers_two_hundred_creates_each(vault: Vault) -> None:
    ids: list[list[str]] = [[] for _ in range(SESSIONS)]

    async def work(client: Client, session: int) -> None:
        rng = random.Random(session)
        for n in range(CREATES):
            text = " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(12))
            made = ok(await client.call_tool("engram_create", {
                "title": f"Finding {n} from session {session}",
                "content": f"Session {session} observed: {text}.",
                "domain": f"load/shard-{n % 4}",
                "tags": [f"s{session}"],
            }))
            assert made["outcome"] == "NEW", made
            ids[session].append(made["id"])

    async with AsyncExitStack() as stack:
        clients = []
        for session in range(SESSIONS):
            params = StdioServerParameters(
                command=sys.executable,
                args=["-c", "from engram.cli import main; main()", "--vault", str(vault.root),
                      "--actor", f"session-{session}", "serve", "--profile", "minimal"],
                env=dict(os.environ),
            )
            clients.append(await stack.enter_async_context(Client(params, read_timeout_seconds=120)))
        async with anyio.create_task_group() as group:
            for session, client in enumerate(clients):
                group.start_soon(work, client, session)
        # Each session sees the others' writes on its next call.
        for session, client in enumerate(clients):
            other = ids[(session + 1) % SESSIONS][-1]
            got = ok(await client.call_tool("engram_get", {"ref": other, "tier": "digest"}))
            assert got["updated_by"] == f"session-{(session + 1) % SESSIONS}"
            page = ok(await client.call_tool("engram_list", {"domain": "load", "limit": 1, "offset": 799}))
            assert page["count"] == 1 and "next_offset" not in page

    all_ids = [i for per in ids for i in per]
    assert len(all_ids) == len(set(all_ids)) == SESSIONS * CREATES
    files = sorted((vault.root / "load").rglob("*.md"))
    assert len(files) == SESSIONS * CREATES
    on_disk = {read_engram(p, p.relative_to(vault.root).as_posix())[0].id for p in files}
    assert on_disk == set(all_ids)
    assert len(vault.list(domain="load")) == SESSIONS * CREATES
    assert vault.doctor().problems == ()
