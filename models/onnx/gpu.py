"""Why onnxruntime can or cannot run on the GPU here, in one line: the onnxruntime build and the CUDA major it was
built for, the NVIDIA driver found, and the first CUDA library that does not load.

onnxruntime-gpu 1.31 is a CUDA 13 build (a driver of the 580 series or newer); its CUDA libraries come from the
system or from the nvidia-* wheels of ``pip install 'fasteval[gpu]'``, wherever on ``sys.path`` those are installed
(``load_cuda_libraries``: onnxruntime's own preload looks only beside onnxruntime).
When a session asked for CUDA falls back to the CPU, onnxruntime only logs; ``cuda_problem`` names the cause.
``open_session`` is where every onnxruntime session starts, on the GPU when it is asked for and usable, else the
CPU (``planned_provider`` says which without starting one); ``readiness`` opens one on the GPU (on a graph of one
node): what ``fasteval --version`` says of the GPU, and what ``benchmarks/gpu/run.sh`` asks before a GPU run.
"""
from __future__ import annotations

import base64
import contextlib
import ctypes
import functools
import io
import logging
import re
import sys
from pathlib import Path

from ...core.errors import ModelError, first_line

log = logging.getLogger(__name__)

GPU_EXTRA = "pip install 'fasteval[gpu]'"
# The libraries onnxruntime's CUDA provider loads, by the CUDA major of its build ({major}: 12 or 13; cuDNN 9 for
# both), in the order they are loaded and a fallback is explained: the runtime, cuBLASLt (cuBLAS needs it), cuBLAS,
# cuFFT, cuRAND, cuDNN (which loads its own parts from its folder).
CUDA_LIBRARIES = ("libcudart.so.{major}", "libcublasLt.so.{major}", "libcublas.so.{major}", "libcufft.so.{cufft}",
                  "libcurand.so.10", "libcudnn.so.9")
NVIDIA_DRIVER_VERSION = Path("/proc/driver/nvidia/version")
# The CUDA provider's options. fp32 stays fp32: onnxruntime's CUDA provider lets cuBLAS round fp32 matrix products'
# inputs to TF32 (10 bits of mantissa) on Ampere and later unless told not to; torch, under the paper's
# sentence-transformers, keeps them in fp32 by default, and so does every CPU result. An fp16 graph is unaffected.
CUDA_PROVIDER_OPTIONS = {"use_tf32": "0"}


def driver_loads() -> bool:
    """Whether the NVIDIA driver's library loads (without it, asking onnxruntime for CUDA only prints errors)."""
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def driver_version() -> str | None:
    """The NVIDIA kernel driver's version ("580.159.03"), None where there is none."""
    try:
        text = NVIDIA_DRIVER_VERSION.read_text()
    except OSError:
        return None
    found = re.search(r"\b(\d{3,}\.\d+(?:\.\d+)?)\b", text)
    return found.group(1) if found else None


def build() -> tuple[str, str | None]:
    """(onnxruntime's package and version, the CUDA version it was built for, None for a CPU build)."""
    import onnxruntime as ort

    try:
        from onnxruntime.capi import build_and_package_info as info
        package, cuda = getattr(info, "package_name", "onnxruntime"), getattr(info, "cuda_version", None)
    except ImportError:
        package, cuda = "onnxruntime", None
    return f"{package} {ort.__version__}", cuda or None


def nvidia_library_folders() -> list[Path]:
    """The library folders of the nvidia-* wheels in every folder of ``sys.path`` (``nvidia/cu13/lib``,
    ``nvidia/cudnn/lib``, ``nvidia/cublas/lib`` of CUDA 12's layout, ...)."""
    folders: list[Path] = []
    for entry in dict.fromkeys(sys.path):
        root = Path(entry or ".") / "nvidia"
        with contextlib.suppress(OSError):
            folders += sorted(p for p in root.glob("*/lib") if p.is_dir())
    return folders


def _load(name: str, folders: list[Path]) -> bool:
    """Load a shared library for the whole process: by its name (already loaded, or on the system's library path),
    else from the first of ``folders`` that holds it. A library loaded from a folder is then found by its name
    when onnxruntime's CUDA provider asks for it (the loader matches the names of loaded libraries)."""
    for target in [name, *(str(folder / name) for folder in folders if (folder / name).is_file())]:
        try:
            ctypes.CDLL(target, mode=ctypes.RTLD_GLOBAL)
            return True
        except OSError:
            continue
    return False


@functools.lru_cache(maxsize=None)  # once a process: a session and the diagnosis of its fallback ask alike
def load_cuda_libraries(cuda: str | None) -> str | None:
    """Load the CUDA libraries of ``CUDA_LIBRARIES`` for the build's CUDA major (``cuda``: "13.0"), from the system
    or the nvidia-* wheels on ``sys.path`` (onnxruntime-gpu installed in another folder than its CUDA wheels, as
    with ``pip install --target``, would not find them otherwise), then let onnxruntime preload the rest of what it
    wants (its printing kept off stdout); the first library that does not load, None when they all do."""
    major = (cuda or "12").split(".")[0]
    folders = nvidia_library_folders()
    missing = None
    for pattern in CUDA_LIBRARIES:
        name = pattern.format(major=major, cufft="12" if major == "13" else "11")
        if not _load(name, folders) and missing is None:
            missing = name
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                ort.preload_dlls()
        except Exception:  # noqa: BLE001 - a failed preload leaves the libraries loaded above
            pass
        if printed.getvalue().strip():
            log.debug("onnxruntime's preload_dlls: %s", printed.getvalue().strip())
    return missing


