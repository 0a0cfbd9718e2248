"""What a vector store keeps (core/vectors.py, --dimensions, --vector-quantization, --ladder vectors), held to
sentence-transformers: the same truncated unit rows, the same int8 integers and the same packed bits for the same
inputs and calibration; scored as a store scores them (the cosine of the integers, Hamming on the bits); keyed
apart only when asked for, from one float table in the cache."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fasteval
from fakes import CountingEncoder, FakeEncoder, one_line_error, run_cli
from fasteval.core.embeddings import EmbeddingTable
from fasteval.core.errors import InputError
from fasteval.core.plan import result_key, scoring
from fasteval.core.kernels.bits import pack_signs
from fasteval.core.vectors import quantize_int, truncate, vector_form

st_quantization = pytest.importorskip("sentence_transformers.quantization")

FLOATS = st.floats(-4, 4, width=32, allow_nan=False, allow_subnormal=False)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(1, 12), st.integers(1, 40)), elements=FLOATS),
       arrays(np.float32, st.tuples(st.integers(2, 12), st.integers(1, 1)), elements=FLOATS), st.data())
def test_int8_and_binary_are_sentence_transformers_own(x, cal_column, data):
    """The same integers and bits as quantize_embeddings for any input, calibration rows that repeat a value (a
    zero range), values outside the calibration range (clipped), ties and zeros."""
    calibration = data.draw(arrays(np.float32, (cal_column.shape[0], x.shape[1]), elements=FLOATS))
    calibration[:, 0] = calibration[0, 0]  # one dimension whose range is a single value
    ours = quantize_int(x, calibration, 8)
    theirs = st_quantization.quantize_embeddings(x, "int8", calibration_embeddings=calibration)
    assert ours.dtype == np.int8 and theirs.dtype == np.int8
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(pack_signs(x), st_quantization.quantize_embeddings(x, "ubinary"))


def test_truncation_is_sentence_transformers_truncate_dim(tiny_st_folder, tiny_encoder):
    """The first N dimensions, then L2-normalised: SentenceTransformer(truncate_dim=N) with normalize_embeddings."""
    from sentence_transformers import SentenceTransformer

    texts = ["5 meters", "five kilograms", "0.25 seconds", "1000000 kelvin"]
    model = SentenceTransformer(str(tiny_st_folder), device="cpu", truncate_dim=12)
    theirs = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    ours = truncate(tiny_encoder.encode(texts), 12)
    assert ours.shape == theirs.shape == (4, 12)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-6)


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class QuantizedEncoder(FakeEncoder):
    """What a store would hand back: the FakeEncoder's unit vectors (the paper's normalize_embeddings=True)
    quantized by sentence-transformers (int8: as floats of the integers, calibrated on Table 1's texts; binary:
    +-1, whose cosine is 1 - 2 Hamming / d)."""

    def __init__(self, precision: str, calibration_texts: list[str]):
        super().__init__()
        self.precision = precision
        self.calibration = unit(FakeEncoder().encode(calibration_texts))

    def encode(self, texts):
        x = unit(super().encode(texts))
        if self.precision == "int8":
            return st_quantization.quantize_embeddings(x, "int8",
                                                       calibration_embeddings=self.calibration).astype(np.float32)
        if self.precision == "int4":  # sentence-transformers' int8 arithmetic, element by element, with 16 levels
            lo, hi = self.calibration.min(axis=0), self.calibration.max(axis=0)
            step = (hi - lo) / np.float32(15)
            return np.array([[min(15, max(0, int(np.floor((v - lo[k]) / step[k])))) - 8 for k, v in enumerate(row)]
                             for row in x], dtype=np.float32)
        if self.precision == "binary-centred":
            return np.where(x - self.calibration.mean(axis=0) > 0, 1.0, -1.0).astype(np.float32)
        return np.where(x > 0, 1.0, -1.0).astype(np.float32)


@pytest.mark.parametrize("precision", ["int8", "int4", "binary", "binary-centred"])
def test_a_quantized_run_scores_what_a_store_of_those_vectors_scores(precision):
    """evaluate(float encoder, vector_quantization=...) gives Table 1 (every cell's tau and PACC) of an encoder
    that hands out the quantized vectors (sentence-transformers' int8; int8's arithmetic with 16 levels; the signs,
    of the centred vectors for binary-centred): the cosine of the integers for int8 and int4, Hamming for the
    one-bit forms (an affine map of the +-1 vectors' cosine, so every rank, tie and pair agrees)."""
    table1 = scoring().table1_texts()
    ours = fasteval.evaluate(FakeEncoder(), exams=(1,), bootstrap=0, vector_quantization=precision)
    store = fasteval.evaluate(QuantizedEncoder(precision, table1), exams=(1,), bootstrap=0)
    got = [(c.tau, c.pacc) for c in ours.exams["exam1"].cells]
    theirs = [(c.tau, c.pacc) for c in store.exams["exam1"].cells]
    if precision == "int4":
        # the same integers (every text's), but the store's path normalises the integer rows once more: with 16
        # levels many similarities tie exactly, and a last float bit breaks a few of those ties otherwise
        texts = list(dict.fromkeys(t for c in ours.exams["exam1"].cells for t in c.texts))
        table = EmbeddingTable()
        table.add(texts, unit(FakeEncoder().encode(texts)))
        np.testing.assert_array_equal(vector_form(None, "int4").apply(table, table1)[texts],
                                      QuantizedEncoder("int4", table1).encode(texts))
        assert max(abs(a - b) for x, y in zip(got, theirs) for a, b in zip(x, y)) < 0.05, (got, theirs)
    else:
        assert got == theirs
    plain = fasteval.evaluate(FakeEncoder(), exams=(1,), bootstrap=0)
    assert got != [(c.tau, c.pacc) for c in plain.exams["exam1"].cells], "the quantization changed nothing"
    assert ours.settings["vector_quantization"] == precision
    assert ours.settings["similarity"] == ("hamming" if precision.startswith("binary") else "cos")


def test_calibration_is_table1_of_the_protocol_or_the_texts_given(tmp_path):
    """int8 is calibrated on Table 1's texts whatever exams run (an exam 2 run embeds them too, after its own
    calls), or on a file's texts, keyed by their hash."""
    enc = FakeEncoder()
    fasteval.evaluate(enc, exams=(2,), bootstrap=0, vector_quantization="int8")
    assert set(enc.calls[-1]) <= set(scoring().table1_texts()) and len(enc.calls) == 2
    texts = tmp_path / "cal.txt"
    texts.write_text("# mine\n1 meter\n2 meters\n300 meters\n")
    a = fasteval.evaluate(FakeEncoder(), exams=(1,), bootstrap=0, vector_quantization="int8", calibration=texts)
    b = fasteval.evaluate(FakeEncoder(), exams=(1,), bootstrap=0, vector_quantization="int8")
    assert a.settings["calibration"].startswith("sha256:") and b.settings["calibration"] == "table1"
    assert result_key(a.settings) != result_key(b.settings)


def test_the_paper_keys_are_untouched_and_every_form_keys_apart():
    info = {"model": "m", "onnx_sha256": "x", "provider": "cpu", "dtype": "fp32", "prompt": ""}
    plain = scoring()
    assert "dimensions" not in plain.keyed and "vector_quantization" not in plain.keyed
    keys = {result_key(scoring(**kw).settings(info)) for kw in
            ({}, {"dimensions": 8}, {"dimensions": 4}, {"vector_quantization": "int8"},
             {"vector_quantization": "binary"}, {"dimensions": 8, "vector_quantization": "binary"})}
    assert len(keys) == 6


def test_bad_vector_options_are_refused_by_name():
    with pytest.raises(InputError, match="whole number >= 1"):
        vector_form(dimensions=0)
    with pytest.raises(InputError, match="vector quantization"):
        vector_form(quantization="int3")
    with pytest.raises(InputError, match="binary-centred vectors only"):
        vector_form(quantization="binary", calibration=["a", "b"])
    with pytest.raises(InputError, match="Hamming"):
        scoring(similarity="dot", vector_quantization="binary")
    with pytest.raises(InputError, match="not below the model's dimension 16"):
        fasteval.evaluate(FakeEncoder(dim=16), exams=(1,), bootstrap=0, dimensions=16)


def test_check_scores_the_stores_vectors():
    enc = FakeEncoder()
    plain = fasteval.check(enc, "2 kilometers", ["2000 meters", "2 meters", "20 meters"])
    binary = fasteval.check(FakeEncoder(), "2 kilometers", ["2000 meters", "2 meters", "20 meters"],
                            vector_quantization="binary")
    assert binary.similarity == "hamming" and plain.similarity == "cos"
    signs = np.where(FakeEncoder().encode(["2 kilometers", "2000 meters"]) > 0, 1, 0)
    assert binary.candidates[0].similarity == pytest.approx(1 - (signs[0] != signs[1]).mean(), abs=1e-7)


def test_the_ladder_embeds_once_and_resumes(tmp_path):
    """Every rung of --ladder vectors from one embedding run (the float table's cache), one table written; a rerun
    skips every rung and writes the same table."""
    from fasteval.core.runs.sweep import plan_sweep, run_sweep, sweep_ladders

    loaded = []

    def loader(name, **options):
        enc = CountingEncoder(name, dim=300)
        loaded.append(enc)
        return enc

    jobs = plan_sweep(exams=(1,), bootstrap=200, ladder="vectors").jobs(["m"], {}, loader)
    assert [j.rung.label for j in jobs] == [
        "full", "256", "128", "64", "int8", "int4", "binary", "binary-centred", "binary-asymmetric", "256+binary",
        # no TurboQuant of all 300 dimensions (8 | dim); then the bytes-matched rungs: 48, 96 and 192 bytes a vector
        "12", "48+int8", "96+int4", "96+turboquant4", "192+turboquant2", "24", "96+int8", "192+int4",
        "192+turboquant4", "48", "192+int8"]
    out = tmp_path / "out"
    home = tmp_path / "home"
    outcomes = run_sweep(jobs, out, loader, cache_root=home)
    assert [o.status for o in outcomes] == ["done"] * 21
    assert loaded[0].calls == [["1 meter"]]  # the model's dimension, asked of it once
    # one embedding run (the full rung's); each later rung embeds only the cache's canary (one text, checked
    # against the cached row before the cache is trusted)
    assert len(loaded) == 22 and sum(map(len, loaded[1].calls)) > 800
    assert all([len(c) for c in enc.calls] == [1] for enc in loaded[2:]), [enc.calls for enc in loaded[2:]]
    assert set(scoring(exams=(1,)).table1_texts()) <= {t for call in loaded[1].calls for t in call}
    (rows, path, baselines, view), = sweep_ladders(jobs, outcomes, out)
    assert [b["model"] for b in baselines] == ["surface: byte counts", "surface: character 3-gram TF-IDF"]
    assert [r["bytes_per_vector"] for r in rows] == [1200, 1024, 512, 256, 300, 150, 38, 38, 38, 32,
                                                               48, 48, 48, 48, 48, 96, 96, 96, 96, 192, 192]
    matched = json.loads((out / "ladders" / "m.json").read_text())["bytes_matched"]
    assert {b: sorted(labels) for b, labels in matched.items()} == {
        "48": ["12", "192+turboquant2", "48+int8", "96+int4", "96+turboquant4"],
        "96": ["192+int4", "192+turboquant4", "24", "96+int8"], "192": ["192+int8", "48"]}
    assert {str(b): [r["rung"] for r in same] for b, same in view.items()} == matched
    by = {r["rung"]: r for r in rows}
    assert all(by[a]["tau"] >= by[b]["tau"] for labels in matched.values() for a, b in zip(labels, labels[1:]))
    assert rows[0]["delta_tau"] == 0.0 and rows[1]["delta_tau_ci_low"] <= rows[1]["delta_tau"] \
        <= rows[1]["delta_tau_ci_high"]
    assert json.loads((out / "ladders" / "m.json").read_text())["rows"] == json.loads(json.dumps(rows))
    again = run_sweep(plan_sweep(exams=(1,), bootstrap=200, ladder="vectors").jobs(["m"], {}, loader), out,
                      loader, cache_root=home)
    assert [o.status for o in again] == ["skipped"] * 21
    assert sweep_ladders(jobs, again, out)[0][0] == rows


def test_the_cli_refuses_a_dimension_not_below_the_models_in_one_line(tiny_st_folder, fasteval_home, tmp_path):
    proc = run_cli(["sweep", "--model", tiny_st_folder, "--exams", "1", "--bootstrap", "0", "--provider", "cpu",
                    "--dimensions", "32", "--out", tmp_path / "out"], env={"FASTEVAL_HOME": str(fasteval_home)})
    one_line_error(proc, "--dimensions 32 is not below the model's dimension 32")
    assert proc.returncode == 2  # bad input: one model, so the sweep stops on it


def test_the_surface_baselines_are_their_references():
    """Byte counts are numpy's bincount of the UTF-8 bytes; the 3-gram TF-IDF is scikit-learn's TfidfVectorizer
    (char 3-grams, no lowercasing, smoothed idf, L2 rows) fitted on the same corpus; and the byte counts score the
    Table 1 a new user measured with a ten-line encoder (tau 36.0, PACC 55.4: tau earned by surface form)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from fasteval.core.protocol.baselines import surface_baselines
    from fasteval.models.baselines import ByteCounts, CharTrigrams

    corpus = [t for g in scoring(exams=(1,)).groups() for t in g]
    texts = ["5 meters", "2000  meters", "zwei Kilometer (km)", "ab", "", "5 mètres"]
    theirs = TfidfVectorizer(analyzer="char", ngram_range=(3, 3), lowercase=False).fit(corpus).transform(texts)
    np.testing.assert_allclose(CharTrigrams(corpus).encode(texts), theirs.toarray(), rtol=0, atol=1e-6)
    counts = ByteCounts().encode(texts)
    assert counts.shape == (6, 256) and counts[5, 0xC3] == 1 and counts[1, ord(" ")] == 2
    np.testing.assert_array_equal(counts.sum(axis=1), [len(t.encode()) for t in texts])
    rows = {b["model"]: b for b in surface_baselines()}
    assert (rows["surface: byte counts"]["tau"], rows["surface: byte counts"]["pacc"]) == (36.0, 55.42)


def test_the_shipped_surface_baselines_are_what_they_compute():
    """The surface baselines a report shows are data shipped beside the protocols (a report runs no exam): every
    built-in protocol under every similarity, equal to what the baselines compute today, to the last digit (a
    changed protocol or baseline fails here: python -m fasteval.core.runs.baselines writes the file again)."""
    from fasteval.core.protocol.baselines import SURFACE_FILE, surface_baselines
    from fasteval.core.runs.baselines import computed

    shipped = json.loads(SURFACE_FILE.read_text(encoding="utf-8"))
    assert shipped == computed()
    paper = next(k for k in shipped["protocols"] if k.startswith("paper-"))
    assert surface_baselines("paper", "cos") == shipped["protocols"][paper]["cos"]
    with pytest.raises(KeyError):
        surface_baselines("not-a-protocol")


@settings(max_examples=60, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(2, 16), st.integers(1, 12)), elements=FLOATS), st.data())
def test_int4_is_int8s_arithmetic_with_16_levels(calibration, data):
    """int4: each dimension's calibration range in 15 steps, clipped to -8..7 (16 levels), monotone in each
    dimension; the calibration's min is the bottom level and its max the top one, or the one below where the float32
    step rounds it down (as sentence-transformers' int8 does with 255); the floats a level stands for are within a
    step of the value it came from (inside the range)."""
    from fasteval.core.vectors import dequantize_int, quantize_int

    x = data.draw(arrays(np.float32, (5, calibration.shape[1]), elements=FLOATS))
    q = quantize_int(x, calibration, 4)
    assert q.dtype == np.int8 and q.min() >= -8 and q.max() <= 7
    lo, hi = calibration.min(axis=0), calibration.max(axis=0)
    ends = quantize_int(np.stack([lo, hi]), calibration, 4)
    ranged = hi > lo
    assert (ends[0][ranged] == -8).all() and (ends[1][ranged] >= 6).all()
    order = np.argsort(x, axis=0, kind="stable")
    assert (np.diff(np.take_along_axis(q, order, axis=0).astype(int), axis=0) >= 0).all()
    inside = (x >= lo) & (x <= hi) & ranged
    step = (hi - lo) / 15
    back = dequantize_int(q, calibration, 4)
    assert (np.abs(back - x)[inside] <= np.broadcast_to(step, x.shape)[inside] * 1.5 + 1e-30).all()


def test_the_asymmetric_forms_score_as_the_store_scores_a_float_query():
    """binary-asymmetric: the float query's dot product with the stored +-1 vector (numpy's); TurboQuant: exactly
    the inner products turbovec's own search returns (an index of its own, queried independently), the query
    against every stored text; neither is symmetric, and each is keyed and recorded as such."""
    from fasteval.core.vectors import StoredTable

    turbovec = pytest.importorskip("turbovec")
    rng = np.random.default_rng(7)
    x = unit(rng.normal(size=(40, 64))).astype(np.float32)
    texts = [f"t{k}" for k in range(40)]
    table = EmbeddingTable()
    table.add(texts, x)
    signs = vector_form(None, "binary-asymmetric").apply(table, texts)
    assert isinstance(signs, StoredTable)
    np.testing.assert_allclose(signs.similarities(texts[:5], texts), x[:5] @ np.where(x > 0, 1.0, -1.0).T,
                               rtol=0, atol=1e-6)
    np.testing.assert_array_equal(signs[texts], np.where(x > 0, 1.0, -1.0))
    for bits in (4, 2):
        stored = vector_form(None, f"turboquant{bits}").apply(table, texts)
        index = turbovec.TurboQuantIndex(dim=64, bit_width=bits)
        index.add(x)
        scores, at = index.search(x[:7], k=40)
        got = stored.similarities(texts[:7], texts)
        assert np.array_equal(np.take_along_axis(got, np.asarray(at, dtype=np.int64), axis=1), scores)
        assert not np.allclose(got, stored.similarities(texts, texts[:7]).T), "a float query, stored codes"
        np.testing.assert_array_equal(stored.paired(texts[:3], texts[5:8]), got[[0, 1, 2], [5, 6, 7]])
    result = fasteval.evaluate(FakeEncoder(), exams=(1,), bootstrap=0, vector_quantization="turboquant4")
    assert result.settings["similarity"] == "query-dot" and result.settings["turbovec"] == turbovec.__version__
    floats = fasteval.evaluate(FakeEncoder(), exams=(1,), bootstrap=0)
    assert [c.tau for c in result.exams["exam1"].cells] != [c.tau for c in floats.exams["exam1"].cells]
    with pytest.raises(InputError, match="as the store scores a float query"):
        scoring(similarity="dot", vector_quantization="turboquant4")
    with pytest.raises(InputError, match="multiples of 8"):
        fasteval.evaluate(FakeEncoder(dim=30), exams=(1,), bootstrap=0, vector_quantization="turboquant2")


def test_without_turbovec_the_ladder_says_so_once_and_leaves_the_turboquant_rungs_out(monkeypatch, caplog):
    """The ladder printed its TurboQuant hint 8 times, once a rung it considered (issue 66, item 14)."""
    import logging
    import sys

    from fasteval.core.runs import ladder

    monkeypatch.setitem(sys.modules, "turbovec", None)  # as where the stores extra is not installed
    monkeypatch.setattr(ladder, "_TURBOVEC_HINTED", [])
    with caplog.at_level(logging.INFO, logger="fasteval"):
        rungs = [r for dim in (384, 768) for r in ladder.vector_rungs(dim)]
    hints = [r for r in caplog.records if "TurboQuant rungs are left out" in r.getMessage()]
    assert len(hints) == 1 and not any(r.quantization and r.quantization.startswith("turboquant") for r in rungs)
