"""Export a model folder to ONNX with Hugging Face Optimum, once, cached by the source's content hash.

The exported folder is self-contained for evaluation without torch: ``model.onnx`` (the transformer, output
``last_hidden_state``), the source's own ``tokenizer.json`` and sentence-transformers configs (pooling,
Normalize, max length, prompts), Dense weights as ``.npz``, and ``fasteval_export.json`` (what it came from).
"""
from __future__ import annotations

import contextlib
import errno
import json
import logging
import shutil
import time
from typing import Any
from pathlib import Path

from ...core.choices import DTYPES, check_choice
from ...core.errors import ModelError, OutputError, first_line, warn_rebuilt
from ...core.failpoints import failpoint
from ...core.io import staged_folder
from ..sources.folder import ModelFolder, content_hash, file_hash, load_folder, sha256_of_file

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1
_COPY_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "LICENSE",
               "NOTICE", "README.md")


def export_dir(cache_root: Path, source_hash: str, dtype: str) -> Path:
    return cache_root / "onnx" / f"{source_hash[:20]}-{dtype}"


def _copy_st_files(folder: ModelFolder, dest: Path) -> None:
    shutil.copy2(folder.tokenizer_file, dest / "tokenizer.json")
    for name in _COPY_FILES:
        if (folder.path / name).exists():
            shutil.copy2(folder.path / name, dest / name)
    # A transformer module in a subfolder is exported to the root: point modules.json there.
    if (dest / "modules.json").exists():
        modules = json.loads((dest / "modules.json").read_text())
        for module in modules:
            if str(module.get("type", "")).endswith("Transformer"):
                module["path"] = ""
        (dest / "modules.json").write_text(json.dumps(modules, indent=2))
    for sub in folder.path.iterdir():
        if sub.is_dir() and (sub / "config.json").exists() and sub.name.split("_", 1)[0].isdigit():
            if sub.resolve() == folder.transformer_path.resolve():
                continue
            (dest / sub.name).mkdir(exist_ok=True)
            shutil.copy2(sub / "config.json", dest / sub.name / "config.json")
    for layer in folder.dense:
        _dense_to_npz(folder.path / layer.path, dest / layer.path / "dense.npz")


