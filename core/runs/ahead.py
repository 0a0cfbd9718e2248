"""A sweep's next export, made while the model before it runs: where the model running now is on a GPU, the next
local model is fetched and exported on the CPU in a process of its own, so a multi-model sweep's GPU never waits
for an export it could have had (the export, minutes for the larger of the paper's 24, is most of a first sweep).

Only where it cannot slow the run it overlaps: on a CPU the encoder has the cores, so nothing is exported ahead;
and only where this machine's memory holds both the running model's weights and the export's peak
(``models.sources.needs``). The export process runs at a lower priority and off the GPU, writes the cache as any
export does (staged, then renamed), and is waited for before its model loads: the sweep never exports one model
twice. A failed export ahead is left to the model's own turn, which exports it again and says what failed."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger(__name__)

# The export process: the model's download and export into the cache (``models.loader.export_model``), niced, off
# the GPU; its output is its own (the model's own turn reports a failure).
_EXPORT = ("import os, sys\n"
           "os.nice(10) if hasattr(os, 'nice') else None\n"
           "from fasteval.models.loader import export_model\n"
           "export_model(sys.argv[1], dtype=sys.argv[2])\n")


class ExportsAhead:
    """The export ahead of each job of a local sweep (``run_sweep``): ``loader(index, load)`` loads a job's model and
    then starts the next job's export where it may; ``wait(index)`` waits for a job's export before its model loads;
    ``stop()`` ends what still runs (an interrupted sweep). ``when``: True exports ahead whatever the model runs on,
    None (a sweep's default) only while the model running now is on a GPU, False never."""

    def __init__(self, jobs: Sequence[Any], when: bool | None = None):
        self.jobs = list(jobs)
        self.when = when
        self.running: dict[int, subprocess.Popen] = {}

    def loader(self, index: int, load: Callable[..., Any]) -> Callable[..., Any]:
        """``load`` for job ``index``: its encoder, the next job's export started once it is made."""
        def loaded(name: str, **options: Any) -> Any:
            encoder = load(name, **options)
            self.start(index + 1, encoder)
            return encoder

        return loaded

    def start(self, index: int, running: Any) -> None:
        """Export job ``index``'s model in the background, beside ``running`` (the encoder of the job before it),
        where ``when`` and this machine allow; else nothing (it exports in its turn, as without this)."""
        if self.when is False or index >= len(self.jobs) or index in self.running:
            return
        if self.when is None and getattr(running, "provider", None) != "cuda":
            return  # on the CPU the export would take the encoder's cores
        from ..choices import public_model

        job = self.jobs[index]
        dtype = str(job.options.get("dtype", "fp32"))
        reason = _not_ahead(job.model, dtype, self.jobs[index - 1].model if index else None)
        if reason:  # a served model is named without the credentials its URL may hold
            log.debug("%s: not exported ahead (%s)", public_model(job.model), reason)
            return
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # the export is the CPU's work; the GPU is the run's
        self.running[index] = subprocess.Popen([sys.executable, "-c", _EXPORT, job.model, dtype], env=env,
                                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL)
        log.info("%s: exporting on the CPU while %s runs (pid %d)", job.model, getattr(running, "name", "the model "
                 "before it"), self.running[index].pid)

    def wait(self, index: int) -> None:
        """Wait for job ``index``'s export ahead, if one was started (a failed one is left to its own turn)."""
        process = self.running.pop(index, None)
        if process is None:
            return
        if process.poll() is None:
            log.info("%s: waiting for its export ahead (pid %d)", self.jobs[index].model, process.pid)
        if process.wait() != 0:
            log.info("%s: its export ahead failed (exit %d); it is exported now, in its turn",
                     self.jobs[index].model, process.returncode)

    def stop(self) -> None:
        """End every export ahead still running (the processes this sweep started, by their ids)."""
        for process in self.running.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.running.clear()


def _not_ahead(name: str, dtype: str, running: str | None) -> str | None:
    """Why ``name`` is not exported ahead beside the model ``running`` (None: it may be): a served or static model,
    one already exported, one whose size is not known before its download, or a machine whose memory does not hold
    the export's peak beside the running model's weights."""
    from ...models.sources.needs import needs_of
    from ..choices import is_url

    if is_url(name):
        return "a served model"
    needs = needs_of(name, dtype)
    if needs.static or needs.exported:
        return "nothing to export"
    if needs.peak_bytes is None or not needs.memory:
        return "its size or this machine's memory is not known"
    held = needs_of(running, dtype).weights_bytes if running is not None and not is_url(running) else None
    if needs.peak_bytes + (held or 0) > needs.memory:
        return "this machine's memory does not hold its export beside the model running"
    return None
