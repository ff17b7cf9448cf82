"""A synthetic Obsidian vault of 6,571 notes, shaped like a team's real one, for the import
benchmark.

Shape (deterministic for a seed): most of a real vault's bulk is template-filled pages,
which is exactly what a near-duplicate check must not eat —

- 2,600 person pages from one "Person" template: properties (role, team, location,
  `categories: ["[[People]]"]`), about 90 words of template prose and headings, and a
  fill of 0-3 sentences (a fifth of the pages have no fill beyond the properties);
- 1,500 meeting notes from a "Meeting" template (agenda / notes / action items headings,
  wikilinks to 2-4 people), each with 2-6 sentences of notes;
- 2,300 free-form notes: a body of 40-400 words from the word model of
  :mod:`benchmarks.synth`, tags, a few properties, wikilinks to people and other notes;
  some titles carry emoji;
- 171 planted near-duplicates: copies of free notes of 100+ words (``<title> 1.md``, as
  Obsidian names a duplicated note) with one word dropped or replaced, or a short
  sentence added.

Every note but the planted copies is distinct knowledge. Each file is a note people can
link to by its path, so the right import writes all 6,571 and reports the 171 copies as
repeating another note of the source (a copy of an item that was in the vault before
would not be written). The vault is cached under
``$ENGRAM_BENCH_CACHE/obsidian-<seed>`` like the other synthetic vaults.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchmarks.synth import CACHE, TextModel

MARKER = ".obsidian-synth.json"
PEOPLE, MEETINGS, NOTES, COPIES = 2600, 1500, 2300, 171
TOTAL = PEOPLE + MEETINGS + NOTES + COPIES  # 6,571

FIRST = ["Ada", "Alan", "Amara", "Ana", "Ben", "Bea", "Carlos", "Chen", "Dana", "Dev", "Elena", "Emil", "Fatima", "Femi", "Grace", "Hana", "Ivan", "Jae", "Jonas", "Kai", "Kofi", "Lena", "Leo", "Maya", "Mei", "Nadia", "Noor", "Omar", "Priya", "Quinn", "Rafael", "Rosa", "Sami", "Sofia", "Tariq", "Uma", "Vera", "Wei", "Xavier", "Yara", "Yusuf", "Zane", "Zoe"]
LAST = ["Abara", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kim", "Kowalski", "Larsen", "Mehta", "Nakamura", "Novak", "Okafor", "Petrov", "Quist", "Rossi", "Santos", "Schmidt", "Silva", "Tanaka", "Ueda", "Varga", "Wang", "Weber", "Xu", "Yilmaz", "Zhou"]
ROLES = ("staff engineer", "product manager", "designer", "SRE", "data scientist", "engineering manager",
         "support lead", "security engineer", "tech writer", "recruiter")
TEAMS = ("Payments", "Search", "Platform", "Growth", "Mobile", "Billing", "Identity", "Data")
CITIES = ("Lisbon", "Berlin", "Toronto", "Nairobi", "Osaka", "Austin", "Warsaw", "Sydney")
EMOJI = ("🚀", "🔥", "✅", "🐛", "📌", "❤️", "⚠️")

PERSON_TEMPLATE = """## About

Use this page to keep track of who this person is, what they work on and how to work
well with them. Update it after every meeting; link meetings with the person's name.

## Working together

- Preferred channel:
- Time zone:
- Best time to reach them:

## Notes

{fill}

## Meetings

