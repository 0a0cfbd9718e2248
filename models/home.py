"""Where fasteval keeps its cache (model folders, ONNX exports, embeddings, remembered hashes)."""
from __future__ import annotations

from pathlib import Path

from ..core.io import fasteval_home  # noqa: F401 (the cache root is core/io's: the runs read it too)


def writable_home() -> Path:
    """``fasteval_home()``, created if needed, once it is known to be a writable folder; OutputError naming
    FASTEVAL_HOME otherwise (a read-only or invalid cache root is the user's to fix, not an internal error).
    What killed exports, downloads and writes left there (a dead owner's staging) is cleaned on the way."""
    from ..core.io import check_writable, clean_stale

    home = check_writable(fasteval_home(), "fasteval's cache folder",
                          "set FASTEVAL_HOME to a writable folder (models, exports and embeddings are cached there).")
    for room in ("models", "onnx", "embeddings", ""):
        clean_stale(home / room)
    return home
