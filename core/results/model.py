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
    # The model's Hugging Face id where fasteval's registry knew it when the result was made (what the Every Eval
    # Ever and Hugging Face records name it by, so the same result gives the same records on any later version);
    # None for another model, and in results written before it was recorded.
    hf_id: str | None = None

    def provenance(self) -> dict[str, Any]:
        """How this result was made, beside its numbers: the one list every record of it draws on (the long
        table's columns, the Every Eval Ever record's details): its key, fasteval's version, the protocol, the
        similarity, the vector options, the precision, the provider, the quantities' normalisation, the prompt, a
        served model's URL and the machine (its CPU; its GPU)."""
        s = self.settings
        said = s.get("deployment")
        deployment: dict[str, Any] = said if isinstance(said, dict) else {}
        machine = self.machine or {}
        return {"key": s.get("key"), "fasteval_version": self.fasteval_version, "protocol": self.protocol,
                "similarity": s.get("similarity", "cos"), "dimensions": s.get("dimensions"),
                "vector_quantization": s.get("vector_quantization"), "calibration": s.get("calibration"),
                "dtype": s.get("dtype"), "provider": s.get("provider"),
                "normalize_quantities": s.get("normalize_quantities"), "prompt": s.get("prompt"),
                "deployment": deployment.get("url"),
                "machine": "; ".join(str(machine[k]) for k in ("cpu", "gpu") if machine.get(k)) or None}

    def task_scores(self) -> dict[str, dict[str, float | None]]:
        """Each PhysScore task this result ran -> its MTEB scores (``core.exams.task_scores``: 0-1, non-finite as None,
        with its ``main_score``)."""
        from ..exams import task_scores

        return task_scores(self.exams)

    @property
    def display_name(self) -> str:
        """The model's name as the paper's tables show it, and the vector form it was scored in where it was not
        the float vectors ("all-MiniLM-L6-v2 [256 dims, int8]")."""
        from ..protocol import display_name
        from ..vectors import vector_words

        words = vector_words(self.settings)
        return display_name(self.model) + (f" [{words}]" if words else "")

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
