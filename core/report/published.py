"""The report's tables of the authors' published numbers (``core.published``): the paper's 24 with their Table 1
rows, the report's runs of the paper's protocol placed among them, and the 24's Table 2 breakdown (per quantity and
per range). Published rows are the notebook's, derived with the protocol's formula, marked as published, and kept
out of every measured file (the long table and the Every Eval Ever records read results only)."""
from __future__ import annotations

from typing import Any

from ..exams.geometry import table1_row
from .entries import LoadedResult, paper_mains
from .table import Table

PUBLISHED = "published"
MEASURED = "this report"


def published_rows() -> list[dict[str, Any]]:
    """The 24 as Table 1 rows (x100), marked published, in the notebook's order."""
    from ..published import published

    return [{"model": m.name, "source": PUBLISHED, "group": m.group, **m.table1(exact=True)}
            for m in published().values()]


def among_published_table(entries: list[LoadedResult]) -> Table | None:
    """Table 1 of the paper's 24 (published) with each model's main run of the paper's protocol placed among them,
    sorted by τ (None without such a run)."""
    from ..published import SOURCE, published_model

    runs = paper_mains(entries)
    if not runs:
        return None
    rows = published_rows()
    for e in runs:
        s = table1_row(e.result.exams["exam1"].cells)
        own = published_model(e.result.model)
        rows.append({"model": e.label, "source": MEASURED, "group": own.group if own else "",
                     **{k: s[k] for k in ("tau", "pacc", "avg")},
                     "display": {k: s[f"{k}_display"] for k in ("tau", "pacc", "avg")}})
    rows.sort(key=lambda r: -float(r["tau"]))
    return Table("published", "Table 1 among the paper's 24: the authors' published rows and this report's runs "
                 "(×100, sorted by τ)", ["model", "source", "group", "tau", "pacc", "avg"],
                 ["Model", "Source", "Group", "τ", "PACC", "AVG"], rows,
                 note=f"published: the authors' notebook ({SOURCE['repository'].removeprefix('https://')}, commit "
                      f"{SOURCE['commit'][:7]}), "
                      "Table 1 derived from its 20 Exam 1 cells with PROTOCOL.md 1.5's formula; this report: the "
                      "main run of each model here under the paper's protocol. Never a measurement of this report's "
                      "machine: the long table and the Every Eval Ever records hold the measured rows only.")


def published_breakdown_table(entries: list[LoadedResult]) -> Table | None:
    """Table 2 of the paper's 24 as published: each model's τ per quantity and per range (×100)."""
    from ..published import published

    if not paper_mains(entries):
        return None
    models = list(published().values())
    parts = list(models[0].breakdown())
    rows = [{"model": m.name, **{p: v["tau"] for p, v in m.breakdown(exact=True).items()}} for m in models]
    return Table("published_breakdown", "Table 2 of the paper's 24 as published: τ per quantity and per range "
                 "(×100)", ["model", *parts], ["Model", *parts], rows,
                 note="Derived from the authors' printed Exam 1 cells (core.published).")


PUBLISHED_TABLES = (among_published_table, published_breakdown_table)


def published_figure(entries: list[LoadedResult]):
    """The paper's 24 (grey, as published) and this report's main runs of the paper's protocol (with their 95%
    bootstrap interval where they have one), Table 1 τ ×100, sorted; None without such a run."""
    import numpy as np

    from .plots import _figure, require_matplotlib

    runs = paper_mains(entries)
    if not runs:
        return None
    require_matplotlib()
    rows = [(r["model"], float(r["tau"]), None, None, False) for r in published_rows()]
    for e in runs:
        s = e.result.exams["exam1"].summary()
        rows.append((e.label, s["tau"], s.get("tau_ci_low"), s.get("tau_ci_high"), True))
    rows.sort(key=lambda r: r[1])
    fig = _figure((7.5, 1.2 + 0.26 * len(rows)), layout="constrained")
    ax = fig.subplots()
    for y, (_, tau, low, high, mine) in enumerate(rows):
        ax.barh(y, tau, color="#c0392b" if mine else "#b0b0b0", height=0.7)
        if mine and low is not None and high is not None:
            ax.errorbar(tau, y, xerr=[[tau - low], [high - tau]], fmt="none", ecolor="#222", capsize=3)
    ax.set_yticks(np.arange(len(rows)), [f"{r[0]}{'' if r[4] else ' (published)'}" for r in rows], fontsize=7)
    ax.set_xlabel("Table 1 τ ×100 (grey: as published; red: this report's runs, 95% interval)")
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
    ax.spines[["top", "right"]].set_visible(False)
    return fig
