"""Shared test doubles: a deterministic fake encoder (no model needed), and the CLI runner with the one
check every bad-input test makes (one line, a fix, a non-zero exit, no traceback)."""
from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np

from fasteval.core import protocol as P

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # the tests' root (helpers, data/); test files live in one folder a room
ROOT = TESTS.parent  # the repository
FASTEVAL = [sys.executable, "-c", "from fasteval.cli.main import main; main()"]
WORDS = {w: float(i) for i, w in enumerate(P.WORDS[:-1])} | {P.WORDS[-1]: 100.0}


def number_of(text: str) -> float:
    """The number a protocol text starts with ("5 meters" -> 5, "five meter" -> 5); 0 when there is none."""
    head = text.split()[0] if text.split() else ""
    try:
        return float(head)
    except ValueError:
        return WORDS.get(head, 0.0)


class FakeEncoder:
    """Embeddings from the number in the text (sin features of log|x| and its sign) plus crc32-seeded noise.

    ``tokens``: "coarse" (a few ids per character class: token tau differs from character tau), "chars" (one
    id per character: token tau must equal character tau, PROTOCOL.md 2.3) or None (no token_ids).
    ``calls`` records every encode call.
    """

    def __init__(self, noise: float = 0.3, dim: int = 16, tokens: str | None = "coarse"):
        self.noise, self.dim, self.calls = noise, dim, []
        if tokens == "coarse":
            self.token_ids = lambda texts: [[ord(c) % 7 + (3 if c.isdigit() else 0) for c in t] for t in texts]
        elif tokens == "chars":
            self.token_ids = lambda texts: [[ord(c) for c in t] for t in texts]

    def encode(self, texts):
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            x = number_of(text)
            features = np.sin(np.log1p(abs(x)) * np.arange(1, self.dim + 1) / 2 + np.sign(x))
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            rows.append(features + self.noise * rng.normal(size=self.dim))
        return np.asarray(rows, dtype=np.float32)


class CountingEncoder(FakeEncoder):
    """A FakeEncoder with a name and the settings a sweep keys on (as a fasteval model has them)."""

    def __init__(self, name: str, **kw):
        super().__init__(**kw)
        self.name = name
        self.info = {"model": name, "onnx_sha256": name, "provider": "cpu", "dtype": "fp32", "prompt": ""}


def run_cli(args, env=None, cwd=None, timeout: float = 600, umask: int = -1) -> subprocess.CompletedProcess:
    """``fasteval ARGS`` in a subprocess, as a user runs it (FASTEVAL_DEBUG off; ``umask`` the process's, where
    given)."""
    full_env = {**os.environ, "FASTEVAL_DEBUG": "", **(env or {})}
    return subprocess.run(FASTEVAL + [str(a) for a in args], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=timeout, umask=umask)


def one_line_error(proc, *fragments) -> str:
    """The single ``fasteval: error:`` line of a failed command, holding each fragment; fails otherwise."""
    assert proc.returncode != 0, proc.stdout
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("fasteval: error:")]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def assert_same_summaries(served: dict, local: dict, tolerances=(("exam1", 1e-9), ("exam2", 1e-3), ("exam3", 1e-9))
                          ) -> None:
    """A served run's exam summaries against the local folder's (two results.json): the same entries, Exam 2's
    token Levenshtein among them (the server's own /tokenize, or the --tokenizer given), each within its exam's
    tolerance (torch or ggml against onnxruntime differ in the last float bits: a few of Exam 2's 4,950 near-ties
    flip)."""
    import pytest

    assert any("token" in k for k in local["exams"]["exam2"]["summary"])
    for key, tolerance in tolerances:
        a, b = served["exams"][key]["summary"], local["exams"][key]["summary"]
        assert a.keys() == b.keys(), key
        for name, value in a.items():
            if isinstance(value, float):
                assert value == pytest.approx(b[name], abs=tolerance), (key, name)
