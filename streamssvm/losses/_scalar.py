"""Scalar losses of the margin a = y w.x, compiled by Numba.

Each loss is selected by a small integer code inside the kernels, so that every kernel
stays cacheable (a jitted function passed as an argument defeats numba's disk cache).
``derivatives(code, a, sigma, theta)`` returns psi(a), psi'(a), psi''(a);
``derivatives_with_params(code, a, sigma, theta, params)`` is the same with a float64
parameter array, which only the tabulated family (code ``FAMILY``) reads;
``conjugate(code, b, sigma, theta)`` returns psi*(b) = sup_a (b a - psi(a)) (+inf outside
the domain, NaN for a loss without one).

Paper's general family (Luo, Qiao & Zhang, Theorem GCL): with v = (theta - a) / sigma,
    psi(a) = Phi_c(v) (theta - a) + phi_c(v) sigma,  psi' = -Phi_c(v),  psi'' = Phi_c'(v) / sigma,
    psi*(b) = b theta - sigma phi_c(Phi_c^{-1}(-b)),  b in -range(Phi_c).
Equivalently psi(a) = sigma G(v) with G(v) = Phi_c(v) v + phi_c(v), G' = Phi_c, G'' = Phi_c'.
The formulas below are the family members rewritten in forms that neither overflow nor
cancel; where a parameter is not called sigma (gamma of l_gamma, h of K_h) it travels in
the ``sigma`` slot.

Every Numba function of the losses lives in this one file on purpose: one file is one unit
of invalidation of numba's cache (an edit here recompiles the kernel modules that depend on
these functions, and no others: :mod:`streamssvm._jit_cache`).
"""

import math

from numba import njit

PSI_G = 0
PSI_M = 1
SQUARED_HINGE = 2
LOGISTIC = 3
HINGE = 4
SMOOTHED_HINGE = 5          # l_gamma of Shalev-Shwartz & Zhang, gamma in the sigma slot
SMOOTH_SQUARED_HINGE = 6    # Lee & Mangasarian's p(theta - a; sigma)^2
KH_HINGE = 7                # K_h of Wang et al., h in the sigma slot
LEAST_SQUARES = 8
EXPONENTIAL = 9
SMOOTH_ABSOLUTE = 10
SMOOTH_RELU = 11
FAMILY = 12                 # a tabulated G of a user's Phi_c: needs the params array

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_HALF_PI = 0.5 * math.pi
# Beyond |v| = 40 the normal pdf underflows to 0 and Phi(v) is 0 or 1 in double precision.
_GAUSS_TAIL = 40.0
_NAN3 = (math.nan, math.nan, math.nan)


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
    # v cdf + pdf cancels for v << 0 (to a tiny negative): psi_G >= 0 exactly (Theorem 1)
    return sigma * max(v * cdf + pdf, 0.0), -cdf, pdf / sigma


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
    if v == math.inf:  # tiny sigma: sigma * v would be inf * tiny
        return theta - a, -1.0, 0.0
    e = math.exp(-abs(v))
    if v > 0.0:
        value = sigma * (v + math.log1p(e))
        p = 1.0 / (1.0 + e)  # sigmoid(v)
    else:
        value = sigma * math.log1p(e)
        p = e / (1.0 + e)
    return value, -p, e / ((1.0 + e) * (1.0 + e)) / sigma



@njit(cache=True, nogil=True)
def _hinge(a, theta):
    t = theta - a
    if t > 0.0:
        return t, -1.0, 0.0  # a subgradient (-1 left of the kink, 0 at and right of it)
    return 0.0, 0.0, 0.0


@njit(cache=True, nogil=True)
def _smoothed_hinge(a, gamma, theta):
    # l_gamma: the family member with Phi_c the uniform CDF on [0, 1] (sigma = gamma)
    t = theta - a
    if t <= 0.0:
        return 0.0, 0.0, 0.0
    if t >= gamma:
        return t - 0.5 * gamma, -1.0, 0.0
    return 0.5 * t * (t / gamma), -(t / gamma), 1.0 / gamma


