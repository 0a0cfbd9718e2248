"""The paper's exams as MTEB tasks (``AbsTask`` subclasses whose data fasteval's protocol generates), and a
fasteval result as MTEB ``TaskResult`` objects.

MTEB's own contract for a new kind of task is to subclass ``AbsTask`` and implement its two abstract methods,
``_evaluate_subset`` and ``_calculate_descriptive_statistics_from_split``: they are what this module overrides, and
nothing else of MTEB's that is not public is used. The range of MTEB where that contract holds is pinned in
pyproject (the mteb extra) and held by tests/mteb/test_mteb.py.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import InputError
from ...models.adapters.mteb import MtebEncoder
from ..exams import scores_of, task_exams
from ..results.mteb import SPLIT, SUBSET, metadata_of, require_mteb


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
                                                         num_proc: int | None = None) -> Any:
            """MTEB's standard statistics of the samples the task scores (``data.descriptive_statistics``: pairs
            and scores for an STS task, texts and values for a regression task)."""
            from .data import descriptive_statistics

            return descriptive_statistics(name)

        def _evaluate_subset(self, model, data_split, *, hf_split: str, hf_subset: str, encode_kwargs,
                             **kwargs: Any) -> dict[str, float | None]:
            from ..embeddings import embed_groups
            from ..plan import plan, score, scoring

            exam = task_exams()[name]  # the sweep's own plan and exam code, on the paper's protocol, no bootstrap
            planned = plan(MtebEncoder(model, self.metadata, hf_split, hf_subset, dict(encode_kwargs or {})),
                           scoring(exams=(exam.choice,), bootstrap=0))
            # The dataset's rows in their encode calls (the paper's grouping), embedded before scoring.
            calls: dict[int, list[str]] = {}
            for text, group in zip(data_split["text"], data_split["group"]):
                calls.setdefault(int(group), []).append(text)
            table = embed_groups(planned.encoder, [calls[k] for k in sorted(calls)], name=planned.name,
                                 concurrency=planned.view.concurrency)
            return scores_of(exam, score(planned, table)[exam.key])

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
