"""The Ray executor on a real two-node cluster on 127.0.0.1 whose worker does not share the driver's disk.

The head (``ray start --head``, no CPUs: it only schedules) and a worker node (``ray start --address``, its own
temporary folder and its own ``FASTEVAL_HOME``) run as separate processes; the worker node runs in a mount
namespace where the driver's folder (its ``--out`` and its ``FASTEVAL_HOME``) is an empty tmpfs: whatever the
worker writes there, the driver never sees. So results appear under the driver's ``--out`` only if the tasks
return them and the driver writes them, and the caches fill on the worker's disk only. Every process started
here is stopped by its process id (never ``ray stop``, which would stop any Ray on this machine). The driver of
each sweep is a fresh process, as a user's is (``drive``): a test process that already held another Ray cluster
cannot fetch this one's objects.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep

from fakes import TESTS, CountingEncoder
from servers import free_port

# One Ray cluster at a time on this machine: under pytest-xdist both files run in one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("ray")

HERE = Path(__file__).resolve().parent
RAY = Path(sys.executable).with_name("ray")
JOBS = [Job("org/model-a", exams=(1, 2)), Job("org/model-b", exams=(1, 2))]


def loader(name, **options):
    """Module-level (Ray pickles it by reference; the worker imports this module). "slow/..." models write
    their worker's pid to SLOW_MARK and wait there the first time, so a test can kill that worker mid-task."""
    if name.startswith("slow/"):
        return _Slow(name)
    return CountingEncoder(name, noise=0.2 + 0.05 * (sum(map(ord, name)) % 5))


class _Slow(CountingEncoder):
    def encode(self, texts):
        mark = Path(os.environ["SLOW_MARK"])
        if not mark.exists():  # the first attempt: say where it runs, then wait to be killed
            mark.write_text(str(os.getpid()))
            time.sleep(120)
        return super().encode(texts)


