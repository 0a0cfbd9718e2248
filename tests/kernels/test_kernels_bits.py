"""Binary vectors' Hamming similarity (core/kernels/bits.py) against numpy: the popcount over packed 64-bit words
equals counting the differing bits of ``numpy.unpackbits`` (and ``bitwise_count`` where numpy has it), for any
dimension (a last byte half full), empty input and the similarity kernels' "hamming" metric over float rows."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fasteval.core.errors import InputError
from fasteval.core.kernels import small
from fasteval.core.kernels.bits import hamming_similarity, pack_signs
from fasteval.core.kernels.similarity import paired_similarity, similarity_matrix


def numpy_hamming(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    """1 - (differing bits) / bits, the bits unpacked by numpy (padding bits are zero on both sides)."""
    ua = np.unpackbits(a, axis=1)[:, :bits].astype(np.int64)
    ub = np.unpackbits(b, axis=1)[:, :bits].astype(np.int64)
    differ = (ua[:, None, :] != ub[None, :, :]).sum(axis=2)
    return (1.0 - differ / bits).astype(np.float32)


@st.composite
def packed_pairs(draw, max_rows=9, max_bits=200):
    bits = draw(st.integers(1, max_bits))
    width = -(-bits // 8)
    rows = st.integers(0, max_rows)
    a = draw(arrays(np.uint8, (draw(rows), width)))
    b = draw(arrays(np.uint8, (draw(rows), width)))
    pad = 8 * width - bits  # the packed form's padding bits are zero, as packbits leaves them
    mask = np.uint8((0xFF << pad) & 0xFF)
    a[:, -1] &= mask
    b[:, -1] &= mask
    return a, b, bits


@given(packed_pairs())
def test_hamming_equals_counting_the_unpacked_bits(pair):
    a, b, bits = pair
    got = hamming_similarity(a, b, bits)
    assert got.dtype == np.float32 and got.shape == (a.shape[0], b.shape[0])
    np.testing.assert_array_equal(got, numpy_hamming(a, b, bits))
    n = min(a.shape[0], b.shape[0])
    np.testing.assert_array_equal(hamming_similarity(a[:n], b[:n], bits, paired=True),
                                  np.diag(numpy_hamming(a[:n], b[:n], bits)) if n else np.zeros(0, np.float32))


@pytest.mark.skipif(not hasattr(np, "bitwise_count"), reason="numpy < 2.0 has no bitwise_count")
def test_hamming_equals_numpys_popcount_on_real_sized_vectors():
    rng = np.random.default_rng(5)
    a, b = pack_signs(rng.standard_normal((70, 384))), pack_signs(rng.standard_normal((33, 384)))
    expected = (1 - np.bitwise_count(a[:, None, :] ^ b[None, :, :]).sum(axis=2) / 384).astype(np.float32)
    np.testing.assert_array_equal(hamming_similarity(a, b, 384), expected)
    big = pack_signs(rng.standard_normal((700, 1024)))  # past the one-thread cut: the parallel kernel
    np.testing.assert_array_equal(hamming_similarity(big, big[:300], 1024),
                                  (1 - np.bitwise_count(big[:, None, :] ^ big[None, :300, :]).sum(axis=2) / 1024)
                                  .astype(np.float32))


@given(arrays(np.float32, st.tuples(st.integers(1, 8), st.integers(1, 40)),
              elements=st.sampled_from([-2.0, -0.5, 0.0, 0.25, 3.0])))
def test_the_hamming_metric_scores_float_rows_by_their_signs(x):
    """A float row's bits are its signs (x > 0, zero is a 0 bit, as sentence-transformers' ubinary): the
    similarity kernels, their numpy form and packing then counting agree exactly."""
    expected = numpy_hamming(pack_signs(x), pack_signs(x), x.shape[1])
    np.testing.assert_array_equal(similarity_matrix(x, metric="hamming"), expected)
    np.testing.assert_array_equal(small.similarity_matrix(x, metric="hamming"), expected)
    np.testing.assert_array_equal(paired_similarity(x, x[::-1], metric="hamming"),
                                  np.diag(numpy_hamming(pack_signs(x), pack_signs(x[::-1]), x.shape[1])))
    assert (np.diag(expected) == 1).all()


def test_bad_input_is_one_line_naming_the_fix():
    packed = pack_signs(np.ones((2, 16)))
    with pytest.raises(InputError, match="packed bits"):
        hamming_similarity(packed.astype(np.int8))
    with pytest.raises(InputError, match="bytes a row"):
        hamming_similarity(packed, pack_signs(np.ones((2, 24))))
    with pytest.raises(InputError, match="not the dimension"):
        hamming_similarity(packed, bits=17)
    with pytest.raises(InputError, match="not the dimension"):
        hamming_similarity(packed, bits=8)  # the second byte would hold nothing
    with pytest.raises(InputError, match="one b row per a row"):
        hamming_similarity(packed, packed[:1], paired=True)
    with pytest.raises(InputError, match="NaN"):
        similarity_matrix(np.array([[np.nan, 1.0]], np.float32), metric="hamming")
    assert hamming_similarity(packed[:0], packed).shape == (0, 2)
