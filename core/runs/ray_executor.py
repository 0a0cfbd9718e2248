"""The Ray executor: one Ray task per model; Ray schedules, this module only submits and gathers.

Each task is ``run_job`` on a worker, so the result folders, their keys and the resume semantics are the
local executor's (``job.py``): the same ``OUT/<model_id>/<key>/`` folders, skipped when done under the same
settings. No node needs the driver's disk: the driver surveys ``out`` (which folders are there, under which key
each was finished) and sends that with each task; the task computes on its node and returns the result files,
which the driver writes under ``out`` with the staged writer. Each node keeps its own caches: the models it
fetches and exports under its own ``FASTEVAL_HOME`` (the environment its ``ray start`` had) and, unless
``cache_root`` names a path every node can use, its embedding cache there too. A worker lost mid-task leaves
nothing under ``out``: the model is "failed" and a rerun computes it.

Ray is an optional extra (``pip install 'fasteval[ray]'``) imported only when this executor runs.
"""
from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..choices import public_address, public_model
from ..errors import FastevalError, InputError, first_line
from .job import Job, Outcome, ResultFolders, ShippedFolders, prepare_out, run_job

# How long a HOST:PORT address may take to accept a TCP connection before we call it dead (Ray itself
# retries for minutes).
CONNECT_TIMEOUT_S = 5.0


def _run_job_remote(job: Job, out: Path, surveyed: dict[str, str | None], loader: Callable[..., Any],
                    overwrite: str, cache_root: Path | bool | None) -> tuple[Outcome, dict[str, dict[str, str]]]:
    """``run_job`` as a Ray task, on whichever node Ray picks: skip or redo decided from the driver's ``survey``
    of ``out``, the embedding cache by ``cache.embedding_cache_root``'s rule on the node (None: its own
    FASTEVAL_HOME), and the result files returned (``model_id/key`` -> files) for the driver to write. A
    FastevalError becomes a "failed" outcome (as in the local executor); the in-memory result stays on the worker
    (its files count)."""
    folders = ShippedFolders(out, surveyed)
    try:
        outcome = run_job(job, folders, loader, overwrite, cache_root)
    except FastevalError as err:
        return Outcome(public_model(job.model), "failed", None, str(err)), {}
    outcome.result = None
    return outcome, folders.shipped


def _import_ray():
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray.", "pip install 'fasteval[ray]'") from None
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """For a ``HOST:PORT`` or ``ray://HOST:PORT`` address, an InputError unless something accepts a TCP
    connection there within ``timeout`` seconds. Other forms (``auto``, ``local``) are left to Ray."""
    import socket

    hostport = public_address(address).split("://", 1)[-1].split("/", 1)[0]  # no user:password@ nor path
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return
    except OSError as err:
        reason = "timed out" if isinstance(err, socket.timeout) else first_line(err)
        raise InputError(f"Nothing answers at the Ray address {public_address(address)} ({reason}).",
                         "start the cluster there (`ray start --head`), or pass its address with --address "
                         "HOST:PORT (default port 6379), or leave --address out to start a local cluster."
                         ) from None


def _connect(ray, address: str | None) -> bool:
    """Connect to ``address``, or start a local cluster; True if this call did it (and so must shut it down)."""
    if ray.is_initialized():
        return False
    # Ray Client needs grpcio, which the minimal Ray lacks; say so before Ray's multi-line error.
    if address and address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
        raise InputError(f"--address {public_address(address)} needs Ray Client.", "pip install 'ray[client]'")
    if address:
        check_reachable(address)
    try:
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False,
                 logging_level=logging.WARNING)
    except (ConnectionError, ValueError, RuntimeError) as err:
        where = f"the Ray cluster at {public_address(address)}" if address else "a local Ray cluster"
        said = first_line(err).replace(address, public_address(address)) if address else first_line(err)
        raise InputError(f"Cannot connect to {where}: {said}",
                         "check --address (e.g. HOST:6379 or ray://HOST:10001) and that the cluster is up."
                         ) from None
    return True


def _gpus_per_task(ray, job: Job, num_gpus_per_task: float | None) -> float:
    """An explicit request, else one GPU when the cluster has GPUs and the job does not ask for the CPU."""
    if num_gpus_per_task is not None:
        return num_gpus_per_task
    if job.options.get("provider") == "cpu":
        return 0
    return 1 if ray.cluster_resources().get("GPU", 0) > 0 else 0


