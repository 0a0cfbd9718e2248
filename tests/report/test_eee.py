"""Every Eval Ever records of `fasteval report` (core/report/eee.py), held to the package's own validator: its
`validate` command (strict JSON, the schema's pydantic models, the datastore's path, score and deployment rules)
must pass them clean. The package needs Python >= 3.12 to install; where this Python is older, its pinned wheel is
fetched from PyPI and its validator run from it (it runs on 3.11), and where neither works the test says why."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from fakes import FakeEncoder

EEE_VERSION = "0.3.0"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report of two results: a model with an owner's id and the bootstrap, and a flat-named one without it."""
    from fasteval import evaluate
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.results.files import result_files

    root = tmp_path_factory.mktemp("results")
    smooth = evaluate(FakeEncoder(noise=0.2, tokens="chars"), name="org/fake-smooth", bootstrap=200)
    noisy = evaluate(FakeEncoder(noise=2.5, tokens=None), name="fake-noisy", bootstrap=0, exams=(1, 2))
    write_result_folder(root / smooth.model_id, result_files(smooth, key="key-smooth"))
    write_result_folder(root / noisy.model_id, result_files(noisy, key="key-noisy"))
    rep = build_report(root, out=tmp_path_factory.mktemp("rep") / "report", png=False, resamples=0)
    return rep, {"org/fake-smooth": smooth, "fake-noisy": noisy}


@pytest.fixture(scope="module")
def validator(tmp_path_factory):
    """The command that runs every-eval-ever's validator: the installed package's, else its wheel's."""
    try:
        import every_eval_ever  # noqa: F401 (installed where Python >= 3.12)

        return [sys.executable, "-m", "every_eval_ever", "validate"]
    except ImportError:
        pass
    where = tmp_path_factory.mktemp("eee")
    got = subprocess.run([sys.executable, "-m", "pip", "download", f"every-eval-ever=={EEE_VERSION}", "--no-deps",
                          "--python-version", "3.12", "--only-binary=:all:", "-d", str(where), "-q"],
                         capture_output=True, text=True)
    wheels = list(where.glob("every_eval_ever-*.whl"))
    if got.returncode != 0 or not wheels:
        pytest.skip(f"every-eval-ever's validator needs Python >= 3.12 (this is {sys.version.split()[0]}) and its "
                    f"wheel could not be fetched: {got.stderr.strip()[-200:]}")
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(where / "site")
    run = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from every_eval_ever.validator.validate import main; "
           "sys.exit(main(sys.argv[1:]))")
    return [sys.executable, "-c", run, str(where / "site")]


def records(rep):
    return {json.loads(p.read_text())["model_info"]["name"]: p
            for p in sorted((rep.out / "every-eval-ever").rglob("*.json"))}


