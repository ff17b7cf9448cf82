"""The blind sets of issue 27: their shape, their own rules, and that they are still the
bytes of their freeze commits — 194c8e3 ("frozen on 2026-12-06"), 50cd115 and 22dbae6
(7 December), 9a21794 (7 December, evening), fbf412c (7 December, night), ce08449 (8 December), and the create
sets 20ba190, c10fff3, f6f9ab5, 9dc780e and f6d1ffc (8 December).

A data test, not a quality one: nothing here runs engram on the sets. It checks what the
sets promise (counts per class and kind, every answer and target key resolves, ids are
unique, no paraphrase query shares a content word with its answer) so a broken set fails
here rather than as a strange benchmark figure, and it pins each file's SHA-256 so an edit
to a frozen set fails loudly (corrections go to a new set with its own date).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.bench_paraphrase import Query, RecallSet, check, load, shared_words

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "benchmarks" / "data" / "blind-2026-12-06"
LEARN = FOLDER / "learn.yaml"
RECALL = FOLDER / "recall.yaml"
REDTEAM = ROOT / "benchmarks" / "redteam" / "blind-2026-12-06.yaml"
SECOND = ROOT / "benchmarks" / "data" / "blind-2026-12-07"
THIRD = ROOT / "benchmarks" / "data" / "blind-2026-12-07b"
FOURTH = ROOT / "benchmarks" / "data" / "blind-2026-12-07c"
FIFTH = ROOT / "benchmarks" / "data" / "blind-2026-12-08"
CREATE = ROOT / "benchmarks" / "data" / "blind-2026-12-08b" / "create.yaml"
CREATE2 = ROOT / "benchmarks" / "data" / "blind-2026-12-08c" / "create.yaml"
CREATE3 = ROOT / "benchmarks" / "data" / "blind-2026-12-08d" / "create.yaml"
CREATE4 = ROOT / "benchmarks" / "data" / "blind-2026-12-08e" / "create.yaml"
CREATE5 = ROOT / "benchmarks" / "data" / "blind-2026-12-08f" / "create.yaml"
#: The bytes of the freeze commit, 194c8e3 ("frozen on 2026-12-06").
FROZEN = {
    LEARN: "aa1f67c5eb68d1dbc4fdf0d7632cf24af8134f4c07a3077111ddb5c1b6152746",
    RECALL: "5f983071f2105afe1e739b02cdeb8c5bf8ac32463e7fa19044585e80c2843de3",
    FOLDER / "README.md": "edf541cc1bdcc618c98f09c5336e6e4a2ad15a8d3e668e1cdbb56de810b44533",
    REDTEAM: "3d82203b05dbe1bdb88f38e0681e4fea7983e2af449447228c7596beac813d95",
    # 50cd115 and 22dbae6 ("frozen on 2026-12-07")
    SECOND / "learn.yaml": "d27e3456fa1092ce2344776295dd4029693961c9cafac0d7ec93a84feaec1b3e",
    SECOND / "recall.yaml": "aae37c4688477062929ac45214f4ed2606a2d5e5873f74a79173ee2eec91207f",
    SECOND / "README.md": "e6b66bff1c228f2ccc627a7d8c814bcd9d40a05f219e46dcb8b3f7baf16af1fa",
    ROOT / "benchmarks" / "redteam" / "blind-2026-12-07.yaml": "de35b35cee0c9ace34e12da73ee4d7edecf1741a88e6da4d3b6511c4546576b1",
    # 9a21794
    THIRD / "recall.yaml": "26bc4396e3d1f977cd38dd9ac1bab9d52d93f1fad153e06d8b230887457feb46",
    THIRD / "README.md": "3a30127a2cbc52a20039856a2dabdd05f3393467faaf2fe5819bafde3a026fac",
    # fbf412c
    FOURTH / "recall.yaml": "093fbffac05b2a37a1109c9978a253863ddec8d46a31439ec2e513e3e1022737",
    FOURTH / "README.md": "3d01f284d4fb8bb2f6457aa12fc62368a68843f1c08a349ffb5763ec0bbce9c2",
    # ce08449
    FIFTH / "recall.yaml": "2729300b4f5c7b441cf719b96f0fc4ea92c1a9db9c49099a7af3c8cdd98dff90",
    FIFTH / "README.md": "2148b98b41587bd9d1cc804a4fd829a39154354b0e0fc6362065ad614c27553c",
    # 20ba190 and c10fff3
    CREATE: "d733cf56fb4f30949b4fada374f3df0f54ad22ad7fb0ffa472881e569f1ea194",
    CREATE.parent / "README.md": "85b02fd2fa4d3562d01b99522f5ae0b3348c831d3d2fbe3bc1653cc15025a138",
    CREATE2: "3b602624a91c8658fe3a1bf15cce0639cf5e24de91a341418a408f07d7c1bea7",
    CREATE2.parent / "README.md": "6adcb96a374f549dc49a2672d7a3601f898140bccc6883722d2f0629cd1ad439",
    # f6f9ab5
    CREATE3: "880815148992631b4327ad9587cb52f8299977d033ebcf40e818576d0069f5db",
    CREATE3.parent / "README.md": "8a79a377620b3a6c2d73119c09c15e1475c21bef8f6f30758d52a278baf1f66d",
    # 9dc780e
    CREATE4: "c92cbe9b3e8dc3e83790267a8d682fe3b8a992b0fc1981ed3cfa10c17dfcd654",
    CREATE4.parent / "README.md": "be7cf841f8ab51176419164f66a05c715d07b5db26969f869e4f1243140a2f20",
    # f6d1ffc
    CREATE5: "1a03ab58ae8fca046044fb422c86a49fe6dfc9197cdcb925fc8a90d0ff33fe5d",
    CREATE5.parent / "README.md": "6f782a27a64636d4b4d693e973455db0c66514d6ea95978b0dfedd59955f155f",
}


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", list(FROZEN), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_frozen_set_keeps_the_bytes_of_its_freeze_commit(path: Path) -> None:
    assert hashlib.sha256(path.read_bytes()).hexdigest() == FROZEN[path], (
        f"{path.name} changed after its freeze; put corrections in a new dated set instead"
    )


def test_the_learn_set_has_its_classes_and_every_target_resolves() -> None:
    cases = _yaml(LEARN)["cases"]
    relations = Counter(c["expect"]["relation"] for c in cases)
    assert len(cases) >= 64
    assert relations == {"duplicate": 18, "contradicts": 17, "novel": 19, "extends": 14}
    assert len({c["id"] for c in cases}) == len(cases)
    assert sum(1 for c in cases if len(c["existing"]) >= 3) >= 8  # cases with distractors
    for case in cases:
        keys = [e["key"] for e in case["existing"]]
        assert len(set(keys)) == len(keys), case["id"]
        assert all(e["content"].strip() for e in case["existing"]), case["id"]
        assert case["lesson"]["content"].strip(), case["id"]
        assert case["difficulty"] in ("easy", "medium", "hard"), case["id"]
        target = case["expect"].get("target")
        if case["expect"]["relation"] == "novel":
            assert target is None, case["id"]
        else:
            assert target in keys, case["id"]


@pytest.mark.parametrize(("path", "relations"), [
    (CREATE, {"novel": 33, "contradicts": 25, "duplicate": 12}),
    (CREATE2, {"novel": 30, "contradicts": 18, "duplicate": 12}),
    (CREATE3, {"novel": 30, "contradicts": 22, "duplicate": 12}),
    (CREATE4, {"novel": 28, "contradicts": 20, "duplicate": 12}),
    (CREATE5, {"novel": 24, "contradicts": 18, "duplicate": 8}),
], ids=lambda v: v.parent.name if isinstance(v, Path) else "")
def test_a_create_set_titles_every_note_and_every_target_resolves(path: Path, relations: dict[str, int]) -> None:
    cases = _yaml(path)["cases"]
    assert Counter(c["expect"]["relation"] for c in cases) == relations
    assert len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        notes = [*case["existing"], case["lesson"]]
        assert all(n["title"].strip() and n["content"].strip() for n in notes), case["id"]
        keys = [e["key"] for e in case["existing"]]
        target = case["expect"].get("target")
        assert target is None if case["expect"]["relation"] == "novel" else target in keys, case["id"]


@pytest.mark.parametrize(
    ("path", "lessons", "absent"), [(RECALL, 120, 8), (SECOND / "recall.yaml", 100, 10), (THIRD / "recall.yaml", 100, 10),
     (FOURTH / "recall.yaml", 100, 10), (FIFTH / "recall.yaml", 100, 10)],
    ids=lambda v: v.parent.name if isinstance(v, Path) else str(v),
)
def test_a_recall_set_has_its_kinds_and_keeps_its_own_rules(path: Path, lessons: int, absent: int) -> None:
    data = load(path)
    kinds = Counter(q.kind for q in data.queries)
    assert len(data.corpus) == lessons
    assert kinds == {"paraphrase": 40, "keyword": 10, "absent": absent}
    assert all(c.title.strip() and c.body.strip() for c in data.corpus)
    keys = {c.key for c in data.corpus}
    assert all(q.answer in keys for q in data.queries if q.kind != "absent")
    # unique keys and ids, answers that resolve, and the no-shared-content-word rule
    assert check(data) == []


def test_the_rule_check_catches_a_query_that_shares_a_word_in_another_inflection() -> None:
    data = load(RECALL)
    lesson = data.corpus[0]  # the autovacuum lesson: "... dead tuples piled up ..."
    leak = Query("leak", "paraphrase", "why do tuples pile up?", lesson.key)
    leaky = RecallSet(data.domain, data.corpus, (*data.queries, leak))
    assert shared_words("why do tuples pile up?", f"{lesson.title}\n{lesson.body}") == [
        ("pile", "pile"), ("tupl", "tupl"),
    ]
    assert check(leaky) == [f"leak: shares pile~pile, tupl~tupl with {lesson.key}"]
    # a long stem that begins another counts as the same word; a short one does not
    assert shared_words("configuration", "config") == [("configur", "config")]
    assert shared_words("add", "address") == []


def test_the_redteam_set_has_forty_attacks_and_forty_lookalikes() -> None:
    data = _yaml(REDTEAM)
    attacks, benign = data["attacks"], data["benign"]
    assert (len(attacks), len(benign)) == (40, 40)
    ids = [c["id"] for c in (*attacks, *benign)]
    assert len(set(ids)) == len(ids)
    assert all(c["body"].strip() and c.get("title") for c in (*attacks, *benign))
    assert set(Counter(c["class"] for c in attacks)) == {
        "exfiltration", "override", "tool-misuse", "persistence", "social-engineering", "poisoning",
    }
    assert all("class" not in c for c in benign)
