"""`fasteval compare`: is the difference between two models' Table 1 τ real?

For every pair of models found under a sweep's results folder, a paired bootstrap of Δτ = τ_a − τ_b (×100):
both models are resampled with the same items (``fasteval.core.exams.statistics``; possible because both
embedded the same strings), so the resampled differences carry the pairing. Reported: Δτ, its percentile 95%
interval, a two-sided bootstrap p-value (twice the smaller share of resampled differences on either side of
0, with the +1 correction) and Holm's adjustment across all pairs of models. A model's other runs (other settings,
another deployment of it) are not other models, as in Table 1: each is compared with its own model's main run,
apart, in a family of its own (``Comparison.runs``), and never enters the models' family. Works from results.json
files alone: the cells' anchor similarities are the first rows of the stored heatmaps.
"""
from __future__ import annotations

import logging

from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import cast

import numpy as np

from .. import protocol as P
from ..choices import DEFAULT_RESAMPLES
from ..errors import InputError
from .entries import LoadedResult, by_model, load_results
from .table import Table

SIGNIFICANCE = 0.05
COMPARISON_COLUMNS = ["model_a", "model_b", "delta_tau", "ci_low", "ci_high", "p_value", "p_holm"]

log = logging.getLogger(__name__)


@dataclass
class PairComparison:
    model_a: str
    model_b: str
    delta_tau: float  # x100
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float = float("nan")

    @property
    def significant(self) -> bool:
        return self.p_holm < SIGNIFICANCE


@dataclass
class Comparison:
    models: list[str]  # each model's main run (Table 1's row of it)
    taus: dict[str, float]  # the Table 1 tau x100 of each model and each other run
    pairs: list[PairComparison]  # model against model; Holm over these
    resamples: int
    skipped: list[str] = field(default_factory=list)
    group: str = ""
    runs: list[PairComparison] = field(default_factory=list)  # another run (A) against its own model's main run (B)

    def table(self) -> Table:
        rows = [{c: getattr(p, c) for c in COMPARISON_COLUMNS} for p in self.pairs]
        return Table("comparison", f"Paired bootstrap of Δτ ×100 ({self.resamples} resamples; {self.group})",
                     COMPARISON_COLUMNS, ["Model A", "Model B", "Δτ", "95% low", "95% high", "p", "p (Holm)"],
                     rows, digits=3, probabilities={"p_value", "p_holm"},
                     note=f"Δτ = Table 1 τ of A − B. Significant (Holm-adjusted p < {SIGNIFICANCE}): "
                          f"{sum(p.significant for p in self.pairs)} of {len(self.pairs)} pairs of models."
                          + (f" A model's other runs are not other models: {len(self.runs)} compared with their own "
                             "model apart (comparison_runs)." if self.runs else ""))

    def runs_table(self) -> Table | None:
        """Each other run against its own model's main run (Holm within these), or None when there is none."""
        if not self.runs:
            return None
        rows = [{c: getattr(p, c) for c in COMPARISON_COLUMNS} for p in self.runs]
        return Table("comparison_runs", f"Other runs of a model against the model ({self.resamples} resamples)",
                     COMPARISON_COLUMNS, ["Run", "Its model", "Δτ", "95% low", "95% high", "p", "p (Holm)"],
                     rows, digits=3, probabilities={"p_value", "p_holm"},
                     note="Δτ = Table 1 τ of the run − its model's main run; Holm's adjustment within these "
                          "comparisons, apart from the models' family.")


def bootstrap_p_value(deltas: np.ndarray) -> float:
    """Two-sided: 2 x min((1 + #{d <= 0}) / (B + 1), (1 + #{d >= 0}) / (B + 1)), at most 1."""
    deltas = deltas[~np.isnan(deltas)]
    b = len(deltas)
    if not b:
        return float("nan")
    below, above = (1 + np.sum(deltas <= 0)) / (b + 1), (1 + np.sum(deltas >= 0)) / (b + 1)
    return float(min(1.0, 2 * min(below, above)))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment: p_(i) -> max over j <= i of min(1, (m - j) p_(j)), 0-based j."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def anchor_rows(entry: LoadedResult) -> list[np.ndarray] | None:
    """Each Exam 1 cell's similarities to its anchor, from the stored heatmaps (None when they are missing)."""
    exam1 = entry.result.exams.get("exam1")
    if exam1 is None:
        return None
    rows = []
    for cell, values in zip(exam1.cells, cell_values(exam1)):
        matrix = exam1.heatmaps.get(cell.key)
        if not matrix or values is None or len(matrix[0]) != len(values):
            return None
        rows.append(np.array(matrix[0], dtype=np.float64))
    return rows


