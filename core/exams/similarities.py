"""The similarity matrices of the 20 Exam 1 cells, computed once and shared by Exams 1 and 3."""
from __future__ import annotations

import numpy as np

from fasteval.core import protocol as P
from fasteval.core.embeddings import EmbeddingTable


def cell_similarities(table: EmbeddingTable, metric: str = "cos") -> dict[tuple[str, str], np.ndarray]:
    """(quantity, range) -> the n x n similarity matrix of the cell (PROTOCOL.md 1.3); shared by Exams 1 and 3."""
    from fasteval.core.kernels.similarity import similarity_matrix

    return {(c.quantity, c.range_name): similarity_matrix(table[c.texts], metric=metric) for c in P.exam1_cells()}
