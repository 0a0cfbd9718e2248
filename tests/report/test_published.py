"""The authors' published numbers inside fasteval (issue 69): the shipped data is the transcription it came from,
what is derived from it is the protocol's formula, a run of one of the 24 is compared cell by cell (one flipped
near-tie named as such), every run is placed among the 24, and the report shows the 24 as published, never as a
measurement."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from fractions import Fraction
from math import comb

import pytest

from fakes import ROOT, FakeEncoder
from fasteval.core import protocol as P
from fasteval.core.published import DATA_FILE, DATA_SHA256, place, published, published_model, reproduction


def test_the_shipped_numbers_are_the_transcription_they_came_from():
    from fasteval.core.published import SOURCE

    assert hashlib.sha256(DATA_FILE.read_bytes()).hexdigest() == DATA_SHA256
    said = json.loads(DATA_FILE.read_text())["source"]
    assert SOURCE["commit"] in said and SOURCE["notebook"] in said, "the source named in the code is the file's"


def test_the_24_are_the_protocols_cells_and_table1_is_derived_as_the_notebook_printed():
    data = json.loads(DATA_FILE.read_text())
    models = published()
    assert len(models) == 24 and list(models) == list(data["models"])
    cells = {f"{c.quantity}|{c.range_name}": comb(len(c.values), 2) for c in P.exam1_cells()}
    for model_id, model in models.items():
        assert {c: pairs for c, (_, pairs) in model.cells.items()} == cells, model_id
        assert all(k % 2 == 0 and abs(k) <= pairs for k, pairs in model.cells.values())  # PROTOCOL.md 5.2
        row = model.table1(exact=True)
        tau = sum((Fraction(k, n) for k, n in model.cells.values()), Fraction(0)) / 20
        assert row["tau"] == 100 * tau and row["pacc"] == 50 * (1 + tau) and row["avg"] == 75 * tau + 25
        printed = data["models"][model_id]["table1"]
        assert {k: round(float(v), 4) for k, v in row.items()} == printed, model_id
    assert models["all_MiniLM_L6_v2"].table1()["tau"] == pytest.approx(36.9667, abs=5e-5)


def test_one_of_the_24_is_found_by_any_name_a_user_passes():
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "all_MiniLM_L6_v2",
                 "models/all-MiniLM-L6-v2", "/data/all-MiniLM-L6-v2/"):
        found = published_model(name)
        assert found is not None and found.model_id == "all_MiniLM_L6_v2", name
    assert published_model("bge-m3").hf_id == "BAAI/bge-m3"
    assert published_model("my-model") is None and published_model("all-MiniLM-L12-v2") is None


def test_a_table1_tau_is_placed_among_the_24():
    assert place(38.2) == "13 of 25, between multilingual-e5-base and bge-m3"
    assert place(99).startswith("first of the paper's 24") and place(0).startswith("below all of the paper's 24")
    assert place(36.9667, exclude="all_MiniLM_L6_v2") == "14 of 24, between bge-m3 and granite-embedding-english-r2"


def _as_published(result, model_id: str, moved: dict[str, int] | None = None):
    """``result`` with every Exam 1 cell's k set to the published one (``moved``: cell -> k added)."""
    model = published()[model_id]
    cells = []
    for c in result.exams["exam1"].cells:
        key = f"{c.quantity}|{c.range_name}"
        k, pairs = model.cells[key]
        k += (moved or {}).get(key, 0)
        cells.append(dataclasses.replace(c, tau_numerator=k, tau=k / pairs))
    exams = {**result.exams, "exam1": dataclasses.replace(result.exams["exam1"], cells=cells)}
    return dataclasses.replace(result, exams=exams)


@pytest.fixture(scope="module")
def minilm_named():
    from fasteval import evaluate

    return evaluate(FakeEncoder(noise=0.3), name="all-MiniLM-L6-v2", exams=(1,), bootstrap=0)


