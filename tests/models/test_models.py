"""Model folders, pooling, the torch.onnx export and the onnxruntime encoder, held to sentence-transformers."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from fasteval.core.errors import ModelError
from fasteval.models.sources.folder import PoolingConfig, content_hash, load_folder, parse_pooling
from fasteval.models.onnx.pooling import pool

from fakes import one_line_error

TEXTS = ["0 meters", "0.5 meters", "1 meter", "1334 meters", "-100 meters", "3e-06 meter", "five meter",
         "one-hundred kilogram", "1e+06 grams", "", "a much longer text with many many words " * 3]


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "lasttoken", "mean_sqrt_len_tokens", "weightedmean"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pooling_matches_sentence_transformers(mode, side):
    torch = pytest.importorskip("torch")
    from sentence_transformers.sentence_transformer.modules import Pooling

    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(5, 7, 8)).astype(np.float32)
    lengths = [7, 1, 3, 5, 2]
    mask = np.zeros((5, 7), dtype=np.int64)
    for row, n in enumerate(lengths):
        if side == "right":
            mask[row, :n] = 1
        else:
            mask[row, 7 - n:] = 1
    ours = pool(tokens, mask, PoolingConfig((mode,)))
    st = Pooling(8, pooling_mode=mode)
    ref = st({"token_embeddings": torch.from_numpy(tokens), "attention_mask": torch.from_numpy(mask)})
    np.testing.assert_allclose(ours, ref["sentence_embedding"].numpy(), rtol=1e-5, atol=1e-6)


def test_parse_pooling_both_formats():
    assert parse_pooling({"pooling_mode_mean_tokens": True}).modes == ("mean",)
    assert parse_pooling({"pooling_mode_cls_token": True, "pooling_mode_max_tokens": True}).modes == ("cls", "max")
    assert parse_pooling({"pooling_mode": "lasttoken", "include_prompt": False}) == PoolingConfig(
        ("lasttoken",), False)
    with pytest.raises(ModelError, match="Unsupported pooling"):
        parse_pooling({"pooling_mode": "median"})
    with pytest.raises(ModelError):
        parse_pooling({})


def test_folder_contract(tiny_st_folder):
    folder = load_folder(tiny_st_folder)
    assert folder.pooling.modes == ("mean",) and folder.normalize
    assert folder.max_seq_length == 48 and folder.onnx_file is None and folder.has_weights


def test_folder_errors(tmp_path, tiny_st_folder):
    with pytest.raises(ModelError, match="does not exist"):
        load_folder(tmp_path / "nope")
    broken = tmp_path / "no-tokenizer"
    shutil.copytree(tiny_st_folder, broken)
    (broken / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match="No tokenizer.json"):
        load_folder(broken)
    no_weights = tmp_path / "no-weights"
    shutil.copytree(tiny_st_folder, no_weights)
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="No weights"):
        load_folder(no_weights)
    odd = tmp_path / "odd-module"
    shutil.copytree(tiny_st_folder, odd)
    modules = json.loads((odd / "modules.json").read_text())
    modules.append({"idx": 9, "name": "9", "path": "9_X", "type": "sentence_transformers.models.LSTM"})
    (odd / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelError, match="does not support"):
        load_folder(odd)


def test_content_hash_changes_with_content_and_is_remembered(tmp_path, monkeypatch):
    """A hash is remembered by every file's (size, mtime_ns, ctime_ns, inode, device) and trusted only while all
    of them hold and the files are older than the hashing by RACY_NS: a byte changed with its mtime set back moves
    ctime, so it is hashed again; an unchanged model is never read twice."""
    import hashlib
    import json
    import os

    from fasteval.models.sources import folder as F

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "a").write_text("x")
    first = F.content_hash(folder)
    assert first == hashlib.sha256(b"a\0x\0").hexdigest()
    memo_path = tmp_path / "home" / "hashes.json"
    (entry,) = json.loads(memo_path.read_text()).values()
    assert entry["sha256"] == first and entry["hashed_at_ns"] > 0
    stat = (folder / "a").stat()
    (folder / "a").write_text("z")  # same size, same mtime: only its bytes (and its ctime) tell
    os.utime(folder / "a", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert F.content_hash(folder) == hashlib.sha256(b"a\0z\0").hexdigest()
    # past the racy window (here: none), an unchanged file's hash comes from the memo, unread
    monkeypatch.setattr(F, "RACY_NS", -10**15)
    memo = json.loads(memo_path.read_text())
    key = next(iter(memo))
    memo[key]["sha256"] = "remembered"
    memo_path.write_text(json.dumps(memo))
    assert F.content_hash(folder) == "remembered", "the bytes were not read again"
    os.utime(folder / "a")  # only the timestamps change: ctime moves, the hash is computed again
    assert F.content_hash(folder) == hashlib.sha256(b"a\0z\0").hexdigest()
    monkeypatch.setattr(F, "RACY_NS", 2 * 10**9)
    (folder / "a").write_text("y")
    assert F.content_hash(folder) == hashlib.sha256(b"a\0y\0").hexdigest(), "a file fresher than the window"


def test_encoder_matches_sentence_transformers(tiny_encoder, tiny_st_folder):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(tiny_st_folder), device="cpu")
    ours = tiny_encoder.encode(TEXTS)
    ref = st.encode(TEXTS, normalize_embeddings=True)
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    assert np.abs(ours - ref).max() < 1e-5
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-6)


def test_encoder_batching_and_order(tiny_encoder):
    one = np.stack([tiny_encoder.encode([t])[0] for t in TEXTS])
    tiny_encoder.batch_size = 3
    try:
        batched = tiny_encoder.encode(TEXTS)
    finally:
        tiny_encoder.batch_size = 32
    assert np.abs(one - batched).max() < 1e-5, "padding must not change an embedding beyond float noise"
    assert tiny_encoder.encode([]).shape[0] == 0
    with pytest.raises(ModelError):
        tiny_encoder.encode("a string")


def test_export_is_cached(tiny_st_folder, tiny_encoder, fasteval_home):
    from fasteval.models.onnx.export import export

    first = export(load_folder(tiny_st_folder), fasteval_home)
    again = export(load_folder(tiny_st_folder), fasteval_home)
    assert first == again and (first / "model.onnx").exists() and (first / "tokenizer.json").exists()
    assert not [p for p in first.parent.iterdir() if p.name.startswith(".export-")], "no staging left behind"
    info = json.loads((first / "fasteval_export.json").read_text())
    assert info["source_sha256"] == content_hash(tiny_st_folder)
    assert tiny_encoder.info["pooling"] == "mean" and tiny_encoder.info["provider"] == "cpu"


def test_export_failure_leaves_nothing(tmp_path, tiny_st_folder):
    pytest.importorskip("onnxscript")  # the export extra
    from fasteval.models.onnx.export import export

    bad = tmp_path / "bad-arch"
    shutil.copytree(tiny_st_folder, bad)
    config = json.loads((bad / "config.json").read_text())
    config["model_type"] = "no-such-architecture"
    (bad / "config.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    with pytest.raises(ModelError, match="could not export"):
        export(load_folder(bad), home)
    assert not any((home / "onnx").iterdir()), "a failed export leaves no folder in the cache"


def test_an_export_on_a_transformers_older_than_5_3_is_one_line(tmp_path, tiny_st_folder):
    """transformers below 5.3 (CVE-2026-4372; no NomicBert) is refused before the export starts, naming the version
    installed and the one needed. Simulated from outside: a transformers 4.57.6 distribution's metadata first on
    the path, as pip leaves it where another package pinned it down."""
    from fakes import run_cli

    site = tmp_path / "site"
    meta = site / "transformers-4.57.6.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: transformers\nVersion: 4.57.6\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "FASTEVAL_HOME": str(tmp_path / "home")}
    proc = run_cli(["export", tiny_st_folder, "--out", tmp_path / "out"], env=env)
    assert proc.returncode == 2
    one_line_error(proc, "transformers 4.57.6 is installed", "needs transformers >= 5.3", "CVE-2026-4372",
                   "pip install -U 'fasteval[export]'")
    assert not (tmp_path / "out").exists()


def test_packed_batches_respect_the_token_budget(tiny_st_folder, fasteval_home):
    from fasteval.models.loader import load_model

    texts = [f"{v:g} meters" for v in np.linspace(0, 1000, 57)] + ["one hundred kilometers and five meters"]
    packed = load_model(str(tiny_st_folder), provider="cpu", batching="packed")
    packed.batch_tokens = 60
    # a tokenizer that pads every batch to its longest, as all-MiniLM-L6-v2's tokenizer.json does: the texts are
    # still sorted by their real tokens (read as padded, they all looked equally long and were never sorted)
    packed.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    order, batches = packed._batches(texts)
    lengths = np.array([sum(e.attention_mask) for e in packed.tokenizer.encode_batch(texts)])
    assert len(set(lengths)) > 2 and len({len(e.ids) for e in packed.tokenizer.encode_batch(texts)}) == 1
    assert sorted(order.tolist()) == list(range(len(texts))) and list(lengths[order]) == sorted(lengths, reverse=True)
    covered = []
    for b in batches:
        rows = order[b]
        assert len(rows) * lengths[rows].max() <= 60 or len(rows) == 1
        covered += rows.tolist()
    assert sorted(covered) == list(range(len(texts)))
    paper = load_model(str(tiny_st_folder), provider="cpu", batching="paper")
    np.testing.assert_allclose(packed.encode(texts), paper.encode(texts), atol=1e-6)
    assert packed.info["batching"] == "packed" and "batching" not in paper.info
    assert packed.info["packing"] == "unpadded-tokens" and "packing" not in paper.info


def test_int8_is_onnxruntimes_dynamic_quantization_cached_with_its_own_key(tiny_st_folder, tiny_encoder,
                                                                          fasteval_home, monkeypatch):
    import onnx

    from fasteval.models.onnx import export as export_module
    from fasteval import drift as drift_of
    from fasteval.models.loader import load_model

    int8 = load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    assert int8.info["dtype"] == "int8" and tiny_encoder.info["dtype"] == "fp32"
    assert int8.folder.path.name.endswith("-int8") and int8.folder.path.parent == tiny_encoder.folder.path.parent
    ops = {node.op_type for node in onnx.load(str(int8.folder.onnx_file)).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} & ops, ops
    from fasteval.core.runs.job import Job
    from fasteval.core.plan import result_key

    assert result_key(Job("m").scoring.settings(int8.info)) != result_key(Job("m").scoring.settings(tiny_encoder.info))
    monkeypatch.setattr("onnxruntime.quantization.quantize_dynamic",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("quantized twice")))
    again = load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    assert again.info["onnx_sha256"] == int8.info["onnx_sha256"], "cached beside the fp32 export"
    drift = drift_of(tiny_encoder, int8, conformance=False, resamples=0)
    assert drift.texts > 1000 and drift.worst_cosine < drift.mean_cosine < 1 and drift.worst_cosine > 0.5
    assert export_module.export_info(int8.folder.path)["made_from"] == tiny_encoder.info["onnx_sha256"]


def test_int8_uses_its_recipe_and_requantizes_an_entry_of_another(tiny_st_folder, tiny_encoder, fasteval_home):
    """Per-channel weight scales and 7-bit weights (INT8_QUANTIZATION), recorded; an older entry is not reused."""
    import json

    import onnx
    from onnx import numpy_helper

    from fasteval.models.onnx import derive as derive_module
    from fasteval.models.loader import load_model

    int8 = load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    record_file = int8.folder.path / "fasteval_export.json"
    record = json.loads(record_file.read_text())
    assert record["recipe"] == derive_module.INT8_QUANTIZATION
    graph = onnx.load(str(int8.folder.onnx_file)).graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    weights = [consts[n.input[1]] for n in graph.node if n.op_type == "MatMulInteger" and n.input[1] in consts]
    assert weights and all(w.dtype == np.int8 and -64 <= w.min() and w.max() <= 64 for w in weights), "7-bit weights"
    scales = [consts[n.input[1]] for n in graph.node if n.op_type == "Mul" and n.input[1] in consts
              and n.input[1].endswith("_scale")]
    assert any(s.size > 1 for s in scales), "one scale per output channel"
    del record["recipe"]  # an entry of the recipe before this one
    record_file.write_text(json.dumps(record))
    again = load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    assert json.loads(record_file.read_text())["recipe"] == derive_module.INT8_QUANTIZATION
    assert again.info["onnx_sha256"] == int8.info["onnx_sha256"], "the same recipe gives the same graph"


def test_the_fp32_export_is_fused_validated_and_recorded(tiny_encoder):
    """onnxscript's fusions kept in float32 (issue 67: 3): attention in onnxruntime's Attention, the layer norms with
    their residuals in SkipLayerNormalization; recorded in fasteval_export.json; the validation against torch is the
    fused graph's."""
    import onnx

    from fasteval.models.onnx import export as export_module

    record = export_module.export_info(tiny_encoder.folder.path)
    fused = record["fp32_fusions"]
    assert fused["kept"] == "fused" and fused["rewriter"] == export_module.FP32_FUSIONS
    assert fused["fusions"]["attention"] >= 1 and fused["fusions"]["skip_layer_normalization"] >= 1
    ops = {(n.domain, n.op_type) for n in onnx.load(str(tiny_encoder.folder.onnx_file)).graph.node}
    assert ("com.microsoft", "Attention") in ops and ("com.microsoft", "SkipLayerNormalization") in ops
    assert record["format"] == export_module.EXPORT_FORMAT == 3
    assert 0 <= record["validation"]["max_abs_diff"] <= record["validation"]["atol"]


