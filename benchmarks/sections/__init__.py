"""The benchmark's sections, one module each, every one a ``bench_<name>(ctx) -> list[Line]`` that times fasteval
and its peer on the same work and says whether both computed the same numbers (``..harness``). A section's module
is imported only when it runs, so its peer's libraries load only then."""
from __future__ import annotations

import importlib
from collections.abc import Callable

# In RESULTS.md's order.
SECTIONS = ("e2e", "encode", "gpu", "kernels", "scale", "startup", "statistics", "check", "export", "ahead", "int8",
            "vectors", "served", "drift", "parity", "evaluator", "memory", "static")
# What `python -m benchmarks` runs unless told: every section but gpu, which benchmarks/gpu/run.sh runs on a GPU
# machine (and the kit's dry run on the CPU).
DEFAULT_SECTIONS = tuple(s for s in SECTIONS if s != "gpu")


def runner(name: str) -> Callable:
    """The section's ``bench_<name>``, its module imported now."""
    return getattr(importlib.import_module(f".{name}", __name__), f"bench_{name}")
