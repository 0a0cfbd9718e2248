"""``fasteval.drift(reference, candidate)``: embed the protocol's texts and the conformance set with both
encoders and score how far the candidate drifts (``fasteval.core.exams.drift``). The one way fasteval compares
two encoders: ``fasteval drift`` (folders, registry names, URLs), the export's fp16 report and the int8
benchmark all go through it.

The candidate is always embedded afresh (a gate scores the deployment as it is now, never a cache of it); the
reference comes from the embedding cache when its identity is known (content hashes, or a served model's
deployment) and a few of its cached texts come back as cached (``cache.verified``). A group one side cannot
embed (a server that refuses the empty string) is reported as failed, not a crash. Two encoders of different
dimensions are refused: they are different models, and no cosine compares them.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ..embeddings import EmbeddingTable, Encoder, describe, embed_groups
from ..errors import FastevalError, first_line
from ..errors import InputError
from ..exams.drift import MAX_TEXTS, DEFAULT_THRESHOLD, DriftReport, check_dimensions, physscore_drift, score_drift
from ..protocol.conformance import TextGroup, conformance_groups, user_groups

log = logging.getLogger(__name__)

PROTOCOL_GROUP = "protocol"
DEFAULT_RESAMPLES = 2000


def drift(reference: Encoder, candidate: Encoder, *, texts: str | Path | None = None, conformance: bool = True,
          threshold: float = DEFAULT_THRESHOLD, fail_on_collisions: bool = False,
          resamples: int = DEFAULT_RESAMPLES, cache_root: Path | None = None, labels: tuple[str, str] | None = None,
          on_step: Callable[[str], None] | None = None) -> DriftReport:
    """How far ``candidate`` embeds from ``reference`` (any two encoders: fasteval models, served models,
    sentence-transformers models). The texts: the paper's Exam 1 texts (embedded in the paper's grouping, so
    the PhysScore side is each encoder's Table 1), the conformance set (``conformance``), and a user's file
    (``texts``). ``threshold``: the cosine below which a text has drifted; ``resamples``: the paired bootstrap
    of Δτ (0: none)."""
    from ..exams import ExamInputs, exam, protocol_groups
    from ..encoders import as_encoder

    step = on_step or (lambda _name: None)
    views = [describe(as_encoder(e)) for e in (reference, candidate)]
    names = list(labels) if labels else [v.name for v in views]
    calls = protocol_groups((1,))
    groups = [TextGroup(PROTOCOL_GROUP, "the paper's Exam 1 texts (the PhysScore side)",
                        list(dict.fromkeys(t for c in calls for t in c)))]
    groups += conformance_groups() if conformance else []
    groups += user_groups(Path(texts)) if texts else []
    total = len({t for g in groups for t in g.texts})
    if total > MAX_TEXTS:  # refused before the first request (a paid API is not sent 21,000 texts for nothing)
        raise InputError(f"{total} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    tables, failed = [], {}
    for side, view in zip(("reference", "candidate"), views):
        step(f"embed the {side}")
        table, saved = _cached_table(view, cache_root, fresh=side == "candidate")
        before = len(table)
        try:
            embed_groups(view.encoder, calls, table)
        except FastevalError as err:
            failed[PROTOCOL_GROUP] = f"{side}: {first_line(err, 200)}"
        if tables:  # another dimension is another model: refused before its other texts are sent
            check_dimensions(names[0], names[1], tables[0].dim, table.dim)
        for g in groups[1:]:
            try:
                embed_groups(view.encoder, [g.texts], table)
            except FastevalError as err:
                failed.setdefault(g.name, f"{side}: {first_line(err, 200)}")
                log.warning("%s could not embed the %s group: %s", names[side == "candidate"], g.name,
                            first_line(err, 200))
        if len(table) > before:
            saved(table)
        tables.append(table)
    maps = [{t: table[[t]][0] for g in groups if g.name not in failed for t in g.texts} for table in tables]
    step("score")
    report = score_drift(names[0], names[1], groups, maps[0], maps[1], failed, threshold, fail_on_collisions)
    if PROTOCOL_GROUP not in failed:
        geometry = exam(1)
        results = [geometry.run(ExamInputs(table, "cos")) for table in tables]
        report.physscore = physscore_drift(results[0], results[1], resamples)
    return report


def _cached_table(view, cache_root: Path | None, fresh: bool) -> tuple[EmbeddingTable,
                                                                         Callable[[EmbeddingTable], None]]:
    """The encoder's cached embeddings (empty when its identity is unknown, or ``fresh``: the candidate) once
    verified against it, and how to save them back."""
    from ..io import fasteval_home
    from .cache import verified
    from .sweep import embedding_cache

    cache, key = embedding_cache(view.info, cache_root if cache_root is not None else fasteval_home())
    table = EmbeddingTable() if fresh else verified(cache, key, view.encoder, view.name,
                                                    served=bool(view.info.get("deployment")))
    return table, (lambda t: cache.save(key, t))


def drift_text(report: DriftReport) -> str:
    """The report as the terminal shows it: the verdict, per group mean / worst / share below, the worst texts by
    name, the collisions, and the PhysScore side."""
    fmt = (lambda v: "  n/a" if v is None else f"{v:.4f}")
    lines = [f"fasteval drift: {report.candidate} against {report.reference} on {report.texts} texts: "
             f"{report.verdict} (threshold {report.threshold})",
             f"  mean cosine {report.mean_cosine:.5f}, worst {report.worst_cosine:.5f}; neighbourhood agreement "
             f"(10 nearest) {report.neighbourhood_agreement:.3f}; collisions {len(report.collisions)}", "",
             f"  {'group':<16} {'texts':>5} {'mean':>8} {'worst':>8} {'below':>6}  worst text / probes"]
    for g in report.groups.values():
        below = "n/a" if g.share_below is None else f"{g.share_below:.0%}"
        what = f"failed ({g.failed})" if g.failed else f"{g.worst_text!r}" if g.worst is not None and \
            g.worst < report.threshold else g.probes
        lines.append(f"  {g.name:<16} {g.n:>5} {fmt(g.mean):>8} {fmt(g.worst):>8} {below:>6}  {what[:90]}")
    drifted = [w for w in report.worst if w["cosine"] < report.threshold]
    if drifted:
        lines += ["", "  worst texts:"] + [f"    {w['group']}: {w['text']!r}: {w['cosine']:.4f}" for w in drifted]
    if report.collisions:
        lines += ["", f"  collisions (apart under the reference, one under the candidate): {len(report.collisions)}"]
        lines += [f"    {c['text_a']!r} ~ {c['text_b']!r}: {c['reference_cosine']:.3f} -> {c['candidate_cosine']:.4f}"
                  for c in report.collisions[:10]]
        if len(report.collisions) > 10:
            lines.append(f"    ... and {len(report.collisions) - 10} more (all of them in --json)")
    p = report.physscore
    if p:
        ci = ("" if p.get("delta_tau_ci_low") is None
              else f" [{p['delta_tau_ci_low']:.2f}, {p['delta_tau_ci_high']:.2f}]")
        lines += ["", f"  PhysScore: Table 1 tau {p['reference_tau']:.2f} -> {p['candidate_tau']:.2f} "
                      f"(delta {p['delta_tau']:+.2f}{ci}), PACC {p['reference_pacc']:.2f} -> {p['candidate_pacc']:.2f}; "
                      f"{len(p['cells_changed'])} of 20 cells changed"]
    return "\n".join(lines)


def drift_files(report: DriftReport) -> dict[str, str]:
    """drift.json, drift_groups.csv and drift_worst.csv of a result folder."""
    from ..io import csv_text, dumps

    data = report.to_json()
    groups = [{"group": k, **v} for k, v in data["groups"].items()]
    return {"drift.json": dumps(data),
            "drift_groups.csv": csv_text(groups, ["group", "n", "mean", "worst", "share_below", "worst_text", "failed",
                                                  "probes"]),
            "drift_worst.csv": csv_text(data["worst"], ["group", "text", "cosine"])}


def to_exit_code(report: DriftReport, fail_below: float | None, fail_on_collisions: bool) -> int:
    """0 conforms, 1 drifts past what was asked (--fail-below, --fail-on-collisions); without them 0."""
    if fail_below is None and not fail_on_collisions:
        return 0
    return 1 if report.verdict == "drifts" else 0
