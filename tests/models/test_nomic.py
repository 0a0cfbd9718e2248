"""nomic-embed-text-v1.5 without remote code (issue 55): transformers 5 has NomicBert natively, so a folder of it
exports through torch.onnx and embeds as sentence-transformers does, while the repository's ``auto_map`` (which
names modelling code of its own) is never run; and code from elsewhere named in config.json is refused."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from fakes import one_line_error, run_cli
from hubserver import HubServer

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxscript")  # the export extra

TEXTS = ["0 meters", "0.5 meters", "1 meter", "1334 meters", "-100 meters", "3e-06 meter", "five meter", "",
         "100000 kilograms", "two hundred kilometers and five meters"]
# what the real repository's config.json maps, with trust_remote_code, to modelling code in another repository
NOMIC_AUTO_MAP = {"AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
                  "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"}


def _with_config(src, dest, **changes):
    shutil.copytree(src, dest)
    config = json.loads((dest / "config.json").read_text())
    config.update(changes)
    (dest / "config.json").write_text(json.dumps(config))
    return dest


@pytest.fixture(scope="module")
def nomic_folder(tmp_path_factory, tiny_nomic_folder):
    """The tiny NomicBert, its config.json carrying an auto_map as the real repository's does, and modelling files
    of its own beside it that leave a mark if run."""
    root = tmp_path_factory.mktemp("nomic-auto-map")
    folder = root / "tiny-nomic"
    shutil.copytree(tiny_nomic_folder, folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "nomic_bert"
    config["auto_map"] = {"AutoConfig": "configuration_hf_nomic_bert.NomicBertConfig",
                          "AutoModel": "modeling_hf_nomic_bert.NomicBertModel"}
    (folder / "config.json").write_text(json.dumps(config))
    mark = root / "REMOTE_CODE_RAN"
    for module in ("configuration_hf_nomic_bert.py", "modeling_hf_nomic_bert.py"):
        (folder / module).write_text(f"open({str(mark)!r}, 'w').write('ran')\nraise SystemExit('remote code ran')\n")
    return folder


def _reference(folder):
    from sentence_transformers import SentenceTransformer

    class Reference:  # the paper's reference: sentence-transformers, unit vectors, no remote code
        model = SentenceTransformer(str(folder), device="cpu", trust_remote_code=False).float()

        def encode(self, texts):
            return self.model.encode(list(texts), normalize_embeddings=True)

    return Reference()


def test_a_nomic_folder_exports_natively_and_its_exam1_cells_equal_sentence_transformers(nomic_folder, fasteval_home):
    from fasteval.core.embeddings import embed_groups, normalize_rows
    from fasteval.core.exams.geometry import run_exam1
    from fasteval.core.protocol import exam1_cells
    from fasteval.models.loader import load_model

    encoder = load_model(str(nomic_folder), provider="cpu")
    assert not (nomic_folder.parent / "REMOTE_CODE_RAN").exists(), "the folder's own modelling code never runs"
    reference = _reference(nomic_folder)
    ours, ref = normalize_rows(encoder.encode(TEXTS)), reference.encode(TEXTS)
    assert ours.shape == ref.shape == (len(TEXTS), 32)
    assert (ours * ref).sum(axis=1).min() >= 0.999999
    groups = [cell.texts for cell in exam1_cells()]
    a, b = embed_groups(encoder, groups), embed_groups(reference, groups)
    texts = [t for t, _ in b.items()]
    assert np.abs(a[texts] - b[texts]).max() < 1e-5
    cells_a, cells_b = run_exam1(a, keep_matrices=False).cells, run_exam1(b, keep_matrices=False).cells
    assert [(c.tau_numerator, c.pacc_numerator) for c in cells_a] == [(c.tau_numerator, c.pacc_numerator)
                                                                      for c in cells_b]
    record = json.loads((encoder.folder.path / "fasteval_export.json").read_text())
    assert record["exporter"] == "torch.onnx (dynamo)" and record["validation"]["max_abs_diff"] <= 3e-6


def test_the_registry_name_sweeps_from_the_hub_without_remote_code(nomic_folder, tmp_path):
    """`--model nomic-embed-text-v1.5` over HTTP: the repository (its auto_map naming code in nomic-bert-2048) is
    downloaded, exported and swept with transformers' NomicBert; the repository of the mapped code is never asked
    for; the numbers are the folder's."""
    from fasteval.models.sources.registry import REGISTRY

    assert not REGISTRY["nomic-embed-text-v1.5"].remote_code
    repo = _with_config(nomic_folder, tmp_path / "repo", auto_map=NOMIC_AUTO_MAP)
    home = tmp_path / "home"
    args = ["--exams", "1", "--bootstrap", "0", "--provider", "cpu", "-q"]
    with HubServer({"nomic-ai/nomic-embed-text-v1.5": repo}) as hub:
        env = {"HF_ENDPOINT": hub.url, "FASTEVAL_HOME": str(home), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        served = run_cli(["sweep", "--model", "nomic-embed-text-v1.5", "--out", tmp_path / "hub", *args], env=env)
        asked = [path for _, path in hub.requests]
    local = run_cli(["sweep", "--model", nomic_folder, "--out", tmp_path / "local", *args],
                    env={"FASTEVAL_HOME": str(home)})
    assert served.returncode == 0 and local.returncode == 0, served.stderr + local.stderr
    assert not any("nomic-bert-2048" in path for path in asked), asked
    rows = [json.loads(next((tmp_path / d).glob("*/*/results.json")).read_text())["exams"]["exam1"]["summary"]
            for d in ("hub", "local")]
    assert rows[0]["tau"] == rows[1]["tau"] and rows[0]["pacc"] == rows[1]["pacc"]


@pytest.mark.parametrize("changes, field", [
    ({"_attn_implementation_internal": "kernels-community/flash-attn"}, "_attn_implementation_internal"),
    ({"attn_implementation": "acme/fast-attention"}, "attn_implementation"),
    ({"attn_implementation": "flash_attention_2"}, "attn_implementation"),  # a kernel from the Hub where not installed
    ({"text_config": {"_attn_implementation": "acme/kernel@v1:attn"}}, "text_config._attn_implementation"),
    ({"experts_implementation": "acme/experts"}, "experts_implementation"),
    ({"use_kernels": True}, "use_kernels"),
])
def test_a_config_field_that_loads_code_from_elsewhere_is_refused(changes, field, tiny_st_folder, tmp_path):
    """Before transformers reads the folder: one line naming the field, exit 2, nothing exported or cached."""
    folder = _with_config(tiny_st_folder, tmp_path / "folder", **changes)
    home = tmp_path / "home"
    proc = run_cli(["export", folder, "--out", tmp_path / "out"], env={"FASTEVAL_HOME": str(home)})
    assert proc.returncode == 2
    one_line_error(proc, f"{folder / 'config.json'} asks transformers to load code from elsewhere ({field} = ",
                   "fasteval runs no code from a model's files", "delete that field")
    sweep = run_cli(["sweep", "--model", folder, "--out", tmp_path / "res", "--exams", "1", "--bootstrap", "0"],
                    env={"FASTEVAL_HOME": str(home)})
    one_line_error(sweep, f"({field} = ")
    assert not (tmp_path / "out").exists() and not list(home.rglob("model.onnx"))


def test_a_built_in_attention_named_in_config_is_accepted(tiny_st_folder, tmp_path, fasteval_home):
    from fasteval.models.onnx.export import export
    from fasteval.models.sources.folder import load_folder

    folder = _with_config(tiny_st_folder, tmp_path / "eager", attn_implementation="eager",
                          _attn_implementation_internal=None)
    assert (export(load_folder(folder), tmp_path / "home") / "model.onnx").exists()
