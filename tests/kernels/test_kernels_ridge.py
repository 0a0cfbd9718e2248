"""Leave-one-out ridge against scikit-learn's RidgeCV, a naive refit-per-left-out-row reference, and a dense inverse.

Hypothesis draws both shapes (n <= d: Gram path; n > d: covariance path) with duplicate rows, constant
and collinear columns, integer values and n down to 2; the realistic tests use the exam's shapes and
PROBE_ALPHAS. Timing notes (not tests): 25 fits with the 13 PROBE_ALPHAS on float32 |e_a - e_b| rows,
one BLAS thread, a shared 2-core box under load (absolute times inflated, ratios stable over runs):
364 x 384 ours 1.0-1.5 s vs RidgeCV 2.2-3.2 s (2.0-2.1x); 480 x 384 0.8-1.5 s vs 5.7-11.3 s (6.8-7.5x);
480 x 4096 3.3-4.4 s vs 6.6-10.3 s (2.0-2.4x). LAPACK's tridiagonal reduction is most of a fit; the
Numba kernel (O(n m k)) takes ~0.7 ms per fit serial, and parallel=True made it slower (thread start-up).
Both factorizations (numpy's eigh up to pick.RIDGE_EIGEN_MAX, the tridiagonal reduction and its kernel above) are
held to every reference: the random designs draw which one runs.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import RidgeCV

from fasteval.core.errors import InputError
from fasteval.core.kernels import pick
from fasteval.core.kernels._ridge_jit import _tridiagonal_inverse_forms
from fasteval.core.kernels.ridge import (
    TIE_RTOL,
    RidgeFit,
    _diagonal_inverse_forms,
    fit_ridge_loo,
    fit_ridge_loo_batched,
    predict,
)
from fasteval.core.protocol import PROBE_ALPHAS

RTOL = 1e-8  # the contract: predictions and coefficients equal to RidgeCV's to 1e-8 relative


# ----------------------------------------------------------------------------- references
from naive import naive_loo_mse  # noqa: E402 (the references' section)


FACTORIZATIONS = ("eigen", "tridiagonal")


@contextmanager
def factorization(kind: str):
    """Every fit inside on one factorization: numpy's eigh ("eigen") or LAPACK's tridiagonal reduction and the JIT
    kernel ("tridiagonal"), whatever its size."""
    limit = pick.RIDGE_EIGEN_MAX
    pick.RIDGE_EIGEN_MAX = (1 << 40) if kind == "eigen" else 0
    try:
        yield
    finally:
        pick.RIDGE_EIGEN_MAX = limit


def sklearn_fit(X, y, alphas) -> RidgeCV:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RidgeCV(alphas=alphas, store_cv_results=True).fit(X, y)


def assert_close(ours, theirs, rtol=RTOL, scale=0.0):
    """Equal to rtol relative to max(scale, largest |theirs|): entries near zero are judged on that scale."""
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * max(scale, np.abs(theirs).max()))


def check_against_sklearn(X, y, alphas, X_new):
    """Our fit equals RidgeCV's: LOO errors, alpha, coef, intercept, predictions on X and on new rows."""
    fit = fit_ridge_loo(X, y, alphas)
    ref = sklearn_fit(X, y, alphas)
    assert isinstance(fit, RidgeFit)
    assert fit.loo_mse.shape == (len(alphas),)
    # Natural scales: a constant y has LOO errors and coefficients that are pure rounding (~1e-17).
    y_scale = float(np.abs(y).max())
    coef_scale = y_scale / max(float(np.abs(X).max()), 1e-300)
    assert_close(fit.loo_mse, ref.cv_results_.mean(axis=0), scale=y_scale**2)
    if fit.alpha != ref.alpha_:
        # Only a tie may split us: errors equal up to rounding (n = 2, where every alpha has the same LOO
        # error; a constant y). RidgeCV's pick then follows its rounding; ours is the first tied alpha.
        j_ref = list(map(float, alphas)).index(ref.alpha_)
        mse = fit.loo_mse
        assert abs(mse[j_ref] - mse[fit.alpha_index]) <= 1e-9 * mse[fit.alpha_index] + RTOL * y_scale**2
        ref = sklearn_fit(X, y, [fit.alpha])
    assert fit.alpha == ref.alpha_
    assert fit.alpha == float(alphas[fit.alpha_index])
    assert_close(fit.coef, ref.coef_, scale=coef_scale)
    assert abs(fit.intercept - ref.intercept_) <= RTOL * max(y_scale, abs(ref.intercept_))
    for rows in (X, X_new):
        assert_close(predict(fit, rows), ref.predict(rows), scale=y_scale)
    return fit


