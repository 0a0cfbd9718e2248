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
  the candidate, or a finding gives a reason (the candidate depends on the batch, says it is another model or
  serves another precision than expected, (when asked) a collision, ...); else "conforms". Every "drifts" names its
  reasons (``DriftReport.reasons``).

What the checks found beside the cosines is a list of typed findings (``drift_findings.py``): the report loops over
them for its reasons, its JSON and (in the report room) its lines and JUnit cases.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from .drift_findings import FINDINGS, Collisions, Finding, PhysScore, read_records, record_json

DEFAULT_THRESHOLD = 0.99  # a text whose two embeddings' cosine is below this has drifted ...
COSINE_TOLERANCE = 1e-6  # ... by more than this: two identical models give cosines of 0.9999999999999991

F = TypeVar("F", bound=Finding)


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
class WorstText:
    """One of the worst texts: its group, the text (cut as a report names it) and its cosine."""
    group: str
    text: str
    cosine: float


@dataclass
class DriftReport:
    reference: str
    candidate: str
    threshold: float
    texts: int
    mean_cosine: float
    worst_cosine: float
    groups: dict[str, GroupDrift]
    worst: list[WorstText]
    neighbourhood_agreement: float
    # what the checks found (one of each kind at most, ``drift_findings.FINDINGS``), in the order they ran
    findings: list[Finding] = field(default_factory=list)
    cosines: dict[str, float] = field(default_factory=dict, repr=False)  # text -> cosine (not in the JSON)
    # groups whose drift is known and accepted (--accept): measured and shown, never a reason to drift
    accepted: list[str] = field(default_factory=list)
    # seconds per step: each side's embedding, each check, the scoring
    timings: dict[str, float] = field(default_factory=dict)

    def get(self, kind: type[F]) -> F:
        """The finding of that kind, or an empty one where its check did not run."""
        return next((f for f in self.findings if isinstance(f, kind)), None) or kind()

    def has(self, kind: type[Finding]) -> bool:
        return any(isinstance(f, kind) for f in self.findings)

    def add(self, finding: Finding) -> None:
        """Hold ``finding`` (in place of an earlier one of its kind)."""
        self.findings = [f for f in self.findings if type(f) is not type(finding)] + [finding]

    def shown(self) -> list[Finding]:
        """Every kind of finding in the order reports show them: the one found, else an empty one."""
        return [self.get(kind) for kind in FINDINGS]

    @property
    def reasons(self) -> list[str]:
        """Why the candidate drifts, each by name (empty: it conforms): a group whose worst text is below the
        threshold (less the stated tolerance; a NaN never conforms) or that failed, then each finding's reasons;
        the explaining findings' (another tokenization of the drifted texts) only beside those."""
        groups = self.drifted_groups
        out = [r for name, r in groups.items() if name not in self.accepted]
        if drifted(self.worst_cosine, self.threshold) and not groups:
            out.append(f"worst cosine {self.worst_cosine:.4f}")
        for f in self.shown():
            if not f.explains:
                out += f.reasons(self)
        if out:
            for f in self.shown():
                if f.explains:
                    out += f.reasons(self)
        return out

    @property
    def accepted_drift(self) -> list[str]:
        """The accepted groups that drifted, as ``reasons`` names them (shown beside a verdict they do not make)."""
        return [r for name, r in self.drifted_groups.items() if name in self.accepted]

    @property
    def drifted_groups(self) -> dict[str, str]:
        """Each group that failed or whose worst text is below the threshold (less the stated tolerance), in group
        order: its name -> its reason ("scripts 0.7796", "edge failed"); accepted groups too."""
        return {g.name: f"{g.name} failed" if g.failed else f"{g.name} {g.worst:.4f}" for g in self.groups.values()
                if g.failed or drifted(g.worst, self.threshold)}

    @property
    def verdict(self) -> str:
        """"conforms" only when nothing is wrong (``reasons`` is empty)."""
        return "drifts" if self.reasons else "conforms"

    def line(self, label: str) -> str:
        """One line: the cosines, the collisions and the PhysScore side (the export's fp16 / int8 report)."""
        p = self.get(PhysScore)
        side = (f"; Table 1 tau {p.reference_tau:.2f} -> {p.candidate_tau:.2f}, cells whose tau changed: "
                f"{len(p.cells_changed)} of 20" if p.ran else "")
        return (f"{label} on {self.texts} texts: cosine mean {self.mean_cosine:.5f}, worst {self.worst_cosine:.5f}; "
                f"collisions {self.get(Collisions).collided}{side}")

    def to_json(self) -> dict[str, Any]:
        from ..io import to_jsonable

        found = {k: v for f in self.shown() for k, v in f.to_json().items()}
        return to_jsonable({
            "reference": self.reference, "candidate": self.candidate, "verdict": self.verdict,
            "threshold": self.threshold, "texts": self.texts, "mean_cosine": self.mean_cosine,
            "worst_cosine": self.worst_cosine,
            "groups": {k: {"probes": g.probes, "n": g.n, "mean": g.mean, "worst": g.worst,
                           "share_below": g.share_below, "worst_text": g.worst_text, "failed": g.failed}
                       for k, g in self.groups.items()},
            "worst": [record_json(w) for w in self.worst], "neighbourhood_agreement": self.neighbourhood_agreement,
            "reasons": self.reasons, "accepted": self.accepted, "accepted_drift": self.accepted_drift,
            **found, "timings": self.timings})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DriftReport:
        """A report read back from its ``to_json`` (a drift.json): the same fields and findings; what the JSON
        leaves out (each text's cosine) is empty. KeyError or TypeError when it is not one."""
        known = {f.name for f in fields(cls)} - {"groups", "findings", "cosines", "worst"}
        groups = {name: GroupDrift(name=name, **g) for name, g in dict(data["groups"]).items()}
        findings = [f for kind in FINDINGS if (f := kind.from_json(data)) is not None]
        return cls(**{k: v for k, v in data.items() if k in known}, groups=groups, findings=findings,
                   worst=read_records(WorstText, data.get("worst")))


def drifted(cosine: float | None, threshold: float) -> bool:
    """The one rule of what has drifted: a cosine below ``threshold`` by more than COSINE_TOLERANCE, or not a number
    (the verdict, the groups, the table, the worst texts, JUnit, the tokenization compared and the diagnosis all ask
    it). None (nothing was scored) has not."""
    return cosine is not None and not cosine >= threshold - COSINE_TOLERANCE

