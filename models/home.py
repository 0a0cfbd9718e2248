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
