"""Sweeps: result keys, skip/redo/overwrite, the embedding cache, corrupt files, and a kill mid-sweep."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fasteval.core.errors import InputError
from fasteval.core.io import read_entries_file
from fasteval.core.runs.job import Job
from fasteval.core.plan import embedding_key, result_key
from fasteval.core.runs.sweep import run_sweep

from fakes import TESTS, CountingEncoder, FakeEncoder, one_line_error, run_cli


def make_loader(log: list):
    def loader(name, **options):
        enc = CountingEncoder(name, noise=0.3 + 0.1 * len(name) % 3)
        log.append(enc)
        return enc
    return loader


def test_keys_separate_settings():
    base = {"onnx_sha256": "a", "provider": "cpu", "dtype": "fp32", "similarity": "cos", "exams": [1],
            "protocol": "paper-1"}
    assert result_key(base) == result_key(dict(base))
    for change in ({"provider": "cuda"}, {"dtype": "fp16"}, {"similarity": "l2"}, {"exams": [1, 2]},
                   {"prompt": "query: "}, {"protocol": "paper-2"}, {"pooling": "cls"}, {"normalize": False}):
        assert result_key({**base, **change}) != result_key(base), change
    assert embedding_key({**base, "similarity": "l2"}) == embedding_key(base), "similarity is downstream"
    assert embedding_key({**base, "prompt": "x"}) != embedding_key(base)


def test_sweep_skips_redoes_and_caches(tmp_path):
    log: list = []
    out, home = tmp_path / "out", tmp_path / "home"
    jobs = [Job("org/model-a", exams=(1,)), Job("org/model-b", exams=(1,))]
    first = run_sweep(jobs, out, make_loader(log), cache_root=home)
    assert [o.status for o in first] == ["done", "done"]
    embedded = sum(len(c) for e in log for c in e.calls)
    from fasteval.core.exams import protocol_groups

    distinct = len({t for group in protocol_groups((1,)) for t in group})
    assert embedded == 2 * distinct and len(list((home / "embeddings").glob("*.npz"))) == 2
    again = run_sweep(jobs, out, make_loader(log), cache_root=home)
    assert [o.status for o in again] == ["skipped", "skipped"]
    # Another similarity: a new result folder, but every embedding comes from the cache.
    log.clear()
    l2 = run_sweep([Job("org/model-a", exams=(1,), similarity="l2")], out, make_loader(log), cache_root=home)
    assert l2[0].status == "done" and l2[0].path != first[0].path
    from fasteval.core.cache import CANARIES

    calls = [c for e in log for c in e.calls]
    assert len(calls) == 1 and len(calls[0]) == 1 < CANARIES, "nothing embedded twice: one canary (its dimension)"
    cached = json.loads((l2[0].path / "results.json").read_text())
    fresh = run_sweep([Job("org/model-a", exams=(1,), similarity="l2")], tmp_path / "fresh", make_loader([]),
        cache_root=False)
    assert json.loads((fresh[0].path / "results.json").read_text())["exams"] == cached["exams"], \
        "a cached run gives the numbers of a fresh one"
    # A corrupt result is reported and redone; --overwrite never leaves it; always recomputes.
    (first[1].path / "results.json").write_text("{ truncated")
    assert run_sweep(jobs[1:], out, make_loader(log), overwrite="never", cache_root=home)[0].status == "skipped"
    redo = run_sweep(jobs[1:], out, make_loader(log), cache_root=home)
    assert redo[0].status == "done" and json.loads((redo[0].path / "results.json").read_text())["key"]
    assert run_sweep(jobs[:1], out, make_loader(log), overwrite="always", cache_root=home)[0].status == "done"
    with pytest.raises(InputError):
        run_sweep(jobs, out, make_loader(log), overwrite="sometimes", cache_root=False)


def test_failing_model_does_not_stop_the_sweep(tmp_path):
    from fasteval.core.errors import ModelError

    def loader(name, **options):
        if name == "bad":
            raise ModelError("Unknown model 'bad'.", "pass a folder.")
        return CountingEncoder(name)

    outcomes = run_sweep([Job("bad", exams=(1,)), Job("good", exams=(1,))], tmp_path, loader, cache_root=False)
    assert [o.status for o in outcomes] == ["failed", "done"] and "Unknown model" in outcomes[0].message


def test_models_file(tmp_path):
    f = tmp_path / "models.txt"
    f.write_text("# the paper's baseline\nall-MiniLM-L6-v2\n\n./my-model  # local\n")
    assert read_entries_file(f) == ["all-MiniLM-L6-v2", "./my-model"]
    with pytest.raises(InputError):
        read_entries_file(tmp_path / "missing.txt")


def test_library_api_is_lazy_and_works():
    import fasteval

    code = "import sys, fasteval; print(any(m in sys.modules for m in ('numba', 'onnxruntime', 'torch')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    result = fasteval.evaluate(FakeEncoder(), exams=[1], name="fake")
    cells = result.exams["exam1"].cells
    summary = result.exams["exam1"].summary()
    assert len(cells) == 20
    assert summary["tau"] == pytest.approx(100 * sum(c.tau for c in cells) / 20, abs=1e-12)
    assert summary["pacc"] == pytest.approx(100 * sum(c.pacc for c in cells) / 20, abs=1e-12)
    assert summary["avg"] == pytest.approx((summary["tau"] + summary["pacc"]) / 2, abs=1e-12)


KILL_SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from fakes import CountingEncoder
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep

def loader(name, **options):
    if name == "slow":
        Path({flag!r}).write_text("started")
        time.sleep(60)  # killed here, mid-model
    return CountingEncoder(name)

run_sweep([Job("first", exams=(1,)), Job("slow", exams=(1,))], Path({out!r}), loader, cache_root=False)
"""


