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

import numpy as np

from ..embeddings import EmbeddingTable, Encoder, describe, embed_groups
from ..errors import FastevalError, InputRefusedError, first_line
from ..errors import InputError
from ..exams.drift import (
    DEFAULT_THRESHOLD, MAX_TEXTS, DriftReport, check_dimensions, drifted_at, physscore_drift, score_drift,
)
from ..protocol.conformance import TextGroup, conformance_groups, user_groups
from ..exams.drift import INVARIANCE_MIN

log = logging.getLogger(__name__)

PROTOCOL_GROUP = "protocol"
DEFAULT_RESAMPLES = 2000


def drift(reference: Encoder, candidate: Encoder, *, texts: str | Path | None = None, conformance: bool = True,
          threshold: float = DEFAULT_THRESHOLD, fail_on_collisions: bool = False,
          resamples: int = DEFAULT_RESAMPLES, cache_root: Path | None = None, labels: tuple[str, str] | None = None,
          on_step: Callable[[str], None] | None = None, expect_model: str | None = None,
          invariance: bool = True) -> DriftReport:
    """How far ``candidate`` embeds from ``reference`` (any two encoders: fasteval models, served models,
    sentence-transformers models). The texts: the paper's Exam 1 texts (embedded in the paper's grouping, so
    the PhysScore side is each encoder's Table 1), the conformance set (``conformance``), and a user's file
    (``texts``). ``threshold``: the cosine below which a text has drifted; ``resamples``: the paired bootstrap
    of Δτ (0: none); ``expect_model``: the model id the candidate must say it is (a served model's id, else
    its name): another one drifts, whatever its vectors; ``invariance``: also embed a few texts with the
    candidate alone, in batches of several sizes and with several requests in flight
    (``fasteval.core.runs.invariance``): a candidate whose vectors depend on the batch drifts."""
    from ..exams import ExamInputs, exam
    from ..encoders import as_encoder

    from .receipts import ReceiptEncoder, is_receipt

    step = on_step or (lambda _name: None)
    reference = ReceiptEncoder(reference) if is_receipt(reference) else reference
    views = [describe(as_encoder(e)) for e in (reference, candidate)]
    names = list(labels) if labels else [v.name for v in views]
    calls, groups = drift_groups(conformance, texts)
    if isinstance(reference, ReceiptEncoder):  # a receipt gates only the text set it was made for
        reference.require(_all_texts(groups))
    tables, failed, refused = [], {}, {}
    for side, view in zip(("reference", "candidate"), views):
        step(f"embed the {side}")
        tables.append(_embed_side(side, view, calls, groups[1:], tables, names, cache_root, failed, refused))
    # A text one side refuses as too long is a behaviour of that side, reported on its own line; the group is
    # scored on the texts both embed (it is neither failed nor shrunk further).
    scored = [TextGroup(g.name, g.probes, [t for t in g.texts if t not in refused]) for g in groups]
    maps = [{t: table[[t]][0] for g in scored if g.name not in failed for t in g.texts} for table in tables]
    step("score")
    report = score_drift(names[0], names[1], scored, maps[0], maps[1], failed, threshold, fail_on_collisions)
    report.behaviours = _behaviours(refused, names)
    if invariance and not failed.get(PROTOCOL_GROUP):
        from .invariance import invariance as probe

        step("batch and concurrency invariance")
        long_texts = next((g.texts for g in groups if g.name == "length"), [])
        report.invariance = probe(views[1].encoder, groups[0].texts, [t for t in long_texts if t not in refused])
    report.identity = {side: identity_of(view) for side, view in zip(("reference", "candidate"), views)}
    if isinstance(reference, ReceiptEncoder):
        report.identity["reference"] = reference.identity
    said = report.identity["candidate"].get("model")
    if expect_model is not None and said != expect_model:
        report.identity_mismatch = f"the candidate says it is {said!r}, expected {expect_model!r}"
    if PROTOCOL_GROUP not in failed:
        geometry = exam(1)
        results = [geometry.run(ExamInputs(table, "cos")) for table in tables]
        report.physscore = physscore_drift(results[0], results[1], resamples)
    return report


