"""drift names the cause (core/runs/drift/diagnosis.py): each variant is exactly its misconfiguration (the tiny
model's variant against sentence-transformers configured the same way), and a deployment that is the reference
misconfigured one way is named by that variant, on the terminal, in --json and in drift.json; a faithful one is not
diagnosed at all."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fasteval.core.results.drift_findings import Diagnosis, Norms

from fakes import run_cli

TEXTS = ["5 meters", "two kilograms", "0.25 seconds of Zürich", "A LONGER TEXT, WITH CAPITALS, 1000000 kelvin"]


@pytest.fixture
def cls_folder(tiny_cls_folder):
    return tiny_cls_folder


def _variant(reference, name):
    return reference.variant(next(v for v in reference.variants() if v.name == name))


@pytest.mark.parametrize("mode, name", [("cls", "pooling=cls"), ("max", "pooling=max"),
                                        ("lasttoken", "pooling=last")])
def test_a_pooling_variant_is_sentence_transformers_with_that_pooling(tiny_st_folder, tiny_encoder, mode, name):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import models as st_models

    model = SentenceTransformer(str(tiny_st_folder), device="cpu")
    model[1] = st_models.Pooling(32, pooling_mode=mode)
    theirs = model.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    ours = _variant(tiny_encoder, name).encode(TEXTS)
    cos = (ours * theirs).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cos.min() >= 0.99999, cos


def test_truncation_special_tokens_and_lowercase_are_those_misconfigurations(tiny_st_folder, tiny_encoder):
    from tokenizers import Tokenizer

    assert tiny_encoder.folder.max_seq_length == 48 and not any(
        v.name.startswith("max_tokens") for v in tiny_encoder.variants()), "none shorter than 48 tokens"
    bare = _variant(tiny_encoder, "special_tokens=off")
    plain = Tokenizer.from_file(str(tiny_encoder.folder.tokenizer_file))
    assert bare.tokenizer.encode("5 meters").ids == plain.encode("5 meters", add_special_tokens=False).ids
    assert plain.encode("5 meters").ids != plain.encode("5 meters", add_special_tokens=False).ids
    from fasteval.models.onnx.variants import lowercases

    names = [v.name for v in tiny_encoder.variants()]
    assert "pooling=mean" not in names and "dense=off" not in names  # the reference's own pooling; no Dense
    lowercases = lowercases(tiny_encoder.tokenizer_json["json"])
    flipped = f"lowercase={'off' if lowercases else 'on'}"
    assert flipped in names
    a, b = _variant(tiny_encoder, flipped).tokenizer, tiny_encoder.tokenizer
    assert a.encode("ABC km").ids != b.encode("ABC km").ids or a.encode("abc km").ids != b.encode("abc km").ids


def test_a_cls_pooled_deployment_is_named_pooling_cls(tiny_st_folder, cls_folder, fasteval_home, tmp_path):
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    proc = run_cli(["drift", tiny_st_folder, cls_folder, "--provider", "cpu", "--bootstrap", "0",
                    "--no-invariance", "--out", tmp_path / "out", "--junit", tmp_path / "out" / "junit.xml"], env=env)
    assert proc.returncode == 1, proc.stderr
    # what to do, with each server's flag, under the diagnosis; in JUnit too (issue 56, item 14)
    fix = next(ln for ln in proc.stdout.splitlines() if ln.startswith("  Fix (pooling=cls):"))
    assert "llama.cpp --pooling mean" in fix and "TEI --pooling mean" in fix and "vLLM" in fix and "infinity" in fix
    from xml.etree import ElementTree as ET

    # the diagnosis and its Fix in a failing case (viewers fold passing ones; issue 66, item 12)
    case = next(c for c in ET.parse(tmp_path / "out" / "junit.xml").getroot().iter("testcase")
                if c.get("name") == "diagnosis")
    failure = case.find("failure")
    assert failure is not None and "pooling=cls" in failure.text and "Fix (pooling=cls)" in failure.text
    line = next(ln for ln in proc.stdout.splitlines() if "diagnosis:" in ln)
    assert "embeds like the reference with pooling=cls (worst cosine 0.9999" in line or \
        "embeds like the reference with pooling=cls (worst cosine 1.0000" in line, line
    saved = json.loads((tmp_path / "out" / "drift.json").read_text())
    assert saved["diagnosis"]["variant"] == "pooling=cls" and saved["diagnosis"]["worst"] >= 0.99
    assert saved["diagnosis"]["fix"] == [fix.strip()] and saved["diagnosis"]["line"] == line.strip()
    assert [t["variant"] for t in saved["diagnosis"]["tried"]] == ["pooling=cls"], "it stops at the cause"
    assert saved["diagnosis"]["reference"] < 0.99, "the reference's own settings did not conform"
    quiet = run_cli(["drift", tiny_st_folder, cls_folder, "--provider", "cpu", "--bootstrap", "0",
                     "--no-invariance", "--no-diagnose", "--json"], env=env)
    assert quiet.returncode == 1 and "diagnosis" not in json.loads(quiet.stdout)


def test_a_faithful_deployment_is_not_diagnosed(tiny_st_folder, fasteval_home):
    proc = run_cli(["drift", tiny_st_folder, tiny_st_folder, "--provider", "cpu", "--bootstrap", "0",
                    "--no-invariance", "--json"], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0 and "diagnosis" not in json.loads(proc.stdout)


def test_where_no_variant_explains_it_the_closest_is_named(tiny_encoder):
    """Another model altogether: every variant is tried (the reference's fp16 and int8 exports too), then pairs of
    the closest; none conforms, and the closest is named."""
    import fasteval
    from fakes import FakeEncoder

    report = fasteval.drift(tiny_encoder, FakeEncoder(dim=32), invariance=False, resamples=0, conformance=False)
    d = report.get(Diagnosis)
    assert report.verdict == "drifts" and d.variant is None and d.tried and d.closest == d.tried[0].variant
    names = [t.variant for t in d.tried]
    assert {"pooling=cls", "pooling=max", "pooling=last", "special_tokens=off", "precision=fp16",
            "precision=int8"} <= set(names) and any("+" in n for n in names)
    assert all(t.skipped is None for t in d.tried), d.tried
    assert d.line().startswith(f"diagnosis: no usual misconfiguration explains it; closest {d.closest}")


def _without_variants(source, dest) -> None:
    """``source`` as a receipt saved before receipts carried variants: no variant arrays, no word of them."""
    with np.load(source, allow_pickle=False) as data:
        held = {k: data[k] for k in data.files if not k.startswith("variant_")}
    meta = json.loads(str(held["meta"]))
    meta.pop("variants")
    held["meta"] = np.array(json.dumps(meta))
    with open(dest, "wb") as f:
        np.savez(f, **held)


def test_a_receipt_names_the_cause_as_the_folder_does(tiny_st_folder, cls_folder, tiny_encoder, fasteval_home,
                                                      tmp_path):
    """A receipt holds the reference's variants on a fixed sample of drift's texts: drift against the receipt names
    the CLS-pooled deployment as drift against the folder does (terminal, drift.json, the library). A receipt saved
    with --no-diagnose, and one saved before receipts carried variants, still gate to the same verdict and say once
    that no diagnosis is available."""
    import fasteval
    from fasteval.core.report.drift import drift_text

    env = {"FASTEVAL_HOME": str(fasteval_home)}
    common = ["--provider", "cpu", "--bootstrap", "0", "--no-invariance"]
    receipt, bare, old = tmp_path / "ref.receipt", tmp_path / "bare.receipt", tmp_path / "old.receipt"
    made = run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, *common], env=env)
    assert made.returncode == 0, made.stderr
    assert "misconfigurations of it on" in made.stdout, made.stdout
    held = run_cli(["drift", receipt, cls_folder, *common, "--out", tmp_path / "out"], env=env)
    assert held.returncode == 1, held.stderr
    assert [ln.strip() for ln in held.stdout.splitlines() if "diagnosis:" in ln][0].startswith(
        "diagnosis: the candidate embeds like the reference with pooling=cls (worst cosine")
    whole = json.loads((tmp_path / "out" / "drift.json").read_text())
    saved = whole["diagnosis"]
    # a CLS-pooled random model collapses its texts: every collision is counted, the first 1,000 listed
    assert len(whole["collisions"]) == 1000 < whole["collision_count"], whole["collision_count"]
    assert "texts collapse onto one vector (" in held.stdout, "a collapse is one line, not its pairs"
    assert "more pairs (the first 1,000 in --json)" in held.stdout
    assert saved["variant"] == "pooling=cls" and saved["worst"] >= 0.999 and saved["reference"] < 0.99
    assert saved["texts"] <= 128

    candidate = fasteval.load_model(str(cls_folder), provider="cpu")
    folder = fasteval.drift(tiny_encoder, candidate, invariance=False, resamples=0)
    assert folder.get(Diagnosis).variant == "pooling=cls"
    assert abs((folder.get(Diagnosis).worst or 0.0) - saved["worst"]) <= 1e-3  # the receipt keeps float16 rows
    assert run_cli(["drift", "--save-receipt", bare, tiny_st_folder, *common, "--no-diagnose"],
                   env=env).returncode == 0
    assert bare.stat().st_size < receipt.stat().st_size
    _without_variants(receipt, old)
    for path, why in ((bare, "it was saved with --no-diagnose"),
                      (old, "the receipt holds no variants' vectors (saved before receipts carried them)")):
        report = fasteval.drift(str(path), candidate, invariance=False, resamples=0)
        assert report.verdict == "drifts" and abs(report.worst_cosine - folder.worst_cosine) <= 1e-6
        assert report.get(Diagnosis).variant is None and report.get(Diagnosis).unavailable == why
        said = [ln.strip() for ln in drift_text(report).splitlines() if "diagnosis" in ln]
        assert said == [f"diagnosis: not available: {why}"], said


def test_a_receipts_variants_are_checked_before_they_are_trusted(tiny_st_folder, fasteval_home, tmp_path):
    """Variants' vectors that do not match what the receipt says of them (another shape, an index past its texts,
    one array without the other, NaN or inf) are refused in one line, as any damaged receipt is."""
    from fasteval.core.errors import InputError
    from fasteval.models.adapters.receipt import ReceiptEncoder

    receipt = tmp_path / "ref.receipt"
    assert run_cli(["drift", "--save-receipt", receipt, tiny_st_folder, "--provider", "cpu"],
                   env={"FASTEVAL_HOME": str(fasteval_home)}).returncode == 0
    with np.load(receipt, allow_pickle=False) as data:
        held = {k: data[k] for k in data.files}
    whole = ReceiptEncoder(receipt)
    names = json.loads(str(held["meta"]))["variants"]["names"]
    recorded = whole.recorded_variants
    assert recorded["names"] == names and len(recorded["texts"]) == held["variant_texts"].size
    rows = recorded["rows"](names[0], recorded["texts"][:2])
    assert rows.shape == (2, whole.dim) and np.allclose(np.linalg.norm(rows, axis=1), 1, atol=1e-3)
    nan = held["variant_vectors"].copy()
    nan[1, 2, 3] = np.nan
    for change, message in (({"variant_vectors": held["variant_vectors"][1:]}, "do not match"),
                            ({"variant_texts": held["variant_texts"] + len(whole.texts)}, "do not match"),
                            ({"variant_vectors": None}, "holds variant_texts alone"),
                            ({"variant_vectors": nan}, "NaN or inf")):
        bad = {k: v for k, v in {**held, **change}.items() if v is not None}
        path = tmp_path / "bad.receipt"
        with open(path, "wb") as f:
            np.savez(f, **bad)
        with pytest.raises(InputError, match=message):
            ReceiptEncoder(path).check()  # its rows and variants are read at their first use, or now


def test_a_candidate_that_drifts_for_its_batches_alone_is_not_diagnosed(tiny_encoder):
    """A deployment whose every text conforms but whose vectors move with the batch (bitwise tier) drifts with no
    text to explain: the diagnosis does not run (before, the first variant that changed nothing on the conforming
    texts was named), and called on such texts it says there is nothing to name."""
    import fasteval
    from fasteval.core.runs.drift.checks.diagnosis import diagnose

    class Moving:
        name = "moving"

        def encode(self, texts):
            out = tiny_encoder.encode(texts)
            return out + np.float32(1e-6) * len(texts)

    report = fasteval.drift(tiny_encoder, Moving(), resamples=0, conformance=False, invariance_tier="bitwise")
    assert report.verdict == "drifts" and report.worst_cosine > 0.999
    assert report.reasons and all(r.startswith("bitwise:") for r in report.reasons), report.reasons
    assert not report.has(Diagnosis)
    texts = ["5 meters", "two kilograms"]
    rows = dict(zip(texts, tiny_encoder.encode(texts)))
    said = diagnose(tiny_encoder, rows, {t: 1.0 for t in texts}, 0.99)
    assert said.variant is None and said.tried == [] and str(said.unavailable).startswith("no text drifted")


def test_a_candidate_that_does_not_normalise_is_named_normalize_off(tiny_encoder, tiny_bare_folder):
    """The tiny model with its Normalize left out, against the tiny model: every cosine conforms (a cosine cannot
    see it), the norm gate finds it, and names normalize=off (its norms are the reference's with Normalize
    dropped); a candidate that scales as well is found and not named."""
    import fasteval

    bare = fasteval.load_model(str(tiny_bare_folder), provider="cpu")

    class Scaled:
        name = "scaled"

        def encode(self, texts):
            return 3 * bare.encode(texts)

    report = fasteval.drift(tiny_encoder, bare, resamples=0, conformance=False, invariance=False)
    assert report.worst_cosine > 0.9999 and report.verdict == "drifts" and not report.has(Diagnosis)
    norms = report.get(Norms)
    assert norms.reference_unit and not norms.candidate_unit and norms.variant == "normalize=off", norms
    assert norms.normalize_off_ratio is not None and abs(norms.normalize_off_ratio - 1) < 1e-4
    assert norms.finding and report.reasons == ["norms: " + norms.finding]
    assert "does not normalise where the model does" in norms.finding
    scaled = fasteval.drift(tiny_encoder, Scaled(), resamples=0, conformance=False, invariance=False).get(Norms)
    assert scaled.finding and scaled.variant is None and abs((scaled.normalize_off_ratio or 0) - 3) < 1e-3


def test_a_prompt_left_out_or_another_prompt_is_named(tiny_st_folder, tmp_path):
    """A model that configures prompts ("query: ", "passage: "): a deployment that prepends the query prompt where
    the reference runs none is named prompt=query; one that leaves out the reference's prompt, prompt=none."""
    import shutil

    import fasteval

    folder = tmp_path / "tiny-bert-prompts"
    shutil.copytree(tiny_st_folder, folder)
    config = folder / "config_sentence_transformers.json"
    data = json.loads(config.read_text())
    data["prompts"] = {"query": "query: ", "document": "passage: "}
    config.write_text(json.dumps(data))
    plain = fasteval.load_model(str(folder), provider="cpu")
    query = fasteval.load_model(str(folder), provider="cpu", prompt_name="query")
    for reference, candidate, named in ((plain, query, "prompt=query"), (query, plain, "prompt=none")):
        report = fasteval.drift(reference, candidate, resamples=0, conformance=False, invariance=False)
        assert report.verdict == "drifts" and report.get(Diagnosis).variant == named, report.get(Diagnosis)
        assert (report.get(Diagnosis).worst or 0.0) > 0.9999