def cell_values(exam1) -> list[np.ndarray | None]:
    """Each cell's values: recorded in the cell, or (results written before cells recorded them) the paper's."""
    out: list[np.ndarray | None] = []
    for cell in exam1.cells:
        if cell.values is not None:
            out.append(np.asarray(cell.values, dtype=np.float64))
        elif cell.variant is None and cell.range_name in P.RANGE_NAMES:
            out.append(P.range_values(cell.range_name))
        else:
            out.append(None)
    return out


def comparable(entries: list[LoadedResult], notes: list[str] | None = None
               ) -> tuple[list[tuple[LoadedResult, list[np.ndarray]]], list[str], str]:
    """The entries that can be compared: with Exam 1 and its similarity rows, in the largest group of one
    protocol and similarity (a binary run, scored by Hamming similarity, with its protocol's group). The others are
    returned as lines saying why they were skipped."""
    usable: list[tuple[LoadedResult, list[np.ndarray]]] = []
    skipped: list[str] = []
    for e in entries:
        rows = anchor_rows(e)
        twin = next((u for u, u_rows in usable if u.model_key == e.model_key
                     and all(np.array_equal(a, b) for a, b in zip(rows, u_rows))), None) if rows else None
        if rows is None:
            skipped.append(f"{e.label}: no Exam 1 similarity rows in {e.path.name}")
        elif twin is not None:  # the same model's same similarities under another scoring setting
            skipped.append(f"{e.label}: the same similarities as {twin.label}")
        else:
            usable.append((e, rows))
    # one protocol and similarity; a store's binary run (scored by Hamming similarity, whatever was asked) is
    # compared with its protocol's group, as the ladder gives its Δτ against the float vectors
    groups: dict[tuple[str, str], list] = {}
    binary: list = []
    for e, rows in usable:
        similarity = str(e.result.settings.get("similarity", "cos"))
        if similarity == "hamming":
            binary.append((e, rows))
        else:
            groups.setdefault((e.result.protocol, similarity), []).append((e, rows))
    if not groups and not binary:
        return [], skipped, ""
    best = max(groups, key=lambda g: (len(groups[g]), g)) if groups else (binary[0][0].result.protocol, "hamming")
    chosen = groups.get(best, []) + [(e, rows) for e, rows in binary if e.result.protocol == best[0]]
    for key, members in groups.items():
        if key != best:
            skipped += [f"{e.label}: protocol {key[0]}, similarity {key[1]} (compared: {best[0]}, {best[1]})"
                        for e, _ in members]
    skipped += [f"{e.label}: protocol {e.result.protocol} (compared: {best[0]})" for e, _ in binary
                if e.result.protocol != best[0]]
    for line in skipped:
        log.info("compare skipped %s", line)
        if notes is not None:
            notes.append(f"compare skipped {line}")
    similarities = list(dict.fromkeys(str(e.result.settings.get("similarity", "cos")) for e, _ in chosen))
    return chosen, skipped, f"protocol {best[0]}, similarity {', '.join(similarities)}"


def compare(entries: list[LoadedResult], resamples: int = DEFAULT_RESAMPLES,
            notes: list[str] | None = None) -> Comparison:
    """Every pair of comparable entries; InputError with fewer than two."""
    from ..exams.geometry import table1_row
    from ..exams.statistics import percentile_interval, resample_exam1

    if resamples < 1:
        raise InputError(f"compare needs at least one resample, got {resamples}.", "pass --bootstrap 1000 or more.")
    members, skipped, group = comparable(entries, notes)
    if len(members) < 2:
        raise InputError(f"compare needs two or more models with Exam 1, found {len(members)}"
                         + (f" ({len(skipped)} skipped)" if skipped else "") + ".",
                         "run `fasteval sweep --exams 1` on two or more models into one --out folder.")
    taus = {e.label: float(table1_row(e.result.exams["exam1"].cells)["tau"]) for e, _ in members}
    # comparable() keeps the entries whose every cell has its values
    resampled = {e.label: resample_exam1(rows, resamples,
                                         cast(list[np.ndarray], cell_values(e.result.exams["exam1"]))).table1()[0]
                 for e, rows in members}

    def paired(a: LoadedResult, b: LoadedResult) -> PairComparison:
        deltas = resampled[a.label] - resampled[b.label]
        low, high = percentile_interval(deltas)
        return PairComparison(a.label, b.label, taus[a.label] - taus[b.label], low, high, bootstrap_p_value(deltas))

    models = by_model([e for e, _ in members])  # other runs of a model are not other models
    if len(models) < 2:
        raise InputError(f"compare needs two or more models with Exam 1, found {len(models)} (with "
                         f"{len(members) - len(models)} other run(s) of it).",
                         "run `fasteval sweep --exams 1` on two or more models into one --out folder.")
    pairs = [paired(a, b) for (a, _), (b, _) in combinations(models, 2)]
    runs = [paired(other, main) for main, others in models for other in others]
    for family in (pairs, runs):
        for p, adjusted in zip(family, holm([p.p_value for p in family])):
            p.p_holm = adjusted
    return Comparison([m.label for m, _ in models], taus, pairs, resamples, skipped, group, runs)


