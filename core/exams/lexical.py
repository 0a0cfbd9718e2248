"""Exam 2, lexical vs numeric similarity (PROTOCOL.md 2): Kendall tau-b of the similarity of 100 bare numbers
against character Levenshtein, token Levenshtein (the model's own token ids) and numeric distance, over all
4,950 pairs and the subsets of PROTOCOL.md 2.3.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import protocol as P
from ..embeddings import EmbeddingTable
from . import Exam, ExamInputs
from ..io import csv_text, rows_of, typed

REFERENCES = ("char_lev", "token_lev", "num_dist")
PIVOT_COLUMNS = ("all", "float-float", "float-int", "int-int")
# (group_type, groups) in the order of the long table.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("overall", ("all",)),
    ("type_pair", ("float-float", "float-int", "int-int")),
    ("same_sign", ("False", "True")),
    ("sign_pair", ("negative-negative", "negative-positive", "positive-negative", "positive-positive")),
)


@dataclass
class Exam2Row:
    group_type: str
    group: str
    reference: str
    tau: float
    n_pairs: int


@dataclass
class Exam2Result:
    metric: str
    rows: list[Exam2Row]
    token_ids_available: bool = True
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: dict) -> "Exam2Result":
        return cls(metric=d.get("metric", "cos"), rows=[typed(Exam2Row, r) for r in rows_of(d, "rows")],
                   token_ids_available=d.get("token_ids_available", True), notes=d.get("notes") or [])

    def pivot(self) -> dict[str, dict[str, float]]:
        """reference -> {all, float-float, float-int, int-int} -> tau x 100 (PROTOCOL.md 2.3 printout)."""
        out: dict[str, dict[str, float]] = {ref: {} for ref in sorted(REFERENCES)}
        for row in self.rows:
            if row.group in PIVOT_COLUMNS:
                out[row.reference][row.group] = row.tau * 100
        return out

    def summary(self) -> dict[str, float]:
        """Lexical-table row: 100 tau for Character / Tokenizer / Numeric x Overall, FF, FI, II."""
        return {f"{ref}_{col}": value for ref, cols in self.pivot().items() for col, value in cols.items()}


def pair_labels() -> dict[str, dict[str, np.ndarray]]:
    """Boolean masks over the 4,950 pairs (i < j, row-major) for every (group_type, group)."""
    items = P.exam2_items()
    i, j = np.triu_indices(len(items), k=1)
    kind = np.array([it.kind for it in items])
    sign = np.array([it.sign for it in items])
    type_pair = np.char.add(np.char.add(kind[i], "-"), kind[j])
    same = np.where(sign[i] == sign[j], "True", "False")
    sign_pair = np.char.add(np.char.add(sign[i], "-"), sign[j])
    labels = {"overall": np.full(len(i), "all"), "type_pair": type_pair, "same_sign": same, "sign_pair": sign_pair}
    return {gt: {g: labels[gt] == g for g in groups} for gt, groups in GROUPS}


def pair_distances(token_ids: list[list[int]] | None) -> dict[str, np.ndarray | None]:
    """char_lev, token_lev (None without token ids) and num_dist over the 4,950 pairs."""
    from ..kernels.pick import levenshtein_all_pairs
    from ..kernels.sequences import encode_strings, pack_sequences

    items = P.exam2_items()
    values = np.array([it.value for it in items])
    i, j = np.triu_indices(len(items), k=1)
    return {
        "char_lev": levenshtein_all_pairs(encode_strings([it.text for it in items])).astype(np.float64),
        "token_lev": (levenshtein_all_pairs(pack_sequences(token_ids)).astype(np.float64)
                      if token_ids is not None else None),
        "num_dist": np.abs(values[i] - values[j]),
    }


def run_exam2(table: EmbeddingTable, token_ids: list[list[int]] | None, metric: str = "cos") -> Exam2Result:
    """tau-b = kendalltau(similarity, -distance) for every subset and reference (PROTOCOL.md 2.3)."""
    from ..kernels.pick import kendall_tau_b

    texts = P.exam2_groups()[0]
    sims = table.similarities(texts, None, metric)
    i, j = np.triu_indices(len(texts), k=1)
    pair_sims = sims[i, j].astype(np.float64)
    distances = pair_distances(token_ids)
    rows = []
    for group_type, masks in pair_labels().items():
        for group, mask in masks.items():
            for ref in REFERENCES:
                dist = distances[ref]
                tau = float("nan") if dist is None else kendall_tau_b(pair_sims[mask], -dist[mask])
                rows.append(Exam2Row(group_type, group, ref, tau, int(mask.sum())))
    notes = [] if token_ids is not None else ["token_lev is null: the encoder exposes no tokenizer (a served model: "
                                              "pass --tokenizer PATH, its tokenizer.json or folder)"]
    return Exam2Result(metric=metric, rows=rows, token_ids_available=token_ids is not None, notes=notes)


# --- the exam's record ------------------------------------------------------------------------------------------
def files(result: Exam2Result, model_id: str) -> dict[str, str]:
    """``<model_id>_lexical.csv``: the long table (PROTOCOL.md 2.3), 30 rows."""
    rows = [{"model": model_id, "group_type": r.group_type, "group": r.group, "reference": r.reference,
             "tau": r.tau, "n_pairs": r.n_pairs} for r in result.rows]
    return {f"{model_id}_lexical.csv": csv_text(rows, ["model", "group_type", "group", "reference", "tau",
                                                       "n_pairs"])}


def text(result: Exam2Result) -> str:
    """The pivot of PROTOCOL.md 2.3: rows char_lev, num_dist, token_lev; tau x 100 to one decimal."""
    from math import isnan

    lines = [f"{'reference':<10}" + "".join(f"{c:>13}" for c in PIVOT_COLUMNS)]
    for ref, cols in result.pivot().items():
        cells = ["n/a" if isnan(cols.get(c, float("nan"))) else f"{cols[c]:.1f}" for c in PIVOT_COLUMNS]
        lines.append(f"{ref:<10}" + "".join(f"{v:>13}" for v in cells))
    return "\n".join(lines + result.notes)


def mteb_scores(result: Exam2Result) -> dict[str, float | None]:
    scores: dict[str, float | None] = {f"{r.reference}_{r.group_type}_{r.group}".replace("-", "_"): r.tau
                                       for r in result.rows}
    scores["kendall_tau"] = next(r.tau for r in result.rows if r.group == "all" and r.reference == "num_dist")
    return scores


def _run(inputs: ExamInputs) -> Exam2Result:
    texts = P.exam2_groups()[0]
    seen = inputs.embedded(texts) or texts  # the texts the model saw
    return run_exam2(inputs.table, inputs.token_ids(seen) if inputs.token_ids else None, metric=inputs.similarity)


EXAM = Exam(
    choice=2, title="Exam 2 - lexical vs numeric similarity (Kendall tau-b x100)", groups=P.exam2_groups, run=_run,
    result_type=Exam2Result, files=files, text=text, mteb_task="PhysScoreLexicalNumeric",
    mteb_description="Lexical vs numeric similarity (the paper's Exam 2): Kendall tau-b of the similarity of 100 "
    "bare numbers against their numeric distance (also character and token Levenshtein).", main_score="kendall_tau",
    mteb_scores=mteb_scores, report_tables=("lexical",))
