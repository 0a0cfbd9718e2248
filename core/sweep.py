"""Sweeps over many models: one result folder per (model, settings), atomic, resumable, never reused
under other settings.

A result folder is ``OUT/<model_id>/<key>/`` where ``key`` hashes everything that changes a number: the
model's content and ONNX hashes, provider, dtype, pooling, normalisation, prompt, batch settings, the
similarity, the exams and the protocol version. ``results.json`` carries the key and the settings in clear,
so a folder whose file is missing, corrupt or made under other settings is never taken as done.

Core never loads a model: the caller passes ``loader(name, **options) -> encoder`` (the CLI passes
``fasteval.models.loader.load_model``), which keeps this module usable with any encoder factory and
picklable for remote executors.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fasteval.core import protocol as P
from fasteval.core.embeddings import EmbeddingTable
from fasteval.core.errors import FastevalError, InputError
from fasteval.core.results import RESULT_FILE, check_writable

OVERWRITE = ("never", "always", "only-missing")
# Settings that change an embedding (the embedding cache key) ...
EMBEDDING_SETTINGS = ("source_sha256", "onnx_sha256", "provider", "dtype", "batch_size", "batch_order",
                      "prompt", "pooling", "include_prompt", "normalize", "max_seq_length", "dense")
# ... and those that change a number only downstream of the embeddings.
SCORING_SETTINGS = ("similarity", "exams", "protocol")


def _digest(obj: Any, length: int = 16) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def embedding_key(settings: dict[str, Any]) -> str:
    return _digest({k: settings.get(k) for k in EMBEDDING_SETTINGS})


def result_key(settings: dict[str, Any]) -> str:
    return _digest({k: settings.get(k) for k in EMBEDDING_SETTINGS + SCORING_SETTINGS})


@dataclass
class Job:
    """One model with its options (passed to the loader) and the scoring settings."""
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    exams: tuple[int, ...] = (1, 2, 3)
    metric: str = "cos"


@dataclass
class Outcome:
    model: str
    status: str  # "done" | "skipped" | "failed"
    path: Path | None = None
    message: str = ""
    seconds: float = 0.0
    result: Any = None  # the ModelResult, for a model computed in this process


def read_result(folder: Path) -> dict[str, Any] | None:
    """The parsed results.json of a finished folder, or None if missing or unreadable."""
    try:
        data = json.loads((folder / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") else None


# --- embedding cache -----------------------------------------------------------------------------------------
class EmbeddingCache:
    """Embeddings on disk, keyed by (embedding settings, exact text): ``FASTEVAL_HOME/embeddings/<key>.npz``.

    Exams embed their texts in the protocol's fixed group order, so a text is always first embedded in the
    same encode call, and a cached run gives the numbers of a fresh one.
    """

    def __init__(self, root: Path | None):
        self.root = root

    def path(self, key: str) -> Path | None:
        return None if self.root is None else self.root / "embeddings" / f"{key}.npz"

    def load(self, key: str) -> EmbeddingTable:
        table = EmbeddingTable()
        path = self.path(key)
        if path is not None and path.exists():
            try:
                with np.load(path, allow_pickle=False) as data:
                    table.add([str(t) for t in data["texts"]], data["vectors"])
            except (OSError, ValueError, KeyError):
                print(f"fasteval: warning: ignoring unreadable embedding cache {path}", file=sys.stderr)
                return EmbeddingTable()
        return table

    def save(self, key: str, table: EmbeddingTable) -> None:
        path = self.path(key)
        if path is None or len(table) == 0:
            return
        import io

        from fasteval.core.results import atomic_write_text

        texts, vectors = zip(*table.items())
        buf = io.BytesIO()
        np.savez(buf, texts=np.array(texts), vectors=np.stack(vectors))
        try:
            atomic_write_text(path, buf.getvalue())
        except OSError:
            pass  # the cache only saves time; a read-only home still gives results


# --- one job -------------------------------------------------------------------------------------------------
def clean_stale_staging(out: Path) -> None:
    """Remove staging folders a killed run left behind (never read as results)."""
    for stale in list(out.glob("*/.*.staging-*")) + list(out.glob("*/.*.old-*")):
        shutil.rmtree(stale, ignore_errors=True)


def run_job(job: Job, out: Path, loader: Callable[..., Any], overwrite: str = "only-missing",
            cache_root: Path | None = None, on_step: Callable[[str], None] | None = None) -> Outcome:
    """Load the model, decide skip/redo from the result key, run the exams, write the folder atomically."""
    from fasteval.core.evaluate import evaluate, result_files
    from fasteval.core.results import write_result_folder

    start = time.perf_counter()
    encoder = loader(job.model, **job.options)
    name = getattr(encoder, "name", job.model)
    settings = dict(getattr(encoder, "info", {}) or {})
    settings.update(similarity=job.metric, exams=list(job.exams), protocol=P.PROTOCOL_VERSION)
    key = result_key(settings)
    folder = out / P.model_id(name) / key
    existing = read_result(folder)
    if overwrite != "always" and folder.exists():
        if existing is not None and existing.get("key") == key:
            return Outcome(name, "skipped", folder, "already done under the same settings")
        if overwrite == "never":
            return Outcome(name, "skipped", folder, "a result folder exists (--overwrite never)")
        print(f"fasteval: warning: {folder / RESULT_FILE} is missing or corrupt; redoing it", file=sys.stderr)
    # Without a content hash the model's identity is unknown: never share cached embeddings then.
    known = settings.get("source_sha256") or settings.get("onnx_sha256")
    cache = EmbeddingCache(cache_root if known else None)
    ekey = embedding_key(settings)
    table = cache.load(ekey)
    cached = len(table)
    result = evaluate(encoder, exams=job.exams, metric=job.metric, name=name, settings=settings, table=table,
                      on_step=on_step)
    if len(table) > cached:
        cache.save(ekey, table)
    result.settings["key"] = key
    files = result_files(result, key=key)
    write_result_folder(folder, files)
    return Outcome(name, "done", folder, f"{len(table) - cached} texts embedded, {cached} from the cache",
                   time.perf_counter() - start, result)


def run_sweep(jobs: Sequence[Job], out: Path, loader: Callable[..., Any], overwrite: str = "only-missing",
              cache_root: Path | None = None, keep_going: bool = True,
              on_model: Callable[[Outcome], None] | None = None,
              on_step: Callable[[str], None] | None = None) -> list[Outcome]:
    """Run ``jobs`` one after another (the local executor). A failing model is reported and skipped over
    when ``keep_going``; the outcomes say what happened to each."""
    if overwrite not in OVERWRITE:
        raise InputError(f"Unknown --overwrite {overwrite!r}.", f"use one of {', '.join(OVERWRITE)}.")
    out = check_writable(out)
    clean_stale_staging(out)
    outcomes = []
    for job in jobs:
        try:
            outcome = run_job(job, out, loader, overwrite, cache_root, on_step)
        except FastevalError as err:
            if not keep_going or len(jobs) == 1:
                raise
            outcome = Outcome(job.model, "failed", None, str(err))
        outcomes.append(outcome)
        if on_model:
            on_model(outcome)
    return outcomes


def read_models_file(path: Path) -> list[str]:
    """One model name or path a line; blank lines and '#' comments ignored."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise InputError(f"Cannot read the models file {path}: {err.strerror or err}.",
                         "pass a text file with one model name or folder a line.") from None
    models = [ln.split("#", 1)[0].strip() for ln in lines]
    return [m for m in models if m]