def comparison_figure(comparison: Comparison, title: str = "Δτ ×100 (row − column)"):
    """A heatmap of Δτ (row model − column model); pairs whose Holm-adjusted p >= 0.05 are marked "n.s."."""
    from .plots import _figure, require_matplotlib

    require_matplotlib()
    labels = sorted(comparison.models, key=lambda m: -comparison.taus[m])
    k = len(labels)
    delta = np.full((k, k), np.nan)
    significant = np.zeros((k, k), dtype=bool)
    where = {m: i for i, m in enumerate(labels)}
    for p in comparison.pairs:
        i, j = where[p.model_a], where[p.model_b]
        delta[i, j], delta[j, i] = p.delta_tau, -p.delta_tau
        significant[i, j] = significant[j, i] = p.significant
    longest = max((len(m) for m in labels), default=0)
    size = max(4.0, 0.55 * k + 2.5) + 0.06 * longest  # room for the tick labels: none is clipped
    fig = _figure((size + 1.2, size), layout="constrained")
    ax = fig.subplots()
    limit = max(1.0, float(np.nanmax(np.abs(delta)))) if k > 1 else 1.0
    image = ax.imshow(delta, cmap="RdBu", vmin=-limit, vmax=limit, interpolation="nearest")
    for i in range(k):
        for j in range(k):
            if i != j:
                text = f"{delta[i, j]:.1f}" + ("" if significant[i, j] else "\nn.s.")
                r, g, b, _ = image.cmap(image.norm(delta[i, j]))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5  # white on dark cells, black on light ones
                ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black",
                        fontweight="bold" if significant[i, j] else "normal")
    ax.set_xticks(range(k), labels, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(k), labels, fontsize=7)
    fig.colorbar(image, ax=ax, shrink=0.8, label="Δτ ×100")
    ax.set_title(title, fontsize=10, fontweight="bold")
    return fig


def forest_figure(entries: list[LoadedResult]):
    """τ ×100 with its 95% bootstrap interval per model, sorted (None when no result has intervals)."""
    from .plots import _figure, require_matplotlib

    rows = []
    for e in entries:
        exam1 = e.result.exams.get("exam1")
        if exam1 is not None and exam1.intervals.get("tau_ci_low") is not None:
            s = exam1.summary()
            rows.append((e.label, s["tau"], s["tau_ci_low"], s["tau_ci_high"]))
    if not rows:
        return None
    require_matplotlib()
    rows.sort(key=lambda r: r[1])
    longest = max(len(r[0]) for r in rows)
    fig = _figure((7.0 + 0.07 * max(0, longest - 25), 1.2 + 0.35 * len(rows)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(rows))
    taus = np.array([r[1] for r in rows])
    ax.errorbar(taus, y, xerr=[taus - [r[2] for r in rows], [r[3] for r in rows] - taus], fmt="o", capsize=3)
    ax.set_yticks(y, [r[0] for r in rows], fontsize=8)
    low, high = min(r[2] for r in rows), max(r[3] for r in rows)
    margin = 0.05 * (high - low) or 1.0
    ax.set_xlim(low - margin, high + margin)  # the intervals' own span: differences stay visible
    ax.set_xlabel("Table 1 τ ×100 with its 95% bootstrap interval")
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def run_compare(results_dir: Path, out: Path | None = None, resamples: int = DEFAULT_RESAMPLES, png: bool = True,
                dpi: int | None = None) -> tuple[Comparison, Path]:
    """Compare every model under ``results_dir``; write comparison.csv / .md (and .png) to ``out``
    (default ``results_dir/comparison``), staged and renamed into place."""
    from .plots import DEFAULT_DPI, png_bytes
    from ..io import write_output_folder

    results_dir = Path(results_dir).expanduser()
    comparison = compare(load_results(results_dir), resamples)
    table = comparison.table()
    files: dict[str, str | bytes] = {"comparison.csv": table.csv(), "comparison.md": table.markdown()}
    runs = comparison.runs_table()
    if runs is not None:
        files.update({"comparison_runs.csv": runs.csv(), "comparison_runs.md": runs.markdown()})
    if png:
        files["comparison.png"] = png_bytes(comparison_figure(comparison), dpi or DEFAULT_DPI)
    out = Path(out).expanduser() if out is not None else results_dir / "comparison"
    write_output_folder(out, files, what="the comparison", marker="comparison.csv")
    return comparison, out
