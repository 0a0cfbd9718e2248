"""The conversion exam (an extension, selected with ``--exams ...,conversion``; never part of Table 1): does a
model find the equivalent of "1 meter" among "100 centimeters", "134.34 centimeters", ...?

For each of the paper's 11 unit pairs (A, B) and each of its 40 A values, the similarity of the A text to all
40 equivalent B texts (converted by pint), and to the lexical trap (the A number with the B unit):

* recall@1 - the equivalent B text is the most similar of the 40 (a tie counts against it);
* MRR - the mean of 1 / rank of the equivalent B text (rank = 1 + the B texts at least as similar);
* mean similarity of equivalent pairs (the diagonal) and of non-equivalent pairs (the rest);
* lexical trap rate - how often the trap ("1 centimeter") is strictly more similar than the equivalent
  ("100 centimeters").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import protocol as P
from ..embeddings import EmbeddingTable
from . import Exam, ExamInputs
from ..io import csv_text, rows_of, typed

SUMMARY_KEYS = ("recall_at_1", "mrr", "lexical_trap_rate", "mean_sim_equivalent", "mean_sim_other")
GALLON_NOTE = ("liter ↔ gallon uses pint's US gallon (B = A / 3.785411784); the paper's curve multiplied by "
               "3.785 (PROTOCOL.md 1.8)")


# The CSV's columns (the texts stay in results.json).
CSV_FIELDS = ("panel", "unit_a", "unit_b", "n", "recall_at_1", "mrr", "mean_sim_equivalent", "mean_sim_other",
              "lexical_trap_rate")


@dataclass
class ConversionRow:
    panel: str
    unit_a: str
    unit_b: str
    n: int
    recall_at_1: float
    mrr: float
    mean_sim_equivalent: float
    mean_sim_other: float
    lexical_trap_rate: float
    # What was asked: the A texts, their equivalent B texts and the traps (None in results written before).
    texts_a: list[str] | None = None
    texts_b: list[str] | None = None
    traps: list[str] | None = None
    # What the encoder was given for them where that differs (--normalize-quantities), else None.
    embedded_a: list[str] | None = None
    embedded_b: list[str] | None = None
    embedded_traps: list[str] | None = None


@dataclass
class ConversionResult:
    metric: str
    rows: list[ConversionRow]
    notes: list[str] = field(default_factory=lambda: [GALLON_NOTE])

    @classmethod
    def from_json(cls, d: dict) -> "ConversionResult":
        return cls(metric=d.get("metric", "cos"), rows=[typed(ConversionRow, r) for r in rows_of(d, "rows")],
                   notes=d.get("notes") or [])

    def summary(self) -> dict[str, float]:
        """Means over the 11 pairs (each has 40 items, so also the means over all items), 0-1."""
        return {key: float(np.mean([getattr(r, key) for r in self.rows])) for key in SUMMARY_KEYS}


def score_pair(sims: np.ndarray, trap_sims: np.ndarray) -> dict[str, Any]:
    """The scores of one pair from its (n, n) A x B similarity matrix (equivalents on the diagonal) and the
    (n,) similarities of each A text to its trap."""
    n = sims.shape[0]
    diagonal = np.diag(sims)
    # rank of the equivalent = 1 + the other B texts at least as similar (ties count against it)
    at_least = (sims >= diagonal[:, None]).sum(axis=1) - 1
    ranks = 1 + at_least
    off = ~np.eye(n, dtype=bool)
    return {"recall_at_1": float(np.mean(ranks == 1)), "mrr": float(np.mean(1.0 / ranks)),
            "mean_sim_equivalent": float(diagonal.mean()), "mean_sim_other": float(sims[off].mean()),
            "lexical_trap_rate": float(np.mean(trap_sims > diagonal))}


def run_conversion(table: EmbeddingTable, metric: str = "cos") -> ConversionResult:
    """Score every pair of PROTOCOL.md 1.8 with pint's conversions."""
    rows = []
    for pair in P.CONVERSION_PAIRS:
        a_texts, b_texts, traps = P.conversion_exam_texts(pair)
        sims = table.similarities(a_texts, b_texts, metric).astype(np.float64)
        trap_sims = table.paired(a_texts, traps, metric).astype(np.float64)
        rows.append(ConversionRow(pair.panel, pair.unit_a, pair.unit_b, len(a_texts), **score_pair(sims, trap_sims),
                                  texts_a=list(a_texts), texts_b=list(b_texts), traps=list(traps)))
    return ConversionResult(metric=metric, rows=rows)


# --- the exam's record ------------------------------------------------------------------------------------------
def files(result: ConversionResult, model_id: str) -> dict[str, str]:
    """``<model_id>_conversion.csv``: one row per unit pair of the conversion exam."""
    rows = [{"model": model_id, **{k: getattr(r, k) for k in CSV_FIELDS}} for r in result.rows]
    return {f"{model_id}_conversion.csv": csv_text(rows, ["model", *CSV_FIELDS])}


def text(result: ConversionResult) -> str:
    """Per unit pair: recall@1, MRR, mean similarity of equivalent / other pairs, lexical trap rate."""
    lines = [f"  {'pair':<26} {'recall@1':>8} {'MRR':>6} {'sim equiv':>9} {'sim other':>9} {'trap rate':>9}"]
    for r in result.rows:
        lines.append(f"  {r.unit_a + ' -> ' + r.unit_b:<26} {r.recall_at_1:>8.3f} {r.mrr:>6.3f} "
                     f"{r.mean_sim_equivalent:>9.3f} {r.mean_sim_other:>9.3f} {r.lexical_trap_rate:>9.3f}")
    s = result.summary()
    lines.append(f"  {'all pairs':<26} {s['recall_at_1']:>8.3f} {s['mrr']:>6.3f} {s['mean_sim_equivalent']:>9.3f} "
                 f"{s['mean_sim_other']:>9.3f} {s['lexical_trap_rate']:>9.3f}")
    return "\n".join(lines + [f"  note: {n}" for n in result.notes])


def _groups() -> list[list[str]]:
    """Exam 1's calls first (the A texts and most B texts are Exam 1's), then the converted B texts and traps."""
    return P.exam1_groups() + P.conversion_groups()


def _run(inputs: ExamInputs) -> ConversionResult:
    result = run_conversion(inputs.table, metric=inputs.similarity)
    for row in result.rows:
        row.embedded_a, row.embedded_b, row.embedded_traps = (inputs.embedded(texts)
                                                              for texts in (row.texts_a, row.texts_b, row.traps))
    return result


EXAM = Exam(
    choice="conversion", title="Conversion (extension): the equivalent among 40 conversions, {metric}",
    groups=_groups, run=_run, result_type=ConversionResult, files=files, text=text, mteb_task="PhysScoreConversion",
    mteb_description="Unit conversions (a fasteval extension): recall@1 of the equivalent quantity ('100 "
    "centimeters' for '1 meter') among 40 conversions, for 11 unit pairs; also the lexical trap rate.",
    main_score="recall_at_1", mteb_scores=lambda result: dict(result.summary()), report_tables=("conversion",),
    figures=("conversion_scores",))
