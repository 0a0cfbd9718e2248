"""Ridge regression with the penalty chosen by efficient leave-one-out error: ``RidgeCV(alphas)`` re-derived.

``fit_ridge_loo(X, y, alphas)`` gives the fit of scikit-learn's ``RidgeCV(alphas=alphas).fit(X, y)`` with
every other argument at its default (intercept fitted, ``gcv_mode=None``, ``scoring=None``, one alpha
for the single target): the same ``alpha_``, ``coef_``, ``intercept_`` and predictions (~1e-14 relative
on the exam's shapes; up to ~cond(X'X + aI) * 1e-16 in general, RidgeCV's own rounding error).

The math (no sample weights). Centre the columns of X and y: Xc, yc, with means x_mean, y_mean. For a
penalty a, coef = argmin |yc - Xc w|^2 + a |w|^2 and intercept = y_mean - x_mean . coef. The fitted
values form a linear smoother S = H + 11'/n with H = Xc (Xc'Xc + aI)^-1 Xc' (the intercept is not
penalised), so the exact leave-one-out residual of row i is (yc_i - (H yc)_i) / (1 - H_ii - 1/n) and
the score of a is the mean of their squares. The alpha with the smallest mean squared LOO error wins;
on equal scores (to TIE_RTOL) the earliest in the given order (RidgeCV keeps a candidate only when it
is strictly better, so a NaN score never wins over the first alpha).

One factorisation per fit serves every alpha. As RidgeCV, work on the smaller symmetric product:
K = Xc Xc' (n x n) when n <= d ("Gram"), else C = Xc'Xc (d x d) ("covariance"), factored S = Z T Z' with Z
orthogonal and T + aI easy to invert for every a (a shift keeps the factor: S + aI = Z (T + aI) Z'). With F the
(n x m) factor (F = Z for the Gram, F = Xc Z for the covariance) and M = (T + aI)^-1:

- quad_i = F_i M F_i' (G_ii = ((K + aI)^-1)_ii, or H_ii);
- s = F M F' yc and t = F M F' 1.

Two factorisations, chosen by the order m of S (``pick.RIDGE_EIGEN_MAX``):

- up to it (the paper's probe: m <= 480), RidgeCV's own: numpy's ``eigh``, T = diag(lam), so M is diagonal and
  every alpha's forms are two BLAS products (no scipy and no JIT kernel to load);
- above it, the first half of ``eigh``: the tridiagonal reduction (LAPACK dsytrd, Z formed by dorgqr), half the
  work at large m (measured 2x, and 5x against RidgeCV's covariance mode, which forms a d x d inverse per alpha);
  T + aI = L diag(p) L' is tridiagonal, quad_i = sum_j (L^-1 F_i')_j^2 / p_j (the Numba kernel, one pass over F
  per alpha, O(n) memory) and s, t are two tridiagonal solves per alpha.

Gram: c = s, g = t, LOO residual = c_i / (G_ii - g_i / n) (= the formula above, since yc - H yc = a c
and H_ii = 1 - a G_ii; written as RidgeCV writes it); coef = Xc' c.
Covariance: LOO residual = (yc_i - s_i) / (1 - H_ii - (1 - t_i) / n); coef = Z M Z'Xc' yc.

Like RidgeCV, the work is done in float64 and the coefficients are returned in the floating dtype
of X (float32 embeddings give float32 ``coef``), so ``predict`` repeats RidgeCV's ``X @ coef_ +
intercept_`` arithmetic in that dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ..errors import InputError

__all__ = ["TIE_RTOL", "RidgeFit", "fit_ridge_loo", "fit_ridge_loo_batched", "predict"]

# LOO errors closer than this (relative) are a tie, won by the earlier alpha. This closed form and
# RidgeCV's round differently: ~1e-15 relative, up to ~1e-13 in degenerate fits (n = 2, where every
# alpha has the same LOO error); real differences between grid points are far larger.
TIE_RTOL = 1e-10


@dataclass(frozen=True)
class RidgeFit:
    """A fitted ridge probe: prediction = X @ coef + intercept; alpha = alphas[alpha_index] minimises loo_mse."""

    coef: np.ndarray  # (d,), in the floating dtype of the training X (float64 for integer X)
    intercept: float  # a value of coef's dtype, stored as a Python float
    alpha: float
    alpha_index: int
    loo_mse: np.ndarray  # (k,) mean squared leave-one-out error for each alpha, in the given order


# ----------------------------------------------------------------------------- validation
def _check_alphas(alphas) -> np.ndarray:
    a = np.asarray(alphas)
    if a.ndim != 1 or a.shape[0] == 0:
        raise InputError(
            f"alphas must be a non-empty 1-D sequence of numbers, got shape {a.shape}.",
            "pass a list or tuple of penalties, e.g. fasteval.core.protocol.PROBE_ALPHAS.",
        )
    if a.dtype.kind not in "iuf":
        raise InputError(f"alphas must be real numbers, got dtype {a.dtype}.", "pass floats such as 0.01, 1.0.")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a) & (a > 0)):
        raise InputError(
            f"every alpha must be a finite number > 0, got {a.tolist()}.",
            "drop zero, negative, NaN and infinite values from alphas (leave-one-out ridge needs a > 0).",
        )
    return a


def _check_xy(X, y, label: str = "") -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2:
        raise InputError(f"X{label} must be 2-D (rows x features), got shape {X.shape}.", "pass X.reshape(n, -1).")
    if y.ndim != 1:
        raise InputError(f"y{label} must be 1-D (one target per row), got shape {y.shape}.", "pass y.ravel().")
    if X.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
        raise InputError(
            f"X{label} and y{label} must be real numbers, got dtypes {X.dtype} and {y.dtype}.",
            "convert them with np.asarray(..., dtype=float).",
        )
    n, d = X.shape
    if y.shape[0] != n:
        raise InputError(f"X{label} has {n} rows but y{label} has {y.shape[0]} values.", "pass one y per row of X.")
    if n < 2 or d < 1:
        raise InputError(
            f"X{label} has shape {X.shape}; a leave-one-out fit with intercept needs >= 2 rows and >= 1 feature.",
            "fit on more rows.",
        )
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise InputError(f"X{label} or y{label} contains NaN or infinity.", "drop or impute those rows first.")
    return X, y


# ----------------------------------------------------------------------------- the inverse forms
def _diagonal_inverse_forms(FT: np.ndarray, lam: np.ndarray, alphas: np.ndarray,
                            B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse forms of an eigendecomposed fit (T = diag(lam): no off-diagonal): for every alpha at once,
    quad (k, n) = (1 / (lam + a)) . FT^2 and sol (k, m, r) = B / (lam + a), as RidgeCV's eigen mode computes its
    G_ii and c (two BLAS products, no loop over the factor)."""
    inv = 1.0 / (lam[None, :] + alphas[:, None])  # (k, m)
    return inv @ (FT * FT), inv[:, :, None] * B[None, :, :]


