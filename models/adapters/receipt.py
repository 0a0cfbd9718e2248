"""Receipts: what a reference embeds, saved once, so a deployment's CI gates against it with no model weights.

``fasteval drift --save-receipt FILE REFERENCE`` embeds drift's texts (the paper's Exam 1 texts in the paper's
grouping, the conformance set, ``--texts``) with the reference and writes FILE: their float32 embeddings, the
texts, the digest of the texts in order, the reference's identity and fasteval's version. ``fasteval drift FILE
CANDIDATE`` then gates the candidate against the receipt with the same report (verdict, cosines, PhysScore: the
receipt gives back exactly what the reference embedded). A receipt made for another text set (another protocol,
with or without the conformance set, other ``--texts``) is refused: its digest names what it holds.

A receipt is one of the kinds of encoder the one door takes (``fasteval.core.encoders``): a file that begins as a
zip is read as a receipt whatever its name (``is_receipt``), and one that is not one, or is cut short, is refused
in one line. Making one is drift's (``fasteval.core.runs.drift.receipts.save_receipt``); this module is the file.
"""
from __future__ import annotations

import hashlib
import io
import json
import unicodedata
import zipfile
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError, first_line
from ...core.io import unpack_texts

MAGIC = "fasteval-receipt-1"
ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")  # a receipt is an .npz, a zip: its first bytes say so
# The most a receipt may declare, all its arrays together, before any is read: a receipt is an input from elsewhere
# (a CI artifact). The paper's texts with a 384-dimensional model take 2 MB; 100,000 --texts at 4,096 dimensions
# 1.6 GB.
MAX_RECEIPT_BYTES = 4 * 2**30
# What each array of a receipt is: its dtype kind(s) and number of dimensions (vectors: texts x dimension).
ARRAYS = {"magic": ("U", 0), "meta": ("U", 0), "text_bytes": ("u", 1), "text_ends": ("iu", 1), "vectors": ("f", 2)}
# What a receipt may also hold: drift's diagnosis recorded (its variants' vectors of a fixed subset of the texts:
# which texts, by their index; each variant's L2-normalised rows as float16, variants x texts x dimension). A
# receipt saved before receipts carried them has neither, and still gates.
VARIANT_ARRAYS = {"variant_texts": ("iu", 1), "variant_vectors": ("f", 3)}
# A receipt's members, and what its meta may nest: every other member is refused unopened; a meta deeper than this
# (JSON's parser recursed to its limit on one 200,000 deep) is not read.
META_DEPTH = 16
# The most an array member may be compressed: a receipt's arrays are floats and text, stored (np.savez) or deflated
# at a few to one; a member of deflated zeros (a thousand to one) is a file that would inflate past its size.
MAX_COMPRESSION_RATIO = 50


