"""The embedding cache: embeddings on disk, keyed by (embedding settings, exact text).

``FASTEVAL_HOME/embeddings/<key>.npz`` holds every text a model embedded under one set of embedding settings.
Exams embed their texts in the protocol's fixed group order, so a text is always first embedded in the same
encode call, and a cached run gives the numbers of a fresh one. The cache is derived data: an entry is used
only when it holds its own key, float32 rows of one dimension, finite, one per distinct text; one that is not
(truncated, corrupt, another key's file copied in, another shape) is reported in one warning line, deleted and
rebuilt.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..embeddings import EmbeddingTable
from ..errors import warn_rebuilt
from ..io import atomic_write


class EmbeddingCache:
    def __init__(self, root: Path | None):
        self.root = root

    def path(self, key: str) -> Path | None:
        return None if self.root is None else self.root / "embeddings" / f"{key}.npz"

    def load(self, key: str) -> EmbeddingTable:
        """The cached table for ``key`` (empty when there is none, or when the entry was unreadable)."""
        path = self.path(key)
        if path is None or not path.exists():
            return EmbeddingTable()
        try:
            with np.load(path, allow_pickle=False) as data:
                stored = str(data["key"]) if "key" in data else None
                texts, vectors = [str(t) for t in data["texts"]], np.asarray(data["vectors"])
            if stored != key:
                raise ValueError(f"it holds the embeddings of key {stored}" if stored else "it names no key")
            if vectors.dtype != np.float32 or vectors.ndim != 2 or len(set(texts)) != len(texts):
                raise ValueError(f"{vectors.dtype} rows of shape {vectors.shape} for {len(texts)} texts")
            table = EmbeddingTable()
            table.add(texts, vectors, who="the cache entry")
            return table
        except Exception as err:  # noqa: BLE001 - zip, npy, shape and value errors all mean "rebuild"
            warn_rebuilt("embedding cache", path, err)
            path.unlink(missing_ok=True)
            return EmbeddingTable()

    def save(self, key: str, table: EmbeddingTable) -> None:
        path = self.path(key)
        if path is None or len(table) == 0:
            return
        texts, vectors = zip(*table.items())
        buf = io.BytesIO()
        np.savez(buf, key=np.array(key), texts=np.array(texts), vectors=np.stack(vectors).astype(np.float32))
        try:
            atomic_write(path, buf.getvalue())
        except OSError:
            pass  # the cache only saves time; a read-only home still gives results
