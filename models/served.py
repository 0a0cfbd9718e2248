"""The model as deployed: an embedding server reached over HTTP with OpenAI's embeddings API, as a fasteval
encoder (``--model URL[#MODEL]``).

``URL`` is a base URL as OpenAI's client takes it (``https://api.openai.com/v1``, ``http://127.0.0.1:8080/v1``);
fasteval calls ``URL/embeddings`` (``{"input": [...], "model": ..., "encoding_format": "base64"}``; rows put back
in order by ``index``) and ``URL/models``. ``#MODEL`` names the served model; without it the server's only model
is used. OpenAI, Hugging Face text-embeddings-inference (TEI), vLLM, infinity, llama.cpp's server, Ollama and LM
Studio answer this API.

**A client a server is glad to have**: batches of ``batch_size`` texts (a 413, or a 400/422 that a smaller batch
cures, splits the batch and the smaller size is kept), ``concurrency`` requests in flight over one connection pool
(httpx), retries with exponential backoff and full jitter on 408/425/429/5xx, timeouts and dropped connections,
honouring ``Retry-After``, a per-request timeout, base64 vectors where the server accepts them (else floats), and
the ``usage`` token counts summed.

**Identity.** ``info["deployment"]`` holds what identifies the deployment: the URL without credentials, the served
model id, what ``/models`` says of that model (less its volatile fields), and TEI's ``/info`` where there is one.
It goes into the result and embedding-cache keys, so a rerun against the same deployment embeds nothing again
(it asks the server who it is, and sends no text). What the server answers that is not identity (the response's
``model`` field, token counts, the raw vectors' mean norm, requests and retries) is in ``usage``.

**Credentials** come from an environment variable (``FASTEVAL_API_KEY``, or the one named by ``api_key_env``),
sent as a bearer token; the key is never written into results, keys, caches, logs or error lines.

**Token ids** (Exam 2's token Levenshtein): the server's ``/tokenize`` (TEI, vLLM, llama.cpp) where it has one,
else a local ``tokenizer`` (a tokenizer.json or a model folder), else none: the row is left out (null), with a
warning, never computed with another model's tokenizer.
"""
from __future__ import annotations

import base64
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from fasteval.core.choices import API_KEY_ENV, SERVED_CONCURRENCY, SERVED_RETRIES, SERVED_TIMEOUT_S
from fasteval.core.errors import InputError, ModelError, first_line

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32
BACKOFF_BASE_S, BACKOFF_CAP_S = 0.5, 30.0
MAX_RETRY_AFTER_S = 120.0  # a Retry-After beyond this is not waited for: the request fails
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# /models fields that change without the deployment changing (Infinity's queue stats, start times, vLLM's
# permission ids): left out of the identity, so they never change a key.
VOLATILE_MODEL_FIELDS = frozenset({"created", "stats", "permission"})


def is_url(name: Any) -> bool:
    """Whether a --model value names a served model (``http://`` or ``https://``)."""
    return isinstance(name, str) and name.lower().startswith(("http://", "https://"))


def split_model_url(text: str) -> tuple[str, str | None]:
    """``URL#MODEL`` -> (base URL without a trailing slash, MODEL or None)."""
    url, _, model = text.partition("#")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{text!r} is not an http(s) URL.",
                         "pass a base URL as OpenAI's client takes it, e.g. http://127.0.0.1:8080/v1#my-model.")
    return url.strip().rstrip("/"), (model.strip() or None)


