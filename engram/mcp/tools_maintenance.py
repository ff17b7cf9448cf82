"""Maintenance tools: doctor and reindex (sync and merge statistics join when they land)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.mcp.models import AdoptionOut, DoctorOut, DoctorProblem, ReindexOut
from engram.mcp.registry import ADD_IDEMPOTENT, Toolbox


def register(box: Toolbox) -> None:
    @box.tool("engram_doctor", title="Check (and fix) the vault", profile="standard", annotations=ADD_IDEMPOTENT)
    def engram_doctor(
        fix: Annotated[
            bool, Field(description="Apply the safe fixes (each atomic; files are moved to trash, never lost).")
        ] = False,
        accept: Annotated[
            list[str] | None,
            Field(description="Item paths whose current text to keep although it is git's last commit cut "
                  "off inside a line (a problem with needs_consent). Only after the user has seen the diff and agreed."),
        ] = None,
    ) -> DoctorOut:
        """Check the vault for problems and optionally fix the safe ones.

        Use it when a tool reports a broken file or an ambiguous id, or after files were
        edited by hand. Finds unparseable files, copies sharing an id, links to missing
        items, misnamed link files, stale derived sections, private items outside
        private/ and leftover temp files. fix=false only reports; unparseable files are
        never touched (a person must look). Text edited outside engram that is git's last
        version cut off inside a line (lost-content, needs_consent) is not fixed by fix=true: show the user
        the diff and pass accept=[path] only if they agree. The adoption summary (notes
        without an id of their own, wikilinks to no note or to two) reports no problems.
        """
        report = box.vault().doctor(fix=fix, accept=accept or ())
        a = report.adoption
        open_problems = sum(not p.fixed for p in report.problems)
        if not report.problems:
            message = "No problems found."
        elif fix:
            message = f"{len(report.problems) - open_problems} fixed, {open_problems} left for a person."
        else:
            fixable = sum(p.fixable for p in report.problems)
            message = f"{len(report.problems)} problem(s), {fixable} fixable: call engram_doctor(fix=true)."
        return DoctorOut(
            ok=report.ok,
            items=report.items,
            synapses=report.synapses,
            problems=[
                DoctorProblem(
                    code=p.code,
                    path=p.path,
                    message=p.message,
                    fixable=p.fixable,
                    fixed=p.fixed,
                    fix_error=p.fix_error,
                    needs_consent=p.consent,
                    diff=p.diff,
                )
                for p in report.problems
            ],
            adoption=AdoptionOut(
                with_id=a.with_id,
                indexed_only=a.indexed_only,
                links=a.links,
                unresolved=[f"{path}: [[{text}]]" for path, text in a.unresolved[:20]],
                ambiguous=[f"{path}: [[{text}]]" for path, text, _ in a.ambiguous[:20]],
                edited_outside=len(a.edited_outside),
            ),
            message=message,
        )

    @box.tool("engram_reindex", title="Rebuild the search index", profile="full", annotations=ADD_IDEMPOTENT)
    def engram_reindex() -> ReindexOut:
        """Rebuild the derived index (.engram/index.sqlite) from the Markdown files alone.

        Rarely needed: the index follows file changes by itself. Use it only when
        results look wrong after files were changed outside engram, or when an error
        suggests it. Slow on large vaults.
        """
        stats = box.vault().reindex()
        return ReindexOut(files=stats.scanned, errors=stats.errors)