def peak_memory(job: Job) -> int | None:
    """What a job's model needs at its peak, known before its download (``models.sources.needs``; None: not known, a
    served model): what its Ray task asks of Ray unless the caller says otherwise."""
    from ...models.sources.needs import needs_of

    return needs_of(job.model, job.options.get("dtype", "fp32")).peak_bytes


def run_sweep_ray(jobs: Sequence[Job], out: Path, loader: Callable[..., Any], overwrite: str = "only-missing",
                  cache_root: Path | bool | None = None, address: str | None = None,
                  num_gpus_per_task: float | None = None,
                  on_model: Callable[[Outcome], None] | None = None,
                  memory_of: Callable[[Job], int | None] | None = None) -> list[Outcome]:
    """Run ``jobs`` as one Ray task each and return their outcomes in job order (as ``run_sweep`` does).

    ``cache_root``: the embedding cache, a path every node can use; None: each node's own FASTEVAL_HOME; False:
    none.
    ``address`` names a running cluster; without it Ray's own rule applies (``RAY_ADDRESS``, else a cluster
    started with ``ray start`` on this machine, else a new local one). A cluster or connection this call
    made is shut down at the end; one the caller already holds (``ray.init`` before) is left alone.
    ``num_gpus_per_task`` overrides the default (one GPU per task when the cluster has GPUs, e.g. 0.5 to put two
    models on a GPU). ``loader`` must be picklable (a module-level function). ``on_model`` is called as each model
    finishes, in finishing order. ``memory_of(job)``: the bytes of memory a job's model needs at its peak (default
    ``peak_memory``, ``fasteval.models.sources.needs``'s estimate; None: not known), asked of Ray for its task, so two
    large models never land on one small node; a job that needs more than the largest node has is "failed" at once,
    in one line.
    """
    if num_gpus_per_task is not None and num_gpus_per_task < 0:
        raise InputError(f"num_gpus_per_task must be >= 0, not {num_gpus_per_task}.")
    out = prepare_out(out, overwrite)
    here = ResultFolders(out)
    if not isinstance(cache_root, bool) and cache_root is not None:
        cache_root = Path(cache_root).expanduser().resolve()
    if not jobs:
        return []
    ray = _import_ray()
    started = _connect(ray, address)
    try:
        gpus = {i: _gpus_per_task(ray, job, num_gpus_per_task) for i, job in enumerate(jobs)}
        have = ray.cluster_resources().get("GPU", 0)
        if max(gpus.values()) > have:
            raise InputError(f"Each Ray task asks for {max(gpus.values())} GPU but the cluster has {have}.",
                             "pass a smaller num_gpus_per_task, or use a cluster with GPUs.")
        surveyed = here.survey()
        task = ray.remote(_run_job_remote)
        outcomes: list[Outcome | None] = [None] * len(jobs)
        estimate = memory_of if memory_of is not None else peak_memory
        memory = {i: estimate(job) for i, job in enumerate(jobs)}
        largest = max((n.get("Resources", {}).get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0)
        refs = {}
        for i, job in enumerate(jobs):
            need = memory[i]
            if need and largest and need > largest:  # Ray would wait for such a node for ever
                name = public_model(job.model)
                refused = outcomes[i] = Outcome(name, "failed", None, f"{name} needs about {need / 1024 ** 3:.1f} GB "
                                                f"of memory; the largest node of the cluster has "
                                                f"{largest / 1024 ** 3:.1f} GB.")
                if on_model:
                    on_model(refused)
                continue
            options = {"num_gpus": gpus[i], **({"memory": need} if need else {})}
            refs[task.options(**options).remote(job, out, surveyed, loader, overwrite, cache_root)] = i
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            i = refs[ready[0]]
            outcome = outcomes[i] = _gather(ray, ready[0], jobs[i], out)
            if on_model:
                on_model(outcome)
        return outcomes  # type: ignore[return-value]
    finally:
        if started:
            ray.shutdown()


def _gather(ray, ref, job: Job, out: Path) -> Outcome:
    """The task's outcome, its result files written here under ``out`` first (the staged writer: a folder is
    whole or absent); a task Ray could not finish (worker or node lost, out of memory) is "failed" and leaves
    nothing. A bug in the task (any other exception) is raised, as the local executor would."""
    from ..io import write_result_folder

    try:
        outcome, shipped = ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise
    except ray.exceptions.RayError as err:
        return Outcome(public_model(job.model), "failed", None, f"Ray could not run the task: {first_line(err)}")
    for name, files in shipped.items():
        write_result_folder(out / name, files)
    return outcome
