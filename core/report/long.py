"""The long table: every number of every results.json a report read, one row a model x protocol x exam x cell (or
"all", the exam's summary) x metric, with its 95% interval where the result has one and the provenance a join
needs (the result's key, fasteval's version, the protocol, the similarity, the vector options, the precision, the
provider and the machine). What a leaderboard, a notebook or a database joins (``results-long.csv`` and
``results-long.parquet`` of ``fasteval report --out R``; docs/results.md).

The values are results.json's own, read from the file as it was written (never recomputed, never rounded): a float
written in the CSV reads back as the same float, and the Parquet column holds the same float64. A metric's
interval is its ``<metric>_ci_low`` / ``<metric>_ci_high`` siblings; the display copies (``<metric>_display``,
rounded to two decimals for the printed tables) are left out, as are lists of numbers (heatmaps, curves) and
counts' ``None``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

LONG_CSV, LONG_PARQUET = "results-long.csv", "results-long.parquet"
# The columns, in order: what the row is, its value and interval, then its provenance
LONG_COLUMNS = ["model", "model_id", "run", "protocol", "exam", "cell", "metric", "value", "ci_low", "ci_high",
                "key", "fasteval_version", "similarity", "dimensions", "vector_quantization", "calibration",
                "dtype", "provider", "normalize_quantities", "deployment", "machine", "result"]
SUMMARY_CELL = "all"
_INTERVAL = ("_ci_low", "_ci_high")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _metrics(record: dict[str, Any]) -> Iterable[tuple[str, Any, Any, Any]]:
    """(metric, value, ci_low, ci_high) of every number of ``record`` but its intervals and display copies."""
    for name, value in record.items():
        if not _number(value) or name.endswith(_INTERVAL) or name.endswith("_display"):
            continue
        yield name, value, record.get(f"{name}_ci_low"), record.get(f"{name}_ci_high")


def _cell(record: dict[str, Any]) -> str:
    """A row of an exam's table named by its words ("meter/local_0_10", "int-int/3/7"): its string fields."""
    return "/".join(str(v) for v in record.values() if isinstance(v, str))


def provenance(entry: Any) -> dict[str, Any]:
    """What every row of one result (a ``LoadedResult``) carries beside its value: its name in the report, its run,
    the result's own provenance (``ModelResult.provenance``) and its file."""
    result = entry.result
    carried = {**result.provenance(), "model": entry.label, "model_id": result.model_id, "run": entry.run or "main",
               "result": str(entry.path)}
    carried["normalize_quantities"] = bool(carried["normalize_quantities"])
    carried["key"] = carried["key"] or entry.written.get("key")  # (a file a library call wrote: its key is the file's)
    return {c: carried[c] for c in LONG_COLUMNS if c in carried}


def long_rows(data: dict[str, Any], carried: dict[str, Any]) -> list[dict[str, Any]]:
    """The long rows of one results.json (``data``, as read), each with ``carried`` (its ``provenance``)."""
    rows = []
    for exam, body in (data.get("exams") or {}).items():
        if not isinstance(body, dict):
            continue
        records = [(SUMMARY_CELL, body.get("summary") or {})]
        records += [(_cell(r), r) for value in body.values() if isinstance(value, list)
                    for r in value if isinstance(r, dict)]
        for cell, record in records:
            rows += [{**carried, "exam": exam, "cell": cell, "metric": metric, "value": value, "ci_low": low,
                      "ci_high": high} for metric, value, low, high in _metrics(record)]
    return rows


def long_table(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """Every row of every result a report read (``LoadedResult``s), from each results.json as it was written (read
    once, with the result)."""
    return [row for e in entries for row in long_rows(e.written, provenance(e))]


def long_csv(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV: each float as Python writes it (``repr``: it reads back as the same float); a value that is
    not a finite number (NaN, where a cell has no pairs) empty."""
    from ..io import csv_text

    return csv_text(rows, LONG_COLUMNS)


def long_parquet(rows: list[dict[str, Any]]) -> bytes:
    """The rows as a Parquet file (pyarrow): the value and its interval float64 (NaN as null), the rest strings,
    dimensions an integer and normalize_quantities a boolean. ImportError where pyarrow is not installed."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    floats = ("value", "ci_low", "ci_high")
    types = {**{c: pa.string() for c in LONG_COLUMNS}, **{c: pa.float64() for c in floats},
             "dimensions": pa.int64(), "normalize_quantities": pa.bool_()}
    schema = pa.schema([(c, types[c]) for c in LONG_COLUMNS])

    def cell(column: str, value: Any) -> Any:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return None
        if column in floats:
            return float(value)
        return value if types[column] != pa.string() else str(value)

    table = pa.Table.from_pylist([{c: cell(c, r.get(c)) for c in LONG_COLUMNS} for r in rows], schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()
