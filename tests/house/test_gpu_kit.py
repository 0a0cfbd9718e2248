"""The GPU kit's parts (benchmarks/gpu/kit.py): a file cut into parts of at most N bytes, each with its sha256,
reassembles to the same bytes; a missing, short or altered part, or a manifest of another archive, is one error
naming it. On a small file, with no download (the real kit is made and dry-run by hand: benchmarks/GPU-RUN.md)."""
from __future__ import annotations

import hashlib
import json
import os

import importlib.util

import pytest

from fakes import ROOT

# the kit is a script of its own (run where nothing else of the repository is importable): loaded by its path
_spec = importlib.util.spec_from_file_location("gpu_kit", ROOT / "benchmarks" / "gpu" / "kit.py")
assert _spec is not None and _spec.loader is not None
gpu_kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_kit)


@pytest.mark.parametrize("size, part_bytes, parts", [(1000, 300, 4), (900, 300, 3), (0, 300, 1), (5, 300, 1)])
def test_parts_reassemble_to_the_same_bytes(tmp_path, size, part_bytes, parts):
    data = os.urandom(size)
    archive = tmp_path / "kit.tar"
    archive.write_bytes(data)
    manifest = gpu_kit.split(archive, tmp_path / "parts", part_bytes)
    assert len(manifest["parts"]) == parts and manifest["sha256"] == hashlib.sha256(data).hexdigest()
    assert all(p["bytes"] <= part_bytes for p in manifest["parts"])
    assert sum(p["bytes"] for p in manifest["parts"]) == size
    for p in manifest["parts"]:
        assert hashlib.sha256((tmp_path / "parts" / p["name"]).read_bytes()).hexdigest() == p["sha256"]
    assert json.loads((tmp_path / "parts" / "MANIFEST.json").read_text()) == manifest
    out = gpu_kit.reassemble(tmp_path / "parts", tmp_path / "again.tar")
    assert out.read_bytes() == data and not (tmp_path / "again.tar.partial").exists()


def test_a_missing_short_or_altered_part_is_named(tmp_path):
    archive = tmp_path / "kit.tar"
    archive.write_bytes(os.urandom(1000))
    parts = tmp_path / "parts"
    gpu_kit.split(archive, parts, 300)
    second = parts / "part-001"
    saved = second.read_bytes()
    second.unlink()
    with pytest.raises(gpu_kit.KitError, match="part-001 of 4 is missing"):
        gpu_kit.reassemble(parts, tmp_path / "out.tar")
    second.write_bytes(saved[:-1])
    with pytest.raises(gpu_kit.KitError, match="part-001 is damaged"):
        gpu_kit.reassemble(parts, tmp_path / "out.tar")
    second.write_bytes(bytes([saved[0] ^ 1]) + saved[1:])
    with pytest.raises(gpu_kit.KitError, match="part-001 is damaged"):
        gpu_kit.reassemble(parts, tmp_path / "out.tar")
    second.write_bytes(saved)
    manifest = json.loads((parts / "MANIFEST.json").read_text())
    manifest["sha256"] = "0" * 64  # parts of another archive
    (parts / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(gpu_kit.KitError, match="do not make the archive"):
        gpu_kit.reassemble(parts, tmp_path / "out.tar")
    assert not (tmp_path / "out.tar").exists(), "nothing half-written"
    (parts / "MANIFEST.json").unlink()
    assert gpu_kit.main(["unpack", "--kit", str(tmp_path)]) == 2


def test_the_plan_carries_one_part_a_call_and_runs_with_the_last(tmp_path):
    archive = tmp_path / "kit.tar"
    archive.write_bytes(os.urandom(700))
    gpu_kit.split(archive, tmp_path / "parts", 300)
    lines = gpu_kit.plan(tmp_path).splitlines()
    assert lines[1:] == ['  call 1: carry [".gpukit/parts/part-000"]; command: true',
                         '  call 2: carry [".gpukit/parts/part-001"]; command: true',
                         '  call 3: carry [".gpukit/parts/part-002", ".gpukit/parts/MANIFEST.json"]; command: '
                         "bash benchmarks/gpu/kit_run.sh --quick"]
    assert gpu_kit.PART_BYTES <= 60 * 2**20, "a call carries at most 64 MiB, the working tree included"
