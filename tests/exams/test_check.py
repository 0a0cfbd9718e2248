"""`fasteval check`, the conversion exam and --normalize-quantities, against straightforward references
(scipy, numpy) on fake and tiny models; the default model's numbers are in test_fidelity.py."""
from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import kendalltau

from fasteval.core import protocol as P
from fasteval.core.errors import InputError

from fakes import CountingEncoder, FakeEncoder, one_line_error, run_cli


class TableEncoder:
    """Embeddings from a fixed text -> vector table (for similarities chosen by hand)."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.seen = vectors, []

    def encode(self, texts):
        self.seen.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def test_check_by_hand():
    import fasteval

    # cos to the anchor: 2000 meters 0.6, 2 meters 0.8, 1.5 km 0.7 (unit vectors, angles chosen)
    def unit(c):
        return [c, math.sqrt(1 - c * c)]

    enc = TableEncoder({"2 kilometers": [1.0, 0.0], "2000 meters": unit(0.6), "2 meters": unit(0.8),
                        "1.5 km": unit(0.7)})
    result = fasteval.check(enc, "2 kilometers", ["2000 meters", "2 meters", "1.5 km"], name="hand")
    sims = {c.text: c.similarity for c in result.candidates}
    assert sims == pytest.approx({"2000 meters": 0.6, "2 meters": 0.8, "1.5 km": 0.7}, abs=1e-6)
    distances = {c.text: c.distance for c in result.candidates}
    assert distances == pytest.approx({"2000 meters": 0.0, "2 meters": 1.998, "1.5 km": 0.5})
    assert {c.unit for c in result.candidates} == {"kilometer"}
    # closer-first order 2000 m, 1.5 km, 2 m; similarity order is the reverse: every pair discordant.
    assert result.tau == pytest.approx(-1.0) and result.pacc == 0.0
    assert sorted(result.discordant_pairs) == sorted([("2000 meters", "2 meters"), ("2000 meters", "1.5 km"),
                                                      ("1.5 km", "2 meters")])
    lines = result.discordant_lines()
    assert "2 meters is more similar than 2000 meters, but 1.998 km farther" in lines, "in the anchor's unit"
    assert "1.5 km is more similar than 2000 meters, but 0.5 km farther" in lines
    assert [c.text for c in sorted(result.candidates, key=lambda c: c.distance)] == ["2000 meters", "1.5 km",
                                                                                     "2 meters"]
    assert enc.seen == [["2 kilometers", "2000 meters", "2 meters", "1.5 km"]], "one encode call"
    data = result.to_json()
    assert set(data) >= {"anchor", "candidates", "tau", "pacc", "discordant_pairs", "model"}
    assert data["candidates"][0] == {"text": "2000 meters", "similarity": pytest.approx(0.6, abs=1e-6),
                                     "distance": 0.0, "unit": "kilometer", "log_ratio": 0.0,
                                     "encoded_as": "2000 meters"}


def _reference_check(encoder, anchor: str, candidates: list[str]):
    """scipy and numpy, from the words of the check's definition."""
    from fasteval.core.quantities import parse_quantity

    emb = np.asarray(encoder.encode([anchor, *candidates]), dtype=np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sims = emb[1:] @ emb[0]
    a = parse_quantity(anchor)
    dist = np.array([abs(parse_quantity(c).to(a.unit) - a.value) for c in candidates])
    tau = kendalltau(sims, -dist).statistic
    pairs = [(i, j) for i, j in combinations(range(len(dist)), 2) if dist[i] != dist[j]]
    right = sum((sims[i] > sims[j]) if dist[i] < dist[j] else (sims[j] > sims[i]) for i, j in pairs)
    return sims, tau, right / len(pairs)


@pytest.mark.parametrize("candidates", [
    ["2000 meters", "2 meters", "1.5 km", "3 km", "800 m", "2.2 kilometers", "12 meters"],
    ["1 km", "1000 m", "3 km", "3000 meters", "0.5 km"],  # distance ties (1 km and 3 km are both 1 km away)
])
def test_check_equals_scipy_on_sentence_transformers_embeddings(tiny_st_folder, candidates):
    """The tiny model through sentence-transformers itself: check's tau and PACC equal scipy's."""
    from sentence_transformers import SentenceTransformer

    import fasteval

    st = SentenceTransformer(str(tiny_st_folder), device="cpu")
    result = fasteval.check(st, "2 kilometers", candidates)
    sims, tau, pacc = _reference_check(st, "2 kilometers", candidates)
    assert [c.similarity for c in result.candidates] == pytest.approx(sims, abs=1e-6)
    assert result.tau == pytest.approx(tau, abs=1e-12) and result.pacc == pytest.approx(pacc, abs=1e-12)


def test_check_bad_inputs():
    import fasteval

    enc = FakeEncoder()
    for candidates, fragment in (([], "a candidate besides the anchor"),
                                 (["2000 meters", "3 seconds"], "'3 seconds' is a [time]"),
                                 (["2000 meters", "2 blorps"], "does not know the unit"),
                                 (["2000 meters", "meters"], "Cannot read a number")):
        with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
            fasteval.check(enc, "2 kilometers", candidates)
    with pytest.raises(InputError, match="similarity"):
        fasteval.check(enc, "2 kilometers", ["1 m", "2 m"], similarity="manhattan")


def test_check_normalized_gives_the_model_canonical_texts():
    import fasteval

    enc = FakeEncoder()
    result = fasteval.check(enc, "2 kilometers", ["2000 meters", "five meters"], normalize_quantities=True)
    assert enc.calls == [["2000 meters", "2000 meters", "5 meters"]]
    assert [c.encoded_as for c in result.candidates] == ["2000 meters", "5 meters"]
    assert result.candidates[0].similarity == pytest.approx(1.0, abs=1e-6) and result.normalized


@pytest.mark.parametrize("args, fragment", [
    (["2 kilometers", "2000 meters", "3 seconds"], "'3 seconds' is a [time]"),
    (["2 kilometers"], "a candidate besides the anchor"),
    (["2 kilometers", "2000 meters", "2 blorps"], "'2 blorps'"),
    ([], "needs an anchor"),
])
def test_cli_check_bad_input_is_one_line_and_exit_2(args, fragment, tmp_path):
    proc = run_cli(["check", *args, "--model", tmp_path / "no-model"], timeout=120)
    assert proc.returncode == 2
    one_line_error(proc, fragment, "Fix:")


def test_check_reads_the_texts_before_a_download_and_after_a_local_load(tiny_st_folder, tiny_encoder, tmp_path,
                                                                         fasteval_home):
    """pint's registry loads beside a local model's session (issue 67: 2); a model still to download is never
    fetched for texts pint refuses, and a local one (its export cached) refuses them in the same line."""
    from fasteval.models.sources.registry import is_local

    empty = tmp_path / "home"
    assert is_local(str(tiny_st_folder))
    for model, home in (("all-mpnet-base-v2", empty), (tiny_st_folder, fasteval_home)):
        proc = run_cli(["check", "2 kilometers", "2000 meters", "2 blorps", "--model", model], timeout=300,
                       env={"FASTEVAL_HOME": str(home)})
        assert proc.returncode == 2
        one_line_error(proc, "'2 blorps'", "Fix:")
    assert not (empty / "models").exists() or not any((empty / "models").iterdir()), "nothing was fetched"


def test_one_candidate_answers_how_similar_and_how_far(tiny_st_folder, fasteval_home):
    """"How similar are these two?" (refused before: "needs at least two candidates"): the similarity (numpy's
    cosine of sentence-transformers' embeddings) and the physical distance, no ranking, tau and PACC null."""
    from sentence_transformers import SentenceTransformer

    env = {"FASTEVAL_HOME": str(fasteval_home)}
    st = SentenceTransformer(str(tiny_st_folder), device="cpu")
    a, b = st.encode(["2 kilometers", "2000 meters"], normalize_embeddings=True)
    expected = float(np.dot(a, b))
    proc = run_cli(["check", "2 kilometers", "2000 meters", "--model", tiny_st_folder, "--json", "--provider", "cpu"],
                   env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tau"] is None and data["pacc"] is None and data["discordant_count"] == 0
    (only,) = data["candidates"]
    assert only["similarity"] == pytest.approx(expected, abs=1e-5)
    assert only["distance"] == pytest.approx(0.0, abs=1e-9) and only["unit"] == "kilometer"
    text = run_cli(["check", "2 kilometers", "2 meters", "--model", tiny_st_folder, "--provider", "cpu", "-q"],
                   env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "rank" not in lines[1] and "Kendall" not in text.stdout
    assert lines[2].split()[:3] == ["2", "meters", lines[2].split()[2]] and "1.998 km" in lines[2]
    assert "one candidate: no ranking" in lines[3]


def test_cli_check_file_and_json(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("# anchor first\n2 kilometers\n2000 meters\n2 meters\n\n1.5 km\n")
    proc = run_cli(["check", "--file", f, "--model", tiny_st_folder, "--json", "--provider", "cpu"],
                   env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["anchor"] == "2 kilometers" and [c["text"] for c in data["candidates"]] == \
        ["2000 meters", "2 meters", "1.5 km"]
    sims, tau, pacc = _reference_check(tiny_encoder, "2 kilometers", ["2000 meters", "2 meters", "1.5 km"])
    assert [c["similarity"] for c in data["candidates"]] == pytest.approx(sims, abs=1e-6)
    assert data["tau"] == pytest.approx(tau) and data["pacc"] == pytest.approx(pacc)
    table = run_cli(["check", "--file", f, "--model", tiny_st_folder, "--provider", "cpu"],
                    env={"FASTEVAL_HOME": str(fasteval_home)})
    assert table.returncode == 0 and "Kendall tau-b" in table.stdout and "2000 meters" in table.stdout


# --- the conversion exam -------------------------------------------------------------------------------------
def naive_conversion(sims: np.ndarray, trap: np.ndarray) -> dict[str, float]:
    n = len(sims)
    ranks = [1 + sum(sims[i, j] >= sims[i, i] for j in range(n) if j != i) for i in range(n)]
    return {"recall_at_1": sum(r == 1 for r in ranks) / n, "mrr": sum(1 / r for r in ranks) / n,
            "mean_sim_equivalent": sum(sims[i, i] for i in range(n)) / n,
            "mean_sim_other": sum(sims[i, j] for i in range(n) for j in range(n) if i != j) / (n * n - n),
            "lexical_trap_rate": sum(trap[i] > sims[i, i] for i in range(n)) / n}


@pytest.mark.parametrize("seed", range(5))
def test_score_pair_equals_the_naive_definition(seed):
    from fasteval.core.exams.conversion import score_pair

    rng = np.random.default_rng(seed)
    sims = np.round(rng.uniform(0, 1, size=(12, 12)), 1)  # rounding makes ties
    trap = np.round(rng.uniform(0, 1, size=12), 1)
    assert score_pair(sims, trap) == pytest.approx(naive_conversion(sims, trap))


def test_conversion_exam_texts_use_pint():
    for pair in P.CONVERSION_PAIRS:
        a, b, traps = P.conversion_exam_texts(pair)
        paper_a, paper_b = P.conversion_texts(pair)
        assert a == paper_a and len(b) == len(traps) == 40
        assert traps[0] == P.format_quantity(0.01, pair.unit_b)
        if pair.unit_b == "gallon":
            assert b[-1] == "264.172 gallons" and paper_b[-1] == "3785 gallons"  # 1000 L, pint vs the paper
        else:
            assert b == paper_b, pair


def test_conversion_exam_on_a_fake_model_and_in_the_files(tmp_path):
    from fasteval.core.results.files import result_files
    from fasteval import evaluate

    enc = FakeEncoder()
    result = evaluate(enc, exams=(1, "conversion"), name="fake")
    conv = result.exams["conversion"]
    assert [r.unit_a + ">" + r.unit_b for r in conv.rows] == [p.unit_a + ">" + p.unit_b for p in P.CONVERSION_PAIRS]
    # The fake's embedding depends only on the number in front: "1 meter" and "1 centimeter" embed alike
    # (noise apart), so the trap wins far more often than chance.
    assert conv.summary()["lexical_trap_rate"] > 0.5
    files = result_files(result)
    assert files["fake_conversion.csv"].count("\n") == 12
    assert json.loads(files["results.json"])["exams"]["conversion"]["summary"]["recall_at_1"] == \
        pytest.approx(conv.summary()["recall_at_1"])
    assert "mteb/PhysScoreConversion.json" in files
    # Extension texts come after the paper's groups, so paper texts embed exactly as in a paper run.
    paper_only = FakeEncoder()
    evaluate(paper_only, exams=(1,), name="fake")
    assert enc.calls[:len(paper_only.calls)] == paper_only.calls
    assert len(enc.calls) > len(paper_only.calls), "the gallons and the traps are new texts"


def test_extension_groups_never_change_paper_numbers():
    from fasteval import evaluate

    plain = evaluate(FakeEncoder(), exams=(1, 2, 3), name="fake")
    more = evaluate(FakeEncoder(), exams=(1, 2, 3, "conversion"), name="fake")
    for key in ("exam1", "exam2", "exam3"):
        assert more.exams[key].summary() == plain.exams[key].summary(), key


def test_normalization_is_its_own_key_and_leaves_the_paper_key(tmp_path):
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    def loader(name, **options):
        return CountingEncoder(name)

    out = tmp_path / "out"
    plain = run_sweep([Job("m", exams=(1,))], out, loader, cache_root=False)[0]
    norm = run_sweep([Job("m", exams=(1,), normalize_quantities=True)], out, loader, cache_root=False)[0]
    assert plain.path != norm.path and norm.status == "done"
    settings = json.loads((norm.path / "results.json").read_text())["settings"]
    assert settings["normalize_quantities"] == "canonical-1"
    assert "normalize_quantities" not in json.loads((plain.path / "results.json").read_text())["settings"]
    again = run_sweep([Job("m", exams=(1,))], out, loader, cache_root=False)[0]
    assert again.status == "skipped" and again.path == plain.path


def test_normalized_exam1_embeds_canonical_texts():
    from fasteval import evaluate

    enc = FakeEncoder()
    evaluate(enc, exams=(1,), name="fake", normalize_quantities=True)
    seen = {t for call in enc.calls for t in call}
    assert "0.000001 meters" in seen and "1e-06 meter" not in seen
    assert "5 meters" in seen and "five meter" not in seen


# --- correct to the last digit: ties, temperatures, limits ------------------------------------------------------
def _similarities_in_order(texts: list[str]):
    """A TableEncoder whose cos to the anchor (texts[0]) falls in the order of texts[1:] (0.9, 0.8, ... for a few)."""
    def unit(c):
        return [c, math.sqrt(1 - c * c)]

    step = 0.1 if len(texts) < 10 else 1.8 / len(texts)
    return TableEncoder({texts[0]: [1.0, 0.0], **{t: unit(0.9 - step * k) for k, t in enumerate(texts[1:])}})


def test_physically_equal_distances_tie():
    import fasteval

    candidates = ["0.7 meters", "70 centimeters", "1.3 meters", "130 centimeters", "2 meters"]
    result = fasteval.check(_similarities_in_order(["1 meter", *candidates]), "1 meter", candidates)
    distances = [c.distance for c in result.candidates]
    assert distances[:4] == [distances[0]] * 4 and distances[0] == pytest.approx(0.3)
    # similarity falls along the list; distance ties in the first four, then 2 meters is farthest: tau-b with
    # ties (scipy on the exact distances), and no discordant pair among the tied ones.
    exact = np.array([0.3, 0.3, 0.3, 0.3, 1.0])
    expected = kendalltau(np.array([0.9, 0.8, 0.7, 0.6, 0.5]), -exact).statistic
    assert result.tau == pytest.approx(expected) and result.tau == pytest.approx(0.6324555, abs=1e-6)
    assert result.discordant_count == 0 and result.pacc == 1.0


def test_temperature_gaps_are_temperature_differences():
    import fasteval

    result = fasteval.check(_similarities_in_order(["-5 degC", "-40 degF", "23 degF"]), "-5 degC",
                            ["-40 degF", "23 degF"])
    by_text = {c.text: c for c in result.candidates}
    assert by_text["23 degF"].distance == 0.0, "-5 degC is 23 degF"
    assert by_text["-40 degF"].distance == pytest.approx(35.0)  # -40 degF = -40 degC: 35 K from -5 degC
    assert result.discordant_lines() == ["-40 degF is more similar than 23 degF, but 35 Δ°C farther"]
    assert all(c.log_ratio is None for c in result.candidates) and any("no log10 ratio" in n for n in result.notes)
    assert result.tau == pytest.approx(-1.0)
    tied = fasteval.check(_similarities_in_order(["-5 degC", "23 degF", "268.15 kelvin", "20 degC"]), "-5 degC",
                          ["23 degF", "268.15 kelvin", "20 degC"])
    assert [c.distance for c in tied.candidates] == [0.0, 0.0, pytest.approx(25.0)]
    assert tied.discordant_count == 0 and tied.tau == pytest.approx(kendalltau([0.9, 0.8, 0.7], [0, 0, -25]).statistic)


@pytest.mark.parametrize("text, unit", [("20 degrees Celsius", "degree_Celsius"), ("2 light years", "light_year"),
                                        ("3 light year", "light_year"), ("5 metres", "meter")])
def test_pint_spellings_with_spaces_and_plurals(text, unit):
    from fasteval.core.quantities import parse_quantity

    assert parse_quantity(text).unit == unit


def test_gaps_print_with_the_inputs_precision():
    import fasteval

    # the gap is in the anchor's unit, with the inputs' precision: about one light year (it once printed 26 digits)
    result = fasteval.check(_similarities_in_order(["2 light years", "1 angstrom", "1 light year"]), "2 light years",
                            ["1 angstrom", "1 light year"])
    assert result.discordant_lines() == ["1 angstrom is more similar than 1 light year, but 1 ly farther"]
    result = fasteval.check(_similarities_in_order(["1 angstrom", "1 light year", "2 nanometers"]), "1 angstrom",
                            ["1 light year", "2 nanometers"])
    assert result.discordant_lines() == ["1 light year is more similar than 2 nanometers, but 9.46e+25 Å farther"]
    result = fasteval.check(_similarities_in_order(["1 meter", "0.30 meters", "0.7 meters"]), "1 meter",
                            ["0.30 meters", "0.7 meters"])
    assert result.discordant_lines() == ["0.30 meters is more similar than 0.7 meters, but 0.4 m farther"]


def test_discordant_pairs_are_counted_and_listed_up_to_a_limit():
    import fasteval
    from fasteval.core.exams.quantity_check import DISCORDANT_LIST_LIMIT

    candidates = [f"{k} meters" for k in range(1, 41)]  # similarity rises with distance: every pair discordant
    enc = _similarities_in_order(["0 meters", *reversed(candidates)])
    result = fasteval.check(enc, "0 meters", candidates)
    assert result.discordant_count == 40 * 39 // 2 and len(result.discordant_pairs) == DISCORDANT_LIST_LIMIT
    assert result.discordant_pairs[0] == ("1 meters", "40 meters"), "the largest gap first"
    assert len(fasteval.check(enc, "0 meters", candidates, all_discordant=True).discordant_pairs) == 780
    assert result.to_json()["discordant_count"] == 780


def test_check_input_limits():
    from fasteval.core.exams.quantity_check import MAX_CHECK_CANDIDATES, parse_check_inputs
    from fasteval.core.quantities import parse_quantity

    with pytest.raises(InputError, match="at most"):
        parse_check_inputs("1 meter", ["2 meters"] * (MAX_CHECK_CANDIDATES + 1))
    with pytest.raises(InputError, match="characters long"):
        parse_quantity("2 " + "x" * 200_000)


def test_cli_check_negative_quantities_file_clash_and_rewritten_anchor(tiny_st_folder, fasteval_home, tmp_path):
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    proc = run_cli(["check", "-5 degC", "23 degF", "-40 degF", "--model", tiny_st_folder, "--json", "-q",
                    "--provider", "cpu"], env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["anchor"] == "-5 degC" and [c["distance"] for c in data["candidates"]] == [0.0, pytest.approx(35)]
    f = tmp_path / "q.txt"
    f.write_text("1 meter\n2 meters\n")
    one_line_error(run_cli(["check", "1 meter", "2 meters", "--file", f, "--model", tiny_st_folder], env=env),
                   "both as arguments and with --file")
    norm = run_cli(["check", "2 kilometers", "2000 meters", "2 meters", "--normalize-quantities", "--model",
                    tiny_st_folder, "--provider", "cpu", "-q"], env=env)
    assert norm.returncode == 0, norm.stderr
    assert "embedded as '2000 meters'" in norm.stdout.splitlines()[0]


def test_equal_distances_share_their_rank_and_temperatures_print_no_ratio(capsys):
    import fasteval
    from fasteval.cli.printing import print_check

    result = fasteval.check(_similarities_in_order(["1 meter", "0.7 meters", "130 centimeters", "3 meters"]),
                            "1 meter", ["0.7 meters", "130 centimeters", "3 meters"])
    sim_rank, dist_rank = result.ranks()
    assert dist_rank == {"0.7 meters": 1, "130 centimeters": 1, "3 meters": 3}, "0.3 m both: rank 1 and 1"
    assert sim_rank == {"0.7 meters": 1, "130 centimeters": 2, "3 meters": 3}
    print_check(result)
    out = capsys.readouterr().out
    assert "log10 ratio" in out and [ln.split()[-2:] for ln in out.splitlines()[2:5]] == [["1", "1"], ["2", "1"],
                                                                                         ["3", "3"]]
    hot = fasteval.check(_similarities_in_order(["20 degC", "25 degC", "30 degC"]), "20 degC", ["25 degC", "30 degC"])
    print_check(hot)
    out = capsys.readouterr().out
    assert "log10 ratio  rank" not in out and "note: no log10 ratio" in out


def test_check_file_that_never_ends_or_never_opens_is_one_line(tmp_path):
    """--file /dev/zero (endless, no newline) was a MemoryError and a FIFO with no writer hung: each is refused in one
    line, exit 2, in seconds; a pipe with a writer (a shell's <(command)) is still read (issue 45, item 4)."""
    import os
    import subprocess
    import sys

    proc = run_cli(["check", "--file", "/dev/zero"], timeout=60)
    assert proc.returncode == 2
    one_line_error(proc, "/dev/zero holds more than 256 MiB (or never ends)")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = run_cli(["check", "--file", fifo], timeout=60)
    assert proc.returncode == 2
    one_line_error(proc, f"The quantities file {fifo} is a named pipe (FIFO) that nothing had written to")  # issue 56
    from fasteval.core.io import read_text_lines

    import time

    # a writer that is there (waiting in its open, as `producer > fifo &` is) before the read: its lines are read
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write('2 km\\n2000 m\\n')"])
    try:
        lines: list[str] = []
        for _ in range(600):  # until the writer waits in its open (a loaded machine starts Python slowly)
            try:
                lines = read_text_lines(fifo, "quantities file", "")
            except InputError:  # nothing written yet: a FIFO with no writer is refused (issue 56, item 8)
                lines = []
            if lines:
                break
            time.sleep(0.05)
        assert lines == ["2 km", "2000 m"]
    finally:
        writer.wait(timeout=30)


def test_equal_quantities_say_there_is_nothing_to_rank_and_capitals_are_read(tiny_st_folder, fasteval_home):
    """Every candidate as far from the anchor: "nothing to rank", not "the physical order"; a unit in capitals (a
    sentence's first word, a heading) is read in lower case when pint knows no spelling as written, and only
    then ("Mm" stays a megameter) (issue 45, item 11)."""
    from fasteval.core.quantities import parse_quantity

    env = {"FASTEVAL_HOME": str(fasteval_home)}
    same = run_cli(["check", "--model", tiny_st_folder, "--provider", "cpu", "1e3 m", "1 km", "1000 m", "1,000 m"],
                   env=env)
    assert same.returncode == 0, same.stderr
    assert "nothing to rank: every candidate is as far from the anchor" in same.stdout
    assert "the physical order" not in same.stdout
    assert [parse_quantity(t).unit for t in ("5 Meter", "2 METERS", "3 Kilometers", "3 Degrees Celsius", "2 Mm",
                                             "2 mm")] == ["meter", "meter", "kilometer", "degree_Celsius",
                                                          "megameter", "millimeter"]
    caps = run_cli(["check", "--model", tiny_st_folder, "--provider", "cpu", "5 Meter", "500 centimeters", "5 km"],
                   env=env)
    assert caps.returncode == 0, caps.stderr
    with pytest.raises(InputError, match="does not know the unit 'Zentimeter'"):
        parse_quantity("500 Zentimeter")
