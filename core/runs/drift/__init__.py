"""Drift, a room of its own: does a deployment embed like its reference? (``fasteval drift``, a CI gate.)

``gate.py`` runs it: a plan a side, the texts, each side embedded (``embed.py``), the cosines scored (``score.py``,
into the typed report of ``core/results/drift.py``), then the checks' registry (``checks/``: identity, base64
parity, the norm gate, token counts, invariance, behaviours, tokenization, the PhysScore side, the diagnosis; each
a module returning a typed finding of ``core/results/drift_findings.py``). ``receipts.py`` writes a receipt, which
the one door (``fasteval.models.adapters.receipt``) then takes as a reference. What the CLI prints and writes of a
report is ``core/report/drift.py``.
"""
