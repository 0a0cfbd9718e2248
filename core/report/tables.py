"""The paper's tables (PROTOCOL.md 1.5, 2.3, 3.6) rebuilt from result folders, as Markdown, CSV and LaTeX.

Reads only ``results.json`` files (found recursively, hidden staging folders skipped) and turns them back into
the exams' typed results, so every number comes from the same code that printed it at sweep time: Table 1
rows are ``exam1.table1_row`` (exact fractions, rounded half up), the lexical row is ``Exam2Result.pivot``,
the probe row is ``Exam3Result.summary``. The report folder is staged and renamed into place whole.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from .. import protocol as P
from ..exams.geometry import CellResult, Exam1Result, table1_row
from .cross_tables import CROSS_TABLES
from .entries import LoadedResult, by_model, paper_mains
from .table import Number, Table, nan_to_none

REPORT_DIR = "report"
REPORT_HTML = "report.html"
FIGURE_DIR = "figures"
RANDOM_EXPECTED = "random (expected)"
# The random row the paper's table prints (PROTOCOL.md 1.5): named as such where it is mentioned, never a row.
PAPER_PRINTED_RANDOM = "the paper's printed random row is τ 0.00, PACC 50.00, AVG 25.00"
# Lexical table blocks and columns (PROTOCOL.md 2.3): (header, exam-2 reference) x (header, exam-2 group).
LEXICAL_BLOCKS = (("Character", "char_lev"), ("Tokenizer", "token_lev"), ("Numeric", "num_dist"))
LEXICAL_COLUMNS = (("Overall", "all"), ("FF", "float-float"), ("FI", "float-int"), ("II", "int-int"))



def _exact_tau(cell: CellResult) -> Fraction | float:
    """The cell's tau as the exact k / C(n, 2) when it has a numerator, else the float."""
    return Fraction(cell.tau_numerator, cell.pairs) if cell.tau_numerator is not None else cell.tau


