"""The report's tables across exams and results: every exam with and without --normalize-quantities, a protocol's
variants, the result files a report was made of, and the drift reports found beside them."""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from ..errors import first_line
from ..exams.geometry import table1_row
from ..protocol import display_name
from ..results.model import ModelResult
from ..vectors import vector_words
from .entries import LoadedResult, is_normalized, protocol_name
from .table import Table, nan_to_none

log = logging.getLogger(__name__)


def protocol_variants_table(entries: list[LoadedResult]) -> Table | None:
    """Per result of a protocol with variants (languages, templates, formats) and per variant: τ, PACC, AVG
    and the alignment with the reference variant (recall@1, mean similarity), ×100."""
    rows = []
    for e in entries:
        exam1 = e.result.exams.get("exam1")
        by_variant = exam1.summary().get("by_variant") if exam1 is not None else None
        for label, r in (by_variant or {}).items():
            rows.append({"model": e.label, "protocol": protocol_name(e.result), "variant": label,
                         "tau": r["tau"], "pacc": r["pacc"], "avg": r["avg"],
                         "recall": r.get("alignment_recall_at_1"), "mean_sim": r.get("alignment_mean_sim"),
                         "display": {k: r[f"{k}_display"] for k in ("tau", "pacc", "avg")}})
    if not rows:
        return None
    return Table("protocol_variants", "Protocols: each variant's Exam 1 (×100) and its alignment with the reference",
                 ["model", "protocol", "variant", "tau", "pacc", "avg", "recall", "mean_sim"],
                 ["Model", "Protocol", "Variant", "τ", "PACC", "AVG", "Aligned recall@1", "Aligned mean sim"], rows,
                 note="Aligned: each text against the reference variant's texts of the same cell (English; bare "
                      "strings; plain digits): is its own value's reference the most similar? — marks the "
                      "reference itself.")


# (column, header, the number of a result it shows; None when the result lacks that exam)
_NORMALIZATION_COLUMNS = (
    ("tau", "Table 1 τ", lambda r: table1_row(r.exams["exam1"].cells)["tau_display"] if "exam1" in r.exams else None),
    ("avg", "Table 1 AVG",
     lambda r: table1_row(r.exams["exam1"].cells)["avg_display"] if "exam1" in r.exams else None),
    ("num_dist", "Exam 2 numeric τ",
     lambda r: r.exams["exam2"].pivot()["num_dist"].get("all", math.nan) if "exam2" in r.exams else None),
    ("probe", "Exam 3 probe τ",
     lambda r: r.exams["exam3"].summary()["kendall_mean"] * 100 if "exam3" in r.exams else None),
    ("recall", "Conversion recall@1",
     lambda r: r.exams["conversion"].summary()["recall_at_1"] * 100 if "conversion" in r.exams else None),
    ("trap", "Conversion trap rate",
     lambda r: r.exams["conversion"].summary()["lexical_trap_rate"] * 100 if "conversion" in r.exams else None),
)


def normalization_table(entries: list[LoadedResult]) -> Table | None:
    """Every exam's headline number without and with --normalize-quantities, side by side, for each model
    (and similarity) that has both runs (×100)."""
    groups: dict[tuple[str, str], dict[bool, ModelResult]] = {}
    for e in entries:  # the runs of one model that differ only by the normalisation
        rest = ", ".join(w for w in e.run.split(", ") if w and w != "normalized")
        key = (display_name(e.result.model or e.result.model_id), rest)
        groups.setdefault(key, {})[is_normalized(e.result)] = e.result
    rows = []
    for (name, rest), pair in sorted(groups.items()):
        if len(pair) < 2:
            continue
        row: dict[str, Any] = {"model": name + (f" [{rest}]" if rest else "")}
        for column, _, value in _NORMALIZATION_COLUMNS:
            for tag, normalized in (("plain", False), ("norm", True)):
                row[f"{column}_{tag}"] = nan_to_none(value(pair[normalized]))
        rows.append(row)
    if not rows:
        return None
    columns = [f"{c}_{t}" for c, _, _ in _NORMALIZATION_COLUMNS for t in ("plain", "norm")]
    return Table("normalization", "Without and with --normalize-quantities (×100)", ["model", *columns],
                 ["Model"] + [f"{h} {t}" for _, h, _ in _NORMALIZATION_COLUMNS for t in ("plain", "normalized")],
                 rows, groups=[(h, 2) for _, h, _ in _NORMALIZATION_COLUMNS],
                 sub_headers=["Model"] + ["plain", "normalized"] * len(_NORMALIZATION_COLUMNS),
                 note="normalized: every quantity given to the model in canonical form (one unit per dimension, "
                      "plain digits); the exams score the same values.")


def machine_words(machine: dict) -> str:
    """A result's machine in a few words: "NVIDIA H200, driver 580.159, CUDA 13.0, TF32 off" on the GPU, the CPU
    and its widest SIMD flag otherwise ("" for a result made before results recorded it)."""
    if not machine:
        return ""
    if machine.get("provider") == "cuda":
        return ", ".join(x for x in (machine.get("gpu") or "GPU", f"driver {machine.get('driver')}",
                                     f"CUDA {machine.get('cuda')}", f"TF32 {machine.get('tf32')}") if x)
    simd = machine.get("simd") or []
    return f"{machine.get('cpu', '?')}" + (f" ({simd[-1]})" if simd else "")


