"""`fasteval check`: does a model order your own quantities by physical distance?

One anchor and two or more candidates of the same dimension. Each candidate's physical distance from the
anchor (in the anchor's unit) against its similarity to the anchor: Kendall τ-b of similarity against
distance (scipy's sign convention: τ = kendalltau(similarity, −distance), positive = closer is more similar),
pairwise accuracy over the candidate pairs whose distances differ (right when the closer one is strictly more
similar), and every discordant pair (the physically farther one is strictly more similar), in words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fasteval.core.errors import InputError
from fasteval.core.quantities import ParsedQuantity, format_number, parse_quantity


@dataclass
class CheckedCandidate:
    text: str
    similarity: float
    distance: float  # |candidate - anchor|, in the anchor's unit
    unit: str  # the anchor's unit (pint's name)
    log_ratio: float | None  # log10(candidate / anchor) in one unit; None unless both are positive
    encoded_as: str  # what the encoder was given (the text, or its canonical form)


@dataclass
class CheckResult:
    model: str
    anchor: str
    candidates: list[CheckedCandidate]
    tau: float
    pacc: float
    discordant_pairs: list[tuple[str, str]]  # (closer_text, farther_text), the farther one more similar
    similarity: str = "cos"
    normalized: bool = False
    notes: list[str] = field(default_factory=list)

    def by_similarity(self) -> list[CheckedCandidate]:
        return sorted(self.candidates, key=lambda c: -c.similarity)

    def by_distance(self) -> list[CheckedCandidate]:
        return sorted(self.candidates, key=lambda c: c.distance)

    def discordant_lines(self) -> list[str]:
        """ "2 meters is more similar than 2000 meters, but 1998 m farther" for every discordant pair."""
        from fasteval.core.quantities import registry

        by_text = {c.text: c for c in self.candidates}
        lines = []
        for closer, farther in self.discordant_pairs:
            gap = by_text[farther].distance - by_text[closer].distance
            # The gap in the unit the farther text is written in ("1998 m" for "2 meters").
            gap_q = registry().Quantity(gap, by_text[farther].unit).to(parse_quantity(farther).unit)
            lines.append(f"{farther} is more similar than {closer}, but {format_number(gap_q.magnitude)} "
                         f"{gap_q.units:~P} farther")
        return lines

    def to_json(self) -> dict:
        from fasteval.core.results.io import to_jsonable

        return to_jsonable({"model": self.model, "anchor": self.anchor, "similarity": self.similarity,
                            "normalized": self.normalized,
                            "candidates": [{"text": c.text, "similarity": c.similarity, "distance": c.distance,
                                            "unit": c.unit, "log_ratio": c.log_ratio,
                                            "encoded_as": c.encoded_as} for c in self.candidates],
                            "tau": self.tau, "pacc": self.pacc,
                            "discordant_pairs": [list(p) for p in self.discordant_pairs], "notes": self.notes})


def parse_check_inputs(anchor: str, candidates: list[str]) -> tuple[ParsedQuantity, list[ParsedQuantity]]:
    """Parse the anchor and candidates; InputError for an unreadable text, another dimension, or < 2."""
    if len(candidates) < 2:
        raise InputError(f"fasteval check needs at least two candidates, got {len(candidates)}.",
                         "pass an anchor and two or more candidates, e.g. \"2 kilometers\" \"2000 meters\" "
                         "\"2 meters\".")
    parsed_anchor = parse_quantity(anchor)
    parsed = []
    for text in candidates:
        q = parse_quantity(text)
        if q.dimensionality != parsed_anchor.dimensionality:
            raise InputError(f"{text!r} is a {q.dimensionality} and the anchor {anchor!r} a "
                             f"{parsed_anchor.dimensionality}.",
                             "compare quantities of one dimension (lengths with lengths, masses with masses).")
        parsed.append(q)
    return parsed_anchor, parsed


def score_check(anchor: ParsedQuantity, candidates: list[ParsedQuantity], similarities: np.ndarray,
                model: str, similarity: str = "cos", encoded_as: list[str] | None = None) -> CheckResult:
    """Score precomputed candidate-to-anchor similarities against the physical distances."""
    from fasteval.core.kernels.kendall import kendall_tau_b, pairwise_accuracy

    sims = np.asarray(similarities, dtype=np.float64)
    distance = np.array([abs(q.to(anchor.unit) - anchor.value) for q in candidates])
    rows = []
    for k, q in enumerate(candidates):
        in_anchor_unit = q.to(anchor.unit)
        ratio = (math.log10(in_anchor_unit / anchor.value) if in_anchor_unit > 0 and anchor.value > 0 else None)
        rows.append(CheckedCandidate(q.text, float(sims[k]), float(distance[k]), anchor.unit, ratio,
                                     (encoded_as or [q.text for q in candidates])[k]))
    discordant = []
    for i in range(len(candidates)):
        for j in range(i + 1, len(candidates)):
            if distance[i] == distance[j]:
                continue
            closer, farther = (i, j) if distance[i] < distance[j] else (j, i)
            if sims[farther] > sims[closer]:
                discordant.append((candidates[closer].text, candidates[farther].text))
    notes = sorted({n for q in [anchor, *candidates] for n in q.notes})
    return CheckResult(model=model, anchor=anchor.text, candidates=rows, tau=kendall_tau_b(sims, -distance),
                       pacc=pairwise_accuracy(distance, sims, "skip"), discordant_pairs=discordant,
                       similarity=similarity, notes=notes)