# ----------------------------------------------------------------------------- random designs
@st.composite
def designs(draw, wide: bool):
    """(X, y, alphas, X_new): n <= d when wide, else n > d; with optional degeneracies."""
    if wide:
        n = draw(st.integers(2, 25))
        d = draw(st.integers(n, 40))
    else:
        d = draw(st.integers(1, 20))
        n = draw(st.integers(d + 1, 45))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):
        X = rng.integers(-3, 4, size=(n, d)).astype(np.float64)  # integer values: exact ties and duplicates
    else:
        X = rng.normal(scale=draw(st.sampled_from([0.1, 1.0, 3.0])), size=(n, d))
    if draw(st.booleans()) and n >= 3:  # duplicate rows
        k = draw(st.integers(1, n - 2))
        X[-k:] = X[:k]
    if draw(st.booleans()):  # constant columns
        X[:, rng.integers(0, d, size=max(1, d // 3))] = draw(st.sampled_from([0.0, 1.0, -2.5]))
    if draw(st.booleans()) and d >= 2:  # collinear columns
        X[:, -1] = 2.0 * X[:, 0] - 0.5 * X[:, d // 2]
    kind = draw(st.sampled_from(["linear", "noise", "constant", "integer"]))
    if kind == "linear":
        y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    elif kind == "noise":
        y = rng.normal(size=n)
    elif kind == "constant":
        y = np.full(n, 1.7)
    else:
        y = rng.integers(-2, 3, size=n).astype(np.float64)
    grid = draw(st.sampled_from(["probe", "random"]))
    if grid == "probe":
        alphas = list(PROBE_ALPHAS)
    else:  # any order, repeats allowed: the order decides ties
        alphas = draw(st.lists(st.sampled_from([0.01, 0.1, 0.5, 1.0, 3.0, 20.0, 1e3, 1e4]), min_size=1, max_size=8))
    X_new = rng.normal(size=(5, d))
    return X, y, alphas, X_new


@given(designs(wide=True), st.sampled_from(FACTORIZATIONS))
def test_wide_matches_ridgecv(case, kind):
    with factorization(kind):
        check_against_sklearn(*case)


@given(designs(wide=False), st.sampled_from(FACTORIZATIONS))
def test_tall_matches_ridgecv(case, kind):
    with factorization(kind):
        check_against_sklearn(*case)


@given(designs(wide=True) | designs(wide=False), st.sampled_from(FACTORIZATIONS))
def test_loo_mse_is_the_refit_leave_one_out_error(case, kind):
    X, y, alphas, _ = case
    with factorization(kind):
        fit = fit_ridge_loo(X, y, alphas)
    assert_close(fit.loo_mse, naive_loo_mse(X, y, alphas), rtol=1e-7, scale=float(np.abs(y).max()) ** 2)
    # RidgeCV's rule: the first alpha with the smallest error (ties to TIE_RTOL go to the earlier one).
    best = fit.loo_mse[fit.alpha_index]
    assert np.all(fit.loo_mse >= best * (1 - TIE_RTOL))
    assert np.all(fit.loo_mse[: fit.alpha_index] > best)


@given(st.integers(2, 30), st.integers(0, 2**32 - 1), st.lists(st.floats(1e-3, 1e4), min_size=1, max_size=6))
def test_kernel_matches_dense_inverse(m, seed, alphas):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    t_diag = rng.uniform(0.0, 5.0, m)
    t_off = rng.uniform(-1.0, 1.0, m - 1)
    T = np.diag(t_diag) + np.diag(t_off, 1) + np.diag(t_off, -1)
    w_min = np.linalg.eigvalsh(T)[0]
    t_diag = t_diag - min(w_min, 0.0)  # positive semi-definite, like Z'KZ
    T = np.diag(t_diag) + np.diag(t_off, 1) + np.diag(t_off, -1)
    FT = rng.normal(size=(m, n))
    B = rng.normal(size=(m, 2))
    quad, sol = _tridiagonal_inverse_forms(FT, t_diag, t_off, np.array(alphas), B)
    for a, alpha in enumerate(alphas):
        inv = np.linalg.inv(T + alpha * np.eye(m))
        assert_close(quad[a], np.einsum("ji,jk,ki->i", FT, inv, FT), rtol=1e-8)
        assert_close(sol[a], inv @ B, rtol=1e-8)


@given(st.integers(1, 30), st.integers(0, 2**32 - 1), st.lists(st.floats(1e-3, 1e4), min_size=1, max_size=6))
def test_diagonal_forms_match_dense_inverse(m, seed, alphas):
    # an eigendecomposed fit's forms (T = diag(lam), lam >= 0 as a Gram's eigenvalues): two products, held to the
    # dense inverse as the kernel is
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    lam = rng.uniform(0.0, 5.0, m)
    lam[rng.random(m) < 0.2] = 0.0  # a rank-deficient Gram's zero eigenvalues
    FT, B = rng.normal(size=(m, n)), rng.normal(size=(m, 2))
    quad, sol = _diagonal_inverse_forms(FT, lam, np.array(alphas), B)
    for a, alpha in enumerate(alphas):
        inv = np.diag(1.0 / (lam + alpha))
        assert_close(quad[a], np.einsum("ji,jk,ki->i", FT, inv, FT), rtol=1e-12)
        assert_close(sol[a], inv @ B, rtol=1e-12)


@pytest.mark.parametrize("n", [364, 480])
def test_the_two_factorizations_give_one_probe_on_the_exam_shapes(n):
    # the paper's fits (364 and 480 rows of 384 float32 features: Gram and covariance) are eigh's; the tridiagonal
    # reduction with its kernel, forced, gives the same alpha and coefficients to 1e-10
    rng = np.random.default_rng(n)
    X = np.abs(rng.normal(size=(n, 384)) - rng.normal(size=(n, 384))).astype(np.float32)
    y = np.log1p(rng.uniform(0, 100, n))
    assert pick.use_numpy(min(X.shape), pick.RIDGE_EIGEN_MAX)
    eigen = fit_ridge_loo(X, y, PROBE_ALPHAS)
    with factorization("tridiagonal"):
        tri = fit_ridge_loo(X, y, PROBE_ALPHAS)
    assert eigen.alpha_index == tri.alpha_index
    assert_close(eigen.loo_mse, tri.loo_mse, rtol=1e-10)
    assert_close(eigen.coef, tri.coef, rtol=1e-6)  # float32 coefficients (RidgeCV's dtype): one float32 ulp
    assert_close(predict(eigen, X), predict(tri, X), rtol=1e-6)


# ----------------------------------------------------------------------------- fixed cases
def test_two_rows_tie_keeps_the_first_alpha():
    # With n = 2 every alpha leaves one row out and predicts it by the other row's y: all errors equal.
    X = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]])
    y = np.array([0.3, 2.0])
    fit = fit_ridge_loo(X, y, PROBE_ALPHAS)
    np.testing.assert_allclose(fit.loo_mse, (2.0 - 0.3) ** 2, rtol=1e-12)
    assert fit.alpha_index == 0 and fit.alpha == PROBE_ALPHAS[0]


def test_repeated_alpha_keeps_the_first_index():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(12, 5)), rng.normal(size=12)
    best = fit_ridge_loo(X, y, PROBE_ALPHAS).alpha
    fit = fit_ridge_loo(X, y, [1e4, best, best, 1e-2])
    assert fit.alpha_index == 1


