"""The PhysScore side: Table 1 of both sides (the paper's Exam 1 on the protocol's texts, each side's vectors as its
store keeps them) and the paired bootstrap Δτ (candidate − reference) with its 95% interval: what a drift costs
the geometry of quantities. Not a reason to drift of its own: the cosines are the gate."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ....plan import score
from ....results.drift_findings import PhysScore

if TYPE_CHECKING:
    from . import DriftRun

STAGE = "scored"
STEP = ("physscore", "Table 1 of both sides")


def applies(run: DriftRun) -> bool:
    return not run.protocol_failed


def check(run: DriftRun) -> PhysScore:
    results = [score(p, table)["exam1"] for p, table in zip(run.plans, run.tables)]
    return physscore_drift(results[0], results[1], run.options.resamples)


def physscore_drift(ref_exam1, cand_exam1, resamples: int) -> PhysScore:
    """Table 1 τ and PACC of both, the cells whose τ changed, and the paired bootstrap Δτ (candidate −
    reference, ×100) with its 95% interval (``resamples`` 0: none)."""
    from ....exams.geometry import table1_row
    from ....exams.statistics import percentile_interval, resample_exam1

    r, c = table1_row(ref_exam1.cells), table1_row(cand_exam1.cells)
    changed = [f"{x.quantity}/{x.range_name}" for x, y in zip(ref_exam1.cells, cand_exam1.cells) if x.tau != y.tau]
    out = PhysScore(r["tau"], c["tau"], r["pacc"], c["pacc"], c["tau"] - r["tau"], changed)
    if resamples:
        values = [np.asarray(x.values, dtype=np.float64) for x in ref_exam1.cells]
        rows = [[np.asarray(ex.heatmaps[x.key][0], dtype=np.float64) for x in ex.cells]
                for ex in (ref_exam1, cand_exam1)]
        ta = resample_exam1(rows[0], resamples, values).table1()[0]
        tb = resample_exam1(rows[1], resamples, values).table1()[0]
        out.delta_tau_ci_low, out.delta_tau_ci_high = percentile_interval(tb - ta)
    return out
