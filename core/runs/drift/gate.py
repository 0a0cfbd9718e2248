"""``fasteval.drift(reference, candidate)``: embed the protocol's texts and the conformance set with both encoders and
score how far the candidate drifts (``score.py``, into ``DriftReport``, ``core/results/drift.py``), then run the
checks' registry (``checks/``: each check a module, each finding typed). The one way
fasteval compares two encoders: ``fasteval drift`` (folders, registry names, URLs, receipts), the export's fp16
report and the int8 benchmark all go through it.

The request is planned once (``plan.py``: every limit, the texts, each side's scoring, refused before a model is
loaded or a text sent), and each side once (``fasteval.core.plan``: the one door, what it says it is, its embedding
key); the report reads each side's plan as it ran. The candidate is always
embedded afresh (a gate scores the deployment as it is now, never a cache of it); the reference comes from the
embedding cache when its identity is known (content hashes, or a served model's deployment) and a few of its
cached texts come back as cached (``cache.verified``). A group one side cannot embed (a server that refuses the
empty string) is reported as failed, not a crash. Two encoders of different dimensions are refused: they are
different models, and no cosine compares them. A receipt (``receipts.py``) is taken as a reference.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...embeddings import as_array
from ...errors import InputError
from ...plan import Plan, plan, step_timer
from ...protocol.conformance import TextGroup
from ...results.drift import DriftReport
from ...results.drift_findings import SIDES
from ...vectors import comparable
from .checks import DriftRun, run_checks
from .embed import embed_side
from .plan import DriftPlan, plan_drift
from .score import check_dimensions, score_drift

log = logging.getLogger(__name__)


def drift(reference: Any, candidate: Any, *, cache_root: Path | bool | None = None,
          labels: tuple[str, str] | None = None, on_step: Callable[[str], None] | None = None,
          asked: DriftPlan | None = None, **options: Any) -> DriftReport:
    """How far ``candidate`` embeds from ``reference`` (anything the one door takes: fasteval models, names,
    folders, URLs of served models, sentence-transformers models; the reference also a receipt file). What is
    asked: ``options``, as ``plan.plan_drift`` takes them (the texts: the paper's Exam 1 texts, embedded in the
    paper's grouping so the PhysScore side is each encoder's Table 1, the conformance set and a user's file; the
    threshold, the bootstrap of Δτ, the model id and precision expected, invariance and its tier, the groups
    accepted, what a vector store keeps of each side, the diagnosis), or ``asked``, a plan made once for several
    candidates. Each text's vectors are compared in the space both sides keep (``core.vectors.comparable``), and
    the PhysScore side scores each side's vectors as its store does. ``labels``: the two sides' names in the
    report; ``on_step``: told each step as it starts; ``cache_root``: the embedding cache (the reference's). When
    the candidate drifts and the reference can run as its usual misconfigurations, the diagnosis names the one it
    embeds like (``checks/diagnosis.py``; never changes the verdict). What else is checked, and when: the registry
    (``checks.CHECKS``)."""
    if asked is not None and options:
        raise InputError(f"drift takes a plan or its options, not both ({', '.join(sorted(options))}).",
                         "pass the options to plan_drift, or leave asked out.")
    asked = asked if asked is not None else plan_drift(**options)
    sides = [plan(reference, asked.scorings[0]), plan(candidate, asked.scorings[1])]
    return drift_planned(sides, asked, labels=labels, cache_root=cache_root, on_step=on_step)


def drift_planned(sides: list[Plan], asked: DriftPlan, *, labels: tuple[str, str] | list[str] | None = None,
                  cache_root: Path | bool | None = None,
                  on_step: Callable[[str], None] | None = None) -> DriftReport:
    """``drift`` of two planned sides (the reference first, each planned for ``asked.scorings``' own) under a
    request planned once. The report's identity reads each side's plan as it ran (settled: a GPU that fell back
    to the CPU says cpu)."""
    timings: dict[str, float] = {}
    names = list(labels) if labels else [p.name for p in sides]
    run = DriftRun(list(sides), names, asked, step_timer(on_step, timings))
    if run.receipt:
        _check_receipt(run)
    found = []
    for i, side in enumerate(SIDES):
        if side == "candidate":  # what the candidate is asked before its vectors are read
            found = run_checks(run, "before")
        shown = "read the reference's receipt" if side == "reference" and run.receipt else f"embed the {side}"
        like = (run.names[0], run.names[1], run.tables[0].dim) if run.tables else None
        with run.timed(f"embed {side}", shown):
            table, run.plans[i] = embed_side(run.plans[i], side, run.calls, list(run.groups[1:]), run.failed,
                                             run.refused, cache_root, fresh=side == "candidate", like=like)
            run.tables.append(table)
    with run.timed("score"):
        run.report = _score(run)
    for finding in found:
        run.report.add(finding)
    run.report.accepted, run.report.timings = list(asked.options.accept), timings
    run_checks(run, "scored")
    run_checks(run, "verdict")
    return run.report


def drift_candidates(reference: Any, candidates: list[Any], asked: DriftPlan, *, labels: list[str] | None = None,
                     reference_load: dict[str, Any] | None = None, candidate_load: dict[str, Any] | None = None,
                     on_step_for: Callable[[str], Callable[[str], None]] | None = None,
                     cache_root: Path | bool | None = None) -> list[DriftReport]:
    """``drift`` of each of ``candidates`` against ``reference`` under one plan (what `fasteval drift` runs): the
    reference loaded and planned once, each candidate through the one door, each side with its ``load_model``
    options (``reference_load``, ``candidate_load``: provider, dtype, prompt, batch size, served settings);
    ``labels`` the reference's and each candidate's names in the reports, ``on_step_for(label)`` each one's
    progress."""
    names = labels or [str(side) for side in (reference, *candidates)]
    ref = plan(reference, asked.scorings[0], **(reference_load or {}))
    return [drift_planned([ref, plan(candidate, asked.scorings[1], **(candidate_load or {}))], asked,
                          labels=(names[0], name), cache_root=cache_root,
                          on_step=on_step_for(name) if on_step_for else None)
            for candidate, name in zip(candidates, names[1:])]


def vector_stores(reference_dimensions: int | None = None, reference_vector_quantization: str | None = None,
                  candidate_dimensions: int | None = None, candidate_vector_quantization: str | None = None,
                  calibration: Any = None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What a store keeps of each side (reference, candidate) as ``plan_drift`` takes it, from the CLI's flags
    (``calibration``: the calibrated sides'; refused where no side is calibrated); None for a side compared as its
    floats."""
    from ...vectors import calibrated, vector_form

    asked = [(reference_dimensions, reference_vector_quantization), (candidate_dimensions,
                                                                     candidate_vector_quantization)]
    forms = [vector_form(d, q) for d, q in asked]  # validated (a name is checked, and spelled, once)
    quantizations = [f.quantization if f is not None else None for f in forms]
    if calibration is not None and not any(map(calibrated, quantizations)):
        vector_form(calibration=calibration)  # refuses it, in the words every command uses
    ref, cand = (None if d is None and q is None else
                 {"dimensions": d, "vector_quantization": q, "calibration": calibration if calibrated(q) else None}
                 for (d, _), q in zip(asked, quantizations))
    return ref, cand


def _check_receipt(run: DriftRun) -> None:
    """A receipt gates only the text set it was made for, holds no other calibration set, and is refused a
    candidate of another dimension before its rows are read (its headers said its dimension; a receipt may hold
    gigabytes): one text asked of the candidate, then the receipt read and checked whole."""
    receipt = run.reference
    if run.asked.calibration:
        raise InputError("A receipt holds drift's texts only, not another calibration set.",
                         "leave --calibration out (int8 is calibrated on Table 1's texts, which the receipt holds).")
    receipt.require(run.asked.texts)
    first = as_array(run.candidate.encode(run.calls[0][:1]))
    check_dimensions(run.names[0], run.names[1], receipt.dim, first.shape[1] if first.ndim == 2 else None)
    receipt.check()


def _score(run: DriftRun) -> DriftReport:
    """The two sides' vectors of every text both embedded, in the space both keep, scored (``score_drift``); a
    text one side refused as too long is left out of its group (a behaviour of that side, reported on its own)."""
    scored = [TextGroup(g.name, g.probes, [t for t in g.texts if t not in run.refused]) for g in run.groups]
    forms = [s.vectors for s in run.scorings]
    compared = (run.tables if run.floats or run.protocol_failed else
                comparable(run.tables, forms, run.scorings[0].table1_texts()))
    run.maps = [{t: table[[t]][0] for g in scored if g.name not in run.failed for t in g.texts} for table in compared]
    return score_drift(run.names[0], run.names[1], scored, run.maps[0], run.maps[1],
                       threshold=run.options.threshold, failed=run.failed,
                       fail_on_collisions=run.options.fail_on_collisions)


def export_drift(model: str, dest: str | Path) -> DriftReport:
    """How a derived export (fp16, int8: ``dest``) embeds against ``model``'s fp32 export, on the protocol's texts
    (no conformance set, no bootstrap): what `fasteval export --dtype` reports beside the export it made."""
    from ....models.loader import export_model, load_model

    return drift(load_model(str(export_model(model))), load_model(str(dest)), conformance=False, resamples=0)
