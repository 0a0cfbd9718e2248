"""kernels: Kendall tau-b (many short rows; one long list), Levenshtein, the ridge probe, similarity, and Hamming
similarity of binary vectors (popcount)."""
from __future__ import annotations

import sys
import traceback

from ..harness import Ctx, Line, alternate, max_abs, med


def bench_kernels(ctx: Ctx) -> list[Line]:
    import numpy as np

    lines: list[Line] = []
    runs = 3 if ctx.quick else 5
    rng = np.random.default_rng(0)
    for fn in (_kernel_tau, _kernel_levenshtein, _kernel_probe, _kernel_similarity, _kernel_hamming):
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
    d = max_abs(kendall_tau_b_rows(X[:2000], Y[:2000]),
                [kendalltau(x, y).statistic for x, y in zip(X[:2000], Y[:2000])])
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
                          f"RapidFuzz {best} (fastest of "
                          f"{', '.join(f'{k} {v * 1e3:.2f} ms' for k, v in times.items())})",
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


def numpy_hamming(packed, bits: int):
    """Every pair's Hamming similarity of packed sign bits by numpy's bitwise_count over the XOR, 64 rows at a time
    (the popcount kernel's peer)."""
    import numpy as np

    n = len(packed)
    out = np.empty((n, n), dtype=np.float32)
    for i in range(0, n, 64):
        differ = np.bitwise_count(packed[i:i + 64, None, :] ^ packed[None, :, :]).sum(axis=2, dtype=np.uint32)
        out[i:i + 64] = 1 - differ / bits
    return out


def _kernel_hamming(ctx: Ctx, rng, runs: int) -> list[Line]:
    """Binary vectors as a store keeps them (384 bits packed in 48 bytes): every pair's Hamming similarity, the
    popcount kernel against numpy's bitwise_count over the XOR, 64 rows at a time (all pairs at once would take
    4.8 GB)."""
    from fasteval.core.kernels.bits import hamming_similarity, pack_signs

    n = 4_000 if ctx.quick else 10_000
    print(f"  kernels: hamming, {n:,} x {n:,} binary vectors of 384 bits", file=sys.stderr)
    packed = pack_signs(rng.normal(size=(n, 384)))
    tf, tg = alternate(lambda: hamming_similarity(packed, packed, 384), lambda: numpy_hamming(packed, 384),
                       max(2, runs // 2))
    d = max_abs(hamming_similarity(packed[:500], packed, 384), numpy_hamming(packed, 384)[:500])
    return [Line("kernels", f"Hamming similarity, {n:,} x {n:,} binary vectors of 384 bits", med(tf), med(tg),
                 "numpy bitwise_count over the XOR, 64 rows at a time", f"max |diff| {d:.1e}", d == 0, 5.0,
                 "popcount >= 5x numpy", {"fasteval_runs": tf, "peer_runs": tg})]

