"""`fasteval report`: tables recomputed from the result objects, PNGs that are PNGs of the promised size, one
self-contained HTML page, and bad input (corrupt files, empty folders) handled in one line.

Result folders are made by `evaluate` on deterministic fake encoders (no model), written with the sweep's own
writers, so the report reads exactly what a sweep writes.
"""
from __future__ import annotations

import base64
import csv
import dataclasses
import io
import struct
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fasteval.core import protocol as P
from fasteval.core.errors import InputError, OutputError

from fakes import FakeEncoder, one_line_error, run_cli
DPI = 40  # small figures: the size check is figsize x dpi whatever the dpi


# the surface-form baselines' rows, below the random row (core/protocol/baselines.py)
SURFACE = ["surface: byte counts", "surface: character 3-gram TF-IDF"]

def half_up(value, digits: int) -> float:
    """Independent reference rounding: Decimal ROUND_HALF_UP on the exact value."""
    value = Fraction(value)
    with localcontext() as ctx:
        ctx.prec = 50
        exact = Decimal(value.numerator) / Decimal(value.denominator)
    return float(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def latex_ref(value, digits: int) -> str:
    shown = half_up(value, digits)
    text = f"{abs(shown):0{3 + digits}.{digits}f}"
    return ("-" if shown < 0 else "") + text


def exact_tau(cell) -> Fraction:
    assert cell.tau_numerator is not None
    return Fraction(cell.tau_numerator, cell.n * (cell.n - 1) // 2)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Three results side by side: one nested a level deeper and without matrices, one with Exam 2 only; a
    corrupt file and a hidden staging folder beside them."""
    from fasteval.core.results.files import result_files
    from fasteval import evaluate
    from fasteval.core.io import write_result_folder

    root = tmp_path_factory.mktemp("results")
    smooth = evaluate(FakeEncoder(noise=0.2, tokens="chars"), name="org/fake-smooth")
    noisy = evaluate(FakeEncoder(noise=2.5, tokens=None), name="fake-noisy")
    # Scores without matrices or curves (as `run_exam1(keep_matrices=False)` gives): tables, no figures.
    noisy.exams["exam1"] = dataclasses.replace(noisy.exams["exam1"], heatmaps={}, digits_words={}, conversions=[])
    partial = dataclasses.replace(smooth, model="fake-partial", model_id="fake_partial",
                                  exams={"exam2": smooth.exams["exam2"]})
    write_result_folder(root / smooth.model_id, result_files(smooth))
    write_result_folder(root / noisy.model_id / "cos-0123abcd", result_files(noisy))
    write_result_folder(root / partial.model_id, result_files(partial))
    (root / "broken").mkdir()
    (root / "broken" / "results.json").write_text('{"model_id": "broken", "exams": {"exam1": {"cel')
    (root / ".fake_smooth.staging-x1").mkdir()
    (root / ".fake_smooth.staging-x1" / "results.json").write_text("{")
    return root, {"fake-smooth": smooth, "fake-noisy": noisy, "fake-partial": partial}


@pytest.fixture(scope="module")
def report(results, tmp_path_factory):
    from fasteval.core.report.build import build_report

    root, _ = results
    rep = build_report(root, out=tmp_path_factory.mktemp("rep") / "report", dpi=DPI)
    return rep, rep.warnings


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_finds_nested_results_and_skips_corrupt_and_hidden(results, report):
    root, _ = results
    rep, warnings = report
    assert sorted(e.label for e in rep.entries) == ["fake-noisy", "fake-partial", "fake-smooth"]
    assert len(warnings) == 1 and str(root / "broken" / "results.json") in warnings[0]
    assert "staging" not in " ".join(warnings)
    assert rep.warnings == warnings
    assert "fake_noisy/cos-0123abcd/results.json" in (rep.out / "sources.csv").read_text()


def test_table1_rows_order_all_and_baseline(results, report):
    from fasteval.core.exams.geometry import table1_row

    _, objs = results
    rep, _ = report
    scored = {k: r.exams["exam1"].cells for k, r in objs.items() if "exam1" in r.exams}
    expected = sorted(scored, key=lambda k: -table1_row(scored[k])["avg"])
    rows = read_csv(rep.out / "table1.csv")
    assert [r["model"] for r in rows] == expected + ["all", "random (expected)", *SURFACE]
    from fasteval.core.exams.statistics import random_baselines

    exact = random_baselines()  # the fixture's cells are the paper's
    assert float(rows[-3]["tau"]) == pytest.approx(exact["tau"]) and float(rows[-3]["pacc"]) == pytest.approx(
        exact["pacc"]) and float(rows[-3]["avg"]) == pytest.approx((exact["tau"] + exact["pacc"]) / 2)
    from fasteval.core.protocol.baselines import surface_baselines

    assert [float(rows[k]["tau"]) for k in (-2, -1)] == [b["tau"] for b in surface_baselines()]
    assert "paper's printed random row is τ 0.00, PACC 50.00, AVG 25.00" in (rep.out / "table1.md").read_text()
    md = (rep.out / "table1.md").read_text().splitlines()
    tex = (rep.out / "table1.tex").read_text()
    all_cells = [c for cells in scored.values() for c in cells]
    for label, cells in [*((k, scored[k]) for k in expected), ("all", all_cells)]:
        # Independently: exact means of k / C(n, 2); PACC = (1 + tau) / 2 in every cell (PROTOCOL.md 1.4)
        tau = sum(exact_tau(c) for c in cells) / len(cells) * 100
        pacc = sum((1 + exact_tau(c)) / 2 for c in cells) / len(cells) * 100
        avg = (tau + pacc) / 2
        row = next(r for r in rows if r["model"] == label)
        assert float(row["tau"]) == pytest.approx(float(tau), abs=1e-9)
        assert float(row["avg"]) == pytest.approx(float(avg), abs=1e-9)
        shown = [f"{half_up(v, 2):.2f}" for v in (tau, pacc, avg)]
        assert f"| {label} | {' | '.join(shown)} |" in md
        assert f"{label.replace('_', chr(92) + '_')} & {' & '.join(latex_ref(v, 2) for v in (tau, pacc, avg))} \\\\" \
            in tex
    assert "random (expected) & 08.91 & 54.46 & 31.69 \\\\" in tex
    assert "fake-smooth &" in tex


def test_latex_number_format():
    from fasteval.core.report.table import latex_number

    assert latex_number(7.33) == "07.33" and latex_number(-7.33) == "-07.33" and latex_number(42.1) == "42.10"
    assert latex_number(100.0) == "100.00" and latex_number(0.0) == "00.00" and latex_number(-0.0) == "00.00"
    assert latex_number(5.0, 1) == "05.0" and latex_number(-5.6, 1) == "-05.6" and latex_number(12.3, 1) == "12.3"
    assert latex_number(None) == "--"


def test_table2_mean_min_max(results, report):
    _, objs = results
    rep, _ = report
    cells = [c for r in objs.values() if "exam1" in r.exams for c in r.exams["exam1"].cells]
    rows = read_csv(rep.out / "table2.csv")
    tex = (rep.out / "table2.tex").read_text()
    quantities = ["meter", "kilogram", "liter", "second"]  # the paper's order (it was alphabetical)
    assert list(P.QUANTITIES) == quantities
    assert [r["quantity"] for r in rows] == [q for q in quantities for _ in range(len(P.RANGE_NAMES) + 1)]
    assert [r["range"] for r in rows[:6]] == list(P.RANGE_NAMES) + ["AVG"]
    negatives = 0
    for q in quantities:
        block = []
        for rng in sorted(P.RANGE_NAMES):
            taus = [exact_tau(c) * 100 for c in cells if (c.quantity, c.range_name) == (q, rng)]
            assert len(taus) == 2
            stats = (sum(taus) / len(taus), min(taus), max(taus))
            block.append(stats)
            row = next(r for r in rows if (r["quantity"], r["range"]) == (q, rng))
            assert [float(row[k]) for k in ("mean", "min", "max")] == pytest.approx([float(v) for v in stats],
                                                                                   abs=1e-9)
            assert f"{q} & {rng.replace('_', chr(92) + '_')} & {' & '.join(latex_ref(v, 2) for v in stats)}" in tex
            negatives += stats[1] < 0
        avg = [sum(s[i] for s in block) / len(block) for i in range(3)]
        row = next(r for r in rows if (r["quantity"], r["range"]) == (q, "AVG"))
        assert [float(row[k]) for k in ("mean", "min", "max")] == pytest.approx([float(v) for v in avg], abs=1e-9)
        assert f"{q} & AVG & {' & '.join(latex_ref(v, 2) for v in avg)}" in tex
    assert negatives > 0, "the noisy fake model should give negative cells (the '-' + padded format)"


def test_lexical_table(results, report):
    from fasteval.core.exams.lexical import REFERENCES

    _, objs = results
    rep, _ = report
    rows = read_csv(rep.out / "lexical.csv")
    assert [r["model"] for r in rows] == ["fake-noisy", "fake-partial", "fake-smooth"]  # alphabetical
    tex = (rep.out / "lexical.tex").read_text()
    for row in rows:
        exam2 = objs[row["model"]].exams["exam2"]
        shown = []
        for ref in ("char_lev", "token_lev", "num_dist"):
            for group in ("all", "float-float", "float-int", "int-int"):
                tau = next(r.tau for r in exam2.rows if (r.reference, r.group) == (ref, group)) * 100
                if np.isnan(tau):
                    assert row[f"{ref}_{group}"] == ""
                    shown.append("--")
                else:
                    assert float(row[f"{ref}_{group}"]) == pytest.approx(tau, abs=1e-9)
                    shown.append(latex_ref(tau, 1))
        assert f"{row['model'].replace('_', chr(92) + '_')} & {' & '.join(shown)} \\\\" in tex
    smooth = next(r for r in rows if r["model"] == "fake-smooth")
    for group in ("all", "float-float", "float-int", "int-int"):  # one token per character
        assert smooth[f"token_lev_{group}"] == smooth[f"char_lev_{group}"]
    assert set(REFERENCES) == {"char_lev", "token_lev", "num_dist"}
    assert "fake-noisy" in (rep.out / "lexical.md").read_text().split("Tokenizer: no token ids for")[1]
    assert "& Overall & FF & FI & II &" in tex and "\\multicolumn{4}{c}{Character}" in tex


def test_probe_table(results, report):
    _, objs = results
    rep, _ = report
    rows = read_csv(rep.out / "probe.csv")
    scored = {k: r.exams["exam3"] for k, r in objs.items() if "exam3" in r.exams}
    expected = {}
    for k, exam3 in scored.items():
        mean = {key: np.mean([getattr(r, key) for r in exam3.rows]) * 100
                for key in ("kendall_cosine", "pairwise_cosine", "kendall", "pairwise")}
        expected[k] = [mean["kendall_cosine"], mean["pairwise_cosine"], mean["kendall"], mean["pairwise"],
                       mean["kendall"] - mean["kendall_cosine"]]
    order = sorted(expected, key=lambda k: -expected[k][2])
    assert [r["model"] for r in rows] == order + ["all"]
    columns = ["kendall_cosine", "pairwise_cosine", "kendall", "pairwise", "delta_tau"]
    tex = (rep.out / "probe.tex").read_text()
    for label in order:
        row = next(r for r in rows if r["model"] == label)
        assert [float(row[c]) for c in columns] == pytest.approx(expected[label], abs=1e-9)
        assert " & ".join(latex_ref(v, 2) for v in expected[label]) in tex
    all_row = np.mean([expected[k] for k in order], axis=0)
    assert [float(rows[-1][c]) for c in columns] == pytest.approx(all_row, abs=1e-9)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_pngs(report):
    from fasteval.core.report import plots

    rep, _ = report
    sizes = {"embedding_overview": plots.OVERVIEW_SIZE, "digits_words": plots.DIGITS_WORDS_SIZE,
             "conversions": plots.CONVERSION_SIZE}
    pngs = sorted((rep.out / "figures").glob("*.png"))
    # fake-noisy has no matrices; the forest plot and the runs among the paper's 24 are the report's own (the
    # comparison needs two models' rows)
    assert [p.name for p in pngs] == sorted([f"fake-smooth_{f}.png" for f in sizes]
                                            + ["_all_forest.png", "_all_published.png"])
    for path in pngs:
        data = path.read_bytes()
        if path.name.startswith("_all_"):
            assert png_size(data)[0] == round((7.0 if "forest" in path.name else 7.5) * DPI)
            continue
        w, h = sizes[path.stem.split("_", 1)[1]]
        assert len(data) > 1000 and png_size(data) == (round(w * DPI), round(h * DPI))


def test_html_is_self_contained(report):
    rep, _ = report
    page = (rep.out / "report.html").read_text()
    pngs = sorted((rep.out / "figures").glob("*.png"))
    uris = page.count('src="data:image/png;base64,')
    assert uris == len(pngs) == 5
    first = page.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(first) in {p.read_bytes() for p in pngs}
    for name in ("table1", "table2", "lexical", "probe", "sources"):
        assert f'<h2 id="{name}">' in page
    assert "<td>random (expected)</td>" in page and "<td>fake-partial</td>" in page
    for external in ("http://", "https://", "<link", "<script", "url("):
        assert external not in page
    assert "broken" in page  # the warning is on the page too


def test_heatmaps_span_their_own_values_unless_the_paper_scale_is_asked(results):
    """A model's cosines sit in 0.6-1.0, where the paper's fixed 0-1 scale hid the structure: every heatmap of a
    figure shares one colour scale, the smallest to the largest value its panels show (the masked triangle left
    out); --heatmap-scale paper gives the paper's 0-1; an unknown scale is one line."""
    from fasteval.core.report import plots

    _, objs = results
    exam1 = objs["fake-smooth"].exams["exam1"]
    shown = [plots.masked_upper(m) for m in exam1.heatmaps.values()] + [np.array(m, float)
                                                                          for m in exam1.digits_words.values()]
    values = np.concatenate([m.ravel() for m in shown])
    expected = (np.nanmin(values), np.nanmax(values))
    assert expected[0] < expected[1] and expected != (0.0, 1.0)
    for scale, limits in (("data", expected), ("paper", (0.0, 1.0))):
        fig = plots.overview_figure(exam1, "t", scale=scale)
        clims = {tuple(round(v, 12) for v in im.get_clim()) for ax in fig.axes for im in ax.get_images()}
        assert clims == {tuple(round(float(v), 12) for v in limits)}, scale
        words = plots.digits_words_figure(exam1, "t", scale=scale)
        dw = np.concatenate([np.ravel(m) for m in exam1.digits_words.values()]).astype(float)
        want = (dw.min(), dw.max()) if scale == "data" else (0.0, 1.0)
        assert {im.get_clim() for ax in words.axes for im in ax.get_images()} == {want}
    assert plots.color_limits([np.full((2, 2), 0.7)], "data") == (0.0, 1.0), "one value: nothing to stretch"


def test_cli_report_heatmap_scale_bad_input(results, tmp_path):
    root, _ = results
    proc = run_cli(["report", root, "--out", tmp_path / "r", "--heatmap-scale", "papr", "--no-png"])
    assert proc.returncode == 2
    one_line_error(proc, "Unknown heatmap scale 'papr'", "paper")


def test_wide_tables_scroll_in_their_box_and_paths_wrap_at_slashes(results, tmp_path):
    """The "Result files" table overflowed a 1280 px page with its path squeezed to 3 characters a line: every
    table now sits in its own horizontally scrolling box, and paths and ids may wrap after '/' and '_' (looked at
    in a 1280 px screenshot of Chromium)."""
    from fasteval.core.report.build import build_report

    root, _ = results
    rep = build_report(root, out=tmp_path / "rep", png=False)
    page = (rep.out / "report.html").read_text()
    assert page.count("<div class=wide><table>") == page.count("<table>") == len(rep.tables)
    path = next(r["path"] for r in rep.tables["sources"].rows if "/" in r["path"])
    assert f"<td>{path.replace('/', '/<wbr>').replace('_', '_<wbr>')}</td>" in page
    assert "overflow-wrap:anywhere" not in page, "it squeezed a text column to its widest character"


def test_missing_exams_leave_rows_out(report):
    rep, _ = report
    assert "fake-partial" not in {r["model"] for r in rep.tables["table1"].rows}
    assert "fake-partial" not in {r["model"] for r in rep.tables["probe"].rows}
    assert "fake-partial" in {r["model"] for r in rep.tables["lexical"].rows}


def test_models_filter_and_replacing(results, tmp_path, caplog):
    from fasteval.core.report.build import build_report

    root, _ = results
    out = tmp_path / "rep"
    with caplog.at_level("WARNING", logger="fasteval"):
        rep = build_report(root, out=out, models="fake-smooth,nope", png=False)
    assert [e.label for e in rep.entries] == ["fake-smooth"] and any("'nope'" in w for w in rep.warnings)
    assert any("'nope'" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records), "logged, too"
    assert not (out / "figures").exists() and oct(out.stat().st_mode & 0o777) == "0o755"
    rep = build_report(root, out=out, models=["fake-partial"], png=False)  # an earlier report is replaced
    assert [e.label for e in rep.entries] == ["fake-partial"] and "table1" not in rep.tables
    assert not (out / "table1.csv").exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no staging left behind
    with pytest.raises(InputError):
        build_report(root, out=out, models=["nope"], png=False)
    with pytest.raises(OutputError):  # never replace a folder that holds results
        build_report(root, out=root, png=False)
    assert (root / "fake_smooth" / "results.json").is_file()




def test_one_model_has_no_all_row_repeating_it(results, tmp_path):
    """With one model, Table 1 and the probe table end without an `all` row (it only repeated the model's)."""
    from fasteval.core.report.build import build_report

    root, _ = results
    one = build_report(root, out=tmp_path / "one", models=["fake-smooth"], png=False)
    assert [r["model"] for r in one.tables["table1"].rows] == ["fake-smooth", "random (expected)", *SURFACE]
    assert [r["model"] for r in one.tables["probe"].rows] == ["fake-smooth"]
    two = build_report(root, out=tmp_path / "two", png=False)
    assert two.tables["table1"].rows[-4]["model"] == "all" and two.tables["probe"].rows[-1]["model"] == "all"


def test_cli_report(results, tmp_path):
    root, _ = results
    proc = run_cli(["report", str(root), "--out", str(tmp_path / "r"), "--no-png"])
    assert proc.returncode == 0, proc.stderr
    assert "| fake-smooth |" in proc.stdout and str(tmp_path / "r") in proc.stdout
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("fasteval: warning:")]
    assert len(warnings) == 1 and "broken" in warnings[0]
    assert "UserWarning" not in proc.stderr and "Traceback" not in proc.stderr
    assert read_csv(tmp_path / "r" / "table1.csv")[-3]["model"] == "random (expected)"
    assert not (tmp_path / "r" / "figures").exists()


def test_cli_bad_input(tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    assert "No results.json" in one_line_error(run_cli(["report", str(tmp_path / "empty")]))

    def main_in_process(args):  # the same entry point without another interpreter start
        from fasteval.cli.main import main

        monkeypatch.setattr(sys, "argv", ["fasteval", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, exit_info.value.code, captured.out, captured.err)

    assert "does not exist" in one_line_error(main_in_process(["report", str(tmp_path / "nope")]))
    (tmp_path / "bad" / "m").mkdir(parents=True)
    (tmp_path / "bad" / "m" / "results.json").write_text("not json")
    proc = main_in_process(["report", str(tmp_path / "bad")])
    assert "No readable result" in one_line_error(proc) and "fasteval: warning: skipped" in proc.stderr
    assert not (tmp_path / "bad" / "report").exists()


def test_report_help_imports_nothing_heavy():
    code = ("import sys; from fasteval.cli.main import app; from typer.testing import CliRunner; "
            "r = CliRunner().invoke(app, ['report', '--help']); assert r.exit_code == 0, r.output; "
            "print(','.join(m for m in ('matplotlib', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# --- runs of one model under other settings are that model's variants ------------------------------------------
@pytest.fixture(scope="module")
def runs_of_one_model(tmp_path_factory):
    """mini plain, normalized and with a prompt; another model plain."""
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep
    from fakes import CountingEncoder

    def loader(name, **options):
        enc = CountingEncoder(name.split("@")[0])
        enc.info["prompt"] = options.get("prompt") or ""
        return enc

    out = tmp_path_factory.mktemp("runs")
    jobs = [Job("mini", exams=(1,), bootstrap=0), Job("mini", exams=(1,), bootstrap=0,
                                                           normalize_quantities=True),
            Job("mini", {"prompt": "query: "}, exams=(1,), bootstrap=0), Job("other", exams=(1,), bootstrap=0)]
    for job in jobs:
        assert run_sweep([job], out, loader, cache_root=False)[0].status == "done"
    return out


def test_runs_of_one_model_are_its_variants(runs_of_one_model, tmp_path):
    from fasteval.core.exams.geometry import table1_row
    from fasteval.core.report.build import build_report
    from fasteval.core.report.entries import load_results

    entries = load_results(runs_of_one_model)
    assert sorted(e.label for e in entries) == ["mini", "mini [normalized]", "mini [prompt 'query: ']",
                                                "other"], "labelled by what differs, not by a hash"
    rep = build_report(runs_of_one_model, out=tmp_path / "rep", dpi=20, resamples=0)
    models = [r["model"] for r in rep.tables["table1"].rows]
    main = {e.label: e for e in entries}
    assert sum(not m.startswith("  └") for m in models[:-4]) == 2, "two models, not four"
    mini = models.index("mini")
    assert models[mini + 1:mini + 3] == ["  └ mini [normalized]", "  └ mini [prompt 'query: ']"]
    all_row = next(r for r in rep.tables["table1"].rows if r["model"] == "all")
    cells = [c for label in ("mini", "other") for c in main[label].result.exams["exam1"].cells]
    assert all_row["tau"] == table1_row(cells)["tau"], "each model counted once"
    page = (tmp_path / "rep" / "report.html").read_text()
    for e in entries:  # each result's figures appear once, under its own heading
        stem = e.label.replace(" ", "_").replace("[", "_").replace("]", "_").replace("'", "_").replace(":", "_")
        for name in ("embedding_overview", "digits_words", "conversions"):
            assert page.count(f"figures/{stem}_{name}.png</code>") == 1, (e.label, name)
    assert page.count("<figure>") == 3 * len(entries) + 1  # and the runs among the paper's 24
    assert "Similarity of number words (rows) and digits (columns)" in page, "captions say what a figure shows"


def test_a_models_served_and_normalised_runs_are_its_variants_everywhere(tmp_path):
    """One model with its served and normalised runs: labels name what differs only ("served: infinity
    @127.0.0.1:7997", "normalized"), every table lists them under the model, and nothing pools them as models."""
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.results.files import result_files
    from fasteval import evaluate

    local_info = {"source_sha256": "s", "onnx_sha256": "o", "provider": "cpu", "dtype": "fp32", "pooling": "mean",
                  "batch_order": "text-length", "max_seq_length": 256, "normalize": True, "dense": []}
    served_info = {"deployment": {"url": "http://127.0.0.1:7997", "model": "all-MiniLM-L6-v2",
                                  "server": {"id": "all-MiniLM-L6-v2", "owned_by": "infinity"}}, "batch_size": 32}
    runs = {"plain": (FakeEncoder(noise=0.2), local_info, False),
            "normalized": (FakeEncoder(noise=0.2), local_info, True),
            "served": (FakeEncoder(noise=0.3), served_info, False)}
    for name, (encoder, info, normalized) in runs.items():
        encoder.info = info  # what the encoder says it is: the settings its result records
        result = evaluate(encoder, exams=(1, 2, 3), name="sentence-transformers/all-MiniLM-L6-v2",
                          normalize_quantities=normalized, bootstrap=200)
        write_result_folder(tmp_path / "results" / "all_MiniLM_L6_v2" / name, result_files(result, key=name))
    rep = build_report(tmp_path / "results", out=tmp_path / "report", png=False)
    labels = sorted(e.label for e in rep.entries)
    assert labels == ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2 [normalized]",
                      "all-MiniLM-L6-v2 [served: infinity @127.0.0.1:7997]"], labels
    t1 = [r["model"] for r in rep.tables["table1"].rows]
    assert t1[0] == "all-MiniLM-L6-v2"
    assert sorted(t1[1:3]) == ["  └ all-MiniLM-L6-v2 [normalized]",
                               "  └ all-MiniLM-L6-v2 [served: infinity @127.0.0.1:7997]"]
    assert "across 1 model(s)" in rep.tables["table2"].title
    plain = next(e for e in rep.entries if e.label == "all-MiniLM-L6-v2").result
    t2 = {(r["quantity"], r["range"]): r for r in rep.tables["table2"].rows}
    cell = plain.exams["exam1"].cells[0]
    assert float(t2[(cell.quantity, cell.range_name)]["mean"]) == pytest.approx(cell.tau * 100), "a model once"
    probe = {r["model"]: r for r in rep.tables["probe"].rows}
    assert "all" not in probe and "all" not in t1, "one model: no `all` row repeating it"
    expected = plain.exams["exam3"].summary()["kendall_mean"] * 100
    assert float(probe["all-MiniLM-L6-v2"]["kendall"]) == pytest.approx(expected)
    for name in ("table1_intervals", "lexical", "probe"):
        models = [r["model"] for r in rep.tables[name].rows]
        assert models.index("all-MiniLM-L6-v2") < models.index("  └ all-MiniLM-L6-v2 [normalized]"), name
    (norm,) = rep.tables["normalization"].rows
    assert norm["model"] == "all-MiniLM-L6-v2" and norm["tau_plain"] == plain.exams["exam1"].summary()["tau_display"]
    page = (tmp_path / "report" / "report.html").read_text()
    assert "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}" in page
    assert "None" not in " ".join(labels) and max(len(p.name) for p in (tmp_path / "report").rglob("*")) < 80


def test_a_report_of_a_shared_folder_reads_only_fastevals_results_and_copies_once(tmp_path):
    """`fasteval report /tmp` walked all of /tmp and took in other tools' folders, and copies of one result were
    labelled as other settings (issue 45, item 13): other tools' results.json are left out without a warning, a
    tree is walked a few folders deep (a result's own subfolders and hidden folders never), and a copy of a result
    (the same model under the same settings key) is shown once, with a warning naming the copy."""
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.entries import load_results
    from fasteval.core.results.files import result_files
    from fasteval.core.results.read import MAX_RESULT_DEPTH, find_result_files

    from fasteval import evaluate

    result = evaluate(FakeEncoder(noise=0.2), name="org/fake-shared", exams=(2,))
    result.settings["key"] = "0123456789abcdef"
    write_result_folder(tmp_path / "sweep" / result.model_id / "0123456789abcdef", result_files(result, key="k"))
    write_result_folder(tmp_path / "backup" / "sweep" / result.model_id / "0123456789abcdef", result_files(result))
    (tmp_path / "other-tool" / "run1").mkdir(parents=True)
    (tmp_path / "other-tool" / "run1" / "results.json").write_text('{"accuracy": 0.9, "epochs": 3}')
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_RESULT_DEPTH + 2)])
    write_result_folder(deep / "too-deep", result_files(result))
    found = find_result_files(tmp_path)
    assert [p.relative_to(tmp_path).parts[0] for p in found] == ["backup", "other-tool", "sweep"]
    (tmp_path / "sweep" / "drift-out").mkdir()
    (tmp_path / "sweep" / "drift-out" / "drift.json").write_text("{}")
    (deep / "drift-out").mkdir()
    (deep / "drift-out" / "drift.json").write_text("{}")
    assert find_result_files(tmp_path, "drift.json") == [tmp_path / "sweep" / "drift-out" / "drift.json"], \
        "drift reports are found by the same bounded walk"
    notes: list[str] = []
    entries = load_results(tmp_path, notes=notes)
    assert [e.label for e in entries] == ["fake-shared"] and "other settings" not in " ".join(notes)
    assert len(notes) == 1 and "is a copy of" in notes[0] and "shown once" in notes[0], notes
    assert "other-tool" not in " ".join(notes)


