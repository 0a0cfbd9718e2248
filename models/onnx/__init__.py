"""A local model run by onnxruntime: the export to ONNX (``export``: fp32 through torch.onnx, fp16 and int8 made from
it), the session and its encoder (``encoder``), the sentence head in numpy (``pooling``) and in the graph
(``head``, the GPU's), and where a session runs (``gpu``: the GPU, or why not)."""
