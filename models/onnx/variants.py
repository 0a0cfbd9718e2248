"""A local model under its usual misconfigurations: what drift's diagnosis re-runs a reference as
(``OnnxEncoder.variants`` and ``OnnxEncoder.variant``). A *variant* is a name (the interface: reports, receipts and
the fixes they name use it; its grammar is ``core.results.drift_findings.VARIANT_NAME``) and the changes it makes,
applied in order:

- ``pooling=mean|cls|max|last``: every pooling the model does not use;
- ``dense=off``: its Dense layers dropped (only where it has them);
- ``max_tokens=N``: truncation at 128, 256 or 512 tokens, where shorter than the model's;
- ``prompt=none`` and ``prompt=<name>``: its prompt left out, or another of its configured prompts;
- ``lowercase=on|off``: the tokenizer's lowercasing flipped (where its normalizer says);
- ``special_tokens=off``: no CLS/SEP/BOS/EOS added;
- ``precision=fp16|int8``: the model's own fp16 and int8 exports;
- ``normalize=off``: its L2 normalisation dropped (not a variant the diagnosis tries: cosines cannot see it; drift's
  norm gate asks for it).

Each variant runs on the CPU with numpy's pooling, in packed batches, and shares the model's open session where it
runs the same graph.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...core.errors import ModelError

TRUNCATIONS = (128, 256, 512)
POOLINGS = {"mean": "mean", "cls": "cls", "max": "max", "lasttoken": "last"}


@dataclass(frozen=True)
class Variant:
    """A misconfiguration of a model: its name, and what it changes (none for a variant a receipt recorded: its
    vectors are all there is of it)."""
    name: str
    changes: tuple[tuple[str, Any], ...]  # (setting, value), applied in order


def variants_of(model: Any) -> list[Variant]:
    """The usual misconfigurations of ``model``, each one change away from it, the cheapest first (its own graph,
    then its other exports)."""
    folder = model.folder
    out = [Variant(f"pooling={label}", (("pooling", mode),)) for mode, label in POOLINGS.items()
           if (mode,) != tuple(folder.pooling.modes)]
    if folder.dense:
        out.append(Variant("dense=off", (("dense", ()),)))
    # a shorter truncation than the model's (a longer one than its positions cannot run)
    out += [Variant(f"max_tokens={n}", (("max_tokens", n),)) for n in TRUNCATIONS
            if folder.max_seq_length is None or n < folder.max_seq_length]
    if model.prompt:
        out.append(Variant("prompt=none", (("prompt", ""),)))
    out += [Variant(f"prompt={name}", (("prompt", text),)) for name, text in folder.prompts.items()
            if text and text != model.prompt]
    said = lowercases(model.tokenizer_json["json"])
    if said is not None:
        out.append(Variant(f"lowercase={'off' if said else 'on'}", (("lowercase", not said),)))
    out.append(Variant("special_tokens=off", (("special_tokens", False),)))
    if model.info.get("dtype", "fp32") == "fp32" and model.identity.get("source"):
        out += [Variant(f"precision={dtype}", (("precision", dtype),)) for dtype in ("fp16", "int8")]
    return out


def pairs_of(singles: list[Variant]) -> list[Variant]:
    """Every pair of ``singles`` that changes two different things (two poolings are not a pair), in order."""
    return [Variant(f"{a.name}+{b.name}", a.changes + b.changes)
            for i, a in enumerate(singles) for b in singles[i + 1:] if a.changes[0][0] != b.changes[0][0]]


# A tokenizer of one token and nothing else: what carries a changed normalizer into the model's tokenizer
_ONE_TOKEN: dict[str, Any] = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
    "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}


def lowercases(tokenizer: dict[str, Any]) -> bool | None:
    """Whether a tokenizer.json (parsed) lowercases (its normalizer's ``lowercase``), None where it does not say."""
    normalizer = tokenizer.get("normalizer") or {}
    for n in [normalizer, *(normalizer.get("normalizers") or [])]:
        if isinstance(n, dict) and n.get("type") == "BertNormalizer":
            return bool(n.get("lowercase"))
        if isinstance(n, dict) and n.get("type") == "Lowercase":
            return True
    return False if normalizer else None


def _with_lowercase(data: dict, on: bool) -> dict:
    normalizer = data.get("normalizer") or {}
    parts = list(normalizer.get("normalizers") or []) if normalizer.get("type") == "Sequence" else [normalizer]
    parts = [p for p in parts if p and p.get("type") != "Lowercase"]
    for p in parts:
        if p.get("type") == "BertNormalizer":
            p["lowercase"] = on
            break
    else:
        if on:
            parts.append({"type": "Lowercase"})
    data["normalizer"] = {"type": "Sequence", "normalizers": parts} if len(parts) != 1 else parts[0]
    return data


def variant_encoder(model: Any, variant: Variant, load: Callable[..., Any] | None = None) -> Any:
    """``model`` (an ``OnnxEncoder``) with ``variant``'s changes applied, on the CPU (numpy's pooling), as another
    encoder of its class. ``load``: how a precision change
    loads the model's other export (``load_model``'s signature; drift's diagnosis passes one that loads each once)."""
    from tokenizers import Tokenizer

    from ..sources.folder import PoolingConfig

    spec = model.tokenizer_json
    folder, prompt, precision, base = model.folder, model.prompt, None, None
    normalizer, post_processor = None, True
    for what, value in variant.changes:
        if what == "pooling":
            folder = replace(folder, pooling=PoolingConfig((value,), folder.pooling.include_prompt))
        elif what == "dense":
            folder = replace(folder, dense=())
        elif what == "max_tokens":
            folder = replace(folder, max_seq_length=value)
        elif what == "normalize":
            folder = replace(folder, normalize=value)
        elif what == "prompt":
            prompt = value
        elif what == "lowercase":
            normalizer = _with_lowercase({"normalizer": copy.deepcopy(spec["json"].get("normalizer"))}, value)
        elif what == "special_tokens":
            post_processor = False
        elif what == "precision":
            precision = value
    if precision is not None:
        if load is None:
            raise ModelError(f"The variant {variant.name} runs another export of {model.name}.",
                             "pass load (fasteval.models.loader.load_model, or one that loads each export once).")
        base = load(model.identity["source"], provider="cpu", dtype=precision)  # the fp32 export's source
        folder = replace(base.folder, pooling=folder.pooling, dense=folder.dense, max_seq_length=folder.max_seq_length,
                         normalize=folder.normalize)
    if normalizer is None and post_processor and folder.max_seq_length == model.folder.max_seq_length:
        runs = model.tokenizer  # the same tokenizer, configured the same way: not parsed again
    else:
        runs = Tokenizer.from_str(spec["text"])
        if normalizer is not None:  # the changed normalizer alone, carried by a tokenizer of one token
            runs.normalizer = Tokenizer.from_str(json.dumps({**_ONE_TOKEN, **normalizer})).normalizer
        if not post_processor:
            runs.post_processor = None
    # that export's graph, or the same graph: its open session, not another one
    session = base.session if base is not None else model.shared_session()
    # packed batches (sorted by tokens, cut by a token budget): the long texts are not padded into the short ones'
    return type(model)(folder, provider="cpu", prompt=prompt or None, name=variant.name, batching="packed",
                       tokenizer=runs, session=session, lowercase=False if normalizer is not None else None)
