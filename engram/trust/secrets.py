"""Secrets and personal data: found before anything reaches a shared (committed) file.

Three kinds of finding, each with a stable ``rule`` (``secret.aws-access-key``,
``personal.email``, ``environment.private-ip``, …):

- ``secret`` — credentials. Provider formats come from the plugins of Yelp's
  ``detect-secrets`` (AWS, Azure storage, GitHub, GitLab, Slack, Stripe, OpenAI, Twilio,
  SendGrid, npm, PyPI, Discord, Telegram, Mailchimp, Square, JWTs, private key blocks,
  passwords in URLs) plus a few it lacks, written as plugins of the same interface
  (:class:`~detect_secrets.plugins.base.RegexBasedDetector`): Anthropic, newer OpenAI
  project and service keys, Google API keys and OAuth client secrets, Azure AD client
  secrets, GitHub fine-grained tokens, Hugging Face tokens. Assignments to key-like names
  (``password: …``, ``DB_PASS=…``, ``"api_key": "…"``) use its keyword plugin, and a
  high-entropy token next to a key-like name (``Authorization: Bearer …``, ``X-Api-Key``)
  counts too. Values are then passed through its false-positive heuristics
  (templates, ``$VARS``, sequential strings, UUIDs, ids) and ours (placeholders such as
  ``<password>``, ``changeme``, ``****``, AWS's documented ``…EXAMPLE`` keys).
- ``personal`` — email addresses (not the reserved example domains, not ``git@`` SSH
  remotes) and phone numbers (Google's ``phonenumbers``; only numbers written with a
  ``+``, brackets or separators, so ids and timestamps do not count).
- ``environment`` — private IP addresses (RFC 1918, CGNAT, IPv6 unique-local; not
  networks written as CIDR) and home folders (``/home/alice``, ``C:\\Users\\alice``; not
  ``/home/ubuntu`` or ``$HOME``).

Why a library and not a list of regular expressions of our own: provider token formats
change (GitHub, GitLab and OpenAI each changed theirs in the last few years) and
``detect-secrets`` is maintained against them and used as a pre-commit hook on a great
many repositories, so its false-positive filters have met far more real code than ours
could. The plugins are called directly (``analyze_string``): no global settings, no
baseline files, and never its network verification.

Nothing here stores or prints a found value: :attr:`Detection.hint` shows at most its
first four characters.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from detect_secrets.plugins.base import BasePlugin

Kind = Literal["secret", "personal", "environment"]
KINDS: tuple[Kind, ...] = ("secret", "personal", "environment")


def _plugins() -> tuple[BasePlugin, ...]:
    """The provider plugins (:mod:`engram.trust.detectors`, imported on first use)."""
    from engram.trust.detectors import plugins

    return plugins()


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


# --------------------------------------------------------------------------- findings


@dataclass(frozen=True, slots=True)
class Detection:
    """One secret or piece of personal data: what it is and where, never the value."""

    kind: Kind
    type: str  # "AWS Access Key", "Email address", …
    rule: str  # "secret.aws-access-key", "personal.email", …
    field: str
    line: int
    start: int  # offsets into the field's text
    end: int
    hint: str  # at most the first four characters, then the length
    digest: str = ""  # a hash of the value: tells findings apart without keeping the value

    def describe(self, body_line: int | None = None) -> str:
        """What was found and where. ``body_line``, when the text is an item's or a
        note's body read from a file, is how many of the file's lines come before the
        body (:func:`engram.store.notes.body_offset`): a finding in the content is then
        named by the line of the *file*, as an editor numbers it ("on line 23"), not by
        the line of the content ("content line 17")."""
        if body_line is not None and self.field == "content":
            return f"{self.type} on line {self.line + body_line} ({self.hint})"
        return f"{self.type} in {self.field} line {self.line} ({self.hint})"


def _hint(value: str) -> str:
    shown = value[:4] if len(value) >= 12 else value[:2]
    return f"{shown}… {len(value)} chars"


#: Values that stand for a secret rather than being one.
_PLACEHOLDER = re.compile(
    r"^(?:<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\(.*\)|%[^%]+%|\*+|x+|\.{3,}|…|#+|-+|_+|"
    r"(?:your|my|the|some|a|an|example|sample|dummy|fake|test|placeholder|redacted|hidden|secret|password|passwd"
    r"|changeme|change-me|change_me|todo|tbd|none|null|nil|empty|required|optional|true|false|yes|no|string|value"
    r"|token|key|apikey|api-key|api_key|pass|pwd|xxx+|foo|bar|baz|foobar|default|undefined|unset|n/a|na|omitted|masked|elided|see|ask|stored|set|env|vault)"
    r"(?:[-_ ]?(?:here|goes|value|password|secret|token|key|api[-_]?key|example|placeholder|\d{0,3}))*)$",
    re.IGNORECASE,
)


def _is_placeholder(value: str) -> bool:
    from engram.trust.detectors import heuristic  # imported on first use (see detectors)

    v = value.strip().strip("'\"`,;")
    return (
        not v
        or bool(_PLACEHOLDER.match(v))
        or "EXAMPLE" in v  # AWS's documented sample keys (AKIAIOSFODNN7EXAMPLE)
        or heuristic.is_templated_secret(v)
        or heuristic.is_prefixed_with_dollar_sign(v)
        or heuristic.is_sequential_string(v)
        or heuristic.is_potential_uuid(v)
    )


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


#: A ULID standing alone: 26 Crockford base32 characters, the first 0–7 (48 bits of time).
_ULID = re.compile(r"(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])")
_CROCKFORD = {ch: value for value, ch in enumerate("0123456789ABCDEFGHJKMNPQRSTVWXYZ")}
#: 2016-01-01 and 2100-01-01 in milliseconds: the time a real ULID carries lies between.
_ULID_TIMES = (1_451_606_400_000, 4_102_444_800_000)


def _id_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds ULIDs (item ids: in links, synapses, wikilinks). Provider
    patterns are not anchored (``detect-secrets``' AWS key id is ``A3T[A-Z0-9]`` or
    ``AKIA``… and 16 more, anywhere), so about one ULID in five thousand holds an "AWS
    key" (fuzz seed 3149: a synapse file of engram's own refused at commit, the clone
    stuck). A key id is 20 characters; a ULID whose first ten encode a plausible time is
    an id, not a credential. Not a ULID: a 26-character token whose time is implausible."""
    spans = []
    for m in _ULID.finditer(text):
        millis = 0
        for ch in m.group()[:10]:
            millis = millis * 32 + _CROCKFORD[ch]
        if _ULID_TIMES[0] <= millis < _ULID_TIMES[1]:
            spans.append(m.span())
    return spans