def test_compare_counts_a_renamed_copy_of_a_model_as_that_model_and_says_p_below_its_decimals(tmp_path):
    """A copy of a model's folder under another name has the same weights (content hash): one model, shown once,
    so Holm's family does not grow (MiniLM against mpnet moved from p 0.126 to 0.379); a p-value that rounds to 0
    prints "< 0.001", never "0.000" (issue 45, item 16)."""
    from fasteval import evaluate
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.compare import compare
    from fasteval.core.report.entries import load_results
    from fasteval.core.report.table import Table
    from fasteval.core.results.files import result_files

    a = evaluate(FakeEncoder(noise=0.2), name="model-a", exams=(1,), bootstrap=0)
    b = evaluate(FakeEncoder(noise=1.5), name="model-b", exams=(1,), bootstrap=0)
    a.settings.update({"source_sha256": "aaaa", "key": "k1"})
    b.settings.update({"source_sha256": "bbbb", "key": "k1"})
    copy = dataclasses.replace(a, model="my-copy-of-a", model_id="my_copy_of_a", settings=dict(a.settings))
    for r in (a, b, copy):
        write_result_folder(tmp_path / r.model_id / "k1", result_files(r, key="k1"))
    comparison = compare(load_results(tmp_path), resamples=200)
    assert sorted(comparison.models) == ["model-a", "model-b"] and len(comparison.pairs) == 1
    assert comparison.pairs[0].p_holm == comparison.pairs[0].p_value, "a family of one pair"
    table = Table("t", "t", ["name", "p"], ["Name", "p"], [{"name": "x", "p": 0.0002}, {"name": "y", "p": 0.0}],
                  digits=3, probabilities={"p"})
    assert [table.cell_text(r, "p") for r in table.rows] == ["< 0.001", "0.000"]
    assert "$<$ 0.001" in table.latex()
    from fasteval.cli.printing import fmt_p

    assert (fmt_p(0.00002), fmt_p(0.1262)) == ("<0.0001", "0.1262")


