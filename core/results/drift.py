"""The drift report: what ``fasteval drift`` found, typed, with its verdict, and read back from its drift.json
(``DriftReport.from_json``: the report room's drift table). What it holds:

* per text, the cosine of its reference and candidate embeddings (both L2-normalised);
* per group (the protocol's texts, and each group of the conformance set), the mean, the worst and the share
  below the threshold;
* **collisions**: pairs of distinct texts the reference keeps apart (cosine < ``COLLISION_APART``) that the
  candidate makes near-identical (cosine >= ``COLLISION_SAME``): "résumé" and "resume" once accents are
  stripped, every all-caps text once case is folded;
* **neighbourhood agreement**: for each text, the share of its ``NEIGHBOURS`` nearest texts that both
  encoders agree on;
* the **PhysScore side**: Table 1 τ and PACC of both, the cells whose τ changed, and the paired bootstrap Δτ
  (candidate − reference) with its 95% interval (the ``compare`` machinery);
* a **verdict**: "drifts" when the worst cosine is below the threshold, a group the reference embeds fails on
  the candidate, the candidate depends on the batch, says it is another model or serves another precision than
  expected, or (when asked) there is a collision; else "conforms". Every "drifts" names its reasons
  (``DriftReport.reasons``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

DEFAULT_THRESHOLD = 0.99  # a text whose two embeddings' cosine is below this has drifted ...
COSINE_TOLERANCE = 1e-6  # ... by more than this: two identical models give cosines of 0.9999999999999991
# a text's cosine in another batch to itself alone below this: the candidate depends on the batch
INVARIANCE_MIN = 0.999
# Where the reference's vectors are not unit vectors (its pipeline has no Normalize), each text's norm on the
# candidate may differ from the reference's by this share at most (embed-parity's 5%): dot-product and Euclidean
# users see a norm that cosine users do not.
NORM_TOLERANCE = 0.05


# The PhysScore side's keys (``score.physscore_drift``), written at the top level of drift.json.
PHYSSCORE_KEYS = ("reference_tau", "candidate_tau", "reference_pacc", "candidate_pacc", "delta_tau", "cells_changed",
                  "delta_tau_ci_low", "delta_tau_ci_high")


@dataclass
class GroupDrift:
    name: str
    probes: str
    n: int
    mean: float | None  # None: the candidate (or the reference) failed on the group
    worst: float | None
    share_below: float | None
    worst_text: str | None = None
    failed: str | None = None  # why the group could not be embedded ("candidate: ...")


@dataclass
class DriftReport:
    reference: str
    candidate: str
    threshold: float
    texts: int
    mean_cosine: float
    worst_cosine: float
    groups: dict[str, GroupDrift]
    worst: list[dict[str, Any]]  # the worst texts: group, text, cosine
    collisions: list[dict[str, Any]]  # text_a, text_b, reference_cosine, candidate_cosine, groups (the first listed)
    neighbourhood_agreement: float
    physscore: dict[str, Any] = field(default_factory=dict)
    fail_on_collisions: bool = False
    # how many collisions there are (``collisions`` lists the first COLLISIONS_LISTED); None: as many as listed
    collision_count: int | None = None
    # what a side does that is not drift: inputs it refuses as too long where the other embeds them (one finding
    # per side and group: side, model, group, behaviour, texts, shortest_chars, message)
    behaviours: list[dict[str, Any]] = field(default_factory=list)
    # who each side says it is (a served model: its /models entry and server info; a local one: its hashes)
    identity: dict[str, Any] = field(default_factory=dict)
    identity_mismatch: str | None = None  # --expect-model: why the candidate is not the model expected
    identity_match: str | None = None  # --expect-model: how the candidate's id names it ("exactly", a path's end)
    # the candidate's batch and concurrency invariance (invariance.py): condition, worst, text | skipped
    invariance: list[dict[str, Any]] = field(default_factory=list)
    # the weights' precision each side states (f32, f16, bf16, q8_0, q4_0, int8, ...; None: not stated), and why
    # the candidate's is not the one expected (the reference's, or --expect-precision)
    precision: dict[str, str | None] = field(default_factory=dict)
    precision_mismatch: str | None = None
    # how each side tokenizes the drifted texts, where both can say (a local tokenizer, a server's /tokenize):
    # compared, differ (other ids), truncated (the same ids, one side cut short), examples
    tokenization: dict[str, Any] = field(default_factory=dict)
    cosines: dict[str, float] = field(default_factory=dict, repr=False)  # text -> cosine (not in the JSON)
    # groups whose drift is known and accepted (--accept): measured and shown, never a reason to drift
    accepted: list[str] = field(default_factory=list)
    # seconds per step: each side's embedding, the batch probe, the tokenizer comparison, the scoring and Table 1
    timings: dict[str, float] = field(default_factory=dict)
    # which usual misconfiguration of the reference the candidate embeds like (core/runs/drift/diagnosis.py): only
    # for a drifting candidate of a local reference; None (and absent from the JSON) otherwise
    diagnosis: dict[str, Any] | None = None
    # the invariance gate's tier (choices.INVARIANCE_TIERS): "bitwise" drifts at any difference of a number
    invariance_tier: str = "cosine"
    # the norm gate (gate.norm_check): how many texts' raw norms were compared, whether each side returns unit
    # vectors, the candidate's worst norm over the reference's and its text; empty where not compared
    norms: dict[str, Any] = field(default_factory=dict)
    # token-count parity (gate.token_counts): a served candidate's usage.prompt_tokens for texts sent one a request
    # against the reference tokenizer's count; reported, never gated (servers count by their own conventions)
    token_counts: dict[str, Any] = field(default_factory=dict)
    # base64 against float (gate.base64_parity): the same texts asked both ways of a served candidate
    base64: dict[str, Any] = field(default_factory=dict)

    @property
    def reasons(self) -> list[str]:
        """Why the candidate drifts, each by name (empty: it conforms): a group whose worst text is below the
        threshold (less the stated tolerance; a NaN never conforms) or that failed, a batch condition below
        INVARIANCE_MIN, another identity or precision, (when asked) collisions; and, as the explanation of drifted
        texts, that the candidate tokenizes them into other ids, or cuts them at another length."""
        groups = self.drifted_groups
        out = [r for name, r in groups.items() if name not in self.accepted]
        if drifted_at(self.threshold)(self.worst_cosine) and not groups:
            out.append(f"worst cosine {self.worst_cosine:.4f}")
        out += [f"batch: {r['condition']} {r['worst']:.4f}" for r in self.invariance
                if r.get("worst") is not None and not r["worst"] >= INVARIANCE_MIN]
        if self.invariance_tier == "bitwise":
            out += [f"bitwise: {r['condition']} differs by {r['max_abs']:.1e}" for r in self.invariance
                    if r.get("worst") is not None and r["worst"] >= INVARIANCE_MIN and r.get("max_abs")]
        if self.norms.get("finding"):
            out.append("norms: " + self.norms["finding"])
        if self.base64.get("finding"):
            out.append("base64: " + self.base64["finding"])
        if self.identity_mismatch:
            out.append("identity: " + self.identity_mismatch)
        if self.precision_mismatch:
            out.append("precision: " + self.precision_mismatch)
        if self.fail_on_collisions and self.collisions:
            out.append(f"{self.collided} collision(s)")
        t = self.tokenization
        if out and t.get("differ"):
            out.append(f"tokenizer: {t['differ']} of {t['compared']} drifted texts tokenized differently")
        if out and t.get("truncated"):
            limits = [self.identity.get(side, {}).get("max_tokens") for side in ("reference", "candidate")]
            out.append(f"truncation: {t['truncated']} drifted text(s) cut at another length" +
                       (f" (the reference takes {limits[0]} tokens, the candidate {limits[1]})" if all(limits) else ""))
        return out

    @property
    def accepted_drift(self) -> list[str]:
        """The accepted groups that drifted, as ``reasons`` names them (shown beside a verdict they do not make)."""
        return [r for name, r in self.drifted_groups.items() if name in self.accepted]

    @property
    def drifted_groups(self) -> dict[str, str]:
        """Each group that failed or whose worst text is below the threshold (less the stated tolerance), in group
        order: its name -> its reason ("scripts 0.7796", "edge failed"); accepted groups too."""
        drifted = drifted_at(self.threshold)
        return {g.name: f"{g.name} failed" if g.failed else f"{g.name} {g.worst:.4f}" for g in self.groups.values()
                if g.failed or (g.worst is not None and drifted(g.worst))}

    @property
    def verdict(self) -> str:
        """"conforms" only when nothing is wrong (``reasons`` is empty)."""
        return "drifts" if self.reasons else "conforms"

    @property
    def collided(self) -> int:
        """How many collisions there are (``collisions`` lists the first of them)."""
        return len(self.collisions) if self.collision_count is None else self.collision_count

    def line(self, label: str) -> str:
        """One line: the cosines, the collisions and the PhysScore side (the export's fp16 / int8 report)."""
        p = self.physscore
        side = (f"; Table 1 tau {p['reference_tau']:.2f} -> {p['candidate_tau']:.2f}, cells whose tau changed: "
                f"{len(p['cells_changed'])} of 20" if p else "")
        return (f"{label} on {self.texts} texts: cosine mean {self.mean_cosine:.5f}, worst {self.worst_cosine:.5f}; "
                f"collisions {self.collided}{side}")

    def to_json(self) -> dict[str, Any]:
        from ..io import to_jsonable

        return to_jsonable({
            "reference": self.reference, "candidate": self.candidate, "verdict": self.verdict,
            "threshold": self.threshold, "texts": self.texts, "mean_cosine": self.mean_cosine,
            "worst_cosine": self.worst_cosine,
            "groups": {k: {"probes": g.probes, "n": g.n, "mean": g.mean, "worst": g.worst,
                           "share_below": g.share_below, "worst_text": g.worst_text, "failed": g.failed}
                       for k, g in self.groups.items()},
            "worst": self.worst, "collisions": self.collisions, "collision_count": self.collided,
            "neighbourhood_agreement": self.neighbourhood_agreement, "behaviours": self.behaviours,
            "identity": self.identity, "identity_mismatch": self.identity_mismatch,
            "identity_match": self.identity_match, "invariance": self.invariance,
            "precision": self.precision, "precision_mismatch": self.precision_mismatch,
            "tokenization": self.tokenization, "reasons": self.reasons, "accepted": self.accepted,
            "accepted_drift": self.accepted_drift, **self.physscore, "timings": self.timings,
            **({"diagnosis": self.diagnosis} if self.diagnosis is not None else {}),
            **({"invariance_tier": self.invariance_tier} if self.invariance_tier != "cosine" else {}),
            **({"norms": self.norms} if self.norms else {}),
            **({"token_counts": self.token_counts} if self.token_counts else {}),
            **({"base64": self.base64} if self.base64 else {})})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DriftReport:
        """A report read back from its ``to_json`` (a drift.json): the same fields, the PhysScore side gathered
        again; what the JSON leaves out (each text's cosine) is empty. KeyError or TypeError when it is not one."""
        known = {f.name for f in fields(cls)}
        groups = {name: GroupDrift(name=name, **g) for name, g in dict(data["groups"]).items()}
        physscore = {k: data[k] for k in PHYSSCORE_KEYS if k in data}
        return cls(**{k: v for k, v in data.items() if k in known and k not in ("groups", "physscore")},
                   groups=groups, physscore=physscore)


def drifted_at(threshold: float):
    """Whether a cosine has drifted under ``threshold``: below it by more than COSINE_TOLERANCE, or not a
    number."""
    return lambda cosine: not (cosine >= threshold - COSINE_TOLERANCE)
