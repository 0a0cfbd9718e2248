"""``fasteval.drift(reference, candidate)``: embed the protocol's texts and the conformance set with both encoders and
score how far the candidate drifts (``score.py``, into ``DriftReport``, ``core/results/drift.py``). The one way
fasteval compares two encoders: ``fasteval drift`` (folders, registry names, URLs, receipts), the export's fp16
report and the int8 benchmark all go through it.

Each side is planned once (``fasteval.core.plan``: the one door, what it says it is, its embedding key); every
limit (threshold, resamples, texts, accepted groups) is checked before a text is sent. The candidate is always
embedded afresh (a gate scores the deployment as it is now, never a cache of it); the reference comes from the
embedding cache when its identity is known (content hashes, or a served model's deployment) and a few of its
cached texts come back as cached (``cache.verified``). A group one side cannot embed (a server that refuses the
empty string) is reported as failed, not a crash. Two encoders of different dimensions are refused: they are
different models, and no cosine compares them. ``save_receipt`` embeds drift's texts with a reference into a
receipt file (``fasteval.models.adapters.receipt``), which the door then takes as a reference.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np

from ...choices import DRIFT_RESAMPLES, INVARIANCE_TIERS, check_choice
from ...embeddings import EmbeddingTable, as_array, embed_groups
from ...errors import FastevalError, InputError, InputRefusedError, first_line
from ...plan import Plan, Scoring, plan, score, scoring, step_timer
from ...protocol.conformance import TextGroup, conformance_groups, user_groups
from .identity import identity_of, precision_mismatch, precision_of
from ...results.drift import DEFAULT_THRESHOLD, NORM_TOLERANCE, DriftReport, drifted_at
from .score import MAX_TEXTS, check_dimensions, compare_tokenizations, physscore_drift, score_drift
from ...vectors import comparable

log = logging.getLogger(__name__)

PROTOCOL_GROUP = "protocol"
SIDES = ("reference", "candidate")


def drift_scoring() -> Scoring:
    """What each side is planned for: the paper's Exam 1 on the paper's protocol (the PhysScore side), with no
    bootstrap of its own (drift's is the paired one of Δτ)."""
    return scoring(exams=(1,), bootstrap=0)


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
    default: the reference's, where both say theirs: llama.cpp's ``ftype``, TEI's ``dtype``, a local model's
    ``dtype``); ``invariance``: also embed a few texts with the candidate alone, in batches of several sizes and
    with several requests in flight (``invariance.py``): a candidate whose vectors depend on the batch drifts;
    ``accept``: groups whose drift is known and accepted (llama.cpp's Hangul, say): measured and shown, never a
    reason to drift (InputError for a group drift does not have). Where both sides can tokenize (a local
    tokenizer, a server's ``/tokenize``), the drifted texts' token ids are compared: a candidate that tokenizes
    them differently is named (``report.tokenization``). ``reference_vectors``, ``candidate_vectors``: what a
    vector store keeps of that side (``dimensions``, ``vector_quantization``, ``calibration``, as
    ``fasteval.evaluate`` takes them): each text's vectors are compared in the space both keep
    (``core.vectors.comparable``: "my store's int8 vectors against the model's floats" is the int8 vectors' floats
    against the floats; binary on either side compares sign bits), and the PhysScore side scores each side's vectors
    as its store does. ``diagnose``: when the candidate drifts and the reference is a local model, name the usual
    misconfiguration of the reference it embeds like (``diagnosis.py``; never changes the verdict).
    ``invariance_tier``: "cosine" (a condition below 0.999 drifts) or "bitwise" (any difference drifts)."""
    from ...kernels import warm_up_in_background
    from ....models.adapters.receipt import ReceiptEncoder

    check_limits(threshold, resamples)
    check_choice(invariance_tier, INVARIANCE_TIERS, "invariance tier", "--invariance")
    calls, groups = drift_groups(conformance, texts)
    accept = accepted_groups(accept, groups)
    timings: dict[str, float] = {}
    timed = step_timer(on_step, timings)
    asked = [reference_vectors or {}, candidate_vectors or {}]
    scorings = [scoring(exams=(1,), bootstrap=0, **options) if options else drift_scoring() for options in asked]
    plans = [plan(reference, scorings[0]), plan(candidate, scorings[1])]
    table1 = scorings[0].table1_texts()
    seen = {t for call in calls for t in call}
    calibration = [t for s in scorings if s.vectors is not None for t in s.vectors.calibration_of(table1)]
    extra = [t for t in dict.fromkeys(calibration) if t not in seen]
    calls = calls + ([extra] if extra else [])  # int8's own calibration texts, embedded by both sides
    if extra and isinstance(plans[0].encoder, ReceiptEncoder):
        raise InputError("A receipt holds drift's texts only, not another calibration set.",
                         "leave --calibration out (int8 is calibrated on Table 1's texts, which the receipt holds).")
    names = list(labels) if labels else [p.name for p in plans]
    receipt = plans[0].encoder if isinstance(plans[0].encoder, ReceiptEncoder) else None
    if receipt is not None:  # a receipt gates only the text set it was made for
        receipt.require(_all_texts(groups))
        # a candidate of another dimension is refused before the receipt's rows are read (its headers said its
        # dimension; a receipt may hold gigabytes): one text asked of the candidate, then the receipt checked whole
        first = as_array(plans[1].encoder.encode(calls[0][:1]))
        check_dimensions(names[0], names[1], receipt.dim, first.shape[1] if first.ndim == 2 else None)
        receipt.check()
    encoded: dict[str, Any] = {}
    tables: list[EmbeddingTable] = []
    failed: dict[str, str] = {}
    refused: dict[str, list] = {}
    warming = warm_up_in_background()  # numba loads the kernels while the encoders work
    for side, planned in zip(SIDES, plans):
        if side == "candidate" and tables[0].dim is not None and hasattr(planned.encoder, "use_float"):
            # a served candidate's base64 answers against its float ones (an encoder that can be asked for floats:
            # nothing to announce for a local one), before its vectors are read (one text, its dimension checked
            # first): one that encodes otherwise is a finding, and its floats are read instead
            with timed("base64", "compare base64 and float answers"):
                encoded = base64_parity(planned.encoder, calls[0][:1], (names[0], names[1], tables[0].dim))
            if encoded.get("finding"):
                planned.encoder.use_float()
        shown = "read the reference's receipt" if side == "reference" and receipt is not None else f"embed the {side}"
        with timed(f"embed {side}", shown):
            tables.append(_embed_side(side, planned, calls, groups[1:], tables, names, cache_root, failed, refused))
    warming.join()
    # A text one side refuses as too long is a behaviour of that side, reported on its own line; the group is
    # scored on the texts both embed (it is neither failed nor shrunk further).
    scored = [TextGroup(g.name, g.probes, [t for t in g.texts if t not in refused]) for g in groups]
    forms = [s.vectors for s in scorings]
    compared = tables if forms == [None, None] or PROTOCOL_GROUP in failed else \
        comparable(tables, forms, scorings[0].table1_texts())
    maps = [{t: table[[t]][0] for g in scored if g.name not in failed for t in g.texts} for table in compared]
    with timed("score"):
        report = score_drift(names[0], names[1], scored, maps[0], maps[1], threshold=threshold, failed=failed,
                             fail_on_collisions=fail_on_collisions)
    report.accepted = accept
    report.timings = timings
    report.base64 = encoded
    report.invariance_tier = invariance_tier
    if receipt is None and not failed.get(PROTOCOL_GROUP):
        with timed("norms", "compare the raw norms"):
            report.norms = norm_check(plans[0].encoder, plans[1].encoder, groups[0].texts[:NORM_TEXTS])
    if receipt is None and not failed.get(PROTOCOL_GROUP) and plans[1].view.usage is not None:
        with timed("token counts", "compare the server's token counts"):
            report.token_counts = token_counts(plans[0].encoder, plans[1].encoder, plans[1].view.usage,
                                               _token_probe_texts(groups))
    if invariance and not failed.get(PROTOCOL_GROUP):
        from .invariance import invariance as probe

        long_texts = next((g.texts for g in groups if g.name == "length"), [])
        with timed("invariance", "batch and concurrency invariance"):
            report.invariance = probe(plans[1].encoder, groups[0].texts,
                                      [t for t in long_texts if t not in refused])
    report.identity = {side: identity_of(p.view) for side, p in zip(SIDES, plans)}
    for side, s in zip(SIDES, scorings):  # what a store keeps of a side, where it is not the floats
        if s.vectors is not None:
            report.identity[side]["vectors"] = s.vectors.keyed()
    report.behaviours = _behaviours(refused, names, report.identity)
    said = report.identity["candidate"].get("model")
    if expect_model is not None:
        report.identity_match = model_id_match(said, expect_model)
        if report.identity_match is None:
            report.identity_mismatch = f"the candidate says it is {said!r}, expected {expect_model!r}"
    report.precision = {side: precision_of(report.identity[side]) for side in SIDES}
    report.precision_mismatch = precision_mismatch(report.precision, expect_precision)
    drifted = sorted(((c, t) for t, c in report.cosines.items() if drifted_at(threshold)(c)),
                     key=lambda ct: (ct[0] == ct[0], ct[0]))[:MAX_TOKENIZED]  # NaN first, then the worst
    if drifted:
        with timed("tokenization", "compare the drifted texts' tokens"):
            report.tokenization = _tokenization(plans, [t for _c, t in drifted])
    # the diagnosis explains the texts that drifted outside the accepted groups (their drift is known), where any
    # did (a candidate that drifts for its batches or its precision alone has no misconfiguration to name)
    known = {t for g in groups if g.name in accept for t in g.texts}
    unexplained = {t: c for t, c in report.cosines.items() if t not in known}
    if diagnose and report.verdict == "drifts" and forms == [None, None] and not failed and \
            any(drifted_at(threshold)(c) for c in unexplained.values()) and \
            (receipt is not None or _is_local(plans[0].encoder)):
        from .diagnosis import diagnose as diagnosis_of
        from .diagnosis import diagnose_recorded

        with timed("diagnosis", "diagnose: the reference as its usual misconfigurations"):
            report.diagnosis = diagnosis_of(plans[0].encoder, maps[1], unexplained, threshold) \
                if receipt is None else diagnose_recorded(receipt.variants, maps[1], unexplained, threshold)
    if PROTOCOL_GROUP not in failed:
        with timed("physscore", "Table 1 of both sides"):
            results = [score(p, table)["exam1"] for p, table in zip(plans, tables)]
            report.physscore = physscore_drift(results[0], results[1], resamples)
    return report


MAX_TOKENIZED = 50  # drifted texts (the worst first) whose token ids are compared


NORM_TEXTS = 16  # texts whose raw norms the norm gate compares
TOKEN_TEXTS = 12  # texts whose token counts a served candidate is asked, one a request


def _token_probe_texts(groups: list[TextGroup]) -> list[str]:
    """A few texts of every kind drift has (the protocol's first, then one of each other group), short of the long
    ones (a server may refuse them)."""
    picked = list(groups[0].texts[:4])
    for g in groups[1:]:
        picked += [t for t in g.texts if t and len(t) < 500][:1]
    return list(dict.fromkeys(picked))[:TOKEN_TEXTS]


# base64 rows equal the float rows when within this of each other (a server prints floats to fewer digits, or not)
BASE64_TOLERANCE = 1e-6


def base64_parity(candidate: Any, texts: list[str],
                  reference: tuple[str, str, int] | None = None) -> dict[str, Any]:
    """The same ``texts`` asked of a served candidate with ``encoding_format`` "float" and "base64": the base64
    rows (read as OpenAI's little-endian float32) must be the float ones. ``endianness``: which reading matches
    ("little", "big"; None: neither); a ``finding`` where little-endian does not. Empty for another encoder, or a
    server that answers base64 with floats (``base64: "ignored"``). ``reference``: (its name, the candidate's, its
    dimension): a float answer of another dimension is refused at once (``check_dimensions``), before the base64
    request."""
    import base64

    from ....models.served import ServedEncoder
    from ....models.served.answers import read_rows

    if not isinstance(candidate, ServedEncoder):
        return {}
    payload = {"input": [candidate.prompt + t for t in texts] if candidate.prompt else list(texts),
               "model": candidate.model}
    try:
        floats = read_rows(candidate.http.request("POST", "/embeddings", {**payload, "encoding_format": "float"}),
                           texts, "float").astype(np.float64)
    except FastevalError as err:
        return {"compared": 0, "skipped": first_line(err, 160)}
    if reference is not None:  # another model: refused now, after one text (never a parity to report)
        check_dimensions(reference[0], reference[1], reference[2], floats.shape[1])
    try:
        body = candidate.http.request("POST", "/embeddings", {**payload, "encoding_format": "base64"})
    except FastevalError as err:
        return {"compared": 0, "skipped": first_line(err, 160)}
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != len(texts) or \
            not all(isinstance(d, dict) and isinstance(d.get("embedding"), str) for d in data):
        return {"compared": len(texts), "base64": "ignored (the server answered floats)"}
    data = sorted(data, key=lambda d: d["index"] if isinstance(d.get("index"), int) else 0)  # input order
    diffs = {}
    for name, dtype in (("little", "<f4"), ("big", ">f4")):
        try:
            rows = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), dtype=dtype) for d in data])
            with np.errstate(invalid="ignore", over="ignore"):  # the wrong byte order reads NaN and huge numbers
                diff = np.max(np.abs(rows.astype(np.float64) - floats)) if rows.shape == floats.shape else np.inf
            diffs[name] = float(diff) if np.isfinite(diff) else float("inf")
        except ValueError:
            diffs[name] = float("inf")
    endianness = next((n for n, d in diffs.items() if d <= BASE64_TOLERANCE), None)
    out: dict[str, Any] = {"compared": len(texts), "max_abs": diffs["little"], "endianness": endianness}
    if endianness != "little":
        out["finding"] = ("its base64 vectors are big-endian float32, not OpenAI's little-endian"
                          if endianness == "big" else
                          f"its base64 vectors are not its float ones (max |diff| {diffs['little']:.3g})")
    return out


def token_counts(reference: Any, candidate: Any, usage: Any, texts: list[str]) -> dict[str, Any]:
    """Token-count parity: each text sent alone, the server's ``usage.prompt_tokens`` for it against the
    reference tokenizer's count with its special tokens (a local reference; none otherwise). A server that adds
    no BOS/EOS, or tokenizes otherwise, counts otherwise. ``differ``: how many differ; ``examples``: those that
    differ most. Empty where the server reports no counts or the reference has no tokenizer."""
    tokenizer = getattr(reference, "tokenizer", None)
    if tokenizer is None or not hasattr(tokenizer, "encode"):
        return {}
    rows = []
    for text in texts:
        before = usage.prompt_tokens
        try:
            candidate.encode([text])
        except FastevalError as err:
            log.info("token counts: %r not embedded: %s", text, first_line(err, 120))
            continue
        said = usage.prompt_tokens - before
        if said <= 0:  # the server reports no counts
            return {}
        rows.append({"text": text, "reference_tokens": len(tokenizer.encode(text).ids), "candidate_tokens": said})
    if not rows:
        return {}
    differ = sorted((r for r in rows if r["reference_tokens"] != r["candidate_tokens"]),
                    key=lambda r: -abs(r["reference_tokens"] - r["candidate_tokens"]))
    return {"compared": len(rows), "differ": len(differ), "examples": differ[:3]}


def norm_check(reference: Any, candidate: Any, texts: list[str]) -> dict[str, Any]:
    """The norm gate: ``texts`` embedded raw (not normalised) by both sides. Where the reference's vectors are not
    unit vectors, each text's norm on the candidate over the reference's must be within NORM_TOLERANCE of 1: a
    candidate that normalises when the model does not, or scales, is a ``finding``. Where the reference returns
    unit vectors, a candidate that does not is a ``finding`` too (dot-product users get other scores); where the
    reference is a local model, its norms are compared with the reference's with its Normalize dropped, and
    ``variant`` is "normalize=off" where they are within NORM_TOLERANCE (``normalize_off_ratio``: the worst)."""
    ref = as_array(reference.encode(list(texts))).astype(np.float64)
    cand = as_array(candidate.encode(list(texts))).astype(np.float64)
    rn, cn = np.linalg.norm(ref, axis=1), np.linalg.norm(cand, axis=1)
    unit = [bool(np.all(np.abs(n - 1) <= 1e-3)) for n in (rn, cn)]
    ratio = np.divide(cn, rn, out=np.full_like(cn, np.inf), where=rn > 0)
    k = int(np.argmax(np.abs(ratio - 1)))
    out: dict[str, Any] = {"compared": len(texts), "reference_unit": unit[0], "candidate_unit": unit[1],
                           "worst_ratio": float(ratio[k]), "text": texts[k]}
    if unit[0] and not unit[1]:
        out["finding"] = (f"the candidate's vectors are not unit vectors (norm {cn[k]:.4g} for {texts[k]!r}), the "
                          "reference's are: it does not normalise where the model does")
        raw = _unnormalized_norms(reference, texts)
        if raw is not None:  # the reference with its Normalize dropped: does the candidate embed like it?
            off = np.divide(cn, raw, out=np.full_like(cn, np.inf), where=raw > 0)
            out["normalize_off_ratio"] = float(off[int(np.argmax(np.abs(off - 1)))])
            if abs(out["normalize_off_ratio"] - 1) <= NORM_TOLERANCE:
                out["variant"] = "normalize=off"
                out["finding"] += f" (its norms are the reference's with normalize=off, within {NORM_TOLERANCE:.0%})"
    elif not unit[0] and unit[1]:
        out["finding"] = (f"the candidate returns unit vectors, the reference does not (norm {rn[k]:.4g} for "
                          f"{texts[k]!r}): it normalises where the model does not")
    elif not unit[0] and not abs(ratio[k] - 1) <= NORM_TOLERANCE:
        out["finding"] = (f"the candidate's norm is {ratio[k]:.4g}x the reference's for {texts[k]!r} (more than "
                          f"{NORM_TOLERANCE:.0%} apart)")
    return out


def _unnormalized_norms(reference: Any, texts: list[str]) -> np.ndarray | None:
    """The norms of ``texts`` embedded by a local reference with its Normalize dropped (the diagnosis's
    ``normalize=off``); None for another reference."""
    if not _is_local(reference) or not reference.folder.normalize:
        return None
    from .diagnosis import normalize_off

    return np.linalg.norm(as_array(normalize_off(reference).encode(list(texts))).astype(np.float64), axis=1)


def _is_local(encoder: Any) -> bool:
    """Whether an encoder is a local ONNX model (the diagnosis re-runs it under other settings)."""
    from ....models.onnx.encoder import OnnxEncoder

    return isinstance(encoder, OnnxEncoder)


def _tokenization(plans: list[Plan], texts: list[str]) -> dict:
    """The two sides' token ids of ``texts`` compared (``compare_tokenizations``), where both can tokenize: a
    served side by its server's /tokenize (never a local stand-in), a local one by its tokenizer; {} otherwise."""
    ids = []
    for view in (p.view for p in plans):
        ask = getattr(view.encoder, "server_token_ids", None)
        ask = ask if callable(ask) else view.token_ids
        try:
            got = ask(list(texts)) if ask is not None else None
        except FastevalError as err:
            log.info("%s could not tokenize the drifted texts: %s", view.name, first_line(err, 160))
            got = None
        if got is None or len(got) != len(texts):
            return {}
        ids.append(got)
    return compare_tokenizations(texts, ids[0], ids[1])


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
    total = len(_all_texts(groups))
    if total > MAX_TEXTS:  # refused before the first request (a paid API is not sent 21,000 texts for nothing)
        raise InputError(f"{total} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    return calls, groups


def _all_texts(groups: list[TextGroup]) -> list[str]:
    return list(dict.fromkeys(t for g in groups for t in g.texts))


def export_drift(model: str, dest: str | Path) -> DriftReport:
    """How a derived export (fp16, int8: ``dest``) embeds against ``model``'s fp32 export, on the protocol's texts
    (no conformance set, no bootstrap): what `fasteval export --dtype` reports beside the export it made."""
    from ....models.loader import export_model, load_model

    return drift(load_model(str(export_model(model))), load_model(str(dest)), conformance=False, resamples=0)


def save_receipt(reference: Any, path: str | Path, *, texts: str | Path | None = None, conformance: bool = True,
                 cache_root: Path | bool | None = None, diagnose: bool = True,
                 on_step: Callable[[str], None] | None = None) -> dict:
    """Embed drift's texts with ``reference`` (as drift's reference side does) and write them as a receipt at
    ``path`` (``fasteval.models.adapters.receipt``); its metadata. Every text must embed: a receipt is complete.
    ``diagnose``: where the reference is a local model, the receipt also holds its usual misconfigurations'
    vectors of a fixed subset of the texts (``diagnosis.record_variants``), so drift against the receipt names
    what a drifting candidate embeds like, as against the folder. ``on_step``: told each step as it starts (the CLI's
    progress: the variants take most of the time, and the exports they need are made the first time)."""
    from dataclasses import replace

    step = on_step or (lambda _name: None)

    from ....models.adapters.receipt import write_receipt

    calls, groups = drift_groups(conformance, texts)
    planned = plan(reference, drift_scoring())
    failed: dict[str, str] = {}
    refused: dict[str, list] = {}
    # What the encoder returned, before drift normalises it (a receipt gives back exactly that, so drift against
    # it computes what drift against the reference computes, to the last bit); embedded afresh, not from a cache.
    recorder = _Recording(planned.encoder)
    recording = replace(planned, view=replace(planned.view, encoder=recorder))
    step(f"embed {planned.name}")
    table = _embed_side("reference", recording, calls, groups[1:], [], [planned.name, ""], cache_root, failed,
                        refused, fresh=True)
    if failed or refused:
        what = next(iter(failed.values()), None) or f"{len(refused)} text(s) refused as too long"
        raise InputError(f"{planned.name} could not embed every text of the receipt ({what}).",
                         "make the receipt with a reference that embeds them all (a local model, say).")
    every = _all_texts(groups)
    variants: dict[str, Any]
    if not diagnose:
        variants = {"unavailable": "it was saved with --no-diagnose"}
    elif _is_local(planned.encoder):
        from .diagnosis import receipt_texts, record_variants

        subset = receipt_texts(groups)
        variants = {"texts": subset, **record_variants(planned.encoder, subset, on_variant=step)}
    else:
        variants = {"unavailable": f"its reference ({planned.name}) is not a local model: no variant of it can be "
                                   "embedded"}
    write_receipt(Path(path), every, np.stack([recorder.raw[t] for t in every]), identity_of(planned.view),
                  planned.name, variants)
    return {"texts": len(every), "dim": table.dim, "name": planned.name,
            "variants": len(variants.get("names") or ()), "variant_texts": len(variants.get("texts") or ())}


class _Recording:
    """An encoder's raw outputs, kept by text as they are returned."""

    def __init__(self, inner):
        self.inner, self.raw = inner, {}

    def encode(self, texts: list[str]) -> np.ndarray:
        from ...embeddings import as_array

        out = as_array(self.inner.encode(texts))
        for text, row in zip(texts, out):
            self.raw.setdefault(text, row)
        return out


def model_id_match(said: Any, expected: str) -> str | None:
    """How a served model's id (``said``) names the ``expected`` one: "exactly", or "as the last path component(s)
    of 'models/all-MiniLM-L6-v2'" (infinity and others serve a model by its path); None when it names another."""
    if not isinstance(said, str):
        return None
    if said == expected:
        return "exactly"
    tail = [part for part in expected.strip("/").split("/") if part]
    parts = [part for part in said.strip("/").split("/") if part]
    if tail and len(parts) > len(tail) and parts[-len(tail):] == tail:
        return f"as the last path component{'s' if len(tail) > 1 else ''} of {said!r}"
    return None


def _embed_side(side: str, planned: Plan, calls: list, groups: list, tables: list, names: list,
                cache_root: Path | bool | None, failed: dict, refused: dict,
                fresh: bool | None = None) -> EmbeddingTable:
    """One side's embeddings: the protocol's calls (the paper's grouping), then each other group, a group's
    failure recorded in ``failed`` and its refused long inputs in ``refused``; the reference's saved to its
    cache. The candidate is checked for the reference's dimension before its other texts are sent."""
    table, saved = _cached_table(planned, cache_root, fresh=side == "candidate" if fresh is None else fresh)
    before = len(table)
    if tables and calls and calls[0]:  # another dimension is another model: said after one text, not all of them
        probe = None
        with suppress(FastevalError):  # (a side that cannot embed fails below, in its group, as it would)
            probe = as_array(planned.encoder.encode([calls[0][0]]))  # alone, outside the table: the paper's
        if probe is not None and probe.ndim == 2:                    # calls stay as they are
            check_dimensions(names[0], names[1], tables[0].dim, probe.shape[1])
    try:
        embed_groups(planned.encoder, calls, table, name=planned.name, concurrency=planned.view.concurrency)
    except FastevalError as err:
        failed[PROTOCOL_GROUP] = f"{side}: {first_line(err, 200)}"
    if tables:  # another dimension is another model: refused before its other texts are sent
        check_dimensions(names[0], names[1], tables[0].dim, table.dim)
    for g in groups:
        try:
            for refusal in _embed_isolating_refusals(planned.encoder, g.texts, table):
                refused.setdefault(refusal.text, []).append((side, g.name, refusal))
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


def _behaviours(refused: dict, names: list[str], identity: dict) -> list[dict]:
    """One finding per side and group that refused inputs the other side embedded: how many, the shortest
    refused, what the server said, and the longest input each side takes or truncates to, where it says."""
    out: dict[tuple[str, str], dict] = {}
    for text, hits in refused.items():
        for side, group, err in hits:
            other = "candidate" if side == "reference" else "reference"
            entry = out.setdefault((side, group), {
                "side": side, "model": names[side == "candidate"], "group": group, "behaviour": "refuses long inputs",
                "texts": 0, "shortest_chars": None, "message": err.message[:200],
                "max_tokens": identity.get(side, {}).get("max_tokens"),
                "other_truncates_at": identity.get(other, {}).get("max_tokens")})
            entry["texts"] += 1
            entry["shortest_chars"] = min(len(text), entry["shortest_chars"] or len(text))
    return list(out.values())


def _cached_table(planned: Plan, cache_root: Path | bool | None, fresh: bool) -> tuple[EmbeddingTable,
                                                                           Callable[[EmbeddingTable], None]]:
    """The encoder's cached embeddings (empty when its identity is unknown, or ``fresh``: the candidate) once
    verified against it, and how to save them back."""
    from ...cache import embedding_cache, verified
    from ..job import cache_folder

    planned = planned.settle()  # read and saved under the key of what runs (a GPU may fall back to the CPU)
    cache = embedding_cache(planned.settings, cache_folder(cache_root))
    table = EmbeddingTable() if fresh else verified(cache, planned)[0]
    return table, (lambda t: cache.save(planned.embedding_key, t))
