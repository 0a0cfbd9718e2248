"""Encoders made from something else: a receipt file (``receipt``: a reference's vectors, saved) and an MTEB model
(``mteb``: MTEB's encoder protocol as fasteval's)."""
