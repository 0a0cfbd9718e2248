"""fasteval.models: model folders, sources, ONNX export and the onnxruntime encoder."""
