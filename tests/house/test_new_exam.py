"""A new exam is one module and one line in EXAM_MODULES: on a copy of the package with a toy exam added so,
a sweep runs it, writes its CSV and its MTEB task file, MTEB lists its task, and the report shows its table."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

from fakes import ROOT, TESTS

TOY = '''"""A toy exam: the mean cosine of consecutive texts of one group."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import Exam, ExamInputs
from ..io import csv_text

TEXTS = ["1 meter", "2 meters", "3 meters", "4 meters"]


@dataclass
class ToyResult:
    mean_neighbour_cosine: float

    @classmethod
    def from_json(cls, d: dict) -> "ToyResult":
        return cls(float(d["mean_neighbour_cosine"]))

    def summary(self) -> dict[str, float]:
        return {"mean_neighbour_cosine": self.mean_neighbour_cosine}


def _run(inputs: ExamInputs) -> ToyResult:
    e = inputs.table[TEXTS].astype(np.float64)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    return ToyResult(float(np.mean(np.sum(e[1:] * e[:-1], axis=1))))


EXAM = Exam(
    choice="toy", title="Toy exam ({model}, {metric})", groups=lambda: [list(TEXTS)], run=_run, result_type=ToyResult,
    files=lambda r, model_id: {f"{model_id}_toy.csv": csv_text([{"model": model_id, **r.summary()}],
                                                               ["model", "mean_neighbour_cosine"])},
    text=lambda r: f"  mean neighbour cosine {r.mean_neighbour_cosine:.4f}", mteb_task="PhysScoreToy",
    mteb_description="A toy exam.", main_score="mean_neighbour_cosine", mteb_scores=lambda r: r.summary())
'''

RUN = '''
import json, sys
sys.path.insert(0, {tests!r})
from fakes import FakeEncoder
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep
from fasteval.core.report.build import build_report
import fasteval.core.mteb as fm
outcome = run_sweep([Job("toy-model", exams=(1, "toy"), bootstrap=0)], {out!r}, lambda n, **o: FakeEncoder(),
    cache_root=False)[0]
report = build_report({out!r}, png=False)
tasks = [t.metadata.name for t in fm.tasks()]
print(json.dumps({{"folder": str(outcome.path), "tables": sorted(report.tables), "tasks": tasks}}))
'''


def test_an_exam_added_as_one_module_and_one_line_runs_everywhere(tmp_path):
    copy = tmp_path / "pkg" / "fasteval"
    copy.mkdir(parents=True)
    shutil.copy(ROOT / "__init__.py", copy)
    for d in ("core", "cli", "models"):
        shutil.copytree(ROOT / d, copy / d, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "core" / "exams" / "toy.py").write_text(TOY)
    registry = copy / "core" / "exams" / "__init__.py"
    text, n = re.subn(r'(EXAM_MODULES = \([^)]*)\)', r'\1, "toy")', registry.read_text())
    assert n == 1, "EXAM_MODULES is one line to extend"
    registry.write_text(text)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
    proc = subprocess.run([sys.executable, "-c", RUN.format(tests=str(TESTS), out=str(out))], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    folder = got["folder"]
    data = json.loads(open(os.path.join(folder, "results.json")).read())
    assert 0 < data["exams"]["toy"]["mean_neighbour_cosine"] <= 1 and "exam1" in data["exams"]
    assert data["settings"]["exams"] == [1, "toy"]
    assert open(os.path.join(folder, "FakeEncoder_toy.csv")).read().startswith("model,mean_neighbour_cosine\n")
    task = json.loads(open(os.path.join(folder, "mteb", "PhysScoreToy.json")).read())
    assert abs(task["scores"]["test"][0]["main_score"] - data["exams"]["toy"]["mean_neighbour_cosine"]) < 1e-6
    assert "PhysScoreToy" in got["tasks"]
    assert "toy" in got["tables"] and "table1" in got["tables"]
    report = (out / "report" / "toy.md").read_text() if (out / "report" / "toy.md").exists() else \
        (out / "report" / "report.html").read_text()
    assert "Toy exam" in report
