"""One call from a model name or folder to a ready encoder: fetch (registry) -> export (cached) -> session."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.choices import BATCHINGS, is_url, public_model
from ..core.errors import ModelError
from .onnx.encoder import OnnxEncoder
from .onnx.cached import export_info
from .onnx.export import export, load_export
from .sources.folder import content_hash, ModelFolder, file_hash, load_folder
from .sources.home import usable_home
from .sources.needs import require_fits
from ..core.io import fasteval_home
from .sources.registry import DEFAULT_MODEL, find_spec, source_folder, spec_for_served

if TYPE_CHECKING:
    from .served import ServedEncoder
    from .static import StaticEncoder

log = logging.getLogger(__name__)


def resolve_prompt(folder: ModelFolder, prompt: str | None, prompt_name: str | None) -> tuple[str, str]:
    """(prompt text, prompt name) to prepend to every text; ("", "") by default, as in the paper.

    ``prompt_name`` is looked up in the folder's config_sentence_transformers.json ``prompts``. A folder's
    ``default_prompt_name`` is never applied implicitly (the paper passed no prompt): pass it by name.
    """
    if prompt is not None and prompt_name is not None:
        raise ModelError("Both a prompt and a prompt name were given.", "pass --prompt TEXT or --prompt-name NAME.")
    if prompt_name is not None:
        if prompt_name not in folder.prompts:
            known = ", ".join(repr(k) for k in folder.prompts) or "none"
            raise ModelError(f"{folder.path.name} has no prompt named {prompt_name!r} (its prompts: {known}).",
                             "pass one of its prompt names, or the text itself with --prompt.")
        return folder.prompts[prompt_name], prompt_name
    return prompt or "", ""


def load_model(name: str = DEFAULT_MODEL, *, provider: str = "auto", dtype: str = "fp32", batch_size: int = 32,
               threads: int | None = None, order: str = "text-length", prompt: str | None = None,
               prompt_name: str | None = None, batching: str = BATCHINGS[0],
               served: dict | None = None) -> OnnxEncoder | ServedEncoder | StaticEncoder:
    """An encoder for a registry name, a model folder, a Hugging Face id, or a served model's URL.

    A local model is an OnnxEncoder named for it and knowing its source and ONNX hashes (its ``.info`` holds
    every setting that changes an embedding); ``prompt`` / ``prompt_name`` as in sentence-transformers'
    ``encode``, none by default. ``URL[#MODEL]`` is a ServedEncoder (``fasteval.models.served``) with
    ``batch_size`` and the client options in ``served`` (``api_key_env``, ``concurrency``, ``timeout``,
    ``retries``, ``tokenizer``; local models ignore them)."""
    if is_url(name):
        from .served import ServedEncoder

        if dtype != "fp32" or prompt_name or batching != BATCHINGS[0]:
            raise ModelError(f"--dtype, --prompt-name and --batching are the server's business for "
                             f"{public_model(name)}.",
                             "leave them at their defaults for a served model (its precision is the deployment's; "
                             "give a prompt as text with --prompt).")
        encoder = ServedEncoder(name, batch_size=batch_size, prompt=prompt or "", **(served or {}))
        spec = spec_for_served(encoder.model)
        if spec is not None and spec.prompts and not prompt:
            log.info("note: %s is %s in the registry, whose card recommends prompts (%s); the server is sent the "
                     "texts as they are (the paper passed none): pass --prompt TEXT to send one", encoder.name,
                     spec.name, spec.prompts)
        return encoder
    usable_home()
    require_fits(name, dtype)  # a model whose export cannot fit this machine is refused before its download
    display, src = source_folder(name)
    from .static import StaticEncoder, is_static_folder

    if is_static_folder(src):  # a token table: model2vec embeds it; nothing to export
        if dtype != "fp32" or prompt_name or batching != BATCHINGS[0]:
            raise ModelError(f"{display} is a static embedding model: --dtype, --prompt-name and --batching do not "
                             "apply (model2vec embeds its table as it is).",
                             "leave them at their defaults; give a prompt as text with --prompt.")
        return StaticEncoder(src, name=display, prompt=prompt or "")
    folder = load_folder(src)
    prompt_text, prompt_key = resolve_prompt(folder, prompt, prompt_name)
    if folder.prompts and not prompt_text and not prompt_key:
        default = (f", default_prompt_name {folder.default_prompt_name!r}" if folder.default_prompt_name else "")
        log.info("note: %s configures prompts (%s%s); the paper passed none, so none is used (pick one with "
                 "--prompt-name NAME, or any text with --prompt).", display, ", ".join(folder.prompts), default)
    spec = find_spec(name)
    if spec is not None and spec.pooling and spec.pooling != folder.pooling.name:
        log.warning("the registry lists %s pooling for %s, its folder says %s; using the folder's.", spec.pooling,
                    display, folder.pooling.name)
    exported = load_export(export(folder, fasteval_home(), dtype=dtype))
    assert exported.onnx_file is not None  # load_export refuses a folder without one
    exported_info = export_info(exported.path)
    identity = {
        "model": display,
        "source": str(src),
        # weights, tokenizer and configs; a folder that is already an export is hashed as it is (its tokenizer
        # files changed after the export are another model), a source folder by its record at export
        "source_sha256": content_hash(src) if folder.onnx_file is not None
        else (exported_info.get("source_sha256") or content_hash(src)),
        "onnx_sha256": file_hash(exported.onnx_file),
        "dtype": exported_info.get("dtype", dtype),  # an already exported folder says its own
    }
    return OnnxEncoder(exported, provider=provider, batch_size=batch_size, threads=threads, order=order,
                       prompt=prompt_text, prompt_name=prompt_key, batching=batching, name=display,
                       identity=identity)


def model_folder(name: str) -> Path:
    """The local folder of a registry name, a model folder or a Hugging Face id (fetched once and cached, as
    ``load_model`` fetches it): the same weights, for sentence-transformers or a trainer."""
    return source_folder(name)[1]


def export_model(name: str, *, out=None, dtype: str = "fp32"):
    """Export a registry name, model folder or Hugging Face id to ONNX (``out``, default the cache); the path.

    The exported folder holds model.onnx, tokenizer.json, the sentence-transformers configs and the Dense
    weights as npz: everything the encoder needs, without torch.
    """
    _, src = source_folder(name)
    return export(load_folder(src), fasteval_home(), dtype=dtype, out=out)
