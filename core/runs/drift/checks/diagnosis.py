"""Diagnosis: when a deployment drifts and the reference can run under its usual misconfigurations (a local model:
``variants``/``variant``, ``fasteval.models.onnx.variants``), the reference embeds a small subset of the texts
again under each (a *variant*), and each variant is compared with the candidate exactly as the gate compares the
reference. The variants that conform where the reference did not name what the deployment embeds like, best first.
A receipt records the variants on a fixed subset when it is saved (``record_variants``), so drift against a receipt
diagnoses too (``diagnose_recorded``). It never changes the verdict.

The variants are tried in their order, the cheapest first, and the diagnosis stops at the first that conforms
(``tried`` lists those tried); each embeds the worst SCREEN_TEXTS drifted texts first, and the rest only where it
conforms on those; where none conforms alone, the pairs of the closest. ``normalize=off`` is not tried here: drift
compares cosines, which normalisation does not change; the norm gate (``norms.py``) names it.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .....models.onnx.variants import Variant, pairs_of
from ....embeddings import Variants, as_array, normalize_rows
from ....errors import first_line
from ....results.drift import drifted
from ....results.drift_findings import Diagnosis, Tried

if TYPE_CHECKING:
    from . import DriftRun

log = logging.getLogger(__name__)

STAGE = "verdict"
STEP = ("diagnosis", "diagnose: the reference as its usual misconfigurations")

# How many texts the diagnosis embeds with each variant: the drifted ones first (the worst first; at most LONG_TEXTS
# of more than LONG_CHARS characters, which probe truncation and cost the most), then an even sample of the rest.
DIAGNOSIS_TEXTS = 96
LONG_TEXTS, LONG_CHARS = 4, 500
CLOSEST_PAIRED = 4  # the closest single variants whose pairs are tried when none conforms alone
# A variant embeds the worst drifted texts first, and the rest only where it conforms on these: a variant that
# does not explain the worst texts is ruled out at a twelfth of the cost.
SCREEN_TEXTS = 8
SAME_AS_REFERENCE = 1e-5  # a variant whose every cosine is within this of the reference's changed nothing here
CLOSER = 1e-4  # how much higher than the reference's own worst cosine a variant's must be to be named the closest


def applies(run: DriftRun) -> bool:
    """A drifting candidate, compared as floats, every group embedded, with texts that drifted outside the accepted
    groups (a candidate that drifts for its batches or its precision alone has no misconfiguration to name), and a
    reference that can run as its variants or recorded them (a receipt)."""
    if not run.options.diagnose or run.scored.verdict != "drifts" or not run.floats or run.failed:
        return False
    return (any(drifted(c, run.options.threshold) for c in _unexplained(run).values())
            and (run.receipt or isinstance(run.reference, Variants)))


def check(run: DriftRun) -> Diagnosis:
    unexplained, threshold = _unexplained(run), run.options.threshold
    if run.receipt:
        return diagnose_recorded(run.reference.recorded_variants, run.maps[1], unexplained, threshold)
    return diagnose(run.reference, run.maps[1], unexplained, threshold)


def _unexplained(run: DriftRun) -> dict[str, float]:
    """The cosines of the texts outside the accepted groups (their drift is known): what the diagnosis explains."""
    known = {t for g in run.groups if g.name in run.options.accept for t in g.texts}
    return {t: c for t, c in run.scored.cosines.items() if t not in known}


def diagnosis_texts(cosines: dict[str, float], threshold: float, limit: int = DIAGNOSIS_TEXTS) -> list[str]:
    """The texts a diagnosis embeds: every drifted one (the worst first), then an even sample of the others."""
    worst_first = sorted((t for t, c in cosines.items() if drifted(c, threshold)),
                         key=lambda t: (cosines[t] == cosines[t], cosines[t]))
    long = [t for t in worst_first if len(t) > LONG_CHARS]
    worst_first = [t for t in worst_first if len(t) <= LONG_CHARS or t in long[:LONG_TEXTS]]
    rest = [t for t in cosines if t not in set(worst_first) and len(t) <= LONG_CHARS]
    keep = worst_first[:limit]
    room = limit - len(keep)
    if room > 0 and rest:
        step = max(1, len(rest) // room)
        keep += rest[::step][:room]
    return keep


def _cosines(vectors: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Each text's cosine between a variant's vectors and the candidate's, as the gate computes it."""
    a, b = normalize_rows(vectors.astype(np.float64)), normalize_rows(candidate.astype(np.float64))
    return np.einsum("ij,ij->i", a, b)