def test_the_long_table_holds_every_number_of_every_result_as_written(results, report):
    """results-long.csv and results-long.parquet: one row a result x exam x cell (or "all") x metric, each value
    the one results.json holds, bit for bit (the CSV's text reads back as the same float), with its interval where
    the result has one and the result's provenance; every number of every result is there once."""
    import json
    import math

    import pyarrow.parquet as pq

    rep, _ = report
    rows = read_csv(rep.out / "results-long.csv")
    parquet = pq.read_table(rep.out / "results-long.parquet").to_pylist()
    assert len(rows) == len(parquet) > 0 and [r["metric"] for r in rows] == [r["metric"] for r in parquet]
    for r, p in zip(rows, parquet):
        assert (float(r["value"]) == p["value"]) and (r["ci_low"] == "" or float(r["ci_low"]) == p["ci_low"])
    counted = {}
    for e in rep.entries:
        data = json.loads(e.path.read_text())
        mine = [p for p in parquet if p["result"] == str(e.path)]
        assert {p["key"] for p in mine} == {data.get("key")} and {p["model"] for p in mine} == {e.label}
        for p in mine:
            body = data["exams"][p["exam"]]
            if p["cell"] == "all":
                record = body["summary"]
            else:
                record = next(r for v in body.values() if isinstance(v, list) for r in v if isinstance(r, dict)
                              and "/".join(x for x in r.values() if isinstance(x, str)) == p["cell"])
            assert record[p["metric"]] == p["value"] and not math.isnan(p["value"]), p
            assert p["ci_low"] == record.get(p["metric"] + "_ci_low"), p
        numbers = sum(1 for body in data["exams"].values()
                      for record in [body.get("summary") or {}] + [r for v in body.values() if isinstance(v, list)
                                                                   for r in v if isinstance(r, dict)]
                      for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                      and not k.endswith(("_ci_low", "_ci_high", "_display")))
        counted[e.label] = (len(mine), numbers)
    assert all(a == b for a, b in counted.values()), counted
    smooth = next(p for p in parquet if p["model"] == "fake-smooth" and p["exam"] == "exam1"
                  and p["cell"] == "meter/local_0_10" and p["metric"] == "tau")
    cell = results[1]["fake-smooth"].exams["exam1"].cells[0]
    assert (smooth["value"], smooth["ci_low"], smooth["ci_high"]) == (cell.tau, cell.tau_ci_low, cell.tau_ci_high)
    assert smooth["protocol"] == "paper-1" and smooth["similarity"] == "cos" and smooth["fasteval_version"]


