"""Numba kernels behind validating wrappers. Importing a submodule imports numba; this package does not."""
from __future__ import annotations

import threading


def warm_up() -> int:
    """Load every kernel the exams call (from numba's on-disk cache, or compile it) on tiny inputs of the
    exams' dtypes, so the first real call finds it ready; return how many kernel signatures had to be compiled
    (numba's cache misses: 0 once the cache is filled, the first run after an install compiles them). Never
    raises: a failure here only means the real call pays the load."""
    try:
        import numpy as np

        from . import kendall, levenshtein, ridge, similarity

        emb = np.eye(3, 4, dtype=np.float32) + 0.5
        similarity.similarity_matrix(emb)
        similarity.paired_similarity(emb, emb)
        x = np.arange(6, dtype=np.float64).reshape(2, 3)
        kendall.kendall_tau_b(x[0], -x[1])
        kendall.kendall_tau_b_rows(x, -x)
        kendall.pairwise_accuracy_rows(x, x, value_ties="as_greater")
        levenshtein.levenshtein_all_pairs(levenshtein.encode_strings(["1.5", "-2", "30"]))
        levenshtein.levenshtein_all_pairs(levenshtein.pack_sequences([[1, 2], [2, 3, 4], [5]]))
        ridge.fit_ridge_loo_batched([np.abs(np.random.default_rng(0).normal(size=(6, 4))).astype(np.float32)],
                                    [np.arange(6, dtype=np.float64)], (0.1, 1.0))
        return sum(sum(d.stats.cache_misses.values()) for m in (kendall, levenshtein, ridge, similarity)
                   for d in vars(m).values() if hasattr(d, "stats") and hasattr(d.stats, "cache_misses"))
    except Exception:  # noqa: BLE001 - an optimisation only
        return 0


class WarmUp(threading.Thread):
    """warm_up() in a daemon thread (e.g. while the encoder runs); after ``join()``, ``compiled`` (kernel
    signatures compiled, not loaded from numba's cache) and ``seconds`` (how long it took)."""

    def __init__(self) -> None:
        super().__init__(name="fasteval-kernel-warm-up", daemon=True)
        self.compiled, self.seconds = 0, 0.0

    def run(self) -> None:
        import time

        start = time.perf_counter()
        self.compiled = warm_up()
        self.seconds = time.perf_counter() - start


def warm_up_in_background() -> WarmUp:
    """Start warm_up() in a daemon thread (e.g. while the encoder runs); join it before the exams."""
    thread = WarmUp()
    thread.start()
    return thread
