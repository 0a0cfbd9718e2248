"""The norm gate: a few of the protocol's texts embedded raw (not normalised) by both sides. Where the reference's
vectors are not unit vectors, each text's norm on the candidate over the reference's must be within NORM_TOLERANCE
of 1: a candidate that normalises when the model does not, or scales, drifts. Where the reference returns unit
vectors, a candidate that does not drifts too (dot-product users get other scores); where the reference can run
without its normalisation (a local model: ``variant``), the candidate's norms are compared with those, and
``variant`` is "normalize=off" where they are within NORM_TOLERANCE."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ....embeddings import Variants, as_array
from ....results.drift_findings import NORM_TOLERANCE, Norms

if TYPE_CHECKING:
    from . import DriftRun

STAGE = "scored"
STEP = ("norms", "compare the raw norms")
NORM_TEXTS = 16  # texts whose raw norms the norm gate compares


def applies(run: DriftRun) -> bool:
    return not run.receipt and not run.protocol_failed


def check(run: DriftRun) -> Norms:
    return norm_check(run.reference, run.candidate, run.groups[0].texts[:NORM_TEXTS])


def norm_check(reference: Any, candidate: Any, texts: list[str]) -> Norms:
    """How ``candidate``'s raw norms of ``texts`` compare with ``reference``'s: ``compared``, whether each side
    returns unit vectors, the worst ratio and its text, a ``finding`` where they differ, and where the reference
    can drop its normalisation, ``normalize_off_ratio`` (the worst against that) and ``variant``."""
    ref, cand = (as_array(side.encode(list(texts))).astype(np.float64) for side in (reference, candidate))
    rn, cn = np.linalg.norm(ref, axis=1), np.linalg.norm(cand, axis=1)
    unit = [bool(np.all(np.abs(n - 1) <= 1e-3)) for n in (rn, cn)]
    ratio = np.divide(cn, rn, out=np.full_like(cn, np.inf), where=rn > 0)
    k = int(np.argmax(np.abs(ratio - 1)))
    out = Norms(len(texts), unit[0], unit[1], float(ratio[k]), texts[k])
    if unit[0] and not unit[1]:
        out.finding = (f"the candidate's vectors are not unit vectors (norm {cn[k]:.4g} for {texts[k]!r}), the "
                       "reference's are: it does not normalise where the model does")
        if isinstance(reference, Variants):  # the reference without its Normalize: does the candidate embed like it?
            from .diagnosis import Variant

            off = reference.variant(Variant("normalize=off", (("normalize", False),)))
            raw = np.linalg.norm(as_array(off.encode(list(texts))).astype(np.float64), axis=1)
            ratios = np.divide(cn, raw, out=np.full_like(cn, np.inf), where=raw > 0)
            out.normalize_off_ratio = float(ratios[int(np.argmax(np.abs(ratios - 1)))])
            if abs(out.normalize_off_ratio - 1) <= NORM_TOLERANCE:
                out.variant = "normalize=off"
                out.finding += f" (its norms are the reference's with normalize=off, within {NORM_TOLERANCE:.0%})"
    elif not unit[0] and unit[1]:
        out.finding = (f"the candidate returns unit vectors, the reference does not (norm {rn[k]:.4g} for "
                       f"{texts[k]!r}): it normalises where the model does not")
    elif not unit[0] and not abs(ratio[k] - 1) <= NORM_TOLERANCE:
        out.finding = (f"the candidate's norm is {ratio[k]:.4g}x the reference's for {texts[k]!r} (more than "
                       f"{NORM_TOLERANCE:.0%} apart)")
    return out
