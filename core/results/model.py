"""The typed result of one model: what it was computed under, and each exam's result."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..io import RESULT_FILE  # noqa: F401 (re-exported: the results room's file name)


@dataclass
class ModelResult:
    """Everything one model's sweep produced, plus what it was computed under."""
    model: str
    model_id: str
    settings: dict[str, Any]
    protocol: str
    fasteval_version: str
    exams: dict[str, Any] = field(default_factory=dict)  # "exam1" -> Exam1Result, ...
    timings: dict[str, float] = field(default_factory=dict)
    # A served model's requests, retries, token counts, response model and raw norm (never in a key).
    usage: dict[str, Any] = field(default_factory=dict)
    # Where the numbers came from (never in a key): the CPU and its SIMD flags, the onnxruntime build and the
    # provider that ran, on the GPU its name, driver, CUDA, cuDNN and TF32 (``models.machine.provenance``).
    machine: dict[str, Any] = field(default_factory=dict)
