"""benchmarks/gpu/run.sh's readiness probe (benchmarks/gpu/probe.py, fasteval.models.onnx.gpu.readiness), run here
against a stand-in for onnxruntime that lists the CUDA provider and stand-ins for the NVIDIA driver and CUDA libraries
(copies of libm under their names, found through LD_LIBRARY_PATH): the probe goes through the encoder's own session
code, so a renamed parameter fails this test, not a GPU run (the probe once called load_model(quiet=True) after
`quiet` was gone, and every GPU run "skipped"). A session that falls back to the CPU names the build, the driver
and the library that does not load, and gpu.sh exits 1, never "skipped" with 0."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import ROOT

STAND_IN = '''
__version__ = "1.31.1"
ON_GPU = {on_gpu}


def get_available_providers():
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def preload_dlls():
    pass


class GraphOptimizationLevel:
    ORT_ENABLE_ALL = 99


class SessionOptions:
    graph_optimization_level = None
    intra_op_num_threads = 0


class InferenceSession:
    def __init__(self, model, sess_options=None, providers=()):
        assert isinstance(model, (bytes, str)) and isinstance(sess_options, SessionOptions), (model, sess_options)
        for p in providers:  # onnxruntime's forms: a name, or (name, options of strings)
            assert isinstance(p, str) or (isinstance(p, tuple) and isinstance(p[0], str) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in p[1].items())), p
        self.providers = [p if isinstance(p, str) else p[0] for p in providers]

    def get_providers(self):
        return [p for p in self.providers if ON_GPU or p != "CUDAExecutionProvider"]
'''


def libm() -> Path:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    return Path(next(line.split("=>")[1].strip() for line in out.splitlines() if "libm.so.6 " in line))


def machine(tmp_path: Path, libraries: list[str], on_gpu: bool, wheels: tuple[str, ...] = ()) -> dict:
    """An environment whose onnxruntime is the stand-in (a CUDA 13 build) and whose loadable libraries are
    ``libraries`` (plus the driver, libcuda.so.1) on the library path, and ``wheels`` in the nvidia-* wheels' folders
    of another site folder on sys.path (CUDA 13's nvidia/cu13/lib, cuDNN's nvidia/cudnn/lib), as when onnxruntime-gpu
    is installed apart from its CUDA wheels (the GPU kit's --target folder beside the image's own)."""
    site = tmp_path / "site" / "onnxruntime"
    (site / "capi").mkdir(parents=True)
    (site / "__init__.py").write_text(STAND_IN.format(on_gpu=on_gpu))
    (site / "capi" / "__init__.py").write_text("")
    (site / "capi" / "build_and_package_info.py").write_text(
        'package_name = "onnxruntime-gpu"\ncuda_version = "13.0"\n')
    libs = tmp_path / "lib"
    libs.mkdir()
    for name in ["libcuda.so.1", *libraries]:
        shutil.copy(libm(), libs / name)
    for name in wheels:
        folder = tmp_path / "wheels" / "nvidia" / ("cudnn" if "cudnn" in name else "cu13") / "lib"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(libm(), folder / name)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(tmp_path / "wheels"),
                                                         os.environ.get("PYTHONPATH", "")]),
            "LD_LIBRARY_PATH": str(libs), "PYTHON": sys.executable}


def probe(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "probe.py")], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.parametrize("present, missing", [
    (["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcufft.so.12", "libcurand.so.10"], "libcudnn.so.9"),
    (["libcudart.so.13"], "libcublasLt.so.13"),
])
def test_a_session_that_falls_back_names_the_library_and_gpu_sh_exits_1(tmp_path, present, missing):
    env = machine(tmp_path, present, on_gpu=False)
    proc = probe(env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("broken: The CUDA execution provider is not usable here: onnxruntime-gpu 1.31.1 "
                                  "is a CUDA 13.0 build on NVIDIA driver"), proc.stdout
    assert f"and {missing} does not load" in proc.stdout and "fasteval[gpu]" in proc.stdout, proc.stdout
    script = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run.sh")], capture_output=True, text=True,
                            env=env, timeout=120)
    assert script.returncode == 1 and "skipped" not in script.stdout + script.stderr, script.stdout + script.stderr
    assert "CUDA is here but onnxruntime cannot use it" in script.stderr and missing in script.stderr
    version = subprocess.run([sys.executable, "-c", "from fasteval.cli.main import main; main()", "--version"],
                             capture_output=True, text=True, env=env, timeout=120)
    gpu = version.stdout.splitlines()[-1]
    assert version.returncode == 0 and gpu.startswith("GPU: NVIDIA driver "), version.stdout + version.stderr
    assert "no session on the GPU: The CUDA execution provider is not usable here" in gpu and missing in gpu, gpu


ALL_13 = ("libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcufft.so.12", "libcurand.so.10",
          "libcudnn.so.9")


@pytest.mark.parametrize("wheels, named", [
    (ALL_13, "its CUDA libraries load, but the session fell back to the CPU"),
    (ALL_13[:-1], "and libcudnn.so.9 does not load"),
])
def test_the_cuda_wheels_are_found_in_another_site_folder(tmp_path, wheels, named):
    """onnxruntime's own preload looks for the nvidia-* wheels only beside onnxruntime; fasteval finds them in any
    folder of sys.path, so the diagnosis moves past them (and a session can load them)."""
    proc = probe(machine(tmp_path, [], on_gpu=False, wheels=wheels))
    assert proc.returncode == 1 and named in proc.stdout, proc.stdout + proc.stderr


def test_a_session_on_the_gpu_is_ready(tmp_path):
    env = machine(tmp_path, [], on_gpu=True)
    proc = probe(env)
    assert proc.returncode == 0 and proc.stdout.startswith("ready: onnxruntime-gpu 1.31.1 (CUDA 13.0) on NVIDIA "
                                                            "driver"), proc.stdout + proc.stderr


def test_without_a_driver_or_a_gpu_build_it_skips(tmp_path):
    env = machine(tmp_path, [], on_gpu=True)
    (tmp_path / "lib" / "libcuda.so.1").unlink()
    proc = probe(env)
    assert proc.returncode == 2 and proc.stdout.strip() == "skip: no NVIDIA driver (libcuda.so.1 does not load)"
    script = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run.sh")], capture_output=True, text=True,
                            env=env, timeout=120)
    assert script.returncode == 0 and "skipped: no NVIDIA driver" in script.stdout


def test_the_probe_graph_is_what_onnx_builds():
    """The probe's one-node graph, kept as bytes (no onnx package needed), is y = x + x as onnx.helper makes it."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from fasteval.models.onnx.gpu import TINY_GRAPH

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="fasteval")
    model.ir_version = 8
    assert TINY_GRAPH == model.SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(TINY_GRAPH))
    import numpy as np
    import onnxruntime

    session = onnxruntime.InferenceSession(TINY_GRAPH, providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": np.array([1.5, -2.0], np.float32)})[0].tolist() == [3.0, -4.0]
