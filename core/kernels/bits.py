"""Binary vectors as a vector store keeps them: one bit a dimension, the float's sign (``x > 0``), packed eight to a
byte in numpy's ``packbits`` order, as sentence-transformers' ``quantize_embeddings(..., "ubinary")`` packs them.
Their similarity is Hamming's: ``1 - (bits that differ) / bits``, a float32 in [0, 1] (1: every bit equal).

The kernel reads each row as 64-bit words (the bytes padded with zero bytes, which differ nowhere) and counts the
differing bits of each pair with LLVM's population count (the CPU's popcnt instruction); numpy's ``bitwise_count``
over the XOR of the bytes is its reference (tests), and benchmarks/ times the two.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

from ..errors import InputError
from ._threads import run_parallel

__all__ = ["hamming_similarity", "pack_signs"]


@intrinsic
def _ctpop(typingctx, x):
    """The set bits of a uint64: LLVM's ctpop (popcnt where the CPU has it; every x86-64 CPU fasteval runs on)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


def _count_bits(x):
    """The set bits of x in Python (the kernels run as Python under NUMBA_DISABLE_JIT=1, where an intrinsic
    cannot be called)."""
    return np.uint64(int(x).bit_count())


_popcount = _count_bits if numba.config.DISABLE_JIT else _ctpop  # type: ignore[attr-defined]


@njit(cache=True, parallel=True)
def _hamming_matrix(a, b, bits):
    """out_ij = float32(1 - popcount(a_i ^ b_j) / bits) over uint64 words (the quotient in float64, rounded once)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float32)
    for i in prange(a.shape[0]):
        for j in range(b.shape[0]):
            differ = np.uint64(0)
            for w in range(a.shape[1]):
                differ += _popcount(a[i, w] ^ b[j, w])
            out[i, j] = np.float32(1.0 - np.float64(differ) / bits)
    return out


@njit(cache=True, parallel=True)
def _hamming_paired(a, b, bits):
    out = np.empty(a.shape[0], dtype=np.float32)
    for i in prange(a.shape[0]):
        differ = np.uint64(0)
        for w in range(a.shape[1]):
            differ += _popcount(a[i, w] ^ b[i, w])
        out[i] = np.float32(1.0 - np.float64(differ) / bits)
    return out


def pack_signs(embeddings) -> np.ndarray:
    """The rows' sign bits (``x > 0``), packed: uint8 (n, ceil(d / 8)), sentence-transformers' "ubinary"."""
    x = np.asarray(embeddings)
    if x.ndim != 2:
        raise InputError(f"embeddings must be 2-D (n, d), got shape {x.shape}.", "pass one row per text.")
    return np.packbits(x > 0, axis=1)


def _words(packed: np.ndarray) -> np.ndarray:
    """Packed bytes as little-endian uint64 words, each row padded with zero bytes to a multiple of 8."""
    n, nbytes = packed.shape
    padded = np.zeros((n, -(-nbytes // 8) * 8), dtype=np.uint8)
    padded[:, :nbytes] = packed
    return padded.view("<u8")


def _as_packed(a, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype != np.uint8 or a.ndim != 2:
        raise InputError(f"{name} must be packed bits, a 2-D uint8 array (n, ceil(bits / 8)); got {a.dtype} "
                         f"{a.shape}.", "pack the rows' signs with pack_signs (numpy.packbits(x > 0, axis=1)).")
    return np.ascontiguousarray(a)


def hamming_similarity(a, b=None, bits: int | None = None, paired: bool = False) -> np.ndarray:
    """Hamming similarity of packed bit rows, ``1 - differing bits / bits`` as float32: (n_a, n_b) for every pair,
    or (n,) row by row when ``paired``. ``a``, ``b``: uint8 (n, ceil(bits / 8)) as ``pack_signs`` gives them (b
    None: b = a); ``bits``: the vectors' dimension (default: every packed bit, 8 a byte). InputError for another
    dtype or shape, rows of different widths, or ``bits`` the bytes cannot hold."""
    a = _as_packed(a, "a")
    b = a if b is None else _as_packed(b, "b")
    if a.shape[1] != b.shape[1]:
        raise InputError(f"a has {a.shape[1]} bytes a row and b {b.shape[1]}.", "pack vectors of one dimension.")
    bits = 8 * a.shape[1] if bits is None else bits
    if (isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 0 < bits <= 8 * a.shape[1]
            or bits <= 8 * (a.shape[1] - 1)):
        raise InputError(f"bits={bits!r} is not the dimension of rows of {a.shape[1]} bytes.",
                         f"pass the vectors' dimension (from {8 * a.shape[1] - 7} to {8 * a.shape[1]}).")
    if paired and a.shape[0] != b.shape[0]:
        raise InputError(f"a has {a.shape[0]} rows but b has {b.shape[0]}.", "pass one b row per a row.")
    if not a.shape[0] or not b.shape[0]:
        return np.zeros(a.shape[0] if paired else (a.shape[0], b.shape[0]), dtype=np.float32)
    wa = _words(a)
    wb = wa if b is a else _words(b)
    if paired:
        return run_parallel(_hamming_paired, a.shape[0] * wa.shape[1], wa, wb, float(bits))
    return run_parallel(_hamming_matrix, a.shape[0] * b.shape[0] * wa.shape[1], wa, wb, float(bits))
