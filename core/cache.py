"""The embedding cache: embeddings on disk, keyed by (embedding settings, exact text).

``FASTEVAL_HOME/embeddings/<key>.npz`` holds every text a model embedded under one set of embedding settings.
Exams embed their texts in the protocol's fixed group order, so a text is always first embedded in the same
encode call, and a cached run gives the numbers of a fresh one. The cache is derived data: an entry is used
only when it holds its own key, float32 rows of one dimension, finite and non-zero, one per distinct text; one
that is not (truncated, corrupt, another key's file copied in, another shape) is reported in one warning line,
deleted and rebuilt. A path there that is not a file of ours (a folder) is left alone, and nothing is cached.

The key says what the encoder claims to be; ``verified`` checks what it does before the entry is used. A local
model is its content hashes, so one cached text embedded afresh must come back in the cached dimension (an entry
cut to another dimension with its key kept is caught); a served model is only what its server says, so three
cached texts must come back as cached (cosine at least ``CANARY_MIN_COSINE``: a server that changed its vectors
without changing what ``/models`` says is caught). Values are not compared for a local model because some
embed a text alone differently from the same text in a batch by design (int8's activations are quantized per
batch: cosine 0.99 between the two), which a cache must not mistake for another model. Either way a mismatch
discards the entry.

Texts are stored as one UTF-8 byte string and their end offsets (a long text costs its own length, not the
length of the longest one times the number of texts).
"""
from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .embeddings import EmbeddingTable, normalize_rows
from .errors import FastevalError, warn_rebuilt
from .io import atomic_write, pack_texts, unpack_texts

log = logging.getLogger(__name__)

CANARIES = 3  # cached texts embedded afresh before a cache is trusted
CANARY_MIN_COSINE = 1 - 1e-5  # the same model embeds a text alone as in its batch far closer than this


def embedding_cache_root(cache_root: Path | bool | None) -> Path | None:
    """The one rule for the embedding cache's root, in a sweep, on a Ray node, in drift and for receipts: None is
    this machine's FASTEVAL_HOME (each Ray node's own), False is no cache, a path is that folder."""
    from .io import fasteval_home

    if cache_root is False:
        return None
    return fasteval_home() if cache_root is None or cache_root is True else Path(cache_root)


def embedding_cache(settings, cache_root: Path | None) -> EmbeddingCache:
    """The embedding cache for an encoder's settings (its key is the plan's ``embedding_key``). Without a content
    hash (or a served model's deployment) the model's identity is unknown: its embeddings are then never shared
    (a cache that keeps nothing)."""
    known = settings.get("source_sha256") or settings.get("onnx_sha256") or settings.get("deployment")
    return EmbeddingCache(cache_root if known else None)


# While a model embeds, what it embedded is saved to the embedding cache at most this often (and whenever it stops,
# an interrupt and a failure included): a process killed outright loses at most this much of its embedding.
CHECKPOINT_S = 30.0


class EmbeddingCache:
    def __init__(self, root: Path | None):
        self.root = root

    def saver(self, key: Callable[[], str], table: EmbeddingTable) -> Saver:
        """What a run embeds into ``table``, saved under ``key()`` (asked at each save: the key of what runs) now
        and then while it embeds and once when it stops."""
        return Saver(self, key, len(table))

    def path(self, key: str) -> Path | None:
        return None if self.root is None else self.root / "embeddings" / f"{key}.npz"

    def _usable_path(self, key: str) -> Path | None:
        path = self.path(key)
        if path is not None and (path.is_dir() or (path.exists() and not path.is_file())):
            log.warning("%s is not a file of fasteval's (a folder?); it is left alone and these embeddings are not "
                        "cached (remove it to cache them)", path)
            return None
        return path

    def load(self, key: str, check: Callable[[EmbeddingTable], str | None] | None = None) -> EmbeddingTable:
        """The cached table for ``key``: empty when there is none, or when the entry was unreadable (reported in one
        line) or ``check`` found it is not what the encoder embeds now (its reason, the caller's to tell); either
        way the entry is discarded, so the cache heals in this one place. An error of the encoder that ``check``
        asks (a server that died) is raised: that is no fault of the entry."""
        path = self._usable_path(key)
        if path is None or not path.exists():
            return EmbeddingTable()
        try:
            with np.load(path, allow_pickle=False) as data:
                stored = str(data["key"]) if "key" in data else None
                texts = _texts_of(data)
                vectors = np.asarray(data["vectors"])
            if stored != key:
                raise ValueError(f"it holds the embeddings of key {stored}" if stored else "it names no key")
            if vectors.dtype != np.float32 or vectors.ndim != 2 or len(set(texts)) != len(texts):
                raise ValueError(f"{vectors.dtype} rows of shape {vectors.shape} for {len(texts)} texts")
            if len(texts) and not (np.abs(vectors).max(axis=1) > 0).all():
                raise ValueError("it holds a zero vector")
            table = EmbeddingTable()
            table.add(texts, vectors, who="the cache entry")
            rejected = check(table) if check is not None and len(table) else None
        except FastevalError:
            raise
        except Exception as err:  # noqa: BLE001 - zip, npy, shape and value errors all mean "rebuild"
            warn_rebuilt("embedding cache", path, err)
            path.unlink(missing_ok=True)
            return EmbeddingTable()
        if rejected is not None:
            path.unlink(missing_ok=True)
            return EmbeddingTable()
        return table

    def save(self, key: str, table: EmbeddingTable) -> None:
        path = self._usable_path(key)
        if path is None or len(table) == 0:
            return
        texts, vectors = zip(*table.items())
        text_bytes, text_ends = pack_texts(texts)
        buf = io.BytesIO()
        np.savez(buf, key=np.array(key), text_bytes=text_bytes, text_ends=text_ends,
                 vectors=np.stack(vectors).astype(np.float32))
        try:
            atomic_write(path, buf.getvalue())
        except OSError as err:
            log.info("embeddings not cached (%s: %s); results are unaffected", path.parent, err.strerror or err)


