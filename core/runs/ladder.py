"""The vector ladder (``fasteval sweep --ladder vectors``): one model scored as a vector store keeps it, rung by rung
(the float vectors, the first 512/256/128/64 dimensions, int8, int4, binary, binary-centred, binary-asymmetric,
TurboQuant at 4 and 2 bits, and 256 dimensions in binary), from one embedding run (the rungs share the float
embeddings' cache), into one table: Table 1's τ, PACC and AVG with their bootstrap intervals, the paired Δτ against
the float vectors with its interval, and the bytes a store keeps a vector (``core.vectors``).
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..choices import BYTE_BUDGETS, COMMON_STORE, DEFAULT_RESAMPLES, FORMS, LADDER_DIMENSIONS, QUANTIZATIONS
from ..plan import scoring
from .job import Job, Outcome

log = logging.getLogger(__name__)

LADDERS = ("vectors",)
LADDER_COLUMNS = ["model", "rung", "dimensions", "quantization", "bytes_per_vector", "tau", "tau_ci_low",
                  "tau_ci_high", "pacc", "avg", "delta_tau", "delta_tau_ci_low", "delta_tau_ci_high", "folder"]


@dataclass(frozen=True)
class Rung:
    label: str  # "full", "256", "int8", "int4", "binary", "binary-centred", "turboquant4", ..., "256+binary"
    dimensions: int | None
    quantization: str | None
    bytes_per_vector: int  # what a store keeps of one vector


def vector_rungs(dim: int) -> list[Rung]:
    """The rungs of a model of ``dim`` dimensions, the float vectors first."""
    from ..vectors import VectorForm

    asked: list[tuple[str, int | None, str | None]] = [("full", None, None)]
    asked += [(str(n), n, None) for n in LADDER_DIMENSIONS if n < dim]
    asked += [(q.name, None, q.name) for q in QUANTIZATIONS if q.family != "turbo"]
    # TurboQuant where turbovec is installed and takes the dimension (a multiple of 8); asked once (its hint too)
    turbovec = _has_turbovec()
    asked += [(q.name, None, q.name) for q in QUANTIZATIONS if q.family == "turbo" and dim % 8 == 0 and turbovec]
    n, common = COMMON_STORE
    asked += [(f"{n}+{common}", n, common)] if n < dim else []
    asked += _bytes_matched(dim, {(n or dim, q) for _, n, q in asked}, turbovec)
    return [Rung(label, n, q, VectorForm(n, q).bytes_per_vector(dim)) for label, n, q in asked]


def _bytes_matched(dim: int, have: set[tuple[int, str | None]], turbovec: bool
                   ) -> list[tuple[str, int | None, str | None]]:
    """The rungs that keep exactly each of BYTE_BUDGETS a vector, one a form (the floats' first N dimensions, or N
    dimensions in a quantization: 48 bytes is 12 floats, 48 int8, 96 int4 or TurboQuant at 4 bits, 192 at 2, 384
    bits), where the model has N dimensions (and TurboQuant takes them), and not a rung already."""
    out: list[tuple[str, int | None, str | None]] = []
    for budget in BYTE_BUDGETS:
        for q in (None, *FORMS):
            bits = 32 if q is None else FORMS[q].bits
            n = budget * 8 // bits
            turbo = q is not None and FORMS[q].family == "turbo"
            if n > dim or n < 8 or (n, q) in have or (turbo and (n % 8 or not turbovec)):
                continue
            have.add((n, q))
            out.append((str(n) if q is None else f"{n}+{q}", None if n == dim else n, q))
    return out


def bytes_matched(rows: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The ladder's rows at each of BYTE_BUDGETS bytes a vector, the best Table 1 τ first: at equal bytes, which
    keeps the geometry better, fewer dimensions or fewer bits."""
    return {b: sorted((r for r in rows if r["bytes_per_vector"] == b), key=lambda r: -r["tau"])
            for b in BYTE_BUDGETS if any(r["bytes_per_vector"] == b for r in rows)}


_TURBOVEC_HINTED: list[bool] = []  # the hint below is said once a process, however many models a ladder climbs


def _has_turbovec() -> bool:
    """Whether turbovec (the stores extra) is installed: the TurboQuant rungs are left out where it is not (said
    once)."""
    import importlib.util

    if importlib.util.find_spec("turbovec") is not None:
        return True
    if not _TURBOVEC_HINTED:
        _TURBOVEC_HINTED.append(True)
        log.info("the TurboQuant rungs are left out: turbovec is not installed (pip install 'fasteval[stores]')")
    return False


def model_dimension(model: str, options: dict[str, Any], loader: Callable[..., Any]) -> int:
    """The dimension of ``model``'s embeddings: one text embedded (a local model's session is opened; it is
    cached for the rungs' runs)."""
    from ..embeddings import as_array

    return int(as_array(loader(model, **copy.deepcopy(options)).encode(["1 meter"])).shape[1])


