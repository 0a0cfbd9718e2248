"""drift names the cause: when a deployment drifts and the reference is a local model, the reference embeds a small
subset of the texts again under each usual misconfiguration (a *variant*), and each variant is compared with the
candidate exactly as the gate compares the reference. The variants that conform where the reference did not name
what the deployment embeds like, best first.

The variants, by the names reports use (the names are the interface):

- ``pooling=mean|cls|max|last``: every pooling the reference does not use;
- ``dense=off``: the reference's Dense layers dropped (only where it has them);
- ``max_tokens=N``: truncation at 128, 256 or 512 tokens, where shorter than the reference's;
- ``prompt=none`` and ``prompt=<name>``: the reference's prompt left out, or another of its configured prompts;
- ``lowercase=on|off``: the tokenizer's lowercasing flipped (where its normalizer says);
- ``special_tokens=off``: no CLS/SEP/BOS/EOS added;
- ``precision=fp16|int8``: the reference's own fp16 and int8 exports;
- two of the above together, where no single one conforms (the closest singles' pairs).

They are tried in this order, the cheapest first, and the diagnosis stops at the first that conforms (``tried`` lists
those tried).

``normalize=off`` is not tried: drift compares cosines, which normalisation does not change.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...embeddings import as_array, normalize_rows
from ...errors import first_line

log = logging.getLogger(__name__)

# How many texts the diagnosis embeds with each variant: the drifted ones first (the worst first; at most LONG_TEXTS
# of more than LONG_CHARS characters, which probe truncation and cost the most), then an even sample of the rest.
DIAGNOSIS_TEXTS = 96
LONG_TEXTS, LONG_CHARS = 4, 500
TRUNCATIONS = (128, 256, 512)
POOLINGS = {"mean": "mean", "cls": "cls", "max": "max", "lasttoken": "last"}
CLOSEST_PAIRED = 4  # the closest single variants whose pairs are tried when none conforms alone


@dataclass(frozen=True)
class Variant:
    """A misconfiguration of the reference: its name, and how to make the misconfigured encoder (or None where
    the reference cannot be run that way here)."""
    name: str
    changes: tuple[tuple[str, Any], ...]  # what it changes, applied in order by ``_encoder``


def diagnosis_texts(cosines: dict[str, float], threshold: float, limit: int = DIAGNOSIS_TEXTS) -> list[str]:
    """The texts a diagnosis embeds: every drifted one (the worst first), then an even sample of the others."""
    drifted = sorted((t for t, c in cosines.items() if not c >= threshold), key=lambda t: (cosines[t] == cosines[t],
                                                                                            cosines[t]))
    long = [t for t in drifted if len(t) > LONG_CHARS]
    drifted = [t for t in drifted if len(t) <= LONG_CHARS or t in long[:LONG_TEXTS]]
    rest = [t for t in cosines if t not in set(drifted) and len(t) <= LONG_CHARS]
    keep = drifted[:limit]
    room = limit - len(keep)
    if room > 0 and rest:
        step = max(1, len(rest) // room)
        keep += rest[::step][:room]
    return keep


def variants_of(reference: Any) -> list[Variant]:
    """The usual misconfigurations of a local (ONNX) reference, each one change away from it."""
    folder = reference.folder
    out = [Variant(f"pooling={label}", (("pooling", mode),)) for mode, label in POOLINGS.items()
           if (mode,) != tuple(folder.pooling.modes)]
    if folder.dense:
        out.append(Variant("dense=off", (("dense", ()),)))
    # a shorter truncation than the reference's (a longer one than the model's positions cannot run)
    out += [Variant(f"max_tokens={n}", (("max_tokens", n),)) for n in TRUNCATIONS
            if folder.max_seq_length is None or n < folder.max_seq_length]
    if reference.prompt:
        out.append(Variant("prompt=none", (("prompt", ""),)))
    out += [Variant(f"prompt={name}", (("prompt", text),)) for name, text in folder.prompts.items()
            if text and text != reference.prompt]
    lowercase = _lowercases(reference)
    if lowercase is not None:
        out.append(Variant(f"lowercase={'off' if lowercase else 'on'}", (("lowercase", not lowercase),)))
    out.append(Variant("special_tokens=off", (("special_tokens", False),)))
    if reference.info.get("dtype", "fp32") == "fp32" and reference.identity.get("source"):
        out += [Variant(f"precision={dtype}", (("precision", dtype),)) for dtype in ("fp16", "int8")]
    return out


def _tokenizer_json(reference: Any) -> dict:
    return json.loads(reference.folder.tokenizer_file.read_text(encoding="utf-8"))


def _lowercases(reference: Any) -> bool | None:
    """Whether the reference's tokenizer lowercases (its normalizer's ``lowercase``), None where it does not say."""
    normalizer = _tokenizer_json(reference).get("normalizer") or {}
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


def _encoder(reference: Any, variant: Variant, load: Callable[..., Any]) -> Any:
    """The reference's encoder with the variant's changes, on the CPU (numpy's pooling)."""
    from tokenizers import Tokenizer

    from ....models.onnx.encoder import OnnxEncoder
    from ....models.sources.folder import PoolingConfig

    folder, prompt, tokenizer, precision = reference.folder, reference.prompt, None, None
    for what, value in variant.changes:
        if what == "pooling":
            folder = replace(folder, pooling=PoolingConfig((value,), folder.pooling.include_prompt))
        elif what == "dense":
            folder = replace(folder, dense=())
        elif what == "max_tokens":
            folder = replace(folder, max_seq_length=value)
        elif what == "prompt":
            prompt = value
        elif what == "lowercase":
            tokenizer = _with_lowercase(tokenizer or _tokenizer_json(reference), value)
        elif what == "special_tokens":
            tokenizer = {**(tokenizer or _tokenizer_json(reference)), "post_processor": None}
        elif what == "precision":
            precision = value
    if precision is not None:
        base = load(reference.identity["source"], provider="cpu", dtype=precision)  # the fp32 export's source
        folder = replace(base.folder, pooling=folder.pooling, dense=folder.dense, max_seq_length=folder.max_seq_length)
    # packed batches (sorted by tokens, cut by a token budget): the long texts are not padded into the short ones'
    encoder = OnnxEncoder(folder, provider="cpu", prompt=prompt or None, name=variant.name, batching="packed")
    if precision is None and reference.provider == "cpu" and not reference.graph_head:
        encoder._session = reference.session  # the same graph: its session, not another one
    if tokenizer is not None:
        encoder.configured(Tokenizer.from_str(json.dumps(tokenizer)))
    return encoder


def _compare(vectors: np.ndarray, candidate: np.ndarray) -> tuple[float, float]:
    """(worst, mean) of each text's cosine between a variant's vectors and the candidate's, as the gate computes it."""
    a, b = normalize_rows(vectors.astype(np.float64)), normalize_rows(candidate.astype(np.float64))
    cos = np.einsum("ij,ij->i", a, b)
    return float(np.min(cos)), float(np.mean(cos))


def diagnose(reference: Any, candidate_rows: dict[str, np.ndarray], cosines: dict[str, float], threshold: float,
             load: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Which usual misconfiguration of ``reference`` (an OnnxEncoder) the candidate embeds like: ``{"variant": the
    best conforming one or None, "worst": its worst cosine, "reference": the reference's own worst on the same texts,
    "texts": how many, "tried": [{"variant", "worst", "mean"}, ...] best first}``. ``candidate_rows``: the candidate's
    vector of each text; ``cosines``: the gate's cosine of each text (which drifted)."""
    if load is None:
        load = _load_model()
    texts = diagnosis_texts(cosines, threshold)
    candidate = np.stack([candidate_rows[t] for t in texts])
    own = min(cosines[t] for t in texts)
    tried: list[dict[str, Any]] = []

    def attempt(variant: Variant) -> None:
        try:
            vectors = as_array(_encoder(reference, variant, load).encode(texts))
            if vectors.shape != candidate.shape:
                tried.append({"variant": variant.name, "worst": None, "mean": None,
                              "skipped": f"{vectors.shape[1]} dimensions, the candidate's {candidate.shape[1]}"})
                return
            worst, mean = _compare(vectors, candidate)
            tried.append({"variant": variant.name, "worst": worst, "mean": mean})
        except Exception as err:  # noqa: BLE001 - a variant this model cannot run is reported, never a crash
            log.info("diagnosis: %s could not be tried: %s", variant.name, first_line(err, 160))
            tried.append({"variant": variant.name, "worst": None, "mean": None, "skipped": first_line(err, 160)})

    singles = variants_of(reference)
    for v in singles:  # in order, the cheapest first (the reference's own graph, then its other exports)
        attempt(v)
        if tried[-1]["worst"] is not None and tried[-1]["worst"] >= threshold:
            break  # it embeds like this one: the cause is named, the rest need not run
    conforming = [t for t in tried if t["worst"] is not None and t["worst"] >= threshold]
    if not conforming:  # two changes together, among the closest singles
        closest = [t["variant"] for t in _ranked(tried)[:CLOSEST_PAIRED] if t["worst"] is not None]
        by_name = {v.name: v for v in singles}
        for i, a in enumerate(closest):
            for b in closest[i + 1:]:
                if by_name[a].changes[0][0] != by_name[b].changes[0][0]:  # two pooling modes are not a pair
                    attempt(Variant(f"{a}+{b}", by_name[a].changes + by_name[b].changes))
    ranked = _ranked(tried)
    best = next((t for t in ranked if t["worst"] is not None and t["worst"] >= threshold), None)
    return {"variant": best["variant"] if best else None,
            "worst": best["worst"] if best else (ranked[0]["worst"] if ranked else None),
            "closest": None if best or not ranked else ranked[0]["variant"],
            "reference": own, "texts": len(texts), "tried": ranked}


def _load_model() -> Callable[..., Any]:
    from ....models.loader import load_model

    return load_model


def _ranked(tried: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(tried, key=lambda t: (t["worst"] is None, -(t["worst"] or 0.0), -(t["mean"] or 0.0)))


def diagnosis_line(diagnosis: dict[str, Any]) -> str:
    """The terminal's line under the verdict."""
    if diagnosis.get("variant"):
        return (f"diagnosis: the candidate embeds like the reference with {diagnosis['variant']} (worst cosine "
                f"{diagnosis['worst']:.5f}); with the reference's own settings {diagnosis['reference']:.4f}")
    if diagnosis.get("closest"):
        return (f"diagnosis: no usual misconfiguration explains it; closest {diagnosis['closest']} "
                f"({diagnosis['worst']:.4f}; the reference's own {diagnosis['reference']:.4f})")
    return "diagnosis: no usual misconfiguration could be tried"
