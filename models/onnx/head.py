"""The sentence head in the graph: pooling, Dense and Normalize appended to an exported model, so that a session
returns ``sentence_embedding`` (batch x dimension) instead of the token embeddings (batch x tokens x hidden).

On the GPU this is what keeps the work and the memory traffic on the device: only batch x dimension floats come
back per batch, as with sentence-transformers' own ONNX exports that carry a pooled output. The head computes
what ``models/onnx/pooling.py`` computes in numpy (the reference, and the path every CPU result is keyed by), op for
op, in float32 (the norm in float64, so that a vector whose float32 norm would overflow still becomes a unit
vector); tests/models/test_head.py holds the two together for every pooling mode, Dense activation, padding side,
prompt masking, all-padding rows and fp16 graphs.

The graph takes one input more than the model: ``pooling_mask`` (int64, batch x tokens), the attention mask with
the prompt's tokens cleared when the pooling leaves the prompt out; the encoder computes it as it does for numpy.
"""
from __future__ import annotations

import numpy as np

from ...core.embeddings import NORM_EPS
from ..sources.folder import ModelFolder
from .pooling import ACTIVATIONS, COUNT_EPS, PADDING_FOR_MAX, activation_of

POOLED_OUTPUT = "sentence_embedding"
POOLING_MASK = "pooling_mask"
TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
HEAD_OPSET = 13  # the oldest opset the head is written for (ArgMax's select_last_index: 12)


def token_output(names: list[str]) -> str:
    """Which of a graph's outputs holds the token embeddings: last_hidden_state, token_embeddings, else the first."""
    return next((n for n in TOKEN_OUTPUTS if n in names), names[0])


class _Builder:
    """Nodes and constants appended to a graph, each with a fresh name under one prefix."""

    def __init__(self, graph, opset: int):
        self.graph, self.opset, self.count = graph, opset, 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"fasteval_head/{hint}_{self.count}"

    def const(self, value, dtype=np.float32) -> str:
        from onnx import numpy_helper

        name = self.name("const")
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs) -> str:
        from onnx import helper

        out = self.name(op_type.lower())
        self.graph.node.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def reduce(self, op_type: str, x: str, axis: int, keepdims: int) -> str:
        """A Reduce* op over one axis: the axes an input from opset 18 on (ReduceSum: 13), an attribute before."""
        if self.opset >= (13 if op_type == "ReduceSum" else 18):
            return self.op(op_type, x, self.const([axis], np.int64), keepdims=keepdims)
        return self.op(op_type, x, axes=[axis], keepdims=keepdims)


def _rows_at(b: _Builder, tokens: str, index: str, shape: str) -> str:
    """tokens[r, index[r]] for every row r: (batch, seq, width) and int64 (batch,) -> (batch, width), by a gather on
    the flattened rows (exact: no arithmetic on the values). ``shape``: the token embeddings' shape (batch, seq)."""
    batch = b.op("Gather", shape, b.const(0, np.int64), axis=0)
    seq = b.op("Gather", shape, b.const(1, np.int64), axis=0)
    rows = b.op("Range", b.const(0, np.int64), batch, b.const(1, np.int64))
    flat_index = b.op("Add", b.op("Mul", rows, seq), index)
    width = b.op("Slice", b.op("Shape", tokens), b.const([2], np.int64), b.const([3], np.int64))
    flat = b.op("Reshape", tokens, b.op("Concat", b.const([-1], np.int64), width, axis=0))
    return b.op("Gather", flat, flat_index, axis=0)


def _pool(b: _Builder, mode: str, tokens: str, mask: str, shape: str, attention: str) -> str:
    """One pooling mode, as models/onnx/pooling.py computes it. ``mask`` is the float32 (batch, seq) pooling mask,
    ``attention`` the graph's attention mask input (weightedmean's positions start at its first token)."""
    from onnx import TensorProto

    if mode in ("mean", "mean_sqrt_len_tokens", "weightedmean"):
        weights = mask
        if mode == "weightedmean":  # weight of token t = t + 1 - (the row's first attended token), masked 0
            seq = b.op("Cast", b.op("Gather", shape, b.const(1, np.int64), axis=0), to=TensorProto.FLOAT)
            positions = b.op("Range", b.const(1.0), b.op("Add", seq, b.const(1.0)), b.const(1.0))
            attended = b.op("Cast", b.op("Greater", b.op("Cast", attention, to=TensorProto.FLOAT), b.const(0.0)),
                            to=TensorProto.FLOAT)
            first = b.op("Cast", b.op("ArgMax", attended, axis=1, keepdims=1), to=TensorProto.FLOAT)
            weights = b.op("Mul", b.op("Sub", b.op("Unsqueeze", positions, b.const([0], np.int64)), first), mask)
        w = b.op("Unsqueeze", weights, b.const([-1], np.int64))
        total = b.reduce("ReduceSum", b.op("Mul", tokens, w), 1, keepdims=0)
        count = b.op("Max", b.reduce("ReduceSum", w, 1, keepdims=0), b.const(COUNT_EPS))
        return b.op("Div", total, b.op("Sqrt", count) if mode == "mean_sqrt_len_tokens" else count)
    if mode == "max":
        keep = b.op("Greater", b.op("Unsqueeze", mask, b.const([-1], np.int64)), b.const(0.0))
        return b.reduce("ReduceMax", b.op("Where", keep, tokens, b.const(PADDING_FOR_MAX)), 1, keepdims=0)
    if mode == "cls":  # the first non-padding token (index 0 of an all-padding row)
        first = b.op("ArgMax", mask, axis=1, keepdims=0)
        return _rows_at(b, tokens, first, shape)
    if mode == "lasttoken":  # the last non-padding token; an all-padding row gives 0
        last = b.op("ArgMax", mask, axis=1, keepdims=0, select_last_index=1)
        picked = _rows_at(b, tokens, last, shape)
        there = _rows_at(b, b.op("Unsqueeze", mask, b.const([-1], np.int64)), last, shape)
        return b.op("Mul", picked, b.op("Cast", b.op("Greater", there, b.const(0.0)), to=TensorProto.FLOAT))
    raise ValueError(f"pooling mode {mode!r} has no graph head")


