"""The commands about a model as it is run or deployed: `export`, `bench`, `drift`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..core import choices
from .app import (
    Calibration, DType, Provider, app, options_as, say, served_client,
    set_quiet, user_errors,
)


@app.command("export", short_help="Export a model to ONNX (once; cached).")
def export_command(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Model folder, registry name or Hugging Face id.")],
    out: Annotated[Optional[Path], typer.Option(help="Folder to write the export to (default: the cache).")]
        = None,
    dtype: Annotated[DType, typer.Option(
        help="fp32 (default), fp16 (onnxscript's onnxruntime fusions and float16, for the GPU) or int8 (onnxruntime's "
             "dynamic quantization); fp16 and int8 are made from the fp32 export and report their drift against "
             "it.")] = DType.fp32,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the result.")] = False,
) -> None:
    """Export a model to ONNX: model.onnx, tokenizer, sentence-transformers configs and Dense weights."""
    with user_errors():
        set_quiet(quiet)
        from ..models.loader import export_model

        import time

        started = time.time()
        dest = export_model(model, out=out, dtype=dtype.value)
        if Path(model).expanduser().resolve() == dest:
            typer.echo(f"{dest} already holds an ONNX export; nothing to do.")
            return
        record = dest / "fasteval_export.json"
        made = record.is_file() and record.stat().st_mtime >= started - 0.01  # written by this run
        typer.echo(f"Exported {model} ({dtype.value}) to {dest}" if made else
                   f"{model} ({dtype.value}) was exported before: {dest} (nothing exported again)")
        if dtype is not DType.fp32:
            from ..core.runs.drift.gate import export_drift

            typer.echo(export_drift(model, dest).line(f"{dtype.value} vs fp32"))


@app.command("bench", short_help="Encode throughput and each exam's time on this machine.")
@served_client(leave_out=("concurrency", "tokenizer"))  # its own --concurrency: the settings to time
def bench_command(
    model: Annotated[Optional[str], typer.Option(
        help="Registry name, model folder, or a served model's URL[#MODEL] (default: the default model).")] = None,
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider.")] = Provider.auto,
    concurrency: Annotated[str, typer.Option(
        help="A served model's requests in flight to time, comma-separated.")] = "1,2,4,8",
    reference: Annotated[Optional[str], typer.Option(
        help="A local model (folder or name) timed beside a served one, on the same texts.")] = None,
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
    served: Optional[dict] = None,
) -> None:
    """Time encoding (strings/s over batch sizes and threads) and each exam's compute on this machine."""
    with user_errors("no numbers were written."):
        set_quiet(quiet)
        from ..core.runs.bench import bench_text, parse_int_list, run_bench, write_bench_json

        sizes = parse_int_list(batch_sizes, "--batch-sizes")
        counts = parse_int_list(threads, "--threads") if threads else None
        result = run_bench(None, model, batch_sizes=sizes, threads=counts,
                           provider=provider.value, repeats=repeats, n_long=long_sentences, exams=exams,
                           on_step=lambda name: say(quiet, f"fasteval: bench: {name}"),
                           concurrency=parse_int_list(concurrency, "--concurrency"), reference=reference,
                           served={**(served or {}), "concurrency": 1})
        typer.echo(bench_text(result))
        if json_path is not None:
            write_bench_json(json_path, result)
            say(quiet, f"fasteval: bench: JSON written to {json_path}")


def _side_options() -> dict[str, tuple[Any, Any, tuple[str, str]]]:
    """What drift's options say of each side, declared once for both (``--reference-dtype``, ``--candidate-dtype``,
    ...): its precision, its prompt, and what a store keeps of it."""
    forms = "<" + "|".join(choices.VECTOR_QUANTIZATIONS) + ">"
    table: dict[str, tuple[Any, Any, tuple[str, str]]] = {}
    for side in ("reference", "candidate"):
        kept = ("the forms of --candidate-vector-quantization" if side == "reference" else
                f"compared as what they stand for: {choices.vector_forms_help()}")
        table |= {
            f"{side}_dtype": (Annotated[DType, typer.Option(help=f"The {side}'s precision (a local model).")],
                              DType.fp32, (side, "dtype")),
            f"{side}_prompt": (Annotated[Optional[str], typer.Option(help=f"Text put before the {side}'s inputs.")],
                               None, (side, "prompt")),
            f"{side}_dimensions": (Annotated[Optional[int], typer.Option(
                min=1, help=f"The {side} as a store keeps it: its first N dimensions.", show_default=False)],
                None, (side, "dimensions")),
            f"{side}_vector_quantization": (Annotated[Optional[str], typer.Option(
                metavar=forms, help=f"The {side}'s vectors as a store keeps them ({kept}).", show_default=False)],
                None, (side, "vector_quantization"))}
    return table


