"""The GPU run's kit: everything the offline GPU machine lacks, prepared here and carried there in pieces.

The GPU machine a run may be lent has Python 3.12 and its own packages (numpy, numba, scipy, tokenizers, httpx,
typer, torch on CUDA, sentence-transformers, onnx, the CUDA 13 and cuDNN 9 wheels, plain onnxruntime on the CPU),
no network, and takes 64 MiB of carried files a call (the device tool's KINDS.md). What it lacks:

- the cp312 wheels of onnxruntime-gpu (the version installed here), pint and what pint needs beyond the image
  (flexcache, flexparser, platformdirs), and rapidfuzz (the reference implementation's Levenshtein);
- the default model: its PyPI folder (for sentence-transformers on torch) and its ONNX export (made here on the
  CPU), as a FASTEVAL_HOME, so that nothing is downloaded or exported there.

    python benchmarks/gpu/kit.py prepare [--kit .gpukit] [--model all-MiniLM-L6-v2]   # here: parts + MANIFEST.json
    python benchmarks/gpu/kit.py plan [--kit .gpukit]                                 # the device calls, in order
    bash benchmarks/gpu/kit_run.sh [--provider cuda|cpu] [--quick]                    # there (cpu: a dry run here)

``prepare`` puts the kit in one tar (gzip level 1), cut into parts of at most 60 MiB (``part-000``, ...) with their
sha256 and the whole tar's in ``MANIFEST.json``, under the ignored folder ``.gpukit/parts``. ``unpack`` (run there
by gpu/kit_run.sh) checks each part and the whole, extracts it, and installs the wheels with ``--no-index
--no-deps`` into ``.gpukit/site``, which goes first on PYTHONPATH, ahead of the image's CPU onnxruntime.
benchmarks/GPU-RUN.md says which part each call carries and the GPU time the run is expected to take.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KIT = ROOT / ".gpukit"
PART_BYTES = 60 * 2**20  # a call carries 64 MiB with the working tree (about 2 MB)
PYTHON_THERE = "3.12"
# What the image lacks (besides onnxruntime-gpu, pinned to the version installed here): pint and the packages it
# needs that the image has not, and rapidfuzz for the reference implementation.
WHEELS_THERE = ("pint", "flexcache", "flexparser", "platformdirs", "rapidfuzz")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "any")


class KitError(Exception):
    """A kit that cannot be made or trusted; its text is one line naming what and the fix."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def split(archive: Path, parts: Path, part_bytes: int = PART_BYTES) -> dict:
    """Cut ``archive`` into ``parts``/part-NNN of at most ``part_bytes`` each; write and return the manifest
    (each part's name, size and sha256, and the whole archive's)."""
    if part_bytes < 1:
        raise KitError(f"a part must hold at least one byte, not {part_bytes}.")
    parts.mkdir(parents=True, exist_ok=True)
    for old in parts.glob("part-*"):
        old.unlink()
    listed = []
    with archive.open("rb") as f:
        for k in range(10**6):
            block = f.read(part_bytes)
            if not block and k:
                break
            part = parts / f"part-{k:03d}"
            part.write_bytes(block)
            listed.append({"name": part.name, "bytes": len(block), "sha256": hashlib.sha256(block).hexdigest()})
            if len(block) < part_bytes:
                break
    manifest = {"archive": archive.name, "bytes": archive.stat().st_size, "sha256": sha256(archive),
                "part_bytes": part_bytes, "parts": listed}
    (parts / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def reassemble(parts: Path, dest: Path) -> Path:
    """The archive of ``parts`` (MANIFEST.json and its part files) rebuilt as ``dest``; KitError naming a part
    that is missing, of another size or another sha256, or a whole that does not match."""
    try:
        manifest = json.loads((parts / "MANIFEST.json").read_text())
    except (OSError, ValueError) as err:
        raise KitError(f"no readable MANIFEST.json in {parts} ({type(err).__name__}): carry it with the "
                       "parts.") from None
    tmp = dest.with_name(dest.name + ".partial")
    digest = hashlib.sha256()
    with tmp.open("wb") as out:
        for entry in manifest["parts"]:
            part = parts / entry["name"]
            if not part.is_file():
                raise KitError(f"{entry['name']} of {len(manifest['parts'])} is missing from {parts}: carry it "
                               "(benchmarks/GPU-RUN.md lists which call carries which part).")
            block = part.read_bytes()
            if len(block) != entry["bytes"] or hashlib.sha256(block).hexdigest() != entry["sha256"]:
                raise KitError(f"{entry['name']} is damaged ({len(block)} bytes, not {entry['bytes']}, or another "
                               "sha256): carry it again.")
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != manifest["sha256"]:
        tmp.unlink()
        raise KitError(f"the parts in {parts} do not make the archive the manifest names: prepare the kit again.")
    tmp.replace(dest)
    return dest


def download_wheels(dest: Path) -> list[Path]:
    """The cp312 wheels the GPU machine lacks, for its platform, without their dependencies."""
    from importlib import metadata

    dest.mkdir(parents=True, exist_ok=True)
    pinned = [f"onnxruntime-gpu=={metadata.version('onnxruntime-gpu')}", f"pint=={metadata.version('pint')}",
              *[w for w in WHEELS_THERE if w != "pint"]]
    args = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--no-deps", "--implementation", "cp",
            "--python-version", PYTHON_THERE, *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(dest),
            "--disable-pip-version-check", "-q", *pinned]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise KitError(f"pip could not download the wheels for Python {PYTHON_THERE}: {proc.stderr.strip()[-400:]}")
    return sorted(dest.glob("*.whl"))


