"""Batched similarities of embedding rows: validating wrappers over Numba kernels.

Embeddings are cast to float32 (the protocol's dtype, PROTOCOL.md 1.3 / 1.8 / 2.3). Every similarity is
accumulated in float64 in index order and rounded once to float32: the result is deterministic
(no BLAS blocking or thread-count effects), symmetric to the bit, and equal to the correctly
rounded float32 value of the exact sum except when that sum sits within ~d * 2^-53 of a float32
rounding boundary. Exact float32 ties between different pairs therefore arise at the paper's rate
(PROTOCOL.md 2.3 counts ~98 among 4950), though not always between the same pairs: the paper summed in
float32 (BLAS), whose last-bit errors move a few values. Kendall tau-b treats ties as ties.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..errors import InputError
from ._threads import run_parallel
from .inputs import METRICS, _as_embedding_pair, _as_embeddings, _metric_code

__all__ = ["METRICS", "anchor_similarity", "paired_similarity", "similarity_matrix"]

_L2, _HAMMING = METRICS["l2"], METRICS["hamming"]
# From this many multiply-adds on, cos/dot matrices go through float64 BLAS (protocol cells stay far below).
BLAS_MIN_WORK = 1 << 24


# ----------------------------------------------------------------------------- kernels
@njit(cache=True)
def _dot(u, v):
    """sum_k u_k v_k, accumulated in float64 in index order (a product of two float32 is exact in float64)."""
    acc = 0.0
    for k in range(u.shape[0]):
        acc += np.float64(u[k]) * np.float64(v[k])
    return acc


@njit(cache=True)
def _neg_euclidean(u, v):
    """-sqrt(sum_k (u_k - v_k)^2), accumulated in float64 in index order; 0 for u == v."""
    acc = 0.0
    for k in range(u.shape[0]):
        d = np.float64(u[k]) - np.float64(v[k])
        acc += d * d
    return -np.sqrt(acc)


@njit(cache=True)
def _similarity(u, v, code):
    """-||u - v||_2 for "l2", else u . v (the "cos" rows are unit rows by now)."""
    if code == _L2:
        return _neg_euclidean(u, v)
    return _dot(u, v)


@njit(cache=True)
def _unit_rows(a):
    """a_i / ||a_i||_2, norm in float64, quotient rounded to float32; zero rows stay zero (as sklearn normalize)."""
    # Serial: O(n d) next to the O(n_a n_b d) matrix, and a parallel launch would cost more on small inputs.
    out = np.zeros(a.shape, dtype=np.float32)
    for i in range(a.shape[0]):
        norm = np.sqrt(_dot(a[i], a[i]))
        if norm > 0.0:
            for k in range(a.shape[1]):
                out[i, k] = np.float32(np.float64(a[i, k]) / norm)
    return out


@njit(cache=True, parallel=True)
def _similarity_matrix(a, b, code):
    """out_ij = float32(_similarity(a_i, b_j, code)), shape (n_a, n_b)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float32)
    for i in prange(a.shape[0]):
        for j in range(b.shape[0]):
            out[i, j] = np.float32(_similarity(a[i], b[j], code))
    return out


@njit(cache=True, parallel=True)
def _paired_similarity(a, b, code):
    """out_i = float32(_similarity(a_i, b_i, code)), shape (n,)."""
    out = np.empty(a.shape[0], dtype=np.float32)
    for i in prange(a.shape[0]):
        out[i] = np.float32(_similarity(a[i], b[i], code))
    return out


# ----------------------------------------------------------------------------- public API
def _prepare(a, b, metric: str, names: tuple[str, str]):
    code = _metric_code(metric)
    a, b = _as_embedding_pair(a, b, names)
    if code == METRICS["cos"]:
        same = b is a
        a = _unit_rows(a)
        b = a if same else _unit_rows(b)
    return a, b, code


def similarity_matrix(a, b=None, metric: str = "cos") -> np.ndarray:
    """S_ij = sim(a_i, b_j) as float32 (n_a, n_b); b=None means b = a.

    metric: "cos" = a_i . b_j after normalising every row to unit length (a zero row stays zero, so
    its similarities are 0, itself included: sklearn ``cosine_similarity`` on float32 input);
    "dot" = a_i . b_j on the rows as given; "l2" = -||a_i - b_j||_2 (larger = more similar); "hamming" = 1 -
    (sign bits that differ) / d over the rows' signs (x > 0: binary vectors; ``bits.hamming_similarity``).
    Inputs are cast to float32; each entry is summed in float64 and rounded once, so entries do not
    depend on the batch, and S(a) is exactly symmetric. 0 rows give an empty (n_a, n_b) result.
    InputError for non-2-D input, different dimensions, NaN/inf, or an unknown metric.
    """
    a, b, code = _prepare(a, b, metric, ("a", "b"))
    if code == _HAMMING:
        from .bits import hamming_similarity, pack_signs

        packed = pack_signs(a)
        return hamming_similarity(packed, packed if b is a else pack_signs(b), bits=a.shape[1])
    if not a.shape[0] or not b.shape[0]:
        return np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    work = a.shape[0] * b.shape[0] * a.shape[1]
    if work >= BLAS_MIN_WORK and code != _L2:
        # Large grids: the same float64 sums through BLAS (blocked, SIMD), rounded once to float32. Its
        # summation order differs, which moves a float64 sum by ~d * 2^-53 and so the float32 result only
        # at a rounding boundary: the accuracy statement above holds unchanged (tests compare both paths).
        a64 = a.astype(np.float64)
        return (a64 @ (a64 if b is a else b.astype(np.float64)).T).astype(np.float32)
    return run_parallel(_similarity_matrix, work, a, b, code)


def paired_similarity(a, b, metric: str = "cos") -> np.ndarray:
    """s_i = sim(a_i, b_i) as float32 (n,): row i of a against row i of b (PROTOCOL.md 1.8 conversion curves).

    Same metrics, rounding and errors as similarity_matrix; a and b must have the same shape.
    """
    a, b, code = _prepare(a, b, metric, ("a", "b"))
    if a.shape[0] != b.shape[0]:
        raise InputError(
            f"a has {a.shape[0]} rows but b has {b.shape[0]}; paired similarity needs one b row per a row.",
            "pass the two sides of the same value list.",
        )
    if code == _HAMMING:
        from .bits import hamming_similarity, pack_signs

        return hamming_similarity(pack_signs(a), pack_signs(b), bits=a.shape[1], paired=True)
    if not a.shape[0]:
        return np.zeros(0, dtype=np.float32)
    return run_parallel(_paired_similarity, a.shape[0] * a.shape[1], a, b, code)


def anchor_similarity(embeddings, anchor_index: int = 0, metric: str = "cos") -> np.ndarray:
    """s_k = sim(e_anchor, e_k) as float32 (n,) for every row k, the anchor itself included (PROTOCOL.md 1.4 step 2).

    Equal to similarity_matrix(embeddings)[anchor_index] bit for bit. anchor_index may be negative
    (Python indexing); out of range is an InputError.
    """
    emb = _as_embeddings(embeddings, "embeddings")
    n = emb.shape[0]
    if not isinstance(anchor_index, (int, np.integer)) or isinstance(anchor_index, bool) or not -n <= anchor_index < n:
        raise InputError(
            f"anchor_index {anchor_index!r} is not a row of embeddings with {n} rows.",
            f"pass an integer in [{-n}, {n - 1}] (0 = the first item of the range)." if n else "pass at least one row.",
        )
    anchor = anchor_index % n
    return similarity_matrix(emb[anchor : anchor + 1], emb, metric)[0]