def _inverse_forms(fits: list[_Reduced], alphas: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(quad, sol) of every reduced fit: an eigendecomposed one's by two products (numpy), a tridiagonal one's by
    the JIT kernel (the fits above ``pick.RIDGE_EIGEN_MAX``)."""
    out = []
    for r in fits:
        if r.t_off is None:
            out.append(_diagonal_inverse_forms(r.FT, r.t_diag, alphas, r.B))
        else:
            from ._ridge_jit import _tridiagonal_inverse_forms

            out.append(_tridiagonal_inverse_forms(r.FT, r.t_diag, r.t_off, alphas, r.B))
    return out


# ----------------------------------------------------------------------------- the fit
def _factor(S: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(t_diag, t_off, Z) with S = Z T Z', Z orthogonal: up to ``pick.RIDGE_EIGEN_MAX`` rows numpy's eigh (T
    diagonal, t_off None: RidgeCV's own decomposition, and no scipy to import for the paper's probe), above it the
    tridiagonal reduction (half of eigh's work; scipy's LAPACK, and the JIT kernel for the forms)."""
    from . import pick

    if pick.use_numpy(S.shape[0], pick.RIDGE_EIGEN_MAX):
        lam, Z = np.linalg.eigh(S)
        return lam, None, Z
    return _tridiagonalize(S)


def _tridiagonalize(S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_diag, t_off, Z) with S = Z T Z' (LAPACK dsytrd + dorgqr), Z orthogonal in Fortran order; S is overwritten."""
    from scipy.linalg import lapack

    m = S.shape[0]
    if m == 1:
        return S[0].copy(), np.empty(0), np.ones((1, 1), order="F")
    lwork = int(lapack.dsytrd_lwork(m, lower=1)[0])
    # S is symmetric, so S.T is the same matrix in Fortran order: no copy, reflectors written into it.
    h, t_diag, t_off, tau, info = lapack.dsytrd(S.T, lower=1, lwork=lwork, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"LAPACK dsytrd failed (info={info}).")
    # Z = diag(1, product of the reflectors stored below the subdiagonal): dorgtr's job, done by dorgqr.
    Z = np.zeros((m, m), order="F")
    Z[0, 0] = 1.0
    Z[1:, 1:], _, info = lapack.dorgqr(h[1:, :-1], tau, lwork=64 * m, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"LAPACK dorgqr failed (info={info}).")
    return t_diag, t_off, Z


def _select(loo_mse: np.ndarray) -> int:
    """RidgeCV's choice: start at the first alpha, move only to a strictly smaller error (NaN never wins).

    An improvement within TIE_RTOL (relative) counts as a tie: equal errors in exact arithmetic (n = 2,
    or a grid with repeated alphas) then keep the first alpha instead of whichever rounding favours.
    """
    best = 0
    for j in range(1, loo_mse.shape[0]):
        if loo_mse[j] < loo_mse[best] * (1.0 - TIE_RTOL):
            best = j
    return best


@dataclass
class _Reduced:
    """One validated fit, centred and reduced to tridiagonal form: what the inverse forms need (FT, t_diag, t_off,
    B = FT @ [yc, 1]) and what finishes the fit."""

    X: np.ndarray  # centred, float64
    yc: np.ndarray
    x_mean: np.ndarray
    y_mean: float
    out_dtype: np.dtype
    Z: np.ndarray
    FT: np.ndarray
    t_diag: np.ndarray  # T's diagonal (the eigenvalues where t_off is None)
    t_off: np.ndarray | None  # T's off-diagonal; None: T is diagonal (eigendecomposed)
    B: np.ndarray


def _reduce(X: np.ndarray, y: np.ndarray) -> _Reduced:
    """Centre one validated (X, y) and factor its Gram (n <= d) or covariance matrix (``_factor``)."""
    out_dtype = X.dtype if X.dtype.kind == "f" else np.dtype(np.float64)
    X = np.array(X, dtype=np.float64, order="C")  # a copy: centred in place below
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    x_mean = X.mean(axis=0)
    X -= x_mean
    y_mean = y.mean()
    yc = y - y_mean
    targets = np.column_stack((yc, np.ones(n)))  # (n, 2): yc and the intercept column 1
    if n <= d:
        # Gram, as RidgeCV: X X' = Z T Z' (numpy hands a @ a.T to BLAS syrk). F = Z.
        t_diag, t_off, Z = _factor(X @ X.T)
        FT = np.ascontiguousarray(Z.T)
    else:
        # Covariance: X'X = Z T Z'. F = P = X Z, built transposed so its rows are contiguous.
        t_diag, t_off, Z = _factor(X.T @ X)
        FT = Z.T @ X.T
    return _Reduced(X, yc, x_mean, y_mean, out_dtype, Z, FT, t_diag, t_off, FT @ targets)


def _finish(r: _Reduced, quad: np.ndarray, sol: np.ndarray, alphas: np.ndarray) -> RidgeFit:
    """The LOO errors of every alpha from the inverse forms, the chosen alpha and its coefficients."""
    n, d = r.X.shape
    yc, FT = r.yc, r.FT
    # (k, n): F (T + aI)^-1 F' applied to yc and to 1, for every alpha.
    smooth_y = sol[:, :, 0] @ FT
    smooth_1 = sol[:, :, 1] @ FT
    if n <= d:  # c = G yc, g = G 1 with G = (X X' + aI)^-1; RidgeCV: looe = c / (G_ii - g_i / n)
        loo = smooth_y / (quad - smooth_1 / n)
    else:  # RidgeCV: looe = (yc - H yc) / (1 - H_ii - (1 - (H 1)_i) / n) with H = X (X'X + aI)^-1 X'
        loo = (yc - smooth_y) / (1.0 - quad - (1.0 - smooth_1) / n)

    loo_mse = np.mean(loo * loo, axis=1)
    j = _select(loo_mse)
    coef = r.X.T @ smooth_y[j] if n <= d else r.Z @ sol[j, :, 0]
    intercept = r.y_mean - r.x_mean @ coef
    return RidgeFit(
        coef=coef.astype(r.out_dtype, copy=False),
        intercept=float(r.out_dtype.type(intercept)),
        alpha=float(alphas[j]),
        alpha_index=j,
        loo_mse=loo_mse,
    )


def _fit_all(checked: list[tuple[np.ndarray, np.ndarray]], alphas: np.ndarray) -> list[RidgeFit]:
    """The closed-form LOO fits of validated (X, y) pairs over all alphas at once. The reductions (BLAS and LAPACK,
    which release the GIL) run on a thread a usable core, each on one BLAS thread."""
    from . import usable_cores

    workers = min(usable_cores(), len(checked))
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers, thread_name_prefix="fasteval-ridge") as pool:
            reduced = list(pool.map(lambda xy: _reduce(*xy), checked))
    else:
        reduced = [_reduce(X, y) for X, y in checked]
    return [_finish(r, quad, sol, alphas) for r, (quad, sol) in zip(reduced, _inverse_forms(reduced, alphas))]


