"""fasteval inside MTEB: the PhysScore tasks through ``mteb.evaluate`` give fasteval's numbers, MTEB models work
as fasteval encoders, and the ``mteb/`` files of a result folder load back with MTEB's own result class.
Runs when the mteb extra is installed (the test extra installs it)."""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import numpy as np
import pytest

from fasteval.core.errors import InputError

mteb = pytest.importorskip("mteb")

from fakes import TESTS, FakeEncoder  # noqa: E402 (after the skip without MTEB)


@pytest.fixture(scope="module")
def st_model(tiny_st_folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_st_folder), device="cpu")


class STReference:
    """The paper's call: sentence-transformers encode with normalize_embeddings=True, one call per group."""

    def __init__(self, model):
        self.model, self.tokenizer = model, model.tokenizer

    def encode(self, texts):
        return self.model.encode(list(texts), normalize_embeddings=True)


def test_tasks_have_full_metadata():
    import fasteval

    tasks = fasteval.mteb.tasks()
    assert [t.metadata.name for t in tasks] == ["PhysScoreMeasurementGeometry", "PhysScoreLexicalNumeric",
                                                "PhysScoreProbe", "PhysScoreConversion"]
    for task in tasks:
        m = task.metadata
        assert m.reference == "https://arxiv.org/abs/2609.20821" and m.revision == "paper-1"
        assert m.eval_splits == ["test"] and m.eval_langs == ["eng-Latn"] and m.main_score
        assert m.bibtex_citation and "Opitz" in m.bibtex_citation
        task.load_data()
        rows = task.dataset["default"]["test"]
        from fasteval.core.exams import protocol_groups
        from fasteval.core.exams import task_exams

        calls = protocol_groups((task_exams()[m.name].choice,))
        assert rows["text"] == [t for call in calls for t in call] and set(rows.column_names) == {"text", "group"}
        assert len(set(rows["group"])) == len(calls)
    with pytest.raises(InputError, match="Unknown PhysScore task"):
        fasteval.mteb.tasks(["PhysScoreNope"])


def test_mteb_evaluate_gives_fastevals_numbers_on_a_tiny_model(st_model):
    import fasteval

    results = mteb.evaluate(st_model, tasks=fasteval.mteb.tasks(), cache=None, show_progress_bar=False)
    scores = {r.task_name: r.scores["test"][0] for r in results.task_results}
    ours = fasteval.evaluate(STReference(st_model), exams=(1, 2, 3, "conversion"), bootstrap=0)
    assert scores["PhysScoreMeasurementGeometry"]["main_score"] == pytest.approx(
        ours.exams["exam1"].summary()["kendall_mean"], abs=1e-9)
    lexical = next(r.tau for r in ours.exams["exam2"].rows if r.group == "all" and r.reference == "num_dist")
    assert scores["PhysScoreLexicalNumeric"]["main_score"] == pytest.approx(lexical, abs=1e-6)
    assert scores["PhysScoreProbe"]["main_score"] == pytest.approx(
        ours.exams["exam3"].summary()["kendall_mean"], abs=1e-6)
    assert scores["PhysScoreConversion"]["main_score"] == pytest.approx(
        ours.exams["conversion"].summary()["recall_at_1"], abs=1e-9)


def test_an_mteb_model_is_a_fasteval_encoder(st_model):
    """fasteval.evaluate adapts an object that follows MTEB's encoder protocol by itself."""
    import fasteval
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    wrapped = SentenceTransformerEncoderWrapper(st_model)
    via_mteb = fasteval.evaluate(wrapped, exams=(1,), bootstrap=0)
    direct = fasteval.evaluate(STReference(st_model), exams=(1,), bootstrap=0)
    assert [c.tau for c in via_mteb.exams["exam1"].cells] == [c.tau for c in direct.exams["exam1"].cells]


def test_every_entry_point_takes_an_mteb_model_through_the_one_door(st_model):
    """check, evaluate and drift take an MTEB model as they take any encoder (core.encoders.ENCODER_KINDS):
    the same numbers as the model it wraps."""
    import fasteval
    from fasteval.core.encoders import kind_of
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    wrapped = SentenceTransformerEncoderWrapper(st_model)
    assert kind_of(wrapped).name == "mteb" and kind_of(st_model).name == "sentence-transformers"
    candidates = ["2 meters", "70 centimeters", "3 kilometers"]
    via_mteb = fasteval.check(wrapped, "1 meter", candidates)
    direct = fasteval.check(STReference(st_model), "1 meter", candidates)
    assert via_mteb.tau == direct.tau and via_mteb.pacc == direct.pacc
    assert [c.similarity for c in via_mteb.candidates] == pytest.approx([c.similarity for c in direct.candidates],
                                                                        abs=1e-6)
    report = fasteval.drift(wrapped, STReference(st_model), conformance=False, resamples=0)
    assert report.worst_cosine > 0.99999 and report.verdict == "conforms"


class WrongShape:
    """An MTEB-protocol model whose encode drops a row."""

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
        n = sum(len(batch["text"]) for batch in inputs)
        return np.ones((max(n - 1, 0), 4), dtype=np.float32)


