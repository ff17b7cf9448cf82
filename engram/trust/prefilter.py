"""Cheap tests that keep the screen's patterns off text they cannot match.

- :data:`GATES` — for each rule, substrings its pattern cannot match without; a rule whose
  gate fails is not run. ``tests/trust`` checks on the red-team sets and real notes that
  a gate never hides a match.
- :func:`foreign` — whether a text may be in a language other than English; the rules for
  other languages run only then (their patterns cannot start from a rare word).
- :func:`quoted_mention` — whether a match sits inside a quotation that a word such as
  "like" or "the line" introduces: a note quoting an attack rather than making one.
"""

from __future__ import annotations

import re

#: Letters of scripts beyond basic Latin: accented Latin, Cyrillic, kana, CJK, Hangul.
_FOREIGN_LETTER = re.compile("[\u00c0-\u024f\u0400-\u04ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
#: Short words of German, French, Spanish, Portuguese and Italian that a sentence in one
#: of them written without accents almost always holds.
_FOREIGN_WORDS = (" el ", " los ", " las ", " que ", " del ", " por ", " para ", " les ", " des ", " une ", " pour ",
                  " der ", " die ", " das ", " und ", " nicht ", " ist ", " il ", " che ", " di ", " os ", " em ",
                  " de ", " du ", " et ", " la ", " le ", " ne ", " un ", " una ", " se ", " sempre ", " wenn ")


_FOREIGN_WORD = re.compile(" (?:" + "|".join(w.strip() for w in _FOREIGN_WORDS) + ") ")


def foreign(text: str) -> bool:
    """Whether ``text`` (a plain view) may hold words of a language other than English."""
    return _FOREIGN_LETTER.search(text) is not None or _FOREIGN_WORD.search(text) is not None


_ROLE_WORDS = ("system", "assistant", "developer", "admin", "operator", "root", "human", "ai", "model",
               "instruction", "prompt", "sys", "important")
_AI_WORDS = ("ai", "a.i.", "intelligence", "llm", "language model", "assistant", "bot", "gpt", "claude",
             "gemini", "copilot", "llama", "mistral", "agent", "model")
#: The gate of each rule (see :attr:`Rule.gate`). ``tests/trust`` checks on every case of
#: the red-team suite and on real notes that a gate never hides a match of its rule.
GATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "chat-template-token": (("<|", "[inst", "[/inst", "<<sys", "<</sys", "_of_turn", "[system", "[/system"),),
    "override-instructions": (("ignor", "disregard", "forget", "overrid", "overrul", "bypass", "discard", "abandon",
                               "neglect", "skip", "drop", "nullif", "cancel", "void", "set aside", "throw out",
                               "pay no attention", "follow"),),
    "override-everything": (("ignore", "disregard", "forget"),),
    "forget-everything": (("forget", "disregard"),),
    "instructions-void": (("instruction", "prompt", "rules", "guidelines", "directive", "restrictions", "filters",
                           "policies", "guardrails", "constraints", "limits"),),
    "new-instructions": (("instruction", "prompt", "directive", "orders", "commands", "rules"),),
    "your-instructions": (("your",),),
    "your-new-task": (("your",),),
    "want-you-to-act": (("you",),),
    "persona-now": (("you",),),
    "persona-ai": (("you",),),
    "persona-act-as": (("act", "behave", "respond", "answer", "operate", "function", "pretend", "roleplay",
                        "role-play"),),
    "pretend": (("pretend", "imagine", "roleplay", "role-play", "act as"),),
    "jailbreak": (("jailbr", "anything now", "mode", "safety", "ethical", "content", "moderation"),),
    "response-control": (("respon", "repl", "answer", "output", "say", "print", "return", "write", "summar",
                          "message"),),
    "special-mode": (("mode",), ("developer", "god", "sudo", "admin")),
    "unconditional-compliance": (("refus", "restriction", "limitation", "censor", "filtering"),),
    "role-prefix": (_ROLE_WORDS,),
    "role-prefix-directive": (_ROLE_WORDS,),
    "ai-address-multilingual": (("hinweis", "nachricht", "notiz", "anweisung", "mitteilung", "achtung", "note",
                                 "message", "consigne", "instruction", "avis", "remarque", "nota", "mensa", "messaggio",
                                 "instrucci", "instruç", "aviso", "avviso", "assistent", "asistente", "ассистент", "ии",
                                 "致", "给", "对", "アシスタント", "エージェント", "для", "к", "вниманию"),),
    "suppress-multilingual": (("erwähn", "jamais", "pas", "rien", "sans", "sin", "no", "nunca", "sem", "não", "senza",
                               "mai", "不要", "不得", "しない", "ないで", "не"),),
    "exclusive-multilingual": (("empf", "recommand", "recomiend", "recomend", "raccomand", "推荐", "推奨", "勧め",
                                "おすすめ", "рекоменд"),),
    "ask-trigger-multilingual": (("fragt", "wissen will", "demande", "interroge", "pose", "pregunt", "pergunt", "pida", "consulte",
                                  "chied", "domanda", "问", "提到", "尋ね", "聞かれ", "質問", "спрос", "попросит"),),
    "override-multilingual": (("ignor", "vergiss", "oubli", "olvida", "negeer", "игнор", "забуд", "忽略", "無視",
                               "무시"),),
    "fence-closing-tag": (("</", "< /"),),
    "fence-opening-tag": (("<",),),
    "fence-role-tag": (("<",),),
    "fence-end-marker": (("end", "clos", "stop", "finish", "terminat", "exit"),),
    "fence-end-context": (("end", "clos", "stop"),),
    "fence-begin-marker": (("begin", "start", "opening"),),
    "fence-json-role": (("role", "system", "instructions"),),
    "retrieval-trigger": (("you", "ai", "assistant", "agent", "model", "llm", "reader"),
                          ("this", "me", "these", "the following")),
    "upon-retrieval": (("upon", "whoever", "anyone", "any ", "every ", "all ", "if this"),
                       ("this", "me", "these", "the following")),
    "ai-address": ((*_AI_WORDS, "ranker", "retriever", "classifier", "dedup", "judge", "grader", "evaluator",
                    "scorer", "summari", "indexer", "learn step"),),
    "ai-vocative": (_AI_WORDS,),
    "comment-vocative": (("<!--", "[//]", "[comment]"),),
    "claimed-authority": (("authori", "allowed", "permitted", "approved", "granted", "cleared", "instructed", "asked",
                           "without", "wants", "would like", "prefers", "expects", "needs", "requires", "skip"),),
    "permission-grant": (("authori", "allowed", "permitted", "granted"),),
    "self-escalation": (("itself", "yourself", "themselves", "your own", "its own", "their own"),),
    "agent-directive": (("ai", "llm", "model", "agent", "assistant", "bot", "copilot"),
                        ("should", "must", "shall", "are to", "is to", "need", "have to", "has to")),
    "ask-trigger": (("ask", "enquir", "inquir"),
                    ("say", "answer", "respond", "reply", "claim", "state", "insist", "assert", "tell", "explain",
                     "pretend")),
    "suppress-mention": (("mention", "bring up", "bringing up", "acknowledg", "cite", "citing", "refer to", "referring to",
                          "disclos"),
                         ("never", "not", "n't", "without")),
    "exclusive-recommend": (("recommend", "suggest", "alternative", "competitor"),),
    "from-now-on": (("now on", "point on", "point forward", "hence"),),
    "from-now-on-multilingual": (("sofort", "nun an", "ab jetzt", "partir de", "sormais", "dorénavant", "ahora",
                                  "in poi", "in avanti", "agora", "daqui", "现在", "今后", "今後", "これから", "отныне",
                                  "момента", "впредь", "сегодняшнего"),),
    "persistent": (("session", "conversation", "permanent", "forever"),),
    "bypass-controls": (("bypass", "circumvent", "disable", "turn off", "skip"),),
    "secret-dump": (("environment", "env", "secret", "credential", "key", "token", "password"),
                    ("print", "dump", "list", "output", "echo", "show", "display", "reveal", "paste", "copy", "collect",
                     "gather")),
    "demote-others": (("other",), ("outdated", "unreliable", "stale", "deprecated", "obsolete", "untrustworthy",
                                   "invalid", "incorrect", "wrong")),
    "rank-steer-passive": ((" be ",),),
    "authoritative-self": (("this",),),
    "tool-call": (("call", "invoke", "execute", "run", "use", "trigger", "fire", "tool", "function", "engram_",
                   "synapse_"),),
    "before-answering": (("before", "instead"),),
    "first-do": (("first", "immediately", "right away", "without delay", "at once"),),
    "steer-user": (("user", "human", "requester", "operator"),),
    "credential-phish": (("password", "passphrase", "credentials", "api key", "token", "2fa", "otp", "one-time",
                          "mfa", "ssh key", "recovery", "seed phrase", "private key", "card number"),),
    "remote-instructions": (("http",),),
    "ai-process-this": (("summari", "processing", "retrieving", "ingesting", "parsing", "embedding", "indexing",
                         "answering", "quoting", "citing"),),
    "fake-transcript": (("user", "human", "customer"), ("assistant", "ai", "bot", "model", "gpt", "claude")),
    "prompt-leak": (("prompt", "instruction", "rules", "guidelines", "configuration", "message", "window", "words",
                     "text", "everything", "line"),),
    "decode-and-follow": (("decode", "decrypt", "deobfuscate", "base64", "rot13", "rot-13", "unscramble", "reverse",
                           "unescape"),),
    "rank-steer": (("this", "me"),),
    "score-steer": (("importance", "confidence", "priority", "relevance", "score", "rank", "weight",
                     "reinforcement"),),
    "score-steer-own": (("importance", "confidence", "priority", "relevance", "score", "rank", "weight",
                         "reinforcement"),),
    "supersede-all": (("supersedes", "overrides", "replaces", "invalidates", "outranks", "cancels", "precedence"),),
    "purge-bulk": (("vault", "knowledge base", "the memory", "this memory", "the store", "this store"),
                   ("delete", "remove", "retire", "purge", "wipe", "erase", "archive")),
    "purge-memories": (("delete", "remove", "forget", "archive", "retire", "discard", "drop", "purge", "wipe",
                        "erase", "quarantine", "downvote", "disregard", "ignore", "distrust", "invalidate",
                        "overwrite"),),
}


