"""Where a number came from: the machine an encoder ran on, recorded beside every result (never in its key).

``cpu_facts`` reads the processor's model and the SIMD extensions that change onnxruntime's and numba's kernels;
``provenance`` adds what ran the model: the onnxruntime build and the provider that ran, and on the GPU its name,
the NVIDIA driver, the CUDA version of the build, the cuDNN wheel's version and the TF32 state (off: fasteval keeps
fp32 in fp32, ``gpu.CUDA_PROVIDER_OPTIONS``). Read from the system and package metadata; nothing is started.
"""
from __future__ import annotations

import ctypes
import functools
import platform
from typing import Any

# The SIMD extensions that change which kernels run (onnxruntime's MLAS, numba), as /proc/cpuinfo names them.
SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


@functools.lru_cache(maxsize=1)
def cpu_facts() -> dict[str, Any]:
    """{"cpu": model name, "simd": the SIMD_FLAGS it has} (the platform's name where /proc/cpuinfo is absent)."""
    cpu = platform.processor() or platform.machine()
    simd: list[str] = []
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        cpu = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), cpu)
        flags = set(next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("flags")), []))
        simd = [f for f in SIMD_FLAGS if f in flags]
    except OSError:
        pass
    return {"cpu": cpu, "simd": simd}


def gpu_name() -> str | None:
    """The first GPU's name, asked of the NVIDIA driver (libcuda's cuDeviceGetName); None without one."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        device, name = ctypes.c_int(), ctypes.create_string_buffer(256)
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return None
        if cuda.cuDeviceGetName(name, len(name), device) != 0:
            return None
        return name.value.decode(errors="replace") or None
    except (OSError, AttributeError):
        return None


def provenance(provider: str | None) -> dict[str, Any]:
    """The machine block of a result: ``cpu_facts``, the onnxruntime build (where one is installed) and the
    ``provider`` that ran; on CUDA the GPU, driver, CUDA, cuDNN and TF32 as well."""
    from importlib import metadata

    facts: dict[str, Any] = {**cpu_facts(), "provider": provider}
    try:
        from .onnx.gpu import build

        facts["onnxruntime"], cuda = build()
    except ImportError:
        cuda = None
    if provider == "cuda":
        from .onnx.gpu import CUDA_PROVIDER_OPTIONS, driver_version

        cudnn = None
        for dist in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"):
            try:
                cudnn = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
        facts.update({"gpu": gpu_name(), "driver": driver_version(), "cuda": cuda, "cudnn": cudnn,
                      "tf32": "on" if CUDA_PROVIDER_OPTIONS.get("use_tf32") != "0" else "off"})
    return facts


def version_lines() -> list[str]:
    """What a bug report needs (``fasteval --version``): fasteval's version, Python's, the onnxruntime build with
    the execution providers it offers here (CUDAExecutionProvider only where the GPU build is installed), the
    NVIDIA driver found, the CUDA version the build is for and, on a machine with both, whether a session runs on
    the GPU (and why not)."""
    from .. import __version__
    from ..core.errors import first_line
    from . import installed_version

    lines = [f"fasteval {__version__} (Python {platform.python_version()}, {platform.system()} {platform.machine()})"]
    builds = [f"{name} {installed_version(name)}" for name in ("onnxruntime-gpu", "onnxruntime")
              if installed_version(name)]
    try:
        import onnxruntime

        providers = ", ".join(onnxruntime.get_available_providers())
    except Exception as err:  # a broken install is what the report should show, not a traceback
        providers = f"cannot be imported ({type(err).__name__}: {first_line(err, 120)})"
    lines.append(f"onnxruntime: {' and '.join(builds) or 'not installed'}; providers built in: {providers}")
    from .onnx.gpu import build, driver_loads, driver_version, readiness

    try:
        cuda = build()[1]
    except ImportError:
        cuda = None
    gpu = f"GPU: NVIDIA driver {driver_version() or 'not found'}; onnxruntime built for " + (
        f"CUDA {cuda}" if cuda else "the CPU only")
    if cuda and driver_loads():  # a GPU machine: open a session there, and say why not when it falls back
        state, reason = readiness()
        gpu += "; a session runs on the GPU" if state == "ready" else f"; no session on the GPU: {reason}"
    lines.append(gpu)
    return lines
