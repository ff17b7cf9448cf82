"""A Co-Engram repository (or another engram vault): items and synapses in engram's own
on-disk format, brought in with their identity.

Every item file keeps its id, path, frontmatter and history keys
(:data:`engram.store.rules.PRESERVABLE`: createdBy/At, version, counters, verification…);
``contentHash`` and ``contentSize`` are recomputed (Co-Engram writes placeholders) and the
derived link section is regenerated from the synapses. Every synapse file is carried as
it is (weight, evidence and authors), its id recomputed from its endpoints; one whose
ends are not both in the vault after the import is reported. An id the vault already
holds is skipped, so a second run writes nothing. A file that does not parse is a bad
record. The repository is only read.
"""

from __future__ import annotations

from pathlib import Path

from engram.adopt.batch import Batch, SourceRecord
from engram.adopt.markdown import notes
from engram.errors import FormatError, InvalidInput
from engram.store.format import parse_engram, parse_synapse
from engram.store.model import Engram, Synapse
from engram.store.notes import body_offset
from engram.store.rules import PRESERVABLE


def read_repository(folder: Path, *, skip: Path | None = None) -> Batch:
    """A batch of every item and synapse in the repository at ``folder``."""
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder.", hint="Pass the repository's folder.")
    records: list[SourceRecord] = []
    synapses: list[Synapse] = []
    passed: list[str] = []
    for rel, path in notes(folder, skip):
        top = rel.removeprefix("private/").split("/")[0]
        try:
            if top == "synapses" and rel.endswith(".yaml"):
                synapses.append(parse_synapse(path.read_bytes(), rel))
            elif rel.endswith(".md"):
                data = path.read_bytes()
                item, _derived = parse_engram(data, rel)
                records.append(_record(rel, item, body_offset(data)))
            else:
                passed.append(rel)  # engram.yaml, .gitattributes, attachments
        except FormatError as exc:
            if "/" not in rel:  # README.md and other notes about the repository
                passed.append(rel)
            else:
                records.append(SourceRecord(rel, rel, problem=exc.message.rstrip(".")))
        except OSError as exc:
            records.append(SourceRecord(rel, rel, problem=f"cannot be read ({exc.strerror})"))
    return Batch("co-engram", folder.resolve().name, tuple(records), tuple(synapses), tuple(passed), unit="item")


def _record(rel: str, item: Engram, body_line: int) -> SourceRecord:
    meta = item.to_meta()
    fields = {
        "title": item.title,
        "content": item.content,
        "domain": item.domain_tags,
        "kind": item.kind,
        "tags": item.tags,
        "summary": item.summary,
        "importance": item.importance,
        "confidence": item.confidence,
        "source_type": item.source_type,
        "status": item.status,
        "visibility": item.visibility,
        "extra": dict(item.extra),
        "source": item.source,
        "path": rel.removeprefix("private/"),
        "preserve": {k: meta[k] for k in PRESERVABLE if k in meta},
    }
    return SourceRecord(item.id, rel, fields, body_line=body_line)
