"""What the export refuses before transformers reads a model folder: code from elsewhere (a config.json that asks for
a Hub kernel or an implementation that is not transformers' own), an architecture that exists only as custom code
(``trust_remote_code``), and a pickle torch will not load safely. fasteval runs no code from a model's files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...core.errors import ModelError, first_line
from .. import installed_version
from ..sources.bounds import read_json_file
from ..sources.folder import ModelFolder


def read_config(folder: ModelFolder) -> dict:
    """config.json, bounded and parsed ({} where there is none: transformers says what is missing)."""
    path = folder.transformer_path / "config.json"
    config = read_json_file(path) if path.exists() else {}
    return config if isinstance(config, dict) else {}


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
    (``read_config``; transformers says what is wrong with a missing or broken one)."""
    path = folder.transformer_path / "config.json"
    found = _fields_that_load_code(config)
    if found:
        raise ModelError(f"{path} asks transformers to load code from elsewhere ({'; '.join(found)}): fasteval runs "
                         "no code from a model's files.",
                         f"delete {'that field' if len(found) == 1 else 'those fields'} from config.json (the "
                         f"export runs transformers' own {' or '.join(ATTENTION)} attention), or pass an already "
                         "exported folder (model.onnx + tokenizer.json).")


def refuse_custom_code(folder: ModelFolder, config: dict) -> None:
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


def safe_torch_load(path: Path):
    """A pytorch_model.bin as torch loads it safely (weights_only); one line when it is a pickle torch refuses
    (transformers then tried TensorFlow and printed 'No module named tensorflow')."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - UnpicklingError, RuntimeError, ...
        raise ModelError(f"torch will not load {path} safely (weights_only): {first_line(err, 120)}",
                         "convert the weights to model.safetensors with a trusted copy of the model, or pass an "
                         "already exported folder (model.onnx + tokenizer.json).") from None
