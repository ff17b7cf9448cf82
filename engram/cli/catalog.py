"""Which module defines each ``engram`` command, and the summary ``engram --help`` shows.

The root group (:mod:`engram.cli`) imports a command's module only when that command
runs, so ``engram --version``, ``engram --help`` and a one-shot ``engram search`` pay
for what they use and not for every layer. This table is all the group knows before
then: the module to import for a name, and the command's first sentence (its short
help) for the listing in ``engram --help``. It is data, not a second source of truth:
``tests/cli/test_startup.py`` checks it against what each module's ``COMMANDS``
exports and how click would summarise each command, and prints the table to paste here
when a command is added, renamed or its help changes.
"""

from __future__ import annotations

#: Command name → (module under ``engram.cli``, summary for ``engram --help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "accept": ("lifecycle", "Carry out a proposal and record it accepted (the proposal file says who and when)."),
    "add": ("items", "Add an item and print its id."),
    "add-skill": ("lifecycle", "Record a skill: a procedure with ordered steps and preconditions."),
    "adopt": ("maintenance", "Write an id into notes that have none (default: every note in the vault)."),
    "archive": ("lifecycle", "Freeze an item: out of default recall and listings, kept as it is; `engram restore` undoes it."),
    "audit": ("trust", "Query the audit log: every write and every refused write, with the rule that fired."),
    "bench": ("quality", "Time recall on this vault: search latency over its own words."),
    "conflicts": ("gitcmds", "List items a merge flagged for review, or clear one's flag with --resolve."),
    "delete": ("items", "Delete an item and its synapses (kept in .engram/trash/ on this machine)."),
    "demo": ("maintenance", "Build a demo vault in PATH (default ./engram-demo) and show a few operations."),
    "dismiss": ("lifecycle", "Record a proposal dismissed; nothing else changes, and it is not proposed again."),
    "distill": ("scopes", "Capture finished agentsync claims and context-keeper decisions as items (idempotent)."),
    "doctor": ("maintenance", "Check the vault: unparseable files, duplicate ids, dangling or misnamed synapses, stale derived sections, private items in the wrong place, leftover temp files; and summarise adoption: notes with an id or indexed only, wikilinks that do not resolve."),
    "endorse": ("scopes", "Vouch for an item: the endorsement a promotion to org requires."),
    "eval": ("quality", "Measure recall on a golden set of this vault's own questions."),
    "export": ("adopt", "Export the vault: KNOWLEDGE.md for people, or JSON Lines that import back."),
    "feedback": ("lifecycle", "Say whether an item helped: importance moves (bounded, scaled by --confidence), strong neighbours share a little, repeated failure proposes archiving it."),
    "flush": ("search", "Fold journaled search retrievals and feedback into the items' frontmatter (one batch)."),
    "forget": ("lifecycle", "Move an item to the team's trash (status forgotten, hidden, restorable until purged)."),
    "generalize": ("scopes", "Restate an org item's body as the general rule; the concrete body is kept as its example."),
    "get": ("items", "Show one item: REF is an id (or 6+ leading characters), a path or the exact title."),
    "history": ("items", "Show one item's history: this machine's audit trail (who changed what, when, which version) and the git commits of its file, teammates' merged changes included."),
    "hooks": ("gitcmds", "Hooks that report problems after `git pull` (and --rebase), and refuse commits carrying secrets."),
    "import": ("adopt", "Import notes, records or another tool's memory from SOURCE (a folder, a file, or - for stdin)."),
    "init": ("items", "Create a vault in PATH (default: --vault, else here), or complete an existing one."),
    "invoke-skill": ("lifecycle", "Invoke a skill: its steps, with its components' steps inlined."),
    "learn": ("lifecycle", "Learn a lesson: classify it against what the vault holds, then reinforce, extend, supersede, dispute, link or insert — and say why."),
    "lineage": ("lifecycle", "Where an item came from and what came of it: supersedes, consolidates and derives_from chains, both directions."),
    "link": ("items", "Create the edge SOURCE --KIND--> TARGET (re-linking merges evidence)."),
    "list": ("items", "List items, most recently updated first."),
    "maintain": ("lifecycle", "Run a maintenance stage: light folds usage and feedback; deep also finds duplicates and clusters; rem also proposes patterns, links, retypes, verification upgrades, stale marks and archives."),
    "merge": ("gitcmds", "Read the merge records (.engram/merges.jsonl) of this clone."),
    "merge-driver": ("gitcmds", "Register engram's merge driver in this clone's git config (git never shares it)."),
    "models": ("models", "The sentence encoders' weights: which file a search runs, fetching one, a copy to carry over."),
    "need": ("scopes", "Record a need: something missing that the team should know about."),
    "observe": ("scopes", "Screen something that happened in a session; a reusable decision or lesson becomes a capture proposal (accept it with `engram accept`), never an item directly."),
    "paths": ("search", "Show the domain tree with item counts (what the vault covers, before you search)."),
    "promote": ("scopes", "Promote an item one scope up (private → team → org), or every eligible item."),
    "promotions": ("scopes", "What may move up a scope, what waits for review, which org items need restating."),
    "proposals": ("lifecycle", "List proposals (what maintenance or a disputed lesson would change), highest score first."),
    "purge": ("lifecycle", "Delete a forgotten item for good (to .engram/trash/ on this machine; git history keeps it)."),
    "quarantine": ("trust", "Items the instruction screen holds back from every reader, for a curator to review."),
    "reindex": ("maintenance", "Rebuild the derived index (.engram/index.sqlite) from the files alone."),
    "remote": ("gitcmds", "A vault's git remote: where the team's copy lives."),
    "resolve": ("lifecycle", "Settle two items that contradict each other: --keep new (supersede the old), old (freeze the new), merge (fold the new into the old) or archive (freeze both)."),
    "restore": ("lifecycle", "Bring an item back: a frozen or forgotten one to active, or a deleted (or purged) one from .engram/trash/ with its synapses."),
    "scopes": ("scopes", "Scopes (private, team, org) and capture sources: status, setup, sync."),
    "search": ("search", "Search the vault: ranked, graph-expanded recall with honest abstention."),
    "serve": ("serve", "Run the MCP server: the vault as tools for an AI agent."),
    "skills": ("lifecycle", "List skills by success rate, or with TASK the skills for that task (relevance × success rate), with their steps."),
    "stale": ("lifecycle", "Shared items past their freshness half-life, oldest verified first, with their premises (validWhile)."),
    "synapses": ("items", "List synapses, all of them or those touching REF; with REF, also the wikilinks typed in notes that point from or to it (kind links_to, derived from the text)."),
    "sync": ("gitcmds", "Commit local changes, fetch, merge field by field, push (retrying if a peer was first)."),
    "trash": ("adopt", "What `engram delete` moved aside (kept in .engram/trash/ on this machine)."),
    "unlink": ("items", "Remove the edge SOURCE --KIND--> TARGET."),
    "update": ("items", "Change an item."),
    "verify": ("lifecycle", "Record that an item still holds (lastVerifiedAt, → verified), or with --evidence raise it one step (unverified → plausible → probable → verified)."),
    "viewer": ("viewer", "Browse the vault in a web browser: items, graph, search, conflicts, audit, merges, health."),
}
