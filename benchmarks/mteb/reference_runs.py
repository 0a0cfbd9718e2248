"""The runs MTEB's contribution checklist asks of a new task: its random-baseline encoder and reference models,
through ``mteb.evaluate`` as MTEB runs any model, written in MTEB's results format (``ResultCache``:
``benchmarks/mteb/results/results/<model>/<revision>/<Task>.json`` and ``model_meta.json``; a reference model's
revision is the content hash of the copy fasteval has), beside the same models' ``fasteval sweep`` main scores in
``reference.json`` (the tasks are fasteval's exams: the two agree, to the float32 rounding of torch against
onnxruntime where a score is not a rank).

    python -m benchmarks.mteb.reference_runs        # about 3 minutes on 2 CPU cores (mpnet is most of it)

The reference models are the two the paper reports that this machine has (all-MiniLM-L6-v2 and all-mpnet-base-v2,
from PyPI) as sentence-transformers models, and MTEB's own random encoder (``mteb/baseline-random-encoder``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


def main() -> int:
    import mteb
    from sentence_transformers import SentenceTransformer

    import fasteval
    from fasteval.core.exams import scores_of, task_exams
    from fasteval.models.sources.registry import find_spec, source_folder

    cache = mteb.ResultCache(cache_path=HERE / "results")
    tasks = fasteval.mteb.tasks()
    runs = {"mteb/baseline-random-encoder": mteb.get_model("mteb/baseline-random-encoder")}
    for name in MODELS:  # named as MTEB names them, at the content hash of the copy fasteval has (from PyPI)
        model = SentenceTransformer(str(source_folder(name)[1]), device="cpu")
        model.model_card_data.model_name = find_spec(name).hf_id
        model.model_card_data.base_model_revision = str(fasteval.load_model(name).info["source_sha256"])[:16]
        runs[name] = model
    table = {}
    for name, model in runs.items():
        result = mteb.evaluate(model, tasks=tasks, cache=cache, overwrite_strategy="always", show_progress_bar=False)
        table[name] = {r.task_name: r.get_score() for r in result.task_results}
    for name in MODELS:  # the same tasks as fasteval's sweep scores them
        swept = fasteval.evaluate(name, bootstrap=0, exams=(1, 2, 3, "conversion"))
        table[f"{name} (fasteval)"] = {t: scores_of(e, swept.exams[e.key])["main_score"]
                                       for t, e in task_exams().items()}
    (HERE / "reference.json").write_text(json.dumps(table, indent=1) + "\n")
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
