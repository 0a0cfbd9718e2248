"""The ground floor of reading and writing: typed objects <-> strict JSON (NaN as null), CSV and Markdown; atomic
files and staged folders. Every room (results, reports, models, runs) writes through here.

Every folder fasteval writes (a model's results, a report, a downloaded model, an ONNX export) is assembled
in a hidden staging folder beside its destination and renamed into place (``staged_folder``), so a crash
never leaves a half-written folder where a reader (or a resumed sweep) would take it for done.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import math
import os
import stat
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError, OutputError
from .failpoints import failpoint

RESULT_FILE = "results.json"  # one result folder's main file (core/results reads and writes it)
MAX_RESULT_BYTES = 256 * 2**20  # a JSON file fasteval reads back (a protocol result with every heatmap: a few MB)

_PLAIN = (str, int, bool, type(None))


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, numpy scalars/arrays, tuples -> plain JSON types; NaN and inf -> None. (Exact plain types are
    answered first: a result's heatmaps are tens of thousands of floats.)"""
    kind = type(obj)
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind in _PLAIN:
        return obj
    if kind is list:
        return [to_jsonable(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


_SCALARS = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,)}


def typed(cls, data: dict[str, Any]):
    """``cls(**data)`` for a result dataclass, keeping its own fields; JSON null in a float field -> NaN.
    ValueError for a value of the wrong type in a scalar field (a damaged or hand-edited results.json is
    skipped by its reader, never carried into a table)."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: {type(data).__name__} where an object belongs")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            base, _, optional = str(f.type).partition(" | ")
            allowed = _SCALARS.get(base)
            if allowed and not (isinstance(value, allowed) and not (base != "bool" and isinstance(value, bool))
                                or value is None and (optional == "None" or base == "float")):
                raise ValueError(f"{cls.__name__}.{f.name} is {value!r}, not a {base}")
            kwargs[f.name] = math.nan if value is None and f.type == "float" else value
    return cls(**kwargs)


def rows_of(d: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A result's list of rows; ValueError when it is missing or empty (not a readable result)."""
    rows = d[key]
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"empty or malformed {key!r}")
    return rows


def dumps(obj: Any) -> str:
    """Strict JSON: NaN/inf become null, and anything else non-standard raises."""
    return json.dumps(to_jsonable(obj), indent=1, allow_nan=False, ensure_ascii=False) + "\n"


# A cell a spreadsheet would run as a formula begins with one of these (OWASP's CSV injection rule)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet runs: text that begins like a formula and is not a number (a model
    named ``=1+2``, a served id ``=HYPERLINK(...)``) gets a leading ``'``, as OWASP advises; anything else as
    it is."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
        return value  # "-0.5" is a number, not a formula
    except ValueError:
        return "'" + value


def csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """The one way fasteval writes CSV: the columns in order, a missing or non-finite number empty, every text
    cell spreadsheet-safe (``spreadsheet_safe``)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None or (isinstance(v, float) and not math.isfinite(v))
                             else spreadsheet_safe(v)) for k, v in ((c, row.get(c)) for c in columns)})
    return buf.getvalue()


def markdown_cell(text: str) -> str:
    """``text`` as one Markdown table cell: a line break (a name with a newline) cannot end the row, nor a '|'
    split it."""
    return " ".join(text.splitlines()).replace("|", "\\|")


def markdown_table(rows: list[dict[str, Any]], columns: list[str], floatfmt: str = "{:.3f}") -> str:
    def fmt(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "—"
        return markdown_cell(floatfmt.format(v) if isinstance(v, float) else str(v))

    lines = ["| " + " | ".join(map(markdown_cell, columns)) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# --- who owns a staging folder or a temporary file ---------------------------------------------------------------
# Every staging folder, replaced folder and temporary file is named ".<dest>.<kind>-<host>-<pid>-<random>": a
# cleanup removes only those whose owner is dead (on this host), so two processes writing into one folder never
# delete each other's work. A staging folder holds COMPLETE once it is whole, so a kill between a replace's two
# renames is recovered to the newest complete folder.
STAGING_KINDS = ("staging", "old", "tmp")
COMPLETE = ".fasteval-complete"


def _owner_tag() -> str:
    import socket

    return f"{socket.gethostname()}-{os.getpid()}-"


def _owner_alive(name: str) -> bool:
    """Whether the process named in a staging name still runs (a name without an owner, or another host's, counts
    as dead only when it is a week old: a shared filesystem may hold another machine's live work)."""
    import socket

    for kind in STAGING_KINDS:
        marker = f".{kind}-"
        if marker in name:
            parts = name.split(marker, 1)[1].rsplit("-", 2)
            break
    else:
        return False
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    host, pid = parts[0], int(parts[1])
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(folder: Path) -> None:
    """Remove the staging folders, replaced folders and temporary files in ``folder`` whose owner is dead; where
    the destination itself is missing (a kill between a replace's two renames), put back the newest complete copy
    (a staging folder marked COMPLETE, else the replaced one) instead of deleting it."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    entries = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)
    for entry in entries:
        name = entry.name
        kind = next((k for k in STAGING_KINDS if f".{k}-" in name and name.startswith(".")), None)
        if kind is None or _owner_alive(name) or not entry.exists():
            continue
        dest = folder / name[1:name.index(f".{kind}-")]
        try:
            if kind == "staging" and not dest.exists() and (entry / COMPLETE).exists():
                os.replace(entry, dest)
                (dest / COMPLETE).unlink(missing_ok=True)
                continue
            if kind == "old" and not dest.exists() and (entry / "old").is_dir():
                os.replace(entry / "old", dest)
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        except OSError:
            continue  # another process got there first, or the folder is read-only: nothing to do


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (str, as UTF-8) or bytes to ``path`` via a temporary file in the same folder and os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-{_owner_tag()}", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
            fh.flush()
            if hasattr(os, "fchmod"):  # mkstemp makes it private (0600); an output follows the umask, as open() does
                os.fchmod(fh.fileno(), 0o666 & ~process_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# The most a text file a user names may hold (models, quantities, drift's texts): 100,000 texts of 2,000 characters
# is 200 MB.
MAX_TEXT_FILE_BYTES = 256 * 2**20


@functools.lru_cache(maxsize=1)
def process_umask() -> int:
    """This process's umask: read from /proc where the system has it (reading it otherwise means setting it, for
    an instant, process-wide), once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable(folder: Path, what: str = "the output folder",
                   fix: str = "pass a writable folder with --out DIR.") -> Path:
    """Create ``folder`` if needed and prove we can write there; OutputError naming ``what`` and ``fix``."""
    folder = Path(folder).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise OutputError(f"Cannot write to {what} {folder}: {err.strerror or err}.", fix) from None
    return folder


