"""Data files of recall: the sentence encoder's tokenizer (engram.recall.encoder)."""