@app.command("drift", short_help="Does a deployment embed like the reference? A CI gate.")
@served_client()
@options_as("sides", _side_options())
def drift_command(
    reference: Annotated[str, typer.Argument(metavar="REFERENCE",
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
    invariance: Annotated[str, typer.Option(
        "--invariance", metavar="<" + "|".join(choices.INVARIANCE_TIERS) + ">",
        help="The invariance gate: cosine (a condition below 0.999 drifts) or bitwise (any difference of a number "
             "drifts: for a deployment that promises bit-exact answers).")] = choices.INVARIANCE_TIERS[0],
    no_diagnose: Annotated[bool, typer.Option(
        "--no-diagnose", help="When a candidate drifts from a local reference, do not embed the reference as its "
                              "usual misconfigurations to name the one it embeds like (the verdict is the "
                              "same either way); with --save-receipt, a receipt without them.")] = False,
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
        help="Also write the report as JUnit XML for CI: a test case per group, the collisions, the identity, "
             "each finding (norms, base64 parity, invariance, ...) and the diagnosis with its Fix (a failing case "
             "where the candidate drifts).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the report.")] = False,
    out: Annotated[Optional[Path], typer.Option(
        help="Also write drift.json, drift_groups.csv and drift_worst.csv to this folder.")] = None,
    bootstrap: Annotated[int, typer.Option(
        min=0, help="Resamples of the paired bootstrap of delta tau.")] = choices.DRIFT_RESAMPLES,
    calibration: Calibration = None,
    provider: Annotated[Provider, typer.Option(help="onnxruntime execution provider (local models).")]
        = Provider.auto,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per batch or request.")] = 32,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress messages.")] = False,
    served: Optional[dict] = None,
    sides: Optional[dict] = None,
) -> None:
    """Does this deployment embed like the reference? Exit 0: conforms, 1: drifts (at the default gates or those
    asked for), 2: bad input or a fault."""
    with user_errors("nothing was written.", exit_code=2):  # 1 is "drifts": every error is 2
        set_quiet(quiet or json_out)
        from ..core.choices import public_model
        from ..core.errors import InputError
        from ..core.io import dumps
        from ..core.report.drift import check_outputs, to_exit_code, write_outputs
        from ..core.runs.drift import gate, receipts

        candidates = list(candidates or [])
        # everything drift can refuse, refused before a model is loaded or a text sent: its request planned once
        ref, cand = (sides or {}).get("reference", {}), (sides or {}).get("candidate", {})
        stores = gate.vector_stores(ref.get("dimensions"), ref.get("vector_quantization"), cand.get("dimensions"),
                                    cand.get("vector_quantization"), calibration)
        asked = gate.plan_drift(
            texts=texts, conformance=not no_conformance, fail_on_collisions=fail_on_collisions,
            resamples=bootstrap, expect_model=expect_model, expect_precision=expect_precision,
            invariance=not no_invariance, invariance_tier=invariance, diagnose=not no_diagnose, accept=accept or (),
            reference_vectors=stores[0], candidate_vectors=stores[1],
            **({} if fail_below is None else {"threshold": fail_below}))  # (drift's default where not given)
        check_outputs(len(candidates), out, junit)
        def side(asked: dict) -> dict:  # how the one door loads a side
            return {"provider": provider.value, "dtype": (asked.get("dtype") or DType.fp32).value,
                    "prompt": asked.get("prompt"), "batch_size": batch_size, "served": served or {}}

        if save_receipt is not None:
            if candidates:
                raise InputError("--save-receipt takes the reference alone.",
                                 "run fasteval drift --save-receipt FILE REFERENCE, then "
                                 "fasteval drift FILE CANDIDATE.")
            made = receipts.save_receipt(reference, save_receipt, texts=texts, conformance=not no_conformance,
                                         diagnose=not no_diagnose,
                                         on_step=lambda name: say(quiet, f"fasteval: receipt: {name}"),
                                         **side(ref))
            held = (f"; {made['variants']} misconfigurations of it on {made['variant_texts']} of them, for the "
                    "diagnosis" if made["variants"] else "")
            typer.echo(f"Receipt of {made['name']} written to {save_receipt}: {made['texts']} texts in "
                       f"{made['dim']} dimensions{held}.")
            raise typer.Exit(0)
        if not candidates:
            raise InputError("fasteval drift needs a reference and a candidate.",
                             "pass REFERENCE CANDIDATE... (or --save-receipt FILE REFERENCE).")
        labels = [public_model(name) for name in (reference, *candidates)]
        reports = gate.drift_candidates(
            reference, candidates, asked, labels=labels, reference_load=side(ref), candidate_load=side(cand),
            on_step_for=lambda label: (lambda name: say(quiet or json_out, f"fasteval: drift {label}: {name}")))
        data, text = write_outputs(reports, public_model(reference), out, junit)
        typer.echo(dumps(data).rstrip() if json_out else text)
    raise typer.Exit(max(to_exit_code(r) for r in reports))