![[Meetings.base#Person]]
"""

MEETING_TEMPLATE = """## Agenda

- Follow-ups from last time
- Open questions

## Attendees

{attendees}

## Notes

{notes}

## Action items

- [ ] Send the summary to the attendees
"""


@dataclass(frozen=True, slots=True)
class ObsidianSynth:
    root: Path
    notes: int
    people: int
    meetings: int
    free: int
    copies: int


def generate(seed: int = 11, root: Path | None = None, *, force: bool = False) -> ObsidianSynth:
    """Write (or reuse) the vault; return what it holds."""
    root = root or CACHE / f"obsidian-{seed}"
    marker = root / MARKER
    if marker.is_file() and not force:
        info = json.loads(marker.read_text())
        return ObsidianSynth(root, **info)
    if root.exists():
        shutil.rmtree(root)
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text('{"newLinkFormat": "shortest"}\n')
    rng = random.Random(seed)
    model = TextModel(rng)
    people = _people(root, rng, model)
    _meetings(root, rng, model, people)
    _free_notes(root, rng, model, people)
    info = {"notes": TOTAL, "people": PEOPLE, "meetings": MEETINGS, "free": NOTES, "copies": COPIES}
    marker.write_text(json.dumps(info))
    return ObsidianSynth(root, **info)


def _write(root: Path, rel: str, props: dict[str, object], body: str) -> None:
    lines = ["---"]
    for key, value in props.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f'  - "{v}"' for v in value)
        else:
            lines.append(f"{key}: {value}")
    lines.append("---")
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + body, encoding="utf-8")


def _people(root: Path, rng: random.Random, model: TextModel) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < PEOPLE:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name in seen:
            name = f"{name} {len(names)}"
        seen.add(name)
        names.append(name)
    for i, name in enumerate(names):
        fill_sentences = 0 if i % 5 == 0 else rng.randint(1, 3)
        fill = " ".join(model.sentence(rng.randint(8, 18)).capitalize() + "." for _ in range(fill_sentences))
        props: dict[str, object] = {
            "categories": ["[[People]]"],
            "role": rng.choice(ROLES),
            "team": f'"[[{rng.choice(TEAMS)}]]"',
            "location": rng.choice(CITIES),
            "created": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        }
        _write(root, f"People/{name}.md", props, PERSON_TEMPLATE.format(fill=fill))
    return names


def _meetings(root: Path, rng: random.Random, model: TextModel, people: list[str]) -> None:
    for i in range(MEETINGS):
        day = f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}"
        topic = model.title()
        attendees = "\n".join(f"- [[{p}]]" for p in rng.sample(people, rng.randint(2, 4)))
        notes = " ".join(model.sentence(rng.randint(8, 18)).capitalize() + "." for _ in range(rng.randint(2, 6)))
        props: dict[str, object] = {"categories": ["[[Meetings]]"], "type": f'"[[{rng.choice(TEAMS)} sync]]"', "date": day}
        _write(root, f"Meetings/{day} {topic}.md", props, MEETING_TEMPLATE.format(attendees=attendees, notes=notes))


def _free_notes(root: Path, rng: random.Random, model: TextModel, people: list[str]) -> None:
    titles: list[str] = []
    bodies: list[tuple[str, dict[str, object], str]] = []
    for i in range(NOTES):
        title = model.title()
        if i % 40 == 0:
            title = f"{rng.choice(EMOJI)} {title}"
        if title in titles:
            title = f"{title} {i}"
        titles.append(title)
        body = model.body()
        links = [f"[[{rng.choice(people)}]]"] + [f"[[{t}]]" for t in rng.sample(titles, min(len(titles), 2))]
        body += "\n\nRelated: " + ", ".join(links) + "\n"
        props: dict[str, object] = {
            "tags": [w for w in rng.sample(model.content_words[:400], rng.randint(1, 3))],
            "status": rng.choice(("draft", "evergreen", "[[Published]]")),
        }
        folder = rng.choice(("Notes", "Notes/Engineering", "Notes/Product", "References"))
        rel = f"{folder}/{title.replace('/', '-')}.md"
        _write(root, rel, props, body)
        bodies.append((rel, props, body))
    long_enough = [b for b in bodies if len(b[2].split()) >= 100]
    for rel, props, body in rng.sample(long_enough, COPIES):
        words = body.split(" ")
        change = rng.random()
        k = rng.randrange(1, len(words) - 1)
        if change < 0.4:  # a word dropped
            del words[k]
        elif change < 0.8:  # a word replaced
            words[k] = rng.choice(model.content_words[:2000])
        else:  # a short afterthought
            words.append("Checked again after the review.")
        _write(root, rel[: -len(".md")] + " 1.md", props, " ".join(words))
