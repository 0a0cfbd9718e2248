"""check: `fasteval check` with a cached model, start-up included, and where its time goes (import times of
each heavy package, model load, session, encode, scoring), measured in fresh processes."""
from __future__ import annotations

import sys

from ..harness import Ctx, Line, fasteval_cmd, med, run_budget, run_wall

CHECK_OVER_FLOOR = 1.6  # issue 67: `check` against the floor such a command pays

# The floor of a check: a process that imports numpy, onnxruntime and tokenizers, opens the cached graph and embeds
# the 3 texts (no pooling, no scoring, no CLI): what any such command pays.
_FLOOR = r"""
import sys, numpy, onnxruntime, tokenizers
folder = sys.argv[1]
tok = tokenizers.Tokenizer.from_file(folder + "/tokenizer.json"); tok.enable_padding()
session = onnxruntime.InferenceSession(folder + "/model.onnx", providers=["CPUExecutionProvider"])
enc = tok.encode_batch(["2 kilometers", "2000 meters", "2 meters"])
ids = numpy.array([e.ids for e in enc]); mask = numpy.array([e.attention_mask for e in enc])
feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": numpy.zeros_like(ids)}
session.run(None, {i.name: feed[i.name] for i in session.get_inputs()})
"""

_BUDGET = r"""
import typer; mark("typer + cli")
import numpy; mark("numpy")
from fasteval.core.quantities import parse_quantity, registry; registry(); parse_quantity("2 km"); mark("pint registry")
import onnxruntime; mark("onnxruntime import")
from fasteval.models.loader import load_model
enc = load_model(MODEL, provider="cpu"); mark("model load (cached export; its tokenizer is read at the first encode)")
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
    from fasteval.models.loader import load_model

    export = str(load_model(ctx.model, provider="cpu").folder.path)
    floors = [run_wall([sys.executable, "-c", _FLOOR, export], ctx.env())[0] for _ in range(n)]
    return [Line("check", f"`fasteval check` on a cached model, 2 candidates (median of {n}, cold process) against "
                 "its floor", med(walls), med(floors), "a process that imports numpy, onnxruntime and tokenizers, "
                 "opens the cached graph and embeds the 3 texts", "where the time goes (one process): " + parts,
                 None, 1 / CHECK_OVER_FLOOR, f"check <= {CHECK_OVER_FLOOR}x its floor",
                 {"walls": walls, "floors": floors, "budget": steps})]
