"""Talking to the remote for ``engram sync``: fetch, push, and telling a race from a rule.

Every answer git gives is sorted into one of five kinds:

- ``ok``;
- ``race`` — someone else is updating the ref at the same moment. For a push: the
  remote has commits we lack (``[rejected] (fetch first)`` / ``(non-fast-forward)``), or
  another push holds the ref's lock (``[remote rejected] (failed to update ref)``,
  ``cannot lock ref``, ``failed to lock``, ``incorrect old value``). For a fetch: a ref
  lock in this clone held for a moment by a person's own git. Sync answers a race by
  fetching, merging and trying again after a jittered backoff (:func:`backoff`);
- ``refused`` — the remote's rules said no (a protected branch, a ``pre-receive`` or
  ``update`` hook, a quota): retrying cannot help, so sync stops and quotes the
  remote's own words (its ``remote:`` lines);
- ``misconfigured`` — the remote answered, and what it said needs a person: the URL
  leads to no repository, or access was refused. Waiting cannot fix it, so sync fails
  (exit 8) instead of reporting "offline" and exiting 0 for ever — a clone with a
  typo in its URL must not look as if it were syncing. The local commits stay;
- ``unreachable`` — no answer (no network, a host that is down): the local commits
  stay for the next sync.

The detail quotes the line of git's answer that names the trouble (:func:`explain`:
not the generic "Could not read from remote repository…" git closes with), and, for a
misconfigured remote, what to fix.

A branch that does not exist on the remote yet is ``missing`` for a fetch (the first
push creates it).

A refused push can go for review instead (:func:`push_for_review`, ``sync.onRefused:
review``, the default): to ``refs/for/<branch>`` when the remote is Gerrit (its refusal
names itself, and Gerrit turns a push there into a change to review), else to this
clone's own review branch ``review/<actor>/<branch>``, forced (only this clone writes
it, and it always holds the clone's whole history), for a maintainer to merge.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from engram.team.gitstore import GitRepo

#: What git or the remote says when another writer holds the ref (a race, not a rule).
_RACE = (
    "fetch first", "non-fast-forward", "failed to update ref", "cannot lock ref", "failed to lock",
    "incorrect old value", "unable to create", "stale info", "reference already exists",
)


#: git's generic closing lines after a failed fetch or push: they never say what is wrong.
_BOILERPLATE = (
    "could not read from remote repository", "please make sure you have the correct access rights",
    "and the repository exists",
)
#: git's (or a host's) words for a URL that leads to no repository.
_NO_REPOSITORY = re.compile(r"does not appear to be a git repository|repository (?:'[^']*' )?not found")
#: ... and for access refused, or credentials git could not ask for.
_NO_ACCESS = re.compile(r"permission denied|authentication failed|could not read (?:username|password)|access denied")


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer from the remote: its kind (see the module docstring) and the words."""

    kind: str  # ok | missing | race | refused | misconfigured | unreachable
    detail: str = ""
    said: tuple[str, ...] = ()  # the remote's own lines (``remote: …``)


def fetch(repo: GitRepo, remote: str, branch: str, env: dict[str, str]) -> Answer:
    out = repo.run(
        "fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}",
        check=False, env=env,
    )
    if out.status == 0:
        return Answer("ok")
    text = out.text.lower()
    if "couldn't find remote ref" in text:
        return Answer("missing")
    if _misconfigured(text):  # before the race test: the URL may hold ".lock"
        return Answer("misconfigured", explain(remote, "fetch from", out.text))
    if "cannot lock ref" in text or ".lock" in text:
        return Answer("race", out.text.splitlines()[-1])
    return Answer("unreachable", explain(remote, "fetch from", out.text))


def push(repo: GitRepo, remote: str, branch: str) -> Answer:
    out = repo.run("push", "--porcelain", remote, f"HEAD:refs/heads/{branch}", check=False)
    if out.status == 0:
        return Answer("ok")
    said, reason = _said(out.err), _rejection(out.out)
    words = f"{reason} {' '.join(said)}".lower()
    why = _bare(reason)
    if "[rejected]" in reason or (reason and any(mark in words for mark in _RACE)):
        return Answer("race", why, said)
    if "[remote rejected]" in reason:
        return Answer("refused", why, said)
    kind = "misconfigured" if _misconfigured(out.text.lower()) else "unreachable"
    return Answer(kind, explain(remote, "push to", out.text), said)


