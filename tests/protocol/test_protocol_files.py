"""Protocols as data: the paper's protocol file gives exactly the paper's strings, grids, groups, splits and
key; the built-in protocols say what they should in each language, template and format; bad protocol files
give one line naming the file and the key; a user's own file runs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fasteval.core import protocol as P
from fasteval.core.protocol.loading import builtin_names, load_protocol, parse_protocol
from fasteval.core.protocol.spec import ProtocolError

from fakes import ROOT, TESTS, FakeEncoder, one_line_error, run_cli


def cell_texts(quantity: str, range_name: str) -> list[str]:
    """The paper's strings of one (quantity, range) cell, in range order, as Exam 1 embeds them."""
    return next(c.texts for c in P.exam1_cells() if (c.quantity, c.range_name) == (quantity, range_name))


def paper_values_by_formula(name: str) -> np.ndarray:
    """The paper's grids written out as PROTOCOL.md 1.1 states them (independent of the protocol file)."""
    return {
        "local_0_10": lambda: np.arange(0, 10.5, 0.5),
        "medium_0_1000": lambda: np.arange(0, 1001, 50).astype(float),
        "log_1_100k": lambda: np.unique(np.round(np.logspace(0, 5, 25))).astype(int).astype(float),
        "sign_split": lambda: np.arange(-100, 101, 10).astype(float),
        # 10 ** (k / 2) by the C library's pow, not numpy's vectorised power (its last bit depends on the CPU)
        "scientific": lambda: np.array([10.0 ** (k / 2) for k in range(-12, 13)]),
    }[name]()


@pytest.mark.parametrize("start, stop, num", [(-6, 6, 25), (0, 5, 25), (-2, 3, 40), (-2, 4, 13), (-3.7, 8.1, 57)])
def test_logspace_grids_are_the_correctly_rounded_powers_on_every_cpu(start, stop, num):
    """The protocol's logspace is 10 ** e correctly rounded (decimal arithmetic in software), so it cannot depend
    on the instruction set: the C library's pow (correctly rounded on these grids) agrees bit for bit, and numpy's
    logspace, whose vectorised power differs per CPU, is within one unit in the last place."""
    from fasteval.core.protocol.grids import logspace

    got = logspace(start, stop, num)
    exponents = np.linspace(start, stop, num)
    assert [float(v) for v in got] == [10.0 ** float(e) for e in exponents]
    assert all(v == float(f"1e{int(e)}") for e, v in zip(exponents, got) if float(e).is_integer())
    np.testing.assert_array_max_ulp(got, np.logspace(start, stop, num), maxulp=1)
    assert logspace(-6, 6, 25)[2] == 1e-05


def test_the_paper_protocol_file_is_the_paper():
    spec = load_protocol("paper")
    assert spec.is_paper and spec.key == "paper-1" == P.PROTOCOL_VERSION
    assert [q.name for q in spec.quantities] == ["meter", "kilogram", "liter", "second"]
    assert [r.name for r in spec.ranges] == ["local_0_10", "medium_0_1000", "log_1_100k", "sign_split", "scientific"]
    for cell in P.exam1_cells():
        expected = paper_values_by_formula(cell.range_name)
        np.testing.assert_array_equal(cell.values, expected)  # bit for bit
        fmt = ("{:.0e} " + cell.quantity) if cell.range_name == "scientific" else None
        texts = [fmt.format(v) if fmt else f"{v:g} {cell.quantity if abs(v) == 1 else cell.quantity + 's'}"
                 for v in expected]
        assert cell.texts == texts
    assert P.digits_words_texts("meter") == ([f"{d} meter" for d in P.DIGITS], [f"{w} meter" for w in P.WORDS])
    # The groups (encode calls) and the splits (they depend on n only) are the paper's.
    from fasteval.core.exams import protocol_groups

    groups = protocol_groups((1, 2, 3))
    assert groups[:20] == [c.texts for c in P.exam1_cells()] and len(groups) == 20 + 8 + 22 + 1
    assert [len(P.probe_split(n, 0)[0]) for n in (21, 25)] == [7, 9]


def test_the_paper_key_is_unchanged():
    from fasteval.core.runs.job import Job
    from fasteval.core.plan import result_key

    info = {"onnx_sha256": "x", "provider": "cpu"}
    paper = Job("m", bootstrap=0).scoring.settings(info)
    assert paper["protocol"] == "paper-1" and "protocol_file" not in paper
    legacy = {**info, "similarity": "cos", "exams": [1, 2, 3], "protocol": "paper-1"}
    assert result_key(paper) == result_key(legacy), "a paper result made before protocol files keeps its key"
    other = Job("m", exams=(1,), protocol="formats", bootstrap=0).scoring.settings(info)
    assert other["protocol"].startswith("formats-1-") and result_key(other) != result_key(paper)


