"""The exams, and the one registry of them.

Each exam module defines one record, ``EXAM``: its name, the texts it needs, how it runs on the shared inputs,
its result type, its CSV files, its MTEB task and scores, and its printout. Everything else (``evaluate``, the
result files and their reader, the MTEB tasks, the CLI's printout, the report) looks exams up here, so adding an
exam is one new module and one line in ``EXAM_MODULES``.

Exams take embeddings (an EmbeddingTable), never a model. This module imports nothing heavy: the exam modules
load when the registry is first asked for.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import InputError

# The exams, in the order they run, are stored and are reported: the paper's three by number, then extensions.
EXAM_MODULES = ("geometry", "lexical", "probe", "conversion")


@dataclass
class ExamInputs:
    """What every exam runs on: one model's embeddings of the protocol's texts and the scoring settings."""
    table: Any  # EmbeddingTable
    similarity: str = "cos"  # the scoring's similarity (choices.SIMILARITIES, or "hamming" for binary vectors)
    protocol: Any = None  # a Protocol (None: the paper's)
    bootstrap: int = 0
    token_ids: Callable[[list[str]], list[list[int]] | None] | None = None  # the model's own tokenizer
    rewrite: Callable[[str], str] | None = None  # what the encoder was given instead of each text (None: itself)

    def embedded(self, texts) -> list[str] | None:
        """What the encoder was given for ``texts`` where that differs from them (--normalize-quantities)."""
        return None if self.rewrite is None else [self.rewrite(t) for t in texts or []]
    _similarities: dict | None = field(default=None, repr=False)

    def similarities(self) -> dict:
        """Every Exam 1 cell's similarity matrix, computed once for the exams that share them (1 and 3)."""
        if self._similarities is None:
            from .. import protocol as P
            from .cell_similarities import cell_similarities

            self._similarities = cell_similarities(self.table, self.similarity, P.protocol_cells(self.protocol))
        return self._similarities


@dataclass(frozen=True)
class Exam:
    """One exam, as its module declares it."""
    choice: int | str  # how --exams names it: the paper's exams by number, extensions by name
    title: str  # the heading of its printout ("{model}" and "{metric}" are filled in)
    groups: Callable[[], list[list[str]]]  # its encode calls on the paper's protocol, in order
    run: Callable[[ExamInputs], Any]  # -> its result (with summary() and from_json())
    result_type: Any  # a dataclass with summary() and from_json()
    files: Callable[[Any, str], dict[str, str]]  # (result, model_id) -> its CSV files
    text: Callable[[Any], str]  # its printout (the library prints nothing; the CLI prints this)
    mteb_task: str  # its MTEB task's name
    mteb_description: str
    main_score: str  # the key of mteb_scores that is the task's main score
    mteb_scores: Callable[[Any], dict[str, float | None]]  # its result on MTEB's 0-1 scale
    mteb_type: str = "STS"
    uses_cell_similarities: bool = False  # runs on ExamInputs.similarities() (computed once, timed apart)
    # Its place in `fasteval report`: the report's own tables and figures that show it, by name
    # (core/report/tables.EXAM_TABLES, core/report/plots.FIGURES). An exam that names none is shown in a table of
    # its summary() (one row per model), so a new exam appears in the report with nothing else to write.
    report_tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()

    @property
    def paper(self) -> bool:
        return isinstance(self.choice, int)

    @property
    def key(self) -> str:
        """Its name in results.json and in a result's timings: ``exam1`` .. ``exam3``, ``conversion``."""
        return f"exam{self.choice}" if self.paper else str(self.choice)


@lru_cache(maxsize=1)
def registry() -> tuple[Exam, ...]:
    """Every exam's record, in ``EXAM_MODULES`` order."""
    return tuple(importlib.import_module(f"{__name__}.{name}").EXAM for name in EXAM_MODULES)


def paper_exams() -> tuple[int | str, ...]:
    """The paper's exams (1, 2, 3): the default selection."""
    return tuple(e.choice for e in registry() if e.paper)


