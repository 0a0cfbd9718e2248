"""One table of the report: rows of named values, and how it prints as Markdown, CSV, LaTeX and HTML (numbers
rounded half up from their exact values, LaTeX's specials escaped)."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..exams.geometry import round_half_up
from ..io import csv_text, markdown_table

Number = Fraction | float | None


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
    # columns of probabilities (p-values): a positive value that rounds to 0 prints "< 0.001", never "0.000"
    probabilities: set[str] = field(default_factory=set)

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
        if self._below_shown(row, column, shown):
            return f"< {10 ** -self.digits:.{self.digits}f}"
        return "—" if shown is None else f"{shown:.{self.digits}f}"

    def _below_shown(self, row: dict[str, Any], column: str, shown: float | None) -> bool:
        """A probability above 0 that the table's decimals would show as 0."""
        value = row.get(column)
        return column in self.probabilities and shown == 0 and isinstance(value, (int, float)) and value > 0

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
            cells = [latex_escape(row[c]) if c in text_cols else
                     f"$<$ {10 ** -self.digits:.{self.digits}f}" if self._below_shown(row, c, self.shown(row, c))
                     else latex_number(self.shown(row, c), self.digits) for c in self.columns]
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
            cells = "".join(f'<td{"" if c in text_cols else " class=num"}>{_breakable(self.cell_text(row, c))}</td>'
                            for c in self.columns)
            body.append(f"<tr{cls}>{cells}</tr>")
        note = f"<p class=note>{html.escape(self.note)}</p>" if self.note else ""
        # a table wider than the page scrolls within its own box; the page and the other tables keep their width
        return (f'<h2 id="{self.name}">{html.escape(self.title)}</h2>\n<div class=wide><table>\n<thead>{head}</thead>'
                "\n<tbody>\n" + "\n".join(body) + f"\n</tbody>\n</table></div>\n{note}\n")


def _breakable(text: str) -> str:
    """A cell's text as HTML that may wrap after each '/' and '_' (a path, an organisation/model id, a folder
    name) rather than squeeze its column to a few characters a line or push the table past the page."""
    return html.escape(text).replace("/", "/<wbr>").replace("_", "_<wbr>")


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


def nan_to_none(value: float | None) -> float | None:
    """A cell's number as a table holds it: NaN (no value) as None, shown empty."""
    return None if value is None or math.isnan(value) else value
