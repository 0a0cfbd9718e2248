"""What MTEB is told of fasteval's tasks: each exam's ``TaskMetadata`` (``metadata_of``, from the exam registry:
its task's name, description, main score) and the ``mteb/`` files of a result folder: one genuine MTEB task
result per exam, and ``model_meta.json``.

They are written directly, in the shape MTEB's own ``TaskResult.to_disk`` writes (a test holds this writer to
``fasteval.mteb.task_results``, which goes through MTEB), so a sweep never imports MTEB (and with it torch, 3 s)
and ``mteb.TaskResult.from_disk`` loads them: ``{"dataset_revision", "task_name", "mteb_version", "scores":
{"test": [{...scores, "main_score", "hf_subset", "languages", "mteb_version"}]}, "evaluation_time",
"kg_co2_emissions", "date", "evaluation_phases"}``, scores rounded to 6 decimals as MTEB rounds them, on MTEB's
0-1 scale, from each exam's ``mteb_scores`` (``scores_of``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import InputError
from ..exams import task_exams, task_scores
from ..io import dumps
from .model import ModelResult

LANGUAGES = ["eng-Latn"]
SPLIT, SUBSET = "test", "default"  # the one split and subset of every PhysScore task
MTEB_DIGITS = 6  # TaskResult.to_disk rounds every score to 6 decimals


REFERENCE = "https://arxiv.org/abs/2609.20821"
BIBTEX = """@article{opitz2026peculiar,
  title   = {Embedding Models Measure in Peculiar Ways},
  author  = {Opitz, Juri and Michail, Andrianos},
  journal = {arXiv preprint arXiv:2609.20821},
  year    = {2026}
}"""


def require_mteb():
    """The mteb module, or one line saying how to install it."""
    try:
        import mteb
    except ImportError:
        raise InputError("fasteval.mteb needs MTEB, which is not installed.",
                         "pip install 'fasteval[mteb]'") from None
    return mteb


def metadata_kwargs(name: str) -> dict[str, Any]:
    """What MTEB's TaskMetadata of one task is made of: its dataset (``fasteval/<task>``, pinned at the protocol's
    version: the tag its Hub dataset carries), type and main score, license, citation, domains, how its samples
    were made and annotated."""
    from .. import protocol as P

    exam = task_exams()[name]
    return dict(
        name=name, description=exam.mteb_description, reference=REFERENCE,
        dataset={"path": f"fasteval/{name}", "revision": P.PROTOCOL_VERSION},
        type=exam.mteb_type, category="t2t", modalities=["text"],
        eval_splits=[SPLIT], eval_langs=LANGUAGES, main_score=exam.main_score, date=("2026-01-01", "2026-09-30"),
        domains=["Constructed"], task_subtypes=[], license="apache-2.0", annotations_creators="derived",
        dialect=[], sample_creation="created", bibtex_citation=BIBTEX,
    )


@lru_cache(maxsize=None)
def metadata_of(name: str):
    """The TaskMetadata of one PhysScore task."""
    mteb = require_mteb()
    return mteb.TaskMetadata(**metadata_kwargs(name))


def _model_meta(result: ModelResult) -> dict:
    return {"name": result.model, "revision": result.settings.get("key") or result.settings.get("onnx_sha256"),
            "framework": ["ONNX", "fasteval"], "similarity_fn_name": result.settings.get("similarity", "cos"),
            "fasteval_settings": result.settings}


def mteb_files(result: ModelResult) -> dict[str, str]:
    payloads = {"mteb/model_meta.json": _model_meta(result)}
    if result.protocol and result.protocol == _paper_version():  # the tasks are the paper protocol's, not another's
        version = _mteb_version()
        exams = task_exams()
        for task, unrounded in task_scores(result.exams).items():
            scores = {k: (round(v, MTEB_DIGITS) if isinstance(v, float) else v) for k, v in unrounded.items()}
            payloads[f"mteb/{task}.json"] = {
                "dataset_revision": result.protocol, "task_name": task, "mteb_version": version,
                "scores": {SPLIT: [{**scores, "hf_subset": SUBSET, "languages": LANGUAGES, "mteb_version": version}]},
                "evaluation_time": float(result.timings.get(exams[task].key, 0.0) or 0.0), "kg_co2_emissions": None,
                "date": None, "evaluation_phases": None}
    return {name: dumps(payload) for name, payload in payloads.items()}


def _mteb_version() -> str | None:
    """The installed MTEB's version (from its metadata, without importing it), else None."""
    import importlib.metadata

    try:
        return importlib.metadata.version("mteb")
    except importlib.metadata.PackageNotFoundError:
        return None


def _paper_version() -> str:
    from ..protocol.paper import PROTOCOL_VERSION

    return PROTOCOL_VERSION