def _dense_to_npz(src: Path, target: Path) -> None:
    import numpy as np

    if (src / "model.safetensors").exists():
        from safetensors.torch import load_file
        try:
            state = load_file(str(src / "model.safetensors"))
        except Exception as err:  # noqa: BLE001 - safetensors raises its own types
            raise ModelError(f"Cannot read the Dense weights {src / 'model.safetensors'}: {first_line(err, 120)}.",
                             "repair or re-download the model folder.") from None
    elif (src / "pytorch_model.bin").exists():
        state = _safe_torch_load(src / "pytorch_model.bin")
    else:
        raise ModelError(f"Dense module {src} has no weights.", "pass a complete sentence-transformers folder.")
    try:
        arrays = {k.removeprefix("linear."): v.float().numpy() for k, v in state.items()}
    except (AttributeError, TypeError, RuntimeError):
        raise ModelError(f"The Dense weights in {src} are not tensors.", "repair or re-download the model folder.") \
            from None
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez(target, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as its allow_pickle


def _safe_torch_load(path: Path):
    """A pytorch_model.bin as torch loads it safely (weights_only); one line when it is a pickle torch refuses
    (transformers then tried TensorFlow and printed 'No module named tensorflow')."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - UnpicklingError, RuntimeError, ...
        raise ModelError(f"torch will not load {path} safely (weights_only): {first_line(err, 120)}",
                         "convert the weights to model.safetensors with a trusted copy of the model, or pass an "
                         "already exported folder (model.onnx + tokenizer.json).") from None


def _discard(entry: Path) -> None:
    """Remove a cache entry of ours, whatever it has become (a folder, a file, a link)."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def export_info(path: Path) -> dict:
    """The ``fasteval_export.json`` of an exported folder ({} when there is none)."""
    info = Path(path) / "fasteval_export.json"
    try:
        return json.loads(info.read_text()) if info.exists() else {}
    except (OSError, json.JSONDecodeError):
        return {}


def _refuse_custom_code(folder: ModelFolder) -> None:
    """One line, before any export starts, for a folder whose architecture is custom code (its config.json maps
    its classes to the folder's own modules, ``auto_map``, for a model type transformers does not have:
    nomic-embed-text's ``nomic_bert``): Optimum exports only the architectures it knows, and fasteval runs no
    remote code. The route that works is a server: llama.cpp serves nomic-embed-text from its GGUF."""
    try:
        config = json.loads((folder.transformer_path / "config.json").read_text())
    except (OSError, ValueError):
        return
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not model_type or "auto_map" not in config:
        return
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        raise ModelError(f"{folder.path.name} is a {model_type} model, whose architecture is custom code "
                         "(trust_remote_code): Optimum cannot export it to ONNX, and fasteval runs no remote code.",
                         "serve it and pass --model URL: llama.cpp serves its GGUF (llama-server -m MODEL.gguf "
                         "--embeddings --port 8080, then --model http://127.0.0.1:8080/v1).")


def _exporter(folder: ModelFolder):
    """Optimum's main_export, or one line saying why it cannot be had: the export extra is not installed, or it
    is but cannot be imported beside what else is installed (a version conflict: sentence-transformers 6, which
    the train extra allows, needs transformers 5; optimum-onnx needs transformers below 4.58)."""
    try:
        from optimum.exporters.onnx import main_export
    except ImportError as err:
        from importlib import metadata

        from .. import installed_version as version

        missing = [name for name in ("optimum-onnx", "torch") if version(name) is None]
        if missing:
            raise ModelError(f"{folder.path} has no ONNX file and exporting one needs Optimum and torch "
                             f"({' and '.join(missing)} not installed).",
                             "install the export extra: pip install 'fasteval[export]'.") from None
        wants = "; ".join(r.split(";")[0] for r in metadata.requires("optimum-onnx") or []
                          if r.replace(" ", "").startswith(("transformers>", "transformers<", "transformers=")))
        raise ModelError(f"Optimum is installed but cannot be imported beside the packages here, a version "
                         f"conflict ({first_line(err, 160)}): transformers {version('transformers')} is installed, "
                         f"optimum-onnx {version('optimum-onnx')} needs {wants or 'another transformers'}.",
                         "install the extras in one resolver run (pip install 'fasteval[export,train]' keeps "
                         "transformers below 4.58), or give the export its own environment.") from None
    return main_export


@contextlib.contextmanager
def _quiet_exporters():
    """Silence the tracer's and transformers' chatter during an export (errors still raise)."""
    import warnings

    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    optimum_logger = logging.getLogger("optimum")
    optimum_level = optimum_logger.level
    hf_logging.set_verbosity_error()
    optimum_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(previous)
        optimum_logger.setLevel(optimum_level)


def export(folder: ModelFolder, cache_root: Path, dtype: str = "fp32", out: Path | None = None) -> Path:
    """Return the exported folder for ``folder``, exporting it first unless that export exists.

    The export goes to ``out`` when given, else to the cache (``cache_root/onnx/<source hash>-<dtype>``). It is
    staged in a temporary folder beside the destination and renamed into place: a failed or interrupted export
    leaves nothing behind. int8 and fp16 are made from the fp32 export by onnxruntime (``derive``). A folder that
    already holds ``model.onnx`` is returned as it is.
    """
    if folder.onnx_file is not None:
        return folder.path
    check_choice(dtype, DTYPES, "dtype", "--dtype")
    if dtype != "fp32":
        return derive(export(folder, cache_root, "fp32"), folder, cache_root, dtype, out)
    source_hash = content_hash(folder.path)
    dest = Path(out).expanduser().resolve() if out is not None else export_dir(cache_root, source_hash, dtype)
    info = export_info(dest)
    if info.get("source_sha256") == source_hash and info.get("dtype") == dtype and (dest / "model.onnx").exists():
        if info.get("onnx_sha256") in (None, file_hash(dest / "model.onnx")):
            return dest
        if out is not None:
            raise ModelError(f"{dest / 'model.onnx'} does not match the sha256 its export recorded.",
                             "delete that folder and export again.")
        warn_rebuilt("ONNX export", dest, "model.onnx does not match its recorded sha256")
        _discard(dest)
    elif out is None and (dest.exists() or dest.is_symlink()):  # an unfinished or damaged cache entry
        warn_rebuilt("ONNX export", dest, "no readable fasteval_export.json" if dest.is_dir() else "not a folder")
        _discard(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ModelError(f"{dest} exists and is not an empty folder.",
                         "pass a new --out folder, or delete that one.")
    failpoint("export-checked")
    _refuse_custom_code(folder)
    main_export = _exporter(folder)
    log.info("exporting %s to ONNX (%s) with Optimum, once; written to %s", folder.path.name, dtype, dest)
    started = time.perf_counter()
    if dest.exists():
        if out is None:  # another process finished this very export meanwhile (a shared cache): take it
            return export(folder, cache_root, dtype)
        dest.rmdir()  # an empty --out folder: the staged export takes its place
    weights = folder.transformer_path
    if (weights / "pytorch_model.bin").exists() and not (weights / "model.safetensors").exists():
        _safe_torch_load(weights / "pytorch_model.bin")  # a refused pickle is one line, not TensorFlow's
    with staged_folder(dest, replace=False, what="the ONNX export") as staging:
        try:
            with _quiet_exporters():
                main_export(str(folder.transformer_path), staging, task="feature-extraction",
                            library_name="transformers", local_files_only=True, do_validation=False, device="cpu")
        except Exception as err:  # Optimum raises many types; the user needs one line.
            if isinstance(err, OSError) and err.errno == errno.ENOSPC:
                raise OutputError(f"No space left on the device of {dest.parent} while exporting "
                                  f"{folder.path.name}.", "free disk space, or set FASTEVAL_HOME (or --out) to a "
                                  "folder on a larger disk.") from None
            raise ModelError(f"Optimum could not export {folder.path.name} to ONNX: {first_line(err)}",
                             "check that the architecture is supported by optimum-onnx, or pass an "
                             "already exported folder (model.onnx + tokenizer.json).") from None
        _copy_st_files(folder, staging)
        import optimum.version
        info = {"format": EXPORT_FORMAT, "source": str(folder.path), "source_sha256": source_hash,
                "dtype": dtype, "optimum": optimum.version.__version__,
                "onnx_sha256": sha256_of_file(staging / "model.onnx")}
        (staging / "fasteval_export.json").write_text(json.dumps(info, indent=2))
    log.info("exported %s in %.1f s (once: later runs read the cached export)", folder.path.name,
             time.perf_counter() - started)
    return dest


# The recipes of the exports made from the fp32 export, recorded in fasteval_export.json: an entry made with other
# settings is made again, never reused.
#
# int8 (keyword arguments of onnxruntime's quantize_dynamic). Weights int8 with one scale per output channel,
# activations quantized per batch. 7-bit weights (reduce_range) keep the u8 x s8 products of CPUs without VNNI
# (AVX2, AVX-512 before VNNI) from saturating their 16-bit sums, so an int8 result does not depend on the
# instruction set; per-channel scales lift the mean cosine to fp32 from 0.947 to 0.989 on all-MiniLM-L6-v2 and from
# 0.738 to 0.870 on all-mpnet-base-v2 at the same speed (benchmarks/RESULTS.md, int8).
INT8_QUANTIZATION: dict[str, Any] = {"weight_type": "QInt8", "per_channel": True, "reduce_range": True}
# fp16: onnxruntime's transformer optimizer (its documented path to fp16: a plain fp16 export loses the fusions)
# fuses attention, layer norms and GELU for the GPU (opt_level 0: its own fusions only, no onnxruntime session, so
# the graph is the same whichever machine makes it), then converts the weights and activations to float16 with
# float32 inputs and outputs. model_type "bert" is its encoder fusion set (BERT, MPNet, XLM-R and kin); in the
# graphs of other families its patterns find nothing to fuse and the conversion alone applies.
FP16_OPTIMIZATION: dict[str, Any] = {"model_type": "bert", "opt_level": 0, "use_gpu": True, "keep_io_types": True}


def int8_quantize_kwargs() -> dict:
    """INT8_QUANTIZATION as quantize_dynamic's keyword arguments (the weight type as onnxruntime's enum)."""
    from onnxruntime.quantization import QuantType

    return {**INT8_QUANTIZATION, "weight_type": getattr(QuantType, INT8_QUANTIZATION["weight_type"])}


def _quantize_int8(source: Path, dest: Path) -> None:
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(str(source), str(dest), **int8_quantize_kwargs())


def _optimize_fp16(source: Path, dest: Path) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    recipe = FP16_OPTIMIZATION
    model = optimize_model(str(source), model_type=recipe["model_type"], num_heads=0, hidden_size=0,
                           opt_level=recipe["opt_level"], use_gpu=recipe["use_gpu"])
    model.convert_float_to_float16(keep_io_types=recipe["keep_io_types"])
    external = any(p.name != "model.onnx" for p in source.parent.glob("model.onnx*"))
    model.save_model_to_file(str(dest), use_external_data_format=external)


# dtype -> (its recipe, what the log says is done, the maker)
_DERIVED = {"int8": (INT8_QUANTIZATION, "quantizing", _quantize_int8),
            "fp16": (FP16_OPTIMIZATION, "optimizing", _optimize_fp16)}


def derive(fp32: Path, folder: ModelFolder, cache_root: Path, dtype: str, out: Path | None = None) -> Path:
    """The int8 or fp16 export, made by onnxruntime from the fp32 export (int8: ``quantize_dynamic``; fp16: the
    transformer optimizer and its float16 conversion; the recipes above), cached beside it (``<source
    hash>-<dtype>``), its configs copied. An entry made with another recipe (an older one) is made again."""
    recipe, doing, make = _DERIVED[dtype]
    source_hash = content_hash(folder.path)
    dest = Path(out).expanduser().resolve() if out is not None else export_dir(cache_root, source_hash, dtype)
    info = export_info(dest)
    intact = (info.get("source_sha256") == source_hash and info.get("dtype") == dtype
              and (dest / "model.onnx").exists() and info.get("onnx_sha256") in (None, file_hash(dest / "model.onnx")))
    if intact and info.get("recipe", info.get("quantization")) == recipe:
        return dest
    if dest.exists():
        if out is not None and any(dest.iterdir()):
            raise ModelError(f"{dest} exists and is not an empty folder.",
                             "pass a new --out folder, or delete that one.")
        if out is None and not intact:
            warn_rebuilt(f"{dtype} export", dest, "no intact record")
        _discard(dest)
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
            with _quiet_exporters():
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


def load_export(path: Path) -> ModelFolder:
    folder = load_folder(path)
    if folder.onnx_file is None:
        raise ModelError(f"No model.onnx in {path}.", "export it first: fasteval export PATH.")
    return folder
