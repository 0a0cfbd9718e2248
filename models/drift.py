"""How far a lower-precision export drifts from fp32 on the paper's Exam 1 texts.

Both encoders embed the Exam 1 groups exactly as an Exam 1 run does (one encode call per group, normalised
rows). Reported: max |Δ| over all embedding entries, and for each of the 20 (quantity, range) cells the
index pairs i < j whose order of anchor similarity differs (``sign(s_i - s_j)`` changes, a tie counting as
its own sign): each such pair moves Kendall's τ numerator, so zero flipped pairs means identical cells.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fasteval.core.embeddings import Encoder, EmbeddingTable, embed_groups


@dataclass(frozen=True)
class Drift:
    max_abs: float  # max |Δ| over every entry of every normalised embedding
    flipped_pairs: int  # cell pairs whose anchor-similarity order changed
    pairs: int  # all pairs of the 20 cells
    cells_changed: int  # cells whose τ numerator changed
    cells: int
    texts: int
    mean_cos: float = float("nan")  # mean cosine between a text's two embeddings
    min_cos: float = float("nan")  # the worst one

    def line(self, label: str = "fp16 vs fp32") -> str:
        return (f"{label} on the {self.texts} Exam 1 texts: max |Δ| = {self.max_abs:.3g}; cosine fp32 vs other "
                f"mean {self.mean_cos:.5f}, worst {self.min_cos:.5f}; flipped τ pairs: {self.flipped_pairs} of "
                f"{self.pairs}; cells whose τ changed: {self.cells_changed} of {self.cells}")


def _pair_signs(s: np.ndarray) -> np.ndarray:
    """sign(s_i - s_j) for all i < j of one cell's anchor similarities."""
    i, j = np.triu_indices(len(s), k=1)
    return np.sign(s[i] - s[j])


def table_drift(reference: EmbeddingTable, candidate: EmbeddingTable) -> Drift:
    """Drift of ``candidate`` against ``reference``; both hold every Exam 1 text, rows normalised."""
    from fasteval.core import protocol as P

    texts = [t for t, _ in reference.items()]
    max_abs = float(np.abs(reference[texts].astype(np.float64) - candidate[texts]).max()) if texts else 0.0
    cos = np.einsum("ij,ij->i", reference[texts].astype(np.float64), candidate[texts].astype(np.float64))
    flipped = pairs = changed = 0
    cells = P.exam1_cells()
    for cell in cells:
        ref, cand = reference[cell.texts].astype(np.float64), candidate[cell.texts].astype(np.float64)
        a, b = _pair_signs(ref @ ref[0]), _pair_signs(cand @ cand[0])
        flipped += int((a != b).sum())
        pairs += a.size
        changed += int(a.sum() != b.sum())
    return Drift(max_abs, flipped, pairs, changed, len(cells), len(texts),
                 float(cos.mean()) if texts else float("nan"), float(cos.min()) if texts else float("nan"))


def dtype_drift(reference: Encoder, candidate: Encoder) -> Drift:
    """Embed the Exam 1 groups with both encoders and compare (see the module docstring)."""
    from fasteval.core.protocol import exam1_groups

    groups = exam1_groups()
    return table_drift(embed_groups(reference, groups), embed_groups(candidate, groups))
