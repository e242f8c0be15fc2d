"""The scalar losses psi(a) of the margin: derivatives, stability, the paper's Theorem 1.

Losses under test: psi_G and psi_M (Luo, Qiao & Zhang, eq. (SmoothHL)) over sigma from 2^-30
to 2^5, the squared hinge (L2-SVM) and the logistic loss. References are independent of the
library: central finite differences, mpmath at 50 digits, numpy / scipy closed forms.
"""

import math

import numpy as np
import pytest
from scipy.special import expit

from streamssvm.losses import LOSS_NAMES, Loss, get_loss

EPS = np.finfo(np.float64).eps
SIGMAS = [2.0 ** -30, 2.0 ** -20, 2.0 ** -10, 2.0 ** -6, 2.0 ** -3, 1.0, 2.0 ** 5]
SMOOTH_HINGES = ["psi_g", "psi_m"]

# Every loss with its kink theta and the width over which it bends (sigma, or 1 when the
# loss has no sigma). Margins near the kink are taken as theta + k * width.
LOSS_CASES = (
    [pytest.param(name, s, id=f"{name}-sigma=2^{int(math.log2(s))}")
     for name in SMOOTH_HINGES for s in SIGMAS]
    + [pytest.param("squared_hinge", None, id="squared_hinge"),
       pytest.param("logistic", None, id="logistic")]
)
FAR_MARGINS = [-1e6, -50.0, 0.0, 50.0, 1e6]
# Multiples of the width: binary fractions, so that theta + k * width and the finite-difference
# steps below are exact in double precision and t = theta - a carries no rounding.
NEAR_KINK = [-8.0, -3.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 3.0, 8.0]
FD_SHIFT = 2.0 ** -12  # the step, in units of the width (or of |theta - a| for psi_M tails)

HUGE = np.finfo(np.float64).max
EXTREME_MARGINS = np.array([
    -HUGE, -1e308, -1e200, -1e154, -1e100, -1e20, -1e10, -1e5, -1.0, -1e-300, -5e-324, 0.0,
    5e-324, 1e-300, 1.0, 1e5, 1e10, 1e20, 1e100, 1e154, 1e200, 1e308, HUGE,
])


def _width(loss):
    return loss.sigma if loss.name in SMOOTH_HINGES else 1.0


# ---------------------------------------------------------------- finite differences

def _fd_points(loss):
    """(margin, step, t_is_exact) triples near the kink and far from it."""
    width = _width(loss)
    points = []
    for k in NEAR_KINK:
        if loss.name == "squared_hinge" and k == 0.0:
            continue  # no second derivative at the kink itself (only a generalized one)
        points.append((loss.theta + k * width, FD_SHIFT * width, True))
    for a in FAR_MARGINS:
        t = loss.theta - a
        step = FD_SHIFT * width
        if loss.name == "psi_m":
            step = FD_SHIFT * max(width, abs(t))  # algebraic tail: it bends on the scale of |t|
        # never below a few thousand ulps of a, or a +- step would round back onto a
        step = max(step, 2.0 ** 12 * np.spacing(abs(a)))
        if loss.name == "squared_hinge":
            step = min(step, abs(t) / 4)  # stay on one side of the kink
        points.append((a, step, False))
    return points


def _central_difference(fun, a, step):
    """(fun(a + h) - fun(a - h)) / (2 h) with the step actually realised in floating point."""
    ap, am = a + step, a - step
    return (fun(ap) - fun(am)) / (ap - am)


@pytest.mark.parametrize("name, sigma", LOSS_CASES)
def test_derivatives_match_central_differences(name, sigma):
    loss = get_loss(name, sigma)

    def value(a):
        return float(loss.derivatives(np.array([a]))[0][0])

    def slope(a):
        return float(loss.derivatives(np.array([a]))[1][0])

    for a, step, t_exact in _fd_points(loss):
        psi, dpsi, d2psi = (float(x[0]) for x in loss.derivatives(np.array([a])))
        # Rounding noise of a difference quotient: the values carry a few ulps of
        # themselves, plus |a| ulps through t = theta - a when that subtraction rounds.
        shift_noise = 0.0 if t_exact else abs(a)
        noise1 = 64 * EPS * (abs(psi) + shift_noise * abs(dpsi)) / step
        noise2 = 64 * EPS * (abs(dpsi) + shift_noise * abs(d2psi)) / step
        fd1 = _central_difference(value, a, step)
        fd2 = _central_difference(slope, a, step)
        assert abs(fd1 - dpsi) <= 1e-5 * abs(dpsi) + noise1, (a, fd1, dpsi)
        assert abs(fd2 - d2psi) <= 1e-5 * abs(d2psi) + noise2, (a, fd2, d2psi)