class Saver:
    """A run's embeddings saved as they grow: ``checkpoint`` (told after each encode call) saves at most every
    ``CHECKPOINT_S`` seconds, so a process killed outright (SIGKILL, the OOM killer) loses little; ``save`` whatever
    is new when the run stops (done, failed or interrupted)."""

    def __init__(self, cache: EmbeddingCache, key: Callable[[], str], rows: int):
        self.cache, self.key = cache, key
        self.rows, self.at = rows, time.monotonic()  # the rows in the cache, and when they were saved

    def checkpoint(self, table: EmbeddingTable) -> None:
        if time.monotonic() - self.at >= CHECKPOINT_S:
            self.save(table)

    def save(self, table: EmbeddingTable) -> None:
        if len(table) > self.rows:
            self.cache.save(self.key(), table)
            self.rows, self.at = len(table), time.monotonic()


def _texts_of(data) -> list[str]:
    """The texts of an entry: UTF-8 bytes and end offsets, or (entries written before) a unicode array."""
    if "text_bytes" in data:
        return unpack_texts(data["text_bytes"], data["text_ends"])
    return [str(t) for t in data["texts"]]


def canary_texts(table: EmbeddingTable, n: int = CANARIES) -> list[str]:
    """The cached texts embedded afresh to check a cache: the first, the middle and the last one."""
    texts = table.texts()
    picks = sorted({0, len(texts) // 2, len(texts) - 1})[:n] if texts else []
    return [texts[i] for i in picks]


def mismatch(table: EmbeddingTable, encoder, rewrite=None, values: bool = True) -> str | None:
    """Why ``table`` is not what ``encoder`` embeds now (None when its canaries come back as cached);
    ``values=False``: the dimension alone (one canary)."""
    texts = canary_texts(table, CANARIES if values else 1)
    if not texts:
        return None
    fresh = np.asarray(encoder.encode([rewrite(t) if rewrite else t for t in texts]), dtype=np.float32)
    if fresh.ndim != 2 or fresh.shape[0] != len(texts) or fresh.shape[1] != table.dim:
        return f"it embeds in {fresh.shape[-1] if fresh.ndim == 2 else '?'} dimensions, the cache holds {table.dim}"
    if not values:
        return None
    cached = normalize_rows(table[texts].astype(np.float64))
    cosines = np.einsum("ij,ij->i", cached, normalize_rows(fresh.astype(np.float64)))
    k = int(np.argmin(cosines))
    if not np.isfinite(cosines).all() or cosines[k] < CANARY_MIN_COSINE:
        return f"{texts[k][:60]!r} comes back at cosine {cosines[k]:.6f} to its cached embedding"
    return None


class Planned(Protocol):
    """What ``verified`` reads of a plan (``fasteval.core.plan.Plan``, a layer above the cache)."""

    @property
    def name(self) -> str: ...

    @property
    def encoder(self) -> Any: ...

    @property
    def scoring(self) -> Any: ...

    @property
    def embedding_key(self) -> str: ...

    @property
    def served(self) -> bool: ...


def verified(cache: EmbeddingCache, planned: Planned, finished: bool = False) -> tuple[EmbeddingTable, str | None]:
    """The plan's cached embeddings, trusted once its encoder embeds their canaries as cached (a served model: their
    values too, else their dimension); else the entry is discarded (one warning line) and an empty table returned,
    so every text is embedded afresh. And, for a ``finished`` result of a served model, why it may no longer be
    its deployment's (None: it is): a server can change its vectors without changing what /models says, so such a
    result is trusted only when its canaries come back as cached (a local model is its content hashes, and needs
    no such check: it is never asked here, so a finished local model starts no session)."""
    served = planned.served
    reasons: list[str] = []

    def check(table: EmbeddingTable) -> str | None:
        reason = mismatch(table, planned.encoder, planned.scoring.rewrite, values=served)
        if reason:
            reasons.append(reason)
        return reason

    table = cache.load(planned.embedding_key, check)
    if served and finished:
        return table, reasons[0] if reasons else (None if len(table) else "there are no cached embeddings to "
                                                  "check it against")
    if reasons:
        log.warning("the cached embeddings of %s are not what it embeds now (%s): discarding them and embedding "
                    "afresh", planned.name, reasons[0])
    return table, None
