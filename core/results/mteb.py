"""Results in MTEB's result-JSON shape, so MTEB tooling can read them.

One ``mteb/<TaskName>.json`` per exam: ``{"task_name", "dataset_revision", "mteb_version", "scores":
{"test": [{"main_score", "hf_subset", "languages", ...metrics}]}, "evaluation_time", "kg_co2_emissions"}``,
plus ``mteb/model_meta.json``. Scores are on MTEB's 0-1 scale.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fasteval.core import protocol as P
from fasteval.core.results.io import dumps
from fasteval.core.results.model import ModelResult

TASKS = {
    "exam1": ("PhysScoreMeasurementGeometry", "Kendall tau of similarity vs physical distance to the anchor"),
    "exam2": ("PhysScoreLexicalNumeric", "Kendall tau-b of similarity vs numeric distance of bare numbers"),
    "exam3": ("PhysScoreProbe", "Kendall tau of a ridge probe on |e1 - e2| (item-level splits)"),
    "conversion": ("PhysScoreConversion", "Recall@1 of the equivalent quantity among 40 unit conversions"),
}
LANGUAGES = ["eng-Latn"]


def _entry(subset: str, main: float, **metrics: float) -> dict[str, Any]:
    return {"main_score": main, "hf_subset": subset, "languages": LANGUAGES, **metrics}


def _exam1_scores(exam) -> list[dict[str, Any]]:
    s = exam.summary()
    entries = [_entry("default", s["kendall_mean"], kendall=s["kendall_mean"], pairwise=s["pairwise_mean"],
                      avg=s["avg"] / 100)]
    for quantity in P.QUANTITIES:
        cells = [c for c in exam.cells if c.quantity == quantity]
        tau, pacc = float(np.mean([c.tau for c in cells])), float(np.mean([c.pacc for c in cells]))
        entries.append(_entry(quantity, tau, kendall=tau, pairwise=pacc))
    return entries


def _exam2_scores(exam) -> list[dict[str, Any]]:
    metrics = {f"{r.reference}_{r.group_type}_{r.group}".replace("-", "_"): r.tau for r in exam.rows}
    main = next(r.tau for r in exam.rows if r.group == "all" and r.reference == "num_dist")
    return [_entry("default", main, **metrics)]


def _exam3_scores(exam) -> list[dict[str, Any]]:
    s = exam.summary()
    return [_entry("default", s["kendall_mean"], kendall=s["kendall_mean"], pairwise=s["pairwise_mean"],
                   kendall_cosine=s["kendall_cosine_mean"], pairwise_cosine=s["pairwise_cosine_mean"])]


def _conversion_scores(exam) -> list[dict[str, Any]]:
    s = exam.summary()
    entries = [_entry("default", s["recall_at_1"], **s)]
    for r in exam.rows:
        entries.append(_entry(f"{r.unit_a}-{r.unit_b}", r.recall_at_1, recall_at_1=r.recall_at_1, mrr=r.mrr,
                              lexical_trap_rate=r.lexical_trap_rate))
    return entries


SCORERS = {"exam1": _exam1_scores, "exam2": _exam2_scores, "exam3": _exam3_scores,
           "conversion": _conversion_scores}


def mteb_files(result: ModelResult) -> dict[str, str]:
    files = {"mteb/model_meta.json": dumps({
        "name": result.model, "revision": result.settings.get("key") or result.settings.get("onnx_sha256"),
        "framework": ["ONNX", "fasteval"], "similarity_fn_name": result.settings.get("similarity", "cos"),
        "fasteval_settings": result.settings})}
    for name, exam in result.exams.items():
        task, description = TASKS[name]
        files[f"mteb/{task}.json"] = dumps({
            "dataset_revision": result.protocol, "task_name": task, "description": description,
            "mteb_version": None, "scores": {"test": SCORERS[name](exam)},
            "evaluation_time": result.timings.get(name), "kg_co2_emissions": None})
    return files