def test_wrong_shape_from_an_mteb_model_is_one_line():
    import fasteval

    with pytest.raises(InputError) as info:
        fasteval.evaluate(WrongShape(), exams=(1,), bootstrap=0)
    assert "WrongShape" in str(info.value) and "\n" not in str(info.value)


def test_without_the_extra_one_line():
    code = ("import sys; sys.modules['mteb'] = None\n"
            "import fasteval\n"
            "try:\n    fasteval.mteb.tasks()\nexcept Exception as err:\n    print(type(err).__name__, err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out.startswith("InputError") and "pip install 'fasteval[mteb]'" in out


def test_result_files_load_back_with_mteb(tmp_path):
    from fasteval.core.results.files import result_files
    from fasteval import evaluate

    result = evaluate(FakeEncoder(), exams=(1, 2, 3, "conversion"), name="org/fake", bootstrap=0)
    files = result_files(result, key="k")
    loaded = {}
    for name in ("PhysScoreMeasurementGeometry", "PhysScoreLexicalNumeric", "PhysScoreProbe", "PhysScoreConversion"):
        path = tmp_path / f"{name}.json"
        path.write_text(files[f"mteb/{name}.json"])
        loaded[name] = mteb.TaskResult.from_disk(path)
        assert loaded[name].task_name == name and loaded[name].dataset_revision == "paper-1"
    main = loaded["PhysScoreMeasurementGeometry"].scores["test"][0]["main_score"]
    assert main == pytest.approx(result.exams["exam1"].summary()["kendall_mean"], abs=1e-6)  # MTEB rounds to 6
    meta = json.loads(files["mteb/model_meta.json"])
    assert meta["name"] == "org/fake"


def test_the_direct_writer_writes_what_mteb_writes(tmp_path):
    """A sweep writes the mteb/ files itself, never importing MTEB (no torch); MTEB's own TaskResult.to_disk
    (through fasteval.mteb.task_results) writes the same content: both load with TaskResult.from_disk alike."""
    from fasteval import evaluate

    result = evaluate(FakeEncoder(), exams=(1, 2, 3, "conversion"), name="fake", bootstrap=0)
    code = ("import json, sys; sys.path.insert(0, {tests!r})\n"
            "from fakes import FakeEncoder\n"
            "from fasteval import evaluate\n"
            "from fasteval.core.results.mteb import mteb_files\n"
            "r = evaluate(FakeEncoder(), exams=(1, 2, 3, 'conversion'), name='fake', bootstrap=0)\n"
            "files = mteb_files(r)\n"
            "assert 'mteb' not in sys.modules and 'torch' not in sys.modules\n"
            "print(json.dumps(files))").format(tests=str(TESTS))
    plain = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                      check=True).stdout)
    import fasteval

    via_mteb = fasteval.mteb.task_results(result)
    assert sorted(plain) == sorted(["mteb/model_meta.json"] + [f"mteb/{t.task_name}.json" for t in via_mteb])
    for task in via_mteb:
        a, b = tmp_path / "a.json", tmp_path / "b.json"
        a.write_text(plain[f"mteb/{task.task_name}.json"])
        task.to_disk(b)
        ta, tb = mteb.TaskResult.from_disk(a), mteb.TaskResult.from_disk(b)
        assert ta.task_name == tb.task_name and ta.dataset_revision == tb.dataset_revision
        assert ta.scores["test"][0] == tb.scores["test"][0], task.task_name


def test_one_module_under_its_public_name():
    """`import fasteval.mteb`, `import fasteval.mteb as fm` and `from fasteval.mteb import tasks` as an MTEB user
    writes them (each failed with ModuleNotFoundError when fasteval.mteb was only an attribute): one module object
    under both names, one MtebEncoder class, no import hook, and it runs on first use."""
    code = ("import sys; n = len(sys.meta_path); import fasteval.mteb as fm; "
            "loaded = 'numpy' in sys.modules; "
            "from fasteval.mteb import tasks, MtebEncoder; import fasteval, fasteval.mteb; "
            "import fasteval.core.mteb as inner; "
            "print(loaded, len(sys.meta_path) - n, fm is inner is fasteval.mteb is sys.modules['fasteval.mteb'], "
            "MtebEncoder is inner.MtebEncoder, [t.metadata.name for t in tasks()][0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "0", "True", "True", "PhysScoreMeasurementGeometry"], out


def test_the_export_works_beside_mteb_on_the_current_stack(tiny_encoder):
    """mteb, sentence-transformers 6 and the export extra in one environment, on transformers >= 5.3 (issue 55: the
    export extra used to hold transformers below 4.58, and mteb's extra with it)."""
    version = importlib.metadata.version
    assert tuple(int(x) for x in version("transformers").split(".")[:2]) >= (5, 3)
    assert int(version("sentence-transformers").split(".")[0]) >= 6
    assert tuple(int(x) for x in version("mteb").split(".")[:2]) >= (2, 26)
    assert tiny_encoder.encode(["1 meter", "2 meters"]).shape[0] == 2  # exported with torch.onnx in this env