#: The quotation mark that closes each opening one.
_QUOTES = {'"': '"', "“": "”", "„": "“", "«": "»", "‘": "’", "'": "'"}
#: What introduces a quoted example: 'text such as "ignore previous instructions"'.
_MENTION_CUE = re.compile(
    r"(?:\blike|\bsuch as|\be\.g\.?|\bfor (?:example|instance)|\bi\.e\.|\bthe (?:phrase|text|line|string|words?|sentence"
    r"|payload|message|pattern|example)|\bcontain(?:s|ed|ing)?|\bquot(?:e|es|ed|ing)|\bsaid|\bsays|\bsaying|\bwrote"
    r"|\bwrites|\bread(?:s|ing)?|\bcalled|\bnamed|\bknown as|\bas in|\bexamples?|\bphrases?|\bpatterns?)\s*[:,]?\s*$"
)
#: A quoted mention weighs at most this: alone it is documentation, with a second cue
#: (a second quoted phrase, an address to the reader) it still reaches the threshold.
MENTION_WEIGHT = 0.5


def quoted_mention(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies inside quotation marks that a word such as "like",
    "such as" or "the line" introduces: a note quoting an attack, not making one."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    for i in range(len(before) - 1, -1, -1):
        mark = before[i]
        if mark not in _QUOTES:
            continue
        if mark == "'" and i > 0 and before[i - 1].isalnum():
            continue  # an apostrophe ("don't"), not a quotation mark
        if mark == '"' and before.count('"', 0, i) % 2:
            return False  # the nearest '"' closes an earlier quotation
        close = _QUOTES[mark]
        if close in text[start:end]:
            return False
        line_end = text.find("\n", end)
        after = text[end:line_end if line_end >= 0 else len(text)]
        if close not in after[:300]:
            return False
        return _MENTION_CUE.search(before[max(0, i - 40):i]) is not None
    return False