def test_one_feature_and_constant_design():
    rng = np.random.default_rng(4)
    y = rng.normal(size=6)
    check_against_sklearn(rng.normal(size=(6, 1)), y, PROBE_ALPHAS, rng.normal(size=(3, 1)))
    fit = check_against_sklearn(np.ones((6, 4)), y, PROBE_ALPHAS, rng.normal(size=(3, 4)))
    np.testing.assert_array_equal(fit.coef, 0.0)
    assert fit.intercept == pytest.approx(y.mean(), rel=1e-14)


def probe_problem(seed: int, n_items: int, signal: float, dim: int = 384, quantities: int = 4):
    """PROTOCOL.md 3.4 shapes: per quantity all pairs of n_items unit embeddings, X = |e_a - e_b|,
    y = log1p |v_a - v_b|.

    The embeddings carry the value along two random directions (strength ``signal``) on top of noise,
    so the probe has something to find: signal 1 selects an interior alpha, 16 the smallest (0.01),
    as in the stored run.
    """
    rng = np.random.default_rng(seed)
    rows, targets = [], []
    for _ in range(quantities):
        v = np.sort(rng.uniform(0.0, 100.0, n_items))
        e = rng.normal(size=(n_items, dim))
        e += signal * (np.outer(np.sin(v / 15.0), rng.normal(size=dim)) + np.outer(v / 50.0, rng.normal(size=dim)))
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        for a, b in combinations(range(n_items), 2):
            rows.append(np.abs(e[a] - e[b]))
            targets.append(np.log1p(abs(v[a] - v[b])))
    return np.array(rows), np.array(targets)


@pytest.mark.parametrize("n_items", [14, 16], ids=["364x384-gram", "480x384-covariance"])
@pytest.mark.parametrize("signal", [1.0, 16.0])
def test_realistic_probe_shapes(n_items, signal):
    X, y = probe_problem(seed=n_items, n_items=n_items, signal=signal)
    assert X.shape == ({14: 364, 16: 480}[n_items], 384)
    X_new, _ = probe_problem(seed=99, n_items=6, signal=signal)
    fit = check_against_sklearn(X, y, PROBE_ALPHAS, X_new)
    if signal == 16.0:
        assert fit.alpha == PROBE_ALPHAS[0]
    else:
        assert PROBE_ALPHAS[0] < fit.alpha < PROBE_ALPHAS[-1]


