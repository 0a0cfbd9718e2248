"""statistics: 10,000 bootstrap resamples of one model's 20 Exam 1 cells (fasteval's batched kernels against
scipy.stats.kendalltau in a loop), and `fasteval compare` over 24 models' results (276 pairs) against the same
naive loop. (Not named statistics.py: that would shadow the standard library's module.)"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from ..harness import Ctx, Line, alternate, med, run_wall, fasteval_cmd


def _anchor_rows(seed: int) -> list[np.ndarray]:
    """Anchor-similarity rows of a plausible model: falling with distance plus noise (float32 values)."""
    from fasteval.core import protocol as P

    rng = np.random.default_rng(seed)
    rows = []
    for cell in P.exam1_cells():
        rank = np.arange(len(cell.values)) / len(cell.values)
        rows.append((1 - 0.5 * rank + rng.normal(0, 0.15, len(rank))).astype(np.float32).astype(np.float64))
    return rows


def naive_resampled_taus(rows: list[np.ndarray], resamples: int) -> np.ndarray:
    """The peer: scipy.stats.kendalltau on every resample of every cell, then the mean over cells x100."""
    from scipy.stats import kendalltau

    from fasteval.core import protocol as P
    from fasteval.core.exams.statistics import bootstrap_indices

    taus = np.empty((len(rows), resamples))
    for k, (cell, row) in enumerate(zip(P.exam1_cells(), rows)):
        idx = bootstrap_indices(len(cell.values), resamples, k)
        for b in range(resamples):
            taus[k, b] = kendalltau(cell.values[idx[b]], -row[idx[b]]).statistic
    return taus.mean(axis=0) * 100


def bench_statistics(ctx: Ctx) -> list[Line]:
    from fasteval.core.exams.statistics import resample_exam1

    resamples = 2_000 if ctx.quick else 10_000
    rows = _anchor_rows(0)
    ours = resample_exam1(rows, resamples).table1()[0]
    print(f"  statistics: scipy loop over {20 * resamples:,} resampled cells (once)", file=sys.stderr)
    start = time.perf_counter()
    theirs = naive_resampled_taus(rows, resamples)
    peer_once = time.perf_counter() - start
    tf, _ = alternate(lambda: resample_exam1(rows, resamples), lambda: None, 3 if ctx.quick else 5)
    d = float(np.max(np.abs(ours - theirs)))
    lines = [Line("statistics", f"bootstrap: {resamples:,} resamples of one model's 20 cells (tau-b and PACC)",
                  med(tf), peer_once, "scipy.stats.kendalltau per resample and cell (tau only; one run)",
                  f"max |resampled Table 1 tau diff| {d:.1e}", d < 1e-9, None, "bootstrap < 0.5 s",
                  {"resamples": resamples}, limit_s=0.5)]
    # compare over 24 models: write 24 results folders from simulated rows, time the command.
    from fasteval.core.exams.geometry import run_exam1
    from fasteval.core.embeddings import EmbeddingTable
    from fasteval.core import protocol as P
    from fasteval.core.results.files import result_files
    from fasteval.core.io import write_result_folder
    from fasteval.core.results.model import ModelResult

    out = ctx.tmp / "compare-24"
    n_models = 6 if ctx.quick else 24
    for m in range(n_models):
        rng = np.random.default_rng(100 + m)
        table = EmbeddingTable()
        for cell in P.exam1_cells():
            e = rng.normal(size=(len(cell.values), 16)) + np.linspace(0, 3 * (1 + m % 5), len(cell.values))[:, None]
            table.add(cell.texts, e.astype(np.float32))
        for group in P.exam1_groups():  # digits, words and conversion sides: any vectors will do here
            new = [t for t in group if t not in table]
            table.add(new, rng.normal(size=(len(new), 16)).astype(np.float32))
        result = ModelResult(f"model-{m:02d}", f"model_{m:02d}", {"similarity": "cos"}, P.PROTOCOL_VERSION, "bench")
        result.exams["exam1"] = run_exam1(table, keep_matrices=True, bootstrap=0)
        write_result_folder(out / result.model_id, result_files(result, key=f"k{m}"))
    cmd = fasteval_cmd() + ["compare", str(out), "--bootstrap", str(resamples), "--no-png"]
    walls = [run_wall(cmd, ctx.env())[0] for _ in range(2 if ctx.quick else 3)]
    pairs = n_models * (n_models - 1) // 2
    first = json.dumps({"models": n_models, "pairs": pairs, "resamples": resamples})
    lines.append(Line("statistics", f"`fasteval compare`: {n_models} models, {pairs} pairs, {resamples:,} resamples "
                      "each (cold process)", med(walls), None, "",
                      "Δτ, interval, p and Holm from one resampled τ vector per model", None, None,
                      "compare over 24 models < 10 s", {"walls": walls, "setup": first}, limit_s=10.0))
    return lines
