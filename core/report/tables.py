"""The paper's tables (PROTOCOL.md 1.5, 2.3, 3.6) rebuilt from result folders, as Markdown, CSV and LaTeX.

Reads only ``results.json`` files (found recursively, hidden staging folders skipped) and turns them back into
the exams' typed results, so every number comes from the same code that printed it at sweep time: Table 1
rows are ``exam1.table1_row`` (exact fractions, rounded half up), the lexical row is ``Exam2Result.pivot``,
the probe row is ``Exam3Result.summary``. The report folder is staged and renamed into place whole.
"""
from __future__ import annotations

import logging

import html
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..exams.geometry import CellResult, Exam1Result, round_half_up, table1_row
from ..errors import first_line
from ..io import csv_text, markdown_table
from ..protocol import display_name
from .entries import LoadedResult, by_model, is_normalized, is_paper, protocol_name
from ..results.model import ModelResult

log = logging.getLogger(__name__)
REPORT_DIR = "report"
REPORT_HTML = "report.html"
FIGURE_DIR = "figures"
RANDOM_EXPECTED = "random (expected)"
# The random row the paper's table prints (PROTOCOL.md 1.5): named as such where it is mentioned, never a row.
PAPER_PRINTED_RANDOM = "the paper's printed random row is τ 0.00, PACC 50.00, AVG 25.00"
# Lexical table blocks and columns (PROTOCOL.md 2.3): (header, exam-2 reference) x (header, exam-2 group).
LEXICAL_BLOCKS = (("Character", "char_lev"), ("Tokenizer", "token_lev"), ("Numeric", "num_dist"))
LEXICAL_COLUMNS = (("Overall", "all"), ("FF", "float-float"), ("FI", "float-int"), ("II", "int-int"))

Number = Fraction | float | None


# --- Tables ---------------------------------------------------------------------------------------------------

