"""PhysScore in the training loop: ``PhysScoreEvaluator``, a sentence-transformers evaluator.

    from sentence_transformers import SentenceTransformerTrainer
    from fasteval import PhysScoreEvaluator

    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train, loss=loss,
                                         evaluator=PhysScoreEvaluator())

At every evaluation it embeds the protocol's texts with the model being trained (its own ``encode``, on its own
device, in eval mode; no export, no ONNX) and scores them with the code ``fasteval sweep`` runs
(``fasteval.evaluate``), so its numbers are the sweep's on the same weights. The metrics are on the 0-1 scale
sentence-transformers reports, prefixed by the evaluator's ``name``: Table 1's ``tau``, ``pacc`` and ``avg``
(the primary metric is ``tau``, the main score of the MTEB task) and τ per quantity; with more exams, each
exam's MTEB scores under its key (``exam2_kendall_tau``, ``conversion_recall_at_1``, ...). They go into the
trainer's logs and the model card, and each call appends a row to ``<name>_results.csv`` under
``output_path``.

Needs sentence-transformers (``pip install 'fasteval[train]'``); importing fasteval does not load it.
"""
from __future__ import annotations

import csv
import logging
import os
from collections.abc import Iterable
from typing import Any

try:  # sentence-transformers 5.x names the module so; earlier versions (and 5.x, deprecated) evaluation
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
except ImportError:
    from sentence_transformers.evaluation import SentenceEvaluator  # type: ignore[no-redef]

from ..errors import InputError
from ..exams import exam
from ..plan import plan, run, scoring

log = logging.getLogger(__name__)

# Exam 1's MTEB score names (core/exams/geometry.mteb_scores) as Table 1 names them
TABLE1_NAMES = {"kendall_tau": "tau", "pairwise_accuracy": "pacc", "avg": "avg"}


class _ModelEncoder:
    """The model being trained as a fasteval encoder: its own ``encode``, in eval mode, on its device."""

    def __init__(self, model, batch_size: int):
        self.model, self.batch_size = model, batch_size
        self.name = getattr(getattr(model, "model_card_data", None), "model_name", None) or type(model).__name__
        tokenizer = getattr(model, "tokenizer", None)
        if tokenizer is not None and callable(getattr(tokenizer, "encode", None)):
            self.tokenizer = tokenizer  # Exam 2's token ids: the model's own

    def encode(self, texts: list[str]):
        return self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 show_progress_bar=False)


class PhysScoreEvaluator(SentenceEvaluator):
    """fasteval's exams as a sentence-transformers evaluator (see the module docstring).

    ``protocol``: a built-in protocol's name, a protocol file or a loaded Protocol (default: the paper's);
    ``exams``: which exams (default: Exam 1; 2, 3 and "conversion" on the paper's protocol);
    ``similarity``: cos, dot or l2; ``batch_size``: texts per ``encode`` batch; ``write_csv``: append each
    evaluation to ``<name>_results.csv`` under ``output_path``; ``dimensions``, ``vector_quantization`` and
    ``calibration``: score the vectors a store will keep (``fasteval.evaluate``'s options), e.g. a Matryoshka
    model's first 256 dimensions while it trains."""

    def __init__(self, protocol: Any = None, exams: Iterable[int | str] = (1,), similarity: str = "cos",
                 name: str = "physscore", batch_size: int = 32, write_csv: bool = True,
                 dimensions: int | None = None, vector_quantization: str | None = None, calibration: Any = None):
        super().__init__()
        self.scoring = scoring(exams=exams, similarity=similarity, protocol=protocol, bootstrap=0,
                               dimensions=dimensions, vector_quantization=vector_quantization,
                               calibration=calibration)
        if 1 not in self.scoring.exams:
            raise InputError("PhysScoreEvaluator reports Table 1, and exams leaves Exam 1 out.",
                             "include 1 in exams, e.g. exams=(1, 2, 3).")
        self.name, self.batch_size, self.write_csv = name, int(batch_size), write_csv
        self.primary_metric = "tau"
        self.greater_is_better = True
        self.csv_file = f"{name}_results.csv" if name else "physscore_results.csv"

    def __call__(self, model, output_path: str | None = None, epoch: int = -1, steps: int = -1
                 ) -> dict[str, float]:
        metrics = self.compute(model)
        log.info("PhysScore (%s) after epoch %s, step %s: tau %.4f, pacc %.4f, avg %.4f", self.scoring.protocol.name,
                 epoch, steps, metrics["tau"], metrics["pacc"], metrics["avg"])
        if output_path is not None and self.write_csv:
            self._append_csv(output_path, epoch, steps, metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def compute(self, model) -> dict[str, float]:
        """The metrics of ``model`` now, unprefixed: its plan run on its embeddings (as ``fasteval.evaluate``)."""
        was_training = bool(getattr(model, "training", False))
        model.eval()
        try:
            result = run(plan(_ModelEncoder(model, self.batch_size), self.scoring))
        finally:
            model.train(was_training)
        metrics: dict[str, float | None] = {}
        for choice in self.scoring.exams:
            record = exam(choice)
            scores = record.mteb_scores(result.exams[record.key])
            if choice == 1:
                metrics.update({TABLE1_NAMES.get(k, k.replace("kendall_tau_", "tau_")): v for k, v in scores.items()})
            else:
                metrics.update({f"{record.key}_{k}": v for k, v in scores.items()})
        return {k: (float("nan") if v is None else float(v)) for k, v in metrics.items()}

    def _append_csv(self, output_path: str, epoch: int, steps: int, metrics: dict[str, float]) -> None:
        os.makedirs(output_path, exist_ok=True)
        path = os.path.join(output_path, self.csv_file)
        new = not os.path.isfile(path)
        with open(path, "a", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(["epoch", "steps", *metrics])
            writer.writerow([epoch, steps, *metrics.values()])

    def get_config_dict(self) -> dict[str, Any]:
        chosen = self.scoring
        return {"protocol": chosen.protocol.key, "exams": list(chosen.exams), "similarity": chosen.similarity,
                **(chosen.vectors.keyed() if chosen.vectors is not None else {})}
