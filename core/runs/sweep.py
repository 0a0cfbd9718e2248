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
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import protocol as P
from ..choices import EXECUTORS, OVERWRITE, check_choice, public_model
from ..embeddings import EmbeddingTable, describe
from ..errors import FastevalError, InputError
from ..exams.statistics import DEFAULT_RESAMPLES
from ..io import check_writable, clean_stale
from ..results.model import RESULT_FILE
from .cache import EmbeddingCache, mismatch, verified

log = logging.getLogger(__name__)

# Settings that change an embedding (the embedding cache key) ...
EMBEDDING_SETTINGS = ("source_sha256", "onnx_sha256", "provider", "dtype", "batch_size", "batch_order",
                      "prompt", "pooling", "include_prompt", "normalize", "max_seq_length", "dense",
                      "normalize_quantities", "batching", "batch_tokens", "deployment")
# ... and those that change a number only downstream of the embeddings (a served model's local tokenizer
# changes Exam 2's token Levenshtein).
SCORING_SETTINGS = ("similarity", "exams", "protocol", "bootstrap", "tokenizer", "pacc_value_ties")
# Settings that enter a key only when set (options at their default leave it as it was before they existed:
# a finished paper sweep is never redone for an option it does not use).
KEYED_WHEN_SET = ("normalize_quantities", "bootstrap", "batching", "batch_tokens", "deployment", "tokenizer",
                  "pacc_value_ties")


def _digest(obj: Any, length: int = 16) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _keyed(settings: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {k: settings.get(k) for k in names if k not in KEYED_WHEN_SET or settings.get(k)}


def embedding_key(settings: dict[str, Any]) -> str:
    return _digest(_keyed(settings, EMBEDDING_SETTINGS))


def embedding_cache(settings: dict[str, Any], cache_root: Path | None) -> tuple[EmbeddingCache, str]:
    """The embedding cache for an encoder's settings, and its key. Without a content hash (or a served model's
    deployment) the model's identity is unknown: its embeddings are then never shared (a cache that keeps
    nothing)."""
    known = settings.get("source_sha256") or settings.get("onnx_sha256") or settings.get("deployment")
    return EmbeddingCache(cache_root if known else None), embedding_key(settings)


def result_key(settings: dict[str, Any]) -> str:
    return _digest(_keyed(settings, EMBEDDING_SETTINGS + SCORING_SETTINGS))


@dataclass
class Job:
    """One model with its options (passed to the loader) and the scoring settings. The protocol is loaded and
    the exams resolved here, once (a bad protocol file or exam fails as the job is made, before anything runs);
    every step after reads them from the job."""
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    exams: tuple[int | str, ...] | None = None  # None: the paper's exams the protocol supports
    metric: str = "cos"
    normalize_quantities: bool = False  # rewrite every text to its canonical form before the encoder
    bootstrap: int = DEFAULT_RESAMPLES  # resamples for Exam 1's intervals; 0 = none
    protocol: Any = None  # a Protocol once made; given as a built-in's name, a protocol file, or None (the paper's)

    def __post_init__(self) -> None:
        from ..exams import for_protocol
        from ..protocol.loading import resolve_protocol

        self.protocol = resolve_protocol(self.protocol)
        self.exams = for_protocol(self.protocol, self.exams)
        self.options = dict(self.options)  # the job's own (a caller's dict is never shared between jobs)


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
    from ..results.read import read_json

    try:
        data = read_json(folder / RESULT_FILE)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") else None


# --- one job -------------------------------------------------------------------------------------------------
def clean_stale_staging(out: Path) -> None:
    """What killed runs left in the results folders (``core.io.clean_stale``: only a dead owner's, recovering a
    result a kill left between two renames); a concurrent sweep's live staging stays."""
    for folder in [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]:
        clean_stale(folder)


def _deployment_changed(settings: dict[str, Any], cache: EmbeddingCache, ekey: str, view, rewrite) -> str | None:
    """Why a served model's finished result may no longer be its deployment's (None: it is). A server can change
    its vectors without changing what /models says, so a result is trusted only when a few of the texts it was
    computed from come back as cached; a local model is its content hashes, and needs no such check."""
    if not settings.get("deployment"):
        return None
    table = cache.load(ekey)
    if not len(table):
        return "there are no cached embeddings to check it against"
    return mismatch(table, view.encoder, rewrite)


def job_settings(job: Job, info: dict[str, Any]) -> dict[str, Any]:
    """Everything that changes a number of ``job``: the encoder's settings plus the scoring settings."""
    from .evaluate import settings_of

    return settings_of(info, exams=job.exams, metric=job.metric, protocol=job.protocol,
                       normalize_quantities=job.normalize_quantities, bootstrap=job.bootstrap)


def run_job(job: Job, out: Path, loader: Callable[..., Any], overwrite: str = "only-missing",
            cache_root: Path | None = None, on_step: Callable[[str], None] | None = None) -> Outcome:
    """Load the model, decide skip/redo from the result key, run the exams, write the folder atomically.

    Deciding needs only the encoder's settings (hashes remembered by size and mtime, the provider it will
    use), not a session: a fasteval encoder starts onnxruntime at its first encode, so a skipped model costs
    no session and no export.
    """
    from ..results.files import result_files
    from ..io import write_result_folder
    from .evaluate import canonical_rewrite, evaluate

    from ..encoders import as_encoder

    start = time.perf_counter()
    view = describe(as_encoder(loader(job.model, **job.options)))
    settings = job_settings(job, view.info)
    key = result_key(settings)
    folder = out / P.model_id(view.name) / key
    cache, ekey = embedding_cache(settings, cache_root)
    rewrite = canonical_rewrite(job.normalize_quantities)
    changed = None  # why a served model's finished result is no longer its deployment's
    if overwrite != "always" and folder.exists():
        existing = read_result(folder)
        changed = _deployment_changed(settings, cache, ekey, view, rewrite) if existing is not None else None
        if existing is not None and existing.get("key") == key and changed is None:
            return Outcome(view.name, "skipped", folder, "already done under the same settings")
        if overwrite == "never":
            return Outcome(view.name, "skipped", folder, "a result folder exists (--overwrite never)")
        if changed is None:
            log.warning("%s is missing or corrupt; redoing it", folder / RESULT_FILE)
        else:
            log.warning("%s: the deployment says what it said, but %s; redoing its result", view.name, changed)
    if changed is not None:  # its canaries were just checked against the cache: it goes, nothing is asked twice
        cache.discard(ekey)
        table = EmbeddingTable()
    else:
        table = verified(cache, ekey, view.encoder, view.name, rewrite, served=bool(settings.get("deployment")))
    cached = len(table)
    try:
        result = evaluate(view.encoder, exams=job.exams, metric=job.metric, name=view.name, settings=settings,
                          table=table, on_step=on_step, normalize_quantities=job.normalize_quantities,
                          bootstrap=job.bootstrap, protocol=job.protocol)
    except FastevalError:
        if len(table) > cached:  # what was embedded before the failure (a server that died): a rerun resumes
            cache.save(ekey, table)
        raise
    after = job_settings(job, describe(view.encoder).info)
    if after != settings:
        # The encoder settled a setting only when it ran (the GPU it was offered fell back to the CPU):
        # the numbers belong under the settings they were made with.
        settings, key = after, result_key(after)
        folder, ekey = out / P.model_id(view.name) / key, embedding_key(after)
        result.settings = dict(after, similarity=job.metric)
    if len(table) > cached:
        cache.save(ekey, table)
    result.settings["key"] = key
    write_result_folder(folder, result_files(result, key=key))
    return Outcome(view.name, "done", folder, f"{len(table) - cached} texts embedded, {cached} from the cache",
                   time.perf_counter() - start, result)


def shard_of(models: Sequence[str], shard: str) -> list[str]:
    """The fixed share ``I/N`` of ``models`` (0 <= I < N, 0-based as a SLURM array's task id): every model whose
    position in the list is I modulo N. Each shard writes the folders and keys the whole sweep would, so shards run
    anywhere (an array job, several machines) merge by copying their --out folders together. InputError for
    another form."""
    import re

    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(shard))
    if not found or not 0 <= int(found.group(1)) < int(found.group(2)):
        raise InputError(f"--shard {shard!r} is not I/N with 0 <= I < N.",
                         "pass --shard 0/4 ... --shard 3/4 (in a SLURM array: --shard $SLURM_ARRAY_TASK_ID/N).")
    index, count = int(found.group(1)), int(found.group(2))
    return [m for k, m in enumerate(models) if k % count == index]


