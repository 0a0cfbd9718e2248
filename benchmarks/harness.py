"""What every benchmark section shares: the comparison line, alternate timing, the context."""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable
from dataclasses import dataclass, field


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def real_servers():
    """tests/servers.py, the one helper that starts the real embedding servers (infinity, llama.cpp's server, vLLM)
    on 127.0.0.1 for the tests and the benchmarks, loaded by its path: no folder of tests/ goes on sys.path, so
    nothing else of the tests is importable here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fasteval_real_servers", ROOT / "tests" / "servers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Line:
    """One comparison: fasteval and a peer timed on the same work."""
    section: str
    name: str
    fasteval_s: float | None
    peer_s: float | None
    peer: str
    fidelity: str = ""
    fidelity_ok: bool | None = None
    target: float | None = None  # the ratio the issue asks for, if any
    target_name: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    limit_s: float | None = None  # an absolute target: fasteval's time must stay under it

    @property
    def ratio(self) -> float | None:
        if not self.fasteval_s or self.peer_s is None:
            return None
        return self.peer_s / self.fasteval_s

    @property
    def met(self) -> bool | None:
        if self.limit_s is not None and self.fasteval_s is not None:
            return self.fasteval_s < self.limit_s
        if self.target is None or self.ratio is None:
            return None
        return self.ratio >= self.target


def load1() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def alternate(f: Callable[[], Any], g: Callable[[], Any], runs: int,
              min_sample: float = 0.05) -> tuple[list[float], list[float]]:
    """Seconds per call of fasteval's f and the peer's g, ``runs`` samples each, taken alternately.

    One untimed call of each first (JIT caches, thread pools, lazy imports); a call shorter than
    ``min_sample`` is repeated within a sample (as timeit does), so sub-millisecond lines are not timer
    noise. A peer call of a second or more counts as its first sample (nothing of it is compiled).
    """
    tf: list[float] = []
    tg: list[float] = []
    loops = []
    for fn, out in ((f, None), (g, tg)):
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        if out is not None and once >= 1.0:
            out.append(once)
        loops.append(1 if once >= min_sample else int(min_sample / max(once, 1e-9)) + 1)
    for k in range(runs):
        for fn, n, out in ((f, loops[0], tf), (g, loops[1], tg)):
            if out is tg and k == 0 and tg:
                continue
            start = time.perf_counter()
            for _ in range(n):
                fn()
            out.append((time.perf_counter() - start) / n)
    return tf, tg


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def fasteval_cmd() -> list[str]:
    script = Path(sys.executable).with_name("fasteval")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from fasteval.cli.main import main; main()"]


def run_wall(cmd: list[str], env: dict[str, str] | None = None,
             cwd: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return wall, proc


def max_abs(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.abs(np.where(both_nan, 0.0, a - b))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0


@dataclass
class Ctx:
    args: argparse.Namespace
    model: str
    folder: Path  # the sentence-transformers folder (the peer's input)
    tmp: Path
    home: Path  # a FASTEVAL_HOME sharing the real cache's models and exports, without its embeddings
    threads: int
    peer_device: str
    quick: bool

    def env(self) -> dict[str, str]:
        """The timed processes' environment: this one's, the benchmark's home, and Python's bytecode written and
        read as an installed package has it (pip compiles a wheel's modules at install; a shell that sets
        PYTHONDONTWRITEBYTECODE would make every cold process here compile fasteval's ~100 modules again, 0.1-0.15
        s that no user's run pays)."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        return {**env, "FASTEVAL_HOME": str(self.home)}


def prepare(args) -> Ctx:
    from fasteval.core.kernels import usable_cores
    from fasteval.models.loader import load_model
    from fasteval.core.io import fasteval_home
    from fasteval.models.sources.registry import source_folder

    _, folder = source_folder(args.model)
    load_model(args.model, provider="cpu")  # exports once if the cache has no export yet
    tmp = Path(tempfile.mkdtemp(prefix="fasteval-bench-"))
    home = tmp / "home"
    home.mkdir()
    for entry in fasteval_home().iterdir():
        if entry.name != "embeddings":
            (home / entry.name).symlink_to(entry)
    peer_device = "cpu"
    if args.provider == "cuda":
        try:
            import torch

            peer_device = "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            pass
    return Ctx(args, args.model, Path(folder), tmp, home, usable_cores(), peer_device, args.quick)


_BUDGET_HEAD = """import json, time
t0 = time.perf_counter(); marks = {}
def mark(name):
    marks[name] = time.perf_counter() - t0
"""


def run_budget(ctx: Ctx, script: str, runs: int = 3) -> tuple[dict[str, float], str]:
    """Run ``script`` (its steps each followed by ``mark(name)``; MODEL stands for the model's name) in fresh
    processes; (median cumulative seconds per step, "step 0.12 s; ..." with each step's own time)."""
    import json

    script = _BUDGET_HEAD + script + "\nprint(json.dumps(marks))\n"

    budgets = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", script.replace("MODEL", repr(ctx.model))], capture_output=True,
                              text=True, env=ctx.env(), check=True)
        budgets.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    steps = {k: med([b[k] for b in budgets]) for k in budgets[0]}
    previous, parts = 0.0, []
    for name, at in steps.items():
        parts.append(f"{name} {at - previous:.3f} s")
        previous = at
    return steps, "; ".join(parts)
