"""What a model folder brings is bounded and checked before any heavy work (issue 66): a folder that changes while
it exports cannot poison the cache, a tokenizer.json that is a device, huge or malformed, a config that declares
more layers than its weights hold, a safetensors header of the wrong form and a module sent outside the folder are
each refused in one line naming the file."""
from __future__ import annotations

import json
import shutil
import struct
import threading

import pytest

from fakes import one_line_error, run_cli
from fasteval.core.errors import ModelError


@pytest.fixture
def model_copy(tiny_st_folder, tmp_path, monkeypatch):
    """A private copy of the tiny model, exported into a private home."""
    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    return shutil.copytree(tiny_st_folder, tmp_path / "model")


def _export_paused(folder, gate, point, monkeypatch, change):
    """Export ``folder`` with the failpoint ``point`` paused; ``change()`` runs while it waits there. Returns the
    export's folder, or the exception it raised."""
    pytest.importorskip("onnxscript")
    from fasteval.core.io import fasteval_home
    from fasteval.models.onnx.export import export
    from fasteval.models.sources.folder import load_folder

    gate.mkdir()
    monkeypatch.setenv("FASTEVAL_TEST_HOOK", f"{point}:pause={gate}")
    outcome: dict = {}

    def run():
        try:
            outcome["done"] = export(load_folder(folder), fasteval_home())
        except Exception as err:  # noqa: BLE001 - handed to the test
            outcome["done"] = err

    worker = threading.Thread(target=run)
    worker.start()
    for _ in range(2400):
        if (gate / "reached").exists() or not worker.is_alive():
            break
        worker.join(0.05)
    assert (gate / "reached").exists(), outcome
    change()
    (gate / "go").touch()
    worker.join(300)
    monkeypatch.delenv("FASTEVAL_TEST_HOOK")
    return outcome["done"]


def _set_layers(folder, n):
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = n
    (folder / "config.json").write_text(json.dumps(config))


def _graph_layers(model_onnx) -> int:
    """The transformer layers of a BERT graph: its fused Attention nodes, one a layer, or (a graph left as exported)
    its LayerNormalizations, less the embeddings', two a layer (the weights' names are folded away by the
    exporter)."""
    import onnx

    nodes = onnx.load(str(model_onnx), load_external_data=False).graph.node
    fused = sum(n.op_type == "Attention" for n in nodes)
    return fused or (sum(n.op_type == "LayerNormalization" for n in nodes) - 1) // 2


def test_a_folder_that_changes_after_it_was_hashed_is_refused_and_nothing_is_cached(model_copy, tmp_path,
                                                                                  monkeypatch):
    """config.json edited between the hashing and the export's reading (an editor's save): the export refuses in
    one line; nothing is kept under the hash of the folder as it was; restored, the folder exports whole."""
    from fasteval.core.io import fasteval_home
    from fasteval.models.onnx.export import export
    from fasteval.models.sources.registry import export_dir
    from fasteval.models.sources.folder import content_hash, load_folder

    original = (model_copy / "config.json").read_bytes()
    source_hash = content_hash(model_copy)
    def edit():  # a change no check of the config's form can see
        config = json.loads(original)
        config["layer_norm_eps"] = 0.5
        (model_copy / "config.json").write_text(json.dumps(config))

    got = _export_paused(model_copy, tmp_path / "gate", "export-checked", monkeypatch, edit)
    assert isinstance(got, ModelError) and "changed while fasteval read it" in str(got), got
    assert not export_dir(fasteval_home(), source_hash, "fp32").exists()
    (model_copy / "config.json").write_bytes(original)
    dest = export(load_folder(model_copy), fasteval_home())
    assert _graph_layers(dest / "model.onnx") == 2
    assert json.loads((dest / "fasteval_export.json").read_text())["source_sha256"] == source_hash


def test_a_folder_that_changes_while_it_exports_does_not_change_the_graph(model_copy, tmp_path, monkeypatch):
    """The export reads its own copy of what was hashed: config.json cut to 1 layer while torch works changes
    nothing of the graph kept under the folder's hash (before, a 1-layer graph was cached under the 2-layer
    folder's hash and every later sweep of the genuine folder read it)."""
    from fasteval.models.sources.folder import content_hash

    source_hash = content_hash(model_copy)
    dest = _export_paused(model_copy, tmp_path / "gate", "export-reading", monkeypatch,
                          lambda: _set_layers(model_copy, 1))
    assert not isinstance(dest, Exception), dest
    assert _graph_layers(dest / "model.onnx") == 2
    assert json.loads((dest / "fasteval_export.json").read_text())["source_sha256"] == source_hash
    assert not (dest / ".source").exists()


