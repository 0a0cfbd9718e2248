"""`fasteval drift`: the mechanism against an independent computation (numpy cosines, a brute-force collision
count), and encoders built to fail one way each, caught by the group that probes that failure and named."""
from __future__ import annotations

import json
import unicodedata
import zlib

import numpy as np
import pytest

from fasteval.core.results.drift_findings import Collisions, Identity, PhysScore
from fasteval.core.runs.drift.score import COLLISION_APART, COLLISION_SAME, score_drift
from fasteval.core.protocol.conformance import TextGroup, conformance_groups

from fakes import one_line_error, run_cli


class TextEncoder:
    """A reference that keeps every distinct text apart: a crc32-seeded random vector of the exact text, plus a
    feature of the number it starts with (so the PhysScore side has something to measure)."""

    name = "reference"

    def embed_one(self, text: str) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
        head = text.split()[0] if text.split() else ""
        try:
            x = float(head)
        except ValueError:
            x = 0.0
        z = np.sign(x) * np.log1p(abs(x))
        return np.concatenate([[3 * np.cos(z), 3 * np.sin(z)], rng.normal(size=62)]).astype(np.float32)

    def encode(self, texts):
        return np.stack([self.embed_one(self.see(t)) for t in texts]) if texts else np.zeros((0, 64), np.float32)

    def see(self, text: str) -> str:
        return text


class FoldsCase(TextEncoder):
    name = "folds-case"

    def see(self, text):
        return text.lower()


class StripsAccents(TextEncoder):
    name = "strips-accents"

    def see(self, text):
        return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


class TruncatesAt8(TextEncoder):
    name = "truncates-at-8-tokens"

    def see(self, text):
        return " ".join(text.split(" ")[:8])


class DropsLastOfBatch(TextEncoder):
    """A buggy server: the last text of every call gets the embedding of the one before it."""
    name = "drops-last-of-batch"

    def encode(self, texts):
        out = super().encode(texts)
        if len(texts) > 1:
            out[-1] = out[-2]
        return out


class ChangesHangul(TextEncoder):
    """llama.cpp's known difference, in small: Hangul syllables seen as other text."""
    name = "changes-hangul"

    def see(self, text):
        return "".join("?" if "\uac00" <= ch <= "\ud7a3" else ch for ch in text)


def run(candidate, **kw):
    from fasteval import drift

    return drift(TextEncoder(), candidate, resamples=200, cache_root=None, **kw)


def test_scores_equal_an_independent_computation():
    rng = np.random.default_rng(0)
    texts = [f"t{k}" for k in range(40)]
    a = rng.normal(size=(40, 8))
    b = a + rng.normal(scale=0.05, size=(40, 8))
    b[7] = b[3] * 2  # 3 and 7 become one text under the candidate
    groups = [TextGroup("g1", "", texts[:25]), TextGroup("g2", "", texts[25:])]
    report = score_drift("A", "B", groups, dict(zip(texts, a)), dict(zip(texts, b)), threshold=0.995)
    ua, ub = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
    cos = (ua * ub).sum(axis=1)
    assert report.mean_cosine == pytest.approx(cos.mean()) and report.worst_cosine == pytest.approx(cos.min())
    assert report.groups["g2"].mean == pytest.approx(cos[25:].mean())
    assert report.groups["g1"].share_below == pytest.approx(np.mean(cos[:25] < 0.995))
    brute = [(i, j) for i in range(40) for j in range(i + 1, 40)
             if ua[i] @ ua[j] < COLLISION_APART and ub[i] @ ub[j] >= COLLISION_SAME]
    assert brute == [(3, 7)] and [(c.text_a, c.text_b) for c in report.get(Collisions).listed] == [("t3", "t7")]
    sa, sb = ua @ ua.T, ub @ ub.T
    agree = []
    for i in range(40):
        na = sorted((j for j in range(40) if j != i), key=lambda j: -sa[i, j])[:10]
        nb = sorted((j for j in range(40) if j != i), key=lambda j: -sb[i, j])[:10]
        agree.append(len(set(na) & set(nb)) / 10)
    assert report.neighbourhood_agreement == pytest.approx(np.mean(agree))


