"""Reading result folders back: ``results.json`` -> a ModelResult with typed exams.

Every number a report or a comparison shows comes from the same dataclasses that printed it at sweep time.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from fasteval.core.exams.conversion import ConversionResult, ConversionRow
from fasteval.core.exams.geometry import AlignmentRow, CellResult, ConversionCurve, Exam1Result
from fasteval.core.exams.lexical import Exam2Result, Exam2Row
from fasteval.core.exams.probe import Exam3Result, Exam3Row
from fasteval.core.results.model import RESULT_FILE, ModelResult


def find_result_files(results_dir: Path) -> list[Path]:
    """Every ``results.json`` under ``results_dir`` at any depth, skipping folders whose names start with '.'."""
    results_dir = Path(results_dir)
    found = []
    for path in sorted(results_dir.rglob(RESULT_FILE)):
        if not any(part.startswith(".") for part in path.relative_to(results_dir).parts):
            found.append(path)
    return found


def _typed(cls, data: dict[str, Any]):
    """``cls(**data)`` for a result dataclass, keeping its own fields; JSON null in a float field -> NaN."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            kwargs[f.name] = math.nan if value is None and f.type == "float" else value
    return cls(**kwargs)


def _rows(d: dict[str, Any], key: str) -> list[dict[str, Any]]:
    rows = d[key]
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"empty or malformed {key!r}")
    return rows


def _exam1(d: dict[str, Any]) -> Exam1Result:
    return Exam1Result(metric=d.get("metric", "cos"), cells=[_typed(CellResult, c) for c in _rows(d, "cells")],
                       heatmaps=d.get("heatmaps") or {}, digits_words=d.get("digits_words") or {},
                       conversions=[_typed(ConversionCurve, c) for c in d.get("conversions") or []],
                       intervals=d.get("intervals") or {}, bootstrap=d.get("bootstrap"),
                       alignment=[_typed(AlignmentRow, a) for a in d.get("alignment") or []],
                       variant_intervals=d.get("variant_intervals") or {},
                       digits_words_texts=d.get("digits_words_texts") or {})


def _exam2(d: dict[str, Any]) -> Exam2Result:
    return Exam2Result(metric=d.get("metric", "cos"), rows=[_typed(Exam2Row, r) for r in _rows(d, "rows")],
                       token_ids_available=d.get("token_ids_available", True), notes=d.get("notes") or [])


def _exam3(d: dict[str, Any]) -> Exam3Result:
    return Exam3Result(metric=d.get("metric", "cos"), rows=[_typed(Exam3Row, r) for r in _rows(d, "rows")],
                       alphas=d.get("alphas") or {})


def _conversion(d: dict[str, Any]) -> ConversionResult:
    return ConversionResult(metric=d.get("metric", "cos"),
                            rows=[_typed(ConversionRow, r) for r in _rows(d, "rows")], notes=d.get("notes") or [])


EXAM_READERS = {"exam1": _exam1, "exam2": _exam2, "exam3": _exam3, "conversion": _conversion}


def load_result(path: Path) -> ModelResult:
    """A results.json (as written by ``evaluate.result_files``) back into a ModelResult with typed exams.

    Raises ValueError (or OSError, KeyError, TypeError) when the file is not a readable fasteval result.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "model_id" not in data or not isinstance(data.get("exams"), dict):
        raise ValueError("not a fasteval result (no model_id or exams)")
    exams = {key: EXAM_READERS[key](value) for key, value in data["exams"].items() if key in EXAM_READERS}
    return ModelResult(model=data.get("model", data["model_id"]), model_id=data["model_id"],
                       settings=data.get("settings") or {}, protocol=data.get("protocol", ""),
                       fasteval_version=data.get("fasteval_version", ""), exams=exams,
                       timings=data.get("timings") or {})
