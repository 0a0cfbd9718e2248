"""check: `fasteval check` with a cached model, start-up included, and where its time goes (import times of
each heavy package, model load, session, encode, scoring), measured in fresh processes."""
from __future__ import annotations

from ..harness import Ctx, Line, fasteval_cmd, med, run_budget, run_wall

_BUDGET = r"""
import typer; mark("typer + cli")
import numpy; mark("numpy")
from fasteval.core.quantities import parse_quantity, registry; registry(); parse_quantity("2 km"); mark("pint registry")
import onnxruntime; mark("onnxruntime import")
from fasteval.models.loader import load_model
enc = load_model(MODEL, provider="cpu"); mark("model load (cached export, tokenizer)")
enc.session; mark("onnxruntime session")
import fasteval
r = fasteval.check(enc, "2 kilometers", ["2000 meters", "2 meters"]); mark("embed + score (numpy, no JIT)")
"""


def bench_check(ctx: Ctx) -> list[Line]:
    cmd = fasteval_cmd() + ["check", "--model", ctx.model, "--provider", "cpu", "2 kilometers", "2000 meters",
                            "2 meters"]
    run_wall(cmd, ctx.env())  # numba and pint caches warm
    n = 3 if ctx.quick else 7
    walls = [run_wall(cmd, ctx.env())[0] for _ in range(n)]
    steps, parts = run_budget(ctx, _BUDGET)
    return [Line("check", f"`fasteval check` on a cached model, 2 candidates (median of {n}, cold process)",
                 med(walls), None, "", "where the time goes (one process): " + parts, None,
                 None, "check <= 0.5 s", {"walls": walls, "budget": steps}, limit_s=0.5)]
