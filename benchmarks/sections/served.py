"""served: fasteval's HTTP client (``--model URL``) against MTEB's OpenAI-compatible wrapper
(``mteb.models.openai_wrappers.OpenAIAPIEncodeWrapper``, 32 texts a request, one request at a time) on the same
real server (infinity serving the model's folder on 127.0.0.1, started from its own virtual environment as the
tests start it) and the same texts: every distinct text of the paper's Exams 1 and 2, then 256 long sentences.
Both clients' embeddings are held equal before anything is timed.

Then the server's limit (issue 30): on infinity and on llama.cpp's server (GGUF f32), a bare client (httpx, JSON,
nothing else) over a grid of batch sizes and requests in flight, and fasteval's client at its defaults (32 texts a
request, 4 in flight) timed against the grid's best: fasteval should reach 95% of it."""
from __future__ import annotations


from ..harness import Ctx, Line, alternate, med, real_servers

BARE_BATCHES = (8, 16, 32, 64, 128)
BARE_IN_FLIGHT = (1, 2, 4)



def bench_served(ctx: Ctx) -> list[Line]:
    import numpy as np

    from fasteval.core.runs.bench import long_sentences, paper_texts
    from fasteval.models.served import ServedEncoder
    servers = real_servers()

    lines = []
    with servers.start_infinity(ctx.folder, ctx.tmp, url_prefix="/v1") as url:
        root = url[: -len("/v1")]
        mteb_client = _mteb_wrapper(root, servers.SERVED_NAME)
        runs = 3 if ctx.quick else 5
        for name, texts in (("paper", paper_texts()), ("long", long_sentences(64 if ctx.quick else 256))):
            for concurrency in (1, 4):
                ours = ServedEncoder(url, batch_size=32, concurrency=concurrency)
                a, b = ours.encode(texts), mteb_client(texts)
                a /= np.linalg.norm(a, axis=1, keepdims=True)
                b /= np.linalg.norm(b, axis=1, keepdims=True)
                worst = float(np.abs(a - b).max())
                tf, tg = alternate(lambda: ours.encode(texts), lambda: mteb_client(texts), runs)
                ours.close()
                lines.append(Line(
                    "served", f"{len(texts)} {name} texts from infinity: fasteval's client, 32 a request, "
                              f"concurrency {concurrency} (texts/s {len(texts) / med(tf):.0f} against "
                              f"{len(texts) / med(tg):.0f})",
                    med(tf), med(tg), "MTEB OpenAIAPIEncodeWrapper (sequential, 32 a request)",
                    f"max |Δ| of the normalised embeddings {worst:.1e}", worst < 1e-5,
                    detail={"texts": len(texts), "concurrency": concurrency, "fasteval_runs": tf, "peer_runs": tg,
                            "url": url}))
    lines += _server_limit(ctx)
    return lines


def _bare_client(url: str, model: str, batch: int, in_flight: int):
    """texts -> rows: httpx, JSON floats, ``batch`` texts a request, ``in_flight`` requests at once."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx
    import numpy as np

    client = httpx.Client(timeout=300, limits=httpx.Limits(max_connections=in_flight))

    def one(chunk):
        answer = client.post(url + "/embeddings", json={"input": chunk, "model": model})
        answer.raise_for_status()
        return [d["embedding"] for d in sorted(answer.json()["data"], key=lambda d: d["index"])]

    def encode(texts):
        chunks = [texts[i:i + batch] for i in range(0, len(texts), batch)]
        with ThreadPoolExecutor(in_flight) as pool:
            return np.asarray([row for rows in pool.map(one, chunks) for row in rows], dtype=np.float32)

    return encode, client


def _server_limit(ctx: Ctx) -> list[Line]:
    """fasteval's client at its defaults against the best of a bare client's grid, on infinity and llama.cpp."""
    import time

    import numpy as np

    from fasteval.core.choices import SERVED_CONCURRENCY
    from fasteval.core.runs.bench import paper_texts
    from fasteval.models.served import DEFAULT_BATCH_SIZE, ServedEncoder
    servers = real_servers()

    texts = paper_texts()
    lines = []
    for label, start in (("infinity", lambda: servers.start_infinity(ctx.folder, ctx.tmp, url_prefix="/v1")),
                         ("llama.cpp (GGUF f32)",
                          lambda: servers.start_llama_server(servers.gguf_of(ctx.folder, "f32"), ctx.tmp, parallel=4))):
        with start() as url:
            grid = {}
            for batch in BARE_BATCHES:
                for in_flight in BARE_IN_FLIGHT:
                    encode, client = _bare_client(url, servers.SERVED_NAME, batch, in_flight)
                    encode(texts[:64])  # connections open, the server warm
                    t = time.perf_counter()
                    encode(texts)
                    grid[(batch, in_flight)] = time.perf_counter() - t
                    client.close()
            (batch, in_flight), _ = min(grid.items(), key=lambda kv: kv[1])
            bare, client = _bare_client(url, servers.SERVED_NAME, batch, in_flight)
            ours = ServedEncoder(url)
            a, b = ours.encode(texts), bare(texts)
            worst = float(np.abs(a / np.linalg.norm(a, axis=1, keepdims=True)
                                 - b / np.linalg.norm(b, axis=1, keepdims=True)).max())
            tf, tg = alternate(lambda: ours.encode(texts), lambda: bare(texts), 3 if ctx.quick else 5)
            ours.close()
            client.close()
            lines.append(Line(
                "served", f"{len(texts)} paper texts from {label}: fasteval's client at its defaults "
                          f"({DEFAULT_BATCH_SIZE} a request, {SERVED_CONCURRENCY} in flight; texts/s "
                          f"{len(texts) / med(tf):.0f}) against the best bare client of the grid ({batch} a request, "
                          f"{in_flight} in flight; texts/s {len(texts) / med(tg):.0f})",
                med(tf), med(tg), f"bare httpx client, best of {len(grid)} settings",
                f"max |Δ| of the normalised embeddings {worst:.1e}", worst < 1e-5, target=0.95,
                target_name=f"served at the server's limit ({label})",
                detail={"grid_s": {f"{k[0]}x{k[1]}": v for k, v in grid.items()}, "fasteval_runs": tf,
                        "peer_runs": tg}))
    return lines


def _mteb_wrapper(root: str, model: str):
    """texts -> embeddings through MTEB's wrapper, as a harness calls it (a DataLoader of 32 texts a batch, through
    fasteval's one adapter from MTEB's encoder protocol)."""
    from mteb.models.openai_wrappers import OpenAIAPIEncodeWrapper

    import fasteval.mteb

    wrapper = OpenAIAPIEncodeWrapper(endpoint_url=root, model_name=model, use_chat_template=False)
    return fasteval.mteb.MtebEncoder(wrapper, encode_kwargs={"batch_size": 32}).encode
