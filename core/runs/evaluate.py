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

from .. import protocol as P
from ..choices import BATCHINGS, check_choice, similarity
from ..embeddings import EmbeddingTable, Encoder, describe, embed_groups
from ..exams import ExamInputs, for_protocol, protocol_groups, selected
from ..exams.statistics import DEFAULT_RESAMPLES, bootstrap_settings
from ..protocol.loading import resolve_protocol
from ..protocol.spec import Protocol
from ..quantities import CANONICAL_VERSION
from ..results.model import ModelResult


def settings_of(info: dict[str, Any], *, exams: Iterable[int | str] | None = None, metric: str = "cos",
                protocol: str | Protocol | None = None, normalize_quantities: bool = False,
                bootstrap: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """Everything that changes a number of one evaluation: the encoder's settings (``info``: hashes, provider,
    dtype, prompt, ...) and the scoring settings (similarity, exams, protocol, --normalize-quantities,
    bootstrap). The one place a job's settings are built; the result key is a hash of part of them."""
    metric = similarity(metric)
    protocol = resolve_protocol(protocol)
    exams = for_protocol(protocol, exams)
    settings = {**info, "similarity": metric, "exams": list(exams), "protocol": protocol.key}
    if normalize_quantities:
        settings["normalize_quantities"] = CANONICAL_VERSION
    if 1 in exams and bootstrap_settings(bootstrap):
        settings["bootstrap"] = bootstrap_settings(bootstrap)
    if not protocol.is_paper:
        settings["protocol_file"] = protocol.describe()
        # a protocol file may repeat a value: its equal-value pairs are left out of PACC (they were once counted
        # as wrong), so its results are keyed apart from those made before (the paper's never repeat one)
        settings["pacc_value_ties"] = "skip"
    return settings


def evaluate(encoder: Encoder, *, exams: Iterable[int | str] | None = None, metric: str = "cos",
             name: str | None = None, settings: dict[str, Any] | None = None, table: EmbeddingTable | None = None,
             on_step: Callable[[str], None] | None = None, normalize_quantities: bool = False,
             bootstrap: int = DEFAULT_RESAMPLES, protocol: str | Protocol | None = None,
             batching: str | None = None) -> ModelResult:
    """Run the chosen exams (default: the paper's exams the protocol supports; 1, 2, 3) on ``encoder``.

    ``encoder``: anything with ``encode(list[str]) -> array`` (a fasteval model, a sentence-transformers
    model, an MTEB model). Every distinct text is embedded once, in the protocol's fixed group order (Exams 1
    and 3 share their texts; ``table`` may hold embeddings from an earlier run), and the cell similarity
    matrices are computed once for the exams that share them. ``normalize_quantities``: the encoder is given
    each text's canonical form ("2 kilometers" -> "2000 meters", "five meter" -> "5 meters"; bare numbers
    unchanged) while the exams score the protocol's own values. ``protocol``: a built-in protocol's name
    (``fasteval protocols``), a protocol file, or a loaded Protocol; the paper's by default. ``bootstrap``:
    resamples for Exam 1's 95% intervals (0: none; see ``fasteval.core.exams.statistics``). ``batching``:
    "paper" (one encode call per protocol group) or "packed" (every distinct text in one call); default: the
    encoder's own setting (``info["batching"]``), else the paper's. ``settings``: what the result records
    (default: ``settings_of`` the encoder and these options). ``on_step(name)`` is called before each step
    (for progress bars); the library itself prints nothing.
    """
    from ... import __version__
    from ..kernels import warm_up_in_background
    from ..encoders import as_encoder

    protocol = resolve_protocol(protocol)
    exams = for_protocol(protocol, exams)
    metric = similarity(metric)
    view = describe(as_encoder(encoder), name)
    if settings is None:
        settings = settings_of(view.info, exams=exams, metric=metric, protocol=protocol,
                               normalize_quantities=normalize_quantities, bootstrap=bootstrap)
    result = ModelResult(model=view.name, model_id=P.model_id(view.name), settings=dict(settings),
                         protocol=protocol.key, fasteval_version=__version__)
    timed = step_timer(on_step, result.timings)
    batching = check_choice(batching or view.info.get("batching", "paper"), BATCHINGS, "batching", "--batching")
    groups = protocol_groups(exams, protocol)
    if batching == "packed":  # one call; the encoder sorts and cuts it (fasteval's by a token budget)
        groups = [list(dict.fromkeys(t for group in groups for t in group))]
    rewrite = canonical_rewrite(normalize_quantities)
    warming = warm_up_in_background()  # numba loads its kernels while the encoder works
    with timed("embed"):
        table = embed_groups(view.encoder, groups, table, rewrite=rewrite)
    warming.join()
    if warming.compiled:  # the first run after an install: numba compiled the kernels alongside the embedding
        result.timings[ONE_TIME_COMPILATION] = warming.seconds
    inputs = ExamInputs(table, metric, protocol, bootstrap if 1 in exams else 0, view.token_ids, rewrite)
    chosen = selected(exams)
    if any(e.uses_cell_similarities for e in chosen):
        with timed("similarity"):
            inputs.similarities()
    for e in chosen:
        with timed(e.key):
            result.exams[e.key] = e.run(inputs)
    if view.usage is not None:  # a served model: what it sent and got
        result.usage = view.usage.as_dict()
    return result


# The timing of one-time work done alongside a step (numba compiling the kernels during "embed", once per
# install), kept apart from the steps' own so a first run's "embed" is not read as the embedding's speed.
ONE_TIME_COMPILATION = "kernel_compilation_once"


def step_timings(timings: dict[str, float]) -> dict[str, float]:
    """A result's timings less the one-time work recorded beside its steps: what each step itself took."""
    return {k: v for k, v in timings.items() if k != ONE_TIME_COMPILATION}


def step_timer(on_step: Callable[[str], None] | None, timings: dict[str, float]):
    """``with timed(name, shown=None):`` tells ``on_step`` (shown or name) a step begins, and adds the seconds
    of its block to ``timings[name]`` (a run's record of where its time went)."""
    @contextmanager
    def timed(name: str, shown: str | None = None):
        if on_step is not None:
            on_step(shown or name)
        start = time.perf_counter()
        yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start

    return timed


def canonical_rewrite(normalize_quantities: bool) -> Callable[[str], str] | None:
    """What the encoder is given instead of each protocol text (None: the text itself)."""
    if not normalize_quantities:
        return None
    from ..quantities import canonical_text

    return canonical_text
