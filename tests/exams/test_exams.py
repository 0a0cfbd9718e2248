"""The three exams against straightforward re-implementations of PROTOCOL.md 1.4, 2.2-2.3 and 3.3-3.5 with the
reference libraries (scipy, rapidfuzz, scikit-learn), on a deterministic fake encoder (no model needed)."""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy.stats import kendalltau

from fasteval.core import protocol as P
from fasteval.core.embeddings import EmbeddingTable, embed_groups
from fasteval.core.errors import InputError

from fakes import FakeEncoder
from naive import naive_pacc, sims_reference


def pacc_35(d, score) -> float:
    return naive_pacc(d, score, value_ties="as_greater")


@pytest.fixture(scope="module")
def table():
    from fasteval.core.protocol import exam1_groups
    from fasteval.core.protocol import exam2_groups

    return embed_groups(FakeEncoder(), exam1_groups() + exam2_groups())


def test_each_text_embedded_once_in_paper_groups():
    from fasteval.core.protocol import exam1_groups

    enc = FakeEncoder()
    groups = exam1_groups()
    table = embed_groups(enc, groups)
    flat = [t for call in enc.calls for t in call]
    assert len(flat) == len(set(flat)) == len(table)
    assert enc.calls[0] == groups[0], "the first cell is one encode call, in range order"
    np.testing.assert_allclose(np.linalg.norm(table[groups[0]], axis=1), 1, atol=1e-6)


def test_embed_groups_rejects_bad_encoders():
    from fasteval import evaluate

    with pytest.raises(InputError, match="encode"):  # the door refuses what has no encode
        evaluate(object())

    class Wrong:
        def encode(self, texts):
            return np.zeros((len(texts) + 1, 3))

    with pytest.raises(InputError, match="shape"):
        embed_groups(Wrong(), [["a", "b"]])

    class NaNs:
        def encode(self, texts):
            return np.full((len(texts), 3), np.nan)

    with pytest.raises(InputError, match="NaN"):
        embed_groups(NaNs(), [["a"]])


@pytest.mark.parametrize("rows, message", [
    (lambda texts: [[0.5] * (3 + i % 2) for i, _ in enumerate(texts)],
     r"Ragged.encode\(\) returned a list of list of lengths 3..4, not numbers of one shape"),
    (lambda texts: ["0.1 0.2"] * len(texts), r"Ragged.encode\(\) returned a list of str, not numbers of one shape"),
    (lambda texts: np.zeros((len(texts), 8)), r"Ragged.encode\(\) returned zero vectors for all 21 texts \(the first "
                                              r"'0 meters'\)"),
], ids=["ragged", "strings", "all-zero"])
def test_an_encoder_of_a_ragged_list_strings_or_zeros_is_one_line_and_warns_nothing(rows, message, recwarn):
    """A library encoder that returns a ragged list or strings met numpy's bare ValueError; an all-zero one gave
    tau NaN with numpy's RuntimeWarning (issue 66, item 9): each is one FastevalError naming the encoder and the
    fix, and no warning leaks."""
    from fasteval import evaluate

    class Ragged:
        def encode(self, texts):
            return rows(texts)

    with pytest.raises(InputError, match=message) as caught:
        evaluate(Ragged(), name="Ragged", exams=(1,), bootstrap=0)
    assert "Fix: return one row of floats" in str(caught.value) or "zero vector has no direction" in str(caught.value)
    assert not [w for w in recwarn if "numpy" in str(w.filename) or issubclass(w.category, RuntimeWarning)]


def test_exam1_against_scipy(table):
    from fasteval.core.exams.geometry import run_exam1

    result = run_exam1(table)
    for cell, got in zip(P.exam1_cells(), result.cells):
        s = sims_reference(table[cell.texts])[0].astype(np.float64)
        values = cell.values
        tau = kendalltau(values, -s).statistic
        n = len(values)
        pacc = sum(s[i] > s[j] for i, j in combinations(range(n), 2)) / (n * (n - 1) / 2)
        assert got.tau == pytest.approx(tau, abs=1e-12)
        assert got.pacc == pytest.approx(pacc, abs=1e-12)
    summary = result.summary()
    assert summary["tau"] == pytest.approx(np.mean([c.tau for c in result.cells]) * 100, abs=1e-9)
    assert len(result.heatmaps) == 20 and len(result.digits_words["meter"]) == 12
    assert len(result.conversions) == 11 and len(result.conversions[0].smoothed) == 40


def test_round_half_up_on_exact_fractions():
    from fractions import Fraction

    from fasteval.core.exams.geometry import round_half_up

    assert round_half_up(Fraction(52725, 1000)) == 52.73
    assert round_half_up(Fraction(-7335, 1000)) == -7.34
    assert round_half_up(float("nan")) is None


