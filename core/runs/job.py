"""One model of a sweep: planned once (``fasteval.core.plan``), skipped when its folder is done under the same
settings, else run and written atomically to ``OUT/<model_id>/<key>/``.

The key hashes everything that changes a number: the model's content and ONNX hashes, provider, dtype, pooling,
normalisation, prompt, batch settings, the similarity, the exams and the protocol version. ``results.json``
carries the key and the settings in clear, so a folder whose file is missing, corrupt or made under other
settings is never taken as done.

A job loads its model with the ``loader(name, **options) -> encoder`` it is given (by default, and from the CLI,
``fasteval.models.loader.load_model``), which keeps a job usable with any encoder factory and picklable for
remote executors. Both executors (``sweep.run_sweep`` here, ``ray_executor`` on a cluster) run ``run_job``.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from .. import protocol as P
from ..choices import DEFAULT_RESAMPLES, OVERWRITE, check_choice
from ..io import check_writable, clean_stale
from ..plan import Scoring, plan, run, scoring
from ..results.files import write_result
from ..results.model import RESULT_FILE
from ..results.read import finished_key
from ..cache import embedding_cache, embedding_cache_root, verified

log = logging.getLogger(__name__)


@dataclass
class Job:
    """One model with its load options (passed to the loader) and what it is scored on: ``scoring``, validated
    as the job is made (a bad protocol file or exam fails before anything runs), from the asked values
    (protocol, exams, similarity, --normalize-quantities, bootstrap) or a Scoring made once for many jobs."""
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    exams: InitVar[Iterable[int | str] | None] = None  # None: the paper's exams the protocol supports
    similarity: InitVar[str] = "cos"
    normalize_quantities: InitVar[bool] = False  # rewrite every text to its canonical form before the encoder
    bootstrap: InitVar[int] = DEFAULT_RESAMPLES  # resamples for Exam 1's intervals; 0 = none
    protocol: InitVar[Any] = None  # a built-in's name, a protocol file, a Protocol, or None (the paper's)
    scoring: Scoring | None = None
    rung: Any = None  # a ladder's rung (``ladder.Rung``) this job scores, where it is one

    def __post_init__(self, exams, similarity, normalize_quantities, bootstrap, protocol) -> None:
        if self.scoring is None:
            self.scoring = scoring(exams=exams, similarity=similarity, protocol=protocol,
                                   normalize_quantities=normalize_quantities, bootstrap=bootstrap)
        self.options = dict(self.options)  # the job's own (a caller's dict is never shared between jobs)


@dataclass
class Outcome:
    model: str
    status: str  # "done" | "skipped" | "failed"
    path: Path | None = None
    message: str = ""
    seconds: float = 0.0
    result: Any = None  # the ModelResult, for a model computed in this process
    _read: Any = field(default=None, init=False, repr=False, compare=False)  # the folder's, once read back

    def baselines(self) -> list[dict[str, Any]]:
        """The surface-form baselines' Table 1 rows beside this result (``core.protocol.baselines.baselines_of``);
        none for a failed model."""
        from ..protocol.baselines import baselines_of

        result = self.read()
        return [] if result is None else baselines_of(result)

    def read(self) -> Any:
        """The outcome's ModelResult: the one computed in this process, or its folder's, read back (a skipped
        model's); None for a failed model or a folder without a readable result."""
        if (self.result is not None or self._read is not None or self.path is None
                or not (self.path / RESULT_FILE).is_file()):
            return self.result if self.result is not None else self._read
        from ..results.read import load_result

        try:
            self._read = load_result(self.path / RESULT_FILE)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return self._read


def clean_stale_staging(out: Path) -> None:
    """What killed runs left in the results folders (``core.io.clean_stale``: only a dead owner's, recovering a
    result a kill left between two renames); a concurrent sweep's live staging stays."""
    for folder in [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]:
        clean_stale(folder)


def prepare_out(out: Path, overwrite: str) -> Path:
    """What every executor does first: check the overwrite rule, make sure ``out`` is writable (absolute: a
    Ray worker's working directory is not the caller's), and remove staging folders a killed run left there."""
    check_choice(overwrite, OVERWRITE, "overwrite strategy", "--overwrite")
    out = check_writable(out).resolve()
    clean_stale_staging(out)
    return out


class ResultFolders:
    """A sweep's result folders, ``OUT/<model_id>/<key>/``, on this machine's disk: what a job asks of them (is
    this folder there, under which key was it finished) and how it writes one (atomically, ``write_result``)."""

    def __init__(self, out: Path):
        self.out = Path(out)

    def folder(self, name: str, key: str) -> Path:
        return self.out / P.model_id(name) / key

    def exists(self, folder: Path) -> bool:
        return folder.exists()

    def finished(self, folder: Path) -> str | None:
        """The key ``folder`` was finished under (None: not finished, or unreadable)."""
        return finished_key(folder)

    def write(self, folder: Path, result: Any, key: str) -> Path:
        return write_result(folder, result, key)

    def survey(self) -> dict[str, str | None]:
        """Every result folder here, ``model_id/key`` -> the key it was finished under (None: not finished): what
        a job on a machine that cannot see this disk needs to decide skip or redo (``ShippedFolders``)."""
        return {f"{f.parent.name}/{f.name}": finished_key(f) for f in sorted(self.out.glob("*/*"))
                if f.is_dir() and not f.parent.name.startswith(".") and not f.name.startswith(".")}


class ShippedFolders(ResultFolders):
    """The driver's result folders seen from a machine that does not share its disk (a Ray worker): what is
    there comes from the driver's ``survey``; what is written is kept here (``shipped``: ``model_id/key`` -> its
    files) for the driver to write under its own ``out`` (the same folders, keys and staged writer)."""

    def __init__(self, out: Path, surveyed: dict[str, str | None]):
        super().__init__(out)
        self.surveyed = dict(surveyed)
        self.shipped: dict[str, dict[str, str]] = {}

    def _name(self, folder: Path) -> str:
        return folder.relative_to(self.out).as_posix()

    def exists(self, folder: Path) -> bool:
        return self._name(folder) in self.surveyed

    def finished(self, folder: Path) -> str | None:
        return self.surveyed.get(self._name(folder))

    def write(self, folder: Path, result: Any, key: str) -> Path:
        from ..results.files import result_files

        self.shipped[self._name(folder)] = result_files(result, key=key)
        return folder


def run_job(job: Job, folders: ResultFolders, loader: Callable[..., Any], overwrite: str = "only-missing",
            cache_root: Path | bool | None = None, on_step: Callable[[str], None] | None = None) -> Outcome:
    """Load and plan the model, decide skip/redo from the result key, run the exams, write the folder atomically.

    Deciding needs only the encoder's settings (hashes remembered by size and mtime, the provider it will
    use), not a session: a fasteval encoder starts onnxruntime at its first encode, so a skipped model costs
    no session and no export.
    """
    start = time.perf_counter()
    planned = plan(loader(job.model, **job.options), job.scoring)
    for settle in (False, True):  # the planned folder, then (when it is not done) that of what will run
        if settle:
            settled = planned.settle()  # the GPU it was offered may fall back to the CPU: keys follow what runs
            if settled.key == planned.key:
                break
            planned = settled
        folder = folders.folder(planned.name, planned.key)
        exists = overwrite != "always" and folders.exists(folder)
        done = folders.finished(folder) if exists else None
        # a local model is its content hashes: done, with no session started
        if done == planned.key and not planned.served:
            return Outcome(planned.name, "skipped", folder, "already done under the same settings")
    cache = embedding_cache(planned.settings, embedding_cache_root(cache_root))
    table, changed = verified(cache, planned, finished=done is not None)  # changed: a served result, no longer its own
    if done == planned.key and changed is None:
        return Outcome(planned.name, "skipped", folder, "already done under the same settings")
    if overwrite == "never" and exists:
        return Outcome(planned.name, "skipped", folder, "a result folder exists (--overwrite never)")
    if changed is not None:
        log.warning("%s: the deployment says what it said, but %s; redoing its result", planned.name, changed)
    elif exists:
        log.warning("%s is missing or corrupt; redoing it", folder / RESULT_FILE)
    cached = len(table)
    # what runs is keyed: the GPU it was offered may fall back to the CPU, and the numbers go under what ran
    saver = cache.saver(lambda: planned.settled().embedding_key, table)
    try:
        result = run(planned, table, on_step, saver.checkpoint)
    finally:  # what was embedded, a failed or interrupted run's too (a server that died, Ctrl-C, SIGTERM)
        saver.save(table)
    ran = planned.settled()
    result.settings["key"] = ran.key  # run() recorded the settings that ran
    folder = folders.write(folders.folder(ran.name, ran.key), result, ran.key)
    return Outcome(ran.name, "done", folder, f"{len(table) - cached} texts embedded, {cached} from the cache",
                   time.perf_counter() - start, result)
