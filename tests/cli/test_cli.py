"""The command line: cheap start-up, one-line errors with non-zero exits, results written whole."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fakes import ROOT, one_line_error, run_cli




def test_help_imports_nothing_heavy():
    code = ("import sys; from fasteval.cli.main import app; from typer.testing import CliRunner; "
            "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output; "
            "heavy = [m for m in ('numba', 'onnxruntime', 'torch', 'optimum', 'scipy') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"--help imported {out.stdout.strip()}"


def test_version_names_fasteval_python_and_the_onnxruntime_build():
    """`fasteval --version` (was "No such option"): fasteval's version, then the onnxruntime build installed and
    the providers it offers, what a GPU bug report needs."""
    from importlib import metadata

    import onnxruntime

    import fasteval

    proc = run_cli(["--version"])
    assert proc.returncode == 0, proc.stderr
    first, second, third = proc.stdout.splitlines()
    assert first.startswith(f"fasteval {fasteval.__version__} (Python {sys.version_info[0]}.{sys.version_info[1]}.")
    build = next(n for n in ("onnxruntime-gpu", "onnxruntime") if n in {d.metadata["Name"] for d in
                                                                        metadata.distributions()})
    assert second == (f"onnxruntime: {build} {metadata.version(build)}; providers built in: "
                      + ", ".join(onnxruntime.get_available_providers()))
    from fasteval.models.onnx.gpu import driver_version

    cuda = getattr(onnxruntime.capi.build_and_package_info, "cuda_version", None)
    assert third.startswith(f"GPU: NVIDIA driver {driver_version() or 'not found'}; onnxruntime built for "
                            + (f"CUDA {cuda}" if cuda else "the CPU only")), third


def test_missing_model_path(tmp_path):
    proc = run_cli(["sweep", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    one_line_error(proc, "does not exist", "Fix:")
    assert not any((tmp_path / "out").glob("*/results.json"))


def test_unknown_model_name(tmp_path):
    one_line_error(run_cli(["sweep", "--model", "no-such-model", "--out", str(tmp_path)]), "Unknown model")


def test_folder_without_tokenizer(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    one_line_error(run_cli(["sweep", "--model", str(folder), "--out", str(tmp_path / "o")]), "tokenizer.json")


def test_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = run_cli(["sweep", "--model", str(tmp_path), "--out", str(blocker / "sub")])
    one_line_error(proc, "Cannot write", "--out")


def test_pypi_unreachable(tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home"), "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
           "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "PIP_NO_INDEX": "", "PIP_RETRIES": "0",
           "PIP_TIMEOUT": "2", "PIP_CONFIG_FILE": os.devnull}
    proc = run_cli(["sweep", "--out", str(tmp_path / "out"), "--quiet"], env=env)
    one_line_error(proc, "could not download", "Fix:")
    assert not (tmp_path / "home" / "models" / "all-MiniLM-L6-v2").exists(), "nothing half-written in the cache"


def test_sweep_tiny_model_end_to_end(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    out = tmp_path / "results"
    proc = run_cli(["sweep", "--model", str(tiny_st_folder), "--out", str(out), "--provider", "cpu"],
               env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr
    assert "[meter]" in proc.stdout and "Table 1 row" in proc.stdout
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("tiny-bert "))  # its own name, not tiny_bert
    # not a terminal: one line per stage with its time, as each ends
    stages = [ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith("fasteval:   ") and ln.endswith(" s")]
    assert stages == ["embed", "similarity", "exam1", "exam2", "exam3"], proc.stderr
    again = run_cli(["sweep", "--model", str(tiny_st_folder), "--out", str(out), "--provider", "cpu"],
                    env={"FASTEVAL_HOME": str(fasteval_home)})
    assert "skipped" in again.stderr and row in again.stdout.splitlines(), "a rerun of one model prints its row"
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
    proc = run_cli(["models"])
    assert proc.returncode == 0 and "all-MiniLM-L6-v2" in proc.stdout


def test_the_library_prints_nothing():
    """Only cli/ prints: no module of core/ or models/ calls print, writes to sys.stdout / sys.stderr, or echoes;
    they log to the ``fasteval`` logger, and the CLI's one handler turns that into the lines users see."""
    import ast

    from fakes import ROOT

    offenders = []
    for path in sorted([*(ROOT / "core").rglob("*.py"), *(ROOT / "models").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = ast.unparse(func)
            if name in ("print", "typer.echo", "sys.stdout.write", "sys.stderr.write", "click.echo"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not offenders, offenders


def test_library_warnings_are_log_records_and_the_cli_shows_them_as_one_line(tmp_path, caplog):
    import logging

    from fasteval.core.errors import warn_rebuilt

    with caplog.at_level(logging.WARNING, logger="fasteval"):
        warn_rebuilt("cached embeddings", tmp_path / "x.npz", "truncated")
    assert [r.name for r in caplog.records] == ["fasteval"] and "truncated" in caplog.records[0].getMessage()
    warn = "from fasteval.core.errors import warn_rebuilt; warn_rebuilt('cached embeddings', 'x.npz', 'truncated')"
    plain = subprocess.run([sys.executable, "-c", warn], capture_output=True, text=True, check=True)
    assert plain.stderr == plain.stdout == "", "the library itself writes nothing"
    code = "from fasteval.cli.main import _log_to_stderr; _log_to_stderr(); " + warn
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stderr == ("fasteval: warning: cached embeddings x.npz is unreadable (truncated); discarding it "
                           "and rebuilding\n") and proc.stdout == ""


def test_choices_take_common_names_and_typos_get_a_suggestion(tmp_path):
    from fasteval.core.choices import similarity

    assert [similarity(s) for s in ("cosine", "COS", "euclidean", "dot_product")] == ["cos", "cos", "l2", "dot"]
    proc = run_cli(["sweep", "--similarity", "cosin", "--out", str(tmp_path)])
    assert proc.returncode == 2 and "did you mean 'cos'?" in proc.stderr
    one_line_error(run_cli(["sweep", "--model", "all-MiniLM-L6", "--out", str(tmp_path)]),
                   "Unknown model 'all-MiniLM-L6' (did you mean 'all-MiniLM-L6-v2'?)")
    line = one_line_error(run_cli(["sweep", "--exams", "4", "--out", str(tmp_path)]), "Unknown exam 4.")
    assert "[" not in line


def test_help_shows_every_description_whole_and_no_python_types():
    out = run_cli(["--help"], env={"COLUMNS": "80"}).stdout
    commands = [ln for ln in out.splitlines() if ln.startswith("  ") and ln.split()[0] in
                ("sweep", "check", "protocols", "models", "export", "report", "compare", "bench", "drift")]
    assert len(commands) == 9 and not any(ln.rstrip().endswith("...") for ln in commands), commands
    sweep = run_cli(["sweep", "--help"], env={"COLUMNS": "120"}).stdout
    assert "list[str]" not in sweep and "NAME|PATH|URL" in sweep and "<cos|dot|l2>" in sweep


def test_help_names_every_vector_form_rung_and_output_as_they_are(tmp_path):
    """--help said int8 and binary of 7 forms, 5 rungs of the ladder's, int8 alone for --calibration, nothing of
    the diagnosis for --junit, and {reference} as a metavar (issue 66, item 13). The forms' help and the library's
    table are one list."""
    import re

    from fasteval.core import choices
    from fasteval.core.runs.ladder import vector_rungs

    def helped(*command):  # as a person reads it: the wrapping undone
        text = run_cli([*command, "--help"], env={"COLUMNS": "100"}).stdout
        return " ".join(re.sub(r"-\s*\n\s*", "-", text).split())

    sweep, drift = helped("sweep"), helped("drift")
    for form in choices.VECTOR_QUANTIZATIONS:
        assert f"{form} (" in sweep and f"{form} (" in drift, form
    rungs = {r.label for r in vector_rungs(768) if "+" not in r.label or r.label == "256+binary"}
    assert all(r in sweep for r in rungs - {"full"}), rungs
    assert "512/256/128/64" in sweep and "48/96/192 bytes" in sweep
    assert "calibration texts of int8, int4, binary-centred" in sweep and "int8 or binary" not in drift
    assert "the diagnosis with its Fix" in drift
    assert "{reference}" not in drift and "REFERENCE" in drift
    assert "{results_dir}" not in helped("report") and "{model}" not in helped("export")


def test_a_served_model_the_registry_knows_names_its_prompts(tmp_path):
    from fakeserver import FakeServer

    server = FakeServer(model="nomic-embed-text")
    try:
        proc = run_cli(["check", "--model", server.url, "2 km", "2000 m", "2 m"], env={"FASTEVAL_HOME": str(tmp_path)})
        assert proc.returncode == 0, proc.stderr
        assert "nomic-embed-text-v1.5 in the registry" in proc.stderr and "'search_query: '" in proc.stderr
        with_prompt = run_cli(["check", "--model", server.url, "--prompt", "search_query: ", "2 km", "2000 m", "2 m"],
                              env={"FASTEVAL_HOME": str(tmp_path)})
        assert with_prompt.returncode == 0, with_prompt.stderr
        assert "in the registry" not in with_prompt.stderr
    finally:
        server.close()


def test_the_small_edges_of_the_fault_round(tmp_path, tiny_st_folder):
    """Issue 45, item 17: --shard's fix names the user's N; a part of a registry name is met with the names that
    hold it; a folder of model folders says what it holds; `fasteval protocols` points where the format is
    documented; drift shows two texts that differ only in their Unicode form with escapes, and cuts a long text at a
    word's end."""
    import shutil
    import unicodedata

    from fasteval.core.results.drift_findings import pair_text
    from fasteval.core.choices import did_you_mean
    from fasteval.core.errors import cut

    one_line_error(run_cli(["sweep", "--shard", "2/2", "--model", "a"]), "--shard 0/2 ... --shard 1/2", "/2)")
    assert did_you_mean("MiniLM", ["all-MiniLM-L6-v2", "all-mpnet-base-v2", "multi-MiniLM-x"]) == \
        " (did you mean 'all-MiniLM-L6-v2' or 'multi-MiniLM-x'?)"
    assert did_you_mean("all-minilm-l6-v3", ["all-MiniLM-L6-v2"]) == " (did you mean 'all-MiniLM-L6-v2'?)"
    zoo = tmp_path / "zoo"
    for name in ("model-a", "model-b"):
        shutil.copytree(tiny_st_folder, zoo / name)
    one_line_error(run_cli(["sweep", "--model", zoo, "--out", tmp_path / "out"]),
                   "is a folder of 2 model folder(s) (model-a, model-b), not a model", f"--model {zoo / 'model-a'}")
    protocols = run_cli(["protocols"])
    assert "docs/protocols.md" in protocols.stdout and "README" not in protocols.stdout
    nfc = unicodedata.normalize("NFC", "café 2 m")
    nfd = unicodedata.normalize("NFD", nfc)
    shown = pair_text(nfc, nfd)
    assert "caf\\xe9" in shown and "cafe\\u0301" in shown and "(NFC)" in shown and "(NFD)" in shown
    assert pair_text("2 m", "3 m") == "'2 m' ~ '3 m'"
    assert cut("the quick brown fox jumps", 14) == "the quick…" and cut("abcdefghijklmnop", 8) == "abcdefg…"


@pytest.mark.parametrize("protocol", sorted(p.stem for p in (ROOT / "core" / "protocol" / "builtin").glob("*.toml")))
def test_every_built_in_protocols_sweep_ends_cleanly(protocol, tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    """A built-in protocol's sweep prints its Table 1 row and the surface-form baselines' rows and exits 0 (the
    multilingual protocol's baselines have no tau on some cells: the line ended in an internal error after the
    results were written; issue 56, item 9)."""
    proc = run_cli(["sweep", "--model", tiny_st_folder, "--protocol", protocol, "--exams", "1", "--bootstrap", "0",
                    "--provider", "cpu", "--out", tmp_path / "out"], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    surface = [line for line in proc.stdout.splitlines() if line.startswith("  surface form")]
    assert len(surface) == 1 and "byte counts tau " in surface[0] and "None" not in surface[0], proc.stdout[-1500:]