# External tensors up to this size are read into the graph's bytes: a session opened from bytes reads the large
# weights from the folder, but shape inference must see small constants (a Slice's starts and ends) in the graph
# itself, and torch.onnx's exporter keeps even those outside when it writes external data.
INLINE_EXTERNAL_BYTES = 1024


def _inline_small_external(graph, folder) -> None:
    """Read the graph's external tensors of at most INLINE_EXTERNAL_BYTES into it (from ``folder``)."""
    from onnx import TensorProto
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    for tensor in graph.initializer:
        if uses_external_data(tensor):
            length = next((int(e.value) for e in tensor.external_data if e.key == "length"), None)
            if length is not None and length <= INLINE_EXTERNAL_BYTES:
                load_external_data_for_tensor(tensor, str(folder))
                tensor.data_location = TensorProto.DEFAULT
                del tensor.external_data[:]


def pooled_graph(folder: ModelFolder) -> bytes:
    """The folder's model.onnx with the sentence head appended (its pooling modes, Dense layers and Normalize), as
    serialized bytes. External weights stay where they are: a session opens the bytes with model.onnx's folder as
    the folder of its external initializers (``open_session``)."""
    import onnx
    from onnx import TensorProto, helper

    assert folder.onnx_file is not None
    model = onnx.load(str(folder.onnx_file), load_external_data=False)
    graph = model.graph
    _inline_small_external(graph, folder.onnx_file.parent)
    hidden = token_output([o.name for o in graph.output])
    opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 0)
    if opset < HEAD_OPSET:
        from ...core.errors import ModelError
        raise ModelError(f"{folder.onnx_file} is an opset {opset} graph; the sentence head needs opset {HEAD_OPSET}.",
                         "re-export the model (delete the cached export folder).")
    b = _Builder(graph, opset)
    tokens = b.op("Cast", hidden, to=TensorProto.FLOAT)  # fp16 graphs without float32 outputs
    graph.input.append(helper.make_tensor_value_info(POOLING_MASK, TensorProto.INT64, ["batch", "sequence"]))
    mask = b.op("Cast", POOLING_MASK, to=TensorProto.FLOAT)
    shape = b.op("Shape", tokens)
    inputs = [i.name for i in graph.input]
    attention = "attention_mask" if "attention_mask" in inputs else POOLING_MASK
    parts = [_pool(b, mode, tokens, mask, shape, attention) for mode in folder.pooling.modes]
    out = parts[0] if len(parts) == 1 else b.op("Concat", *parts, axis=1)
    for layer in folder.dense:
        activation = ACTIVATIONS[activation_of(layer)][1]
        weight, bias = folder.dense_weights(layer)
        out = b.op("MatMul", out, b.const(np.ascontiguousarray(weight.T, dtype=np.float32)))
        if bias is not None:
            out = b.op("Add", out, b.const(np.asarray(bias, dtype=np.float32)))
        if activation is not None:
            out = b.op(activation, out)
    if folder.normalize:  # x / max(||x||, NORM_EPS), the norm in float64
        wide = b.op("Cast", out, to=TensorProto.DOUBLE)
        norm = b.op("Max", b.reduce("ReduceL2", wide, 1, keepdims=1), b.const(NORM_EPS, np.float64))
        out = b.op("Cast", b.op("Div", wide, norm), to=TensorProto.FLOAT)
    graph.node.append(helper.make_node("Identity", [out], [POOLED_OUTPUT], name="fasteval_head/output"))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info(POOLED_OUTPUT, TensorProto.FLOAT, ["batch", None]))
    return model.SerializeToString()

