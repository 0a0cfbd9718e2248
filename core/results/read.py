"""Reading result folders back: ``results.json`` -> a ModelResult with typed exams.

Every number a report or a comparison shows comes from the same dataclasses that printed it at sweep time.
"""
from __future__ import annotations

from pathlib import Path

from ..exams import registry
from ..io import MAX_RESULT_BYTES, read_json  # noqa: F401 (re-exported: the one reader of fasteval's JSON files)
from .model import RESULT_FILE, ModelResult


def find_result_files(results_dir: Path) -> list[Path]:
    """Every ``results.json`` under ``results_dir`` at any depth, skipping folders whose names start with '.'."""
    results_dir = Path(results_dir)
    found = []
    for path in sorted(results_dir.rglob(RESULT_FILE)):
        if not any(part.startswith(".") for part in path.relative_to(results_dir).parts):
            found.append(path)
    return found


def load_result(path: Path) -> ModelResult:
    """A results.json (as written by ``evaluate.result_files``) back into a ModelResult with typed exams.

    Raises ValueError (or OSError, KeyError, TypeError) when the file is not a readable fasteval result.
    """
    data = read_json(path)
    if not isinstance(data, dict) or "model_id" not in data or not isinstance(data.get("exams"), dict):
        raise ValueError("not a fasteval result (no model_id or exams)")
    exams = {e.key: e.result_type.from_json(data["exams"][e.key]) for e in registry() if e.key in data["exams"]}
    return ModelResult(model=str(data.get("model", data["model_id"])), model_id=data["model_id"],
                       settings=data.get("settings") or {}, protocol=data.get("protocol", ""),
                       fasteval_version=data.get("fasteval_version", ""), exams=exams,
                       timings=data.get("timings") or {}, usage=data.get("usage") or {})


def finished_key(folder: Path) -> str | None:
    """The key a finished result folder was made under (its results.json says it), or None when that file is
    missing, unreadable or names no key: such a folder is not done."""
    try:
        data = read_json(Path(folder) / RESULT_FILE)
    except (OSError, ValueError):
        return None
    key = data.get("key") if isinstance(data, dict) else None
    return str(key) if key else None