def diagnose(reference: Any, candidate_rows: dict[str, np.ndarray], cosines: dict[str, float], threshold: float,
             load: Callable[..., Any] | None = None) -> Diagnosis:
    """Which usual misconfiguration of ``reference`` (an OnnxEncoder) the candidate embeds like: the best
    conforming variant or None, its worst cosine, the reference's own worst on the same texts, how many, and every
    variant tried, the best first (``Diagnosis``). ``candidate_rows``: the candidate's vector of each text;
    ``cosines``: the gate's cosine of each text (which drifted)."""
    singles, embedder = _live(reference, load)
    return _diagnosis(singles, embedder, diagnosis_texts(cosines, threshold), candidate_rows, cosines, threshold,
                      pairs=lambda closest: pairs_of([v for v in singles if v.name in closest]))


def _live(reference: Any, load: Callable[..., Any] | None) -> tuple[list[Variant],
                                                                      Callable[[Variant], Callable[..., Any]]]:
    """The reference's single variants, and how each embeds (its misconfigured encoder's ``encode``), each export
    the precision variants run loaded (and its session opened) once."""
    from .....models.loader import load_model as load_default

    loaded: dict[tuple, Any] = {}
    load_model = load or load_default

    def load_once(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        if key not in loaded:
            loaded[key] = load_model(*args, **kwargs)
        return loaded[key]

    return reference.variants(), lambda variant: reference.variant(variant, load_once).encode


def _diagnosis(singles: list[Variant], embedder: Callable[[Variant], Callable[[list[str]], np.ndarray] | None],
               texts: list[str], candidate_rows: dict[str, np.ndarray], cosines: dict[str, float], threshold: float,
               pairs: Callable[[list[str]], list[Variant]]) -> Diagnosis:
    """The diagnosis over ``texts`` (the drifted ones first, the worst first): each single variant in order, the
    cheapest first, until one conforms; where none does, ``pairs`` of the closest. A variant embeds the worst
    SCREEN_TEXTS texts first and the rest only where it conforms on those (one that does not conform on the worst
    texts cannot conform on all): ``texts`` in ``tried`` says on how many each was compared. ``embedder``: how a
    variant embeds (None: it cannot here, and it is left out)."""
    if not any(drifted(cosines[t], threshold) for t in texts):
        return Diagnosis(tried=[], unavailable="no text drifted: there is no misconfiguration of the reference to name")
    candidate = {t: np.asarray(candidate_rows[t]) for t in texts}
    screen = texts[:SCREEN_TEXTS]

    def conforms(worst: float | None) -> bool:  # a variant embeds like the candidate: drift's one rule, turned
        return worst is not None and not drifted(worst, threshold)
    tried: list[Tried] = []
    # each variant's worst cosine on the screen texts, which every variant was compared on: the closest is chosen on
    # these (a variant that went on to all the texts has a lower worst than one that stopped at the screen)
    on_screen: dict[str, float] = {}

    def attempt(variant: Variant) -> None:
        try:
            embed = embedder(variant)
            if embed is None:
                return
            vectors = as_array(embed(screen))
            if vectors.shape[1:] != candidate[screen[0]].shape:
                tried.append(Tried(variant.name, skipped=f"{vectors.shape[1]} dimensions, the candidate's "
                                                         f"{candidate[screen[0]].shape[0]}"))
                return
            compared = screen
            cos = _cosines(vectors, np.stack([candidate[t] for t in screen]))
            on_screen[variant.name] = float(cos.min())
            # a change that leaves these texts' vectors as they were (max_tokens on short texts, say) explains
            # nothing here, alone or in a pair
            same = bool(np.all(np.abs(cos - np.array([cosines[t] for t in screen])) <= SAME_AS_REFERENCE))
            if conforms(float(cos.min())) and len(texts) > len(screen):  # it may be the cause: every text decides
                vectors = np.vstack([vectors, as_array(embed(texts[len(screen):]))])
                compared = texts
                cos = _cosines(vectors, np.stack([candidate[t] for t in texts]))
            tried.append(Tried(variant.name, float(cos.min()), float(cos.mean()), len(compared),
                               same_as_reference=True if same else None))
        except Exception as err:  # noqa: BLE001 - a variant this model cannot run is reported, never a crash
            log.info("diagnosis: %s could not be tried: %s", variant.name, first_line(err, 160))
            tried.append(Tried(variant.name, skipped=first_line(err, 160)))

    for v in singles:  # in order, the cheapest first (the reference's own graph, then its other exports)
        attempt(v)
        if tried and conforms(tried[-1].worst):
            break  # it embeds like this one: the cause is named, the rest need not run
    if not any(conforms(t.worst) for t in tried):  # two changes, the closest
        moved = [t for t in _ranked(tried, on_screen) if t.worst is not None and not t.same_as_reference]
        for pair in pairs([t.variant for t in moved[:CLOSEST_PAIRED]]):
            attempt(pair)
    ranked = _ranked(tried, on_screen)  # the closest first, on the texts every variant was compared on
    own = min(cosines[t] for t in texts)
    own_on_screen = min(cosines[t] for t in screen)
    best = next((t for t in ranked if conforms(t.worst)), None)
    # the closest is named only where it comes closer than the reference's own settings
    closer = next((t for t in ranked if t.variant in on_screen and on_screen[t.variant] > own_on_screen + CLOSER),
                  None)
    return Diagnosis(best.variant if best else None, best.worst if best else (closer.worst if closer else None),
                     None if best or not closer else closer.variant, own, len(texts), ranked)


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
                      cosines: dict[str, float], threshold: float) -> Diagnosis:
    """The diagnosis from a receipt's recorded variants (``ReceiptEncoder.variants``: ``names``, ``texts``, and
    ``rows(name, texts)``), as ``diagnose`` makes it from a folder: the receipt's texts the candidate embedded, the
    drifted first; the singles in the order they were recorded, then the recorded pairs of the closest. Where the
    receipt holds none, or none of its texts drifted, ``variant`` is None and ``unavailable`` says why."""
    if not recorded or not recorded.get("names"):
        why = (recorded or {}).get("unavailable") or ("the receipt holds no variants' vectors (saved before "
                                                      "receipts carried them)")
        return Diagnosis(tried=[], unavailable=why)
    held = {t: cosines[t] for t in recorded["texts"] if t in cosines and t in candidate_rows}
    if not any(drifted(c, threshold) for c in held.values()):
        return Diagnosis(tried=[], unavailable=f"none of the receipt's {len(held)} diagnosis texts drifted (the drift "
                                               "is in texts it does not sample)")
    texts = diagnosis_texts(held, threshold, limit=len(held))
    names = recorded["names"]
    singles = [Variant(n, ()) for n in names if "+" not in n]

    def embedder(variant: Variant) -> Callable[[list[str]], np.ndarray] | None:
        return (lambda some: recorded["rows"](variant.name, some)) if variant.name in names else None

    def pairs(closest: list[str]) -> list[Variant]:
        return [Variant(n, ()) for n in names if "+" in n and set(n.split("+")) <= set(closest)]

    return _diagnosis(singles, embedder, texts, candidate_rows, held, threshold, pairs)


def _ranked(tried: Sequence[Tried], on_screen: dict[str, float] | None = None) -> list[Tried]:
    """The tried variants, the closest first: by their worst cosine (``on_screen``: on the screen texts, which
    every variant was compared on), then their mean."""
    def worst(t: Tried) -> float | None:
        return t.worst if on_screen is None else on_screen.get(t.variant)

    return sorted(tried, key=lambda t: (worst(t) is None, -(worst(t) or 0.0), -(t.mean or 0.0)))