def test_exam2_against_rapidfuzz_and_scipy(table):
    from rapidfuzz.distance import Levenshtein

    from fasteval.core.exams.lexical import run_exam2

    items = P.exam2_items()
    texts = [it.text for it in items]
    token_ids = FakeEncoder().token_ids(texts)
    result = run_exam2(table, token_ids)
    sims = sims_reference(table[texts]).astype(np.float64)
    pairs = list(combinations(range(len(items)), 2))
    sim = np.array([sims[i, j] for i, j in pairs])
    dist = {
        "char_lev": np.array([Levenshtein.distance(texts[i], texts[j]) for i, j in pairs], dtype=float),
        "token_lev": np.array([Levenshtein.distance(token_ids[i], token_ids[j]) for i, j in pairs], dtype=float),
        "num_dist": np.array([abs(items[i].value - items[j].value) for i, j in pairs]),
    }
    label = {
        "overall": ["all"] * len(pairs),
        "type_pair": [f"{items[i].kind}-{items[j].kind}" for i, j in pairs],
        "same_sign": [str(items[i].sign == items[j].sign) for i, j in pairs],
        "sign_pair": [f"{items[i].sign}-{items[j].sign}" for i, j in pairs],
    }
    assert len(result.rows) == 30
    sizes = {(r.group_type, r.group): r.n_pairs for r in result.rows}
    assert [sizes[k] for k in [("overall", "all"), ("type_pair", "float-float"), ("type_pair", "float-int"),
                                ("type_pair", "int-int"), ("same_sign", "False"), ("same_sign", "True"),
                                ("sign_pair", "negative-negative"), ("sign_pair", "negative-positive"),
                                ("sign_pair", "positive-negative"), ("sign_pair", "positive-positive")]] == [
        4950, 1225, 2500, 1225, 2491, 2459, 1378, 1327, 1164, 1081]  # PROTOCOL.md 5.3
    for row in result.rows:
        mask = np.array(label[row.group_type]) == row.group
        expected = kendalltau(sim[mask], -dist[row.reference][mask]).statistic
        assert row.tau == pytest.approx(expected, abs=1e-12), (row.group, row.reference)
    pivot = result.pivot()
    assert list(pivot) == ["char_lev", "num_dist", "token_lev"]


def test_exam2_without_tokenizer(table):
    from fasteval.core.exams.lexical import run_exam2

    result = run_exam2(table, None)
    assert all(np.isnan(r.tau) for r in result.rows if r.reference == "token_lev")
    assert not any(np.isnan(r.tau) for r in result.rows if r.reference == "char_lev")


def test_exam3_against_sklearn(table):
    from sklearn.linear_model import RidgeCV

    from fasteval.core.exams.probe import run_exam3

    result = run_exam3(table)
    assert [(r.unit, r.range) for r in result.rows] == [(q, r) for r in P.RANGE_NAMES for q in P.QUANTITIES]
    emb = {(c.quantity, c.range_name): table[c.texts] for c in P.exam1_cells()}
    for range_name in ("local_0_10", "scientific"):  # one 21-value and one 25-value range keep this quick
        values = P.range_values(range_name)
        per_q = {q: {"tp": [], "ts": [], "pp": [], "ps": []} for q in P.QUANTITIES}
        for s in range(P.PROBE_N_SPLITS):
            test, train = P.probe_split(len(values), s)
            X, y = [], []
            for q in P.QUANTITIES:
                for a, b in combinations(train, 2):
                    X.append(np.abs(emb[(q, range_name)][a] - emb[(q, range_name)][b]))
                    y.append(np.log1p(abs(values[a] - values[b])))
            probe = RidgeCV(alphas=P.PROBE_ALPHAS).fit(np.array(X), np.array(y))
            for q in P.QUANTITIES:
                e = emb[(q, range_name)]
                sims = sims_reference(e)
                taus_p, taus_s, paccs_p, paccs_s = [], [], [], []
                for anchor in test:
                    others = [o for o in test if o != anchor]
                    d = np.abs(values[others] - values[anchor])
                    sp = -probe.predict(np.abs(e[others] - e[anchor]))
                    ss = sims[anchor, others].astype(np.float64)
                    taus_p.append(kendalltau(d, -sp).statistic)
                    taus_s.append(kendalltau(d, -ss).statistic)
                    paccs_p.append(pacc_35(d, sp))
                    paccs_s.append(pacc_35(d, ss))
                per_q[q]["tp"].append(np.nanmean(taus_p))
                per_q[q]["ts"].append(np.nanmean(taus_s))
                per_q[q]["pp"].append(np.mean(paccs_p))
                per_q[q]["ps"].append(np.mean(paccs_s))
        for q in P.QUANTITIES:
            row = next(r for r in result.rows if r.unit == q and r.range == range_name)
            assert row.kendall == pytest.approx(np.mean(per_q[q]["tp"]), abs=1e-8)
            assert row.kendall_cosine == pytest.approx(np.mean(per_q[q]["ts"]), abs=1e-12)
            assert row.pairwise == pytest.approx(np.mean(per_q[q]["pp"]), abs=1e-8)
            assert row.pairwise_cosine == pytest.approx(np.mean(per_q[q]["ps"]), abs=1e-12)
            assert row.kendall_sd_splits == pytest.approx(np.std(per_q[q]["tp"], ddof=1), abs=1e-8)
            n_train = {21: 14, 25: 16}[len(values)]
            assert (row.n_train_items, row.n_test_items, row.n_train_pairs) == (
                n_train, len(values) - n_train, {21: 364, 25: 480}[len(values)])  # PROTOCOL.md 5.4


