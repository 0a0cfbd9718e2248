"""Hugging Face community evals: each model's PhysScore results in the format a model repository's
``.eval_results/`` folder takes (a YAML list, one entry a benchmark task: ``dataset: {id, task_id}``, ``value``,
``date``, ``source: {url, name}``, ``notes``), written by ``fasteval report`` to
``hf-eval-results/<model>/physscore.yaml`` (the model's Hugging Face id, where the registry knew it at sweep time)
for a pull request to the model's repository (docs/results.md maps the fields).

Only a model's main run on the paper's protocol is written (a model page shows the benchmark as the paper defines
it; a run under other settings is not that benchmark's number): one entry a PhysScore task, its value the task's
MTEB main score (0-1), its dataset the task's dataset as MTEB names it (``fasteval/<task>``), ``notes`` the
similarity where it is not cosine. The YAML is written as plain block YAML with JSON-quoted strings, read by any YAML
parser.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

HF_FOLDER, HF_FILE = "hf-eval-results", "physscore.yaml"
SOURCE = {"url": "https://arxiv.org/abs/2609.20821", "name": "fasteval"}


def hf_entries(entry: Any) -> list[dict[str, Any]]:
    """The community-eval entries of one result a report read (none for another protocol's or another run's)."""
    from ..exams import task_scores
    from ..protocol.paper import PROTOCOL_VERSION

    result = entry.result
    if entry.run or result.protocol != PROTOCOL_VERSION:
        return []
    similarity = result.settings.get("similarity", "cos")
    date = time.strftime("%Y-%m-%d", time.gmtime(Path(entry.path).stat().st_mtime))
    out = []
    for task, scores in task_scores(result.exams).items():
        value = scores["main_score"]
        if value is None or not math.isfinite(value):
            continue
        item: dict[str, Any] = {"dataset": {"id": f"fasteval/{task}", "task_id": task}, "value": value,
                                "date": date, "source": dict(SOURCE)}
        if similarity != "cos":
            item["notes"] = f"{similarity} similarity"
        out.append(item)
    return out


def yaml_text(entries: list[dict[str, Any]]) -> str:
    """``entries`` as block YAML: mappings indented, every string JSON-quoted, numbers as Python writes them."""
    def scalar(value: Any) -> str:
        return json.dumps(value) if isinstance(value, str) else repr(value)

    lines = []
    for item in entries:
        first = True
        for key, value in item.items():
            lead = "- " if first else "  "
            first = False
            if isinstance(value, dict):
                lines.append(f"{lead}{key}:")
                lines += [f"    {k}: {scalar(v)}" for k, v in value.items()]
            else:
                lines.append(f"{lead}{key}: {scalar(value)}")
    return "\n".join(lines) + "\n"


def hf_files(entries: list[Any]) -> dict[str, str]:
    """``hf-eval-results/<model id>/physscore.yaml`` of each model whose main paper run the report read (its
    Hugging Face id where fasteval's registry knew it when the result was made, as the repository is named)."""
    from .eee import path_component

    files = {}
    for e in entries:
        items = hf_entries(e)
        if items:
            repo = "/".join(map(path_component, (e.result.hf_id or e.result.model).split("/")))
            files[f"{HF_FOLDER}/{repo}/{HF_FILE}"] = yaml_text(items)
    return files
