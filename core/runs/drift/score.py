"""Scoring drift: two encoders' embeddings of the same texts -> the drift report (``DriftReport``,
``core/results/drift.py``): per text the cosine, per group the mean, worst and share below the threshold, the
neighbourhood agreement and the collisions (one pass over the similarities finds both: the ``Collisions`` finding
is made here). The other findings are the checks' (``checks/``)."""
from __future__ import annotations


import numpy as np

from ...errors import InputError
from ...protocol.conformance import TextGroup
from ...results.drift import DriftReport, GroupDrift, WorstText, drifted
from ...results.drift_findings import Collision, Collisions

COLLISION_APART, COLLISION_SAME = 0.99, 0.999
NEIGHBOURS = 10
WORST_LISTED = 10
MAX_TEXTS = 20_000  # the collision and neighbour search is O(n^2) in time
PAIR_BLOCK = 1024  # rows of the similarity matrices computed at once (1024 x 20,000 float64: 164 MB a side)
# Collisions listed (the first, in text order; every one counted): a candidate that collapses every text onto one
# vector has n(n-1)/2 of them (200 million for 20,000 texts), which no report can hold.
COLLISIONS_LISTED = 1000


def score_drift(reference: str, candidate: str, groups: list[TextGroup], ref: dict[str, np.ndarray],
                cand: dict[str, np.ndarray], *, threshold: float, failed: dict[str, str] | None = None,
                fail_on_collisions: bool = False) -> DriftReport:
    """The drift report of two encoders' embeddings (``ref``/``cand``: text -> vector) of ``groups``' texts.
    ``failed``: group name -> why it could not be embedded (it is reported, and makes the verdict "drifts");
    ``threshold`` as ``gate.check_limits`` allows it."""
    failed = dict(failed or {})
    texts = list(dict.fromkeys(t for g in groups if g.name not in failed for t in g.texts))
    if len(texts) > MAX_TEXTS:
        raise InputError(f"{len(texts)} texts are more than drift compares ({MAX_TEXTS}).", "pass fewer texts.")
    if not texts:
        why = f" (the {next(iter(failed.values()))[:240]})" if failed else ""
        raise InputError(f"No text could be embedded by both encoders{why}.",
                         "check both models (see the failed groups).")
    from ...embeddings import normalize_rows

    a, b = (normalize_rows(np.stack([side[t] for t in texts]).astype(np.float64)) for side in (ref, cand))
    check_dimensions(reference, candidate, a.shape[1], b.shape[1])
    cos = np.einsum("ij,ij->i", a, b)
    # a text both sides embed as the zero vector (a static model's empty text: no token to average) is embedded
    # alike: the same vector, whatever its direction
    cos[~a.any(axis=1) & ~b.any(axis=1)] = 1.0
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
                                        float(np.mean([drifted(v, threshold) for v in values])),
                                        list(dict.fromkeys(g.texts))[k])
    group_of: dict[str, str] = {}
    for g in groups:
        for t in g.texts:
            group_of.setdefault(t, g.name)
    order = np.argsort(cos, kind="stable")
    worst = [WorstText(group_of[texts[i]], short(texts[i]), float(cos[i])) for i in order[:WORST_LISTED]]
    pairs, agreement, count = pairwise(a, b)
    collisions = [Collision(short(texts[i]), short(texts[j]), ra, cb, sorted({group_of[texts[i]], group_of[texts[j]]}))
                  for i, j, ra, cb in pairs]
    return DriftReport(reference, candidate, threshold, len(texts), float(np.mean(cos)), float(np.min(cos)),
                       out_groups, worst, agreement, findings=[Collisions(collisions, count, fail_on_collisions)],
                       cosines=cosine)


def check_dimensions(reference: str, candidate: str, ref_dim: int | None, cand_dim: int | None) -> None:
    """InputError when the two embed in different dimensions: they are different models (no cosine compares
    them), not a drift to score."""
    if ref_dim is not None and cand_dim is not None and ref_dim != cand_dim:
        raise InputError(f"{candidate} embeds in {cand_dim} dimensions, the reference {reference} in {ref_dim}: "
                         "they are different models.",
                         "compare a deployment with the model it serves (the same dimension).")


def pairwise(a: np.ndarray, b: np.ndarray, k: int = NEIGHBOURS, block: int = PAIR_BLOCK,
             listed: int = COLLISIONS_LISTED) -> tuple[list[tuple[int, int, float, float]], float, int]:
    """The collisions (i < j, apart under ``a``, one under ``b``: (i, j, cosine in a, cosine in b); the first
    ``listed`` in text order), the neighbourhood agreement (the mean over texts of |N_a(i) ∩ N_b(i)| / k, N(i)
    the k nearest other texts) and how many collisions there are, of two sets of unit rows. The similarities are
    computed ``block`` rows at a time as general matrix products: never an n x n matrix (20,000 texts would be
    3.2 GB a side), and never the symmetric product a @ a.T, which OpenBLAS's threaded syrk crashes on at 16,000
    rows."""
    n = len(a)
    k = min(k, n - 1)
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    pairs: list[tuple[int, int, float, float]] = []
    agree, count = 0.0, 0
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        sa, sb = np.dot(a[rows], at), np.dot(b[rows], bt)
        hit = (sa < COLLISION_APART) & (sb >= COLLISION_SAME) & (np.arange(n)[None, :] > rows[:, None])
        count += int(np.count_nonzero(hit))
        if len(pairs) < listed:
            r_idx, j_idx = np.nonzero(hit)
            room = listed - len(pairs)
            pairs += [(int(rows[r]), int(j), float(sa[r, j]), float(sb[r, j]))
                      for r, j in zip(r_idx[:room].tolist(), j_idx[:room].tolist())]
        if k >= 1:
            sa[np.arange(len(rows)), rows] = -np.inf
            sb[np.arange(len(rows)), rows] = -np.inf
            na = np.argpartition(-sa, k - 1, axis=1)[:, :k]
            nb = np.argpartition(-sb, k - 1, axis=1)[:, :k]
            agree += sum(len(set(x) & set(y)) / k for x, y in zip(na.tolist(), nb.tolist()))
    return pairs, (agree / n if k >= 1 else float("nan")), count


def short(text: str, limit: int = 80) -> str:
    """A text as a report names it: long ones cut at a word's end, with their length."""
    from ...errors import cut

    return text if len(text) <= limit else f"{cut(text, limit - 20)} ({len(text)} characters)"
