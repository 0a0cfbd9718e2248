"""What every `fasteval` command shares: the app, the option types, the one-line log handler, and the helpers
that turn a library error into one line and an exit code. Start-up imports only typer and the standard library:
numba, onnxruntime and torch load inside the commands that need them, so `fasteval --help` stays fast."""
from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional, cast

import typer

from ..core import choices
from ..core.errors import FastevalError, first_line
from .coercion import plain_coercion


class _Commands(typer.core.TyperGroup):
    """fasteval's commands: the app's options and the command called read their plain values without pydantic
    (``cli.coercion``)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        plain_coercion(self, ctx)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        plain_coercion(command, ctx)
        return name, command, rest


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,  # plain help: rendering it with rich doubles the start-up time
                  help="fasteval: how text-embedding models measure physical quantities "
                       "(Opitz & Michail, 'Embedding Models Measure in Peculiar Ways').")


def _choice_enum(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A str Enum over one of the choices of fasteval.core.choices (typer shows and checks its values)."""
    return cast(type[Enum], Enum(name, [(v.replace("-", "_"), v) for v in values], type=str))


Provider = _choice_enum("Provider", choices.PROVIDERS)
DType = _choice_enum("DType", choices.DTYPES)
Overwrite = _choice_enum("Overwrite", choices.OVERWRITE)
Executor = _choice_enum("Executor", choices.EXECUTORS)
Batching = _choice_enum("Batching", choices.BATCHINGS)


class QuantityArguments(typer.core.TyperCommand):
    """A command whose arguments may be negative quantities: "-5 degC" is an argument, not an option."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        import re

        negative = re.compile(r"^-(\d|\.\d)")
        # options that take a value (arguments have no is_flag; typer carries its own click, so no isinstance)
        takes_value = {name for p in self.params if getattr(p, "is_flag", True) is False for name in p.opts}
        options, arguments, tokens = [], [], iter(args)
        for token in tokens:
            if token == "--":
                arguments += list(tokens)
            elif negative.match(token) or not token.startswith("-"):
                arguments.append(token)
            elif token in takes_value:
                options += [token, *[v for v in (next(tokens, None),) if v is not None]]
            else:
                options.append(token)
        return super().parse_args(ctx, options + (["--", *arguments] if arguments else []))


class _OneLine(logging.Handler):
    """The library's log records as the lines users know: "fasteval: warning: ...", "fasteval: ..." (info), on
    the standard error the command has now (a test runner swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        level = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        typer.echo(f"fasteval: {level}{record.getMessage()}", err=True)


def _log_to_stderr() -> None:
    """Install the one handler of the ``fasteval`` logger (once; the library itself only logs)."""
    logger = logging.getLogger("fasteval")
    if not any(isinstance(h, _OneLine) for h in logger.handlers):
        logger.addHandler(_OneLine())
        logger.setLevel(logging.INFO)


def _print_version(value: bool) -> None:
    if value:
        from ..models.machine import version_lines

        for line in version_lines():
            typer.echo(line)
        raise typer.Exit(0)


@app.callback()
def _every_command(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print fasteval's version and onnxruntime's providers here, and exit.")] = False,
) -> None:
    _log_to_stderr()


def similarity_option(value: str) -> str:
    """--similarity: cos, dot or l2, with the names other tools use (cosine, euclidean) accepted."""
    from ..core.errors import InputError

    try:
        return choices.similarity(value)
    except InputError as err:
        raise typer.BadParameter(err.problem + " " + (err.fix or "")) from None


SimilarityOption = Annotated[str, typer.Option(
    metavar="<" + "|".join(choices.SIMILARITIES) + ">", callback=similarity_option,
    help="Similarity function; the paper uses cos (cosine and euclidean are accepted as well).")]

# What a vector store keeps (core/vectors.py), declared once for every command that scores.
Dimensions = Annotated[Optional[int], typer.Option(
    min=1, help="Score the first N dimensions, L2-normalised (a Matryoshka model's truncation); below the "
                "model's dimension.", show_default=False)]
VectorQuantization = Annotated[Optional[str], typer.Option(
    metavar="<" + "|".join(choices.VECTOR_QUANTIZATIONS) + ">",
    help=f"Score the vectors a store keeps: {choices.vector_forms_help()}.", show_default=False)]
Calibration = Annotated[Optional[Path], typer.Option(
    help=f"The calibration texts of {', '.join(choices.CALIBRATED_FORMS)}, one a line (default: the texts of "
         "Table 1's 20 cells).", show_default=False)]
# ... taken by a command that scores as one ``store`` dict (``store_options``), as fasteval.evaluate takes them
STORE_OPTIONS = {"dimensions": (Dimensions, None, "dimensions"),
                 "vector_quantization": (VectorQuantization, None, "vector_quantization"),
                 "calibration": (Calibration, None, "calibration")}

# A served model's client options (``--model URL``), declared once for every command that takes a model.
ApiKeyEnv = Annotated[str, typer.Option(
    help="Environment variable holding a served model's API key (sent as a bearer token, never written).")]
Concurrency = Annotated[int, typer.Option(min=1, help="Requests in flight to a served model.")]
RequestTimeout = Annotated[float, typer.Option(min=0.001, help="Seconds a served model has to answer a request.")]
Retries = Annotated[int, typer.Option(min=0, help="Retries of a request on 429, 5xx, timeouts and dropped "
                                                  "connections (exponential backoff, Retry-After honoured).")]
TokenizerPath = Annotated[Optional[Path], typer.Option(
    help="A served model's tokenizer (tokenizer.json or a model folder) for Exam 2's token Levenshtein, where "
         "the server has no /tokenize.")]


# option -> (its type, its default, load_model's name for it in ``served``)
SERVED_OPTIONS = {
    "api_key_env": (ApiKeyEnv, choices.API_KEY_ENV, "api_key_env"),
    "concurrency": (Concurrency, choices.SERVED_CONCURRENCY, "concurrency"),
    "request_timeout": (RequestTimeout, choices.SERVED_TIMEOUT_S, "timeout"),
    "retries": (Retries, choices.SERVED_RETRIES, "retries"),
    "tokenizer": (TokenizerPath, None, "tokenizer"),
}


def served_client(*, leave_out: tuple[str, ...] = ("tokenizer",)):
    """A command that takes a served model (``--model URL``): the client options (``SERVED_OPTIONS``, less
    ``leave_out``) become its options, before ``--quiet``, and reach it as one ``served`` dict, as load_model
    takes it (local models ignore it)."""
    return options_as("served", {n: o for n, o in SERVED_OPTIONS.items() if n not in leave_out})


def store_options():
    """A command that scores a model as a vector store keeps it: --dimensions, --vector-quantization and
    --calibration (``STORE_OPTIONS``) reach it as one ``store`` dict, as fasteval.evaluate takes them."""
    return options_as("store", STORE_OPTIONS)


def options_as(group: str, table: dict[str, tuple[Any, Any, Any]]):
    """A command whose options ``table`` (name -> (its annotation, its default, its key)) are declared once for
    every command that takes them: they become its options, before ``--quiet``, and reach it as one dict, its
    parameter ``group``: each value under its key, or, where the key is a pair (``("reference", "dtype")``), under
    the second inside a dict of the first."""
    import functools
    import inspect
    import typing

    def decorate(command):
        hints = typing.get_type_hints(command, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in inspect.signature(command).parameters.values() if p.name != group]
        added = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=annotation)
                 for n, (annotation, default, _) in table.items()]
        at = next((k for k, p in enumerate(own) if p.name == "quiet"), len(own))
        params = own[:at] + added + own[at:]

        @functools.wraps(command)
        def with_group(**kwargs):
            grouped: dict[str, Any] = {}
            for n, (_, _, key) in table.items():
                if isinstance(key, tuple):
                    grouped.setdefault(key[0], {})[key[1]] = kwargs.pop(n)
                else:
                    grouped[key] = kwargs.pop(n)
            return command(**{group: grouped}, **kwargs)

        with_group.__dict__["__signature__"] = inspect.Signature(params)  # what typer reads (inspect.signature)
        with_group.__annotations__ = {p.name: p.annotation for p in params}
        return with_group

    return decorate


