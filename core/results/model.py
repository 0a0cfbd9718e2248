"""The typed result of one model: what it was computed under, and each exam's result."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..io import RESULT_FILE  # noqa: F401 (re-exported: the results room's file name)

# The timing of one-time work done beside the steps (numba compiling the kernels a bootstrap needs, once per
# install), kept apart from the steps' own so a first run's "embed" is not read as the embedding's speed.
ONE_TIME_COMPILATION = "kernel_compilation_once"


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

    @property
    def display_name(self) -> str:
        """The model's name as the paper's tables show it, and the vector form it was scored in where it was not
        the float vectors ("all-MiniLM-L6-v2 [256 dims, int8]")."""
        from ..protocol import display_name
        from ..vectors import vector_words

        words = vector_words(self.settings)
        return display_name(self.model) + (f" [{words}]" if words else "")

    @property
    def one_time_seconds(self) -> float | None:
        """The seconds of one-time work done beside the steps (numba compiling the kernels, once per
        install), None where there was none."""
        return self.timings.get(ONE_TIME_COMPILATION)

    @property
    def on_paper_protocol(self) -> bool:
        """Whether it ran the paper's own protocol (what the authors' numbers and the paper's tables are about)."""
        from ..protocol.paper import PROTOCOL_VERSION

        return self.protocol in ("", PROTOCOL_VERSION)

    def beside_published(self):
        """This run beside the authors' published numbers for the paper's 24 (``core.published.beside``): its
        reproduction where it is one of them, its place among them."""
        from ..published import beside

        return beside(self)

    def printouts(self) -> list[tuple[str, str]]:
        """Each exam's printout (the notebook's), in the exams' registry order: (title, text)."""
        from ..exams import registry

        metric = self.settings.get("similarity", "cos")
        return [(e.title.format(model=self.model, metric=metric), e.text(self.exams[e.key]))
                for e in registry() if e.key in self.exams]
