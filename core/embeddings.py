"""The encoder contract, and embedding each distinct text once in the protocol's grouping.

**The contract.** An encoder is any object with ``encode(list[str]) -> array (n, dim)``: a fasteval
``OnnxEncoder``, a sentence-transformers model, a harness's wrapper. Optional, and read only through
``describe``:

* ``name: str`` - the model's name in results (default: the class name);
* ``info: dict`` - the settings that change an embedding (hashes, provider, pooling, ...); every one goes into
  the result and embedding keys except names and paths (``fasteval.core.plan.NEVER_KEYED``), and an encoder
  without a content hash never shares cached embeddings;
* ``token_ids(list[str]) -> list[list[int]]`` - the model's own token ids without special tokens (Exam 2's
  token Levenshtein). Without it, a Hugging Face style ``tokenizer.encode(text, add_special_tokens=False)`` is
  used when there is one; else token Levenshtein is reported as missing;
* ``tokenizer`` - see ``token_ids``;
* ``usage`` - a served model's account of what it sent and got (``as_dict()``), recorded in the result;
* ``settled() -> dict`` - the settings that settled only as it ran (the provider an onnxruntime session fell back
  to), read after a run so its result is kept under the settings it was made with;
* ``settle() -> dict`` - start it where its settings may still change (open the session a GPU may refuse) and
  return ``settled()``: asked before any key is read, so a result, its folder and its cached embeddings are found
  and kept under what will run, never under what was planned;
* ``concurrency: int`` - how many encode calls it takes at once (a served model's ``--concurrency``): the
  protocol's calls are then sent that many at a time, each call still exactly the group's texts (default 1).

``describe`` reads them once per run (``fasteval.core.plan``).

What an encoder can do beyond embedding, which drift asks (the protocols ``Variants``, ``FixedTexts``,
``Encodings`` and ``ServerTokens``) and never infers from its class:

* ``variants() -> list`` and ``variant(variant, load=None) -> encoder`` - the model under its usual
  misconfigurations (a local ONNX model: ``fasteval.models.onnx.variants``), for drift's diagnosis and norm gate;
* ``require(list[str])``, ``check()``, ``dim``, ``recorded_variants``, ``identity`` - an encoder of a fixed set of
  texts (a receipt: ``fasteval.models.adapters.receipt``): it refuses another text set, is read whole on
  ``check()``, knows its dimension before a row is read, and carries the variants it recorded;
* ``encoded_as(list[str], "float" | "base64")`` and ``use_float()`` - a served model asked in either encoding
  format (drift's base64 parity), and told to ask for floats from then on;
* ``server_token_ids(list[str])`` - the server's own token ids (never a local stand-in), for drift's tokenization.

What a user hands fasteval (a name, a folder, a URL, an MTEB model, ...) becomes such an encoder through the one
door, ``fasteval.core.encoders.as_encoder``.

**Embedding.** Groups are encoded in protocol order; a group's texts that an earlier group already embedded
are taken from the table, the rest go to the encoder in one call, so the first occurrence of every text is
embedded exactly as the paper's notebook embedded it. Which texts each call holds is settled before the first is
made, so an encoder that takes several calls at once (``concurrency``) gets them in flight together: the same calls,
the same vectors, in the time of the slowest few.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import InputError, first_line

# sentence-transformers' normalize_embeddings (torch.nn.functional.normalize): x / max(||x||, eps).
NORM_EPS = 1e-12


@runtime_checkable
class Encoder(Protocol):
    """Required: ``encode``. Optional, read by ``describe`` only: ``name``, ``info``, ``token_ids``,
    ``tokenizer``, ``usage``, ``settled``, ``settle``, ``concurrency`` (see the module docstring)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


@dataclass
class EncoderView:
    """What fasteval reads from an encoder, found in one place (``describe``)."""
    encoder: Any
    name: str
    info: dict[str, Any] = field(default_factory=dict)
    token_ids: Callable[[list[str]], list[list[int]] | None] | None = None
    usage: Any = None  # a served model's usage (``as_dict()``), else None
    settled: Callable[[], dict[str, Any]] | None = None  # the settings that settled as it ran (``settled()``)
    settle: Callable[[], dict[str, Any]] | None = None  # start it and say what will run (``settle()``)
    concurrency: int = 1  # encode calls it takes at once (``concurrency``)


