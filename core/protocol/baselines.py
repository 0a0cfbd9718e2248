"""Table 1 of the surface-form baselines (``fasteval.models.baselines``: a text's byte counts, character 3-gram
TF-IDF): what string similarity alone scores on a built-in protocol's Exam 1, shown beside every model (the sweep's
Table 1 row, the report's Table 1, the vector ladder). Data shipped beside the protocols (``builtin/
surface_baselines.json``, a row per baseline for each built-in protocol's key and each similarity), read here and
never computed: a report runs no exam. ``fasteval.core.runs.baselines`` computes them, and a test holds the file
equal to what it computes (``python -m fasteval.core.runs.baselines`` writes it again when a protocol or a baseline
changes)."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

SURFACE_FILE = Path(__file__).parent / "builtin" / "surface_baselines.json"


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    return json.loads(SURFACE_FILE.read_text(encoding="utf-8"))


def surface_baselines(protocol: str = "paper", similarity: str = "cos") -> list[dict[str, Any]]:
    """Each surface-form baseline's Table 1 row on Exam 1 of a built-in ``protocol`` (its name or key): model, τ,
    PACC and AVG (x100, as Table 1 prints them). KeyError for a protocol that is not built in (a file's
    baselines are its own to run: ``fasteval.evaluate(fasteval.ByteCounts(), protocol=FILE)``) or a similarity the
    file does not hold."""
    from .loading import builtin_names, builtin_protocol

    shipped = _shipped()["protocols"]
    # a key is looked up as it is (a finished rerun parses no other protocol); a name is a built-in's (a file named
    # "paper" in the working folder is not the paper's protocol here), and its key the one shipped
    key = protocol if protocol in shipped else (builtin_protocol(protocol).key if protocol in builtin_names()
                                                 else None)
    if key is None or key not in shipped:
        raise KeyError(protocol)
    return [dict(row) for row in shipped[key][similarity]]


def baselines_of(result: Any) -> list[dict[str, Any]]:
    """The surface-form baselines' rows beside a result (a ``ModelResult``): on its protocol, under its similarity
    (cos for binary vectors, whose Hamming similarity the baselines do not have); none without Exam 1 or for a
    protocol file."""
    from ..choices import SIMILARITIES

    if "exam1" not in result.exams:
        return []
    similarity = result.settings.get("similarity", "cos")
    try:
        return surface_baselines(result.protocol, similarity if similarity in SIMILARITIES else "cos")
    except KeyError:
        return []
