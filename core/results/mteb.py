"""The ``mteb/`` files of a result folder: one genuine MTEB task result per exam, and ``model_meta.json``.

With MTEB installed they are written through MTEB's own ``TaskResult`` (``fasteval.mteb.task_results``), so
``mteb.TaskResult.from_disk`` loads them; without it, the same JSON shape is written directly: ``{"task_name",
"dataset_revision", "mteb_version", "scores": {"test": [{"main_score", "hf_subset", "languages", ...}]},
"evaluation_time", "kg_co2_emissions", "date"}``. Scores are on MTEB's 0-1 scale; the scores of each task come
from ``fasteval.mteb.scores_of``, whichever way they are written.
"""
from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

from fasteval.core.choices import exam_key
from fasteval.core.results.io import dumps
from fasteval.core.results.model import ModelResult

LANGUAGES = ["eng-Latn"]


def _model_meta(result: ModelResult) -> str:
    return dumps({"name": result.model, "revision": result.settings.get("key") or result.settings.get("onnx_sha256"),
                  "framework": ["ONNX", "fasteval"], "similarity_fn_name": result.settings.get("similarity", "cos"),
                  "fasteval_settings": result.settings})


def mteb_files(result: ModelResult) -> dict[str, str]:
    from fasteval.mteb import SPLIT, SUBSET, TASK_EXAMS, scores_of

    files = {"mteb/model_meta.json": _model_meta(result)}
    if not result.protocol or result.protocol != _paper_version():
        return files  # the tasks are the paper protocol's; another protocol's numbers are not these tasks'
    if importlib.util.find_spec("mteb") is not None:
        from fasteval.mteb import task_results

        with tempfile.TemporaryDirectory() as tmp:
            for task in task_results(result):
                path = Path(tmp) / f"{task.task_name}.json"
                task.to_disk(path)
                files[f"mteb/{task.task_name}.json"] = path.read_text(encoding="utf-8")
        return files
    for name, exam in TASK_EXAMS.items():
        key = exam_key(exam)
        if key in result.exams:
            scores = scores_of(name, result.exams[key])
            files[f"mteb/{name}.json"] = dumps({
                "dataset_revision": result.protocol, "task_name": name, "mteb_version": None,
                "scores": {SPLIT: [{**scores, "hf_subset": SUBSET, "languages": LANGUAGES}]},
                "evaluation_time": result.timings.get(key), "kg_co2_emissions": None, "date": None})
    return files


def _paper_version() -> str:
    from fasteval.core.protocol.paper import PROTOCOL_VERSION

    return PROTOCOL_VERSION
