"""startup: `fasteval --help`, and a warm `fasteval sweep` less its compute."""
from __future__ import annotations

import json
import sys

from ..harness import Ctx, Line, fasteval_cmd, med, run_budget, run_wall



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
    lines += _rerun(ctx)
    lines.append(_sweep_budget(ctx))
    return lines


RERUN_OVER_IMPORTS = 2.0  # issue 67: a finished rerun against a bare `python -c "import numpy, typer"`
RERUN_COPIES = 4  # copies of the model's export folder: four more finished models on files of the same size


def _rerun(ctx: Ctx) -> list[Line]:
    """A finished sweep run again: what deciding that a model is done costs, from rerunning five finished models
    against one (the four others: copies of the model's export folder, each its own model id)."""
    import shutil

    from fasteval.models.loader import load_model

    export = load_model(ctx.model, provider="cpu").folder.path
    copies = [ctx.tmp / "rerun-models" / f"copy-{k}" for k in range(1, RERUN_COPIES + 1)]
    for copy in copies:
        shutil.copytree(export, copy)
    out = ctx.tmp / "rerun-out"
    base = fasteval_cmd() + ["sweep", "--out", str(out), "--provider", ctx.args.provider, "-q", "--model", ctx.model]
    one, many = base, base + [arg for copy in copies for arg in ("--model", str(copy))]
    print("  startup: a sweep of five models, to rerun", file=sys.stderr)
    run_wall(many, ctx.env())  # all finished (their results written)
    ones, manys = [], []
    for _ in range(4 if ctx.quick else 9):
        print("  startup: rerun of a finished sweep", file=sys.stderr)
        ones.append(run_wall(one, ctx.env())[0])
        manys.append(run_wall(many, ctx.env())[0])
    bare = [run_wall([sys.executable, "-c", "import numpy, typer"], ctx.env())[0] for _ in ones]
    per_model = (med(manys) - med(ones)) / RERUN_COPIES
    return [Line("startup", "rerun of a finished sweep of one model against `python -c \"import numpy, typer\"` "
                 f"(medians of {len(ones)} cold processes)", med(ones), med(bare), "python -c \"import numpy, typer\"",
                 "", None, 1 / RERUN_OVER_IMPORTS,
                 f"a finished rerun <= {RERUN_OVER_IMPORTS}x importing numpy and typer",
                 {"one": ones, "bare": bare}),
            Line("startup", f"rerun of a finished sweep: each finished model's cost ((five models less one) / 4, "
                f"medians of {len(ones)} alternating cold processes)", per_model, None, "",
                f"one model {med(ones):.2f} s, five {med(manys):.2f} s, process start and imports included; a model "
                f"file is hashed again only when its size, mtime, ctime, inode or device changed", None, None,
                "a finished model's rerun <= 0.35 s", {"one": ones, "five": manys}, limit_s=0.35)]


_BUDGET = r"""
import typer, fasteval.cli.main; mark("python, typer, the CLI")
import numpy; mark("numpy")
from fasteval.models.loader import load_model; mark("fasteval modules")
import onnxruntime; mark("onnxruntime import")
enc = load_model(MODEL, provider="cpu"); mark("model load (cached export, hashes kept; tokenizer at 1st encode)")
enc.session; mark("onnxruntime session (graph optimised)")
from fasteval.core.kernels import warm_up
warm_up(); mark("numba kernels (loaded from numba's cache; only large work loads them: a paper sweep never does)")
from fasteval.core.protocol.loading import load_protocol; load_protocol("paper"); mark("protocol file")
from fasteval.core.quantities import registry; registry(); mark("pint registry (only check and --normalize-quantities)")
"""


def _sweep_budget(ctx: Ctx) -> Line:
    steps, parts = run_budget(ctx, _BUDGET)
    return Line("startup", "start-up budget before the first embedding (one cold process, medians of 3)",
                steps[list(steps)[-2]], None, "", parts, None, None, "", {"budget": steps})
