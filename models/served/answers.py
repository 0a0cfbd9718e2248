"""Reading one ``/embeddings`` answer: the rows in input order, every one a usable vector, and the server's
account of it (``Usage``). Whatever the answer's shape, a fault is a ModelError naming it, never an internal
error; a vector that is zero or not finite names the text it was sent for (it is never cached)."""
from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.errors import ModelError, first_line

FIX = "check that the URL is an OpenAI-compatible embeddings endpoint (its base usually ends in /v1)."


@dataclass
class Usage:
    """What a served encoder sent and got (not identity: it never enters a key)."""
    requests: int = 0
    retries: int = 0
    texts: int = 0
    prompt_tokens: int = 0
    total_tokens: int = 0
    split_batches: int = 0
    response_model: str | None = None  # the ``model`` field of the responses
    norm_sum: float = 0.0  # of the raw vectors (servers differ on whether they normalise)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: float) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "retries": self.retries, "texts": self.texts,
                "prompt_tokens": self.prompt_tokens, "total_tokens": self.total_tokens,
                "split_batches": self.split_batches, "response_model": self.response_model,
                "mean_raw_norm": self.norm_sum / self.texts if self.texts else None}


def read_rows(body: Any, texts: list[str], shown: str) -> np.ndarray:
    """The (n, dim) float32 rows of one answer for ``texts``, in input order (by ``index`` where every row has
    one)."""
    n = len(texts)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != n or not all(isinstance(d, dict) for d in data):
        got = len(data) if isinstance(data, list) else "no"
        raise ModelError(f"{shown} answered {got} rows for {n} texts.", FIX)
    if all("index" in d for d in data):
        indices = [d["index"] for d in data]
        if sorted(i for i in indices if isinstance(i, int) and not isinstance(i, bool)) != list(range(n)):
            raise ModelError(f"{shown} answered rows with indices other than 0..{n - 1}.", FIX)
        data = sorted(data, key=lambda d: d["index"])
    try:
        vectors = [np.frombuffer(base64.b64decode(d["embedding"], validate=True), dtype="<f4")
                   if isinstance(d["embedding"], str) else np.asarray(d["embedding"], dtype=np.float64)
                   for d in data]
    except (KeyError, TypeError, ValueError) as err:
        raise ModelError(f"{shown} answered an unreadable embedding ({first_line(err, 120)}).", FIX) from None
    sizes = sorted({v.size for v in vectors})
    if any(v.ndim != 1 for v in vectors) or len(sizes) != 1 or not sizes[0]:
        raise ModelError(f"{shown} answered vectors of different dimensions ({sizes[0]}..{sizes[-1]}).", FIX)
    rows = np.stack(vectors)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(rows.astype(np.float64), axis=1)
    big = np.abs(rows.astype(np.float64)).max(axis=1) > np.finfo(np.float32).max
    bad = ~np.isfinite(norms) | (norms == 0) | big
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        what = ("a zero vector" if norms[k] == 0 else "values beyond float32" if big[k] and np.isfinite(norms[k])
                else "NaN or infinite values")
        raise ModelError(f"{shown} answered {what} for {texts[k][:80]!r} ({int(bad.sum())} of {n} rows like it).",
                         "check the deployment (a quantized model that overflows, a broken build); nothing of it "
                         "is cached.")
    return rows.astype(np.float32)


def count_usage(usage: Usage, body: dict, rows: np.ndarray, shown=str) -> None:
    """Add an answer's token counts, model (as ``shown`` makes it fit to show: masked, reduced) and raw norms to
    ``usage``; counts that are not whole numbers are left out (a server that answers "n/a" is not an error)."""
    reported = body.get("usage")
    reported = reported if isinstance(reported, dict) else {}
    tokens = {k: v for k in ("prompt_tokens", "total_tokens")
              if isinstance(v := reported.get(k), int) and not isinstance(v, bool) and v >= 0}
    usage.add(texts=len(rows), norm_sum=float(np.linalg.norm(rows.astype(np.float64), axis=1).sum()), **tokens)
    if isinstance(body.get("model"), str):
        usage.response_model = shown(body["model"])
