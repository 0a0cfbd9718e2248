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
    cls_pooled = servers.pooled_copy(ctx.folder, ctx.tmp / "cls-pooled", "cls")  # crow #355, zoteus #51
    lines.append(_diagnosis_line(ctx, fp32, load_model(str(cls_pooled), provider="cpu"), drift,
                                 "a deployment that pools the CLS token", "pooling=cls"))
    lines.append(_diagnosis_line(ctx, fp32, load_model(ctx.model, provider="cpu", dtype="int8"), drift,
                                 "a deployment no variant explains (its int8 export: activations quantized per "
                                 "batch)", None))
    lines.append(_receipt_line(ctx, fp32, load_model(str(cls_pooled), provider="cpu"), drift))
    return lines


# The diagnosis of a drifting MiniLM deployment costs at most this much of the drift run without it (issue 47).
DIAGNOSIS_OVER_DRIFT = 1.5


def _diagnosis_line(ctx: Ctx, fp32, candidate, drift, what: str, expected: str | None) -> Line:
    """The default model against ``candidate``: drift with the diagnosis against drift without it, alternately;
    the diagnosis must name ``expected`` (None: no variant, and every one tried)."""
    from fasteval.core.results.drift_findings import Diagnosis

    from ..harness import med

    runs: dict[bool, list[float]] = {False: [], True: []}
    report = None
    for _ in range(2 if ctx.quick else 3):
        for diagnose in (False, True):
            start = time.perf_counter()
            got = drift(fp32, candidate, resamples=2000, cache_root=None, diagnose=diagnose)
            runs[diagnose].append(time.perf_counter() - start)
            report = got if diagnose else report
    assert report is not None and report.has(Diagnosis)
    d = report.get(Diagnosis)
    named = (f"named {d.variant} (worst cosine {d.worst:.5f}; the reference's own {d.reference:.4f})"
             if d.variant else f"no variant named (closest: {d.closest}; the reference's own {d.reference:.4f})")
    tried = d.tried or []
    return Line("drift", f"{ctx.model}: the diagnosis of {what}", med(runs[True]),
                med(runs[False]), "the same drift with --no-diagnose",
                f"{named} on {d.texts} texts, {len(tried)} variant(s) tried "
                f"({sum(t.texts or 0 for t in tried)} texts embedded in all)",
                d.variant == expected, None,
                f"drift with its diagnosis <= {DIAGNOSIS_OVER_DRIFT}x drift without",
                {"with_runs": runs[True], "without_runs": runs[False], "diagnosis": d.to_json()["diagnosis"]},
                limit_s=DIAGNOSIS_OVER_DRIFT * med(runs[False]))


def _receipt_line(ctx: Ctx, fp32, candidate, drift) -> Line:
    """--save-receipt with the diagnosis's variants against without them (time and size), and drift against the
    receipt naming the CLS-pooled copy as drift against the folder does."""
    from fasteval.core.results.drift_findings import Diagnosis

    from fasteval.core.runs.drift.receipts import save_receipt

    from ..harness import med

    runs: dict[bool, list[float]] = {False: [], True: []}
    paths = {d: ctx.tmp / f"minilm-{d}.receipt" for d in (False, True)}
    made: dict = {}
    for _ in range(1 if ctx.quick else 2):
        for diagnose in (False, True):
            start = time.perf_counter()
            got = save_receipt(fp32, paths[diagnose], diagnose=diagnose)
            runs[diagnose].append(time.perf_counter() - start)
            made = got if diagnose else made
    report = drift(str(paths[True]), candidate, resamples=0, cache_root=None)
    d = report.get(Diagnosis)
    sizes = {k: p.stat().st_size for k, p in paths.items()}
    return Line("drift", f"{ctx.model}: --save-receipt with the diagnosis's variants", med(runs[True]),
                med(runs[False]), "--save-receipt --no-diagnose",
                f"{made['variants']} variants on {made['variant_texts']} texts; {sizes[True] / 2**20:.1f} MiB "
                f"against {sizes[False] / 2**20:.1f} MiB; drift against it names the CLS-pooled copy "
                f"{d.variant} (worst {d.worst or 0:.5f})",
                d.variant == "pooling=cls", None, "",
                {"with_runs": runs[True], "without_runs": runs[False], "sizes": sizes,
                 "diagnosis": d.to_json().get("diagnosis")})


# A faithful served copy's drift is held to this: at most 1.2x the two sides' embedding, scoring, the batch probe,
# the tokenizer comparison and both sides' Table 1 with its bootstrap included.
DRIFT_OVER_EMBEDDING = 1.2


def _line(model: str, label: str, reference, candidate, drift, gated: bool = False) -> Line:
    from fasteval.core.results.drift_findings import Behaviours, Collisions, PhysScore

    start = time.perf_counter()
    report = drift(reference, candidate, resamples=2000, cache_root=None)
    seconds = time.perf_counter() - start
    t = report.timings
    embedding = t.get("embed reference", 0.0) + t.get("embed candidate", 0.0)
    budget = (f"; time {seconds:.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()) +
              f", other {seconds - sum(t.values()):.2f}")
    p = report.get(PhysScore)
    groups = "; ".join(f"{name} {g.mean:.4f}/{g.worst:.4f}" if g.mean is not None else
                       f"{name} failed" if g.failed else f"{name} n/a (every text refused)"
                       for name, g in report.groups.items())
    return Line("drift", f"{model}: fp32 folder against {label}", seconds, None, "",
                f"{report.verdict}" + (f" ({'; '.join(report.reasons)})" if report.reasons else "") +
                f": cosine mean {report.mean_cosine:.5f}, worst {report.worst_cosine:.5f}; "
                f"collisions {report.get(Collisions).collided}; Δτ {p.delta_tau:+.2f} [{p.delta_tau_ci_low:.2f}, "
                f"{p.delta_tau_ci_high:.2f}], {len(p.cells_changed)} of 20 cells changed; per group mean/worst: "
                f"{groups}" + "".join(f"; {b.behaviour}: {b.texts} {b.group} text(s) (takes {b.max_tokens} "
                                      f"tokens)" for b in report.get(Behaviours).found) + budget, None,
                target_name=(f"drift <= {DRIFT_OVER_EMBEDDING}x both sides' embedding ({label}; "
                             f"{DRIFT_OVER_EMBEDDING * embedding:.2f} s)") if gated else "",
                limit_s=DRIFT_OVER_EMBEDDING * embedding if gated else None,
                detail={"report": report.to_json(), "timings": t, "embedding_s": embedding})
