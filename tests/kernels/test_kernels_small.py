"""The numpy forms of the statistics, distances and similarities (``kernels.small``, what the exams' small grids
and ``fasteval check`` run on, chosen by ``kernels.pick``) against the JIT kernels: tau-b (one list, pair by pair
or by Knight's count, and by rows), PACC and the Levenshtein distances equal to the bit (the same integer counts,
the same float64 operations), ties, infinities, -0.0, NaN, n < 2 and empty input included; the similarities
within one float32 ulp (a float64 sum summed in another order can cross a rounding boundary), exactly equal where
the sums are exact; bad input refused with the kernels' own line; ``pick`` choosing by size and giving the same
numbers on either side of its limits."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fasteval.core.errors import InputError
from fasteval.core.kernels import kendall, levenshtein, pick, similarity, small
from test_kernels_kendall import VALUE_TIES, long_pairs, vector_pairs
from test_kernels_similarity import embedding_pairs


def bits(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@given(pair=vector_pairs(max_n=40))
def test_tau_b_is_the_kernels_to_the_bit(pair):
    x, y = pair
    assert bits(small.kendall_tau_b(x, y), kendall.kendall_tau_b(x, y))


@given(pair=vector_pairs(max_n=40), value_ties=st.sampled_from(sorted(VALUE_TIES)))
def test_pacc_is_the_kernels_to_the_bit(pair, value_ties):
    values, scores = pair
    assert bits(small.pairwise_accuracy(values, scores, value_ties),
                kendall.pairwise_accuracy(values, scores, value_ties))


@given(pair=vector_pairs(max_n=30), resamples=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_bootstrap_counts_are_the_kernels_rows_to_the_bit(pair, resamples, seed):
    # a bootstrap's statistics from each draw's item counts (numpy, no pair signs held) against the kernels on the
    # drawn rows themselves: items drawn twice, tied values and scores, NaN and infinities, n of 0 and 1 included
    values, scores = pair
    n = len(values)
    idx = np.random.default_rng(seed).integers(0, max(n, 1), size=(resamples, n))
    x, s = np.ascontiguousarray(values[idx]), np.ascontiguousarray(scores[idx])
    tau, pacc = small.bootstrap_rows(values, scores, idx)
    assert np.array_equal(tau, kendall.kendall_tau_b_rows(x, -s), equal_nan=True)
    assert np.array_equal(pacc, kendall.pairwise_accuracy_rows(x, s, "skip"), equal_nan=True)


def test_a_large_bootstrap_takes_the_kernels_and_gives_what_the_counts_give(monkeypatch):
    rng = np.random.default_rng(3)
    values, scores = rng.integers(0, 6, 25).astype(float), rng.normal(size=25)
    idx = rng.integers(0, 25, size=(300, 25))
    counts = pick.bootstrap_rows(values, scores, idx)
    monkeypatch.setattr(pick, "BOOTSTRAP_WORK_MAX", 0)
    rows = pick.bootstrap_rows(values, scores, idx)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(counts, rows))


@given(pair=long_pairs(min_n=small.SIGNS_MAX_N + 1, max_n=3000))
def test_long_tau_b_by_knights_count_is_the_kernels_to_the_bit(pair):
    x, y = pair
    assert bits(small.kendall_tau_b(x, y), kendall.kendall_tau_b(x, y))


@st.composite
def row_pairs(draw, max_rows=6, max_n=30):
    """(m, n) rows of values with ties, infinities and NaN, or one side a single 1-D row."""
    m, n = draw(st.integers(0, max_rows)), draw(st.integers(0, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pool = np.array([0.0, -0.0, 1.0, 2.0, -3.5, math.inf, -math.inf, math.nan])

    def one():
        kind = draw(st.sampled_from(["ties", "normal", "special"]))
        if kind == "ties":
            return rng.integers(0, 3, (m, n)).astype(np.float64)
        if kind == "normal":
            return rng.standard_normal((m, n))
        return rng.choice(pool, (m, n), p=[0.2, 0.1, 0.2, 0.2, 0.1, 0.08, 0.08, 0.04])

    x, y = one(), one()
    if m and draw(st.booleans()):
        y = y[0]  # one row, reused for every row of x
    return x, y


@given(pair=row_pairs(), value_ties=st.sampled_from(sorted(VALUE_TIES)))
def test_row_statistics_are_the_kernels_to_the_bit(pair, value_ties):
    X, Y = pair
    np.testing.assert_array_equal(small.kendall_tau_b_rows(X, Y), kendall.kendall_tau_b_rows(X, Y))
    np.testing.assert_array_equal(small.pairwise_accuracy_rows(X, Y, value_ties),
                                  kendall.pairwise_accuracy_rows(X, Y, value_ties))


@st.composite
def packed(draw):
    """Strings over a small alphabet (many equal symbols, empty strings) or token id lists."""
    n = draw(st.integers(0, 14))
    if draw(st.booleans()):
        strings = draw(st.lists(st.text(alphabet="ab1.-\u00e9", max_size=9), min_size=n, max_size=n))
        return levenshtein.encode_strings(strings)
    return levenshtein.pack_sequences(draw(st.lists(st.lists(st.integers(0, 4), max_size=7), min_size=n,
                                                    max_size=n)))


@given(seqs=packed())
def test_levenshtein_all_pairs_is_the_kernels(seqs):
    ours, theirs = small.levenshtein_all_pairs(seqs), levenshtein.levenshtein_all_pairs(seqs)
    assert ours.dtype == theirs.dtype == np.int32
    np.testing.assert_array_equal(ours, theirs)


def test_exam2_strings_and_a_pair_by_hand():
    from fasteval.core import protocol as P

    strings = levenshtein.encode_strings([it.text for it in P.exam2_items()])
    np.testing.assert_array_equal(small.levenshtein_all_pairs(strings), levenshtein.levenshtein_all_pairs(strings))
    # kitten -> sitting: 3 edits; "" -> "abc": 3; equal strings: 0
    np.testing.assert_array_equal(small.levenshtein_all_pairs(levenshtein.encode_strings(
        ["kitten", "sitting", "", "kitten"])), [3, 6, 0, 7, 3, 6])


@given(pair=embedding_pairs(max_rows=10), metric=st.sampled_from(["cos", "dot", "l2", "hamming"]))
def test_paired_similarities_are_the_kernels_within_one_float32_ulp(pair, metric):
    a, b = pair
    b = np.resize(b, a.shape).astype(np.float32)
    ours, theirs = small.paired_similarity(a, b, metric), similarity.paired_similarity(a, b, metric)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (len(a),)
    ulp = np.spacing(np.maximum(np.abs(ours), np.abs(theirs)))
    assert (np.abs(ours.astype(np.float64) - theirs) <= ulp).all()


@pytest.mark.parametrize("n", [pick.LIST_MAX, pick.LIST_MAX + 1])
def test_pick_gives_one_tau_on_either_side_of_its_limit(n):
    rng = np.random.default_rng(n)
    x, y = rng.integers(0, 50, n).astype(np.float64), rng.standard_normal(n)
    assert bits(pick.kendall_tau_b(x, y), kendall.kendall_tau_b(x, y))


def test_pick_gives_the_same_rows_beyond_numpys_limit():
    # 1,100 rows of 45 values: 1.1 M pair signs, past ROW_PAIRS_MAX, so the kernels; numpy's chunks agree
    rng = np.random.default_rng(0)
    X, Y = rng.integers(0, 9, (1100, 45)).astype(np.float64), rng.standard_normal((1100, 45))
    assert pick._row_work(X, Y) > pick.ROW_PAIRS_MAX
    np.testing.assert_array_equal(pick.kendall_tau_b_rows(X, Y), small.kendall_tau_b_rows(X, Y))
    np.testing.assert_array_equal(pick.pairwise_accuracy_rows(X, Y, "skip"), small.pairwise_accuracy_rows(X, Y, "skip"))


@pytest.mark.parametrize("call", [
    lambda m: m.kendall_tau_b(3.0, [1.0]), lambda m: m.kendall_tau_b_rows([[1.0, 2.0]], [[1.0]]),
    lambda m: m.pairwise_accuracy_rows("ab", [1.0, 2.0]), lambda m: m.levenshtein_all_pairs(["12", "13"]),
    lambda m: m.similarity_matrix([[1.0, 2.0], [3.0]]), lambda m: m.paired_similarity(np.ones((2, 3)), np.ones((3, 3))),
])
def test_pick_refuses_bad_input_with_the_kernels_line(call):
    from fasteval.core.kernels import levenshtein as lev

    kernels = {"kendall_tau_b": kendall, "kendall_tau_b_rows": kendall, "pairwise_accuracy_rows": kendall,
               "levenshtein_all_pairs": lev, "similarity_matrix": similarity, "paired_similarity": similarity}
    lines = []
    for module in (pick, type("K", (), {k: staticmethod(getattr(v, k)) for k, v in kernels.items()})):
        with pytest.raises(InputError) as err:
            call(module)
        lines.append(str(err.value))
    assert lines[0] == lines[1]


def test_a_sweep_without_a_bootstrap_never_imports_numba(tmp_path):
    """The paper's exams at their size run on numpy: numba (and its kernels' load) stays out of the process."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from fasteval.core.plan import evaluate\n"
            "class E:\n"
            "    def encode(self, texts):\n"
            "        return np.random.default_rng(len(texts)).standard_normal((len(texts), 16)).astype('float32')\n"
            "r = evaluate(E(), bootstrap=0)\n"
            "print(round(r.exams['exam1'].summary()['tau'], 6), 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "False" and math.isfinite(float(out[0]))


