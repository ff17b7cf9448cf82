"""Data files of trust: the meaning stage's exemplars (engram.trust.likeness)."""
