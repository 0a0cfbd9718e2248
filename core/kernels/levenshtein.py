"""Levenshtein distance (unit-cost insert / delete / substitute) between integer-coded sequences.

One kernel serves both levels of Exam 2: characters (Unicode code points, ``encode_strings``) and
tokens (tokenizer ids, ``pack_sequences``). Sequences travel packed, CSR style, in a
``PackedSequences``; the public functions validate in plain Python and call private Numba kernels on
contiguous arrays.

Algorithm. Symbols are first renamed to dense ranks ``0..K-1`` over the sequences of the call, so
a pattern's match masks live in flat lookup tables instead of dictionaries. Then Myers' bit-parallel
algorithm, in Hyyrö's 2003 formulation (the DP column as +1/-1 bit vectors, one text symbol per step):

- one pair (``levenshtein``, ``levenshtein_pairs``): strip the common prefix and suffix; if a side is
  then empty the distance is the other's length; otherwise the shorter side is the pattern, one
  64-bit word when it has at most 64 symbols, a chain of words beyond (horizontal carries passed
  word to word);
- a grid (``levenshtein_all_pairs``, ``levenshtein_cdist``): 32 row sequences of 1..64 symbols run
  side by side as lanes against each column sequence, so one pattern table serves a whole tile and
  the lane loop vectorises; rows that are empty or longer than 64 take the per-pair path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
from numba import njit, prange

from ..errors import InputError
from .sequences import PackedSequences, _check_packed, encode_strings, pack_sequences

__all__ = [
    "PackedSequences",
    "encode_strings",
    "pack_sequences",
    "levenshtein",
    "levenshtein_pairs",
    "levenshtein_all_pairs",
    "levenshtein_cdist",
]

# Batches smaller than this run on one thread: they take ~0.1 ms there, while waking a thread pool
# costs tens of microseconds and, on a busy machine, OpenMP's spin-waits can cost milliseconds.
_PARALLEL_MIN_PAIRS = 1 << 14
# Chunks per thread in the parallel kernels: enough to even out work of unequal size, few enough
# that the per-chunk tables cost nothing next to the distances.
_CHUNKS_PER_THREAD = 4
# Grid kernel: this many row patterns (of at most 64 symbols) run side by side against one column
# text. The lane loop has a fixed trip count, so LLVM vectorises it; 32 measured best on AVX2.
_LANES = 32
# Columns per tile of the grid kernel: a tile (_LANES rows x _TILE_COLS columns) is one work item.
_TILE_COLS = 32


# --------------------------------------------------------------------------------------------------
# Public distances
# --------------------------------------------------------------------------------------------------


def levenshtein(a: str | Sequence[int], b: str | Sequence[int]) -> int:
    """Edit distance between two strings (over code points) or two integer sequences (over ids)."""
    if isinstance(a, str) and isinstance(b, str):
        packed = encode_strings([a, b])
    elif not isinstance(a, str) and not isinstance(b, str):
        packed = pack_sequences([a, b])
    else:
        raise InputError(
            "levenshtein compares two strings or two integer sequences, not one of each.",
            "encode both sides the same way.",
        )
    codes, n_codes = _dense_codes(packed.symbols)
    o = packed.offsets
    with np.errstate(over="ignore"):  # only seen with NUMBA_DISABLE_JIT: uint64 wrap-around is intended
        return int(_pair_distance(codes, o[0], o[1], o[1], o[2], np.zeros(n_codes, dtype=np.uint64)))


def levenshtein_pairs(packed: PackedSequences, i_idx, j_idx) -> np.ndarray:
    """``out[k] = lev(packed[i_idx[k]], packed[j_idx[k]])`` as int32 (in parallel for large batches)."""
    _check_packed(packed, "packed")
    n = len(packed)
    i_idx = _as_index_vector(i_idx, "i_idx", n)
    j_idx = _as_index_vector(j_idx, "j_idx", n)
    if i_idx.size != j_idx.size:
        raise InputError(
            f"i_idx and j_idx must have the same length (got {i_idx.size} and {j_idx.size}).",
            "pass one index pair per distance.",
        )
    codes, n_codes = _dense_codes(packed.symbols)
    out = np.zeros(i_idx.size, dtype=np.int32)
    n_chunks = _n_chunks(out.size, out.size)
    with np.errstate(over="ignore"):  # only seen with NUMBA_DISABLE_JIT: uint64 wrap-around is intended
        if n_chunks > 1:
            _pairs_parallel(codes, packed.offsets, n_codes, i_idx, j_idx, n_chunks, out)
        else:
            _pairs_run(codes, packed.offsets, n_codes, i_idx, j_idx, 0, out.size, out)
    return out


def levenshtein_all_pairs(packed: PackedSequences) -> np.ndarray:
    """Condensed int32 vector of ``lev(packed[i], packed[j])`` for i < j in order (0,1), (0,2), ..., (1,2), ...

    Same order as ``itertools.combinations(range(N), 2)`` and ``scipy.spatial.distance.squareform``.
    """
    _check_packed(packed, "packed")
    n = len(packed)
    codes, n_codes = _dense_codes(packed.symbols)
    return _grid(codes, packed.offsets, n_codes, n, n, 0, triangle=True)


def levenshtein_cdist(packed_a: PackedSequences, packed_b: PackedSequences) -> np.ndarray:
    """int32 matrix ``D[i, j] = lev(packed_a[i], packed_b[j])``, as RapidFuzz ``cdist(scorer=Levenshtein.distance)``."""
    _check_packed(packed_a, "packed_a")
    _check_packed(packed_b, "packed_b")
    na, nb = len(packed_a), len(packed_b)
    # One table for both sides: b's sequences follow a's, so column j is sequence na + j.
    symbols = np.concatenate([packed_a.symbols, packed_b.symbols])
    offsets = np.concatenate([packed_a.offsets, packed_b.offsets[1:] + packed_a.offsets[-1]])
    codes, n_codes = _dense_codes(symbols)
    return _grid(codes, offsets, n_codes, na, nb, na, triangle=False).reshape(na, nb)


# --------------------------------------------------------------------------------------------------
# Validation and preparation (plain Python)
# --------------------------------------------------------------------------------------------------


def _as_index_vector(values, name: str, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InputError(
            f"{name} must be a 1-D array of integer indices (got ndim={arr.ndim}, dtype={arr.dtype}).",
            "pass e.g. np.array([0, 0, 1]).",
        )
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise InputError(
            f"{name} has indices outside [0, {n}) (min {int(arr.min())}, max {int(arr.max())}).",
            f"index the {n} packed sequences with 0..{n - 1}; negative indices are not wrapped.",
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def _dense_codes(symbols: np.ndarray) -> tuple[np.ndarray, int]:
    """Rank of each symbol among the distinct symbols (int64), and the number K of distinct symbols.

    Distances only compare symbols for equality, so any injective renaming keeps them; dense ranks
    let a pattern's match masks sit in a K-entry table.
    """
    if symbols.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    lo, hi = int(symbols.min()), int(symbols.max())
    if hi - lo <= max(1 << 16, 2 * symbols.size):
        # Narrow range (code points, most vocabularies): a presence table, O(S + range), no sort.
        shifted = symbols - lo
        present = np.zeros(hi - lo + 1, dtype=np.int64)
        present[shifted] = 1
        rank = np.cumsum(present)
        rank -= 1
        return rank[shifted], int(rank[-1]) + 1
    alphabet, codes = np.unique(symbols, return_inverse=True)
    return np.ascontiguousarray(codes.reshape(-1), dtype=np.int64), int(alphabet.size)


def _grid(codes, offsets, n_codes, n_rows, n_cols, col_base, triangle) -> np.ndarray:
    """Distances of rows 0..n_rows-1 to columns col_base.. of one packed table, as a flat int32 vector.

    ``triangle``: rows and columns are the same sequences and only pairs row < column are kept, in
    condensed order; otherwise the full row-major n_rows x n_cols grid.
    """
    n_out = n_rows * (n_rows - 1) // 2 if triangle else n_rows * n_cols
    out = np.zeros(n_out, dtype=np.int32)
    if n_out == 0:
        return out
    # Rows longer than 64 symbols take the per-pair path, whose lookup table has K entries.
    longest_row = int(np.diff(offsets[: n_rows + 1]).max())
    scratch_size = n_codes if longest_row > 64 else 0
    tiles = _grid_tiles(n_rows, n_cols, triangle)
    n_chunks = _n_chunks(tiles.shape[0], n_out)
    args = (codes, offsets, n_codes, scratch_size, n_rows, n_cols, col_base, triangle, tiles)
    with np.errstate(over="ignore"):  # only seen with NUMBA_DISABLE_JIT: uint64 wrap-around is intended
        if n_chunks > 1:
            _grid_parallel(*args, n_chunks, out)
        else:
            _grid_run(*args, 0, tiles.shape[0], out)
    return out


def _n_chunks(n_items: int, n_pairs: int) -> int:
    """How many runs of work items the parallel kernel gets; 0 or 1 means: run on this thread."""
    if n_pairs < _PARALLEL_MIN_PAIRS:
        return 0
    return min(n_items, _CHUNKS_PER_THREAD * numba.get_num_threads())


# --------------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _myers_step(eq, vp, vn, hp_in, hn_in, out_shift):
    """One text symbol through one 64-bit block of the DP column (Myers 1999, Hyyrö 2003).

    ``eq``: the block's match mask of the symbol; ``vp``/``vn``: the block's vertical +1/-1 deltas;
    ``hp_in``/``hn_in``: the horizontal +1/-1 carried in from the block below (1/0 for the first block:
    the DP's top row grows by one per symbol). Returns (vp, vn, hp_out, hn_out): the new deltas and the
    horizontal deltas at bit ``out_shift`` (the block's top row), which change the score or carry upwards.
    """
    one = np.uint64(1)
    x = eq | hn_in
    d0 = (((x & vp) + vp) ^ vp) | x | vn
    hp = vn | ~(d0 | vp)
    hn = d0 & vp
    hp_out = (hp >> out_shift) & one
    hn_out = (hn >> out_shift) & one
    hp = (hp << one) | hp_in
    hn = (hn << one) | hn_in
    return hn | ~(d0 | hp), hp & d0, hp_out, hn_out


@njit(cache=True)
def _myers_word(codes, p0, p1, t0, t1, peq):
    """lev(pattern, text) for a pattern of 1..64 symbols: one 64-bit column vector (Hyyrö 2003).

    ``peq`` is a zeroed K-entry table; it gets the match mask of each pattern symbol and is zeroed
    again before returning.
    """
    one = np.uint64(1)
    m = p1 - p0
    bit = one
    for k in range(p0, p1):
        peq[codes[k]] |= bit
        bit <<= one
    vp = ~np.uint64(0)  # bits above m are never read: carries and shifts only move upwards
    vn = np.uint64(0)
    last_shift = np.uint64(m - 1)
    dist = m
    zero = np.uint64(0)
    for t in range(t0, t1):
        vp, vn, hp_out, hn_out = _myers_step(peq[codes[t]], vp, vn, one, zero, last_shift)
        # Branch-free score update: on unrelated texts the branches would be a coin toss.
        dist += np.int64(hp_out) - np.int64(hn_out)
    for k in range(p0, p1):
        peq[codes[k]] = 0
    return dist


@njit(cache=True)
def _myers_blocks(codes, p0, p1, t0, t1, row_of):
    """lev(pattern, text) for a pattern of any length: ceil(m / 64) words, carries passed upwards.

    ``row_of`` is a zeroed K-entry table; it maps each pattern symbol to its row (1..) of a local
    match-mask table whose row 0 (symbols absent from the pattern) stays zero; it is zeroed again
    before returning.
    """
    one = np.uint64(1)
    zero = np.uint64(0)
    m = p1 - p0
    words = (m + 63) // 64
    peq = np.zeros((m + 1, words), dtype=np.uint64)
    n_rows = 0
    for k in range(m):
        c = codes[p0 + k]
        if row_of[c] == 0:
            n_rows += 1
            row_of[c] = n_rows
        peq[row_of[c], k // 64] |= one << np.uint64(k % 64)
    vp = np.full(words, ~zero, dtype=np.uint64)
    vn = np.zeros(words, dtype=np.uint64)
    last_shift = np.uint64((m - 1) % 64)
    top_shift = np.uint64(63)
    dist = m
    for t in range(t0, t1):
        row = row_of[codes[t]]
        hp_carry = one  # the top row of the DP grows by one per text symbol
        hn_carry = zero
        for w in range(words):
            out_shift = top_shift if w < words - 1 else last_shift
            vp[w], vn[w], hp_carry, hn_carry = _myers_step(peq[row, w], vp[w], vn[w], hp_carry, hn_carry,
                                                           out_shift)
        dist += np.int64(hp_carry) - np.int64(hn_carry)
    for k in range(p0, p1):
        row_of[codes[k]] = 0
    return dist


@njit(cache=True)
def _pair_distance(codes, a0, a1, b0, b1, scratch):
    """lev(codes[a0:a1], codes[b0:b1]); 0 when equal, the other's length when one is empty.

    ``scratch`` is a zeroed K-entry uint64 table, returned zeroed.
    """
    while a0 < a1 and b0 < b1 and codes[a0] == codes[b0]:
        a0 += 1
        b0 += 1
    while a0 < a1 and b0 < b1 and codes[a1 - 1] == codes[b1 - 1]:
        a1 -= 1
        b1 -= 1
    la = a1 - a0
    lb = b1 - b0
    if la == 0:
        return lb
    if lb == 0:
        return la
    if la > lb:  # the shorter side is the pattern: fewer words per text symbol
        a0, a1, b0, b1 = b0, b1, a0, a1
    if a1 - a0 <= 64:
        return _myers_word(codes, a0, a1, b0, b1, scratch)
    return _myers_blocks(codes, a0, a1, b0, b1, scratch)


@njit(cache=True)
def _load_lanes(codes, offsets, row0, n_lanes, row_of, masks, m, last_shift):
    """Put the match masks of rows row0.. (those of 1..64 symbols) in lanes; return how many.

    Lane l of ``masks[row_of[s]]`` has bit k set when symbol s is at position k of row row0 + l;
    row 0 of ``masks`` (symbols in no lane) stays zero. ``m[l]`` is the row's length, 0 for a lane
    left to the per-pair path (empty, longer than 64, or past the last row).
    """
    one = np.uint64(1)
    n_used = 0
    n_active = 0
    for lane in range(_LANES):
        m[lane] = 0
        last_shift[lane] = 0
        if lane < n_lanes:
            a0 = offsets[row0 + lane]
            a1 = offsets[row0 + lane + 1]
            if 0 < a1 - a0 <= 64:
                m[lane] = a1 - a0
                last_shift[lane] = a1 - a0 - 1
                n_active += 1
                bit = one
                for k in range(a0, a1):
                    if row_of[codes[k]] == 0:
                        n_used += 1
                        row_of[codes[k]] = n_used
                    masks[row_of[codes[k]], lane] |= bit
                    bit <<= one
    return n_active


@njit(cache=True)
def _unload_lanes(codes, offsets, row0, m, row_of, masks):
    """Zero what ``_load_lanes`` set, touching only the symbols of the loaded rows."""
    for lane in range(_LANES):
        if m[lane] > 0:
            for k in range(offsets[row0 + lane], offsets[row0 + lane + 1]):
                masks[row_of[codes[k]], :] = 0
                row_of[codes[k]] = 0


@njit(cache=True, inline="always")
def _lanes_vs_text(codes, t0, t1, row_of, masks, m, last_shift, vp, vn, dist):
    """dist[l] = lev(lane l's row, codes[t0:t1]) for all lanes at once: ``_myers_word`` with lanes."""
    one = np.uint64(1)
    zero = np.uint64(0)
    for lane in range(_LANES):
        vp[lane] = ~zero
        vn[lane] = 0
        dist[lane] = m[lane]
    for t in range(t0, t1):
        row = row_of[codes[t]]
        for lane in range(_LANES):
            vp[lane], vn[lane], hp_out, hn_out = _myers_step(masks[row, lane], vp[lane], vn[lane], one, zero,
                                                             last_shift[lane])
            dist[lane] += np.int64(hp_out) - np.int64(hn_out)


@njit(cache=True)
def _grid_tiles(n_rows, n_cols, triangle):
    """Work items of the grid: (first row, first column, end column) of each tile.

    Each group of _LANES rows meets its columns (in a triangle, those after the group's first row)
    in slices of _TILE_COLS.
    """
    n_tiles = 0
    for row0 in range(0, n_rows, _LANES):
        first = row0 + 1 if triangle else 0
        n_tiles += max(0, (n_cols - first + _TILE_COLS - 1) // _TILE_COLS)
    tiles = np.empty((n_tiles, 3), dtype=np.int64)
    k = 0
    for row0 in range(0, n_rows, _LANES):
        for c0 in range(row0 + 1 if triangle else 0, n_cols, _TILE_COLS):
            tiles[k, 0] = row0
            tiles[k, 1] = c0
            tiles[k, 2] = min(c0 + _TILE_COLS, n_cols)
            k += 1
    return tiles


@njit(cache=True)
def _grid_run(codes, offsets, n_codes, scratch_size, n_rows, n_cols, col_base, triangle, tiles, first, stop, out):
    """out[pair] = lev(row, column) for the pairs of tiles[first:stop].

    Row r is sequence r, column c is sequence col_base + c; ``triangle`` keeps r < c only, at the
    condensed index r*(2n-r-1)/2 + c-r-1, else r*n_cols + c.
    """
    row_of = np.zeros(n_codes, dtype=np.int32)
    masks = np.zeros((min(n_codes, _LANES * 64) + 1, _LANES), dtype=np.uint64)
    scratch = np.zeros(scratch_size, dtype=np.uint64)
    m = np.zeros(_LANES, dtype=np.int64)
    last_shift = np.zeros(_LANES, dtype=np.uint64)
    vp = np.zeros(_LANES, dtype=np.uint64)
    vn = np.zeros(_LANES, dtype=np.uint64)
    dist = np.zeros(_LANES, dtype=np.int64)
    for tile in range(first, stop):
        row0 = tiles[tile, 0]
        n_lanes = min(_LANES, n_rows - row0)
        n_active = _load_lanes(codes, offsets, row0, n_lanes, row_of, masks, m, last_shift)
        for c in range(tiles[tile, 1], tiles[tile, 2]):
            t0 = offsets[col_base + c]
            t1 = offsets[col_base + c + 1]
            if n_active > 0:
                _lanes_vs_text(codes, t0, t1, row_of, masks, m, last_shift, vp, vn, dist)
            for lane in range(n_lanes):
                r = row0 + lane
                if triangle and c <= r:
                    continue
                if m[lane] > 0:
                    d = dist[lane]
                else:
                    d = _pair_distance(codes, offsets[r], offsets[r + 1], t0, t1, scratch)
                if triangle:
                    out[r * (2 * n_rows - r - 1) // 2 + c - r - 1] = d
                else:
                    out[r * n_cols + c] = d
        _unload_lanes(codes, offsets, row0, m, row_of, masks)


@njit(cache=True, parallel=True)
def _grid_parallel(codes, offsets, n_codes, scratch_size, n_rows, n_cols, col_base, triangle, tiles, n_chunks, out):
    """``_grid_run`` over n_chunks contiguous runs of tiles in parallel."""
    n_tiles = tiles.shape[0]
    for chunk in prange(n_chunks):
        first = chunk * n_tiles // n_chunks
        stop = (chunk + 1) * n_tiles // n_chunks
        _grid_run(codes, offsets, n_codes, scratch_size, n_rows, n_cols, col_base, triangle, tiles, first, stop, out)


@njit(cache=True)
def _pairs_run(codes, offsets, n_codes, i_idx, j_idx, first, stop, out):
    """out[k] = lev(sequence i_idx[k], sequence j_idx[k]) for k in first..stop-1."""
    scratch = np.zeros(n_codes, dtype=np.uint64)
    for k in range(first, stop):
        i = i_idx[k]
        j = j_idx[k]
        out[k] = _pair_distance(codes, offsets[i], offsets[i + 1], offsets[j], offsets[j + 1], scratch)


@njit(cache=True, parallel=True)
def _pairs_parallel(codes, offsets, n_codes, i_idx, j_idx, n_chunks, out):
    """``_pairs_run`` over n_chunks contiguous ranges of pairs in parallel."""
    n_pairs = out.shape[0]
    for chunk in prange(n_chunks):
        first = chunk * n_pairs // n_chunks
        stop = (chunk + 1) * n_pairs // n_chunks
        _pairs_run(codes, offsets, n_codes, i_idx, j_idx, first, stop, out)