def _namespaces_work() -> bool:
    try:
        return subprocess.run(["unshare", "-Urm", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _ours(root: Path) -> list[int]:
    """The pids of the processes whose command line names ``root`` (the Ray processes of our nodes)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(root).encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("ray", reason="the Ray executor needs Ray (pip install 'fasteval[ray]')")
    if not RAY.exists() or shutil.which("unshare") is None or not _namespaces_work():
        pytest.skip("needs the ray command and unshare -Urm (a mount namespace for the worker node)")
    root = Path(tempfile.mkdtemp(prefix="fr", dir="/tmp"))  # short: Ray's socket paths must stay under 108 bytes
    driver, node_home, mark = root / "driver", root / "node-home", root / "slow-mark"
    (driver / "home").mkdir(parents=True)
    node_home.mkdir()
    port = free_port()
    path = os.pathsep.join(p for p in (str(HERE), str(TESTS), os.environ.get("PYTHONPATH")) if p)
    # RAY_AUTH_MODE: `ray start --head` turns token authentication on by default, which a node joining by address
    # and the driver then need configured too; a cluster on 127.0.0.1 for one test opts out, as Ray's docs say
    env = {**os.environ, "PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "SLOW_MARK": str(mark)}
    common = ["--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        head = [str(RAY), "start", "--head", "--port", str(port), "--num-cpus", "0", "--include-dashboard", "false",
                "--temp-dir", str(root / "head"), *common]
        subprocess.run(head, env={**env, "FASTEVAL_HOME": str(driver / "home")}, check=True, capture_output=True,
                       timeout=180)
        worker = (f"mount -t tmpfs none {driver} && exec {RAY} start --address 127.0.0.1:{port} --num-cpus 1 "
                  f"--temp-dir {root / 'node'} {' '.join(common)}")
        subprocess.run(["unshare", "-Urm", "sh", "-c", worker], env={**env, "FASTEVAL_HOME": str(node_home)},
                       check=True, capture_output=True, timeout=180)
        yield {"address": f"127.0.0.1:{port}", "driver": driver, "node_home": node_home, "mark": mark, "root": root}
    finally:
        for pid in _ours(root):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(root, ignore_errors=True)


_DRIVER = r"""
import json, sys
from pathlib import Path
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep
from test_ray_nodes import loader
spec = json.loads(sys.argv[1])
jobs = [Job(m, exams=tuple(spec["exams"]), **({"bootstrap": spec["bootstrap"]} if "bootstrap" in spec else {}))
        for m in spec["models"]]
memory = spec.get("memory") or {}
outcomes = run_sweep(jobs, Path(spec["out"]), loader, executor="ray", address=spec["address"],
                     memory_of=(lambda job: memory.get(job.model)) if memory else None)
print(json.dumps([{"status": o.status, "message": o.message, "path": str(o.path) if o.path else None}
                  for o in outcomes]))
"""


def drive(cluster, models: list[str], out: Path, **spec) -> list[dict]:
    """A sweep on the cluster from a fresh driver process: each model's status, message and folder."""
    path = os.pathsep.join(p for p in (str(HERE), str(TESTS), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "SLOW_MARK": str(cluster["mark"])}
    arg = json.dumps({"models": models, "out": str(out), "address": cluster["address"], "exams": [1, 2], **spec})
    proc = subprocess.run([sys.executable, "-c", _DRIVER, arg], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def contents(root: Path) -> dict[str, object]:
    """Every file under ``root`` by relative path, JSON parsed with its timings left out."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("timings", "evaluation_time")}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return {str(p.relative_to(root)): strip(json.loads(p.read_text())) if p.suffix == ".json" else p.read_text()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_results_come_back_to_the_driver_and_caches_stay_on_the_node(cluster, tmp_path):
    out = cluster["driver"] / "out"
    outcomes = drive(cluster, [j.model for j in JOBS], out)
    assert [o["status"] for o in outcomes] == ["done", "done"], [o["message"] for o in outcomes]
    local = run_sweep(JOBS, tmp_path / "local", loader, cache_root=False)
    assert [Path(o["path"]).relative_to(out) for o in outcomes] == \
        [o.path.relative_to(tmp_path / "local") for o in local]
    assert contents(out) == contents(tmp_path / "local"), "the local executor's folders, keys and numbers"
    assert len(list((cluster["node_home"] / "embeddings").glob("*.npz"))) == 2, "the node's own embedding cache"
    assert not list((cluster["driver"] / "home").rglob("*")), "nothing cached on the head's disk"
    again = drive(cluster, [j.model for j in JOBS], out)
    assert [o["status"] for o in again] == ["skipped", "skipped"], "the driver's folders decide what is done"


def test_a_worker_killed_mid_task_leaves_nothing_and_the_sweep_finishes(cluster):
    out = cluster["driver"] / "killed"
    killer = subprocess.Popen([sys.executable, "-c", (
        "import os, signal, sys, time\nfrom pathlib import Path\nmark = Path(sys.argv[1])\n"
        "for _ in range(1200):\n    time.sleep(0.1)\n    if mark.exists() and mark.read_text():\n"
        "        os.kill(int(mark.read_text()), signal.SIGKILL)\n        break\n"), str(cluster["mark"])])
    try:
        outcomes = drive(cluster, ["slow/model"], out, exams=[1], bootstrap=0)
    finally:
        killer.wait(timeout=180)
    assert cluster["mark"].exists(), "the first attempt ran on the worker and was killed"
    if outcomes[0]["status"] == "failed":  # Ray gave up on the task: nothing was written, and a rerun computes it
        assert not list(out.glob("*/*/results.json"))
        outcomes = drive(cluster, ["slow/model"], out, exams=[1], bootstrap=0)
    assert [o["status"] for o in outcomes] == ["done"], outcomes[0]["message"]
    assert len(list(out.glob("*/*/results.json"))) == 1 and not list(out.glob("*/.*staging*"))


def test_a_task_asks_ray_for_its_models_memory(cluster):
    """A model that needs more memory than the largest node is failed at once, in one line (Ray would wait for such
    a node for ever); one that fits runs with its memory asked of Ray."""
    out = cluster["driver"] / "memory"
    asked = {"org/model-a": 64 * 1024 ** 2, "org/model-b": 1024 ** 5}  # 64 MiB; a petabyte
    outcomes = drive(cluster, list(asked), out, memory=asked)
    assert [o["status"] for o in outcomes] == ["done", "failed"]
    assert "needs about 1048576.0 GB of memory; the largest node of the cluster has" in outcomes[1]["message"]
    assert len(list(out.glob("*/*/results.json"))) == 1
