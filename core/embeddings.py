"""Embed each distinct text once, keeping the paper's grouping of texts into encode calls.

An encoder is anything with ``encode(list[str]) -> array (n, dim)`` (a fasteval OnnxEncoder, a
sentence-transformers model, a harness's wrapper). Groups are encoded in protocol order; a group's texts
that an earlier group already embedded are taken from the table, the rest go to the encoder in one call, so
the first occurrence of every text is embedded exactly as the paper's notebook embedded it.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from fasteval.core.errors import InputError


@runtime_checkable
class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


class EmbeddingTable:
    """text -> float32 embedding row; ``table[texts]`` gives the (len(texts), dim) matrix."""

    def __init__(self, dim: int | None = None):
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self.dim = dim
        self.encode_calls = 0

    def __contains__(self, text: str) -> bool:
        return text in self._index

    def __len__(self) -> int:
        return len(self._index)

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise InputError(f"encode() returned shape {vectors.shape} for {len(texts)} texts.",
                             "return one row per input text, as encode(list[str]) -> (n, dim).")
        if self.dim is None:
            self.dim = vectors.shape[1]
        elif vectors.shape[1] != self.dim:
            raise InputError(f"encode() returned dimension {vectors.shape[1]}, earlier {self.dim}.",
                             "return embeddings of one fixed dimension.")
        if not np.isfinite(vectors).all():
            raise InputError("encode() returned NaN or infinite values.",
                             "check the model (a NaN embedding has no similarity).")
        for text, row in zip(texts, vectors.astype(np.float32, copy=False)):
            if text not in self._index:
                self._index[text] = len(self._rows)
                self._rows.append(row)

    def __getitem__(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.stack([self._rows[self._index[t]] for t in texts])

    def items(self) -> Iterable[tuple[str, np.ndarray]]:
        for text, i in self._index.items():
            yield text, self._rows[i]


def embed_groups(encoder: Encoder, groups: Iterable[Sequence[str]], table: EmbeddingTable | None = None,
                 normalize: bool = True) -> EmbeddingTable:
    """Fill ``table`` with every text of ``groups``, one encode call per group for its new texts.

    ``normalize`` = the paper's ``encode(..., normalize_embeddings=True)``: rows scaled to unit L2 norm.
    """
    if not callable(getattr(encoder, "encode", None)):
        raise InputError(f"{type(encoder).__name__} has no encode() method.",
                         "pass an object with encode(list[str]) -> array, e.g. a sentence-transformers model.")
    table = table if table is not None else EmbeddingTable()
    for group in groups:
        new = list(dict.fromkeys(t for t in group if t not in table))
        if new:
            vectors = _as_array(encoder.encode(new))
            if normalize and vectors.ndim == 2:
                vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            table.add(new, vectors)
            table.encode_calls += 1
    return table


def _as_array(out) -> np.ndarray:
    if hasattr(out, "detach"):  # a torch tensor from an encoder that returns tensors
        out = out.detach().cpu().numpy()
    return np.asarray(out, dtype=np.float32)
