"""`fasteval bench` and the benchmark peers: they run and write valid JSON on a tiny model. No speed is asserted."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from fasteval.core.runs import bench as B
from fasteval.core.errors import InputError

from fakes import ROOT, one_line_error, run_cli



def cuda_usable() -> tuple[bool, str]:
    """(usable, reason): onnxruntime's CUDA provider and an NVIDIA driver."""
    import ctypes

    try:
        import onnxruntime as ort
    except ImportError:
        return False, "onnxruntime is not installed"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return False, "this onnxruntime build has no CUDA provider"
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False, "no NVIDIA driver (libcuda.so.1 does not load)"
    return True, ""


CUDA, NO_CUDA_REASON = cuda_usable()
needs_cuda = pytest.mark.skipif(not CUDA, reason=f"needs a CUDA GPU: {NO_CUDA_REASON}")


# ---------------------------------------------------------------------------------------------- texts
def test_paper_texts_are_the_distinct_exam_texts():
    from fasteval.core import protocol as P
    from fasteval.core.protocol import exam1_groups

    texts = B.paper_texts()
    assert len(texts) == len(set(texts))
    assert set(texts) == {t for g in exam1_groups() for t in g} | {it.text for it in P.exam2_items()}
    assert texts[0] == "0 meters" and "-166.76025" in texts


def test_long_sentences_are_deterministic_and_30_to_60_words():
    first, again = B.long_sentences(50), B.long_sentences(50)
    assert first == again and len(set(first)) > 40
    assert all(B.LONG_WORDS[0] <= len(s.split()) <= B.LONG_WORDS[1] for s in first)
    assert B.long_sentences(0) == []
    with pytest.raises(InputError):
        B.long_sentences(-1)


def test_parse_int_list():
    assert B.parse_int_list("1, 8,32,8", "--batch-sizes") == [1, 8, 32]
    for bad in ("", "0", "a,2", "-1"):
        with pytest.raises(InputError):
            B.parse_int_list(bad, "--batch-sizes")


def test_median_time_counts_runs_and_takes_the_median():
    calls = []
    median, runs = B.median_time(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5 and len(runs) == 3 and median == sorted(runs)[1]
    median, runs = B.median_time(lambda: None, repeats=4, warmup=0)
    assert median == (sorted(runs)[1] + sorted(runs)[2]) / 2
    with pytest.raises(InputError):
        B.median_time(lambda: None, repeats=0)


# ---------------------------------------------------------------------------------------------- library
def test_run_bench_with_any_loader(tiny_encoder):
    seen = []

    def loader(name, **options):
        seen.append(options)
        return tiny_encoder

    result = B.run_bench(loader, "tiny", batch_sizes=[2, 16], threads=[1], provider="cpu", repeats=1, n_long=3,
                         exams=(2,))
    assert [(e.texts, e.batch_size) for e in result.encode] == [("paper", 2), ("long", 2), ("paper", 16),
                                                                ("long", 16)]
    n_paper = len(B.paper_texts())
    assert [e.n_texts for e in result.encode] == [n_paper, 3, n_paper, 3]
    assert all(e.strings_per_s == pytest.approx(e.n_texts / e.seconds) for e in result.encode)
    assert {o["batch_size"] for o in seen if "batch_size" in o} == {2, 16}
    assert set(result.exam_warm) == {"embed", "exam2"} and result.exams == (2,)
    text = B.bench_text(result)
    assert "strings/s" in text and "exam2" in text
    json.dumps(result.to_dict(), allow_nan=False)


# ---------------------------------------------------------------------------------------------- CLI
def _bench_args(folder, out, *extra):
    return ["bench", "--model", str(folder), "--batch-sizes", "1,8", "--threads", "1", "--repeats", "1",
            "--long-sentences", "4", "--json", str(out), *extra]


def test_bench_command_writes_json(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    from typer.testing import CliRunner

    from fasteval.cli.main import app

    out = tmp_path / "sub" / "bench.json"
    result = CliRunner().invoke(app, _bench_args(tiny_st_folder, out, "--provider", "cpu", "-q"))
    assert result.exit_code == 0, result.output
    assert "strings/s" in result.output and "exam3" in result.output
    data = json.loads(out.read_text())
    assert data["provider"] == "cpu" and data["exams"] == [1, 2, 3]
    assert len(data["encode"]) == 4  # 2 batch sizes x 1 thread count x 2 text sets
    assert {e["texts"] for e in data["encode"]} == {"paper", "long"}
    assert all(e["strings_per_s"] == pytest.approx(e["n_texts"] / e["seconds"]) for e in data["encode"])
    assert sorted(e["n_texts"] for e in data["encode"]) == sorted([len(B.paper_texts())] * 2 + [4] * 2)
    for key in ("exam_seconds_cold", "exam_seconds_warm"):
        assert set(data[key]) == {"embed", "similarity", "exam1", "exam2", "exam3"}
    import numpy

    assert data["machine"]["cores"] == (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                        else os.cpu_count())
    assert data["machine"]["versions"]["numpy"] == numpy.__version__


def test_bench_command_without_exams(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    from typer.testing import CliRunner

    from fasteval.cli.main import app

    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, _bench_args(tiny_st_folder, out, "--exams", "none", "--long-sentences", "0"))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["exams"] == [] and data["exam_seconds_warm"] == {}
    assert [e["texts"] for e in data["encode"]] == ["paper", "paper"]


@pytest.mark.parametrize("args, fragment", [
    (["--batch-sizes", "0"], "--batch-sizes"),
    (["--threads", "x"], "--threads"),
    (["--exams", "4"], "Unknown exam"),
])
def test_bench_bad_arguments_are_one_line_errors(tmp_path, args, fragment):
    proc = run_cli(["bench", "--model", tmp_path, *args], timeout=300)
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc, fragment)


# ---------------------------------------------------------------------------------------------- encoder I/O binding
def test_io_binding_path_gives_the_same_embeddings(tiny_st_folder, fasteval_home):
    """The binding path (on by default only for CUDA) run on the CPU gives session.run's numbers exactly."""
    from fasteval.models.loader import load_model

    encoder = load_model(str(tiny_st_folder), provider="cpu")
    assert encoder.io_binding is False
    texts = B.paper_texts()[:64] + B.long_sentences(4)
    plain = encoder.encode(texts)
    encoder.io_binding = True
    np.testing.assert_array_equal(encoder.encode(texts), plain)
    encoder.graph_head = True  # the GPU's path whole: the sentence head in the graph, bound
    headed = encoder.encode(texts)
    np.testing.assert_allclose(headed, plain, rtol=1e-5, atol=1e-6)
    encoder.io_binding = False
    np.testing.assert_array_equal(encoder.encode(texts), headed)


@needs_cuda
def test_cuda_bench_and_io_binding(tiny_st_folder, fasteval_home, tmp_path):
    from typer.testing import CliRunner

    from fasteval.cli.main import app
    from fasteval.models.loader import load_model

    gpu = load_model(str(tiny_st_folder), provider="cuda")
    assert gpu.provider == "cuda" and gpu.io_binding
    cpu = load_model(str(tiny_st_folder), provider="cpu")
    texts = B.paper_texts()[:64]
    np.testing.assert_allclose(gpu.encode(texts), cpu.encode(texts), atol=1e-4)
    assert gpu.graph_head and not cpu.graph_head, "on the GPU the sentence head runs in the graph"
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, _bench_args(tiny_st_folder, out, "--provider", "cuda", "--exams", "2"))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["provider"] == "cuda"


