"""The results a report or a comparison is made of: every readable results.json under a folder, each with the
one label it has in the tables ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2 [normalized]"), and a model's runs
grouped under its main run."""
from __future__ import annotations

import logging

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import protocol as P
from ..errors import InputError, first_line
from ..vectors import vector_words
from ..results.model import RESULT_FILE, ModelResult
from ..results.read import NotFastevalResult, find_result_files, read_result

log = logging.getLogger(__name__)



@dataclass
class LoadedResult:
    """One results.json: its typed result and the unique name it has in the tables ("all-MiniLM-L6-v2",
    "all-MiniLM-L6-v2 [normalized]"); ``run`` says how it differs from its model's main run ("" for that one)."""
    label: str
    path: Path
    result: ModelResult
    run: str = ""
    model: str = ""  # the model it is a run of (``model_of``, over every result the report read), "" for its id
    # the file as it was written (read once with ``result``): what the long table carries, never recomputed
    written: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def model_key(self) -> str:
        return self.model or self.result.model_id


def model_of(results: list[ModelResult]) -> dict[int, str]:
    """Each result's model (by ``id(result)``): its model id, where a result with the same weights (their content
    hash) came first under another id, that one's (a renamed copy of a model's folder is that model; a served run
    of it keeps its own model id, which the local runs share)."""
    by_weights: dict[str, str] = {}
    out = {}
    for r in results:
        weights = r.settings.get("source_sha256") or r.settings.get("onnx_sha256")
        out[id(r)] = by_weights.setdefault(str(weights), r.model_id) if weights else r.model_id
    return out


def load_results(results_dir: Path, models: Iterable[str] | None = None,
                 notes: list[str] | None = None) -> list[LoadedResult]:
    """Every readable result under ``results_dir`` (optionally only ``models``: model ids or names).

    Unreadable files and unknown models are logged as warnings and skipped (and appended to ``notes``, for a
    report that lists them). Raises InputError when nothing is left.
    """
    def warn(message: str) -> None:
        log.warning("%s", message)
        if notes is not None:
            notes.append(message)

    results_dir = Path(results_dir).expanduser()
    if not results_dir.is_dir():
        raise InputError(f"Results folder {results_dir} does not exist or is not a folder.",
                         "pass the --out folder of `fasteval sweep`.")
    paths = find_result_files(results_dir)
    if not paths:
        raise InputError(f"No {RESULT_FILE} found under {results_dir}.",
                         "pass the --out folder of `fasteval sweep` (it holds one folder per model).")
    loaded: list[tuple[Path, ModelResult]] = []
    written: dict[Path, dict[str, Any]] = {}
    for path in paths:
        try:
            result, written[path] = read_result(path)
            loaded.append((path, result))
        except NotFastevalResult:  # another tool's results.json: not ours to read or to warn about
            log.info("left out %s: not a fasteval result", path)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
            warn(f"skipped {path}: unreadable result ({type(err).__name__}: {first_line(err)})")
    model = model_of([r for _, r in loaded])  # once, over every result read: each result's model
    seen: dict[tuple[str, str], tuple[Path, ModelResult]] = {}  # (model, settings key) -> the first such result
    kept = []
    for path, result in loaded:
        key = result.settings.get("key")
        same = (model[id(result)], str(key))
        if key and same in seen:  # a copy: the same model (its weights) under the same settings
            first, had = seen[same]
            names = (f" ({result.model})", f" ({had.model})") if had.model != result.model else ("", "")
            warn(f"{path.parent}{names[0]} is a copy of {first.parent}{names[1]}: the same weights under the same "
                 "settings, shown once")
            continue
        if key:
            seen[same] = (path, result)
        kept.append((path, result))
    loaded = kept
    if models is not None:
        wanted = [m.strip() for m in (models.split(",") if isinstance(models, str) else models) if m.strip()]
        keys = {m: {m, P.model_id(m)} for m in wanted}
        chosen = [(p, r) for p, r in loaded if any({r.model, r.model_id} & k for k in keys.values())]
        for m, k in keys.items():
            if not any({r.model, r.model_id} & k for _, r in loaded):
                warn(f"no result for model {m!r} under {results_dir}")
        loaded = chosen
    if not loaded:
        raise InputError(f"No readable result under {results_dir}"
                         + (" for the chosen models." if models is not None else "."),
                         "run `fasteval sweep --out DIR` first, or check the --models names.")
    return _labelled(results_dir, loaded, model, written)




def is_normalized(result: ModelResult) -> bool:
    return bool(result.settings.get("normalize_quantities"))


