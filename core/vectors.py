"""What a vector store keeps of an embedding: the first N dimensions (a Matryoshka model's truncation) and/or one of
the seven quantizations of ``choices.QUANTIZATIONS`` (the one table of the forms: each one's family, bits, whether it
is calibrated or scored asymmetrically, what it needs installed). Applied to the float embeddings after the cache
(the unit rows the exams score, the paper's ``normalize_embeddings=True``), so every form of one model is scored
from one embedding run; each form is keyed apart, only when asked for.

The first forms are sentence-transformers' own, and the tests hold them equal to it:

- ``truncate``: the first N dimensions, then L2-normalised (``SentenceTransformer(truncate_dim=N)`` with
  ``normalize_embeddings=True``, as Matryoshka models are meant to be used);
- int8 (the "integer" family, ``quantize_int(x, c, 8)``): ``quantize_embeddings(x, "int8",
  calibration_embeddings=c)``, per-dimension ranges from the calibration embeddings (by default the texts of Table
  1's 20 cells of the protocol in use), scored with the asked similarity of the integer vectors;
- binary (the "sign" family): ``quantize_embeddings(x, "ubinary")``, the sign bits packed eight to a byte
  (``kernels.bits.pack_signs``), scored with Hamming similarity (``kernels.bits``);

and those the stores ship beside them:

- ``int4``: int8's arithmetic with 16 levels a dimension (``quantize_int(x, calibration, 4)``), two dimensions a
  byte, on int8's calibration set, scored as int8 is;
- ``binary-centred``: the sign bits of the vectors less the calibration set's mean (the centring Qdrant's docs
  recommend before binary quantization: a dimension that is positive for every text carries no bit), scored with
  Hamming similarity;
- ``binary-asymmetric``: the stored sign bits scored as a store scores a float query against them (its dot product
  with the +-1 signs: ``StoredTable``);
- ``turboquant4``, ``turboquant2`` (the "turbo" family, the stores extra): turbovec's TurboQuant codes at 4 and 2
  bits, scored as turbovec's search scores a float query, standing for the vectors they decode to.

What each form stands for beside another side's vectors (drift's common space: ``comparable``) is ``stands_for``.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .choices import FORMS, VECTOR_QUANTIZATIONS, Quantization, check_choice
from .embeddings import EmbeddingTable, truncate
from .errors import InputError

# What int8 (and every calibrated form) is calibrated on when no file is given (a result records it): the texts of
# Table 1's 20 cells.
TABLE1_CALIBRATION = "table1"


# What an asymmetric form's scores are recorded as: the float query's inner product with the stored vector
ASYMMETRIC_SIMILARITY = "query-dot"


def calibrated(quantization: str | None) -> bool:
    """Whether a quantization takes a calibration set (int8, int4, binary-centred)."""
    return quantization is not None and FORMS[quantization].calibrated


def int8_ranges(calibration: np.ndarray) -> np.ndarray:
    """Per-dimension [min, max] of the calibration embeddings, (2, d)."""
    return np.vstack((np.min(calibration, axis=0), np.max(calibration, axis=0)))


def quantize_int(x: np.ndarray, calibration: np.ndarray, bits: int = 8) -> np.ndarray:
    """int8 (n, d) holding ``bits``-bit integers: each dimension's calibration range cut into 2**bits buckets,
    values outside it clipped to the end buckets, centred on 0 (bits=8: sentence-transformers' int8 arithmetic, in
    float32 as it does it; bits=4: the same with 16 levels, -8..7)."""
    levels = 1 << bits
    ranges = int8_ranges(calibration)
    starts = ranges[0, :]
    steps = (ranges[1, :] - ranges[0, :]) / (levels - 1)
    steps = np.where(steps == 0, 1, steps)
    buckets = np.clip(np.floor((x - starts) / steps), 0, levels - 1)
    return (buckets - levels // 2).astype(np.int8)


def dequantize_int(q: np.ndarray, calibration: np.ndarray, bits: int = 8) -> np.ndarray:
    """The floats ``bits``-bit integer vectors stand for: each bucket's centre in its dimension's calibration range
    (float32)."""
    levels = 1 << bits
    ranges = int8_ranges(calibration)
    steps = (ranges[1, :] - ranges[0, :]) / (levels - 1)
    steps = np.where(steps == 0, 1, steps)
    return (ranges[0, :] + (q.astype(np.float32) + levels // 2 + 0.5) * steps).astype(np.float32)


@dataclass(frozen=True)
class VectorForm:
    """The vectors scored instead of the model's float ones: ``dimensions`` (None: all), ``quantization`` (None or
    one of ``FORMS``) and, for a calibrated one, the calibration texts (None: Table 1's texts of the protocol in
    use) and what a result records of them (``calibration``)."""
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
        if calibrated(self.quantization):
            out["calibration"] = self.calibration
        if self.family == "turbo":
            out["turbovec"] = _turbovec().__version__  # its codes and search are the scores
        return out

    @property
    def family(self) -> str | None:
        """How it is made, stands for and is scored (``choices.Quantization.family``); None for the floats."""
        return FORMS[self.quantization].family if self.quantization is not None else None

    @property
    def bits(self) -> int:
        """A dimension's bits in the store (32 for the floats)."""
        return FORMS[self.quantization].bits if self.quantization is not None else 32

    @property
    def asymmetric(self) -> bool:
        return self.quantization is not None and FORMS[self.quantization].asymmetric

    def similarity(self, asked: str) -> str:
        """The similarity the exams score with: a store's float query against its vectors for an asymmetric form,
        Hamming for one-bit vectors, else the one asked."""
        if self.asymmetric:
            return ASYMMETRIC_SIMILARITY
        return "hamming" if self.family == "sign" else asked

    def calibration_of(self, table1_texts: Sequence[str]) -> list[str]:
        """The texts a calibrated form is calibrated on (none for another form)."""
        if not calibrated(self.quantization):
            return []
        return list(self.calibration_texts) if self.calibration_texts is not None else list(table1_texts)

    def bytes_per_vector(self, dim: int) -> int:
        """What a store keeps of one vector: 4 bytes a float, else its bits a dimension, packed."""
        kept = min(dim, self.dimensions or dim)
        return -(-kept * self.bits // 8)

    def apply(self, table: EmbeddingTable, calibration_texts: Sequence[str]) -> EmbeddingTable:
        """The table of these vectors: every text's row truncated, then quantized (an int8 vector as its integers
        in float32; a binary one as its 0/1 bits, whose sign bits are the packed ones). ``calibration_texts``: what
        a calibrated form is calibrated on, as it weighs them (``calibration_of``, ``Scoring.calibration_set``; a
        text given twice counts twice in binary-centred's mean; ignored by another form). The float table is read
        once, and the form's table made once. InputError when ``dimensions`` is not below the model's dimension."""
        texts = table.texts()
        rows, calibration = self.kept_rows(table, texts, calibration_texts)
        if self.asymmetric and self.quantization is not None:
            return stored_table(texts, rows, FORMS[self.quantization])
        if self.quantization is not None:
            rows = self.quantized(rows, calibration)
        return EmbeddingTable.of(texts, rows, who="the vector form")

    def kept_rows(self, table: EmbeddingTable, texts: Sequence[str],
                  calibration_texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """The rows of ``texts`` and of a calibrated form's calibration texts (None for another form), both at the
        dimensions this form keeps (truncated and renormalised). InputError where ``dimensions`` is not below the
        model's, or where an integer form's calibration gives a dimension no range."""
        rows = table[list(texts)]
        calibration = table[list(calibration_texts)] if calibrated(self.quantization) else None
        if self.dimensions is not None:
            if self.dimensions >= rows.shape[1]:
                raise InputError(f"--dimensions {self.dimensions} is not below the model's dimension "
                                 f"{rows.shape[1]}.", f"pass fewer than {rows.shape[1]} dimensions, or leave "
                                                      "--dimensions out for all of them.")
            rows = truncate(rows, self.dimensions)
            calibration = None if calibration is None else truncate(calibration, self.dimensions)
        flat = np.flatnonzero(np.ptp(calibration, axis=0) == 0) if calibration is not None else np.empty(0, int)
        if self.bits > 1 and calibration is not None and flat.size:
            source = self.calibration_source or "Table 1's texts"
            raise InputError(f"{self.quantization}'s calibration on {source} gives {flat.size} of "
                             f"{calibration.shape[1]} dimensions no range (dimension {int(flat[0])} is the same in "
                             f"every text): nothing to cut into {1 << self.bits} levels.",
                             "calibrate on texts that differ (a few hundred of your own, say).")
        return rows, calibration

    def quantized(self, rows: np.ndarray, calibration: np.ndarray | None) -> np.ndarray:
        """``rows`` (truncated already) as the store keeps them, in float32: an integer form's integers, a one-bit
        form's 0/1 bits (whose sign bits are the packed ones)."""
        if self.family == "sign":
            centre = calibration.mean(axis=0) if calibration is not None else 0.0
            return ((rows - centre) > 0).astype(np.float32)
        assert self.family == "integer" and calibration is not None  # every integer form is calibrated
        return quantize_int(rows, calibration, self.bits).astype(np.float32)

    def stands_for(self, rows: np.ndarray, calibration: np.ndarray | None) -> np.ndarray:
        """The floats a store's vectors stand for, beside another side's (drift's common space): an integer
        form's bucket centres; a one-bit form's +-1 signs (of the centred rows for binary-centred)."""
        if self.family == "sign":
            return np.where(self.quantized(rows, calibration) > 0, 1.0, -1.0).astype(np.float32)
        if self.family == "turbo":  # the vectors its codes decode to (turbovec's search of the unit vectors)
            return turbo_decoded(turbo_search(rows, self.bits), rows.shape[1])
        assert calibration is not None
        return dequantize_int(quantize_int(rows, calibration, self.bits), calibration, self.bits)


class StoredTable(EmbeddingTable):
    """A store's vectors as it scores them against a float query (an asymmetric form): ``table[texts]`` the stored
    vectors (the +-1 signs, the vectors TurboQuant's codes decode to: what the probe and drift read of them);
    ``similarities(rows, cols)`` the store's score of each text of ``rows`` as the query against each of ``cols``
    as stored, precomputed for every pair of the table's texts (not symmetric: the query is the float one)."""

    def __init__(self, texts: list[str], stored: np.ndarray, scores: np.ndarray):
        super().__init__()
        self.add(texts, stored, who="the vector form")
        self._at = {t: k for k, t in enumerate(texts)}
        self._scores = np.ascontiguousarray(scores, dtype=np.float32)

    def similarities(self, rows: Sequence[str], cols: Sequence[str] | None = None,
                     metric: str = "cos") -> np.ndarray:
        at = [self._at[t] for t in rows]
        return self._scores[np.ix_(at, at if cols is None else [self._at[t] for t in cols])]

    def paired(self, a: Sequence[str], b: Sequence[str], metric: str = "cos") -> np.ndarray:
        return self._scores[[self._at[t] for t in a], [self._at[t] for t in b]]


def stored_table(texts: list[str], rows: np.ndarray, form: Quantization) -> StoredTable:
    """The store's table of ``rows`` (unit floats, one a text) under an asymmetric form: a sign form keeps their
    signs (+-1) and scores a query by its dot product with them; TurboQuant keeps turbovec's codes and scores a
    query by the inner products turbovec's search returns."""
    queries = np.ascontiguousarray(rows, dtype=np.float32)
    if form.family == "sign":
        stored = np.where(queries > 0, 1.0, -1.0).astype(np.float32)
        return StoredTable(texts, stored, (queries.astype(np.float64) @ stored.T.astype(np.float64)))
    search = turbo_search(queries, form.bits)
    return StoredTable(texts, turbo_decoded(search, queries.shape[1]), search(queries))


def _turbovec():
    """turbovec, or one line saying how to install it."""
    try:
        import turbovec
    except ImportError:
        raise InputError("The TurboQuant forms score with turbovec, which is not installed.",
                         "pip install 'fasteval[stores]'.") from None
    return turbovec


def turbo_search(stored: np.ndarray, bits: int) -> Callable[[np.ndarray], np.ndarray]:
    """turbovec's TurboQuantIndex at ``bits`` holding ``stored`` (unit rows), as a function: float queries -> the
    inner products its search returns for each against every stored row (queries x stored, float32)."""
    if stored.shape[1] % 8:
        raise InputError(f"TurboQuant (turbovec) takes dimensions in multiples of 8; these vectors have "
                         f"{stored.shape[1]}.", "keep a multiple of 8 with --dimensions, or another quantization.")
    index = _turbovec().TurboQuantIndex(dim=stored.shape[1], bit_width=bits)
    index.add(np.ascontiguousarray(stored, dtype=np.float32))
    n = len(stored)

    def search(queries: np.ndarray) -> np.ndarray:
        found, at = index.search(np.ascontiguousarray(queries, dtype=np.float32), k=n)
        out = np.empty((len(queries), n), dtype=np.float32)
        np.put_along_axis(out, np.asarray(at, dtype=np.int64), np.asarray(found, dtype=np.float32), axis=1)
        return out

    return search


def turbo_decoded(search: Callable[[np.ndarray], np.ndarray], dim: int) -> np.ndarray:
    """The vectors an index's stored codes decode to, (stored, dim): its search of the unit basis vectors."""
    return search(np.eye(dim, dtype=np.float32)).T.copy()


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
    """The vector form asked for, validated (None: the model's float vectors). ``calibration``: a calibrated form's
    texts (int8, int4, binary-centred), a
    file of them (one a line, '#' comments) or a list; None: Table 1's. InputError naming the fix."""
    if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, (int, np.integer))
                                   or dimensions < 1):
        raise InputError(f"--dimensions must be a whole number >= 1, got {dimensions!r}.",
                         "pass the number of leading dimensions to keep, such as --dimensions 256.")
    if quantization is not None:
        quantization = check_choice(str(quantization).strip().lower(), VECTOR_QUANTIZATIONS,
                                    "vector quantization", "--vector-quantization")
    if calibration is not None and not calibrated(quantization):
        raise InputError("--calibration calibrates int8, int4 and binary-centred vectors only.",
                         "pass --vector-quantization int8 (int4, binary-centred) with it, or leave --calibration "
                         "out.")
    if dimensions is None and quantization is None:
        return None
    texts: tuple[str, ...] | None = None
    label = TABLE1_CALIBRATION if calibrated(quantization) else None
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
            raise InputError(f"{quantization} needs at least 2 distinct calibration texts; {source} has {distinct}"
                             + (f" (in {len(texts)} lines)." if len(texts) > distinct else "."),
                             "pass a file with one text a line (a few hundred of your own texts, say).")
        label = "sha256:" + hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return VectorForm(int(dimensions) if dimensions is not None else None, quantization, texts, label, source)