@njit(cache=True, nogil=True)
def _smooth_squared_hinge(a, sigma, theta):
    # p = sigma log(1 + e^v) (Lee & Mangasarian's smooth plus function of t = theta - a),
    # psi = p^2, psi' = -2 p s, psi'' = 2 (s^2 + (p / sigma) s (1 - s)), s = sigmoid(v)
    t = theta - a
    v = t / sigma
    e = math.exp(-abs(v))
    if v > 0.0:
        p = t + sigma * math.log1p(e)  # t, not sigma * v: v may overflow for tiny sigma
        s = 1.0 / (1.0 + e)
    else:
        p = sigma * math.log1p(e)
        s = e / (1.0 + e)
    q = e / ((1.0 + e) * (1.0 + e))  # s (1 - s)
    spread = (p / sigma) * q if q > 0.0 else 0.0  # inf * 0 when v overflows
    return p * p, -2.0 * p * s, 2.0 * (s * s + spread)


@njit(cache=True, nogil=True)
def _kh_hinge(a, h, theta):
    # K_h(a) = t H(t / h), H the integrated biweight kernel; neither convex nor monotone
    t = theta - a
    if t <= -h:
        return 0.0, 0.0, 0.0
    if t >= h:
        return t, -1.0, 0.0
    # factored at u = -1, where the expanded H and H + u H' cancel (to a wrong sign):
    # H = w^3 (8 - 9u + 3u^2) / 16, H + u H' = w^2 (4 + 7u - 18u^2 + 9u^3) / 8, w = 1 + u,
    # w and 1 - u from t +- h (exact by Sterbenz where they cancel), free of u's rounding
    inv = 1.0 / h
    if inv == math.inf:  # h subnormal: t = 0 or a few ulp, psi'' overflows
        return t * 0.5, -0.5, inv
    u = t * inv
    w = (t + h) * inv
    big_h = w * w * w * (8.0 + u * (3.0 * u - 9.0)) * 0.0625
    slope = -(w * w * (4.0 + u * (7.0 + u * (9.0 * u - 18.0))) * 0.125)
    return t * big_h, slope, 1.875 * w * ((h - t) * inv) * (1.0 - 3.0 * u * u) * inv


@njit(cache=True, nogil=True)
def _least_squares(a, theta):
    t = theta - a
    return 0.5 * t * t, -t, 1.0


@njit(cache=True, nogil=True)
def _exponential(a, sigma, theta):
    # sigma e^v; past v = 700 fold sigma into the exponent so that sigma e^v and e^v / sigma
    # stay finite whenever they are representable
    v = (theta - a) / sigma
    if v < 700.0:
        ev = math.exp(v)
        return sigma * ev, -ev, ev / sigma
    log_sigma = math.log(sigma)
    return math.exp(v + log_sigma), -math.exp(v), math.exp(v - log_sigma)


@njit(cache=True, nogil=True)
def _smooth_absolute(a, sigma, theta):
    # t arctan(v) - sigma log(1 + v^2) / 2; for |v| > 1e8 log(1 + v^2) / 2 = log|t| - log sigma
    t = theta - a
    v = t / sigma
    if abs(v) < 1e8:
        half_log = 0.5 * math.log1p(v * v)
    else:
        half_log = math.log(abs(t)) - math.log(sigma)
    r = math.hypot(t, sigma)
    return t * math.atan(v) - sigma * half_log, -math.atan(v), (sigma / r) / r


@njit(cache=True, nogil=True)
def _smooth_relu(a, sigma, theta):
    # sigma (u Phi(u) + phi(u)), u = (a - theta) / sigma: psi_G reflected (see registry)
    value, slope, curvature = _psi_g(-a, sigma, -theta)
    return value, -slope, curvature


