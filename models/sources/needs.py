"""What a model needs of a machine, known before anything is downloaded: its parameters, its fp32 weights (what an
ONNX export holds), the memory its export takes at its peak, whether it is cached, gated, needs remote code or a
prompt; and whether this machine can export it. ``fasteval sweep --dry-run`` prints it for every model asked for;
``load_model`` refuses, before the download, a model whose export cannot fit this machine's memory, in one line
that names the need and the ways out.

An export holds the model in torch and writes it as ONNX: its peak resident memory is about three times the fp32
weights (``EXPORT_PEAK_PER_WEIGHT_BYTE``, the larger of two measurements: a 666M-parameter XLM-RoBERTa, 2.66 GB of
fp32 weights, peaked at 8.2 GB, 3.08x; a 560M one at 2.75x, benchmarks/RESULTS.md "memory"). A model whose export
is cached needs no export: it runs in less than its weights (0.59x there), budgeted at its weights. The int8 and
fp16 exports are made from the fp32 export, so making them takes what the fp32 export takes; an fp16 export runs in
half the weights.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ModelError

EXPORT_PEAK_PER_WEIGHT_BYTE = 3.1  # peak resident memory of an export per byte of fp32 weights (measured)
# About how long an export takes on a 2-core machine (torch's import, the model's load, torch.onnx.export, the fusions,
# the validations, the hashes), a line through fasteval's own exports into an empty home on 2-core machines:
# all-MiniLM-L6-v2 (23M parameters) 17 s and all-mpnet-base-v2 (109M) 26 s on an AMD EPYC, a random 560M
# XLM-RoBERTa 49 s (its session and a first encode included) on a Xeon (benchmarks/RESULTS.md: round 4, "memory").
# A rough guide (within about 2x; a busy machine takes longer, more cores less), for planning a first sweep: the
# export, not the exams, is most of it.
EXPORT_SECONDS_FIXED = 15.0
EXPORT_SECONDS_PER_MILLION_PARAMS = 0.06
BYTES_PER_PARAM = {"fp32": 4, "fp16": 2, "int8": 4}  # as a session holds them (int8: budgeted as fp32)
GIB = 1024 ** 3
MEMORY_WAYS_OUT = ("serve it (llama.cpp, TEI, vLLM) and pass --model URL, or export it on a machine with more memory "
                   "and copy its FASTEVAL_HOME here (an --dtype fp16 export then runs in half the weights).")
OFFLINE_WAYS_OUT = ("unset HF_HUB_OFFLINE for the download, or copy a FASTEVAL_HOME that holds it from a machine "
                    "that has it.")
# The dtypes a safetensors header names, and their bytes per parameter
_SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                      "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


@dataclass(frozen=True)
class Needs:
    """One model's plan: where it comes from, its size, what its export takes, and whether this machine can."""
    model: str
    source: str  # "PyPI", "Hub", "folder", "served"
    params: int | None  # None: not known before the download
    cached: bool  # its folder is here (a served model: False, nothing is cached for it)
    exported: bool  # its ONNX export is here (nothing to export)
    gated: bool = False
    remote_code: bool = False
    prompts: str | None = None
    dtype: str = "fp32"
    memory: int | None = None  # this machine's memory, bytes
    offline: bool = False  # HF_HUB_OFFLINE is set and its folder is not cached: the sweep cannot fetch it
    static: bool = False  # a static embedding model: nothing to export (model2vec embeds its table)

    @property
    def weights_bytes(self) -> int | None:
        """Its weights as the export holds them (fp32; fp16 halves them)."""
        return None if self.params is None else self.params * BYTES_PER_PARAM.get(self.dtype, 4)

    @property
    def export_weights_bytes(self) -> int | None:
        """The fp32 weights its export holds in torch (every dtype is made from the fp32 export)."""
        return None if self.params is None else self.params * BYTES_PER_PARAM["fp32"]

    @property
    def peak_bytes(self) -> int | None:
        """The memory it needs at its peak here: the fp32 export's when it must be exported, else its weights'."""
        weights, export = self.weights_bytes, self.export_weights_bytes
        if weights is None or export is None or self.source == "served":
            return None
        return weights if self.exported else int(export * EXPORT_PEAK_PER_WEIGHT_BYTE)

    @property
    def export_seconds(self) -> float | None:
        """About how long its export takes here (``EXPORT_SECONDS_*``); None where nothing is exported (cached,
        static, served) or its size is not known before the download."""
        if self.params is None or self.exported or self.static or self.source == "served":
            return None
        return EXPORT_SECONDS_FIXED + EXPORT_SECONDS_PER_MILLION_PARAMS * self.params / 1e6

    @property
    def fits(self) -> bool | None:
        """Whether this machine's memory holds its peak (None: not known)."""
        peak = self.peak_bytes
        return None if peak is None or not self.memory else peak <= self.memory

    @property
    def refusal(self) -> str | None:
        """The one line that refuses it here, every reason in it (offline and too big for this machine's memory:
        both); None when it fits or nothing is known."""
        offline = f"{self.model} is not cached, and HF_HUB_OFFLINE is set: the sweep cannot fetch it."
        reasons = [r for r in (offline if self.offline else None, self.memory_refusal) if r]
        return " And ".join([reasons[0], *(r[0].lower() + r[1:] for r in reasons[1:])]) if reasons else None

    @property
    def memory_refusal(self) -> str | None:
        """The one line that refuses it for this machine's memory; None when it fits or nothing is known."""
        if self.fits is not False:
            return None
        return (f"{self.model} needs about {_gib(self.peak_bytes)} GB of memory to export "
                f"({EXPORT_PEAK_PER_WEIGHT_BYTE}x its {_gib(self.export_weights_bytes)} GB of fp32 weights); this "
                f"machine has {_gib(self.memory)} GB.")

    @property
    def ways_out(self) -> str:
        ways = [OFFLINE_WAYS_OUT if self.offline else "", MEMORY_WAYS_OUT if self.memory_refusal else ""]
        return " Then ".join(w for w in ways if w) or MEMORY_WAYS_OUT


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.1f}"


