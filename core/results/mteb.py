"""The ``mteb/`` files of a result folder: one genuine MTEB task result per exam, and ``model_meta.json``.

In a process that has imported MTEB (a harness running fasteval) they are written through MTEB's own
``TaskResult`` (``fasteval.mteb.task_results``); otherwise the same JSON is written directly, so a plain sweep
never imports MTEB (and with it torch, 3 s). Either way ``mteb.TaskResult.from_disk`` loads them (a test holds
the two writers to the same content): ``{"dataset_revision", "task_name", "mteb_version", "scores": {"test":
[{...scores, "main_score", "hf_subset", "languages", "mteb_version"}]}, "evaluation_time", "kg_co2_emissions",
"date", "evaluation_phases"}``, scores rounded to 6 decimals as MTEB rounds them, on MTEB's 0-1 scale, from
``fasteval.mteb.scores_of``.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from fasteval.core.choices import exam_key
from fasteval.core.results.io import dumps
from fasteval.core.results.model import ModelResult

LANGUAGES = ["eng-Latn"]
MTEB_DIGITS = 6  # TaskResult.to_disk rounds every score to 6 decimals


def _model_meta(result: ModelResult) -> str:
    return dumps({"name": result.model, "revision": result.settings.get("key") or result.settings.get("onnx_sha256"),
                  "framework": ["ONNX", "fasteval"], "similarity_fn_name": result.settings.get("similarity", "cos"),
                  "fasteval_settings": result.settings})


def mteb_files(result: ModelResult) -> dict[str, str]:
    from fasteval.mteb import SPLIT, SUBSET, TASK_EXAMS, scores_of

    files = {"mteb/model_meta.json": _model_meta(result)}
    if not result.protocol or result.protocol != _paper_version():
        return files  # the tasks are the paper protocol's; another protocol's numbers are not these tasks'
    if "mteb" in sys.modules and sys.modules["mteb"] is not None:
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
            scores = {k: (round(v, MTEB_DIGITS) if isinstance(v, float) else v)
                      for k, v in scores_of(name, result.exams[key]).items()}
            version = _mteb_version()
            files[f"mteb/{name}.json"] = dumps({
                "dataset_revision": result.protocol, "task_name": name, "mteb_version": version,
                "scores": {SPLIT: [{**scores, "hf_subset": SUBSET, "languages": LANGUAGES, "mteb_version": version}]},
                "evaluation_time": float(result.timings.get(key, 0.0) or 0.0), "kg_co2_emissions": None,
                "date": None, "evaluation_phases": None})
    return files


def _mteb_version() -> str | None:
    """The installed MTEB's version (from its metadata, without importing it), else None."""
    import importlib.metadata

    try:
        return importlib.metadata.version("mteb")
    except importlib.metadata.PackageNotFoundError:
        return None


def _paper_version() -> str:
    from fasteval.core.protocol.paper import PROTOCOL_VERSION

    return PROTOCOL_VERSION
