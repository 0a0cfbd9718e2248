"""Export a model folder to ONNX with torch.onnx (the dynamo exporter), once, cached by the source's content hash.

The exported folder is self-contained for evaluation without torch: ``model.onnx`` (the transformer, output
``last_hidden_state``), the source's own ``tokenizer.json`` and sentence-transformers configs (pooling,
Normalize, max length, prompts), Dense weights as ``.npz``, and ``fasteval_export.json`` (what it came from).
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import shutil
import time
from typing import Any
from pathlib import Path

from ...core.choices import DTYPES, check_choice
from ...core.errors import FastevalError, ModelError, OutputError, first_line, warn_rebuilt
from ...core.failpoints import failpoint
from ...core.io import staged_folder
from .. import installed_version
from ..sources.bounds import check_depth, read_json_file, read_tokenizer
from ..sources.folder import ModelFolder, content_hash, file_hash, load_folder, sha256_of_file
from ..sources.registry import export_dir

log = logging.getLogger(__name__)

EXPORT_FORMAT = 3  # 1: Optimum's export, 2: torch.onnx's graph unfused (both still read: the same model)
_COPY_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "LICENSE",
               "NOTICE", "README.md")
# the transformer's own files the encoder reads beside tokenizer.json: padding and truncation sides, the maximum
# length (sentence-transformers 6 keeps max_seq_length there), the position embeddings' count
_TRANSFORMER_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json")


def _copy_st_files(folder: ModelFolder, dest: Path) -> None:
    shutil.copy2(folder.tokenizer_file, dest / "tokenizer.json")
    for name in _TRANSFORMER_FILES:
        if (folder.transformer_path / name).exists():
            shutil.copy2(folder.transformer_path / name, dest / name)
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
        raise ModelError(f"The Dense weights in {src} are not tensors.",
                         "repair or re-download the model folder.") from None
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


# config.json fields that choose an attention or experts implementation. transformers reads a Hub repository's name
# there as a kernel to download and run (through the `kernels` package, which sentence-transformers and mteb
# environments hold; CVE-2026-4372 ran such a kernel with trust_remote_code=False); only its built-in
# implementations are code that ships with transformers itself.
IMPLEMENTATION_FIELDS = ("attn_implementation", "_attn_implementation", "_attn_implementation_internal",
                         "experts_implementation", "_experts_implementation", "_experts_implementation_internal")
BUILT_IN_IMPLEMENTATIONS = ("eager", "sdpa")
# fields that ask transformers to swap layers for Hub kernels
KERNEL_FIELDS = ("use_kernels", "kernel_config")
# What the export asks of transformers, whatever config.json says: its own attention, in float32: SDPA where the
# architecture has it, else its eager attention (MPNet has no SDPA path in transformers 5).
ATTENTION = ("sdpa", "eager")


def _fields_that_load_code(config: Any, where: str = "") -> list[str]:
    """The fields of a config.json (sub-configs included: text_config, ...) that would make transformers load code
    from elsewhere, as 'field = value'."""
    found: list[str] = []
    if not isinstance(config, dict):
        return found
    for key, value in config.items():
        name = f"{where}{key}"
        if key in IMPLEMENTATION_FIELDS:
            values = value.values() if isinstance(value, dict) else [value]
            if any(v is not None and v not in BUILT_IN_IMPLEMENTATIONS for v in values):
                found.append(f"{name} = {json.dumps(value)[:80]}")
        elif key in KERNEL_FIELDS and value:
            found.append(f"{name} = {json.dumps(value)[:80]}")
        elif isinstance(value, dict):
            found.extend(_fields_that_load_code(value, f"{name}."))
    return found


def refuse_code_from_elsewhere(folder: ModelFolder, config: dict) -> None:
    """One line, before transformers reads the folder, for a config.json field that would make it load code from
    elsewhere: an attention or experts implementation that is not one of transformers' own (a Hub kernel
    repository such as ``kernels-community/flash-attn``), or a request for Hub kernels. Defence beyond the version
    pin: the export also names its own attention to transformers, so such a field would not be obeyed, but a model
    folder that asks for foreign code is refused rather than trusted to be ignored. ``config``: its config.json
    (``_read_config``; transformers says what is wrong with a missing or broken one)."""
    path = folder.transformer_path / "config.json"
    found = _fields_that_load_code(config)
    if found:
        raise ModelError(f"{path} asks transformers to load code from elsewhere ({'; '.join(found)}): fasteval runs "
                         "no code from a model's files.",
                         f"delete {'that field' if len(found) == 1 else 'those fields'} from config.json (the "
                         f"export runs transformers' own {' or '.join(ATTENTION)} attention), or pass an already "
                         "exported folder (model.onnx + tokenizer.json).")


def _refuse_custom_code(folder: ModelFolder, config: dict) -> None:
    """One line, before any export starts, for a folder whose architecture exists only as custom code (its
    config.json maps its classes to modules of its own, ``auto_map``, for a model type transformers does not have):
    fasteval runs no remote code. An ``auto_map`` beside a type transformers has (nomic-embed-text's nomic_bert
    since transformers 5) is ignored: transformers' own class runs. The route that works for the rest is a
    server."""
    model_type = config.get("model_type")
    if not model_type or "auto_map" not in config:
        return
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        raise ModelError(f"{folder.path.name} is a {model_type} model, whose architecture is custom code "
                         f"(trust_remote_code) that transformers {installed_version('transformers')} does not have: "
                         "fasteval runs no remote code.",
                         "serve it and pass --model URL: llama.cpp serves its GGUF (llama-server -m MODEL.gguf "
                         "--embeddings --port 8080, then --model http://127.0.0.1:8080/v1).")


# The export's packages (the export extra); transformers below 5.3 is refused (CVE-2026-4372, and no NomicBert).
EXPORT_PACKAGES = ("torch", "transformers", "onnxscript", "onnx")
MIN_TRANSFORMERS = (5, 3)


def _exporter_ready(folder: ModelFolder) -> None:
    """One line saying why the export cannot run here: a package of the export extra is missing, or transformers
    is older than the export supports."""
    missing = [name for name in EXPORT_PACKAGES if installed_version(name) is None]
    if missing:
        raise ModelError(f"{folder.path} has no ONNX file and exporting one needs torch, transformers and "
                         f"onnxscript ({' and '.join(missing)} not installed).",
                         "install the export extra: pip install 'fasteval[export]'.")
    have = installed_version("transformers") or "0"
    numbers = tuple(int(part) if part.isdigit() else 0 for part in have.split(".")[:2])
    if numbers < MIN_TRANSFORMERS:
        raise ModelError(f"transformers {have} is installed; the export needs transformers >= "
                         f"{'.'.join(map(str, MIN_TRANSFORMERS))} (older ones carry CVE-2026-4372 and lack "
                         "architectures of the paper).",
                         "install the export extra again: pip install -U 'fasteval[export]'.")


# loggers of the exporters that speak at INFO/WARNING while they work (torch's, onnxscript's, onnx-ir's)
_EXPORTER_LOGGERS = ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript", "onnx_ir")


@contextlib.contextmanager
def _quiet_exporters():
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


# The export is checked against the torch model it came from before it is kept: the same sample texts through both,
# every real token's hidden state within VALIDATION_ATOL + VALIDATION_RTOL * |torch's value| (np.allclose's rule;
# Optimum's default atol for this task is 1e-4 too). Measured: 2.9e-6 on all-MiniLM-L6-v2, 2e-6 or less on the twins.
VALIDATION_ATOL = 1e-4
VALIDATION_RTOL = 1e-4
VALIDATION_TEXTS = ("2 kilometers", "2000 meters is the same distance, written in another unit", "")


def _load_torch_model(folder: ModelFolder):
    """transformers' own class for the folder's architecture (never code from the folder: trust_remote_code is
    off, and an auto_map beside a native type is ignored), float32, its own attention, in eval mode."""
    import torch
    from transformers import AutoConfig, AutoModel
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    config = AutoConfig.from_pretrained(folder.transformer_path, local_files_only=True, trust_remote_code=False)
    native = MODEL_MAPPING[type(config)] if type(config) in MODEL_MAPPING else None
    attention = ATTENTION[0] if native is None or getattr(native, "_supports_sdpa", False) else ATTENTION[1]
    model = AutoModel.from_pretrained(folder.transformer_path, config=config, local_files_only=True,
                                      trust_remote_code=False, dtype=torch.float32, attn_implementation=attention)
    return model.eval()


def _last_hidden_state(model):
    """(module, input names): ``model`` as forward(input_ids, attention_mask[, token_type_ids]) ->
    last_hidden_state, without a key-value cache for the decoders; token_type_ids where the model has token types."""
    import inspect

    import torch

    parameters = inspect.signature(model.forward).parameters
    extra = {"use_cache": False} if "use_cache" in parameters else {}
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in parameters and getattr(model.config, "type_vocab_size", 0):
        names.append("token_type_ids")

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            types = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **types, **extra,
                              return_dict=True).last_hidden_state

    return LastHiddenState().eval(), names


def _sample_feed(folder: ModelFolder, graph: Path, names: list[str]) -> dict:
    """The validation texts as the encoder will feed them to ``graph``: the folder's tokenizer with its padding side
    and truncation (the encoder's own set-up; no session is opened)."""
    import dataclasses

    import numpy as np

    from .encoder import OnnxEncoder

    encoder = OnnxEncoder(dataclasses.replace(folder, onnx_file=graph, dense=()), provider="cpu")
    encodings = encoder.tokenizer.encode_batch(list(VALIDATION_TEXTS))
    columns = {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
               "token_type_ids": [e.type_ids for e in encodings]}
    return {name: np.asarray(columns[name], dtype=np.int64) for name in names}


# fp32: onnxscript's onnxruntime fusions kept in float32 (attention into onnxruntime's Attention, layer norms with
# their residual adds into SkipLayerNormalization, GELU with its bias): onnxruntime fuses LayerNorm and GELU in a
# dynamo graph itself, never its attention. Measured on all-MiniLM-L6-v2 (6 Attention nodes; 73 nodes at run time
# instead of 249): the paper's strings 1.15-1.27x faster, every Exam 1 cell unchanged on MiniLM and mpnet (whose
# relative-position attention does not fuse). The fused graph must pass the same validation against torch as the
# graph as exported; where the rewriter fails or the fused graph does not validate, the graph stays as exported
# (recorded: ``fp32_fusions.kept``).
FP32_FUSIONS = "onnxscript.rewriter.ort_fusions"


def _fuse_fp32(staging: Path, large: bool, validated: Any) -> dict:
    """Replace ``staging/model.onnx`` by its fused graph (FP32_FUSIONS) when that validates; what was done."""
    import onnx_ir as ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort

    fused_dir = staging / ".fused"
    fused_dir.mkdir()
    try:
        failpoint("export-fusing")
        model, counts = optimize_for_ort(ir.load(str(staging / "model.onnx")))
        ir.save(model, str(fused_dir / "model.onnx"), external_data="model.onnx.data" if large else None)
        worst = validated(fused_dir / "model.onnx")
    except Exception as err:  # noqa: BLE001 - the rewriter raises many types; the graph as exported is kept
        log.info("the fp32 fusions were not applied (%s): the graph stays as exported", first_line(err))
        shutil.rmtree(fused_dir)
        return {"rewriter": FP32_FUSIONS, "kept": "as exported", "why": first_line(err)}
    for item in fused_dir.iterdir():
        os.replace(item, staging / item.name)
    fused_dir.rmdir()
    return {"rewriter": FP32_FUSIONS, "kept": "fused", "fusions": {k: v for k, v in counts.items() if v},
            "max_abs_diff": worst}


class _Phases:
    """Where an export's time goes: each phase's seconds, in order (recorded as ``seconds`` in
    fasteval_export.json; benchmarks/sections/export.py reads them)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._at = time.perf_counter()

    def done(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + now - self._at, 3)
        self._at = now


def _torch_export(folder: ModelFolder, staging: Path, phases: _Phases) -> dict:
    """The transformer of ``folder`` as ``staging/model.onnx`` through torch.onnx.export (dynamo): dynamic batch and
    sequence axes, inputs as the model takes them, output ``last_hidden_state``; weights of a model over 2 GB in
    ``model.onnx.data`` beside it. Validated against the torch model on the sample texts; returns the record."""
    import numpy as np
    import onnxruntime
    import torch

    phases.done("import torch")
    model = _load_torch_model(folder)
    wrapped, names = _last_hidden_state(model)
    feed = _sample_feed(folder, staging / "model.onnx", names)
    inputs = tuple(torch.from_numpy(feed[name]) for name in names)
    phases.done("load the model")
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    program = torch.onnx.export(wrapped, inputs, dynamo=True, verbose=False, input_names=names,
                                output_names=["last_hidden_state"],
                                dynamic_shapes={name: {0: batch, 1: sequence} for name in names})
    assert program is not None  # dynamo=True always returns the program
    phases.done("torch.onnx.export")
    # torch's exporter records each node's stack trace (this file's path and line numbers, the site-packages
    # path) and module path: the same model's bytes, and so its sha256 and every result key, would depend on where
    # fasteval is installed and on edits to this file. The graph without them, the same on every machine.
    from onnx_ir.passes.common import ClearMetadataAndDocStringPass

    ClearMetadataAndDocStringPass()(program.model)
    large = sum(p.numel() * p.element_size() for p in model.parameters()) >= 2 ** 31
    program.save(str(staging / "model.onnx"), external_data=large)
    phases.done("save")
    with torch.no_grad():
        expected = wrapped(*inputs).numpy()
    real = feed["attention_mask"].astype(bool)  # padding positions are pooled away; decoders leave them free

    def validated(graph: Path) -> float:
        """The largest difference of ``graph``'s real tokens from torch's; ModelError past the tolerance."""
        session = onnxruntime.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
        got = session.run(["last_hidden_state"], feed)[0]
        refused = (f"The ONNX export of {folder.path.name} does not compute what the torch model computes",
                   "report the model's architecture, or pass an already exported folder (model.onnx + "
                   "tokenizer.json).")
        if got.shape != expected.shape:
            raise ModelError(f"{refused[0]} (it returns {got.shape} for {expected.shape}).", refused[1])
        # NaN where torch has NaN too is the model's own (the encoder names it), not the export's
        agree = np.isclose(got[real], expected[real], rtol=VALIDATION_RTOL, atol=VALIDATION_ATOL, equal_nan=True)
        finite = np.isfinite(got[real]) & np.isfinite(expected[real])
        worst = float(np.abs(got[real] - expected[real])[finite].max(initial=0.0))
        if not agree.all():
            raise ModelError(f"{refused[0]} (largest difference {worst:.3g} on real tokens, allowed "
                             f"{VALIDATION_ATOL:g} + {VALIDATION_RTOL:g} x |value|).", refused[1])
        return worst

    worst = validated(staging / "model.onnx")
    phases.done("validate")
    fused = _fuse_fp32(staging, large, validated)
    phases.done("fuse and validate")
    if isinstance(fused.get("max_abs_diff"), float):
        worst = fused.pop("max_abs_diff")
    opset = next((e.version for e in program.model_proto.opset_import if e.domain in ("", "ai.onnx")), None)
    return {"exporter": "torch.onnx (dynamo)", "opset": opset, "inputs": names,
            "attention": getattr(model.config, "_attn_implementation", None), "fp32_fusions": fused,
            "validation": {"texts": len(VALIDATION_TEXTS), "max_abs_diff": worst, "atol": VALIDATION_ATOL,
                           "rtol": VALIDATION_RTOL},
            **{name: installed_version(name) for name in EXPORT_PACKAGES}}


def export(folder: ModelFolder, cache_root: Path, dtype: str = "fp32", out: Path | None = None) -> Path:
    """Return the exported folder for ``folder``, exporting it first unless that export exists.

    The export goes to ``out`` when given, else to the cache (``cache_root/onnx/<source hash>-<dtype>``). It is
    staged in a temporary folder beside the destination and renamed into place: a failed or interrupted export
    leaves nothing behind. int8 and fp16 are made from the fp32 export by onnxruntime (``derive``). A folder that
    already holds ``model.onnx`` is returned as it is; so is a cached export of the same source made by an earlier
    exporter (Optimum, before fasteval's export moved to torch.onnx): its graph computes the same model.
    """
    if folder.onnx_file is not None:
        return folder.path
    check_choice(dtype, DTYPES, "dtype", "--dtype")
    if dtype != "fp32":
        return derive(export(folder, cache_root, "fp32"), folder, cache_root, dtype, out)
    source_hash = content_hash(folder.path)
    dest = Path(out).expanduser().resolve() if out is not None else export_dir(cache_root, source_hash, dtype)
    if out is not None and _copied_from_cache(export_dir(cache_root, source_hash, dtype), dest, source_hash, dtype):
        return dest
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
    config = _read_config(folder)
    refuse_code_from_elsewhere(folder, config)
    _refuse_custom_code(folder, config)
    _exporter_ready(folder)
    check_depth(folder.transformer_path, config)  # before torch builds anything (the snapshot must hash the same)
    read_tokenizer(folder.tokenizer_file)
    log.info("exporting %s to ONNX (%s) with torch.onnx, once; written to %s", folder.path.name, dtype, dest)
    started = time.perf_counter()
    phases = _Phases()
    if dest.exists():
        if out is None:  # another process finished this very export meanwhile (a shared cache): take it
            return export(folder, cache_root, dtype)
        dest.rmdir()  # an empty --out folder: the staged export takes its place
    with staged_folder(dest, replace=False, what="the ONNX export") as staging:
        try:
            # the export reads its own copy of what was hashed: a folder that changes meanwhile (an editor's save, a
            # git checkout, a re-download) cannot put another model's graph under this hash
            source = _snapshot(folder, source_hash, staging / ".source")
            phases.done("copy the source")
            failpoint("export-reading")
            weights = source.transformer_path
            if (weights / "pytorch_model.bin").exists() and not (weights / "model.safetensors").exists():
                _safe_torch_load(weights / "pytorch_model.bin")  # a refused pickle: one line, not a trace
            with _quiet_exporters():
                record = _torch_export(source, staging, phases)
            _copy_st_files(source, staging)
            shutil.rmtree(staging / ".source")
        except FastevalError:
            raise
        except Exception as err:  # torch and transformers raise many types; the user needs one line.
            if isinstance(err, OSError) and err.errno == errno.ENOSPC:
                raise OutputError(f"No space left on the device of {dest.parent} while exporting "
                                  f"{folder.path.name}.", "free disk space, or set FASTEVAL_HOME (or --out) to a "
                                  "folder on a larger disk.") from None
            raise ModelError(f"torch.onnx could not export {folder.path.name} to ONNX: {first_line(err)}",
                             "check that transformers supports the architecture, or pass an already exported "
                             "folder (model.onnx + tokenizer.json).") from None
        info = {"format": EXPORT_FORMAT, "source": str(folder.path), "source_sha256": source_hash,
                "dtype": dtype, **record, "onnx_sha256": sha256_of_file(staging / "model.onnx")}
        phases.done("configs and hash")
        info["seconds"] = phases.seconds
        (staging / "fasteval_export.json").write_text(json.dumps(info, indent=2))
    log.info("exported %s in %.1f s (once: later runs read the cached export)", folder.path.name,
             time.perf_counter() - started)
    return dest


def _copied_from_cache(cached: Path, dest: Path, source_hash: str, dtype: str, recipe: Any = None) -> bool:
    """Whether an intact cache entry of this very export (the same source hash and dtype, the graph its recorded
    sha256, the same recipe for a derived one) was copied to ``dest``, an absent or empty ``--out`` folder: an
    export the cache holds is never made again."""
    info = export_info(cached)
    if not _intact(cached, info, source_hash, dtype) or (recipe is not None and _recipe(info) != recipe):
        return False
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        return False  # the caller says what is wrong with a folder that is in the way
    if dest.exists():
        dest.rmdir()
    with staged_folder(dest, replace=False, what=f"the {dtype} export") as staging:
        shutil.copytree(cached, staging, dirs_exist_ok=True)
    log.info("copied the cached %s export to %s (made once, from the same files)", dtype, dest)
    return True


def _intact(dest: Path, info: dict, source_hash: str, dtype: str) -> bool:
    """Whether ``dest`` holds this export whole: its record names the source hash and dtype, and its graph is the
    one the record's sha256 names."""
    return (info.get("source_sha256") == source_hash and info.get("dtype") == dtype
            and (dest / "model.onnx").exists() and info.get("onnx_sha256") in (None, file_hash(dest / "model.onnx")))


def _recipe(info: dict) -> tuple[Any, Any]:
    """The recipe a derived export was made with (older records called int8's ``quantization``) and the fp32 graph it
    was made from (its sha256)."""
    return info.get("recipe", info.get("quantization")), info.get("made_from")


def _snapshot(folder: ModelFolder, source_hash: str, target: Path) -> ModelFolder:
    """``folder`` copied to ``target`` (every file the content hash covers), checked to hash to ``source_hash``
    (the key the export is kept under), as a ModelFolder there. One line when the folder changed since it was
    hashed."""
    from ..sources.folder import files_of, tree_hash

    for rel, file in files_of(folder.path):
        copy = target / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, copy)
    if tree_hash(target) != source_hash:
        raise ModelError(f"{folder.path} changed while fasteval read it for the export (its files no longer hash "
                         "to what they hashed to a moment before).",
                         "let whatever writes to the folder (an editor, a download, a git checkout) finish, then "
                         "run again.")
    root = os.path.abspath(folder.path)  # lexically: a file may be a link into a Hub cache's blobs

    def moved(path: Path) -> Path:
        return target / os.path.relpath(os.path.abspath(path), root)

    return dataclasses.replace(folder, path=target, transformer_path=moved(folder.transformer_path),
                               tokenizer_file=moved(folder.tokenizer_file))


def _read_config(folder: ModelFolder) -> dict:
    """config.json, bounded and parsed ({} where there is none: transformers says what is missing)."""
    path = folder.transformer_path / "config.json"
    config = read_json_file(path) if path.exists() else {}
    return config if isinstance(config, dict) else {}


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
    if out is not None and _copied_from_cache(export_dir(cache_root, source_hash, dtype), dest, source_hash, dtype,
                                              made):
        return dest
    info = export_info(dest)
    intact = _intact(dest, info, source_hash, dtype)
    if intact and _recipe(info) == made:
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
