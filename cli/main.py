"""The `fasteval` command. Parses arguments, calls the library, prints; imports nothing heavy at start-up."""
from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help="fasteval: how embedding models measure physical quantities.")


@app.command()
def sweep() -> None:
    """Run the exams on a model."""


def main() -> None:
    app()