def paper_mains(entries: list[LoadedResult]) -> list[LoadedResult]:
    """Each model's main run among the results of Exam 1 under the paper's protocol (a model once)."""
    return [main for main, _ in by_model([e for e in entries if "exam1" in e.result.exams and is_paper(e.result)])]


def is_paper(result: ModelResult) -> bool:
    return result.on_paper_protocol


def protocol_name(result: ModelResult) -> str:
    """The protocol's name ("multilingual"), from the protocol file's record in the settings."""
    info = result.settings.get("protocol_file") or {}
    return str(info.get("name") or result.protocol)


# Settings that make one run of a model differ from another, and the words a label uses for them; a setting
# at its default says nothing. Other settings that differ between runs of one model are named as they are.
_RUN_WORDS: dict[str, Callable[[Any], str | None]] = {
    "protocol_file": lambda v: (v or {}).get("name") or None,
    "similarity": lambda v: None if v in (None, "cos") else str(v),
    "normalize_quantities": lambda v: "normalized" if v else None,
    "prompt": lambda v: f"prompt {v!r}" if v else None,
    "dtype": lambda v: None if v in (None, "fp32") else str(v),
    "batching": lambda v: None if v in (None, "paper") else f"{v} batching",
    "deployment": lambda v: _served_words(v) if isinstance(v, dict) else None,
    "dimensions": lambda v: vector_words({"dimensions": v}) or None,
    "vector_quantization": lambda v: vector_words({"vector_quantization": v}) or None,
}


def _served_words(deployment: dict) -> str:
    """"served: infinity @127.0.0.1:7997": the server's own name for itself where /models gives one, and where."""
    from urllib.parse import urlsplit

    parts = urlsplit(str(deployment.get("url", "")))
    where = parts.netloc or parts.path
    server = (deployment.get("server") or {}).get("owned_by")
    owned = server and server not in ("system", "organization-owner")
    return f"served: {server} @{where}" if owned else f"served @{where}"
# Settings that never tell runs apart in a label (they follow from the others, or are bookkeeping).
_NOT_A_RUN = {"key", "model", "source", "bootstrap", "exams", "prompt_name", "batch_tokens", "packing", "protocol",
              "source_sha256", "onnx_sha256"}


def _run_words(r: ModelResult, group: list[ModelResult]) -> list[str]:
    """How run ``r`` differs from the defaults, and in the other settings from the other runs of its model."""
    words = [w for key, say in _RUN_WORDS.items() if (w := say(r.settings.get(key)))]
    if "deployment" in r.settings:  # a served run: the server's settings are not the local encoder's
        return words
    for key in sorted(set(r.settings) - set(_RUN_WORDS) - _NOT_A_RUN):
        having = [g for g in group if key in g.settings]  # a served run has no pooling, provider, ...
        values = {json.dumps(g.settings.get(key), sort_keys=True, default=str) for g in having}
        if len(having) > 1 and len(values) > 1:
            words.append(f"{key} {r.settings.get(key)}")
    return words


def _labelled(results_dir: Path, loaded: list[tuple[Path, ModelResult]], model: dict[int, str],
              written: dict[Path, dict[str, Any]]) -> list[LoadedResult]:
    """Label = the model's own name (all-MiniLM-L6-v2) and, in brackets, what sets the run apart ("[normalized]",
    "[l2]", "[prompt 'query: ']", "[multilingual]"); where several results still share one, the folder path relative
    to the root."""
    groups: dict[str, list[ModelResult]] = {}
    for _, r in loaded:
        groups.setdefault(model[id(r)], []).append(r)
    runs = [", ".join(_run_words(r, groups[model[id(r)]])) for _, r in loaded]
    labels = [P.display_name(r.model or r.model_id) + (f" [{run}]" if run else "") for (_, r), run in zip(loaded, runs)]
    out = []
    for (path, r), run, label in zip(loaded, runs, labels):
        if labels.count(label) > 1:
            label = path.parent.relative_to(results_dir).as_posix()
        out.append(LoadedResult(label=label, path=path, result=r, run=run, model=model[id(r)],
                                written=written[path]))
    return out


def by_model(entries: list[LoadedResult]) -> list[tuple[LoadedResult, list[LoadedResult]]]:
    """Each model's main run (the one at the default settings, else its first) and its other runs."""
    groups: dict[str, list[LoadedResult]] = {}
    for e in entries:
        groups.setdefault(e.model_key, []).append(e)
    out = []
    for runs in groups.values():
        main = next((e for e in runs if not e.run), runs[0])
        out.append((main, [e for e in runs if e is not main]))
    return out


