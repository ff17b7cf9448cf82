"""The one error tree of engram.

Every failure a caller can act on is an :class:`EngramError`. Subclasses carry the facts
(path, id, expected and actual version) as attributes, and every message ends with what
to do next. Third-party exceptions (``sqlite3``, ``yaml`` via the codec, git's exit codes) are
translated into this tree once, in the module that uses the library, and chained with
``raise ... from``. Adapters render errors in one place each: the CLI turns
``exit_code`` into the process status, the MCP server into a tool error.

::

    EngramError                      exit 1
     ├── InvalidInput                exit 2   bad argument or field value
     │    ├── UnknownKind                     a kind that is not one of the known kinds
     │    ├── SensitiveData                   a secret or personal data bound for a shared path
     │    ├── InstructionShaped               text the screen flags where it cannot be quarantined
     │    ├── NotGeneral                      a body bound for org that names one project's things
     │    └── NotEligible                     a promotion the item has not earned (yet)
     ├── NotFound                    exit 3   no item, synapse or vault where named
     │    └── VaultNotFound
     ├── Conflict                    exit 4   the vault changed under the caller
     │    ├── VersionConflict                 update with a stale expected version
     │    ├── AlreadyExists
     │    └── NotAdopted                      a write into a person's note they have not adopted
     ├── FormatError                 exit 5   a file that is not valid engram format
     │    ├── UnsafeFile                      not a regular file inside the vault (a symlink…)
     │    ├── FileTooLarge                    above a read limit; refused before parsing
     │    └── BinaryFile                      NUL bytes: not a text file
     ├── Busy                        exit 6   the vault lock could not be taken in time
     ├── StorageError                exit 7   the derived index or the file system failed
     ├── GitError                    exit 8   a git operation failed
     ├── Forbidden                   exit 9   the actor's role does not allow the operation
     └── ModelUnavailable            exit 11  the sentence encoder cannot run on this machine
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.trust.secrets import Detection


class EngramError(Exception):
    """Base of every engram error. ``str(err)`` is a message for a person."""

    exit_code = 1
    #: A short machine-readable code, stable across releases (used in ``--json`` output).
    code = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message} {hint}" if hint else message)


class InvalidInput(EngramError):
    """An argument or a field value is not acceptable; nothing was changed."""

    exit_code = 2
    code = "invalid_input"

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None):
        self.field = field
        super().__init__(message, hint=hint)


class UnknownKind(InvalidInput):
    """A kind that is not one of the known engram or synapse kinds."""

    code = "unknown_kind"

    def __init__(self, kind: str, known: Sequence[str], what: str = "kind"):
        self.kind = kind
        self.known = tuple(known)
        super().__init__(
            f"unknown {what} {kind!r}.",
            field=what,
            hint=f"Use one of: {', '.join(known)}.",
        )


class NotFound(EngramError):
    """Nothing matches the given reference."""

    exit_code = 3
    code = "not_found"

    def __init__(self, message: str, *, ref: str | None = None, hint: str | None = None):
        self.ref = ref
        super().__init__(message, hint=hint)


class VaultNotFound(NotFound):
    code = "vault_not_found"


class Conflict(EngramError):
    """The vault is not in the state the caller assumed."""

    exit_code = 4
    code = "conflict"


class VersionConflict(Conflict):
    """``update`` was given a version that is no longer current."""

    code = "version_conflict"

    def __init__(self, item_id: str, expected: int, actual: int, changes: str, path: str):
        self.item_id = item_id
        self.expected = expected
        self.actual = actual
        self.path = path
        super().__init__(
            f"item {item_id} is at version {actual}, not {expected}: {changes}.",
            hint=f"Re-read it (engram get {item_id}), re-apply your edit and pass "
            f"version {actual}.",
        )


class AlreadyExists(Conflict):
    code = "already_exists"


class NotAdopted(Conflict):
    """A write would change a note a person wrote and has not adopted (``engram adopt``).

    Such a note changes only when its owner asks; what engram records about it (counters,
    typed links) is kept beside it. Nothing was changed.
    """

    code = "not_adopted"

    def __init__(self, path: str, what: str = "engram writes into it only when you ask", *, hint: str | None = None):
        self.path = path
        super().__init__(
            f"{path} is a note you wrote and have not adopted: {what}.",
            hint=hint or f"Adopt it first (`engram adopt {path}`), or change it yourself.",
        )


class FormatError(EngramError):
    """A file is not valid engram format; it is left untouched."""

    exit_code = 5
    code = "format_error"

    hint_text = "Fix the file by hand (or restore it with git), then run `engram doctor`."

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}.", hint=self.hint_text)


class UnsafeFile(FormatError):
    """A symlink, device, FIFO or folder where engram expects a file: never followed or read."""

    code = "unsafe_file"
    hint_text = (
        "engram reads only regular files inside the vault: replace the link with the file "
        "itself, or remove it, then run `engram doctor`."
    )


class FileTooLarge(FormatError):
    """A file above engram's read limits; refused before it is parsed."""

    code = "file_too_large"


