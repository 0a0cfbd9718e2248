"""The exports made from the fp32 export by onnxruntime, cached beside it: int8 (``quantize_dynamic``) and fp16
(onnxscript's fusions, then onnxruntime's float16 conversion), each with its recipe recorded (an entry made with
another recipe, or from another fp32 graph, is made again); and the exporters' chatter silenced while they work."""
from __future__ import annotations

import contextlib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from ...core.errors import ModelError, first_line, warn_rebuilt
from ...core.io import staged_folder
from ..sources.folder import ModelFolder, content_hash, sha256_of_file
from ..sources.registry import export_dir
from .cached import copied_from_cache, discard, export_info, is_intact, recipe_of

log = logging.getLogger(__name__)


# loggers of the exporters that speak at INFO/WARNING while they work (torch's, onnxscript's, onnx-ir's)
_EXPORTER_LOGGERS = ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript", "onnx_ir")


@contextlib.contextmanager
def quiet_exporters():
    """Silence torch's exporter, transformers' and onnxruntime's tools' chatter during an export (errors still
    raise). torch and transformers are quietened where they are installed (an fp16/int8 export of an existing
    model.onnx needs neither)."""
    import importlib.util
    import warnings

    hf_logging = None
    if importlib.util.find_spec("torch") is not None:
        import torch.onnx  # noqa: F401 - torch sets its loggers' levels as it is imported: before they are changed
    if importlib.util.find_spec("transformers") is not None:
        from transformers.utils import logging as hf_logging
    loggers = [logging.getLogger(name) for name in _EXPORTER_LOGGERS]
    levels = [logger.level for logger in loggers]
    previous = hf_logging.get_verbosity() if hf_logging else None
    if hf_logging:
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if hf_logging and previous is not None:
            hf_logging.set_verbosity(previous)
            hf_logging.enable_progress_bar()
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


# The recipes of the exports made from the fp32 export, recorded in fasteval_export.json: an entry made with other
# settings is made again, never reused.
#
# int8 (keyword arguments of onnxruntime's quantize_dynamic). Weights int8 with one scale per output channel,
# activations quantized per batch. 7-bit weights (reduce_range) keep the u8 x s8 products of CPUs without VNNI
# (AVX2, AVX-512 before VNNI) from saturating their 16-bit sums, so an int8 result does not depend on the
# instruction set; per-channel scales lift the mean cosine to fp32 from 0.947 to 0.989 on all-MiniLM-L6-v2 and from
# 0.738 to 0.870 on all-mpnet-base-v2 at the same speed (benchmarks/RESULTS.md, int8).
INT8_QUANTIZATION: dict[str, Any] = {"weight_type": "QInt8", "per_channel": True, "reduce_range": True}
# fp16: onnxscript's onnxruntime fusions (the rewriter made for torch.onnx's dynamo graphs: attention into
# Attention/MultiHeadAttention, layer and RMS norms with their residual adds into SkipLayerNormalization /
# SkipSimplifiedLayerNormalization, GELU with its bias, rotary embeddings; onnxruntime's own transformer optimizer
# matched the graphs of the old TorchScript exporter and fails on these), then onnxruntime's float16 conversion of
# the weights and activations with float32 inputs and outputs. Measured on the tiny twins of BERT, NomicBert,
# ModernBERT, Qwen3 and Gemma 3: every one fused and runs on the CPU.
FP16_OPTIMIZATION: dict[str, Any] = {"fusions": "onnxscript.rewriter.ort_fusions", "keep_io_types": True}


def int8_quantize_kwargs() -> dict:
    """INT8_QUANTIZATION as quantize_dynamic's keyword arguments (the weight type as onnxruntime's enum)."""
    from onnxruntime.quantization import QuantType

    return {**INT8_QUANTIZATION, "weight_type": getattr(QuantType, INT8_QUANTIZATION["weight_type"])}


def _quantize_int8(source: Path, dest: Path) -> None:
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(str(source), str(dest), **int8_quantize_kwargs())


