"""check: `fasteval check` with a cached model, start-up included, and where its time goes (import times of
each heavy package, model load, session, encode, scoring), measured in fresh processes."""
from __future__ import annotations

import json
import subprocess
import sys

from harness import Ctx, Line, fasteval_cmd, med, run_wall

_BUDGET = r"""
import json, time
t0 = time.perf_counter(); marks = {}
def mark(name):
    marks[name] = time.perf_counter() - t0
import typer; mark("typer + cli")
import numpy; mark("numpy")
from fasteval.core.quantities import parse_quantity, registry; registry(); parse_quantity("2 km"); mark("pint registry")
import onnxruntime; mark("onnxruntime import")
from fasteval.models.loader import load_model
enc = load_model(MODEL, provider="cpu", quiet=True); mark("model load (cached export, tokenizer)")
enc.session; mark("onnxruntime session")
import fasteval
r = fasteval.check(enc, "2 kilometers", ["2000 meters", "2 meters"]); mark("embed + score (numba kernels)")
print(json.dumps(marks))
"""


def bench_check(ctx: Ctx) -> list[Line]:
    cmd = fasteval_cmd() + ["check", "--model", ctx.model, "--provider", "cpu", "2 kilometers", "2000 meters",
                            "2 meters"]
    run_wall(cmd, ctx.env())  # numba and pint caches warm
    n = 3 if ctx.quick else 7
    walls = [run_wall(cmd, ctx.env())[0] for _ in range(n)]
    budgets = []
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", _BUDGET.replace("MODEL", repr(ctx.model))], capture_output=True,
                              text=True, env=ctx.env(), check=True)
        budgets.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    steps = {k: med([b[k] for b in budgets]) for k in budgets[0]}
    previous, parts = 0.0, []
    for name, at in steps.items():
        parts.append(f"{name} {at - previous:.2f} s")
        previous = at
    return [Line("check", f"`fasteval check` on a cached model, 2 candidates (median of {n}, cold process)",
                 med(walls), None, "", "where the time goes (cumulative, one process): " + "; ".join(parts), None,
                 None, "check < 1.5 s", {"walls": walls, "budget": steps}, limit_s=1.5)]
