"""Behaviours: what a side does that is not drift. Inputs one side refuses as too long where the other embeds them
are left out of the cosines (the rest of the group is scored) and reported here, one per side and group: how many,
the shortest, what the server said, and the longest input each side takes or truncates to, where it says."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....results.drift_findings import SIDES, Behaviours, Identity

if TYPE_CHECKING:
    from . import DriftRun

STAGE = "scored"
STEP = ("behaviours", "what a side refused")


def applies(run: DriftRun) -> bool:
    return bool(run.refused)


def check(run: DriftRun) -> Behaviours:
    identity = run.scored.get(Identity).sides
    out: dict[tuple[str, str], dict] = {}
    for text, hits in run.refused.items():
        for side, group, err in hits:
            other = SIDES[side == "reference"]
            entry = out.setdefault((side, group), {
                "side": side, "model": run.names[side == "candidate"], "group": group,
                "behaviour": "refuses long inputs", "texts": 0, "shortest_chars": None, "message": err.message[:200],
                "max_tokens": identity.get(side, {}).get("max_tokens"),
                "other_truncates_at": identity.get(other, {}).get("max_tokens")})
            entry["texts"] += 1
            entry["shortest_chars"] = min(len(text), entry["shortest_chars"] or len(text))
    return Behaviours(list(out.values()))