def identity_of(view) -> dict:
    """What an encoder says it is: a served model its id, URL and what /models and /info say; a local one its name
    and content hashes; anything else its name."""
    info = view.info
    deployment = info.get("deployment")
    if isinstance(deployment, dict):
        return {"kind": "served", "model": deployment.get("model"), "url": deployment.get("url"),
                "server": deployment.get("server"), **({"info": deployment["info"]} if "info" in deployment else {})}
    if info.get("onnx_sha256") or info.get("source_sha256"):
        return {"kind": "local", "model": view.name, "dtype": info.get("dtype"),
                "source_sha256": info.get("source_sha256"), "onnx_sha256": info.get("onnx_sha256")}
    return {"kind": "object", "model": view.name}


def drift_groups(conformance: bool, texts: str | Path | None) -> tuple[list, list[TextGroup]]:
    """Drift's encode calls of the protocol (the paper's grouping) and its groups of texts: the protocol's, the
    conformance set's, a user's file; InputError past MAX_TEXTS (before a text is sent)."""
    from ..exams import protocol_groups

    calls = protocol_groups((1,))
    groups = [TextGroup(PROTOCOL_GROUP, "the paper's Exam 1 texts (the PhysScore side)",
                        list(dict.fromkeys(t for c in calls for t in c)))]
    groups += conformance_groups() if conformance else []
    groups += user_groups(Path(texts)) if texts else []
    total = len(_all_texts(groups))
    if total > MAX_TEXTS:  # refused before the first request (a paid API is not sent 21,000 texts for nothing)
        raise InputError(f"{total} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    return calls, groups


def _all_texts(groups: list[TextGroup]) -> list[str]:
    return list(dict.fromkeys(t for g in groups for t in g.texts))


def save_receipt(reference: Encoder, path: str | Path, *, texts: str | Path | None = None, conformance: bool = True,
                 cache_root: Path | None = None) -> dict:
    """Embed drift's texts with ``reference`` (as drift's reference side does) and write them as a receipt at
    ``path`` (``fasteval.core.runs.receipts``); its metadata. Every text must embed: a receipt is complete."""
    from ..encoders import as_encoder
    from .receipts import write_receipt

    from ..embeddings import EncoderView

    view = describe(as_encoder(reference))
    calls, groups = drift_groups(conformance, texts)
    failed: dict = {}
    refused: dict = {}
    # What the encoder returned, before drift normalises it (a receipt gives back exactly that, so drift against
    # it computes what drift against the reference computes, to the last bit); embedded afresh, not from a cache.
    recorder = _Recording(view.encoder)
    table = _embed_side("reference", EncoderView(recorder, view.name), calls, groups[1:], [], [view.name, ""],
                        cache_root, failed, refused, fresh=True)
    if failed or refused:
        what = next(iter(failed.values()), None) or f"{len(refused)} text(s) refused as too long"
        raise InputError(f"{view.name} could not embed every text of the receipt ({what}).",
                         "make the receipt with a reference that embeds them all (a local model, say).")
    every = _all_texts(groups)
    write_receipt(Path(path), every, np.stack([recorder.raw[t] for t in every]), identity_of(view), view.name)
    return {"texts": len(every), "dim": table.dim, "name": view.name}


class _Recording:
    """An encoder's raw outputs, kept by text as they are returned."""

    def __init__(self, inner):
        self.inner, self.raw = inner, {}

    def encode(self, texts: list[str]) -> np.ndarray:
        from ..embeddings import as_array

        out = as_array(self.inner.encode(texts))
        for text, row in zip(texts, out):
            self.raw.setdefault(text, row)
        return out


def _embed_side(side: str, view, calls: list, groups: list, tables: list, names: list, cache_root: Path | None,
                failed: dict, refused: dict, fresh: bool | None = None) -> EmbeddingTable:
    """One side's embeddings: the protocol's calls (the paper's grouping), then each other group, a group's
    failure recorded in ``failed`` and its refused long inputs in ``refused``; the reference's saved to its
    cache. The candidate is checked for the reference's dimension before its other texts are sent."""
    table, saved = _cached_table(view, cache_root, fresh=side == "candidate" if fresh is None else fresh)
    before = len(table)
    try:
        embed_groups(view.encoder, calls, table)
    except FastevalError as err:
        failed[PROTOCOL_GROUP] = f"{side}: {first_line(err, 200)}"
    if tables:  # another dimension is another model: refused before its other texts are sent
        check_dimensions(names[0], names[1], tables[0].dim, table.dim)
    for g in groups:
        try:
            for err in _embed_isolating_refusals(view.encoder, g.texts, table):
                refused.setdefault(err.text, []).append((side, g.name, err))
        except FastevalError as err:
            failed.setdefault(g.name, f"{side}: {first_line(err, 200)}")
            log.warning("%s could not embed the %s group: %s", names[side == "candidate"], g.name,
                        first_line(err, 200))
    if len(table) > before:
        saved(table)
    return table


MAX_REFUSED = 50  # texts of one group a side may refuse (each costs a request) before the group fails


def _embed_isolating_refusals(encoder, texts: list[str], table: EmbeddingTable) -> list[InputRefusedError]:
    """Embed ``texts`` into ``table``, leaving out each text the encoder refuses as too long (and returning those
    refusals); any other fault raises."""
    refusals: list[InputRefusedError] = []
    remaining = list(dict.fromkeys(texts))
    while remaining:
        try:
            embed_groups(encoder, [remaining], table)
            break
        except InputRefusedError as err:
            if err.text not in remaining or len(refusals) >= MAX_REFUSED:
                raise
            refusals.append(err)
            remaining.remove(err.text)
    return refusals


def _behaviours(refused: dict, names: list[str]) -> list[dict]:
    """One finding per side and group that refused inputs the other side embedded: how many, the shortest
    refused, and what the server said."""
    out: dict[tuple[str, str], dict] = {}
    for text, hits in refused.items():
        for side, group, err in hits:
            entry = out.setdefault((side, group), {"side": side, "model": names[side == "candidate"],
                                                   "group": group, "behaviour": "refuses long inputs", "texts": 0,
                                                   "shortest_chars": None, "message": err.message[:200]})
            entry["texts"] += 1
            entry["shortest_chars"] = min(len(text), entry["shortest_chars"] or len(text))
    return list(out.values())


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
    who = {side: report.identity.get(side, {}) for side in ("reference", "candidate")}
    lines = [f"fasteval drift: {report.candidate} against {report.reference} on {report.texts} texts: "
             f"{report.verdict} (threshold {report.threshold})",
             "  identity: " + "; ".join(f"{side} {w.get('model')!r} ({w.get('kind', '?')}"
                                        + (f", onnx {str(w['onnx_sha256'])[:12]}" if w.get("onnx_sha256") else "")
                                        + ")" for side, w in who.items() if w)
             + (f" -- {report.identity_mismatch}" if report.identity_mismatch else ""),
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
    if report.invariance:
        lines += ["", f"  invariance of the candidate (cosine to each text embedded alone; below {INVARIANCE_MIN}: "
                      "it depends on the batch):"]
        lines += [f"    {r['condition']:<26} " + (f"skipped ({r['skipped']})" if "skipped" in r else
                                                   f"{r['worst']:.6f}  {r['text']!r}") for r in report.invariance]
    for b in report.behaviours:
        other = "the candidate" if b["side"] == "reference" else "the reference"
        lines += ["", f"  behaviour: {b['model']} refuses {b['texts']} input(s) of the {b['group']} group that "
                      f"{other} embeds (the shortest {b['shortest_chars']} characters: {b['message'][:100]}); "
                      "they are left out of the cosines, the rest of the group is scored"]
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


def to_exit_code(report: DriftReport, fail_below: float | None, fail_on_collisions: bool,
                 expect_model: str | None = None) -> int:
    """0 conforms, 1 drifts past what was asked (--fail-below, --fail-on-collisions, --expect-model); without a
    gate 0."""
    if fail_below is None and not fail_on_collisions and expect_model is None:
        return 0
    return 1 if report.verdict == "drifts" else 0


def drift_junit(reports: list[DriftReport]) -> str:
    """The reports as JUnit XML for a CI system, one test suite per candidate (under <testsuites> when there are
    several): one test case per group (failing when a text in it drifted or it could not be embedded, with the
    worst text), per invariance condition, one for the collisions, one for the identity; each behaviour a skipped
    case that says what it is."""
    from xml.etree import ElementTree as ET

    suites = [_junit_suite(r) for r in reports]
    root = suites[0] if len(suites) == 1 else ET.Element("testsuites", name="fasteval drift")
    if len(suites) > 1:
        root.extend(suites)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _junit_suite(report: DriftReport):
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name=f"fasteval drift: {report.candidate}", tests="0", failures="0",
                       skipped="0")
    counts = {"tests": 0, "failures": 0, "skipped": 0}

    def case(name: str, failure: str | None = None, skipped: str | None = None, out: str = "") -> None:
        element = ET.SubElement(suite, "testcase", classname=f"drift.{report.candidate}", name=name)
        counts["tests"] += 1
        if failure is not None:
            ET.SubElement(element, "failure", message=failure).text = failure
            counts["failures"] += 1
        elif skipped is not None:
            ET.SubElement(element, "skipped", message=skipped)
            counts["skipped"] += 1
        if out:
            ET.SubElement(element, "system-out").text = out

    drifted = drifted_at(report.threshold)
    for g in report.groups.values():
        if g.failed:
            case(f"group {g.name}", failure=f"could not be embedded: {g.failed}")
        elif g.worst is not None and drifted(g.worst):
            case(f"group {g.name}", failure=f"worst cosine {g.worst:.6f} < {report.threshold} for {g.worst_text!r}",
                 out=f"mean {g.mean:.6f}; share below {g.share_below:.3f}; probes: {g.probes}")
        else:
            case(f"group {g.name}", out=f"n {g.n}; mean {fmt_or_na(g.mean)}; worst {fmt_or_na(g.worst)}")
    collided = f"{len(report.collisions)} collision(s)" if report.collisions else None
    case("collisions", failure=collided if report.fail_on_collisions else None,
         out=collided or "none")
    case("identity", failure=report.identity_mismatch, out=str(report.identity.get("candidate", {})))
    for r in report.invariance:
        if "skipped" in r:
            case(f"invariance {r['condition']}", skipped=r["skipped"])
        else:
            case(f"invariance {r['condition']}", out=f"worst {r['worst']:.6f} for {r['text']!r}",
                 failure=None if r["worst"] >= INVARIANCE_MIN else
                 f"cosine {r['worst']:.6f} < {INVARIANCE_MIN} to {r['text']!r} embedded alone")
    for b in report.behaviours:
        case(f"behaviour {b['side']} {b['group']}", skipped=f"{b['behaviour']}: {b['texts']} input(s): "
                                                         f"{b['message'][:160]}")
    for k, v in counts.items():
        suite.set(k, str(v))
    return suite


LADDER_COLUMNS = ["candidate", "verdict", "worst", "mean", "groups_below", "delta_tau", "delta_tau_ci_low",
                  "delta_tau_ci_high", "cells_changed", "batch_worst"]


def ladder_rows(reports: list[DriftReport]) -> list[dict]:
    """One row per candidate of a several-candidate drift (a quantization ladder, say): its verdict, worst and
    mean cosine, how many groups drifted or failed, Δτ with its interval, the cells whose τ changed, and the worst
    invariance cosine."""
    rows = []
    for r in reports:
        drifted = drifted_at(r.threshold)
        p = r.physscore or {}
        batch = [x["worst"] for x in r.invariance if x.get("worst") is not None]
        rows.append({"candidate": r.candidate, "verdict": r.verdict, "worst": r.worst_cosine, "mean": r.mean_cosine,
                     "groups_below": sum(bool(g.failed) or (g.worst is not None and drifted(g.worst))
                                         for g in r.groups.values()),
                     "delta_tau": p.get("delta_tau"), "delta_tau_ci_low": p.get("delta_tau_ci_low"),
                     "delta_tau_ci_high": p.get("delta_tau_ci_high"), "cells_changed": len(p.get("cells_changed", [])),
                     "batch_worst": min(batch) if batch else None})
    return rows


def ladder_text(rows: list[dict], reference: str) -> str:
    """The several-candidate table as the terminal shows it."""
    def num(v, f="{:.5f}"):
        return "n/a" if v is None else f.format(v)

    width = max(len("candidate"), *(len(r["candidate"]) for r in rows))
    lines = [f"fasteval drift: {len(rows)} candidates against {reference}", "",
             f"  {'candidate':<{width}} {'verdict':<8} {'worst':>8} {'mean':>8} {'groups':>6} "
             f"{'delta tau [95%]':>22} {'cells':>5} {'batch':>8}"]
    for r in rows:
        ci = "" if r["delta_tau_ci_low"] is None else f" [{r['delta_tau_ci_low']:.2f}, {r['delta_tau_ci_high']:.2f}]"
        lines.append(f"  {r['candidate']:<{width}} {r['verdict']:<8} {num(r['worst']):>8} {num(r['mean']):>8} "
                     f"{r['groups_below']:>6} {num(r['delta_tau'], '{:+.2f}') + ci:>22} {r['cells_changed']:>5} "
                     f"{num(r['batch_worst'], '{:.4f}'):>8}")
    return "\n".join(lines)


def fmt_or_na(value) -> str:
    return "n/a" if value is None else f"{value:.6f}"
