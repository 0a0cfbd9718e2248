"""Levenshtein kernels against a naive DP and RapidFuzz, on strings and on token-id sequences.

Sizes are chosen to cross every path: empty sides, patterns of 1..64 symbols (one word), 65+ and
128+ (two and three words), row groups wider than the grid's lanes and column runs wider than a
tile. Examples stay small enough for ``NUMBA_DISABLE_JIT=1`` (pure Python kernels) to finish.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from fasteval.core.errors import InputError
from fasteval.core.kernels import levenshtein as lev_module
from fasteval.core.kernels.levenshtein import (
    PackedSequences,
    encode_strings,
    levenshtein,
    levenshtein_all_pairs,
    levenshtein_cdist,
    levenshtein_pairs,
    pack_sequences,
)

from naive import naive_levenshtein


# -- strategies -------------------------------------------------------------------------------------

# Number strings shaped like Exam 2's items ("-166.76025", "61").
number_strings = st.one_of(
    st.floats(-1000, 1000, allow_nan=False).map(lambda v: f"{v:.5f}"),
    st.integers(-1000, 1000).map(str),
)
short_texts = st.one_of(
    st.text(max_size=20),  # any code point, astral planes included
    st.text(alphabet="ab", max_size=20),  # few symbols: many matches, long common runs
    number_strings,
)
# Past one and two 64-bit words, on an alphabet small enough that the strings share a lot.
long_texts = st.text(alphabet="abc", min_size=60, max_size=140)
texts = st.one_of(short_texts, long_texts)
# Token ids up to 250000 (large vocabularies); a small pool forces repeats and matches.
big_ids = st.sampled_from([0, 1, 2, 131_071, 131_072, 249_999, 250_000])
token_seqs = st.one_of(
    st.lists(st.integers(0, 250_000), max_size=20),
    st.lists(big_ids, max_size=20),
    st.lists(big_ids, min_size=60, max_size=140),
)


@st.composite
def edited_pairs(draw, alphabet="abc"):
    """(a, b) with b a few edits away from a: long shared prefixes and suffixes, small distances."""
    a = draw(st.text(alphabet=alphabet, max_size=150))
    b = list(a)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["ins", "del", "sub"]))
        pos = draw(st.integers(0, len(b)))
        ch = draw(st.sampled_from(alphabet))
        if op == "ins":
            b.insert(pos, ch)
        elif b and pos < len(b):
            if op == "del":
                del b[pos]
            else:
                b[pos] = ch
    return a, "".join(b)


def deterministic_strings(lengths, alphabet="abc", seed=0):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(n)) for n in lengths]


# Lengths around every word boundary of the bit-parallel paths.
BOUNDARY_LENGTHS = [0, 1, 2, 63, 64, 65, 127, 128, 129, 130, 200]


# -- one pair ---------------------------------------------------------------------------------------


@given(a=texts, b=texts)
@settings(max_examples=150, deadline=None)
def test_strings_match_naive_dp_and_rapidfuzz(a, b):
    expected = naive_levenshtein(a, b)
    assert Levenshtein.distance(a, b) == expected
    assert levenshtein(a, b) == expected
    assert levenshtein(b, a) == expected


@given(pair=edited_pairs())
@settings(max_examples=100, deadline=None)
def test_near_equal_strings(pair):
    a, b = pair
    assert levenshtein(a, b) == naive_levenshtein(a, b) == Levenshtein.distance(a, b)


@given(a=token_seqs, b=token_seqs)
@settings(max_examples=100, deadline=None)
def test_token_ids_match_naive_dp_and_rapidfuzz(a, b):
    expected = naive_levenshtein(a, b)
    assert Levenshtein.distance(a, b) == expected
    assert levenshtein(a, b) == expected
    assert levenshtein(np.array(a, dtype=np.int32), tuple(b)) == expected


@pytest.mark.parametrize("la, lb", list(itertools.combinations_with_replacement(BOUNDARY_LENGTHS, 2)))
def test_word_boundaries(la, lb):
    a, b = deterministic_strings([la, lb], seed=la * 1000 + lb)
    assert levenshtein(a, b) == naive_levenshtein(a, b) == Levenshtein.distance(a, b)


def test_known_values_and_edge_cases():
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "") == 0
    assert levenshtein("", "abc") == 3
    assert levenshtein("abc", "") == 3
    assert levenshtein("abc", "abc") == 0
    assert levenshtein("a" * 300, "a" * 300) == 0
    assert levenshtein("a" * 300, "b" * 300) == 300
    assert levenshtein("x" + "a" * 100 + "y", "a" * 100) == 2  # prefix and suffix both stripped
    assert levenshtein([], [5, 6]) == 2
    assert levenshtein([250_000, 7], [7, 250_000]) == 2
    assert levenshtein("😀a", "a😀") == 2  # astral code points are one symbol each


def test_ids_far_apart_use_the_sorting_rename():
    # A symbol range far wider than the data takes np.unique instead of the presence table.
    a, b = [0, 2**40, 5, 2**62], [2**40, 5, 2**62, 1]
    assert levenshtein(a, b) == naive_levenshtein(a, b) == 2


# -- batches ----------------------------------------------------------------------------------------


@given(
    strings=st.lists(texts, min_size=1, max_size=10),
    data=st.data(),
)
@settings(max_examples=60, deadline=None)
def test_pairs_equal_one_pair_at_a_time(strings, data):
    n = len(strings)
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30))
    i_idx = np.array([i for i, _ in pairs], dtype=np.int64)
    j_idx = np.array([j for _, j in pairs], dtype=np.int64)
    got = levenshtein_pairs(encode_strings(strings), i_idx, j_idx)
    assert got.dtype == np.int32 and got.shape == (len(pairs),)
    assert got.tolist() == [Levenshtein.distance(strings[i], strings[j]) for i, j in pairs]


@given(strings=st.lists(texts, max_size=12))
@settings(max_examples=60, deadline=None)
def test_all_pairs_condensed_order(strings):
    got = levenshtein_all_pairs(encode_strings(strings))
    expected = [Levenshtein.distance(a, b) for a, b in itertools.combinations(strings, 2)]
    assert got.dtype == np.int32
    assert got.tolist() == expected


@given(a=st.lists(texts, max_size=8), b=st.lists(texts, max_size=8))
@settings(max_examples=60, deadline=None)
def test_cdist_equals_rapidfuzz(a, b):
    got = levenshtein_cdist(encode_strings(a), encode_strings(b))
    expected = process.cdist(a, b, scorer=Levenshtein.distance)
    assert got.dtype == np.int32 and got.shape == (len(a), len(b))
    np.testing.assert_array_equal(got, expected)


@given(a=st.lists(token_seqs, max_size=6), b=st.lists(token_seqs, max_size=6))
@settings(max_examples=40, deadline=None)
def test_token_cdist_equals_rapidfuzz(a, b):
    got = levenshtein_cdist(pack_sequences(a), pack_sequences(b))
    np.testing.assert_array_equal(got, process.cdist(a, b, scorer=Levenshtein.distance))


@given(strings=st.lists(number_strings, min_size=2, max_size=lev_module._LANES + 8))
@settings(max_examples=15, deadline=None)
def test_number_strings_all_pairs(strings):
    got = levenshtein_all_pairs(encode_strings(strings))
    assert got.tolist() == [Levenshtein.distance(a, b) for a, b in itertools.combinations(strings, 2)]


@pytest.fixture(params=["serial", "parallel"])
def batch_path(request, monkeypatch):
    """Run a batch test both on one thread and through the parallel kernels, whatever its size."""
    if request.param == "parallel":
        monkeypatch.setattr(lev_module, "_PARALLEL_MIN_PAIRS", 0)
    return request.param


def test_grid_spans_several_lane_groups_and_tiles(batch_path):
    # More rows than lanes and more columns than a tile, mixing lane rows (1..64 symbols) with rows
    # left to the per-pair path (empty, longer than 64).
    n = max(lev_module._LANES, lev_module._TILE_COLS) + 5
    rng = random.Random(7)
    lengths = [rng.choice([0, 1, 3, 5, 8]) for _ in range(n)]
    lengths[3], lengths[lev_module._LANES + 1] = 70, 130
    strings = deterministic_strings(lengths, alphabet="ab", seed=3)
    packed = encode_strings(strings)
    full = levenshtein_cdist(packed, packed)
    np.testing.assert_array_equal(full, process.cdist(strings, strings, scorer=Levenshtein.distance))
    iu = np.triu_indices(n, 1)
    np.testing.assert_array_equal(levenshtein_all_pairs(packed), full[iu])
    np.testing.assert_array_equal(levenshtein_pairs(packed, iu[0], iu[1]), full[iu])


def test_boundary_lengths_in_batches(batch_path):
    strings = deterministic_strings(BOUNDARY_LENGTHS, seed=11)
    packed = encode_strings(strings)
    expected = [naive_levenshtein(a, b) for a, b in itertools.combinations(strings, 2)]
    assert levenshtein_all_pairs(packed).tolist() == expected
    np.testing.assert_array_equal(
        levenshtein_cdist(packed, packed), process.cdist(strings, strings, scorer=Levenshtein.distance)
    )
    i_idx, j_idx = np.triu_indices(len(strings), 1)
    assert levenshtein_pairs(packed, i_idx, j_idx).tolist() == expected


def test_empty_collections():
    empty = encode_strings([])
    one = encode_strings(["abc"])
    assert len(empty) == 0
    assert levenshtein_all_pairs(empty).shape == (0,)
    assert levenshtein_all_pairs(one).shape == (0,)
    assert levenshtein_cdist(empty, one).shape == (0, 1)
    assert levenshtein_cdist(one, empty).shape == (1, 0)
    assert levenshtein_pairs(one, [], []).shape == (0,)
    assert levenshtein_all_pairs(encode_strings(["", "", "a"])).tolist() == [0, 1, 1]
    assert levenshtein_all_pairs(pack_sequences([[], []])).tolist() == [0]


# -- packing ----------------------------------------------------------------------------------------


def test_encode_strings_is_code_points():
    strings = ["", "ab", "😀é", "\ud800x"]  # a lone surrogate survives as its code point
    packed = encode_strings(strings)
    assert packed.symbols.dtype == np.int64 and packed.offsets.dtype == np.int64
    assert packed.offsets.tolist() == [0, 0, 2, 4, 6]
    assert packed.lengths.tolist() == [0, 2, 2, 2]
    for k, s in enumerate(strings):
        assert packed[k].tolist() == [ord(c) for c in s]


def test_pack_sequences_accepts_lists_tuples_and_arrays():
    packed = pack_sequences([[3, 250_000], (), np.array([7], dtype=np.uint16), np.array([1, 2], dtype=np.int32)])
    assert packed.symbols.tolist() == [3, 250_000, 7, 1, 2]
    assert packed.offsets.tolist() == [0, 2, 2, 3, 5]
    assert packed[-1].tolist() == [1, 2]


@pytest.mark.parametrize(
    "call",
    [
        lambda: encode_strings("abc"),
        lambda: encode_strings(["a", 3]),
        lambda: pack_sequences(["abc"]),
        lambda: pack_sequences([[1.5, 2.0]]),
        lambda: pack_sequences([[[1, 2]]]),
        lambda: pack_sequences([np.array([2**63], dtype=np.uint64)]),
        lambda: levenshtein("abc", [1, 2]),
        lambda: PackedSequences(np.array([1, 2]), np.array([0, 3])),
        lambda: PackedSequences(np.array([1, 2]), np.array([1, 2])),
        lambda: PackedSequences(np.array([1, 2]), np.array([0, 2, 1, 2])),
        lambda: PackedSequences(np.array([1.0, 2.0]), np.array([0, 2])),
        lambda: PackedSequences(np.array([[1, 2]]), np.array([0, 2])),
        lambda: levenshtein_all_pairs(["a", "b"]),
        lambda: levenshtein_cdist(encode_strings(["a"]), ["b"]),
        lambda: levenshtein_pairs(encode_strings(["a", "b"]), [0], [2]),
        lambda: levenshtein_pairs(encode_strings(["a", "b"]), [-1], [0]),
        lambda: levenshtein_pairs(encode_strings(["a", "b"]), [0, 1], [1]),
        lambda: levenshtein_pairs(encode_strings(["a", "b"]), [[0]], [[1]]),
        lambda: levenshtein_pairs(encode_strings(["a", "b"]), [0.0], [1.0]),
    ],
)
def test_bad_input_raises_input_error(call):
    with pytest.raises(InputError):
        call()