def texts_digest(texts: list[str]) -> str:
    """sha256 of the texts in order (a receipt is for exactly these)."""
    digest = hashlib.sha256()
    for t in texts:
        digest.update(t.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def is_receipt(value: Any) -> bool:
    """Whether ``value`` names a file to read as a receipt: an existing file (not a folder) that begins as a zip
    does, whatever its name. Whether it really is one (and is whole) is ``ReceiptEncoder``'s to say, in one line."""
    if not isinstance(value, (str, Path)):
        return False
    path = Path(value).expanduser()
    try:
        if not path.is_file():  # a FIFO or a device is never opened here: opening one can wait forever
            return False
        with path.open("rb") as f:
            return f.read(4) in ZIP_SIGNATURES
    except OSError:  # missing, a folder, unreadable: not a receipt (load_model names what it is)
        return False


def write_receipt(path: Path, texts: list[str], vectors: np.ndarray, identity: dict, name: str,
                  variants: dict[str, Any] | None = None) -> None:
    """The receipt file, written atomically. ``variants``: drift's diagnosis recorded (``names``, ``texts`` (a
    subset of ``texts``), ``vectors`` (variants x those texts x dimension), ``skipped``), or ``{"unavailable": why}``
    where none was recorded."""
    from ... import __version__
    from ...core.io import atomic_write, pack_texts

    text_bytes, text_ends = pack_texts(texts)
    meta: dict[str, Any] = {"name": name, "identity": identity, "texts": len(texts),
                            "texts_sha256": texts_digest(texts), "fasteval_version": __version__}
    arrays: dict[str, Any] = {}
    if variants is not None and variants.get("names"):
        index = {t: i for i, t in enumerate(texts)}
        meta["variants"] = {"names": list(variants["names"]), "texts": len(variants["texts"]),
                            "skipped": dict(variants.get("skipped") or {})}
        arrays = {"variant_texts": np.array([index[t] for t in variants["texts"]], dtype=np.int64),
                  "variant_vectors": np.asarray(variants["vectors"], dtype=np.float16)}
    elif variants is not None:
        meta["variants"] = {"unavailable": variants.get("unavailable") or "none could be recorded",
                            **({"skipped": variants["skipped"]} if variants.get("skipped") else {})}
    arrays.update(magic=np.array(MAGIC), meta=np.array(json.dumps(meta, sort_keys=True, default=str)),
                  text_bytes=text_bytes, text_ends=text_ends, vectors=np.asarray(vectors, dtype=np.float32))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(Path(path).expanduser(), buf.getvalue())


class ReceiptEncoder:
    """A receipt as the reference encoder: ``encode`` gives back the embeddings it holds (InputError for a text it
    does not hold). ``meta``: what it was made of (name, identity, texts, their digest, fasteval's version).

    Opening one reads its members' headers and its meta only (``dim`` is known then, so drift refuses a candidate
    of another dimension before a row is read); its texts, rows and variants are read, and checked, at their first
    use."""

    def __init__(self, path: str | Path):
        path = Path(path).expanduser()
        self.path, self._fix = path, "write it again with fasteval drift --save-receipt FILE REFERENCE."
        try:
            self._declared = _declared_arrays(path, self._fix)
            with np.load(path, allow_pickle=False) as data:
                if "magic" not in data or str(data["magic"]) != MAGIC:
                    raise InputError(f"{path} is a zip (.npz) file but not a fasteval receipt (no "
                                     f"{MAGIC!r} in it).", "pass a file written by fasteval drift --save-receipt.")
                _check_arrays(path, self._declared, self._fix)
                meta = _printable(_read_meta(str(data["meta"]), path, self._fix))
        except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as err:
            raise self._damaged(err) from None
        if not isinstance(meta, dict) or not isinstance(meta.get("texts_sha256"), str):
            raise InputError(f"The receipt {path} has no readable meta (a JSON object with the texts' digest), "
                             f"but {type(meta).__name__}.", self._fix)
        self.meta = meta
        self.name = f"{self.meta.get('name')} (receipt)"
        self.dim: int | None = self._declared["vectors"][0][1]

    def _damaged(self, err: BaseException) -> InputError:
        return InputError(f"The receipt {self.path} is damaged or cut short ({type(err).__name__}: "
                          f"{first_line(err, 80)}).", self._fix)

    @cached_property
    def _held(self) -> tuple[list[str], dict[str, np.ndarray], dict[str, Any] | None]:
        """(texts, each text's row, the variants), read and checked at the first use."""
        path, fix = self.path, self._fix
        try:
            with np.load(path, allow_pickle=False) as data:
                texts = unpack_texts(data["text_bytes"], data["text_ends"])
                vectors = np.ascontiguousarray(data["vectors"], dtype=np.float32)
                recorded = ((np.asarray(data["variant_texts"], dtype=np.int64),
                             np.ascontiguousarray(data["variant_vectors"]))  # kept float16, as stored
                            if "variant_vectors" in self._declared else None)
        except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as err:
            raise self._damaged(err) from None
        if len(texts) != len(vectors) or texts_digest(texts) != self.meta.get("texts_sha256"):
            raise InputError(f"The receipt {path} does not hold what its digest says.", fix)
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            raise InputError(f"The receipt {path} holds {int((~finite).sum())} embedding(s) with NaN or inf (the "
                             f"first of {texts[int(np.argmin(finite))][:60]!r}): its reference failed, not a "
                             "candidate.", "make the receipt again from a reference that embeds every text.")
        rows = {t: vectors[i] for i, t in enumerate(texts)}
        return texts, rows, self._variants(recorded, texts, fix)

    @property
    def texts(self) -> list[str]:
        return self._held[0]

    @property
    def recorded_variants(self) -> dict[str, Any] | None:
        """drift's diagnosis as this receipt recorded it (``_variants``)."""
        return self._held[2]

    def check(self) -> None:
        """Read and check the whole receipt now (its rows and variants), rather than at their first use."""
        _ = self._held

    def _variants(self, recorded: tuple[np.ndarray, np.ndarray] | None, held: list[str],
                  fix: str) -> dict[str, Any] | None:
        """drift's diagnosis as this receipt recorded it: ``names``, ``texts``, ``rows(name, texts)`` (each
        variant's vectors of those texts); ``{"unavailable": why}`` where it recorded none; None for a receipt
        saved before receipts carried them."""
        from ...core.results.drift_findings import VARIANT_NAME, VARIANT_SETTINGS  # (kept out of a plain run's start)

        said = self.meta.get("variants")
        if recorded is None:
            unavailable = said.get("unavailable") if isinstance(said, dict) else None
            return {"unavailable": str(unavailable)} if unavailable else None
        index, vectors = recorded
        names = said.get("names") if isinstance(said, dict) else None
        if isinstance(names, list) and any(not isinstance(n, str) or not VARIANT_NAME.fullmatch(n) for n in names):
            odd = next(n for n in names if not isinstance(n, str) or not VARIANT_NAME.fullmatch(n))
            raise InputError(f"The receipt {self.path} names a variant {ascii(odd)[:80]}, which is not a setting=value "
                             f"of drift's diagnosis ({', '.join(VARIANT_SETTINGS)}).", fix)
        if (not isinstance(names, list) or not all(isinstance(n, str) for n in names)
                or vectors.shape[:2] != (len(names), len(index)) or vectors.shape[2] != self.dim
                or (len(index) and (index.min() < 0 or index.max() >= len(held)))):
            raise InputError(f"The receipt {self.path} holds variants' vectors that do not match what it says of "
                             "them.", fix)
        if not np.isfinite(vectors).all():
            raise InputError(f"The receipt {self.path} holds variants' vectors with NaN or inf.", fix)
        texts = [held[i] for i in index]
        where = {t: i for i, t in enumerate(texts)}
        by_name = {n: i for i, n in enumerate(names)}

        def rows(name: str, some: list[str]) -> np.ndarray:
            return vectors[by_name[name]][[where[t] for t in some]]

        return {"names": names, "texts": texts, "rows": rows}

    @property
    def identity(self) -> dict:
        return {**(self.meta.get("identity") or {}), "receipt": str(self.path),
                "receipt_fasteval_version": self.meta.get("fasteval_version")}

    def require(self, texts: list[str]) -> None:
        """InputError unless this receipt was made for exactly ``texts`` (in drift's order)."""
        if texts_digest(texts) != self.meta.get("texts_sha256"):
            raise InputError(f"The receipt {self.path} holds {self.meta.get('texts')} texts of another text set than "
                             f"this drift asks ({len(texts)} texts: another protocol, conformance set or --texts).",
                             "make the receipt with the same --texts and --no-conformance as the gate.")

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = self._held[1]
        missing = [t for t in texts if t not in rows]
        if missing:
            raise InputError(f"The receipt {self.path} holds no embedding of {missing[0][:60]!r}.",
                             "make the receipt with the same --texts and --no-conformance as the gate.")
        return np.stack([rows[t] for t in texts]) if texts else np.zeros((0, self.dim or 0), np.float32)


def _declared_arrays(path: Path, fix: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Each array's shape and dtype as the receipt's zip declares them, read from the member headers alone; an
    InputError before anything is allocated when the arrays declare more than the file holds or than
    ``MAX_RECEIPT_BYTES``, or a member is not an array."""
    size = path.stat().st_size
    declared: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    total = 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name not in ARRAYS and name not in VARIANT_ARRAYS:
                raise InputError(f"The receipt {path} holds a member a receipt does not have "
                                 f"({ascii(info.filename)[:80]}).", fix)
            ratio = info.file_size / max(info.compress_size, 1)
            if info.compress_type != zipfile.ZIP_STORED and info.file_size > 2**16 and ratio > MAX_COMPRESSION_RATIO:
                raise InputError(f"The receipt {path} holds {name} compressed {ratio:,.0f} to one, as no array of "
                                 f"floats or text is ({info.file_size:,} bytes declared).", fix)
            if info.compress_type == zipfile.ZIP_STORED and info.file_size > size:
                raise InputError(f"The receipt {path} declares {info.filename} of {info.file_size:,} bytes in a file "
                                 f"of {size:,}.", fix)
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                          else np.lib.format.read_array_header_2_0)
                shape, _, dtype = reader(member, max_header_size=10_000)
            nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
            total += nbytes
            if nbytes > info.file_size or total > MAX_RECEIPT_BYTES:
                raise InputError(f"The receipt {path} declares {name} of shape {tuple(shape)} ({nbytes / 2**30:.2f} "
                                 f"GiB), more than it holds ({info.file_size:,} bytes) or than a receipt may "
                                 f"({MAX_RECEIPT_BYTES / 2**30:.0f} GiB).", fix)
            declared[name] = (tuple(shape), dtype)
    return declared


def _read_meta(text: str, path: Path, fix: str) -> Any:
    """The receipt's meta as JSON, refused unparsed when it nests deeper than ``META_DEPTH``."""
    depth = deepest = 0
    quoted = escaped = False
    for char in text:  # the brackets outside strings
        if quoted:
            escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > META_DEPTH:
                raise InputError(f"The receipt {path} has a meta nested deeper than {META_DEPTH} levels.", fix)
        elif char in "]}":
            depth -= 1
    return json.loads(text)


def _printable(value: Any) -> Any:
    """``value`` (a receipt's meta) with control and format characters taken out of every string in it: what a
    receipt says reaches terminals, CI logs (a newline and '::error' there is a command) and JUnit files."""
    if isinstance(value, str):
        return "".join(c for c in value if unicodedata.category(c) not in ("Cc", "Cf"))
    if isinstance(value, list):
        return [_printable(v) for v in value]
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    return value


def _check_arrays(path: Path, declared: dict[str, tuple[tuple[int, ...], np.dtype]], fix: str) -> None:
    """InputError unless the receipt holds each of ``ARRAYS`` (and ``VARIANT_ARRAYS`` both or neither) with its kind
    of dtype and number of dimensions."""
    optional = [name for name in VARIANT_ARRAYS if name in declared]
    if optional and len(optional) != len(VARIANT_ARRAYS):
        raise InputError(f"The receipt {path} holds {optional[0]} alone.", fix)
    for name, (kinds, ndim) in {**ARRAYS, **{n: VARIANT_ARRAYS[n] for n in optional}}.items():
        if name not in declared:
            raise InputError(f"The receipt {path} has no {name} array.", fix)
        shape, dtype = declared[name]
        if dtype.kind not in kinds or len(shape) != ndim:
            raise InputError(f"The receipt {path} holds {name} as {dtype} of shape {shape}, not "
                             f"{ndim}-dimensional of kind {kinds!r}.", fix)

