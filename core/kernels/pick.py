"""Which implementation runs a statistic: numpy's (``small``) for the work of the paper's exams, the Numba kernels
(``kendall``, ``levenshtein``, ``ridge``'s) above it. Both give the same numbers (the same integer counts and the
same float64 operations; ``tests/kernels/test_kernels_small.py`` holds them together, ties, NaN and empty input
included); what differs is the cost. Numba's import and the loading of its compiled kernels take a process ~0.5-1.7
s (more than the exams' own compute on 2 cores, and CPU the encoder needs while it runs), while numpy does the
exams' small grids in milliseconds; the kernels pay on large work (the bootstrap, compare, dense grids, long custom
lists), where numpy's pairwise arrays grow quadratically."""
from __future__ import annotations

import numpy as np

from . import small
from .inputs import _as_embedding_pair, _as_row_pair, _as_vector
from .sequences import _check_packed

# Above these a call runs on the Numba kernels (numpy's cost grows where the kernels' does not: measured on a 2-core
# AMD EPYC, numpy's row statistics take ~30 ns a pair sign against the kernels' ~2, so the bootstrap's 10,000
# resamples of a cell (3 M pair signs, ~0.1 s numpy) are the kernels', while Exam 1's and Exam 3's rows (a few
# thousand) take numpy ~1 ms; Exam 2's Levenshtein tables, 0.6 M cells, ~10 ms). The probe's fits are numpy's
# eigendecomposition up to RIDGE_EIGEN_MAX (eigh takes 2x LAPACK's tridiagonal reduction, 11-25 ms a fit at the
# paper's 364-480 rows, but needs neither scipy's import, 0.2 s, nor the JIT kernel's load).
LIST_MAX = 1 << 16  # values of one list's tau (numpy's O(n log n) count: ~30 ms at this length)
ROW_PAIRS_MAX = 1 << 20  # pair signs of one row statistic's call (rows x n^2 / 2)
LEVENSHTEIN_CELLS_MAX = 1 << 22  # pairs x table cells of the Levenshtein distances
BOOTSTRAP_WORK_MAX = 1 << 28  # resampled rows x items^2 of one cell's bootstrap by its draws' counts (numpy's BLAS)
RIDGE_EIGEN_MAX = 512  # the order of a ridge fit's Gram or covariance matrix (min(rows, features))


def use_numpy(work: int, limit: int) -> bool:
    """True when ``work`` (the call's inner steps) is at most ``limit``, one of the limits above."""
    return work <= limit


def _row_work(X, Y, names: tuple[str, str] = ("X", "Y")) -> int:
    """The pair signs a row statistic holds (rows x n^2 / 2), of inputs validated as the kernels validate them."""
    X2, Y2 = _as_row_pair(X, Y, names)
    return max(X2.shape[0], Y2.shape[0]) * X2.shape[1] ** 2 // 2


def kendall_tau_b(x, y) -> float:
    """``kendall.kendall_tau_b``."""
    if use_numpy(_as_vector(x, "x").shape[0], LIST_MAX):
        return small.kendall_tau_b(x, y)
    from . import kendall

    return kendall.kendall_tau_b(x, y)


def kendall_tau_b_rows(X, Y) -> np.ndarray:
    """``kendall.kendall_tau_b_rows``."""
    if use_numpy(_row_work(X, Y), ROW_PAIRS_MAX) and np.shape(X)[-1] <= small.MAX_VALUES:
        return small.kendall_tau_b_rows(X, Y)
    from . import kendall

    return kendall.kendall_tau_b_rows(X, Y)


def pairwise_accuracy_rows(values, scores, value_ties: str = "wrong") -> np.ndarray:
    """``kendall.pairwise_accuracy_rows``."""
    work = _row_work(values, scores, ("values", "scores"))
    if use_numpy(work, ROW_PAIRS_MAX) and np.shape(values)[-1] <= small.MAX_VALUES:
        return small.pairwise_accuracy_rows(values, scores, value_ties)
    from . import kendall

    return kendall.pairwise_accuracy_rows(values, scores, value_ties)


def levenshtein_all_pairs(packed) -> np.ndarray:
    """``levenshtein.levenshtein_all_pairs``."""
    _check_packed(packed, "packed")
    n = len(packed)
    longest = int(packed.lengths.max()) if n else 0
    if use_numpy(n * (n - 1) // 2 * (longest + 1) ** 2, LEVENSHTEIN_CELLS_MAX):
        return small.levenshtein_all_pairs(packed)
    from . import levenshtein

    return levenshtein.levenshtein_all_pairs(packed)


def bootstrap_rows(values, scores, idx) -> tuple[np.ndarray, np.ndarray]:
    """tau-b of (values, -scores) and PACC ("skip") of (values, scores) on every resampled row ``values[idx]``: by
    the draws' counts in numpy (``small.bootstrap_rows``: the paper's 10,000 resamples of a cell in a millisecond)
    up to BOOTSTRAP_WORK_MAX, by the kernels on the rows above."""
    idx = np.asarray(idx)
    n = np.shape(values)[0]
    if use_numpy(idx.shape[0] * n * n, BOOTSTRAP_WORK_MAX):
        return small.bootstrap_rows(values, scores, idx)
    from . import kendall

    x = np.ascontiguousarray(np.asarray(values, dtype=np.float64)[idx])
    s = np.ascontiguousarray(np.asarray(scores, dtype=np.float64)[idx])
    return kendall.kendall_tau_b_rows(x, -s), kendall.pairwise_accuracy_rows(x, s, "skip")


def similarity_matrix(a: np.ndarray, b: np.ndarray | None = None, metric: str = "cos") -> np.ndarray:
    """``similarity.similarity_matrix``: numpy's up to ``small.MAX_WORK`` multiply-adds (the exams' cells and Exam
    2's 100 x 100), the kernels' beyond."""
    a, b = _as_embedding_pair(a, b, ("a", "b"))
    if use_numpy(a.shape[0] * b.shape[0] * a.shape[1], small.MAX_WORK):
        return small.similarity_matrix(a, None if b is a else b, metric=metric)
    from . import similarity

    return similarity.similarity_matrix(a, b, metric=metric)


def paired_similarity(a: np.ndarray, b: np.ndarray, metric: str = "cos") -> np.ndarray:
    """``similarity.paired_similarity``: numpy's up to ``small.MAX_WORK`` multiply-adds, the kernels' beyond."""
    a, b = _as_embedding_pair(a, b, ("a", "b"))
    if use_numpy(a.size, small.MAX_WORK):
        return small.paired_similarity(a, b, metric=metric)
    from . import similarity

    return similarity.paired_similarity(a, b, metric=metric)
