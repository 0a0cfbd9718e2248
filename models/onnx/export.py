"""Export a model folder to ONNX with torch.onnx (the dynamo exporter), once, cached by the source's content hash.

The exported folder is self-contained for evaluation without torch: ``model.onnx`` (the transformer, output
``last_hidden_state``), the source's own ``tokenizer.json`` and sentence-transformers configs (pooling,
Normalize, max length, prompts), Dense weights as ``.npz``, and ``fasteval_export.json`` (what it came from).
"""
from __future__ import annotations

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
from ..sources.bounds import check_depth, read_tokenizer
from ..sources.folder import ModelFolder, content_hash, file_hash, load_folder, sha256_of_file
from ..sources.registry import export_dir
from .cached import copied_from_cache, discard, export_info
from .code_safety import ATTENTION, read_config, refuse_code_from_elsewhere, refuse_custom_code, safe_torch_load
from .derive import derive, quiet_exporters

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
        state = safe_torch_load(src / "pytorch_model.bin")
    else:
        raise ModelError(f"Dense module {src} has no weights.", "pass a complete sentence-transformers folder.")
    try:
        arrays = {k.removeprefix("linear."): v.float().numpy() for k, v in state.items()}
    except (AttributeError, TypeError, RuntimeError):
        raise ModelError(f"The Dense weights in {src} are not tensors.",
                         "repair or re-download the model folder.") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez(target, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as its allow_pickle


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
    if out is not None and copied_from_cache(export_dir(cache_root, source_hash, dtype), dest, source_hash, dtype):
        return dest
    info = export_info(dest)
    if info.get("source_sha256") == source_hash and info.get("dtype") == dtype and (dest / "model.onnx").exists():
        if info.get("onnx_sha256") in (None, file_hash(dest / "model.onnx")):
            return dest
        if out is not None:
            raise ModelError(f"{dest / 'model.onnx'} does not match the sha256 its export recorded.",
                             "delete that folder and export again.")
        warn_rebuilt("ONNX export", dest, "model.onnx does not match its recorded sha256")
        discard(dest)
    elif out is None and (dest.exists() or dest.is_symlink()):  # an unfinished or damaged cache entry
        warn_rebuilt("ONNX export", dest, "no readable fasteval_export.json" if dest.is_dir() else "not a folder")
        discard(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ModelError(f"{dest} exists and is not an empty folder.",
                         "pass a new --out folder, or delete that one.")
    failpoint("export-checked")
    config = read_config(folder)
    refuse_code_from_elsewhere(folder, config)
    refuse_custom_code(folder, config)
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
                safe_torch_load(weights / "pytorch_model.bin")  # a refused pickle: one line, not a trace
            with quiet_exporters():
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


def load_export(path: Path) -> ModelFolder:
    folder = load_folder(path)
    if folder.onnx_file is None:
        raise ModelError(f"No model.onnx in {path}.", "export it first: fasteval export PATH.")
    return folder
