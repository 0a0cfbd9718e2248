"""Bootstrap intervals, the caveat variants with their random baselines, and `fasteval compare`, against
scipy and naive references."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from scipy.stats import kendalltau

from fasteval.core import protocol as P
from fasteval.core.exams import statistics as S

from fakes import TESTS, FakeEncoder, one_line_error, run_cli
from naive import naive_pacc


def random_similarity(n: int, rng: np.random.Generator) -> np.ndarray:
    """A symmetric random similarity matrix: uniform(0, 1) off the diagonal, 1 on it (a model's self-similarity)."""
    upper = np.triu(rng.uniform(0, 1, size=(n, n)), k=1)
    return upper + upper.T + np.eye(n)


def simulated_random_baselines(cell_values: list, draws: int, seed: int = 12345):
    """``S.random_baselines`` by drawing ``draws`` random similarity matrices per cell: (means, standard errors),
    x100: the check of its closed forms."""
    from fasteval.core.kernels.kendall import pairwise_accuracy

    rng = np.random.default_rng(seed)
    samples = {name: np.empty((len(cell_values), draws)) for name in (*S.VARIANTS, "pacc")}
    for k, values in enumerate(cell_values):
        values = np.asarray(values, dtype=np.float64)
        for d in range(draws):
            m = random_similarity(len(values), rng)
            for name, variant in S.VARIANTS.items():
                samples[name][k, d] = variant(values, m)
            samples["pacc"][k, d] = pairwise_accuracy(values, m[0])
    means = {name: float(np.nanmean(x) * 100) for name, x in samples.items()}
    errors = {name: float(np.nanstd(np.nanmean(x, axis=0), ddof=1) / np.sqrt(draws) * 100)
              for name, x in samples.items()}
    return means, errors


def test_bootstrap_indices_keep_the_anchor_and_are_seeded():
    idx = S.bootstrap_indices(21, 500, cell=3)
    assert idx.shape == (500, 21) and (idx[:, 0] == 0).all()
    assert idx[:, 1:].min() >= 1 and idx[:, 1:].max() <= 20
    np.testing.assert_array_equal(idx, S.bootstrap_indices(21, 500, cell=3))
    assert not np.array_equal(idx, S.bootstrap_indices(21, 500, cell=4)), "cells draw independently"
    # The first resamples do not depend on how many are drawn (a prefix of a longer run).
    assert (S.bootstrap_indices(21, 500, cell=3) != S.bootstrap_indices(21, 50, cell=3)[0]).any()


def test_resampled_tau_and_pacc_equal_scipy_and_the_naive_rule_ties_included():
    rng = np.random.default_rng(0)
    values = P.range_values("log_1_100k")
    sims = np.round(rng.uniform(0, 1, size=len(values)), 2)  # rounding adds similarity ties
    idx = S.bootstrap_indices(len(values), 300, cell=0)
    taus, paccs = S.resampled_cell(values, sims, idx)
    for r in range(0, 300, 7):
        x, s = values[idx[r]], sims[idx[r]]
        assert taus[r] == pytest.approx(kendalltau(x, -s).statistic, abs=1e-12)
        assert paccs[r] == pytest.approx(naive_pacc(x, s, "skip"), abs=1e-12)
    assert any(len(np.unique(values[row])) < len(row) for row in idx[:20]), "the draws repeat items"


def _table():
    from fasteval.core.embeddings import embed_groups

    return embed_groups(FakeEncoder(noise=0.4), P.exam1_groups())


def test_intervals_contain_the_point_estimates_and_are_reproducible():
    from fasteval.core.exams.geometry import run_exam1

    table = _table()
    first = run_exam1(table, keep_matrices=False, bootstrap=2000)
    s = first.summary()
    for name in ("tau", "pacc", "avg"):
        assert s[f"{name}_ci_low"] < s[name] < s[f"{name}_ci_high"], name
    for cell in first.cells:
        assert cell.tau_ci_low <= cell.tau <= cell.tau_ci_high
        assert cell.pacc_ci_low <= cell.pacc <= cell.pacc_ci_high
    again = run_exam1(table, keep_matrices=False, bootstrap=2000)
    assert again.intervals == first.intervals, "seeded: a rerun gives the same interval"
    off = run_exam1(table, keep_matrices=False, bootstrap=0)
    assert off.intervals == {} and off.cells[0].tau_ci_low is None
    assert {k: v for k, v in off.summary().items() if not k.endswith(("_ci_low", "_ci_high"))} == \
        {k: v for k, v in s.items() if not k.endswith(("_ci_low", "_ci_high"))}, "the paper's numbers stay"


def test_model_interval_is_the_percentile_of_resampled_cell_means():
    from fasteval.core.exams.geometry import run_exam1

    table = _table()
    result = run_exam1(table, keep_matrices=True, bootstrap=1000)
    rows = [np.array(result.heatmaps[f"{c.quantity}/{c.range_name}"][0]) for c in P.exam1_cells()]
    means = []
    for b in range(1000):
        taus = []
        for k, (cell, row) in enumerate(zip(P.exam1_cells(), rows)):
            pick = S.bootstrap_indices(len(cell.values), 1000, cell=k)[b]
            taus.append(kendalltau(cell.values[pick], -row[pick]).statistic)
        means.append(np.mean(taus) * 100)
    assert result.intervals["tau_ci_low"] == pytest.approx(np.percentile(means, 2.5), abs=1e-9)
    assert result.intervals["tau_ci_high"] == pytest.approx(np.percentile(means, 97.5), abs=1e-9)


def test_variants_against_scipy():
    rng = np.random.default_rng(1)
    values = P.range_values("sign_split")
    m = random_similarity(len(values), rng)
    assert S.strict_tau(values, m) == pytest.approx(kendalltau(values[1:], -m[0][1:]).statistic)
    expected = np.mean([kendalltau(np.abs(np.delete(values, a) - values[a]), -np.delete(m[a], a)).statistic
                        for a in range(len(values))])
    assert S.all_anchors_tau(values, m) == pytest.approx(expected)
    assert S.paper_tau(values, m) == pytest.approx(kendalltau(values, -m[0]).statistic)


def test_random_baselines_match_their_expectations():
    """Under random similarities with self-similarity 1, the anchor's n - 1 pairs are always right: E[tau] =
    2 / n and E[PACC] = 1/2 + 1/n per cell; the strict and all-anchors variants expect 0."""
    b = S.random_baselines()
    ns = [len(P.range_values(r)) for r in P.RANGE_NAMES]
    assert b["tau"] == pytest.approx(100 * np.mean([2 / n for n in ns]), abs=0.8)
    assert b["pacc"] == pytest.approx(100 * np.mean([0.5 + 1 / n for n in ns]), abs=0.4)
    assert abs(b["strict_tau"]) < 0.8 and abs(b["all_anchors_tau"]) < 0.8


def test_p_value_and_holm_by_hand():
    from fasteval.core.report.compare import bootstrap_p_value, holm

    assert bootstrap_p_value(np.array([1.0] * 99)) == pytest.approx(2 / 100)  # none on the other side
    assert bootstrap_p_value(np.array([-1.0, 1.0, 2.0, 3.0])) == pytest.approx(2 * 2 / 5)
    assert bootstrap_p_value(np.zeros(10)) == 1.0
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep
    from fakes import CountingEncoder

    def loader(name, **options):
        return CountingEncoder(name, noise={"good": 0.1, "fair": 0.5, "poor": 3.0}[name])

    out = tmp_path_factory.mktemp("sweep")
    run_sweep([Job(n, exams=(1,), bootstrap=2000) for n in ("good", "fair", "poor")], out, loader, cache_root=False)
    # another similarity
    run_sweep([Job("good", exams=(1,), similarity="l2", bootstrap=0)], out, loader, cache_root=False)
    return out


def test_compare_is_paired_and_consistent(sweep_dir):
    from fasteval.core.report.compare import compare
    from fasteval.core.report.entries import load_results

    skipped = []
    comparison = compare(load_results(sweep_dir), resamples=2000, notes=skipped)
    assert sorted(comparison.models) == ["fair", "good", "poor"]
    assert any("similarity l2" in line for line in skipped), skipped
    by_pair = {(p.model_a, p.model_b): p for p in comparison.pairs}
    assert len(by_pair) == 3
    for p in comparison.pairs:
        assert p.delta_tau == pytest.approx(comparison.taus[p.model_a] - comparison.taus[p.model_b])
        assert p.ci_low <= p.delta_tau <= p.ci_high and 0 <= p.p_value <= p.p_holm <= 1
    good_poor = next(p for p in comparison.pairs if {p.model_a, p.model_b} == {"good", "poor"})
    assert good_poor.significant and abs(good_poor.delta_tau) > 10
    settings = [json.loads(f.read_text())["settings"] for f in sweep_dir.glob("good/*/results.json")]
    cos = next(s for s in settings if s["similarity"] == "cos")
    assert cos["bootstrap"] == {"resamples": 2000, "seed": S.BOOTSTRAP_SEED, "level": 0.95}
    assert "bootstrap" not in next(s for s in settings if s["similarity"] == "l2"), "off: not in the key"


def test_another_run_of_a_model_is_not_another_model(sweep_dir, tmp_path):
    """A model's other run (here: normalized quantities) beside three models: compare still compares 3 models with
    the same pairs and Holm p-values as without it (it counted as a 4th model and widened Holm's family), and
    compares the run with its own model apart; the CLI, its files and the report's tables say the same."""
    import shutil

    from fasteval.core.report.build import build_report
    from fasteval.core.report.compare import compare
    from fasteval.core.report.entries import load_results
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep
    from fakes import CountingEncoder

    with_run = tmp_path / "with-run"
    shutil.copytree(sweep_dir, with_run)
    run_sweep([Job("good", exams=(1,), normalize_quantities=True, bootstrap=0)], with_run,
              lambda name, **o: CountingEncoder(name, noise=0.1), cache_root=False)
    alone, both = compare(load_results(sweep_dir), resamples=500), compare(load_results(with_run), resamples=500)
    assert both.models == alone.models and len(both.pairs) == 3
    assert [(p.model_a, p.model_b, p.p_value, p.p_holm) for p in both.pairs] == \
        [(p.model_a, p.model_b, p.p_value, p.p_holm) for p in alone.pairs]
    (run,) = both.runs
    assert (run.model_a, run.model_b) == ("good [normalized]", "good") and run.p_holm == run.p_value
    assert run.delta_tau == pytest.approx(both.taus["good [normalized]"] - both.taus["good"])
    proc = run_cli(["compare", with_run, "--out", tmp_path / "cmp", "--bootstrap", "500", "--no-png"])
    assert proc.returncode == 0, proc.stderr
    assert "Comparison of 3 models (and 1 other run of a model, apart)" in proc.stdout
    assert "Other runs of a model against their own model" in proc.stdout
    runs_csv = list(csv.DictReader(io.StringIO((tmp_path / "cmp" / "comparison_runs.csv").read_text())))
    assert [(r["model_a"], r["model_b"]) for r in runs_csv] == [("good [normalized]", "good")]
    assert len(list(csv.DictReader(io.StringIO((tmp_path / "cmp" / "comparison.csv").read_text())))) == 3
    rep = build_report(with_run, out=tmp_path / "rep", png=False, resamples=500)
    assert len(rep.tables["comparison"].rows) == 3 and len(rep.tables["comparison_runs"].rows) == 1


def test_paired_bootstrap_of_a_model_and_a_near_copy_is_narrow():
    """Pairing: two models whose similarities differ by tiny noise have a Δτ interval far narrower than
    either model's own τ interval (an unpaired bootstrap would add the two widths)."""
    from fasteval.core.exams.statistics import percentile_interval, resample_exam1

    rng = np.random.default_rng(3)
    rows_a = [rng.uniform(0, 1, len(c.values)) for c in P.exam1_cells()]
    rows_b = [r + rng.normal(0, 0.01, len(r)) for r in rows_a]
    ta, tb = resample_exam1(rows_a, 2000).table1()[0], resample_exam1(rows_b, 2000).table1()[0]
    own = np.subtract(*percentile_interval(ta)[::-1])
    paired = np.subtract(*percentile_interval(ta - tb)[::-1])
    assert paired < own / 3


def test_cli_compare_writes_files_and_bad_input_is_one_line(sweep_dir, tmp_path):
    proc = run_cli(["compare", sweep_dir, "--out", tmp_path / "cmp", "--bootstrap", "500"])
    assert proc.returncode == 0, proc.stderr
    assert "good" in proc.stdout and "p (Holm)" in proc.stdout
    rows = list(csv.DictReader(io.StringIO((tmp_path / "cmp" / "comparison.csv").read_text())))
    assert len(rows) == 3 and list(rows[0]) == ["model_a", "model_b", "delta_tau", "ci_low", "ci_high", "p_value",
                                                "p_holm"]
    assert (tmp_path / "cmp" / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    one_model = tmp_path / "one"
    (one_model / "good").mkdir(parents=True)
    src = next(f for f in sweep_dir.glob("good/*/results.json") if '"similarity": "cos"' in f.read_text())
    (one_model / "good" / "results.json").write_text(src.read_text())
    one_line_error(run_cli(["compare", one_model]), "two or more models")
    one_line_error(run_cli(["compare", tmp_path / "missing"]), "does not exist")


def test_report_shows_intervals_forest_and_comparison(sweep_dir, tmp_path):
    from fasteval.core.report.build import build_report

    rep = build_report(sweep_dir, out=tmp_path / "rep", dpi=30, resamples=500)
    assert {"table1_intervals", "comparison"} <= set(rep.tables)
    rows = {r["model"]: r for r in rep.tables["table1_intervals"].rows}
    assert rows["good"]["tau_ci_low"] < rows["good"]["tau"] < rows["good"]["tau_ci_high"]
    expected = rows["random (expected)"]["tau"]
    assert expected == pytest.approx(S.random_baselines()["tau"]) == pytest.approx(8.914, abs=5e-4)
    for name in ("_all_forest.png", "_all_comparison.png"):
        png = (tmp_path / "rep" / "figures" / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") > 100, name  # width in px


def test_random_baselines_are_exact_per_protocol():
    """The paper's exact values (issue: 8.914 and 54.457, where a 400-draw simulation printed 8.83), a
    protocol's own values (the glucose example's 20.17 in docs/protocols.md), and the simulation agreeing with the
    closed forms within four standard errors, ties in the values included."""
    b = S.random_baselines()
    assert round(b["tau"], 3) == 8.914 and round(b["pacc"], 3) == 54.457
    assert b["strict_tau"] == 0.0 and b["all_anchors_tau"] == 0.0
    from fasteval.core.protocol.loading import load_protocol

    glucose = load_protocol(TESTS / "data" / "glucose.toml")
    values = [c.values for c in glucose.cells()]
    assert S.random_baselines(values)["tau"] == pytest.approx(np.mean([2 / len(v) for v in values]) * 100)
    celsius = [np.linspace(-20, 50, 15)]
    assert round(S.random_baselines(celsius)["tau"], 2) == 13.33
    tied = [np.array([0.0, 1, 1, 2, 2, 2, 3]), np.array([5.0, 1, 2, 5, 9])]  # ties; an anchor not the smallest
    means, errors = simulated_random_baselines(tied, draws=4000)
    exact = S.random_baselines(tied)
    for name in ("tau", "pacc", "strict_tau", "all_anchors_tau"):
        assert abs(means[name] - exact[name]) < 4 * errors[name] + 1e-9, name


def test_exam1_summary_uses_the_protocol_baseline():
    from fasteval.core.protocol.loading import load_protocol
    from fasteval import evaluate
    from fakes import FakeEncoder

    protocol = load_protocol(TESTS / "data" / "glucose.toml")
    s = evaluate(FakeEncoder(), exams=(1,), name="fake", protocol=protocol, bootstrap=0).exams["exam1"].summary()
    values = [c.values for c in protocol.cells()]
    assert s["random_tau"] == pytest.approx(S.random_baselines(values)["tau"])
    assert s["random_tau"] != pytest.approx(S.random_baselines()["tau"])


def test_a_protocol_that_repeats_values_has_its_pacc_inside_its_own_interval(tmp_path):
    """Repeated values: the point PACC leaves equal-value pairs out, as the bootstrap does (it counted them as
    wrong, and Table 1's 86.34 sat outside its own interval [88.38, 100])."""
    import numpy as np

    from fasteval.core.kernels.kendall import pairwise_accuracy
    from fasteval import evaluate

    f = tmp_path / "repeats.toml"
    f.write_text('[protocol]\nname = "repeats"\nversion = "1"\n[[quantities]]\nname = "meter"\nunit = "meter"\n'
                 'forms.en = ["meter", "meters"]\n[[ranges]]\nname = "r"\n'
                 'values = [0, 1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 9, 9, 10]\n')
    result = evaluate(FakeEncoder(noise=0.05), exams=(1,), protocol=str(f), bootstrap=2000)
    (cell,) = result.exams["exam1"].cells
    values = np.asarray(cell.values)
    sims = np.asarray(result.exams["exam1"].heatmaps[cell.key][0], dtype=np.float64)
    pairs = [(i, j) for i in range(len(values)) for j in range(i + 1, len(values)) if values[i] != values[j]]
    right = sum((sims[i] > sims[j]) if values[i] < values[j] else (sims[j] > sims[i]) for i, j in pairs)
    assert cell.pacc == pytest.approx(right / len(pairs)) == pytest.approx(pairwise_accuracy(values, sims, "skip"))
    assert cell.pacc_ci_low <= cell.pacc <= cell.pacc_ci_high
    assert result.settings["pacc_value_ties"] == "skip"
