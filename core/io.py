"""The ground floor of reading and writing: typed objects <-> strict JSON (NaN as null), CSV and Markdown; atomic
files and staged folders. Every room (results, reports, models, runs) writes through here.

Every folder fasteval writes (a model's results, a report, a downloaded model, an ONNX export) is assembled
in a hidden staging folder beside its destination and renamed into place (``staged_folder``), so a crash
never leaves a half-written folder where a reader (or a resumed sweep) would take it for done.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from fasteval.core.errors import OutputError

def to_jsonable(obj: Any) -> Any:
    """Dataclasses, numpy scalars/arrays, tuples -> plain JSON types; NaN and inf -> None."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def typed(cls, data: dict[str, Any]):
    """``cls(**data)`` for a result dataclass, keeping its own fields; JSON null in a float field -> NaN."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            kwargs[f.name] = math.nan if value is None and f.type == "float" else value
    return cls(**kwargs)


def dumps(obj: Any) -> str:
    """Strict JSON: NaN/inf become null, and anything else non-standard raises."""
    return json.dumps(to_jsonable(obj), indent=1, allow_nan=False, ensure_ascii=False) + "\n"


def csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None or (isinstance(v, float) and not math.isfinite(v)) else v)
                         for k, v in ((c, row.get(c)) for c in columns)})
    return buf.getvalue()


def markdown_table(rows: list[dict[str, Any]], columns: list[str], floatfmt: str = "{:.3f}") -> str:
    def fmt(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "—"
        return floatfmt.format(v) if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (str, as UTF-8) or bytes to ``path`` via a temporary file in the same folder and os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_writable(folder: Path) -> Path:
    """Create ``folder`` if needed and prove we can write there; OutputError otherwise."""
    folder = Path(folder).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise OutputError(f"Cannot write to the output folder {folder}: {err.strerror or err}.",
                          "pass a writable folder with --out DIR.") from None
    return folder


@contextmanager
def staged_folder(dest: Path, replace: bool = True, what: str = "results") -> Iterator[Path]:
    """The one way fasteval writes a folder: yield a hidden staging folder beside ``dest``; when the block
    ends cleanly it becomes ``dest`` in one rename, else it is removed. Nothing half-written is ever at ``dest``.

    ``replace``: an existing ``dest`` is replaced whole (results, reports); otherwise an existing ``dest`` wins
    and the staged copy is dropped (downloads and exports: another process finished the same work first).
    """
    dest = Path(dest).expanduser()
    check_writable(dest.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.staging-", dir=dest.parent))
    try:
        staging.chmod(0o755)  # mkdtemp makes it private (0700); results and caches are meant to be shared
        yield staging
        if dest.exists() and replace:
            trash = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
            os.replace(dest, trash / "old")
            os.replace(staging, dest)
            shutil.rmtree(trash, ignore_errors=True)
        elif not dest.exists():
            os.replace(staging, dest)
    except OSError as err:
        raise OutputError(f"Could not write {what} to {dest}: {err.strerror or err}.",
                          "free disk space or pass another folder with --out DIR.") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_result_folder(dest: Path, files: dict[str, str | bytes], what: str = "results") -> Path:
    """Write ``files`` (relative name -> text or bytes) as the folder ``dest``, all at once (``staged_folder``);
    an existing ``dest`` is replaced whole."""
    with staged_folder(dest, what=what) as staging:
        for name, content in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
    return Path(dest).expanduser()
