"""Bulk import: ``engram_import`` — many records in one call (a thin wrapper over engram.items.importer)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from engram.errors import InvalidInput
from engram.items.importer import Record, parse_records
from engram.mcp.models import ImportedRecord, ImportOut
from engram.mcp.registry import ADD, OptionalText, Toolbox
from engram.store.paths import split_domain


def register(box: Toolbox) -> None:
    @box.tool("engram_import", title="Import many items at once", profile="full", annotations=ADD)
    def engram_import(
        records: Annotated[
            list[dict[str, Any]] | None,
            Field(description="Objects with a title and any of content, domain ('a/b'), kind, tags, "
                  "summary, importance, confidence, sourceType, visibility, status, source; other "
                  "keys become extra frontmatter."),
        ] = None,
        text: Annotated[
            OptionalText, Field(description="The same records as JSON (a list) or JSON Lines, instead of records.")
        ] = None,
        default_domain: Annotated[str, Field(description="Domain for records that name none, e.g. 'imported'.")] = "",
        origin: Annotated[
            str, Field(description="Where the records come from, kept as each item's source.")
        ] = "mcp",
        dry_run: Annotated[bool, Field(description="Validate every record; write nothing.")] = False,
    ) -> ImportOut:
        """Create many items in one call, from a list of records or JSON / JSON Lines text.

        Use it to bring in knowledge that already exists elsewhere (an export, a
        decision log, notes another tool produced). Every record is validated before the
        first write: if any is bad, nothing is written and the error lists each bad
        record. Deduplication applies as in engram_create (a record already in the vault
        reinforces it). For one or two items, use engram_create.
        """
        if (records is None) == (text is None):
            raise InvalidInput("pass either records or text.", hint="records=[{'title': ...}] or text='[...]'.")
        parsed = parse_records(text) if text is not None else [Record(n, r) for n, r in enumerate(records or [], 1)]
        if not parsed:
            raise InvalidInput("there are no records to import.", hint="Pass at least one record.")
        report = box.vault().import_records(
            parsed, origin=origin, default_domain=split_domain(default_domain), dry_run=dry_run
        )
        counts = report.counts
        if dry_run:
            message = f"All {len(parsed)} record(s) are valid; nothing was written (dry_run)."
        else:
            message = (
                f"{counts['NEW']} new, {counts['DUPLICATE']} duplicate(s) reinforced, "
                f"{counts['UPDATE']} near-duplicate(s) not written (update those items instead)."
            )
        return ImportOut(
            dry_run=dry_run,
            records=len(parsed),
            new=counts["NEW"],
            duplicate=counts["DUPLICATE"],
            update=counts["UPDATE"],
            results=[
                ImportedRecord(line=line, outcome=r.outcome, id=r.id, path=r.item.path)
                for line, r in report.results
            ],
            message=message,
        )