# ---- the tabulated family: G(v) piecewise quintic on a grid uniform in T(v) ----------------
# T(v) = asinh(v) + clip(v, c_lo, c_hi) / c: relative spacing dx in the tails, at most c dx
# on [c_lo, c_hi] (1 / c = 0: uniform in asinh(v), a table without the cap)
# params layout (built by streamssvm.losses.family):
#   [0] layout tag (1), [1] n intervals, [2] T(v_lo), [3] 1 / dx,
#   [4] v_lo, [5] G(v_lo), [6] Phi(v_lo), [7] left tail exponent q (< 0: linear tail),
#   [8] v_hi, [9] G(v_hi), [10] Phi(v_hi), [11] c_lo, [12] c_hi, [13] 1 / c, [14..15] reserved,
#   then 8 numbers per interval k: v_k, h_k, c0..c5 with G(v_k + s h_k) = sum c_j s^j.
_HEADER = 16
_STRIDE = 8


@njit(cache=True, nogil=True)
def _family_g(v, params):
    """G(v), G'(v), G''(v) of the tabulated family (v may be +-inf)."""
    if v != v:
        return _NAN3
    v_lo = params[4]
    v_hi = params[8]
    if v <= v_lo:
        g0 = params[5]
        slope0 = params[6]
        q = params[7]
        if q < 0.0:
            return g0 + slope0 * (v - v_lo), slope0, 0.0
        # G = g0 (v_lo / v)^q: matches G and G' = Phi at v_lo; exact for power-law tails
        ratio = v_lo / v
        g = g0 * ratio ** q
        return g, q * g / abs(v), q * (q + 1.0) * g / (v * v)
    if v >= v_hi:
        slope1 = params[10]
        return params[9] + slope1 * (v - v_hi), slope1, 0.0
    n = int(params[1])
    k = int((math.asinh(v) + min(max(v, params[11]), params[12]) * params[13] - params[2])
            * params[3])
    k = min(max(k, 0), n - 1)
    base = _HEADER + _STRIDE * k
    if v < params[base] and k > 0:  # T's rounding near a node
        k -= 1
        base -= _STRIDE
    elif k < n - 1 and v >= params[base + _STRIDE]:
        k += 1
        base += _STRIDE
    h = params[base + 1]
    s = (v - params[base]) / h
    c0 = params[base + 2]
    c1 = params[base + 3]
    c2 = params[base + 4]
    c3 = params[base + 5]
    c4 = params[base + 6]
    c5 = params[base + 7]
    g = c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
    dg = c1 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5)))
    d2g = 2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * 20.0 * c5))
    # G'' of the quintic may dip ~1e-13 of its peak below 0 where Phi_c' is flat: the
    # kernels' D must stay >= 0
    return g, dg / h, max(d2g, 0.0) / (h * h)


@njit(cache=True, nogil=True)
def _family(a, sigma, theta, params):
    t = theta - a
    v = t / sigma
    g, dg, d2g = _family_g(v, params)
    if v >= params[8]:  # linear right tail in units of t: v may have overflowed
        return sigma * (params[9] - dg * params[8]) + dg * t, -dg, 0.0
    if v <= params[4] and params[7] < 0.0:
        return sigma * (params[5] - dg * params[4]) + dg * t, -dg, 0.0
    return sigma * g, -dg, d2g / sigma


@njit(cache=True, nogil=True)
def derivatives(code, a, sigma, theta):
    """psi(a), psi'(a), psi''(a) of the loss with this code (NaN for FAMILY: no table)."""
    if code == PSI_G:
        return _psi_g(a, sigma, theta)
    if code == PSI_M:
        return _psi_m(a, sigma, theta)
    if code == SQUARED_HINGE:
        return _squared_hinge(a, theta)
    if code == LOGISTIC:
        return _logistic(a, sigma, theta)
    if code == HINGE:
        return _hinge(a, theta)
    if code == SMOOTHED_HINGE:
        return _smoothed_hinge(a, sigma, theta)
    if code == SMOOTH_SQUARED_HINGE:
        return _smooth_squared_hinge(a, sigma, theta)
    if code == KH_HINGE:
        return _kh_hinge(a, sigma, theta)
    if code == LEAST_SQUARES:
        return _least_squares(a, theta)
    if code == EXPONENTIAL:
        return _exponential(a, sigma, theta)
    if code == SMOOTH_ABSOLUTE:
        return _smooth_absolute(a, sigma, theta)
    if code == SMOOTH_RELU:
        return _smooth_relu(a, sigma, theta)
    return _NAN3