def _optimize_fp16(source: Path, dest: Path) -> None:
    try:
        import onnx_ir as ir
        from onnxscript.rewriter.ort_fusions import optimize_for_ort
    except ImportError:
        raise ModelError("The fp16 export needs onnxscript (the export extra), which is not installed.",
                         "install the export extra: pip install 'fasteval[export]', or use --dtype fp32.") from None
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model, _ = optimize_for_ort(ir.load(str(source)))
    half = convert_float_to_float16(ir.to_proto(model), keep_io_types=FP16_OPTIMIZATION["keep_io_types"])
    external = any(p.name != "model.onnx" for p in source.parent.glob("model.onnx*"))
    onnx.save(half, str(dest), save_as_external_data=external, location=f"{dest.name}.data")


# dtype -> (its recipe, what the log says is done, the maker)
_DERIVED = {"int8": (INT8_QUANTIZATION, "quantizing", _quantize_int8),
            "fp16": (FP16_OPTIMIZATION, "optimizing", _optimize_fp16)}


def derive(fp32: Path, folder: ModelFolder, cache_root: Path, dtype: str, out: Path | None = None) -> Path:
    """The int8 or fp16 export, made by onnxruntime from the fp32 export (int8: ``quantize_dynamic``; fp16: the
    fusions of onnxscript and onnxruntime's float16 conversion; the recipes above), cached beside it (``<source
    hash>-<dtype>``), its configs copied. An entry made with another recipe (an older one) is made again."""
    recipe, doing, make = _DERIVED[dtype]
    # the fp32 export's own source hash: the folder is not hashed a second time (it may have changed since)
    source_hash = export_info(fp32).get("source_sha256") or content_hash(folder.path)
    dest = Path(out).expanduser().resolve() if out is not None else export_dir(cache_root, source_hash, dtype)
    # made with this recipe from this very fp32 graph (an fp32 export made again, fused, makes its int8 again)
    made = (recipe, export_info(fp32).get("onnx_sha256"))
    if out is not None and copied_from_cache(export_dir(cache_root, source_hash, dtype), dest, source_hash, dtype,
                                              made):
        return dest
    info = export_info(dest)
    intact = is_intact(dest, info, source_hash, dtype)
    if intact and recipe_of(info) == made:
        return dest
    if dest.exists():
        if out is not None and any(dest.iterdir()):
            raise ModelError(f"{dest} exists and is not an empty folder.",
                             "pass a new --out folder, or delete that one.")
        if out is None and not intact:
            warn_rebuilt(f"{dtype} export", dest, "no intact record")
        discard(dest)
    log.info("%s %s to %s with onnxruntime, once; written to %s", doing, folder.path.name, dtype, dest)
    with staged_folder(dest, replace=False, what=f"the {dtype} export") as staging:
        for item in fp32.iterdir():
            if item.name.startswith(("model.onnx", "fasteval_export.json", ".")):
                continue
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, staging / item.name)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # int8: its advice to pre-process is for static quantization
        # onnxruntime writes a shape-inferred copy beside its input: work on a private copy, never the shared fp32
        # folder (two int8 runs at once collided there, and a read-only cache failed)
        private = staging / ".fp32-input"
        private.mkdir()
        for item in fp32.glob("model.onnx*"):  # the graph and any external-data file
            shutil.copy2(item, private / item.name)
        try:
            with quiet_exporters():
                make(private / "model.onnx", staging / "model.onnx")
        except Exception as err:  # onnxruntime raises many types
            raise ModelError(f"onnxruntime could not make the {dtype} export of {folder.path.name}: "
                             f"{first_line(err)}", "use --dtype fp32, or report the model's architecture.") from None
        finally:
            root.setLevel(level)
            shutil.rmtree(private, ignore_errors=True)
        import onnxruntime

        record = {**export_info(fp32), "dtype": dtype, "made_from": export_info(fp32).get("onnx_sha256"),
                  "onnxruntime": onnxruntime.__version__, "recipe": recipe,
                  "onnx_sha256": sha256_of_file(staging / "model.onnx")}
        (staging / "fasteval_export.json").write_text(json.dumps(record, indent=2))
    return dest
