"""Numbers you can trust: bootstrap intervals for Exam 1, paired model comparisons, and the paper's own caveats
as variants (an extension; the paper's numbers are never changed, only reported beside).

**Bootstrap.** One resample draws, within each of the 20 cells, the n - 1 non-anchor items with replacement
(the anchor stays first), recomputes τ-b and PACC on it (PACC over the pairs whose values differ: repeated
items tie), and averages the cells as Table 1 does. The draws depend only on the cell, n, the number of
resamples and the seed, never on the model, so two models resampled alike are a paired bootstrap: the
difference of their resampled means is the resampled difference. Intervals are percentile 95% intervals.

**Variants.** ``strict_tau``: the anchor's self-pair left out (the n - 1 other items ranked by similarity to
the anchor). ``all_anchors_tau``: every item in turn is the anchor and the others are ranked by
|v - v_anchor| (distance ties handled by τ-b), averaged over anchors: the whole heatmap instead of its first
row. The random baseline of each variant is its expected value under random similarity matrices (symmetric,
uniform off the diagonal, 1 on it, as a model's self-similarity is), computed exactly from the protocol's own
values (``random_baselines``), not a constant: the paper's τ credits every model with the anchor's self-pair,
which always ranks first, so its expectation is Σ_j sign(v_j − v_0) / sqrt(n0 (n0 − n1)) per cell (2/n with
distinct values above the anchor: 8.914 over the paper's 20 cells, PACC 54.457); the strict and all-anchors
variants rank random similarities of fixed distances, so they expect exactly 0 (the tests draw the matrices, as
a check of those closed forms).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import protocol as P
from ..choices import DEFAULT_RESAMPLES  # noqa: F401 (the default lives with the other choices)
from ..errors import InputError

BOOTSTRAP_SEED = 20260521
CI_LEVEL = 0.95


def bootstrap_settings(resamples: int) -> dict | None:
    """What a result key records of the bootstrap (None when it is off)."""
    if resamples < 0:
        raise InputError(f"--bootstrap must be >= 0, got {resamples}.", "pass 0 (off) or a number of resamples.")
    return {"resamples": int(resamples), "seed": BOOTSTRAP_SEED, "level": CI_LEVEL} if resamples else None


def bootstrap_indices(n: int, resamples: int, cell: int, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """(resamples, n) item indices of cell number ``cell``: column 0 is the anchor (0), the rest are drawn
    from 1..n-1 with replacement. The same for every model."""
    rng = np.random.default_rng([seed, cell, n])
    idx = np.empty((resamples, n), dtype=np.int64)
    idx[:, 0] = 0
    idx[:, 1:] = rng.integers(1, n, size=(resamples, n - 1))
    return idx


def resampled_cell(values: np.ndarray, anchor_sims: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(τ-b, PACC) of every resample ``idx`` of one cell (its values and the similarities to its anchor): from each
    resample's counts of the cell's items in numpy at the paper's size, no JIT to load (``kernels.pick``)."""
    from ..kernels.pick import bootstrap_rows

    return bootstrap_rows(values, anchor_sims, idx)


def percentile_interval(samples: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float]:
    """The percentile interval of ``samples`` (NaN resamples left out; (nan, nan) when none is left)."""
    samples = np.asarray(samples, dtype=np.float64)
    samples = samples[~np.isnan(samples)]
    if not len(samples):
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


