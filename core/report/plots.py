"""Figures as PNG bytes: Exam 1's (PROTOCOL.md 1.9: the embedding overview, the digits-vs-words matrices, the
unit-conversion curves) and the conversion exam's scores, of one model.

matplotlib is an optional extra (`fasteval[report]`) and is imported inside the functions. Figures are made
with ``matplotlib.figure.Figure`` directly, never through pyplot, so a report leaves no global state behind
(no backend switch, no figure registry) when fasteval runs inside a user's notebook or harness; ``savefig``
renders PNG with the Agg canvas whatever the user's backend is.
"""
from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from .. import protocol as P
from ..choices import HEATMAP_SCALES
from ..errors import FastevalError
from ..exams.geometry import Exam1Result

CMAP, VMIN, VMAX = "viridis", 0.0, 1.0  # the paper's heatmaps: a fixed 0-1 scale (PROTOCOL.md 1.9)
OVERVIEW_SIZE = (13.2, 8.0)
DIGITS_WORDS_SIZE = (13.2, 3.9)
CONVERSION_SIZE = (7.5, 6.0)
CONVERSION_PANELS = ("Length", "Mass", "Volume", "Time")
LINE_STYLES = ("-", "--", "-.", ":")  # solid, dashed, dash-dot, dotted, in pair order within a panel
DEFAULT_DPI = 120  # the paper's 300 makes a 4 MB HTML page per model


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FastevalError("matplotlib is not installed, so the report cannot draw its figures.",
                            "pip install 'fasteval[report]', or pass --no-png for the tables only.") from None


def _figure(figsize: tuple[float, float], **kwargs):
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, **kwargs)