class BinaryFile(FormatError):
    """A file with NUL bytes where engram expects text."""

    code = "binary_file"
    hint_text = "Restore the text with git (`git log -p -- FILE`), or move the file out of the vault."


class Busy(EngramError):
    """Another process held the vault's write lock for too long."""

    exit_code = 6
    code = "busy"


class StorageError(EngramError):
    """The file system or the derived index failed underneath an operation."""

    exit_code = 7
    code = "storage_error"


class GitError(EngramError):
    """A git operation failed; the repository was left in a clean state."""

    exit_code = 8
    code = "git_error"


class ModelUnavailable(EngramError):
    """The sentence encoder (:mod:`engram.recall.encoder`) cannot run here: its weights
    are missing, changed or corrupt, or its runtime will not import. Search still
    answers by words; only the commands that need the model fail with it."""

    exit_code = 11
    code = "model_unavailable"


class SensitiveData(InvalidInput):
    """A write would put a secret or personal data into a shared (committed) file.

    ``findings`` lists what was found and where (``"AWS Access Key in content line 3
    (AKIA… 20 chars)"``), the line counted in the text that was to be written;
    ``detections`` holds the same findings as values, so a caller that knows the file
    the text came from can name the file's line instead
    (:meth:`engram.trust.secrets.Detection.describe`). The secret itself is never
    repeated in the message.
    """

    code = "sensitive_data"

    def __init__(
        self, message: str, *, findings: Sequence[str], rule: str, hint: str | None = None,
        detections: Sequence[Detection] = (),
    ):
        self.findings = tuple(findings)
        self.rule = rule
        self.detections = tuple(detections)
        super().__init__(message, field="content", hint=hint)


class InstructionShaped(InvalidInput):
    """Instruction-shaped text where nothing can be quarantined (a synapse's evidence).

    Items are quarantined instead of refused; this is for the few texts that are not items.
    """

    code = "instruction_shaped"

    def __init__(self, message: str, *, field: str, rule: str, hint: str | None = None):
        self.rule = rule
        super().__init__(message, field=field, hint=hint)


class NotGeneral(InvalidInput):
    """A body bound for the org vault names its own project, a file, a test, a ticket or a
    decision id (:mod:`engram.scopes.gate`). ``tells`` says what was found;
    ``suggestion`` is a general restatement to start from. Nothing was changed."""

    code = "not_general"

    def __init__(self, message: str, *, tells: Sequence[str], suggestion: str, hint: str | None = None):
        self.tells = tuple(tells)
        self.suggestion = suggestion
        #: The rule the audit log records for the refusal.
        self.rule = "scope.not-general"
        super().__init__(message, field="org_content", hint=hint)


class NotEligible(InvalidInput):
    """A promotion the item has not earned: ``needs`` lists what is missing; ``rule``
    (``scope.not-eligible``, or ``scope.needs-endorsement`` at org) is what the audit
    log records."""

    code = "not_eligible"

    def __init__(self, message: str, *, needs: Sequence[str], rule: str = "scope.not-eligible",
                 hint: str | None = None):
        self.needs = tuple(needs)
        self.rule = rule
        super().__init__(message, hint=hint)


class Forbidden(EngramError):
    """The actor's role (``roles`` in ``engram.yaml``) does not allow this operation.

    ``rule`` names the rule that refused it (``role.reader-writes``,
    ``role.others-item``, ``role.curator-only``); nothing was changed.
    """

    exit_code = 9
    code = "forbidden"

    def __init__(self, message: str, *, actor: str, role: str, rule: str, hint: str | None = None):
        self.actor = actor
        self.role = role
        self.rule = rule
        super().__init__(message, hint=hint)
