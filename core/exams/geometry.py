"""Exam 1, measurement geometry (PROTOCOL.md 1): per-cell Kendall tau and PACC against the anchor row,
the per-model aggregates, digits-vs-words matrices and unit-conversion curves.

Exams take an EmbeddingTable (text -> embedding); they never load a model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import comb, isnan
from typing import Any

import numpy as np

from .. import protocol as P
from ..embeddings import EmbeddingTable
from . import Exam, ExamInputs
from .cell_similarities import cell_similarities
from ..io import csv_text, rows_of, typed


@dataclass
class CellResult:
    quantity: str
    range_name: str
    n: int
    tau: float
    pacc: float
    # Exact numerators over C(n, 2) when the anchor similarities have no ties (the normal case), else None.
    tau_numerator: int | None = None
    pacc_numerator: int | None = None
    # Extensions (fasteval.core.exams.statistics), beside the paper's numbers, never instead of them:
    # the cell's bootstrap intervals (0-1, None when the bootstrap is off) and its variant taus.
    tau_ci_low: float | None = None
    tau_ci_high: float | None = None
    pacc_ci_low: float | None = None
    pacc_ci_high: float | None = None
    strict_tau: float | None = None
    all_anchors_tau: float | None = None
    # What was asked: the protocol variant (language, template, format; None in the paper) and the exact
    # strings and values of the cell.
    variant: str | None = None
    texts: list[str] | None = None
    values: list[float] | None = None
    # What the encoder was given where it differs from ``texts`` (--normalize-quantities), else None.
    embedded: list[str] | None = None

    @property
    def key(self) -> str:
        base = f"{self.quantity}/{self.range_name}"
        return base if self.variant is None else f"{base}/{self.variant}"

    @property
    def pairs(self) -> int:
        return comb(self.n, 2)


@dataclass
class ConversionCurve:
    panel: str
    unit_a: str
    unit_b: str
    x: list[float]
    raw: list[float]
    smoothed: list[float]


@dataclass
class AlignmentRow:
    """One cell of a variant against the same cell of the reference variant: is each text's most similar
    reference text the one with its own value?"""
    variant: str
    quantity: str
    range_name: str
    n: int
    recall_at_1: float
    mean_sim: float  # mean similarity of a text and its own value's reference text


@dataclass
class Exam1Result:
    metric: str
    cells: list[CellResult]
    heatmaps: dict[str, list[list[float]]] = field(default_factory=dict)  # "quantity/range" -> n x n
    digits_words: dict[str, list[list[float]]] = field(default_factory=dict)  # quantity -> 12 x 12
    conversions: list[ConversionCurve] = field(default_factory=list)
    # The model's bootstrap intervals x100 (tau_ci_low, ..., avg_ci_high) and the bootstrap settings.
    intervals: dict[str, float | None] = field(default_factory=dict)
    bootstrap: dict | None = None
    # A protocol with variants: each non-reference cell against the reference variant's cell.
    alignment: list[AlignmentRow] = field(default_factory=list)
    # A protocol with variants: each variant's own bootstrap intervals (x100), as ``intervals``.
    variant_intervals: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # The digits-vs-words matrices' texts: key -> [word texts (rows), digit texts (columns)].
    digits_words_texts: dict[str, list[list[str]]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: dict) -> "Exam1Result":
        return cls(metric=d.get("metric", "cos"), cells=[typed(CellResult, c) for c in rows_of(d, "cells")],
                   heatmaps=d.get("heatmaps") or {}, digits_words=d.get("digits_words") or {},
                   conversions=[typed(ConversionCurve, c) for c in d.get("conversions") or []],
                   intervals=d.get("intervals") or {}, bootstrap=d.get("bootstrap"),
                   alignment=[typed(AlignmentRow, a) for a in d.get("alignment") or []],
                   variant_intervals=d.get("variant_intervals") or {},
                   digits_words_texts=d.get("digits_words_texts") or {})

    def summary(self) -> dict[str, Any]:
        """Table 1 row: tau and PACC means x100, their sample std (ddof=1) over cells, AVG (PROTOCOL.md 1.5);
        then the extensions: the bootstrap intervals (x100) and the variants with their random baselines;
        in a protocol with variants, ``by_variant``: each variant's row and its alignment (x100)."""
        out = {**table1_row(self.cells), **self.intervals, **variants_row(self.cells)}
        labels = list(dict.fromkeys(c.variant for c in self.cells if c.variant is not None))
        if labels:
            out["by_variant"] = {label: self.variant_row(label) for label in labels}
        return out

    def variant_row(self, label: str) -> dict[str, float | None]:
        """One variant's tau, PACC, AVG (x100) and, when aligned, mean recall@1 and similarity to the reference."""
        s = table1_row([c for c in self.cells if c.variant == label])
        row = {k: s[k] for k in ("tau", "pacc", "avg", "tau_display", "pacc_display", "avg_display")}
        row.update(self.variant_intervals.get(label, {}))
        aligned = [a for a in self.alignment if a.variant == label]
        if aligned:
            row["alignment_recall_at_1"] = float(np.mean([a.recall_at_1 for a in aligned]) * 100)
            row["alignment_mean_sim"] = float(np.mean([a.mean_sim for a in aligned]) * 100)
        return row

    def for_variant(self, label: str | None) -> "Exam1Result":
        """This result seen as a paper-shaped one for one variant (keys without the variant), for drawing."""
        cells = [c for c in self.cells if c.variant == label]
        suffix = "" if label is None else f"/{label}"
        heatmaps = {k[: -len(suffix)] if suffix else k: v for k, v in self.heatmaps.items()
                    if (k.endswith(suffix) and k.count("/") == 2) or (not suffix and k.count("/") == 1)}
        def mine(items: dict) -> dict:
            return {k[: -len(suffix)] if suffix else k: v for k, v in items.items()
                    if (k.endswith(suffix) and "/" in k) or (not suffix and "/" not in k)}

        return Exam1Result(self.metric, cells, heatmaps, mine(self.digits_words),
                           self.conversions if label is None else [],
                           digits_words_texts=mine(self.digits_words_texts))