def machine_memory() -> int | None:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def folder_params(folder: Path) -> int | None:
    """The parameters of a model folder's weights, read from its safetensors headers (no tensor is loaded); for
    .bin or ONNX weights only, their bytes / 4 (fp32); None when it has no weights."""
    from .bounds import safetensors_header

    total = 0
    for path in sorted(Path(folder).glob("*.safetensors")):
        for tensor in safetensors_header(path).values():  # its form checked: one line for a broken header
            count = 1
            for dim in tensor["shape"]:
                count *= dim
            total += count
    if total:
        return total
    other = [p for pattern in ("*.bin", "model.onnx", "model.onnx_data", "*.onnx.data") for p in folder.glob(pattern)]
    return sum(p.stat().st_size for p in other) // 4 or None


def needs_of(name: str, dtype: str = "fp32", memory: int | None = None) -> Needs:
    """What ``name`` (a registry name, a model folder, a Hugging Face id or a served URL) needs here, from the
    registry and whatever is already on this machine; nothing is downloaded."""
    from ...core.choices import is_url, public_model
    from .folder import content_hash
    from ...core.io import fasteval_home
    from .registry import cache_folder, export_dir, find_spec

    memory = machine_memory() if memory is None else memory
    if is_url(name):  # shown without its credentials; nothing is cached for it, and a dry run does not call it
        return Needs(public_model(name), "served", None, False, False, dtype=dtype, memory=memory)
    spec = find_spec(name)
    path = Path(name).expanduser()
    if spec is None and path.is_dir():
        folder, source = path, "folder"
    else:
        folder = cache_folder(spec.hf_id if spec else name)
        source = "PyPI" if spec is not None and spec.source is not None else "Hub"
    cached = folder.is_dir()
    from ..static import is_static_folder

    # a static model has nothing to export (model2vec embeds its table)
    static = bool(spec and spec.static) or (cached and is_static_folder(folder))
    exported = static or (cached and (
        (folder / "model.onnx").is_file()
        or (export_dir(fasteval_home(), content_hash(folder), dtype) / "model.onnx").is_file()))
    params = folder_params(folder) if cached else None
    if params is None and spec is not None and spec.params_m is not None:
        params = int(spec.params_m * 1e6)
    prompts = spec.prompts if spec else None
    if cached and not prompts:  # a folder's own prompts (config_sentence_transformers.json), by name
        prompts = ", ".join(folder_prompts(folder)) or None
    offline = source == "Hub" and not cached and hub_offline()
    return Needs(spec.name if spec else (path.name if source == "folder" else name), source, params, cached,
                 exported, gated=bool(spec and spec.gated), remote_code=bool(spec and spec.remote_code),
                 prompts=prompts, dtype=dtype, memory=memory, offline=offline, static=static)


def folder_prompts(folder: Path) -> list[str]:
    """The names of the prompts a model folder's config_sentence_transformers.json configures (none applied unless
    asked for by --prompt-name, as in the paper)."""
    from ...core.errors import ModelError
    from .bounds import read_json_file
    from .folder import configured_prompts

    path = Path(folder) / "config_sentence_transformers.json"
    try:
        config = read_json_file(path) if path.exists() else {}
    except ModelError:  # the dry run's words only: loading the folder says what is wrong with it, in one line
        return []
    return list(configured_prompts(config))


def hub_offline() -> bool:
    """Whether the Hugging Face Hub is switched off here (HF_HUB_OFFLINE, as huggingface_hub reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def require_fits(name: str, dtype: str = "fp32") -> None:
    """ModelError, in one line naming the need and the ways out, when ``name``'s export cannot fit this machine's
    memory: before its download (a registry name's size is known from its card) or its export."""
    needs = needs_of(name, dtype)
    if needs.memory_refusal:  # (offline and not cached: the download names it, with the Hub id)
        raise ModelError(needs.memory_refusal, MEMORY_WAYS_OUT)
