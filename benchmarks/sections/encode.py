"""encode: fasteval's ONNX encoder against sentence-transformers on torch (fp32) and against
sentence-transformers' own ONNX backend on the same exported graph; the paper batching and the packed one;
int8 against torch; and the share of this CPU's fp32 GEMM throughput that the fp32 encoder reaches."""
from __future__ import annotations

import shutil
import sys
import time

from ..harness import Ctx, Line, alternate, med


def _st_onnx_folder(ctx: Ctx, onnx_file) -> str:
    """The model's sentence-transformers folder with fasteval's exported graph as onnx/model.onnx (so both use
    the very same graph)."""
    dest = ctx.tmp / "st-onnx"
    if not dest.exists():
        shutil.copytree(ctx.folder, dest)
        (dest / "onnx").mkdir(exist_ok=True)
        shutil.copy2(onnx_file, dest / "onnx" / "model.onnx")
    return str(dest)


def gemm_gflops(threads: int) -> float:
    """numpy float32 GEMM throughput (GFLOP/s) on 1024 x 1024 matrices: this CPU's practical fp32 peak."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).normal(size=(1024, 1024)).astype(np.float32)
    with threadpool_limits(threads):
        a @ a
        start = time.perf_counter()
        for _ in range(10):
            a @ a
        seconds = (time.perf_counter() - start) / 10
    return 2 * 1024 ** 3 / seconds / 1e9


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

    def line(name, texts, f, g, peer, fid_a, fid_b, target=None, target_name="", tol=1e-4):
        tf, tg = alternate(f, g, runs)
        a, b = fid_a(), fid_b()
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        diff = float(np.abs(a - b).max())
        cos = float((a * b).sum(axis=1).min())
        lines.append(Line("encode", name, med(tf), med(tg), peer, f"max |diff| {diff:.1e}, min cosine {cos:.7f}",
                          diff < tol, target, target_name,
                          {"fasteval_strings_per_s": len(texts) / med(tf), "peer_strings_per_s": len(texts) / med(tg)}))

    thread_counts = [ctx.threads] if ctx.args.provider == "cuda" else sorted({1, ctx.threads}, reverse=True)
    for threads in thread_counts:
        torch.set_num_threads(threads)
        full = threads == ctx.threads
        paper = load_model(ctx.model, provider=ctx.args.provider, threads=threads, batch_size=32,
                           batching="paper")
        packed = load_model(ctx.model, provider=ctx.args.provider, threads=threads, batching="packed")
        for name, texts in sets.items():
            print(f"  encode: {name}, {threads} thread(s)", file=sys.stderr)
            torch_encode = lambda: st.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
            line(f"{name} ({len(texts)}), batch 32 (paper batching), {threads} thread(s), {paper.provider}", texts,
                 lambda: paper.encode(texts), torch_encode, f"sentence-transformers {st.device.type} (torch)",
                 lambda: paper.encode(texts), torch_encode)
            line(f"{name} ({len(texts)}), packed batching, {threads} thread(s), {packed.provider}", texts,
                 lambda: packed.encode(texts), torch_encode, f"sentence-transformers {st.device.type} (torch)",
                 lambda: packed.encode(texts), torch_encode,
                 2.0 if full and name == "paper strings" else None,
                 "encode >= 2x sentence-transformers (fp32)" if full and name == "paper strings" else "")
    torch.set_num_threads(ctx.threads)
    import importlib.util

    if ctx.args.provider == "cpu" and importlib.util.find_spec("optimum") is None:
        # sentence-transformers' ONNX backend needs Optimum (the GPU kit's dry run, in an image without it)
        lines.append(Line("encode", "the same ONNX graph in sentence-transformers' ONNX backend, and int8: not run "
                          "(Optimum is not installed)", None, None, "", "", None, None, ""))
    elif ctx.args.provider == "cpu":
        texts = sets["paper strings"]
        fp32 = load_model(ctx.model, provider="cpu", threads=ctx.threads, batching="paper")
        st_onnx = SentenceTransformer(_st_onnx_folder(ctx, fp32.folder.onnx_file), backend="onnx",
                                      model_kwargs={"file_name": "onnx/model.onnx",
                                                    "provider": "CPUExecutionProvider"})
        print("  encode: sentence-transformers' ONNX backend, int8", file=sys.stderr)
        onnx_encode = lambda: st_onnx.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
        line(f"paper strings ({len(texts)}), batch 32, {ctx.threads} thread(s), the same ONNX graph", texts,
             lambda: fp32.encode(texts), onnx_encode, "sentence-transformers backend=\"onnx\" (onnxruntime)",
             lambda: fp32.encode(texts), onnx_encode)
        int8 = load_model(ctx.model, provider="cpu", threads=ctx.threads, dtype="int8", batching="paper")
        torch_encode = lambda: st.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
        line(f"paper strings ({len(texts)}), int8, batch 32, {ctx.threads} thread(s)", texts,
             lambda: int8.encode(texts), torch_encode, "sentence-transformers cpu (torch, fp32)",
             lambda: int8.encode(texts), torch_encode, 3.0, "int8 encode >= 3x sentence-transformers", tol=1.0)
        # The fp32 encoder's share of the GEMM peak: 2 x (non-embedding parameters) FLOPs per token.
        params = sum(p.numel() for n, p in st.named_parameters() if "embeddings" not in n)
        tokens = sum(len(e.ids) for e in fp32.tokenizer.encode_batch(texts))
        seconds = lines[-2].fasteval_s  # the fp32 line against the ONNX backend, all threads
        achieved = 2 * params * tokens / seconds / 1e9
        peak = gemm_gflops(ctx.threads)
        lines.append(Line("encode", f"fp32 encode: share of this CPU's fp32 GEMM throughput ({ctx.threads} threads)",
                          seconds, None, "", f"{achieved:.1f} GFLOP/s of {peak:.1f} GFLOP/s numpy 1024x1024 GEMM = "
                          f"{100 * achieved / peak:.0f}% ({tokens} tokens, {params / 1e6:.1f}M non-embedding "
                          "parameters; short sequences are attention- and overhead-bound)", None, None, "",
                          {"gflops": achieved, "peak_gflops": peak}))
    return lines
