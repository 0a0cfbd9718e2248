"""Numba kernels behind validating wrappers. Importing a submodule imports numba; this package does not.

The exams call ``pick``, which runs the paper's work in numpy (``small``: its grids, and the bootstrap's resamples
by their draws' counts) and large work on the kernels (dense grids, long custom lists, large bootstraps), which load
at their first call. A sweep of the paper's protocol, its bootstrap included, never imports numba."""
from __future__ import annotations

import os

# The kernel modules warm_up loads, by name (ridge's one kernel is in _ridge_jit).
KERNELS = ("kendall", "levenshtein", "_ridge_jit", "similarity")


def usable_cores() -> int:
    """The cores this process may run on (its affinity), else the machine's count."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def warm_up(kernels: tuple[str, ...] = KERNELS) -> int:
    """Load the named kernels (from numba's on-disk cache, or compile them) on tiny inputs of the exams' dtypes,
    so the first real call finds them ready; return how many kernel signatures had to be compiled (numba's cache
    misses: 0 once the cache is filled, the first run after an install compiles them). Never raises: a failure
    here only means the real call pays the load."""
    try:
        import importlib

        import numpy as np

        modules = [importlib.import_module(f"{__name__}.{name}") for name in kernels]
        loaded = dict(zip(kernels, modules))
        if "similarity" in loaded:
            emb = np.eye(3, 4, dtype=np.float32) + 0.5
            loaded["similarity"].similarity_matrix(emb)
            loaded["similarity"].paired_similarity(emb, emb)
        if "kendall" in loaded:
            x = np.arange(6, dtype=np.float64).reshape(2, 3)
            loaded["kendall"].kendall_tau_b(x[0], -x[1])
            loaded["kendall"].kendall_tau_b_rows(x, -x)
            loaded["kendall"].pairwise_accuracy_rows(x, x, value_ties="as_greater")
            loaded["kendall"].pairwise_accuracy_rows(x, x, value_ties="skip")
        if "levenshtein" in loaded:
            lev = loaded["levenshtein"]
            lev.levenshtein_all_pairs(lev.encode_strings(["1.5", "-2", "30"]))
            lev.levenshtein_all_pairs(lev.pack_sequences([[1, 2], [2, 3, 4], [5]]))
        if "_ridge_jit" in loaded:
            loaded["_ridge_jit"]._tridiagonal_inverse_forms(np.ones((2, 3)), np.full(2, 2.0), np.full(1, 0.5),
                                                            np.ones(2), np.ones((2, 2)))
        return sum(sum(d.stats.cache_misses.values()) for m in modules
                   for d in vars(m).values() if hasattr(d, "stats") and hasattr(d.stats, "cache_misses"))
    except Exception:  # noqa: BLE001 - an optimisation only
        return 0
