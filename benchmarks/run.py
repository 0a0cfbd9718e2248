"""fasteval against the tools a user would otherwise use, side by side, with the numbers shown equal.

    .venv/bin/python benchmarks/run.py [--quick] [--only e2e,encode,kernels,scale,startup]
                                       [--model all-MiniLM-L6-v2] [--provider cpu|cuda]

Writes benchmarks/RESULTS.md (machine, versions, medians, ratios, fidelity, targets) and
benchmarks/results.json. Every line times fasteval and its peer alternately (so load on the machine falls on
both), reports medians and the ratio peer / fasteval (> 1: fasteval is faster), and checks that both computed
the same numbers. Not part of the test run. The full run takes a few minutes on a quiet 2-core machine;
--quick fewer runs and smaller inputs.

Sections:
- e2e: `fasteval sweep` (all three exams) against benchmarks/reference_impl.py (sentence-transformers,
  scipy, RapidFuzz, scikit-learn), each in a cold process, same model, no embedding cache;
- encode: the ONNX encoder against sentence-transformers (torch) on the same strings and threads;
- kernels: Kendall tau-b (many short rows; one long list), Levenshtein, the ridge probe, similarity;
- scale: a dense grid (1,000 values per range, all pairs), time and peak memory in child processes;
- startup: `fasteval --help`, and a warm `fasteval sweep` less its compute.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
SECTIONS = ("e2e", "encode", "kernels", "scale", "startup")
NOTES_MARK = "<!-- notes: everything below this line is kept when run.py rewrites the file -->"


# ----------------------------------------------------------------------------------------------- helpers
@dataclass
class Line:
    """One comparison: fasteval and a peer timed on the same work."""
    section: str
    name: str
    fasteval_s: float | None
    peer_s: float | None
    peer: str
    fidelity: str = ""
    fidelity_ok: bool | None = None
    target: float | None = None  # the ratio the issue asks for, if any
    target_name: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if not self.fasteval_s or self.peer_s is None:
            return None
        return self.peer_s / self.fasteval_s

    @property
    def met(self) -> bool | None:
        if self.target is None or self.ratio is None:
            return None
        return self.ratio >= self.target


def load1() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def alternate(f: Callable[[], Any], g: Callable[[], Any], runs: int,
              min_sample: float = 0.05) -> tuple[list[float], list[float]]:
    """Seconds per call of fasteval's f and the peer's g, ``runs`` samples each, taken alternately.

    One untimed call of each first (JIT caches, thread pools, lazy imports); a call shorter than
    ``min_sample`` is repeated within a sample (as timeit does), so sub-millisecond lines are not timer
    noise. A peer call of a second or more counts as its first sample (nothing of it is compiled).
    """
    tf: list[float] = []
    tg: list[float] = []
    loops = []
    for fn, out in ((f, None), (g, tg)):
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        if out is not None and once >= 1.0:
            out.append(once)
        loops.append(1 if once >= min_sample else int(min_sample / max(once, 1e-9)) + 1)
    for k in range(runs):
        for fn, n, out in ((f, loops[0], tf), (g, loops[1], tg)):
            if out is tg and k == 0 and tg:
                continue
            start = time.perf_counter()
            for _ in range(n):
                fn()
            out.append((time.perf_counter() - start) / n)
    return tf, tg


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def fasteval_cmd() -> list[str]:
    script = Path(sys.executable).with_name("fasteval")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from fasteval.cli.main import main; main()"]


def run_wall(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return wall, proc


def max_abs(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.abs(np.where(both_nan, 0.0, a - b))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0


@dataclass
class Ctx:
    args: argparse.Namespace
    model: str
    folder: Path  # the sentence-transformers folder (the peer's input)
    tmp: Path
    home: Path  # a FASTEVAL_HOME sharing the real cache's models and exports, without its embeddings
    threads: int
    peer_device: str
    quick: bool

    def env(self) -> dict[str, str]:
        return {**os.environ, "FASTEVAL_HOME": str(self.home)}


def prepare(args) -> Ctx:
    from fasteval.core.runs.bench import usable_cores
    from fasteval.models.loader import load_model
    from fasteval.models.registry import fasteval_home, source_folder

    _, folder = source_folder(args.model, quiet=True)
    load_model(args.model, provider="cpu", quiet=True)  # exports once if the cache has no export yet
    tmp = Path(tempfile.mkdtemp(prefix="fasteval-bench-"))
    home = tmp / "home"
    home.mkdir()
    for entry in fasteval_home().iterdir():
        if entry.name != "embeddings":
            (home / entry.name).symlink_to(entry)
    peer_device = "cpu"
    if args.provider == "cuda":
        try:
            import torch

            peer_device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            pass
    return Ctx(args, args.model, Path(folder), tmp, home, usable_cores(), peer_device, args.quick)


# ----------------------------------------------------------------------------------------------- e2e
def fasteval_numbers(results_json: Path) -> dict[str, Any]:
    data = json.loads(results_json.read_text())
    e1, e2, e3 = (data["exams"][k] for k in ("exam1", "exam2", "exam3"))
    pivot = {ref: {} for ref in ("char_lev", "num_dist", "token_lev")}
    for r in e2["rows"]:
        if r["group"] in ("all", "float-float", "float-int", "int-int"):
            pivot[r["reference"]][r["group"]] = r["tau"] * 100
    s1 = e1["summary"]
    return {"table1": {"tau": s1["tau"], "pacc": s1["pacc"], "avg": s1["avg"]}, "pivot": pivot,
            "exam3": {k: e3["summary"][k] for k in ("kendall_mean", "pairwise_mean", "kendall_cosine_mean",
                                                      "pairwise_cosine_mean")},
            "timings": data.get("timings", {})}


def reference_numbers(ref_json: Path) -> dict[str, Any]:
    data = json.loads(ref_json.read_text())
    return {"table1": data["exam1"]["table1"],
            "pivot": {ref: {g: v for g, v in cols.items()} for ref, cols in data["exam2"]["pivot"].items()},
            "exam3": data["exam3"]["summary"], "timings": data["timings"]}


def e2e_fidelity(f: dict[str, Any], r: dict[str, Any]) -> tuple[str, bool, dict[str, Any]]:
    """Table 1 row to 1e-9 (AVG's display may differ by the half-cent, PROTOCOL.md 1.5), the Exam 2 pivot at its
    printed precision (0.1), the Exam 3 means at theirs (0.001)."""
    t1 = {k: abs(f["table1"][k] - r["table1"][k]) for k in ("tau", "pacc", "avg")}
    piv_f = {ref: {g: round(v, 1) for g, v in cols.items()} for ref, cols in f["pivot"].items()}
    piv_diff = max(abs(piv_f[ref][g] - r["pivot"][ref][g]) for ref in piv_f for g in piv_f[ref])
    e3 = {k: abs(f["exam3"][k] - r["exam3"][k]) for k in f["exam3"]}
    ok = max(t1.values()) < 1e-6 and piv_diff < 0.05 and max(e3.values()) < 5e-4
    text = (f"Table 1 tau/PACC/AVG {f['table1']['tau']:.3f}/{f['table1']['pacc']:.3f}/{f['table1']['avg']:.3f} vs "
            f"{r['table1']['tau']:.3f}/{r['table1']['pacc']:.3f}/{r['table1']['avg']:.3f}; Exam 2 pivot (12 cells, "
            f"x100, 1 dec.) max diff {piv_diff:.1f}; Exam 3 means max diff {max(e3.values()):.1e}")
    return text, ok, {"table1_diff": t1, "pivot_max_diff": piv_diff, "exam3_diff": e3, "fasteval_pivot": piv_f,
                      "reference_pivot": r["pivot"], "fasteval_exam3": f["exam3"], "reference_exam3": r["exam3"],
                      "fasteval_table1": f["table1"], "reference_table1": r["table1"]}


def bench_e2e(ctx: Ctx) -> list[Line]:
    runs = 2 if ctx.quick else 3
    out = ctx.tmp / "sweep-out"
    ref_json = ctx.tmp / "reference.json"
    env = ctx.env()
    sweep_cmd = fasteval_cmd() + ["sweep", "--model", ctx.model, "--out", str(out), "--overwrite", "always",
                                  "--provider", ctx.args.provider, "-q"]
    ref_cmd = [sys.executable, str(HERE / "reference_impl.py"), str(ctx.folder), "--json", str(ref_json),
               "--device", ctx.peer_device]

    def fasteval_once(extra_env: dict[str, str] | None = None) -> float:
        shutil.rmtree(ctx.home / "embeddings", ignore_errors=True)  # cold: nothing embedded before
        shutil.rmtree(out, ignore_errors=True)
        return run_wall(sweep_cmd, {**env, **(extra_env or {})})[0]

    def reference_once() -> float:
        return run_wall(ref_cmd, env)[0]

    print("  e2e: warm-up (fills numba's and the OS's file caches; not timed)", file=sys.stderr)
    fasteval_once()
    if not ctx.quick:
        reference_once()
    tf, tr, phases_f, phases_r = [], [], [], []
    for k in range(runs):
        print(f"  e2e: run {k + 1}/{runs}", file=sys.stderr)
        tf.append(fasteval_once())
        phases_f.append(fasteval_numbers(next(out.glob("*/*/results.json")))["timings"])
        tr.append(reference_once())
        phases_r.append(reference_numbers(ref_json)["timings"])
    f = fasteval_numbers(next(out.glob("*/*/results.json")))
    r = reference_numbers(ref_json)
    text, ok, detail = e2e_fidelity(f, r)
    median_phases = (lambda ps: {k: med([p[k] for p in ps]) for k in ps[0]})
    # Diagnostic: small LAPACK calls (the probe's 384 x 384 reductions) on a 2-thread OpenBLAS stall when the
    # machine is busy; one more run with OpenBLAS on one thread shows how much of the sweep that is.
    print("  e2e: one diagnostic run with OPENBLAS_NUM_THREADS=1", file=sys.stderr)
    one_blas = fasteval_once({"OPENBLAS_NUM_THREADS": "1"})
    detail.update(fasteval_runs=tf, peer_runs=tr, fasteval_phases=median_phases(phases_f),
                  peer_phases=median_phases(phases_r), fasteval_one_blas_thread_wall=one_blas,
                  fasteval_one_blas_thread_phases=fasteval_numbers(next(out.glob("*/*/results.json")))["timings"])
    return [Line("e2e", f"whole sweep, 3 exams, cold process ({ctx.args.provider})", med(tf), med(tr),
                 f"reference_impl.py (sentence-transformers {ctx.peer_device}, scipy, RapidFuzz, RidgeCV)",
                 text, ok, 5.0, "whole sweep >= 5x the reference", detail)]


# ----------------------------------------------------------------------------------------------- encode
def bench_encode(ctx: Ctx) -> list[Line]:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from fasteval.core.runs.bench import long_sentences, paper_texts
    from fasteval.models.loader import load_model

    runs = 2 if ctx.quick else 3
    sets = {"paper strings": paper_texts(), "long sentences": long_sentences(64 if ctx.quick else 256)}
    st = SentenceTransformer(str(ctx.folder), device=ctx.peer_device).float()
    lines = []
    thread_counts = [ctx.threads] if ctx.args.provider == "cuda" else sorted({1, ctx.threads}, reverse=True)
    for threads in thread_counts:
        torch.set_num_threads(threads)
        enc = load_model(ctx.model, provider=ctx.args.provider, threads=threads, batch_size=32, quiet=True)
        for name, texts in sets.items():
            print(f"  encode: {name}, {threads} thread(s)", file=sys.stderr)
            f = lambda: enc.encode(texts)  # noqa: E731
            g = lambda: st.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
            tf, tg = alternate(f, g, runs)
            a = f()
            a = a / np.linalg.norm(a, axis=1, keepdims=True)
            b = g()
            diff = float(np.abs(a - b).max())
            cos = float((a * b).sum(axis=1).min())
            lines.append(Line("encode", f"{name} ({len(texts)}), batch 32, {threads} thread(s), {enc.provider}",
                              med(tf), med(tg), f"sentence-transformers {st.device.type} (torch)",
                              f"max |diff| {diff:.1e}, min cosine {cos:.7f}", diff < 1e-4,
                              2.0 if threads == ctx.threads else None,
                              "encode >= 2x sentence-transformers" if threads == ctx.threads else "",
                              {"fasteval_runs": tf, "peer_runs": tg,
                               "fasteval_strings_per_s": len(texts) / med(tf),
                               "peer_strings_per_s": len(texts) / med(tg)}))
    torch.set_num_threads(ctx.threads)
    return lines


# ----------------------------------------------------------------------------------------------- kernels
def bench_kernels(ctx: Ctx) -> list[Line]:
    import numpy as np

    lines: list[Line] = []
    runs = 3 if ctx.quick else 5
    rng = np.random.default_rng(0)
    for fn in (_kernel_tau, _kernel_levenshtein, _kernel_probe, _kernel_similarity):
        try:
            lines += fn(ctx, rng, runs)
        except Exception as err:  # noqa: BLE001 - one broken line must not lose the others
            traceback.print_exc()
            lines.append(Line("kernels", f"{fn.__name__} failed: {type(err).__name__}: {err}", None, None, ""))
    return lines


def _kernel_tau(ctx: Ctx, rng, runs: int) -> list[Line]:
    import numpy as np
    from scipy.stats import kendalltau

    from fasteval.core.kernels.kendall import kendall_tau_b, kendall_tau_b_rows

    lines = []
    m = 5_000 if ctx.quick else 20_000
    print(f"  kernels: tau, {m} rows of 21", file=sys.stderr)
    X = np.tile(np.arange(21, dtype=float), (m, 1))
    Y = -(1.0 - np.abs(rng.normal(0, 1, (m, 21))).cumsum(axis=1) / 40 + rng.normal(0, 0.05, (m, 21)))
    Y = np.round(Y, 3)  # some ties, as similarities rounded to float32 have
    tf, tg = alternate(lambda: kendall_tau_b_rows(X, Y),
                       lambda: [kendalltau(x, y).statistic for x, y in zip(X, Y)], max(2, runs // 2))
    d = max_abs(kendall_tau_b_rows(X[:2000], Y[:2000]), [kendalltau(x, y).statistic for x, y in zip(X[:2000], Y[:2000])])
    lines.append(Line("kernels", f"Kendall tau-b, {m:,} rows of 21 values (many small heatmaps)", med(tf), med(tg),
                      "scipy.stats.kendalltau in a loop", f"max |diff| {d:.1e} (first 2,000 rows vs scipy)",
                      d < 1e-12, 20.0, "batched tau >= 20x the scipy loop",
                      {"fasteval_runs": tf, "peer_runs": tg}))
    n = 2_000_000
    print(f"  kernels: tau, one list of {n:,}", file=sys.stderr)
    x = rng.integers(0, 2000, n).astype(float)  # ties in x, as distances have
    y = np.round(x / 2000 + rng.normal(0, 0.3, n), 4)  # and in y
    tf, tg = alternate(lambda: kendall_tau_b(x, y), lambda: kendalltau(x, y).statistic, runs)
    d = abs(kendall_tau_b(x, y) - kendalltau(x, y).statistic)
    lines.append(Line("kernels", f"Kendall tau-b, one list of {n:,} values (with ties)", med(tf), med(tg),
                      "scipy.stats.kendalltau, one call", f"|diff| {d:.1e}", d < 1e-12, 2.0,
                      "tau >= 2x scipy on one large list", {"fasteval_runs": tf, "peer_runs": tg}))
    return lines


def _kernel_levenshtein(ctx: Ctx, rng, runs: int) -> list[Line]:
    import numpy as np
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    from fasteval.core import protocol as P
    from fasteval.core.runs.bench import long_sentences, paper_texts
    from fasteval.core.kernels.levenshtein import encode_strings, levenshtein_all_pairs

    lines = []
    sets = {"Exam 2's 100 numbers": [it.text for it in P.exam2_items()],
            "paper strings": paper_texts(),
            "long sentences": long_sentences(128 if ctx.quick else 256)}
    for name, texts in sets.items():
        n = len(texts)
        i, j = np.triu_indices(n, k=1)
        print(f"  kernels: Levenshtein, {name}", file=sys.stderr)
        left, right = [texts[k] for k in i], [texts[k] for k in j]
        ours = lambda: levenshtein_all_pairs(encode_strings(texts))  # noqa: E731
        peers = {
            "cdist workers=1": lambda: process.cdist(texts, texts, scorer=Levenshtein.distance, workers=1),
            "cdist workers=-1": lambda: process.cdist(texts, texts, scorer=Levenshtein.distance, workers=-1),
            "cpdist workers=1": lambda: process.cpdist(left, right, scorer=Levenshtein.distance, workers=1),
            "cpdist workers=-1": lambda: process.cpdist(left, right, scorer=Levenshtein.distance, workers=-1),
        }
        # cdist computes the full matrix (twice the pairs) but skips building the pair lists; the fastest
        # of the four is the peer.
        k_runs = runs if n <= 500 else max(2, runs // 2)
        times = {}
        tf_all = []
        for peer_name, peer in peers.items():
            tf, tg = alternate(ours, peer, k_runs)
            tf_all += tf
            times[peer_name] = med(tg)
        best = min(times, key=times.get)
        equal = bool(np.array_equal(ours(), process.cpdist(left, right, scorer=Levenshtein.distance, workers=-1)))
        exam = name.startswith("Exam")
        lines.append(Line("kernels", f"Levenshtein, {name}: {n} strings, {len(i):,} pairs", med(tf_all), times[best],
                          f"RapidFuzz {best} (fastest of {', '.join(f'{k} {v * 1e3:.2f} ms' for k, v in times.items())})",
                          "all distances equal" if equal else "DISTANCES DIFFER", equal,
                          1.0 if exam else None, "Levenshtein >= RapidFuzz on the exam's pairs" if exam else "",
                          {"peer_medians": times}))
    return lines


def _probe_data(rng):
    import numpy as np

    from fasteval.core import protocol as P

    Xs, ys = [], []
    for range_name in P.RANGE_NAMES:
        values = P.range_values(range_name)
        n = len(values)
        base = rng.normal(0, 1, 384)
        emb = {q: base + np.cumsum(rng.normal(0, 0.15, (n, 384)), axis=0) for q in P.QUANTITIES}
        emb = {q: (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32) for q, e in emb.items()}
        for s in range(P.PROBE_N_SPLITS):
            _, train = P.probe_split(n, s)
            a, b = np.triu_indices(len(train), k=1)
            a, b = train[a], train[b]
            Xs.append(np.concatenate([np.abs(emb[q][a] - emb[q][b]) for q in P.QUANTITIES]).astype(np.float64))
            ys.append(np.tile(np.log1p(np.abs(values[a] - values[b])), len(P.QUANTITIES)))
    return Xs, ys


def _kernel_probe(ctx: Ctx, rng, runs: int) -> list[Line]:
    import numpy as np
    from sklearn.linear_model import RidgeCV
    from threadpoolctl import threadpool_limits

    from fasteval.core import protocol as P
    from fasteval.core.kernels.ridge import fit_ridge_loo_batched

    Xs, ys = _probe_data(rng)
    shapes = sorted({X.shape for X in Xs})
    alphas = list(P.PROBE_ALPHAS)
    ours = lambda: fit_ridge_loo_batched(Xs, ys, alphas)  # noqa: E731
    peer = lambda: [RidgeCV(alphas=alphas).fit(X, y) for X, y in zip(Xs, ys)]  # noqa: E731
    lines = []
    for blas in (None, 1):
        label = "BLAS default threads" if blas is None else "BLAS 1 thread"
        print(f"  kernels: probe, {label}", file=sys.stderr)
        with threadpool_limits(blas):
            tf, tg = alternate(ours, peer, max(2, runs // 2))
        fits, models = ours(), peer()
        same_alpha = all(f.alpha == m.alpha_ for f, m in zip(fits, models))
        coef = max(float(np.abs(f.coef - m.coef_).max() / np.abs(m.coef_).max()) for f, m in zip(fits, models))
        lines.append(Line("kernels", f"ridge probe, {len(Xs)} fits ({' and '.join(f'{a}x{b}' for a, b in shapes)}), "
                          f"13 alphas, {label}", med(tf), med(tg), "scikit-learn RidgeCV, one fit per call",
                          f"alphas {'all equal' if same_alpha else 'DIFFER'}, max relative coef diff {coef:.1e}",
                          same_alpha and coef < 1e-6, 1.0 if blas is None else None,
                          "probe fit >= RidgeCV" if blas is None else "", {"fasteval_runs": tf, "peer_runs": tg}))
    return lines


def _kernel_similarity(ctx: Ctx, rng, runs: int) -> list[Line]:
    import numpy as np

    from fasteval.core import protocol as P
    from fasteval.core.kernels.similarity import similarity_matrix

    def numpy_cos(e):
        u = e / np.linalg.norm(e, axis=1, keepdims=True)
        return u @ u.T

    cells = [rng.normal(0, 1, (len(P.range_values(c.range_name)), 384)).astype(np.float32) for c in P.exam1_cells()]
    big = rng.normal(0, 1, (1000, 384)).astype(np.float32)
    lines = []
    for name, data in ((f"the exam's {len(cells)} cells (21-25 x 384)", cells), ("one 1000 x 384 matrix", [big])):
        print(f"  kernels: similarity, {name}", file=sys.stderr)
        tf, tg = alternate(lambda: [similarity_matrix(e) for e in data], lambda: [numpy_cos(e) for e in data], runs)
        d = max(max_abs(similarity_matrix(e), numpy_cos(e)) for e in data)
        lines.append(Line("kernels", f"cosine similarity matrix, {name}", med(tf), med(tg),
                          "numpy (normalise, float32 matmul)", f"max |diff| {d:.1e} (float32 rounding)", d < 1e-5,
                          None, "", {"fasteval_runs": tf, "peer_runs": tg}))
    return lines


# ----------------------------------------------------------------------------------------------- scale
DENSE_RANGES = {"local_0_10": ("linspace", 0, 10), "medium_0_1000": ("linspace", 0, 1000),
                "log_1_100k": ("logspace", 0, 5), "sign_split": ("linspace", -100, 100),
                "scientific": ("logspace", -6, 6)}


def scale_child(impl: str, npz: str) -> None:
    """Child process: time similarity + per-row tau on every cell of ``npz``; print seconds and peak RSS."""
    import numpy as np

    data = np.load(npz)
    E, V = data["E"], data["V"]  # (cells, n, d) float32, (cells, n)
    if impl == "fasteval":
        from fasteval.core.kernels.kendall import kendall_tau_b_rows
        from fasteval.core.kernels.similarity import similarity_matrix

        def compute(e, v):
            S = similarity_matrix(e)
            D = np.abs(v[:, None] - v[None, :])
            return kendall_tau_b_rows(D, -S.astype(np.float64))
    else:
        from scipy.stats import kendalltau

        def compute(e, v):
            u = e / np.linalg.norm(e, axis=1, keepdims=True)
            S = u @ u.T
            D = np.abs(v[:, None] - v[None, :])
            return np.array([kendalltau(D[i], -S[i]).statistic for i in range(len(v))])
    compute(E[0][:30], V[0][:30])  # load JIT caches and libraries before the baseline
    reset_peak_rss()
    base = peak_rss_kib()
    start = time.perf_counter()
    taus = np.stack([compute(e, v) for e, v in zip(E, V)])
    seconds = time.perf_counter() - start
    peak = peak_rss_kib()
    np.save(npz.replace(".npz", f".{impl}.npy"), taus)
    print(json.dumps({"seconds": seconds, "rss_base_mib": base / 1024, "rss_peak_mib": peak / 1024,
                      "rss_growth_mib": (peak - base) / 1024}))


def peak_rss_kib() -> float:
    """This process's peak resident set (KiB): /proc's VmHWM, else ru_maxrss (which on Linux also counts the
    parent's peak from before exec, hence /proc first)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def reset_peak_rss() -> None:
    """Set the peak to the current resident set (Linux >= 4.0), so the peak measures the compute alone."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass


def bench_scale(ctx: Ctx) -> list[Line]:
    import numpy as np

    from fasteval.core.protocol import format_quantity
    from fasteval.models.loader import load_model

    ranges = ["medium_0_1000"] if ctx.quick else list(DENSE_RANGES)
    n = 1000
    enc = load_model(ctx.model, provider=ctx.args.provider, quiet=True)
    E, V = [], []
    for r in ranges:
        kind, lo, hi = DENSE_RANGES[r]
        values = np.linspace(lo, hi, n) if kind == "linspace" else np.logspace(lo, hi, n)
        print(f"  scale: embedding {n} texts of meter/{r}", file=sys.stderr)
        E.append(enc.encode([format_quantity(float(v), "meter") for v in values]))
        V.append(values)
    npz = str(ctx.tmp / "dense.npz")
    np.savez(npz, E=np.stack(E), V=np.stack(V))
    del enc
    runs = 1 if ctx.quick else 3
    res: dict[str, list[dict]] = {"fasteval": [], "numpy+scipy": []}
    for _ in range(runs):
        for impl in res:
            print(f"  scale: {impl}", file=sys.stderr)
            _, proc = run_wall([sys.executable, __file__, "--scale-child", impl, npz], ctx.env())
            res[impl].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    taus_f = np.load(npz.replace(".npz", ".fasteval.npy"))
    taus_p = np.load(npz.replace(".npz", ".numpy+scipy.npy"))
    d = max_abs(taus_f, taus_p)
    mf = {k: med([x[k] for x in res["fasteval"]]) for k in res["fasteval"][0]}
    mp = {k: med([x[k] for x in res["numpy+scipy"]]) for k in res["numpy+scipy"][0]}
    cells = len(ranges)
    return [Line("scale", f"dense grid: {cells} cell(s) of {n} values, {n}x{n} similarity + tau of every row "
                 f"({cells * n:,} rows of {n})", mf["seconds"], mp["seconds"],
                 "numpy matmul + scipy.stats.kendalltau per row",
                 f"max |tau diff| {d:.1e} (float32 similarity ties round differently)", d < 1e-3, None, "",
                 {"fasteval": mf, "peer": mp, "fasteval_runs": res["fasteval"], "peer_runs": res["numpy+scipy"]})]


# ----------------------------------------------------------------------------------------------- startup
def bench_startup(ctx: Ctx) -> list[Line]:
    env = ctx.env()
    n = 5 if ctx.quick else 10
    print("  startup: fasteval --help", file=sys.stderr)
    helps = [run_wall(fasteval_cmd() + ["--help"], env)[0] for _ in range(n)]
    bare = [run_wall([sys.executable, "-c", "pass"], env)[0] for _ in range(n)]
    lines = [Line("startup", f"`fasteval --help` (median of {n}, cold process)", med(helps), 0.3,
                  "target: 0.3 s", f"python -c pass alone: {med(bare):.3f} s", None, 1.0, "`--help` < 0.3 s",
                  {"help_runs": helps, "python_runs": bare})]
    out = ctx.tmp / "warm-out"
    cmd = fasteval_cmd() + ["sweep", "--model", ctx.model, "--out", str(out), "--overwrite", "always",
                            "--provider", ctx.args.provider, "-q"]
    run_wall(cmd, env)  # fills the embedding cache: later runs embed nothing
    walls, computes = [], []
    for _ in range(2 if ctx.quick else 3):
        print("  startup: warm sweep", file=sys.stderr)
        walls.append(run_wall(cmd, env)[0])
        timings = json.loads(next(out.glob("*/*/results.json")).read_text())["timings"]
        computes.append(sum(timings.values()))
    wall, compute = med(walls), med(computes)
    lines.append(Line("startup", "warm `fasteval sweep` (embeddings cached): process wall less the exams' compute",
                      wall - compute, None, "",
                      f"wall {wall:.2f} s = compute {compute:.2f} s + start-up, model load and writing "
                      f"{wall - compute:.2f} s", None, None, "", {"walls": walls, "computes": computes}))
    return lines


# ----------------------------------------------------------------------------------------------- report
def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


def fmt_ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def write_results(path: Path, lines: list[Line], meta: dict[str, Any]) -> None:
    old_notes = ""
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if NOTES_MARK in text:
            old_notes = text.split(NOTES_MARK, 1)[1].lstrip("\n")
    m = meta["machine"]
    out = ["# fasteval benchmarks", "",
           f"Generated by `{meta['command']}` on {meta['date']} ({'quick' if meta['quick'] else 'full'} run, "
           f"{meta['minutes']:.1f} min). Ratio = peer time / fasteval time (above 1: fasteval is faster); every "
           "time is a median of alternating runs. Load average (1 min) before / after: "
           f"{meta['load_before']} / {meta['load_after']} on {m['cores']} cores"
           + (" — **a busy machine: treat these numbers as noisy**." if (meta['load_before'] or 0) > 0.5 * m['cores']
              or (meta['load_after'] or 0) > 0.5 * m['cores'] else "."), "",
           "## Machine and versions", "",
           f"- CPU: {m['cpu']}, {m['cores']} usable cores, {m['ram_gib']} GiB RAM; {m['os']}",
           f"- Python {m['python']}; " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v), "",
           "## Targets", "", "| target | line | measured | met |", "|---|---|---|---|"]
    for ln in lines:
        if ln.target_name:
            if ln.section == "startup" and ln.name.startswith("`fasteval --help`"):
                measured, met = f"{ln.fasteval_s:.3f} s", ln.fasteval_s < 0.3
            else:
                measured, met = fmt_ratio(ln.ratio), ln.met
            out.append(f"| {ln.target_name} | {ln.name} | {measured} | "
                       f"{'—' if met is None else ('met' if met else '**missed**')} |")
    for section in SECTIONS:
        rows = [ln for ln in lines if ln.section == section]
        if not rows:
            continue
        out += ["", f"## {section}", "", "| line | fasteval | peer | peer time | ratio | fidelity |",
                "|---|---|---|---|---|---|"]
        for ln in rows:
            fid = ("" if ln.fidelity_ok is None else ("ok: " if ln.fidelity_ok else "**differs**: ")) + ln.fidelity
            peer_time = fmt_s(ln.peer_s) if ln.section != "startup" else "—"
            ratio = fmt_ratio(ln.ratio) if ln.section != "startup" else "—"
            out.append(f"| {ln.name} | {fmt_s(ln.fasteval_s)} | {ln.peer} | {peer_time} | {ratio} | {fid} |")
        if section == "e2e":
            for ln in rows:
                fp, pp = ln.detail.get("fasteval_phases"), ln.detail.get("peer_phases")
                if fp and pp:
                    out += ["", "Where the time goes (medians, seconds; the rest of the wall time is process "
                            "start, imports and model load):", "",
                            "| | " + " | ".join(fp) + " | wall |", "|---" * (len(fp) + 2) + "|",
                            "| fasteval | " + " | ".join(f"{v:.2f}" for v in fp.values())
                            + f" | {ln.fasteval_s:.2f} |"]
                    one = ln.detail.get("fasteval_one_blas_thread_phases")
                    if one:
                        out.append("| fasteval, OPENBLAS_NUM_THREADS=1 (one run) | "
                                   + " | ".join(f"{one.get(k, float('nan')):.2f}" for k in fp)
                                   + f" | {ln.detail['fasteval_one_blas_thread_wall']:.2f} |")
                    out += ["",
                            "| | " + " | ".join(pp) + " | wall |", "|---" * (len(pp) + 2) + "|",
                            "| reference | " + " | ".join(f"{v:.2f}" for v in pp.values()) + f" | {ln.peer_s:.2f} |"]
        if section == "scale":
            for ln in rows:
                f, p = ln.detail.get("fasteval"), ln.detail.get("peer")
                if f and p:
                    out += ["", "| peak memory (child process, MiB) | baseline | peak | growth |", "|---|---|---|---|",
                            f"| fasteval | {f['rss_base_mib']:.0f} | {f['rss_peak_mib']:.0f} | {f['rss_growth_mib']:.0f} |",
                            f"| numpy + scipy | {p['rss_base_mib']:.0f} | {p['rss_peak_mib']:.0f} | "
                            f"{p['rss_growth_mib']:.0f} |"]
    out += ["", NOTES_MARK, ""]
    path.write_text("\n".join(out) + "\n" + old_notes, encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="fasteval against its peers (writes benchmarks/RESULTS.md).")
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller inputs (a minute or two)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections, comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="registry name or model folder")
    parser.add_argument("--provider", default="cpu", choices=("cpu", "cuda"), help="fasteval's execution provider")
    parser.add_argument("--results", default=str(HERE / "RESULTS.md"), help="Markdown report to (re)write")
    parser.add_argument("--json", default=str(HERE / "results.json"), help="every number as JSON")
    parser.add_argument("--scale-child", nargs=2, metavar=("IMPL", "NPZ"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scale_child:
        scale_child(*args.scale_child)
        return 0
    from fasteval.core.runs.bench import machine_info

    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    started = time.perf_counter()
    load_before = load1()
    ctx = prepare(args)
    runners = {"e2e": bench_e2e, "encode": bench_encode, "kernels": bench_kernels, "scale": bench_scale,
               "startup": bench_startup}
    lines: list[Line] = []
    try:
        for section in chosen:
            print(f"{section} (load {load1()})", file=sys.stderr)
            try:
                lines += runners[section](ctx)
            except Exception as err:  # noqa: BLE001 - report and go on with the other sections
                traceback.print_exc()
                lines.append(Line(section, f"{section} failed: {type(err).__name__}: {str(err)[:300]}", None, None, ""))
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    meta = {"command": "python benchmarks/run.py" + (" --quick" if args.quick else "")
                       + (f" --only {args.only}" if set(chosen) != set(SECTIONS) else "")
                       + (f" --provider {args.provider}" if args.provider != "cpu" else ""),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "quick": args.quick,
            "minutes": (time.perf_counter() - started) / 60, "load_before": load_before, "load_after": load1(),
            "machine": machine_info(), "model": args.model, "provider": args.provider,
            "peer_device": ctx.peer_device}
    Path(args.json).write_text(json.dumps({"meta": meta, "lines": [
        {**asdict(ln), "ratio": ln.ratio, "met": ln.met} for ln in lines]}, indent=1, default=str) + "\n")
    write_results(Path(args.results), lines, meta)
    for ln in lines:
        print(f"{ln.section:<8} {ln.name[:70]:<70} {fmt_s(ln.fasteval_s):>10} {fmt_s(ln.peer_s):>10} "
              f"{fmt_ratio(ln.ratio):>8}  {'' if ln.fidelity_ok is None else ('ok' if ln.fidelity_ok else 'DIFF')}")
    print(f"wrote {args.results} and {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
