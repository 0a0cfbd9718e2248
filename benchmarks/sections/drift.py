"""drift: `fasteval drift` on real deployments of the default model (its folder against the same model served by
infinity, by llama.cpp's server from GGUF files f32, q8_0, q4_0 and one with a tokenizer that keeps case, by vLLM's
CPU build when FASTEVAL_TEST_VLLM=1 (a 3.5 GB environment, built once), against its int8 export, against
sentence-transformers on torch), and all-mpnet-base-v2 fp32 against int8 when that model is cached: the verdict
and its reasons, per group mean and worst cosine, collisions, and Δτ with its interval."""
from __future__ import annotations

import contextlib
import os
import time

from ..harness import Ctx, Line, real_servers


MPNET = "all-mpnet-base-v2"


class SentenceTransformersEncoder:
    """sentence-transformers on torch, as the paper ran it (normalised rows, batch 32)."""

    def __init__(self, folder):
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(folder), device="cpu")
        self.name = "sentence-transformers"

    def encode(self, texts):
        return self.model.encode(list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True)


def bench_drift(ctx: Ctx) -> list[Line]:
    from fasteval import drift
    from fasteval.models.loader import load_model
    from fasteval.models.sources.registry import find_spec, is_cached
    servers = real_servers()

    fp32 = load_model(ctx.model, provider="cpu")
    lines = []
    with contextlib.ExitStack() as stack:
        # (label, URL, a faithful served copy: its drift is held to the target)
        served = [("served by infinity", stack.enter_context(servers.start_infinity(ctx.folder, ctx.tmp)), True)]
        served += [(f"served by llama.cpp (GGUF {k})" if k != "cased-tokenizer" else
                    "served by llama.cpp (GGUF f32, a tokenizer that keeps case)",
                    stack.enter_context(servers.start_llama_server(servers.gguf_of(ctx.folder, k), ctx.tmp,
                                                                   parallel=2)), k == "f32")
                   for k in servers.GGUF_KINDS]
        if os.environ.get("FASTEVAL_TEST_VLLM") == "1":
            served.append(("served by vLLM (CPU build, float32)",
                           stack.enter_context(servers.start_vllm(ctx.folder, ctx.tmp)), True))
        candidates = [(label, lambda url=url: load_model(url), gated) for label, url, gated in served]
        candidates += [("int8 export", lambda: load_model(ctx.model, provider="cpu", dtype="int8"), False),
                       ("sentence-transformers (torch)", lambda: SentenceTransformersEncoder(ctx.folder), False)]
        for label, make, gated in candidates:
            lines.append(_line(ctx.model, label, fp32, make(), drift, gated=gated))
    if is_cached(find_spec(MPNET)):
        lines.append(_line(MPNET, "int8 export", load_model(MPNET, provider="cpu"),
                           load_model(MPNET, provider="cpu", dtype="int8"), drift))
    lines.append(_diagnosis_line(ctx, fp32, drift, load_model))
    return lines


# The diagnosis of a drifting MiniLM deployment costs at most this much of the drift run without it (issue 47).
DIAGNOSIS_OVER_DRIFT = 1.5


def _diagnosis_line(ctx: Ctx, fp32, drift, load_model) -> Line:
    """The default model against a copy of its folder that pools the CLS token (the misconfiguration of crow #355
    and zoteus #51): drift with the diagnosis against drift without it, alternately; the diagnosis must name
    pooling=cls."""
    import json
    import shutil

    from ..harness import med

    folder = ctx.tmp / "cls-pooled"
    shutil.copytree(ctx.folder, folder, dirs_exist_ok=True)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    pooling.write_text(json.dumps(config))
    candidate = load_model(str(folder), provider="cpu")
    runs: dict[bool, list[float]] = {False: [], True: []}
    report = None
    for _ in range(2 if ctx.quick else 3):
        for diagnose in (False, True):
            start = time.perf_counter()
            got = drift(fp32, candidate, resamples=2000, cache_root=None, diagnose=diagnose)
            runs[diagnose].append(time.perf_counter() - start)
            report = got if diagnose else report
    assert report is not None and report.diagnosis is not None
    d = report.diagnosis
    return Line("drift", f"{ctx.model}: the diagnosis of a deployment that pools the CLS token", med(runs[True]),
                med(runs[False]), "the same drift with --no-diagnose",
                f"named {d['variant']} (worst cosine {d['worst']:.5f}; the reference's own {d['reference']:.4f}) "
                f"on {d['texts']} texts, {len(d['tried'])} variant(s) tried",
                d["variant"] == "pooling=cls", None,
                f"drift with its diagnosis <= {DIAGNOSIS_OVER_DRIFT}x drift without",
                {"with_runs": runs[True], "without_runs": runs[False], "diagnosis": d},
                limit_s=DIAGNOSIS_OVER_DRIFT * med(runs[False]))


# A faithful served copy's drift is held to this: at most 1.2x the two sides' embedding, scoring, the batch probe,
# the tokenizer comparison and both sides' Table 1 with its bootstrap included.
DRIFT_OVER_EMBEDDING = 1.2


def _line(model: str, label: str, reference, candidate, drift, gated: bool = False) -> Line:
    start = time.perf_counter()
    report = drift(reference, candidate, resamples=2000, cache_root=None)
    seconds = time.perf_counter() - start
    t = report.timings
    embedding = t.get("embed reference", 0.0) + t.get("embed candidate", 0.0)
    budget = (f"; time {seconds:.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()) +
              f", other {seconds - sum(t.values()):.2f}")
    p = report.physscore
    groups = "; ".join(f"{name} {g.mean:.4f}/{g.worst:.4f}" if g.mean is not None else
                       f"{name} failed" if g.failed else f"{name} n/a (every text refused)"
                       for name, g in report.groups.items())
    return Line("drift", f"{model}: fp32 folder against {label}", seconds, None, "",
                f"{report.verdict}" + (f" ({'; '.join(report.reasons)})" if report.reasons else "") +
                f": cosine mean {report.mean_cosine:.5f}, worst {report.worst_cosine:.5f}; "
                f"collisions {len(report.collisions)}; Δτ {p['delta_tau']:+.2f} [{p['delta_tau_ci_low']:.2f}, "
                f"{p['delta_tau_ci_high']:.2f}], {len(p['cells_changed'])} of 20 cells changed; per group mean/worst: "
                f"{groups}" + "".join(f"; {b['behaviour']}: {b['texts']} {b['group']} text(s) (takes {b['max_tokens']} "
                                      f"tokens)" for b in report.behaviours) + budget, None,
                target_name=(f"drift <= {DRIFT_OVER_EMBEDDING}x both sides' embedding ({label}; "
                             f"{DRIFT_OVER_EMBEDDING * embedding:.2f} s)") if gated else "",
                limit_s=DRIFT_OVER_EMBEDDING * embedding if gated else None,
                detail={"report": report.to_json(), "timings": t, "embedding_s": embedding})