def _one_blas_thread():
    """BLAS on one thread for the fits: the probe's LAPACK reductions are a few hundred rows, where
    OpenBLAS threads cost more than they save (measured: 15-40 ms on one thread, 130-1500 ms on two on a
    busy 2-core machine). Same arithmetic, so the same results."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def fit_ridge_loo(X, y, alphas: Sequence[float]) -> RidgeFit:
    """Ridge fit of y on X (intercept fitted) with alpha chosen by exact leave-one-out MSE, as RidgeCV(alphas).

    X: (n, d) real, n >= 2; y: (n,) real; alphas: non-empty sequence of finite penalties > 0 (order
    matters only for ties: the first of equally good alphas wins). Raises InputError otherwise.
    """
    a = _check_alphas(alphas)
    X, y = _check_xy(X, y)
    with _one_blas_thread():
        return _fit_all([(X, y)], a)[0]


def fit_ridge_loo_batched(Xs: Sequence, ys: Sequence, alphas: Sequence[float]) -> list[RidgeFit]:
    """[fit_ridge_loo(X, y, alphas) for X, y in zip(Xs, ys)], with every input validated before any fit.

    Fits are independent (shapes may differ); each costs one tridiagonal reduction of its Gram or
    covariance matrix. Xs may also be one 3-D array (fits, n, d) with ys (fits, n).
    """
    a = _check_alphas(alphas)
    if len(Xs) != len(ys):
        raise InputError(f"got {len(Xs)} design matrices but {len(ys)} target vectors.", "pass one y per X.")
    checked = [_check_xy(X, y, f"[{i}]") for i, (X, y) in enumerate(zip(Xs, ys))]
    with _one_blas_thread():
        return _fit_all(checked, a)


def predict(fit: RidgeFit, X) -> np.ndarray:
    """X @ fit.coef + fit.intercept for X of shape (m, d): RidgeCV.predict, in the dtype numpy promotes to."""
    X = np.asarray(X)
    d = fit.coef.shape[0]
    if X.ndim != 2 or X.shape[1] != d:
        raise InputError(f"X must have shape (rows, {d}) to match the fit, got {X.shape}.", f"pass {d} features a row.")
    if X.dtype.kind not in "biuf":
        raise InputError(f"X must be real numbers, got dtype {X.dtype}.", "convert it with np.asarray(X, float).")
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    return X @ fit.coef + fit.intercept