@pytest.mark.parametrize("below, drifts", [(0.5e-6, False), (2e-6, True)])
def test_one_rule_decides_drifted_in_the_verdict_the_table_the_files_and_junit(below, drifts):
    """A text within the stated tolerance of the threshold conforms everywhere a report says so (the verdict, the
    group's row and worst texts in the terminal, drift_groups.csv, JUnit); one past it drifts everywhere."""
    from fasteval.core.report.drift import drift_files, drift_junit, drift_text

    texts = ["a", "b", "c"]
    cosine = 0.99 - below
    ref = {t: v for t, v in zip(texts, np.eye(3))}
    cand = dict(ref, b=np.array([np.sqrt(1 - cosine ** 2), cosine, 0.0]))  # "b" is [0, 1, 0] in the reference
    report = score_drift("A", "B", [TextGroup("g", "probes of g", texts)], ref, cand, threshold=0.99)
    assert report.worst_cosine == pytest.approx(cosine, abs=1e-12)
    assert (report.verdict == "drifts") is drifts and (report.groups["g"].share_below > 0) is drifts
    row = next(line for line in drift_text(report).splitlines() if line.startswith("  g "))
    assert row.endswith("'b'" if drifts else "probes of g")
    assert ("worst texts:" in drift_text(report)) is drifts
    assert drift_files(report)["drift_groups.csv"].splitlines()[1].split(",")[5] == str(drifts)
    assert ("<failure" in drift_junit([report])) is drifts


def test_an_encoder_against_itself_conforms():
    report = run(TextEncoder())
    assert report.verdict == "conforms" and report.worst_cosine == pytest.approx(1.0)
    assert not report.get(Collisions).listed
    p = report.get(PhysScore)
    assert p.delta_tau == 0 and p.cells_changed == [] and p.delta_tau_ci_low == p.delta_tau_ci_high == 0
    names = {g.name for g in conformance_groups()}
    assert {"accents", "case", "unicode_forms", "whitespace", "scripts", "number_formats", "length", "edge"} <= names
    assert set(report.groups) == {"protocol", *names}


@pytest.mark.parametrize("broken, group, untouched, colliding", [
    (FoldsCase(), "case", "number_formats", ("the quick brown fox", "THE QUICK BROWN FOX")),
    (StripsAccents(), "accents", "case", ("résumé", "resume")),
    (TruncatesAt8(), "length", "case", None),
])
def test_each_broken_encoder_is_caught_by_its_group(broken, group, untouched, colliding):
    """The group that probes the failure drifts, and one that does not probe it stays put (so it is that
    failure, not noise, that the report names)."""
    from fasteval.core.report.drift import drift_text

    report = run(broken)
    assert report.verdict == "drifts"
    assert report.groups[group].worst < 0.5, {g.name: g.worst for g in report.groups.values()}
    assert report.groups[untouched].worst > 0.999 and report.groups["protocol"].worst > 0.999
    text = drift_text(report)
    assert f"{group}: " in text, "the worst texts are named with their group"
    if colliding:
        pairs = {(c.text_a, c.text_b) for c in report.get(Collisions).listed} | \
                {(c.text_b, c.text_a) for c in report.get(Collisions).listed}
        assert colliding in pairs


def test_an_encoder_that_drops_the_last_text_of_a_call_is_caught_in_every_group():
    report = run(DropsLastOfBatch())
    assert report.verdict == "drifts"
    for g in conformance_groups():
        last = list(dict.fromkeys(g.texts))[-1]
        shown = report.groups[g.name].worst_text
        assert report.groups[g.name].worst < 0.5 and (shown == last or shown.startswith(last[:40])), g.name


