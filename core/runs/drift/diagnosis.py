"""drift names the cause: when a deployment drifts and the reference is a local model, the reference embeds a small
subset of the texts again under each usual misconfiguration (a *variant*), and each variant is compared with the
candidate exactly as the gate compares the reference. The variants that conform where the reference did not name
what the deployment embeds like, best first. A receipt records the variants on a fixed subset when it is saved
(``record_variants``), so drift against a receipt diagnoses too (``diagnose_recorded``).

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
those tried); each embeds the worst SCREEN_TEXTS drifted texts first, and the rest only where it conforms on those.

``normalize=off`` is not tried here: drift compares cosines, which normalisation does not change; the norm gate
(``gate.norm_check``) compares the candidate's norms with the reference's with its Normalize dropped
(``normalize_off``) and names it there.
"""
from __future__ import annotations

import copy
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
# A variant embeds the worst drifted texts first, and the rest only where it conforms on these: a variant that
# does not explain the worst texts is ruled out at a twelfth of the cost.
SCREEN_TEXTS = 8
SAME_AS_REFERENCE = 1e-5  # a variant whose every cosine is within this of the reference's changed nothing here
CLOSER = 1e-4  # how much higher than the reference's own worst cosine a variant's must be to be named the closest


@dataclass(frozen=True)
class Variant:
    """A misconfiguration of the reference: its name, and what it changes (none for a variant a receipt recorded:
    its vectors are all there is of it)."""
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


def variants_of(reference: Any, spec: dict[str, Any] | None = None) -> list[Variant]:
    """The usual misconfigurations of a local (ONNX) reference, each one change away from it. ``spec``: the
    reference's tokenizer.json, parsed (read from its folder when not given)."""
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
    lowercase = _lowercases((spec or _tokenizer_spec(reference))["json"])
    if lowercase is not None:
        out.append(Variant(f"lowercase={'off' if lowercase else 'on'}", (("lowercase", not lowercase),)))
    out.append(Variant("special_tokens=off", (("special_tokens", False),)))
    if reference.info.get("dtype", "fp32") == "fp32" and reference.identity.get("source"):
        out += [Variant(f"precision={dtype}", (("precision", dtype),)) for dtype in ("fp16", "int8")]
    return out


def _tokenizer_spec(reference: Any) -> dict[str, Any]:
    """The reference's tokenizer.json: its text and the parsed object (read once a diagnosis)."""
    text = reference.folder.tokenizer_file.read_text(encoding="utf-8")
    return {"text": text, "json": json.loads(text)}


# A tokenizer of one token and nothing else: what carries a changed normalizer into the reference's tokenizer
_ONE_TOKEN: dict[str, Any] = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
    "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}


def _lowercases(tokenizer: dict[str, Any]) -> bool | None:
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


def _encoder(reference: Any, variant: Variant, load: Callable[..., Any], spec: dict | None = None) -> Any:
    """The reference's encoder with the variant's changes, on the CPU (numpy's pooling). ``spec``: the reference's
    tokenizer.json, parsed (read from its folder when not given)."""
    from tokenizers import Tokenizer

    from ....models.onnx.encoder import OnnxEncoder
    from ....models.sources.folder import PoolingConfig

    spec = spec or _tokenizer_spec(reference)
    folder, prompt, precision, base = reference.folder, reference.prompt, None, None
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
        base = load(reference.identity["source"], provider="cpu", dtype=precision)  # the fp32 export's source
        folder = replace(base.folder, pooling=folder.pooling, dense=folder.dense, max_seq_length=folder.max_seq_length,
                         normalize=folder.normalize)
    if normalizer is None and post_processor and folder.max_seq_length == reference.folder.max_seq_length:
        runs = reference.tokenizer  # the same tokenizer, configured the same way: not parsed again
    else:
        runs = Tokenizer.from_str(spec["text"])
        if normalizer is not None:  # the changed normalizer alone, carried by a tokenizer of one token
            runs.normalizer = Tokenizer.from_str(json.dumps({**_ONE_TOKEN, **normalizer})).normalizer
        if not post_processor:
            runs.post_processor = None
    # packed batches (sorted by tokens, cut by a token budget): the long texts are not padded into the short ones'
    encoder = OnnxEncoder(folder, provider="cpu", prompt=prompt or None, name=variant.name, batching="packed",
                          tokenizer=runs)
    if base is not None:
        encoder._session = base.session  # that export's graph: its session, opened once a diagnosis
    elif reference.provider == "cpu" and not reference.graph_head:
        encoder._session = reference.session  # the same graph: its session, not another one
    if any(what == "lowercase" for what, _ in variant.changes):
        encoder.do_lower_case = False  # the tokenizer's normalizer alone says whether it lowercases
    return encoder


