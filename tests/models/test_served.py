"""Served models (``--model URL``) against a real embedding server: infinity serving the default model, started
on 127.0.0.1 by a fixture from its own virtual environment (it pins numpy < 2, sentence-transformers < 4), and a
small fault-injecting proxy in front of it (429 with Retry-After, 500, dropped connections, slow answers, bad
bodies) that counts the requests."""
from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from fakes import assert_same_summaries, one_line_error, run_cli
from servers import (PAPER_ROW, SERVED_NAME, cased_copy, dense_twin, free_port, pooled_copy, start_infinity,
                     started_or_failed)

pytestmark = [pytest.mark.slow,  # a real server (infinity, its own virtual environment) and the real default model
              pytest.mark.xdist_group("infinity")]  # one worker starts it (pytest-xdist)


@pytest.fixture(scope="session")
def infinity(minilm_folder, tmp_path_factory):
    """infinity serving the default model at http://127.0.0.1:PORT; stopped by its process id at the end."""
    with started_or_failed(start_infinity(minilm_folder, tmp_path_factory.mktemp("infinity"))) as url:
        yield url


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream``: each POST /embeddings takes the next fault from
    ``faults`` ("429", "500", "drop", "slow", "html", "short", "dim", "nan", "401", or None to pass), and is
    counted; ``key`` set: a request without "Bearer KEY" gets 401. Every header and body it saw is kept."""

    def __init__(self, upstream: str, faults=(), key: str | None = None, slow_s: float = 3.0):
        self.upstream, self.faults, self.key, self.slow_s = upstream, list(faults), key, slow_s
        self.posts = 0
        self.seen: list[str] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                proxy._handle(self, "GET")

            def do_POST(self):
                proxy._handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        body = h.rfile.read(int(h.headers.get("content-length") or 0))
        with self.lock:
            self.seen.append(str(h.headers) + body.decode("utf-8", "replace"))
            fault = None
            if method == "POST" and h.path.endswith("/embeddings"):
                self.posts += 1
                fault = self.faults.pop(0) if self.faults else None
        if self.key is not None and h.headers.get("authorization") != f"Bearer {self.key}":
            return self._send(h, 401, b'{"error": {"message": "invalid api key"}}')
        if fault == "drop":
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault in ("429", "500", "401"):
            return self._send(h, int(fault), b'{"error": "injected"}', {"Retry-After": "1"} if fault == "429" else {})
        if fault == "html":
            return self._send(h, 200, b"<html>a login page</html>", content_type="text/html")
        if fault == "slow":
            time.sleep(self.slow_s)
        up = self.upstream.split("//", 1)[1]
        conn = http.client.HTTPConnection(up, timeout=120)
        conn.request(method, h.path, body=body or None, headers={"content-type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
        if fault in ("short", "dim", "nan") and answer.status == 200:
            doc = json.loads(data)
            if fault == "short":  # a row missing
                doc["data"] = doc["data"][:-1]
            else:  # the first row one entry short, or NaN in it (json writes NaN, as a broken server would)
                vec = [float(x) for x in _vector(doc["data"][0]["embedding"])]
                doc["data"][0]["embedding"] = vec[:-1] if fault == "dim" else [float("nan")] + vec[1:]
            data = json.dumps(doc).encode()
        self._send(h, answer.status, data)

    @staticmethod
    def _send(h, status: int, data: bytes, headers=None, content_type="application/json") -> None:
        h.send_response(status)
        h.send_header("content-type", content_type)
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)


def _vector(embedding) -> np.ndarray:
    import base64

    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").copy()
    return np.asarray(embedding, dtype=np.float32)


@pytest.fixture()
def proxy(infinity):
    made = []

    def make(faults=(), key=None, slow_s=3.0):
        made.append(FaultProxy(infinity, faults, key, slow_s))
        return made[-1]

    yield make
    for p in made:
        p.close()


def sweep(url, out, *extra, env=None):
    return run_cli(["sweep", "--model", url, "--out", out, "--bootstrap", "0", "-q", *extra], env=env, timeout=900)


@pytest.fixture(scope="session")
def local_result(minilm_folder, minilm_home, tmp_path_factory):
    """Exams 1-3 of the default model's folder, run locally (ONNX), as results.json."""
    out = tmp_path_factory.mktemp("local")
    proc = sweep(str(minilm_folder), out, "--provider", "cpu", env={"FASTEVAL_HOME": str(minilm_home)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(next(out.glob("*/*/results.json")).read_text())


def test_sweep_against_infinity_is_the_paper_row_and_the_local_folders_numbers(infinity, minilm_folder, local_result,
                                                                              tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    proc = sweep(infinity, tmp_path / "out", "--tokenizer", minilm_folder, env=env)
    assert proc.returncode == 0, proc.stderr
    assert PAPER_ROW in proc.stdout
    served = json.loads(next((tmp_path / "out").glob("*/*/results.json")).read_text())
    assert served["settings"]["deployment"]["url"] == infinity and served["settings"]["deployment"]["model"] == \
        SERVED_NAME
    # torch (infinity) and onnxruntime (local): Exams 1 and 3 equal to the digit; among Exam 2's 4,950 pairs of
    # bare numbers a few near-ties flip (measured: 2e-5 of tau x100).
    assert_same_summaries(served, local_result)
    usage = served["usage"]
    assert usage["requests"] >= 1 and usage["texts"] > 900 and usage["mean_raw_norm"] == pytest.approx(1, abs=1e-3)


def test_without_a_tokenizer_token_levenshtein_is_null_with_a_note(infinity, tmp_path):
    proc = sweep(infinity, tmp_path / "out", "--exams", "2", env={"FASTEVAL_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    assert "fasteval: warning:" in proc.stderr and "--tokenizer" in proc.stderr
    rows = json.loads(next((tmp_path / "out").glob("*/*/results.json")).read_text())["exams"]["exam2"]["rows"]
    assert {r["reference"] for r in rows if r["tau"] is None} == {"token_lev"}


def test_a_rerun_sends_only_its_canaries_and_faults_heal_to_the_same_numbers(infinity, proxy, tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    clean = proxy()
    assert sweep(clean.url, tmp_path / "a", "--exams", "1", env=env).returncode == 0
    sent = clean.posts
    again = sweep(clean.url, tmp_path / "a", "--exams", "1", env=env)
    assert again.returncode == 0 and len(list((tmp_path / "a").rglob("results.json"))) == 1
    assert clean.posts == sent + 1, "a finished result is skipped after one request: its canaries match the cache"
    fresh = sweep(clean.url, tmp_path / "b", "--exams", "1", env=env)
    assert fresh.returncode == 0 and clean.posts == sent + 2, "every embedding comes from the (verified) cache"
    faulty = proxy(["429", "500", "drop", "slow", None, "500"], slow_s=3.0)
    healed = sweep(faulty.url, tmp_path / "c", "--exams", "1", "--request-timeout", "1.5",
                   env={"FASTEVAL_HOME": str(tmp_path / "home2")})
    assert healed.returncode == 0, healed.stderr
    numbers = [json.loads(next((tmp_path / d).glob("*/*/results.json")).read_text())["exams"]["exam1"]["cells"]
               for d in ("a", "c")]
    assert [c["tau"] for c in numbers[0]] == [c["tau"] for c in numbers[1]]
    usage = json.loads(next((tmp_path / "c").glob("*/*/results.json")).read_text())["usage"]
    # each fault was met and retried; a real answer slower than the 1.5 s timeout on a loaded machine is retried
    # too, so the count is held to what the client says it retried, not to the five faults alone
    assert faulty.faults == [] and usage["retries"] >= 5, usage
    assert faulty.posts == sent + usage["retries"], "every retry is one more request, the server saw each"


@pytest.mark.parametrize("fault, fragment", [("html", "not JSON"), ("short", "rows for"), ("dim", "dimension"),
                                             ("nan", "NaN")])
def test_a_broken_answer_is_one_line_and_nothing_is_written(proxy, fault, fragment, tmp_path):
    bad = proxy([fault] * 50)
    proc = sweep(bad.url, tmp_path / "out", "--exams", "1", env={"FASTEVAL_HOME": str(tmp_path / "home")})
    one_line_error(proc, fragment, "Fix:")
    assert not list((tmp_path / "out").glob("*/*/results.json"))


def test_bad_urls_keys_and_models_are_one_line(infinity, proxy, tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    one_line_error(sweep(f"http://127.0.0.1:{free_port()}/v1", tmp_path / "o", env=env), "Nothing answers", "Fix:")
    one_line_error(sweep(infinity + "/nope/v1", tmp_path / "o", env=env), "404")
    one_line_error(sweep(infinity + "#no-such-model", tmp_path / "o", env=env), "serves no model 'no-such-model'",
                   SERVED_NAME)
    locked = proxy(key="secret-key-123")
    line = one_line_error(sweep(locked.url, tmp_path / "o", env=env), "HTTP 401", "FASTEVAL_API_KEY")
    assert "secret" not in line
    wrong = {**env, "FASTEVAL_API_KEY": "not-the-key"}
    line = one_line_error(sweep(locked.url, tmp_path / "o", env=wrong), "HTTP 401", "was refused")
    assert "not-the-key" not in line


def test_the_key_is_sent_and_never_written(proxy, tmp_path):
    locked = proxy(key="secret-key-123")
    home, out = tmp_path / "home", tmp_path / "out"
    env = {"FASTEVAL_HOME": str(home), "MY_KEY": "secret-key-123"}
    proc = sweep(locked.url + "#" + SERVED_NAME, out, "--exams", "1", "--api-key-env", "MY_KEY", env=env)
    assert proc.returncode == 0, proc.stderr
    assert all("Bearer secret-key-123" in s for s in locked.seen)
    for path in [*out.rglob("*"), *home.rglob("*")]:
        if path.is_file():
            assert b"secret-key-123" not in path.read_bytes(), path
    assert "secret-key-123" not in proc.stdout + proc.stderr


def test_check_and_bench_against_the_server(infinity, tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    proc = run_cli(["check", "--model", infinity, "--json", "2 kilometers", "2000 meters", "2 meters"], env=env)
    assert proc.returncode == 0, proc.stderr
    sims = {c["text"]: c["similarity"] for c in json.loads(proc.stdout)["candidates"]}
    assert sims == pytest.approx({"2000 meters": 0.672, "2 meters": 0.798}, abs=1e-3)  # the local model's (README)
    out = tmp_path / "bench.json"
    proc = run_cli(["bench", "--model", infinity, "--batch-sizes", "8,32", "--concurrency", "1,2", "--repeats", "1",
                    "--long-sentences", "0", "--exams", "none", "--json", out, "-q"], env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["served"]
    assert sorted((r["batch_size"], r["concurrency"]) for r in rows) == [(8, 1), (8, 2), (32, 1), (32, 2)]
    for r in rows:
        assert r["texts_per_s"] == pytest.approx(r["texts"] / r["seconds"])
        assert r["tokens_per_s"] == pytest.approx(r["tokens"] / r["seconds"]) and r["tokens"] >= r["texts"]
    assert "texts/s" in proc.stdout


def test_a_dead_server_fails_its_model_and_the_sweep_goes_on(proxy, tiny_st_folder, tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    dead = proxy(["500"] * 1000)
    proc = run_cli(["sweep", "--model", dead.url, "--model", tiny_st_folder, "--out", tmp_path / "out", "--exams", "1",
                    "--bootstrap", "0", "--retries", "1", "--provider", "cpu", "-q"], env=env, timeout=900)
    assert proc.returncode == 1
    assert f"fasteval: error: {SERVED_NAME}" in proc.stderr or "did not answer" in proc.stderr
    assert len(list((tmp_path / "out").glob("*/*/results.json"))) == 1, "the local model was done"


def test_drift_of_the_folder_against_the_server_conforms(infinity, minilm_folder, minilm_home, tmp_path):
    env = {"FASTEVAL_HOME": str(minilm_home)}
    proc = run_cli(["drift", minilm_folder, infinity, "--json", "--fail-below", "0.9999", "--fail-on-collisions",
                    "--provider", "cpu", "--bootstrap", "200", "--no-invariance", "-q"], env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "conforms" and data["worst_cosine"] > 0.9999 and data["collisions"] == []
    assert set(data["groups"]) >= {"protocol", "accents", "case", "length", "edge"}
    assert abs(data["delta_tau"]) < 0.05 and data["delta_tau_ci_low"] <= data["delta_tau"] <= data["delta_tau_ci_high"]
    # the server's token counts, text by text, against MiniLM's tokenizer (special tokens included): infinity's
    # usage.prompt_tokens is the text's characters, not its tokens, and token-count parity says so (reported, the
    # verdict unchanged)
    counts = data["token_counts"]
    assert counts["compared"] >= 8 and counts["differ"] == counts["compared"], counts
    assert all(e["candidate_tokens"] == len(e["text"]) for e in counts["examples"]), counts
    assert data["norms"]["reference_unit"] and data["norms"]["worst_ratio"] == pytest.approx(1.0, abs=1e-3)
    assert data["base64"]["endianness"] == "little" and data["base64"]["compared"] == 1, data["base64"]


def test_a_tokenizer_that_lost_its_lowercasing_is_named(minilm_folder, minilm_home, tmp_path):
    """infinity serving the default model with a tokenizer that no longer lowercases (its normalizer and its config
    told so): the accents and case groups drift, and the diagnosis names lowercase=off."""
    folder = cased_copy(minilm_folder, tmp_path / "all-MiniLM-L6-v2")
    (tmp_path / "work").mkdir()
    with started_or_failed(start_infinity(folder, tmp_path / "work")) as url:
        proc = run_cli(["drift", minilm_folder, url, "--json", "--provider", "cpu", "--bootstrap", "0",
                        "--no-invariance", "-q"], env={"FASTEVAL_HOME": str(minilm_home)}, timeout=900)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert {"accents", "case"} <= {r.split()[0] for r in data["reasons"]}, data["reasons"]
    d = data["diagnosis"]
    assert d["variant"] == "lowercase=off" and d["worst"] >= 0.999 and d["reference"] < 0.9, d


def test_a_pooling_and_a_dropped_dense_layer_are_named_on_any_cpu(infinity, minilm_folder, minilm_home, tmp_path):
    """The misconfigurations llama.cpp's server is tested with (tests/models/test_llama_server.py), served by a
    server that runs on every CPU (the prebuilt llama-server dies of SIGILL on some): infinity serving MiniLM pooled
    by its CLS token is named pooling=cls; against a Dense twin of MiniLM (MiniLM with a Dense layer added),
    infinity serving the twin without its Dense layer, which is MiniLM itself (the session's server), is named
    dense=off."""
    twin = dense_twin(minilm_folder, tmp_path / "all-MiniLM-L6-v2-dense-twin")
    cls = pooled_copy(minilm_folder, tmp_path / "cls" / "all-MiniLM-L6-v2", "cls")
    (tmp_path / "work").mkdir()
    with contextlib.ExitStack() as stack:
        served = {"pooling=cls": (minilm_folder, stack.enter_context(started_or_failed(start_infinity(
            cls, tmp_path / "work")))), "dense=off": (twin, infinity)}
        for named, (reference, url) in served.items():
            proc = run_cli(["drift", reference, url, "--json", "--provider", "cpu", "--bootstrap", "0",
                            "--no-invariance", "-q"], env={"FASTEVAL_HOME": str(minilm_home)}, timeout=900)
            assert proc.returncode == 1, proc.stderr
            d = json.loads(proc.stdout)["diagnosis"]
            assert d["variant"] == named and d["worst"] >= 0.999 and d["reference"] < 0.9, d