def test_cli_json_exit_codes_and_files(tiny_st_folder, fasteval_home, tmp_path):
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--provider", "cpu", "--bootstrap", "100", "-q"]
    same = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--json", "--fail-below", "0.999", *common], env=env)
    assert same.returncode == 0, same.stderr
    data = json.loads(same.stdout)
    assert {"mean_cosine", "worst_cosine", "groups", "collisions", "delta_tau", "delta_tau_ci_low",
            "delta_tau_ci_high", "verdict"} <= set(data)
    assert data["verdict"] == "conforms" and data["worst_cosine"] == pytest.approx(1.0, abs=1e-6)
    assert data["groups"]["case"]["n"] == 13 and data["delta_tau"] == 0
    out = tmp_path / "drift"
    int8 = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--candidate-dtype", "int8", "--fail-below", "0.999999",
                    "--out", out, *common], env=env)
    assert int8.returncode == 1, int8.stderr
    assert "drifts" in int8.stdout.splitlines()[0] and "PhysScore" in int8.stdout
    written = json.loads((out / "drift.json").read_text())
    assert written["verdict"] == "drifts" and (out / "drift_groups.csv").read_text().startswith("group,n,mean")
    default_gate = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--candidate-dtype", "int8", *common], env=env)
    assert default_gate.returncode == 1, "a gate is never passed by leaving out an option: the default one holds"
    lines = default_gate.stdout.splitlines()
    n = sum(line.startswith("  reason: ") for line in lines)
    assert lines[0] == f"fasteval drift: drifts, {n} reason{'s' * (n != 1)} (exit 1)", lines[0]
    assert "  reason: precision: the candidate serves int8 weights, the reference f32" in lines[2:2 + n], lines
    one_line_error(run_cli(["drift", tiny_st_folder, tmp_path / "nope", *common], env=env), "does not exist")
    bad = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--fail-below", "2", *common], env=env)
    assert bad.returncode == 2 and "--fail-below" in bad.stderr


def test_a_receipt_gates_as_the_reference_does(tiny_st_folder, fasteval_home, tmp_path):
    """--save-receipt writes what the reference embeds; drift against the receipt gives the reference's verdict
    and numbers with no model for the reference; a receipt of another text set is refused."""
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--provider", "cpu", "--bootstrap", "200", "-q"]
    receipt = tmp_path / "minilm.receipt"  # known by what it holds, not by its name
    made = run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, *common], env=env)
    assert made.returncode == 0 and "Receipt of tiny-bert written" in made.stdout, made.stderr
    gate = ["--candidate-dtype", "int8", "--json", "--fail-below", "0.999999", *common]
    direct = run_cli(["drift", tiny_st_folder, tiny_st_folder, *gate], env=env)
    gated = run_cli(["drift", receipt, tiny_st_folder, *gate], env=env)
    assert direct.returncode == gated.returncode == 1, gated.stderr
    a, b = json.loads(direct.stdout), json.loads(gated.stdout)
    for key in ("verdict", "texts", "mean_cosine", "worst_cosine", "groups", "worst", "collisions",
                "neighbourhood_agreement", "reference_tau", "candidate_tau", "delta_tau", "delta_tau_ci_low",
                "delta_tau_ci_high", "cells_changed"):
        assert a[key] == b[key], key
    assert b["identity"]["reference"]["receipt"] == str(receipt) and b["identity"]["reference"]["kind"] == "local"
    other = run_cli(["drift", receipt, tiny_st_folder, "--no-conformance", *common], env=env)
    assert other.returncode == 2
    one_line_error(other, "another text set")
    one_line_error(run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, tiny_st_folder, *common], env=env),
                   "takes the reference alone")