def cuda_problem() -> str:
    """Why onnxruntime's CUDA provider is not usable here, in one sentence naming the build, the driver and the
    library that failed to load."""
    try:
        package, cuda = build()
    except ImportError:
        return "onnxruntime is not installed"
    if cuda is None:
        return f"{package} is a CPU build (no CUDA provider)"
    driver = driver_version()
    if not driver_loads():
        return f"{package} is a CUDA {cuda} build, and no NVIDIA driver loads here (libcuda.so.1)"
    where = f"{package} is a CUDA {cuda} build on NVIDIA driver {driver or '(version unknown)'}"
    library = load_cuda_libraries(cuda)
    if library is not None:
        return f"{where}, and {library} does not load"
    return f"{where}; its CUDA libraries load, but the session fell back to the CPU (see onnxruntime's log)"


def cuda_fix() -> str:
    """The fix that goes with ``cuda_problem``."""
    return (f"run with --provider cpu, or install the CUDA and cuDNN libraries of the build ({GPU_EXTRA}; "
            "CUDA 13 needs an NVIDIA driver of the 580 series or newer).")


def readiness() -> tuple[str, str]:
    """("ready", what runs) when a session on the GPU works; ("skip", why) on a machine without a GPU or a GPU
    build of onnxruntime; ("broken", why) when both are there and a session still falls back to the CPU."""
    try:
        package, cuda = build()
    except ImportError:
        return "skip", "onnxruntime is not installed"
    import onnxruntime as ort

    if cuda is None or "CUDAExecutionProvider" not in ort.get_available_providers():
        return "skip", f"{package} has no CUDA provider ({', '.join(ort.get_available_providers())})"
    if not driver_loads():
        return "skip", "no NVIDIA driver (libcuda.so.1 does not load)"
    try:
        open_session(TINY_GRAPH, "cuda", None)
    except ModelError as err:
        return "broken", str(err)
    return "ready", f"{package} (CUDA {cuda}) on NVIDIA driver {driver_version() or '(version unknown)'}"


# A one-node ONNX graph (y = x + x, opset 13, IR 8), to open a session with and without a model or the onnx
# package; tests/house/test_gpu_probe.py holds it to what onnx.helper builds.
TINY_GRAPH = base64.b64decode("CAgSCGZhc3RldmFsOjUKDgoBeAoBeBIBeSIDQWRkEgVwcm9iZVoNCgF4EggKBggBEgIKAGINCgF5EggKBggBE"
                              "gIKAEIECgAQDQ==")


def planned_provider(provider: str) -> str:
    """The provider a session will use, known without creating one: "cuda" when it is asked for (auto or
    cuda), the NVIDIA driver loads and onnxruntime has the CUDA provider; else "cpu" (an error for "cuda").
    A session may still fall back from a planned "cuda" (CUDA libraries missing); the encoder then says so."""
    if provider == "cpu":
        return "cpu"
    if driver_loads():
        import onnxruntime as ort

        if "CUDAExecutionProvider" in ort.get_available_providers():
            return "cuda"
    if provider == "cuda":
        raise ModelError(f"The CUDA execution provider is not usable here: {cuda_problem()}.", cuda_fix())
    return "cpu"


def open_session(onnx_file: Path | bytes, provider: str, threads: int | None, weights: Path | None = None):
    """An onnxruntime session of a graph (a file, or its bytes) on ``provider`` and the provider it runs on;
    ModelError, naming why, when "cuda" is asked for and the session falls back to the CPU. ``weights``: the
    folder a graph given as bytes finds its external weights in (the folder of the model.onnx it was read from)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if weights is not None:
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(weights))
    if threads:
        options.intra_op_num_threads = threads
    available = ort.get_available_providers()
    wanted: list[str | tuple[str, dict[str, str]]] = []
    if provider in ("auto", "cuda") and "CUDAExecutionProvider" in available and driver_loads():
        load_cuda_libraries(build()[1])  # what does not load, cuda_problem names if the session falls back
        wanted.append(("CUDAExecutionProvider", CUDA_PROVIDER_OPTIONS))
    wanted.append("CPUExecutionProvider")
    try:
        session = ort.InferenceSession(onnx_file if isinstance(onnx_file, bytes) else str(onnx_file),
                                       sess_options=options, providers=wanted)
    except Exception as err:  # onnxruntime raises its own exception types
        where = "the graph" if isinstance(onnx_file, bytes) else onnx_file
        raise ModelError(f"onnxruntime cannot load {where}: {first_line(err)}",
                         "re-export the model (delete the cached export folder).") from None
    used = session.get_providers()
    on_gpu = "CUDAExecutionProvider" in used
    if provider == "cuda" and not on_gpu:
        raise ModelError(f"The CUDA execution provider is not usable here: {cuda_problem()}.", cuda_fix())
    if provider == "auto" and len(wanted) > 1 and not on_gpu:
        log.warning("onnxruntime-gpu could not use the GPU (%s); running on the CPU.", cuda_problem())
    return session, ("cuda" if on_gpu else "cpu")