@njit(cache=True, nogil=True, inline="always")
def derivatives_with_params(code, a, sigma, theta, params):
    """``derivatives`` for every code, FAMILY included (its table is ``params``).

    ``params`` is a 1-D float64 array; named losses ignore it (pass an empty one).
    Inlined into its callers (numba's ``inline="always"``), as ``conjugate_with_params``
    is: called as a function, it would take the array across a call at every margin, and
    numba's reference counting of an argument array (atomic operations that LLVM cannot
    remove) costs more than a named loss's arithmetic. Inlined, only FAMILY's own call
    takes the array.
    """
    if code == FAMILY:
        return _family(a, sigma, theta, params)
    return derivatives(code, a, sigma, theta)


# ---- the normal quantile (for the conjugates of psi_G and smooth ReLU) -----------------

@njit(cache=True, nogil=True)
def _ndtri_lower(p):
    # Acklam's rational approximation (relative error 1.2e-9), then one Halley step on
    # Phi(x) = p with the error measured relative to p, so that the tail keeps full precision
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        x = ((((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q
                 - 2.400758277161838e+00) * q - 2.549732539343734e+00) * q
               + 4.374664141464968e+00) * q + 2.938163982698783e+00)
             / ((((7.784695709041462e-03 * q + 3.224671290700398e-01) * q
                  + 2.445134137142996e+00) * q + 3.754408661907416e+00) * q + 1.0))
    else:
        q = p - 0.5
        r = q * q
        x = (((((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r
                  - 2.759285104469687e+02) * r + 1.383577518672690e+02) * r
                - 3.066479806614716e+01) * r + 2.506628277459239e+00) * q)
             / (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r
                   - 1.556989798598866e+02) * r + 6.680131188771972e+01) * r
                 - 1.328068155288572e+01) * r + 1.0))
    rel = 0.5 * math.erfc(-x / _SQRT2) / p - 1.0
    u = rel * math.exp(math.log(p) + 0.5 * x * x + _LOG_SQRT_2PI)  # (Phi(x) - p) / phi(x)
    return x - u / (1.0 + 0.5 * x * u)


@njit(cache=True, nogil=True)
def ndtri(p):
    """Phi^{-1}(p), the standard normal quantile (-inf at 0, +inf at 1, NaN outside)."""
    if not (p >= 0.0 and p <= 1.0):
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p <= 0.5:
        return _ndtri_lower(p)
    return -_ndtri_lower(1.0 - p)


@njit(cache=True, nogil=True)
def _normal_pdf(x):
    return _INV_SQRT_2PI * math.exp(-0.5 * x * x)


@njit(cache=True, nogil=True)
def _xlogx(x):
    return x * math.log(x) if x > 0.0 else 0.0


# ---- conjugates -------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _slope_inverse(code, b, sigma, theta):
    """The a with psi'(a) = b for a named convex loss: steps doubling away from theta until
    b is bracketed, then Newton safeguarded by bisection. +-inf when b is never reached."""
    lo = -math.inf
    hi = math.inf
    a = theta
    step = sigma
    for _ in range(4000):
        _, slope, curvature = derivatives(code, a, sigma, theta)
        f = slope - b
        if f == 0.0:
            return a
        if f < 0.0:
            lo = a
        else:
            hi = a
        if hi == math.inf or lo == -math.inf:  # not bracketed yet
            if step > 1e300:
                return hi if hi == math.inf else lo
            a = theta + step if hi == math.inf else theta - step
            step *= 2.0
            continue
        nxt = a - f / curvature if curvature > 0.0 else 0.5 * (lo + hi)
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        if nxt == a or hi - lo <= 2e-16 * max(abs(lo), abs(hi)):
            return nxt
        a = nxt
    return a


