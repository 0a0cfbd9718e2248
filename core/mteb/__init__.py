"""fasteval inside MTEB (``pip install 'fasteval[mteb]'``): the paper's exams as MTEB tasks, MTEB models as
fasteval encoders, and result files MTEB loads.

    import mteb, fasteval
    model = mteb.get_model("path/to/sentence-transformers-folder")
    results = mteb.evaluate(model, tasks=fasteval.mteb.tasks())

* ``tasks()`` returns the tasks ``PhysScoreMeasurementGeometry`` (Exam 1, main score Kendall τ),
  ``PhysScoreLexicalNumeric`` (Exam 2, τ-b of similarity against numeric distance), ``PhysScoreProbe``
  (Exam 3, the probe's τ) and ``PhysScoreConversion`` (the conversion exam, recall@1): ``AbsTask`` classes with
  full ``TaskMetadata`` whose data fasteval's protocol generates (no download; the dataset revision is the
  protocol's version). Each encodes the protocol's groups one MTEB ``encode`` call each, exactly as the paper's
  notebook called sentence-transformers, so the scores are ``fasteval sweep``'s (0.36967 for
  all-MiniLM-L6-v2 on the CPU).
* ``MtebEncoder(model)`` is the one adapter from MTEB's encoder protocol (``encode(DataLoader,
  task_metadata=..., hf_split=..., hf_subset=...)``) to fasteval's (``encode(list[str])``);
  every entry point of fasteval applies it to any MTEB model by itself (``fasteval.core.encoders``).
* ``task_results(result)`` turns a fasteval result into MTEB ``TaskResult`` objects (the ``mteb/`` files of a
  result folder hold the same, written without importing MTEB).

The tasks are the exam registry's (``fasteval.core.exams``): each exam's record names its task, description,
main score and scores. Import it as ``fasteval.mteb`` (``import fasteval.mteb``, ``from fasteval.mteb import
tasks``): the same module as ``fasteval.core.mteb``, registered under both names and run on first use.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import InputError
from ..exams import Exam, registry
from ..results.mteb import SPLIT, SUBSET, scores_of

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


class MtebEncoder:
    """An MTEB model seen as a fasteval encoder: each ``encode(list[str])`` is one MTEB ``encode`` call over a
    DataLoader of those texts (batch size from ``encode_kwargs``, default 32), returned as float32."""

    def __init__(self, model: Any, task_metadata=None, hf_split: str = SPLIT, hf_subset: str = SUBSET,
                 encode_kwargs: dict | None = None):
        require_mteb()
        self.model = model
        self.task_metadata = task_metadata if task_metadata is not None else metadata_of("PhysScoreMeasurementGeometry")
        self.hf_split, self.hf_subset = hf_split, hf_subset
        self.encode_kwargs = {"batch_size": 32, "show_progress_bar": False, **(encode_kwargs or {})}
        meta = getattr(model, "mteb_model_meta", None)
        self.name = str(getattr(meta, "name", None) or getattr(model, "name", None) or type(model).__name__)
        tokenizer = getattr(getattr(model, "model", None), "tokenizer", None) or getattr(model, "tokenizer", None)
        if tokenizer is not None and callable(getattr(tokenizer, "encode", None)):
            self.tokenizer = tokenizer

    def encode(self, texts: list[str]) -> np.ndarray:
        from datasets import Dataset
        from mteb._create_dataloaders import create_dataloader

        loader = create_dataloader(Dataset.from_dict({"text": list(texts)}), task_metadata=self.task_metadata,
                                   input_column="text", batch_size=int(self.encode_kwargs["batch_size"]))
        out = self.model.encode(loader, task_metadata=self.task_metadata, hf_split=self.hf_split,
                                hf_subset=self.hf_subset, prompt_type=None, **self.encode_kwargs)
        if hasattr(out, "detach"):
            out = out.detach().cpu().numpy()
        out = np.asarray(out, dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise InputError(f"The MTEB model {self.name} returned embeddings of shape {out.shape} for {len(texts)} "
                             "texts.", "its encode must return one row per input text, (n, dim).")
        return out


def task_exams() -> dict[str, Exam]:
    """Task name -> the exam it runs, in registry order."""
    return {e.mteb_task: e for e in registry()}


def _metadata_kwargs(name: str) -> dict[str, Any]:
    from .. import protocol as P

    exam = task_exams()[name]
    return dict(
        name=name, description=exam.mteb_description, reference=REFERENCE,
        dataset={"path": f"fasteval/{name}", "revision": P.PROTOCOL_VERSION},
        type=exam.mteb_type, category="t2t", modalities=["text"],
        eval_splits=[SPLIT], eval_langs=["eng-Latn"], main_score=exam.main_score, date=("2026-01-01", "2026-09-30"),
        domains=["Constructed"], task_subtypes=[], license="apache-2.0", annotations_creators="derived",
        dialect=[], sample_creation="created", bibtex_citation=BIBTEX,
    )


@lru_cache(maxsize=None)
def metadata_of(name: str):
    """The TaskMetadata of one PhysScore task."""
    mteb = require_mteb()
    return mteb.TaskMetadata(**_metadata_kwargs(name))


@lru_cache(maxsize=None)
def _task_class(name: str):
    """The AbsTask subclass of one PhysScore task (built once MTEB is importable)."""
    require_mteb()
    from mteb.abstasks import AbsTask

    class PhysScoreTask(AbsTask):
        metadata = metadata_of(name)

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            """The protocol's texts, generated here (one row per text, with the encode call it belongs to)."""
            if self.data_loaded:
                return
            from datasets import Dataset, DatasetDict

            from ..exams import protocol_groups

            texts, groups = [], []
            for k, group in enumerate(protocol_groups((task_exams()[name].choice,))):
                texts += list(group)
                groups += [k] * len(group)
            self.dataset = {SUBSET: DatasetDict({SPLIT: Dataset.from_dict({"text": texts, "group": groups})})}
            self.data_loaded = True

        def _calculate_descriptive_statistics_from_split(self, split: str, *, hf_subset: str | None = None,
                                                         compute_overall: bool = False,
                                                         num_proc: int | None = None) -> dict[str, Any]:
            """The number of texts and of encode calls (the texts are generated, so this is all there is)."""
            self.load_data()
            rows = self.dataset[SUBSET][split]
            return {"num_samples": len(rows), "num_encode_calls": len(set(rows["group"])),
                    "unique_texts": len(set(rows["text"]))}

        def _evaluate_subset(self, model, data_split, *, hf_split: str, hf_subset: str, encode_kwargs,
                             **kwargs: Any) -> dict[str, float]:
            from ..embeddings import describe, embed_groups
            from ..exams import ExamInputs

            encoder = MtebEncoder(model, self.metadata, hf_split, hf_subset, dict(encode_kwargs or {}))
            # The dataset's rows in their encode calls (the paper's grouping), embedded before scoring.
            calls: dict[int, list[str]] = {}
            for text, group in zip(data_split["text"], data_split["group"]):
                calls.setdefault(int(group), []).append(text)
            table = embed_groups(encoder, [calls[k] for k in sorted(calls)])
            exam = task_exams()[name]  # the sweep's own exam code, on the paper's protocol without bootstrap
            return scores_of(exam, exam.run(ExamInputs(table, "cos", token_ids=describe(encoder).token_ids)))

    PhysScoreTask.__name__ = PhysScoreTask.__qualname__ = name
    return PhysScoreTask


def tasks(names: list[str] | None = None) -> list:
    """The PhysScore tasks (all four, or those named), as MTEB task instances."""
    known = task_exams()
    chosen = list(names or known)
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise InputError(f"Unknown PhysScore task {unknown[0]!r}.", f"use one of {', '.join(known)}.")
    return [_task_class(n)() for n in chosen]


def task_results(result) -> list:
    """A fasteval ModelResult as MTEB TaskResult objects, one per exam that has a task."""
    mteb = require_mteb()
    return [mteb.TaskResult.from_task_results(
                _task_class(name), {SPLIT: {SUBSET: scores_of(exam, result.exams[exam.key])}},
                evaluation_time=float(result.timings.get(exam.key, 0.0) or 0.0))
            for name, exam in task_exams().items() if exam.key in result.exams]
