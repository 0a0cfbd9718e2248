"""The one door for every encoder: whatever a user hands fasteval becomes one encoder that owns its name and
``info`` (the contract is in ``fasteval.core.embeddings``).

``ENCODER_KINDS`` is the one list of what fasteval embeds with, tried in order; the first kind that recognises
the value builds the encoder. Every public entry point (``fasteval.evaluate``, ``check``, ``drift``, the
sweep, the CLI) goes through ``as_encoder``, so a kind added here works everywhere at once.

A name or a folder is loaded by ``fasteval.models`` (fetch, export, an onnxruntime session; a URL is a
served model); an object is adapted as it is. Nothing here is imported before it is needed.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .choices import is_url
from .embeddings import follows_mteb_protocol
from .errors import InputError


@dataclass(frozen=True)
class EncoderKind:
    name: str
    what: str  # what a user hands fasteval, in the words of `fasteval --help` and the README
    matches: Callable[[Any], bool]
    build: Callable[..., Any]  # (value, **load options) -> encoder; load options apply to names and folders


def _is_receipt(value: Any) -> bool:
    from ..models.adapters.receipt import is_receipt

    return is_receipt(value)


def _receipt(value: Any, **_options: Any) -> Any:
    from ..models.adapters.receipt import ReceiptEncoder

    return ReceiptEncoder(value)


def _is_export(value: Any) -> bool:
    return isinstance(value, (str, Path)) and (Path(value).expanduser() / "model.onnx").is_file()


def _is_static(value: Any) -> bool:
    if not isinstance(value, (str, Path)) or is_url(value):
        return False
    from ..models.static import is_static_folder

    return is_static_folder(value)


def _is_name_or_folder(value: Any) -> bool:
    return isinstance(value, (str, Path))


def _load(value: Any, **options: Any) -> Any:
    from ..models.loader import load_model

    if not is_url(value) and Path(value).expanduser().is_file():  # a receipt would have been taken before
        raise InputError(f"{value} is a file, neither a receipt nor a model folder.",
                         "pass a model folder, a name, a URL, or a receipt written by fasteval drift --save-receipt.")
    return load_model(str(value), **options)


def _is_own(value: Any) -> bool:
    """An encoder fasteval built (OnnxEncoder, ServedEncoder, MtebEncoder): it knows its name and settings."""
    return type(value).__module__.startswith(__name__.rpartition(".core")[0] + ".") and callable(
        getattr(value, "encode", None))


def _mteb(value: Any, **_options: Any) -> Any:
    from ..models.adapters.mteb import MtebEncoder

    return MtebEncoder(value)


def _is_sentence_transformer(value: Any) -> bool:
    return any(c.__name__ == "SentenceTransformer" and c.__module__.startswith("sentence_transformers")
               for c in type(value).__mro__)


def _has_encode(value: Any) -> bool:
    return callable(getattr(value, "encode", None))


def _itself(value: Any, **_options: Any) -> Any:
    return value


ENCODER_KINDS: tuple[EncoderKind, ...] = (
    EncoderKind("served", "an OpenAI-compatible server, URL[#MODEL]", is_url, _load),
    # a file that begins as a zip: drift's recorded reference (fasteval drift --save-receipt), whatever its name
    EncoderKind("receipt", "a receipt file (fasteval drift --save-receipt)", _is_receipt, _receipt),
    # a token table (model2vec's folder, or sentence-transformers' StaticEmbedding): model2vec embeds it
    EncoderKind("static", "a static embedding model's folder (model2vec: potion, static-retrieval-mrl)", _is_static,
                _load),
    EncoderKind("export", "a folder that already holds model.onnx and tokenizer.json", _is_export, _load),
    EncoderKind("folder", "a registry name, a sentence-transformers or Hugging Face folder", _is_name_or_folder,
                _load),
    EncoderKind("fasteval", "an encoder fasteval built (load_model, MtebEncoder)", _is_own, _itself),
    EncoderKind("mteb", "an MTEB model (encode(DataLoader, task_metadata=...))", follows_mteb_protocol, _mteb),
    # its encode(list[str]) is the paper's own call; its tokenizer gives Exam 2 the model's token ids
    EncoderKind("sentence-transformers", "a sentence-transformers model", _is_sentence_transformer, _itself),
    EncoderKind("encode", "any object with encode(list[str]) -> array (n, dim)", _has_encode, _itself),
)


def kind_of(value: Any) -> EncoderKind:
    """The first kind that recognises ``value``; InputError naming the kinds when none does."""
    for kind in ENCODER_KINDS:
        if kind.matches(value):
            return kind
    raise InputError(f"{type(value).__name__} is not something fasteval can embed with.",
                     "pass " + "; ".join(k.what for k in ENCODER_KINDS) + ".")


def as_encoder(value: Any, **options: Any) -> Any:
    """``value`` as a fasteval encoder (see ``ENCODER_KINDS``); ``options`` are ``load_model``'s, for names,
    folders and URLs."""
    return kind_of(value).build(value, **options)