def test_a_rewriter_that_fails_leaves_the_graph_as_exported(tiny_st_folder, tiny_encoder, tmp_path, monkeypatch):
    """The fusions are a speed-up: where onnxscript's rewriter fails (a failpoint raises inside it), the export keeps
    torch.onnx's graph, says so in its record, and embeds what the fused graph embeds."""
    import onnx

    from fasteval.models.loader import load_model
    from fasteval.models.onnx.export import export, export_info

    monkeypatch.setenv("FASTEVAL_TEST_HOOK", "export-fusing:fail")
    dest = export(load_folder(tiny_st_folder), tmp_path / "home")
    monkeypatch.delenv("FASTEVAL_TEST_HOOK")
    record = export_info(dest)
    fusions = record["fp32_fusions"]
    assert fusions["kept"] == "as exported" and "failpoint export-fusing" in fusions["why"]
    ops = {n.op_type for n in onnx.load(str(dest / "model.onnx")).graph.node}
    assert "Attention" not in ops and "MatMul" in ops
    assert not list(dest.glob(".fused*")), "nothing of the failed attempt stays"
    texts = ["2 kilometers", "2000 meters", "five meter"]
    plain = load_model(str(dest), provider="cpu").encode(texts)
    np.testing.assert_allclose(plain, tiny_encoder.encode(texts), atol=1e-5)


