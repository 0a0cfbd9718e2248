"""Kendall tau-b and pairwise accuracy (PACC): validating wrappers over Numba kernels.

``kendall_tau_b`` equals ``scipy.stats.kendalltau(x, y).statistic`` (default arguments: tau-b,
nan_policy="propagate") to 1e-12: the same integer pair counts and the same final formula.
Short vectors use the direct O(n^2) pair count; longer ones Knight's O(n log n) algorithm (sort by
x, break ties in x by y, count merge-sort inversions of y). The ``*_rows`` functions evaluate many
short vectors in one parallel call (PROTOCOL.md 1.4 heatmap rows, PROTOCOL.md 3.5 anchors).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ._threads import run_parallel
from .inputs import VALUE_TIES, _as_pair, _as_row_pair, _value_ties_code  # noqa: F401 (VALUE_TIES re-exported)

__all__ = [
    "DIRECT_MAX_N",
    "VALUE_TIES",
    "kendall_tau_b",
    "kendall_tau_b_rows",
    "pairwise_accuracy",
    "pairwise_accuracy_rows",
]

# Up to this length the O(n^2) pair count is faster than sort + merge count (measured on one core:
# direct/Knight time = 0.3 at n = 32, 0.6-0.9 at n = 128, 1.0-1.25 at n = 192, 1.2-1.5 at n = 256).
DIRECT_MAX_N = 160  # read at compile time (a Numba global): change it here, not at run time
# From this length one list's O(n log n) count runs on every thread (below it a parallel launch costs more).
PARALLEL_MIN_N = 1 << 16

_WRONG = VALUE_TIES["wrong"]
_AS_GREATER = VALUE_TIES["as_greater"]

# Statistic codes of _statistic / _statistic_rows.
_TAU_B = -1  # PACC uses the VALUE_TIES codes (>= 0)


# ----------------------------------------------------------------------------- pair counts
@njit(cache=True)
def _counts_direct(x, y):
    """(S, tx, ty) with S = sum_{i<j} sign(x_j - x_i) sign(y_j - y_i), tx = #{x_i == x_j}, ty = #{y_i == y_j}."""
    n = x.shape[0]
    s = np.int64(0)
    tx = np.int64(0)
    ty = np.int64(0)
    for i in range(n - 1):
        xi = x[i]
        yi = y[i]
        for j in range(i + 1, n):
            dx = np.int64(x[j] > xi) - np.int64(x[j] < xi)
            dy = np.int64(y[j] > yi) - np.int64(y[j] < yi)
            s += dx * dy
            tx += np.int64(dx == 0)
            ty += np.int64(dy == 0)
    return s, tx, ty


@njit(cache=True)
def _tie_pairs(a):
    """sum over runs of equal values in a (sorted) of c (c - 1) / 2."""
    pairs = np.int64(0)
    run = np.int64(1)
    for i in range(1, a.shape[0]):
        if a[i] == a[i - 1]:
            run += 1
        else:
            pairs += run * (run - 1) // 2
            run = 1
    return pairs + run * (run - 1) // 2


@njit(cache=True, inline="always")
def _merge_count(src, dst, lo, mid, hi):
    """Merge the sorted src[lo:mid] and src[mid:hi] into dst[lo:hi]; return the pairs that invert across them.
    Branch-free step (~20% faster on random data); strict: equal values do not invert."""
    i = lo
    j = mid
    k = lo
    inv = np.int64(0)
    while i < mid and j < hi:
        right = src[j] < src[i]
        dst[k] = src[j] if right else src[i]
        inv += (mid - i) * right
        j += right
        i += 1 - right
        k += 1
    while i < mid:
        dst[k] = src[i]
        i += 1
        k += 1
    while j < hi:
        dst[k] = src[j]
        j += 1
        k += 1
    return inv


# Blocks shorter than this are grown by insertion sort before the merge passes (each shift is one inversion).
MIN_BLOCK = 16


