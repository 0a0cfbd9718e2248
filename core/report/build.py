"""`fasteval report`: read every result under a folder, build the tables and figures, write the report folder
(staged and renamed into place whole)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..choices import DEFAULT_RESAMPLES, HEATMAP_SCALES
from ..errors import InputError
from .html import figures, html_page, summary_figure
from ..io import write_output_folder
from .eee import eee_files
from .entries import LoadedResult, load_results
from .hf_evals import hf_files
from .cross_tables import drift_table, find_ladders, ladder_table, sources_table
from .table import Table
from .tables import REPORT_DIR, REPORT_HTML, report_tables


# The report's files that other tools join (docs/results.md): where each is, and what it is for, in one line
JOINABLE = (
    ("results-long.csv", "results-long.csv / .parquet", "every number as one long table (pandas, DuckDB, a database)"),
    ("every-eval-ever/", "every-eval-ever/", "Every Eval Ever records, one a result (its datastore's layout)"),
    ("hf-eval-results/", "hf-eval-results/", "Hugging Face community evals (a model repository's .eval_results/)"),
)


@dataclass
class Report:
    out: Path
    entries: list[LoadedResult]
    tables: dict[str, Table]
    files: list[str]
    warnings: list[str]

    @property
    def joinable(self) -> list[tuple[str, str]]:
        """(what, what for) of each joinable output this report wrote (``JOINABLE``)."""
        return joinable_of(self.files)


def joinable_of(files) -> list[tuple[str, str]]:
    """(what, what for) of each of ``JOINABLE`` among ``files`` (a report's relative file names)."""
    return [(shown, purpose) for where, shown, purpose in JOINABLE if any(f.startswith(where) for f in files)]


def _comparison(entries: list[LoadedResult], resamples: int, notes: list[str]):
    """The paired comparison of the report's models, when two or more can be compared (else None)."""
    from .compare import compare

    try:
        return compare(entries, resamples) if resamples else None
    except InputError:
        return None


def long_files(entries: list[LoadedResult], warnings: list[str]) -> dict[str, str | bytes]:
    """The long table of every result (``long.py``) as CSV, and as Parquet where pyarrow is installed (else a
    warning line says how to have it)."""
    from .long import LONG_CSV, LONG_PARQUET, long_csv, long_parquet, long_table

    rows = long_table(entries)
    files: dict[str, str | bytes] = {LONG_CSV: long_csv(rows)}
    try:
        files[LONG_PARQUET] = long_parquet(rows)
    except ImportError:
        import logging

        logging.getLogger(__name__).warning("%s was not written: pyarrow is not installed", LONG_PARQUET)
        warnings.append(f"{LONG_PARQUET} was not written: pyarrow is not installed (pip install 'fasteval[report]'); "
                        f"{LONG_CSV} holds the same rows.")
    return files


def build_report(results_dir: Path, out: Path | None = None, models: Iterable[str] | None = None,
                 png: bool = True, dpi: int | None = None, resamples: int = DEFAULT_RESAMPLES,
                 heatmap_scale: str = HEATMAP_SCALES[0], on_step: Callable[[str], None] | None = None) -> Report:
    """Read every result under ``results_dir`` and write the report folder (default ``results_dir/report``).

    A skipped file or unknown model is logged as a warning and listed in ``Report.warnings`` (and the page).
    ``heatmap_scale``: "data" (each figure's own range, where the structure shows) or "paper" (the paper's 0-1).
    ``on_step``: told each step as it starts (the CLI's progress: a report of many models takes a minute).
    """
    step = on_step or (lambda _name: None)
    from ..choices import check_choice
    from .plots import DEFAULT_DPI

    check_choice(heatmap_scale, HEATMAP_SCALES, "heatmap scale", "--heatmap-scale")
    warnings: list[str] = []

    results_dir = Path(results_dir).expanduser()
    dpi = DEFAULT_DPI if dpi is None else int(dpi)
    if not 10 <= dpi <= 1200:
        raise InputError(f"dpi {dpi} is out of range.", "pass --dpi between 10 and 1200 (default 120).")
    out = Path(out).expanduser() if out is not None else results_dir / REPORT_DIR
    step(f"read the results under {results_dir}")
    entries = load_results(results_dir, models=models, notes=warnings)
    step(f"tables of {len(entries)} result(s)")
    tables = report_tables(entries)
    if resamples:
        step(f"the paired comparison ({resamples} resamples)")
    comparison = _comparison(entries, resamples, warnings)
    if comparison is not None:
        tables += [t for t in (comparison.table(), comparison.runs_table()) if t is not None]
    drift = drift_table(results_dir)
    if drift is not None:
        tables.append(drift)
    ladder = ladder_table(results_dir)
    if ladder is not None:
        tables.append(ladder)
    tables.append(sources_table(entries, results_dir))
    files: dict[str, str | bytes] = {}
    for t in tables:
        files[f"{t.name}.md"] = t.markdown()
        files[f"{t.name}.csv"] = t.csv()
        if t.name != "sources":
            files[f"{t.name}.tex"] = t.latex()
    files["tables.md"] = "# fasteval report\n\n" + "\n".join(t.markdown() for t in tables)
    files.update(long_files(entries, warnings))
    files.update(eee_files(entries, warnings))
    files.update(hf_files(entries))
    pngs = figures(entries, dpi, heatmap_scale, on_step=step) if png else []
    if png:
        from .compare import comparison_figure, forest_figure
        from .plots import ladder_figure, png_bytes
        from .published import published_figure

        summary_figures = {"forest": forest_figure(entries),
                           "comparison": comparison_figure(comparison) if comparison is not None else None,
                           "ladder": ladder_figure(find_ladders(results_dir)),
                           "published": published_figure(entries)}
        pngs += [summary_figure(name, png_bytes(fig, dpi)) for name, fig in summary_figures.items()
                 if fig is not None]
    files.update({f.path: f.png for f in pngs})
    step(f"write {out}")
    files[REPORT_HTML] = html_page(tables, pngs, entries, results_dir, warnings, joinable_of(files))
    write_output_folder(out, files, what="the report", marker=REPORT_HTML)
    return Report(out=out, entries=entries, tables={t.name: t for t in tables}, files=sorted(files),
                  warnings=warnings)
