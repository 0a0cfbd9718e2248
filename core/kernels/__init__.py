"""Numba kernels behind validating wrappers. Importing a submodule imports numba; this package does not."""
from __future__ import annotations

import threading


def warm_up() -> None:
    """Load every kernel the exams call (from numba's on-disk cache, or compile it) on tiny inputs of the
    exams' dtypes, so the first real call finds it ready. Never raises: a failure here only means the
    real call pays the load."""
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
    except Exception:  # noqa: BLE001 - an optimisation only
        pass


def warm_up_in_background() -> threading.Thread:
    """Start warm_up() in a daemon thread (e.g. while the encoder runs); join it before the exams."""
    thread = threading.Thread(target=warm_up, name="fasteval-kernel-warm-up", daemon=True)
    thread.start()
    return thread
