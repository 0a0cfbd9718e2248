"""Results: every exam's result survives result -> files -> read back; a results.json written by an earlier
version still loads, keeps its key, and a rerun today gives its numbers and its files."""
from __future__ import annotations

import dataclasses
import gzip
import json
import math

import pytest

from fasteval.core.exams import registry
from fasteval.core.results.files import result_files
from fasteval.core.results.model import RESULT_FILE
from fasteval.core.results.read import load_result

from fakes import TESTS, CountingEncoder, FakeEncoder

# written by fasteval 0.1.0 (commit d4045f9) with CountingEncoder("golden-fake")
GOLDEN = TESTS / "data" / "golden-0.1.0"
GOLDEN_KEY = "d6d3f53837a8a3e2"


def same(a, b) -> bool:
    """Equal dataclass trees, NaN equal to NaN (a JSON null read back as NaN)."""
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@pytest.fixture(scope="module")
def result():
    from fasteval import evaluate

    return evaluate(FakeEncoder(), exams=(1, 2, 3, "conversion"), name="org/round-trip", bootstrap=200,
                    normalize_quantities=True)


@pytest.mark.parametrize("key", [e.key for e in registry()])
def test_every_exam_round_trips(result, key, tmp_path):
    """result -> results.json -> the same typed result, field by field (every registered exam)."""
    (tmp_path / RESULT_FILE).write_text(result_files(result, key="k")[RESULT_FILE])
    back = load_result(tmp_path / RESULT_FILE)
    assert key in result.exams and same(back.exams[key], result.exams[key]), key
    assert back.exams[key].summary().keys() == result.exams[key].summary().keys()


def test_every_exam_writes_its_files(result):
    files = result_files(result, key="k")
    for e in registry():
        mine = e.files(result.exams[e.key], result.model_id)
        assert mine and all(files[name] == text for name, text in mine.items()), e.key
        assert f"mteb/{e.mteb_task}.json" in files
        main = json.loads(files[f"mteb/{e.mteb_task}.json"])["scores"]["test"][0]["main_score"]
        assert main == pytest.approx(e.mteb_scores(result.exams[e.key])[e.main_score], abs=1e-6)


@pytest.fixture(scope="module")
def golden_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("golden") / RESULT_FILE
    path.write_bytes(gzip.decompress((GOLDEN / "results.json.gz").read_bytes()))
    return path


def test_a_result_of_an_earlier_version_loads_and_keeps_its_key(golden_file):
    from fasteval.core.plan import result_key

    data = json.loads(golden_file.read_text())
    assert data["key"] == GOLDEN_KEY and data["fasteval_version"] == "0.1.0"
    old = load_result(golden_file)
    assert set(old.exams) == {"exam1", "exam2", "exam3", "conversion"}
    assert result_key({k: v for k, v in old.settings.items() if k != "key"}) == GOLDEN_KEY
    s = old.exams["exam1"].summary()
    assert s["tau_display"] == data["exams"]["exam1"]["summary"]["tau_display"]
    assert s["random_tau"] == pytest.approx(8.914, abs=5e-4), "the baseline is now exact (it was simulated: 8.83)"


def test_a_rerun_today_gives_the_earlier_versions_numbers_and_files(golden_file, tmp_path):
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    def loader(name, **options):
        return CountingEncoder(name)

    outcome = run_sweep([Job("golden-fake", exams=(1, 2, 3, "conversion"), bootstrap=200)], tmp_path, loader,
        cache_root=False)[0]
    assert outcome.path.name == GOLDEN_KEY, "the same settings key the same folder"
    old, new = load_result(golden_file), load_result(outcome.path / RESULT_FILE)
    for key in old.exams:  # every number the old version stored; new fields (texts, labels) may be added
        for f in dataclasses.fields(type(old.exams[key])):
            before, after = getattr(old.exams[key], f.name), getattr(new.exams[key], f.name)
            if f.name in ("cells", "rows"):
                for b, a in zip(before, after):
                    for g in dataclasses.fields(b):
                        if getattr(b, g.name) is not None:
                            assert same(getattr(b, g.name), getattr(a, g.name)), (key, g.name)
            elif before not in ({}, [], None):
                assert same(before, after), (key, f.name)
    for csv in sorted(GOLDEN.glob("*.csv")):
        assert (outcome.path / csv.name).read_text() == csv.read_text(), csv.name
    for task in sorted((GOLDEN / "mteb").glob("PhysScore*.json")):
        a, b = json.loads((outcome.path / "mteb" / task.name).read_text()), json.loads(task.read_text())
        a.pop("evaluation_time"), b.pop("evaluation_time")
        assert a == b, task.name
