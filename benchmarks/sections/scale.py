"""scale: a dense grid (1,000 values per range, all pairs), time and peak memory in child processes."""
from __future__ import annotations

import json
import resource
import sys
import time

from ..harness import ROOT, Ctx, Line, max_abs, med, run_wall


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
    enc = load_model(ctx.model, provider=ctx.args.provider)
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
            _, proc = run_wall([sys.executable, "-m", "benchmarks.sections.scale", impl, npz], ctx.env(), cwd=ROOT)
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


if __name__ == "__main__":  # the child process of bench_scale: python -m benchmarks.sections.scale IMPL NPZ
    scale_child(*sys.argv[1:3])