def test_an_int8_made_from_another_fp32_graph_is_made_again(tiny_st_folder, tiny_encoder, fasteval_home):
    """int8 is made from the fp32 graph: an entry made from another one (an unfused graph of an earlier fasteval) is
    quantized again from today's, never reused under its recipe alone."""
    import json

    from fasteval.models.loader import load_model
    from fasteval.models.onnx import export as export_module

    int8 = load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    record_file = int8.folder.path / "fasteval_export.json"
    record = json.loads(record_file.read_text())
    record["made_from"] = "0" * 64  # the sha256 of a graph that is not today's fp32 export
    record_file.write_text(json.dumps(record))
    load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    assert export_module.export_info(int8.folder.path)["made_from"] == tiny_encoder.info["onnx_sha256"]


def test_an_export_cached_by_optimum_is_reused_under_its_key(tiny_st_folder, tmp_path, monkeypatch):
    """A cache entry made before the export moved to torch.onnx (its record names Optimum, format 1) holds the same
    model's graph: it is reused as it is, nothing is exported again (issue 55)."""
    pytest.importorskip("onnxscript")
    import torch.onnx

    from fasteval.models.onnx.export import export, export_info

    home = tmp_path / "home"
    dest = export(load_folder(tiny_st_folder), home)
    record = export_info(dest)
    optimum_record = {"format": 1, "source": record["source"], "source_sha256": record["source_sha256"],
                      "dtype": "fp32", "optimum": "0.1.0", "onnx_sha256": record["onnx_sha256"]}
    (dest / "fasteval_export.json").write_text(json.dumps(optimum_record))
    monkeypatch.setattr(torch.onnx, "export", lambda *a, **k: pytest.fail("exported again"))
    assert export(load_folder(tiny_st_folder), home) == dest
    assert export_info(dest) == optimum_record