@pytest.mark.parametrize("name, sigma", LOSS_CASES)
def test_outputs_never_nan_and_finite_where_representable(name, sigma):
    loss = get_loss(name, sigma)
    psi, dpsi, d2psi = loss.derivatives(EXTREME_MARGINS)
    for out in (psi, dpsi, d2psi):
        assert not np.any(np.isnan(out))
    if name == "squared_hinge":
        # (1 - a)^2 and -2 (1 - a) leave double range when |a| does; there they must be
        # +inf / -inf, never NaN, and finite wherever the exact value is representable.
        t = np.maximum(0.0, 1.0 - EXTREME_MARGINS)
        value_fits = t < np.sqrt(HUGE)
        slope_fits = t < HUGE / 2
        assert np.all(np.isfinite(psi[value_fits]))
        assert np.all(psi[~value_fits] == np.inf)
        assert np.all(np.isfinite(dpsi[slope_fits]))
        assert np.all(dpsi[~slope_fits] == -np.inf)
        assert np.all(np.isfinite(d2psi))
        return
    for out in (psi, dpsi, d2psi):
        assert np.all(np.isfinite(out)), EXTREME_MARGINS[~np.isfinite(out)]
    # far left the losses are linear (hinge-like: 1 - a; logistic: -a), far right zero
    left = EXTREME_MARGINS <= -1e20
    np.testing.assert_allclose(psi[left], loss.theta - EXTREME_MARGINS[left], rtol=1e-12)
    assert np.all(dpsi[left] == -1.0)
    assert np.all(psi[EXTREME_MARGINS >= 1e5] <= 1e-4 * (loss.sigma ** 2))


# ---------------------------------------------------------------- the paper's Theorem 1

def _theorem_grid(sigma):
    near = 1.0 + sigma * np.linspace(-60.0, 60.0, 4801)
    wide = np.linspace(-1e3, 1e3, 4001)
    far = np.array([-1e12, -1e6, 1e6, 1e12])
    return np.sort(np.concatenate([near, wide, far]))


@pytest.mark.parametrize("name, bound_factor", [("psi_g", 1.0 / math.sqrt(2.0 * math.pi)),
                                                ("psi_m", 0.5)])
@pytest.mark.parametrize("sigma", SIGMAS, ids=[f"2^{int(math.log2(s))}" for s in SIGMAS])
def test_theorem1_uniform_approximation_of_the_hinge(name, bound_factor, sigma):
    """0 <= psi - max(0, 1 - a) <= sigma / sqrt(2 pi) (psi_G), sigma / 2 (psi_M)."""
    loss = get_loss(name, sigma)
    a = _theorem_grid(sigma)
    psi, _, _ = loss.derivatives(a)
    hinge = np.maximum(0.0, 1.0 - a)
    gap = psi - hinge
    rounding = 1e-15 + 4 * EPS * np.abs(1.0 - a)
    bound = bound_factor * sigma
    assert np.all(gap >= -rounding), a[np.argmin(gap + rounding)]
    assert np.all(gap <= bound * (1 + 4 * EPS) + rounding), a[np.argmax(gap - rounding)]
    # the bound is attained at the kink, so it is the right constant, not merely an upper one
    at_kink = float(loss.derivatives(np.array([1.0]))[0][0])
    assert at_kink == pytest.approx(bound, rel=4 * EPS)


@pytest.mark.parametrize("name, sigma", LOSS_CASES)
def test_convex_and_nonincreasing(name, sigma):
    """psi' <= 0, psi'' >= 0, and psi' nondecreasing along a sorted grid."""
    loss = get_loss(name, sigma)
    a = np.sort(np.concatenate([_theorem_grid(_width(loss)) - 1.0 + loss.theta,
                                EXTREME_MARGINS[np.abs(EXTREME_MARGINS) <= 1e100]]))
    psi, dpsi, d2psi = loss.derivatives(a)
    assert np.all(psi >= -1e-300)  # exactly >= 0: see test_psi_g_never_negative
    assert np.all(dpsi <= 0.0)
    assert np.all(d2psi >= 0.0)
    if name != "squared_hinge":
        assert np.all(dpsi >= -1.0)
    assert np.all(np.diff(dpsi) >= -4 * EPS * np.maximum(1.0, np.abs(dpsi[1:])))


def test_psi_g_never_negative():
    """psi_G >= hinge >= 0 (Theorem 1) holds exactly, also where psi_G underflows."""
    for sigma in SIGMAS:
        v = np.linspace(-41.0, -36.0, 20001)
        psi = get_loss("psi_g", sigma).derivatives(1.0 - v * sigma)[0]
        assert np.all(psi >= 0.0), (sigma, psi.min(), v[np.argmin(psi)])


# ---------------------------------------------------------------- against closed forms

