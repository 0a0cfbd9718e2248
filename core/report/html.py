"""The report's figures (PNG) and its one self-contained HTML page."""
from __future__ import annotations

import base64
import html
from pathlib import Path

from fasteval.core.report.tables import FIGURE_DIR, LoadedResult, Table

SUMMARY_PREFIX = "_all_"  # report-level figures (forest plot, comparison): figures/_all_<name>.png


def _file_stem(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label.replace("/", "__"))


def figures(entries: list[LoadedResult], dpi: int) -> dict[str, bytes]:
    """``figures/<label>_<figure>.png`` -> PNG bytes, every figure whose exam the result has."""
    from fasteval.core.report import plots

    plots.require_matplotlib()
    out = {}
    for e in entries:
        exam1 = e.result.exams.get("exam1")
        labels = list(dict.fromkeys(c.variant for c in exam1.cells)) if exam1 is not None else [None]
        for variant in labels:  # a protocol with variants: its figures once per language, template, format
            exams = dict(e.result.exams)
            if exam1 is not None:
                exams["exam1"] = exam1.for_variant(variant) if variant is not None else exam1
            title = e.label if variant is None else f"{e.label} ({variant})"
            stem = _file_stem(e.label) + ("" if variant is None else f"_{_file_stem(variant)}")
            for name, (exam, draw) in plots.FIGURES.items():
                if exam not in exams or (variant is not None and exam != "exam1"):
                    continue
                fig = draw(exams[exam], title)
                if fig is not None:
                    out[f"{FIGURE_DIR}/{stem}_{name}.png"] = plots.png_bytes(fig, dpi)
    return out


# --- HTML -----------------------------------------------------------------------------------------------------

CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:110em}
table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{padding:0.2em 0.7em;border-bottom:1px solid #ddd}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.rule td{border-bottom:2px solid #888}
img{max-width:100%;height:auto;border:1px solid #eee;margin:0.3em 0}.note{color:#555;font-size:0.9em}
code{background:#f4f4f4;padding:0 0.2em}"""


def html_page(tables: list[Table], pngs: dict[str, bytes], entries: list[LoadedResult], root: Path,
              warnings: list[str]) -> str:
    """One page, no external assets: the tables as HTML and every PNG as a base64 data URI."""
    parts = [f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>fasteval report</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>fasteval report</h1><p>{len(entries)} result(s) under <code>{html.escape(str(root))}</code>. "
             "Tables follow PROTOCOL.md 1.5 (Table 1, Table 2), 2.3 (lexical) and 3.6 (probe); figures follow 1.9.</p>"]
    parts += [f"<p class=note>warning: {html.escape(w)}</p>" for w in warnings]
    parts += [t.html() for t in tables]
    if pngs:
        parts.append('<h2 id="figures">Figures</h2>')
        summary = [name for name in pngs if name.startswith(f"{FIGURE_DIR}/{SUMMARY_PREFIX}")]
        for name in summary:
            parts.append(_img(name, pngs[name]))
        for e in entries:
            mine = [name for name in pngs if name.startswith(f"{FIGURE_DIR}/{_file_stem(e.label)}_")]
            if mine:
                parts.append(f"<h3>{html.escape(e.label)}</h3>")
            for name in mine:
                parts.append(_img(name, pngs[name]))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _img(name: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(Path(name).stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption class=note>{html.escape(Path(name).name)}</figcaption></figure>")
