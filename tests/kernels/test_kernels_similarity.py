"""Similarity kernels against sklearn, numpy/scipy float64 references and exact (fsum) sums."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist
from sklearn.metrics.pairwise import cosine_similarity

from fasteval.core.errors import InputError
from fasteval.core.kernels.similarity import METRICS, anchor_similarity, paired_similarity, similarity_matrix

# Multiples of 1/128 up to ~8: exact in float32, and every dot product of them is exact in float64.
EXACT = st.integers(-1000, 1000).map(lambda v: v / 128)


@st.composite
def embedding_pairs(draw, max_rows=12, max_dim=16, min_rows=1):
    d = draw(st.integers(1, max_dim))
    a = draw(arrays(np.float32, (draw(st.integers(min_rows, max_rows)), d), elements=EXACT))
    b = draw(arrays(np.float32, (draw(st.integers(min_rows, max_rows)), d), elements=EXACT))
    if draw(st.booleans()) and a.shape[0] > 1:
        a[draw(st.integers(0, a.shape[0] - 1))] = 0.0  # a zero row
    return a, b


def unit_rows_exact(a: np.ndarray) -> np.ndarray:
    """Rows over their exactly summed float64 norms, rounded to float32; zero rows stay zero."""
    a64 = a.astype(np.float64)
    norms = np.array([math.sqrt(math.fsum(row * row)) for row in a64])
    return np.where(norms[:, None] > 0, a64 / np.where(norms > 0, norms, 1.0)[:, None], 0.0).astype(np.float32)


def fsum_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32(exact sum of a_ik b_jk) for every (i, j)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return np.array([[math.fsum(u * v) for v in b64] for u in a64], dtype=np.float32)


# ----------------------------------------------------------------------------- against references
@given(embedding_pairs())
def test_cos_matches_sklearn_on_float32(pair):
    a, b = pair
    got = similarity_matrix(a, b, "cos")
    assert got.dtype == np.float32 and got.shape == (a.shape[0], b.shape[0]) and got.flags.c_contiguous
    np.testing.assert_allclose(got, cosine_similarity(a, b), rtol=0, atol=2e-6)
    np.testing.assert_allclose(similarity_matrix(a, metric="cos"), cosine_similarity(a), rtol=0, atol=2e-6)


@given(embedding_pairs())
def test_dot_and_l2_equal_exact_float64_results_rounded_once(pair):
    a, b = pair
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(similarity_matrix(a, b, "dot"), (a64 @ b64.T).astype(np.float32))
    np.testing.assert_array_equal(similarity_matrix(a, b, "l2"), (-cdist(a64, b64)).astype(np.float32))


@pytest.mark.parametrize("metric", ["cos", "dot"])
def test_entries_are_the_rounded_exact_sums_on_real_sized_embeddings(metric):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((24, 384)) * 0.05).astype(np.float32)
    b = (rng.standard_normal((9, 384)) * 0.05).astype(np.float32)
    if metric == "cos":
        expected = fsum_matrix(unit_rows_exact(a), unit_rows_exact(b))
    else:
        expected = fsum_matrix(a, b)
    np.testing.assert_array_equal(similarity_matrix(a, b, metric), expected)


# ----------------------------------------------------------------------------- invariances
@given(pair=embedding_pairs(max_rows=10), metric=st.sampled_from(sorted(METRICS)), data=st.data())
def test_entries_do_not_depend_on_the_batch(pair, metric, data):
    a, b = pair
    s = similarity_matrix(a, metric=metric)
    np.testing.assert_array_equal(s, s.T)  # the same sum in the same order, so bit-identical
    perm = np.array(data.draw(st.permutations(range(a.shape[0]))), dtype=np.intp)
    np.testing.assert_array_equal(similarity_matrix(a[perm], metric=metric), s[perm][:, perm])
    k = data.draw(st.integers(0, a.shape[0] - 1))
    np.testing.assert_array_equal(similarity_matrix(a[:k + 1], a, metric), s[:k + 1])
    np.testing.assert_array_equal(anchor_similarity(a, k, metric), s[k])
    np.testing.assert_array_equal(anchor_similarity(a, k - a.shape[0], metric), s[k])
    np.testing.assert_array_equal(paired_similarity(a, a, metric), np.diag(s))
    ab = similarity_matrix(a, b, metric)
    n = min(a.shape[0], b.shape[0])
    np.testing.assert_array_equal(paired_similarity(a[:n], b[:n], metric), np.diag(ab)[:n])


def test_zero_rows_have_cosine_zero_and_self_cosine_is_one_otherwise():
    a = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [1.0, 1.0, 1.0]], dtype=np.float32)
    s = similarity_matrix(a)
    assert s[0].tolist() == [0.0, 0.0, 0.0] and s[:, 0].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(np.diag(s)[1:], 1.0, rtol=0, atol=2e-7)
    np.testing.assert_array_equal(similarity_matrix(a, metric="dot")[0], 0.0)
    np.testing.assert_array_equal(similarity_matrix(a, metric="l2")[0], np.float32([-0.0, -5.0, -math.sqrt(3)]))


def test_float64_input_is_cast_to_float32_first():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 10))
    np.testing.assert_array_equal(similarity_matrix(a), similarity_matrix(a.astype(np.float32)))
    a32 = a.astype(np.float32)
    np.testing.assert_array_equal(paired_similarity(a.tolist(), a[::-1]), paired_similarity(a32, a[::-1]))


def test_empty_inputs_give_empty_results():
    assert similarity_matrix(np.empty((0, 4))).shape == (0, 0)
    assert similarity_matrix(np.empty((0, 4)), np.ones((3, 4))).shape == (0, 3)
    assert similarity_matrix(np.ones((3, 4)), np.empty((0, 4)), "l2").shape == (3, 0)
    assert paired_similarity(np.empty((0, 4)), np.empty((0, 4))).shape == (0,)
    assert similarity_matrix(np.empty((0, 4))).dtype == np.float32


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "a, b, metric",
    [
        (np.ones(4), None, "cos"),  # 1-D
        (np.ones((2, 2, 2)), None, "cos"),  # 3-D
        (np.ones((2, 3)), np.ones((2, 4)), "cos"),  # dimensions differ
        (np.ones((0, 3)), np.ones((2, 4)), "dot"),  # dimensions differ, even when empty
        (np.ones((2, 0)), None, "cos"),  # no columns
        (np.array([[1.0, np.nan]]), None, "dot"),
        (np.array([[1.0, np.inf]]), None, "l2"),
        (np.array([[1e300, 1.0]]), None, "dot"),  # beyond float32
        ([["a", "b"]], None, "cos"),
        (np.ones((2, 3)), None, "cosine"),  # unknown metric
    ],
)
def test_bad_inputs_raise_input_error(a, b, metric):
    with pytest.raises(InputError) as err:
        similarity_matrix(a, b, metric)
    assert "Fix:" in str(err.value) and "\n" not in str(err.value)


def test_paired_and_anchor_errors():
    with pytest.raises(InputError):
        paired_similarity(np.ones((3, 4)), np.ones((2, 4)))
    for bad in (3, -4, 1.0, True, None):
        with pytest.raises(InputError):
            anchor_similarity(np.ones((3, 4)), bad)
    with pytest.raises(InputError):
        anchor_similarity(np.empty((0, 4)), 0)


def test_blas_path_equals_kernel_path(monkeypatch):
    """Large cos/dot grids take float64 BLAS; the Numba kernel on the same input agrees to the last bit
    except at float32 rounding boundaries (at most one ulp). Without the JIT (test_nojit.py) the kernel is plain
    Python, so there the grid is smaller and the BLAS threshold lowered to it (the same two paths)."""
    from fasteval.core.kernels import similarity as sim

    rng = np.random.default_rng(7)
    rows = (100, 90) if os.environ.get("NUMBA_DISABLE_JIT") == "1" else (700, 650)
    a = rng.normal(size=(rows[0], 384)).astype(np.float32)
    b = rng.normal(size=(rows[1], 384)).astype(np.float32)
    monkeypatch.setattr(sim, "BLAS_MIN_WORK", min(sim.BLAS_MIN_WORK, a.shape[0] * b.shape[0] * a.shape[1]))
    for metric in ("cos", "dot"):
        fast = sim.similarity_matrix(a, b, metric=metric)
        ua, ub, code = sim._prepare(a, b, metric, ("a", "b"))
        slow = sim._similarity_matrix(ua, ub, code)
        ulps = np.abs(fast.view(np.int32).astype(np.int64) - slow.view(np.int32).astype(np.int64))
        assert ulps.max() <= 1 and (ulps == 0).mean() > 0.999
