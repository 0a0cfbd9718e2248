"""base64 against float: the same texts asked of a served candidate with ``encoding_format`` "float" and "base64"
(``encoded_as``), before its vectors are read. The base64 rows (read as OpenAI's little-endian float32) must be the
float ones; one that encodes otherwise is a finding, and the candidate is asked for floats from then on."""
from __future__ import annotations

import base64 as b64
from typing import TYPE_CHECKING, Any

import numpy as np

from ....embeddings import Encodings
from ....errors import FastevalError, first_line
from ....results.drift_findings import Base64
from ..score import check_dimensions

if TYPE_CHECKING:
    from . import DriftRun

STAGE = "before"
STEP = ("base64", "compare base64 and float answers")
# base64 rows equal the float rows when within this of each other (a server prints floats to fewer digits, or not)
BASE64_TOLERANCE = 1e-6


def applies(run: DriftRun) -> bool:
    """A candidate that can be asked in either format, once the reference's dimension is known."""
    return isinstance(run.candidate, Encodings) and bool(run.tables) and run.tables[0].dim is not None


def check(run: DriftRun) -> Base64:
    finding = parity(run.candidate, run.calls[0][:1], (run.names[0], run.names[1], run.tables[0].dim))
    if finding.finding:
        run.candidate.use_float()
    return finding


def parity(candidate: Any, texts: list[str], reference: tuple[str, str, int | None] | None = None) -> Base64:
    """``texts`` asked as floats and as base64: ``endianness`` (which reading matches: "little", "big"; None:
    neither), ``max_abs`` (little-endian's), a ``finding`` where little-endian does not match; ``base64:
    "ignored"`` for a server that answers base64 with floats. ``reference``: (its name, the candidate's, its
    dimension): a float answer of another dimension is refused at once (``check_dimensions``), before the base64
    request."""
    try:
        floats = candidate.encoded_as(texts, "float")
    except FastevalError as err:
        return Base64(0, skipped=first_line(err, 160))
    if reference is not None:  # another model: refused now, after one text (never a parity to report)
        check_dimensions(reference[0], reference[1], reference[2], floats.shape[1])
    try:
        encoded = candidate.encoded_as(texts, "base64")
    except FastevalError as err:
        return Base64(0, skipped=first_line(err, 160))
    if encoded is None:
        return Base64(len(texts), base64="ignored (the server answered floats)")
    diffs = {name: _max_abs(encoded, dtype, floats) for name, dtype in (("little", "<f4"), ("big", ">f4"))}
    endianness = next((n for n, d in diffs.items() if d <= BASE64_TOLERANCE), None)
    finding = (None if endianness == "little" else
               "its base64 vectors are big-endian float32, not OpenAI's little-endian" if endianness == "big" else
               f"its base64 vectors are not its float ones (max |diff| {diffs['little']:.3g})")
    return Base64(len(texts), max_abs=diffs["little"], endianness=endianness, finding=finding)


def _max_abs(encoded: list[str], dtype: str, floats: np.ndarray) -> float:
    """The largest difference of the base64 rows read as ``dtype`` from the float rows (inf: unreadable)."""
    try:
        rows = np.stack([np.frombuffer(b64.b64decode(e), dtype=dtype) for e in encoded])
    except ValueError:
        return float("inf")
    with np.errstate(invalid="ignore", over="ignore"):  # the wrong byte order reads NaN and huge numbers
        diff = np.max(np.abs(rows.astype(np.float64) - floats)) if rows.shape == floats.shape else np.inf
    return float(diff) if np.isfinite(diff) else float("inf")
