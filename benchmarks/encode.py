"""encode: the ONNX encoder against sentence-transformers (torch) on the same strings and threads."""
from __future__ import annotations

import sys

from harness import Ctx, Line, alternate, med


def bench_encode(ctx: Ctx) -> list[Line]:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from fasteval.core.runs.bench import long_sentences, paper_texts
    from fasteval.models.loader import load_model

    runs = 2 if ctx.quick else 3
    sets = {"paper strings": paper_texts(), "long sentences": long_sentences(64 if ctx.quick else 256)}
    st = SentenceTransformer(str(ctx.folder), device=ctx.peer_device).float()
    lines = []
    thread_counts = [ctx.threads] if ctx.args.provider == "cuda" else sorted({1, ctx.threads}, reverse=True)
    for threads in thread_counts:
        torch.set_num_threads(threads)
        enc = load_model(ctx.model, provider=ctx.args.provider, threads=threads, batch_size=32, quiet=True)
        for name, texts in sets.items():
            print(f"  encode: {name}, {threads} thread(s)", file=sys.stderr)
            f = lambda: enc.encode(texts)  # noqa: E731
            g = lambda: st.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
            tf, tg = alternate(f, g, runs)
            a = f()
            a = a / np.linalg.norm(a, axis=1, keepdims=True)
            b = g()
            diff = float(np.abs(a - b).max())
            cos = float((a * b).sum(axis=1).min())
            lines.append(Line("encode", f"{name} ({len(texts)}), batch 32, {threads} thread(s), {enc.provider}",
                              med(tf), med(tg), f"sentence-transformers {st.device.type} (torch)",
                              f"max |diff| {diff:.1e}, min cosine {cos:.7f}", diff < 1e-4,
                              2.0 if threads == ctx.threads else None,
                              "encode >= 2x sentence-transformers" if threads == ctx.threads else "",
                              {"fasteval_runs": tf, "peer_runs": tg,
                               "fasteval_strings_per_s": len(texts) / med(tf),
                               "peer_strings_per_s": len(texts) / med(tg)}))
    torch.set_num_threads(ctx.threads)
    return lines