def normalize_off(reference: Any) -> Any:
    """The reference with its L2 normalisation dropped (``normalize=off``): a cosine cannot see it, the norm gate
    does (``gate.norm_check``)."""
    return _encoder(reference, Variant("normalize=off", (("normalize", False),)), _load_model())


def _cosines(vectors: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Each text's cosine between a variant's vectors and the candidate's, as the gate computes it."""
    a, b = normalize_rows(vectors.astype(np.float64)), normalize_rows(candidate.astype(np.float64))
    return np.einsum("ij,ij->i", a, b)


def diagnose(reference: Any, candidate_rows: dict[str, np.ndarray], cosines: dict[str, float], threshold: float,
             load: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Which usual misconfiguration of ``reference`` (an OnnxEncoder) the candidate embeds like: ``{"variant": the
    best conforming one or None, "worst": its worst cosine, "reference": the reference's own worst on the same texts,
    "texts": how many, "tried": [{"variant", "worst", "mean", "texts"}, ...] best first}``. ``candidate_rows``: the
    candidate's vector of each text; ``cosines``: the gate's cosine of each text (which drifted)."""
    singles, embedder = _live(reference, load)
    return _diagnosis(singles, embedder, diagnosis_texts(cosines, threshold), candidate_rows, cosines, threshold,
                      pairs=lambda closest: pairs_of([v for v in singles if v.name in closest]))


def _live(reference: Any, load: Callable[..., Any] | None) -> tuple[list[Variant],
                                                                      Callable[[Variant], Callable[..., Any]]]:
    """The reference's single variants, and how each embeds (its misconfigured encoder's ``encode``), each export
    the precision variants run loaded (and its session opened) once."""
    loaded: dict[tuple, Any] = {}
    load_model = load or _load_model()

    def load_once(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        if key not in loaded:
            loaded[key] = load_model(*args, **kwargs)
        return loaded[key]

    spec = _tokenizer_spec(reference)
    return variants_of(reference, spec), lambda variant: _encoder(reference, variant, load_once, spec).encode


def _diagnosis(singles: list[Variant], embedder: Callable[[Variant], Callable[[list[str]], np.ndarray] | None],
               texts: list[str], candidate_rows: dict[str, np.ndarray], cosines: dict[str, float], threshold: float,
               pairs: Callable[[list[str]], list[Variant]]) -> dict[str, Any]:
    """The diagnosis over ``texts`` (the drifted ones first, the worst first): each single variant in order, the
    cheapest first, until one conforms; where none does, ``pairs`` of the closest. A variant embeds the worst
    SCREEN_TEXTS texts first and the rest only where it conforms on those (one that does not conform on the worst
    texts cannot conform on all): ``texts`` in ``tried`` says on how many each was compared. ``embedder``: how a
    variant embeds (None: it cannot here, and it is left out)."""
    if not texts or not min(cosines[t] for t in texts) < threshold:
        return {"variant": None, "worst": None, "closest": None, "tried": [],
                "unavailable": "no text drifted: there is no misconfiguration of the reference to name"}
    candidate = {t: np.asarray(candidate_rows[t]) for t in texts}
    screen = texts[:SCREEN_TEXTS]
    tried: list[dict[str, Any]] = []

    def attempt(variant: Variant) -> None:
        try:
            embed = embedder(variant)
            if embed is None:
                return
            vectors = as_array(embed(screen))
            if vectors.shape[1:] != candidate[screen[0]].shape:
                tried.append({"variant": variant.name, "worst": None, "mean": None,
                              "skipped": f"{vectors.shape[1]} dimensions, the candidate's "
                                         f"{candidate[screen[0]].shape[0]}"})
                return
            compared = screen
            cos = _cosines(vectors, np.stack([candidate[t] for t in screen]))
            # a change that leaves these texts' vectors as they were (max_tokens on short texts, say) explains
            # nothing here, alone or in a pair
            same = bool(np.all(np.abs(cos - np.array([cosines[t] for t in screen])) <= SAME_AS_REFERENCE))
            if cos.min() >= threshold and len(texts) > len(screen):  # it may be the cause: every text decides
                vectors = np.vstack([vectors, as_array(embed(texts[len(screen):]))])
                compared = texts
                cos = _cosines(vectors, np.stack([candidate[t] for t in texts]))
            tried.append({"variant": variant.name, "worst": float(cos.min()), "mean": float(cos.mean()),
                          "texts": len(compared), **({"same_as_reference": True} if same else {})})
        except Exception as err:  # noqa: BLE001 - a variant this model cannot run is reported, never a crash
            log.info("diagnosis: %s could not be tried: %s", variant.name, first_line(err, 160))
            tried.append({"variant": variant.name, "worst": None, "mean": None, "skipped": first_line(err, 160)})

    for v in singles:  # in order, the cheapest first (the reference's own graph, then its other exports)
        attempt(v)
        if tried and tried[-1]["worst"] is not None and tried[-1]["worst"] >= threshold:
            break  # it embeds like this one: the cause is named, the rest need not run
    if not any(t["worst"] is not None and t["worst"] >= threshold for t in tried):  # two changes, the closest
        moved = [t for t in _ranked(tried) if t["worst"] is not None and not t.get("same_as_reference")]
        for pair in pairs([t["variant"] for t in moved[:CLOSEST_PAIRED]]):
            attempt(pair)
    ranked = _ranked(tried)
    own = min(cosines[t] for t in texts)
    best = next((t for t in ranked if t["worst"] is not None and t["worst"] >= threshold), None)
    # the closest is named only where it comes closer than the reference's own settings
    closer = next((t for t in ranked if t["worst"] is not None and t["worst"] > own + CLOSER), None)
    return {"variant": best["variant"] if best else None,
            "worst": best["worst"] if best else (closer["worst"] if closer else None),
            "closest": None if best or not closer else closer["variant"],
            "reference": own, "texts": len(texts), "tried": ranked}


def pairs_of(singles: Sequence[Variant]) -> list[Variant]:
    """Every pair of ``singles`` that changes two different things (two poolings are not a pair), in order."""
    return [Variant(f"{a.name}+{b.name}", a.changes + b.changes)
            for i, a in enumerate(singles) for b in singles[i + 1:] if a.changes[0][0] != b.changes[0][0]]


# --- receipts: the variants recorded once, for a CI job with no weights -------------------------------------------
RECEIPT_TEXTS = 128  # the texts whose variants' vectors a receipt holds: an even sample of every group of drift's


def receipt_texts(groups: Sequence[Any], limit: int = RECEIPT_TEXTS) -> list[str]:
    """The fixed subset a receipt records its variants on (the drifted texts are not known when it is made): an
    even share of every group's texts (drift shows in one group: casing, scripts, length), each group sampled
    evenly, at most LONG_TEXTS of more than LONG_CHARS characters in all."""
    picked: list[str] = []
    share = max(1, -(-limit // max(len(groups), 1)))
    long = 0
    for g in groups:
        texts = list(dict.fromkeys(g.texts))
        step = max(1, len(texts) // share)
        for t in texts[::step][:share]:
            if len(t) > LONG_CHARS:
                if long >= LONG_TEXTS:
                    continue
                long += 1
            picked.append(t)
    return list(dict.fromkeys(picked))[:limit]


def record_variants(reference: Any, texts: list[str], load: Callable[..., Any] | None = None,
                    on_variant: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every single variant of ``reference`` and every pair of two different changes, each embedding ``texts``:
    ``{"names": [...], "vectors": float32 (variants, texts, dim), L2-normalised rows, "skipped": {name: why}}``
    (what a receipt holds, so a receipt's drift is diagnosed as the folder's is). ``on_variant``: told each one as
    it starts ("variant 3 of 32: pooling=max")."""
    singles, embedder = _live(reference, load)
    names: list[str] = []
    rows: list[np.ndarray] = []
    skipped: dict[str, str] = {}
    every = singles + pairs_of(singles)
    for k, variant in enumerate(every, start=1):
        if on_variant is not None:
            on_variant(f"variant {k} of {len(every)}: {variant.name}")
        try:
            vectors = as_array(embedder(variant)(texts))
        except Exception as err:  # noqa: BLE001 - a variant this model cannot run is left out, and said
            log.info("receipt: %s could not be recorded: %s", variant.name, first_line(err, 160))
            skipped[variant.name] = first_line(err, 160)
            continue
        if rows and vectors.shape != rows[0].shape:
            skipped[variant.name] = f"{vectors.shape[1]} dimensions, the reference's {rows[0].shape[1]}"
            continue
        names.append(variant.name)
        rows.append(normalize_rows(vectors.astype(np.float64)).astype(np.float32))
    return {"names": names, "vectors": np.stack(rows) if rows else np.zeros((0, len(texts), 0), np.float32),
            "skipped": skipped}


def diagnose_recorded(recorded: dict[str, Any] | None, candidate_rows: dict[str, np.ndarray],
                      cosines: dict[str, float], threshold: float) -> dict[str, Any]:
    """The diagnosis from a receipt's recorded variants (``ReceiptEncoder.variants``: ``names``, ``texts``, and
    ``rows(name, texts)``), as ``diagnose`` makes it from a folder: the receipt's texts the candidate embedded, the
    drifted first; the singles in the order they were recorded, then the recorded pairs of the closest. Where the
    receipt holds none, or none of its texts drifted, ``variant`` is None and ``unavailable`` says why."""
    if not recorded or not recorded.get("names"):
        why = (recorded or {}).get("unavailable") or ("the receipt holds no variants' vectors (saved before "
                                                      "receipts carried them)")
        return {"variant": None, "worst": None, "closest": None, "unavailable": why, "tried": []}
    held = {t: cosines[t] for t in recorded["texts"] if t in cosines and t in candidate_rows}
    drifted = [t for t, c in held.items() if not c >= threshold]
    if not drifted:
        return {"variant": None, "worst": None, "closest": None, "tried": [],
                "unavailable": f"none of the receipt's {len(held)} diagnosis texts drifted (the drift is in texts "
                               "it does not sample)"}
    texts = diagnosis_texts(held, threshold, limit=len(held))
    names = recorded["names"]
    singles = [Variant(n, ()) for n in names if "+" not in n]

    def embedder(variant: Variant) -> Callable[[list[str]], np.ndarray] | None:
        return (lambda some: recorded["rows"](variant.name, some)) if variant.name in names else None

    def pairs(closest: list[str]) -> list[Variant]:
        return [Variant(n, ()) for n in names if "+" in n and set(n.split("+")) <= set(closest)]

    return _diagnosis(singles, embedder, texts, candidate_rows, held, threshold, pairs)


def _load_model() -> Callable[..., Any]:
    from ....models.loader import load_model

    return load_model


def _ranked(tried: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(tried, key=lambda t: (t["worst"] is None, -(t["worst"] or 0.0), -(t["mean"] or 0.0)))


# What to do about each misconfiguration a diagnosis names, by setting: the change on the server, with the flag of
# the servers drift is measured against (llama.cpp's llama-server, infinity, TEI, vLLM).
FIXES: dict[str, str] = {
    "pooling": ("set the server's pooling to the reference's ({value} is what it does now): llama.cpp --pooling mean "
                "(or cls / last), infinity --pooling-method mean, TEI --pooling mean, vLLM --override-pooler-config "
                "'{{\"pooling_type\": \"MEAN\"}}'"),
    "dense": ("serve the model with its Dense layers (modules.json's 2_Dense...): infinity and TEI load them from a "
              "sentence-transformers folder; llama.cpp's converter drops them, so serve that model elsewhere"),
    "normalize": ("normalise on the server, or on the client: llama.cpp --embd-normalize 2, TEI's normalize: true "
                  "(its default), vLLM's pooler normalize: true"),
    "max_tokens": ("give the server the reference's maximum input length (it cuts at {value} tokens): llama.cpp "
                   "--ctx-size and --ubatch-size, TEI --max-input-length, vLLM --max-model-len"),
    "prompt": ("send the texts with the reference's prompt ({value} is what the server does): the client's prompt, "
               "or the server's default prompt name (TEI --default-prompt-name)"),
    "lowercase": ("serve the reference's own tokenizer (tokenizer.json and tokenizer_config.json, whose normalizer "
                  "{what}): a re-exported or re-converted tokenizer lost it"),
    "special_tokens": ("have the server add the tokenizer's special tokens (CLS/SEP, BOS/EOS): llama.cpp reads "
                       "add_bos_token/add_eos_token from the GGUF, so convert it again from the reference folder"),
    "precision": ("serve the reference's precision ({value} is what the server does): an f32 or f16 GGUF for "
                  "llama.cpp instead of a quantized one, TEI --dtype float32, vLLM --dtype float32"),
}


def fix_lines(diagnosis: dict[str, Any]) -> list[str]:
    """'Fix: ...' for each change of the variant a diagnosis named (two for a pair); none where it named none."""
    variant = diagnosis.get("variant")
    if not variant:
        return []
    lines = []
    for change in str(variant).split("+"):
        setting, _, value = change.partition("=")
        text = FIXES.get(setting)
        if text is not None:
            what = "lowercases" if value == "off" else "keeps case"
            lines.append(f"Fix ({change}): " + text.format(value=value, what=what))
    return lines


def diagnosis_line(diagnosis: dict[str, Any]) -> str:
    """The terminal's line under the verdict."""
    if diagnosis.get("unavailable"):
        return f"diagnosis: not available: {diagnosis['unavailable']}"
    if diagnosis.get("variant"):
        return (f"diagnosis: the candidate embeds like the reference with {diagnosis['variant']} (worst cosine "
                f"{diagnosis['worst']:.5f}); with the reference's own settings {diagnosis['reference']:.4f}")
    if diagnosis.get("closest"):
        return (f"diagnosis: no usual misconfiguration explains it; closest {diagnosis['closest']} "
                f"({diagnosis['worst']:.4f}; the reference's own {diagnosis['reference']:.4f})")
    if any(t.get("worst") is not None for t in diagnosis.get("tried", ())):
        return (f"diagnosis: no usual misconfiguration explains it, and none comes closer than the reference's own "
                f"settings ({diagnosis['reference']:.4f})")
    return "diagnosis: no usual misconfiguration could be tried"
