"""The ridge probe's one JIT kernel (``ridge._inverse_forms`` calls it for large fits; numpy's form of the same
arithmetic serves small ones)."""

from __future__ import annotations

import numpy as np
from numba import float64, njit
from numba.types import Tuple  # type: ignore[attr-defined]


@njit(
    Tuple((float64[:, ::1], float64[:, :, ::1]))(
        float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1]
    ),
    cache=True,
)
def _tridiagonal_inverse_forms(FT, t_diag, t_off, alphas, B):
    """quad[a, i] = f_i' (T + alphas[a] I)^-1 f_i for the columns f_i of FT (m, n); sol[a] = (T + alphas[a] I)^-1 B.

    T is the symmetric tridiagonal matrix with diagonal t_diag (m,) and off-diagonal t_off (m - 1,);
    T + aI must be positive definite (it is for T = Z'KZ with K positive semi-definite and a > 0).
    Factor T + aI = L diag(p) L' (L unit lower bidiagonal, multipliers mult); then
    quad_i = sum_j (L^-1 f_i)_j^2 / p_j, computed one row of L^-1 FT at a time in O(n) memory.
    """
    m, n = FT.shape
    k = alphas.shape[0]
    r = B.shape[1]
    quad = np.empty((k, n))
    sol = np.empty((k, m, r))
    for a in range(k):
        alpha = alphas[a]
        p = np.empty(m)
        mult = np.empty(max(m - 1, 0))
        p[0] = t_diag[0] + alpha
        for j in range(1, m):
            mult[j - 1] = t_off[j - 1] / p[j - 1]
            p[j] = t_diag[j] + alpha - mult[j - 1] * t_off[j - 1]
        w = np.empty(n)  # the current row of L^-1 FT
        q = quad[a]
        inv = 1.0 / p[0]
        for i in range(n):
            w[i] = FT[0, i]
            q[i] = w[i] * w[i] * inv
        for j in range(1, m):
            lj = mult[j - 1]
            inv = 1.0 / p[j]
            for i in range(n):
                wi = FT[j, i] - lj * w[i]
                w[i] = wi
                q[i] += wi * wi * inv
        for c in range(r):
            x = sol[a, :, c]
            x[0] = B[0, c]
            for j in range(1, m):
                x[j] = B[j, c] - mult[j - 1] * x[j - 1]
            for j in range(m):
                x[j] /= p[j]
            for j in range(m - 2, -1, -1):
                x[j] -= mult[j] * x[j + 1]
    return quad, sol
