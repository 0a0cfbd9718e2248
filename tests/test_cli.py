"""The command line: cheap start-up, one-line errors with non-zero exits, results written whole."""
from __future__ import annotations

import json
import os
import subprocess
import sys


from fakes import FASTEVAL, one_line_error  # noqa: E402


def run(args, env=None, cwd=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(FASTEVAL + list(args), capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=600)


def test_help_imports_nothing_heavy():
    code = ("import sys; from fasteval.cli.main import app; from typer.testing import CliRunner; "
            "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output; "
            "heavy = [m for m in ('numba', 'onnxruntime', 'torch', 'optimum', 'scipy') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"--help imported {out.stdout.strip()}"


def test_missing_model_path(tmp_path):
    proc = run(["sweep", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    one_line_error(proc, "does not exist", "Fix:")
    assert not any((tmp_path / "out").glob("*/results.json"))


def test_unknown_model_name(tmp_path):
    one_line_error(run(["sweep", "--model", "no-such-model", "--out", str(tmp_path)]), "Unknown model")


def test_folder_without_tokenizer(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    one_line_error(run(["sweep", "--model", str(folder), "--out", str(tmp_path / "o")]), "tokenizer.json")


def test_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = run(["sweep", "--model", str(tmp_path), "--out", str(blocker / "sub")])
    one_line_error(proc, "Cannot write", "--out")


def test_pypi_unreachable(tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home"), "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
           "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "PIP_NO_INDEX": "", "PIP_RETRIES": "0",
           "PIP_TIMEOUT": "2", "PIP_CONFIG_FILE": os.devnull}
    proc = run(["sweep", "--out", str(tmp_path / "out"), "--quiet"], env=env)
    one_line_error(proc, "could not download", "Fix:")
    assert not (tmp_path / "home" / "models" / "all-MiniLM-L6-v2").exists(), "nothing half-written in the cache"


def test_sweep_tiny_model_end_to_end(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    out = tmp_path / "results"
    proc = run(["sweep", "--model", str(tiny_st_folder), "--out", str(out), "--provider", "cpu"],
               env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr
    assert "[meter]" in proc.stdout and "Table 1 row" in proc.stdout
    (folder,) = [p.parent for p in out.glob("tiny_bert/*/results.json")]
    data = json.loads((folder / "results.json").read_text())
    assert data["key"] == folder.name and data["settings"]["source_sha256"]
    cells = data["exams"]["exam1"]["cells"]
    assert len(cells) == 20 and data["settings"]["provider"] == "cpu" and data["settings"]["similarity"] == "cos"
    assert data["protocol"] == "paper-1"
    assert (folder / "tiny_bert_benchmark_full.csv").read_text().count("\n") == 21
    assert not list(out.rglob(".*")), "no staging folders left"
    assert len(data["exams"]) == 3 and (folder / "tiny_bert_lexical.csv").exists()


def test_models_lists_registry():
    proc = run(["models"])
    assert proc.returncode == 0 and "all-MiniLM-L6-v2" in proc.stdout
