"""Registry models held to tiny random twins of their architecture and layout (what the model card and configs say:
family, pooling, normalisation), exported through fasteval's door and compared with sentence-transformers on the same
folder: harrier-oss-v1-270m (Gemma 3, last token), harrier-oss-v1-0.6b (Qwen3, last token), DenseOn (ModernBERT,
CLS), embeddinggemma-300m (Gemma 3 with bidirectional attention, mean), bge-m3 (XLM-RoBERTa, CLS). NomicBert:
tests/models/test_nomic.py."""
from __future__ import annotations

import numpy as np
import pytest

from fasteval.core.embeddings import normalize_rows
from fasteval.models.sources.registry import find_spec

from tiny_models import make_tiny_folder, torch_single_thread

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxscript")  # the export extra

TEXTS = ["0 meters", "0.5 meters", "1 meter", "1334 meters", "-100 meters", "3e-06 meter", "five meter", "",
         "100000 kilograms", "a much longer text with many many words " * 2]
# registry name -> the twin's family and the padding side of its tokenizer (decoders pad on the left)
TWINS = {"harrier-oss-v1-270m": ("gemma3_text", "left"), "harrier-oss-v1-0.6b": ("qwen3", "left"),
         "DenseOn": ("modernbert", "right"), "embeddinggemma-300m": ("gemma3_bidirectional", "right"),
         "bge-m3": ("xlm-roberta", "right")}


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    with torch_single_thread():
        yield


@pytest.mark.parametrize("name", list(TWINS))
def test_the_twin_embeds_like_sentence_transformers(name, tmp_path, fasteval_home):
    from sentence_transformers import SentenceTransformer

    from fasteval.models.loader import load_model

    spec = find_spec(name)
    family, padding = TWINS[name]
    assert spec.pooling is not None and spec.dim is not None and spec.params_m, "the card's facts are recorded"
    folder = make_tiny_folder(tmp_path / name, family, padding_side=padding, pooling=spec.pooling,
                              normalize=bool(spec.normalize))  # DenseOn's card says nothing of a Normalize module
    encoder = load_model(str(folder), provider="cpu")
    assert encoder.folder.pooling.modes == (spec.pooling,) and encoder.folder.normalize == bool(spec.normalize)
    ours = normalize_rows(encoder.encode(TEXTS))  # as fasteval embeds (the paper's normalize_embeddings=True)
    ref = SentenceTransformer(str(folder), device="cpu").float().encode(TEXTS, normalize_embeddings=True)
    assert ours.shape == ref.shape and np.abs(ours - ref).max() < 1e-4
    live = ref.any(axis=1)  # the Gemma twins embed "" as zeros, as sentence-transformers does
    assert (ours * ref).sum(axis=1)[live].min() >= 0.999999, "sentence-transformers 6 on the same folder"
    alone = normalize_rows(np.stack([encoder.encode([t])[0] for t in TEXTS]))
    assert np.abs(alone - ours).max() < 1e-4, "a row's padding does not change it"
    head = load_model(str(folder), provider="cpu")
    head.graph_head = True  # the GPU's sentence head (models/onnx/head.py), run on the CPU
    np.testing.assert_allclose(head.encode(TEXTS), encoder.encode(TEXTS), rtol=1e-5, atol=1e-6)
    assert head.graph_head and head.info == encoder.info
    half = load_model(str(folder), provider="cpu", dtype="fp16")  # the fused fp16 export, this family
    halves = normalize_rows(half.encode(TEXTS))
    zero = ~ours.any(axis=1)  # the Gemma twin embeds "" as zeros, as sentence-transformers does
    assert (zero == ~halves.any(axis=1)).all()
    cosines = (halves * ours).sum(axis=1)[~zero]
    assert cosines.min() > 0.99, cosines
