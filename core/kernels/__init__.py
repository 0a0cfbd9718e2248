"""Numba kernels behind validating wrappers. Importing a submodule imports numba; this package does not.

The exams call ``pick``, which runs the paper's small grids in numpy (``small``) and large work on the kernels; a
run that will reach the kernels (a bootstrap, drift's paired resamples) loads them with ``warm_up_in_background``
while the encoder works, where a core is spare."""
from __future__ import annotations

import os
import threading
import time

# The kernel modules warm_up loads, by name (ridge's one kernel is in _ridge_jit).
KERNELS = ("kendall", "levenshtein", "_ridge_jit", "similarity")
# With this many usable cores or fewer the kernels load after the embedding, not beside it: onnxruntime's threads
# have the cores, and numba's import and loading (0.5-1.7 s of CPU, most of it holding the GIL) slowed a 2-core
# sweep's embedding by 20-30% while it saved no wall time.
SPARE_CORE_ABOVE = 2


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


class WarmUp(threading.Thread):
    """warm_up(kernels) in a daemon thread (e.g. while the encoder runs), or, where no core is spare, in
    ``join()``; after ``join()``, ``compiled`` (kernel signatures compiled, not loaded from numba's cache) and
    ``seconds`` (how long it took)."""

    def __init__(self, kernels: tuple[str, ...]) -> None:
        super().__init__(name="fasteval-kernel-warm-up", daemon=True)
        self.kernels = kernels
        self.compiled, self.seconds = 0, 0.0

    def run(self) -> None:
        start = time.perf_counter()
        self.compiled = warm_up(self.kernels)
        self.seconds = time.perf_counter() - start

    def join(self, timeout: float | None = None) -> None:
        if self.ident is None:  # never started: the kernels (if any) load now
            if self.kernels:
                self.run()
            return
        super().join(timeout)


def warm_up_in_background(kernels: tuple[str, ...] = KERNELS) -> WarmUp:
    """Start loading ``kernels`` beside the caller's work where a core is spare (more than SPARE_CORE_ABOVE usable);
    else they load at ``join()``. Join it before the work that calls them. No kernels: nothing happens."""
    thread = WarmUp(kernels)
    if kernels and usable_cores() > SPARE_CORE_ABOVE:
        thread.start()
    return thread