def test_evaluate_all_exams_and_files(table):
    import json

    from fasteval.core.results.files import result_files
    from fasteval import evaluate

    result = evaluate(FakeEncoder(), name="org/fake-model")
    assert set(result.exams) == {"exam1", "exam2", "exam3"} and result.model_id == "fake_model"
    files = result_files(result)
    mteb = {k for k in files if k.startswith("mteb/")}
    assert mteb == {"mteb/model_meta.json", "mteb/PhysScoreMeasurementGeometry.json",
                    "mteb/PhysScoreLexicalNumeric.json", "mteb/PhysScoreProbe.json"}
    task = json.loads(files["mteb/PhysScoreMeasurementGeometry.json"])
    entry = task["scores"]["test"][0]
    assert {"main_score", "hf_subset", "languages"} <= set(entry) and entry["hf_subset"] == "default"
    assert entry["main_score"] == pytest.approx(result.exams["exam1"].summary()["kendall_mean"])
    assert set(files) - mteb == {"results.json", "fake_model_benchmark_full.csv", "fake_model_benchmark_summary.csv",
                          "fake_model_lexical.csv", "fake_model_benchmark_full_regression_experiment.csv",
                          "fake_model_benchmark_summary_regression_experiment.csv",
                          "fake_model_benchmark_intervals_variants.csv"}
    data = json.loads(files["results.json"])
    row = next(r for r in result.exams["exam2"].rows if r.reference == "char_lev" and r.group == "all")
    assert data["exams"]["exam2"]["summary"]["char_lev_all"] == pytest.approx(row.tau * 100)
    assert row.n_pairs == 4950 and -100 <= data["exams"]["exam2"]["summary"]["char_lev_all"] <= 100
    assert files["fake_model_lexical.csv"].count("\n") == 31
    with pytest.raises(InputError):
        evaluate(FakeEncoder(), exams=[4])
    with pytest.raises(InputError):
        evaluate(FakeEncoder(), similarity="manhattan")


@pytest.mark.parametrize("metric", ["cos", "dot", "l2"])
def test_each_similarity_scores_with_its_own_formula(metric):
    """On known vectors whose cos, dot and l2 orders differ, each metric's tau equals scipy on numpy's values
    of that metric: a dot or l2 path that silently computed cos fails here."""
    from fasteval.core.exams.geometry import run_exam1

    rng = np.random.default_rng(7)
    table = EmbeddingTable()
    for cell in P.exam1_cells():
        n = len(cell.texts)
        # Unnormalised rows with norms spread over 0.2..5: cos ignores the norm, dot and l2 do not.
        direction = rng.normal(size=(n, 8))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        table.add(cell.texts, (direction * rng.uniform(0.2, 5.0, size=(n, 1))).astype(np.float32))
    result = run_exam1(table, metric=metric, keep_matrices=False)
    differs = 0
    for cell, got in zip(P.exam1_cells(), result.cells):
        e = table[cell.texts].astype(np.float64)
        unit = e / np.linalg.norm(e, axis=1, keepdims=True)
        numpy_sims = {"cos": unit @ unit[0], "dot": e @ e[0], "l2": -np.linalg.norm(e - e[0], axis=1)}
        expected = kendalltau(cell.values, -numpy_sims[metric]).statistic
        assert got.tau == pytest.approx(expected, abs=1e-12), (metric, cell)
        differs += any(abs(kendalltau(cell.values, -numpy_sims[m]).statistic - expected) > 1e-9
                       for m in numpy_sims if m != metric)
    assert differs >= 15, "the vectors must tell the three metrics apart"


def test_strict_json_nan_is_null():
    from fasteval.core.io import dumps

    assert dumps({"a": float("nan"), "b": np.float32(1.5), "c": [np.inf]}).split() == [
        "{", '"a":', "null,", '"b":', "1.5,", '"c":', "[", "null", "]", "}"]


def test_empty_table_lookup():
    assert EmbeddingTable(dim=3)[[]].shape == (0, 3)
