"""The report's figures (PNG) and its one self-contained HTML page."""
from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..choices import HEATMAP_SCALES
from .entries import LoadedResult
from .table import Table
from .tables import FIGURE_DIR

SUMMARY_PREFIX = "_all_"  # report-level figures (forest plot, comparison): figures/_all_<name>.png
# What each figure shows, as its caption in the page.
CAPTIONS = {
    "embedding_overview": "Similarity of every pair of values in each cell (lower triangle), and digits ↔ words",
    "digits_words": "Similarity of number words (rows) and digits (columns)",
    "conversions": "Similarity of a value in unit A and its conversion to unit B, over the A value (smoothed)",
    "conversion_scores": "The conversion exam: recall@1 and the lexical trap rate per unit pair",
    "forest": "Table 1 τ ×100 of every result with its 95% bootstrap interval",
    "comparison": "Paired bootstrap Δτ ×100 between every two models",
    "published": "Table 1 τ ×100 of the paper's 24 as the authors published them, and this report's runs among them",
    "ladder": "The vector ladder: Table 1 τ ×100 against the bytes a store keeps a vector, and the surface-form "
              "baselines",
}


@dataclass
class Figure:
    """One PNG of the report: its path in the report folder, the result it belongs to (None: the whole
    report), and its caption."""
    path: str
    png: bytes
    owner: str | None
    caption: str


def _file_stem(label: str, limit: int = 60) -> str:
    """A label as a file name: safe characters, and at most ``limit`` of them (a long label keeps its start and
    a digest of the whole, so two labels never share a file)."""
    import hashlib

    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label.replace("/", "__"))
    return stem if len(stem) <= limit else f"{stem[:limit - 9]}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


def figures(entries: list[LoadedResult], dpi: int, heatmap_scale: str = HEATMAP_SCALES[0],
            on_step: Callable[[str], None] | None = None) -> list[Figure]:
    """``figures/<label>_<figure>.png`` of every result, each figure whose exam the result has; the heatmaps on
    ``heatmap_scale`` (choices.HEATMAP_SCALES). ``on_step``: told each result as its figures start."""
    from ..exams import registry
    from . import plots

    plots.require_matplotlib()
    out = []
    for k, e in enumerate(entries, start=1):
        if on_step is not None:
            on_step(f"figures of {e.label} ({k} of {len(entries)})")
        exam1 = e.result.exams.get("exam1")
        labels = list(dict.fromkeys(c.variant for c in exam1.cells)) if exam1 is not None else [None]
        for variant in labels:  # a protocol with variants: its figures once per language, template, format
            exams = dict(e.result.exams)
            if exam1 is not None:
                exams["exam1"] = exam1.for_variant(variant) if variant is not None else exam1
            title = e.label if variant is None else f"{e.label} ({variant})"
            stem = _file_stem(e.label) + ("" if variant is None else f"_{_file_stem(variant)}")
            for exam, name in ((x.key, name) for x in registry() for name in x.figures):
                if exam not in exams or (variant is not None and exam != "exam1"):
                    continue
                options = {"scale": heatmap_scale} if name in plots.HEATMAPS else {}
                fig = plots.FIGURES[name](exams[exam], title, **options)
                if fig is not None:
                    out.append(Figure(f"{FIGURE_DIR}/{stem}_{name}.png", plots.png_bytes(fig, dpi), e.label,
                                      f"{title}: {CAPTIONS.get(name, name)}"))
    return out


def summary_figure(name: str, png: bytes) -> Figure:
    """A figure of the whole report (the forest plot, the comparison)."""
    return Figure(f"{FIGURE_DIR}/{SUMMARY_PREFIX}{name}.png", png, None, CAPTIONS.get(name, name))


# --- HTML -----------------------------------------------------------------------------------------------------

CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:110em}
table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{padding:0.2em 0.5em;border-bottom:1px solid #ddd}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.rule td{border-bottom:2px solid #888}
img{max-width:100%;height:auto;border:1px solid #eee;margin:0.3em 0}.note{color:#555;font-size:0.9em}
code{background:#f4f4f4;padding:0 0.2em}div.wide{overflow-x:auto;max-width:100%}
td:not(.num){overflow-wrap:break-word;word-break:normal}td:first-child{white-space:nowrap}
h2#sources+div.wide td:first-child{white-space:normal;min-width:10em}"""


def html_page(tables: list[Table], pngs: list[Figure], entries: list[LoadedResult], root: Path,
              warnings: list[str], joinable: Sequence[tuple[str, str]] = ()) -> str:
    """One page, no external assets: the tables as HTML, every PNG as a base64 data URI, and where the joinable
    files are (``joinable``: (file, what it is for))."""
    parts = [f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>fasteval report</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>fasteval report</h1><p>{len(entries)} result(s) under <code>{html.escape(str(root))}</code>. "
             "Tables follow PROTOCOL.md 1.5 (Table 1, Table 2), 2.3 (lexical) and 3.6 (probe); figures follow 1.9.</p>"]
    parts += [f"<p class=note>warning: {html.escape(w)}</p>" for w in warnings]
    if joinable:
        parts.append("<p>Beside this page, for other tools (docs/results.md): "
                     + "; ".join(f"<code>{html.escape(f)}</code> ({html.escape(why)})" for f, why in joinable)
                     + ".</p>")
    parts += [t.html() for t in tables]
    if pngs:
        parts.append('<h2 id="figures">Figures</h2>')
        parts += [_img(f) for f in pngs if f.owner is None]
        for e in entries:
            mine = [f for f in pngs if f.owner == e.label]
            if mine:
                parts.append(f"<h3>{html.escape(e.label)}</h3>")
            parts += [_img(f) for f in mine]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _img(figure: Figure) -> str:
    data = base64.b64encode(figure.png).decode("ascii")
    return (f'<figure><img alt="{html.escape(figure.caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption class=note>{html.escape(figure.caption)} "
            f"(<code>{html.escape(figure.path)}</code>)</figcaption></figure>")