@contextmanager
def staged_folder(dest: Path, replace: bool = True, what: str = "results") -> Iterator[Path]:
    """The one way fasteval writes a folder: yield a hidden staging folder beside ``dest``; when the block
    ends cleanly it becomes ``dest`` in one rename, else it is removed. Nothing half-written is ever at ``dest``.

    ``replace``: an existing ``dest`` is replaced whole (results, reports); otherwise an existing ``dest`` wins
    and the staged copy is dropped (downloads and exports: another process finished the same work first).
    """
    dest = Path(dest).expanduser()
    if _inside(dest.parent, fasteval_home()):  # a cache's room: the fix is another FASTEVAL_HOME, not --out
        check_writable(dest.parent, f"fasteval's cache folder (for {what})", HOME_FIX)
    else:
        check_writable(dest.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.staging-{_owner_tag()}", dir=dest.parent))
    try:
        staging.chmod(0o777 & ~process_umask())  # mkdtemp makes it private (0700): results follow the umask
        yield staging
        failpoint("staged")
        (staging / COMPLETE).touch()  # whole: a kill from here on is recovered to this copy (clean_stale)
        if dest.exists() and replace:
            trash = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-{_owner_tag()}", dir=dest.parent))
            os.replace(dest, trash / "old")
            failpoint("between-renames")
            os.replace(staging, dest)
            shutil.rmtree(trash, ignore_errors=True)
        elif not dest.exists():
            os.replace(staging, dest)
        (dest / COMPLETE).unlink(missing_ok=True)
    except OSError as err:
        raise OutputError(f"Could not write {what} to {dest}: {err.strerror or err}.",
                          "free disk space or pass another folder with --out DIR.") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_result_folder(dest: Path, files: Mapping[str, str | bytes], what: str = "results") -> Path:
    """Write ``files`` (relative name -> text or bytes) as the folder ``dest``, all at once (``staged_folder``);
    an existing ``dest`` is replaced whole."""
    with staged_folder(dest, what=what) as staging:
        for name, content in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
    return Path(dest).expanduser()


def write_output_folder(dest: Path, files: Mapping[str, str | bytes], what: str, marker: str) -> Path:
    """``write_result_folder`` for a folder the user names (``--out`` of report, compare, drift): it refuses to
    replace a folder that we did not write, one that is neither empty nor an earlier output of this kind
    (holding ``marker``: report.html, comparison.csv, drift.json) or that holds a result."""
    dest = check_output_folder(dest, what, marker)
    return write_result_folder(dest, files, what=what)


def check_output_folder(dest: Path, what: str, marker: str) -> Path:
    """``dest`` once it is known that ``write_output_folder`` may write it (checked before any work is done):
    OutputError for a folder we did not write, or a place that cannot be written."""
    dest = Path(dest).expanduser()
    if not _is_replaceable(dest, marker):
        raise OutputError(f"{dest} exists and is not an earlier output of {what}; not replacing it.",
                          "pass an empty or new folder with --out DIR.")
    parent = dest.parent if dest.parent != Path("") else Path(".")
    check_writable(parent, f"the folder of {what}", "pass --out DIR in a folder you can write.")
    return dest


def _is_replaceable(dest: Path, marker: str) -> bool:
    if not dest.exists():
        return True
    if not dest.is_dir() or any(dest.rglob(RESULT_FILE)):
        return False
    return not any(dest.iterdir()) or (dest / marker).is_file()


HOME_FIX = "set FASTEVAL_HOME to a writable folder (models, exports and embeddings are cached there)."


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or lies under it (both resolved)."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return path == root or root in path.parents


def fasteval_home() -> Path:
    """The cache root: $FASTEVAL_HOME, else $XDG_CACHE_HOME/fasteval, else ~/.cache/fasteval."""
    if os.environ.get("FASTEVAL_HOME"):
        return Path(os.environ["FASTEVAL_HOME"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fasteval"


def read_json(path: Path) -> object:
    """A JSON file fasteval wrote (results.json, drift.json), parsed; read only when it is a regular file of at
    most MAX_RESULT_BYTES (a FIFO would hang the reader, a link to /dev/zero fill the memory); ValueError
    otherwise, OSError when unreadable."""
    path = Path(path)
    if not path.is_file():
        raise ValueError("not a regular file")
    size = path.stat().st_size
    if size > MAX_RESULT_BYTES:
        raise ValueError(f"{size} bytes, more than a result holds ({MAX_RESULT_BYTES})")
    return json.loads(path.read_text(encoding="utf-8"))


def pack_texts(texts) -> tuple[np.ndarray, np.ndarray]:
    """Texts as one UTF-8 byte array and their end offsets (for an npz: a long text costs its own length, not the
    longest one's times the number of texts, as a fixed-width unicode array would)."""
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    return (np.frombuffer(b"".join(encoded), dtype=np.uint8),
            np.cumsum([len(e) for e in encoded], dtype=np.int64))


def unpack_texts(text_bytes: np.ndarray, text_ends: np.ndarray) -> list[str]:
    """``pack_texts``, undone."""
    blob = text_bytes.tobytes()
    starts = np.concatenate([[0], text_ends[:-1]]) if len(text_ends) else text_ends
    return [blob[s:e].decode("utf-8", "surrogatepass") for s, e in zip(starts.tolist(), text_ends.tolist())]


def read_text_lines(path: Path, what: str, fix: str, max_bytes: int = MAX_TEXT_FILE_BYTES) -> list[str]:
    """The lines of a UTF-8 text file a user names (a models file, a quantities file, drift's texts); InputError
    naming ``what`` and ``fix`` when it cannot be read or holds more than ``max_bytes`` (/dev/zero, an endless
    pipe). A FIFO nobody writes to reads as empty rather than waiting forever (it is opened without blocking; a
    pipe with a writer, such as ``<(command)``, is read to its end)."""
    try:
        fd = os.open(Path(path).expanduser(), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)  # only the open was not to wait: reads wait for a writer's data
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise InputError(f"The {what} {path} holds more than {max_bytes / 2**20:.0f} MiB (or never ends).",
                             fix)
        if not data and stat.S_ISFIFO(os.stat(Path(path).expanduser()).st_mode):
            raise InputError(f"The {what} {path} is a named pipe (FIFO) that nothing had written to when it was "
                             "read.", f"{fix.rstrip('.')}, or start the pipe's writer first." if fix else
                             "start the pipe's writer first.")
        return data.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
        raise InputError(f"Cannot read the {what} {path}: {reason}.", fix) from None


def read_entries_file(path: Path, what: str = "models file") -> list[str]:
    """One entry a line (a model name, path or URL[#MODEL], a quantity, a calibration text); blank lines and '#'
    comments ignored."""
    lines = read_text_lines(path, what, "pass a UTF-8 text file with one entry a line.")
    # '#' starts a comment at the start of a line or after white space, never inside a served model's URL#MODEL
    models = [re.split(r"(?:^|\s)#", ln, maxsplit=1)[0].strip() for ln in lines]
    return [m for m in models if m]
