"""drift names the cause (core/runs/drift/diagnosis.py): each variant is exactly its misconfiguration (the tiny
model's variant against sentence-transformers configured the same way), and a deployment that is the reference
misconfigured one way is named by that variant, on the terminal, in --json and in drift.json; a faithful one is not
diagnosed at all."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import run_cli

TEXTS = ["5 meters", "two kilograms", "0.25 seconds of Zürich", "A LONGER TEXT, WITH CAPITALS, 1000000 kelvin"]


@pytest.fixture
def cls_folder(tiny_cls_folder):
    return tiny_cls_folder


def _variant(reference, name):
    from fasteval.core.runs.drift.diagnosis import _encoder, variants_of

    return _encoder(reference, next(v for v in variants_of(reference) if v.name == name), None)


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

    from fasteval.core.runs.drift.diagnosis import variants_of

    assert tiny_encoder.folder.max_seq_length == 48 and not any(
        v.name.startswith("max_tokens") for v in variants_of(tiny_encoder)), "none shorter than 48 tokens"
    bare = _variant(tiny_encoder, "special_tokens=off")
    plain = Tokenizer.from_file(str(tiny_encoder.folder.tokenizer_file))
    assert bare.tokenizer.encode("5 meters").ids == plain.encode("5 meters", add_special_tokens=False).ids
    assert plain.encode("5 meters").ids != plain.encode("5 meters", add_special_tokens=False).ids
    from fasteval.core.runs.drift.diagnosis import _lowercases

    names = [v.name for v in variants_of(tiny_encoder)]
    assert "pooling=mean" not in names and "dense=off" not in names  # the reference's own pooling; no Dense
    flipped = f"lowercase={'off' if _lowercases(tiny_encoder) else 'on'}"
    assert flipped in names
    a, b = _variant(tiny_encoder, flipped).tokenizer, tiny_encoder.tokenizer
    assert a.encode("ABC km").ids != b.encode("ABC km").ids or a.encode("abc km").ids != b.encode("abc km").ids


def test_a_cls_pooled_deployment_is_named_pooling_cls(tiny_st_folder, cls_folder, fasteval_home, tmp_path):
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    proc = run_cli(["drift", tiny_st_folder, cls_folder, "--provider", "cpu", "--bootstrap", "0",
                    "--no-invariance", "--out", tmp_path / "out"], env=env)
    assert proc.returncode == 1, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "diagnosis:" in ln)
    assert "embeds like the reference with pooling=cls (worst cosine 0.9999" in line or \
        "embeds like the reference with pooling=cls (worst cosine 1.0000" in line, line
    saved = json.loads((tmp_path / "out" / "drift.json").read_text())
    assert saved["diagnosis"]["variant"] == "pooling=cls" and saved["diagnosis"]["worst"] >= 0.99
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
    d = report.diagnosis
    assert report.verdict == "drifts" and d["variant"] is None and d["closest"] == d["tried"][0]["variant"]
    names = [t["variant"] for t in d["tried"]]
    assert {"pooling=cls", "pooling=max", "pooling=last", "special_tokens=off", "precision=fp16",
            "precision=int8"} <= set(names) and any("+" in n for n in names)
    assert all("skipped" not in t for t in d["tried"]), d["tried"]
    from fasteval.core.runs.drift.diagnosis import diagnosis_line

    assert diagnosis_line(d).startswith(f"diagnosis: no usual misconfiguration explains it; closest {d['closest']}")
