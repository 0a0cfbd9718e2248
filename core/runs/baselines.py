"""The surface-form baselines' Table 1 (``fasteval.models.baselines``) computed on every built-in protocol and
similarity: what ``fasteval.core.protocol.baselines`` ships and reads (``builtin/surface_baselines.json``). A test
holds the shipped file equal to ``computed()``; ``python -m fasteval.core.runs.baselines`` writes it again (about
three seconds, numpy only)."""
from __future__ import annotations

from typing import Any


def rows(protocol: Any, similarity: str) -> list[dict[str, Any]]:
    """Each surface-form baseline's Table 1 row (model, τ, PACC, AVG, x100) on Exam 1 of ``protocol``."""
    from ...models.baselines import ByteCounts, CharTrigrams
    from ..plan import plan, run, scoring

    chosen = scoring(exams=(1,), similarity=similarity, protocol=protocol, bootstrap=0)
    corpus = [t for group in chosen.groups() for t in group]
    out = []
    for encoder in (ByteCounts(), CharTrigrams(corpus)):
        s = run(plan(encoder, chosen)).exams["exam1"].summary()
        out.append({"model": encoder.name, "tau": s["tau_display"], "pacc": s["pacc_display"],
                    "avg": s["avg_display"]})
    return out


def computed() -> dict[str, Any]:
    """Every built-in protocol's surface-form baselines under each similarity, as the shipped file holds them."""
    from ...models.baselines import VERSION
    from ..choices import SIMILARITIES
    from ..protocol.loading import builtin_names, builtin_protocol

    protocols = [builtin_protocol(name) for name in builtin_names()]
    return {"baselines_version": VERSION,
            "protocols": {p.key: {s: rows(p, s) for s in SIMILARITIES} for p in protocols}}


def write(path=None) -> None:
    """Write ``computed()`` to the shipped file (or ``path``)."""
    from ..io import atomic_write, dumps
    from ..protocol.baselines import SURFACE_FILE

    atomic_write(path or SURFACE_FILE, dumps(computed()))


if __name__ == "__main__":
    write()
