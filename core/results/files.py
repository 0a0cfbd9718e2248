"""A model's result folder as files: ``results.json``, each exam's CSVs (PROTOCOL.md 1.6, 2.3, 3.6, and the
conversion exam's), and the
MTEB-shaped JSON. One model per file (the paper's notebook mixed earlier models into later files)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from fasteval.core.results.io import csv_text, dumps, to_jsonable
from fasteval.core.results.model import RESULT_FILE, ModelResult


def exam1_files(result, model_id: str) -> dict[str, str]:
    """``<model_id>_benchmark_full.csv`` (20 cells) and ``..._summary.csv`` (PROTOCOL.md 1.6), and the cells'
    intervals and variants in ``..._benchmark_intervals_variants.csv``."""
    full = [{"model": model_id, "unit": c.quantity, "range": c.range_name, "kendall": c.tau, "pairwise": c.pacc}
            for c in result.cells]
    extended = [{**row, **{k: getattr(c, k) for k in EXAM1_EXTENSION_COLUMNS}} for row, c in zip(full, result.cells)]
    return {
        f"{model_id}_benchmark_full.csv": csv_text(full, ["model", "unit", "range", "kendall", "pairwise"]),
        f"{model_id}_benchmark_summary.csv": csv_text(
            [{"model": model_id, **result.summary()}],
            ["model", "kendall_mean", "pairwise_mean", "kendall_std", "pairwise_std"]),
        # The extensions beside the paper's columns, in a file of their own (the paper's two keep their shape).
        f"{model_id}_benchmark_intervals_variants.csv": csv_text(
            extended, ["model", "unit", "range", "kendall", "pairwise", *EXAM1_EXTENSION_COLUMNS]),
    }


EXAM1_EXTENSION_COLUMNS = ("tau_ci_low", "tau_ci_high", "pacc_ci_low", "pacc_ci_high", "strict_tau",
                           "all_anchors_tau")


def exam2_files(result, model_id: str) -> dict[str, str]:
    """``<model_id>_lexical.csv``: the long table (PROTOCOL.md 2.3), 30 rows."""
    rows = [{"model": model_id, "group_type": r.group_type, "group": r.group, "reference": r.reference,
             "tau": r.tau, "n_pairs": r.n_pairs} for r in result.rows]
    return {f"{model_id}_lexical.csv": csv_text(rows, ["model", "group_type", "group", "reference", "tau",
                                                       "n_pairs"])}


def exam3_files(result, model_id: str) -> dict[str, str]:
    """The two CSVs of PROTOCOL.md 3.6."""
    from fasteval.core.exams.probe import Exam3Row

    full = [{"model": model_id, **asdict(r)} for r in result.rows]
    summary_cols = ["model", "kendall_mean", "pairwise_mean", "kendall_std", "pairwise_std", "kendall_cosine_mean",
                    "pairwise_cosine_mean", "kendall_cosine_std", "pairwise_cosine_std"]
    return {
        f"{model_id}_benchmark_full_regression_experiment.csv": csv_text(
            full, ["model"] + list(Exam3Row.__dataclass_fields__)),
        f"{model_id}_benchmark_summary_regression_experiment.csv": csv_text(
            [{"model": model_id, **result.summary()}], summary_cols),
    }


def conversion_files(result, model_id: str) -> dict[str, str]:
    """``<model_id>_conversion.csv``: one row per unit pair of the conversion exam."""
    from fasteval.core.exams.conversion import CSV_FIELDS

    rows = [{"model": model_id, **{k: getattr(r, k) for k in CSV_FIELDS}} for r in result.rows]
    return {f"{model_id}_conversion.csv": csv_text(rows, ["model", *CSV_FIELDS])}


WRITERS: dict[str, Callable[[Any, str], dict[str, str]]] = {
    "exam1": exam1_files, "exam2": exam2_files, "exam3": exam3_files, "conversion": conversion_files}


def result_files(result: ModelResult, key: str | None = None) -> dict[str, str]:
    """Every file of a model's result folder: results.json, each exam's CSVs, and MTEB-shaped JSON."""
    from fasteval.core.results.mteb import mteb_files

    payload = {"key": key, **to_jsonable(result)}
    for name, exam in result.exams.items():
        payload["exams"][name]["summary"] = exam.summary()
    files = {RESULT_FILE: dumps(payload)}
    for name, exam in result.exams.items():
        files.update(WRITERS[name](exam, result.model_id))
    files.update(mteb_files(result))
    return files
