"""Slow, obviously correct references for the fast paths, shared by the tests (and usable by benchmarks):
each is written from the protocol's words or a textbook, never from fasteval's code."""
from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.stats


def scipy_tau(x, y) -> float:
    if len(x) == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SmallSampleWarning, ConstantInputWarning
        return float(scipy.stats.kendalltau(x, y).statistic)


def naive_pacc(values, scores, value_ties: str = "wrong") -> float:
    """PROTOCOL.md 1.4 ("wrong") and PROTOCOL.md 3.5 ("as_greater") written out as the paper states them;
    "skip": pairs with equal values are not counted at all."""
    n = len(values)
    if n < 2 or any(math.isnan(v) for v in list(values) + list(scores)):
        return math.nan
    correct = 0
    counted = 0
    for i in range(n):
        for j in range(i + 1, n):
            if value_ties == "as_greater":  # "if d_i < d_j correct iff s_i > s_j; otherwise iff s_i < s_j"
                correct += scores[i] > scores[j] if values[i] < values[j] else scores[i] < scores[j]
                counted += 1
            elif values[i] != values[j]:  # the smaller-value item must have the strictly larger score
                small, large = (i, j) if values[i] < values[j] else (j, i)
                correct += scores[small] > scores[large]
                counted += 1
            elif value_ties == "wrong":
                counted += 1
    return correct / counted if counted else math.nan


def naive_levenshtein(a, b) -> int:
    """Wagner-Fischer DP, two rows; a and b are any sequences of comparable symbols."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def naive_loo_mse(X, y, alphas) -> np.ndarray:
    """For each alpha: refit ridge (intercept unpenalised) without row i, predict row i; mean squared error."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    out = []
    for a in alphas:
        errors = []
        for i in range(n):
            keep = np.arange(n) != i
            Xk, yk = X[keep], y[keep]
            xm, ym = Xk.mean(axis=0), yk.mean()
            coef = np.linalg.solve((Xk - xm).T @ (Xk - xm) + a * np.eye(d), (Xk - xm).T @ (yk - ym))
            errors.append(y[i] - (ym + (X[i] - xm) @ coef))
        out.append(np.mean(np.square(errors)))
    return np.array(out)


def sims_reference(emb: np.ndarray) -> np.ndarray:
    """Cosine of unit rows, accumulated in float64 and rounded to float32 (as the kernel promises)."""
    unit = emb.astype(np.float64) / np.linalg.norm(emb.astype(np.float64), axis=1, keepdims=True)
    unit32 = unit.astype(np.float32).astype(np.float64)
    unit32 /= np.linalg.norm(unit32, axis=1, keepdims=True)
    return (unit32 @ unit32.T).astype(np.float32)
