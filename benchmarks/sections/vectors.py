"""vectors: what each vector form a store keeps costs beside the float vectors (the same embeddings of the paper's
Exam 1 texts, Table 1 scored from them: the form applied, then the exam), and the integer and binary scoring against
numpy (int4's integer vectors through the similarity kernel; binary-centred's packed signs through the popcount
kernel)."""
from __future__ import annotations

import sys

from ..harness import Ctx, Line, alternate, max_abs, med
from .kernels import numpy_hamming


def bench_vectors(ctx: Ctx) -> list[Line]:
    import numpy as np

    from fasteval.core.embeddings import embed_groups
    from fasteval.core.plan import plan, score, scoring
    from fasteval.core.vectors import FORMS
    from fasteval.models.loader import load_model

    runs = 3 if ctx.quick else 5
    encoder = load_model(ctx.model, provider="cpu", threads=ctx.threads)
    floats = plan(encoder, scoring(exams=(1,), bootstrap=0))
    print(f"  vectors: {ctx.model}'s Exam 1 texts, each form", file=sys.stderr)
    every = scoring(exams=(1,), bootstrap=0, vector_quantization="int8").groups()  # the calibration texts too
    table = embed_groups(encoder, every)
    full_tau = score(floats, table)["exam1"].summary()["tau"]
    lines = []
    for form in FORMS:
        try:
            planned = plan(encoder, scoring(exams=(1,), bootstrap=0, vector_quantization=form))
        except Exception as err:  # noqa: BLE001 - a form whose library is missing (turbovec) is said, not fatal
            lines.append(Line("vectors", f"{form}: not run ({err})", None, None, ""))
            continue
        tau = score(planned, table)["exam1"].summary()["tau"]
        tf, tg = alternate(lambda: score(planned, table), lambda: score(floats, table), runs)
        lines.append(Line("vectors", f"{ctx.model}: Table 1 from {form} vectors (the form applied, then Exam 1)",
                          med(tf), med(tg), "the float vectors' Table 1 (Exam 1 alone)",
                          f"tau {tau:.2f} (floats {full_tau:.2f})", None, None, "",
                          {"fasteval_runs": tf, "peer_runs": tg, "tau": tau, "float_tau": full_tau}))
    lines += _int4_kernel(ctx, np.random.default_rng(0), runs)
    lines += _centred_hamming(ctx, np.random.default_rng(1), runs)
    return lines


def _int4_kernel(ctx: Ctx, rng, runs: int) -> list[Line]:
    """int4 vectors as the exams score them (the cosine of their integers) against numpy's float64 product."""
    import numpy as np

    from fasteval.core.kernels.similarity import similarity_matrix
    from fasteval.core.vectors import quantize_int

    n = 1_000 if ctx.quick else 3_000
    x = rng.normal(size=(n, 384)).astype(np.float32)
    q = quantize_int(x, x[:500], 4).astype(np.float32)

    def numpy_cos() -> np.ndarray:
        u = q.astype(np.float64)
        u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        return (u @ u.T).astype(np.float32)

    tf, tg = alternate(lambda: similarity_matrix(q, metric="cos"), numpy_cos, runs)
    d = max_abs(similarity_matrix(q[:300], q, metric="cos"), numpy_cos()[:300])
    return [Line("vectors", f"int4 vectors' cosine, {n:,} x {n:,} of 384 dimensions", med(tf), med(tg),
                 "numpy: float64 normalise and matmul", f"max |diff| {d:.1e}", d < 1e-6, None, "",
                 {"fasteval_runs": tf, "peer_runs": tg})]


def _centred_hamming(ctx: Ctx, rng, runs: int) -> list[Line]:
    """binary-centred vectors as the exams score them: the packed signs of the centred rows, the popcount kernel
    against numpy's bitwise_count."""
    from fasteval.core.kernels.bits import hamming_similarity, pack_signs

    n = 2_000 if ctx.quick else 5_000
    x = rng.normal(loc=0.3, size=(n, 384))  # a dimension's mean away from 0, what centring is for
    packed = pack_signs(x - x[:500].mean(axis=0))
    tf, tg = alternate(lambda: hamming_similarity(packed, packed, 384), lambda: numpy_hamming(packed, 384),
                       max(2, runs // 2))
    d = max_abs(hamming_similarity(packed[:300], packed, 384), numpy_hamming(packed, 384)[:300])
    return [Line("vectors", f"binary-centred Hamming similarity, {n:,} x {n:,} of 384 bits", med(tf), med(tg),
                 "numpy bitwise_count over the XOR, 64 rows at a time", f"max |diff| {d:.1e}", d == 0, None, "",
                 {"fasteval_runs": tf, "peer_runs": tg})]
