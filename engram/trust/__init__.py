"""Trust and safety: stored text is data, secrets stay out of shared files, roles, audit.

Pure functions over values, called from the lowest point every write passes
(:mod:`engram.items.writing`, the importer, and the result of a merge in
:mod:`engram.team`), so the CLI, the MCP server, import, learn, distill, sync and the
viewer are all screened without each adapter remembering to.

- :mod:`~engram.trust.text` — the text the detectors read: Unicode folded (NFKC,
  invisible and tag characters, homoglyphs, leetspeak, letter-spacing), hidden encoded
  payloads decoded.
- :mod:`~engram.trust.screen` — the instruction screen: instruction-shaped text aimed at
  a classifier, at a future reader, exfiltration, role hijacks and fence breakouts.
- :mod:`~engram.trust.secrets` — secrets (the ``detect-secrets`` plugins plus a few
  providers it lacks) and personal or environment data (emails, phone numbers through
  ``phonenumbers``, private IPs, home paths), with redaction.
- :mod:`~engram.trust.roles` — reader / writer / curator per actor, from ``roles`` in
  ``engram.yaml``, and the rules each role may break or not.
- :mod:`~engram.trust.policy` — the ``trust`` settings and :func:`~engram.trust.policy.admit`,
  which turns one intended write into the item to write (quarantined, redacted or made
  private) or a refusal, with what to audit.

May import only :mod:`engram.store` and :mod:`engram.errors` (and the detector
libraries): it sits below the index so that the items layer can call it on every write.
"""
