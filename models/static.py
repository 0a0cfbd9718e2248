"""Static embedding models (a token table looked up and averaged, no transformer), embedded by model2vec itself.

A static model's folder is model2vec's (``config.json`` with model2vec's fields, ``model.safetensors`` holding
``embeddings`` - plain, or vocabulary-quantized with ``mapping`` and ``weights`` -, ``tokenizer.json``: potion,
static-retrieval-mrl saved by model2vec) or a sentence-transformers folder whose one module is a ``StaticEmbedding``.
It has nothing to export: ``StaticEncoder`` runs model2vec's ``StaticModel.encode`` on it (the ``static`` extra:
numpy, tokenizers, safetensors; never torch), so its vectors are model2vec's own, which the protocol then normalises
as it normalises every model's. Its result key names what ran: the folder's content hash (the table) and model2vec's
version.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ModelError
from .sources.bounds import read_json_file, read_tokenizer, safetensors_header

if TYPE_CHECKING:
    import numpy as np

# config.json fields of model2vec's own format (any one marks the folder, beside its table and tokenizer)
MODEL2VEC_FIELDS = ("normalize", "embedding_dtype", "vocabulary_quantization", "hidden_dim", "apply_pca",
                    "tokenizer_name", "apply_zipf", "sif_coefficient")
STATIC_MODULE = "StaticEmbedding"  # a sentence-transformers module of one token table
# the table's tensor names: model2vec's, sentence-transformers' StaticEmbedding's
TABLE_TENSORS = ("embeddings", "embedding.weight")


def is_static_folder(path: str | Path) -> bool:
    """Whether ``path`` is a static model's folder (cheap: its configs and the safetensors header's names, no table
    read): model2vec's layout, or a sentence-transformers folder whose modules are a StaticEmbedding (and a
    Normalize)."""
    folder = Path(path).expanduser()
    table, tokenizer = folder / "model.safetensors", folder / "tokenizer.json"
    if not (folder.is_dir() and table.is_file() and tokenizer.is_file()):
        return False
    modules = folder / "modules.json"
    try:
        if modules.is_file():  # sentence-transformers' (model2vec writes one too): a StaticEmbedding [, Normalize]
            listed = read_json_file(modules)
            entries = listed if isinstance(listed, list) else []
            kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] if isinstance(m, dict) else "" for m in entries]
            return bool(kinds) and kinds[0] == STATIC_MODULE and all(k == "Normalize" for k in kinds[1:])
        config = read_json_file(folder / "config.json") if (folder / "config.json").is_file() else None
        if not isinstance(config, dict) or config.get("model_type") not in (None, "model2vec"):
            return False  # a transformer's config.json names its model type
        return bool(set(config) & set(MODEL2VEC_FIELDS)) and any(t in safetensors_header(table)
                                                                 for t in TABLE_TENSORS)
    except ModelError:
        return False  # a broken folder is said by whoever loads it as what it claims to be


class StaticEncoder:
    """A static model as a fasteval encoder: ``encode(list[str]) -> float32 (n, dim)``, model2vec's own vectors."""

    def __init__(self, folder: str | Path, *, name: str | None = None, batch_size: int = 1024, prompt: str = ""):
        try:
            import model2vec
            from model2vec import StaticModel
        except ImportError:
            raise ModelError(f"{folder} is a static embedding model, which model2vec embeds, and model2vec is not "
                             "installed.", "install the static extra: pip install 'fasteval[static]'.") from None
        self.folder = Path(folder).expanduser()
        self.name = name or self.folder.name
        self.prompt = str(prompt or "")
        self.batch_size = int(batch_size)
        from .sources.folder import content_hash

        # what the key names is what model2vec reads: hashed before, and again after (remembered by the files'
        # stat signatures, so the second costs a stat a file unless a file changed meanwhile)
        self._source_sha256 = content_hash(self.folder)
        try:
            self.model = StaticModel.from_pretrained(str(self.folder), force_download=False)
        except Exception as err:  # noqa: BLE001 - model2vec and safetensors raise many types
            from ..core.errors import first_line

            raise ModelError(f"model2vec cannot read the static model {self.folder}: {first_line(err, 120)}.",
                             "repair or re-download the model folder.") from None
        self.tokenizer_ids = read_tokenizer(self.folder / "tokenizer.json")  # Exam 2's token ids, unpadded
        self.tokenizer_ids.no_padding()
        self.tokenizer_ids.no_truncation()
        if content_hash(self.folder) != self._source_sha256:
            raise ModelError(f"{self.folder} changed while fasteval read it (its files no longer hash to what they "
                             "hashed to a moment before).", "let whatever writes to the folder finish, then run again.")
        self._model2vec = model2vec.__version__

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    @property
    def info(self) -> dict[str, Any]:
        """What changes its vectors: the table (the folder's content hash), model2vec's version, its normalisation
        and maximum length, the prompt."""
        return {"model": self.name, "source": str(self.folder), "kind": "static", "source_sha256":
                self._source_sha256, "model2vec": self._model2vec, "normalize": bool(self.model.normalize),
                "max_length": self.model.max_length, "embedding_dtype": str(self.model.embedding_dtype),
                "vocabulary_quantization": self.model.vocabulary_quantization, "prompt": self.prompt}

    def encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        texts = [self.prompt + t for t in texts] if self.prompt else list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # one process: the sweep's calls are small, and model2vec's pool would only cost its start
        vectors = self.model.encode(texts, batch_size=self.batch_size, use_multiprocessing=False)
        return np.asarray(vectors, dtype=np.float32)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The tokenizer's ids without special tokens (Exam 2's token Levenshtein)."""
        return [list(e.ids) for e in self.tokenizer_ids.encode_batch(list(texts), add_special_tokens=False)]
