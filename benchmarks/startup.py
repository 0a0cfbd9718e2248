"""startup: `fasteval --help`, and a warm `fasteval sweep` less its compute."""
from __future__ import annotations

import json
import sys

from harness import Ctx, Line, fasteval_cmd, med, run_budget, run_wall


def bench_startup(ctx: Ctx) -> list[Line]:
    env = ctx.env()
    n = 5 if ctx.quick else 10
    print("  startup: fasteval --help", file=sys.stderr)
    helps = [run_wall(fasteval_cmd() + ["--help"], env)[0] for _ in range(n)]
    bare = [run_wall([sys.executable, "-c", "pass"], env)[0] for _ in range(n)]
    lines = [Line("startup", f"`fasteval --help` (median of {n}, cold process)", med(helps), None,
                  "", f"python -c pass alone: {med(bare):.3f} s", None, None, "`--help` < 0.3 s",
                  {"help_runs": helps, "python_runs": bare}, limit_s=0.3)]
    out = ctx.tmp / "warm-out"
    cmd = fasteval_cmd() + ["sweep", "--model", ctx.model, "--out", str(out), "--overwrite", "always",
                            "--provider", ctx.args.provider, "-q"]
    run_wall(cmd, env)  # fills the embedding cache: later runs embed nothing
    walls, computes = [], []
    for _ in range(2 if ctx.quick else 3):
        print("  startup: warm sweep", file=sys.stderr)
        walls.append(run_wall(cmd, env)[0])
        timings = json.loads(next(out.glob("*/*/results.json")).read_text())["timings"]
        computes.append(sum(timings.values()))
    wall, compute = med(walls), med(computes)
    lines.append(Line("startup", "warm `fasteval sweep` (embeddings cached): process wall less the exams' compute",
                      wall - compute, None, "",
                      f"wall {wall:.2f} s = compute {compute:.2f} s + start-up, model load and writing "
                      f"{wall - compute:.2f} s", None, None, "", {"walls": walls, "computes": computes}))
    lines.append(_sweep_budget(ctx))
    return lines


_BUDGET = r"""
import typer, fasteval.cli.main; mark("python, typer, the CLI")
import numpy; mark("numpy")
from fasteval.models.loader import load_model; mark("fasteval modules")
import onnxruntime; mark("onnxruntime import")
enc = load_model(MODEL, provider="cpu"); mark("model load (cached export, hashes remembered, tokenizer)")
enc.session; mark("onnxruntime session (graph optimised)")
from fasteval.core.kernels import warm_up
warm_up(); mark("numba kernels (loaded from numba's cache)")
from fasteval.core.protocol.loading import load_protocol; load_protocol("paper"); mark("protocol file")
from fasteval.core.quantities import registry; registry(); mark("pint registry (only check and --normalize-quantities)")
"""


def _sweep_budget(ctx: Ctx) -> Line:
    steps, parts = run_budget(ctx, _BUDGET)
    return Line("startup", "start-up budget before the first embedding (one cold process, medians of 3)",
                steps[list(steps)[-2]], None, "", parts, None, None, "", {"budget": steps})
