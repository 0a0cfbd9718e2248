"""Batch and concurrency invariance: does the candidate embed a text the same whatever it is sent with?

A deployment can answer one text differently in another batch (padding in fp16 kernels, per-batch activation
quantization, a router that batches concurrent requests: TEI #882, cosine 1.0000 -> 0.16). A few probe texts are
embedded alone (the baseline), then side by side in batches of several sizes (filled up with other texts),
first and last in a batch, beside long
neighbours, with several requests in flight at once, in a shuffled order, and alone again after all that traffic
(llama.cpp #26282: vectors that move with the server's state); each condition's worst cosine to the baseline is
reported, and one below ``INVARIANCE_MIN`` drifts. Each condition also reports the largest absolute difference of
any number of a probe's vector from its baseline (``max_abs``), for the bitwise tier (``--invariance bitwise``: a
deployment that promises bit-exact answers, as vLLM's batch-invariant mode does, drifts at any difference).
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from ....embeddings import as_array, normalize_rows
from ....errors import FastevalError, InputRefusedError, first_line
from ....results.drift_findings import Condition, Invariance

if TYPE_CHECKING:
    from . import DriftRun

log = logging.getLogger(__name__)

STAGE = "scored"
STEP = ("invariance", "batch and concurrency invariance")
PROBES = 6
BATCH_SIZES = (2, 8, 32)
IN_FLIGHT = 4


SHUFFLE_SEED = 26282


def applies(run: DriftRun) -> bool:
    return run.options.invariance and not run.protocol_failed


def check(run: DriftRun) -> Invariance:
    """The candidate's invariance on the protocol's texts, beside the length group's long ones it did not refuse."""
    long_texts = next((g.texts for g in run.groups if g.name == "length"), [])
    return Invariance(invariance(run.candidate, run.groups[0].texts, [t for t in long_texts if t not in run.refused]),
                      run.options.invariance_tier)


def _raw(encoder, texts: list[str]) -> np.ndarray:
    return as_array(encoder.encode(list(texts))).astype(np.float64)


def invariance(encoder, texts: list[str], long_texts: list[str]) -> list[Condition]:
    """One row per condition: ``condition``, ``worst`` (the lowest cosine of a probe to its embedding alone),
    ``text`` (that probe), ``max_abs`` (the largest absolute difference of a number of a probe's vector from its
    embedding alone; 0.0: bit-exact), or ``skipped`` (why it could not be run). ``texts``: the pool the probes and their
    batch neighbours come from (at least 2 x the largest batch is best); ``long_texts``: neighbours of a few
    thousand characters (left out when the deployment refuses them)."""
    pool = list(dict.fromkeys(texts))
    if len(pool) < 2:
        return []
    step = max(1, len(pool) // PROBES)
    probes = pool[::step][:PROBES]
    fillers = [t for t in pool if t not in probes]
    raw_alone = np.stack([_raw(encoder, [p])[0] for p in probes])

    def worst(condition: str, pairs: list[tuple[int, np.ndarray]], baseline: np.ndarray = raw_alone) -> Condition:
        """Each probe's vector under ``condition`` against its ``baseline`` (default: embedded alone)."""
        unit = normalize_rows(baseline)
        cos = [float(unit[i] @ normalize_rows(v[None, :])[0]) for i, v in pairs]
        k = int(np.argmin(cos))
        max_abs = max(float(np.max(np.abs(v - baseline[i]))) for i, v in pairs)
        return Condition(condition, cos[k], probes[pairs[k][0]], max_abs)

    rows: list[Condition] = []
    for size in BATCH_SIZES:  # the probes side by side, each batch filled up to its size with other texts
        pairs = []
        for start in range(0, len(probes), size):
            group = probes[start:start + size]
            out = _raw(encoder, group + fillers[:size - len(group)])
            pairs += [(start + k, out[k]) for k in range(len(group))]
        rows.append(worst(f"in a batch of {size}", pairs))
    batch = probes + fillers[:16]
    ordered = _raw(encoder, batch)  # also the baseline of the shuffled order below
    rows.append(worst("first in a batch", [(0, ordered[0])]))
    last = fillers[:15] + [probes[-1]]
    rows.append(worst("last in a batch", [(len(probes) - 1, _raw(encoder, last)[-1])]))
    if long_texts:
        try:
            out = _raw(encoder, [probes[0], *long_texts[:3]])
            rows.append(worst("beside long neighbours", [(0, out[0])]))
        except InputRefusedError as err:
            rows.append(Condition("beside long neighbours", skipped=f"refused: {first_line(err, 120)}"))
    try:
        with ThreadPoolExecutor(IN_FLIGHT) as pool_:
            outs = list(pool_.map(lambda _k: _raw(encoder, probes), range(IN_FLIGHT)))
        rows.append(worst(f"{IN_FLIGHT} requests in flight", [(i, o[i]) for o in outs for i in range(len(probes))]))
    except FastevalError as err:
        rows.append(Condition(f"{IN_FLIGHT} requests in flight", skipped=first_line(err, 120)))
    # the same batch in another order: each probe against itself in the first order
    order = np.random.default_rng(SHUFFLE_SEED).permutation(len(batch))
    at = {int(k): row for k, row in zip(order, _raw(encoder, [batch[k] for k in order]))}
    rows.append(worst("in a shuffled order", [(i, at[i]) for i in range(len(probes))], ordered[:len(probes)]))
    again = np.stack([_raw(encoder, [p])[0] for p in probes])  # after every condition above
    rows.append(worst("alone again after traffic", list(enumerate(again))))
    return rows