def describe(encoder: Any, name: str | None = None) -> EncoderView:
    """Check ``encoder`` against the contract and read its optional parts (InputError if it has no encode)."""
    if not callable(getattr(encoder, "encode", None)):
        raise InputError(f"{type(encoder).__name__} has no encode() method.",
                         "pass an object with encode(list[str]) -> array, e.g. a sentence-transformers model.")
    if follows_mteb_protocol(encoder):  # every entry point adapts it (core.encoders) before here
        raise InputError(f"{type(encoder).__name__} follows MTEB's encoder protocol (encode(DataLoader, ...)).",
                         "pass it to fasteval.evaluate (or any entry point), which adapts it.")
    info = getattr(encoder, "info", None)
    token_ids = getattr(encoder, "token_ids", None)
    if not callable(token_ids):
        token_ids = _hf_token_ids(getattr(encoder, "tokenizer", None))
    usage = getattr(encoder, "usage", None)
    settled = getattr(encoder, "settled", None)
    settle = getattr(encoder, "settle", None)
    concurrency = getattr(encoder, "concurrency", 1)
    return EncoderView(encoder=encoder, name=name or getattr(encoder, "name", None) or type(encoder).__name__,
                       info=dict(info) if isinstance(info, dict) else {}, token_ids=token_ids,
                       usage=usage if callable(getattr(usage, "as_dict", None)) else None,
                       settled=settled if callable(settled) else None, settle=settle if callable(settle) else None,
                       concurrency=concurrency if isinstance(concurrency, int) and concurrency > 1 else 1)


# What an encoder can do beyond embedding (see the module docstring), as protocols: drift asks
# ``isinstance(encoder, Variants)``, never the encoder's class, and a misspelt member is a type error, not a silent
# False. Only methods and members that cost nothing to read: a protocol's check reads every member it names (a
# receipt's ``recorded_variants`` reads its whole file, so it is not named here).
@runtime_checkable
class Variants(Protocol):
    """A model that can run under its usual misconfigurations (a local ONNX model)."""

    def variants(self) -> list[Any]: ...

    def variant(self, variant: Any, load: Callable[..., Any] | None = None) -> Any: ...


@runtime_checkable
class FixedTexts(Protocol):
    """An encoder of a fixed set of texts (a receipt): it refuses another set, and is read whole on ``check``."""

    dim: int | None  # known from the file's headers, before a row is read

    @property
    def identity(self) -> dict[str, Any]: ...  # what its reference said it is, and the file

    def require(self, texts: list[str]) -> None: ...

    def check(self) -> None: ...


@runtime_checkable
class ServerTokens(Protocol):
    """A served model whose server says its own token ids (never a local stand-in)."""

    def server_token_ids(self, texts: list[str]) -> list[list[int]] | None: ...


@runtime_checkable
class Encodings(Protocol):
    """A served model asked in either encoding format ("float", "base64"), and told to ask for floats from then
    on."""

    def encoded_as(self, texts: list[str], encoding: str) -> Any: ...

    def use_float(self) -> None: ...


@runtime_checkable
class OpensAhead(Protocol):
    """A model whose first encode waits for something it can start beforehand (a local ONNX model's onnxruntime
    session, which loads and optimises its graph without the GIL): ``embed_groups``, once it knows it will encode,
    asks it to start, and the first call reads its tokenizer meanwhile."""

    def open_ahead(self) -> None: ...


