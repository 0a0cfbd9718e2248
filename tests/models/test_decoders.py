"""Decoders: a tiny random Qwen3 (last-token pooling, EOS appended, left padding) through the torch.onnx export,
held to sentence-transformers with left and right padding, with and without prompts."""
from __future__ import annotations

import numpy as np
import pytest

from tiny_models import make_qwen3_folder, torch_single_thread, variant

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxscript")  # the export extra

# Very different lengths in one batch, so most rows are padded (on the left for the decoder).
TEXTS = ["0 meters", "0.5 meters", "1 meter", "1334 meters", "-100 meters", "3e-06 meter", "five meter", "",
         "100000 kilograms", "a much longer text with many many words " * 2]


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    with torch_single_thread():
        yield


@pytest.fixture(scope="module")
def qwen_folder(tmp_path_factory):
    return make_qwen3_folder(tmp_path_factory.mktemp("qwen") / "tiny-qwen3", padding_side="left")


@pytest.fixture(scope="module")
def qwen_encoder(qwen_folder, fasteval_home):
    from fasteval.models.loader import load_model

    return load_model(str(qwen_folder), provider="cpu")


def st_encode(folder, texts, **kwargs):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu").float()
    return model.encode(list(texts), normalize_embeddings=True, **kwargs)


def onnx_encoder(export_folder, prompt=None):
    from fasteval.models.onnx.encoder import OnnxEncoder
    from fasteval.models.onnx.export import load_export

    return OnnxEncoder(load_export(export_folder), provider="cpu", prompt=prompt)


def test_export_declares_the_inputs_the_model_takes_and_encoder_feeds_them(qwen_encoder):
    """torch.onnx's export takes input_ids and attention_mask (transformers counts the positions 0..seq-1 itself, as
    the encoder fed them to the Optimum graphs of before, which declared position_ids: models/onnx/encoder.py still
    feeds those)."""
    assert qwen_encoder.input_names == {"input_ids", "attention_mask"}
    assert qwen_encoder.folder.pooling.modes == ("lasttoken",) and qwen_encoder.folder.normalize
    assert qwen_encoder.info["pooling"] == "lasttoken"
    fed = []
    run = qwen_encoder.session.run
    qwen_encoder.session.run = lambda names, feed: fed.append(dict(feed)) or run(names, feed)
    try:
        qwen_encoder.encode(["1 meter", "1334 meters"])
    finally:
        qwen_encoder.session.run = run
    assert set(fed[0]) == qwen_encoder.input_names
    mask = fed[0]["attention_mask"]
    assert mask[1, 0] == 0 and mask[:, -1].all(), "left padding: the EOS of every row is the last column"


@pytest.mark.parametrize("side", ["left", "right"])
def test_qwen3_onnx_matches_sentence_transformers(side, qwen_folder, qwen_encoder, tmp_path):
    if side == "left":
        src, encoder = qwen_folder, qwen_encoder
    else:  # the same graph; only the tokenizer's padding side differs
        edit = {"tokenizer_config.json": {"padding_side": "right"}}
        src = variant(qwen_folder, tmp_path / "src-right", edit)
        encoder = onnx_encoder(variant(qwen_encoder.folder.path, tmp_path / "onnx-right", edit))
    ours, ref = encoder.encode(TEXTS), st_encode(src, TEXTS)
    assert ours.shape == ref.shape == (len(TEXTS), 32)
    assert np.abs(ours - ref).max() < 1e-4
    # Batch composition (how much padding a row gets) must not matter beyond float noise.
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    assert np.abs(alone - ours).max() < 1e-4


@pytest.mark.parametrize("include_prompt", [True, False])
def test_qwen3_prompt_matches_sentence_transformers(include_prompt, qwen_folder, qwen_encoder, tmp_path):
    """Mean pooling over a left-padded decoder is where excluding prompt tokens is hardest to get right."""
    prompt = "Instruct: measure\nQuery: "
    edit = {"1_Pooling/config.json": {"pooling_mode": "mean", "include_prompt": include_prompt}}
    src = variant(qwen_folder, tmp_path / "src", edit)
    encoder = onnx_encoder(variant(qwen_encoder.folder.path, tmp_path / "onnx", edit), prompt=prompt)
    ours, ref = encoder.encode(TEXTS), st_encode(src, TEXTS, prompt=prompt)
    assert np.abs(ours - ref).max() < 1e-4
    without = st_encode(src, TEXTS)
    assert np.abs(ours - without).max() > 1e-3, "the prompt must change the embedding"


def test_qwen3_exam1_cells_equal(qwen_folder, qwen_encoder):
    """The Exam 1 numbers of the decoder through ONNX equal those through sentence-transformers."""
    from sentence_transformers import SentenceTransformer

    from fasteval.core.embeddings import embed_groups
    from fasteval.core.exams.geometry import run_exam1
    from fasteval.core.protocol import exam1_cells

    class Reference:
        model = SentenceTransformer(str(qwen_folder), device="cpu").float()

        def encode(self, texts):
            return self.model.encode(list(texts), normalize_embeddings=True)

    groups = [cell.texts for cell in exam1_cells()]
    ours, ref = embed_groups(qwen_encoder, groups), embed_groups(Reference(), groups)
    texts = [t for t, _ in ref.items()]
    assert np.abs(ours[texts] - ref[texts]).max() < 1e-4
    a, b = run_exam1(ours, keep_matrices=False), run_exam1(ref, keep_matrices=False)
    assert [(c.tau_numerator, c.pacc_numerator) for c in a.cells] == [(c.tau_numerator, c.pacc_numerator)
                                                                      for c in b.cells]