def test_without_pyarrow_the_long_table_is_csv_and_a_line_says_so(report, monkeypatch):
    import sys

    from fasteval.core.report.build import long_files

    rep, _ = report
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as where the report extra is not installed
    warnings: list[str] = []
    files = long_files(rep.entries, warnings)
    assert set(files) == {"results-long.csv"} and files["results-long.csv"] == (
        rep.out / "results-long.csv").read_text()
    assert warnings == ["results-long.parquet was not written: pyarrow is not installed (pip install "
                        "'fasteval[report]'); results-long.csv holds the same rows."]


def test_names_that_a_spreadsheet_would_run_are_neutralised_and_a_newline_splits_no_markdown_row(tmp_path):
    """A model named ``=1+2`` wrote cells beginning with ``=`` into every CSV the report writes (153 rows of the
    long table), and a served id ``=HYPERLINK(...)`` one into sources.csv (issue 66, item 8): every text cell that
    begins like a formula and is not a number now begins with ``'`` (OWASP), and a name with a newline stays on its
    Markdown row."""
    from fasteval import evaluate
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.results.files import result_files

    root = tmp_path / "results"
    for name in ("=1+2", '@SUM(A1)\n=HYPERLINK("http://x")'):
        result = evaluate(FakeEncoder(noise=0.5), name=name, exams=("1",))
        write_result_folder(root / f"m{len(list(root.glob('*'))) if root.exists() else 0}", result_files(result))
    rep = build_report(root, out=tmp_path / "report", dpi=DPI)
    csvs = sorted(rep.out.rglob("*.csv"))
    assert any(p.name == "results-long.csv" for p in csvs) and any(p.name == "sources.csv" for p in csvs)
    starts, cells = ("=", "+", "-", "@", "\t", "\r"), 0
    for path in csvs:
        for row in csv.reader(io.StringIO(path.read_text())):
            for cell in row:
                if cell.startswith(starts):
                    float(cell)  # only a number may begin so (ValueError fails the test)
                cells += cell.startswith("'=") or cell.startswith("'@")
    assert cells >= 2
    long_rows = read_csv(rep.out / "results-long.csv")
    assert {r["model"] for r in long_rows} >= {"'=1+2"}
    for path in rep.out.rglob("*.md"):
        for line in path.read_text().splitlines():
            assert not line.startswith("=HYPERLINK"), (path.name, line)
            if line.startswith("|"):
                assert line.rstrip().endswith("|"), (path.name, line)


