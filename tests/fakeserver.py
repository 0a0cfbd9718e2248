"""A small OpenAI-compatible embedding server on 127.0.0.1 for the gate's fault tests: it answers /v1/models and
/v1/embeddings with FakeEncoder vectors, and each fault the fault-injection round found is one setting of it
(another dimension, changed vectors under the same /models, a zero or huge vector, a batch limit, a context
limit, malformed rows). It counts what it is sent; it stops with the test (``close``)."""
from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from fakes import FakeEncoder


_BOMBS: dict[int, bytes] = {}  # a bomb's decoded size -> its gzip bytes, made once a session (streamed)


@dataclass
class Faults:
    dim: int = 16
    noise: float = 0.3  # FakeEncoder noise: another value is another model with the same /models
    scale: float = 1.0  # every vector times this (servers that do not normalise)
    zero_text: str | None = None  # this text is answered with a zero vector
    max_batch: int | None = None  # more texts in one request: 413
    max_chars: int | None = None  # a longer text: 400 "maximum context length"
    index_null: bool = False  # rows answered with "index": null
    redirect: str | None = None  # every request answered 308 to this URL
    per_batch: float = 0.0  # every vector shifted by this times the batch's size (a batch-dependent server)
    per_request: float = 0.0  # every vector shifted by this times the requests answered so far (state-dependent)
    normalize: bool = False  # unit vectors, where the model (FakeEncoder) returns others
    big_endian: bool = False  # base64 answers encode big-endian float32 (OpenAI's format is little-endian)
    delay: float = 0.0  # every /embeddings answer takes this many seconds (a slow or hosted server)
    count_characters: bool = False  # usage.prompt_tokens is the texts' characters (as infinity's is)
    echo: bool = False  # its errors repeat the request line and the Authorization header, as some gateways do
    refuse: int = 0  # every /embeddings request answered with this HTTP status ("model not found")
    echo_in_names: bool = False  # its /models id and answers' "model" repeat the query and Authorization header
    inflate: int = 0  # answers on inflate_route: this many bytes of JSON whitespace, gzip-encoded (a few MB)
    inflate_route: str = "/embeddings"


@dataclass
class FakeServer:
    model: str = "fake-model"
    port: int = 0  # 0: a free port; another: that one (an example's URL as written), OSError where it is taken
    faults: Faults = field(default_factory=Faults)
    posts: int = 0
    texts: int = 0
    seen: list = field(default_factory=list)  # (path with query, headers) of every request
    inputs: list = field(default_factory=list)  # the texts of every /embeddings request, as sent
    in_flight: int = 0
    peak_in_flight: int = 0  # the most /embeddings requests it was answering at once

    def __post_init__(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._answer(self, None)

            def do_POST(self):
                server._answer(self, json.loads(self.rfile.read(int(self.headers.get("content-length") or 0))))

        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def vectors(self, texts: list[str]) -> np.ndarray:
        f = self.faults
        rows = FakeEncoder(noise=f.noise, dim=f.dim).encode(texts).astype(np.float64) * f.scale
        rows += f.per_batch * len(texts)
        rows += f.per_request * self.posts
        if f.normalize:
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        for i, t in enumerate(texts):
            if t == f.zero_text:
                rows[i] = 0.0
        return rows

    def _send(self, h, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        for k, v in {"content-type": "application/json", **(headers or {})}.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _bomb(self, h) -> None:
        """An answer of ``inflate`` bytes of whitespace before an empty JSON object, gzip-encoded (about a
        thousandth of its decoded size on the wire)."""
        import zlib

        size = self.faults.inflate
        if size not in _BOMBS:
            packer, block, parts = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS), b" " * 2**20, []
            for start in range(0, size, len(block)):
                parts.append(packer.compress(block[: size - start]))
            _BOMBS[size] = b"".join(parts) + packer.compress(b"{}") + packer.flush()
        data = _BOMBS[size]
        h.send_response(200)
        for k, v in {"content-type": "application/json", "content-encoding": "gzip",
                     "content-length": str(len(data))}.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _answer(self, h, body) -> None:
        f = self.faults
        with self._lock:
            self.seen.append((h.path, dict(h.headers)))
        if f.redirect:
            return self._send(h, 308, {}, {"location": f.redirect})
        if f.inflate and h.path.split("?")[0].endswith(f.inflate_route):
            return self._bomb(h)
        path = h.path.split("?")[0]
        if path.endswith("/models"):
            return self._send(h, 200, {"object": "list", "data": [{"id": self._named(h), "object": "model",
                                                                   "owned_by": self._named(h)}]})
        if not path.endswith("/embeddings") or body is None:
            return self._send(h, 404, {"error": "not found"})
        texts = body["input"]
        with self._lock:
            self.posts += 1
            self.inputs.append(list(texts))
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if f.delay:
                time.sleep(f.delay)
            return self._embed(h, texts, body)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _named(self, h) -> str:
        """The model's id, as a gateway that names it after the request says it (echo_in_names)."""
        if not self.faults.echo_in_names:
            return self.model
        query = h.path.partition("?")[2]
        return f"{self.model}{'?' + query if query else ''} {h.headers.get('authorization') or ''}".strip()

    def _embed(self, h, texts: list[str], body: dict) -> None:
        f = self.faults
        if f.refuse:
            return self._send(h, f.refuse, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
        if f.max_batch and len(texts) > f.max_batch:
            return self._send(h, 413, {"error": "too many inputs"})
        if f.max_chars and any(len(t) > f.max_chars for t in texts):
            echoed = (f" (request: {h.command} {h.path}; Authorization: {h.headers.get('authorization')})"
                      if f.echo else "")
            return self._send(h, 400, {"error": {"message": "This model's maximum context length is 256 tokens. "
                                                            "However, you requested 602 tokens." + echoed}})
        with self._lock:
            self.texts += len(texts)
        rows = self.vectors(texts)
        b64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": None if f.index_null else i,
                 "embedding": base64.b64encode(r.astype(">f4" if f.big_endian else "<f4").tobytes()).decode()
                 if b64 else r.tolist()}
                for i, r in enumerate(rows)]
        tokens = sum(len(t) for t in texts) if f.count_characters else 1
        self._send(h, 200, {"data": data, "model": self._named(h),
                            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
