"""Scalar losses of the margin a = y w.x, compiled by Numba.

Each loss is selected by a small integer code inside the kernels, so that every kernel
stays cacheable (a jitted function passed as an argument defeats numba's disk cache).
``derivatives(code, a, sigma, theta)`` returns psi(a), psi'(a), psi''(a).

Paper's general family (Luo, Qiao & Zhang, Theorem GCL): with v = (theta - a) / sigma,
    psi(a) = Phi_c(v) (theta - a) + phi_c(v) sigma,  psi' = -Phi_c(v),  psi'' = Phi_c'(v) / sigma.
The formulas below are that family rewritten in forms that neither overflow nor cancel.
"""

import math

from numba import njit

PSI_G = 0
PSI_M = 1
SQUARED_HINGE = 2
LOGISTIC = 3

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Beyond |v| = 40 the normal pdf underflows to 0 and Phi(v) is 0 or 1 in double precision.
_GAUSS_TAIL = 40.0


@njit(cache=True, nogil=True)
def _psi_g(a, sigma, theta):
    t = theta - a
    v = t / sigma
    if v > _GAUSS_TAIL:
        return t, -1.0, 0.0
    if v < -_GAUSS_TAIL:
        return 0.0, 0.0, 0.0
    cdf = 0.5 * math.erfc(-v / _SQRT2)  # erfc keeps the lower tail accurate
    pdf = _INV_SQRT_2PI * math.exp(-0.5 * v * v)
    return sigma * (v * cdf + pdf), -cdf, pdf / sigma


@njit(cache=True, nogil=True)
def _psi_m(a, sigma, theta):
    t = theta - a
    h = math.hypot(t, sigma)
    if t >= 0.0:
        value = 0.5 * t + 0.5 * h
        slope = -0.5 - 0.5 * (t / h)
    else:  # (t + h) / 2 cancels for t << 0: multiply by the conjugate
        q = h - t
        value = sigma * (sigma / (2.0 * q))
        slope = -(sigma / h) * (sigma / (2.0 * q))
    r = sigma / h
    return value, slope, r * r / (2.0 * h)


@njit(cache=True, nogil=True)
def _squared_hinge(a, theta):
    t = theta - a
    if t > 0.0:
        return t * t, -2.0 * t, 2.0  # generalized Hessian: 2 on the open side
    return 0.0, 0.0, 0.0


@njit(cache=True, nogil=True)
def _logistic(a, sigma, theta):
    # sigma * log(1 + e^v), v = (theta - a) / sigma, branching on the sign of v
    v = (theta - a) / sigma
    e = math.exp(-abs(v))
    if v > 0.0:
        value = sigma * (v + math.log1p(e))
        p = 1.0 / (1.0 + e)  # sigmoid(v)
    else:
        value = sigma * math.log1p(e)
        p = e / (1.0 + e)
    return value, -p, e / ((1.0 + e) * (1.0 + e)) / sigma


@njit(cache=True, nogil=True)
def derivatives(code, a, sigma, theta):
    """psi(a), psi'(a), psi''(a) of the loss with this code."""
    if code == PSI_G:
        return _psi_g(a, sigma, theta)
    if code == PSI_M:
        return _psi_m(a, sigma, theta)
    if code == SQUARED_HINGE:
        return _squared_hinge(a, theta)
    return _logistic(a, sigma, theta)
