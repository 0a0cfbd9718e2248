"""Where fasteval keeps its cache (model folders, ONNX exports, embeddings, remembered hashes)."""
from __future__ import annotations

import logging
import os
from pathlib import Path

from ...core.io import fasteval_home

log = logging.getLogger(__name__)


def usable_home() -> Path:
    """``fasteval_home()``, created if needed. A writable one is cleaned of what killed exports, downloads and
    writes left there (a dead owner's staging). A read-only one that exists is used as it is: what it already
    holds (a download, an export, embeddings) gives results, and only what it lacks fails, where it would be
    written. OutputError naming FASTEVAL_HOME when it is neither (not a folder, cannot be created)."""
    from ...core.io import HOME_FIX, check_writable, clean_stale

    home = fasteval_home()
    if home.is_dir() and not os.access(home, os.W_OK | os.X_OK):
        log.info("%s is read-only: using what it holds, caching nothing new", home)
        return home
    home = check_writable(home, "fasteval's cache folder", HOME_FIX)
    for room in ("models", "onnx", "embeddings", ""):
        clean_stale(home / room)
    return home

