"""fasteval inside MTEB (``pip install 'fasteval[mteb]'``): the paper's exams as MTEB tasks, MTEB models as
fasteval encoders, and result files MTEB loads.

    import mteb, fasteval
    model = mteb.get_model("path/to/sentence-transformers-folder")
    results = mteb.evaluate(model, tasks=fasteval.mteb.tasks())

* ``tasks()`` returns the tasks ``PhysScoreMeasurementGeometry`` (Exam 1, main score Kendall τ),
  ``PhysScoreLexicalNumeric`` (Exam 2, τ-b of similarity against numeric distance), ``PhysScoreProbe``
  (Exam 3, the probe's τ) and ``PhysScoreConversion`` (the conversion exam, recall@1): ``AbsTask`` classes with
  full ``TaskMetadata`` whose data fasteval's protocol generates (no download; the dataset revision is the
  protocol's version). Each encodes the protocol's groups one MTEB ``encode`` call each, exactly as the paper's
  notebook called sentence-transformers, so the scores are ``fasteval sweep``'s (0.36967 for
  all-MiniLM-L6-v2 on the CPU).
* ``MtebEncoder(model)`` is the one adapter from MTEB's encoder protocol (``encode(DataLoader,
  task_metadata=..., hf_split=..., hf_subset=...)``) to fasteval's (``encode(list[str])``);
  every entry point of fasteval applies it to any MTEB model by itself (``fasteval.core.encoders``).
* ``task_results(result)`` turns a fasteval result into MTEB ``TaskResult`` objects (the ``mteb/`` files of a
  result folder hold the same, written without importing MTEB).
* ``write_datasets(out)`` writes each task's samples as a Hugging Face dataset folder (``README.md`` and
  ``test.jsonl``) ready to push as ``fasteval/<task>`` (``data.py``: the samples, their MTEB-standard descriptive
  statistics and the dataset-quality rules; docs/mteb.md).

The tasks are the exam registry's (``core/exams``): each exam's record names its task, description,
main score and scores. Where each part lives: the tasks in ``task.py``; the adapter with the other kinds of
encoder (``fasteval/models/adapters/mteb.py``); the tasks' metadata beside the result files MTEB loads
(``core/results/mteb.py``). Import it as ``fasteval.mteb`` (``import fasteval.mteb``, ``from fasteval.mteb import
tasks``): the same module as ``fasteval.core.mteb``, registered under both names and run on first use.
"""
from __future__ import annotations

# The public names, each from the module that defines it, loaded on first use (MTEB and numpy stay unloaded
# until then): name -> module.
_NAMES = {"tasks": ".task", "task_results": ".task", "MtebEncoder": "...models.adapters.mteb",
          "metadata_of": "..results.mteb", "write_datasets": ".data"}
__all__ = list(_NAMES)


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_NAMES[name], __name__), name)