def png_bytes(fig, dpi: int = DEFAULT_DPI) -> bytes:
    """The figure as PNG; its pixel size is exactly figsize x dpi (no tight bounding box)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def masked_upper(matrix: Sequence[Sequence[float | None]]) -> np.ndarray:
    """The matrix with entries strictly below the diagonal (row > column) set to NaN (PROTOCOL.md 1.9)."""
    m = np.array(matrix, dtype=float)  # JSON nulls (None) become NaN
    m[np.tril_indices(len(m), k=-1)] = np.nan
    return m


def color_limits(matrices: Sequence[np.ndarray], scale: str) -> tuple[float, float]:
    """(vmin, vmax) of a figure's heatmaps (``scale``: choices.HEATMAP_SCALES): the paper's 0-1, or the smallest
    and largest value its panels show (NaN, the masked triangle, left out; 0-1 when there is none or all are one
    value)."""
    if scale == HEATMAP_SCALES[1]:  # the paper's
        return VMIN, VMAX
    values = np.concatenate([np.ravel(m) for m in matrices]) if matrices else np.array([])
    values = values[np.isfinite(values)]
    if not values.size or values.min() == values.max():
        return VMIN, VMAX
    return float(values.min()), float(values.max())


def _say_scale(fig, limits: tuple[float, float], scale: str) -> None:
    """Under a heatmap figure on its own range, which range that is (the paper's figures use 0 to 1)."""
    if scale != HEATMAP_SCALES[1]:
        fig.text(0.99, 0.005, f"colours span this figure's values, {limits[0]:.2f} to {limits[1]:.2f} (the paper's "
                              "figures: 0 to 1; fasteval report --heatmap-scale paper)", ha="right", va="bottom",
                 fontsize=7, color="#555555")


def _show(ax, matrix: np.ndarray, limits: tuple[float, float] = (VMIN, VMAX)):
    return ax.imshow(matrix, cmap=CMAP, vmin=limits[0], vmax=limits[1], origin="lower", interpolation="nearest",
                     aspect="equal")


def range_ticks(range_name: str, n: int) -> tuple[list[int], list[str]]:
    """Indices 0, 5, ..., 20 (n = 21) or 0, 6, ..., 24 (n = 25), labelled `{:g}` (`{:.0e}` for scientific)."""
    step = max(1, (n - 1) // 4)
    ticks = list(range(0, n, step))
    values = P.range_values(range_name) if range_name in P.RANGE_NAMES else None
    if values is None or len(values) != n:  # another protocol's grid: label by index
        return ticks, [str(i) for i in ticks]
    fmt = "{:.0e}" if range_name == "scientific" else "{:g}"
    return ticks, [fmt.format(float(values[i])) for i in ticks]


def _range_title(range_name: str) -> str:
    return range_name.split("_")[0].capitalize()  # local_0_10 -> Local


def _similarity_label(metric: str) -> str:
    return {"cos": "Cosine similarity", "dot": "Dot-product similarity", "l2": "-L2 distance",
            "hamming": "Hamming similarity", "query-dot": "Float query . stored vector"}.get(metric,
                                                                                           f"{metric} similarity")


def _digits_words_labels(exam1: Exam1Result, quantity: str) -> tuple[list[str], list[str]]:
    """(digit labels, word labels): the paper's numbers and words for the paper's texts, else the texts the
    matrix was computed on ("fünf Sekunden", "5 Sekunden"), so every language is labelled in its own words."""
    texts = exam1.digits_words_texts.get(quantity)
    if not texts or (quantity in P.QUANTITIES and list(P.digits_words_texts(quantity)[1]) == list(texts[0])):
        return list(P.DIGITS), list(P.WORDS)
    return list(texts[1]), list(texts[0])


def _digits_words_panel(ax, exam1: Exam1Result, quantity: str, fontsize: float,
                        limits: tuple[float, float] = (VMIN, VMAX)) -> object:
    """Rows = words (y), columns = digits (x), drawn in full (PROTOCOL.md 1.7, 1.9)."""
    matrix = np.array(exam1.digits_words[quantity], dtype=float)
    image = _show(ax, matrix, limits)
    digits, words = _digits_words_labels(exam1, quantity)
    ax.set_xticks(range(matrix.shape[1]), digits, fontsize=fontsize, rotation=90)
    ax.set_yticks(range(matrix.shape[0]), words, fontsize=fontsize)
    return image


def overview_figure(exam1: Exam1Result, title: str, scale: str = HEATMAP_SCALES[0]):
    """4 rows (quantities) x 6 columns (5 range heatmaps, digits <-> words), width ratios 1:1:1:1:1:2, on one
    colour scale (``scale``: choices.HEATMAP_SCALES)."""
    require_matplotlib()
    quantities = [q for q in dict.fromkeys(c.quantity for c in exam1.cells)
                  if any(k.startswith(q + "/") for k in exam1.heatmaps)]
    ranges = list(dict.fromkeys(c.range_name for c in exam1.cells))
    if not quantities:
        return None
    limits = color_limits([masked_upper(exam1.heatmaps[f"{q}/{r}"]) for q in quantities for r in ranges
                           if f"{q}/{r}" in exam1.heatmaps]
                          + [np.array(exam1.digits_words[q], dtype=float) for q in quantities
                             if q in exam1.digits_words], scale)
    # A fixed layout: constrained layout would double the drawing time of these 24 panels.
    fig = _figure(OVERVIEW_SIZE)
    grid = fig.add_gridspec(len(quantities), len(ranges) + 1, width_ratios=[1] * len(ranges) + [2],
                            left=0.03, right=0.93, bottom=0.08, top=0.91, wspace=0.12, hspace=0.3)
    image = None
    for row, quantity in enumerate(quantities):
        bottom = row == len(quantities) - 1
        for col, range_name in enumerate(ranges):
            ax = fig.add_subplot(grid[row, col])
            matrix = exam1.heatmaps.get(f"{quantity}/{range_name}")
            if row == 0:
                ax.set_title(_range_title(range_name), fontweight="bold", fontsize=10)
            if col == 0:
                ax.set_ylabel(quantity, fontweight="bold", fontsize=10)
            if matrix is None:
                ax.set_axis_off()
                continue
            image = _show(ax, masked_upper(matrix), limits)
            ticks, labels = range_ticks(range_name, len(matrix))
            ax.set_xticks(ticks, labels if bottom else [], fontsize=6, rotation=90)
            ax.set_yticks(ticks, [])
        ax = fig.add_subplot(grid[row, len(ranges)])
        if row == 0:
            ax.set_title("Digits ↔ Words", fontweight="bold", fontsize=10)
        if quantity in exam1.digits_words:
            image = _digits_words_panel(ax, exam1, quantity, fontsize=5.5, limits=limits)
            ax.set_anchor("E")  # the square sits right in its double-width slot: the word labels fill the left
        else:
            ax.set_axis_off()
    if image is not None:
        # small ticks and label: at the figure's size the default ones ran past its right edge ("hamming similarity"
        # was cut off); the bar stays clear of the digits-words panels
        bar = fig.colorbar(image, cax=fig.add_axes((0.94, 0.3, 0.01, 0.4)))
        bar.ax.tick_params(labelsize=7)
        bar.set_label(_similarity_label(exam1.metric), fontsize=8)
    _say_scale(fig, limits, scale)
    fig.suptitle(title, fontweight="bold")
    return fig


def digits_words_figure(exam1: Exam1Result, title: str, scale: str = HEATMAP_SCALES[0]):
    """One panel per quantity: cosine(words_i, digits_j), y = words, x = digits (PROTOCOL.md 1.7), on one colour
    scale (``scale``: choices.HEATMAP_SCALES)."""
    require_matplotlib()
    quantities = [q for q in dict.fromkeys(c.quantity for c in exam1.cells) if q in exam1.digits_words]
    if not quantities:
        return None
    limits = color_limits([np.array(exam1.digits_words[q], dtype=float) for q in quantities], scale)
    fig = _figure(DIGITS_WORDS_SIZE, layout="constrained")
    axes = fig.subplots(1, len(quantities), squeeze=False)[0]
    for ax, quantity in zip(axes, quantities):
        image = _digits_words_panel(ax, exam1, quantity, fontsize=7, limits=limits)
        ax.set_title(quantity, fontweight="bold", fontsize=10)
        ax.set_xlabel("digits", fontsize=8)
    axes[0].set_ylabel("words", fontsize=8)
    fig.colorbar(image, ax=list(axes), shrink=0.8, pad=0.01, label=_similarity_label(exam1.metric))
    _say_scale(fig, limits, scale)
    fig.suptitle(f"{title}: digits vs words", fontweight="bold")
    return fig


def conversion_figure(exam1: Exam1Result, title: str):
    """2 x 2 panels Length / Mass / Volume / Time: smoothed aligned-pair similarity over the A value (log x)."""
    require_matplotlib()
    if not exam1.conversions:
        return None
    fig = _figure(CONVERSION_SIZE, layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    for i, (ax, panel) in enumerate(zip(axes, CONVERSION_PANELS)):
        curves = [c for c in exam1.conversions if c.panel == panel]
        for curve, style in zip(curves, LINE_STYLES):
            ax.plot(curve.x, np.array(curve.smoothed, dtype=float), linestyle=style, linewidth=1.4,
                    label=f"{curve.unit_a} ↔ {curve.unit_b}")
        ax.set_xscale("log")
        ax.set_ylim(0.4, 1.25)
        ax.set_yticks(np.round(np.arange(0.4, 1.01, 0.1), 1))
        ax.set_title(panel, fontweight="bold", fontsize=10)
        ax.grid(True, alpha=0.3, linewidth=0.5)
        ax.spines[["top", "right"]].set_visible(False)
        if curves:
            ax.legend(loc="upper right", frameon=False, fontsize=7)
        if i >= 2:
            ax.set_xlabel("Physical value")
        if i % 2 == 0:
            ax.set_ylabel(_similarity_label(exam1.metric))
    fig.suptitle(f"{title}: unit conversions", fontweight="bold")
    return fig


SCORES_SIZE = (7.5, 3.6)


def conversion_scores_figure(conversion, title: str):
    """The conversion exam per unit pair: recall@1 and lexical trap rate as bars (0-1)."""
    require_matplotlib()
    if not conversion.rows:
        return None
    fig = _figure(SCORES_SIZE, layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(conversion.rows))
    ax.bar(x - 0.2, [r.recall_at_1 for r in conversion.rows], width=0.4, label="recall@1 (higher is better)")
    ax.bar(x + 0.2, [r.lexical_trap_rate for r in conversion.rows], width=0.4,
           label="lexical trap rate (lower is better)")
    ax.set_xticks(x, [f"{r.unit_a}→{r.unit_b}" for r in conversion.rows], rotation=45, ha="right", fontsize=7)
    ax.set_ylim(0, 1.3)
    ax.set_yticks(np.round(np.arange(0, 1.01, 0.2), 1))
    ax.grid(True, axis="y", alpha=0.3, linewidth=0.5)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper center", ncol=2, frameon=False, fontsize=7)
    ax.set_title(f"{title}: conversion exam", fontweight="bold", fontsize=10)
    return fig


# figure name (as exam records name their figures: core/exams Exam.figures) -> the drawing function of its result
FIGURES = {"embedding_overview": overview_figure, "digits_words": digits_words_figure,
           "conversions": conversion_figure, "conversion_scores": conversion_scores_figure}
HEATMAPS = ("embedding_overview", "digits_words")  # the figures that take a heatmap ``scale``


def ladder_figure(ladders: Sequence[dict]):
    """τ ×100 against the bytes a store keeps a vector (log scale), a line a model through its rungs, each rung
    named; the surface-form baselines as dashed levels (None without a ladder)."""
    if not ladders:
        return None
    require_matplotlib()
    fig = _figure((7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for ladder in ladders:
        rows = sorted(ladder["rows"], key=lambda r: r["bytes_per_vector"])
        line, = ax.plot([r["bytes_per_vector"] for r in rows], [r["tau"] for r in rows], "o-",
                        label=rows[0]["model"])
        for r in rows:
            ax.annotate(r["rung"], (r["bytes_per_vector"], r["tau"]), textcoords="offset points", xytext=(3, 4),
                        fontsize=7, color=line.get_color())
    seen = set()
    for ladder in ladders:
        for b in ladder.get("surface_baselines") or []:
            if b["model"] not in seen:
                seen.add(b["model"])
                ax.axhline(b["tau"], linestyle="--", linewidth=0.8, color="grey")
                ax.text(0.99, b["tau"], f"{b['model']} (τ {b['tau']:.2f})", transform=ax.get_yaxis_transform(),
                        ha="right", va="bottom", fontsize=7, color="grey")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes a vector store keeps a vector")
    ax.set_ylabel("Table 1 τ ×100")
    ax.grid(True, alpha=0.3, linewidth=0.5)
    ax.legend(fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    return fig

