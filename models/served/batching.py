"""Batch adaptation: what to do when a server refuses a batch.

* A 413, or a 400/422 that a smaller batch cures, splits the batch in two; after a 413 the smaller size is kept
  for the rest of the run (the server said the request was too large). The size a server forced is not a
  setting: it never enters a key.
* A refusal of one text that is too long for the model (``transport.too_long``: vLLM's "maximum context length",
  llama.cpp's "larger than the max context size" or, with HTTP 500, "too large to process", TEI's "must have less
  than N tokens") is isolated by splitting, reported by name (``InputRefused``), and changes nothing for the
  other texts or the batch size.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ...core.errors import InputRefusedError, ModelError
from .transport import Refused, too_long

log = logging.getLogger(__name__)

SPLIT_STATUSES = frozenset({400, 413, 422})


class InputRefused(InputRefusedError):
    """The server refuses one text (too long for the model), by name; the run's other texts are unaffected."""

    def __init__(self, shown: str, text: str, message: str):
        super().__init__(f"{shown} refuses the input {text[:60]!r} ({len(text)} characters): {message[:160]}",
                         "the model takes shorter inputs there; the reference may truncate where this server refuses.",
                         text=text, message=message)


class Batcher:
    """Sends texts in batches of at most ``limit`` (``batch_size``, lowered only by a 413)."""

    def __init__(self, batch_size: int, usage):
        self.batch_size = self.limit = int(batch_size)
        self.usage = usage

    def batches(self, texts: list[str]) -> list[list[str]]:
        return [texts[i:i + self.limit] for i in range(0, len(texts), self.limit)]

    def embed(self, batch: list[str], send: Callable[[list[str]], np.ndarray], shown: str) -> np.ndarray:
        """``send(batch)``'s rows, splitting what the server refuses for its size; InputRefused for one text the
        server refuses as too long; ModelError for any other refusal."""
        try:
            return send(batch)
        except Refused as err:
            if err.status not in SPLIT_STATUSES and not too_long(err.message):
                raise refused(shown, err) from None
            if len(batch) == 1:
                if too_long(err.message):
                    raise InputRefused(shown, batch[0], err.message) from None
                raise refused(shown, err) from None
            half = (len(batch) + 1) // 2
            self.usage.add(split_batches=1)
            if err.status == 413 and half < self.limit:
                self.limit = half
                log.info("%s refused %d texts in one request (HTTP 413); sending at most %d", shown, len(batch),
                         half)
            return np.concatenate([self.embed(batch[:half], send, shown), self.embed(batch[half:], send, shown)])


def refused(shown: str, err: Refused) -> ModelError:
    """A refusal no smaller batch cures, as one line."""
    return ModelError(f"{shown} refused the request (HTTP {err.status}: {err.message[:160]}).",
                      "check the model name (#MODEL) and the server's limits (input length, batch size).")
