"""evaluator: PhysScoreEvaluator (fasteval's exams in a sentence-transformers training loop) against the
evaluator model builders already run every evaluation, EmbeddingSimilarityEvaluator, on STS-sized data
(1,379 sentence pairs, as STS-B's test split; made here, nothing downloaded), the same model in torch on the CPU.
Both call the model's own encode; the numbers shown equal are the evaluator's Table 1 row and the sweep's."""
from __future__ import annotations

import random

from ..harness import Ctx, Line, alternate, med

STS_PAIRS = 1379
WORDS = ("the a one two river house engine meter kilogram fast slow red blue measured reading small large city "
         "report liquid bridge valve sensor pressure sample value unit test data").split()


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))) for _ in range(n)]


def bench_evaluator(ctx: Ctx) -> list[Line]:
    import fasteval
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator

    model = SentenceTransformer(str(ctx.folder), device="cpu")
    a, b = _sentences(STS_PAIRS, 1), _sentences(STS_PAIRS, 2)
    scores = [random.Random(3).random() for _ in range(STS_PAIRS)]
    sts = EmbeddingSimilarityEvaluator(a, b, scores, name="sts", show_progress_bar=False)
    ours = fasteval.PhysScoreEvaluator(write_csv=False)
    runs = 3 if ctx.quick else 5
    tf, tg = alternate(lambda: ours(model), lambda: sts(model), runs)
    metrics = ours(model)
    row = fasteval.evaluate(model, exams=(1,), bootstrap=0).exams["exam1"].summary()
    same = ((round(metrics["physscore_tau"] * 100, 2), round(metrics["physscore_pacc"] * 100, 2))
            == (row["tau_display"], row["pacc_display"]))
    return [Line("evaluator", f"one evaluation in a training loop: PhysScoreEvaluator (Exam 1, the paper's 1,319 "
                              f"texts) against EmbeddingSimilarityEvaluator ({STS_PAIRS} STS pairs)",
                 med(tf), med(tg), "EmbeddingSimilarityEvaluator (sentence-transformers, torch cpu)",
                 f"evaluator tau/PACC x100 {metrics['physscore_tau'] * 100:.2f}/"
                 f"{metrics['physscore_pacc'] * 100:.2f} vs evaluate {row['tau_display']}/{row['pacc_display']}",
                 same, None, "", {"fasteval": tf, "peer": tg})]
