"""Can onnxruntime run a session on the GPU here? One line and an exit code, for benchmarks/gpu/run.sh: 0 ready,
2 skip (no GPU build of onnxruntime or no NVIDIA driver: nothing to benchmark), 1 broken (a GPU is there and the
session falls back to the CPU: the line names the build, the driver and the library that does not load).
fasteval.models.onnx.gpu.readiness does the asking; tests/house/test_gpu_probe.py holds both."""
from __future__ import annotations

from fasteval.models.onnx.gpu import readiness

if __name__ == "__main__":
    state, reason = readiness()
    print(f"{state}: {reason}")
    raise SystemExit({"ready": 0, "skip": 2, "broken": 1}[state])