@pytest.mark.parametrize("x, y", [([], []), ([1.0], [2.0]), ([1.0, math.nan, 3.0], [1.0, 2.0, 3.0]),
                                  ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])])
def test_nan_for_what_the_kernels_call_nan(x, y):
    assert math.isnan(small.kendall_tau_b(x, y)) and math.isnan(kendall.kendall_tau_b(x, y))
    if len(x) < 2 or any(map(math.isnan, x)):
        assert math.isnan(small.pairwise_accuracy(x, y)) and math.isnan(kendall.pairwise_accuracy(x, y))
    assert math.isnan(small.pairwise_accuracy([2.0, 2.0], [1.0, 0.0], "skip")), "every pair ties: no pair"


@given(pair=embedding_pairs(max_rows=10), metric=st.sampled_from(["cos", "dot", "l2"]))
def test_similarities_are_the_kernels_within_one_float32_ulp(pair, metric):
    a, b = pair
    ours, theirs = small.similarity_matrix(a, b, metric), similarity.similarity_matrix(a, b, metric)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    ulp = np.spacing(np.maximum(np.abs(ours), np.abs(theirs)))
    assert (np.abs(ours.astype(np.float64) - theirs) <= ulp).all()
    if metric == "dot":  # small integers: every sum is exact, whatever its order
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(small.similarity_matrix(a, None, metric).shape, (len(a), len(a)))