def test_float32_embeddings_give_ridgecv_float32_predictions():
    X, y = probe_problem(seed=5, n_items=14, signal=16.0)
    X32 = X.astype(np.float32)
    fit = fit_ridge_loo(X32, y, PROBE_ALPHAS)
    ref = sklearn_fit(X32, y, PROBE_ALPHAS)
    assert fit.alpha == ref.alpha_
    assert fit.coef.dtype == ref.coef_.dtype == np.float32
    ours, theirs = predict(fit, X32), ref.predict(X32)
    assert ours.dtype == theirs.dtype == np.float32
    # float32 rounding of (nearly) identical float64 coefficients: at most a few float32 ulps apart
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6 * np.abs(theirs).max())


def test_batched_equals_one_by_one():
    rng = np.random.default_rng(6)
    Xs = [rng.normal(size=(n, d)) for n, d in [(8, 20), (30, 6), (8, 20), (2, 3)]]
    ys = [rng.normal(size=X.shape[0]) for X in Xs]
    fits = fit_ridge_loo_batched(Xs, ys, PROBE_ALPHAS)
    assert len(fits) == len(Xs)
    for fit, X, y in zip(fits, Xs, ys):
        one = fit_ridge_loo(X, y, PROBE_ALPHAS)
        assert fit.alpha_index == one.alpha_index
        np.testing.assert_array_equal(fit.coef, one.coef)
        np.testing.assert_array_equal(fit.loo_mse, one.loo_mse)
    stacked = fit_ridge_loo_batched(np.stack([Xs[0], Xs[2]]), np.stack([ys[0], ys[2]]), PROBE_ALPHAS)
    np.testing.assert_array_equal(stacked[1].coef, fits[2].coef)


def test_integer_inputs_fit_in_float64():
    X = np.array([[1, 2], [3, 1], [0, 0], [2, 2], [5, 1]])
    y = np.array([1, 0, 2, 1, 3])
    fit = check_against_sklearn(X, y, PROBE_ALPHAS, X[:2])
    assert fit.coef.dtype == np.float64


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "X, y, alphas, match",
    [
        (np.ones(4), np.ones(4), PROBE_ALPHAS, "must be 2-D"),
        (np.ones((4, 2)), np.ones((4, 1)), PROBE_ALPHAS, "must be 1-D"),
        (np.ones((4, 2)), np.ones(3), PROBE_ALPHAS, "4 rows but y has 3"),
        (np.ones((1, 2)), np.ones(1), PROBE_ALPHAS, ">= 2 rows"),
        (np.ones((4, 0)), np.ones(4), PROBE_ALPHAS, ">= 1 feature"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), np.ones(2), PROBE_ALPHAS, "NaN or infinity"),
        (np.ones((2, 2)), np.array([1.0, np.inf]), PROBE_ALPHAS, "NaN or infinity"),
        (np.array([["a", "b"], ["c", "d"]]), np.ones(2), PROBE_ALPHAS, "real numbers"),
        (np.ones((3, 2)), np.ones(3), [], "non-empty 1-D"),
        (np.ones((3, 2)), np.ones(3), 1.0, "non-empty 1-D"),
        (np.ones((3, 2)), np.ones(3), [1.0, 0.0], "finite number > 0"),
        (np.ones((3, 2)), np.ones(3), [1.0, -2.0], "finite number > 0"),
        (np.ones((3, 2)), np.ones(3), [np.nan], "finite number > 0"),
        (np.ones((3, 2)), np.ones(3), ["1"], "real numbers"),
    ],
)
def test_bad_inputs_raise_one_line(X, y, alphas, match):
    with pytest.raises(InputError, match=match) as err:
        fit_ridge_loo(X, y, alphas)
    assert "Fix:" in str(err.value) and "\n" not in str(err.value)


def test_batched_validates_everything_first():
    good = np.ones((3, 2)), np.arange(3.0)
    with pytest.raises(InputError, match=r"X\[1\] has 3 rows but y\[1\] has 2"):
        fit_ridge_loo_batched([good[0], good[0]], [good[1], good[1][:2]], PROBE_ALPHAS)
    with pytest.raises(InputError, match="2 design matrices but 1 target"):
        fit_ridge_loo_batched([good[0], good[0]], [good[1]], PROBE_ALPHAS)


def test_predict_checks_width():
    fit = fit_ridge_loo(np.arange(12.0).reshape(4, 3) ** 2, np.arange(4.0), PROBE_ALPHAS)
    with pytest.raises(InputError, match=r"shape \(rows, 3\)"):
        predict(fit, np.ones((2, 4)))
    with pytest.raises(InputError, match=r"shape \(rows, 3\)"):
        predict(fit, np.ones(3))
