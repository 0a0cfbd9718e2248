"""`fasteval check`: does a model order your own quantities by physical distance?

One anchor and one or more candidates of the same dimension. Each candidate's physical distance from the anchor (in
the anchor's unit) and its similarity to the anchor; with two or more candidates, the ranking: Kendall τ-b of
similarity against distance (scipy's sign convention: τ = kendalltau(similarity, −distance), positive = closer is
more similar), pairwise accuracy over the candidate pairs whose distances differ (right when the closer one is
strictly more similar), and the discordant pairs (the physically farther one is strictly more similar), in words.

Distances are differences: for offset units (degC, degF) they are in pint's delta units, and physically equal
distances are equal (``quantities.distances`` removes conversion noise), so they tie. Every discordant pair is
counted; the first ``DISCORDANT_LIST_LIMIT`` (the largest gaps first) are listed unless all are asked for.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..quantities import ParsedQuantity, delta_unit, distances, format_gap, parse_quantity

# The most candidates one check takes (its pairs are O(n^2)) and the discordant pairs listed by default.
MAX_CHECK_CANDIDATES = 1000
DISCORDANT_LIST_LIMIT = 20


@dataclass
class CheckedCandidate:
    text: str
    similarity: float
    distance: float  # |candidate - anchor|, in the anchor's (delta) unit; physically equal distances equal
    unit: str  # the unit of the distance (pint's name: the anchor's, or its delta unit for degC, degF)
    log_ratio: float | None  # log10(candidate / anchor) in one unit; None unless both are positive
    encoded_as: str  # what the encoder was given (the text, or its canonical form)

    @property
    def unit_symbol(self) -> str:
        """The distance's unit as pint abbreviates it ("kilometer" -> "km")."""
        from ..quantities import registry

        return f"{registry().Unit(self.unit):~P}"


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
    discordant_count: int = 0  # every discordant pair; ``discordant_pairs`` may list fewer
    anchor_encoded_as: str = ""  # what the encoder was given for the anchor
    significant: int = 3  # the inputs' significant digits: gaps are printed with this precision

    def by_similarity(self) -> list[CheckedCandidate]:
        return sorted(self.candidates, key=lambda c: -c.similarity)

    def discordant_lines(self) -> list[str]:
        """ "2 meters is more similar than 2000 meters, but 1.998 km farther" for every listed discordant pair:
        every gap in one unit, the anchor's (its difference unit for a temperature), as the distances are."""
        by_text = {c.text: c for c in self.candidates}
        lines = []
        for closer, farther in self.discordant_pairs:
            gap = by_text[farther].distance - by_text[closer].distance
            lines.append(f"{farther} is more similar than {closer}, but "
                         f"{format_gap(gap, by_text[farther].unit, self.significant)} farther")
        return lines

    def ranks(self) -> tuple[dict[str, int], dict[str, int]]:
        """(similarity rank, distance rank) of each candidate text, 1 the most similar / the closest; equal values
        share the lower rank (1, 1, 3)."""
        def shared(key) -> dict[str, int]:
            values = [key(c) for c in self.candidates]
            return {c.text: 1 + sum(v < key(c) for v in values) for c in self.candidates}

        return shared(lambda c: -c.similarity), shared(lambda c: c.distance)

    def to_json(self) -> dict:
        from ..io import to_jsonable

        return to_jsonable({"model": self.model, "anchor": self.anchor, "similarity": self.similarity,
                            "normalized": self.normalized,
                            "candidates": [{"text": c.text, "similarity": c.similarity, "distance": c.distance,
                                            "unit": c.unit, "log_ratio": c.log_ratio,
                                            "encoded_as": c.encoded_as} for c in self.candidates],
                            "anchor_encoded_as": self.anchor_encoded_as, "tau": self.tau, "pacc": self.pacc,
                            "discordant_count": self.discordant_count,
                            "discordant_pairs": [list(p) for p in self.discordant_pairs], "notes": self.notes})


def parse_check_inputs(anchor: str, candidates: list[str]) -> tuple[ParsedQuantity, list[ParsedQuantity]]:
    """Parse the anchor and candidates; InputError for an unreadable text, another dimension, or none."""
    if not candidates:
        raise InputError("fasteval check needs a candidate besides the anchor, got none.",
                         "pass an anchor and one or more candidates, e.g. \"2 kilometers\" \"2000 meters\" "
                         "\"2 meters\".")
    if len(candidates) > MAX_CHECK_CANDIDATES:
        raise InputError(f"fasteval check takes at most {MAX_CHECK_CANDIDATES} candidates, got {len(candidates)}.",
                         "split them into several checks, or run a protocol file with `fasteval sweep --protocol`.")
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
                model: str, similarity: str = "cos", encoded_as: list[str] | None = None,
                all_discordant: bool = False) -> CheckResult:
    """Score precomputed candidate-to-anchor similarities against the physical distances; every discordant
    pair counted, the first ``DISCORDANT_LIST_LIMIT`` (largest gap first) listed unless ``all_discordant``. One
    candidate has its similarity and distance and no ranking: τ and PACC are NaN (null in JSON)."""
    from ..kernels.small import kendall_tau_b, pairwise_accuracy  # a few values: numpy, no JIT to load

    sims = np.asarray(similarities, dtype=np.float64)
    distance = np.array(distances(anchor, candidates), dtype=np.float64)
    unit = delta_unit(anchor.unit)
    on_a_scale = unit != anchor.unit  # °C, °F: readings on a scale with an offset zero have no ratio
    rows = []
    for k, q in enumerate(candidates):
        in_anchor_unit = q.to(anchor.unit)
        ratio = (math.log10(in_anchor_unit / anchor.value)
                 if in_anchor_unit > 0 and anchor.value > 0 and not on_a_scale else None)
        rows.append(CheckedCandidate(q.text, float(sims[k]), float(distance[k]), unit, ratio,
                                     (encoded_as or [q.text for q in candidates])[k]))
    # pair (i, j) is discordant when i is strictly closer and j strictly more similar
    discordant = (distance[:, None] < distance[None, :]) & (sims[None, :] > sims[:, None])
    closer, farther = np.nonzero(discordant)
    order = np.lexsort((closer, -(distance[farther] - distance[closer])))  # largest gap first, then input order
    listed = order if all_discordant else order[:DISCORDANT_LIST_LIMIT]
    notes = sorted({n for q in [anchor, *candidates] for n in q.notes})
    if on_a_scale:
        notes.append(f"no log10 ratio: {anchor.unit} readings sit on a scale whose zero is not 'no temperature', so "
                     "their ratio means nothing (distances are temperature differences)")
    ranked = len(candidates) > 1
    return CheckResult(model=model, anchor=anchor.text, candidates=rows,
                       tau=kendall_tau_b(sims, -distance) if ranked else math.nan,
                       pacc=pairwise_accuracy(distance, sims, "skip") if ranked else math.nan,
                       discordant_pairs=[(candidates[closer[k]].text, candidates[farther[k]].text) for k in listed],
                       similarity=similarity, notes=notes, discordant_count=int(len(closer)),
                       anchor_encoded_as=anchor.text,
                       significant=max(q.significant for q in [anchor, *candidates]))