def _mean_exact(cells: list[CellResult], attr: str) -> Fraction | None:
    nums = [getattr(c, attr + "_numerator") for c in cells]
    if any(n is None for n in nums):
        return None
    return sum((Fraction(n, c.pairs) for n, c in zip(nums, cells)), Fraction(0)) / len(cells)


def round_half_up(x: Fraction | float | None, digits: int = 2) -> float | None:
    """Round half away from zero on the exact value (PROTOCOL.md 1.5: AVG often lands on a half-cent)."""
    if x is None or (isinstance(x, float) and isnan(x)):
        return None
    q = Fraction(x) * 10 ** digits
    sign = -1 if q < 0 else 1
    return sign * int(abs(q) + Fraction(1, 2)) / 10 ** digits


def table1_row(cells: list[CellResult]) -> dict[str, Any]:
    taus = np.array([c.tau for c in cells], dtype=float)
    paccs = np.array([c.pacc for c in cells], dtype=float)
    tau_exact, pacc_exact = _mean_exact(cells, "tau"), _mean_exact(cells, "pacc")
    tau100: Fraction | float
    pacc100: Fraction | float
    avg: Fraction | float
    if tau_exact is not None and pacc_exact is not None:
        tau100, pacc100 = tau_exact * 100, pacc_exact * 100
        avg = (tau100 + pacc100) / 2
    else:
        tau100, pacc100 = float(np.mean(taus) * 100), float(np.mean(paccs) * 100)
        avg = (tau100 + pacc100) / 2
    std = (lambda a: float(np.std(a, ddof=1)) if len(a) > 1 else float("nan"))
    return {
        "tau": float(tau100), "pacc": float(pacc100), "avg": float(avg),
        "tau_display": round_half_up(tau100), "pacc_display": round_half_up(pacc100),
        "avg_display": round_half_up(avg),
        "kendall_mean": float(np.mean(taus)), "pairwise_mean": float(np.mean(paccs)),
        "kendall_std": std(taus), "pairwise_std": std(paccs),
    }


def alignment_rows(table: EmbeddingTable, protocol, cells, metric: str) -> list[AlignmentRow]:
    """Each non-reference variant's cells against the reference variant's (same quantity and range)."""

    reference = protocol.reference_variant()
    if reference is None:
        return []
    by_key = {(c.quantity, c.range_name, c.variant): c for c in cells}
    rows = []
    for c in cells:
        if c.variant == reference.label:
            continue
        ref = by_key[(c.quantity, c.range_name, reference.label)]
        sims = table.similarities(c.texts, ref.texts, metric).astype(np.float64)
        diagonal = np.diag(sims)
        best = (sims >= diagonal[:, None]).sum(axis=1) == 1  # its own value strictly the most similar
        rows.append(AlignmentRow(c.variant, c.quantity, c.range_name, len(c.texts), float(best.mean()),
                                 float(diagonal.mean())))
    return rows