def exam(choice_or_key: int | str) -> Exam:
    """The record of one exam, by its choice (1, "conversion") or its key ("exam1")."""
    for e in registry():
        if choice_or_key in (e.choice, e.key):
            return e
    raise InputError(f"Unknown exam {choice_or_key!r}.", f"choose from {', '.join(str(e.choice) for e in registry())}.")


def selected(exams: Iterable[int | str]) -> list[Exam]:
    """The records of a selection, in registry order."""
    chosen = set(parse_exams(exams))
    return [e for e in registry() if e.choice in chosen]


def parse_exams(exams: Iterable[int | str] | str) -> tuple[int | str, ...]:
    """A selection of exams -> the canonical tuple, in registry order: the paper's by number, then extensions.

    Accepts ``"1,2,3,conversion"``, ``[1, 2]``, ``("1", "conversion")``. The canonical form is what goes into
    result keys, so a paper-only selection keys exactly as it always has (``[1, 2, 3]``).
    """
    parts = ([p for p in exams.replace(" ", "").split(",") if p] if isinstance(exams, str) else list(exams))
    by_name = {str(e.choice): e.choice for e in registry()}
    chosen = {by_name.get(str(part).strip().lower()) for part in parts}
    if not parts or None in chosen:
        unknown = [str(p) for p in parts if by_name.get(str(p).strip().lower()) is None]
        raise InputError(f"Unknown exam {', '.join(unknown) or '(none given)'}.",
                         f"choose from {', '.join(by_name)}, e.g. --exams 1,2,3.")
    return tuple(e.choice for e in registry() if e.choice in chosen)


def for_protocol(protocol, exams: Iterable[int | str] | str | None = None) -> tuple[int | str, ...]:
    """The exams to run on ``protocol`` (a Protocol; None: the paper's): ``exams`` (a selection, as --exams
    takes it) or, when None, the paper's exams the protocol supports (extensions run when asked for);
    InputError naming the supported ones for an exam it does not support."""
    # the paper's protocol supports every registered exam; a protocol file, the exams it lists
    supported = (tuple(e.choice for e in registry()) if protocol is None or protocol.is_paper
                 else parse_exams(protocol.exams))
    if exams is None:
        return tuple(e for e in supported if e in paper_exams())
    chosen = parse_exams(exams)
    unsupported = [e for e in chosen if e not in supported]
    if unsupported:
        raise InputError(f"The {protocol.name} protocol does not support exam(s) {', '.join(map(str, unsupported))}.",
                         f"choose from --exams {','.join(map(str, supported))}.")
    return chosen


def protocol_groups(exams: Iterable[int | str], protocol=None) -> list[list[str]]:
    """The encode calls of the chosen exams, in registry order: each exam's own calls (the paper's, repeats
    included), less the calls an earlier exam already made (Exam 3's cells are Exam 1's; the conversion exam
    starts with Exam 1's calls). A protocol file's calls are its own (``protocol.groups.file_protocol_groups``)."""
    from ..protocol.groups import file_protocol_groups

    if protocol is not None and not protocol.is_paper:
        return file_protocol_groups(protocol)
    groups: list[list[str]] = []
    for e in selected(exams):
        earlier = {tuple(g) for g in groups}
        groups += [list(g) for g in e.groups() if tuple(g) not in earlier]
    return groups


def task_exams() -> dict[str, Exam]:
    """Task name -> the exam it runs, in registry order."""
    return {e.mteb_task: e for e in registry()}


def task_scores(results: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """Each PhysScore task whose exam a result ran (``results``: its exams, key -> result) -> its MTEB scores (0-1,
    non-finite as None, with its ``main_score``), in the registry's order: the one derivation the MTEB files, the
    Every Eval Ever records and the Hugging Face entries read."""
    return {task: scores_of(exam, results[exam.key]) for task, exam in task_exams().items() if exam.key in results}


def scores_of(exam: Exam, result) -> dict[str, float | None]:
    """One exam's result as an MTEB scores dict (0-1 scale, non-finite as None), with the task's main score."""
    scores = {k: (None if v is None or not math.isfinite(v) else float(v)) for k, v in exam.mteb_scores(result).items()}
    scores["main_score"] = scores[exam.main_score]
    return scores
