"""drift's checks, as the exams are: one module a check, one line in ``CHECKS``. Each module says

* ``STAGE``: when it runs: "before" (the candidate asked before its vectors are read: the base64 parity), "scored"
  (once both sides' texts are embedded and scored) or "verdict" (once every other finding stands: the diagnosis
  explains a drift);
* ``STEP``: its name in the timings and the words its progress line shows;
* ``applies(run) -> bool``: whether it runs for this drift (a receipt reference, a failed protocol group, an
  encoder that cannot be asked, an option that turned it off);
* ``check(run) -> Finding``: what it found, typed (``core/results/drift_findings.py``: its reasons, lines, JSON
  and JUnit cases).

A check asks the encoders what they can do (the protocols of ``core.embeddings``: ``Variants``, ``FixedTexts``,
``Encodings``), never their class. ``DriftRun`` is what a check reads: the two plans, what was asked (the texts, the
options), each side's embeddings and the report scored so far.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ....embeddings import EmbeddingTable, FixedTexts
from ....plan import Plan, Scoring
from ....protocol.conformance import TextGroup
from ....results.drift import DriftReport
from ....results.drift_findings import Finding
from ..plan import PROTOCOL_GROUP, DriftOptions, DriftPlan
from . import base64, behaviours, diagnosis, identity, invariance, norms, physscore, token_counts, tokenization

# In the order they run within a stage (a report shows findings in ``drift_findings.FINDINGS``' order)
CHECKS = (base64, norms, token_counts, invariance, identity, behaviours, tokenization, physscore, diagnosis)
STAGES = ("before", "scored", "verdict")


@dataclass
class DriftRun:
    """One drift as its checks see it: the sides' plans (reference first; each replaced by its plan as it ran once
    it has embedded) and names, what was asked (``asked``: the options, drift's texts and encode calls), and, as it
    goes, each side's embeddings (``tables``), the texts both embedded (``maps``: each side's vector of each scored
    text, in the space both keep), the groups that failed, the texts a side refused, and the report."""
    plans: list[Plan]
    names: list[str]
    asked: DriftPlan
    timed: Callable[..., Any]
    tables: list[EmbeddingTable] = field(default_factory=list)
    maps: list[dict[str, Any]] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    refused: dict[str, list] = field(default_factory=dict)
    report: DriftReport | None = None

    @property
    def options(self) -> DriftOptions:
        return self.asked.options

    @property
    def groups(self) -> tuple[TextGroup, ...]:
        """drift's groups of texts, the protocol's first."""
        return self.asked.groups

    @property
    def calls(self) -> list[list[str]]:
        return self.asked.calls

    @property
    def scored(self) -> DriftReport:
        """The report as scored so far: what the "scored" and "verdict" stages' checks read."""
        if self.report is None:
            raise RuntimeError("drift's report is read before its texts are scored")
        return self.report

    @property
    def reference(self) -> Any:
        return self.plans[0].encoder

    @property
    def candidate(self) -> Any:
        return self.plans[1].encoder

    @property
    def scorings(self) -> list[Scoring]:
        return [p.scoring for p in self.plans]

    @property
    def receipt(self) -> bool:
        """Whether the reference is an encoder of a fixed text set (a receipt): it embeds nothing else."""
        return isinstance(self.reference, FixedTexts)

    @property
    def protocol_failed(self) -> bool:
        return PROTOCOL_GROUP in self.failed

    @property
    def floats(self) -> bool:
        """Whether both sides are compared as the floats they return (no store's vectors on either side)."""
        return all(s.vectors is None for s in self.scorings)


def run_checks(run: DriftRun, stage: str) -> list[Finding]:
    """Every check of ``stage`` (one of STAGES) that applies, in order, each timed: their findings (held by the
    report where there is one already)."""
    if stage not in STAGES:  # a misspelt stage would run no check, silently
        raise ValueError(f"drift has no stage {stage!r}; its stages: {', '.join(STAGES)}")
    found = []
    for check in CHECKS:
        if check.STAGE == stage and check.applies(run):
            with run.timed(*check.STEP):
                finding = check.check(run)
            found.append(finding)
            if run.report is not None:
                run.report.add(finding)
    return found
