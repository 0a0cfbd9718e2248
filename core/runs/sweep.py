"""Sweeps over many models: one result folder per (model, settings), atomic, resumable, never reused under
other settings (each model is a ``job``: ``fasteval.core.runs.job``).

``run_sweep`` runs the jobs one after another here, or hands them to Ray (``ray_executor``); ``shard_of`` cuts a
model list into the fixed shares an array job runs.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..choices import EXECUTORS, check_choice, public_model
from ..errors import FastevalError, InputError
from .job import Job, Outcome, ResultFolders, prepare_out, run_job


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


def run_sweep(jobs: Sequence[Job], out: Path, loader: Callable[..., Any], overwrite: str = "only-missing",
              cache_root: Path | bool | None = None, keep_going: bool = True,
              on_model: Callable[[Outcome], None] | None = None,
              on_step: Callable[[str], None] | None = None, executor: str = "local",
              address: str | None = None, memory_of: Callable[[Job], int | None] | None = None) -> list[Outcome]:
    """Run ``jobs`` into ``out`` and return their outcomes in job order. ``executor``: "local" (one model after
    another in this process; a failing model is reported and skipped over when ``keep_going``) or "ray" (one
    Ray task per model, ``address`` naming the cluster; ``ray_executor.py``). ``cache_root``: the embedding cache's
    root, by one rule (``job.cache_folder``): None is FASTEVAL_HOME (on Ray each node's own), False no cache, a path
    that path. ``on_model`` is called as each model finishes,
    ``on_step`` (local only) before each step of a model; ``memory_of(job)`` (Ray only) the memory a job's model
    needs, which its task asks of Ray."""
    check_choice(executor, EXECUTORS, "executor", "--executor")
    if executor == "ray":
        from .ray_executor import run_sweep_ray

        return run_sweep_ray(jobs, out, loader, overwrite, cache_root, address=address, on_model=on_model,
                             memory_of=memory_of)
    folders = ResultFolders(prepare_out(out, overwrite))
    outcomes = []
    for job in jobs:
        try:
            outcome = run_job(job, folders, loader, overwrite, cache_root, on_step)
        except FastevalError as err:
            if not keep_going or len(jobs) == 1:
                raise
            outcome = Outcome(public_model(job.model), "failed", None, str(err))
        outcomes.append(outcome)
        if on_model:
            on_model(outcome)
    return outcomes
