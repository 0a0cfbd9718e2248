"""Behaviours: what a side does that is not drift. Inputs one side refuses as too long where the other embeds them
are left out of the cosines (the rest of the group is scored) and reported here, one per side and group: how many,
the shortest, what the server said, and the longest input each side takes or truncates to, where it says."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....results.drift_findings import SIDES, Behaviour, Behaviours, Identity

if TYPE_CHECKING:
    from . import DriftRun

STAGE = "scored"
STEP = ("behaviours", "what a side refused")


def applies(run: DriftRun) -> bool:
    return bool(run.refused)


def check(run: DriftRun) -> Behaviours:
    identity = run.scored.get(Identity)
    out: dict[tuple[str, str], Behaviour] = {}
    for text, hits in run.refused.items():
        for side, group, err in hits:
            other = SIDES[side == "reference"]
            entry = out.setdefault((side, group), Behaviour(
                side, run.names[side == "candidate"], group, "refuses long inputs", 0, None, err.message[:200],
                identity.side(side).max_tokens, identity.side(other).max_tokens))
            entry.texts += 1
            entry.shortest_chars = min(len(text), entry.shortest_chars or len(text))
    return Behaviours(list(out.values()))
