"""gpu: the GPU path measured (benchmarks/gpu/run.sh writes it to RESULTS-gpu.md beside the encode and e2e sections).

- encode throughput (texts/s and real tokens/s) over batch sizes 32 to 1024, fasteval on onnxruntime's CUDA provider
  (I/O binding, the sentence head in the graph) in fp32 and in fp16 (onnxscript's onnxruntime fusions), against
  sentence-transformers on torch on the same device in fp32 and fp16 (``.half()``), on the same texts and batches
  (sorted by length, as sentence-transformers does);
- the share of the device's attainable GEMM rate the encode reaches, fp32 and fp16, with that rate measured in the
  same run (torch's matmul on the GPU, fp32 without TF32; numpy on a CPU);
- ``fasteval drift`` of fp16 against fp32 on the device: Table 1 of both, the cells whose tau changed, the cosines.

Without a GPU (the kit's dry run, ``gpu/kit_run.sh --provider cpu``) the same lines run on the CPU, with fewer batch
sizes and texts, and no fp16 peer (torch's fp16 on a CPU is not a deployment anyone runs).
"""
from __future__ import annotations

import sys
import time

from ..harness import Ctx, Line, alternate, med

BATCH_SIZES = (32, 64, 128, 256, 512, 1024)
CPU_BATCH_SIZES = (32, 256)
GEMM_SIZE = {"cuda": 8192, "cpu": 1024}


def gemm_rate(device: str, dtype: str, threads: int) -> float:
    """The device's attainable GEMM rate (GFLOP/s): torch's matmul of two square matrices (fp32 without TF32), the
    median of 10 after a warm-up; on a CPU numpy's fp32 (the encode section's measure)."""
    if device == "cpu":
        from encode import gemm_gflops

        return gemm_gflops(threads)
    import torch

    n = GEMM_SIZE[device]
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device=device, dtype=torch.float16 if dtype == "fp16" else torch.float32)
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        start = time.perf_counter()
        a @ a
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 2 * n ** 3 / med(times) / 1e9


def device_facts(peer_device: str) -> dict:
    """What the GPU machine says of itself, for the report's machine lines: the GPU's name and memory, the driver,
    the CUDA and cuDNN versions (torch's, the image's own wheels, which onnxruntime's CUDA provider loads too),
    onnxruntime's build and providers and the TF32 state of both sides (onnxruntime's CUDA provider options, torch's
    matmul and cuDNN flags)."""
    import onnxruntime as ort

    from fasteval.models.onnx.gpu import CUDA_PROVIDER_OPTIONS, build, driver_version

    package, cuda = build()
    facts = {"onnxruntime": package, "onnxruntime_cuda": cuda, "onnxruntime_providers": ort.get_available_providers(),
             "driver": driver_version(), "onnxruntime_cuda_options": CUDA_PROVIDER_OPTIONS}
    if peer_device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(0)
        facts.update({"gpu": torch.cuda.get_device_name(0), "gpu_memory_gib": round(props.total_memory / 2**30, 1),
                      "multiprocessors": props.multi_processor_count, "torch": torch.__version__,
                      "torch_cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                      "torch_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                      "torch_tf32_cudnn": torch.backends.cudnn.allow_tf32})
    return facts


