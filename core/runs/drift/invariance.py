"""Batch and concurrency invariance: does the candidate embed a text the same whatever it is sent with?

A deployment can answer one text differently in another batch (padding in fp16 kernels, per-batch activation
quantization, a router that batches concurrent requests: TEI #882, cosine 1.0000 -> 0.16). A few probe texts are
embedded alone (the baseline), then side by side in batches of several sizes (filled up with other texts),
first and last in a batch, beside long
neighbours, and with several requests in flight at once; each condition's worst cosine to the baseline is
reported, and one below ``INVARIANCE_MIN`` drifts.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...embeddings import as_array, normalize_rows
from ...errors import FastevalError, InputRefusedError, first_line

log = logging.getLogger(__name__)

PROBES = 6
BATCH_SIZES = (2, 8, 32)
IN_FLIGHT = 4


def _unit(encoder, texts: list[str]) -> np.ndarray:
    return normalize_rows(as_array(encoder.encode(list(texts))).astype(np.float64))


def invariance(encoder, texts: list[str], long_texts: list[str]) -> list[dict]:
    """One row per condition: ``condition``, ``worst`` (the lowest cosine of a probe to its embedding alone),
    ``text`` (that probe), or ``skipped`` (why it could not be run). ``texts``: the pool the probes and their
    batch neighbours come from (at least 2 x the largest batch is best); ``long_texts``: neighbours of a few
    thousand characters (left out when the deployment refuses them)."""
    pool = list(dict.fromkeys(texts))
    if len(pool) < 2:
        return []
    step = max(1, len(pool) // PROBES)
    probes = pool[::step][:PROBES]
    fillers = [t for t in pool if t not in probes]
    alone = np.stack([_unit(encoder, [p])[0] for p in probes])

    def worst(condition: str, pairs: list[tuple[int, np.ndarray]]) -> dict:
        cos = [float(alone[i] @ v) for i, v in pairs]
        k = int(np.argmin(cos))
        return {"condition": condition, "worst": cos[k], "text": probes[pairs[k][0]]}

    rows = []
    for size in BATCH_SIZES:  # the probes side by side, each batch filled up to its size with other texts
        pairs = []
        for start in range(0, len(probes), size):
            group = probes[start:start + size]
            out = _unit(encoder, group + fillers[:size - len(group)])
            pairs += [(start + k, out[k]) for k in range(len(group))]
        rows.append(worst(f"in a batch of {size}", pairs))
    batch = probes + fillers[:16]
    rows.append(worst("first in a batch", [(0, _unit(encoder, batch)[0])]))
    last = fillers[:15] + [probes[-1]]
    rows.append(worst("last in a batch", [(len(probes) - 1, _unit(encoder, last)[-1])]))
    if long_texts:
        try:
            out = _unit(encoder, [probes[0], *long_texts[:3]])
            rows.append(worst("beside long neighbours", [(0, out[0])]))
        except InputRefusedError as err:
            rows.append({"condition": "beside long neighbours", "skipped": f"refused: {first_line(err, 120)}"})
    try:
        with ThreadPoolExecutor(IN_FLIGHT) as pool_:
            outs = list(pool_.map(lambda _k: _unit(encoder, probes), range(IN_FLIGHT)))
        rows.append(worst(f"{IN_FLIGHT} requests in flight", [(i, o[i]) for o in outs for i in range(len(probes))]))
    except FastevalError as err:
        rows.append({"condition": f"{IN_FLIGHT} requests in flight", "skipped": first_line(err, 120)})
    return rows