def test_kill_mid_sweep_then_resume(tmp_path):
    out, flag = tmp_path / "out", tmp_path / "flag"
    script = KILL_SCRIPT.format(tests=str(TESTS), flag=str(flag), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    deadline = time.time() + 120
    while not flag.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert flag.exists(), "the second model never started"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # A half-written staging folder, as a kill during a write would leave one.
    (out / "slow").mkdir(parents=True, exist_ok=True)
    (out / "slow" / ".x.staging-abc").mkdir()
    (out / "slow" / ".x.staging-abc" / "results.json").write_text("{")
    finished = list(out.glob("first/*/results.json"))
    assert len(finished) == 1
    before = finished[0].stat().st_mtime_ns
    log: list = []
    outcomes = run_sweep([Job("first", exams=(1,)), Job("slow", exams=(1,))], out, make_loader(log), cache_root=False)
    assert [o.status for o in outcomes] == ["skipped", "done"]
    assert finished[0].stat().st_mtime_ns == before, "the finished model was not recomputed"
    assert not list(out.glob("*/.*staging*")), "stale staging removed, never read as a result"


def test_cli_two_models_resume(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    import shutil

    second = tmp_path / "tiny-two"
    shutil.copytree(tiny_st_folder, second)
    env = {**os.environ, "FASTEVAL_HOME": str(fasteval_home)}
    cmd = [sys.executable, "-c", "from fasteval.cli.main import main; main()", "sweep", "--model",
           str(tiny_st_folder), "--model", str(second), "--out", str(tmp_path / "r"), "--exams", "1,2",
           "--provider", "cpu", "-q"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("Results written") == 2 and "status" in first.stdout
    # the rerun skips both from their hashes: no session started, no tokenizer read
    probe = ("import atexit, sys; atexit.register(lambda: print('loaded:', [m for m in ('onnxruntime', 'tokenizers') "
             "if m in sys.modules], file=sys.stderr)); from fasteval.cli.main import main; main()")
    again = subprocess.run([cmd[0], "-c", probe, *cmd[3:-1]], capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and again.stderr.count("skipped") == 2, again.stderr
    assert "loaded: []" in again.stderr, again.stderr


def test_a_models_file_keeps_a_served_models_name_after_the_hash(tmp_path):
    from fasteval.core.io import read_entries_file

    f = tmp_path / "models.txt"
    f.write_text("# served and local\nhttp://127.0.0.1:8080/v1#my-model  # the deployment\n"
                 "all-MiniLM-L6-v2#not a comment?\n./folder # a comment\n")
    assert read_entries_file(f) == ["http://127.0.0.1:8080/v1#my-model", "all-MiniLM-L6-v2#not a comment?", "./folder"]


def test_a_served_run_is_labelled_by_where_it_is_served():
    from fasteval.core.report.entries import _run_words
    from fasteval.core.results.model import ModelResult

    served = ModelResult("m", "m", {"deployment": {"url": "http://127.0.0.1:7997", "model": "m"}}, "paper-1", "0.1.0")
    local = ModelResult("m", "m", {"onnx_sha256": "x"}, "paper-1", "0.1.0")
    assert _run_words(served, [served, local]) == ["served @127.0.0.1:7997"]
    assert _run_words(local, [served, local]) == [], "a served run has no local settings to differ in"


def test_a_sweep_with_its_bootstrap_loads_no_kernel(tiny_st_folder, fasteval_home, tmp_path):
    """A first sweep's "embed" line once included numba compiling the kernels its bootstrap needed (14.97 s against
    1.60 s warm), and a cold 2-core sweep paid 0.5-1.7 s loading them: the paper's bootstrap now runs on numpy (its
    resamples by their draws' counts, equal to the kernels to the bit: tests/kernels/test_kernels_small.py), so a
    sweep with its intervals imports no numba and compiles nothing, and its stage lines are the steps alone."""
    env = {**os.environ, "FASTEVAL_HOME": str(fasteval_home), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    probe = ("import atexit, sys; atexit.register(lambda: print('numba imported:', 'numba' in sys.modules, "
             "file=sys.stderr)); from fasteval.cli.main import main; main()")
    cmd = [sys.executable, "-c", probe, "sweep", "--model", str(tiny_st_folder), "--out", str(tmp_path / "r"),
           "--exams", "1", "--provider", "cpu", "--bootstrap", "200"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "numba imported: False" in proc.stderr, proc.stderr
    assert not (tmp_path / "numba").exists() or not any((tmp_path / "numba").rglob("*.nbi")), "nothing compiled"
    stages = [line for line in proc.stderr.splitlines() if line.startswith("fasteval:   ")]
    assert stages[0].startswith("fasteval:   embed ") and "one-time" not in proc.stderr, stages
    result = json.loads(next((tmp_path / "r").glob("*/*/results.json")).read_text())
    summary = result["exams"]["exam1"]["summary"]
    assert summary["tau_ci_low"] <= summary["tau"] <= summary["tau_ci_high"], summary


def test_shards_are_a_fixed_share_and_merge_by_copying_folders(tmp_path):
    """--shard I/N: every model whose position is I modulo N; three shards run apart write exactly the folders and
    results the whole sweep writes, so copying their --out folders together is the whole sweep."""
    import shutil

    from fasteval.core.runs.sweep import shard_of

    names = [f"model-{k}" for k in range(5)]
    shares = [shard_of(names, f"{i}/3") for i in range(3)]
    assert shares == [["model-0", "model-3"], ["model-1", "model-4"], ["model-2"]]
    assert shard_of(names, " 4 / 5 ") == ["model-4"] and shard_of(names[:2], "4/5") == []
    for bad in ("3/3", "1/0", "-1/3", "a/b", "1", "1/2/3"):
        with pytest.raises(InputError, match="is not I/N"):
            shard_of(names, bad)

    def loader(name, **options):
        return CountingEncoder(name, noise=0.1 + 0.1 * int(name.split("-")[1]))

    run_sweep([Job(n, exams=(1, 2), bootstrap=0) for n in names], tmp_path / "whole", loader, cache_root=False)
    merged = tmp_path / "merged"
    for i in range(3):
        out = tmp_path / f"shard-{i}"
        run_sweep([Job(n, exams=(1, 2), bootstrap=0) for n in shard_of(names, f"{i}/3")], out, loader, cache_root=False)
        shutil.copytree(out, merged, dirs_exist_ok=True)

    def results(root):
        return {str(p.relative_to(root)): {k: v for k, v in json.loads(p.read_text()).items() if k != "timings"}
                for p in root.rglob("results.json")}

    whole = results(tmp_path / "whole")
    assert len(whole) == 5 and results(merged) == whole


def test_cli_shard_bad_input_and_an_empty_share(tmp_path):
    bad = run_cli(["sweep", "--shard", "3/3", "--model", "a", "--out", tmp_path / "o"])
    assert bad.returncode == 2
    one_line_error(bad, "--shard '3/3' is not I/N", "SLURM_ARRAY_TASK_ID")
    empty = run_cli(["sweep", "--shard", "4/5", "--model", tmp_path / "no-such-a", "--model", tmp_path / "no-such-b",
                     "--out", tmp_path / "o"])
    assert empty.returncode == 0 and "shard 4/5: 0 of the 2 models" in empty.stderr, empty.stderr


class _Watched(CountingEncoder):
    """A CountingEncoder that counts how often its ``info`` is read, and whose provider settles as it runs (a
    GPU that fell back to the CPU) when ``falls_back``."""

    def __init__(self, name: str, falls_back: bool = False):
        self.reads, self.ran = 0, False
        super().__init__(name)  # sets info: kept as what it says, with the provider it is offered
        self._info["provider"] = "cuda" if falls_back else "cpu"

    @property
    def info(self):
        self.reads += 1
        return dict(self._info)

    @info.setter
    def info(self, value):
        self._info = dict(value)

    def encode(self, texts):
        self.ran = True
        return super().encode(texts)

    def settled(self):
        return {"provider": "cpu" if self.ran else self._info["provider"]}


def test_a_job_is_planned_once_its_info_read_once(tmp_path):
    """A sweep's job reads what its encoder says it is once (the plan), whether it runs or is skipped."""
    made = []

    def loader(name, **options):
        made.append(_Watched(name))
        return made[-1]

    first = run_sweep([Job("m", exams=(1, 2), bootstrap=0)], tmp_path, loader, cache_root=False)[0]
    again = run_sweep([Job("m", exams=(1, 2), bootstrap=0)], tmp_path, loader, cache_root=False)[0]
    assert (first.status, again.status) == ("done", "skipped")
    assert [e.reads for e in made] == [1, 1]


def test_a_setting_that_settles_as_it_runs_keys_the_result_with_the_plans_similarity(tmp_path):
    """A provider that settles only as the encoder runs (asked cuda, ran on cpu): the result is written under
    the settings it was made with, its similarity the plan's canonical name (the job asked "cosine"), its folder
    its key, and its info still read once."""
    from fasteval.core.results.read import read_json

    made = []

    def loader(name, **options):
        made.append(_Watched(name, falls_back=True))
        return made[-1]

    outcome = run_sweep([Job("m", exams=(1,), similarity="cosine", bootstrap=0)], tmp_path, loader, cache_root=False)[0]
    settings = read_json(outcome.path / "results.json")["settings"]
    assert settings["provider"] == "cpu" and settings["similarity"] == "cos"
    assert outcome.path.name == settings["key"] == result_key({k: v for k, v in settings.items() if k != "key"})
    assert made[0].reads == 1