@pytest.mark.parametrize("call", [
    lambda m: m.kendall_tau_b([1.0, 2.0], [1.0]),
    lambda m: m.pairwise_accuracy([1.0, 2.0], [1.0, 2.0], "sometimes"),
])
def test_bad_statistics_input_is_the_kernels_line(call):
    lines = []
    for module in (small, kendall):
        with pytest.raises(InputError) as err:
            call(module)
        lines.append(str(err.value))
    assert lines[0] == lines[1]


@pytest.mark.parametrize("a, b, metric", [
    (np.ones((2, 3)), np.ones((2, 4)), "cos"), (np.ones((2, 3)), np.ones((2, 3)), "cosine?"),
    (np.array([[np.nan, 1.0]]), np.ones((1, 2)), "dot"), (np.ones(3), np.ones((1, 3)), "dot"),
])
def test_bad_embeddings_are_the_kernels_line(a, b, metric):
    lines = []
    for module in (small, similarity):
        with pytest.raises(InputError) as err:
            module.similarity_matrix(a, b, metric)
        lines.append(str(err.value))
    assert lines[0] == lines[1]


def test_sizes_past_the_numpy_forms_are_refused():
    with pytest.raises(InputError, match="kernels.kendall"):
        small.kendall_tau_b(np.arange(small.MAX_LIST + 1.0), np.arange(small.MAX_LIST + 1.0))
    with pytest.raises(InputError, match="kernels.kendall"):
        small.kendall_tau_b_rows(np.ones((1, small.MAX_VALUES + 1)), np.ones(small.MAX_VALUES + 1))
    with pytest.raises(InputError, match="kernels.levenshtein"):
        small.levenshtein_all_pairs(levenshtein.encode_strings(["a" * 200] * 200))
    with pytest.raises(InputError, match="kernels.similarity"):
        small.similarity_matrix(np.ones((2048, 1024)), np.ones((8, 1024)))


@given(x=st.lists(st.floats(-1e6, 1e6) | st.sampled_from([0.0, -0.0, 1.0, math.nan, math.inf, -math.inf]),
                  max_size=40),
       sigma=st.sampled_from([0.3, 0.8, 1.0, 2.5, 7.0]))
def test_gaussian_smooth_is_scipys_to_the_bit(x, sigma):
    """The same weights and float64 operations in the same order as scipy's symmetric correlation (reflect
    edges, radii longer than the input, NaN and infinities carried as there)."""
    from scipy.ndimage import gaussian_filter1d

    ours, scipys = small.gaussian_smooth(np.array(x), sigma), gaussian_filter1d(np.array(x, dtype=np.float64), sigma)
    assert ours.dtype == np.float64 and ours.shape == (len(x),)
    np.testing.assert_array_equal(ours, scipys)


def test_gaussian_smooth_refuses_what_has_no_smoothing():
    with pytest.raises(InputError, match="1-D"):
        small.gaussian_smooth(np.zeros((2, 3)), 0.8)
    for sigma in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(InputError, match="sigma > 0"):
            small.gaussian_smooth([1.0, 2.0], sigma)