def test_builtins_are_listed_and_load_and_their_units_are_pints():
    from fasteval.core.protocol.loading import BUILTIN_DIR

    assert set(builtin_names()) == {"paper", "multilingual", "in-context", "formats"}
    for name in builtin_names():
        spec = load_protocol(name)
        assert spec.description and spec.measures and spec.cells()
        checked = parse_protocol((BUILTIN_DIR / f"{name}.toml").read_bytes(), name, check_units=True)
        assert [q.unit for q in checked.quantities] == [q.unit for q in spec.quantities]


def _texts(spec, variant: str, quantity: str, range_name: str) -> list[str]:
    return next(c.texts for c in spec.cells() if (c.variant, c.quantity, c.range_name) == (variant, quantity,
                                                                                             range_name))


def test_multilingual_strings_follow_each_languages_grammar():
    spec = load_protocol("multilingual")
    assert _texts(spec, "en", "meter", "local_0_10") == cell_texts("meter", "local_0_10")
    assert _texts(spec, "de", "meter", "local_0_10")[:3] == ["0 Meter", "0,5 Meter", "1 Meter"]
    assert _texts(spec, "de", "second", "local_0_10")[2:4] == ["1 Sekunde", "1,5 Sekunden"]
    assert _texts(spec, "fr", "meter", "local_0_10")[:5] == ["0 mètre", "0,5 mètre", "1 mètre", "1,5 mètre",
                                                             "2 mètres"]
    assert _texts(spec, "es", "liter", "local_0_10")[:4] == ["0 litros", "0,5 litros", "1 litro", "1,5 litros"]
    assert _texts(spec, "ko", "meter", "medium_0_1000")[1] == "50 미터"
    assert _texts(spec, "ja", "kilogram", "medium_0_1000")[1] == "50キログラム"
    assert _texts(spec, "zh", "second", "scientific")[0] == "1e-06秒"
    words = {v.label: spec.digits_words_texts("second", v)[1][:3] for v in spec.variants}
    assert words["de"] == ["null Sekunden", "eine Sekunde", "zwei Sekunden"]
    assert words["fr"] == ["zéro seconde", "une seconde", "deux secondes"]
    assert words["es"] == ["cero segundos", "un segundo", "dos segundos"]
    assert words["zh"] == ["零秒", "一秒", "两秒"] and words["ko"] == ["영 초", "일 초", "이 초"]
    assert spec.reference_variant().label == "en"


def test_in_context_and_formats_strings():
    ctx = load_protocol("in-context")
    assert _texts(ctx, "sentence-1", "kilogram", "local_0_10")[2] == "The parcel weighs 1 kilogram."
    assert _texts(ctx, "bare", "kilogram", "local_0_10") == cell_texts("kilogram", "local_0_10")
    fmt = load_protocol("formats")
    assert _texts(fmt, "thousands", "meter", "log_1_100k")[-3:] == ["38,312 meters", "61,897 meters",
                                                                    "100,000 meters"]
    assert _texts(fmt, "words", "meter", "log_1_100k")[15] == "one thousand three hundred thirty-four meters"
    assert _texts(fmt, "words", "second", "sign_split")[0] == "minus one hundred seconds"
    assert _texts(fmt, "scientific", "liter", "medium_0_1000")[:3] == ["0e+00 liters", "5e+01 liters",
                                                                       "1e+02 liters"]


@pytest.mark.parametrize("name", ["multilingual", "in-context", "formats"])
def test_builtins_run_and_align(name):
    from fasteval import evaluate

    spec = load_protocol(name)
    result = evaluate(FakeEncoder(), exams=(1,), protocol=name, bootstrap=200)
    exam1 = result.exams["exam1"]
    assert result.protocol == spec.key and len(exam1.cells) == len(spec.cells())
    assert all(c.texts and c.values and c.variant for c in exam1.cells), "each cell records what was asked"
    by_variant = exam1.summary()["by_variant"]
    assert list(by_variant) == [v.label for v in spec.variants]
    reference = spec.reference_variant().label
    assert "alignment_recall_at_1" not in by_variant[reference]
    assert all(0 <= by_variant[v.label]["alignment_recall_at_1"] <= 100 for v in spec.variants if not v.reference)
    assert len(exam1.alignment) == len(spec.cells()) - len(spec.quantities) * len(spec.ranges)
    with pytest.raises(Exception, match="does not support"):
        evaluate(FakeEncoder(), exams=(1, 2), protocol=name)


