"""int8: does quantizing change how a model measures? fp32 against onnxruntime's dynamic int8 on the paper's
Exam 1 (Table 1 tau and PACC, the cells whose tau changed), the cosine between a text's two embeddings, and
the throughput, for the default model and all-mpnet-base-v2 when it is cached; and where the drift comes
from: the same recipe with each layer's feed-forward down-projection (the MatMul whose input follows the GELU,
where activation outliers make one per-batch scale coarse) left in fp32."""
from __future__ import annotations

import shutil
import sys

from ..harness import Ctx, Line, alternate, med

MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


def bench_int8(ctx: Ctx) -> list[Line]:
    from fasteval.core.runs.bench import paper_texts
    from fasteval.models.sources.registry import REGISTRY, is_cached
    from fasteval.models.loader import load_model

    lines = []
    texts = paper_texts()
    for name in MODELS:
        if name != ctx.model and not is_cached(REGISTRY[name]):
            continue
        print(f"  int8: {name}", file=sys.stderr)
        fp32 = load_model(name, provider="cpu", threads=ctx.threads)
        int8 = load_model(name, provider="cpu", threads=ctx.threads, dtype="int8")
        lines.append(against_fp32(ctx, fp32, int8, texts, "int8",
                                  f"{name}: int8 against fp32 (paper strings, paper batching, {ctx.threads} threads)"))
        lines.append(_ffn_fp32_line(ctx, name, fp32, int8, texts))
    return lines


def _ffn_fp32_line(ctx: Ctx, name: str, fp32, int8, texts) -> Line:
    """int8 by models/onnx/derive.py's INT8_QUANTIZATION except the feed-forward down-projections (the MatMuls fed
    by the GELU; in an Optimum graph of before, the BERT-style ``/encoder/layer.N/output/dense/MatMul``), which stay
    fp32: is that where the drift comes from?"""
    import logging

    import onnx
    from onnxruntime.quantization import quantize_dynamic

    from fasteval.models.onnx.encoder import OnnxEncoder
    from fasteval.models.onnx.derive import int8_quantize_kwargs
    from fasteval.models.onnx.export import load_export

    graph = onnx.load(str(fp32.folder.onnx_file), load_external_data=False).graph
    made_by = {out: node.op_type for node in graph.node for out in node.output}
    down = [n.name for n in graph.node if n.op_type == "MatMul" and (
        # torch.onnx's graphs: the activation's own op (BiasGelu where the fp32 fusions joined it to its bias)
        made_by.get(n.input[0]) in ("Gelu", "FastGelu", "BiasGelu")
        or ("/output/dense/" in n.name and "/attention/" not in n.name))]  # Optimum's names
    folder = ctx.tmp / f"int8-ffn-fp32-{name}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(int8.folder.path, folder)
    logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process is for static quantization
    quantize_dynamic(str(fp32.folder.onnx_file), str(folder / "model.onnx"), nodes_to_exclude=down,
                     **int8_quantize_kwargs())
    mixed = OnnxEncoder(load_export(folder), provider="cpu", threads=ctx.threads)
    return against_fp32(ctx, fp32, mixed, texts, "mixed", f"{name}: int8 with its {len(down)} feed-forward "
                        f"down-projections in fp32 (paper strings, {ctx.threads} threads)", excluded=len(down))


def against_fp32(ctx: Ctx, fp32, other, texts, kind: str, label: str, section: str = "int8", **detail) -> Line:
    """One drift line: Exam 1 of both encoders (Table 1, the cells whose tau changed), the cosine between a
    text's two embeddings, and the encode time of ``other`` against fp32 on the paper strings."""
    from fasteval import drift as drift_of
    from fasteval import evaluate

    a, b = (evaluate(e, exams=(1,), bootstrap=0).exams["exam1"] for e in (fp32, other))
    sa, sb = a.summary(), b.summary()
    changed = sum(x.tau != y.tau for x, y in zip(a.cells, b.cells))
    drift = drift_of(fp32, other, conformance=False, resamples=0)
    tf, tg = alternate(lambda: other.encode(texts), lambda: fp32.encode(texts), 2 if ctx.quick else 3)
    versus = kind if kind in ("int8", "fp16") else "this"
    return Line(section, label, med(tf), med(tg), "the fp32 export",
                f"Table 1 tau {sa['tau_display']:.2f} -> {sb['tau_display']:.2f}, PACC {sa['pacc_display']:.2f} -> "
                f"{sb['pacc_display']:.2f}; cells whose tau changed {changed} of 20; cosine fp32 vs {versus} mean "
                f"{drift.mean_cosine:.4f}, worst {drift.worst_cosine:.4f}", None, None, "",
                {"fp32": sa, kind: sb, "cells_changed": changed, "mean_cos": drift.mean_cosine,
                 "min_cos": drift.worst_cosine, **detail})
