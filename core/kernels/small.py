"""The kernels' definitions for a handful of values, in numpy: Kendall tau-b, pairwise accuracy and the
similarity matrix exactly as ``kendall`` and ``similarity`` define them, with no JIT to load. Loading the compiled
kernels costs a process about 0.6 s (numba's registries, its BLAS check importing scipy.linalg), which is all of
the work when ``fasteval check`` scores a few quantities; the exams' grids stay on the kernels.

The same validation (``inputs``) and the same arithmetic: tau-b and PACC from the same exact integer counts
through the same float64 operations, so they equal the kernels to the bit; the similarities sum in float64 and
round once to float32 (unit rows rounded to float32 first, as ``_unit_rows``), equal to the kernels but where a
sum sits within ~d * 2^-53 of a float32 rounding boundary (the statement ``similarity``'s BLAS path makes).
``tests/kernels/test_kernels_small.py`` holds them to the kernels, ties, NaN and empty input included. Memory is
O(n^2) in the number of values (MAX_VALUES) and O(n_a n_b d) in the similarities' rows (MAX_WORK).

``gaussian_smooth`` is scipy.ndimage's gaussian_filter1d, to the bit, for the conversion curves (importing
scipy.ndimage cost every sweep ~0.1 s)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from .inputs import METRICS, VALUE_TIES, _as_embedding_pair, _as_pair, _metric_code, _value_ties_code

MAX_VALUES = 4096  # a statistic's values (C(4096, 2) = 8.4 M pairs)
MAX_WORK = 1 << 22  # a similarity matrix's multiply-adds


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n > MAX_VALUES:
        raise InputError(f"{n} values are more than the numpy statistics take ({MAX_VALUES}).",
                         "use fasteval.core.kernels.kendall for long lists.")
    return np.triu_indices(n, k=1)


def _signs(a: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """sign(a_j - a_i) by comparison, as the kernels count (an infinity is compared, never subtracted)."""
    return (a[j] > a[i]).astype(np.int64) - (a[j] < a[i]).astype(np.int64)


def _pair_signs(x, y, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray] | None:
    """sign(x_j - x_i) and sign(y_j - y_i) over the pairs i < j of two vectors (validated as the kernels validate
    them); None for n < 2 or a NaN on either side."""
    x, y = _as_pair(x, y, names)
    n = x.shape[0]
    if n < 2 or np.isnan(x).any() or np.isnan(y).any():
        return None
    i, j = _pairs(n)
    return _signs(x, i, j), _signs(y, i, j)


def kendall_tau_b(x, y) -> float:
    """``kendall.kendall_tau_b``: tau_b = S / sqrt(n0 - tx) / sqrt(n0 - ty), NaN for n < 2, a NaN or a constant
    side."""
    signs = _pair_signs(x, y, ("x", "y"))
    if signs is None:
        return float("nan")
    dx, dy = signs
    s, tx, ty, total = int((dx * dy).sum()), int((dx == 0).sum()), int((dy == 0).sum()), len(dx)
    if tx == total or ty == total:
        return float("nan")
    tau = s / np.sqrt(np.float64(total - tx)) / np.sqrt(np.float64(total - ty))
    return float(min(1.0, max(-1.0, tau)))


def pairwise_accuracy(values, scores, value_ties: str = "wrong") -> float:
    """``kendall.pairwise_accuracy``: the share of pairs whose smaller value has the strictly larger score, equal
    values scored as ``value_ties`` says ("wrong", "as_greater", "skip"); NaN for n < 2, a NaN, or no pair."""
    code = _value_ties_code(value_ties)
    signs = _pair_signs(values, scores, ("values", "scores"))
    if signs is None:
        return float("nan")
    dv, ds = signs
    # pairs scored as v_i > v_j (right iff s_i < s_j): those, and with "as_greater" the equal ones
    scored_greater = dv < 0 if code != VALUE_TIES["as_greater"] else dv <= 0
    correct = int(((dv > 0) & (ds < 0)).sum() + (scored_greater & (ds > 0)).sum())
    pairs = int((dv != 0).sum()) + (int((dv == 0).sum()) if code != VALUE_TIES["skip"] else 0)
    return float("nan") if pairs == 0 else correct / pairs


def similarity_matrix(a, b=None, metric: str = "cos") -> np.ndarray:
    """``similarity.similarity_matrix`` (float32 (n_a, n_b); b=None: b = a): cos, dot or -l2 summed in float64 and
    rounded once, a zero row's cosines 0; hamming over the rows' sign bits."""
    code = _metric_code(metric)
    a, b = _as_embedding_pair(a, b, ("a", "b"))
    if a.shape[0] * b.shape[0] * a.shape[1] > MAX_WORK:
        raise InputError(f"{a.shape[0]} x {b.shape[0]} rows are more than the numpy similarities take.",
                         "use fasteval.core.kernels.similarity for grids.")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if code == METRICS["hamming"]:  # 1 - the share of sign bits that differ
        return (1.0 - ((a64[:, None, :] > 0) != (b64[None, :, :] > 0)).sum(axis=2) / a.shape[1]).astype(np.float32)
    if code == METRICS["l2"]:
        out = -np.sqrt(((a64[:, None, :] - b64[None, :, :]) ** 2).sum(axis=2))
    else:
        if code == METRICS["cos"]:
            a64, b64 = _unit_rows(a64), _unit_rows(b64)
        out = a64 @ b64.T
    return out.astype(np.float32)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows over their float64 norms, rounded to float32 as the kernel's unit rows are (zero rows stay zero)."""
    norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(norms > 0, x / norms, 0.0)
    return unit.astype(np.float32).astype(np.float64)


def gaussian_smooth(values, sigma: float, truncate: float = 4.0) -> np.ndarray:
    """``scipy.ndimage.gaussian_filter1d(values, sigma)`` (its default "reflect" edges, float64 out) in numpy,
    without importing scipy.ndimage (~0.1 s of every sweep): the same weights (a Gaussian of radius
    ``int(truncate * sigma + 0.5)``, normalised by its sum) and the same float64 operations in the same order as
    scipy's symmetric correlation (centre times its weight, then each mirrored pair, outermost first, summed before
    it is weighted). NaN propagates as there; an empty input gives an empty output."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise InputError(f"gaussian_smooth takes one row of values, got shape {x.shape}.", "pass a 1-D array.")
    if not (math.isfinite(sigma) and sigma > 0 and math.isfinite(truncate) and truncate >= 0):
        raise InputError(f"gaussian_smooth needs sigma > 0 and truncate >= 0, got {sigma!r} and {truncate!r}.",
                         "pass a positive, finite sigma.")
    n = x.shape[0]
    if n == 0:
        return x.copy()
    radius = int(truncate * float(sigma) + 0.5)
    offsets = np.arange(-radius, radius + 1)
    weights = np.exp(-0.5 / (sigma * sigma) * offsets ** 2)
    weights = weights / weights.sum()
    # "reflect" edges, (d c b a | a b c d | d c b a), for a radius of any length: a period of 2n, mirrored
    index = np.mod(np.arange(-radius, n + radius), 2 * n)
    padded = x[np.where(index >= n, 2 * n - 1 - index, index)]
    out = padded[radius:radius + n] * weights[radius]
    for j in range(radius, 0, -1):
        out += (padded[radius - j:radius - j + n] + padded[radius + j:radius + j + n]) * weights[radius - j]
    return out