def variants_row(cells: list[CellResult]) -> dict[str, float | None]:
    """The variants' means over the cells x100 and each one's exact random baseline on these cells (x100)."""
    from .statistics import random_baselines

    out: dict[str, float | None] = {}
    for name in ("strict_tau", "all_anchors_tau"):
        values = [getattr(c, name) for c in cells]
        out[name] = (None if any(v is None for v in values) or not values
                     else float(np.nanmean(np.array(values, dtype=float)) * 100))
    if all(v is None for v in out.values()):
        return {}  # a result written before the variants existed
    baselines = random_baselines([c.values if c.values is not None else P.range_values(c.range_name)
                                  for c in cells])
    out.update(random_tau=baselines["tau"], random_pacc=baselines["pacc"],
               random_strict_tau=baselines["strict_tau"], random_all_anchors_tau=baselines["all_anchors_tau"])
    return out


def _exact_numerator(stat: float, pairs: int, tied: bool) -> int | None:
    if tied or isnan(stat):
        return None
    return int(round(stat * pairs))


def run_exam1(table: EmbeddingTable, metric: str = "cos", keep_matrices: bool = True,
              similarities: dict[str, np.ndarray] | None = None, bootstrap: int = 0,
              protocol=None) -> Exam1Result:
    """Score every cell of PROTOCOL.md 1.4, and (optionally) the matrices and curves of 1.3, 1.7, 1.8.

    Beside them (fasteval.core.exams.statistics): each cell's strict and all-anchors tau, and with
    ``bootstrap`` > 0 resamples, the cells' and the model's percentile 95% intervals. ``protocol``: a
    protocol file's cells instead of the paper's (``fasteval.core.protocol.spec``), with the alignment of
    its variants to the reference variant."""
    from . import statistics as S

    from ..kernels.pick import kendall_tau_b_rows, pairwise_accuracy_rows
    from ..kernels.small import gaussian_smooth

    cells = P.protocol_cells(protocol)
    similarities = similarities or cell_similarities(table, metric, cells)
    matrices = [similarities[c.key] for c in cells]
    cell_results: list[CellResult] = []
    by_n: dict[int, list[int]] = {}
    for i, c in enumerate(cells):
        by_n.setdefault(len(c.values), []).append(i)
    taus, paccs = np.empty(len(cells)), np.empty(len(cells))
    for idx in by_n.values():
        values = np.stack([cells[i].values for i in idx])
        anchor_sims = np.stack([matrices[i][0].astype(np.float64) for i in idx])
        # tau = kendalltau(values, -s); PACC: the smaller value must have the strictly larger similarity. A pair
        # of equal values (a protocol file may repeat one; the paper's never do) has no order to get right: it is
        # left out, as the bootstrap leaves out the repeats its resamples draw, so a point and its interval
        # follow one rule.
        taus[idx] = kendall_tau_b_rows(values, -anchor_sims)
        paccs[idx] = pairwise_accuracy_rows(values, anchor_sims, "skip")
    for i, c in enumerate(cells):
        s = matrices[i][0]
        n_i = len(s)
        tied = len(np.unique(s)) < n_i
        pairs = comb(n_i, 2)
        cell_results.append(CellResult(c.quantity, c.range_name, len(s), float(taus[i]), float(paccs[i]),
                                       _exact_numerator(taus[i], pairs, tied),
                                       _exact_numerator(paccs[i], pairs, tied or len(np.unique(c.values)) < n_i),
                                       strict_tau=S.strict_tau(c.values, matrices[i]),
                                       all_anchors_tau=S.all_anchors_tau(c.values, matrices[i]),
                                       variant=c.variant, texts=list(c.texts), values=c.values.tolist()))
    result = Exam1Result(metric=metric, cells=cell_results)
    if bootstrap:
        result.bootstrap = S.bootstrap_settings(bootstrap)
        # The renderings of one (quantity, range) in several variants are the same values asked again: they
        # share their draws, so a pooled row's interval is one of the values, not of 7x as many cells.
        value_sets = list(dict.fromkeys((c.quantity, c.range_name) for c in cells))
        draws = [value_sets.index((c.quantity, c.range_name)) for c in cells]
        resampled = S.resample_exam1([m[0] for m in matrices], bootstrap, [c.values for c in cells], draws)
        for k, cell in enumerate(cell_results):
            cell.tau_ci_low, cell.tau_ci_high = S.percentile_interval(resampled.taus[k])
            cell.pacc_ci_low, cell.pacc_ci_high = S.percentile_interval(resampled.paccs[k])
        result.intervals = resampled.intervals()
        for label in dict.fromkeys(c.variant for c in cells if c.variant is not None):
            result.variant_intervals[label] = resampled.intervals([k for k, c in enumerate(cells)
                                                                  if c.variant == label])
    if protocol is not None and not protocol.is_paper:
        result.alignment = alignment_rows(table, protocol, cells, metric)
    if not keep_matrices:
        return result
    result.heatmaps = {c.key: m.tolist() for c, m in zip(cells, matrices)}
    if protocol is not None and not protocol.is_paper:
        for variant in protocol.variants:
            for q in protocol.quantities:
                digits, words = protocol.digits_words_texts(q.name, variant)
                if digits:
                    key = q.name if variant.label is None else f"{q.name}/{variant.label}"
                    result.digits_words[key] = table.similarities(words, digits, metric).tolist()
                    result.digits_words_texts[key] = [list(words), list(digits)]
        return result
    for quantity in P.QUANTITIES:
        digits, words = P.digits_words_texts(quantity)
        result.digits_words[quantity] = table.similarities(words, digits, metric).tolist()
        result.digits_words_texts[quantity] = [list(words), list(digits)]
    x = P.conversion_values()
    for pair in P.CONVERSION_PAIRS:
        a_texts, b_texts = P.conversion_texts(pair)
        raw = table.paired(a_texts, b_texts, metric).astype(np.float64)
        smoothed = gaussian_smooth(raw, sigma=P.CONVERSION_SIGMA)
        result.conversions.append(ConversionCurve(pair.panel, pair.unit_a, pair.unit_b, x.tolist(), raw.tolist(),
                                                  smoothed.tolist()))
    return result