def bench_gpu(ctx: Ctx) -> list[Line]:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from fasteval.core.runs.bench import long_sentences, paper_texts
    from fasteval.models.loader import load_model

    provider = ctx.args.provider
    on_gpu = provider == "cuda" and ctx.peer_device == "cuda"
    runs = 2 if ctx.quick else 3
    sizes = BATCH_SIZES if on_gpu else CPU_BATCH_SIZES
    sets = {"paper strings": paper_texts(),
            "long sentences": long_sentences(2048 if on_gpu else (64 if ctx.quick else 256))}
    peers = {"fp32": SentenceTransformer(str(ctx.folder), device=ctx.peer_device).float()}
    if on_gpu:
        peers["fp16"] = SentenceTransformer(str(ctx.folder), device=ctx.peer_device).half()
    torch.set_num_threads(ctx.threads)
    encoders = {dtype: load_model(ctx.model, provider=provider, threads=ctx.threads, dtype=dtype)
                for dtype in ("fp32", "fp16")}
    device = encoders["fp32"].provider
    tokenizer = encoders["fp32"].tokenizer
    lines: list[Line] = []
    best: dict[str, tuple[float, int]] = {}  # dtype -> (seconds, real tokens) of its fastest line on long sentences
    for set_name, texts in sets.items():
        tokens = sum(sum(e.attention_mask) for e in tokenizer.encode_batch(texts))
        for dtype, encoder in encoders.items():
            peer = peers.get(dtype)
            for size in sizes:
                print(f"  gpu: {set_name}, {dtype}, batch {size}", file=sys.stderr)
                encoder.batch_size = size
                ours = lambda: encoder.encode(texts)  # noqa: E731
                theirs = ((lambda: peer.encode(texts, batch_size=size, normalize_embeddings=True))  # noqa: E731
                          if peer is not None else (lambda: None))
                tf, tg = alternate(ours, theirs, runs)
                seconds = med(tf)
                a, ok = ours(), None
                fidelity = f"{len(texts) / seconds:,.0f} texts/s, {tokens / seconds:,.0f} tokens/s"
                if peer is not None:
                    b = np.asarray(theirs(), dtype=np.float32)
                    a_n = a / np.linalg.norm(a, axis=1, keepdims=True)
                    cos = float((a_n * b).sum(axis=1).min())
                    fidelity += (f" (peer {len(texts) / med(tg):,.0f}, {tokens / med(tg):,.0f}); max |diff| "
                                 f"{float(np.abs(a_n - b).max()):.1e}, min cosine {cos:.6f}")
                    ok = cos > (0.9999 if dtype == "fp32" else 0.999)
                if set_name == "long sentences" and (dtype not in best or seconds < best[dtype][0]):
                    best[dtype] = (seconds, tokens)
                lines.append(Line(
                    "gpu", f"{set_name} ({len(texts)}), batch {size}, {dtype}, {device}"
                    + (", I/O binding, head in the graph" if encoder.io_binding and encoder.graph_head else ""),
                    seconds, med(tg) if peer is not None else None,
                    f"sentence-transformers {ctx.peer_device} (torch, {dtype})" if peer is not None else "",
                    fidelity, ok, None, "",
                    {"batch_size": size, "dtype": dtype, "texts": len(texts), "tokens": tokens,
                     "fasteval_texts_per_s": len(texts) / seconds, "fasteval_tokens_per_s": tokens / seconds,
                     **({"peer_texts_per_s": len(texts) / med(tg), "peer_tokens_per_s": tokens / med(tg)}
                        if peer is not None else {})}))
    params = sum(p.numel() for n, p in peers["fp32"].named_parameters() if "embeddings" not in n)
    for dtype, (seconds, tokens) in best.items():
        if dtype == "fp16" and not on_gpu:
            continue  # onnxruntime computes an fp16 graph in fp32 on a CPU: no fp16 rate to hold it to
        rate = gemm_rate(ctx.peer_device if on_gpu else "cpu", dtype, ctx.threads)
        achieved = 2 * params * tokens / seconds / 1e9
        lines.append(Line("gpu", f"{dtype} encode: share of this device's {dtype} GEMM rate (long sentences, its "
                          "fastest batch size)", seconds, None, "",
                          f"{achieved:,.0f} GFLOP/s of {rate:,.0f} GFLOP/s "
                          f"({GEMM_SIZE['cuda' if on_gpu else 'cpu']}^2 matmul) = {100 * achieved / rate:.1f}% "
                          f"({tokens} real tokens, {params / 1e6:.1f}M non-embedding parameters)", None, None, "",
                          {"gflops": achieved, "peak_gflops": rate, "tokens": tokens, "params": params}))
    from int8 import against_fp32

    for encoder in encoders.values():
        encoder.batch_size = 32  # the paper's batches, as the sweep embeds
    lines.append(against_fp32(ctx, encoders["fp32"], encoders["fp16"], sets["paper strings"], "fp16",
                              f"{ctx.model}: fp16 (fused) against fp32 on {device} (paper strings, "
                              "paper batching)", section="gpu"))
    return lines
