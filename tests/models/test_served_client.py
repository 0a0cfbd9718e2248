"""The served client's every fault path, fast and without a server: ``httpx.MockTransport`` answers as a
server would (the real-server tests are in test_served.py)."""
from __future__ import annotations

import base64
import json
import time

import httpx
import numpy as np
import pytest

from fasteval.core.errors import InputError, ModelError
from fasteval.models.served import InputRefused, ServedEncoder

DIM = 8


def vector(text: str) -> np.ndarray:
    rng = np.random.default_rng(abs(hash(text)) % 2 ** 32)
    return rng.normal(size=DIM).astype(np.float32)


class FakeServer:
    """An OpenAI-compatible server as an httpx handler: /models lists one model, /embeddings answers the texts
    in order (base64 or floats as asked). ``fault(request_json) -> httpx.Response | None`` overrides an
    /embeddings answer; every request is kept in ``seen``."""

    def __init__(self, fault=None, model="m", max_batch=None, max_chars=None, base64_ok=True, rows=None):
        self.fault, self.model, self.max_batch, self.max_chars = fault, model, max_batch, max_chars
        self.base64_ok, self.rows, self.seen = base64_ok, rows, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"object": "list", "data": [{"id": self.model, "object": "model"}]})
        if not request.url.path.endswith("/embeddings"):
            return httpx.Response(404, json={"error": "not found"})
        body = json.loads(request.content)
        if self.fault is not None and (answer := self.fault(body)) is not None:
            return answer
        texts = body["input"]
        if self.max_batch and len(texts) > self.max_batch:
            return httpx.Response(413, json={"error": "payload too large"})
        if self.max_chars and any(len(t) > self.max_chars for t in texts):
            return httpx.Response(400, json={"error": {"message": "This model's maximum context length is 256 "
                                                                  "tokens. However, you requested 602 tokens."}})
        if "encoding_format" in body and not self.base64_ok:
            return httpx.Response(422, json={"detail": "encoding_format not supported"})
        rows = [np.asarray(self.rows(t) if self.rows else vector(t), np.float64) for t in texts]
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(r.astype("<f4").tobytes()).decode() if "encoding_format" in body
                 else [float(x) for x in r]} for i, r in enumerate(rows)]
        return httpx.Response(200, json={"data": data, "model": self.model,
                                         "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})

    @property
    def posts(self):
        return [r for r in self.seen if r.method == "POST"]


def client(server, url="http://127.0.0.1:9/v1", **kw):
    kw.setdefault("retries", 2)
    return ServedEncoder(url, transport=httpx.MockTransport(server), **kw)


TEXTS = [f"{i} meters" for i in range(10)]


def test_rows_come_back_in_input_order_whatever_order_the_server_answers():
    def shuffled(body):
        texts = body["input"]
        data = [{"index": i, "embedding": [float(x) for x in vector(t)]} for i, t in enumerate(texts)][::-1]
        return httpx.Response(200, json={"data": data})

    out = client(FakeServer(fault=shuffled)).encode(TEXTS)
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in TEXTS]))


def test_a_413_splits_the_batch_and_keeps_the_smaller_size_out_of_the_key():
    server = FakeServer(max_batch=3)
    enc = client(server, batch_size=8)
    key_before = json.dumps(enc.info, sort_keys=True)
    out = enc.encode(TEXTS)
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in TEXTS]))
    assert enc.batcher.limit <= 3 and enc.batch_size == 8
    assert json.dumps(enc.info, sort_keys=True) == key_before, "a size the server forced is not a setting"
    n = len(server.posts)
    enc.encode(TEXTS)
    sizes = [len(json.loads(r.content)["input"]) for r in server.posts[n:]]
    assert sum(sizes) == 10 and max(sizes) <= 3, "the next call is sent in batches the server takes, none refused"


def test_one_over_long_text_is_named_and_the_batch_size_is_kept():
    server = FakeServer(max_chars=40)
    enc = client(server, batch_size=8)
    texts = TEXTS[:5] + ["word " * 20] + TEXTS[5:]
    with pytest.raises(InputRefused) as err:
        enc.encode(texts)
    assert err.value.text == "word " * 20 and "maximum context length" in str(err.value)
    assert enc.batcher.limit == 8 and enc.batch_size == 8
    n = len(server.posts)
    enc.encode(TEXTS)
    assert len(server.posts) - n == 2, "10 texts in batches of 8: still two requests"


