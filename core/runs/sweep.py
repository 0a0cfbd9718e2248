"""Sweeps over many models: one result folder per (model, settings), atomic, resumable, never reused under
other settings (each model is a ``job``: ``fasteval.core.runs.job``).

``models_to_run`` says which models a sweep runs (named, listed in a file, the default, a shard's share),
``plan_sweep`` validates what it asks once and makes their jobs, and ``run_sweep`` runs the jobs one after another
here, or hands them to Ray (``ray_executor``); ``shard_of`` cuts a model list into the fixed shares an array job runs.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..choices import DEFAULT_RESAMPLES, EXECUTORS, check_choice, is_url, public_model
from ..errors import FastevalError, InputError
from ..plan import Scoring, scoring
from .job import Job, Outcome, ResultFolders, prepare_out, run_job


def _load_model() -> Callable[..., Any]:
    """The loader of a sweep where its caller names none: ``fasteval.load_model``."""
    from ...models.loader import load_model

    return load_model


def models_to_run(models: Sequence[str] | None = None, models_file: str | Path | None = None,
                   shard: str | None = None) -> tuple[list[str], int]:
    """The models a sweep runs and how many were asked for: ``models`` and those of ``models_file`` (one a line,
    '#' comments), the default model where none is named, the registry's groups expanded (``paper``: its 24),
    then ``shard``'s share (``shard_of``)."""
    from ...models.sources.registry import DEFAULT_MODEL, expand_names
    from ..io import read_entries_file

    names = list(models or []) + (read_entries_file(Path(models_file)) if models_file else [])
    names = expand_names(names or [DEFAULT_MODEL])
    return (names if shard is None else shard_of(names, shard)), len(names)


def sweep_needs(models: Sequence[str], dtype: str = "fp32") -> list[Any]:
    """What each model of a sweep needs of this machine, known before any download (``fasteval sweep --dry-run``:
    ``models.sources.needs.Needs`` a model)."""
    from ...models.sources.needs import needs_of
    from ...models.sources.registry import source_kind

    for name in models:  # a name the sweep would refuse is refused by its dry run too, in the same line
        if not is_url(name):
            source_kind(name)
    return [needs_of(name, dtype) for name in models]


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep asks, validated once before anything runs (``plan_sweep``): the scoring every model's job runs
    (``scoring``), or, for a ladder, the ladder and what each rung's scoring is made of (``asked``)."""
    scoring: Scoring | None
    ladder: str | None = None
    asked: dict[str, Any] = field(default_factory=dict)

    def jobs(self, models: Sequence[str], options: dict[str, Any] | None = None,
             loader: Callable[..., Any] | None = None) -> list[Job]:
        """One job a model, each with its own copy of the load ``options`` (a served model's client options
        included); for a ladder, one job a rung of each model (``ladder.ladder_jobs``: each model's dimension is
        asked of it now, with ``loader``, default ``load_model``)."""
        if self.ladder is not None:
            from .ladder import ladder_jobs

            return ladder_jobs(models, options or {}, loader if loader is not None else _load_model(), **self.asked)
        return [Job(name, copy.deepcopy(options or {}), scoring=self.scoring) for name in models]


def plan_sweep(*, exams: Any = None, similarity: str = "cos", protocol: Any = None,
               normalize_quantities: bool = False, bootstrap: int = DEFAULT_RESAMPLES, dimensions: int | None = None,
               vector_quantization: str | None = None, calibration: Any = None,
               ladder: str | None = None) -> SweepPlan:
    """What a sweep asks, validated before any model is named or loaded (a bad protocol file, exam selection or
    ladder fails here, before anything is written); the vector options as ``fasteval.evaluate`` takes them.
    ``ladder="vectors"``: every rung of the vector ladder instead (``ladder.ladder_scorings`` checks its exams)."""
    asked = dict(exams=exams, similarity=similarity, protocol=protocol, normalize_quantities=normalize_quantities,
                 bootstrap=bootstrap)
    if ladder is None:
        return SweepPlan(scoring(**asked, dimensions=dimensions, vector_quantization=vector_quantization,
                                 calibration=calibration))
    from .ladder import LADDERS, ladder_base

    check_choice(ladder, LADDERS, "ladder", "--ladder")
    if dimensions is not None or vector_quantization is not None or calibration is not None:
        raise InputError("--ladder vectors scores every rung itself.",
                         "leave out --dimensions, --vector-quantization and --calibration with --ladder.")
    ladder_base(**asked)
    return SweepPlan(None, ladder, asked)


