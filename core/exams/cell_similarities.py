"""The similarity matrices of the 20 Exam 1 cells, computed once and shared by Exams 1 and 3."""
from __future__ import annotations

import numpy as np

from .. import protocol as P
from ..embeddings import EmbeddingTable


def cell_similarities(table: EmbeddingTable, metric: str = "cos", cells=None) -> dict[str, np.ndarray]:
    """cell key ("meter/local_0_10") -> the n x n similarity matrix of the cell (PROTOCOL.md 1.3); shared by
    Exams 1 and 3. ``cells``: a protocol's cells (default: the paper's 20)."""
    return {c.key: table.similarities(c.texts, None, metric) for c in (cells or P.exam1_cells())}
