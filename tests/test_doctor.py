"""engram doctor finds each kind of problem and fixes the safe ones."""

from __future__ import annotations

import os
import shutil
import time

from engram.store.format import read_engram
from engram.vault import Vault
from mergedriver import codec


def codes(vault: Vault) -> list[tuple[str, str]]:
    return sorted((p.code, p.path) for p in vault.doctor().problems)


def test_a_clean_vault_has_no_problems(vault: Vault) -> None:
    a = vault.create("One", "1").id
    b = vault.create("Two", "2").id
    vault.link(a, "extends", b)
    report = vault.doctor()
    assert report.problems == () and report.ok and report.items == 2 and report.synapses == 1


def test_each_problem_is_found_and_fixed(vault: Vault) -> None:
    a = vault.create("Alpha", "alpha body", domain=["x"]).item
    b = vault.create("Beta", "beta body", domain=["x"]).item
    syn = vault.link(a.id, "extends", b.id)
    assert a.path and b.path
    root = vault.root

    # content edited by hand: not a problem (the adoption summary lists it)
    pa = root / a.path
    pa.write_text(pa.read_text().replace("alpha body", "alpha body, edited by hand"))
    # duplicate id: a copied file
    shutil.copy(root / b.path, root / "x/beta-copy.md")
    # a file a person moved: not drift, engram keeps the person's path
    (root / "y").mkdir()
    (root / b.path).rename(root / "y/beta.md")
    # path drift: a private item moved out of private/ (it would be committed)
    secret = vault.create("Secret", "local only", domain=["x"], visibility="private").item
    assert secret.path == "private/x/secret.md"
    (root / secret.path).rename(root / "x/secret.md")
    # dangling synapse: an edge to an item that does not exist
    ghost = root / "synapses/part_of/syn-0123456789abcdef.yaml"
    ghost.parent.mkdir(parents=True)
    ghost.write_text(
        "id: syn-0123456789abcdef\nfrom: 01GHOST00000000000000000000\nto: " + a.id
        + "\nkind: part_of\nweight: 0.5\nevidence: []\ncreatedBy: x\ncreatedAt: 2026-01-01T00:00:00.000Z\n"
        "updatedAt: 2026-01-01T00:00:00.000Z\n"
    )
    # misnamed synapse
    (root / syn.path).rename(root / "synapses/extends/syn-ffffffffffffffff.yaml")
    # leftover temp file from a crashed write
    temp = root / "x/.alpha.md.1234abcd.engram-tmp"
    temp.write_text("half")
    old = time.time() - 7200
    os.utime(temp, (old, old))
    # unparseable file
    (root / "x/broken.md").write_text("---\nid: 01BROKEN\ntitle: [\n---\n")

    found = {code for code, _ in codes(vault)}
    assert found == {
        "duplicate-id", "path-drift", "dangling-synapse",
        "misnamed-synapse", "leftover-temp", "unparseable", "stale-derived",
    }
    assert ("path-drift", "x/secret.md") in codes(vault)
    assert vault.doctor().adoption.edited_outside == (a.path,)

    report = vault.doctor(fix=True)
    assert all(p.fixed for p in report.problems if p.fixable), [p for p in report.problems if not p.fixed]
    # Only the unparseable file needs a person now.
    assert codes(vault) == [("unparseable", "x/broken.md")]
    assert not temp.exists() and not ghost.exists()
    betas = [i for i in vault.list() if i.title == "Beta"]
    # Both copies stay where the person put them, with distinct ids (one keeps b's).
    assert {i.path for i in betas} == {"y/beta.md", "x/beta-copy.md"}
    assert b.id in {i.id for i in betas} and len({i.id for i in betas}) == 2
    assert (root / "private/x/secret.md").is_file() and not (root / "x/secret.md").exists()
    alpha, _ = read_engram(pa, a.path)
    assert alpha.content == "alpha body, edited by hand\n"  # content kept, hash recorded
    assert alpha.content_hash == codec.content_hash(alpha.content)
    assert [s.kind for s in vault.synapses(a.id)] == ["extends"]


def test_fix_is_idempotent(vault: Vault) -> None:
    a = vault.create("Alpha", "alpha body").item
    assert a.path
    path = vault.root / a.path
    path.write_text(path.read_text().replace("alpha body", "changed"))
    vault.doctor(fix=True)
    before = path.read_bytes()
    report = vault.doctor(fix=True)
    assert report.problems == () and path.read_bytes() == before


def test_merge_flags_and_superseded_items_need_a_person(vault: Vault) -> None:
    old = vault.create("Use Python 3.10", "Pin 3.10 in CI.").item
    new = vault.create("Use Python 3.11", "Pin 3.11 in CI.").item
    vault.link(new.id, "supersedes", old.id)
    flagged = vault.create("Deploy window", "Tuesdays.").item
    assert flagged.path
    path = vault.root / flagged.path
    path.write_text(path.read_text().replace("---\nTuesdays.", "mergeConflicts:\n  - 'title: both sides changed it'\n---\nTuesdays."))
    report = vault.doctor(fix=True)
    found = {(p.code, p.path, p.fixed) for p in report.problems}
    assert ("merge-conflict", flagged.path, False) in found
    assert ("superseded-active", old.path, False) in found
    assert not report.ok
    assert f"engram conflicts --resolve {flagged.id}" in next(p.message for p in report.problems if p.code == "merge-conflict")
