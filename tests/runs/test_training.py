"""PhysScore in the training loop: PhysScoreEvaluator inside a real sentence-transformers training run (a few
steps on a handful of pairs, on the CPU): its metrics are fasteval.evaluate's on the same weights, before and
after the steps, and flow into the trainer's metrics, the CSV and the model card. On the real default model, its
numbers before any step are the sweep's (36.97 / 68.48)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

PAIRS = [("2 kilometers", "2000 meters"), ("5 kilograms", "5000 grams"), ("3 liters", "3000 milliliters"),
         ("1 hour", "60 minutes"), ("10 meters", "1000 centimeters"), ("7 seconds", "7000 milliseconds"),
         ("half a meter", "50 centimeters"), ("2 tonnes", "2000 kilograms")]


def train(model, evaluator, out: Path, steps: int = 3):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    data = Dataset.from_dict({"anchor": [a for a, _ in PAIRS], "positive": [b for _, b in PAIRS]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out), max_steps=steps, per_device_train_batch_size=4, learning_rate=5e-4,
        eval_strategy="steps", eval_steps=steps, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
        seed=0, disable_tqdm=True)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, eval_dataset=data,
                                         loss=MultipleNegativesRankingLoss(model), evaluator=evaluator)
    before = trainer.evaluate()
    trainer.train()
    return trainer, before


def test_the_evaluator_in_a_training_run_reports_fastevals_numbers(tiny_st_folder, tmp_path):
    """On the stack the test extra resolves, the newest it allows (sentence-transformers 6, transformers 5: no upper
    bounds; an environment of its own, built for this before the suite's stack reached them, ran this same run)."""
    import sentence_transformers
    import transformers

    import fasteval
    from sentence_transformers import SentenceTransformer

    assert int(sentence_transformers.__version__.split(".")[0]) >= 6
    assert int(transformers.__version__.split(".")[0]) >= 5

    model = SentenceTransformer(str(tiny_st_folder), device="cpu")
    evaluator = fasteval.PhysScoreEvaluator(exams=(1, 2))
    ours_before = fasteval.evaluate(model, exams=(1, 2), bootstrap=0)
    trainer, before = train(model, evaluator, tmp_path / "run")
    table1 = ours_before.exams["exam1"].summary()
    assert before["eval_physscore_tau"] == pytest.approx(table1["kendall_mean"], abs=1e-6)
    assert before["eval_physscore_pacc"] == pytest.approx(table1["pairwise_mean"], abs=1e-6)
    assert evaluator.primary_metric == "physscore_tau" and evaluator.greater_is_better
    after = fasteval.evaluate(model, exams=(1, 2), bootstrap=0)  # the trained weights
    final = evaluator(model)
    assert final["physscore_tau"] == pytest.approx(after.exams["exam1"].summary()["kendall_mean"], abs=1e-6)
    assert final["physscore_exam2_kendall_tau"] == pytest.approx(
        fasteval.core.exams.exam(2).mteb_scores(after.exams["exam2"])["kendall_tau"], abs=1e-6)
    assert after.exams["exam1"].summary()["kendall_mean"] != table1["kendall_mean"], "the steps moved the weights"
    logged = [h for h in trainer.state.log_history if "eval_physscore_tau" in h]
    assert logged and logged[-1]["eval_physscore_tau"] == pytest.approx(final["physscore_tau"], abs=1e-6)
    rows = list(csv.DictReader(open(next((tmp_path / "run").rglob("physscore_results.csv")))))
    assert rows and {"epoch", "steps", "tau", "pacc", "avg"} <= set(rows[0])
    card = model.model_card_data.eval_results_dict[evaluator]
    assert card["physscore_tau"] == pytest.approx(final["physscore_tau"], abs=1e-6), "the metrics reach the card"
    assert any("physscore_tau" in log for log in model.model_card_data.training_logs)


def test_the_evaluator_scores_the_vectors_a_store_keeps(tiny_st_folder):
    """With a store's options it reports fasteval.evaluate's numbers under the same options (and its config says
    which vectors), not the float vectors'."""
    import fasteval
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_st_folder), device="cpu")
    for options in ({"vector_quantization": "binary"}, {"dimensions": 16, "vector_quantization": "int8"}):
        evaluator = fasteval.PhysScoreEvaluator(**options)
        ours = fasteval.evaluate(model, exams=(1,), bootstrap=0, **options).exams["exam1"].summary()
        assert evaluator(model)["physscore_tau"] == pytest.approx(ours["kendall_mean"], abs=1e-9)
        assert evaluator.get_config_dict()["vector_quantization"] == options["vector_quantization"]
    plain = fasteval.evaluate(model, exams=(1,), bootstrap=0).exams["exam1"].summary()["kendall_mean"]
    assert plain != pytest.approx(ours["kendall_mean"], abs=1e-9)


def test_importing_fasteval_does_not_load_sentence_transformers():
    code = "import sys, fasteval; print('sentence_transformers' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_selection_without_exam_1_is_one_line():
    import fasteval
    from fasteval.core.errors import InputError

    with pytest.raises(InputError, match="include 1 in exams"):
        fasteval.PhysScoreEvaluator(exams=(2,))


@pytest.mark.slow
def test_before_any_step_the_real_model_scores_the_sweeps_row(tmp_path):
    """all-MiniLM-L6-v2 from its PyPI package, in sentence-transformers on the CPU: 36.97 / 68.48 / 52.73."""
    import fasteval
    from sentence_transformers import SentenceTransformer

    from servers import minilm_folder_in

    folder = minilm_folder_in(os.environ.get("FASTEVAL_TEST_MODEL_HOME", str(Path.home() / ".cache" / "fasteval")))
    model = SentenceTransformer(str(folder), device="cpu")
    metrics = fasteval.PhysScoreEvaluator()(model, output_path=str(tmp_path))
    row = fasteval.evaluate(model, exams=(1,), bootstrap=0).exams["exam1"].summary()
    assert (round(metrics["physscore_tau"] * 100, 2), round(metrics["physscore_pacc"] * 100, 2)) == (36.97, 68.48)
    assert metrics["physscore_avg"] * 100 == pytest.approx(52.73, abs=0.005)
    assert (row["tau_display"], row["pacc_display"]) == (36.97, 68.48)


@pytest.mark.slow
def test_the_readme_example_runs_as_written(tmp_path):
    """The README's training example, verbatim, in a fresh process (it prints the trainer's evaluation)."""
    from fakes import ROOT

    readme = (ROOT / "README.md").read_text()
    code = readme.split("<!-- evaluator-example -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    deprecated = [ln for ln in proc.stderr.splitlines() if "sentence_transformers" in ln and "deprecated" in ln]
    assert not deprecated, deprecated  # the example imports from where sentence-transformers keeps it now
    evaluated = next(ln for ln in proc.stdout.splitlines() if "eval_physscore_tau" in ln)
    assert "'eval_physscore_tau': 0.3696" in evaluated and "'eval_physscore_pacc': 0.6848" in evaluated