# --- tokenizer.json and the other JSON files: regular files of a bounded size that parse --------------------------
def test_a_tokenizer_that_is_a_device_or_too_large_is_refused_before_anything_reads_it(model_copy):
    from fasteval.models.sources.bounds import MAX_TOKENIZER_BYTES
    from fasteval.models.sources.folder import load_folder

    tokenizer = model_copy / "tokenizer.json"
    original = tokenizer.read_bytes()
    tokenizer.unlink()
    tokenizer.symlink_to("/dev/zero")
    with pytest.raises(ModelError, match="tokenizer.json is not a regular file"):
        load_folder(model_copy)
    tokenizer.unlink()
    with open(tokenizer, "wb") as f:  # sparse: no disk taken
        f.truncate(MAX_TOKENIZER_BYTES + 1)
    with pytest.raises(ModelError, match=r"tokenizer.json has 268,435,457 bytes, more than such a file ever needs "
                                         r"\(256 MiB\)"):
        load_folder(model_copy)
    tokenizer.write_bytes(original)
    (model_copy / "config.json").unlink()
    (model_copy / "config.json").symlink_to("/dev/zero")
    with pytest.raises(ModelError, match="config.json is not a regular file"):
        load_folder(model_copy)


def test_a_malformed_tokenizer_is_named_before_torch_builds_the_model(model_copy, tmp_path):
    """The line names the file and the fix, not torch.onnx and transformers' support of the architecture."""
    pytest.importorskip("onnxscript")
    (model_copy / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "NoSuchModel"}}')
    proc = run_cli(["export", model_copy, "--out", tmp_path / "exp"], env={"FASTEVAL_HOME": str(tmp_path / "h")})
    line = one_line_error(proc, "Cannot read the tokenizer", "tokenizer.json", "re-download the model folder")
    assert "torch.onnx" not in line and proc.returncode == 2


def test_a_config_declaring_more_layers_than_its_weights_hold_is_refused_before_the_model_is_built(model_copy):
    pytest.importorskip("onnxscript")
    from fasteval.core.io import fasteval_home
    from fasteval.models.onnx.export import export
    from fasteval.models.sources.folder import load_folder

    for declared, held in ((10_000, r"2 layer\(s\) \(none for layer 2\)"), (1, r"2 layer\(s\)")):
        _set_layers(model_copy, declared)
        with pytest.raises(ModelError, match=rf"model/config.json declares num_hidden_layers = {declared}, but the "
                                             rf"weights hold {held}"):
            export(load_folder(model_copy), fasteval_home())


# --- safetensors headers: the format's form, checked before it is trusted ------------------------------------------
def _safetensors(path, header, data=b"\0" * 16, size=None):
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    path.write_bytes(struct.pack("<Q", len(raw) if size is None else size) + raw + data)
    return path


@pytest.mark.parametrize("header, size, why", [
    ({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}, None, "tensor 'w' is declared as"),
    ({"w": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}}, None, "tensor 'w' is declared as"),
    ({"w": {"dtype": "F32", "shape": [True], "data_offsets": [0, 8]}}, None, "tensor 'w' is declared as"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 10**9]}}, None, "tensor 'w' is declared as"),
    ([1, 2, 3], None, "its header is not a JSON object"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, 2**62, f"its header claims {2**62} bytes"),
    (b"{not json", None, "Expecting property name"),
])
def test_a_safetensors_header_of_the_wrong_form_is_one_line(tmp_path, header, size, why):
    from fasteval.models.sources.bounds import safetensors_header
    from fasteval.models.sources.needs import folder_params

    path = _safetensors(tmp_path / "model.safetensors", header, size=size)
    with pytest.raises(ModelError, match="is not a safetensors file") as caught:
        safetensors_header(path)
    assert why in str(caught.value)
    with pytest.raises(ModelError, match="is not a safetensors file"):
        folder_params(tmp_path)


def test_a_sound_safetensors_header_is_read_as_the_format_defines(tiny_st_folder):
    from safetensors import safe_open

    from fasteval.models.sources.bounds import safetensors_header

    header = safetensors_header(tiny_st_folder / "model.safetensors")
    with safe_open(str(tiny_st_folder / "model.safetensors"), "np") as f:
        assert sorted(header) == sorted(f.keys())
        assert all(header[k]["shape"] == list(f.get_slice(k).get_shape()) for k in f.keys())


def test_a_broken_safetensors_header_is_one_line_on_the_command_line(model_copy, tmp_path):
    _safetensors(model_copy / "model.safetensors", {"w": {"dtype": "F32", "shape": 7, "data_offsets": [0, 8]}})
    proc = run_cli(["sweep", "--model", model_copy, "--out", tmp_path / "out", "--dry-run"],
                   env={"FASTEVAL_HOME": str(tmp_path / "h")})
    one_line_error(proc, "model.safetensors is not a safetensors file")
    assert proc.returncode == 2


# --- modules.json cannot send a module outside the folder -----------------------------------------------------------
@pytest.mark.parametrize("where", ["../..", "..", "/etc", "0_Transformer/../../outside"])
def test_a_module_outside_the_folder_is_refused(model_copy, where):
    from fasteval.models.sources.folder import load_folder

    modules = json.loads((model_copy / "modules.json").read_text())
    modules[0]["path"] = where
    (model_copy / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelError, match=r"sends the .*Transformer module to .*, outside the model folder"):
        load_folder(model_copy)