@njit(cache=True, nogil=True)
def bend_slope_inverse(code, b, sigma, theta):
    """The a with psi'(a) = b, -1 < b < 0, in closed form for the hinge's smoothings of
    width sigma: psi_G's psi' = -Phi((theta - a) / sigma), so a = theta - sigma
    Phi^{-1}(-b); psi_M's psi' = -(1 + t / hypot(t, sigma)) / 2 with t = theta - a, so
    t = sigma c / sqrt(1 - c^2), c = -2 b - 1. NaN for other codes."""
    if code == PSI_G:
        return theta - sigma * ndtri(-b)
    if code == PSI_M:
        c = -2.0 * b - 1.0
        return theta - sigma * (c / math.sqrt((1.0 - c) * (1.0 + c)))
    return math.nan


@njit(cache=True, nogil=True)
def _family_slope_inverse(target, params):
    """The u with G'(u) = Phi_c(u) = target on the table (as ``_slope_inverse``, in v)."""
    lo = -math.inf
    hi = math.inf
    u = 0.0
    step = 1.0
    for _ in range(4000):
        _, dg, d2g = _family_g(u, params)
        f = dg - target
        if f == 0.0:
            return u
        if f < 0.0:
            lo = u
        else:
            hi = u
        if hi == math.inf or lo == -math.inf:
            if step > 1e300:
                return hi if hi == math.inf else lo
            u = step if hi == math.inf else -step
            step *= 2.0
            continue
        nxt = u - f / d2g if d2g > 0.0 else 0.5 * (lo + hi)
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        if nxt == u or hi - lo <= 2e-16 * max(abs(lo), abs(hi)):
            return nxt
        u = nxt
    return u


@njit(cache=True, nogil=True)
def _conjugate(code, b, sigma, theta):
    """psi*(b) and the maximiser a* (= psi*'(b); +-inf at a domain end reached only in the
    limit) of a named loss. psi*(b) = +inf outside the domain; NaN without a conjugate."""
    if b != b:
        return math.nan, math.nan
    inf = math.inf
    if code == PSI_G or code == SMOOTH_RELU:
        # Phi(u*) = p with u* = (theta - a*) / sigma (psi_G) or (a* - theta) / sigma (sReLU);
        # the complement 1 - p is exact as 1 + b or 1 - b, so both tails keep full precision
        p = -b if code == PSI_G else b
        if not (0.0 <= p <= 1.0):
            return inf, math.nan
        if p <= 0.5:
            u = ndtri(p)
        else:
            u = -ndtri((1.0 + b) if code == PSI_G else (1.0 - b))
        value = b * theta - sigma * _normal_pdf(u)  # phi(+-inf) = 0 at the domain's ends
        return value, (theta - sigma * u) if code == PSI_G else (theta + sigma * u)
    if code == PSI_M:
        if not (-1.0 <= b <= 0.0):
            return inf, math.nan
        root = math.sqrt(-b * (1.0 + b))
        if root == 0.0:
            return b * theta, inf if b == 0.0 else -inf
        return b * theta - sigma * root, theta - sigma * (-2.0 * b - 1.0) / (2.0 * root)
    if code == SQUARED_HINGE:
        if b > 0.0:
            return inf, math.nan
        return b * theta + 0.25 * b * b, theta + 0.5 * b
    if code == LOGISTIC:
        if not (-1.0 <= b <= 0.0):
            return inf, math.nan
        if b == -1.0:
            return -theta, -inf
        # (1 + b) log1p(b), not log(1 + b): 1 + b rounds to 1 for |b| < 1e-16, losing the
        # term, about b (2.5% of the value at b = -1e-17); the two terms share their sign,
        # so the sum does not cancel
        value = b * theta + sigma * (_xlogx(-b) + (1.0 + b) * math.log1p(b))
        if b == 0.0:
            return value, inf
        return value, theta - sigma * (math.log(-b) - math.log1p(b))
    if code == HINGE:
        if not (-1.0 <= b <= 0.0):
            return inf, math.nan
        return b * theta, theta
    if code == SMOOTHED_HINGE:
        if not (-1.0 <= b <= 0.0):
            return inf, math.nan
        return b * theta + 0.5 * sigma * b * b, theta + sigma * b
    if code == LEAST_SQUARES:
        return b * theta + 0.5 * b * b, theta + b
    if code == EXPONENTIAL:
        if b > 0.0:
            return inf, math.nan
        if b == 0.0:
            return 0.0, inf
        return b * theta + sigma * b * (1.0 - math.log(-b)), theta - sigma * math.log(-b)
    if code == SMOOTH_ABSOLUTE:
        if not (abs(b) < _HALF_PI):
            return inf, math.nan
        # -log cos b = log1p(tan^2 b) / 2: cos b rounds to 1 for |b| < 1e-8, losing sigma b^2 / 2
        tan_b = math.tan(b)
        return b * theta + 0.5 * sigma * math.log1p(tan_b * tan_b), theta + sigma * tan_b
    if code == SMOOTH_SQUARED_HINGE:
        if b > 0.0:
            return inf, math.nan
        if b == 0.0:
            return 0.0, inf
        a = _slope_inverse(code, b, sigma, theta)
        return b * a - derivatives(code, a, sigma, theta)[0], a
    return math.nan, math.nan  # KH_HINGE (not convex), FAMILY (needs its table), unknown