def test_the_joinable_outputs_are_named_and_the_docs_join_runs_as_copied(tmp_path):
    """The report's terminal lines, report.html and `report --help` name results-long, every-eval-ever and
    hf-eval-results; docs/results.md's pandas join runs as copied on the README's two models, each with a main
    and an int8 run (a pivot on `run` alone raised on the duplicates) (issue 66, item 11)."""
    pytest.importorskip("pandas")
    from fasteval import evaluate
    from fasteval.core.io import write_result_folder
    from fasteval.core.results.files import result_files
    from fakes import ROOT

    root = tmp_path / "results"
    for name in ("all-MiniLM-L6-v2", "all-mpnet-base-v2"):
        for run, options in (("main", {}), ("int8", {"vector_quantization": "int8"})):
            result = evaluate(FakeEncoder(noise=0.3), name=name, exams=(1,), bootstrap=50, **options)
            write_result_folder(root / result.model_id / run, result_files(result))
    proc = run_cli(["report", root, "--out", tmp_path / "R", "--no-png", "--bootstrap", "0"])
    assert proc.returncode == 0, proc.stderr
    for name in ("results-long.csv", "every-eval-ever/", "hf-eval-results/"):
        assert str(tmp_path / "R" / name.split(" ")[0]) in proc.stdout, proc.stdout
        assert name in (tmp_path / "R" / "report.html").read_text()
    import re

    helped = re.sub(r"-\s*\n\s*", "-", run_cli(["report", "--help"]).stdout)  # as read: the wrapping undone
    assert all(n in helped for n in ("results-long.csv", "every-eval-ever/", "hf-eval-results/")), helped
    code = (ROOT / "docs" / "results.md").read_text().split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(code.replace('"R/', f'"{tmp_path / "R"}/'), scope)  # noqa: S102 - the docs' own example
    cells = scope["cells"]
    assert list(cells.columns[:2]) == ["int8", "main"] and len(cells) == 20
