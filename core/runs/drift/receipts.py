"""Receipts: drift's texts embedded with a reference, written to a file a CI job with no weights gates against
(``save_receipt``; the file format and its reader are ``fasteval.models.adapters.receipt``, which the one door takes
as a reference). Where the reference can run as its usual misconfigurations, the receipt also holds their vectors
of a fixed subset of the texts (``checks.diagnosis.record_variants``), so drift against it names what a drifting
candidate embeds like, as against the folder."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...embeddings import Variants, as_array
from ...errors import InputError
from ...plan import plan
from ...results.drift_findings import record_json
from .checks.identity import identity_of
from .embed import embed_side
from .plan import plan_drift


def save_receipt(reference: Any, path: str | Path, *, texts: str | Path | None = None, conformance: bool = True,
                 cache_root: Path | bool | None = None, diagnose: bool = True,
                 on_step: Callable[[str], None] | None = None, **load_options: Any) -> dict:
    """Embed drift's texts with ``reference`` (as drift's reference side does) and write them as a receipt at
    ``path``; its metadata. Every text must embed: a receipt is complete. ``diagnose``: where the reference can
    run as its usual misconfigurations, record them too. ``on_step``: told each step as it starts (the CLI's
    progress: the variants take most of the time, and the exports they need are made the first time);
    ``load_options``: ``load_model``'s, for a reference the one door loads."""
    from ....models.adapters.receipt import write_receipt

    step = on_step or (lambda _name: None)
    asked = plan_drift(texts=texts, conformance=conformance)
    groups = list(asked.groups)
    planned = plan(reference, asked.scorings[0], **load_options)
    failed: dict[str, str] = {}
    refused: dict[str, list] = {}
    # What the encoder returned, before drift normalises it (a receipt gives back exactly that, so drift against
    # it computes what drift against the reference computes, to the last bit); embedded afresh, not from a cache.
    recorder = _Recording(planned.encoder)
    step(f"embed {planned.name}")
    table, _ = embed_side(replace(planned, view=replace(planned.view, encoder=recorder)), "reference", asked.calls,
                          groups[1:], failed, refused, cache_root, fresh=True)
    planned = planned.settled()  # its identity names what ran (embed_side settled it before any key was read)
    if failed or refused:
        what = next(iter(failed.values()), None) or f"{len(refused)} text(s) refused as too long"
        raise InputError(f"{planned.name} could not embed every text of the receipt ({what}).",
                         "make the receipt with a reference that embeds them all (a local model, say).")
    every = asked.texts
    variants = _variants(planned, groups, diagnose, step)
    write_receipt(Path(path), every, np.stack([recorder.raw[t] for t in every]), record_json(identity_of(planned.view)),
                  planned.name, variants)
    return {"texts": len(every), "dim": table.dim, "name": planned.name,
            "variants": len(variants.get("names") or ()), "variant_texts": len(variants.get("texts") or ())}


def _variants(planned, groups, diagnose: bool, step: Callable[[str], None]) -> dict[str, Any]:
    """What the receipt records of the reference's variants, or why it records none."""
    if not diagnose:
        return {"unavailable": "it was saved with --no-diagnose"}
    if not isinstance(planned.encoder, Variants):
        return {"unavailable": f"its reference ({planned.name}) is not a local model: no variant of it can be "
                               "embedded"}
    from .checks.diagnosis import receipt_texts, record_variants

    subset = receipt_texts(groups)
    return {"texts": subset, **record_variants(planned.encoder, subset, on_variant=step)}


class _Recording:
    """An encoder's raw outputs, kept by text as they are returned."""

    def __init__(self, inner):
        self.inner, self.raw = inner, {}

    def encode(self, texts: list[str]) -> np.ndarray:
        out = as_array(self.inner.encode(texts))
        for text, row in zip(texts, out):
            self.raw.setdefault(text, row)
        return out
