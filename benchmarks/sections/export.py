"""export: `fasteval export` of the model into an empty home (a cold process: torch.onnx, the validation against
torch, the fp32 fusions and their validation, the configs and hashes) against a bare torch.onnx (dynamo) export of
the same model in a cold process (imports, load, export, save: nothing checked), alternating; and where fasteval's
export spends its time (its record's ``seconds``)."""
from __future__ import annotations

import json
import shutil
import sys

from ..harness import Ctx, Line, med, run_wall, fasteval_cmd

EXPORT_OVER_TORCH = 1.5  # issue 67: `fasteval export` against a bare torch.onnx export of the same model

# torch.onnx.export as fasteval calls it (dynamo, dynamic batch and sequence, last_hidden_state), nothing more
_BARE = r"""
import sys, torch
from transformers import AutoModel
model = AutoModel.from_pretrained(sys.argv[1]).eval()
class Hidden(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.m = model
    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.m(input_ids=input_ids, attention_mask=attention_mask,
                      token_type_ids=token_type_ids).last_hidden_state
ids = torch.ones((2, 8), dtype=torch.int64)
names = ["input_ids", "attention_mask", "token_type_ids"]
batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
program = torch.onnx.export(Hidden(), (ids, ids, torch.zeros_like(ids)), dynamo=True, input_names=names,
                            output_names=["last_hidden_state"],
                            dynamic_shapes={n: {0: batch, 1: sequence} for n in names})
program.save(sys.argv[2])
"""


def bench_export(ctx: Ctx) -> list[Line]:
    from fasteval.core.io import fasteval_home

    runs = 1 if ctx.quick else 3
    ours, bare, records = [], [], []
    for k in range(runs):
        home = ctx.tmp / f"export-home-{k}"
        home.mkdir()
        (home / "models").symlink_to(fasteval_home() / "models")  # the weights fetched, no export cached
        print(f"  export: run {k + 1}/{runs}", file=sys.stderr)
        env = {**ctx.env(), "FASTEVAL_HOME": str(home)}
        ours.append(run_wall(fasteval_cmd() + ["export", ctx.model, "-q"], env)[0])
        records.append(json.loads(next((home / "onnx").glob("*-fp32/fasteval_export.json")).read_text()))
        shutil.rmtree(home / "onnx")
        bare.append(run_wall([sys.executable, "-c", _BARE, str(ctx.folder), str(ctx.tmp / "bare.onnx")], ctx.env())[0])
    seconds = {phase: med([r.get("seconds", {}).get(phase, 0.0) for r in records]) for phase in records[0]["seconds"]}
    fusions = records[-1].get("fp32_fusions", {})
    return [Line("export", f"`fasteval export` of {ctx.model} into an empty home (cold process, median of {runs})",
                 med(ours), med(bare), "a bare torch.onnx (dynamo) export of the same model, cold process",
                 "fasteval's phases: " + "; ".join(f"{k} {v:.1f} s" for k, v in seconds.items())
                 + f"; fp32 fusions {fusions.get('kept')}: {fusions.get('fusions')}", None, 1 / EXPORT_OVER_TORCH,
                 f"`fasteval export` <= {EXPORT_OVER_TORCH}x a bare torch.onnx export",
                 {"fasteval": ours, "bare": bare, "phases": seconds, "fusions": fusions})]
