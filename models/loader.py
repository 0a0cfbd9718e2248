"""One call from a model name or folder to a ready encoder: fetch (registry) -> export (cached) -> session."""
from __future__ import annotations

from fasteval.models.encoder import OnnxEncoder
from fasteval.models.export import export, load_export
from fasteval.models.folder import file_hash, load_folder
from fasteval.models.registry import DEFAULT_MODEL, fasteval_home, source_folder


def load_model(name: str = DEFAULT_MODEL, *, provider: str = "auto", dtype: str = "fp32", batch_size: int = 32,
               threads: int | None = None, order: str = "text-length", prompt: str | None = None,
               quiet: bool = False) -> OnnxEncoder:
    """An OnnxEncoder for a registry name or a model folder, with ``.name`` and ``.info`` (the settings that
    change an embedding: source and ONNX hashes, provider, dtype, pooling, normalisation, prompt)."""
    display, src = source_folder(name, quiet=quiet)
    folder = load_folder(src)
    exported = load_export(export(folder, fasteval_home(), dtype=dtype, quiet=quiet))
    encoder = OnnxEncoder(exported, provider=provider, batch_size=batch_size, threads=threads, order=order,
                          prompt=prompt, quiet=quiet)
    encoder.name = display
    encoder.info = {
        "model": display,
        "source": str(src),
        "onnx_sha256": file_hash(exported.onnx_file),
        "provider": encoder.provider,
        "dtype": dtype,
        "batch_size": batch_size,
        "batch_order": order,
        "prompt": prompt or "",
        **exported.settings(),
    }
    return encoder