def public_url(url: str) -> str:
    """``url`` without credentials: no user:password@, no query string (API keys travel there too)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


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

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "retries": self.retries, "texts": self.texts,
                "prompt_tokens": self.prompt_tokens, "total_tokens": self.total_tokens,
                "split_batches": self.split_batches, "response_model": self.response_model,
                "mean_raw_norm": self.norm_sum / self.texts if self.texts else None}


class _Refused(Exception):
    """An HTTP 4xx the caller may cure (a smaller batch, floats instead of base64)."""

    def __init__(self, status: int, text: str):
        super().__init__(f"HTTP {status}: {text}")
        self.status = status


class ServedEncoder:
    """Embeddings from a server's ``/embeddings``: ``encode(list[str]) -> float32 (n, dim)``."""

    def __init__(self, url: str, *, model: str | None = None, api_key_env: str = API_KEY_ENV,
                 batch_size: int = DEFAULT_BATCH_SIZE, concurrency: int = SERVED_CONCURRENCY,
                 timeout: float = SERVED_TIMEOUT_S, retries: int = SERVED_RETRIES,
                 tokenizer: str | Path | None = None, progress=None):
        """``progress(done, total)`` is called after each request of an ``encode`` call (the CLI's progress
        bar; the library itself prints nothing)."""
        import httpx

        base, from_url = split_model_url(url)
        for name, value, low in (("batch size", batch_size, 1), ("concurrency", concurrency, 1),
                                 ("retries", retries, 0)):
            if int(value) < low:
                raise InputError(f"The {name} must be >= {low}, got {value}.", f"pass --{name.replace(' ', '-')} "
                                 f"{low} or more.")
        if not timeout > 0:
            raise InputError(f"The request timeout must be > 0 s, got {timeout}.", "pass --request-timeout 60.")
        self.base = base
        self.url = public_url(base)
        self.batch_size, self.concurrency, self.retries = int(batch_size), int(concurrency), int(retries)
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env) or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout),
                                    limits=httpx.Limits(max_connections=self.concurrency,
                                                        max_keepalive_connections=self.concurrency))
        self.usage = Usage()
        self.progress = progress
        self.dim: int | None = None
        self._base64: bool | None = None  # None: not known yet whether the server takes encoding_format
        self._tokenize: tuple[str, str] | None = None  # (dialect, base URL) of the /tokenize that answered
        self._local_tokenizer = _load_tokenizer(tokenizer) if tokenizer else None
        self._tokenizer_source = str(tokenizer) if tokenizer else None
        self.model, entry = self._choose_model(model or from_url)
        self.name = self.model
        self.deployment = {"url": self.url, "model": self.model,
                           "server": {k: v for k, v in entry.items() if k not in VOLATILE_MODEL_FIELDS},
                           **({"info": info} if (info := self._server_info()) else {})}

    # --- what the encoder contract reads ----------------------------------------------------------------------
    @property
    def info(self) -> dict[str, Any]:
        """The settings that change an embedding: the deployment (its identity), the batch size, no prompt."""
        return {"deployment": self.deployment, "batch_size": self.batch_size, "prompt": "",
                **({"tokenizer": self._tokenizer_source} if self._tokenizer_source else {})}

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        batches = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        done = [0]
        lock = threading.Lock()

        def one(batch: list[str]) -> np.ndarray:
            rows = self._embed(batch)
            if self.progress is not None:
                with lock:
                    done[0] += len(batch)
                    self.progress(done[0], len(texts))
            return rows

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
            return np.concatenate(list(pool.map(one, batches)))

    def token_ids(self, texts: list[str]) -> list[list[int]] | None:
        """The model's token ids without special tokens: the server's /tokenize, else the local tokenizer, else
        None (Exam 2 then leaves token Levenshtein out)."""
        if self._local_tokenizer is not None:
            return [list(e.ids) for e in self._local_tokenizer.encode_batch(list(texts), add_special_tokens=False)]
        ids = self._server_token_ids(list(texts))
        if ids is None:
            log.warning("%s has no tokenizer endpoint (/tokenize): Exam 2's token Levenshtein is left out (null); "
                        "pass --tokenizer PATH (the model's tokenizer.json or folder) to have it.", self.url)
        return ids

    def close(self) -> None:
        self._client.close()

    # --- embedding ---------------------------------------------------------------------------------------------
    def _embed(self, batch: list[str]) -> np.ndarray:
        """One batch's rows; split in two while the server refuses it for its size."""
        payload: dict[str, Any] = {"input": batch, "model": self.model}
        if self._base64 is not False:
            payload["encoding_format"] = "base64"
        try:
            body = self._request("POST", "/embeddings", payload)
        except _Refused as err:
            if "encoding_format" in payload and self._base64 is None and err.status in (400, 422):
                self._base64 = False  # the server does not take base64 (or the batch is too big: try both)
                return self._embed(batch)
            if len(batch) > 1 and err.status in (400, 413, 422):
                half = (len(batch) + 1) // 2
                with self.usage._lock:
                    self.usage.split_batches += 1
                    self.batch_size = min(self.batch_size, half)
                log.info("%s refused %d texts in one request (HTTP %d); sending at most %d", self.url, len(batch),
                         err.status, half)
                return np.concatenate([self._embed(batch[:half]), self._embed(batch[half:])])
            raise ModelError(f"{self.url}/embeddings refused the request ({first_line(err, 200)}).",
                             "check the model name (#MODEL) and the server's limits (input length, batch size).") \
                from None
        rows = self._rows(body, len(batch))
        if "encoding_format" in payload:
            self._base64 = True
        return rows

    def _rows(self, body: Any, n: int) -> np.ndarray:
        """The (n, dim) float32 rows of one /embeddings answer, in input order; ModelError when malformed."""
        fix = "check that the URL is an OpenAI-compatible embeddings endpoint (its base usually ends in /v1)."
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != n or not all(isinstance(d, dict) for d in data):
            got = len(data) if isinstance(data, list) else "no"
            raise ModelError(f"{self.url}/embeddings answered {got} rows for {n} texts.", fix)
        if all("index" in d for d in data):
            data = sorted(data, key=lambda d: d["index"])
            if [d["index"] for d in data] != list(range(n)):
                raise ModelError(f"{self.url}/embeddings answered rows with indices other than 0..{n - 1}.", fix)
        try:
            vectors = [np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4")
                       if isinstance(d["embedding"], str) else np.asarray(d["embedding"], dtype=np.float32)
                       for d in data]
        except (KeyError, TypeError, ValueError) as err:
            raise ModelError(f"{self.url}/embeddings answered an unreadable embedding ({first_line(err, 120)}).",
                             fix) from None
        dims = {v.shape for v in vectors}
        if len(dims) != 1 or len(next(iter(dims))) != 1 or not vectors[0].size:
            raise ModelError(f"{self.url}/embeddings answered vectors of different dimensions "
                             f"({sorted(v.size for v in vectors)[:1]}..{sorted(v.size for v in vectors)[-1:]}).", fix)
        rows = np.stack(vectors).astype(np.float32)
        if not np.isfinite(rows).all():
            raise ModelError(f"{self.url}/embeddings answered NaN or infinite values.",
                             "check the deployment (a quantized model that overflows, a broken build).")
        with self.usage._lock:
            if self.dim is None:
                self.dim = rows.shape[1]
            elif rows.shape[1] != self.dim:
                raise ModelError(f"{self.url}/embeddings changed the dimension from {self.dim} to {rows.shape[1]}.",
                                 "check that one model serves every request (a load balancer over two models?).")
            self.usage.texts += n
            self.usage.norm_sum += float(np.linalg.norm(rows.astype(np.float64), axis=1).sum())
            usage = body.get("usage") or {}
            self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.usage.total_tokens += int(usage.get("total_tokens") or 0)
            if isinstance(body.get("model"), str):
                self.usage.response_model = body["model"]
        return rows

    # --- HTTP --------------------------------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: Any = None, base: str | None = None,
                 retry: bool = True) -> Any:
        """JSON of one request, retried on 408/425/429/5xx, timeouts and dropped connections (exponential backoff
        with full jitter, Retry-After honoured). _Refused for another 4xx the caller may cure; ModelError for the
        rest, naming the problem and the fix (never the key)."""
        import httpx

        url = (base or self.base) + path
        shown = public_url(base or self.base) + path
        for attempt in range(self.retries + 1 if retry else 1):
            wait = None
            try:
                with self.usage._lock:
                    self.usage.requests += 1
                response = self._client.request(method, url, json=payload)
            except httpx.ConnectError as err:
                if attempt == 0 and self.dim is None and path == "/models":
                    raise ModelError(f"Nothing answers at {shown} ({first_line(err, 100)}).",
                                     "start the server, or check the host, port and scheme of --model.") from None
                reason = f"could not connect ({first_line(err, 100)})"
            except httpx.TimeoutException:
                reason = "no answer within the timeout"
            except httpx.TransportError as err:
                reason = f"the connection dropped ({type(err).__name__})"
            else:
                status = response.status_code
                if status < 300:
                    try:
                        return response.json()
                    except ValueError:
                        raise ModelError(f"{shown} answered HTTP {status} with a body that is not JSON.",
                                         "check that the URL is the API's base URL (it usually ends in /v1).") \
                            from None
                if status in (401, 403):
                    has_key = bool(os.environ.get(self.api_key_env))
                    raise ModelError(f"{shown} refused the request (HTTP {status}).",
                                     f"set {self.api_key_env} to a valid API key" + (" (the one set was refused)."
                                                                                     if has_key else ".")) from None
                if status == 404:
                    raise ModelError(f"{shown} answered 404 (not found).",
                                     "check the base URL (OpenAI-compatible servers usually serve under /v1) and "
                                     "the model name after #.")
                if status not in RETRY_STATUSES:
                    raise _Refused(status, _error_text(response))
                reason, wait = f"HTTP {status}", _retry_after(response)
            if not retry or attempt == self.retries:
                raise ModelError(f"{shown} did not answer after {attempt + 1} tries (last: {reason}).",
                                 "check that the server is up and not overloaded, or raise --retries.")
            if wait is not None and wait > MAX_RETRY_AFTER_S:
                raise ModelError(f"{shown} asks to retry after {wait:.0f} s (over {MAX_RETRY_AFTER_S:.0f} s).",
                                 "try again later, or lower --concurrency to stay within the rate limit.")
            delay = wait if wait is not None else random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** attempt))
            with self.usage._lock:
                self.usage.retries += 1
            log.info("%s: %s; retrying in %.1f s (%d of %d)", shown, reason, delay, attempt + 1, self.retries)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _choose_model(self, wanted: str | None) -> tuple[str, dict]:
        """The served model's id and its /models entry: ``wanted``, else the only one; InputError listing them."""
        try:
            body = self._request("GET", "/models")
        except _Refused as err:
            raise ModelError(f"{self.url}/models refused the request ({first_line(err, 160)}).",
                             "check the base URL (OpenAI-compatible servers usually serve under /v1).") from None
        entries = [e for e in (body.get("data") if isinstance(body, dict) else None) or [] if isinstance(e, dict)]
        ids = [str(e.get("id")) for e in entries if e.get("id") is not None]
        if wanted is not None:
            if wanted in ids or not ids:
                return wanted, next((e for e in entries if e.get("id") == wanted), {"id": wanted})
            raise InputError(f"{self.url} serves no model {wanted!r} (it serves {', '.join(ids)}).",
                             f"name one of them after #, e.g. --model {self.url}#{ids[0]}.")
        if len(ids) == 1:
            return ids[0], entries[0]
        if not ids:
            raise InputError(f"{self.url}/models lists no model.", f"name the model after #: --model {self.url}#MODEL.")
        raise InputError(f"{self.url} serves {len(ids)} models: {', '.join(ids)}.",
                         f"name one after #, e.g. --model {self.url}#{ids[0]}.")

    def _server_info(self) -> dict | None:
        """TEI's /info (model sha, dtype, version) at the server's root, where there is one."""
        for base in _roots(self.base):
            try:
                body = self._request("GET", "/info", base=base, retry=False)
            except (ModelError, _Refused):
                continue
            if isinstance(body, dict) and ("model_id" in body or "model_sha" in body):
                return body
        return None

    def _server_token_ids(self, texts: list[str]) -> list[list[int]] | None:
        """Token ids from the server's /tokenize, in the dialect that answers (TEI, vLLM, llama.cpp)."""
        known = self._tokenize is not None
        tries = [self._tokenize] if known else [(d, b) for d in _TOKENIZE_DIALECTS for b in _roots(self.base)]
        for dialect, base in tries:
            build, read = _TOKENIZE_DIALECTS[dialect]
            try:
                if dialect == "tei":
                    out = read(self._request("POST", "/tokenize", build(texts, self.model), base=base, retry=known))
                else:
                    out = [read(self._request("POST", "/tokenize", build(t, self.model), base=base, retry=known))
                           for t in texts]
            except (ModelError, _Refused, KeyError, TypeError, ValueError):
                if known:
                    raise ModelError(f"{self.url}'s /tokenize stopped answering.", "rerun, or pass --tokenizer PATH.") \
                        from None
                continue
            if len(out) == len(texts) and all(isinstance(ids, list) for ids in out):
                self._tokenize = (dialect, base)
                return out
        return None


