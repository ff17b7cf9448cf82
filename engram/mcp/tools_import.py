"""Bulk import: ``engram_import`` — many records in one call (a thin wrapper over engram.adopt)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from engram.adopt.records import from_objects
from engram.adopt.sources import parse_text
from engram.errors import InvalidInput
from engram.mcp.models import ImportedRecord, ImportOut
from engram.mcp.registry import ADD, OptionalText, Toolbox
from engram.store.paths import split_domain


def register(box: Toolbox) -> None:
    @box.tool("engram_import", title="Import many items at once", profile="full", annotations=ADD)
    def engram_import(
        records: Annotated[
            list[dict[str, Any]] | None,
            Field(description="Objects with a title and any of content, domain ('a/b'), kind, tags, "
                  "summary, importance, confidence, sourceType, visibility, status, source, links "
                  "([{kind, to}]); other keys become extra frontmatter."),
        ] = None,
        text: Annotated[
            OptionalText,
            Field(description="The same records as JSON (a list) or JSON Lines, or an MCP memory "
                  "server's memory.jsonl, instead of records."),
        ] = None,
        default_domain: Annotated[str, Field(description="Domain for records that name none, e.g. 'imported'.")] = "",
        origin: Annotated[
            str, Field(description="Where the records come from, kept in each item's source.")
        ] = "mcp",
        dedupe: Annotated[bool, Field(description="Leave out duplicates and near-duplicates (default).")] = True,
        dry_run: Annotated[bool, Field(description="Check every record; write nothing.")] = False,
    ) -> ImportOut:
        """Create many items in one call, from a list of records or JSON / JSON Lines text.

        Use it to bring in knowledge that already exists elsewhere (an export, a decision
        log, another memory server's graph). Bad records are skipped and listed with
        why; the others are written. Deduplication applies as in engram_create, except
        that nothing is reinforced: importing the same records again writes nothing
        (each is reported SKIPPED or DUPLICATE). For one or two items, use engram_create.
        """
        if (records is None) == (text is None):
            raise InvalidInput("pass either records or text.", hint="records=[{'title': ...}] or text='[...]'.")
        domain = split_domain(default_domain)
        if text is not None:
            batch = parse_text(text, origin, default_domain=domain)
        else:
            batch = from_objects([(n, r, None) for n, r in enumerate(records or [], 1)], origin, default_domain=domain)
        if not batch.records:
            raise InvalidInput("there are no records to import.", hint="Pass at least one record.")
        report = box.vault().run_import(batch, dedupe=dedupe, dry_run=dry_run)
        counts = report.counts
        message = report.summary()
        if counts["BAD"]:
            message += ". Fix the BAD records (see results) and import again: the rest is skipped then."
        return ImportOut(
            dry_run=dry_run,
            records=len(report.results),
            new=counts["NEW"],
            duplicate=counts["DUPLICATE"],
            update=counts["UPDATE"],
            skipped=counts["SKIPPED"],
            bad=counts["BAD"],
            links=report.links,
            results=[
                ImportedRecord(
                    where=r.where, outcome=r.outcome, id=r.id, path=r.path, message=r.message,
                )
                for r in report.results
            ],
            message=message,
        )