def _finite(values: Iterable[Number]) -> list[Fraction | float]:
    return [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _mean(values: Iterable[Number]) -> Number:
    values = _finite(values)
    return sum(values, Fraction(0)) / len(values) if values else None


OTHER_RUNS_NOTE = ("Rows marked └ are other runs of the model above (other settings), not other models: they are "
                   "not ranked and not in `all`.")


def natural(label: str) -> list:
    """A label's sort key with its numbers as numbers: "[64 dims]" before "[128 dims]" before "[256 dims]"."""
    import re

    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", label)]


def model_rows(entries: list[LoadedResult], has, make, sort) -> tuple[list[dict], list[dict]]:
    """Rows one per model, sorted by ``sort``, each model's other runs (other settings) right below it as
    "  └ label" rows; and the main runs' rows alone (what `all` rows and pooled tables count: a model once).
    ``has(entry)``: whether an entry has what the table shows; ``make(label, entry)``: its row."""
    blocks = []
    for main, others in by_model([e for e in entries if has(e)]):
        head = make(main.label, main)
        runs = sorted((make(f"  └ {e.label}", e) for e in others), key=lambda r: natural(r["model"]))
        blocks.append((head, runs))
    blocks.sort(key=lambda b: sort(b[0]))
    return [r for head, runs in blocks for r in (head, *runs)], [head for head, _ in blocks]


def table1(entries: list[LoadedResult]) -> Table | None:
    """Per model tau x100, PACC x100, AVG sorted by AVG descending, each model's other runs (other settings)
    right below it; `all` over every cell of the models' main runs (a model counts once); random baseline."""
    keys = ("tau", "pacc", "avg")

    def row(label: str, cells: list[CellResult]) -> dict[str, Any]:
        s = table1_row(cells)  # exact fractions, rounded half up: the numbers `fasteval sweep` printed
        return {"model": label, **{k: s[k] for k in keys}, "display": {k: s[f"{k}_display"] for k in keys}}

    mains = [main for main, _ in by_model([e for e in entries if "exam1" in e.result.exams])]
    if not mains:
        return None
    rows, heads = model_rows(entries, lambda e: "exam1" in e.result.exams,
                             lambda label, e: row(label, e.result.exams["exam1"].cells),
                             lambda r: (-_sort_value(r["avg"]), r["model"]))
    pooled = len(mains) > 1  # with one model, `all` would only repeat its row
    if pooled:
        rows.append(row("all", [c for main in mains for c in main.result.exams["exam1"].cells]))
    rows.append(random_row([c.values for c in mains[0].result.exams["exam1"].cells]))
    note = OTHER_RUNS_NOTE + " " if len(heads) < len(rows) - 1 - pooled else ""
    rule = len(rows) - 2 - pooled
    note += (f"{RANDOM_EXPECTED}: the exact expectation under random similarities on these cells (the anchor's "
             f"self-pair always ranks first, so τ is above 0); {PAPER_PRINTED_RANDOM}.")
    surface = surface_rows(mains[0].result)
    if surface:
        rows += surface
        note += (" surface: encoders that see only the characters (a text's byte counts; character 3-gram TF-IDF "
                 "over the exam's texts): what string similarity alone scores, the level a model's τ is read "
                 "against (docs/vectors.md).")
    return Table("table1", "Table 1: Exam 1 per model (×100), sorted by AVG", ["model", "tau", "pacc", "avg"],
                 ["Model", "τ", "PACC", "AVG"], rows, rules_after={rule}, note=note)


def surface_rows(result) -> list[dict[str, Any]]:
    """The surface-form baselines' Table 1 rows beside a result (``core.protocol.baselines.baselines_of``), with
    what Table 1 displays."""
    from ..protocol.baselines import baselines_of

    return [{**b, "display": {k: b[k] for k in ("tau", "pacc", "avg")}} for b in baselines_of(result)]


def random_row(cell_values: list) -> dict[str, Any]:
    """Table 1's random row: the exact expected τ and PACC (×100) of random similarities on these cells."""
    from ..exams.statistics import random_baselines

    b = random_baselines(cell_values if all(v is not None for v in cell_values) else None)
    return {"model": RANDOM_EXPECTED, "tau": b["tau"], "pacc": b["pacc"], "avg": (b["tau"] + b["pacc"]) / 2}


def intervals_table(entries: list[LoadedResult]) -> Table | None:
    """Table 1 with the 95% bootstrap intervals and the caveat variants (×100), beside the paper's numbers;
    the last row is each variant's exact random baseline on these cells (not the constant of Table 1)."""
    def has(e) -> bool:
        s = e.result.exams["exam1"].summary() if "exam1" in e.result.exams else {}
        return s.get("tau_ci_low") is not None or s.get("strict_tau") is not None

    if not any(has(e) for e in entries):
        return None
    keys = ("tau", "tau_ci_low", "tau_ci_high", "pacc", "pacc_ci_low", "pacc_ci_high", "avg", "avg_ci_low",
            "avg_ci_high", "strict_tau", "all_anchors_tau")

    def make(label: str, e) -> dict[str, Any]:
        s = e.result.exams["exam1"].summary()
        return {"model": label, **{k: nan_to_none(s.get(k)) for k in keys},
                "display": {k: s[f"{k}_display"] for k in ("tau", "pacc", "avg")}}

    rows, heads = model_rows(entries, has, make, lambda r: (-_sort_value(r["avg"]), r["model"]))
    others = OTHER_RUNS_NOTE + " " if len(rows) > len(heads) else ""
    baseline = next(e.result.exams["exam1"].summary() for e in entries if has(e))
    if baseline.get("random_tau") is not None:
        rows.append({"model": RANDOM_EXPECTED, "tau": baseline["random_tau"], "pacc": baseline["random_pacc"],
                     "avg": (baseline["random_tau"] + baseline["random_pacc"]) / 2,
                     "strict_tau": baseline["random_strict_tau"],
                     "all_anchors_tau": baseline["random_all_anchors_tau"]})
    return Table("table1_intervals", "Table 1 with 95% bootstrap intervals and the caveat variants (×100)",
                 ["model", *keys], ["Model", "τ", "τ low", "τ high", "PACC", "PACC low", "PACC high", "AVG",
                                    "AVG low", "AVG high", "Strict τ", "All-anchors τ"], rows,
                 rules_after={len(rows) - 2},
                 note=others + "Strict τ leaves the anchor's self-pair out; all-anchors τ makes every item the anchor. "
                      "The random row is the exact expectation under random similarities (self-similarity 1) "
                      "on these cells: the paper's τ credits a model with the anchor's self-pair, so its random "
                      "baseline is above 0 (2/n per cell); the strict and all-anchors variants expect 0.")


def _sort_value(value: Number) -> float:
    return -math.inf if value is None or math.isnan(float(value)) else float(value)


def _in_paper_order(names: Iterable[str], paper: tuple[str, ...]) -> list[str]:
    """The distinct ``names`` in the paper's order, any the paper has not after them, alphabetically."""
    return sorted(set(names), key=lambda n: (paper.index(n) if n in paper else len(paper), n))


def table2(entries: list[LoadedResult]) -> Table | None:
    """Per quantity and range, in the paper's order (meter, kilogram, liter, second; its ranges as Exam 1 prints
    them): mean, min, max of the cell tau x100 across models; AVG rows."""
    taus: dict[tuple[str, str], list[Fraction | float]] = {}
    mains = paper_mains(entries)
    for e in mains:  # a model once (its main run): another protocol's cells are not the paper's cells
        for cell in e.result.exams.get("exam1", Exam1Result("", [])).cells:
            taus.setdefault((cell.quantity, cell.range_name), []).append(_exact_tau(cell) * 100)
    if not taus:
        return None
    rows, rules = [], set()
    for quantity in _in_paper_order((q for q, _ in taus), P.QUANTITIES):
        block: list[dict[str, Any]] = []
        for range_name in _in_paper_order((r for q, r in taus if q == quantity), P.RANGE_NAMES):
            values = _finite(taus[(quantity, range_name)])
            block.append({"quantity": quantity, "range": range_name, "mean": _mean(values),
                          "min": min(values, default=None), "max": max(values, default=None)})
        rows += block
        rows.append({"quantity": quantity, "range": "AVG",
                     **{k: _mean(r[k] for r in block) for k in ("mean", "min", "max")}})
        rules.add(len(rows) - 1)
    n_models = len(mains)
    return Table("table2", f"Table 2: cell τ (×100) across {n_models} model(s)",
                 ["quantity", "range", "mean", "min", "max"], ["Quantity", "Range", "Mean", "Min", "Max"], rows,
                 rules_after=rules)


def lexical_table(entries: list[LoadedResult]) -> Table | None:
    """Per model (alphabetical) 100 tau-b: Character | Tokenizer | Numeric x Overall, FF, FI, II (PROTOCOL.md 2.3);
    each model's other runs right below it."""
    if not any("exam2" in e.result.exams for e in entries):
        return None
    columns = [f"{ref}_{group}" for _, ref in LEXICAL_BLOCKS for _, group in LEXICAL_COLUMNS]

    def make(label: str, e) -> dict[str, Any]:
        pivot = e.result.exams["exam2"].pivot()
        return {"model": label, **{f"{ref}_{group}": nan_to_none(pivot.get(ref, {}).get(group))
                                   for _, ref in LEXICAL_BLOCKS for _, group in LEXICAL_COLUMNS}}

    rows, heads = model_rows(entries, lambda e: "exam2" in e.result.exams, make, lambda r: r["model"])
    missing = [e.label for e in entries
               if "exam2" in e.result.exams and not e.result.exams["exam2"].token_ids_available]
    note = (f"Tokenizer: no token ids for {', '.join(missing)} (the encoder exposed no tokenizer)."
            if missing else "")
    note = (OTHER_RUNS_NOTE + " " + note).strip() if len(rows) > len(heads) else note
    return Table("lexical", "Lexical vs numeric similarity: Kendall τ-b (×100)", ["model"] + columns,
                 ["Model"] + [f"{block} {col}" for block, _ in LEXICAL_BLOCKS for col, _ in LEXICAL_COLUMNS],
                 rows, digits=1, groups=[(block, len(LEXICAL_COLUMNS)) for block, _ in LEXICAL_BLOCKS],
                 sub_headers=["Model"] + [col for _ in LEXICAL_BLOCKS for col, _ in LEXICAL_COLUMNS], note=note)


def probe_table(entries: list[LoadedResult]) -> Table | None:
    """Per model x100: similarity tau, PACC; probe tau, PACC; delta tau; sorted by probe tau; `all` = mean row."""
    if not any("exam3" in e.result.exams for e in entries):
        return None
    keys = ("kendall_cosine", "pairwise_cosine", "kendall", "pairwise")

    def make(label: str, e) -> dict[str, Any]:
        s = e.result.exams["exam3"].summary()
        return {"model": label, **{k: nan_to_none(s[f"{k}_mean"] * 100) for k in keys},
                "delta_tau": nan_to_none(s["delta_tau_x100"])}

    rows, heads = model_rows(entries, lambda e: "exam3" in e.result.exams, make,
                             lambda r: (-_sort_value(r["kendall"]), r["model"]))
    others = len(rows) > len(heads)
    if len(heads) > 1:  # with one model, `all` would only repeat its row
        rows.append({"model": "all", **{k: _mean(r[k] for r in heads) for k in (*keys, "delta_tau")}})
    metrics = sorted({e.result.exams["exam3"].metric for e in entries if "exam3" in e.result.exams})
    note = "" if metrics == ["cos"] else f"Similarity columns use: {', '.join(metrics)} (the paper: cos)."
    note = (OTHER_RUNS_NOTE + " " + note).strip() if others else note
    return Table("probe", "Recalibration probe vs cosine (×100), sorted by probe τ",
                 ["model", *keys, "delta_tau"],
                 ["Model", "Cosine τ", "Cosine PACC", "Probe τ", "Probe PACC", "Δτ"], rows,
                 rules_after={len(rows) - 2} if len(heads) > 1 else set(), note=note)


def conversion_table(entries: list[LoadedResult]) -> Table | None:
    """The conversion exam per model (×100): recall@1, MRR, lexical trap rate, mean similarity of equivalent
    and of other pairs; sorted by recall@1."""
    if not any("conversion" in e.result.exams for e in entries):
        return None
    keys = ("recall_at_1", "mrr", "lexical_trap_rate", "mean_sim_equivalent", "mean_sim_other")
    rows, heads = model_rows(entries, lambda e: "conversion" in e.result.exams,
                             lambda label, e: {"model": label, **{k: e.result.exams["conversion"].summary()[k] * 100
                                                                 for k in keys}},
                             lambda r: (-_sort_value(r["recall_at_1"]), r["model"]))
    return Table("conversion", "Conversion exam (extension, ×100): the equivalent among 40 conversions",
                 ["model", *keys], ["Model", "Recall@1", "MRR", "Trap rate", "Sim equiv", "Sim other"], rows,
                 note=(OTHER_RUNS_NOTE + " " if len(rows) > len(heads) else "")
                 + "Trap rate: how often '1 centimeter' beats '100 centimeters' as the match of '1 meter'. "
                   "Conversions by pint (liter → gallon divides by 3.785411784).")


def summary_table(exam, entries: list[LoadedResult]) -> Table | None:
    """An exam's table when the report has none of its own: its summary(), one row per model."""
    scored = [(e.label, e.result.exams[exam.key].summary()) for e in entries if exam.key in e.result.exams]
    if not scored:
        return None
    keys = list(dict.fromkeys(k for _, s in scored for k, v in s.items()
                              if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))))
    rows = [{"model": label, **{k: s.get(k) for k in keys}} for label, s in scored]
    return Table(exam.key, exam.title.format(model="all models", metric="as run"), ["model", *keys],
                 ["Model", *keys], rows, digits=4, note=f"{exam.mteb_description} (its summary, as results.json "
                                                        "holds it)")


# The report's own tables of one exam, by the names exam records give (core/exams: Exam.report_tables) ...
EXAM_TABLES = {"table1": table1, "intervals": intervals_table, "table2": table2, "lexical": lexical_table,
               "probe": probe_table, "conversion": conversion_table}
# ... and the tables across exams after them (core/report/cross_tables.py).


def report_tables(entries: list[LoadedResult]) -> list[Table]:
    """Every table of the report: each registered exam's, in registry order, then the tables across exams."""
    from ..exams import registry

    tables = []
    for exam in registry():
        built = ([EXAM_TABLES[name](entries) for name in exam.report_tables] if exam.report_tables
                 else [summary_table(exam, entries)])
        tables += [t for t in built if t is not None]
    from .published import PUBLISHED_TABLES

    return tables + [t for t in (build(entries) for build in (*CROSS_TABLES, *PUBLISHED_TABLES)) if t is not None]