def model_home(model: str, dest: Path) -> dict:
    """``dest`` as a FASTEVAL_HOME holding ``model``'s source folder and its fp32 export (exported here on the CPU
    when not cached yet, by this checkout's exporter, torch.onnx): what `fasteval sweep --model MODEL` needs
    offline. The fp16 export is made there from it, by onnxscript's fusions (the image has onnxscript and onnx-ir):
    carrying it would cost one more part, one more call."""
    from fasteval.models.loader import load_model
    from fasteval.core.io import fasteval_home
    from fasteval.models.sources.registry import source_folder

    encoder = load_model(model, provider="cpu")  # downloads and exports once, here
    _, source = source_folder(model)
    export = Path(encoder.folder.path)
    home = fasteval_home()
    for folder in (Path(source), export):
        shutil.copytree(folder, dest / folder.relative_to(home), symlinks=False)
    return {"model": model, "source": str(Path(source).relative_to(home)), "export": str(export.relative_to(home)),
            "onnx_sha256": encoder.info.get("onnx_sha256")}


def prepare(kit: Path, model: str, part_bytes: int = PART_BYTES) -> dict:
    """The kit's parts and manifest under ``kit``/parts (the staging folder and the tar are removed after)."""
    stage = kit / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    wheels = download_wheels(stage / "wheels")
    about = model_home(model, stage / "home")
    about["wheels"] = [w.name for w in wheels]
    (stage / "KIT.json").write_text(json.dumps(about, indent=2) + "\n")
    archive = kit / "kit.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:  # the float weights shrink ~7%: one call fewer
        tar.add(stage, arcname="kit")
    manifest = split(archive, kit / "parts", part_bytes)
    archive.unlink()
    shutil.rmtree(stage)
    return {**about, "parts": len(manifest["parts"]), "bytes": manifest["bytes"]}


def unpack(kit: Path) -> Path:
    """There: the parts checked and reassembled, the kit extracted to ``kit``/kit, its wheels installed into
    ``kit``/site (``--no-index --no-deps``), and ``kit``/path/fasteval linking this checkout; returns ``kit``/kit."""
    archive = reassemble(kit / "parts", kit / "kit.tar.gz")
    shutil.rmtree(kit / "kit", ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(kit, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(kit)
    archive.unlink()
    shutil.rmtree(kit / "site", ignore_errors=True)
    wheels = sorted((kit / "kit" / "wheels").glob("*.whl"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target",
                           str(kit / "site"), "--disable-pip-version-check", "-q", *map(str, wheels)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise KitError(f"the kit's wheels do not install with --no-index: {proc.stderr.strip()[-400:]}")
    path = kit / "path"
    path.mkdir(exist_ok=True)
    if not (path / "fasteval").exists():
        (path / "fasteval").symlink_to(ROOT, target_is_directory=True)
    return kit / "kit"


def plan(kit: Path) -> str:
    """The device calls, in order: which part each carries, and the last one runs."""
    manifest = json.loads((kit / "parts" / "MANIFEST.json").read_text())
    names = [p["name"] for p in manifest["parts"]]
    lines = [f"{len(names)} parts, {manifest['bytes'] / 2**20:.0f} MiB in all:"]
    for k, name in enumerate(names):
        carry = [f".gpukit/parts/{name}"] + ([".gpukit/parts/MANIFEST.json"] if k == len(names) - 1 else [])
        action = "bash benchmarks/gpu/kit_run.sh --quick" if k == len(names) - 1 else "true"
        lines.append(f"  call {k + 1}: carry {json.dumps(carry)}; command: {action}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("prepare", "plan", "unpack"))
    parser.add_argument("--kit", type=Path, default=KIT)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    args = parser.parse_args(argv)
    try:
        if args.step == "prepare":
            made = prepare(args.kit, args.model)
            print(f"gpu kit: {made['parts']} parts, {made['bytes'] / 2**20:.0f} MiB, in {args.kit / 'parts'}")
            print(plan(args.kit))
        elif args.step == "plan":
            print(plan(args.kit))
        else:
            print(f"gpu kit: unpacked to {unpack(args.kit)}")
    except KitError as err:
        print(f"gpu kit: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