@dataclass
class Table:
    """Rows of named values; text columns first. ``display`` in a row overrides the rounding of a value."""
    name: str
    title: str
    columns: list[str]              # keys of the row dicts, also the CSV header
    headers: list[str]              # shown in Markdown / HTML / LaTeX
    rows: list[dict[str, Any]]
    digits: int = 2                 # decimals shown (rounded half up)
    groups: list[tuple[str, int]] = field(default_factory=list)  # LaTeX/HTML header groups over value columns
    sub_headers: list[str] | None = None  # LaTeX/HTML headers under the groups (Markdown/CSV need unique ones)
    rules_after: set[int] = field(default_factory=set)            # row indices followed by a rule
    note: str = ""

    @property
    def text_columns(self) -> list[str]:
        return [c for c in self.columns if any(isinstance(r.get(c), str) for r in self.rows)]

    def shown(self, row: dict[str, Any], column: str) -> float | None:
        """The value as printed: rounded half up on its exact value (a Fraction where there is one)."""
        overrides = row.get("display") or {}
        return overrides[column] if column in overrides else round_half_up(row.get(column), self.digits)

    def cell_text(self, row: dict[str, Any], column: str) -> str:
        value = row.get(column)
        if isinstance(value, str):
            return value
        shown = self.shown(row, column)
        return "—" if shown is None else f"{shown:.{self.digits}f}"

    def markdown(self) -> str:
        rows = [{h: self.cell_text(r, c) for c, h in zip(self.columns, self.headers)} for r in self.rows]
        return f"### {self.title}\n\n" + markdown_table(rows, self.headers) + (f"\n{self.note}\n" if self.note
                                                                             else "")

    def csv(self) -> str:
        """Full precision (x100 where the table is x100); empty cell for a missing value."""
        rows = [{c: (v if isinstance(v, str) or v is None else float(v)) for c, v in
                 ((c, r.get(c)) for c in self.columns)} for r in self.rows]
        return csv_text(rows, self.columns)

    def latex(self) -> str:
        """A booktabs tabular; numbers as PROTOCOL.md 1.5 / 2.3 print them, names with LaTeX specials escaped."""
        text_cols = self.text_columns
        spec = "l" * len(text_cols) + "r" * (len(self.columns) - len(text_cols))
        lines = [f"% {self.title}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
        if self.groups:
            cells, rules, col = [""] * len(text_cols), [], len(text_cols) + 1
            for label, span in self.groups:
                cells.append(f"\\multicolumn{{{span}}}{{c}}{{{latex_escape(label)}}}")
                rules.append(f"\\cmidrule(lr){{{col}-{col + span - 1}}}")
                col += span
            lines += [" & ".join(cells) + " \\\\", " ".join(rules)]
        lines += [" & ".join(latex_header(h) for h in self.sub_headers or self.headers) + " \\\\", "\\midrule"]
        for i, row in enumerate(self.rows):
            cells = [latex_escape(row[c]) if c in text_cols else latex_number(self.shown(row, c), self.digits)
                     for c in self.columns]
            lines.append(" & ".join(cells) + " \\\\")
            if i in self.rules_after and i != len(self.rows) - 1:
                lines.append("\\midrule")
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        text_cols = self.text_columns
        head = ""
        if self.groups:
            head += "<tr>" + "<th></th>" * len(text_cols) + "".join(
                f'<th colspan="{span}">{html.escape(label)}</th>' for label, span in self.groups) + "</tr>"
        head += "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in self.sub_headers or self.headers) + "</tr>"
        body = []
        for i, row in enumerate(self.rows):
            cls = ' class="rule"' if i in self.rules_after else ""
            cells = "".join(f'<td{"" if c in text_cols else " class=num"}>{html.escape(self.cell_text(row, c))}</td>'
                            for c in self.columns)
            body.append(f"<tr{cls}>{cells}</tr>")
        note = f"<p class=note>{html.escape(self.note)}</p>" if self.note else ""
        return (f'<h2 id="{self.name}">{html.escape(self.title)}</h2>\n<table>\n<thead>{head}</thead>\n<tbody>\n'
                + "\n".join(body) + f"\n</tbody>\n</table>\n{note}\n")


def latex_number(value: float | None, digits: int = 2) -> str:
    """Zero-padded to width 5 with two decimals (`07.33`, `-07.33`; PROTOCOL.md 1.5), width 4 with one (2.3)."""
    if value is None:
        return "--"
    width = 3 + digits  # two integer digits, the point, the decimals
    text = f"{abs(value):0{width}.{digits}f}"
    return ("-" + text) if value < 0 and float(text) != 0 else text


def latex_escape(text: str) -> str:
    special = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(special.get(ch, ch) for ch in str(text))


def latex_header(header: str) -> str:
    maths = {"τ": r"$\tau$", "Δτ": r"$\Delta\tau$"}
    return " ".join(maths.get(word, latex_escape(word)) for word in header.split(" "))


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


def model_rows(entries: list[LoadedResult], has, make, sort) -> tuple[list[dict], list[dict]]:
    """Rows one per model, sorted by ``sort``, each model's other runs (other settings) right below it as
    "  └ label" rows; and the main runs' rows alone (what `all` rows and pooled tables count: a model once).
    ``has(entry)``: whether an entry has what the table shows; ``make(label, entry)``: its row."""
    blocks = []
    for main, others in by_model([e for e in entries if has(e)]):
        head = make(main.label, main)
        runs = sorted((make(f"  └ {e.label}", e) for e in others), key=lambda r: r["model"])
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
    rows.append(row("all", [c for main in mains for c in main.result.exams["exam1"].cells]))
    rows.append(random_row([c.values for c in mains[0].result.exams["exam1"].cells]))
    note = OTHER_RUNS_NOTE + " " if len(heads) < len(rows) - 2 else ""
    note += (f"{RANDOM_EXPECTED}: the exact expectation under random similarities on these cells (the anchor's "
             f"self-pair always ranks first, so τ is above 0); {PAPER_PRINTED_RANDOM}.")
    return Table("table1", "Table 1: Exam 1 per model (×100), sorted by AVG", ["model", "tau", "pacc", "avg"],
                 ["Model", "τ", "PACC", "AVG"], rows, rules_after={len(rows) - 3}, note=note)


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
        return {"model": label, **{k: _nan_to_none(s.get(k)) for k in keys},
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


def table2(entries: list[LoadedResult]) -> Table | None:
    """Per quantity and range (alphabetical): mean, min, max of the cell tau x100 across models; AVG rows."""
    taus: dict[tuple[str, str], list[Fraction | float]] = {}
    mains = [main for main, _ in by_model([e for e in entries if "exam1" in e.result.exams and is_paper(e.result)])]
    for e in mains:  # a model once (its main run): another protocol's cells are not the paper's cells
        for cell in e.result.exams.get("exam1", Exam1Result("", [])).cells:
            taus.setdefault((cell.quantity, cell.range_name), []).append(_exact_tau(cell) * 100)
    if not taus:
        return None
    rows, rules = [], set()
    for quantity in sorted({q for q, _ in taus}):
        block = []
        for range_name in sorted(r for q, r in taus if q == quantity):
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
        return {"model": label, **{f"{ref}_{group}": _nan_to_none(pivot.get(ref, {}).get(group))
                                   for _, ref in LEXICAL_BLOCKS for _, group in LEXICAL_COLUMNS}}

    rows, heads = model_rows(entries, lambda e: "exam2" in e.result.exams, make, lambda r: r["model"])
    missing = [e.label for e in entries if "exam2" in e.result.exams and not e.result.exams["exam2"].token_ids_available]
    note = (f"Tokenizer: no token ids for {', '.join(missing)} (the encoder exposed no tokenizer)."
            if missing else "")
    note = (OTHER_RUNS_NOTE + " " + note).strip() if len(rows) > len(heads) else note
    return Table("lexical", "Lexical vs numeric similarity: Kendall τ-b (×100)", ["model"] + columns,
                 ["Model"] + [f"{block} {col}" for block, _ in LEXICAL_BLOCKS for col, _ in LEXICAL_COLUMNS],
                 rows, digits=1, groups=[(block, len(LEXICAL_COLUMNS)) for block, _ in LEXICAL_BLOCKS],
                 sub_headers=["Model"] + [col for _ in LEXICAL_BLOCKS for col, _ in LEXICAL_COLUMNS], note=note)


def _nan_to_none(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def probe_table(entries: list[LoadedResult]) -> Table | None:
    """Per model x100: similarity tau, PACC; probe tau, PACC; delta tau; sorted by probe tau; `all` = mean row."""
    if not any("exam3" in e.result.exams for e in entries):
        return None
    keys = ("kendall_cosine", "pairwise_cosine", "kendall", "pairwise")

    def make(label: str, e) -> dict[str, Any]:
        s = e.result.exams["exam3"].summary()
        return {"model": label, **{k: _nan_to_none(s[f"{k}_mean"] * 100) for k in keys},
                "delta_tau": _nan_to_none(s["delta_tau_x100"])}

    rows, heads = model_rows(entries, lambda e: "exam3" in e.result.exams, make,
                             lambda r: (-_sort_value(r["kendall"]), r["model"]))
    others = len(rows) > len(heads)
    rows.append({"model": "all", **{k: _mean(r[k] for r in heads) for k in (*keys, "delta_tau")}})
    metrics = sorted({e.result.exams["exam3"].metric for e in entries if "exam3" in e.result.exams})
    note = "" if metrics == ["cos"] else f"Similarity columns use: {', '.join(metrics)} (the paper: cos)."
    note = (OTHER_RUNS_NOTE + " " + note).strip() if others else note
    return Table("probe", "Recalibration probe vs cosine (×100), sorted by probe τ",
                 ["model", *keys, "delta_tau"],
                 ["Model", "Cosine τ", "Cosine PACC", "Probe τ", "Probe PACC", "Δτ"], rows,
                 rules_after={len(rows) - 2}, note=note)


def protocol_variants_table(entries: list[LoadedResult]) -> Table | None:
    """Per result of a protocol with variants (languages, templates, formats) and per variant: τ, PACC, AVG
    and the alignment with the reference variant (recall@1, mean similarity), ×100."""
    rows = []
    for e in entries:
        exam1 = e.result.exams.get("exam1")
        by_variant = exam1.summary().get("by_variant") if exam1 is not None else None
        for label, r in (by_variant or {}).items():
            rows.append({"model": e.label, "protocol": protocol_name(e.result), "variant": label,
                         "tau": r["tau"], "pacc": r["pacc"], "avg": r["avg"],
                         "recall": r.get("alignment_recall_at_1"), "mean_sim": r.get("alignment_mean_sim"),
                         "display": {k: r[f"{k}_display"] for k in ("tau", "pacc", "avg")}})
    if not rows:
        return None
    return Table("protocol_variants", "Protocols: each variant's Exam 1 (×100) and its alignment with the reference",
                 ["model", "protocol", "variant", "tau", "pacc", "avg", "recall", "mean_sim"],
                 ["Model", "Protocol", "Variant", "τ", "PACC", "AVG", "Aligned recall@1", "Aligned mean sim"], rows,
                 note="Aligned: each text against the reference variant's texts of the same cell (English; bare "
                      "strings; plain digits): is its own value's reference the most similar? — marks the "
                      "reference itself.")


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


# (column, header, the number of a result it shows; None when the result lacks that exam)
_NORMALIZATION_COLUMNS = (
    ("tau", "Table 1 τ", lambda r: table1_row(r.exams["exam1"].cells)["tau_display"] if "exam1" in r.exams else None),
    ("avg", "Table 1 AVG",
     lambda r: table1_row(r.exams["exam1"].cells)["avg_display"] if "exam1" in r.exams else None),
    ("num_dist", "Exam 2 numeric τ",
     lambda r: r.exams["exam2"].pivot()["num_dist"].get("all", math.nan) if "exam2" in r.exams else None),
    ("probe", "Exam 3 probe τ",
     lambda r: r.exams["exam3"].summary()["kendall_mean"] * 100 if "exam3" in r.exams else None),
    ("recall", "Conversion recall@1",
     lambda r: r.exams["conversion"].summary()["recall_at_1"] * 100 if "conversion" in r.exams else None),
    ("trap", "Conversion trap rate",
     lambda r: r.exams["conversion"].summary()["lexical_trap_rate"] * 100 if "conversion" in r.exams else None),
)


def normalization_table(entries: list[LoadedResult]) -> Table | None:
    """Every exam's headline number without and with --normalize-quantities, side by side, for each model
    (and similarity) that has both runs (×100)."""
    groups: dict[tuple[str, str], dict[bool, ModelResult]] = {}
    for e in entries:  # the runs of one model that differ only by the normalisation
        rest = ", ".join(w for w in e.run.split(", ") if w and w != "normalized")
        key = (display_name(e.result.model or e.result.model_id), rest)
        groups.setdefault(key, {})[is_normalized(e.result)] = e.result
    rows = []
    for (name, rest), pair in sorted(groups.items()):
        if len(pair) < 2:
            continue
        row: dict[str, Any] = {"model": name + (f" [{rest}]" if rest else "")}
        for column, _, value in _NORMALIZATION_COLUMNS:
            for tag, normalized in (("plain", False), ("norm", True)):
                row[f"{column}_{tag}"] = _nan_to_none(value(pair[normalized]))
        rows.append(row)
    if not rows:
        return None
    columns = [f"{c}_{t}" for c, _, _ in _NORMALIZATION_COLUMNS for t in ("plain", "norm")]
    return Table("normalization", "Without and with --normalize-quantities (×100)", ["model", *columns],
                 ["Model"] + [f"{h} {t}" for _, h, _ in _NORMALIZATION_COLUMNS for t in ("plain", "normalized")],
                 rows, groups=[(h, 2) for _, h, _ in _NORMALIZATION_COLUMNS],
                 sub_headers=["Model"] + ["plain", "normalized"] * len(_NORMALIZATION_COLUMNS),
                 note="normalized: every quantity given to the model in canonical form (one unit per dimension, "
                      "plain digits); the exams score the same values.")


def sources_table(entries: list[LoadedResult], root: Path) -> Table:
    """Where each row came from and what it was computed under."""
    columns = ["label", "model", "similarity", "normalized", "provider", "dtype", "protocol", "fasteval", "exams",
               "path"]
    rows = [{"label": e.label, "model": e.result.model, "similarity": str(e.result.settings.get("similarity", "")),
             "normalized": "yes" if is_normalized(e.result) else "no",
             "provider": str(e.result.settings.get("provider", "")), "dtype": str(e.result.settings.get("dtype", "")),
             "protocol": e.result.protocol, "fasteval": e.result.fasteval_version,
             "exams": ",".join(k.replace("exam", "") for k in sorted(e.result.exams)),
             "path": e.path.relative_to(root).as_posix()} for e in entries]
    return Table("sources", "Result files", columns, [c.capitalize() for c in columns], rows)


def drift_table(root: Path) -> Table | None:
    """Every `fasteval drift --out` report under ``root``: per group of texts, the mean and worst cosine between the
    two encoders and the share below the threshold, with each report's verdict, collisions and Δτ."""
    from ..io import read_json

    rows = []
    for path in sorted(Path(root).rglob("drift.json")):
        try:
            data = read_json(path)
            groups = dict(data["groups"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("skipped %s: unreadable drift report (%s)", path, first_line(err))
            continue
        pair = f"{data.get('candidate')} vs {data.get('reference')}"
        delta = data.get("delta_tau")
        head = {"pair": pair, "group": "all", "verdict": data.get("verdict"), "mean": data.get("mean_cosine"),
                "worst": data.get("worst_cosine"), "share_below": None, "collisions": len(data.get("collisions", [])),
                "delta_tau": delta}
        rows.append(head)
        rows += [{"pair": "", "group": name, "verdict": "failed" if g.get("failed") else "", "mean": g.get("mean"),
                  "worst": g.get("worst"), "share_below": g.get("share_below"), "collisions": None, "delta_tau": None}
                 for name, g in groups.items()]
    if not rows:
        return None
    return Table("drift", "Drift: does the candidate embed like the reference? (cosine per group of texts)",
                 ["pair", "group", "verdict", "mean", "worst", "share_below", "collisions", "delta_tau"],
                 ["Candidate vs reference", "Group", "Verdict", "Mean cos", "Worst cos", "Below threshold",
                  "Collisions", "Δτ ×100"], rows, digits=4,
                 note="From `fasteval drift --out DIR` reports under the results folder.")


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
# ... and the tables across exams, after them.
CROSS_TABLES = (normalization_table, protocol_variants_table)


def report_tables(entries: list[LoadedResult]) -> list[Table]:
    """Every table of the report: each registered exam's, in registry order, then the tables across exams."""
    from ..exams import registry

    tables = []
    for exam in registry():
        built = [EXAM_TABLES[name](entries) for name in exam.report_tables] if exam.report_tables \
            else [summary_table(exam, entries)]
        tables += [t for t in built if t is not None]
    return tables + [t for t in (build(entries) for build in CROSS_TABLES) if t is not None]
