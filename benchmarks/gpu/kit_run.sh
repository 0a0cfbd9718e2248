#!/usr/bin/env bash
# The GPU machine's side of the kit (benchmarks/gpu/kit.py, benchmarks/GPU-RUN.md), run by the last device call,
# once every part is there: check and reassemble the parts, install the kit's wheels with --no-index into
# .gpukit/site (first on PYTHONPATH, ahead of the image's CPU onnxruntime), check that onnxruntime is now the kit's
# GPU build and that the model is there offline, then run benchmarks/gpu/run.sh (fasteval's GPU probe, then the encode
# and e2e sections on CUDA, the three exams on the GPU against the CPU number by number) into RESULTS-gpu.md.
#
#   bash benchmarks/gpu/kit_run.sh [--provider cuda|cpu] [--quick]
#
# --provider cpu is the dry run of every step but the GPU (here, in a Python 3.12 environment like the image's):
# the same unpacking and checks, then the same sections on the CPU into .gpukit/RESULTS-dry.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
provider=cuda
if [ "${1:-}" = "--provider" ]; then provider=$2; shift 2; fi
PY=${PYTHON:-python3}
"$PY" benchmarks/gpu/kit.py unpack
export PYTHONPATH="$PWD/.gpukit/site:$PWD/.gpukit/path${PYTHONPATH:+:$PYTHONPATH}"
export FASTEVAL_HOME="$PWD/.gpukit/kit/home" PYTHON="$PY"
"$PY" - <<'CHECK'
import json
from importlib import metadata
from pathlib import Path

import onnxruntime

import fasteval

kit = json.loads(Path(".gpukit/kit/KIT.json").read_text())
where = Path(onnxruntime.__file__).resolve()
assert Path(".gpukit/site").resolve() in where.parents, f"onnxruntime is imported from {where}, not the kit's"
build = onnxruntime.capi.build_and_package_info
print(f"gpu kit: fasteval {fasteval.__version__}; {build.package_name} {onnxruntime.__version__} (CUDA "
      f"{getattr(build, 'cuda_version', None)}) from .gpukit/site; providers {onnxruntime.get_available_providers()}; "
      f"model {kit['model']} (onnx {str(kit['onnx_sha256'])[:12]}) in FASTEVAL_HOME, offline")

# The CUDA libraries the kit's onnxruntime-gpu needs, found in the image's own nvidia-* wheels (another site folder
# than .gpukit/site, where onnxruntime's preload alone would not look).
from fasteval.models.onnx.gpu import load_cuda_libraries, nvidia_library_folders

missing = load_cuda_libraries(getattr(build, "cuda_version", None))
assert missing is None, f"{missing} is not on this machine (searched {[str(f) for f in nvidia_library_folders()]})"
print(f"gpu kit: the CUDA and cuDNN libraries load from {', '.join(str(f) for f in nvidia_library_folders()[:2])}")

# The GPU's sentence head (pooling, Normalize in the graph) built with this machine's onnx, run on its CPU against
# numpy's head: a head that cannot be built here fails now, in seconds, not in the middle of the GPU run.
import numpy as np
from fasteval.core.runs.bench import paper_texts
from fasteval.models.loader import load_model

texts = paper_texts()[:200]
plain, headed = (load_model(kit["model"], provider="cpu") for _ in range(2))
headed.graph_head = True
diff = float(np.abs(headed.encode(texts) - plain.encode(texts)).max())
assert headed.graph_head and diff < 1e-5, diff
print(f"gpu kit: the sentence head in the graph equals numpy's on the CPU (max |diff| {diff:.1e} on {len(texts)} texts)")
CHECK
if [ "$provider" = "cuda" ]; then
    status=0
    bash benchmarks/gpu/run.sh "$@" || status=$?
    if [ -n "${OUT:-}" ]; then  # the device tool brings back what is under $OUT
        cp benchmarks/RESULTS-gpu.md benchmarks/results-gpu.json "$OUT"/ 2>/dev/null || true
    fi
    exit $status
fi
exec "$PY" -m benchmarks --provider cpu --only encode,e2e,gpu --results .gpukit/RESULTS-dry.md \
    --json .gpukit/results-dry.json "$@"