@njit(cache=True)
def _natural_blocks(a):
    """Cut a into sorted blocks in place and count the inversions inside them; return (inversions, block bounds).

    Each block starts as the run already in order at its start: a non-decreasing run as it is, a strictly
    decreasing one reversed (its c (c - 1) / 2 pairs all invert). A block shorter than MIN_BLOCK is grown to it
    by insertion sort, then by whatever non-decreasing run follows. Presorted stretches (the runs of y inside
    tied x, or nearly ordered data) so skip the merge passes they would need.
    """
    n = a.shape[0]
    bounds = np.empty(n // MIN_BLOCK + 2, dtype=np.int64)
    bounds[0] = 0
    blocks = 0
    inv = np.int64(0)
    lo = 0
    while lo < n:
        hi = lo + 1
        if hi < n and a[hi] < a[lo]:
            while hi < n and a[hi] < a[hi - 1]:
                hi += 1
            a[lo:hi] = a[lo:hi][::-1].copy()
            inv += np.int64(hi - lo) * (hi - lo - 1) // 2
        else:
            while hi < n and a[hi] >= a[hi - 1]:
                hi += 1
        if hi - lo < MIN_BLOCK:
            stop = min(lo + MIN_BLOCK, n)
            for i in range(hi, stop):
                v = a[i]
                j = i
                while j > lo and a[j - 1] > v:
                    a[j] = a[j - 1]
                    j -= 1
                a[j] = v
                inv += i - j
            hi = stop
            while hi < n and a[hi] >= a[hi - 1]:
                hi += 1
        blocks += 1
        bounds[blocks] = hi
        lo = hi
    return inv, bounds[:blocks + 1]


@njit(cache=True)
def _sort_count_inversions(a):
    """Sort a ascending in place and return #{i < j : a_i > a_j} (natural merge sort, O(n log n)): sorted
    blocks (_natural_blocks), then passes that merge neighbouring blocks two by two."""
    inv, bounds = _natural_blocks(a)
    src = a
    dst = np.empty_like(a)
    swapped = False
    while bounds.shape[0] > 2:
        blocks = bounds.shape[0] - 1
        merged = np.empty((blocks + 1) // 2 + 1, dtype=np.int64)
        merged[0] = 0
        for p in range((blocks + 1) // 2):
            lo = bounds[2 * p]
            mid = bounds[min(2 * p + 1, blocks)]
            hi = bounds[min(2 * p + 2, blocks)]
            inv += _merge_count(src, dst, lo, mid, hi)
            merged[p + 1] = hi
        bounds = merged
        src, dst = dst, src
        swapped = not swapped
    if swapped:
        a[:] = src
    return inv


@njit(cache=True, parallel=True)
def _sort_count_inversions_parallel(a, chunks):
    """_sort_count_inversions on ``chunks`` slices at once (one thread each), then one merge pass per doubling;
    the same sort and the same count. For long arrays (both cores instead of one)."""
    n = a.shape[0]
    bounds = np.empty(chunks + 1, dtype=np.int64)
    for c in range(chunks + 1):
        bounds[c] = c * n // chunks
    inner = np.zeros(chunks, dtype=np.int64)
    for c in prange(chunks):
        inner[c] = _sort_count_inversions(a[bounds[c]:bounds[c + 1]])
    inv = inner.sum()
    src = a
    dst = np.empty_like(a)
    swapped = False
    step = 1
    while step < chunks:
        pairs = (chunks + 2 * step - 1) // (2 * step)
        cross = np.zeros(pairs, dtype=np.int64)
        for p in prange(pairs):
            lo = bounds[2 * p * step]
            mid = bounds[min(2 * p * step + step, chunks)]
            hi = bounds[min(2 * p * step + 2 * step, chunks)]
            cross[p] = _merge_count(src, dst, lo, mid, hi)
        inv += cross.sum()
        src, dst = dst, src
        swapped = not swapped
        step *= 2
    if swapped:
        a[:] = src
    return inv


@njit(cache=True, parallel=True)
def _sort_tied_runs(xs, ys, starts, stops):
    """Sort ys inside each run of tied xs (the runs are independent: in parallel); (tx, txy) of the runs."""
    tx = np.zeros(starts.shape[0], dtype=np.int64)
    txy = np.zeros(starts.shape[0], dtype=np.int64)
    for r in prange(starts.shape[0]):
        c = stops[r] - starts[r]
        tx[r] = c * (c - 1) // 2
        _sort_count_inversions(ys[starts[r]:stops[r]])  # only the sort is needed here
        txy[r] = _tie_pairs(ys[starts[r]:stops[r]])
    return tx.sum(), txy.sum()


@njit(cache=True)
def _tied_runs(xs):
    """(starts, stops) of the runs of equal values of length > 1 in the sorted xs."""
    n = xs.shape[0]
    starts = np.empty(n // 2 + 1, dtype=np.int64)
    stops = np.empty(n // 2 + 1, dtype=np.int64)
    k = 0
    start = 0
    for stop in range(1, n + 1):
        if stop == n or xs[stop] != xs[start]:
            if stop - start > 1:
                starts[k] = start
                stops[k] = stop
                k += 1
            start = stop
    return starts[:k], stops[:k]


@njit(cache=True, parallel=True)
def _gather(x, y, order):
    """(x[order], y[order]) in one parallel pass."""
    xs = np.empty(order.shape[0], dtype=x.dtype)
    ys = np.empty(order.shape[0], dtype=y.dtype)
    for i in prange(order.shape[0]):
        xs[i] = x[order[i]]
        ys[i] = y[order[i]]
    return xs, ys


def counts_sorted_parallel(xs, ys, chunks: int):
    """(S, tx, ty) as _counts_sorted, the sorts on ``chunks`` threads (ys is overwritten)."""
    n = xs.shape[0]
    starts, stops = _tied_runs(xs)
    tx, txy = _sort_tied_runs(xs, ys, starts, stops)
    discordant = _sort_count_inversions_parallel(ys, chunks)
    ty = _tie_pairs(ys)
    total = n * (n - 1) // 2
    return total - tx - ty + txy - 2 * discordant, tx, ty


@njit(cache=True)
def _counts_sorted(xs, ys):
    """(S, tx, ty) as _counts_direct, for xs sorted ascending and ys in the same order (ys is overwritten)."""
    n = xs.shape[0]
    # Sort y inside each run of tied x, then count joint ties (x_i == x_j and y_i == y_j).
    tx = np.int64(0)
    txy = np.int64(0)
    start = 0
    for stop in range(1, n + 1):
        if stop == n or xs[stop] != xs[start]:
            c = stop - start
            if c > 1:
                tx += c * (c - 1) // 2
                _sort_count_inversions(ys[start:stop])  # only the sort is needed here
                txy += _tie_pairs(ys[start:stop])
            start = stop
    discordant = _sort_count_inversions(ys)  # strict in y; tied x cannot invert after the run sort
    ty = _tie_pairs(ys)
    total = np.int64(n) * (n - 1) // 2
    return total - tx - ty + txy - 2 * discordant, tx, ty


@njit(cache=True)
def _counts(x, y):
    """(S, tx, ty) of _counts_direct, by the direct count up to DIRECT_MAX_N and by Knight's algorithm above."""
    if x.shape[0] <= DIRECT_MAX_N:
        return _counts_direct(x, y)
    order = np.argsort(x)
    return _counts_sorted(x[order], y[order])


@njit(cache=True)
def _tau_b_from_counts(n, s, tx, ty):
    """tau_b = S / sqrt(n0 - tx) / sqrt(n0 - ty), n0 = n (n - 1) / 2; NaN when x or y is constant (scipy's formula)."""
    total = np.int64(n) * (n - 1) // 2
    if tx == total or ty == total:
        return np.nan
    tau = s / np.sqrt(np.float64(total - tx)) / np.sqrt(np.float64(total - ty))
    return min(1.0, max(-1.0, tau))


# ----------------------------------------------------------------------------- pairwise accuracy
@njit(cache=True)
def _pacc(values, scores, value_ties):
    """#{i<j : v_i < v_j and s_i > s_j, or v_i > v_j and s_i < s_j, or v_i == v_j, as_greater, s_i < s_j} / pairs;
    pairs = C(n,2), or the pairs with unequal values for "skip" (NaN when there are none)."""
    n = values.shape[0]
    correct = np.int64(0)
    pairs = np.int64(0)
    for i in range(n - 1):
        vi = values[i]
        si = scores[i]
        for j in range(i + 1, n):
            if vi < values[j]:
                correct += np.int64(si > scores[j])
                pairs += 1
            elif vi > values[j] or value_ties == _AS_GREATER:
                correct += np.int64(si < scores[j])
                pairs += 1
            elif value_ties == _WRONG:
                pairs += 1
    if pairs == 0:
        return np.nan
    return correct / pairs


# ----------------------------------------------------------------------------- dispatch
@njit(cache=True)
def _statistic(x, y, code):
    """tau_b(x, y) for code == _TAU_B, else PACC(values=x, scores=y, value_ties=code); NaN for n < 2 or any NaN."""
    n = x.shape[0]
    if n < 2:
        return np.nan
    for i in range(n):
        if np.isnan(x[i]) or np.isnan(y[i]):
            return np.nan
    if code == _TAU_B:
        s, tx, ty = _counts(x, y)
        return _tau_b_from_counts(n, s, tx, ty)
    return _pacc(x, y, code)


@njit(cache=True, parallel=True)
def _statistic_rows(X, Y, code):
    """out_r = _statistic(X_r, Y_r, code); a 1-row X or Y is reused for every row."""
    m = max(X.shape[0], Y.shape[0])
    step_x = np.int64(X.shape[0] > 1)  # 0 reuses row 0
    step_y = np.int64(Y.shape[0] > 1)
    out = np.empty(m, dtype=np.float64)
    for r in prange(m):
        out[r] = _statistic(X[r * step_x], Y[r * step_y], code)
    return out


# ----------------------------------------------------------------------------- public API
def _rows_statistic(X, Y, names: tuple[str, str], code: int) -> np.ndarray:
    X2, Y2 = _as_row_pair(X, Y, names)
    if not X2.shape[0] or not Y2.shape[0]:
        return np.empty(0, dtype=np.float64)
    n = X2.shape[1]
    return run_parallel(_statistic_rows, max(X2.shape[0], Y2.shape[0]) * n * n, X2, Y2, code)


def kendall_tau_b(x, y) -> float:
    """tau_b = (concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y)), as scipy.stats.kendalltau(x, y).statistic.

    NaN when any value is NaN (scipy's nan_policy="propagate"), when x or y is constant, or when
    n < 2 (empty included). Lengths must match (InputError otherwise). O(n^2) up to DIRECT_MAX_N,
    O(n log n) above it, so millions of values take about a second.
    """
    x, y = _as_pair(x, y, ("x", "y"))
    n = x.shape[0]
    if n <= DIRECT_MAX_N:
        return float(_statistic(x, y, _TAU_B))
    if np.isnan(x).any() or np.isnan(y).any():
        return float("nan")
    # numpy's argsort is several times faster than Numba's on long arrays, so sort out here; the gather, the
    # sorts inside tied runs and the inversion count then use every thread numba has.
    order = np.argsort(x)
    threads = numba.get_num_threads()
    if n < PARALLEL_MIN_N or threads < 2:
        s, tx, ty = _counts_sorted(x[order], y[order])
    else:
        xs, ys = _gather(x, y, order)
        s, tx, ty = counts_sorted_parallel(xs, ys, threads)
    return float(_tau_b_from_counts(n, s, tx, ty))


def kendall_tau_b_rows(X, Y) -> np.ndarray:
    """tau_r = kendall_tau_b(X_r, Y_r) for every row r, in one parallel call (float64, shape (m,)).

    X and Y have shape (m, n); either may instead be one 1-D vector of length n, reused for every
    row. A row with a NaN, a constant row or n < 2 gives NaN, as kendall_tau_b.
    """
    return _rows_statistic(X, Y, ("X", "Y"), _TAU_B)


def pairwise_accuracy(values, scores, value_ties: str = "wrong") -> float:
    """PACC = #{i<j : the item with the smaller value has the strictly larger score} / C(n,2); score ties are wrong.

    A pair with equal values counts as wrong (``value_ties="wrong"``, PROTOCOL.md 1.4, where values are
    distinct anyway), or, with ``value_ties="as_greater"`` (PROTOCOL.md 3.5: "if d_i < d_j correct iff
    s_i > s_j, otherwise correct iff s_i < s_j"), as if v_i > v_j: correct iff s_i < s_j; or, with
    ``value_ties="skip"`` (bootstrap resamples, where repeated items tie), is left out of the count and of
    the denominator (NaN when every pair ties).
    NaN when any value or score is NaN, or when n < 2. O(n^2).
    With distinct values and no score ties, PACC = (1 + kendall_tau_b(values, -scores)) / 2.
    """
    code = _value_ties_code(value_ties)
    values, scores = _as_pair(values, scores, ("values", "scores"))
    return float(_statistic(values, scores, code))


def pairwise_accuracy_rows(values, scores, value_ties: str = "wrong") -> np.ndarray:
    """pacc_r = pairwise_accuracy(values_r, scores_r, value_ties) for every row r, in one parallel call.

    Shapes as kendall_tau_b_rows: (m, n) each, or one 1-D vector reused for every row.
    """
    code = _value_ties_code(value_ties)
    return _rows_statistic(values, scores, ("values", "scores"), code)