def follows_mteb_protocol(encoder: Any) -> bool:
    """MTEB's encoder protocol: ``encode(DataLoader, task_metadata=..., hf_split=..., hf_subset=...)``."""
    import inspect

    try:
        return "task_metadata" in inspect.signature(encoder.encode).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def _hf_token_ids(tokenizer: Any) -> Callable[[list[str]], list[list[int]] | None] | None:
    if tokenizer is None or not callable(getattr(tokenizer, "encode", None)):
        return None

    def token_ids(texts: list[str]) -> list[list[int]] | None:
        try:
            return [list(tokenizer.encode(t, add_special_tokens=False)) for t in texts]
        except TypeError:  # a tokenizer whose encode takes no add_special_tokens
            return None

    return token_ids


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, x / max(||x||_2, 1e-12), in x's own dtype (a zero row stays zero).

    The norm is taken in x's dtype, as sentence-transformers does; a row whose norm overflows it (float32 values
    around 1e19 and beyond) is scaled in float64 instead, so a large finite vector stays a unit vector and never
    becomes a zero row."""
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(x, axis=1, keepdims=True)
    out = x / np.maximum(norms, NORM_EPS)
    overflowed = ~np.isfinite(norms[:, 0]) & np.isfinite(x).all(axis=1) if x.ndim == 2 else None
    if overflowed is not None and overflowed.any():
        wide = x[overflowed].astype(np.float64)
        out[overflowed] = (wide / np.linalg.norm(wide, axis=1, keepdims=True)).astype(x.dtype)
    return out


def truncate(x: np.ndarray, dimensions: int) -> np.ndarray:
    """The first ``dimensions`` of each row, L2-normalised (float32): a Matryoshka model's shorter vectors
    (``SentenceTransformer(truncate_dim=N)`` with ``normalize_embeddings=True``; ``core.vectors``' truncation)."""
    return normalize_rows(np.ascontiguousarray(np.asarray(x, dtype=np.float32)[:, :dimensions]))


class EmbeddingTable:
    """text -> float32 embedding row; ``table[texts]`` gives the (len(texts), dim) matrix."""

    @classmethod
    def of(cls, texts: Sequence[str], vectors: np.ndarray, who: str = "encode()") -> EmbeddingTable:
        """A table of ``texts`` and their rows (``add``'s checks, ``who`` named in its errors)."""
        table = cls()
        table.add(texts, vectors, who=who)
        return table

    def texts(self) -> list[str]:
        """Every text of the table, in the order they were added."""
        return list(self._index)

    def __init__(self, dim: int | None = None):
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self.dim = dim

    def __contains__(self, text: str) -> bool:
        return text in self._index

    def __len__(self) -> int:
        return len(self._index)

    def add(self, texts: Sequence[str], vectors: np.ndarray, who: str = "encode()") -> None:
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise InputError(f"{who} returned shape {vectors.shape} for {len(texts)} texts.",
                             "return one row per input text, as encode(list[str]) -> (n, dim).")
        if self.dim is None:
            self.dim = vectors.shape[1]
        elif vectors.shape[1] != self.dim:
            raise InputError(f"{who} returned dimension {vectors.shape[1]}, earlier {self.dim}.",
                             "return embeddings of one fixed dimension.")
        if not np.isfinite(vectors).all():
            raise InputError(f"{who} returned NaN or infinite values.",
                             "check the model (a NaN embedding has no similarity).")
        zero = ~vectors.any(axis=1)
        if len(texts) > 1 and zero.all():  # nothing usable (one zero row, a static model's empty text, is its own)
            raise InputError(f"{who} returned zero vectors for all {len(texts)} texts (the first "
                             f"{str(texts[0])[:80]!r}).", "check the model: a zero vector has no direction, so no "
                             "similarity (nothing of it was kept).")
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

    def similarities(self, rows: Sequence[str], cols: Sequence[str] | None = None,
                     metric: str = "cos") -> np.ndarray:
        """The similarity of each of ``rows`` to each of ``cols`` (None: ``rows`` themselves, exactly symmetric),
        (len(rows), len(cols)) float32: ``similarity_matrix`` of their vectors (numpy's for the exams' small grids, no
        JIT to load; the kernels' for large ones: ``kernels.pick``). A table of a store's asymmetric scores answers
        with the store's scores."""
        from .kernels.pick import similarity_matrix

        return similarity_matrix(self[list(rows)], None if cols is None else self[list(cols)], metric=metric)

    def paired(self, a: Sequence[str], b: Sequence[str], metric: str = "cos") -> np.ndarray:
        """The similarity of ``a[i]`` to ``b[i]``, (len(a),) float32 (``paired_similarity``, chosen as above)."""
        from .kernels.pick import paired_similarity

        return paired_similarity(self[list(a)], self[list(b)], metric=metric)


def embed_groups(encoder: Encoder, groups: Iterable[Sequence[str]], table: EmbeddingTable | None = None,
                 normalize: bool = True, rewrite: Callable[[str], str] | None = None,
                 name: str | None = None, concurrency: int = 1,
                 on_added: Callable[[EmbeddingTable], None] | None = None) -> EmbeddingTable:
    """Fill ``table`` with every text of ``groups``, one encode call per group for its new texts.

    ``encoder`` is one the door made (``as_encoder``); ``name`` is how errors name it (default: its class).
    ``normalize`` = the paper's ``encode(..., normalize_embeddings=True)``: rows scaled to unit L2 norm.
    ``rewrite``: what the encoder is given instead of each text (the table stays keyed by the original).
    ``concurrency``: calls in flight at once (an encoder that takes several, ``EncoderView.concurrency``); each
    call holds the texts it holds one at a time, and the table is filled in call order. A call that fails (or an
    interrupt) leaves the table holding every call that finished before it, so a rerun resumes from them.
    ``on_added(table)`` is told after each call's rows are in the table (a sweep's checkpoints).
    """
    who = f"{name or getattr(encoder, 'name', None) or type(encoder).__name__}.encode()"
    table = table if table is not None else EmbeddingTable()
    calls: list[list[str]] = []  # each group's texts that no earlier group holds: settled before any call
    seen: set[str] = set()
    for group in groups:
        new = list(dict.fromkeys(t for t in group if t not in table and t not in seen))
        if new:
            calls.append(new)
            seen.update(new)
    if calls and isinstance(encoder, OpensAhead):  # its session opens while the first call reads its tokenizer
        encoder.open_ahead()

    def one(new: list[str]) -> np.ndarray:
        vectors = as_array(encoder.encode([rewrite(t) for t in new] if rewrite else new), who)
        return normalize_rows(vectors) if normalize and vectors.ndim == 2 else vectors

    if concurrency <= 1 or len(calls) <= 1:
        for new in calls:
            table.add(new, one(new), who=who)
            if on_added is not None:
                on_added(table)
        return table
    from concurrent.futures import ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(calls)), thread_name_prefix="fasteval-encode")
    futures = [pool.submit(one, new) for new in calls]
    added = 0
    try:
        for new, future in zip(calls, futures):
            table.add(new, future.result(), who=who)
            added += 1
            if on_added is not None:
                on_added(table)
    except BaseException:  # the calls sent are let finish and stay in the table (in call order); the rest are not
        for future in futures:
            future.cancel()
        wait(futures)  # the requests in flight (the process would wait for their threads anyway); Ctrl-C again: out
        for new, future in list(zip(calls, futures))[added:]:
            if future.done() and not future.cancelled() and future.exception() is None:
                with suppress(InputError):  # a call whose answer is refused is not kept
                    table.add(new, future.result(), who=who)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return table


def as_array(out, who: str = "encode()") -> np.ndarray:
    """An encoder's output as a float32 array (a torch tensor moved to the CPU first); one line naming the encoder
    (``who``) when it is not numbers of one shape (a ragged list, strings)."""
    if hasattr(out, "detach"):  # a torch tensor from an encoder that returns tensors
        out = out.detach().cpu().numpy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's VisibleDeprecationWarning of a ragged list: the line says it
            return np.asarray(out, dtype=np.float32)
    except (ValueError, TypeError) as err:
        what = type(out).__name__
        if isinstance(out, (list, tuple)) and out:
            kinds = sorted({type(row).__name__ for row in out})
            lengths = sorted({len(row) for row in out if hasattr(row, "__len__") and not isinstance(row, str)})
            what += f" of {'/'.join(kinds)}" + (f" of lengths {lengths[0]}..{lengths[-1]}" if len(lengths) > 1 else "")
        raise InputError(f"{who} returned a {what}, not numbers of one shape ({first_line(err, 100)}).",
                         "return one row of floats per input text, as encode(list[str]) -> ndarray (n, dim).") from None