def test_alignment_by_hand():
    """Identical strings align perfectly: thousands separators change nothing below 1000 ("0.5 meters" is
    "0.5 meters"), so that cell's recall@1 is 1 and its texts' similarity to their own reference is 1."""
    from fasteval import evaluate

    result = evaluate(FakeEncoder(noise=0.3), exams=(1,), protocol="formats", bootstrap=0)
    rows = {(a.variant, a.quantity, a.range_name): a for a in result.exams["exam1"].alignment}
    same = rows[("thousands", "meter", "local_0_10")]
    assert same.recall_at_1 == 1.0 and same.mean_sim == pytest.approx(1.0, abs=1e-6)
    assert rows[("words", "meter", "local_0_10")].mean_sim < 0.99, "other strings, other embeddings"


GLUCOSE = '''
[protocol]
name = "glucose"
version = "1"
description = "Blood glucose in the two units labs report."
measures = "Does similarity follow the glucose level?"
exams = [1]

[languages.en]
template = "{number} {unit}"
plural = "none"

[[quantities]]
name = "glucose_mg_dl"
unit = "milligram / deciliter"
forms.en = ["mg/dL", "mg/dL"]

[[quantities]]
name = "glucose_mmol_l"
unit = "millimole / liter"
forms.en = ["mmol/L", "mmol/L"]

[[ranges]]
name = "fasting"
linspace = { start = 60, stop = 140, num = 17 }

[[ranges]]
name = "wide"
values = [40, 70, 100, 126, 180, 250, 400]
'''


