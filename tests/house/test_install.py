"""Installing every extra in one pip run resolves, and fast: a pin that sends pip's resolver backtracking (all
extras took over 15 minutes before the export extra said huggingface-hub<1.0) fails here, not on a user's
machine. pip resolves from scratch (--ignore-installed), as in a fresh virtual environment; nothing is installed."""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from fakes import ROOT

# The resolve's bound, from a fresh venv: 109 s alone on a quiet 2-core machine, more under load; a backtracking
# resolver took over 15 minutes. What the test holds is that pip does not backtrack (it says so when it does).
RESOLVE_LIMIT_S = 600
BACKTRACKING = "pip is looking at multiple versions of"


def _extras() -> list[str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def _resolve(extras: list[str], *held: str) -> tuple[dict[str, str], float]:
    """What ``pip install -e .[extras] *held`` would install from scratch: {distribution: version}, and the seconds
    it took; fails where pip fails, takes too long or backtracks."""
    start = time.perf_counter()
    try:
        # fasteval's own metadata is built with the setuptools at hand (no isolated build environment made for it:
        # 6 s a resolve); what is resolved is its dependencies, from scratch
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                               "--no-build-isolation", "--disable-pip-version-check", "-e",
                               f"{ROOT}[{','.join(extras)}]", *held],
                              capture_output=True, text=True, timeout=RESOLVE_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pip took over {RESOLVE_LIMIT_S} s to resolve fasteval[{','.join(extras)}]: a pin sends its "
                    "resolver backtracking (run the same with -v to see which package)")
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    backtracked = [line for line in proc.stderr.splitlines() if BACKTRACKING in line]
    assert not backtracked, f"pip backtracked (a pin too loose or too tight): {backtracked[:3]}"
    found = re.findall(r"(?:^|\s)([A-Za-z0-9_.-]+)-(\d[^\s]*)", proc.stdout.split("Would install", 1)[1])
    return {name.lower().replace("_", "-"): version for name, version in found}, seconds


def _at_least(version: str, floor: tuple[int, ...]) -> bool:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:len(floor)]) >= floor


def test_every_extra_resolves_in_one_run_within_the_limit_on_the_current_stack():
    """All nine extras at once: transformers >= 5.3 (outside CVE-2026-4372's range), huggingface-hub >= 1.3,
    sentence-transformers 6 and mteb 2.26 (issue 55: the export extra used to hold transformers below 4.58)."""
    names = _extras()
    assert {"export", "report", "train", "ray", "mteb", "gpu", "stores", "static", "test"} <= set(names)
    would, seconds = _resolve(names)
    assert _at_least(would["transformers"], (5, 3)), would["transformers"]
    assert _at_least(would["huggingface-hub"], (1, 3)), would["huggingface-hub"]
    assert _at_least(would["sentence-transformers"], (6,)) and _at_least(would["mteb"], (2, 26))
    assert "optimum-onnx" not in would and "onnxscript" in would and "ray" in would and "turbovec" in would
    assert "model2vec" in would and "tokenlearn-static-model" in would
    assert any(name.startswith("nvidia-cudnn") for name in would), "the gpu extra: cuDNN's wheel, for preload_dlls"
    assert seconds < RESOLVE_LIMIT_S


def test_the_extras_join_an_environment_that_holds_sentence_transformers_6_and_mteb():
    """A model builder's venv with sentence-transformers 6.2 and mteb 2.26 (and the kernels package and typer 0.29
    that come with them): the extras resolve with those versions held, nothing of theirs moves (typer's bound below
    0.29 moved it), and no extra pins transformers below 5.3."""
    held = ("sentence-transformers==6.2.0", "mteb==2.26.24", "kernels", "typer==0.29.2")
    would, _ = _resolve(["export", "mteb", "train", "report"], *held)
    assert would["sentence-transformers"] == "6.2.0" and would["mteb"] == "2.26.24" and would["typer"] == "0.29.2"
    assert _at_least(would["transformers"], (5, 3)) and _at_least(would["huggingface-hub"], (1, 3))
    assert "kernels" in would


def test_the_wheel_carries_the_licence(tmp_path):
    """pyproject says Apache-2.0: the licence's text is in the repository and in the wheel (issue 56, item 12)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=RESOLVE_LIMIT_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import zipfile

    (wheel,) = tmp_path.glob("fasteval-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        licences = [name for name in archive.namelist() if name.endswith("/LICENSE")]
        assert licences, archive.namelist()
        text = archive.read(licences[0]).decode()
    assert text == (ROOT / "LICENSE").read_text() and "Apache License" in text and "Version 2.0" in text
