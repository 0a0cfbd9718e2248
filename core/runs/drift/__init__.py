"""Drift, a room of its own: does a deployment embed like its reference? (``fasteval drift``, a CI gate.)

``gate.py`` runs it (a plan a side, the texts, the embedding, the verdict's parts; ``save_receipt``),
``score.py`` scores two sides' embeddings into the typed report with its verdict (``core/results/drift.py``,
beside the other result types, which reads a drift.json back), ``identity.py`` says who each side says it is and
what precision it serves, ``invariance.py`` probes the candidate's batch and concurrency invariance. A receipt
file is read by the one door (``fasteval.models.adapters.receipt``); what the CLI prints and writes of a report is
``core/report/drift.py``.
"""