@pytest.mark.skipif(CUDA, reason="on a GPU machine gpu.sh runs the whole benchmark instead of skipping")
def test_gpu_script_skips_without_cuda():
    proc = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run.sh")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr
    assert "skipped:" in proc.stdout


# ---------------------------------------------------------------------------------------------- the peer
def _reference_module():
    spec = importlib.util.spec_from_file_location("reference_impl", ROOT / "benchmarks" / "reference" / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_implementation_matches_fasteval(tiny_st_folder, tiny_encoder):
    """The benchmark's peer computes the numbers fasteval computes (same tiny model, torch vs ONNX)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("sklearn")
    pytest.importorskip("rapidfuzz")
    from fasteval.core import protocol as P
    from fasteval import evaluate

    ref = _reference_module()
    assert [ref.phrase(float(v), "meter", r) for r in ref.RANGES for v in ref.RANGES[r]] == [
        t for c in P.exam1_cells() if c.quantity == "meter" for t in c.texts]
    embed = ref.Embedder(str(tiny_st_folder))
    r1, r2, r3 = ref.exam1(embed), ref.exam2(embed, embed.model.tokenizer), ref.exam3(embed)
    ours = evaluate(tiny_encoder)
    # A random tiny model has near-tied similarities: torch and ONNX may flip a pair or two, never more.
    s1 = ours.exams["exam1"].summary()
    assert abs(s1["tau"] - r1["table1"]["tau"]) < 1.0
    cells = {(c.quantity, c.range_name): c.tau for c in ours.exams["exam1"].cells}
    n_of = {r: len(P.range_values(r)) for r in P.RANGE_NAMES}  # one flipped pair moves tau by 4 / (n (n - 1))
    flips = [abs(cells[(c["unit"], c["range"])] - c["kendall"]) * n_of[c["range"]] * (n_of[c["range"]] - 1) / 4
             for c in r1["cells"]]
    assert sum(f > 1.01 for f in flips) <= 2
    rows2 = {(r.group_type, r.group, r.reference): (r.tau, r.n_pairs) for r in ours.exams["exam2"].rows}
    for row in r2["rows"]:
        tau, n_pairs = rows2[(row["group_type"], row["group"], row["reference"])]
        assert n_pairs == row["n_pairs"]
        assert abs(tau - row["tau"]) < 1e-3
    s3 = ours.exams["exam3"].summary()
    for key in ("kendall_mean", "pairwise_mean", "kendall_cosine_mean", "pairwise_cosine_mean"):
        assert abs(s3[key] - r3["summary"][key]) < 1e-3