@njit(cache=True, nogil=True)
def _family_conjugate(b, sigma, theta, params):
    # psi*(b) = b theta - sigma (G(u) + b u) with Phi(u) = G'(u) = -b; the domain of -b is
    # [Phi(v_lo), Phi(v_hi)], extended to (0, Phi(v_lo)] by a power-law left tail
    target = -b
    v_lo = params[4]
    phi_lo = params[6]
    q = params[7]
    phi_hi = params[10]
    inf = math.inf
    if target > phi_hi:
        return inf, math.nan
    if target == phi_hi:
        u = params[8]
        return b * theta - sigma * (params[9] + b * u), theta - sigma * u
    if target < phi_lo:
        if q > 0.0 and target >= 0.0:
            if target == 0.0:
                return b * theta, inf
            # Phi(u) = q g0 |v_lo|^q |u|^(-q-1) on the tail
            g0 = params[5]
            mag = (q * g0 * abs(v_lo) ** q / target) ** (1.0 / (q + 1.0))
            u = -mag
            g = g0 * (v_lo / u) ** q
            return b * theta - sigma * (g + b * u), theta - sigma * u
        return inf, math.nan
    if target == phi_lo:
        u = v_lo
        return b * theta - sigma * (params[5] + b * u), theta - sigma * u
    u = _family_slope_inverse(target, params)
    g = _family_g(u, params)[0]
    return b * theta - sigma * (g + b * u), theta - sigma * u


@njit(cache=True, nogil=True)
def conjugate(code, b, sigma, theta):
    """psi*(b) = sup_a (b a - psi(a)) of a named loss: +inf outside its domain, NaN when the
    loss has no conjugate formula (K_h: not convex) or needs a table (FAMILY)."""
    return _conjugate(code, b, sigma, theta)[0]


@njit(cache=True, nogil=True, inline="always")
def conjugate_with_params(code, b, sigma, theta, params):
    """psi*(b) and the maximiser a* = (psi*)'(b), for every code, FAMILY included."""
    if code == FAMILY:
        return _family_conjugate(b, sigma, theta, params)
    return _conjugate(code, b, sigma, theta)
