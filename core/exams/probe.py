"""Exam 3, the recalibration probe (PROTOCOL.md 3): a ridge probe on |e_a - e_b| against the similarity itself,
on item-level splits, pooled over the four quantities, evaluated anchor by anchor on the test items.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from math import comb

import numpy as np

from .. import protocol as P
from ..embeddings import EmbeddingTable
from . import Exam, ExamInputs
from .cell_similarities import cell_similarities
from ..io import csv_text, rows_of, typed

METRIC_KEYS = ("kendall", "pairwise", "kendall_cosine", "pairwise_cosine")


@dataclass
class Exam3Row:
    """One (quantity, range): means over the 5 splits (PROTOCOL.md 3.5)."""
    unit: str
    range: str
    kendall: float
    pairwise: float
    kendall_cosine: float
    pairwise_cosine: float
    kendall_sd_splits: float
    kendall_cosine_sd_splits: float
    alpha_median: float
    n_splits: int
    n_train_pairs: int
    n_train_items: int
    n_test_items: int


@dataclass
class Exam3Result:
    metric: str
    rows: list[Exam3Row]
    alphas: dict[str, list[float]] = field(default_factory=dict)  # range -> chosen alpha per split

    @classmethod
    def from_json(cls, d: dict) -> "Exam3Result":
        return cls(metric=d.get("metric", "cos"), rows=[typed(Exam3Row, r) for r in rows_of(d, "rows")],
                   alphas=d.get("alphas") or {})

    def summary(self) -> dict[str, float]:
        """Mean and sample std (ddof=1) over the 20 rows; the probe-table row x100 with delta tau."""
        out: dict[str, float] = {}
        for key in METRIC_KEYS:
            values = np.array([getattr(r, key) for r in self.rows], dtype=float)
            out[f"{key}_mean"] = float(np.mean(values))
            out[f"{key}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
        out["delta_tau_x100"] = (out["kendall_mean"] - out["kendall_cosine_mean"]) * 100
        return out


def _pairs(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(len(idx), k=1)
    return idx[a], idx[b]


def _anchor_rows(test: np.ndarray):
    """For every test anchor: its index and the other test items in ascending index order."""
    return [(anchor, np.delete(test, k)) for k, anchor in enumerate(test)]


def run_exam3(table: EmbeddingTable, metric: str = "cos",
              similarities: dict[str, np.ndarray] | None = None) -> Exam3Result:
    """Fit one probe per (range, split) pooled over quantities; score probe and similarity per anchor.

    ``similarities``: (quantity, range) -> n x n similarity matrix, when Exam 1 computed them already.
    """
    from ..kernels.pick import kendall_tau_b_rows, pairwise_accuracy_rows
    from ..kernels.ridge import fit_ridge_loo_batched, predict

    embeddings = {(c.quantity, c.range_name): table[c.texts] for c in P.exam1_cells()}
    sims = similarities or cell_similarities(table, metric)
    rows: list[Exam3Row] = []
    alphas_by_range: dict[str, list[float]] = {}
    # Training sets: one pooled design matrix per (range, split), every probe fitted in one batched call.
    values_of = {r: P.range_values(r) for r in P.RANGE_NAMES}
    splits_of = {r: [P.probe_split(len(v), s) for s in range(P.PROBE_N_SPLITS)] for r, v in values_of.items()}
    Xs, ys = [], []
    for range_name, splits in splits_of.items():
        values = values_of[range_name]
        for _test, train in splits:
            a, b = _pairs(train)
            # float32 features, as the paper fed RidgeCV (which solves in float64, returns float32 coef).
            Xs.append(np.concatenate([np.abs(embeddings[(q, range_name)][a] - embeddings[(q, range_name)][b])
                                      for q in P.QUANTITIES]))
            ys.append(np.tile(np.log1p(np.abs(values[a] - values[b])), len(P.QUANTITIES)))
    all_fits = fit_ridge_loo_batched(Xs, ys, P.PROBE_ALPHAS)
    for k, range_name in enumerate(P.RANGE_NAMES):
        values, splits = values_of[range_name], splits_of[range_name]
        fits = all_fits[k * P.PROBE_N_SPLITS:(k + 1) * P.PROBE_N_SPLITS]
        alphas_by_range[range_name] = [float(f.alpha) for f in fits]
        # Evaluation: rows = (quantity, split, anchor), columns = the other test items.
        dist_rows, probe_rows, sim_rows, keys = [], [], [], []
        for s, ((test, _), fit) in enumerate(zip(splits, fits)):
            for q in P.QUANTITIES:
                emb = embeddings[(q, range_name)]
                for anchor, others in _anchor_rows(test):
                    dist_rows.append(np.abs(values[others] - values[anchor]))
                    probe_rows.append(-predict(fit, np.abs(emb[others] - emb[anchor])).astype(np.float64))
                    sim_rows.append(sims[f"{q}/{range_name}"][anchor, others].astype(np.float64))
                    keys.append((q, s))
        D, S_probe, S_sim = np.array(dist_rows), np.array(probe_rows), np.array(sim_rows)
        tau_probe = kendall_tau_b_rows(D, -S_probe)
        tau_sim = kendall_tau_b_rows(D, -S_sim)
        pacc_probe = pairwise_accuracy_rows(D, S_probe, value_ties="as_greater")
        pacc_sim = pairwise_accuracy_rows(D, S_sim, value_ties="as_greater")
        keys_arr = np.array([f"{q}|{s}" for q, s in keys])
        n_test, n_train = len(splits[0][0]), len(splits[0][1])
        for q in P.QUANTITIES:
            per_split: dict[str, list[float]] = {name: [] for name in ("tp", "ts", "pp", "ps")}
            for s in range(P.PROBE_N_SPLITS):
                m = keys_arr == f"{q}|{s}"
                per_split["tp"].append(_nanmean(tau_probe[m]))
                per_split["ts"].append(_nanmean(tau_sim[m]))
                per_split["pp"].append(float(np.mean(pacc_probe[m])))
                per_split["ps"].append(float(np.mean(pacc_sim[m])))
            rows.append(Exam3Row(
                unit=q, range=range_name,
                kendall=float(np.mean(per_split["tp"])), pairwise=float(np.mean(per_split["pp"])),
                kendall_cosine=float(np.mean(per_split["ts"])), pairwise_cosine=float(np.mean(per_split["ps"])),
                kendall_sd_splits=float(np.std(per_split["tp"], ddof=1)),
                kendall_cosine_sd_splits=float(np.std(per_split["ts"], ddof=1)),
                alpha_median=float(np.median(alphas_by_range[range_name])), n_splits=P.PROBE_N_SPLITS,
                n_train_pairs=len(P.QUANTITIES) * comb(n_train, 2), n_train_items=n_train, n_test_items=n_test))
    # PROTOCOL.md 5 row order: range-major (the probe is fitted per range).
    return Exam3Result(metric=metric, rows=rows, alphas=alphas_by_range)


def _nanmean(x: np.ndarray) -> float:
    finite = x[~np.isnan(x)]
    return float(finite.mean()) if len(finite) else float("nan")


# --- the exam's record ------------------------------------------------------------------------------------------
SUMMARY_COLUMNS = ("kendall_mean", "pairwise_mean", "kendall_std", "pairwise_std", "kendall_cosine_mean",
                   "pairwise_cosine_mean", "kendall_cosine_std", "pairwise_cosine_std")


def files(result: Exam3Result, model_id: str) -> dict[str, str]:
    """The two CSVs of PROTOCOL.md 3.6."""
    full = [{"model": model_id, **asdict(r)} for r in result.rows]
    return {
        f"{model_id}_benchmark_full_regression_experiment.csv": csv_text(
            full, ["model"] + list(Exam3Row.__dataclass_fields__)),
        f"{model_id}_benchmark_summary_regression_experiment.csv": csv_text(
            [{"model": model_id, **result.summary()}], ["model", *SUMMARY_COLUMNS]),
    }


def text(result: Exam3Result) -> str:
    """Per row: probe tau (+-sd) and PACC | similarity tau (+-sd) and PACC, 3 decimals (PROTOCOL.md 3.5)."""
    lines = []
    for r in result.rows:
        lines.append(f"  {r.unit:<9} {r.range:<14} probe tau={r.kendall:.3f}(±{r.kendall_sd_splits:.3f}) "
                     f"pairwise={r.pairwise:.3f} | cosine tau={r.kendall_cosine:.3f}"
                     f"(±{r.kendall_cosine_sd_splits:.3f}) pairwise={r.pairwise_cosine:.3f}")
    s = result.summary()
    lines.append(f"  mean: probe tau={s['kendall_mean']:.3f} pairwise={s['pairwise_mean']:.3f} | cosine "
                 f"tau={s['kendall_cosine_mean']:.3f} pairwise={s['pairwise_cosine_mean']:.3f} | "
                 f"delta tau x100={s['delta_tau_x100']:.2f}")
    return "\n".join(lines)


def mteb_scores(result: Exam3Result) -> dict[str, float | None]:
    s = result.summary()
    return {"kendall_tau": s["kendall_mean"], "pairwise_accuracy": s["pairwise_mean"],
            "kendall_tau_similarity": s["kendall_cosine_mean"],
            "pairwise_accuracy_similarity": s["pairwise_cosine_mean"]}


def _run(inputs: ExamInputs) -> Exam3Result:
    return run_exam3(inputs.table, metric=inputs.similarity, similarities=inputs.similarities())


EXAM = Exam(
    choice=3, title="Exam 3 - recalibration probe (ridge on |e1 - e2|) vs {metric}", groups=P.exam3_groups, run=_run,
    result_type=Exam3Result, files=files, text=text, mteb_task="PhysScoreProbe",
    mteb_description="The recalibration probe (the paper's Exam 3): a ridge probe on |e1 - e2| recovers the physical "
    "order on held-out items; main score: the probe's Kendall tau.", main_score="kendall_tau",
    mteb_scores=mteb_scores, mteb_type="Regression", uses_cell_similarities=True, report_tables=("probe",))
