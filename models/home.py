"""Where fasteval keeps its cache (model folders, ONNX exports, embeddings, remembered hashes)."""
from __future__ import annotations

import os
from pathlib import Path


def fasteval_home() -> Path:
    """The cache root: $FASTEVAL_HOME, else $XDG_CACHE_HOME/fasteval, else ~/.cache/fasteval."""
    if os.environ.get("FASTEVAL_HOME"):
        return Path(os.environ["FASTEVAL_HOME"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fasteval"


def writable_home() -> Path:
    """``fasteval_home()``, created if needed, once it is known to be a writable folder; OutputError naming
    FASTEVAL_HOME otherwise (a read-only or invalid cache root is the user's to fix, not an internal error).
    What killed exports, downloads and writes left there (a dead owner's staging) is cleaned on the way."""
    from fasteval.core.io import check_writable, clean_stale

    home = check_writable(fasteval_home(), "fasteval's cache folder",
                          "set FASTEVAL_HOME to a writable folder (models, exports and embeddings are cached there).")
    for room in ("models", "onnx", "embeddings", ""):
        clean_stale(home / room)
    return home
