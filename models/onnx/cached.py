"""An export's cache entry: its record (``fasteval_export.json``: what it came from, how it was made), whether an
entry is this very export whole (its source hash, dtype and graph), and copying one to an ``--out`` folder instead of
making it again. Shared by the export (``export.py``) and the exports made from it (``derive.py``)."""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from ...core.io import staged_folder
from ..sources.folder import file_hash

log = logging.getLogger(__name__)


def discard(entry: Path) -> None:
    """Remove a cache entry of ours, whatever it has become (a folder, a file, a link)."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def export_info(path: Path) -> dict:
    """The ``fasteval_export.json`` of an exported folder ({} when there is none)."""
    info = Path(path) / "fasteval_export.json"
    try:
        return json.loads(info.read_text()) if info.exists() else {}
    except (OSError, json.JSONDecodeError):
        return {}


def copied_from_cache(cached: Path, dest: Path, source_hash: str, dtype: str, recipe: Any = None) -> bool:
    """Whether an intact cache entry of this very export (the same source hash and dtype, the graph its recorded
    sha256, the same recipe for a derived one) was copied to ``dest``, an absent or empty ``--out`` folder: an
    export the cache holds is never made again."""
    info = export_info(cached)
    if not is_intact(cached, info, source_hash, dtype) or (recipe is not None and recipe_of(info) != recipe):
        return False
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        return False  # the caller says what is wrong with a folder that is in the way
    if dest.exists():
        dest.rmdir()
    with staged_folder(dest, replace=False, what=f"the {dtype} export") as staging:
        shutil.copytree(cached, staging, dirs_exist_ok=True)
    log.info("copied the cached %s export to %s (made once, from the same files)", dtype, dest)
    return True


def is_intact(dest: Path, info: dict, source_hash: str, dtype: str) -> bool:
    """Whether ``dest`` holds this export whole: its record names the source hash and dtype, and its graph is the
    one the record's sha256 names."""
    return (info.get("source_sha256") == source_hash and info.get("dtype") == dtype
            and (dest / "model.onnx").exists() and info.get("onnx_sha256") in (None, file_hash(dest / "model.onnx")))


def recipe_of(info: dict) -> tuple[Any, Any]:
    """The recipe a derived export was made with (older records called int8's ``quantization``) and the fp32 graph it
    was made from (its sha256)."""
    return info.get("recipe", info.get("quantization")), info.get("made_from")