def test_llama_cpps_500_for_an_input_past_its_batch_is_a_refusal_not_a_retry():
    """llama.cpp answers an input longer than its physical batch with HTTP 500 "input (N tokens) is too large to
    process. increase the physical batch size": that text is refused by name at once (no retries), the others
    embed, the batch size is kept."""
    def past_batch(body):
        if any(len(t) > 40 for t in body["input"]):
            return httpx.Response(500, json={"error": {"code": 500, "type": "server_error", "message":
                                  "input (1622 tokens) is too large to process. increase the physical batch size "
                                  "(current batch size: 1024)"}})
        return None

    server = FakeServer(fault=past_batch)
    enc = client(server, batch_size=8, retries=3)
    long = "word " * 20
    with pytest.raises(InputRefused) as err:
        enc.encode(TEXTS[:3] + [long])
    assert err.value.text == long and "too large to process" in str(err.value)
    assert enc.usage.retries == 0 and len(server.posts) == 5, "isolated by halving (4, 2 + 2, 1 + 1), never retried"
    assert enc.batcher.limit == 8


def test_llama_cpps_tokenize_answers_after_the_tei_shaped_request():
    """llama.cpp answers every /tokenize body with {"tokens": [...]}, empty when the body has no "content": TEI's
    batched body is not taken for TEI's answer (it was an internal error), vLLM's not for vLLM's (it was every text
    tokenized into no ids, so Exam 2's token distances were all 0); its own dialect is found and kept."""
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/tokenize"):
            body = json.loads(request.content)
            text = body.get("content") or ""
            return httpx.Response(200, json={"tokens": [len(w) for w in text.split()]})
        return FakeServer()(request)

    enc = ServedEncoder("http://127.0.0.1:9/v1", transport=httpx.MockTransport(handler), retries=0)
    assert enc.server_token_ids(["5 meters", "a bc def"]) == [[1, 6], [1, 2, 3]]
    assert enc.token_ids(["12 kg"]) == [[2, 2]], "the dialect that answered is kept"


def test_base64_refused_falls_back_to_floats_once():
    server = FakeServer(base64_ok=False)
    enc = client(server)
    out = enc.encode(TEXTS[:3])
    np.testing.assert_allclose(out, np.stack([vector(t) for t in TEXTS[:3]]), rtol=1e-6)
    assert "encoding_format" not in json.loads(server.posts[-1].content)
    enc.encode(TEXTS[3:6])
    assert len(server.posts) == 3, "one refused base64 request, then floats only"


def test_a_dimension_change_between_requests_is_an_error():
    calls = []

    def rows(text):
        calls.append(text)
        return np.ones(DIM if len(calls) <= 2 else DIM + 1, np.float32)

    enc = client(FakeServer(rows=rows), batch_size=2, concurrency=1)
    with pytest.raises(ModelError, match=f"changed the dimension from {DIM} to {DIM + 1}"):
        enc.encode(TEXTS[:4])


def test_retry_after_is_honoured_and_429s_heal():
    answers = iter([httpx.Response(429, headers={"Retry-After": "0.2"}, json={"error": "slow down"})])
    start = time.monotonic()
    enc = client(FakeServer(fault=lambda body: next(answers, None)))
    out = enc.encode(TEXTS[:2])
    assert time.monotonic() - start >= 0.2 and enc.usage.retries == 1
    np.testing.assert_array_equal(out, np.stack([vector(t) for t in TEXTS[:2]]))


@pytest.mark.parametrize("row, what, base64_ok", [(np.zeros(DIM), "a zero vector", True),
                                                   (np.full(DIM, np.nan), "NaN or infinite", True),
                                                   (np.full(DIM, 1e39), "values beyond float32", False)])