def prepare_out(out: Path, overwrite: str) -> Path:
    """What every executor does first: check the overwrite rule, make sure ``out`` is writable (absolute: a
    Ray worker's working directory is not the caller's), and remove staging folders a killed run left there."""
    check_choice(overwrite, OVERWRITE, "overwrite strategy", "--overwrite")
    out = check_writable(out).resolve()
    clean_stale_staging(out)
    return out


def run_sweep(jobs: Sequence[Job], out: Path, loader: Callable[..., Any], overwrite: str = "only-missing",
              cache_root: Path | None = None, keep_going: bool = True,
              on_model: Callable[[Outcome], None] | None = None,
              on_step: Callable[[str], None] | None = None, executor: str = "local",
              address: str | None = None) -> list[Outcome]:
    """Run ``jobs`` into ``out`` and return their outcomes in job order. ``executor``: "local" (one model after
    another in this process; a failing model is reported and skipped over when ``keep_going``) or "ray" (one
    Ray task per model, ``address`` naming the cluster; ``fasteval.core.runs.ray_executor``). ``on_model`` is
    called as each model finishes, ``on_step`` (local only) before each step of a model."""
    check_choice(executor, EXECUTORS, "executor", "--executor")
    if executor == "ray":
        from .ray_executor import run_sweep_ray

        return run_sweep_ray(jobs, out, loader, overwrite, cache_root, address=address, on_model=on_model)
    out = prepare_out(out, overwrite)
    outcomes = []
    for job in jobs:
        try:
            outcome = run_job(job, out, loader, overwrite, cache_root, on_step)
        except FastevalError as err:
            if not keep_going or len(jobs) == 1:
                raise
            outcome = Outcome(public_model(job.model), "failed", None, str(err))
        outcomes.append(outcome)
        if on_model:
            on_model(outcome)
    return outcomes
