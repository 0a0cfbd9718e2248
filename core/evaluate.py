"""The library entry point: ``evaluate(encoder, exams=...)`` runs the exams on any encoder.

An encoder is a fasteval model (``fasteval.models.load_model``) or any object with
``encode(list[str]) -> array``; a sentence-transformers model works as it is.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from fasteval.core import protocol as P
from fasteval.core.embeddings import EmbeddingTable, Encoder, embed_groups
from fasteval.core.errors import InputError
from fasteval.core.results import ModelResult

EXAMS = (1, 2, 3)
METRICS = ("cos", "dot", "l2")


def check_exams(exams: Iterable[int | str]) -> tuple[int, ...]:
    exams = list(exams)
    try:
        chosen = tuple(sorted({int(e) for e in exams}))
    except ValueError:
        chosen = ()
    if not chosen or any(e not in EXAMS for e in chosen):
        raise InputError(f"Unknown exam selection {list(exams)!r}.",
                         f"choose from {', '.join(map(str, EXAMS))}, e.g. --exams 1,2,3.")
    return chosen


def evaluate(encoder: Encoder, *, exams: Iterable[int] = EXAMS, metric: str = "cos", name: str | None = None,
             settings: dict[str, Any] | None = None, table: EmbeddingTable | None = None) -> ModelResult:
    """Run the chosen exams of the paper protocol on ``encoder`` and return a ModelResult.

    Every distinct text is embedded once (Exams 1 and 3 share their texts), and the cell similarity
    matrices are computed once for Exams 1 and 3.
    """
    from fasteval import __version__
    from fasteval.core.exam1 import cell_similarities, exam1_groups, run_exam1
    from fasteval.core.exam2 import exam2_groups, run_exam2, tokenizer_ids
    from fasteval.core.exam3 import run_exam3

    exams = check_exams(exams)
    if metric not in METRICS:
        raise InputError(f"Unknown similarity {metric!r}.", f"use one of {', '.join(METRICS)}.")
    name = name or getattr(encoder, "name", None) or type(encoder).__name__
    settings = dict(settings if settings is not None else getattr(encoder, "info", {}) or {})
    settings["similarity"] = metric
    result = ModelResult(model=name, model_id=P.model_id(name), settings=settings,
                         protocol=P.PROTOCOL_VERSION, fasteval_version=__version__)
    groups: list[list[str]] = []
    if 1 in exams:
        groups += exam1_groups()
    elif 3 in exams:
        groups += [c.texts for c in P.exam1_cells()]
    if 2 in exams:
        groups += exam2_groups()
    start = time.perf_counter()
    table = embed_groups(encoder, groups, table)
    result.timings["embed"] = time.perf_counter() - start
    sims = None
    if 1 in exams or 3 in exams:
        start = time.perf_counter()
        sims = cell_similarities(table, metric)
        result.timings["similarity"] = time.perf_counter() - start
    if 1 in exams:
        start = time.perf_counter()
        result.exams["exam1"] = run_exam1(table, metric=metric, similarities=sims)
        result.timings["exam1"] = time.perf_counter() - start
    if 2 in exams:
        start = time.perf_counter()
        texts = exam2_groups()[0]
        result.exams["exam2"] = run_exam2(table, tokenizer_ids(encoder, texts), metric=metric)
        result.timings["exam2"] = time.perf_counter() - start
    if 3 in exams:
        start = time.perf_counter()
        result.exams["exam3"] = run_exam3(table, metric=metric, similarities=sims)
        result.timings["exam3"] = time.perf_counter() - start
    return result


def result_files(result: ModelResult) -> dict[str, str]:
    """Every file of a model's result folder: results.json plus each exam's CSVs."""
    from fasteval.core.exam1 import exam1_files
    from fasteval.core.exam2 import exam2_files
    from fasteval.core.exam3 import exam3_files
    from fasteval.core.results import RESULT_FILE, dumps, to_jsonable

    payload = to_jsonable(result)
    for key, exam in result.exams.items():
        payload["exams"][key]["summary"] = exam.summary()
    files = {RESULT_FILE: dumps(payload)}
    writers = {"exam1": exam1_files, "exam2": exam2_files, "exam3": exam3_files}
    for key, exam in result.exams.items():
        files.update(writers[key](exam, result.model, result.model_id))
    return files
