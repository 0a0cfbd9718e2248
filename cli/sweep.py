"""`fasteval sweep` (the main job) and `fasteval check` (your own quantities)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..core import choices
from .app import (
    Batching, DType, Executor, Overwrite, Provider, QuantityArguments, SimilarityOption, app, progress, say,
    served_client, set_quiet, store_options, user_errors,
)


@app.command(short_help="Run the paper's exams on models; tables, JSON, CSV, MTEB files.")
@served_client(leave_out=())
@store_options()
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
    dtype: Annotated[DType, typer.Option(help="Export precision: fp16 (onnxscript's onnxruntime fusions, "
                                              "for the GPU) and int8 (onnxruntime's dynamic quantization) are made "
                                              "from the fp32 export, each with its own result key.")] = DType.fp32,
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
    ladder: Annotated[Optional[str], typer.Option(
        metavar="vectors", help=f"vectors: {choices.ladder_help()}.", show_default=False)] = None,
    protocol: Annotated[Optional[str], typer.Option(
        help="What to ask: a built-in protocol (see `fasteval protocols`) or a protocol .toml file "
             "(default: the paper's).", show_default=False)] = None,
    overwrite: Annotated[Overwrite, typer.Option(
        help="only-missing: skip results done under the same settings, redo missing or corrupt ones; "
             "never: skip any existing folder; always: recompute.")] = Overwrite.only_missing,
    executor: Annotated[Executor, typer.Option(help="local: one model after another; ray: one Ray task per "
                                                    "model (pip install 'fasteval[ray]').")] = Executor.local,
    address: Annotated[Optional[str], typer.Option(help="Ray cluster address (with --executor ray).")] = None,
    shard: Annotated[Optional[str], typer.Option(
        metavar="I/N", help="Run only the share I of N of the model list (0 <= I < N: every model whose position is "
                            "I modulo N); shards write the same folders and keys, so their --out folders merge by "
                            "copying (a SLURM array: --shard $SLURM_ARRAY_TASK_ID/N).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print what each model needs and stop: its source, parameters, weights, the memory its "
                          "export takes, cached or not, gated, remote code, prompts, and whether this machine can "
                          "run it (--model paper: the paper's 24).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the results.")] = False,
    served: Optional[dict] = None,
    store: Optional[dict] = None,
) -> None:
    """Run the paper's exams on one or more models; print the tables and write JSON, CSV and MTEB results.

    Resumable: a rerun skips every model already done under the same settings and redoes the rest.
    """
    with user_errors("finished models are kept; what the interrupted one embedded is cached, and a rerun "
                     "resumes from it."):
        set_quiet(quiet)
        from . import printing
        from ..core.runs.sweep import models_to_run, plan_sweep

        names, everyone = models_to_run(model, models_file, shard)
        options = {"provider": provider.value, "batch_size": batch_size, "prompt": prompt,
                   "prompt_name": prompt_name, "dtype": dtype.value, "batching": batching.value,
                   "served": served}
        # what is asked, validated once (a bad protocol file, exam selection or ladder fails here, before anything is
        # written)
        asked: dict[str, Any] = dict(exams=exams, similarity=similarity, protocol=protocol,
                                     normalize_quantities=normalize_quantities, bootstrap=bootstrap, **(store or {}))
        planned = plan_sweep(**asked, ladder=ladder)  # a ladder's choice and exams too (no model asked anything)
        if shard is not None:
            say(quiet, f"fasteval: shard {shard.strip()}: {len(names)} of the {everyone} models")
            if not names:
                return
        if dry_run:
            from ..core.runs.sweep import sweep_needs

            printing.print_needs(sweep_needs(names, dtype.value))
            return
        jobs = planned.jobs(names, options)  # a ladder's: one job a rung (each model's dimension asked of it now)
        outcomes = _run_jobs(jobs, out, overwrite.value, executor.value, address, quiet, ladder=ladder is not None)
        if ladder is not None:
            from ..core.runs.sweep import sweep_ladders

            for rows, path, baselines, matched in sweep_ladders(jobs, outcomes, out):
                printing.print_ladder(rows, baselines, matched)
                typer.echo(f"Ladder written to {path}")
        if len(outcomes) > 1 and ladder is None:  # a ladder's table is its summary
            printing.print_summary(outcomes)
        if any(o.status == "failed" for o in outcomes):
            raise typer.Exit(1)


class _StageLines:
    """Without a terminal (a pipe, a log): a line naming each model as it starts, and one per stage with its time
    as it ends (``fasteval:   embed 3.19 s``)."""

    def __init__(self, jobs: list, on: bool):
        import time

        self.clock, self.jobs, self.on = time.perf_counter, jobs, on
        self.name: str | None = None
        self.start, self.model = 0.0, 0

    def step(self, name: str) -> None:
        from ..core.choices import public_model

        if not self.on:
            return
        if self.name is None and name == "embed" and self.model < len(self.jobs):
            job = self.jobs[self.model]
            rung = f" [rung {job.rung.label}]" if job.rung is not None else ""
            typer.echo(f"fasteval: {public_model(job.model)}{rung}", err=True)
        self.done()
        self.name, self.start = name, self.clock()

    def done(self) -> None:
        if self.on and self.name is not None:
            typer.echo(f"fasteval:   {self.name} {self.clock() - self.start:.2f} s", err=True)
        self.name = None

    def next_model(self) -> None:
        """The last stage's line; the next model's stages follow."""
        self.done()
        self.model += 1


def _run_jobs(jobs: list, out: Path, overwrite: str, executor: str, address: str | None, quiet: bool,
              ladder: bool = False) -> list:
    """Run a sweep's jobs with the progress bars (or stage lines) and each model's printout as it finishes (a
    ladder's rungs: a line each; their table follows)."""
    from . import printing
    from ..core.runs.sweep import run_sweep

    steps = 1 + len(jobs[0].scoring.exams)
    with progress(quiet) as bars:
        models_bar = bars.add_task("models", total=len(jobs)) if bars else None
        steps_bar = bars.add_task("", total=steps) if bars else None
        stages = _StageLines(jobs, on=not bars and not quiet)

        def on_step(name: str) -> None:
            if bars:
                bars.update(steps_bar, description=f"  {name}", advance=0 if name == "embed" else 1)
            stages.step(name)

        def on_request(done: int, total: int) -> None:  # a served model's texts embedded so far
            if bars:
                bars.update(steps_bar, description=f"  embed {done}/{total} texts")

        def on_model(o) -> None:
            stages.next_model()
            if bars:
                bars.update(models_bar, advance=1)
                bars.reset(steps_bar, total=steps)
            if o.status == "done" and ladder:  # a rung: its line in the ladder's table, printed at the end
                done = o.read()  # its name says the rung: "all-MiniLM-L6-v2 [256 dims, int8]"
                say(quiet, f"fasteval: {done.display_name if done is not None else o.model}: a rung done ({o.path})")
            elif o.status == "done":
                printing.print_result(o.read(), o.baselines())
                typer.echo(f"\nResults written to {o.path}")
            elif o.status == "skipped":
                say(quiet, f"fasteval: {o.model}: skipped, {o.message} ({o.path})")
                if len(jobs) == 1 and o.read() is not None:  # one model: its row (several: the summary)
                    printing.print_table1_row(o.read(), o.baselines())
            else:
                typer.echo(f"fasteval: error: {o.model}: {o.message}", err=True)

        # the embedding cache by the library's one rule: this machine's FASTEVAL_HOME, on Ray each node's own
        return run_sweep(jobs, out, None, overwrite, on_model=on_model, on_step=on_step, on_request=on_request,
                         executor=executor, address=address)


@app.command("check", cls=QuantityArguments, short_help="Does a model order your own quantities by distance?")
@served_client()
@store_options()
def check_command(
    quantities: Annotated[Optional[list[str]], typer.Argument(metavar="QUANTITY",
        help="The anchor, then one or more candidates: \"2 kilometers\" \"2000 meters\" \"2 meters\".",
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress messages.")] = False,
    served: Optional[dict] = None,
    store: Optional[dict] = None,
) -> None:
    """Does your model order your own quantities by physical distance? Exit 0 whatever the verdict. With one
    candidate: how similar the two are, and how far apart.

    Negative quantities are arguments as they are: fasteval check "-5 degC" "23 degF" "-40 degF"."""
    with user_errors("nothing was written."):
        set_quiet(quiet or json_out)
        from ..core.runs.check import check, check_inputs

        anchor, candidates = check_inputs(quantities, file)  # bad input fails before a model is loaded
        from . import printing

        result = check(model, anchor, candidates, similarity=similarity, normalize_quantities=normalize_quantities,
                       all_discordant=all_discordant, provider=provider.value, prompt=prompt, served=served,
                       **(store or {}))
        if json_out:
            from ..core.io import dumps

            typer.echo(dumps(result.to_json()).rstrip())
        else:
            printing.print_check(result)