# --- the exam's record: files, printout, MTEB scores ----------------------------------------------------------
EXTENSION_COLUMNS = ("tau_ci_low", "tau_ci_high", "pacc_ci_low", "pacc_ci_high", "strict_tau", "all_anchors_tau")


def files(result: Exam1Result, model_id: str) -> dict[str, str]:
    """``<model_id>_benchmark_full.csv`` (20 cells) and ``..._summary.csv`` (PROTOCOL.md 1.6), and the cells'
    intervals and variants in ``..._benchmark_intervals_variants.csv``."""
    full = [{"model": model_id, "unit": c.quantity, "range": c.range_name, "kendall": c.tau, "pairwise": c.pacc}
            for c in result.cells]
    extended = [{**row, **{k: getattr(c, k) for k in EXTENSION_COLUMNS}} for row, c in zip(full, result.cells)]
    return {
        f"{model_id}_benchmark_full.csv": csv_text(full, ["model", "unit", "range", "kendall", "pairwise"]),
        f"{model_id}_benchmark_summary.csv": csv_text(
            [{"model": model_id, **result.summary()}],
            ["model", "kendall_mean", "pairwise_mean", "kendall_std", "pairwise_std"]),
        # The extensions beside the paper's columns, in a file of their own (the paper's two keep their shape).
        f"{model_id}_benchmark_intervals_variants.csv": csv_text(
            extended, ["model", "unit", "range", "kendall", "pairwise", *EXTENSION_COLUMNS]),
    }


def text(result: Exam1Result) -> str:
    """The notebook's printout: a block per quantity, one line per range, 3 decimals."""
    lines = []
    for quantity in dict.fromkeys(c.quantity for c in result.cells):
        lines.append(f"[{quantity}]")
        for c in result.cells:
            if c.quantity == quantity:
                tau = "nan" if isnan(c.tau) else f"{c.tau:.3f}"
                variant = "" if c.variant is None else f"{c.variant:<12} "
                lines.append(f"  {variant}{c.range_name:<15} tau={tau:>6}  pairwise={c.pacc:.3f}")
    return "\n".join(lines)


def mteb_scores(result: Exam1Result) -> dict[str, float | None]:
    s = result.summary()
    scores = {"kendall_tau": s["kendall_mean"], "pairwise_accuracy": s["pairwise_mean"], "avg": s["avg"] / 100}
    for quantity in dict.fromkeys(c.quantity for c in result.cells):
        scores[f"kendall_tau_{quantity}"] = float(np.mean([c.tau for c in result.cells if c.quantity == quantity]))
    return scores


def _run(inputs: ExamInputs) -> Exam1Result:
    result = run_exam1(inputs.table, metric=inputs.similarity, similarities=inputs.similarities(),
                       bootstrap=inputs.bootstrap, protocol=inputs.protocol)
    for cell in result.cells:
        cell.embedded = inputs.embedded(cell.texts)
    return result


EXAM = Exam(
    choice=1, title="Exam 1 - measurement geometry ({model}, similarity={metric})", groups=P.exam1_groups,
    run=_run, result_type=Exam1Result, files=files, text=text, mteb_task="PhysScoreMeasurementGeometry",
    mteb_description="Measurement geometry (the paper's Exam 1): for 4 quantities x 5 number ranges, Kendall tau "
    "of the similarity to the smallest value against physical distance ('0 meters', '0.5 meters', ...). Main "
    "score: the mean tau of the 20 cells.", main_score="kendall_tau", mteb_scores=mteb_scores,
    uses_cell_similarities=True, report_tables=("table1", "intervals", "table2"),
    figures=("embedding_overview", "digits_words", "conversions"))
