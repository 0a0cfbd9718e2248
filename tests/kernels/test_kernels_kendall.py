"""Kendall tau-b and PACC kernels against scipy.stats.kendalltau and a naive O(n^2) PACC.

Integer-valued draws force ties; lengths on both sides of DIRECT_MAX_N exercise both tau paths.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fasteval.core.errors import InputError
from fasteval.core.kernels.kendall import (
    DIRECT_MAX_N,
    VALUE_TIES,
    _counts_direct,
    _counts_sorted,
    _statistic_rows,
    kendall_tau_b,
    kendall_tau_b_rows,
    pairwise_accuracy,
    pairwise_accuracy_rows,
)

# Long draws run pure-Python loops under NUMBA_DISABLE_JIT=1, so they get a quarter of the examples.
LONG = settings(max_examples=max(5, settings.default.max_examples // 4))


from naive import naive_pacc, scipy_tau  # noqa: E402 (after the settings it reads)

def same(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


# ----------------------------------------------------------------------------- strategies
ELEMENTS = {
    "few": st.integers(-2, 2).map(float),  # heavy ties
    "some": st.integers(-30, 30).map(float),
    "float": st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    "float32": st.floats(-1, 1, width=32),  # similarities: exact ties after float32 rounding
    "special": st.sampled_from([-math.inf, -1.0, -0.0, 0.0, 1.0, math.inf]),  # -0.0 == 0.0 is a tie
}


@st.composite
def vector_pairs(draw, min_n=0, max_n=40):
    n = draw(st.integers(min_n, max_n))
    kind_x, kind_y = draw(st.sampled_from(sorted(ELEMENTS))), draw(st.sampled_from(sorted(ELEMENTS)))
    x = draw(st.lists(ELEMENTS[kind_x], min_size=n, max_size=n))
    y = draw(st.lists(ELEMENTS[kind_y], min_size=n, max_size=n))
    return np.array(x), np.array(y)


@st.composite
def long_pairs(draw, min_n=DIRECT_MAX_N + 1, max_n=1500):
    """Seeded numpy draws (Hypothesis lists of this length are slow); n_distinct controls the ties."""
    n = draw(st.integers(min_n, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def one():
        k = draw(st.sampled_from([1, 2, 5, 50, 0]))  # 0 = continuous, 1 = constant
        return rng.standard_normal(n) if k == 0 else rng.integers(0, k, n).astype(np.float64)

    return one(), one()


# ----------------------------------------------------------------------------- tau-b
@given(vector_pairs())
def test_tau_b_matches_scipy(pair):
    x, y = pair
    assert same(kendall_tau_b(x, y), scipy_tau(x, y))


@LONG
@given(long_pairs())
def test_tau_b_long_matches_scipy_on_both_sort_paths(pair):
    x, y = pair
    expected = scipy_tau(x, y)
    assert same(kendall_tau_b(x, y), expected)  # numpy argsort outside the kernel
    assert same(kendall_tau_b_rows(x, y)[0], expected)  # Numba argsort inside the kernel


@given(vector_pairs(max_n=60))
def test_direct_and_knight_counts_agree(pair):
    """Called directly, so any length compares the two algorithms, not only lengths near DIRECT_MAX_N."""
    x, y = pair
    order = np.argsort(x)
    assert tuple(_counts_direct(x, y)) == tuple(_counts_sorted(x[order], y[order]))


@pytest.mark.parametrize("n", [3, DIRECT_MAX_N - 1, DIRECT_MAX_N, DIRECT_MAX_N + 1, 700])
def test_nan_anywhere_gives_nan(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    for where in (x, y):
        where[n // 2] = np.nan
        assert math.isnan(kendall_tau_b(x, y)) and math.isnan(scipy_tau(x, y))
        assert np.isnan(kendall_tau_b_rows(np.stack([x, x]), np.stack([y, y]))).all()
        where[n // 2] = 0.5


@pytest.mark.parametrize("x, y", [([], []), ([1.0], [2.0]), ([3, 3, 3], [1, 2, 3]), ([1, 2, 3], [7, 7, 7])])
def test_degenerate_inputs_give_nan(x, y):
    assert math.isnan(kendall_tau_b(x, y))
    assert math.isnan(kendall_tau_b_rows(x, y)[0])


def test_perfect_orders_and_a_scipy_docstring_example():
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau_b(np.arange(1000), -np.arange(1000.0)) == -1.0
    assert kendall_tau_b([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) == pytest.approx(-0.47140452079103173, abs=1e-15)


@pytest.mark.parametrize(
    "x, y", [([1, 2], [1, 2, 3]), (np.ones((2, 2)), np.ones((2, 2))), (["a", "b"], [1, 2]), (1.0, 2.0)]
)
def test_tau_b_bad_inputs_raise(x, y):
    with pytest.raises(InputError):
        kendall_tau_b(x, y)


# ----------------------------------------------------------------------------- rows
@st.composite
def row_blocks(draw):
    m, n = draw(st.integers(0, 8)), draw(st.integers(0, 30))
    cells = st.lists(ELEMENTS[draw(st.sampled_from(["few", "some", "float32"]))], min_size=m * n, max_size=m * n)
    return np.array(draw(cells)).reshape(m, n), np.array(draw(cells)).reshape(m, n)


@given(row_blocks())
def test_tau_b_rows_equal_the_single_vector_function(block):
    X, Y = block
    out = kendall_tau_b_rows(X, Y)
    assert out.dtype == np.float64 and out.shape == (X.shape[0],)
    for r in range(X.shape[0]):
        assert same(out[r], kendall_tau_b(X[r], Y[r]), 0.0) and same(out[r], scipy_tau(X[r], Y[r]))


@given(row_blocks())
def test_rows_broadcast_a_1d_vector(block):
    X, Y = block
    assume(X.shape[0] > 0)
    for rows_fn, fn in ((kendall_tau_b_rows, kendall_tau_b), (pairwise_accuracy_rows, pairwise_accuracy)):
        np.testing.assert_array_equal(rows_fn(X[0], Y), [fn(X[0], y) for y in Y])
        np.testing.assert_array_equal(rows_fn(Y, X[0]), [fn(y, X[0]) for y in Y])


def test_rows_shapes_and_errors():
    assert kendall_tau_b_rows(np.empty((0, 5)), np.empty((0, 5))).shape == (0,)
    assert kendall_tau_b_rows(np.arange(5.0), np.empty((0, 5))).shape == (0,)
    assert kendall_tau_b_rows([1, 2, 3], [3, 2, 1]).tolist() == [-1.0]
    for X, Y in [(np.ones((3, 4)), np.ones((2, 4))), (np.ones((3, 4)), np.ones((3, 5))),
                 (np.ones((1, 4)), np.ones((3, 4))), (np.ones((2, 2, 2)), np.ones((2, 2, 2)))]:
        with pytest.raises(InputError):
            kendall_tau_b_rows(X, Y)
        with pytest.raises(InputError):
            pairwise_accuracy_rows(X, Y)


def test_rows_heatmap_scale_in_one_call():
    """Thousands of 21-value rows (PROTOCOL.md 1.4 shape) agree with scipy row by row (spot-checked)."""
    m = 300 if numba.config.DISABLE_JIT else 3000
    rng = np.random.default_rng(7)
    values = np.linspace(0.0, 20.0, 21)
    sims = rng.integers(0, 60, (m, 21)).astype(np.float64)  # ties in the similarities
    taus = kendall_tau_b_rows(values, -sims)
    for r in range(0, m, 97):
        assert same(taus[r], scipy_tau(values, -sims[r]))
    np.testing.assert_array_equal(_statistic_rows(values[None, :], -sims, -1), taus)


# ----------------------------------------------------------------------------- PACC
@given(pair=vector_pairs(max_n=30), value_ties=st.sampled_from(sorted(VALUE_TIES)))
def test_pacc_matches_naive(pair, value_ties):
    values, scores = pair
    assert same(pairwise_accuracy(values, scores, value_ties), naive_pacc(values, scores, value_ties))


@given(block=row_blocks(), value_ties=st.sampled_from(sorted(VALUE_TIES)))
def test_pacc_rows_equal_the_single_vector_function(block, value_ties):
    V, S = block
    out = pairwise_accuracy_rows(V, S, value_ties)
    assert out.shape == (V.shape[0],)
    for r in range(V.shape[0]):
        assert same(out[r], pairwise_accuracy(V[r], S[r], value_ties), 0.0)


@given(st.lists(st.integers(-50, 50), max_size=30, unique=True), st.data())
def test_pacc_rules_differ_only_on_value_ties(values, data):
    scores = data.draw(st.lists(ELEMENTS["few"], min_size=len(values), max_size=len(values)))
    assert same(pairwise_accuracy(values, scores, "wrong"), pairwise_accuracy(values, scores, "as_greater"), 0.0)


def test_pacc_method_3_5_tie_rule_by_hand():
    # d = (1, 1): "otherwise" branch, correct iff s_0 < s_1.
    assert pairwise_accuracy([1, 1], [0.2, 0.9], "as_greater") == 1.0
    assert pairwise_accuracy([1, 1], [0.9, 0.2], "as_greater") == 0.0
    assert pairwise_accuracy([1, 1], [0.2, 0.9], "wrong") == 0.0
    # Score ties are wrong under both rules.
    assert pairwise_accuracy([0, 1, 2], [0.5, 0.5, 0.1]) == pytest.approx(2 / 3)


def test_pacc_skip_rule_by_hand():
    # (1, 1) tie skipped; (1, 2) and (1, 2) right (the smaller value has the larger score); (1, 1) ... of 3 pairs
    assert pairwise_accuracy([1, 1, 2], [0.9, 0.5, 0.1], "skip") == 1.0
    assert pairwise_accuracy([1, 1, 2], [0.9, 0.5, 0.1], "wrong") == pytest.approx(2 / 3)
    assert math.isnan(pairwise_accuracy([3, 3, 3], [0.1, 0.2, 0.3], "skip"))


def test_pacc_edge_cases():
    assert math.isnan(pairwise_accuracy([], []))
    assert math.isnan(pairwise_accuracy([1.0], [1.0]))
    assert math.isnan(pairwise_accuracy([1.0, 2.0, 3.0], [1.0, np.nan, 0.0]))
    with pytest.raises(InputError):
        pairwise_accuracy([1, 2], [1, 2], value_ties="ignore")
    with pytest.raises(InputError):
        pairwise_accuracy_rows([[1, 2]], [[1, 2]], value_ties=None)
    with pytest.raises(InputError):
        pairwise_accuracy([1, 2, 3], [1, 2])


# ----------------------------------------------------------------------------- PROTOCOL.md 5.2
@st.composite
def distinct_ranked(draw, min_n=2, max_n=60):
    """Ascending distinct values (a protocol range) and scores without ties (a permutation, maybe scaled)."""
    n = draw(st.integers(min_n, max_n))
    values = np.sort(np.array(draw(st.lists(st.integers(-10**6, 10**6), min_size=n, max_size=n, unique=True)), float))
    scores = np.array(draw(st.permutations(range(n))), dtype=np.float64) * draw(st.sampled_from([1.0, 1e-3, -7.5]))
    return values, scores


@given(st.one_of(distinct_ranked(), distinct_ranked(21, 21), distinct_ranked(25, 25)))
def test_method_5_2_integer_numerator_and_pacc_is_half_one_plus_tau(case):
    values, scores = case
    n = len(values)
    tau = kendall_tau_b(values, -scores)
    k = tau * math.comb(n, 2)  # = C(n,2) - 2 * discordant: an integer of C(n,2)'s parity
    assert abs(k - round(k)) < 1e-9
    assert round(k) % 2 == math.comb(n, 2) % 2
    if n in (21, 25):  # the protocol's range sizes: C(n,2) = 210, 300, so k is even (PROTOCOL.md 5.2)
        assert round(k) % 2 == 0
    for value_ties in VALUE_TIES:
        pacc = pairwise_accuracy(values, scores, value_ties)
        assert pacc == pytest.approx((1 + tau) / 2, abs=1e-12)
        assert same(pacc, naive_pacc(values, scores, value_ties))


@st.composite
def runs_of_order(draw):
    """Lists made of runs: ascending, strictly descending, constant or shuffled, of any length (ties included)."""
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        values = draw(st.lists(st.integers(-5, 5), min_size=0, max_size=40))
        shape = draw(st.sampled_from(["ascending", "descending", "constant", "as drawn"]))
        if shape == "ascending":
            values = sorted(values)
        elif shape == "descending":
            values = sorted(set(values), reverse=True)
        elif shape == "constant":
            values = values[:1] * len(values)
        parts.extend(values)
    return np.array(parts, dtype=np.float64)


@given(runs_of_order())
def test_inversion_count_on_presorted_runs_is_the_pair_count(a):
    """The natural merge sort reuses runs already in order (reversing strictly descending ones): its count must
    still be #{i < j : a_i > a_j} counted pair by pair, and its result the sorted list."""
    from fasteval.core.kernels.kendall import _sort_count_inversions

    expected = sum(int(a[i] > a[j]) for i in range(len(a)) for j in range(i + 1, len(a)))
    b = a.copy()
    assert _sort_count_inversions(b) == expected
    np.testing.assert_array_equal(b, np.sort(a))


@pytest.mark.parametrize("chunks", [1, 2, 3, 5])
def test_parallel_inversion_count_is_the_serial_one(chunks):
    from fasteval.core.kernels.kendall import _sort_count_inversions, _sort_count_inversions_parallel

    rng = np.random.default_rng(chunks)
    a = np.round(rng.normal(size=5003), 1)  # ties included
    b = a.copy()
    assert _sort_count_inversions_parallel(a, chunks) == _sort_count_inversions(b)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.sort(a))


def test_one_long_list_on_every_thread_matches_scipy():
    """Past PARALLEL_MIN_N one list is counted on every thread (gather, tied runs, inversions)."""
    from fasteval.core.kernels.kendall import PARALLEL_MIN_N

    rng = np.random.default_rng(11)
    n = PARALLEL_MIN_N + 4321
    x = np.round(rng.normal(size=n), 2)  # many ties in x and in y
    y = np.round(x + rng.normal(size=n), 1)
    assert same(kendall_tau_b(x, y), scipy_tau(x, y))
    assert same(kendall_tau_b(y, x), scipy_tau(y, x))