@dataclass
class Resampled:
    """One model's resampled Exam 1: per cell (rows) and resample (columns), τ and PACC (0-1 scale)."""
    taus: np.ndarray
    paccs: np.ndarray

    def table1(self, cells: list[int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The resampled Table 1 row ×100: τ, PACC and AVG per resample (the mean of the cells, or of
        ``cells`` only)."""
        rows = slice(None) if cells is None else cells
        tau = self.taus[rows].mean(axis=0) * 100
        pacc = self.paccs[rows].mean(axis=0) * 100
        return tau, pacc, (tau + pacc) / 2

    def intervals(self, cells: list[int] | None = None) -> dict[str, float | None]:
        """``tau_ci_low``, ``tau_ci_high``, ... ``avg_ci_high`` (×100) of the mean of ``cells`` (default all)."""
        out: dict[str, float | None] = {}
        for name, samples in zip(("tau", "pacc", "avg"), self.table1(cells)):
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = percentile_interval(samples)
        return out


def resample_exam1(anchor_rows: list[np.ndarray], resamples: int,
                   values: list[np.ndarray] | None = None, draws: list[int] | None = None) -> Resampled:
    """Resample every Exam 1 cell; ``anchor_rows`` = each cell's similarities to its anchor, in cell order;
    ``values`` = each cell's values (default: the paper's 20 cells); ``draws`` = each cell's draw number
    (default: its position): cells with one draw number (one set of values asked in several variants) are
    resampled with the same items."""
    values = values if values is not None else [c.values for c in P.exam1_cells()]
    if len(anchor_rows) != len(values):
        raise InputError(f"Expected {len(values)} anchor rows, got {len(anchor_rows)}.", "pass every Exam 1 cell.")
    taus = np.empty((len(values), resamples))
    paccs = np.empty((len(values), resamples))
    for k, (cell_values, sims) in enumerate(zip(values, anchor_rows)):
        cell_values = np.asarray(cell_values, dtype=np.float64)
        idx = bootstrap_indices(len(cell_values), resamples, k if draws is None else draws[k])
        taus[k], paccs[k] = resampled_cell(cell_values, sims, idx)
    return Resampled(taus, paccs)


# --- variants ------------------------------------------------------------------------------------------------
def strict_tau(values: np.ndarray, matrix: np.ndarray) -> float:
    """τ-b of the n - 1 non-anchor items' values against their similarity to the anchor (item 0)."""
    from ..kernels.pick import kendall_tau_b

    return kendall_tau_b(values[1:], -np.asarray(matrix[0][1:], dtype=np.float64))


def all_anchors_tau(values: np.ndarray, matrix: np.ndarray) -> float:
    """The mean over anchors a of τ-b(|v_o - v_a|, -S[a, o]) over the other items o (NaN rows left out)."""
    from ..kernels.pick import kendall_tau_b_rows

    values = np.asarray(values, dtype=np.float64)
    matrix = np.asarray(matrix, dtype=np.float64)
    n = len(values)
    others = np.array([[o for o in range(n) if o != a] for a in range(n)])
    distance = np.abs(values[others] - values[:, None])
    sims = np.take_along_axis(matrix, others, axis=1)
    taus = kendall_tau_b_rows(distance, -sims)
    return float(np.nanmean(taus)) if np.isfinite(taus).any() else float("nan")


def paper_tau(values: np.ndarray, matrix: np.ndarray) -> float:
    """The paper's cell τ (PROTOCOL.md 1.4): row 0, the anchor's self-pair included."""
    from ..kernels.pick import kendall_tau_b

    return kendall_tau_b(values, -np.asarray(matrix[0], dtype=np.float64))


VARIANTS = {"tau": paper_tau, "strict_tau": strict_tau, "all_anchors_tau": all_anchors_tau}


def expected_random_cell(values) -> dict[str, float]:
    """One cell's exact expected paper τ-b and PACC (0-1) under random similarities (self-similarity 1 ranks
    first; the other similarities are continuous, so they never tie): only the anchor's n - 1 pairs have a
    fixed outcome, every other pair with distinct values is right half the time. Strict and all-anchors τ
    expect 0 (NaN where every value ties)."""
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    pairs = n * (n - 1) / 2
    _, counts = np.unique(v, return_counts=True)
    tied = float(np.sum(counts * (counts - 1) / 2))
    anchor_sign = float(np.sum(np.sign(v[1:] - v[0])))
    tau = anchor_sign / np.sqrt(pairs * (pairs - tied)) if pairs > tied else float("nan")
    others = v[1:]
    _, other_counts = np.unique(others, return_counts=True)
    distinct_other_pairs = (n - 1) * (n - 2) / 2 - float(np.sum(other_counts * (other_counts - 1) / 2))
    pacc = (float(np.sum(v[1:] > v[0])) + distinct_other_pairs / 2) / pairs if pairs else float("nan")
    zero = 0.0 if pairs > tied else float("nan")
    return {"tau": float(tau), "strict_tau": zero, "all_anchors_tau": zero, "pacc": float(pacc)}


def random_baselines(cell_values: list | None = None) -> dict[str, float]:
    """Each variant's exact expected value under random similarities, and the paper's PACC under them (×100,
    the mean over the cells as Table 1 averages): what a model that knows nothing scores on this protocol.
    ``cell_values``: each cell's values (default: the paper's 20 cells, τ 8.914, PACC 54.457)."""
    cell_values = cell_values if cell_values is not None else [c.values for c in P.exam1_cells()]
    per_cell = [expected_random_cell(v) for v in cell_values]
    return {name: float(np.nanmean([c[name] for c in per_cell]) * 100) for name in (*VARIANTS, "pacc")}