def test_drift_exits_1_only_for_a_verdict(tiny_st_folder, fasteval_home, tmp_path):
    """A damaged or foreign receipt, --junit naming a folder, a file that is no receipt, and a bug forced inside
    drift each give one line and exit 2: 1 is "drifts", and a CI job must never read a fault as a verdict (a
    truncated receipt was "internal error: BadZipFile" with exit 1, a --junit folder IsADirectoryError, exit 1)."""
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--provider", "cpu", "--bootstrap", "0", "-q", "--no-invariance"]
    receipt = tmp_path / "ref.npz"
    assert run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, *common], env=env).returncode == 0
    data = receipt.read_bytes()
    cut = tmp_path / "cut.receipt"
    cut.write_bytes(data[: len(data) // 2])
    proc = run_cli(["drift", cut, tiny_st_folder, *common], env=env)
    assert proc.returncode == 2
    one_line_error(proc, f"The receipt {cut} is damaged or cut short", "--save-receipt")
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, vectors=np.zeros((2, 3)))
    proc = run_cli(["drift", foreign, tiny_st_folder, *common], env=env)
    assert proc.returncode == 2
    one_line_error(proc, "not a fasteval receipt")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    proc = run_cli(["drift", text, tiny_st_folder, *common], env=env)
    assert proc.returncode == 2
    one_line_error(proc, "neither a receipt nor a model folder")
    proc = run_cli(["drift", receipt, tiny_st_folder, "--junit", tmp_path, *common], env=env)
    assert proc.returncode == 2
    one_line_error(proc, f"--junit {tmp_path} is a folder", "drift.xml")


def test_an_unexpected_fault_in_drift_exits_2_not_1(monkeypatch, tiny_st_folder):
    """A bug forced inside the library's drift: one internal-error line, exit 2 (never 1, "drifts")."""
    from typer.testing import CliRunner

    import fasteval.core.runs.drift.gate as library
    from fasteval.cli.main import app

    def broken(*args, **kwargs):
        raise ZeroDivisionError("forced")

    monkeypatch.setattr(library, "drift_planned", broken)
    monkeypatch.delenv("FASTEVAL_DEBUG", raising=False)
    result = CliRunner().invoke(app, ["drift", str(tiny_st_folder), str(tiny_st_folder), "-q", "--provider", "cpu"])
    assert result.exit_code == 2, result.output
    assert "internal error: ZeroDivisionError: forced" in result.output and "Traceback" not in result.output


def test_the_report_shows_drift_reports_under_the_results_folder(tmp_path):
    from fasteval.core.io import write_result_folder
    from fasteval.core.report.build import build_report
    from fasteval.core.report.drift import drift_files
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    from fakes import CountingEncoder

    run_sweep([Job("m", exams=(1,), bootstrap=0)], tmp_path / "res", lambda name, **o: CountingEncoder(name),
        cache_root=False)
    report = run(FoldsCase())
    write_result_folder(tmp_path / "res" / "drift-case", drift_files(report))
    rep = build_report(tmp_path / "res", out=tmp_path / "rep", png=False, resamples=0)
    rows = rep.tables["drift"].rows
    assert rows[0]["pair"] == "folds-case vs reference" and rows[0]["verdict"] == "drifts"
    case = next(r for r in rows if r["group"] == "case")
    assert case["worst"] == pytest.approx(report.groups["case"].worst)
    assert "Drift: does the candidate embed like the reference?" in (tmp_path / "rep" / "report.html").read_text()


def test_the_verdict_comes_first_and_a_known_server_kind_suggests_accept():
    """drift's first line is short (verdict, reasons, exit code), each reason on its own line below; a llama.cpp
    candidate (its /models entry carries meta) whose known groups drifted gets the --accept that gates the rest,
    another candidate no hint, and once accepted no hint either."""
    from fasteval.core.report.drift import drift_text
    from fasteval.core.results.drift_findings import Identity, SideIdentity
    from fasteval.core.runs.drift.checks.identity import known_differences

    report = run(ChangesHangul(), invariance=False)
    assert report.verdict == "drifts" and list(report.drifted_groups) == ["scripts"]
    plain = drift_text(report).splitlines()
    n = len(report.reasons)
    assert plain[0] == f"fasteval drift: drifts, {n} reason{'s' * (n != 1)} (exit 1)"
    assert len(plain[0]) < 60 and plain[2:2 + len(report.reasons)] == [f"  reason: {r}" for r in report.reasons]
    assert not any("hint:" in line for line in plain)
    served = SideIdentity("served", "m", server={"id": "m", "meta": {"n_ctx": 512}})
    report.add(Identity({"candidate": served}, known_differences=known_differences(served)))
    hint = [line for line in drift_text(report).splitlines() if "hint:" in line]
    assert hint == ["  hint: llama.cpp is known to differ here (scripts: its WordPiece tokenizes Hangul differently); "
                    "if that is accepted, add --accept scripts to gate the rest"]
    accepted = run(ChangesHangul(), invariance=False, accept=["scripts"])
    accepted.add(report.get(Identity))
    text = drift_text(accepted).splitlines()
    assert text[0] == "fasteval drift: conforms (exit 0)" and not any("hint:" in line for line in text)
    assert any(line.startswith("  accepted (--accept, shown, not gated): scripts ") for line in text)


def _rewrite_receipt(source, dest, **arrays) -> None:
    """A copy of the receipt ``source`` with some of its arrays replaced."""
    with np.load(source, allow_pickle=False) as data:
        held = {k: data[k] for k in data.files}
    with open(dest, "wb") as f:  # a file object: np.savez would add .npz to the name
        np.savez(f, **{**held, **arrays})


def test_a_receipt_is_checked_whole_before_it_is_trusted(tiny_st_folder, fasteval_home, tmp_path):
    """A receipt is an input from elsewhere: one that declares more than it holds (9.66 GiB of vectors in a small
    file), NaN or inf rows, meta that is no JSON object, vectors of three dimensions, and a FIFO in its place are
    each refused in one line with exit 2, before any candidate is embedded (issue 45, item 3)."""
    import io
    import os
    import zipfile

    from fasteval.core.errors import InputError
    from fasteval.models.adapters.receipt import ReceiptEncoder

    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--provider", "cpu", "--bootstrap", "0", "-q", "--no-invariance"]
    receipt = tmp_path / "ref.receipt"
    assert run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, *common], env=env).returncode == 0
    with np.load(receipt) as data:
        vectors, meta = data["vectors"].copy(), str(data["meta"])
    ReceiptEncoder(receipt).check()  # the whole one loads

    nan = vectors.copy()
    nan[3, 0], nan[5, 1] = np.nan, np.inf
    _rewrite_receipt(receipt, tmp_path / "nan.receipt", vectors=nan)
    proc = run_cli(["drift", tmp_path / "nan.receipt", tiny_st_folder, *common], env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    one_line_error(proc, "2 embedding(s) with NaN or inf", "its reference failed")

    _rewrite_receipt(receipt, tmp_path / "list.receipt", meta=np.array(json.dumps([json.loads(meta)])))
    with pytest.raises(InputError, match="no readable meta"):
        ReceiptEncoder(tmp_path / "list.receipt")
    _rewrite_receipt(receipt, tmp_path / "cube.receipt", vectors=vectors[:, None, :])
    with pytest.raises(InputError, match=r"vectors as float32 of shape \(\d+, 1, \d+\), not 2-dimensional"):
        ReceiptEncoder(tmp_path / "cube.receipt")
    _rewrite_receipt(receipt, tmp_path / "ints.receipt", vectors=vectors.astype(np.int64))
    with pytest.raises(InputError, match="vectors as int64"):
        ReceiptEncoder(tmp_path / "ints.receipt")

    # vectors that declare 1,000,000 x 2,592 float32 (9.66 GiB) in a member of a few bytes: refused from the header
    huge = tmp_path / "huge.receipt"
    with np.load(receipt) as data, zipfile.ZipFile(huge, "w") as out:
        for name in data.files:
            if name != "vectors":
                buf = io.BytesIO()
                np.save(buf, data[name])
                out.writestr(f"{name}.npy", buf.getvalue())
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False,
                                                   "shape": (1_000_000, 2_592)})
        out.writestr("vectors.npy", buf.getvalue() + b"\0" * 4096)
    proc = run_cli(["drift", huge, tiny_st_folder, *common], env=env, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    one_line_error(proc, "declares vectors of shape (1000000, 2592) (9.66 GiB), more than it holds")

    fifo = tmp_path / "fifo.receipt"
    os.mkfifo(fifo)
    proc = run_cli(["drift", fifo, tiny_st_folder, *common], env=env, timeout=60)  # a hang fails the timeout
    assert proc.returncode == 2, proc.stdout + proc.stderr
    one_line_error(proc, str(fifo))


def test_a_receipt_follows_the_umask_as_every_output_does(tiny_st_folder, fasteval_home, tmp_path):
    """A receipt was written 0600 (mkstemp's) while results were 0644: a colleague or a CI job on a shared runner
    could not read it. Under umask 022 it is 0644, under 027 0640 (issue 45, item 8)."""
    import stat

    common = ["--provider", "cpu", "--bootstrap", "0", "-q", "--no-invariance"]
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        receipt = tmp_path / f"ref-{umask:o}.receipt"
        proc = run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, *common],
                       env={"FASTEVAL_HOME": str(fasteval_home)}, umask=umask)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_IMODE(receipt.stat().st_mode) == mode, oct(receipt.stat().st_mode)