#: What every provider pattern needs (checked over all of them by tests/trust): a run of
#: 16 token characters (every key, token and signature), or one of a few literals (the
#: URL with a password, a JWT's opening, a Slack token, npm's _authToken, a private key's
#: armour). Prose holds none, so most notes skip the 43 patterns — and the plugins' load.
_TOKEN_RUN = re.compile(r"[\w\-+/=.~\\]{16}")
#: Lower case: the plugins' patterns ignore case (folded as :data:`_FOLD` folds).
_PROVIDER_LITERALS = ("://", "eyj", "xox", "_authtoken", "begin", "putty")


def may_hold_provider_secret(text: str) -> bool:
    """Whether any provider pattern could match ``text`` (see :data:`_TOKEN_RUN`)."""
    if _TOKEN_RUN.search(text) is not None:
        return True
    folded = text.translate(_FOLD).lower()
    return any(lit in folded for lit in _PROVIDER_LITERALS)


def _provider_secrets(text: str) -> Iterator[tuple[str, str, int, int]]:
    """(type, value, start, end) from the provider plugins' patterns.

    A pattern's capture group is the secret when it is the substantial part (the
    password of ``scheme://user:password@host``); a short group is only a prefix
    (``ghp`` of a GitHub token), so then the whole match is. A match inside an item id
    is none (:func:`_id_spans`).
    """
    if not may_hold_provider_secret(text):
        return
    ids = _id_spans(text)
    for plugin in _plugins():
        for regex in getattr(plugin, "denylist", ()):
            for m in regex.finditer(text):
                start, end = m.span()
                groups = [i for i in range(1, (m.lastindex or 0) + 1) if m.group(i)]
                if groups:
                    best = max(groups, key=lambda i: len(m.group(i)))
                    if len(m.group(best)) >= 8:
                        start, end = m.span(best)
                value = text[start:end]
                if any(a <= start and end <= b for a, b in ids):
                    continue
                if value and not _is_placeholder(value):
                    yield plugin.secret_type, value, start, end


