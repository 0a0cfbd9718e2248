"""The sentence head in the graph (models/onnx/head.py, what the GPU runs) against the numpy head
(models/onnx/pooling.py and normalize_rows, the reference every CPU result is keyed by): every pooling mode alone and
concatenated, every Dense activation, Normalize, any mask (left and right padding, holes, all-padding rows), NaN in a
padded position, both forms of the Reduce ops' axes (opset 13 and 18). The graph under the head is an identity, so the
head alone is held."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fasteval.core.embeddings import normalize_rows
from fasteval.models.sources.folder import POOLING_MODES, DenseLayer, ModelFolder, PoolingConfig
from fasteval.models.onnx.head import POOLED_OUTPUT, POOLING_MASK, pooled_graph
from fasteval.models.onnx.pooling import dense, pool

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

ACTIVATIONS = ("torch.nn.modules.linear.Identity", "torch.nn.modules.activation.Tanh",
               "torch.nn.modules.activation.ReLU", "torch.nn.modules.activation.Sigmoid")
WIDTH = 6


def identity_model(path, opset: int, fp16: bool = False) -> None:
    """A graph whose last_hidden_state is its input ``hidden`` (batch, seq, WIDTH), beside an unused
    attention_mask, as an exported model's inputs are; fp16: the output is float16, as a graph converted without
    float32 outputs gives."""
    from onnx import TensorProto, helper

    kind = TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT
    nodes = [helper.make_node("Cast", ["hidden"], ["last_hidden_state"], to=kind)]
    graph = helper.make_graph(nodes, "identity", [
        helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "sequence", WIDTH]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", kind, ["batch", "sequence", WIDTH])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))


def folder_of(tmp_path, modes, dense_layers=(), normalize=False, opset=18, fp16=False) -> ModelFolder:
    identity_model(tmp_path / "model.onnx", opset, fp16)
    return ModelFolder(path=tmp_path, transformer_path=tmp_path, tokenizer_file=tmp_path / "tokenizer.json",
                       onnx_file=tmp_path / "model.onnx", pooling=PoolingConfig(tuple(modes)), normalize=normalize,
                       max_seq_length=None, dense=tuple(dense_layers))


def write_dense(tmp_path, k: int, width: int, out: int, activation: str, bias: bool, rng) -> DenseLayer:
    layer = DenseLayer(path=f"{k + 2}_Dense", in_features=width, out_features=out, bias=bias, activation=activation)
    (tmp_path / layer.path).mkdir(exist_ok=True)
    arrays = {"weight": rng.normal(size=(out, width)).astype(np.float32)}
    if bias:
        arrays["bias"] = rng.normal(size=out).astype(np.float32)
    np.savez(tmp_path / layer.path / "dense.npz", **arrays)
    return layer


def numpy_head(folder: ModelFolder, tokens: np.ndarray, mask: np.ndarray, attention=None) -> np.ndarray:
    out = pool(tokens, mask, folder.pooling, attention=mask if attention is None else attention)
    for layer in folder.dense:
        weight, bias = folder.dense_weights(layer)
        out = dense(out, layer, weight, bias)
    return normalize_rows(out) if folder.normalize else out


def graph_head(folder: ModelFolder, tokens: np.ndarray, mask: np.ndarray, attention=None) -> np.ndarray:
    """The head's output; ``attention``: the attention mask (the pooling ``mask`` with a left-out prompt's tokens
    set; default the pooling mask itself)."""
    session = ort.InferenceSession(pooled_graph(folder), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == [POOLED_OUTPUT]
    return session.run([POOLED_OUTPUT], {"hidden": tokens, "attention_mask": mask if attention is None else attention,
                                         POOLING_MASK: mask})[0]


masks = st.integers(1, 4).flatmap(lambda rows: st.integers(1, 7).flatmap(lambda seq: st.lists(
    st.lists(st.integers(0, 1), min_size=seq, max_size=seq), min_size=rows, max_size=rows)))


@settings(max_examples=40, deadline=None)
@given(mask=masks, modes=st.lists(st.sampled_from(POOLING_MODES), min_size=1, max_size=3, unique=True),
       seed=st.integers(0, 2**16), opset=st.sampled_from([13, 18]), normalize=st.booleans(),
       n_dense=st.integers(0, 2), activation=st.sampled_from(ACTIVATIONS), bias=st.booleans(),
       nan_in_padding=st.booleans(), prompt_left_out=st.booleans())
def test_the_graph_head_computes_the_numpy_head(tmp_path_factory, mask, modes, seed, opset, normalize, n_dense,
                                                 activation, bias, nan_in_padding, prompt_left_out):
    tmp_path = tmp_path_factory.mktemp("head")
    rng = np.random.default_rng(seed)
    mask = np.asarray(mask, dtype=np.int64)
    tokens = rng.normal(scale=3, size=(*mask.shape, WIDTH)).astype(np.float32)
    if nan_in_padding and (mask == 0).any():
        rows, cols = np.nonzero(mask == 0)
        tokens[rows[0], cols[0], 0] = np.nan  # the means carry it (0 x NaN), as sentence-transformers does
    width = WIDTH * len(modes)
    layers = []
    for k in range(n_dense):
        layers.append(write_dense(tmp_path, k, width, 5 - k, activation, bias, rng))
        width = 5 - k
    folder = folder_of(tmp_path, modes, layers, normalize, opset)
    # the attention mask: the pooling mask, or with tokens the pooling left out set (a prompt: weightedmean's
    # positions still start at the first attended token)
    attention = np.maximum(mask, rng.integers(0, 2, size=mask.shape)) if prompt_left_out else mask
    expected, got = numpy_head(folder, tokens, mask, attention), graph_head(folder, tokens, mask, attention)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6, equal_nan=True)
    if not layers and not normalize and set(modes) <= {"cls", "max", "lasttoken"}:
        np.testing.assert_array_equal(got, expected)  # picked, not summed: the very same floats


def test_an_all_padding_row_and_left_padding(tmp_path):
    """cls takes index 0 of an all-padding row, lasttoken gives zeros there, mean gives zeros; a left-padded row
    is pooled from its first real token."""
    tokens = np.arange(2 * 4 * WIDTH, dtype=np.float32).reshape(2, 4, WIDTH) + 1
    mask = np.array([[0, 0, 0, 0], [0, 0, 1, 1]], dtype=np.int64)
    for modes in (("cls",), ("lasttoken",), ("mean",), ("max",), ("weightedmean",), ("mean_sqrt_len_tokens",)):
        folder = folder_of(tmp_path, modes)
        got = graph_head(folder, tokens, mask)
        np.testing.assert_allclose(got, numpy_head(folder, tokens, mask), rtol=1e-6)
    np.testing.assert_array_equal(graph_head(folder_of(tmp_path, ("cls",)), tokens, mask),
                                  [tokens[0, 0], tokens[1, 2]])
    np.testing.assert_array_equal(graph_head(folder_of(tmp_path, ("lasttoken",)), tokens, mask),
                                  [np.zeros(WIDTH), tokens[1, 3]])


def test_normalize_keeps_a_huge_vector_a_unit_vector(tmp_path):
    """The norm in float64: a row whose float32 norm overflows still comes back as a unit vector, as
    normalize_rows gives it; a zero row stays zero."""
    tokens = np.zeros((2, 1, WIDTH), dtype=np.float32)
    tokens[0, 0, :2] = 3e38
    folder = folder_of(tmp_path, ("cls",), normalize=True)
    got = graph_head(folder, tokens, np.ones((2, 1), dtype=np.int64))
    np.testing.assert_allclose(got, normalize_rows(tokens[:, 0]), rtol=1e-6)
    assert np.linalg.norm(got[0]) == pytest.approx(1.0) and not got[1].any()


def test_an_fp16_graph_is_pooled_in_float32(tmp_path):
    tokens = np.random.default_rng(0).normal(size=(3, 5, WIDTH)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]], dtype=np.int64)
    folder = folder_of(tmp_path, ("mean",), normalize=True, fp16=True)
    got = graph_head(folder, tokens, mask)
    assert got.dtype == np.float32
    expected = numpy_head(folder, tokens.astype(np.float16).astype(np.float32), mask)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_an_older_graph_is_refused_in_one_line(tmp_path):
    from fasteval.core.errors import ModelError

    with pytest.raises(ModelError, match="opset 11 graph.*re-export"):
        pooled_graph(folder_of(tmp_path, ("mean",), opset=11))


def test_external_weights_are_found_beside_the_graph(tiny_encoder, tmp_path):
    """A model whose weights lie outside model.onnx (every model over 2 GB): the head's graph travels as bytes and
    its session finds the weights in model.onnx's folder."""
    import shutil

    from fasteval.models.sources.folder import load_folder
    from fasteval.models.loader import load_model

    copy = tmp_path / "external"
    shutil.copytree(tiny_encoder.folder.path, copy)
    model = onnx.load(str(copy / "model.onnx"))
    onnx.save(model, str(copy / "model.onnx"), save_as_external_data=True, location="model.onnx_data",
              size_threshold=0)
    graph = onnx.load(str(copy / "model.onnx"), load_external_data=False).graph
    assert graph.initializer and all(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer)
    assert (copy / "model.onnx_data").stat().st_size > 0
    encoder = load_model(str(load_folder(copy).path), provider="cpu")
    encoder.graph_head = True
    texts = ["2 kilometers", "2000 meters", "2 meters"]
    np.testing.assert_allclose(encoder.encode(texts), tiny_encoder.encode(texts), rtol=1e-5, atol=1e-6)
    assert encoder.graph_head


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_a_prompt_left_out_of_the_pooling_is_left_out_in_the_graph(tiny_encoder, tmp_path, padding_side):
    """include_prompt=False: the prompt's tokens leave the pooling through pooling_mask, with either padding side."""
    from fasteval.models.onnx.encoder import OnnxEncoder
    from fasteval.models.onnx.export import load_export
    from tiny_models import variant

    edits = {"1_Pooling/config.json": {"include_prompt": False}}
    if padding_side == "left":
        edits["tokenizer_config.json"] = {"padding_side": "left"}
    folder = load_export(variant(tiny_encoder.folder.path, tmp_path / "prompted", edits))
    assert folder.pooling.include_prompt is False
    plain, headed = (OnnxEncoder(folder, provider="cpu", prompt="query: the quantity ") for _ in range(2))
    headed.graph_head = True
    texts = ["2 kilometers", "2000 meters and a much longer text than the others", ""]
    np.testing.assert_allclose(headed.encode(texts), plain.encode(texts), rtol=1e-5, atol=1e-6)
    assert headed.padding_side == padding_side and headed._prompt_length > 0
    unprompted = OnnxEncoder(folder, provider="cpu", prompt="query: the quantity ")
    unprompted._prompt_length = 0  # the prompt pooled after all: another embedding, so the mask above mattered
    assert np.abs(unprompted.encode(texts) - plain.encode(texts)).max() > 1e-3