def test_a_users_protocol_file_runs(tmp_path, tiny_st_folder, tiny_encoder, fasteval_home):
    path = tmp_path / "glucose.toml"
    path.write_text(GLUCOSE)
    spec = load_protocol(path)
    assert [c.texts[0] for c in spec.cells()][:2] == ["60 mg/dL", "40 mg/dL"]
    proc = run_cli(["sweep", "--model", tiny_st_folder, "--protocol", path, "--out", tmp_path / "out",
                    "--provider", "cpu", "--bootstrap", "100", "-q"], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr
    (result,) = (tmp_path / "out").rglob("results.json")
    data = json.loads(result.read_text())
    assert data["protocol"] == spec.key and data["settings"]["protocol_file"]["name"] == "glucose"
    assert [c["texts"][0] for c in data["exams"]["exam1"]["cells"]] == [c.texts[0] for c in spec.cells()]
    report = run_cli(["report", tmp_path / "out", "--no-png"])
    assert report.returncode == 0 and "[glucose]" in report.stdout


@pytest.mark.parametrize("edit, key", [
    (lambda t: t.replace('name = "glucose"', 'name = "glucose"\ncolour = "blue"'), "protocol.colour"),
    (lambda t: t.replace('"millimole / liter"', '"blorps / liter"'), "quantities.glucose_mmol_l.unit"),
    (lambda t: t.replace("values = [40, 70, 100, 126, 180, 250, 400]", "values = [40, 70]"), "ranges.wide"),
    (lambda t: t.replace('template = "{number} {unit}"', 'template = "{unit}"'), "languages.en.template"),
    (lambda t: t.replace("[protocol]", "[protocol"), "(file)"),
    (lambda t: t.replace("exams = [1]", "exams = [1, 2]"), "protocol.exams"),
    (lambda t: t.replace('linspace = { start = 60, stop = 140, num = 17 }', 'linspace = { start = 60 }'),
     "ranges.fasting.linspace"),
])
def test_bad_protocol_files_are_one_line_naming_file_and_key(tmp_path, edit, key):
    path = tmp_path / "bad.toml"
    path.write_text(edit(GLUCOSE))
    with pytest.raises(ProtocolError) as info:
        load_protocol(path)
    message = str(info.value)
    assert str(path) in message and key in message and "Fix:" in message and "\n" not in message
    out = tmp_path / "out"
    proc = run_cli(["sweep", "--model", tmp_path / "no-model", "--protocol", path, "--out", out], timeout=120)
    assert proc.returncode == 2
    one_line_error(proc, key)
    assert not out.exists(), "nothing written"


def test_unknown_protocol_name_is_one_line(tmp_path):
    one_line_error(run_cli(["sweep", "--protocol", "klingon", "--out", tmp_path / "o"]), "klingon",
                   "fasteval protocols")


def test_parse_errors_name_variants_and_digits():
    base = GLUCOSE + '\n[[variants]]\nlabel = "a"\ntemplate = "no number here"\n'
    with pytest.raises(ProtocolError, match="variants.a.template"):
        parse_protocol(base.encode(), "x.toml")
    words = GLUCOSE + '\n[digits_words]\ndigits = ["1", "2"]\nwords.en = ["one"]\n'
    with pytest.raises(ProtocolError, match="digits_words.words.en"):
        parse_protocol(words.encode(), "x.toml")


def test_scientific_range_follows_each_languages_plural_and_english_stays_the_papers():
    p = load_protocol("multilingual")
    texts = {(c.quantity, c.variant): c.texts for c in p.cells() if c.range_name == "scientific"}
    assert texts[("second", "en")] == next(c.texts for c in P.exam1_cells()
                                           if (c.quantity, c.range_name) == ("second", "scientific"))
    assert texts[("second", "de")][-1] == "1e+06 Sekunden" and texts[("second", "de")][12] == "1e+00 Sekunde"
    assert texts[("second", "fr")][0] == "1e-06 seconde" and texts[("second", "fr")][-1] == "1e+06 secondes"
    assert texts[("liter", "es")][0] == "1e-06 litros" and texts[("liter", "es")][12] == "1e+00 litro"


def test_the_docs_glucose_example_is_the_test_file_and_each_unit_has_its_own_range():
    readme = (ROOT / "docs" / "protocols.md").read_text()
    block = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    assert block == (TESTS / "data" / "glucose.toml").read_text()
    p = load_protocol(TESTS / "data" / "glucose.toml")
    for cell in p.cells():
        low, high = (2.0, 25.0) if cell.quantity == "glucose_mmol_l" else (30.0, 450.0)
        assert low <= cell.values.min() and cell.values.max() <= high, cell.key  # 60-140 mmol/L does not exist
    assert {c.quantity for c in p.cells()} == {"glucose_mg_dl", "glucose_mmol_l"} and len(p.cells()) == 4


class NumberOnlyEncoder:
    """An embedding of the number a text starts with alone (decimal point or comma): every language of one value
    embeds alike, so the seven renderings of a cell carry the information of one."""

    def encode(self, texts):
        import re

        rows = []
        for t in texts:
            match = re.match(r"-?\d[\d.,]*(e[-+]\d+)?", t)
            x = float(match.group(0).replace(",", ".")) if match else 0.0
            z = np.sign(x) * np.log1p(abs(x))
            rows.append([np.cos(z), np.sin(z), np.cos(3.1 * z + 0.4), 0.3])
        return np.array(rows, dtype=np.float32)


def test_multilingual_pooled_interval_resamples_values_not_renderings():
    """Seven renderings of one set of values are not seven samples: the pooled row's interval is as wide as one
    language's when every language embeds alike. Drawn independently per cell (as before), it came out about
    sqrt(7) times narrower."""
    from fasteval.core.exams import statistics as S
    from fasteval import evaluate

    exam1 = evaluate(NumberOnlyEncoder(), exams=(1,), name="n", protocol="multilingual", bootstrap=300).exams["exam1"]
    s = exam1.summary()
    pooled = s["tau_ci_high"] - s["tau_ci_low"]
    per_language = [row["tau_ci_high"] - row["tau_ci_low"] for row in s["by_variant"].values()]
    assert len(per_language) == 7 and min(per_language) > 1
    assert pooled == pytest.approx(np.mean(per_language), rel=0.05)
    rows = [np.asarray(m[0]) for m in (np.array(exam1.heatmaps[c.key]) for c in exam1.cells)]
    independent = S.resample_exam1(rows, 300, [np.array(c.values) for c in exam1.cells]).intervals()
    assert independent["tau_ci_high"] - independent["tau_ci_low"] < 0.6 * pooled, "the old way is too narrow"


def test_digits_words_figures_are_labelled_in_each_language():
    from fasteval.core.report.plots import _digits_words_labels
    from fasteval import evaluate

    exam1 = evaluate(FakeEncoder(), exams=(1,), name="fake", protocol="multilingual", bootstrap=0).exams["exam1"]
    digits, words = _digits_words_labels(exam1.for_variant("de"), "second")
    assert words[5] == "fünf Sekunden" and digits[5] == "5 Sekunden"
    paper = evaluate(FakeEncoder(), exams=(1,), name="fake", bootstrap=0).exams["exam1"]
    assert _digits_words_labels(paper, "meter") == (list(P.DIGITS), list(P.WORDS))


def test_results_record_what_was_embedded():
    from fasteval.core.results.files import result_files
    from fasteval import evaluate

    result = evaluate(FakeEncoder(), exams=(1, "conversion"), name="fake", normalize_quantities=True, bootstrap=0)
    data = json.loads(result_files(result)["results.json"])
    cell = next(c for c in data["exams"]["exam1"]["cells"] if c["range_name"] == "scientific")
    assert cell["texts"][0] == "1e-06 meter" and cell["embedded"][0] == "0.000001 meters"
    row = data["exams"]["conversion"]["rows"][0]
    assert row["texts_a"][0] == "0.01 meter" or row["texts_a"][0].endswith(("meter", "meters"))
    assert len(row["texts_b"]) == len(row["traps"]) == 40 and row["embedded_b"] is not None
    plain = json.loads(result_files(evaluate(FakeEncoder(), exams=(1, "conversion"), name="fake",
                                             bootstrap=0))["results.json"])
    assert plain["exams"]["conversion"]["rows"][0]["texts_b"] == row["texts_b"]
    assert plain["exams"]["exam1"]["cells"][0]["embedded"] is None