def test_a_zero_or_unusable_vector_names_its_text(row, what, base64_ok):
    server = FakeServer(rows=lambda t: row if t == "3 meters" else vector(t), base64_ok=base64_ok)
    enc = client(server, batch_size=4)
    with pytest.raises(ModelError, match=what) as err:
        enc.encode(TEXTS)
    assert "'3 meters'" in str(err.value)


@pytest.mark.parametrize("usage", [{"prompt_tokens": "n/a"}, [1, 2], None, {"total_tokens": True}])
def test_malformed_usage_is_left_out_not_an_internal_error(usage):
    def answer(body):
        data = [{"index": i, "embedding": [float(x) for x in vector(t)]} for i, t in enumerate(body["input"])]
        return httpx.Response(200, json={"data": data, "usage": usage})

    enc = client(FakeServer(fault=answer))
    enc.encode(TEXTS[:2])
    assert enc.usage.prompt_tokens == 0 and enc.usage.texts == 2


@pytest.mark.parametrize("data", [[{"index": None, "embedding": [1.0] * DIM}, {"index": 1, "embedding": [1.0] * DIM}],
                                  [{"index": 0, "embedding": "not base64!"}, {"index": 1, "embedding": [1.0] * DIM}],
                                  [{"index": 0, "embedding": [[1.0]]}, {"index": 1, "embedding": [1.0] * DIM}],
                                  [{"index": 0}], "rows"])
def test_malformed_rows_are_one_model_error(data):
    enc = client(FakeServer(fault=lambda body: httpx.Response(200, json={"data": data})))
    with pytest.raises(ModelError):
        enc.encode(TEXTS[:2])


def test_credentials_in_the_url_are_sent_as_basic_auth_never_shown_and_the_query_is_kept(monkeypatch):
    monkeypatch.delenv("FASTEVAL_API_KEY", raising=False)
    server = FakeServer()
    enc = client(server, url="http://user:s3cret@127.0.0.1:9/v1?api_key=k3y&v=2")
    enc.encode(TEXTS[:1])
    assert all(r.url.params.get("api_key") == "k3y" and r.url.params.get("v") == "2" for r in server.seen)
    assert all(r.url.path in ("/v1/models", "/v1/embeddings", "/info", "/v1/info") for r in server.seen)
    assert server.posts[0].headers["authorization"] == "Basic " + base64.b64encode(b"user:s3cret").decode()
    shown = json.dumps(enc.info) + enc.url + enc.name + enc.endpoint.auth_kind
    assert "s3cret" not in shown and "k3y" not in shown and enc.url == "http://127.0.0.1:9/v1"


def test_credentials_both_in_the_url_and_the_environment_are_refused(monkeypatch):
    monkeypatch.setenv("FASTEVAL_API_KEY", "sk-env")
    with pytest.raises(InputError, match="both in the URL") as err:
        client(FakeServer(), url="http://user:pw@127.0.0.1:9/v1")
    assert "pw" not in str(err.value).replace("password", "") and "sk-env" not in str(err.value)


def test_a_url_without_a_host_is_not_echoed_whole():
    with pytest.raises(InputError) as err:
        client(FakeServer(), url="http://user:s3cret@/v1?api_key=k3y")
    assert "s3cret" not in str(err.value) and "k3y" not in str(err.value)


def test_a_redirect_says_where_to_and_is_not_followed():
    def handler(request):
        return httpx.Response(308, headers={"location": "https://elsewhere.example:8443/v1/models?x=1"})

    with pytest.raises(ModelError, match="redirects .*308.* to elsewhere.example; fasteval does not follow"):
        ServedEncoder("http://127.0.0.1:9/v1", transport=httpx.MockTransport(handler), retries=0)


def test_a_request_that_trickles_past_its_deadline_is_cut_off():
    class Trickle(httpx.SyncByteStream):
        def __iter__(self):
            for _ in range(100):
                time.sleep(0.05)
                yield b" "

    def handler(request):
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        return httpx.Response(200, stream=Trickle())

    enc = ServedEncoder("http://127.0.0.1:9/v1", transport=httpx.MockTransport(handler), retries=0, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(ModelError, match="no whole answer within 0.3 s"):
        enc.encode(TEXTS[:1])
    assert time.monotonic() - start < 1.5, "the deadline is per request, not per read"