#: A line that may assign a secret: a key-like name (detect-secrets' list, and more).
_KEYLIKE = re.compile(
    r"(?i)pass|pwd|secret|api_?key|apikey|auth|token|credential|private_?key|priv_?key|access_?key|client_?key"
    r"|contrase|bearer|signature|x-api-key|session_?id|cookie"
)
#: Words one of which every match of _KEYLIKE holds, in text folded the way its ``(?i)``
#: folds (the four letters outside ASCII that it equates with ASCII ones, then lower
#: case): a plain substring test rules out most lines twenty times faster than the regex.
_KEYLIKE_ANCHORS = ("pass", "pwd", "secret", "key", "auth", "token", "credential", "contrase", "bearer",
                    "signature", "session", "cookie")
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_PASSWORDISH = re.compile(r"(?i)pass|pwd|contrase")


def _keylike_lines(text: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of each line of ``text`` that names a key-like thing (_KEYLIKE)."""
    folded = text.translate(_FOLD).lower()
    if not any(anchor in folded for anchor in _KEYLIKE_ANCHORS):
        return
    offset = 0
    for line, low in zip(text.split("\n"), folded.split("\n"), strict=True):
        if any(anchor in low for anchor in _KEYLIKE_ANCHORS) and _KEYLIKE.search(line):
            yield offset, line
        offset += len(line) + 1
_BEARER = re.compile(
    r"(?i)(?:\b(?:bearer|token|basic)\s+|\b(?:x-)?(?:api[-_]?key|auth[-_]?token|access[-_]?token|secret|token"
    r"|authorization|private[-_]?token|session|cookie)\s*[:=]\s*[\"']?)([A-Za-z0-9+/_\-.=~]{16,})"
)


def _credential_like(value: str, name_is_password: bool) -> bool:
    """Whether an assigned value looks like a real credential rather than prose."""
    from engram.trust.detectors import heuristic

    v = value.strip().strip("'\"`,;")
    if len(v) < 4 or re.search(r"\s", v) or _is_placeholder(v) or heuristic.is_not_alphanumeric_string(v):
        return False
    classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    if name_is_password:
        return (len(v) >= 6 and classes >= 2) or len(v) >= 12
    return len(v) >= 12 and classes >= 2 and _entropy(v) >= 3.0


def _keyword_secrets(text: str) -> Iterator[tuple[str, str, int, int]]:
    """Assignments to key-like names and high-entropy tokens next to them."""
    lines = list(_keylike_lines(text))
    if not lines:  # most text: no key-like name, and detect-secrets is not even imported
        return
    from engram.trust.detectors import heuristic, keyword

    detector = keyword.KeywordDetector()
    for offset, line in lines:
        found: dict[str, str] = {}
        for regexes in (keyword.CONFIG_DENYLIST_REGEX_TO_GROUP, keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP):
            for value in detector.analyze_string(line, denylist_regex_to_group=regexes):
                value = value.strip().strip("'\"`,;")
                if value and not heuristic.is_indirect_reference(line) and not heuristic.is_likely_id_string(value, line):
                    found.setdefault(value, "Secret Keyword")
        for m in _BEARER.finditer(line):
            token = m.group(1).rstrip(".")
            if _entropy(token) >= 3.5 and re.search(r"\d", token) and re.search(r"[A-Za-z]", token):
                found.setdefault(token, "High Entropy Token")
        password_line = bool(_PASSWORDISH.search(line))
        for value, kind in found.items():
            if kind == "Secret Keyword" and not _credential_like(value, password_line):
                continue
            if _is_placeholder(value):
                continue
            start = line.find(value)
            if start >= 0:
                yield ("Password" if password_line and kind == "Secret Keyword" else kind), value, offset + start, offset + start + len(value)


# --------------------------------------------------------------------------- personal data

_EMAIL = re.compile(r"(?<![\w.+\-/])[A-Za-z0-9._%+\-]+@(?:[A-Za-z0-9\-]+\.)+[A-Za-z]{2,24}(?![\w\-])")
_RESERVED_DOMAIN = re.compile(
    r"(?:^|\.)(?:example\.(?:com|net|org)|example|test|invalid|localhost|local|internal)$|users\.noreply\.github\.com$",
    re.IGNORECASE,
)
#: Mailboxes of a role or a machine, not of a person.
_ROLE_LOCAL = frozenset(
    {"git", "noreply", "no-reply", "donotreply", "do-not-reply", "mailer-daemon", "postmaster", "support", "help",
     "info", "hello", "contact", "sales", "security", "team", "admin", "press", "jobs", "careers", "billing", "abuse",
     "privacy", "legal", "ops", "oncall", "on-call", "devops", "sre", "it", "helpdesk", "service", "feedback",
     "webmaster", "hostmaster", "root", "notifications", "alerts", "bounce", "bounces", "news", "newsletter"}
)
_IPV4 = re.compile(r"(?<![\w.])(?<!v)((?:\d{1,3}\.){3}\d{1,3})(?![\w.]|/\d)")
_IPV6_ULA = re.compile(r"(?<![\w:])(f[cd][0-9a-f]{2}:[0-9a-f:]{2,})(?![\w:]|/\d)", re.IGNORECASE)
_PRIVATE_NETS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
)
_HOME = re.compile(r"(?:(?<![\w/])/home/|(?<![\w/])/Users/|\b[A-Za-z]:[\\/]+Users[\\/]+)([A-Za-z0-9][A-Za-z0-9._\-]{1,31})")
#: Account names in home paths that are not a person's.
_GENERIC_ACCOUNTS = frozenset(
    {"user", "users", "username", "you", "me", "your", "yourname", "your-name", "your_name", "name", "someone", "ubuntu",
     "ec2-user", "admin", "administrator", "root", "runner", "vagrant", "jenkins", "circleci", "node", "app", "www-data",
     "deploy", "git", "docker", "default", "public", "shared", "guest", "example", "alice", "bob", "linuxbrew",
     "postgres", "ci", "build", "travis", "gitlab-runner", "codespace", "vscode", "coder", "dev", "developer"}
)
_PHONE_HINT = re.compile(r"\+?\(?\d[\d\s().\-]{6,}\d")
#: Ten digits with only the characters of :data:`_PHONE_SHAPE` between them. A number
#: :func:`_phones` reports is written in those characters and holds ten digits unless it
#: starts with ``+``, so a text with neither cannot yield one: the matcher (most of the
#: cost of a scan of notes full of dates and times) is not run over it.
_TEN_DIGITS = re.compile(r"\d(?:[\s().\-]*\d){9}")
#: How people write phone numbers: digits, spaces, dots, dashes, brackets, a leading +.
_PHONE_SHAPE = re.compile(r"^\+?[\d\s().\-]+$")


#: What a match of each of these patterns holds, found far faster than the pattern (whose
#: leading look-behinds the regex engine tries at every position): a text without it is
#: not scanned. tests/trust holds every match to its hint.
_IPV4_HINT = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")


def _emails(text: str) -> Iterator[tuple[str, str, int, int]]:
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        local, _, domain = m.group(0).rpartition("@")
        if _RESERVED_DOMAIN.search(domain) or local.lower() in _ROLE_LOCAL:
            continue
        token_start = max(text.rfind(c, 0, m.start()) for c in " \t\n\"'(<") + 1
        if "://" in text[token_start:m.start()]:
            continue  # the user:password@host part of a URL, not an address
        yield "Email address", m.group(0), m.start(), m.end()


def _phones(text: str, region: str) -> Iterator[tuple[str, str, int, int]]:
    if not _PHONE_HINT.search(text) or ("+" not in text and not _TEN_DIGITS.search(text)):
        return
    import phonenumbers

    for match in phonenumbers.PhoneNumberMatcher(text, region or None, leniency=phonenumbers.Leniency.VALID):
        raw = match.raw_string
        digits = sum(ch.isdigit() for ch in raw)
        if not _PHONE_SHAPE.match(raw) or (not raw.startswith("+") and digits < 10):
            continue  # citations ("210, 307-357"), ids and dates are not written like phone numbers
        if raw.startswith("+") or "(" in raw or re.search(r"\d[\s.\-]\d", raw):
            yield "Phone number", raw, match.start, match.end


_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver\.?|release|build|v)\s*$")


def _private_ips(text: str) -> Iterator[tuple[str, str, int, int]]:
    hinted = [p for p, hint in ((_IPV4, _IPV4_HINT.search(text)), (_IPV6_ULA, ":" in text)) if hint]
    for pattern in hinted:
        for m in pattern.finditer(text):
            if _VERSION_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
                continue
            try:
                address = ipaddress.ip_address(m.group(1))
            except ValueError:
                continue
            if any(address in net for net in _PRIVATE_NETS if net.version == address.version):
                yield "Private IP address", m.group(1), m.start(1), m.end(1)


def _home_paths(text: str) -> Iterator[tuple[str, str, int, int]]:
    if "/home/" not in text and "Users" not in text:
        return
    for m in _HOME.finditer(text):
        name = m.group(1)
        if name.lower() in _GENERIC_ACCOUNTS or name.startswith(("$", "%", "<", "{")):
            continue
        yield "Home folder path", m.group(0), m.start(), m.end()


_RULE_KIND: dict[str, Kind] = {"Email address": "personal", "Phone number": "personal",
                               "Private IP address": "environment", "Home folder path": "environment"}


# --------------------------------------------------------------------------- scanning


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """What to look for: the kinds, the phone region, and values never to report."""

    kinds: frozenset[Kind] = frozenset(KINDS)
    phone_region: str = "US"
    allow: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, *, kinds: Iterable[Kind] = KINDS, phone_region: str = "US", allow: Iterable[str] = ()) -> ScanOptions:
        return cls(frozenset(kinds), phone_region, tuple(re.compile(a) for a in allow))


DEFAULT_OPTIONS = ScanOptions()


def scan_text(text: str, field: str = "content", options: ScanOptions = DEFAULT_OPTIONS) -> list[Detection]:
    """Every secret and piece of personal data in one field's text, in order."""
    if not text:
        return []
    raw: list[tuple[str, str, int, int]] = []
    if "secret" in options.kinds:
        raw += _provider_secrets(text)
        raw += _keyword_secrets(text)
    if "personal" in options.kinds:
        raw += _emails(text)
        raw += _phones(text, options.phone_region)
    if "environment" in options.kinds:
        raw += _private_ips(text)
        raw += _home_paths(text)
    found: list[Detection] = []
    taken: list[tuple[int, int]] = []
    for kind_name, value, start, end in sorted(raw, key=lambda r: (r[2], -(r[3] - r[2]))):
        if any(s <= start and end <= e for s, e in taken):
            continue  # inside a longer finding (a key inside a URL already reported)
        if any(p.search(value) for p in options.allow):
            continue
        kind = _RULE_KIND.get(kind_name, "secret")
        found.append(
            Detection(
                kind, kind_name, f"{kind}.{_slug(kind_name)}", field, _line_of(text, start), start, end, _hint(value),
                hashlib.sha256(value.encode()).hexdigest()[:16],
            )
        )
        taken.append((start, end))
    return found


def scan_fields(fields: Mapping[str, str], options: ScanOptions = DEFAULT_OPTIONS) -> list[Detection]:
    """Scan several named fields as one write: one pass over them joined by blank lines,
    each detection then named by its field, with offsets and line inside that field."""
    parts = [(name, text) for name, text in fields.items() if text]
    if len(parts) <= 1:
        return [d for name, text in parts for d in scan_text(text, name, options)]
    spans: list[tuple[int, int, str]] = []
    offset = 0
    for name, text in parts:
        spans.append((offset, offset + len(text), name))
        offset += len(text) + 2
    joined = "\n\n".join(text for _, text in parts)
    out: list[Detection] = []
    for d in scan_text(joined, "", options):
        for start, end, name in spans:
            if start <= d.start < end:
                if d.end > end:
                    break  # straddles two fields: an artefact of joining them, not a finding
                local = d.end - start
                out.append(replace(d, field=name, start=d.start - start, end=local,
                                   line=_line_of(joined[start:end], d.start - start)))
                break
    return out


def redact(text: str, detections: Iterable[Detection]) -> str:
    """``text`` with each detection replaced by ``[redacted: <type>]``."""
    out = text
    for d in sorted(detections, key=lambda d: -d.start):
        out = out[: d.start] + f"[redacted: {d.type.lower()}]" + out[d.end:]
    return out


def field_texts(value: Any, prefix: str) -> dict[str, str]:
    """Every string inside a nested value (extra keys, ``source``), named by its path."""
    out: dict[str, str] = {}

    def walk(node: Any, path: str, depth: int) -> None:
        if depth > 32:
            return
        if isinstance(node, str):
            out[path] = node
        elif isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, f"{path}.{k}", depth + 1)
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]", depth + 1)

    walk(value, prefix, 0)
    return out