def comparable(tables: Sequence[EmbeddingTable], forms: Sequence[VectorForm | None],
               table1_texts: Sequence[str]) -> list[EmbeddingTable]:
    """Two sides' float tables brought into one space, so each text's vectors can be compared side by side (drift
    with a vector form on either side): both truncated to the fewer dimensions either keeps; where either side is
    one bit a dimension, both as their sign bits (+-1: the cosine of two such rows is 1 - 2 Hamming / d; centred
    first where a side is binary-centred, by its calibration mean, the other side by the same mean: centring is the
    store's shift, not a loss); else an integer side as the floats its integers stand for, beside the other side's
    floats."""
    kept = [f.dimensions for f in forms if f is not None and f.dimensions is not None]
    dims = min(kept) if kept else None
    one_bit = any(f is not None and f.family == "sign" for f in forms)
    shared = None  # a binary-centred side's centre, which a side of another form is centred by too
    for table, form in zip(tables, forms):
        if form is not None and form.family == "sign" and calibrated(form.quantization):
            centred = VectorForm(dims, form.quantization, form.calibration_texts)
            _, calibration = centred.kept_rows(table, [], centred.calibration_of(table1_texts))
            shared = None if calibration is None else calibration.mean(axis=0)
            break
    out = []
    for table, form in zip(tables, forms):
        # each side's own form at the dimensions both keep: with one bit on either side, every side's signs (a
        # binary-centred side's of its centred rows); else an integer side's bucket centres, a float side's floats
        mine = VectorForm(dims, form.quantization if form is not None else None,
                          form.calibration_texts if form is not None else None)
        texts = table.texts()
        rows, calibration = mine.kept_rows(table, texts, mine.calibration_of(table1_texts))
        if mine.family == "sign" or (mine.quantization is not None and not one_bit):
            rows = mine.stands_for(rows, calibration)
        elif one_bit:
            rows = np.where(rows - (0.0 if shared is None else shared) > 0, 1.0, -1.0).astype(np.float32)
        out.append(EmbeddingTable.of(texts, rows, who="the vector form"))
    return out
