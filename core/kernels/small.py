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
from .sequences import PackedSequences, _check_packed
from .inputs import METRICS, VALUE_TIES, _as_embedding_pair, _as_pair, _as_row_pair, _metric_code, _value_ties_code

MAX_VALUES = 4096  # a statistic's values counted pair by pair (C(4096, 2) = 8.4 M pairs)
SIGNS_MAX_N = 256  # one list's values counted pair by pair; above, by the O(n log n) count
MAX_LIST = 1 << 20  # one list's values by the O(n log n) count
MAX_LEV_WORK = 1 << 23  # the numpy distances' pairs x table cells
MAX_PAIR_WORK = 1 << 22  # pair signs held at once by the row statistics (4 MiB a side)
MAX_WORK = 1 << 22  # a similarity matrix's multiply-adds


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n > MAX_VALUES:
        raise InputError(f"{n} values are more than the numpy statistics take ({MAX_VALUES}).",
                         "use fasteval.core.kernels.kendall for long lists.")
    return np.triu_indices(n, k=1)


def _row_signs(a: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """sign(a[:, j] - a[:, i]) as int8 by comparison, as the kernels count (an infinity is compared, never
    subtracted)."""
    return (a[:, j] > a[:, i]).view(np.int8) - (a[:, j] < a[:, i]).view(np.int8)


def _rows_statistic(X, Y, names: tuple[str, str], statistic) -> np.ndarray:
    """``statistic(dx, dy)`` of every row pair (the pair signs of X_r and Y_r over i < j), NaN for n < 2 or a row
    with a NaN; rows in chunks of at most MAX_PAIR_WORK pair signs."""
    X2, Y2 = _as_row_pair(X, Y, names)
    m = max(X2.shape[0], Y2.shape[0]) if X2.shape[0] and Y2.shape[0] else 0
    n = X2.shape[1]
    out = np.full(m, np.nan)
    if m == 0 or n < 2:
        return out
    X2, Y2 = np.broadcast_to(X2, (m, n)), np.broadcast_to(Y2, (m, n))
    i, j = _pairs(n)
    rows = max(1, MAX_PAIR_WORK // len(i))
    for r0 in range(0, m, rows):
        x, y = X2[r0:r0 + rows], Y2[r0:r0 + rows]
        ok = ~(np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1))
        if ok.any():
            out[r0:r0 + rows][ok] = statistic(_row_signs(x[ok], i, j), _row_signs(y[ok], i, j))
    return out


def _tau_b(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """tau-b of rows of pair signs, from the exact integer counts (``_tau_b_of_counts``)."""
    total = dx.shape[1]
    s = np.einsum("ij,ij->i", dx, dy, dtype=np.int64)
    return _tau_b_of_counts(s, (dx == 0).sum(axis=1), (dy == 0).sum(axis=1), total)


def _tau_b_of_counts(s: np.ndarray, tx: np.ndarray, ty: np.ndarray, total: int) -> np.ndarray:
    """tau-b of rows from their pair counts (s: concordant less discordant, tx / ty: pairs tied in x / y, of
    ``total``; integers, exact in float64 too), by the kernels' float64 formula; NaN where one side is all ties."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((total - tx).astype(np.float64)) / np.sqrt((total - ty).astype(np.float64))
    return np.where((tx == total) | (ty == total), np.nan, np.minimum(1.0, np.maximum(-1.0, tau)))


def _pacc_of_counts(correct: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """PACC of rows from their counts of right pairs and scored pairs; NaN where no pair is scored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs == 0, np.nan, correct / np.maximum(pairs, 1))


def _pacc(code: int):
    """PACC of rows of (value, score) pair signs, value ties scored as ``code`` says."""
    def pacc(dv: np.ndarray, ds: np.ndarray) -> np.ndarray:
        # pairs scored as v_i > v_j (right iff s_i < s_j): those, and with "as_greater" the equal ones
        scored_greater = dv < 0 if code != VALUE_TIES["as_greater"] else dv <= 0
        correct = ((dv > 0) & (ds < 0)).sum(axis=1) + (scored_greater & (ds > 0)).sum(axis=1)
        pairs = (dv != 0).sum(axis=1) + ((dv == 0).sum(axis=1) if code != VALUE_TIES["skip"] else 0)
        return _pacc_of_counts(correct, pairs)
    return pacc


def kendall_tau_b_rows(X, Y) -> np.ndarray:
    """``kendall.kendall_tau_b_rows``: tau-b of every row pair ((m, n) each, or one 1-D row reused)."""
    return _rows_statistic(X, Y, ("X", "Y"), _tau_b)


def pairwise_accuracy_rows(values, scores, value_ties: str = "wrong") -> np.ndarray:
    """``kendall.pairwise_accuracy_rows``: PACC of every row pair, equal values scored as ``value_ties`` says."""
    return _rows_statistic(values, scores, ("values", "scores"), _pacc(_value_ties_code(value_ties)))


def kendall_tau_b(x, y) -> float:
    """``kendall.kendall_tau_b``: tau_b = S / sqrt(n0 - tx) / sqrt(n0 - ty), NaN for n < 2, a NaN or a constant
    side. Up to SIGNS_MAX_N values from the pairs' signs; longer lists (Exam 2's 4,950 pairs) by Knight's
    O(n log n) count (sort by x then y; S from the tie counts and the inversions of y)."""
    x, y = _as_pair(x, y, ("x", "y"))
    n = x.shape[0]
    if n <= SIGNS_MAX_N:
        return float(kendall_tau_b_rows(x, y)[0]) if n else float("nan")
    if np.isnan(x).any() or np.isnan(y).any():
        return float("nan")
    if n > MAX_LIST:
        raise InputError(f"{n} values are more than the numpy statistics take ({MAX_LIST}).",
                         "use fasteval.core.kernels.kendall for long lists.")
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    total = n * (n - 1) // 2
    tx = _tie_pairs(xs == np.roll(xs, 1))
    txy = _tie_pairs((xs == np.roll(xs, 1)) & (ys == np.roll(ys, 1)))
    _, ranks, counts = np.unique(ys, return_inverse=True, return_counts=True)
    ty = int((counts * (counts - 1) // 2).sum())
    if tx == total or ty == total:
        return float("nan")
    s = total - tx - ty + txy - 2 * _inversions(ranks.astype(np.int64), len(counts))
    tau = s / np.sqrt(np.float64(total - tx)) / np.sqrt(np.float64(total - ty))
    return float(min(1.0, max(-1.0, tau)))


def _tie_pairs(same_as_previous: np.ndarray) -> int:
    """Pairs inside the runs of equal neighbours of a sorted vector (``same_as_previous[k]``: item k equals item
    k - 1; item 0's flag is ignored)."""
    starts = np.flatnonzero(~np.r_[False, same_as_previous[1:]])
    runs = np.diff(np.r_[starts, len(same_as_previous)])
    return int((runs * (runs - 1) // 2).sum())


def _inversions(ranks: np.ndarray, k: int) -> int:
    """#{i < j : ranks[i] > ranks[j]} of integer ranks in 0..k-1, by a bottom-up merge sort: at each level the
    right half of every block counts the strictly larger items of its sorted left half (one searchsorted over
    all blocks, kept apart by an offset per block)."""
    n = ranks.shape[0]
    size = 1 << max(n - 1, 1).bit_length()
    a = np.full(size, k, dtype=np.int64)  # the padding ranks above every item and comes last: no inversion
    a[:n] = ranks
    inversions, width = 0, 1
    while width < size:
        blocks = a.reshape(-1, 2, width)
        offset = (np.arange(blocks.shape[0], dtype=np.int64) * (k + 1))[:, None]
        left = (blocks[:, 0, :] + offset).ravel()
        at_most = np.searchsorted(left, (blocks[:, 1, :] + offset).ravel(), side="right").reshape(-1, width)
        inversions += int((width - (at_most - offset // (k + 1) * width)).sum())
        a = np.sort(a.reshape(-1, 2 * width), axis=1).ravel()
        width *= 2
    return inversions


def pairwise_accuracy(values, scores, value_ties: str = "wrong") -> float:
    """``kendall.pairwise_accuracy``: the share of pairs whose smaller value has the strictly larger score, equal
    values scored as ``value_ties`` says ("wrong", "as_greater", "skip"); NaN for n < 2, a NaN, or no pair."""
    values, scores = _as_pair(values, scores, ("values", "scores"))
    return float(pairwise_accuracy_rows(values, scores, value_ties)[0]) if len(values) else float("nan")


def levenshtein_all_pairs(packed: PackedSequences) -> np.ndarray:
    """``levenshtein.levenshtein_all_pairs``: the condensed int32 vector of lev(packed[i], packed[j]) for i < j
    in order, by the textbook dynamic programme run for every pair at once (one row of the table per symbol of
    the longest sequence; a row's insertions by a running minimum). Up to MAX_LEV_WORK pairs x cells."""
    _check_packed(packed, "packed")
    n, lengths = len(packed), packed.lengths
    i, j = _pairs(n)
    longest = int(lengths.max()) if n else 0
    if len(i) * (longest + 1) ** 2 > MAX_LEV_WORK:
        raise InputError(f"{len(i)} pairs of up to {longest} symbols are more than the numpy distances take.",
                         "use fasteval.core.kernels.levenshtein for many or long sequences.")
    table = np.full((n, longest), -1, dtype=np.int64)  # -1 pads: it is compared only beyond a sequence's end
    table[np.repeat(np.arange(n), lengths), np.arange(packed.symbols.size) - np.repeat(packed.offsets[:-1],
                                                                                         lengths)] = packed.symbols
    a, b, len_a, len_b = table[i], table[j], lengths[i], lengths[j]
    out = len_b.astype(np.int32)  # an empty left side: the right side's length
    steps = np.arange(longest + 1, dtype=np.int64)
    previous = np.broadcast_to(steps, (len(i), longest + 1))  # row 0: j insertions
    for r in range(longest):
        # best[:, k]: row r + 1 at column k without the insertions along the row; then the running minimum of
        # best[t] + (k - t) over t <= k adds them
        best = np.empty_like(previous)
        best[:, 0] = r + 1
        np.minimum(previous[:, :-1] + (a[:, r:r + 1] != b), previous[:, 1:] + 1, out=best[:, 1:])
        current = np.minimum.accumulate(best - steps, axis=1) + steps
        done = np.flatnonzero(len_a == r + 1)
        out[done] = current[done, len_b[done]]
        previous = current
    return out


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


def paired_similarity(a, b, metric: str = "cos") -> np.ndarray:
    """``similarity.paired_similarity``: s_i = sim(a_i, b_i) as float32 (n,), the same sums as
    ``similarity_matrix``."""
    code = _metric_code(metric)
    a, b = _as_embedding_pair(a, b, ("a", "b"))
    if a.shape[0] != b.shape[0]:
        raise InputError(f"a has {a.shape[0]} rows but b has {b.shape[0]}; paired similarity needs one b row per "
                         "a row.", "pass the two sides of the same value list.")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if code == METRICS["hamming"]:
        return (1.0 - ((a64 > 0) != (b64 > 0)).sum(axis=1) / a.shape[1]).astype(np.float32)
    if code == METRICS["l2"]:
        return (-np.sqrt(((a64 - b64) ** 2).sum(axis=1))).astype(np.float32)
    if code == METRICS["cos"]:
        a64, b64 = _unit_rows(a64), _unit_rows(b64)
    return np.einsum("ij,ij->i", a64, b64).astype(np.float32)


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


def _sign_matrix(a: np.ndarray) -> np.ndarray:
    """(n, n) float64: sign(a[j] - a[i]) by comparison (as ``_row_signs``), 0 on the diagonal and for NaN."""
    return (a[None, :] > a[:, None]).astype(np.float64) - (a[None, :] < a[:, None]).astype(np.float64)


def _quadratic(counts: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """c' M c for every row c of ``counts``: integers held exactly in float64 (|entries| <= rows' n^2 < 2^53)."""
    return np.einsum("ri,ri->r", counts @ matrix, counts)


def bootstrap_rows(values, scores, idx) -> tuple[np.ndarray, np.ndarray]:
    """``(kendall_tau_b_rows(V, -S), pairwise_accuracy_rows(V, S, "skip"))`` of the resampled rows ``V =
    values[idx]``, ``S = scores[idx]`` (a bootstrap's draws of n items, ``idx`` (rows, size)), without the rows: a
    drawn row is its items' counts c, and every pair count the statistics take is a quadratic form of c over an n
    x n matrix of the items' pair signs (a pair of two draws of one item ties on both sides) —

    - S = c'(Sv * Sy)c / 2 with Sy the signs of -scores, tx = (c'[Sv = 0]c - N) / 2, ty likewise, of N(N-1)/2 pairs;
    - PACC's right pairs c'[Sv * Ss < 0]c / 2 of the N(N-1)/2 - tx pairs whose values differ —

    then the row statistics' own formulas (``_tau_b_of_counts``, ``_pacc_of_counts``), so the same bits as they
    give (and so the kernels), NaN where a drawn item is NaN. O(rows n^2) multiply-adds in BLAS, no pair signs
    held: the paper's 10,000 resamples of a 21-item cell in about a millisecond, where numpy's row statistics take
    0.1 s and the kernels' need numba loaded (0.5-1.7 s)."""
    v = np.asarray(values, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    idx = np.asarray(idx)
    rows, size = idx.shape
    n = v.shape[0]
    counts = np.bincount((idx + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n)
    counts = counts.reshape(rows, n).astype(np.float64)
    sv, ss = _sign_matrix(v), _sign_matrix(s)
    total = size * (size - 1) // 2
    tx = (_quadratic(counts, (sv == 0).astype(np.float64)) - size) / 2
    ty = (_quadratic(counts, (ss == 0).astype(np.float64)) - size) / 2
    concordance = _quadratic(counts, -sv * ss) / 2
    right = _quadratic(counts, (sv * ss < 0).astype(np.float64)) / 2
    tau = _tau_b_of_counts(concordance, tx, ty, total)
    pacc = _pacc_of_counts(right, total - tx)
    unusable = np.full(rows, True) if size < 2 else counts[:, np.isnan(v) | np.isnan(s)].any(axis=1)
    tau[unusable], pacc[unusable] = np.nan, np.nan
    return tau, pacc
