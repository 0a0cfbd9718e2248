"""Every Eval Ever records: each result a report read (a model under one protocol and its settings) as one
evaluation record of the Every Eval Ever schema (``every-eval-ever`` 0.3.0, ``eval.schema.json``), written by
``fasteval report`` where the datastore keeps records, ``every-eval-ever/data/physscore/<developer>/<model>/<id>.json``
(the developer is the Hugging Face id's owner; ``local`` for a model known only by its folder's name; the id a
UUID made from the result's key, so the same result keeps its file name), ready to copy into the datastore.

A record names the evaluation library (fasteval and its version, with the protocol, similarity and vector options
that made the numbers), the model (its Hugging Face id where the registry knew it at sweep time, and whether it ran
here or on a server), and one evaluation result per task metric: each PhysScore task's main score (its MTEB main
score) and beside it every named sub-metric, on MTEB's 0-1 scale, with the bootstrap's 95% interval where the result
has one. Before a record is written, each task's main score is checked against the sub-metric it names (an exam
whose main score is not its sub-metric would publish two numbers for one thing). The tasks' data is fasteval's
generated protocol (``source_type: other``), named with its version and content key.

The conventions follow the package's own adapters (lm-eval's: ``evaluation_id`` as name/model/timestamp, the
Unix-time timestamps, a result id per metric, a harness-namespaced metric id); its validator accepts the records
(``tests/report/test_eee.py`` runs it).
"""
from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Any

EEE_FOLDER = "every-eval-ever"
SCHEMA_VERSION = "0.3.0"  # the Every Eval Ever schema the records follow
HARNESS = "physscore"  # the namespace of fasteval's metric ids (physscore.<task>.<metric>)
# A metric's range and direction, by its name (MTEB's 0-1 scale): Kendall tau in [-1, 1]; accuracies, recall and MRR
# in [0, 1]; AVG (the mean of tau and PACC) in [-0.5, 1]; the conversion exam's lexical trap rate, lower is better;
# its mean similarities within the similarity's range (cos [-1, 1], else unbounded).
_ACCURACY = ("pairwise_accuracy", "recall_at_1", "mrr", "lexical_trap_rate")


def _bounds(metric: str, similarity: str) -> tuple[Any, Any, bool]:
    """(min_score, max_score, lower_is_better) of a metric."""
    if metric.startswith("mean_sim_"):
        return (-1.0, 1.0, False) if similarity == "cos" else ("-Infinity", "Infinity", False)
    if metric == "avg":
        return -0.5, 1.0, False
    if metric.startswith(_ACCURACY):
        return 0.0, 1.0, metric == "lexical_trap_rate"
    return -1.0, 1.0, False  # every other PhysScore metric is a Kendall tau


LOCAL_DEVELOPER = "local"  # the datastore folder of a model known by no Hugging Face id (a folder's name)


def path_component(text: str) -> str:
    """One portable path component of an identity, as the datastore spells it ("Qwen3:8b" -> "Qwen3_8b")."""
    return re.sub(r'[<>:"\\|?*\x00-\x1f/]', "_", text).strip(". ") or "model"


def record_path(record: dict[str, Any], key: str) -> str:
    """Where the datastore keeps a record: data/physscore/<developer>/<model>/<UUID>.json, the developer the model
    id's owner (its ``developer`` for a flat id), the rest of the id flattened, the UUID made from ``key``."""
    import hashlib
    import uuid

    info = record["model_info"]
    parts = str(info["id"]).split("/")
    developer, model = (parts[0], "_".join(parts[1:])) if len(parts) > 1 else (info["developer"], parts[0])
    name = uuid.UUID(bytes=hashlib.sha256(key.encode()).digest()[:16], version=4)
    return f"{EEE_FOLDER}/data/{HARNESS}/{path_component(developer)}/{path_component(model)}/{name}.json"


def _strings(values: dict[str, Any]) -> dict[str, str]:
    """``additional_details``: the set values, as strings (the schema's rule)."""
    return {k: str(v) for k, v in values.items() if v is not None and v != ""}


def model_info(result: Any) -> dict[str, Any]:
    """Who was evaluated: its name, its Hugging Face id where fasteval's registry knew it when the result was made
    (its developer the id's owner; ``ModelResult.hf_id``), where it ran (this machine's onnxruntime, or a server),
    and what fasteval knows of its weights."""
    settings = result.settings
    deployment = settings.get("deployment") if isinstance(settings.get("deployment"), dict) else None
    hf_id = result.hf_id or result.model
    info: dict[str, Any] = {"name": result.model, "id": hf_id,
                            "developer": hf_id.split("/", 1)[0] if "/" in hf_id else LOCAL_DEVELOPER}
    if deployment:
        info["inference_platform"] = str(deployment.get("url"))
    else:
        info["inference_engine"] = {"name": "onnxruntime",
                                    "version": str((result.machine or {}).get("onnxruntime", "unknown"))}
    info["additional_details"] = {
        "deployment_type": "externally_managed" if deployment else "self_deployed",
        "model_availability": "open_weights" if result.hf_id is not None else "unknown",
        **_strings({"dtype": settings.get("dtype"), "onnx_sha256": settings.get("onnx_sha256"),
                    "source_sha256": settings.get("source_sha256"), "served_model": (deployment or {}).get("model")})}
    return info