def shard_of(models: Sequence[str], shard: str) -> list[str]:
    """The fixed share ``I/N`` of ``models`` (0 <= I < N, 0-based as a SLURM array's task id): every model whose
    position in the list is I modulo N. Each shard writes the folders and keys the whole sweep would, so shards run
    anywhere (an array job, several machines) merge by copying their --out folders together. InputError for
    another form."""
    import re

    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(shard))
    if not found or not 0 <= int(found.group(1)) < int(found.group(2)):
        n = int(found.group(2)) if found and int(found.group(2)) > 0 else 4  # the user's N, where there is one
        raise InputError(f"--shard {shard!r} is not I/N with 0 <= I < N (I counts from 0).",
                         f"pass --shard 0/{n} ... --shard {n - 1}/{n} (in a SLURM array: "
                         f"--shard $SLURM_ARRAY_TASK_ID/{n}).")
    index, count = int(found.group(1)), int(found.group(2))
    return [m for k, m in enumerate(models) if k % count == index]


def sweep_ladders(jobs: Sequence[Job], outcomes: Sequence[Outcome],
                  out: Path) -> list[tuple[list[dict], Path, list[dict], dict[int, list[dict]]]]:
    """The ladder tables of a ladder sweep (``plan_sweep(ladder="vectors").jobs(...)``), written under ``OUT/ladders``:
    each model's rows, the CSV's path, the surface-form baselines and the bytes-matched view (none for a sweep
    without rungs)."""
    from .ladder import ladders

    resamples = next((j.scoring.bootstrap for j in jobs if j.scoring is not None), DEFAULT_RESAMPLES)
    return ladders(jobs, outcomes, Path(out), resamples)


def run_sweep(jobs: Sequence[Job], out: Path, loader: Callable[..., Any] | None = None,
              overwrite: str = "only-missing", cache_root: Path | bool | None = None, keep_going: bool = True,
              on_model: Callable[[Outcome], None] | None = None,
              on_step: Callable[[str], None] | None = None, executor: str = "local",
              address: str | None = None, memory_of: Callable[[Job], int | None] | None = None,
              on_request: Callable[[int, int], None] | None = None,
              export_ahead: bool | None = None) -> list[Outcome]:
    """Run ``jobs`` into ``out`` and return their outcomes in job order. ``executor``: "local" (one model after
    another in this process; a failing model is reported and skipped over when ``keep_going``) or "ray" (one
    Ray task per model, ``address`` naming the cluster; ``ray_executor.py``). ``cache_root``: the embedding cache's
    root, by one rule (``cache.embedding_cache_root``): None is FASTEVAL_HOME (on Ray each node's own), False no
    cache, a path that path. ``on_model`` is called as each model finishes,
    ``on_step`` (local only) before each step of a model, ``on_request(done, total)`` (local only) as a served
    model's requests come back (its texts embedded so far); ``memory_of(job)`` (Ray only) the memory a job's model
    needs, which its task asks of Ray. ``loader``: what makes a job's encoder (default ``load_model``; on Ray a
    module-level function). ``export_ahead`` (local only, ``ahead.ExportsAhead``): None exports the next model on
    the CPU while the one before it runs on a GPU; True whatever it runs on; False never."""
    check_choice(executor, EXECUTORS, "executor", "--executor")
    loader = loader if loader is not None else _load_model()
    if on_request is not None and executor == "local":  # a callback does not travel to Ray workers
        for job in jobs:
            job.options.setdefault("served", {})["progress"] = on_request
    if executor == "ray":
        from .ray_executor import run_sweep_ray

        return run_sweep_ray(jobs, out, loader, overwrite, cache_root, address=address, on_model=on_model,
                             memory_of=memory_of)
    from .ahead import ExportsAhead

    folders = ResultFolders(prepare_out(out, overwrite))
    outcomes = []
    ahead = ExportsAhead(jobs, export_ahead)
    try:
        for index, job in enumerate(jobs):
            ahead.wait(index)  # its export, where one ran ahead: never two exports of one model
            try:
                outcome = run_job(job, folders, ahead.loader(index, loader), overwrite, cache_root, on_step)
            except FastevalError as err:
                if not keep_going or len(jobs) == 1:
                    raise
                outcome = Outcome(public_model(job.model), "failed", None, str(err))
            outcomes.append(outcome)
            if on_model:
                on_model(outcome)
    finally:  # an interrupted sweep ends the exports it started
        ahead.stop()
    return outcomes