def test_a_run_that_meets_every_cell_reads_20_of_20_and_a_flipped_near_tie_is_named(minilm_named):
    same = reproduction(_as_published(minilm_named, "all_MiniLM_L6_v2"))
    assert (same.cells_equal, same.differing, same.reproduced) == (20, [], True)
    assert same.line() == "reproduction against the authors' all-MiniLM-L6-v2: 20 of 20 Exam 1 cells equal"
    flipped = reproduction(_as_published(minilm_named, "all_MiniLM_L6_v2", {"liter|scientific": 2}))
    assert flipped.cells_equal == 19 and flipped.flipped_near_tie == "liter|scientific" and flipped.reproduced
    assert "(liter|scientific: one near-tie pair flipped, allowed by PROTOCOL.md 5)" in flipped.line()
    off = reproduction(_as_published(minilm_named, "all_MiniLM_L6_v2", {"meter|scientific": -4,
                                                                        "second|local_0_10": 2}))
    assert off.cells_equal == 18 and not off.reproduced and off.flipped_near_tie is None
    assert "differ: meter|scientific (2 pairs), second|local_0_10 (1 pair)" in off.line()


def test_another_form_is_labelled_another_protocol_has_nothing_to_meet_and_other_models_none(minilm_named):
    from fasteval import evaluate

    int8 = evaluate(FakeEncoder(noise=0.3), name="all-MiniLM-L6-v2", exams=(1,), bootstrap=0,
                    vector_quantization="int8")
    said = reproduction(int8)
    assert said.label == "int8" and "scored as int8 (what the form moves)" in said.line()
    other = evaluate(FakeEncoder(noise=0.3), name="all-MiniLM-L6-v2", exams=(1,), bootstrap=0, protocol="formats")
    assert "has no published numbers to meet" in reproduction(other)
    assert reproduction(dataclasses.replace(minilm_named, model="my-model")) is None


def test_the_report_shows_the_24_as_published_with_the_runs_among_them_and_keeps_them_out_of_measured_files(
        minilm_named, tmp_path):
    import csv

    from fasteval import evaluate
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.results.files import result_files

    root = tmp_path / "results"
    mine = evaluate(FakeEncoder(noise=0.5), name="my-model", exams=(1,), bootstrap=0)
    for result in (minilm_named, mine):
        write_result_folder(root / result.model_id, result_files(result))
    saved = json.loads((root / "my_model" / "results.json").read_text())
    assert "reproduction" not in saved["published"] and saved["published"]["place"].endswith(
        place(mine.exams["exam1"].summary()["tau"]).split(", ", 1)[1])
    rep = build_report(root, out=tmp_path / "R", png=True, dpi=40, resamples=0)
    assert (rep.out / "figures" / "_all_published.png").read_bytes().startswith(b"\x89PNG")
    rows = list(csv.DictReader((rep.out / "published.csv").open()))
    published_rows = [r for r in rows if r["source"] == "published"]
    assert len(published_rows) == 24 and {r["model"] for r in rows if r["source"] == "this report"} == {
        "all-MiniLM-L6-v2", "my-model"}
    taus = [float(r["tau"]) for r in rows]
    assert taus == sorted(taus, reverse=True)
    for r in published_rows:  # nothing printed as published differs from the notebook's numbers
        model = published_model(r["model"])
        assert float(r["tau"]) == pytest.approx(float(model.table1()["tau"]), abs=1e-9)
    assert "| LaBSE | published | PT1 | 51.31 | 75.66 | 63.49 |" in (rep.out / "published.md").read_text()
    long_models = {r["model"] for r in csv.DictReader((rep.out / "results-long.csv").open())}
    assert long_models == {"all-MiniLM-L6-v2", "my-model"}, "a published row is never written as a measurement"
    assert len(list((rep.out / "every-eval-ever").rglob("*.json"))) == 2


def test_the_docs_leaderboard_is_generated_from_the_data():
    from fasteval.core.published import LEADERBOARD_BEGIN, LEADERBOARD_END, leaderboard_markdown

    page = (ROOT / "docs" / "published.md").read_text()
    shown = page.split(LEADERBOARD_BEGIN + "\n", 1)[1].split(LEADERBOARD_END, 1)[0]
    assert shown == leaderboard_markdown()
    assert "| 14 | [all-MiniLM-L6-v2](https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2) | baseline | " \
           "36.97 | 68.48 | 52.73 |" in shown
