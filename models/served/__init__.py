"""The model as deployed: an embedding server reached over HTTP with OpenAI's embeddings API, as a fasteval
encoder (``--model URL[#MODEL]``).

``URL`` is a base URL as OpenAI's client takes it (``https://api.openai.com/v1``, ``http://127.0.0.1:8080/v1``);
fasteval calls ``URL/embeddings`` (``{"input": [...], "model": ..., "encoding_format": "base64"}``; rows put back
in order by ``index``) and ``URL/models``. ``#MODEL`` names the served model; without it the server's only model
is used. OpenAI, Hugging Face text-embeddings-inference (TEI), vLLM, infinity, llama.cpp's server, Ollama and LM
Studio answer this API.

The client is in rooms: ``transport`` (the endpoint and its credentials, retries, backoff, Retry-After, a
deadline per request), ``answers`` (reading an answer's rows and usage), ``batching`` (what a refused batch
becomes), ``dialects`` (what each kind of server says of itself and how its /tokenize answers). This module
puts them together as one encoder.

**Identity.** ``info["deployment"]`` holds what identifies the deployment: the public URL, the served model id,
what ``/models`` says of that model (less its volatile fields), and TEI's ``/info`` where there is one. It goes
into the result and embedding-cache keys; since a server can change what it embeds without changing what it
says, the runs also compare a few cached rows with fresh ones before they trust a cache (``core/cache.py``).

**Credentials**: a bearer key from an environment variable (``FASTEVAL_API_KEY``, or the one named by
``api_key_env``), or ``user:password@`` in the URL (Basic auth; not both). A query string in the URL is kept on
every request. Neither ever reaches a result, a key, a cache, a log or an error line: only the public URL does.

**Token ids** (Exam 2's token Levenshtein): the server's ``/tokenize`` (TEI, vLLM, llama.cpp) where it has one,
else a local ``tokenizer`` (a tokenizer.json or a model folder), else none: the row is left out (null), with a
warning, never computed with another model's tokenizer.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ...core.choices import API_KEY_ENV, SERVED_CONCURRENCY, SERVED_RETRIES, SERVED_TIMEOUT_S
from ...core.choices import is_url, public_url  # noqa: F401 (re-exported)
from ...core.errors import InputError, ModelError, first_line
from .answers import Usage, count_usage, read_rows
from .batching import Batcher, InputRefused, refused  # noqa: F401 (InputRefused re-exported)
from .dialects import DIALECTS, model_entry_identity
from .transport import Endpoint, Refused, Transport, answer_limit

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32


def split_model_url(text: str) -> tuple[str, str | None]:
    """``URL#MODEL`` -> (URL without a trailing slash, MODEL or None); InputError (showing the public URL only)
    when it is not an http(s) URL with a host."""
    url, _, model = text.partition("#")
    Endpoint.parse(url, API_KEY_ENV)  # validates
    return url.strip().rstrip("/"), (model.strip() or None)


class ServedEncoder:
    """Embeddings from a server's ``/embeddings``: ``encode(list[str]) -> float32 (n, dim)``."""

    def __init__(self, url: str, *, model: str | None = None, api_key_env: str = API_KEY_ENV,
                 batch_size: int = DEFAULT_BATCH_SIZE, concurrency: int = SERVED_CONCURRENCY,
                 timeout: float = SERVED_TIMEOUT_S, retries: int = SERVED_RETRIES,
                 tokenizer: str | Path | None = None, progress=None, transport: Any = None, prompt: str = ""):
        """``progress(done, total)`` is called after each request of an ``encode`` call (the CLI's progress
        bar; the library itself prints nothing). ``transport``: an ``httpx.BaseTransport`` to send through
        (``httpx.MockTransport`` in tests); default, the network. ``prompt``: text put before every input (as
        sentence-transformers' ``prompt``; none by default, as in the paper)."""
        for name, value, low in (("batch size", batch_size, 1), ("concurrency", concurrency, 1),
                                 ("retries", retries, 0)):
            if int(value) < low:
                raise InputError(f"The {name} must be >= {low}, got {value}.", f"pass --{name.replace(' ', '-')} "
                                 f"{low} or more.")
        if not timeout > 0:
            raise InputError(f"The request timeout must be > 0 s, got {timeout}.", "pass --request-timeout 60.")
        base, from_url = split_model_url(url)
        self.endpoint = Endpoint.parse(base, api_key_env)
        self.url = self.endpoint.public
        self.concurrency = int(concurrency)
        self.usage = Usage()
        self.http = Transport(self.endpoint, timeout=timeout, retries=retries, concurrency=self.concurrency,
                              usage=self.usage, transport=transport)
        self.batcher = Batcher(batch_size, self.usage)
        self.progress = progress
        self.prompt = str(prompt or "")
        self.dim: int | None = None
        self._dim_lock = threading.Lock()
        self._base64: bool | None = None  # None: not known yet whether the server takes encoding_format
        self._tokenize: tuple[Any, str] | None = None  # (dialect, root) of the /tokenize that answered
        self._local_tokenizer = _load_tokenizer(tokenizer) if tokenizer else None
        self._tokenizer_source = str(tokenizer) if tokenizer else None
        log.debug("%s: credentials sent: %s", self.url, self.endpoint.auth_kind)
        self.model, entry = self._choose_model(model or from_url)  # sent as it is; shown and written as name
        self.name = self.endpoint.public_model_id(self.model)
        # everything the server said that is kept is masked: a gateway may echo the credentials it was sent
        self.deployment = {"url": self.url, "model": self.name,
                           "server": self.endpoint.masked(model_entry_identity(entry)),
                           **({"info": self.endpoint.masked(info)} if (info := self._server_info()) else {})}

    @property
    def batch_size(self) -> int:
        """The batch size asked for (a setting; a smaller one a server forced is ``batcher.limit``)."""
        return self.batcher.batch_size

    # --- what the encoder contract reads ----------------------------------------------------------------------
    @property
    def info(self) -> dict[str, Any]:
        """The settings that change an embedding: the deployment (its identity), the batch size, no prompt."""
        return {"deployment": self.deployment, "batch_size": self.batch_size, "prompt": self.prompt,
                **({"tokenizer": self._tokenizer_source} if self._tokenizer_source else {})}

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        batches = self.batcher.batches(texts)
        done = [0]
        lock = threading.Lock()

        def one(batch: list[str]) -> np.ndarray:
            rows = self.batcher.embed(batch, self._send, f"{self.url}/embeddings")
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
        ids = self.server_token_ids(list(texts))
        if ids is None:
            log.warning("%s has no tokenizer endpoint (/tokenize): Exam 2's token Levenshtein is left out (null); "
                        "pass --tokenizer PATH (the model's tokenizer.json or folder) to have it.", self.url)
        return ids

    def encoded_as(self, texts: list[str], encoding_format: str) -> Any:
        """``texts`` asked in one request with ``encoding_format`` "float" (the rows, float64) or "base64" (the
        strings the server sent, in input order; None where it answered base64 with floats): drift's base64
        parity compares the two. FastevalError where the server refuses."""
        try:
            body = self.http.request("POST", "/embeddings",
                                     {**self._payload(texts), "encoding_format": encoding_format},
                                     limit=answer_limit(len(texts), self.dim))
        except Refused as err:  # a wrong model name, an input limit: one line, as an encode's refusal is
            raise refused(f"{self.url}/embeddings", err) from None
        if encoding_format == "float":
            return read_rows(body, texts, "float").astype(np.float64)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(texts) or not all(
                isinstance(d, dict) and isinstance(d.get("embedding"), str) for d in data):
            return None
        data = sorted(data, key=lambda d: d["index"] if isinstance(d.get("index"), int) else 0)  # input order
        return [d["embedding"] for d in data]

    def use_float(self) -> None:
        """Ask for float vectors from now on (a server whose base64 answers are not its float ones: drift's
        base64 parity)."""
        self._base64 = False

    def close(self) -> None:
        self.http.close()

    # --- one request of /embeddings ----------------------------------------------------------------------------
    def _payload(self, batch: list[str]) -> dict[str, Any]:
        """The body of a request of /embeddings for ``batch``, before its encoding format."""
        return {"input": [self.prompt + t for t in batch] if self.prompt else list(batch), "model": self.model}

    def _send(self, batch: list[str]) -> np.ndarray:
        payload = self._payload(batch)
        if self._base64 is not False:
            payload["encoding_format"] = "base64"
        try:
            body = self.http.request("POST", "/embeddings", payload, limit=answer_limit(len(batch), self.dim))
        except Refused as err:
            if "encoding_format" in payload and self._base64 is None and err.status in (400, 422):
                self._base64 = False  # the server does not take base64 (or the batch is too big: try both)
                return self._send(batch)
            raise
        shown = f"{self.url}/embeddings"
        rows = read_rows(body, batch, shown)
        with self._dim_lock:
            if self.dim is None:
                self.dim = rows.shape[1]
            elif rows.shape[1] != self.dim:
                raise ModelError(f"{shown} changed the dimension from {self.dim} to {rows.shape[1]}.",
                                 "check that one model serves every request (a load balancer over two models?).")
        count_usage(self.usage, body, rows, self.endpoint.public_model_id)
        if "encoding_format" in payload:
            self._base64 = True
        return rows

    # --- who the server is -------------------------------------------------------------------------------------
    def _choose_model(self, wanted: str | None) -> tuple[str, dict]:
        """The served model's id and its /models entry: ``wanted``, else the only one; InputError listing them."""
        try:
            body = self.http.request("GET", "/models", first_contact=True)
        except Refused as err:
            raise ModelError(f"{self.url}/models refused the request ({first_line(err, 160)}).",
                             "check the base URL (OpenAI-compatible servers usually serve under /v1).") from None
        entries = [e for e in (body.get("data") if isinstance(body, dict) else None) or [] if isinstance(e, dict)]
        ids = [str(e.get("id")) for e in entries if e.get("id") is not None]
        if wanted is not None:
            if wanted in ids or not ids:
                return wanted, next((e for e in entries if e.get("id") == wanted), {"id": wanted})
            shown = [self.endpoint.public_model_id(i) for i in ids]
            raise InputError(f"{self.url} serves no model {self.endpoint.public_model_id(wanted)!r} (it serves "
                             f"{', '.join(shown)}).", f"name one of them after #, e.g. {self.url}#{shown[0]}.")
        if len(ids) == 1:
            return ids[0], entries[0]
        if not ids:
            raise InputError(f"{self.url}/models lists no model.", f"name the model after #: {self.url}#MODEL.")
        shown = [self.endpoint.public_model_id(i) for i in ids]
        raise InputError(f"{self.url} serves {len(ids)} models: {', '.join(shown)}.",
                         f"name one after #, e.g. {self.url}#{shown[0]}.")

    def _server_info(self) -> dict | None:
        """What the server says of its deployment at a route of its own (TEI's /info), where it has one."""
        for dialect in DIALECTS:
            route = dialect.info_route
            if not route:
                continue
            for root in self.endpoint.roots():
                try:
                    body = self.http.request("GET", route, base=root, retry=False)
                except (ModelError, Refused):
                    continue
                if dialect.is_info(body):
                    return body
        return None

    def server_token_ids(self, texts: list[str]) -> list[list[int]] | None:
        """The server's own token ids (without special tokens) from its /tokenize, in the dialect that answers;
        None when it has none (never a local tokenizer: drift compares how the deployment tokenizes)."""
        known = self._tokenize is not None
        tries = [self._tokenize] if self._tokenize is not None else [
            (d, r) for d in DIALECTS if d.tokenize_body for r in self.endpoint.roots()]
        for dialect, root in tries:
            def ask(body, root=root):
                return self.http.request("POST", "/tokenize", body, base=root, retry=known)

            make_body, read_ids = dialect.tokenize_body, dialect.tokenize_ids
            if make_body is None or read_ids is None:  # a dialect without /tokenize
                continue
            try:
                if dialect.tokenize_batched:
                    out = read_ids(ask(make_body(texts, self.model)))
                else:
                    out = [read_ids(ask(make_body(t, self.model))) for t in texts]
            except (ModelError, Refused, KeyError, TypeError, ValueError):
                if known:
                    raise ModelError(f"{self.url}'s /tokenize stopped answering.",
                                     "rerun, or pass --tokenizer PATH.") from None
                continue
            # no ids at all for texts that have words is no tokenizer's answer (a server ignoring a body it does
            # not read)
            if len(out) == len(texts) and all(isinstance(ids, list) for ids in out) and (
                    any(out) or not any(t.strip() for t in texts)):
                self._tokenize = (dialect, root)
                return out
        return None


def _load_tokenizer(path: str | Path):
    """A tokenizers.Tokenizer from a tokenizer.json, a model folder holding one, or a registry name as --model takes
    it (its folder, fetched once; no padding, no truncation)."""
    from tokenizers import Tokenizer

    from ..sources.registry import find_spec, source_folder

    if not Path(path).expanduser().exists() and find_spec(str(path)) is not None:
        path = source_folder(str(path))[1]
    path = Path(path).expanduser()
    candidates = [path] if path.is_file() else [path / "tokenizer.json", path / "0_Transformer" / "tokenizer.json"]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise InputError(f"No tokenizer.json at {path}.",
                         "pass --tokenizer a tokenizer.json, a model folder with one, or a registry name.")
    try:
        tokenizer = Tokenizer.from_file(str(found))
    except Exception as err:  # noqa: BLE001 - tokenizers raises its own exception type
        raise InputError(f"Cannot read the tokenizer {found}: {first_line(err, 120)}.",
                         "pass the model's tokenizer.json (as a Hugging Face folder has it).") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
