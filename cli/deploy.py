"""The commands about a model as it is run or deployed: `export`, `bench`, `drift`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..core import choices
from .app import (
    ApiKeyEnv, Concurrency, DType, Provider, RequestTimeout, Retries, app, say, served_options,
    set_quiet, user_errors,
)


@app.command("export", short_help="Export a model to ONNX (once; cached).")
def export_command(
    model: Annotated[str, typer.Argument(help="Model folder, registry name or Hugging Face id.")],
    out: Annotated[Optional[Path], typer.Option(help="Folder to write the export to (default: the cache).")]
        = None,
    dtype: Annotated[DType, typer.Option(
        help="fp32 (default), fp16 (onnxruntime's transformer optimizer, for the GPU) or int8 (onnxruntime's "
             "dynamic quantization); fp16 and int8 are made from the fp32 export and report their drift against "
             "it.")] = DType.fp32,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the result.")] = False,
) -> None:
    """Export a model to ONNX: model.onnx, tokenizer, sentence-transformers configs and Dense weights."""
    with user_errors():
        set_quiet(quiet)
        from ..models.loader import export_model

        dest = export_model(model, out=out, dtype=dtype.value)
        if Path(model).expanduser().resolve() == dest:
            typer.echo(f"{dest} already holds an ONNX export; nothing to do.")
            return
        typer.echo(f"Exported {model} ({dtype.value}) to {dest}")
        if dtype is not DType.fp32:
            from ..core.runs.drift.gate import export_drift

            typer.echo(export_drift(model, dest).line(f"{dtype.value} vs fp32"))


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
        set_quiet(quiet)
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
                           on_step=lambda name: say(quiet, f"fasteval: bench: {name}"),
                           concurrency=parse_int_list(concurrency, "--concurrency"), reference=reference,
                           served=served_options(api_key_env, 1, request_timeout, retries, None))
        typer.echo(bench_text(result))
        if json_path is not None:
            write_bench_json(json_path, result)
            say(quiet, f"fasteval: bench: JSON written to {json_path}")


@app.command("drift", short_help="Does a deployment embed like the reference? A CI gate.")
def drift_command(
    reference: Annotated[str, typer.Argument(
        help="The reference: registry name, model folder, URL[#MODEL], or a receipt (--save-receipt).")],
    candidates: Annotated[Optional[list[str]], typer.Argument(
        help="The deployments to check: registry names, folders or URL[#MODEL]s; several end with one table "
             "(none with --save-receipt).", show_default=False, metavar="CANDIDATE...")] = None,
    save_receipt: Annotated[Optional[Path], typer.Option(
        help="Embed drift's texts with REFERENCE and write them to this receipt (an .npz file, whatever its name); "
             "then `fasteval drift RECEIPT CANDIDATE` gates a deployment with no model weights.")] = None,
    texts: Annotated[Optional[Path], typer.Option(
        help="Your own texts too, one a line ('#' comments), scored as their own group.")] = None,
    no_conformance: Annotated[bool, typer.Option(
        "--no-conformance", help="Leave out the conformance set (accents, case, Unicode forms, whitespace, "
                                 "scripts, number formats, long texts, edge cases).")] = False,
    fail_below: Annotated[Optional[float], typer.Option(
        help="The cosine a text must reach (default 0.99); below it the candidate drifts (exit 1).")] = None,
    fail_on_collisions: Annotated[bool, typer.Option(
        "--fail-on-collisions", help="Drift (exit 1) also when the candidate makes two texts the reference keeps "
                                     "apart near-identical.")] = False,
    no_invariance: Annotated[bool, typer.Option(
        "--no-invariance", help="Leave out the batch and concurrency invariance probes of the candidate.")] = False,
    expect_model: Annotated[Optional[str], typer.Option(
        help="Drift (exit 1) when the candidate says it is another model (a served model's /models id, else its "
             "name).")] = None,
    accept: Annotated[Optional[list[str]], typer.Option(
        "--accept", help="A group whose drift is known and accepted (llama.cpp's Hangul: scripts): measured and "
                         "shown, not gated. Repeat for several.")] = None,
    expect_precision: Annotated[Optional[str], typer.Option(
        help="The weights' precision the candidate must say it serves (f32, f16, q8_0, q4_0, ...); default: the "
             "reference's, where both say theirs.")] = None,
    junit: Annotated[Optional[Path], typer.Option(
        help="Also write the report as JUnit XML (one test case per group, collisions, identity) for CI.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the report.")] = False,
    out: Annotated[Optional[Path], typer.Option(
        help="Also write drift.json, drift_groups.csv and drift_worst.csv to this folder.")] = None,
    bootstrap: Annotated[int, typer.Option(
        min=0, help="Resamples of the paired bootstrap of delta tau.")] = choices.DRIFT_RESAMPLES,
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
    """Does this deployment embed like the reference? Exit 0: conforms, 1: drifts (at the default gates or those
    asked for), 2: bad input or a fault."""
    with user_errors("nothing was written.", exit_code=2):  # 1 is "drifts": every error is 2
        set_quiet(quiet or json_out)
        from ..core.choices import public_model
        from ..core.errors import InputError
        from ..core.io import atomic_write, dumps, write_output_folder
        from ..core.runs.drift.gate import drift
        from ..core.results.drift import DEFAULT_THRESHOLD
        from .drift_output import drift_junit, outputs, to_exit_code

        candidates = list(candidates or [])
        marker = "drift.json" if len(candidates) <= 1 else "ladder.csv"  # what an earlier output of ours holds
        threshold = fail_below if fail_below is not None else DEFAULT_THRESHOLD
        _check_drift_inputs(threshold, bootstrap, out, marker, junit, texts, accept or [], not no_conformance)
        side = _side_loader(provider.value, batch_size,
                            served_options(api_key_env, concurrency, request_timeout, retries, None))
        if save_receipt is not None:
            if candidates:
                raise InputError("--save-receipt takes the reference alone.",
                                 "run fasteval drift --save-receipt FILE REFERENCE, then "
                                 "fasteval drift FILE CANDIDATE.")
            from ..core.runs.drift.gate import save_receipt as write

            made = write(side(reference, reference_dtype, reference_prompt), save_receipt, texts=texts,
                         conformance=not no_conformance)
            typer.echo(f"Receipt of {made['name']} written to {save_receipt}: {made['texts']} texts in "
                       f"{made['dim']} dimensions.")
            raise typer.Exit(0)
        if not candidates:
            raise InputError("fasteval drift needs a reference and a candidate.",
                             "pass REFERENCE CANDIDATE... (or --save-receipt FILE REFERENCE).")
        ref = side(reference, reference_dtype, reference_prompt)

        def told(candidate: str):  # each candidate's progress lines
            return lambda name: say(quiet or json_out, f"fasteval: drift {public_model(candidate)}: {name}")

        reports = [drift(ref, side(c, candidate_dtype, candidate_prompt), texts=texts, conformance=not no_conformance,
                         threshold=threshold,
                         fail_on_collisions=fail_on_collisions, resamples=bootstrap,
                         labels=(public_model(reference), public_model(c)), expect_model=expect_model,
                         expect_precision=expect_precision, invariance=not no_invariance, accept=accept or (),
                         on_step=told(c))
                   for c in candidates]
        data, files, text = outputs(reports, public_model(reference))
        if junit is not None:
            atomic_write(Path(junit), drift_junit(reports))
        if out is not None:
            write_output_folder(Path(out), files, what="the drift report", marker=marker)
        typer.echo(dumps(data).rstrip() if json_out else text)
    raise typer.Exit(max(to_exit_code(r) for r in reports))


def _check_drift_inputs(threshold: float, resamples: int, out: Path | None, marker: str, junit: Path | None,
                        texts: Path | None, accept: list[str], conformance: bool) -> None:
    """Everything a drift can refuse, refused before a model is loaded or a text sent (the library's limits,
    and where the CLI writes)."""
    from ..core.errors import InputError
    from ..core.io import check_output_folder, check_writable
    from ..core.runs.drift.gate import check_limits

    check_limits(threshold, resamples)
    if out is not None:
        check_output_folder(Path(out), "the drift report", marker)
    if junit is not None:
        if Path(junit).expanduser().is_dir():
            raise InputError(f"--junit {junit} is a folder; it takes the file to write.",
                             f"pass a file name, such as --junit {Path(junit) / 'drift.xml'}.")
        check_writable(Path(junit).expanduser().parent, "the folder of --junit",
                       "pass --junit FILE in a folder you can write.")
    if texts is not None or accept:  # an unreadable or empty texts file, too many texts, a group drift has not
        from ..core.runs.drift.gate import accepted_groups, drift_groups

        accepted_groups(accept, drift_groups(conformance, texts)[1])


def _side_loader(provider: str, batch_size: int, served: dict):
    """How a drift side is loaded: through the one door (a receipt as it is, anything else with load_model's
    options: its dtype and prompt)."""
    from ..core.encoders import as_encoder

    def side(name: str, dtype, prompt: str | None):
        return as_encoder(name, provider=provider, dtype=dtype.value, prompt=prompt, batch_size=batch_size,
                          served=served)

    return side