def _fail(err: FastevalError, exit_code: int | None = None) -> None:
    typer.echo(f"fasteval: error: {err}", err=True)
    raise typer.Exit(exit_code if exit_code is not None else err.exit_code)


def internal_error_line(err: BaseException) -> str:
    """The one line of a fault that is not the user's (a bug): its type and first line, and how to learn more."""
    return (f"fasteval: internal error: {type(err).__name__}: {first_line(err)} "
            "(rerun with FASTEVAL_DEBUG=1 for the traceback, and please report it)")


@contextmanager
def user_errors(on_interrupt: str = "nothing half-written was kept.", exit_code: int | None = None):
    """A FastevalError becomes one line and its exit code; Ctrl-C exits 130 with ``on_interrupt``. ``exit_code``,
    for a command whose codes say more (drift's 1 is "drifts"), is the code of every error, the unexpected ones
    (a bug: one line, FASTEVAL_DEBUG=1 for the traceback) included, so no fault reads as a verdict."""
    try:
        yield
    except FastevalError as err:
        _fail(err, exit_code)
    except KeyboardInterrupt as err:  # Ctrl-C (130), or SIGTERM (143: cli.main's Terminated)
        typer.echo(f"fasteval: interrupted; {on_interrupt}", err=True)
        raise typer.Exit(130 if type(err) is KeyboardInterrupt else 143) from None
    except (typer.Exit, typer.Abort, typer.exceptions.TyperException):  # typer's own way out, and its usage errors
        raise
    except Exception as err:
        if exit_code is None:
            raise  # main() reports it (exit 1; the traceback under FASTEVAL_DEBUG=1)
        if os.environ.get("FASTEVAL_DEBUG"):  # the traceback the user asked for, and still the command's code
            import traceback

            traceback.print_exc()
        typer.echo(internal_error_line(err), err=True)
        raise typer.Exit(exit_code) from None


def say(quiet: bool, message: str) -> None:
    if not quiet:
        typer.echo(message, err=True)


def set_quiet(quiet: bool) -> None:
    """--quiet (or --json): the library's informational records are not shown; its warnings still are."""
    logging.getLogger("fasteval").setLevel(logging.WARNING if quiet else logging.INFO)


def progress(quiet: bool):
    """Two bars on stderr (models, steps of the current model); nothing when quiet or not a terminal."""
    import contextlib

    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


