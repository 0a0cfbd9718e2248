"""The library entry point: ``evaluate(encoder, exams=...)`` runs the exams on any encoder.

An encoder is a fasteval model (``fasteval.models.load_model``) or any object with
``encode(list[str]) -> array``; a sentence-transformers model works as it is.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from fasteval.core import protocol as P
from fasteval.core.embeddings import Encoder, EmbeddingTable, embed_groups
from fasteval.core.errors import InputError
from fasteval.core.results import ModelResult

EXAMS = (1,)
METRICS = ("cos", "dot", "l2")


def _check(exams: Iterable[int], metric: str) -> tuple[int, ...]:
    exams = tuple(sorted(set(int(e) for e in exams)))
    unknown = [e for e in exams if e not in EXAMS]
    if unknown or not exams:
        raise InputError(f"Unknown exam(s) {unknown or exams}.", f"choose from {', '.join(map(str, EXAMS))}.")
    if metric not in METRICS:
        raise InputError(f"Unknown similarity {metric!r}.", f"use one of {', '.join(METRICS)}.")
    return exams


def evaluate(encoder: Encoder, *, exams: Iterable[int] = EXAMS, metric: str = "cos", name: str | None = None,
             settings: dict[str, Any] | None = None, table: EmbeddingTable | None = None) -> ModelResult:
    """Run the chosen exams of the paper protocol on ``encoder`` and return a ModelResult."""
    from fasteval import __version__
    from fasteval.core.exam1 import exam1_groups, run_exam1

    exams = _check(exams, metric)
    name = name or getattr(encoder, "name", None) or type(encoder).__name__
    settings = dict(settings if settings is not None else getattr(encoder, "info", {}) or {})
    settings["similarity"] = metric
    result = ModelResult(model=name, model_id=P.model_id(name), settings=settings,
                         protocol=P.PROTOCOL_VERSION, fasteval_version=__version__)
    groups: list[list[str]] = []
    if 1 in exams:
        groups += exam1_groups()
    start = time.perf_counter()
    table = embed_groups(encoder, groups, table)
    result.timings["embed"] = time.perf_counter() - start
    if 1 in exams:
        start = time.perf_counter()
        result.exams["exam1"] = run_exam1(table, metric=metric)
        result.timings["exam1"] = time.perf_counter() - start
    return result


def result_files(result: ModelResult) -> dict[str, str]:
    """Every file of a model's result folder: results.json plus each exam's CSVs."""
    from fasteval.core.exam1 import exam1_files
    from fasteval.core.results import RESULT_FILE, dumps, to_jsonable

    payload = to_jsonable(result)
    for key, exam in result.exams.items():
        if hasattr(exam, "summary"):
            payload["exams"][key]["summary"] = exam.summary()
    files = {RESULT_FILE: dumps(payload)}
    if "exam1" in result.exams:
        files.update(exam1_files(result.exams["exam1"], result.model, result.model_id))
    return files
