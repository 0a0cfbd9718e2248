"""Table 1 of the surface-form baselines (``models.baselines``): what string similarity alone scores on a protocol's
Exam 1, shown beside every model (the sweep's Table 1 row, the report's Table 1, the vector ladder). Computed here
on demand (about a second, numpy only) and kept in FASTEVAL_HOME/baselines (a file per protocol, similarity,
fasteval's and the baselines' versions; one that does not read back is computed again); never written into a
model's result."""
from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=8)
def _rows(protocol_key: str, similarity: str) -> tuple[tuple[str, float, float, float], ...]:
    from ...models.baselines import ByteCounts, CharTrigrams
    from ..plan import run, plan, scoring

    chosen = scoring(exams=(1,), similarity=similarity, protocol=_protocol(protocol_key), bootstrap=0)
    corpus = [t for group in chosen.groups() for t in group]
    rows = []
    for encoder in (ByteCounts(), CharTrigrams(corpus)):
        s = run(plan(encoder, chosen)).exams["exam1"].summary()
        rows.append((encoder.name, s["tau_display"], s["pacc_display"], s["avg_display"]))
    return tuple(rows)


def _protocol(key: str) -> Any:
    """The built-in protocol whose key (``name-version``) or name is ``key``; None (the paper's) for the paper's."""
    from ..protocol.loading import builtin_names, load_protocol

    for name in builtin_names():
        p = load_protocol(name)
        if key in (p.key, p.name):
            return p
    raise KeyError(key)


def _kept(protocol_key: str, similarity: str) -> tuple[tuple[str, float, float, float], ...]:
    """``_rows``, kept on disk where FASTEVAL_HOME can be written."""
    import json

    from ... import __version__
    from ...models.baselines import VERSION
    from ..io import atomic_write, fasteval_home, read_json

    path = fasteval_home() / "baselines" / f"{protocol_key}-{similarity}-{__version__}-{VERSION}.json"
    try:
        kept = read_json(path)  # bounded, strict
        if not isinstance(kept, list):
            raise ValueError("not a list of rows")
        return tuple((str(r[0]), float(r[1]), float(r[2]), float(r[3])) for r in kept)
    except (OSError, ValueError, TypeError, IndexError):
        pass
    rows = _rows(protocol_key, similarity)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps([list(r) for r in rows]))
    except OSError:
        pass  # a read-only home: computed again next time
    return rows


def surface_baselines(protocol: str = "paper", similarity: str = "cos") -> list[dict[str, Any]]:
    """Each surface-form baseline's Table 1 row on Exam 1 of a built-in ``protocol`` (its name or key): model, τ,
    PACC and AVG (x100, as Table 1 prints them). KeyError for a protocol that is not built in (a file's
    baselines are its own to run: ``fasteval.evaluate(fasteval.ByteCounts(), protocol=FILE)``)."""
    return [{"model": name, "tau": tau, "pacc": pacc, "avg": avg}
            for name, tau, pacc, avg in _kept(_protocol(protocol).key, similarity)]
