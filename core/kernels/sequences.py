"""Integer sequences packed CSR style for the Levenshtein distances: characters (Unicode code points,
``encode_strings``) or tokens (tokenizer ids, ``pack_sequences``). Numpy only, so the numpy distances for a few
strings (``small``) and the JIT kernels (``levenshtein``) take one validated form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["PackedSequences", "encode_strings", "pack_sequences"]


@dataclass(frozen=True, eq=False)
class PackedSequences:
    """N integer sequences in CSR form: sequence k is ``symbols[offsets[k]:offsets[k + 1]]``.

    ``symbols`` is coerced to contiguous int64 (code points and tokenizer ids both fit, and one dtype
    means one compiled kernel); ``offsets`` to contiguous int64 of length N + 1, starting at 0,
    non-decreasing, ending at ``len(symbols)``.
    """

    symbols: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "symbols", _as_int64_vector(self.symbols, "symbols"))
        offsets = _as_int64_vector(self.offsets, "offsets")
        if offsets.size == 0 or offsets[0] != 0:
            raise InputError(
                "PackedSequences.offsets must start with 0 (it has N + 1 entries for N sequences).",
                "build it with encode_strings or pack_sequences.",
            )
        if np.any(np.diff(offsets) < 0) or offsets[-1] != self.symbols.size:
            raise InputError(
                "PackedSequences.offsets must be non-decreasing and end at len(symbols) "
                f"= {self.symbols.size}; it ends at {int(offsets[-1])}.",
                "build it with encode_strings or pack_sequences.",
            )
        object.__setattr__(self, "offsets", offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, k: int) -> np.ndarray:
        """Sequence k as a read-only view of ``symbols``."""
        if not -len(self) <= k < len(self):
            raise IndexError(f"sequence {k} out of range for {len(self)} sequences")
        k %= len(self)
        view = self.symbols[self.offsets[k] : self.offsets[k + 1]]
        view.flags.writeable = False
        return view

    @property
    def lengths(self) -> np.ndarray:
        """Length of each sequence (int64, N)."""
        return np.diff(self.offsets)


def encode_strings(strings: Sequence[str]) -> PackedSequences:
    """Pack strings as sequences of Unicode code points (what python-Levenshtein and RapidFuzz compare)."""
    if isinstance(strings, str):
        raise InputError("encode_strings takes a list of strings, not one string.", f"pass [{strings!r:.40}].")
    strings = list(strings)
    if not all(isinstance(s, str) for s in strings):
        k, s = next((k, s) for k, s in enumerate(strings) if not isinstance(s, str))
        raise InputError(
            f"encode_strings: item {k} is a {type(s).__name__}, not a str.",
            "use pack_sequences for sequences of token ids.",
        )
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # UTF-32 is the code points themselves; surrogatepass keeps lone surrogates as their code points.
    raw = "".join(strings).encode("utf-32-le", "surrogatepass")
    symbols = np.frombuffer(raw, dtype="<u4").astype(np.int64)
    return PackedSequences(symbols, offsets)


def pack_sequences(seqs: Sequence[Sequence[int]]) -> PackedSequences:
    """Pack sequences of integers (token ids, any values that fit int64); each id is one symbol."""
    if isinstance(seqs, np.ndarray) and seqs.ndim == 2:
        seqs = list(seqs)
    parts = []
    for k, seq in enumerate(seqs):
        if isinstance(seq, (str, bytes)):
            raise InputError(
                f"pack_sequences: item {k} is a {type(seq).__name__}, not a sequence of ints.",
                "use encode_strings for text.",
            )
        arr = np.asarray(seq)
        if arr.size == 0:
            arr = arr.reshape(0).astype(np.int64)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InputError(
                f"pack_sequences: item {k} is not a 1-D sequence of integers "
                f"(got ndim={arr.ndim}, dtype={arr.dtype}).",
                "pass lists of int token ids, e.g. tokenizer.encode(text, add_special_tokens=False).",
            )
        parts.append(_fit_int64(arr, f"pack_sequences: item {k}"))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in parts], out=offsets[1:])
    symbols = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return PackedSequences(symbols, offsets)


def _fit_int64(arr: np.ndarray, what: str) -> np.ndarray:
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise InputError(f"{what} has ids above 2**63 - 1.", "map the ids to int64 first.")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _as_int64_vector(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == np.int64 and arr.ndim == 1:
        return np.ascontiguousarray(arr)
    if arr.size == 0 and arr.ndim == 1:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InputError(
            f"PackedSequences.{name} must be a 1-D integer array (got ndim={arr.ndim}, dtype={arr.dtype}).",
            "build it with encode_strings or pack_sequences.",
        )
    return _fit_int64(arr, f"PackedSequences.{name}")


def _check_packed(packed, name: str) -> None:
    if not isinstance(packed, PackedSequences):
        raise InputError(
            f"{name} must be a PackedSequences, got {type(packed).__name__}.",
            "build it with encode_strings(strings) or pack_sequences(token_id_lists).",
        )
