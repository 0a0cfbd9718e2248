"""Run a parallel kernel on one thread when the call is small (shared by the kernel modules)."""

from __future__ import annotations

import numba

# Below this many inner steps (~0.1 ms of work) a call runs on one thread: a parallel launch costs more,
# up to milliseconds on a busy machine (measured on a loaded 2-core box: ~10 us on one thread against
# 0.1-8 ms on two). Set from Python: numba.set_num_threads inside a kernel would disable cache=True.
PARALLEL_MIN_WORK = 1 << 17


def run_parallel(kernel, work: int, *args):
    """kernel(*args), with numba's threads for the call limited to 1 when work < PARALLEL_MIN_WORK."""
    if work >= PARALLEL_MIN_WORK:
        return kernel(*args)
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return kernel(*args)
    finally:
        numba.set_num_threads(previous)
