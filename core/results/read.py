"""Reading result folders back: ``results.json`` -> a ModelResult with typed exams.

Every number a report or a comparison shows comes from the same dataclasses that printed it at sweep time.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, TypeGuard

from ..exams import registry
from ..io import MAX_RESULT_BYTES, read_json  # noqa: F401 (re-exported: the one reader of fasteval's JSON files)
from .model import RESULT_FILE, ModelResult


# How deep below the folder a report is given it looks for result folders: a sweep's --out holds MODEL/KEY/ (2); a
# folder of sweeps one more, and one more of room. Deeper trees (a home folder, /tmp) are not walked whole.
MAX_RESULT_DEPTH = 4


def find_result_files(results_dir: Path, name: str = RESULT_FILE, max_depth: int = MAX_RESULT_DEPTH) -> list[Path]:
    """Every file called ``name`` (``results.json``; a drift report's ``drift.json``) under ``results_dir``, at most
    ``max_depth`` folders down: folders whose names start with '.' are skipped, links to folders are not followed,
    and a folder that holds one is not searched further (no result lies inside another)."""
    import os

    results_dir = Path(results_dir)
    found = []
    for here, dirs, files in os.walk(results_dir, onerror=lambda err: None):
        depth = len(Path(here).relative_to(results_dir).parts)
        if name in files:
            found.append(Path(here) / name)
            dirs.clear()
            continue
        dirs[:] = [] if depth >= max_depth else sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def is_fasteval_result(data: object) -> TypeGuard[dict[str, Any]]:
    """Whether a results.json's content is fasteval's (another tool's results.json is not read as one)."""
    return isinstance(data, dict) and "fasteval_version" in data and "model_id" in data and "exams" in data


def load_result(path: Path) -> ModelResult:
    """A results.json (as written by ``evaluate.result_files``) back into a ModelResult with typed exams.

    Raises ValueError (or OSError, KeyError, TypeError) when the file is not a readable fasteval result.
    """
    return read_result(path)[0]


def read_result(path: Path) -> tuple[ModelResult, dict[str, Any]]:
    """A results.json read once: its typed result, and the file's content as it was written (what the long table
    carries, never recomputed). Raises as ``load_result``."""
    data = read_json(path)
    if not is_fasteval_result(data) or not isinstance(data["exams"], dict):
        raise NotFastevalResult("not a fasteval result (no fasteval_version, model_id or exams)")
    exams = {e.key: e.result_type.from_json(data["exams"][e.key]) for e in registry() if e.key in data["exams"]}
    hf_id = data.get("hf_id")
    return ModelResult(model=str(data.get("model", data["model_id"])), model_id=data["model_id"],
                       settings=data.get("settings") or {}, protocol=data.get("protocol", ""),
                       fasteval_version=data.get("fasteval_version", ""), exams=exams,
                       timings=data.get("timings") or {}, usage=data.get("usage") or {},
                       machine=data.get("machine") or {}, hf_id=hf_id if isinstance(hf_id, str) else None), data


class NotFastevalResult(ValueError):
    """A results.json that another tool wrote: not fasteval's, so neither read nor warned about by a report."""


def finished_key(folder: Path) -> str | None:
    """The key a finished result folder was made under (its results.json says it), or None when that file is
    missing, unreadable or names no key: such a folder is not done."""
    try:
        data = read_json(Path(folder) / RESULT_FILE)
    except (OSError, ValueError):
        return None
    key = data.get("key") if isinstance(data, dict) else None
    return str(key) if key else None
