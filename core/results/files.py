"""A model's result folder as files: ``results.json``, each exam's CSVs (PROTOCOL.md 1.6, 2.3, 3.6, and the
conversion exam's), and the
MTEB-shaped JSON. One model per file (the paper's notebook mixed earlier models into later files)."""
from __future__ import annotations

from pathlib import Path

from ..exams import registry
from ..io import dumps, to_jsonable
from .model import RESULT_FILE, ModelResult


def result_files(result: ModelResult, key: str | None = None) -> dict[str, str]:
    """Every file of a model's result folder: results.json, each exam's CSVs, and MTEB-shaped JSON."""
    from ..published import beside
    from .mteb import mteb_files

    mteb = mteb_files(result)
    published = beside(result).to_json()
    payload = {"key": key, **to_jsonable(result)}
    for name, exam in result.exams.items():
        payload["exams"][name]["summary"] = exam.summary()
    if published:
        payload["published"] = published
    files = {RESULT_FILE: dumps(payload)}
    for e in registry():
        if e.key in result.exams:
            files.update(e.files(result.exams[e.key], result.model_id))
    files.update(mteb)
    return files


def write_result(folder: Path, result: ModelResult, key: str) -> Path:
    """``result`` written as the folder ``folder`` under ``key``, all at once (``io.write_result_folder``)."""
    from ..io import write_result_folder

    files = result_files(result, key=key)
    return write_result_folder(folder, files)