def _said(err: str) -> tuple[str, ...]:
    """The remote's own lines (``remote: …``) in git's stderr."""
    return tuple(
        line.removeprefix("remote:").strip()
        for line in err.splitlines()
        if line.startswith("remote:") and line.removeprefix("remote:").strip()
    )


def _rejection(porcelain: str) -> str:
    """The reason of the rejected ref in ``git push --porcelain``'s output ('' if none)."""
    status = next((line for line in porcelain.splitlines() if line.startswith("!")), "")
    return status.split("\t")[-1].strip() if status else ""


def _bare(reason: str) -> str:
    """``[remote rejected] (pre-receive hook declined)`` → ``pre-receive hook declined``."""
    return reason.replace("[remote rejected]", "").replace("[rejected]", "").strip().strip("()")


def review_ref(answer: Answer, branch: str, actor: str) -> str:
    """Where a refused push of ``branch`` goes for review (see the module docstring)."""
    if "gerrit" in f"{answer.detail} {' '.join(answer.said)}".lower():
        return f"refs/for/{branch}"
    who = re.sub(r"[^A-Za-z0-9_-]+", "-", actor).strip("-") or "engram"  # a valid ref name, whatever the id
    return f"refs/heads/review/{who}/{branch}"


def push_for_review(repo: GitRepo, remote: str, ref: str) -> Answer:
    """Push HEAD to the review ref ``ref``: ``ok``, ``refused`` (with the remote's words),
    or, as for :func:`push`, ``misconfigured`` / ``unreachable``."""
    force = "" if ref.startswith("refs/for/") else "+"
    out = repo.run("push", "--porcelain", remote, f"{force}HEAD:{ref}", check=False)
    if out.status == 0:
        return Answer("ok")
    said, reason = _said(out.err), _rejection(out.out)
    if reason:
        return Answer("refused", _bare(reason), said)
    kind = "misconfigured" if _misconfigured(out.text.lower()) else "unreachable"
    return Answer(kind, explain(remote, "push to", out.text), said)


def _misconfigured(lowered: str) -> bool:
    return bool(_NO_REPOSITORY.search(lowered) or _NO_ACCESS.search(lowered))


def explain(remote: str, verb: str, text: str) -> str:
    """``cannot <verb> <remote>: <git's line>``, and what to fix when that says the URL
    leads to no repository or access was refused (a network that is down needs only a
    later sync). git's line is its first ``fatal:``/``error:`` line that is not its
    generic closing (:data:`_BOILERPLATE`), else its first other line (ssh's own, say)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not any(words in line.lower() for words in _BOILERPLATE)]
    fatal = [line for line in lines if line.lower().startswith(("fatal:", "error:"))]
    line = (fatal or lines or ["no answer"])[0]
    line = line.split(":", 1)[1].strip() if fatal else line
    said = f"cannot {verb} {remote}: {line.rstrip('.')}"
    lowered = text.lower()
    if _NO_REPOSITORY.search(lowered):
        return (
            f"{said} — {remote}'s path does not exist or is not a git repository; fix it with"
            f" `git remote set-url {remote} URL` (or `git remote remove {remote}`, then `engram remote add URL`)"
        )
    if _NO_ACCESS.search(lowered):
        return f"{said} — access was refused; check the key or token git uses for {remote}, and its URL (`git remote -v`)"
    return said


def backoff(attempt: int, *, base: float = 0.1, cap: float = 2.0) -> float:
    """Seconds to wait before attempt ``attempt + 1``: "full jitter" exponential backoff,
    so clones that lost the same race do not all come back at the same instant."""
    return random.uniform(0.0, min(cap, base * 2 ** max(0, attempt - 1)))  # noqa: S311 - jitter, not a secret
