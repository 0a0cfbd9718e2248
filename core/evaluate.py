"""The library entry point: ``evaluate(encoder, exams=...)`` runs the exams on any encoder.

An encoder is a fasteval model (``fasteval.models.load_model``) or any object with
``encode(list[str]) -> array``; a sentence-transformers model works as it is.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from collections.abc import Callable, Iterable
from typing import Any

from fasteval.core import protocol as P
from fasteval.core.embeddings import EmbeddingTable, Encoder, embed_groups
from fasteval.core.errors import InputError
from fasteval.core.results import ModelResult

EXAMS = (1, 2, 3)
PROTOCOLS = ("paper",)
METRICS = ("cos", "dot", "l2")


def check_exams(exams: Iterable[int | str]) -> tuple[int, ...]:
    exams = list(exams)
    try:
        chosen = tuple(sorted({int(e) for e in exams}))
    except ValueError:
        chosen = ()
    if not chosen or any(e not in EXAMS for e in chosen):
        raise InputError(f"Unknown exam selection {list(exams)!r}.",
                         f"choose from {', '.join(map(str, EXAMS))}, e.g. --exams 1,2,3.")
    return chosen


def evaluate(encoder: Encoder, *, exams: Iterable[int] = EXAMS, metric: str = "cos", name: str | None = None,
             settings: dict[str, Any] | None = None, table: EmbeddingTable | None = None,
             protocol: str = "paper", on_step: Callable[[str], None] | None = None) -> ModelResult:
    """Run the chosen exams of the paper protocol on ``encoder`` and return a ModelResult.

    ``encoder``: anything with ``encode(list[str]) -> array`` (a fasteval model, a sentence-transformers
    model). Every distinct text is embedded once, in the protocol's fixed group order (Exams 1 and 3 share
    their texts; ``table`` may hold embeddings from an earlier run), and the cell similarity matrices are
    computed once for Exams 1 and 3. ``on_step(name)`` is called before each step (for progress bars);
    the library itself prints nothing.
    """
    from fasteval import __version__
    from fasteval.core.exam1 import cell_similarities, exam1_groups, run_exam1
    from fasteval.core.exam2 import exam2_groups, run_exam2, tokenizer_ids
    from fasteval.core.exam3 import run_exam3

    exams = check_exams(exams)
    if protocol not in PROTOCOLS:
        raise InputError(f"Unknown protocol {protocol!r}.", f"use one of {', '.join(PROTOCOLS)}.")
    step = on_step or (lambda _name: None)
    if metric not in METRICS:
        raise InputError(f"Unknown similarity {metric!r}.", f"use one of {', '.join(METRICS)}.")
    name = name or getattr(encoder, "name", None) or type(encoder).__name__
    settings = dict(settings if settings is not None else getattr(encoder, "info", {}) or {})
    settings["similarity"] = metric
    result = ModelResult(model=name, model_id=P.model_id(name), settings=settings,
                         protocol=P.PROTOCOL_VERSION, fasteval_version=__version__)
    groups: list[list[str]] = []
    if 1 in exams:
        groups += exam1_groups()
    elif 3 in exams:
        groups += [c.texts for c in P.exam1_cells()]
    if 2 in exams:
        groups += exam2_groups()
    @contextmanager
    def timed(name: str):
        step(name)
        start = time.perf_counter()
        yield
        result.timings[name] = time.perf_counter() - start

    from fasteval.core.kernels import warm_up_in_background

    warming = warm_up_in_background()  # numba loads its kernels while the encoder works
    with timed("embed"):
        table = embed_groups(encoder, groups, table)
    warming.join()
    sims = None
    if 1 in exams or 3 in exams:
        with timed("similarity"):
            sims = cell_similarities(table, metric)
    if 1 in exams:
        with timed("exam1"):
            result.exams["exam1"] = run_exam1(table, metric=metric, similarities=sims)
    if 2 in exams:
        with timed("exam2"):
            token_ids = tokenizer_ids(encoder, exam2_groups()[0])
            result.exams["exam2"] = run_exam2(table, token_ids, metric=metric)
    if 3 in exams:
        with timed("exam3"):
            result.exams["exam3"] = run_exam3(table, metric=metric, similarities=sims)
    return result


def result_files(result: ModelResult, key: str | None = None) -> dict[str, str]:
    """Every file of a model's result folder: results.json, each exam's CSVs, and MTEB-shaped JSON."""
    from fasteval.core.exam1 import exam1_files
    from fasteval.core.exam2 import exam2_files
    from fasteval.core.exam3 import exam3_files
    from fasteval.core.results import RESULT_FILE, dumps, to_jsonable

    from fasteval.core.mteb import mteb_files

    payload = {"key": key, **to_jsonable(result)}
    for name, exam in result.exams.items():
        payload["exams"][name]["summary"] = exam.summary()
    files = {RESULT_FILE: dumps(payload)}
    writers = {"exam1": exam1_files, "exam2": exam2_files, "exam3": exam3_files}
    for name, exam in result.exams.items():
        files.update(writers[name](exam, result.model, result.model_id))
    files.update(mteb_files(result))
    return files
