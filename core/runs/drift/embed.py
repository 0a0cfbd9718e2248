"""Embedding one side of a drift: the protocol's encode calls (the paper's grouping, so the PhysScore side is each
encoder's Table 1), then each other group; a group's failure recorded, its texts refused as too long isolated (a
behaviour of that side, not a failure); the reference's embeddings read from and saved to the embedding cache where
its identity is known, the candidate's always embedded afresh (a gate scores the deployment as it is now). The
candidate is checked for the reference's dimension after one text, before its other texts are sent."""
from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from ...embeddings import EmbeddingTable, as_array, embed_groups
from ...errors import FastevalError, InputRefusedError, first_line
from ...plan import Plan
from ...protocol.conformance import TextGroup
from .plan import PROTOCOL_GROUP
from .score import check_dimensions

log = logging.getLogger(__name__)

MAX_REFUSED = 50  # texts of one group a side may refuse (each costs a request) before the group fails


def embed_side(planned: Plan, side: str, calls: list[list[str]], groups: list[TextGroup], failed: dict,
               refused: dict, cache_root: Path | bool | None, fresh: bool,
               like: tuple[str, str, int | None] | None = None) -> tuple[EmbeddingTable, Plan]:
    """One side's embeddings and its plan as it ran (settled: a GPU that fell back to the CPU says cpu): ``calls``
    (the protocol's), then each of ``groups``, a group's failure recorded in
    ``failed`` (group -> why) and its refused long inputs in ``refused`` (text -> [(side, group, error)]).
    ``fresh``: never read from the cache (the candidate, a receipt); ``like``: (the reference's name, this side's,
    the reference's dimension) this side must embed in."""
    planned = planned.settle()  # its session opened where a GPU may fall back: the cache keyed by what runs
    table, save = _cached_table(planned, cache_root, fresh)
    before = len(table)
    if like is not None and calls and calls[0]:  # another dimension is another model: said after one text
        probe = None
        with suppress(FastevalError):  # (a side that cannot embed fails below, in its group, as it would)
            probe = as_array(planned.encoder.encode([calls[0][0]]))  # alone, outside the table: the paper's
        if probe is not None and probe.ndim == 2:                    # calls stay as they are
            check_dimensions(like[0], like[1], like[2], probe.shape[1])
    try:
        embed_groups(planned.encoder, calls, table, name=planned.name, concurrency=planned.view.concurrency)
    except FastevalError as err:
        failed[PROTOCOL_GROUP] = f"{side}: {first_line(err, 200)}"
    if like is not None:  # another dimension is another model: refused before its other texts are sent
        check_dimensions(like[0], like[1], like[2], table.dim)
    for g in groups:
        try:
            for refusal in _embed_isolating_refusals(planned.encoder, g.texts, table):
                refused.setdefault(refusal.text, []).append((side, g.name, refusal))
        except FastevalError as err:
            failed.setdefault(g.name, f"{side}: {first_line(err, 200)}")
            log.warning("%s could not embed the %s group: %s", planned.name, g.name, first_line(err, 200))
    if len(table) > before:
        save(table)
    return table, planned.settled()


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


def _cached_table(planned: Plan, cache_root: Path | bool | None,
                  fresh: bool) -> tuple[EmbeddingTable, Callable[[EmbeddingTable], None]]:
    """The encoder's cached embeddings (empty when its identity is unknown, or ``fresh``) once verified against it,
    and how to save them back, under ``planned``'s key (settled: the key of what runs)."""
    from ...cache import embedding_cache, embedding_cache_root, verified

    cache = embedding_cache(planned.settings, embedding_cache_root(cache_root))
    table = EmbeddingTable() if fresh else verified(cache, planned)[0]
    return table, (lambda t: cache.save(planned.embedding_key, t))