@pytest.mark.parametrize("store", [{"vector_quantization": "int8"}, {"vector_quantization": "binary"},
                                   {"dimensions": 32}, {"dimensions": 32, "vector_quantization": "binary"},
                                   {"vector_quantization": "int4"}, {"vector_quantization": "binary-centred"},
                                   {"vector_quantization": "binary-asymmetric"},
                                   {"vector_quantization": "turboquant4"}])
def test_a_stores_vectors_of_the_same_model_conform_and_keep_their_physscore(store):
    """"My store's vectors against the model's floats": each text compared in the space both keep (int8 as the floats
    its integers stand for, binary as sign bits, truncation at the fewer dimensions) conforms for the same model;
    the PhysScore side is the store's own Table 1 (evaluate's, with the same options) against the floats'."""
    import fasteval

    integers = store.get("vector_quantization") in ("int8", "int4", "turboquant4")  # near their floats
    # int8 is calibrated on Table 1's texts: this encoder's random dimensions put other texts outside those ranges
    # (clipped), so its int8 floats sit a little further from the floats there (0.9876 at worst); int4's 16 levels
    # further still
    threshold = {"int8": 0.98, "int4": 0.8, "turboquant4": 0.9}.get(store.get("vector_quantization"), 0.99)
    report = run(TextEncoder(), candidate_vectors=store, invariance=False, threshold=threshold)
    assert report.verdict == "conforms", report.reasons
    kept_form = report.get(Identity).sides["candidate"].vectors
    assert kept_form is not None and getattr(kept_form, "vector_quantization" if "vector_quantization" in store
                                             else "dimensions") == list(store.values())[-1]
    assert report.get(Identity).sides["reference"].vectors is None
    floats = fasteval.evaluate(TextEncoder(), exams=(1,), bootstrap=0).exams["exam1"].summary()
    kept = fasteval.evaluate(TextEncoder(), exams=(1,), bootstrap=0, **store).exams["exam1"].summary()
    assert report.get(PhysScore).delta_tau == pytest.approx(kept["tau"] - floats["tau"], abs=1e-9)
    if integers:
        assert threshold <= report.worst_cosine < 1.0, "an integer vector is near its float, not equal to it"
    else:
        assert report.worst_cosine == pytest.approx(1.0), "the same bits, the same truncated rows"