def task_results(result: Any, retrieved: str) -> list[dict[str, Any]]:
    """One evaluation result per metric of each task the result ran: the main score first, then each sub-metric.
    ValueError where a task's main score is not the sub-metric it names."""
    from ..exams import task_exams, task_scores

    similarity = result.settings.get("similarity", "cos")
    protocol = result.protocol
    exams = task_exams()
    out = []
    for task, scores in task_scores(result.exams).items():
        exam = exams[task]
        exam_result = result.exams[exam.key]
        main = scores.pop("main_score")
        if main != scores.get(exam.main_score):
            raise ValueError(f"{task}'s main score {main!r} is not its {exam.main_score} "
                             f"{scores.get(exam.main_score)!r}")
        summary = exam_result.summary()
        source = {"dataset_name": task, "source_type": "other",
                  "additional_details": _strings({"protocol": protocol, "generator": "fasteval.core.protocol",
                                                  "description": exam.mteb_description})}
        for metric in [exam.main_score, *(m for m in scores if m != exam.main_score)]:
            value = scores[metric]
            if value is None or not math.isfinite(value):
                continue
            low, high, lower_better = _bounds(metric, similarity)
            details: dict[str, Any] = {"score": value}
            interval = _interval(metric, summary, result.settings)
            if interval is not None:
                details["uncertainty"] = interval
            out.append({
                "evaluation_result_id": f"{task}/{metric}", "evaluation_name": task, "source_data": source,
                "evaluation_timestamp": retrieved,
                "metric_config": {
                    "evaluation_description": f"{metric} of {task}" + (" (the task's main score)"
                                                                        if metric == exam.main_score else ""),
                    "metric_id": f"{HARNESS}.{task}.{metric}", "metric_name": metric,
                    "metric_kind": "kendall_tau" if low == -1.0 and not metric.startswith("mean_sim_") else metric,
                    "metric_unit": "proportion", "lower_is_better": lower_better, "score_type": "continuous",
                    "min_score": low, "max_score": high,
                    "additional_details": {"main_score": str(metric == exam.main_score).lower(),
                                           "similarity": str(similarity)}},
                "score_details": details})
    return out


# Exam 1's sub-metrics whose bootstrap interval its summary holds (x100), by MTEB name -> the summary's name
_INTERVALS = {"kendall_tau": "tau", "pairwise_accuracy": "pacc", "avg": "avg"}


def _interval(metric: str, summary: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any] | None:
    """The 95% bootstrap interval of an Exam 1 metric (on the 0-1 scale), where the result has one."""
    name = _INTERVALS.get(metric)
    low, high = (summary.get(f"{name}_ci_low"), summary.get(f"{name}_ci_high")) if name else (None, None)
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return None
    said = settings.get("bootstrap")
    boot: dict[str, Any] = said if isinstance(said, dict) else {}
    out: dict[str, Any] = {"confidence_interval": {"lower": low / 100, "upper": high / 100,
                                                   "confidence_level": float(boot.get("level", 0.95)),
                                                   "method": "percentile bootstrap over each cell's values"}}
    if isinstance(boot.get("resamples"), int):
        out["num_bootstrap_samples"] = boot["resamples"]
    return out


# What of a result's provenance (``ModelResult.provenance``) the record's ``eval_library`` details carry (fasteval's
# version is the library's own, the precision and the server are the model's details): "key" as "result_key"
LIBRARY_DETAILS = ("protocol", "similarity", "key", "dimensions", "vector_quantization", "calibration", "provider",
                   "normalize_quantities", "prompt")


def eee_record(entry: Any, retrieved: str | None = None) -> dict[str, Any]:
    """The Every Eval Ever record of one result a report read (a ``LoadedResult``)."""
    result = entry.result
    retrieved = retrieved or str(int(time.time()))
    info = model_info(result)
    made = result.provenance()
    library = _strings({("result_key" if k == "key" else k): made[k] for k in LIBRARY_DETAILS})
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{HARNESS}/{info['id']}/{retrieved}",
        "evaluation_timestamp": str(int(Path(entry.path).stat().st_mtime)),
        "retrieved_timestamp": retrieved,
        "source_metadata": {"source_name": "fasteval", "source_type": "evaluation_run",
                            "source_organization_name": "fasteval", "evaluator_relationship": "third_party",
                            "additional_details": {"reference": "https://arxiv.org/abs/2609.20821",
                                                   "run": entry.run or "main"}},
        "eval_library": {"name": "fasteval", "version": str(result.fasteval_version or "unknown"),
                         "additional_details": library},
        "model_info": info,
        "evaluation_results": task_results(result, retrieved),
    }


def eee_files(entries: list[Any], warnings: list[str]) -> dict[str, str]:
    """Each result's record (``record_path``), for each result with a task to report; a result whose record cannot
    be made is said in a warning."""
    from ..io import dumps

    retrieved = str(int(time.time()))
    files = {}
    for e in entries:
        try:
            record = eee_record(e, retrieved)
        except ValueError as err:
            warnings.append(f"no Every Eval Ever record of {e.label}: {err}")
            continue
        if record["evaluation_results"]:
            files[record_path(record, str(e.result.settings.get("key") or e.path))] = dumps(record)
    return files
