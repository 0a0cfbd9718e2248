"""Real embedding servers for the tests and the benchmarks: infinity serving a model folder on 127.0.0.1 and a
free port, from its own virtual environment (infinity pins numpy < 2, sentence-transformers < 4 and typer < 0.13,
so it cannot share the project's), started and stopped by its process id."""
from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

INFINITY = "infinity-emb[server,torch]==0.0.78"
INFINITY_VENV = Path(os.environ.get("FASTEVAL_TEST_INFINITY_VENV",
                                    Path.home() / ".cache" / "fasteval-tests" / "infinity-0.0.78"))
SERVED_NAME = "all-MiniLM-L6-v2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def infinity_executable() -> Path:
    """infinity_emb in its own virtual environment, built once (pip's cache makes a rebuild quick)."""
    exe = INFINITY_VENV / "bin" / "infinity_emb"
    done = INFINITY_VENV / ".complete"
    if done.exists() and exe.exists():
        return exe
    shutil.rmtree(INFINITY_VENV, ignore_errors=True)
    INFINITY_VENV.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(INFINITY_VENV)], check=True)
    # torch 2.13.0 is the CPU build on our machines (as the export extra pins it); infinity's own pins apart.
    proc = subprocess.run([str(INFINITY_VENV / "bin" / "pip"), "install", "-q", "torch==2.13.0", INFINITY],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"could not install {INFINITY} into {INFINITY_VENV}: {proc.stderr[-2000:]}")
    done.write_text(INFINITY)
    return exe


def minilm_folder_in(home: str | Path) -> Path:
    """The default model's folder (all-MiniLM-L6-v2 from its PyPI package), cached under ``home``."""
    from fasteval.models.registry import DEFAULT_MODEL, source_folder

    saved = os.environ.get("FASTEVAL_HOME")
    os.environ["FASTEVAL_HOME"] = str(home)
    try:
        return Path(source_folder(DEFAULT_MODEL)[1])
    finally:
        if saved is None:
            os.environ.pop("FASTEVAL_HOME", None)
        else:
            os.environ["FASTEVAL_HOME"] = saved


@contextlib.contextmanager
def start_infinity(folder: Path, workdir: Path, url_prefix: str = "") -> Iterator[str]:
    """infinity serving ``folder`` as SERVED_NAME; yields its base URL (``http://127.0.0.1:PORT`` + url_prefix)."""
    exe = infinity_executable()
    port = free_port()
    log = Path(workdir) / "infinity.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    env.pop("FASTEVAL_API_KEY", None)
    args = [str(exe), "v2", "--model-id", str(folder), "--served-model-name", SERVED_NAME, "--host", "127.0.0.1",
            "--port", str(port), "--engine", "torch", "--device", "cpu", "--no-model-warmup"]
    if url_prefix:
        args += ["--url-prefix", url_prefix]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    try:
        deadline = time.time() + 300
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"infinity exited with {proc.returncode}: {log.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", f"{url_prefix}/models")
                if conn.getresponse().status == 200:
                    break
            if time.time() > deadline:
                raise RuntimeError(f"infinity did not answer within 300 s: {log.read_text()[-3000:]}")
            time.sleep(1)
        yield f"http://127.0.0.1:{port}{url_prefix}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
