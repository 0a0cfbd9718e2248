"""The kernel tests once more with NUMBA_DISABLE_JIT=1: the kernels as plain Python, so that coverage and
tracebacks see inside them and a JIT-only behaviour cannot hide a bug (STUMPY's habit)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="already running without the JIT")
def test_kernels_without_jit():
    files = sorted(str(p) for p in TESTS.glob("test_kernels_*.py"))
    assert files, "no kernel tests found"
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "HYPOTHESIS_PROFILE": "nojit"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *files],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