def ladder_base(**asked: Any) -> Any:
    """The scoring every rung builds on (``scoring(**asked)``), validated: Exam 1 is run by every rung (the ladder is
    its table). InputError otherwise."""
    base = scoring(**asked)
    if 1 not in base.exams:
        from ..errors import InputError

        raise InputError("--ladder vectors compares Table 1 (Exam 1) across the rungs, and the exams asked leave it "
                         "out.", "add exam 1 (--exams 1, or leave --exams out).")
    return base


def ladder_jobs(models: Sequence[str], options: dict[str, Any], loader: Callable[..., Any], *, exams: Any = None,
                similarity: str = "cos", protocol: Any = None, normalize_quantities: bool = False,
                bootstrap: int = DEFAULT_RESAMPLES) -> list[Job]:
    """Each model's jobs, one a rung (its dimension asked of it first), each with its own copy of ``options``;
    the scorings validated before anything runs (``ladder_base``)."""
    asked = dict(exams=exams, similarity=similarity, protocol=protocol, normalize_quantities=normalize_quantities,
                 bootstrap=bootstrap)
    ladder_base(**asked)
    jobs = []
    for model in models:
        for rung in vector_rungs(model_dimension(model, options, loader)):
            chosen = scoring(**asked, dimensions=rung.dimensions, vector_quantization=rung.quantization)
            jobs.append(Job(model, copy.deepcopy(options), scoring=chosen, rung=rung))
    return jobs


def ladders(jobs: Sequence[Job], outcomes: Sequence[Outcome], out: Path,
            resamples: int = DEFAULT_RESAMPLES) -> list[tuple[list[dict[str, Any]], Path, list[dict[str, Any]],
                                                              dict[int, list[dict[str, Any]]]]]:
    """The ladders of a ladder sweep's ``jobs`` and their ``outcomes`` (in job order): each model's rows
    (``ladder_rows``), written to ``OUT/ladders/<model_id>.csv`` and ``.json``, the surface-form baselines' Table 1
    rows beside them (in the JSON too), and its bytes-matched view (``bytes_matched``)."""
    from ..protocol import model_id

    by_model: dict[str, list[tuple[Rung, Outcome]]] = {}
    for job, outcome in zip(jobs, outcomes):
        if job.rung is not None:
            by_model.setdefault(job.model, []).append((job.rung, outcome))
    made = []
    for rungs in by_model.values():
        rows = ladder_rows(rungs, resamples)
        if rows:
            baselines = rungs[0][1].baselines()
            made.append((rows, write_ladder(out, model_id(rows[0]["model"]), rows, baselines), baselines,
                         bytes_matched(rows)))
    return made


def ladder_rows(rungs: Sequence[tuple[Rung, Outcome]], resamples: int = DEFAULT_RESAMPLES) -> list[dict[str, Any]]:
    """One model's ladder, a row a rung that finished (``LADDER_COLUMNS``): Δτ is the rung's τ less the float
    vectors', with the paired bootstrap's 95% interval over the same resampled values (``drift``'s PhysScore
    side), x100 as Table 1."""
    from .drift.checks.physscore import physscore_drift

    done = [(rung, o, o.read()) for rung, o in rungs]
    done = [(rung, o, r) for rung, o, r in done if r is not None and "exam1" in r.exams]
    if not done or done[0][0].label != "full":
        return []
    full = done[0][2].exams["exam1"]
    rows = []
    for rung, outcome, result in done:
        exam1 = result.exams["exam1"]
        s = exam1.summary()
        delta = physscore_drift(full, exam1, resamples if rung.label != "full" else 0)
        rows.append({"model": result.model, "rung": rung.label, "dimensions": rung.dimensions,
                     "quantization": rung.quantization or "float32",
                     "bytes_per_vector": rung.bytes_per_vector,
                     "tau": s["tau_display"], "tau_ci_low": s.get("tau_ci_low"), "tau_ci_high": s.get("tau_ci_high"),
                     "pacc": s["pacc_display"], "avg": s["avg_display"],
                     "delta_tau": round(float(delta.delta_tau or 0.0), 4) if rung.label != "full" else 0.0,
                     "delta_tau_ci_low": delta.delta_tau_ci_low,
                     "delta_tau_ci_high": delta.delta_tau_ci_high, "folder": str(outcome.path or "")})
    return rows


def write_ladder(out: Path, model_id: str, rows: list[dict[str, Any]],
                 baselines: Sequence[dict[str, Any]] = ()) -> Path:
    """``OUT/ladders/<model_id>.csv`` (the rungs) and ``.json`` (the rungs and the surface-form baselines), written
    atomically; returns the CSV's path."""
    from ..io import atomic_write, csv_text, dumps

    folder = Path(out) / "ladders"
    folder.mkdir(parents=True, exist_ok=True)
    matched = {str(b): [r["rung"] for r in same] for b, same in bytes_matched(rows).items()}
    atomic_write(folder / f"{model_id}.json", dumps({"ladder": "vectors", "rows": rows, "bytes_matched": matched,
                                                     "surface_baselines": list(baselines)}))
    atomic_write(folder / f"{model_id}.csv", csv_text(rows, LADDER_COLUMNS))
    return folder / f"{model_id}.csv"
