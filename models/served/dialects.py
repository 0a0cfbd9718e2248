"""What each kind of server says beyond OpenAI's ``/embeddings`` and ``/models``, one record a server: where it
describes itself and how its ``/tokenize`` is asked and answers. A new server is one record in ``DIALECTS``.

The routes of a server's own (``/info``, ``/tokenize``) are tried at the base URL and at its root when the base
ends in ``/v1`` (``Endpoint.roots``)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# /models fields that change without the deployment changing (infinity's queue stats, start times, vLLM's
# permission ids): left out of the identity, so they never change a key.
VOLATILE_MODEL_FIELDS = frozenset({"created", "stats", "permission"})


@dataclass(frozen=True)
class Dialect:
    name: str
    # GET route that describes the deployment, and whether an answer is this dialect's (None: no such route)
    info_route: str | None = None
    is_info: Callable[[Any], bool] = lambda body: False
    # /tokenize: the request body (texts or one text, model), the ids of an answer, and whether it takes a batch
    tokenize_body: Callable[[Any, str], Any] | None = None
    tokenize_ids: Callable[[Any], list] | None = None
    tokenize_batched: bool = False


def _tei_ids(body) -> list[list[int]]:
    """TEI's answer: one list of token records a text. Any other shape (llama.cpp answers a TEI-shaped request with
    its own {"tokens": [...]}) is a ValueError, so that the next dialect is tried."""
    if not isinstance(body, list) or not all(isinstance(row, list) and all(isinstance(t, dict) for t in row)
                                             for row in body):
        raise ValueError("not TEI's /tokenize answer")
    return [[int(t["id"]) for t in row if not t.get("special")] for row in body]


def _single_ids(body) -> list[int]:
    if not isinstance(body, dict) or not isinstance(body.get("tokens"), list):
        raise ValueError("no token list in the /tokenize answer")
    return [int(i) for i in body["tokens"]]


def _vllm_ids(body) -> list[int]:
    """vLLM's answer carries its count (and max_model_len); llama.cpp answers a body without "content" with an
    empty {"tokens": []}, which must not pass for vLLM's."""
    if not isinstance(body, dict) or not isinstance(body.get("count"), int):
        raise ValueError("not vLLM's /tokenize answer")
    return _single_ids(body)


DIALECTS: tuple[Dialect, ...] = (
    # Hugging Face text-embeddings-inference: /info (model id and sha, dtype, version), a batched /tokenize
    Dialect("tei", "/info", lambda b: isinstance(b, dict) and ("model_id" in b or "model_sha" in b),
            lambda texts, model: {"inputs": texts, "add_special_tokens": False}, _tei_ids, True),
    # vLLM: its /models entry carries max_model_len; /tokenize one text
    Dialect("vllm", None, lambda b: False,
            lambda text, model: {"model": model, "prompt": text, "add_special_tokens": False}, _vllm_ids),
    # llama.cpp's server: /tokenize one text (its /models entry carries "meta")
    Dialect("llama.cpp", None, lambda b: False,
            lambda text, model: {"content": text, "add_special": False}, _single_ids),
)


def model_entry_identity(entry: dict) -> dict:
    """A /models entry less its volatile fields."""
    return {k: v for k, v in entry.items() if k not in VOLATILE_MODEL_FIELDS}