def test_a_stores_binary_vectors_of_another_model_drift():
    report = run(FoldsCase(), candidate_vectors={"vector_quantization": "binary"}, invariance=False)
    assert report.verdict == "drifts" and report.groups["case"].worst < 0.99
    assert report.groups["protocol"].worst == pytest.approx(1.0), "the protocol's texts have no capitals"


def test_cli_drift_takes_a_stores_options_on_either_side(tiny_st_folder, fasteval_home):
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    proc = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--candidate-vector-quantization", "binary",
                    "--reference-dimensions", "16", "--provider", "cpu", "--bootstrap", "0", "--no-invariance",
                    "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "conforms" and data["identity"]["candidate"]["vectors"] == {
        "vector_quantization": "binary"} and data["identity"]["reference"]["vectors"] == {"dimensions": 16}
    bad = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--candidate-vector-quantization", "int3",
                   "--provider", "cpu"], env=env)
    assert bad.returncode == 2
    one_line_error(bad, "vector quantization")
    # --calibration where neither side keeps int8 vectors was dropped without a word; it is refused, as sweep does
    texts = fasteval_home / "calibration.txt"
    texts.write_text("2 meters\n5 grams\n")
    dropped = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--candidate-vector-quantization", "binary",
                       "--calibration", texts, "--provider", "cpu"], env=env)
    assert dropped.returncode == 2
    one_line_error(dropped, "--calibration calibrates int8, int4 and binary-centred vectors only")


