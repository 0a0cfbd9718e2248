#!/usr/bin/env bash
# The GPU lines of the benchmarks: encode and the whole sweep with fasteval on onnxruntime's CUDA provider
# (I/O binding on), against sentence-transformers on the GPU when torch sees one (else on the CPU, and the
# report says so), and Exam 1 on the GPU against the CPU cell by cell (fp32: every tau and PACC of the 20
# cells must be equal). Skips, exit 0, with a reason when CUDA is not usable here.
#
#   benchmarks/gpu.sh [--quick]          (uses .venv/bin/python when present, else python3)
#
# Writes benchmarks/RESULTS-gpu.md and benchmarks/results-gpu.json.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3

reason=$("$PY" - <<'PYCHECK'
import ctypes
try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime is not installed"); raise SystemExit
if "CUDAExecutionProvider" not in ort.get_available_providers():
    print(f"this onnxruntime build has no CUDA provider ({ort.get_available_providers()})"); raise SystemExit
try:
    ctypes.CDLL("libcuda.so.1")
except OSError:
    print("no NVIDIA driver (libcuda.so.1 does not load)"); raise SystemExit
try:
    from fasteval.models.loader import load_model
    load_model(provider="cuda", quiet=True)
except Exception as err:  # a typed ModelError when the provider falls back to the CPU
    print(f"fasteval cannot run on CUDA here: {str(err).splitlines()[0]}")
PYCHECK
)
if [ -n "$reason" ]; then
    echo "benchmarks/gpu.sh: skipped: $reason"
    exit 0
fi
exec "$PY" benchmarks/run.py --provider cuda --only encode,e2e \
    --results benchmarks/RESULTS-gpu.md --json benchmarks/results-gpu.json "$@"