def _tei_ids(body) -> list[list[int]]:
    return [[int(t["id"]) for t in row if not t.get("special")] for row in body]


# /tokenize request bodies and answers: TEI takes a batch and answers token objects; vLLM and llama.cpp one text.
_TOKENIZE_DIALECTS = {
    "tei": (lambda texts, model: {"inputs": texts, "add_special_tokens": False}, _tei_ids),
    "vllm": (lambda text, model: {"model": model, "prompt": text, "add_special_tokens": False},
             lambda body: [int(i) for i in body["tokens"]]),
    "llama.cpp": (lambda text, model: {"content": text, "add_special": False},
                  lambda body: [int(i) for i in body["tokens"]]),
}


def _roots(base: str) -> list[str]:
    """Where a server's own routes (/info, /tokenize) may be: the base URL, and its root when it ends in /v1."""
    roots = [base[: -len("/v1")]] if base.endswith("/v1") else []
    return roots + [base]


def _retry_after(response) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), or None."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time()) if when is not None else None


def _error_text(response) -> str:
    """The server's error message, short (OpenAI's {"error": {"message"}}, TEI's {"error"}, FastAPI's "detail")."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:160]
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:160]
    return str(body)[:160]


def _load_tokenizer(path: str | Path):
    """A tokenizers.Tokenizer from a tokenizer.json or a model folder holding one (no padding, no truncation)."""
    from tokenizers import Tokenizer

    path = Path(path).expanduser()
    candidates = [path] if path.is_file() else [path / "tokenizer.json", path / "0_Transformer" / "tokenizer.json"]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise InputError(f"No tokenizer.json at {path}.", "pass --tokenizer a tokenizer.json or a model folder with one.")
    try:
        tokenizer = Tokenizer.from_file(str(found))
    except Exception as err:  # noqa: BLE001 - tokenizers raises its own exception type
        raise InputError(f"Cannot read the tokenizer {found}: {first_line(err, 120)}.",
                         "pass the model's tokenizer.json (as a Hugging Face folder has it).") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
