"""What every kernel takes, checked: the statistics' vectors (float64, 1-D, of one length), the similarities'
embeddings (float32, 2-D, finite) and the names of their choices (a metric, how PACC scores equal values). Numpy
only: the JIT-compiled kernels (``similarity``, ``kendall``) and their numpy forms for a handful of values
(``small``) validate through the same functions and so refuse the same input with the same line."""
from __future__ import annotations

import numpy as np

from ..errors import InputError

# similarity name -> kernel code. "cos" is "dot" on rows normalised first; "hamming" is 1 - (differing sign bits) /
# dimension over the rows' signs (x > 0), as a binary vector store keeps them (``bits.py``).
METRICS = {"cos": 0, "dot": 1, "l2": 2, "hamming": 3}
# How a pair with equal values is scored by pairwise_accuracy (name -> kernel code).
VALUE_TIES = {"wrong": 0, "as_greater": 1, "skip": 2}


def _as_float64(a, name: str) -> np.ndarray:
    try:
        return np.asarray(a, dtype=np.float64)  # not ascontiguousarray: it turns a scalar into shape (1,)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} is not numeric ({err}).", f"pass {name} as numbers.") from None


def _as_vector(a, name: str) -> np.ndarray:
    a = _as_float64(a, name)
    if a.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {a.shape}.", f"pass a flat list or array as {name}.")
    return np.ascontiguousarray(a)


def _as_pair(x, y, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    x = _as_vector(x, names[0])
    y = _as_vector(y, names[1])
    if x.shape != y.shape:
        raise InputError(
            f"{names[0]} and {names[1]} differ in length ({x.shape[0]} vs {y.shape[0]}).",
            f"pass {names[0]} and {names[1]} of the same length, one entry per item.",
        )
    return x, y


def _as_row_pair(X, Y, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """X and Y as contiguous float64 (m, n) rows that pair row by row; a 1-D side is one row, reused for every row
    of the other."""
    X = _as_float64(X, names[0])
    Y = _as_float64(Y, names[1])
    for a, name in ((X, names[0]), (Y, names[1])):
        if a.ndim not in (1, 2):
            raise InputError(f"{name} must be 1-D or 2-D, got shape {a.shape}.", "pass one row per vector.")
    X2 = np.ascontiguousarray(np.atleast_2d(X))
    Y2 = np.ascontiguousarray(np.atleast_2d(Y))
    rows_ok = X2.shape[0] == Y2.shape[0] or X.ndim == 1 or Y.ndim == 1
    if X2.shape[1] != Y2.shape[1] or not rows_ok:
        raise InputError(
            f"{names[0]} {X.shape} and {names[1]} {Y.shape} do not pair row by row.",
            "pass arrays of the same shape (m, n), or one 1-D vector of length n to reuse for every row.",
        )
    return X2, Y2


def _value_ties_code(value_ties: str) -> int:
    try:
        return VALUE_TIES[value_ties]
    except (KeyError, TypeError):
        raise InputError(
            f"Unknown value_ties {value_ties!r}.", f"use one of {', '.join(map(repr, VALUE_TIES))}."
        ) from None


def _metric_code(metric: str) -> int:
    try:
        return METRICS[metric]
    except (KeyError, TypeError):
        raise InputError(f"Unknown metric {metric!r}.", f"use one of {', '.join(map(repr, METRICS))}.") from None


def _as_embeddings(a, name: str) -> np.ndarray:
    try:
        with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf, reported below
            a = np.asarray(a, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} is not a numeric array ({err}).", f"pass {name} as an (n, d) float array.") from None
    if a.ndim != 2:
        raise InputError(f"{name} must be 2-D (n, d), got shape {a.shape}.", f"pass one row per text in {name}.")
    if a.shape[0] and not a.shape[1]:
        raise InputError(f"{name} has {a.shape[0]} rows of dimension 0.", "pass embeddings with d >= 1 columns.")
    if not np.isfinite(a).all():
        raise InputError(
            f"{name} holds NaN or infinite values (or values beyond float32's range).",
            "check the encoder output; a NaN embedding usually means an overflow in the model.",
        )
    return np.ascontiguousarray(a)


def _as_embedding_pair(a, b, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as embeddings of one dimension (``b`` None: ``a`` itself, the very same array)."""
    a = _as_embeddings(a, names[0])
    b = a if b is None else _as_embeddings(b, names[1])
    if a.shape[1] != b.shape[1]:
        raise InputError(
            f"{names[0]} has dimension {a.shape[1]} but {names[1]} has {b.shape[1]}.",
            "embed both sides with the same model.",
        )
    return a, b