def test_every_record_passes_the_validator_clean(report, validator):
    rep, _ = report
    found = records(rep)
    assert set(found) == {"org/fake-smooth", "fake-noisy"}
    # where the datastore keeps them: data/<collection>/<developer>/<model>/<UUID4>.json
    assert {p.relative_to(rep.out / "every-eval-ever").parts[:4] for p in found.values()} == {
        ("data", "physscore", "org", "fake-smooth"), ("data", "physscore", "local", "fake-noisy")}
    proc = subprocess.run([*validator, "--format", "json", *map(str, found.values())], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    said = json.loads(proc.stdout)
    assert len(said) == 2 and all(r["valid"] and not r["errors"] and not r["warnings"] for r in said), said


def test_each_task_reports_its_main_score_and_every_sub_metric_as_the_result_holds_them(report):
    from fasteval.core.exams import scores_of, task_exams

    rep, results = report
    for name, path in records(rep).items():
        record, result = json.loads(path.read_text()), results[name]
        assert record["eval_library"]["name"] == "fasteval" and record["eval_library"]["version"]
        assert record["eval_library"]["additional_details"]["protocol"] == "paper-1"
        got = {(r["evaluation_name"], r["metric_config"]["metric_name"]): r for r in record["evaluation_results"]}
        for task, exam in task_exams().items():
            if exam.key not in result.exams:
                assert not any(t == task for t, _ in got)
                continue
            scores = scores_of(exam, result.exams[exam.key])
            main = [m for (t, m), r in got.items()
                    if t == task and r["metric_config"]["additional_details"]["main_score"] == "true"]
            assert main == [exam.main_score] and got[(task, exam.main_score)]["score_details"]["score"] == \
                scores["main_score"]
            want = {m: v for m, v in scores.items() if m != "main_score" and v is not None}
            assert {m: got[(task, m)]["score_details"]["score"] for m in want} == want
    smooth = json.loads(records(rep)["org/fake-smooth"].read_text())
    tau = next(r for r in smooth["evaluation_results"] if r["evaluation_result_id"].endswith("Geometry/kendall_tau"))
    summary = results["org/fake-smooth"].exams["exam1"].summary()
    assert tau["score_details"]["uncertainty"]["confidence_interval"] == {
        "lower": summary["tau_ci_low"] / 100, "upper": summary["tau_ci_high"] / 100, "confidence_level": 0.95,
        "method": "percentile bootstrap over each cell's values"}
    assert tau["score_details"]["uncertainty"]["num_bootstrap_samples"] == 200
    noisy = json.loads(records(rep)["fake-noisy"].read_text())
    assert not any("uncertainty" in r["score_details"] for r in noisy["evaluation_results"]), "no bootstrap, no CI"


def test_the_hf_community_evals_file_holds_each_task_main_score(report):
    """hf-eval-results/<model id>/physscore.yaml: the YAML list a model repository's .eval_results/ takes, one entry
    a task, its value the task's MTEB main score, read back by a YAML parser as written."""
    import yaml

    from fasteval.core.exams import scores_of, task_exams

    rep, results = report
    for model, result in results.items():
        entries = yaml.safe_load((rep.out / "hf-eval-results" / model / "physscore.yaml").read_text())
        want = {t: scores_of(e, result.exams[e.key])["main_score"] for t, e in task_exams().items()
                if e.key in result.exams}
        assert {e["dataset"]["task_id"]: e["value"] for e in entries} == want
        assert all(e["dataset"]["id"] == f"fasteval/{e['dataset']['task_id']}" and e["source"]["name"] == "fasteval"
                   and len(e["date"]) == 10 and "notes" not in e for e in entries)


def test_the_records_name_a_model_as_its_result_does_and_ask_no_registry(tmp_path):
    """A result records its model's Hugging Face id when it is made (the registry's, then): the Every Eval Ever
    record and the HF entries name the model by what results.json holds, so the same results give the same records
    on another version, whose registry may say otherwise. A result written before the id was recorded is named by
    its model's name alone (the registry installed at report time is not asked)."""
    from fasteval import evaluate
    from fasteval.core.io import read_json, write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.results.files import result_files

    made = evaluate(FakeEncoder(noise=0.2, tokens="chars"), name="all-MiniLM-L6-v2", bootstrap=0, exams=(1,))
    assert made.hf_id == "sentence-transformers/all-MiniLM-L6-v2", "recorded from the registry when made"
    root = tmp_path / "results"
    for folder, hf_id in (("then", "an-org-of-then/all-MiniLM-L6-v2"), ("before", None)):
        files = result_files(made, key=f"key-{folder}")
        data = json.loads(files["results.json"])
        assert data["hf_id"] == made.hf_id
        data["hf_id"] = hf_id  # what that version's registry said, or nothing (written before it was recorded)
        data["settings"]["key"] = f"key-{folder}"  # as a sweep's job records it
        files["results.json"] = json.dumps(data)
        write_result_folder(root / folder, files)
    rep = build_report(root, out=tmp_path / "rep", png=False, resamples=0)
    ids = {read_json(p)["eval_library"]["additional_details"]["result_key"]: read_json(p)["model_info"]
           for p in (rep.out / "every-eval-ever").rglob("*.json")}
    assert ids["key-then"]["id"] == "an-org-of-then/all-MiniLM-L6-v2"
    assert ids["key-then"]["developer"] == "an-org-of-then"
    assert ids["key-then"]["additional_details"]["model_availability"] == "open_weights"
    assert ids["key-before"]["id"] == "all-MiniLM-L6-v2" and ids["key-before"]["developer"] == "local"
    assert ids["key-before"]["additional_details"]["model_availability"] == "unknown"
    assert (rep.out / "hf-eval-results" / "an-org-of-then" / "all-MiniLM-L6-v2" / "physscore.yaml").is_file()


def test_a_report_reads_each_results_json_once(monkeypatch, tmp_path):
    """The typed result, the long table and the records come from one reading of each file."""
    import fasteval.core.io as io
    import fasteval.core.results.read as read
    from fasteval import evaluate
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.results.files import result_files

    for name in ("org/one", "org/two"):
        made = evaluate(FakeEncoder(noise=0.2, tokens="chars"), name=name, bootstrap=0, exams=(1,))
        write_result_folder(tmp_path / "results" / made.model_id, result_files(made, key=f"key-{made.model_id}"))
    reads: list = []
    real = io.read_json

    def counted(path, *args, **kwargs):
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(io, "read_json", counted)
    monkeypatch.setattr(read, "read_json", counted)
    rep = build_report(tmp_path / "results", out=tmp_path / "rep", png=False, resamples=0)
    assert (rep.out / "results-long.csv").is_file() and list((rep.out / "every-eval-ever").rglob("*.json"))
    results = sorted(r for r in reads if r.endswith("results.json"))
    assert len(results) == 2 and len(set(results)) == 2, reads
