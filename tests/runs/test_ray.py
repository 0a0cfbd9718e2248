"""The Ray executor on a local two-CPU cluster: the local executor's folders and numbers, resume, failures."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fasteval.core.errors import InputError, ModelError
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep

from fakes import TESTS, CountingEncoder
# One Ray cluster at a time on this machine: under pytest-xdist both files run in one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("ray")

# Numbers that measure time, not the model: the only fields allowed to differ between two runs.
TIMING_FIELDS = ("timings", "evaluation_time")
JOBS = [Job("org/model-a", exams=(1, 2, 3)), Job("org/model-b", exams=(1, 2, 3))]


def loader(name, **options):
    """Module-level, so Ray pickles it by reference; workers import this module (its folder on PYTHONPATH)."""
    if name == "bad":
        raise ModelError("Unknown model 'bad'.", "pass a folder.")
    if name == "buggy":
        raise ValueError("a bug, not a bad input")
    return CountingEncoder(name, noise=0.2 + 0.05 * (sum(map(ord, name)) % 5))


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="the Ray executor needs Ray (pip install 'fasteval[ray]')")
    here = str(Path(__file__).resolve().parent)  # this module (the loader) and tests/ (fakes)
    path = os.pathsep.join(p for p in (here, str(TESTS), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield ray
    finally:
        ray.shutdown()


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def folder_contents(root: Path) -> dict[str, object]:
    """Every file under ``root`` by relative path: JSON parsed (timings dropped), anything else as text."""
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        files[str(path.relative_to(root))] = without_timings(json.loads(text)) if path.suffix == ".json" else text
    return files


def test_same_folders_and_numbers_as_the_local_executor(ray_cluster, tmp_path):
    from fasteval.core.runs.ray_executor import run_sweep_ray

    local = run_sweep(JOBS, tmp_path / "local", loader, cache_root=tmp_path / "home-local")
    remote = run_sweep_ray(JOBS, tmp_path / "ray", loader, cache_root=tmp_path / "home-ray")
    assert ray_cluster.is_initialized(), "a cluster the caller started is left running"
    assert [o.status for o in remote] == ["done", "done"]
    assert [o.model for o in remote] == [o.model for o in local], "outcomes in job order"
    assert all(o.result is None and o.path.is_dir() for o in remote)
    assert [o.path.relative_to(tmp_path / "ray") for o in remote] == \
        [o.path.relative_to(tmp_path / "local") for o in local], "same model ids and settings keys"
    ours, theirs = folder_contents(tmp_path / "ray"), folder_contents(tmp_path / "local")
    assert sorted(ours) == sorted(theirs) and len(ours) >= 2 * 8
    for name in theirs:
        assert ours[name] == theirs[name], name
    assert len(list((tmp_path / "home-ray" / "embeddings").glob("*.npz"))) == 2, "the embedding cache is used"


def test_resume_skips_finished_models_and_cleans_staging(ray_cluster, tmp_path):
    from fasteval.core.runs.ray_executor import run_sweep_ray

    out = tmp_path / "out"
    first = run_sweep_ray(JOBS[:1], out, loader)
    assert [o.status for o in first] == ["done"]
    written = first[0].path / "results.json"
    before = written.stat().st_mtime_ns
    stale = out / "model_b" / ".x.staging-abc"  # what a killed write leaves behind
    stale.mkdir(parents=True)
    (stale / "results.json").write_text("{")
    seen = []
    again = run_sweep_ray(JOBS, out, loader, on_model=seen.append)
    assert [o.status for o in again] == ["skipped", "done"]
    assert sorted(o.model for o in seen) == sorted(o.model for o in again)
    assert written.stat().st_mtime_ns == before, "the finished model was not recomputed"
    assert not list(out.glob("*/.*staging*")), "stale staging removed, never read as a result"
    third = run_sweep_ray(JOBS, out, loader)
    assert [o.status for o in third] == ["skipped", "skipped"]
    assert [o.path for o in third] == [o.path for o in again]


def test_failing_model_does_not_stop_the_sweep(ray_cluster, tmp_path):
    from fasteval.core.runs.ray_executor import run_sweep_ray

    outcomes = run_sweep_ray([Job("bad", exams=(1,)), Job("good", exams=(1,))], tmp_path, loader)
    assert [o.status for o in outcomes] == ["failed", "done"]
    assert "Unknown model" in outcomes[0].message and outcomes[0].path is None
    with pytest.raises(ValueError, match="a bug"):  # raised, as the local executor raises it
        run_sweep_ray([Job("buggy", exams=(1,))], tmp_path, loader)
    with pytest.raises(InputError, match="overwrite"):
        run_sweep_ray(JOBS, tmp_path, loader, overwrite="sometimes")
    more = ray_cluster.cluster_resources().get("GPU", 0) + 1
    with pytest.raises(InputError, match="GPU"):
        run_sweep_ray(JOBS, tmp_path, loader, num_gpus_per_task=more)


def test_a_gpu_per_task_when_the_cluster_has_gpus():
    from fasteval.core.runs.ray_executor import _gpus_per_task

    class FakeRay:
        def __init__(self, gpus):
            self.resources = {"CPU": 8.0, "GPU": gpus} if gpus else {"CPU": 8.0}

        def cluster_resources(self):
            return self.resources

    assert _gpus_per_task(FakeRay(2), Job("a"), None) == 1
    assert _gpus_per_task(FakeRay(0), Job("a"), None) == 0
    assert _gpus_per_task(FakeRay(2), Job("a", {"provider": "cpu"}), None) == 0, "a CPU job holds no GPU"
    assert _gpus_per_task(FakeRay(2), Job("a"), 0.5) == 0.5, "an explicit share wins"


def test_without_ray_one_line_error(monkeypatch, tmp_path):
    from fasteval.core.runs.ray_executor import run_sweep_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(InputError, match=r"needs Ray.*pip install 'fasteval\[ray\]'"):
        run_sweep_ray(JOBS, tmp_path, loader)


def test_cli_sweep_on_the_cluster(ray_cluster, tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    """``fasteval sweep --executor ray`` as a user runs it, connected to the test's cluster."""
    import shutil

    second = tmp_path / "tiny-two"
    shutil.copytree(tiny_st_folder, second)
    address = ray_cluster.get_runtime_context().gcs_address
    env = {**os.environ, "FASTEVAL_HOME": str(fasteval_home)}
    cmd = [sys.executable, "-c", "from fasteval.cli.main import main; main()", "sweep", "--executor", "ray",
           "--address", address, "--model", str(tiny_st_folder), "--model", str(second), "--out",
           str(tmp_path / "r"), "--exams", "1", "--provider", "cpu", "-q"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    table = run.stdout.split("status", 1)[-1]  # the summary table, read back from the result folders
    assert table.count(" done ") == 2, run.stdout
    assert len(list((tmp_path / "r").glob("*/*/results.json"))) == 2
    assert ray_cluster.is_initialized(), "the CLI only disconnected from a cluster it did not start"
