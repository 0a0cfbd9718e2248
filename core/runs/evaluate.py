"""The library entry point: ``evaluate(encoder, exams=...)`` runs the exams on any encoder.

An encoder is a fasteval model (``fasteval.models.load_model``) or any object with
``encode(list[str]) -> array``; a sentence-transformers model works as it is (the contract is in
``fasteval.core.embeddings``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from typing import Any

from fasteval.core import protocol as P
from fasteval.core.quantities import CANONICAL_VERSION
from fasteval.core.choices import BATCHINGS, PAPER_EXAMS, SIMILARITIES, check_choice, exam_key, parse_exams
from fasteval.core.embeddings import EmbeddingTable, Encoder, describe, embed_groups
from fasteval.core.errors import InputError
from fasteval.core.protocol.spec import Protocol, load_protocol
from fasteval.core.exams.statistics import DEFAULT_RESAMPLES, bootstrap_settings
from fasteval.core.results.model import ModelResult


def evaluate(encoder: Encoder, *, exams: Iterable[int | str] = PAPER_EXAMS, metric: str = "cos",
             name: str | None = None, settings: dict[str, Any] | None = None, table: EmbeddingTable | None = None,
             on_step: Callable[[str], None] | None = None, normalize_quantities: bool = False,
             bootstrap: int = DEFAULT_RESAMPLES, protocol: str | Protocol = "paper",
             batching: str | None = None) -> ModelResult:
    """Run the chosen exams (the paper's 1, 2, 3; the extension "conversion") on ``encoder``; a ModelResult.

    ``encoder``: anything with ``encode(list[str]) -> array`` (a fasteval model, a sentence-transformers
    model). Every distinct text is embedded once, in the protocol's fixed group order (Exams 1 and 3 share
    their texts; ``table`` may hold embeddings from an earlier run), and the cell similarity matrices are
    computed once for Exams 1 and 3. ``normalize_quantities``: the encoder is given each text's canonical
    form ("2 kilometers" -> "2000 meters", "five meter" -> "5 meters"; bare numbers unchanged) while the exams
    score the protocol's own values. ``protocol``: a built-in protocol's name (``fasteval protocols``), a
    protocol file, or a loaded Protocol; the paper's by default. ``bootstrap``: resamples for Exam 1's 95% intervals (0: none; see
    ``fasteval.core.exams.statistics``). ``batching``: "paper" (one encode call per protocol group) or
    "packed" (every distinct text in one call); default: the encoder's own setting (``info["batching"]``),
    else the paper's. ``on_step(name)`` is called before each step (for progress bars);
    the library itself prints nothing.
    """
    from fasteval import __version__
    from fasteval.core.exams.geometry import run_exam1
    from fasteval.core.exams.lexical import run_exam2
    from fasteval.core.exams.probe import run_exam3
    from fasteval.core.exams.similarities import cell_similarities
    from fasteval.core.kernels import warm_up_in_background

    exams = parse_exams(exams)
    check_choice(metric, SIMILARITIES, "similarity", "--similarity")
    protocol = protocol if isinstance(protocol, Protocol) else load_protocol(protocol)
    unsupported = [e for e in exams if e not in protocol.exams]
    if unsupported:
        raise InputError(f"The {protocol.name} protocol does not support exam(s) {', '.join(map(str, unsupported))}.",
                         f"choose from --exams {','.join(map(str, protocol.exams))}.")
    view = describe(encoder, name)
    settings = dict(settings if settings is not None else view.info)
    settings["similarity"] = metric
    if normalize_quantities:
        settings["normalize_quantities"] = CANONICAL_VERSION
    if 1 in exams and bootstrap_settings(bootstrap):
        settings["bootstrap"] = bootstrap_settings(bootstrap)
    if not protocol.is_paper:
        settings["protocol_file"] = protocol.describe()
    result = ModelResult(model=view.name, model_id=P.model_id(view.name), settings=settings,
                         protocol=protocol.key, fasteval_version=__version__)
    step = on_step or (lambda _name: None)
    batching = check_choice(batching or view.info.get("batching", "paper"), BATCHINGS, "batching", "--batching")
    groups = P.protocol_groups(exams, protocol)
    if batching == "packed":  # one call; the encoder sorts and cuts it (fasteval's by a token budget)
        groups = [list(dict.fromkeys(t for group in groups for t in group))]

    @contextmanager
    def timed(name: str):
        step(name)
        start = time.perf_counter()
        yield
        result.timings[name] = time.perf_counter() - start

    warming = warm_up_in_background()  # numba loads its kernels while the encoder works
    with timed("embed"):
        table = embed_groups(encoder, groups, table, rewrite=_rewrite(normalize_quantities))
    warming.join()
    sims = None
    if 1 in exams or 3 in exams:
        with timed("similarity"):
            sims = cell_similarities(table, metric, P.protocol_cells(protocol))
    if 1 in exams:
        with timed("exam1"):
            result.exams[exam_key(1)] = run_exam1(table, metric=metric, similarities=sims, bootstrap=bootstrap,
                                                  protocol=protocol)
    if 2 in exams:
        with timed("exam2"):
            seen = [_rewrite(normalize_quantities)(t) for t in P.exam2_groups()[0]]  # the texts the model saw
            token_ids = view.token_ids(seen) if view.token_ids else None
            result.exams[exam_key(2)] = run_exam2(table, token_ids, metric=metric)
    if 3 in exams:
        with timed("exam3"):
            result.exams[exam_key(3)] = run_exam3(table, metric=metric, similarities=sims)
    if "conversion" in exams:
        from fasteval.core.exams.conversion import run_conversion

        with timed("conversion"):
            result.exams[exam_key("conversion")] = run_conversion(table, metric=metric)
    if normalize_quantities:
        _record_embedded(result, _rewrite(True))
    return result


def _record_embedded(result: ModelResult, rewrite: Callable[[str], str]) -> None:
    """Beside each recorded text, what the encoder was given for it (the canonical forms)."""
    exam1 = result.exams.get(exam_key(1))
    for cell in exam1.cells if exam1 is not None else []:
        cell.embedded = [rewrite(t) for t in cell.texts or []]
    conversion = result.exams.get(exam_key("conversion"))
    for row in conversion.rows if conversion is not None else []:
        row.embedded_a, row.embedded_b, row.embedded_traps = ([rewrite(t) for t in texts or []]
                                                              for texts in (row.texts_a, row.texts_b, row.traps))


def _rewrite(normalize_quantities: bool) -> Callable[[str], str]:
    """What the encoder is given for each protocol text."""
    if not normalize_quantities:
        return lambda text: text
    from fasteval.core.quantities import canonical_text

    return canonical_text