def sources_table(entries: list[LoadedResult], root: Path) -> Table:
    """Where each row came from and what it was computed under."""
    # "quantities normalized": --normalize-quantities (a header "Normalized" read as "vectors not L2-normalised");
    # "vectors": what a store keeps of them (--dimensions, --vector-quantization; blank: the float vectors)
    columns = ["label", "model", "similarity", "quantities_normalized", "vectors", "provider", "dtype", "protocol",
               "fasteval", "exams", "machine", "path"]
    headers = ["Label", "Model", "Similarity", "Quantities normalized (--normalize-quantities)", "Vectors kept",
               "Provider", "Dtype", "Protocol", "Fasteval", "Exams", "Machine", "Path"]
    rows = [{"label": e.label, "model": e.result.model, "similarity": str(e.result.settings.get("similarity", "")),
             "quantities_normalized": "yes" if is_normalized(e.result) else "no",
             "vectors": vector_words(e.result.settings) or "float",
             "provider": str(e.result.settings.get("provider", "")), "dtype": str(e.result.settings.get("dtype", "")),
             "protocol": e.result.protocol, "fasteval": e.result.fasteval_version,
             "exams": ",".join(k.replace("exam", "") for k in sorted(e.result.exams)),
             "machine": machine_words(e.result.machine), "path": e.path.relative_to(root).as_posix()}
            for e in entries]
    return Table("sources", "Result files", columns, headers, rows)


def drift_table(root: Path) -> Table | None:
    """Every `fasteval drift --out` report under ``root``: per group of texts, the mean and worst cosine between the
    two encoders and the share below the threshold, with each report's verdict, collisions and Δτ."""
    from ..io import read_json
    from ..results.drift import DriftReport
    from ..results.drift_findings import Collisions, PhysScore
    from ..results.read import find_result_files

    rows = []
    for path in find_result_files(Path(root), "drift.json"):  # as bounded as the results' walk (not all of /tmp)
        try:
            data = read_json(path)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            report = DriftReport.from_json(data)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            log.warning("skipped %s: unreadable drift report (%s)", path, first_line(err))
            continue
        rows.append({"pair": f"{report.candidate} vs {report.reference}", "group": "all", "verdict": report.verdict,
                     "mean": report.mean_cosine, "worst": report.worst_cosine, "share_below": None,
                     "collisions": report.get(Collisions).collided,
                     "delta_tau": report.get(PhysScore).delta_tau})
        rows += [{"pair": "", "group": name, "verdict": "failed" if g.failed else "", "mean": g.mean,
                  "worst": g.worst, "share_below": g.share_below, "collisions": None, "delta_tau": None}
                 for name, g in report.groups.items()]
    if not rows:
        return None
    return Table("drift", "Drift: does the candidate embed like the reference? (cosine per group of texts)",
                 ["pair", "group", "verdict", "mean", "worst", "share_below", "collisions", "delta_tau"],
                 ["Candidate vs reference", "Group", "Verdict", "Mean cos", "Worst cos", "Below threshold",
                  "Collisions", "Δτ ×100"], rows, digits=4,
                 note="From `fasteval drift --out DIR` reports under the results folder.")


CROSS_TABLES = (normalization_table, protocol_variants_table)


def find_ladders(root: Path) -> list[dict[str, Any]]:
    """Every vector ladder under ``root`` (``fasteval sweep --ladder vectors`` writes OUT/ladders/<model>.json; a
    folder of sweeps one level down too), each as written: its rows and the surface-form baselines."""
    from ..io import read_json

    found = []
    for path in sorted(Path(root).glob("ladders/*.json")) + sorted(Path(root).glob("*/ladders/*.json")):
        try:
            data = read_json(path)
            if not isinstance(data, dict) or data.get("ladder") != "vectors" or not data.get("rows"):
                raise ValueError("not a vector ladder")
            found.append(data)
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("skipped %s: unreadable ladder (%s)", path, first_line(err))
    return found


def ladder_table(root: Path) -> Table | None:
    """The vector ladders under ``root``: per model and rung, the bytes a store keeps a vector, τ with its
    interval, PACC, AVG and Δτ against the float vectors with its paired interval (x100)."""
    rows = [{**r, "model": r["model"] if k == 0 else "", "bytes_per_vector": str(r["bytes_per_vector"])}
            for ladder in find_ladders(root) for k, r in enumerate(ladder["rows"])]
    if not rows:
        return None
    return Table("ladder", "The vector ladder: Table 1 as a vector store keeps the vectors (×100)",
                 ["model", "rung", "bytes_per_vector", "tau", "tau_ci_low", "tau_ci_high", "pacc", "avg",
                  "delta_tau", "delta_tau_ci_low", "delta_tau_ci_high"],
                 ["Model", "Rung", "Bytes", "τ", "τ low", "τ high", "PACC", "AVG", "Δτ", "Δτ low", "Δτ high"],
                 rows, digits=2,
                 note="From `fasteval sweep --ladder vectors` (OUT/ladders): each rung scores the vectors a store "
                      "keeps (the first N dimensions L2-normalised; int8 and int4; binary and binary-centred with "
                      "Hamming similarity) from the same embeddings; Δτ is the rung less the float vectors, by the "
                      "paired bootstrap.")

