"""Faults a careless operator or a hostile file causes (issue 19, the items fixed so far): each ends in one line
naming the problem and the fix, a non-zero exit, and nothing lost or reused."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from fakes import CountingEncoder, one_line_error, run_cli


def test_compare_out_never_replaces_a_folder_it_did_not_write(tmp_path):
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    results = tmp_path / "results"
    for name in ("a", "b"):
        run_sweep([Job(name, exams=(1,), bootstrap=0)], results, lambda n, **o: CountingEncoder(n), cache_root=False)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("three years of work")
    one_line_error(run_cli(["compare", results, "--out", mine, "--bootstrap", "200"]), "not an earlier output",
                   "--out")
    assert (mine / "thesis.tex").read_text() == "three years of work"
    one_line_error(run_cli(["compare", results, "--out", results, "--bootstrap", "200"]), "not an earlier output")
    assert len(list(results.glob("*/*/results.json"))) == 2, "the results folder is untouched"
    again = tmp_path / "cmp"
    for _ in range(2):  # its own earlier output it replaces
        assert run_cli(["compare", results, "--out", again, "--bootstrap", "200"]).returncode == 0


def test_a_protocol_is_its_content_not_its_name(tmp_path, monkeypatch):
    from fasteval.core.protocol.loading import BUILTIN_DIR, load_protocol

    edited = (BUILTIN_DIR / "paper.toml").read_text().replace('start = 0, stop = 10.5, step = 0.5',
                                                              'start = 0, stop = 11.5, step = 0.5')
    assert edited != (BUILTIN_DIR / "paper.toml").read_text()
    copy = tmp_path / "my-paper.toml"
    copy.write_text(edited.replace("exams = [1, 2, 3, \"conversion\"]", "exams = [1]"))
    spec = load_protocol(copy)
    assert spec.name == "paper" and not spec.is_paper and spec.key != load_protocol("paper").key
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper").write_text(edited)
    with pytest.raises(Exception, match="both a built-in protocol and the file"):
        load_protocol("paper")


def test_a_protocol_range_has_a_size_limit(tmp_path):
    from fasteval.core.protocol.loading import MAX_RANGE_VALUES

    f = tmp_path / "big.toml"
    f.write_text(f'''[protocol]
name = "big"
version = "1"
exams = [1]

[[quantities]]
name = "meter"
forms.en = ["meter", "meters"]

[[ranges]]
name = "huge"
linspace = {{ start = 0, stop = 1, num = {MAX_RANGE_VALUES * 10} }}
''')
    one_line_error(run_cli(["sweep", "--protocol", f, "--out", tmp_path / "out"]), "ranges.huge",
                   f"at most {MAX_RANGE_VALUES}")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("results.json"))


def test_an_unusable_cache_folder_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    proc = run_cli(["sweep", "--model", "all-MiniLM-L6-v2", "--out", tmp_path / "out"],
                   env={"FASTEVAL_HOME": str(blocker / "home")})
    one_line_error(proc, "cache folder", "FASTEVAL_HOME")


def test_a_zip_member_never_lands_outside_its_folder(tmp_path):
    from fasteval.models.sources.fetch import _extract_prefix

    archive = tmp_path / "evil.zip"
    outside = tmp_path / "outside.txt"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("model/config.json", "{}")
        z.writestr(f"model/{outside}", "absolute")  # "model//tmp/.../outside.txt"
        z.writestr("model/../escape.txt", "climbs out")
    dest = tmp_path / "dest"
    dest.mkdir()
    with zipfile.ZipFile(archive) as z:
        _extract_prefix(z, "model", dest)
    assert (dest / "config.json").exists() and not outside.exists() and not (tmp_path / "escape.txt").exists()
    assert sorted(p.name for p in dest.rglob("*") if p.is_file()) == ["config.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_results_json_that_is_a_fifo_is_skipped_not_waited_for(tmp_path):
    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    results = tmp_path / "results"
    run_sweep([Job("a", exams=(1,), bootstrap=0)], results, lambda n, **o: CountingEncoder(n), cache_root=False)
    (results / "trap").mkdir()
    os.mkfifo(results / "trap" / "results.json")
    code = ("from fasteval.core.report.entries import load_results; import sys; "
            f"warned = []; r = load_results({str(results)!r}, notes=warned); print(len(r), warned)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("1 ") and "not a regular file" in proc.stdout


def test_int8_quantization_writes_nothing_into_the_shared_fp32_export(tiny_st_folder, tmp_path, monkeypatch):
    """onnxruntime writes a shape-inferred copy beside its input; two int8 runs at once collided in the fp32
    folder, and a read-only cache failed. It quantizes a private copy now."""
    import onnx.shape_inference

    from fasteval.models.loader import load_model

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    fp32 = load_model(str(tiny_st_folder), provider="cpu").folder.path
    written = []
    infer = onnx.shape_inference.infer_shapes_path
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes_path",
                        lambda src, dst, *a, **k: (written.append(dst), infer(src, dst, *a, **k))[1])
    before = sorted(p.name for p in fp32.iterdir())
    int8 = load_model(str(tiny_st_folder), provider="cpu", dtype="int8")
    assert written and not any(str(fp32) in str(w) for w in written), written
    assert sorted(p.name for p in fp32.iterdir()) == before
    assert not (int8.folder.path / ".fp32-input").exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_concurrent_sweeps_live_staging_is_left_alone_and_a_dead_ones_removed(tmp_path):
    """Two sweeps into one --out: the one starting must not delete the other's staging folder (it renamed a
    half-written folder into place, 'done', without results.json)."""
    import socket

    from fasteval.core.runs.job import clean_stale_staging

    model = tmp_path / "out" / "m"
    model.mkdir(parents=True)
    host = socket.gethostname()
    live = model / f".key1.staging-{host}-{os.getpid()}-abc"
    dead = model / f".key2.staging-{host}-{_dead_pid()}-def"
    tmp = model / f".results.json.tmp-{host}-{_dead_pid()}-ghi"
    for d in (live, dead):
        d.mkdir()
        (d / "part.csv").write_text("half")
    tmp.write_text("half")
    clean_stale_staging(tmp_path / "out")
    assert live.exists() and not dead.exists() and not tmp.exists()


def test_a_kill_between_the_two_renames_of_overwrite_always_recovers_the_newest(tmp_path):
    import socket

    from fasteval.core.io import COMPLETE
    from fasteval.core.runs.job import clean_stale_staging

    model = tmp_path / "out" / "m"
    model.mkdir(parents=True)
    host, pid = socket.gethostname(), _dead_pid()
    old = model / f".key.old-{host}-{pid}-a" / "old"
    old.mkdir(parents=True)
    (old / "results.json").write_text('{"which": "old"}')
    new = model / f".key.staging-{host}-{pid}-b"
    new.mkdir()
    (new / "results.json").write_text('{"which": "new"}')
    (new / COMPLETE).touch()
    clean_stale_staging(tmp_path / "out")  # the key folder itself is gone: the kill came between the renames
    assert (model / "key" / "results.json").read_text() == '{"which": "new"}'
    assert sorted(p.name for p in model.iterdir()) == ["key"]
    (model / "key" / "results.json").unlink()  # a kill before the new copy was whole: the old one comes back
    (model / "key").rmdir()
    old.mkdir(parents=True)
    (old / "results.json").write_text('{"which": "old"}')
    clean_stale_staging(tmp_path / "out")
    assert (model / "key" / "results.json").read_text() == '{"which": "old"}'
    assert sorted(p.name for p in model.iterdir()) == ["key"]


def test_staging_left_in_the_cache_by_a_killed_export_is_cleaned(tmp_path, monkeypatch):
    import socket

    from fasteval.models.sources.home import usable_home

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    stale = tmp_path / "home" / "onnx" / f".tiny.staging-{socket.gethostname()}-{_dead_pid()}-x"
    stale.mkdir(parents=True)
    (stale / "model.onnx").write_bytes(b"\0" * 1000)
    temp = tmp_path / "home" / f".hashes.json.tmp-{socket.gethostname()}-{_dead_pid()}-y"
    temp.write_text("{")
    usable_home()
    assert not stale.exists() and not temp.exists()


def test_a_cache_entry_of_another_key_or_shape_is_rebuilt_not_used(tmp_path, caplog):
    """Another model's entry copied over this key's file (another dimension) gave tau 30.89 for 36.97: an entry
    names its key and is checked before use."""
    import logging

    import numpy as np

    from fasteval.core.embeddings import EmbeddingTable
    from fasteval.core.cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path)
    mine, other = EmbeddingTable(), EmbeddingTable()
    mine.add(["2 meters", "5 meters"], np.eye(2, 4, dtype=np.float32))
    other.add(["2 meters", "5 meters"], np.ones((2, 3), dtype=np.float32))
    cache.save("mine", mine)
    cache.save("other", other)
    assert len(cache.load("mine")) == 2
    cache.path("other").replace(cache.path("mine"))  # the foreign file under this key's name
    with caplog.at_level(logging.WARNING, logger="fasteval"):
        assert len(cache.load("mine")) == 0
    assert "holds the embeddings of key other" in caplog.text and not cache.path("mine").exists()


def test_a_byte_changed_with_its_mtime_kept_changes_the_key(tiny_st_folder, tmp_path, monkeypatch):
    """Hashes were remembered by size and mtime: a flipped byte in model.onnx kept the key (and poisoned the
    embedding cache). A hash is remembered by size, mtime, ctime, inode and device: the write that flipped the byte
    moved ctime, so it is hashed again; a folder that is already an export is hashed as it is, its tokenizer
    files included."""
    import json
    import shutil

    from fasteval.models.loader import export_model, load_model

    monkeypatch.setenv("FASTEVAL_HOME", str(tmp_path / "home"))
    exported = export_model(str(tiny_st_folder), out=tmp_path / "exported")
    before = load_model(str(exported), provider="cpu").info
    onnx = exported / "model.onnx"
    stat = onnx.stat()
    data = bytearray(onnx.read_bytes())
    data[-1] ^= 1
    onnx.write_bytes(bytes(data))
    os.utime(onnx, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    flipped = load_model(str(exported), provider="cpu").info
    assert flipped["onnx_sha256"] != before["onnx_sha256"] and flipped["source_sha256"] != before["source_sha256"]
    copy = tmp_path / "copy"
    shutil.copytree(export_model(str(tiny_st_folder), out=tmp_path / "again"), copy)
    base = load_model(str(copy), provider="cpu").info["source_sha256"]
    cfg = copy / "tokenizer_config.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "padding_side": "left"}))
    assert load_model(str(copy), provider="cpu").info["source_sha256"] != base


@pytest.mark.parametrize("edit, key", [('round = "x"', "ranges.r.round"),
                                       ("nested = " + "[" * 5000 + "]" * 5000, "(file)")])
def test_bad_protocol_values_are_one_line_not_an_internal_error(tmp_path, edit, key):
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "p"\nversion = "1"\nexams = [1]\n\n[[quantities]]\nname = "meter"\n'
                 'forms.en = ["meter", "meters"]\n\n[[ranges]]\nname = "r"\nvalues = [1, 2, 3]\n' + edit + "\n")
    one_line_error(run_cli(["sweep", "--protocol", f, "--out", tmp_path / "out"]), key, "Fix:")


def test_a_package_index_that_never_answers_fails_within_the_fetch_timeout(tmp_path):
    import socket
    import time

    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    env = {"FASTEVAL_HOME": str(tmp_path / "home"), "FASTEVAL_FETCH_TIMEOUT_S": "2", "PIP_FIND_LINKS": "",
           "PIP_INDEX_URL": f"http://127.0.0.1:{silent.getsockname()[1]}/simple", "PIP_NO_INDEX": ""}
    start = time.perf_counter()
    try:
        proc = run_cli(["sweep", "--model", "all-MiniLM-L6-v2", "--out", tmp_path / "out", "-q"], env=env,
                       timeout=300)
    finally:
        silent.close()
    assert time.perf_counter() - start < 120, "pip's own default would wait 180 s a try"
    assert proc.returncode == 3
    one_line_error(proc, "could not download", "Fix:")


def test_a_prompt_that_fills_the_models_length_is_one_line(tiny_st_folder, fasteval_home, tmp_path):
    proc = run_cli(["sweep", "--model", tiny_st_folder, "--prompt", "meter " * 200, "--out", tmp_path / "out",
                    "--provider", "cpu", "--exams", "1", "--bootstrap", "0"], env={"FASTEVAL_HOME": str(fasteval_home)})
    one_line_error(proc, "The prompt takes all", "shorter --prompt")


def test_a_results_json_of_the_wrong_types_is_skipped_by_report_and_compare(tmp_path):
    import json

    from fasteval.core.runs.job import Job
    from fasteval.core.runs.sweep import run_sweep

    results = tmp_path / "results"
    for name in ("a", "b", "c"):
        run_sweep([Job(name, exams=(1,), bootstrap=0)], results, lambda n, **o: CountingEncoder(n), cache_root=False)
    bad = next((results / "c").glob("*/results.json"))
    data = json.loads(bad.read_text())
    data["exams"]["exam1"]["cells"][0]["tau"] = "high"
    bad.write_text(json.dumps(data))
    report = run_cli(["report", results, "--out", tmp_path / "rep", "--no-png", "--bootstrap", "0"])
    assert report.returncode == 0, report.stderr
    assert "skipped" in report.stderr and "not a float" in report.stderr
    compare = run_cli(["compare", results, "--out", tmp_path / "cmp", "--bootstrap", "200"])
    assert compare.returncode == 0, compare.stderr
    assert "not a float" in compare.stderr


def test_unreadable_dense_weights_and_refused_pickles_are_one_line(tmp_path):
    import pickle

    import numpy as np

    from fasteval.core.errors import ModelError
    from fasteval.models.onnx.code_safety import safe_torch_load
    from fasteval.models.onnx.export import _dense_to_npz

    layer = tmp_path / "2_Dense"
    layer.mkdir()

    from fractions import Fraction  # a class torch's weights_only unpickler does not allow

    (layer / "pytorch_model.bin").write_bytes(pickle.dumps({"linear.weight": Fraction(1, 2)}))
    with pytest.raises(ModelError, match="will not load .* safely"):
        _dense_to_npz(layer, tmp_path / "out" / "dense.npz")
    with pytest.raises(ModelError, match="will not load .* safely"):
        safe_torch_load(layer / "pytorch_model.bin")
    from fasteval.models.sources.folder import DenseLayer, ModelFolder, PoolingConfig

    (tmp_path / "2_Dense" / "dense.npz").mkdir()  # a folder where the weights belong
    folder = ModelFolder(tmp_path, tmp_path, tmp_path / "tokenizer.json", None, PoolingConfig(), True, 8)
    with pytest.raises(ModelError, match="Cannot read the Dense weights"):
        folder.dense_weights(DenseLayer("2_Dense", 4, 4, True, "identity"))
    (tmp_path / "2_Dense" / "dense.npz").rmdir()
    np.savez(tmp_path / "2_Dense" / "dense.npz", weight=np.array([object()], dtype=object))
    with pytest.raises(ModelError, match="Cannot read the Dense weights"):
        folder.dense_weights(DenseLayer("2_Dense", 4, 4, True, "identity"))


def test_a_full_disk_during_export_says_so(tiny_st_folder, tmp_path, monkeypatch):
    import errno

    import torch.onnx

    from fasteval.core.errors import OutputError
    from fasteval.models.onnx.export import export
    from fasteval.models.sources.folder import load_folder

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch.onnx, "export", full)
    with pytest.raises(OutputError, match="No space left") as info:
        export(load_folder(tiny_st_folder), tmp_path / "home")
    assert "FASTEVAL_HOME" in str(info.value) and "architecture" not in str(info.value)
    assert not any((tmp_path / "home").rglob("model.onnx")), "nothing half-written"


SWEEP_SCRIPT = """
import sys; sys.path.insert(0, {tests!r})
from fakes import CountingEncoder
from fasteval.core.runs.job import Job
from fasteval.core.runs.sweep import run_sweep
run_sweep([Job({model!r}, exams=(1,), bootstrap=0, similarity={metric!r})], {out!r}, lambda n, **o: CountingEncoder(n),
          overwrite={overwrite!r}, cache_root=False)