def _mp_reference(name, sigma, margins):
    """psi, psi', psi'' of psi_G / psi_M at 50 significant digits (from the paper's formula)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    out = np.empty((3, len(margins)))
    s = mp.mpf(sigma)
    for i, a in enumerate(margins):
        t = 1 - mp.mpf(float(a))
        v = t / s
        if name == "psi_g":
            cdf, pdf, dcdf = mp.ncdf(v), mp.npdf(v), mp.npdf(v)
        else:
            root = mp.sqrt(1 + v * v)
            cdf, pdf, dcdf = (1 + v / root) / 2, 1 / (2 * root), 1 / (2 * root ** 3)
        out[:, i] = float(cdf * t + pdf * s), float(-cdf), float(dcdf / s)
    return out


@pytest.mark.parametrize("name", SMOOTH_HINGES)
@pytest.mark.parametrize("sigma", SIGMAS, ids=[f"2^{int(math.log2(s))}" for s in SIGMAS])
def test_smooth_hinges_against_high_precision(name, sigma):
    """Relative error <= 1e-12 wherever the value is not negligible.

    psi_G for v = (1 - a) / sigma < -8 is below 1e-16 sigma; there the value (not its
    derivatives) is the cancelling difference v Phi(v) + phi(v) and is checked separately.
    """
    loss = get_loss(name, sigma)
    v = np.concatenate([np.linspace(-37.0, 37.0, 297), [-1e3, -1e6, 1e3, 1e6]])
    a = 1.0 - v * sigma
    ours = np.stack(loss.derivatives(a))
    ref = _mp_reference(name, sigma, a)
    value_ok = v >= -8.0 if name == "psi_g" else np.ones_like(v, bool)
    np.testing.assert_allclose(ours[0][value_ok], ref[0][value_ok], rtol=1e-12, atol=0)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-12, atol=0)
    np.testing.assert_allclose(ours[2], ref[2], rtol=1e-12, atol=0)
    # the tail: tiny in absolute terms, and still accurate to ~1e-9 relative (v^2 amplifies
    # the rounding of the exponent in v Phi(v) + phi(v))
    tail = ~value_ok & (ref[0] > 1e-290)
    np.testing.assert_allclose(ours[0][tail], ref[0][tail], rtol=1e-8, atol=0)
    assert np.all(np.abs(ours[0][~value_ok] - ref[0][~value_ok]) <= 1e-16 * sigma * 1e-3)


def test_logistic_against_numpy():
    loss = get_loss("logistic")
    a = np.concatenate([np.linspace(-40, 40, 2001), [-1e6, -745.0, -700.0, 700.0, 745.0, 1e6]])
    psi, dpsi, d2psi = loss.derivatives(a)
    # atol: only subnormal results (e^-745) may differ
    np.testing.assert_allclose(psi, np.logaddexp(0.0, -a), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(dpsi, -expit(-a), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(d2psi, expit(a) * expit(-a), rtol=1e-13, atol=1e-300)


def test_squared_hinge_closed_form():
    loss = get_loss("squared_hinge")
    a = np.concatenate([np.linspace(-30, 30, 6001), [-1e100, 1.0, np.nextafter(1.0, 0), 1e100]])
    t = np.maximum(0.0, 1.0 - a)
    psi, dpsi, d2psi = loss.derivatives(a)
    np.testing.assert_array_equal(psi, t * t)
    np.testing.assert_array_equal(dpsi, -2.0 * t)
    np.testing.assert_array_equal(d2psi, np.where(a < 1.0, 2.0, 0.0))


# ---------------------------------------------------------------- the Loss object

def test_loss_object_shapes_and_call():
    loss = get_loss("psi_m", 0.25)
    a = np.linspace(-3, 3, 12).reshape(3, 4)
    psi, dpsi, d2psi = loss.derivatives(a)
    assert psi.shape == dpsi.shape == d2psi.shape == (3, 4)
    np.testing.assert_array_equal(loss(a), psi)
    np.testing.assert_array_equal(loss.derivatives(a.ravel())[1], dpsi.ravel())


def test_get_loss_defaults_and_passthrough():
    assert set(LOSS_NAMES) >= {"psi_g", "psi_m", "squared_hinge", "logistic"}
    assert get_loss("psi_g").sigma == 2.0 ** -3
    assert get_loss("psi_m", 2).sigma == 2.0
    assert get_loss("logistic").theta == 0.0 and get_loss("squared_hinge").theta == 1.0
    assert not get_loss("squared_hinge").smooth and get_loss("psi_g").smooth
    loss = get_loss("psi_g", 0.5)
    assert get_loss(loss) is loss
    assert get_loss(loss, 0.5) is loss
    assert isinstance(loss, Loss)


@pytest.mark.parametrize("args, match", [
    (("hinge_typo",), "unknown loss"),
    (("PSI_G",), "unknown loss"),
    ((None,), "unknown loss"),
    (("psi_g", 0.0), "sigma"),
    (("psi_g", -1.0), "sigma"),
    (("psi_m", float("nan")), "sigma"),
    (("psi_m", float("inf")), "sigma"),
    (("logistic", 1.0), "takes no sigma"),
    (("squared_hinge", 0.5), "takes no sigma"),
    ((get_loss("psi_g", 0.5), 0.25), "sigma"),
])
def test_get_loss_errors(args, match):
    with pytest.raises(ValueError, match=match):
        get_loss(*args)
