"""The MCP conformance suite (a third-party client, Node) against `engram serve --http`.

Scenarios that call the suite's own fixtures (test_* tools and prompts, test://
resources) are listed in tests/data/mcp-conformance-expected-failures.yaml; the suite
fails on any other failure and on a listed scenario that starts passing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from engram.vault import Vault
from tests.conftest import TESTS
from tests.mcp_helpers import CONFORMANCE, http_server, node_env, node_tool

EXPECTED_FAILURES = TESTS / "data" / "mcp-conformance-expected-failures.yaml"
MUST_PASS = (
    "server-initialize", "ping", "tools-list", "tools-call-error", "resources-list", "prompts-list",
    "completion-complete", "logging-set-level", "server-sse-multiple-streams", "dns-rebinding-protection",
)


def scenario_results(out: Path) -> dict[str, bool]:
    results = {}
    for checks in out.glob("server-*/checks.json"):
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks.parent.name.removeprefix("server-"))
        results[name] = all(c["status"] == "SUCCESS" for c in json.loads(checks.read_text()))
    return results


def test_conformance_suite(vault: Vault, tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = dict(os.environ)
    with http_server(vault.root, env) as url:
        proc = subprocess.run(
            [*node_tool(CONFORMANCE), "server", "--url", url, "--expected-failures", str(EXPECTED_FAILURES),
             "-o", str(out)],
            env=node_env(env), capture_output=True, text=True, timeout=300, check=False,
        )
    summary = proc.stdout[proc.stdout.find("=== SUMMARY ===") :]
    assert proc.returncode == 0, summary + proc.stderr[-3000:]
    results = scenario_results(out)
    assert all(results.get(name) for name in MUST_PASS), results
