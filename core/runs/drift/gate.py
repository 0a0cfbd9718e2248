"""``fasteval.drift(reference, candidate)``: embed the protocol's texts and the conformance set with both encoders and
score how far the candidate drifts (``score.py``, into ``DriftReport``, ``core/results/drift.py``), then run the
checks' registry (``checks/``: each check a module, each finding typed). The one way
fasteval compares two encoders: ``fasteval drift`` (folders, registry names, URLs, receipts), the export's fp16
report and the int8 benchmark all go through it.

Each side is planned once (``fasteval.core.plan``: the one door, what it says it is, its embedding key); every
limit (threshold, resamples, texts, accepted groups) is checked before a text is sent. The candidate is always
embedded afresh (a gate scores the deployment as it is now, never a cache of it); the reference comes from the
embedding cache when its identity is known (content hashes, or a served model's deployment) and a few of its
cached texts come back as cached (``cache.verified``). A group one side cannot embed (a server that refuses the
empty string) is reported as failed, not a crash. Two encoders of different dimensions are refused: they are
different models, and no cosine compares them. A receipt (``receipts.py``) is taken as a reference.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...choices import DRIFT_RESAMPLES, INVARIANCE_TIERS, check_choice
from ...embeddings import as_array
from ...errors import InputError
from ...plan import Scoring, plan, scoring, step_timer
from ...protocol.conformance import TextGroup, conformance_groups, user_groups
from ...results.drift import DEFAULT_THRESHOLD, DriftReport
from ...results.drift_findings import SIDES
from ...vectors import comparable
from .checks import PROTOCOL_GROUP, DriftOptions, DriftRun, run_checks
from .embed import embed_side
from .score import MAX_TEXTS, check_dimensions, score_drift

log = logging.getLogger(__name__)


def drift_scoring(**vectors: Any) -> Scoring:
    """What each side is planned for: the paper's Exam 1 on the paper's protocol (the PhysScore side), with no
    bootstrap of its own (drift's is the paired one of Δτ); ``vectors``: what a store keeps of that side."""
    return scoring(exams=(1,), bootstrap=0, **vectors)


def check_limits(threshold: float, resamples: int) -> None:
    """InputError unless ``threshold`` is a cosine in (0, 1] and ``resamples`` a count >= 0 (what the CLI's
    --fail-below and --bootstrap pass)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise InputError(f"The threshold (--fail-below) must be a cosine in (0, 1], got {threshold!r}.",
                         "pass a cosine such as 0.99.")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise InputError(f"resamples (--bootstrap) must be a whole number >= 0, got {resamples!r}.",
                         "pass 0 (no interval) or a number of resamples.")


def check_inputs(threshold: float = DEFAULT_THRESHOLD, resamples: int = DRIFT_RESAMPLES,
                 texts: str | Path | None = None, accept: list[str] | tuple[str, ...] = (),
                 conformance: bool = True, invariance_tier: str = "cosine") -> None:
    """Everything ``drift`` would refuse of its inputs, refused before a model is loaded or a text sent: the
    limits (``check_limits``), an unreadable or empty texts file, too many texts, a group to accept that drift
    has not."""
    check_limits(threshold, resamples)
    check_choice(invariance_tier, INVARIANCE_TIERS, "invariance tier", "--invariance")
    if texts is not None or accept:
        accepted_groups(list(accept), drift_groups(conformance, texts)[1])


def drift(reference: Any, candidate: Any, *, texts: str | Path | None = None, conformance: bool = True,
          threshold: float = DEFAULT_THRESHOLD, fail_on_collisions: bool = False,
          resamples: int = DRIFT_RESAMPLES, cache_root: Path | bool | None = None,
          labels: tuple[str, str] | None = None,
          on_step: Callable[[str], None] | None = None, expect_model: str | None = None,
          expect_precision: str | None = None, invariance: bool = True,
          accept: list[str] | tuple[str, ...] = (), reference_vectors: dict[str, Any] | None = None,
          candidate_vectors: dict[str, Any] | None = None, diagnose: bool = True,
          invariance_tier: str = "cosine") -> DriftReport:
    """How far ``candidate`` embeds from ``reference`` (anything the one door takes: fasteval models, names,
    folders, URLs of served models, sentence-transformers models; the reference also a receipt file). The texts:
    the paper's Exam 1 texts (embedded in the paper's grouping, so the PhysScore side is each encoder's Table 1),
    the conformance set (``conformance``), and a user's file (``texts``). ``threshold``: the cosine below which a
    text has drifted, in (0, 1]; ``resamples``: the paired bootstrap of Δτ (0: none); ``expect_model``: the model
    id the candidate must say it is (a served model's id, else its name): another one drifts, whatever its
    vectors; ``expect_precision``: the weights' precision the candidate must say it serves (``q8_0``, say;
    default: the reference's, where both say theirs); ``invariance``: also embed a few texts with the candidate
    alone, in batches of several sizes and with several requests in flight (``checks/invariance.py``);
    ``invariance_tier``: "cosine" (a condition below 0.999 drifts) or "bitwise" (any difference drifts);
    ``accept``: groups whose drift is known and accepted (llama.cpp's Hangul, say): measured and shown, never a
    reason to drift (InputError for a group drift does not have). ``reference_vectors``, ``candidate_vectors``:
    what a vector store keeps of that side (``dimensions``, ``vector_quantization``, ``calibration``, as
    ``fasteval.evaluate`` takes them): each text's vectors are compared in the space both keep
    (``core.vectors.comparable``), and the PhysScore side scores each side's vectors as its store does.
    ``diagnose``: when the candidate drifts and the reference can run as its usual misconfigurations, name the one
    it embeds like (``checks/diagnosis.py``; never changes the verdict). What else is checked, and when: the
    registry (``checks.CHECKS``)."""
    from ...kernels import warm_up_in_background

    check_limits(threshold, resamples)
    check_choice(invariance_tier, INVARIANCE_TIERS, "invariance tier", "--invariance")
    calls, groups = drift_groups(conformance, texts)
    options = DriftOptions(threshold, resamples, fail_on_collisions, expect_model, expect_precision, invariance,
                           invariance_tier, diagnose, tuple(accepted_groups(accept, groups)))
    timings: dict[str, float] = {}
    plans = [plan(reference, drift_scoring(**(reference_vectors or {}))),
             plan(candidate, drift_scoring(**(candidate_vectors or {})))]
    extra = _calibration_call(plans, calls)
    run = DriftRun(plans, list(labels) if labels else [p.name for p in plans], groups, calls + extra, options,
                   step_timer(on_step, timings))
    if run.receipt:
        _check_receipt(run, extra)
    # the paired resamples of delta tau run on the kernels: loaded beside the encoders where a core is spare
    warming = warm_up_in_background(("kendall",) if resamples else ())
    found = []
    for side, planned in zip(SIDES, plans):
        if side == "candidate":  # what the candidate is asked before its vectors are read
            found = run_checks(run, "before")
        shown = "read the reference's receipt" if side == "reference" and run.receipt else f"embed the {side}"
        like = (run.names[0], run.names[1], run.tables[0].dim) if run.tables else None
        with run.timed(f"embed {side}", shown):
            run.tables.append(embed_side(planned, side, run.calls, groups[1:], run.failed, run.refused, cache_root,
                                         fresh=side == "candidate", like=like))
    warming.join()
    with run.timed("score"):
        run.report = _score(run)
    for finding in found:
        run.report.add(finding)
    run.report.accepted, run.report.timings = list(options.accept), timings
    run_checks(run, "scored")
    run_checks(run, "verdict")
    return run.report


def drift_candidates(reference: Any, candidates: list[Any], *, labels: list[str] | None = None,
                     reference_load: dict[str, Any] | None = None, candidate_load: dict[str, Any] | None = None,
                     on_step_for: Callable[[str], Callable[[str], None]] | None = None,
                     reference_dimensions: int | None = None, reference_vector_quantization: str | None = None,
                     candidate_dimensions: int | None = None, candidate_vector_quantization: str | None = None,
                     calibration: Any = None, **options: Any) -> list[DriftReport]:
    """``drift`` of each of ``candidates`` against ``reference`` (what `fasteval drift` runs), each side through the
    one door with its ``load_model`` options (``reference_load``, ``candidate_load``: provider, dtype, prompt,
    batch size, served settings): ``labels`` the reference's and each candidate's names in the reports,
    ``on_step_for(label)`` each one's progress; what a
    store keeps of each side as flags (``calibration``: the calibrated sides', refused where no side is calibrated);
    ``options`` as ``drift`` takes them."""
    from ...encoders import as_encoder
    from ...vectors import calibrated, vector_form

    asked = [(reference_dimensions, reference_vector_quantization), (candidate_dimensions,
                                                                     candidate_vector_quantization)]
    forms = [vector_form(d, q) for d, q in asked]  # validated (a name is checked, and spelled, once)
    quantizations = [f.quantization if f is not None else None for f in forms]
    if calibration is not None and not any(map(calibrated, quantizations)):
        vector_form(calibration=calibration)  # refuses it, in the words every command uses
    stores = [None if d is None and q is None else
              {"dimensions": d, "vector_quantization": q, "calibration": calibration if calibrated(q) else None}
              for (d, _), q in zip(asked, quantizations)]
    names = labels or [str(side) for side in (reference, *candidates)]
    ref = as_encoder(reference, **(reference_load or {}))
    return [drift(ref, as_encoder(candidate, **(candidate_load or {})), reference_vectors=stores[0],
                  candidate_vectors=stores[1], labels=(names[0], name),
                  on_step=on_step_for(name) if on_step_for else None, **options)
            for candidate, name in zip(candidates, names[1:])]


def _calibration_call(plans: list, calls: list[list[str]]) -> list[list[str]]:
    """int8's own calibration texts that drift's calls do not hold, embedded by both sides (one call, or none)."""
    seen = {t for call in calls for t in call}
    extra = [t for t in dict.fromkeys(t for p in plans for t in p.scoring.calibration_texts()) if t not in seen]
    return [extra] if extra else []


def _check_receipt(run: DriftRun, extra: list[list[str]]) -> None:
    """A receipt gates only the text set it was made for, holds no other calibration set, and is refused a
    candidate of another dimension before its rows are read (its headers said its dimension; a receipt may hold
    gigabytes): one text asked of the candidate, then the receipt read and checked whole."""
    receipt = run.reference
    if extra:
        raise InputError("A receipt holds drift's texts only, not another calibration set.",
                         "leave --calibration out (int8 is calibrated on Table 1's texts, which the receipt holds).")
    receipt.require(all_texts(run.groups))
    first = as_array(run.candidate.encode(run.calls[0][:1]))
    check_dimensions(run.names[0], run.names[1], receipt.dim, first.shape[1] if first.ndim == 2 else None)
    receipt.check()


def _score(run: DriftRun) -> DriftReport:
    """The two sides' vectors of every text both embedded, in the space both keep, scored (``score_drift``); a
    text one side refused as too long is left out of its group (a behaviour of that side, reported on its own)."""
    scored = [TextGroup(g.name, g.probes, [t for t in g.texts if t not in run.refused]) for g in run.groups]
    forms = [s.vectors for s in run.scorings]
    compared = (run.tables if run.floats or run.protocol_failed else
                comparable(run.tables, forms, run.scorings[0].table1_texts()))
    run.maps = [{t: table[[t]][0] for g in scored if g.name not in run.failed for t in g.texts} for table in compared]
    return score_drift(run.names[0], run.names[1], scored, run.maps[0], run.maps[1],
                       threshold=run.options.threshold, failed=run.failed,
                       fail_on_collisions=run.options.fail_on_collisions)


def accepted_groups(accept, groups: list[TextGroup]) -> list[str]:
    """``accept`` (group names) as a list without repeats; InputError naming drift's groups for one it has not."""
    names = [g.name for g in groups]
    unknown = [a for a in accept if a not in names]
    if unknown:
        raise InputError(f"drift has no group {', '.join(map(repr, unknown))} to accept.",
                         f"name one of {', '.join(names)}.")
    return list(dict.fromkeys(accept))


def drift_groups(conformance: bool, texts: str | Path | None) -> tuple[list, list[TextGroup]]:
    """Drift's encode calls of the protocol (the paper's grouping) and its groups of texts: the protocol's, the
    conformance set's, a user's file; InputError past MAX_TEXTS (before a text is sent)."""
    calls = drift_scoring().groups()
    groups = [TextGroup(PROTOCOL_GROUP, "the paper's Exam 1 texts (the PhysScore side)",
                        list(dict.fromkeys(t for c in calls for t in c)))]
    groups += conformance_groups() if conformance else []
    groups += user_groups(Path(texts)) if texts else []
    total = len(all_texts(groups))
    if total > MAX_TEXTS:  # refused before the first request (a paid API is not sent 21,000 texts for nothing)
        raise InputError(f"{total} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    return calls, groups


def all_texts(groups: list[TextGroup]) -> list[str]:
    return list(dict.fromkeys(t for g in groups for t in g.texts))


def export_drift(model: str, dest: str | Path) -> DriftReport:
    """How a derived export (fp16, int8: ``dest``) embeds against ``model``'s fp32 export, on the protocol's texts
    (no conformance set, no bootstrap): what `fasteval export --dtype` reports beside the export it made."""
    from ....models.loader import export_model, load_model

    return drift(load_model(str(export_model(model))), load_model(str(dest)), conformance=False, resamples=0)