def test_int8_calibrated_on_other_texts_embeds_them_on_both_sides():
    mine = ["2 meters", "café", "Zürich", "two kilograms", "0.5 seconds", "many words of a longer sentence here"]
    report = run(TextEncoder(), candidate_vectors={"vector_quantization": "int8", "calibration": mine},
                 invariance=False, threshold=0.5)
    kept_form = report.get(Identity).sides["candidate"].vectors
    assert kept_form is not None and str(kept_form.calibration).startswith("sha256:")
    assert report.worst_cosine < 0.99, "six calibration texts clip most of the others"


def test_a_collapse_is_one_line_and_unicode_twins_show_their_forms():
    """117 pairs of one collapse were listed pairwise, and NFC/NFD twins printed as the same string (issue 66, item
    15): the texts of one collapse are one line with their count, each twin written with its escapes and form."""
    import itertools
    import unicodedata

    from fasteval.core.results.drift_findings import Collision, Collisions, collision_clusters

    nfc = "café 5 m"
    nfd = unicodedata.normalize("NFD", nfc)
    collapsed = [nfc, nfd, *(f"{k} meters" for k in range(16))]  # 18 texts on one vector: 153 pairs
    pairs = [Collision(a, b, 0.5, 1.0) for a, b in itertools.combinations(collapsed, 2)]
    pairs.append(Collision("1 km", "1 kg", 0.8, 0.9999))
    assert [len(c) for c in collision_clusters(pairs)] == [153, 1]
    lines = Collisions(pairs).lines(None)["details"]  # type: ignore[arg-type]
    assert len(lines) == 4, lines  # a blank line, the count, the collapse, the pair
    assert "18 texts collapse onto one vector (153 pairs" in lines[2] and "and 12 more" in lines[2]
    assert ascii(nfd) + " (NFD)" in lines[2] and repr(nfc) in lines[2]
    assert lines[3].strip().startswith("'1 km' ~ '1 kg'")


def test_drift_is_planned_once_for_every_candidate(tmp_path, monkeypatch):
    """`fasteval drift REF A B C`: the request is validated and its texts file read once (not once a candidate and
    once more to check it); a plan and options together are refused."""
    from fasteval.core.errors import InputError
    from fasteval.core.runs.drift import plan as drift_plan
    from fasteval.core.runs.drift.gate import drift, drift_candidates

    texts = tmp_path / "mine.txt"
    texts.write_text("12 meters\n# a comment\nTWELVE METERS\n")
    reads = []
    real = drift_plan.user_groups
    monkeypatch.setattr(drift_plan, "user_groups", lambda path: reads.append(path) or real(path))
    asked = drift_plan.plan_drift(texts=texts, conformance=False, resamples=0, invariance=False)
    reference = TextEncoder()
    reports = drift_candidates(reference, [TextEncoder(), FoldsCase(), TextEncoder()], asked, cache_root=False)
    assert len(reads) == 1 and [r.verdict for r in reports] == ["conforms", "drifts", "conforms"]
    assert [set(r.groups) for r in reports] == [{"protocol", "file:mine.txt"}] * 3
    with pytest.raises(InputError, match="a plan or its options"):
        drift(reference, TextEncoder(), asked=asked, threshold=0.9)
