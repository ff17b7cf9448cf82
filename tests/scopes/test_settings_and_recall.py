"""Setting the scope keys without touching a person's bytes; one search over two vaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.store.settings import SETTINGS_FILE
from engram.vault import Vault
from tests.git_helpers import git
from tests.scopes.helpers import publish_org, team


def test_setting_keys_changes_only_their_lines(vault: Vault, tmp_path: Path) -> None:
    path = vault.root / SETTINGS_FILE
    path.write_text(path.read_text() + "# a person's note at the end\nrecall:\n  minRelevance: 0.25   # tuned\n")
    before = path.read_text()
    org = tmp_path / "org.git"
    git(tmp_path, "init", "--quiet", "--bare", str(org))
    assert vault.configure_scopes(org_repo=str(org)) is True
    after = path.read_text()
    assert after == before + f"scopes:\n  org: {org}\n"
    assert vault.state.settings.data["scopes"]["org"] == str(org)
    assert vault.configure_scopes(org_repo=str(org)) is False  # nothing to change
    assert vault.configure_scopes(review=True) is True
    assert path.read_text() == before + f"scopes:\n  org: {org}\n  review: true\n"
    assert vault.configure_scopes(org_repo="") is True  # '' removes the key
    assert path.read_text() == before + "scopes:\n  review: true\n"
    assert [e.action for e in vault.activity()][:1] == ["settings"]


def test_a_section_in_flow_style_is_refused_untouched(vault: Vault, tmp_path: Path) -> None:
    path = vault.root / SETTINGS_FILE
    path.write_text("scopes: {minDays: 3}\n")
    with pytest.raises(InvalidInput, match="form this command does not edit"):
        vault.configure_scopes(review=True)
    assert path.read_text() == "scopes: {minDays: 3}\n"


def test_bad_values_are_refused_before_writing(vault: Vault, tmp_path: Path) -> None:
    before = (vault.root / SETTINGS_FILE).read_bytes()
    with pytest.raises(InvalidInput, match="does not exist"):
        vault.configure_scopes(org_repo=str(tmp_path / "missing"))
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInput, match="is not a git repository"):
        vault.configure_scopes(agentsync_repo=str(plain))
    (vault.root / SETTINGS_FILE).write_bytes(before + b"scopes:\n  minAgents: 0\n")
    vault.state.settings = type(vault.state.settings).load(vault.root)
    with pytest.raises(InvalidInput, match="minAgents is 0"):
        vault.standing(vault.create("x", "y").item)


def test_one_search_ranks_team_and_org_hits_together_each_with_its_scope(tmp_path: Path) -> None:
    org = publish_org(tmp_path)
    (alice,) = team(tmp_path, "payments", org, "alice")
    (carol,) = team(tmp_path, "search", org, "carol")
    shared = carol.create("Cache invalidation needs versioned keys", "Version every cache key so a deploy "
                          "invalidates stale entries.", domain=["eng"])
    carol.endorse(shared.id)
    carol.promote(shared.id, to="org")
    mine = alice.create("Our cache keys", "We prefix cache keys with the schema version.", domain=["eng"],
                        visibility="private")
    assert [h.scope for h in alice.search("cache keys").hits] == ["private"]  # no clone yet: only this vault
    alice.sync_scopes()
    result = alice.search("cache keys version")
    assert {(h.id, h.scope) for h in result.hits} == {(shared.id, "org"), (mine.id, "private")}
    assert [h.scope for h in alice.search("cache keys", visibility=["org"]).hits] == ["org"]
    assert [h.scope for h in alice.search("cache keys", visibility=["private"]).hits] == ["private"]
    assert len(alice.search("cache keys version", limit=1).hits) == 1
    # The budget bounds the merged list: what does not fit is left out, and the answer
    # names the budget that carries both scopes' hits.
    tight = alice.search("cache keys version", tier="auto", budget=60)
    assert tight.tokens <= 60 and tight.budget_reached and len(tight.hits) == 1 and tight.left_out == 1
    both = alice.search("cache keys version", tier="auto", budget=tight.needed_budget)
    assert {(h.id, h.scope) for h in both.hits} == {(shared.id, "org"), (mine.id, "private")}
    assert both.tokens <= tight.needed_budget and both.left_out == 0
    with pytest.raises(InvalidInput, match="scope 'galaxy'"):
        alice.search("cache", visibility=["galaxy"])
    # Org hits are not journaled as this team's usage; this vault's are.
    alice.flush_usage()
    assert alice.get(mine.id).recalled_by == ("alice",)
    none = alice.search("kubernetes operators")
    assert none.status == "no_confident_match" and none.hits == ()
    alice.close()
    carol.close()


def test_an_org_vault_that_half_answers_does_not_outrank_a_full_answer(tmp_path: Path) -> None:
    org = publish_org(tmp_path)
    (alice,) = team(tmp_path, "payments", org, "alice")
    (carol,) = team(tmp_path, "search", org, "carol")
    partial = carol.create("Autovacuum tuning for postgres", "Lower the scale factor on hot tables in postgres.",
                           domain=["ops"], importance=0.9)
    carol.endorse(partial.id)
    carol.promote(partial.id, to="org")
    full = alice.create("Repack bloated postgres tables", "pg_repack rebuilds bloated hot postgres tables online "
                        "without the exclusive lock VACUUM FULL takes.", domain=["ops"], importance=0.2)
    alice.sync_scopes()
    hits = alice.search("postgres hot tables bloated", expand=False).hits
    assert [(h.id, h.scope) for h in hits] == [(full.id, "team"), (partial.id, "org")]
    org_hit = hits[1]
    assert org_hit.relevance is not None and org_hit.relevance < 0.5  # three of four words, the rarest missing
    # Its own index scaled it to 1; the merge puts it on the team hit's scale.
    assert org_hit.explanation.parts["relevance"] < hits[0].explanation.parts["relevance"] * 0.5
    alice.close()
    carol.close()


def test_an_org_repo_that_is_a_file_is_refused_with_what_to_pass(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engram.cli import cli

    vault = Vault.init(tmp_path / "team")
    settings = (vault.root / "engram.yaml").read_bytes()
    (tmp_path / "org.txt").write_text("not a repository\n")
    out = CliRunner().invoke(cli, ["--vault", str(vault.root), "scopes", "setup", "--org", str(tmp_path / "org.txt")])
    assert out.exit_code == 2, out.output
    assert "is not a git repository" in out.output and "Traceback" not in out.output
    assert (vault.root / "engram.yaml").read_bytes() == settings
