"""ahead: a two-model sweep whose second model is not exported yet (the default model, then its fp16 export, which
is made from the fp32 one), with the second's export made while the first model runs (``core/runs/ahead.py``)
against the same sweep without it; each in a cold process and a fresh home holding only the fp32 export. On a GPU
(``--provider cuda``) the export ahead is a sweep's default; on a CPU it is off (the encoder has the cores), and
this section forces it there, to measure what it would cost."""
from __future__ import annotations

import shutil
import sys

from ..harness import Ctx, Line, med, run_wall

# One sweep in a cold process: the model fp32, then fp16 (its export made from the fp32 one), three exams, no
# bootstrap; argv: model, provider, out, export_ahead ("1" or "0"). Prints what the sweep logged of the export ahead.
_SWEEP = r"""
import logging, sys
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep
model, provider, out, ahead = sys.argv[1:5]
logging.basicConfig(level=logging.INFO, format="%(message)s")
jobs = [Job(model, {"provider": provider, "dtype": dtype}, bootstrap=0) for dtype in ("fp32", "fp16")]
outcomes = run_sweep(jobs, out, cache_root=False, export_ahead=ahead == "1")
assert [o.status for o in outcomes] == ["done", "done"], outcomes
"""


def _fresh_home(ctx: Ctx, into):
    """A home holding the model's folder and its fp32 export only (every other export is made again)."""
    from fasteval.core.io import fasteval_home

    home = into / "home"
    (home / "onnx").mkdir(parents=True)
    for entry in fasteval_home().iterdir():
        if entry.name not in ("embeddings", "onnx"):
            (home / entry.name).symlink_to(entry)
    for export in (fasteval_home() / "onnx").iterdir():
        if export.name.endswith("-fp32"):
            (home / "onnx" / export.name).symlink_to(export)
    return home


def bench_ahead(ctx: Ctx) -> list[Line]:
    provider = ctx.args.provider
    walls: dict[str, list[float]] = {"1": [], "0": []}
    made_ahead = []
    for k in range(2 if ctx.quick else 3):
        for ahead in ("1", "0"):  # alternating
            run = ctx.tmp / f"ahead-{k}-{ahead}"
            home = _fresh_home(ctx, run)
            wall, proc = run_wall([sys.executable, "-c", _SWEEP, ctx.model, provider, str(run / "out"), ahead],
                                  {**ctx.env(), "FASTEVAL_HOME": str(home)})
            walls[ahead].append(wall)
            if ahead == "1":
                made_ahead.append("exporting on the CPU while" in proc.stderr)
            shutil.rmtree(run, ignore_errors=True)
    how = "the default on a GPU" if provider == "cuda" else "forced on: a CPU sweep leaves it off"
    return [Line("ahead", f"two-model sweep ({ctx.model} fp32, then fp16 not yet made, three exams, {provider}): the "
                          f"second's export made while the first runs ({how}) against the same sweep without",
                 med(walls["1"]), med(walls["0"]), "the same sweep, each export in its turn",
                 f"made ahead in {sum(made_ahead)} of {len(made_ahead)} runs", all(made_ahead), None, "",
                 {"ahead": walls["1"], "plain": walls["0"], "made_ahead": made_ahead})]
