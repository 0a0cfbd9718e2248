#!/usr/bin/env bash
# The GPU lines of the benchmarks: encode and the whole sweep with fasteval on onnxruntime's CUDA provider
# (I/O binding on, the sentence head in the graph), against sentence-transformers on the GPU when torch sees one
# (else on the CPU, and the report says so); the three exams on the GPU against the CPU number by number (fp32:
# Exam 1's 20 cells, Exam 2's rows, Exam 3's rows, each difference named); and the gpu section: throughput over batch sizes 32 to 1024 in fp32 and fp16,
# the share of the GPU's GEMM rate, fp16's drift against fp32. Skips, exit 0, with a reason on a machine without a GPU; exits 1 naming the library when
# a GPU is there and onnxruntime still cannot use it.
#
#   benchmarks/gpu/run.sh [--quick]          (uses .venv/bin/python when present, else python3)
#
# Writes benchmarks/RESULTS-gpu.md and benchmarks/results-gpu.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3

# Ready? fasteval's own probe (benchmarks/gpu/probe.py, held by tests/house/test_gpu_probe.py): a session on the GPU
# through the encoder's session code. No GPU build or no driver: skipped, exit 0. A GPU whose session falls back to
# the CPU: the build, the driver and the library that does not load, exit 1 (never "skipped").
set +e
state=$("$PY" benchmarks/gpu/probe.py)
code=$?
set -e
case $code in
    0) echo "benchmarks/gpu/run.sh: $state" ;;
    2) echo "benchmarks/gpu/run.sh: skipped: ${state#skip: }"; exit 0 ;;
    *) echo "benchmarks/gpu/run.sh: CUDA is here but onnxruntime cannot use it: ${state#broken: }" >&2; exit 1 ;;
esac
exec "$PY" -m benchmarks --provider cuda --only encode,e2e,gpu \
    --results benchmarks/RESULTS-gpu.md --json benchmarks/results-gpu.json "$@"