def test_an_exports_bytes_do_not_depend_on_where_fasteval_is_installed(tiny_encoder):
    """torch's exporter writes each node's stack trace (this checkout's path, export.py's line numbers) into the
    graph: the same model's sha256, and every result key, differed between a checkout in /work and one in /tmp
    (CI's). The export keeps none of it."""
    from fakes import ROOT

    graph = (tiny_encoder.folder.path / "model.onnx").read_bytes()
    assert b"stack_trace" not in graph and b"export.py" not in graph and str(ROOT).encode() not in graph
    assert b"site-packages" not in graph


def test_export_out_copies_an_export_the_cache_holds(tiny_st_folder, tiny_encoder, fasteval_home, tmp_path):
    """`fasteval export MODEL --out DIR` exported again from scratch although the cache held that export (issue
    66, item 10): it is copied, byte for byte, without torch."""
    import json

    from fakes import run_cli
    from fasteval.models.sources.registry import export_dir
    from fasteval.models.sources.folder import content_hash

    cached = export_dir(fasteval_home, content_hash(tiny_st_folder), "fp32")
    assert (cached / "model.onnx").is_file()
    guard = tmp_path / "guard"  # torch cannot be imported in the command: an export would fail
    (guard / "torch").mkdir(parents=True)
    (guard / "torch" / "__init__.py").write_text("raise ImportError('torch is not to be imported here')\n")
    env = {"FASTEVAL_HOME": str(fasteval_home), "PYTHONPATH": str(guard)}
    proc = run_cli(["export", tiny_st_folder, "--out", tmp_path / "out"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "copied the cached fp32 export" in proc.stderr and "torch.onnx" not in proc.stderr, proc.stderr
    assert (tmp_path / "out" / "model.onnx").read_bytes() == (cached / "model.onnx").read_bytes()
    record = json.loads((tmp_path / "out" / "fasteval_export.json").read_text())
    assert record["source_sha256"] == content_hash(tiny_st_folder)
    (tmp_path / "empty").mkdir()  # an empty --out folder takes the copy too
    assert run_cli(["export", tiny_st_folder, "--out", tmp_path / "empty"], env=env).returncode == 0
    assert (tmp_path / "empty" / "model.onnx").read_bytes() == (cached / "model.onnx").read_bytes()


TEXTS = ["2 kilometers", "2000 meters", "2 meters", "five liters"]


def test_a_session_opened_ahead_is_the_one_that_runs(tiny_encoder):
    """``open_ahead`` opens the session in a thread of its own; the first encode waits for it and runs it, giving the
    bits a session opened at the first encode gives; asking again changes nothing."""
    from fasteval.models.loader import load_model

    ahead = load_model(str(tiny_encoder.folder.path), provider="cpu")
    ahead.open_ahead()
    opening = ahead._opening
    assert opening is not None and opening.name == "fasteval-session"
    vectors = ahead.encode(TEXTS)
    assert not opening.is_alive() and ahead._opening is None
    session = ahead.session
    ahead.open_ahead()
    assert ahead._opening is None and ahead.session is session
    assert np.array_equal(vectors, tiny_encoder.encode(TEXTS))
    assert ahead.provider == "cpu" and not ahead.graph_head


def test_a_session_that_fails_ahead_fails_at_the_first_encode(tiny_encoder, tmp_path):
    """What the thread raised is raised where the session is asked for, in one line naming the file."""
    from fasteval.models.loader import load_model

    copy = tmp_path / "broken"
    shutil.copytree(tiny_encoder.folder.path, copy)
    encoder = load_model(str(copy), provider="cpu")
    (copy / "model.onnx").write_bytes(b"not a graph")
    encoder.open_ahead()
    with pytest.raises(ModelError, match="onnxruntime cannot load .*model.onnx"):
        encoder.encode(TEXTS)


def test_a_head_asked_for_after_open_ahead_gets_its_own_session(tiny_encoder):
    """Setting ``graph_head`` while a session opens ahead drops that session: the next one runs the head."""
    from fasteval.models.loader import load_model

    encoder = load_model(str(tiny_encoder.folder.path), provider="cpu")
    encoder.open_ahead()
    encoder.graph_head = True
    vectors = encoder.encode(TEXTS)
    assert encoder.graph_head and encoder._head_in_graph
    np.testing.assert_allclose(vectors, tiny_encoder.encode(TEXTS), rtol=1e-5, atol=1e-6)


def test_a_run_opens_its_model_ahead_before_its_first_encode_and_only_then():
    """A run asks a model that can open ahead to do so before its first encode call, once; a run whose every text
    is in the embedding table (a rerun from the cache) never asks (no session for nothing)."""
    import fasteval
    from fasteval.core.embeddings import EmbeddingTable, OpensAhead

    from fakes import CountingEncoder

    class Ahead(CountingEncoder):
        def __init__(self):
            super().__init__("org/ahead")
            self.events: list[str] = []

        def open_ahead(self) -> None:
            self.events.append("open_ahead")

        def encode(self, texts):
            self.events.append("encode")
            return super().encode(texts)

    model = Ahead()
    assert isinstance(model, OpensAhead)
    table = EmbeddingTable()
    fasteval.evaluate(model, exams=[1], bootstrap=0, table=table)
    assert model.events[0] == "open_ahead" and model.events.count("open_ahead") == 1 and "encode" in model.events
    again = Ahead()
    fasteval.evaluate(again, exams=[1], bootstrap=0, table=table)
    assert again.events == []
