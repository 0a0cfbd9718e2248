"""The numpy forms of the statistics and similarities for a handful of values (``kernels.small``, what
``fasteval check`` scores with) against the JIT kernels: tau-b and PACC equal to the bit (the same integer counts,
the same float64 operations), ties, infinities, -0.0, NaN, n < 2 and empty input included; the similarities
within one float32 ulp (a float64 sum summed in another order can cross a rounding boundary), exactly equal where
the sums are exact; bad input refused with the kernels' own line."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fasteval.core.errors import InputError
from fasteval.core.kernels import kendall, similarity, small
from test_kernels_kendall import VALUE_TIES, vector_pairs
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
        small.kendall_tau_b(np.arange(small.MAX_VALUES + 1.0), np.arange(small.MAX_VALUES + 1.0))
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
