"""What a vector store keeps of an embedding: the first N dimensions (a Matryoshka model's truncation), int8
scalar quantization, or one bit a dimension (binary). Applied to the float embeddings after the cache (the unit rows
the exams score, the paper's ``normalize_embeddings=True``), so every form of one model is scored from one
embedding run; each form is keyed apart, only when asked for.

The forms are sentence-transformers' own, and the tests hold them equal to it:

- ``truncate``: the first N dimensions, then L2-normalised (``SentenceTransformer(truncate_dim=N)`` with
  ``normalize_embeddings=True``, as Matryoshka models are meant to be used);
- ``quantize_int8``: ``quantize_embeddings(x, "int8", calibration_embeddings=c)``, per-dimension ranges from the
  calibration embeddings (by default the texts of Table 1's 20 cells of the protocol in use), scored with the
  asked similarity of the integer vectors;
- binary: ``quantize_embeddings(x, "ubinary")``, the sign bits packed eight to a byte (``kernels.bits.pack_signs``),
  scored with Hamming similarity (``kernels.bits``).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .choices import VECTOR_QUANTIZATIONS, check_choice
from .embeddings import EmbeddingTable, normalize_rows
from .errors import InputError

# What int8 is calibrated on when no file is given (a result records it): the texts of Table 1's 20 cells.
TABLE1_CALIBRATION = "table1"


def truncate(x: np.ndarray, dimensions: int) -> np.ndarray:
    """The first ``dimensions`` of each row, L2-normalised (float32)."""
    return normalize_rows(np.ascontiguousarray(np.asarray(x, dtype=np.float32)[:, :dimensions]))


def int8_ranges(calibration: np.ndarray) -> np.ndarray:
    """Per-dimension [min, max] of the calibration embeddings, (2, d)."""
    return np.vstack((np.min(calibration, axis=0), np.max(calibration, axis=0)))


def quantize_int8(x: np.ndarray, calibration: np.ndarray) -> np.ndarray:
    """int8 (n, d): each dimension's calibration range cut into 256 buckets, values outside it clipped to the end
    buckets (sentence-transformers' arithmetic, in float32 as it does it)."""
    ranges = int8_ranges(calibration)
    starts = ranges[0, :]
    steps = (ranges[1, :] - ranges[0, :]) / 255
    steps = np.where(steps == 0, 1, steps)
    buckets = np.clip(np.floor((x - starts) / steps), 0, 255)
    return (buckets - 128).astype(np.int8)


def dequantize_int8(q: np.ndarray, calibration: np.ndarray) -> np.ndarray:
    """The floats int8 vectors stand for: each bucket's centre in its dimension's calibration range (float32)."""
    ranges = int8_ranges(calibration)
    steps = (ranges[1, :] - ranges[0, :]) / 255
    steps = np.where(steps == 0, 1, steps)
    return (ranges[0, :] + (q.astype(np.float32) + 128 + 0.5) * steps).astype(np.float32)


@dataclass(frozen=True)
class VectorForm:
    """The vectors scored instead of the model's float ones: ``dimensions`` (None: all), ``quantization`` (None,
    "int8" or "binary") and, for int8, the calibration texts (None: Table 1's texts of the protocol in use) and
    what a result records of them (``calibration``)."""
    dimensions: int | None = None
    quantization: str | None = None
    calibration_texts: tuple[str, ...] | None = None
    calibration: str | None = None
    calibration_source: str | None = field(default=None, compare=False)  # the file named in messages (not keyed)

    def keyed(self) -> dict[str, Any]:
        """What enters a result's settings and key: only what is set (float vectors keep the paper's keys)."""
        out: dict[str, Any] = {}
        if self.dimensions is not None:
            out["dimensions"] = self.dimensions
        if self.quantization is not None:
            out["vector_quantization"] = self.quantization
        if self.quantization == "int8":
            out["calibration"] = self.calibration
        return out

    def similarity(self, asked: str) -> str:
        """The similarity the exams score with: Hamming for binary vectors, else the one asked."""
        return "hamming" if self.quantization == "binary" else asked

    def calibration_of(self, table1_texts: Sequence[str]) -> list[str]:
        """The texts int8 is calibrated on (none for another form)."""
        if self.quantization != "int8":
            return []
        return list(self.calibration_texts) if self.calibration_texts is not None else list(table1_texts)

    def bytes_per_vector(self, dim: int) -> int:
        """What a store keeps of one vector: 4 bytes a float, 1 an int8, 1 bit a dimension packed."""
        kept = min(dim, self.dimensions or dim)
        return {None: 4 * kept, "int8": kept, "binary": -(-kept // 8)}[self.quantization]

    def apply(self, table: EmbeddingTable, table1_texts: Sequence[str]) -> EmbeddingTable:
        """The table of these vectors: every text's row truncated, then quantized (an int8 vector as its integers
        in float32; a binary one as its 0/1 bits, whose sign bits are the packed ones). InputError when
        ``dimensions`` is not below the model's dimension."""
        texts = [t for t, _ in table.items()]
        rows = table[texts]
        if self.dimensions is not None:
            if self.dimensions >= rows.shape[1]:
                raise InputError(f"--dimensions {self.dimensions} is not below the model's dimension "
                                 f"{rows.shape[1]}.", f"pass fewer than {rows.shape[1]} dimensions, or leave "
                                                      "--dimensions out for all of them.")
            rows = truncate(rows, self.dimensions)
        if self.quantization == "int8":
            calibration = table[self.calibration_of(table1_texts)]
            if self.dimensions is not None:
                calibration = truncate(calibration, self.dimensions)
            flat = np.flatnonzero(np.ptp(calibration, axis=0) == 0)
            if flat.size:
                source = self.calibration_source or "Table 1's texts"
                raise InputError(f"int8's calibration on {source} gives {flat.size} of {calibration.shape[1]} "
                                 f"dimensions no range (dimension {int(flat[0])} is the same in every text): "
                                 "nothing to cut into 256 levels.",
                                 "calibrate on texts that differ (a few hundred of your own, say).")
            rows = quantize_int8(rows, calibration).astype(np.float32)
        elif self.quantization == "binary":
            rows = (rows > 0).astype(np.float32)
        out = EmbeddingTable()
        out.add(texts, rows, who="the vector form")
        return out


def vector_words(settings: dict[str, Any]) -> str:
    """The vector form a run's settings record, as a label says it ("256 dims, int8"; "" for float vectors): the
    terminal's name of a run, check's header and the report's labels of a model's other runs."""
    words = []
    if settings.get("dimensions"):
        words.append(f"{settings['dimensions']} dims")
    if settings.get("vector_quantization"):
        words.append(str(settings["vector_quantization"]))
    return ", ".join(words)


def vector_form(dimensions: int | None = None, quantization: str | None = None,
                calibration: str | Sequence[str] | None = None) -> VectorForm | None:
    """The vector form asked for, validated (None: the model's float vectors). ``calibration``: int8's texts, a
    file of them (one a line, '#' comments) or a list; None: Table 1's. InputError naming the fix."""
    if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, (int, np.integer))
                                   or dimensions < 1):
        raise InputError(f"--dimensions must be a whole number >= 1, got {dimensions!r}.",
                         "pass the number of leading dimensions to keep, such as --dimensions 256.")
    if quantization is not None:
        quantization = check_choice(str(quantization).strip().lower(), VECTOR_QUANTIZATIONS,
                                    "vector quantization", "--vector-quantization")
    if calibration is not None and quantization != "int8":
        raise InputError("--calibration calibrates int8 vectors only.",
                         "pass --vector-quantization int8 with it, or leave --calibration out.")
    if dimensions is None and quantization is None:
        return None
    texts: tuple[str, ...] | None = None
    label = TABLE1_CALIBRATION if quantization == "int8" else None
    source: str | None = None
    if calibration is not None:
        if isinstance(calibration, str) or hasattr(calibration, "__fspath__"):
            from pathlib import Path

            from .io import read_entries_file

            texts = tuple(read_entries_file(Path(calibration), what="calibration file"))
            source = f"the calibration file {calibration}"
        else:
            texts = tuple(str(t) for t in calibration)
            source = "the calibration texts"
        distinct = len(set(texts))
        if distinct < 2:
            raise InputError(f"int8 needs at least 2 distinct calibration texts; {source} has {distinct}"
                             + (f" (in {len(texts)} lines)." if len(texts) > distinct else "."),
                             "pass a file with one text a line (a few hundred of your own texts, say).")
        label = "sha256:" + hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return VectorForm(int(dimensions) if dimensions is not None else None, quantization, texts, label, source)


def comparable(tables: Sequence[EmbeddingTable], forms: Sequence[VectorForm | None],
               table1_texts: Sequence[str]) -> list[EmbeddingTable]:
    """Two sides' float tables brought into one space, so each text's vectors can be compared side by side (drift
    with a vector form on either side): both truncated to the fewer dimensions either keeps; where either side is
    binary, both as their sign bits (+-1: the cosine of two such rows is 1 - 2 Hamming / d); else an int8 side as
    the floats its integers stand for (``dequantize_int8``), beside the other side's floats."""
    kept = [f.dimensions for f in forms if f is not None and f.dimensions is not None]
    dims = min(kept) if kept else None
    binary = any(f is not None and f.quantization == "binary" for f in forms)
    out = []
    for table, form in zip(tables, forms):
        texts = [t for t, _ in table.items()]
        rows = table[texts]
        if dims is not None:
            if dims >= rows.shape[1]:
                raise InputError(f"--dimensions {dims} is not below the model's dimension {rows.shape[1]}.",
                                 f"pass fewer than {rows.shape[1]} dimensions.")
            rows = truncate(rows, dims)
        if binary:
            rows = np.where(rows > 0, 1.0, -1.0).astype(np.float32)
        elif form is not None and form.quantization == "int8":
            calibration = table[form.calibration_of(table1_texts)]
            calibration = truncate(calibration, dims) if dims is not None else calibration
            rows = dequantize_int8(quantize_int8(rows, calibration), calibration)
        same = EmbeddingTable()
        same.add(texts, rows, who="the vector form")
        out.append(same)
    return out

