"""Drift: does a candidate encoder embed like a reference one? (``fasteval drift``; scoring only, on two
embedding tables of the same texts.)

* per text, the cosine of its reference and candidate embeddings (both L2-normalised);
* per group (the protocol's texts, and each group of the conformance set), the mean, the worst and the share
  below the threshold;
* **collisions**: pairs of distinct texts the reference keeps apart (cosine < ``COLLISION_APART``) that the
  candidate makes near-identical (cosine >= ``COLLISION_SAME``): "résumé" and "resume" once accents are
  stripped, every all-caps text once case is folded;
* **neighbourhood agreement**: for each text, the share of its ``NEIGHBOURS`` nearest texts that both
  encoders agree on;
* the **PhysScore side**: Table 1 τ and PACC of both, the cells whose τ changed, and the paired bootstrap Δτ
  (candidate − reference) with its 95% interval (the ``compare`` machinery);
* a **verdict**: "drifts" when the worst cosine is below the threshold, a group the reference embeds fails on
  the candidate, the candidate depends on the batch, says it is another model or serves another precision than
  expected, or (when asked) there is a collision; else "conforms". Every "drifts" names its reasons
  (``DriftReport.reasons``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..protocol.conformance import TextGroup  # noqa: F401 (re-exported: the texts drift scores)

DEFAULT_THRESHOLD = 0.99  # a text whose two embeddings' cosine is below this has drifted ...
INVARIANCE_MIN = 0.999  # a text's cosine in another batch to itself alone below this: the candidate depends on the batch
COSINE_TOLERANCE = 1e-6  # ... by more than this: two identical models give cosines of 0.9999999999999991
COLLISION_APART, COLLISION_SAME = 0.99, 0.999
NEIGHBOURS = 10
WORST_LISTED = 10
MAX_TEXTS = 20_000  # the collision and neighbour search is O(n^2) in time
PAIR_BLOCK = 1024  # rows of the similarity matrices computed at once (1024 x 20,000 float64: 164 MB a side)


@dataclass
class GroupDrift:
    name: str
    probes: str
    n: int
    mean: float | None  # None: the candidate (or the reference) failed on the group
    worst: float | None
    share_below: float | None
    worst_text: str | None = None
    failed: str | None = None  # why the group could not be embedded ("candidate: ...")


@dataclass
class DriftReport:
    reference: str
    candidate: str
    threshold: float
    texts: int
    mean_cosine: float
    worst_cosine: float
    groups: dict[str, GroupDrift]
    worst: list[dict[str, Any]]  # the worst texts: group, text, cosine
    collisions: list[dict[str, Any]]  # text_a, text_b, reference_cosine, candidate_cosine, groups
    neighbourhood_agreement: float
    physscore: dict[str, Any] = field(default_factory=dict)
    fail_on_collisions: bool = False
    # what a side does that is not drift: inputs it refuses as too long where the other embeds them (one finding
    # per side and group: side, model, group, behaviour, texts, shortest_chars, message)
    behaviours: list[dict[str, Any]] = field(default_factory=list)
    # who each side says it is (a served model: its /models entry and server info; a local one: its hashes)
    identity: dict[str, Any] = field(default_factory=dict)
    identity_mismatch: str | None = None  # --expect-model: why the candidate is not the model expected
    # the candidate's batch and concurrency invariance (core/runs/invariance.py): condition, worst, text | skipped
    invariance: list[dict[str, Any]] = field(default_factory=list)
    # the weights' precision each side states (f32, f16, bf16, q8_0, q4_0, int8, ...; None: not stated), and why
    # the candidate's is not the one expected (the reference's, or --expect-precision)
    precision: dict[str, str | None] = field(default_factory=dict)
    precision_mismatch: str | None = None
    # how each side tokenizes the drifted texts, where both can say (a local tokenizer, a server's /tokenize):
    # compared, differ (other ids), truncated (the same ids, one side cut short), examples
    tokenization: dict[str, Any] = field(default_factory=dict)
    cosines: dict[str, float] = field(default_factory=dict, repr=False)  # text -> cosine (not in the JSON)
    # groups whose drift is known and accepted (--accept): measured and shown, never a reason to drift
    accepted: list[str] = field(default_factory=list)
    # seconds per step: each side's embedding, the batch probe, the tokenizer comparison, the scoring and Table 1
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def reasons(self) -> list[str]:
        """Why the candidate drifts, each by name (empty: it conforms): a group whose worst text is below the
        threshold (less the stated tolerance; a NaN never conforms) or that failed, a batch condition below
        INVARIANCE_MIN, another identity or precision, (when asked) collisions; and, as the explanation of drifted
        texts, that the candidate tokenizes them into other ids, or cuts them at another length."""
        groups = self.drifted_groups
        out = [r for name, r in groups.items() if name not in self.accepted]
        if drifted_at(self.threshold)(self.worst_cosine) and not groups:
            out.append(f"worst cosine {self.worst_cosine:.4f}")
        out += [f"batch: {r['condition']} {r['worst']:.4f}" for r in self.invariance
                if r.get("worst") is not None and not r["worst"] >= INVARIANCE_MIN]
        if self.identity_mismatch:
            out.append("identity: " + self.identity_mismatch)
        if self.precision_mismatch:
            out.append("precision: " + self.precision_mismatch)
        if self.fail_on_collisions and self.collisions:
            out.append(f"{len(self.collisions)} collision(s)")
        t = self.tokenization
        if out and t.get("differ"):
            out.append(f"tokenizer: {t['differ']} of {t['compared']} drifted texts tokenized differently")
        if out and t.get("truncated"):
            limits = [self.identity.get(side, {}).get("max_tokens") for side in ("reference", "candidate")]
            out.append(f"truncation: {t['truncated']} drifted text(s) cut at another length" +
                       (f" (the reference takes {limits[0]} tokens, the candidate {limits[1]})" if all(limits) else ""))
        return out

    @property
    def accepted_drift(self) -> list[str]:
        """The accepted groups that drifted, as ``reasons`` names them (shown beside a verdict they do not make)."""
        return [r for name, r in self.drifted_groups.items() if name in self.accepted]

    @property
    def drifted_groups(self) -> dict[str, str]:
        """Each group that failed or whose worst text is below the threshold (less the stated tolerance), in group
        order: its name -> its reason ("scripts 0.7796", "edge failed"); accepted groups too."""
        drifted = drifted_at(self.threshold)
        return {g.name: f"{g.name} failed" if g.failed else f"{g.name} {g.worst:.4f}" for g in self.groups.values()
                if g.failed or (g.worst is not None and drifted(g.worst))}

    @property
    def verdict(self) -> str:
        """"conforms" only when nothing is wrong (``reasons`` is empty)."""
        return "drifts" if self.reasons else "conforms"

    def line(self, label: str) -> str:
        """One line: the cosines, the collisions and the PhysScore side (the export's fp16 / int8 report)."""
        p = self.physscore
        side = (f"; Table 1 tau {p['reference_tau']:.2f} -> {p['candidate_tau']:.2f}, cells whose tau changed: "
                f"{len(p['cells_changed'])} of 20" if p else "")
        return (f"{label} on {self.texts} texts: cosine mean {self.mean_cosine:.5f}, worst {self.worst_cosine:.5f}; "
                f"collisions {len(self.collisions)}{side}")

    def to_json(self) -> dict[str, Any]:
        from ..io import to_jsonable

        return to_jsonable({
            "reference": self.reference, "candidate": self.candidate, "verdict": self.verdict,
            "threshold": self.threshold, "texts": self.texts, "mean_cosine": self.mean_cosine,
            "worst_cosine": self.worst_cosine,
            "groups": {k: {"probes": g.probes, "n": g.n, "mean": g.mean, "worst": g.worst,
                           "share_below": g.share_below, "worst_text": g.worst_text, "failed": g.failed}
                       for k, g in self.groups.items()},
            "worst": self.worst, "collisions": self.collisions,
            "neighbourhood_agreement": self.neighbourhood_agreement, "behaviours": self.behaviours,
            "identity": self.identity, "identity_mismatch": self.identity_mismatch, "invariance": self.invariance,
            "precision": self.precision, "precision_mismatch": self.precision_mismatch,
            "tokenization": self.tokenization, "reasons": self.reasons, "accepted": self.accepted,
            "accepted_drift": self.accepted_drift, **self.physscore, "timings": self.timings})


def drifted_at(threshold: float):
    """Whether a cosine has drifted under ``threshold``: below it by more than COSINE_TOLERANCE, or not a
    number."""
    return lambda cosine: not (cosine >= threshold - COSINE_TOLERANCE)


def score_drift(reference: str, candidate: str, groups: list[TextGroup], ref: dict[str, np.ndarray],
                cand: dict[str, np.ndarray], failed: dict[str, str] | None = None,
                threshold: float = DEFAULT_THRESHOLD, fail_on_collisions: bool = False) -> DriftReport:
    """The drift report of two encoders' embeddings (``ref``/``cand``: text -> vector) of ``groups``' texts.
    ``failed``: group name -> why it could not be embedded (it is reported, and makes the verdict "drifts")."""
    if not 0 < threshold <= 1:
        raise InputError(f"The threshold must be in (0, 1], got {threshold}.", "pass --fail-below 0.99, say.")
    failed = dict(failed or {})
    texts = list(dict.fromkeys(t for g in groups if g.name not in failed for t in g.texts))
    if len(texts) > MAX_TEXTS:
        raise InputError(f"{len(texts)} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    if not texts:
        raise InputError("No text could be embedded by both encoders.", "check both models (see the failed groups).")
    from ..embeddings import normalize_rows

    a, b = (normalize_rows(np.stack([side[t] for t in texts]).astype(np.float64)) for side in (ref, cand))
    check_dimensions(reference, candidate, a.shape[1], b.shape[1])
    cos = np.einsum("ij,ij->i", a, b)
    cosine = dict(zip(texts, cos.tolist()))
    out_groups = {}
    for g in groups:
        if g.name in failed:
            out_groups[g.name] = GroupDrift(g.name, g.probes, len(g.texts), None, None, None, failed=failed[g.name])
            continue
        values = np.array([cosine[t] for t in dict.fromkeys(g.texts)])
        if not len(values):  # every text of it refused by a side (reported as a behaviour): nothing to score
            out_groups[g.name] = GroupDrift(g.name, g.probes, 0, None, None, None)
            continue
        k = int(np.nanargmin(values)) if np.isfinite(values).any() else 0
        out_groups[g.name] = GroupDrift(g.name, g.probes, len(values), float(np.nanmean(values)),
                                        float(np.nanmin(values)),
                                        float(np.mean([drifted_at(threshold)(v) for v in values])),
                                        list(dict.fromkeys(g.texts))[k])
    group_of = {}
    for g in groups:
        for t in g.texts:
            group_of.setdefault(t, g.name)
    order = np.argsort(cos, kind="stable")
    worst = [{"group": group_of[texts[i]], "text": _short(texts[i]), "cosine": float(cos[i])}
             for i in order[:WORST_LISTED]]
    pairs, agreement = pairwise(a, b)
    collisions = [{"text_a": _short(texts[i]), "text_b": _short(texts[j]), "reference_cosine": ra,
                   "candidate_cosine": cb, "groups": sorted({group_of[texts[i]], group_of[texts[j]]})}
                  for i, j, ra, cb in pairs]
    return DriftReport(reference, candidate, threshold, len(texts), float(np.mean(cos)), float(np.min(cos)),
                       out_groups, worst, collisions, agreement, fail_on_collisions=fail_on_collisions,
                       cosines=cosine)


def check_dimensions(reference: str, candidate: str, ref_dim: int | None, cand_dim: int | None) -> None:
    """InputError when the two embed in different dimensions: they are different models (no cosine compares
    them), not a drift to score."""
    if ref_dim is not None and cand_dim is not None and ref_dim != cand_dim:
        raise InputError(f"{candidate} embeds in {cand_dim} dimensions, the reference {reference} in {ref_dim}: "
                         "they are different models.",
                         "compare a deployment with the model it serves (the same dimension).")


def pairwise(a: np.ndarray, b: np.ndarray, k: int = NEIGHBOURS, block: int = PAIR_BLOCK
             ) -> tuple[list[tuple[int, int, float, float]], float]:
    """The collisions (i < j, apart under ``a``, one under ``b``: (i, j, cosine in a, cosine in b)) and the
    neighbourhood agreement (the mean over texts of |N_a(i) ∩ N_b(i)| / k, N(i) the k nearest other texts) of
    two sets of unit rows. The similarities are computed ``block`` rows at a time as general matrix products:
    never an n x n matrix (20,000 texts would be 3.2 GB a side), and never the symmetric product a @ a.T, which
    OpenBLAS's threaded syrk crashes on at 16,000 rows."""
    n = len(a)
    k = min(k, n - 1)
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    pairs, agree = [], 0.0
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        sa, sb = np.dot(a[rows], at), np.dot(b[rows], bt)
        hit = (sa < COLLISION_APART) & (sb >= COLLISION_SAME) & (np.arange(n)[None, :] > rows[:, None])
        pairs += [(int(rows[r]), int(j), float(sa[r, j]), float(sb[r, j])) for r, j in zip(*np.nonzero(hit))]
        if k >= 1:
            sa[np.arange(len(rows)), rows] = -np.inf
            sb[np.arange(len(rows)), rows] = -np.inf
            na = np.argpartition(-sa, k - 1, axis=1)[:, :k]
            nb = np.argpartition(-sb, k - 1, axis=1)[:, :k]
            agree += sum(len(set(x) & set(y)) / k for x, y in zip(na.tolist(), nb.tolist()))
    return pairs, (agree / n if k >= 1 else float("nan"))


def physscore_drift(ref_exam1, cand_exam1, resamples: int) -> dict[str, Any]:
    """Table 1 τ and PACC of both, the cells whose τ changed, and the paired bootstrap Δτ (candidate −
    reference, ×100) with its 95% interval."""
    from .geometry import table1_row
    from .statistics import percentile_interval, resample_exam1

    r, c = table1_row(ref_exam1.cells), table1_row(cand_exam1.cells)
    changed = [f"{x.quantity}/{x.range_name}" for x, y in zip(ref_exam1.cells, cand_exam1.cells) if x.tau != y.tau]
    out = {"reference_tau": r["tau"], "candidate_tau": c["tau"], "reference_pacc": r["pacc"],
           "candidate_pacc": c["pacc"], "delta_tau": c["tau"] - r["tau"], "cells_changed": changed,
           "delta_tau_ci_low": None, "delta_tau_ci_high": None}
    if resamples:
        values = [np.asarray(x.values, dtype=np.float64) for x in ref_exam1.cells]
        rows = [[np.asarray(ex.heatmaps[x.key][0], dtype=np.float64) for x in ex.cells]
                for ex in (ref_exam1, cand_exam1)]
        ta = resample_exam1(rows[0], resamples, values).table1()[0]
        tb = resample_exam1(rows[1], resamples, values).table1()[0]
        out["delta_tau_ci_low"], out["delta_tau_ci_high"] = percentile_interval(tb - ta)
    return out


def compare_tokenizations(texts: list[str], reference: list[list[int]], candidate: list[list[int]],
                          examples: int = 3) -> dict[str, Any]:
    """How two tokenizers' ids of the same ``texts`` compare: how many were compared, how many the candidate
    tokenizes into other ids (``differ``), how many into the same ids cut at another length (``truncated``), and
    the first few differing ones (text, both sides' first ids and their counts)."""
    differ, truncated, shown = 0, 0, []
    for text, a, b in zip(texts, reference, candidate):
        if list(a) == list(b):
            continue
        n = min(len(a), len(b))
        if list(a[:n]) == list(b[:n]):
            truncated += 1
            continue
        differ += 1
        if len(shown) < examples:
            shown.append({"text": _short(text), "reference_ids": list(a[:12]), "candidate_ids": list(b[:12]),
                          "reference_tokens": len(a), "candidate_tokens": len(b)})
    return {"compared": len(texts), "differ": differ, "truncated": truncated, "examples": shown}


def _short(text: str, limit: int = 80) -> str:
    """A text as a report names it: long ones cut, with their length."""
    return text if len(text) <= limit else f"{text[:limit - 20]}… ({len(text)} characters)"