"""


def _sweep_process(out, model, hook="", overwrite="only-missing", metric="cos"):
    from fakes import TESTS

    code = SWEEP_SCRIPT.format(tests=str(TESTS), model=model, out=str(out), overwrite=overwrite, metric=metric)
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "FASTEVAL_TEST_HOOK": hook},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigkill_between_the_renames_then_a_rerun_has_the_newest_result(tmp_path):
    out = tmp_path / "out"
    assert _sweep_process(out, "m").wait() == 0
    (folder,) = out.glob("m/*")
    first = (folder / "results.json").read_text()
    killed = _sweep_process(out, "m", hook="between-renames:kill", overwrite="always")
    assert killed.wait() == -9 and not folder.exists(), "killed with the result moved aside"
    assert _sweep_process(out, "m").wait() == 0
    assert (folder / "results.json").read_text() != "" and (folder / "results.json").read_text()[:100] == first[:100]
    assert sorted(p.name for p in (out / "m").iterdir()) == [folder.name], "nothing stale left"


def test_two_sweeps_into_one_folder_at_once_both_finish_whole(tmp_path):
    out = tmp_path / "out"
    slow = _sweep_process(out, "m", hook="staged:sleep=4")  # its staging folder lives 4 s
    import time

    deadline = time.time() + 60
    while not list(out.glob("m/.*.staging-*")) and time.time() < deadline:
        time.sleep(0.05)
    assert list(out.glob("m/.*.staging-*")), "the slow sweep is writing"
    other = _sweep_process(out, "m", metric="l2")  # starts, cleans the folder, writes its own result
    assert other.wait() == 0 and slow.wait() == 0, slow.stderr.read()
    results = sorted(out.glob("m/*/results.json"))
    assert len(results) == 2 and all(r.stat().st_size > 1000 for r in results), "both whole"


def test_an_export_path_that_is_a_file_is_one_line(tiny_st_folder, fasteval_home, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("mine")
    env = {"FASTEVAL_HOME": str(fasteval_home)}
    one_line_error(run_cli(["export", tiny_st_folder, "--out", target], env=env), "not an empty folder")
    one_line_error(run_cli(["export", tiny_st_folder, "--out", target / "sub"], env=env), "Cannot write")
    assert target.read_text() == "mine"
