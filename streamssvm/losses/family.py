"""User-built members of the paper's general smooth convex loss (Theorem GCL).

A user gives Phi_c (and optionally phi_c and Phi_c'), theta and sigma; :func:`family_loss`
returns a :class:`~streamssvm.losses.Loss` with

    psi(a) = Phi_c(v) (theta - a) + phi_c(v) sigma = sigma G(v),   v = (theta - a) / sigma,
    G(v) = Phi_c(v) v + phi_c(v),   G'(v) = Phi_c(v),   G''(v) = Phi_c'(v),

the last two by the theorem's condition Phi_c'(v) v + phi_c'(v) = 0. Without phi_c, G is
the antiderivative of Phi_c: G(v) = G(v_0) + int_{v_0}^v Phi_c (equivalently
phi_c(v) = phi_c(0) - int_0^v t Phi_c'(t) dt), with the constant chosen so that psi -> 0 on
the flat side when the lower tail of Phi_c is integrable (as for every CDF: psi_G, psi_M,
logistic, l_gamma), else phi_c(0) = ``phi0`` (default 0).

Design: a table, not a compiled callback
----------------------------------------
The kernels select a loss by an integer code so that they stay cached on disk; a user's
function cannot be compiled into them (a jitted function passed as an argument, or a
generated module that the cached kernels call, defeats or silently stales numba's cache).
So the user's functions are called once, vectorised, at construction, and G is stored as a
C^2 piecewise-quintic Hermite interpolant (G, G' = Phi_c, G'' = Phi_c' matched at every node)
on nodes v_k = sinh(k dx), k = -M..M, which are uniform in asinh(v): spacing dx near 0,
relative spacing dx in the tails, |v| up to 1e16 with about 2 * 37.5 / dx nodes. Relative
spacing is too coarse for a fast-growing Phi_c (exp(v): 9.5 times psi near v = 690, psi''
20% off at v = 400): where the midpoint error exceeds 1e-13 the nodes are made uniform in
T(v) = asinh(v) + clip(v, c_lo, c_hi) / c instead, the spacing capped at c dx on the span
of the bad intervals, with at most 2^14 more nodes (exp(v): 22,117 nodes, error 1.9e-13).
The code ``FAMILY`` evaluates it in Numba (one asinh for the interval, a Horner step) from a
float64 parameter array; psi, psi' and psi'' are the exact derivatives of one interpolant, so line
searches and Newton steps see a consistent function. Beyond the nodes: linear on the right
(G'' = 0), and on the left a power law G = G(v_lo) (v_lo / v)^q that matches G and Phi_c
(exact for the power tails of psi_M-like Phi_c), or linear when G(v_lo) <= 0.

The kernels take that array: they call ``derivatives_with_params(code, a, sigma, theta,
params)`` and ``conjugate_with_params`` (``streamssvm/losses/_scalar.py``), so every solver
trains a family loss as it trains a named one.

Accuracy (default dx = 1/128: 9,611 nodes, a 615 KB table; only the few hundred intervals
with |v| < 1e3 are hot). Measured against the closed forms over v in [-40, 40] and
|v| up to 1e20, for sigma = 1, 2^-3, 2^-20: Phi_c = normal CDF given alone (phi_c and
Phi_c' derived) vs psi_G: |psi - psi_G| <= 8e-16 (sigma + |psi|), |psi' - psi_G'| <= 1.1e-13,
sigma |psi'' - psi_G''| <= 2.7e-11 (sup sigma psi'' = 0.40); Phi_M (cancellation-free form)
vs psi_M: 5.7e-14 and 4.4e-11; the sigmoid vs logistic: 5.4e-14 and 7e-12. With dx = 1/64
the three errors grow to 5e-14, 3.3e-12 and 4.3e-10. The tests assert 1e-14, 1e-12 and
1e-10. The table cannot be more accurate than the user's function: 0.5 (1 + v / sqrt(1 + v^2))
cancels for v << 0, and built from it psi carries that error (2.5e-9 relative). Phi_c' by a
two-level Richardson central difference (error ~5e-14; first step 1e-2 max(1, |v|), shrunk
with the capped spacing) when it is not given. Each table also measures its own error at the
interval midpoints (``Loss.info.max_value_error``, ``max_slope_error``); :func:`family_loss`
warns when it exceeds 1e-8. Evaluating a FAMILY loss takes one asinh, a clip and a table read
where psi_G takes erfc and exp.

The theorem's conditions are checked on the nodes at construction: Phi_c' >= 0 (item 2,
convexity), Phi_c'(v) v + phi_c'(v) = 0 when phi_c is given (in integrated form), and
Phi_c(theta / sigma) > 0 (item 5, calibration) when ``require_calibrated``; a violation
raises ValueError naming the condition and a v where it fails.
"""

import hashlib
from dataclasses import dataclass

import numpy as np

from .._warn import warn
from . import _scalar

_HEADER = _scalar._HEADER
_STRIDE = _scalar._STRIDE
# a table refines where its midpoint error exceeds _TARGET_ERROR, adding at most _EXTRA_NODES
# nodes; family_loss warns above _WARN_ERROR
_TARGET_ERROR = 1e-13
_EXTRA_NODES = 2 ** 14
_WARN_ERROR = 1e-8
# 8-point Gauss-Legendre rule on [0, 1]
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)
_GL_X = 0.5 * (_GL_X + 1.0)
_GL_W = 0.5 * _GL_W

_EXPRESSION_NAMES = {
    "pi": np.pi, "e": np.e, "inf": np.inf,
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt,
    "abs": np.abs, "sign": np.sign, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arctan": np.arctan, "atan": np.arctan, "arcsinh": np.arcsinh, "asinh": np.arcsinh,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "minimum": np.minimum,
    "maximum": np.maximum, "clip": np.clip, "where": np.where, "hypot": np.hypot,
}


def _special_names():
    from scipy import special
    return {"erf": special.erf, "erfc": special.erfc, "ndtr": special.ndtr,
            "norm_cdf": special.ndtr,
            "norm_pdf": lambda v: np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi),
            "expit": special.expit, "sigmoid": special.expit, "logaddexp": np.logaddexp}


def as_function(f, what):
    """A vectorised callable from a callable or an expression string in ``v``.

    Expressions may use numpy-style names (exp, log, sqrt, arctan, tanh, erf, erfc, ndtr,
    norm_pdf, expit, minimum, maximum, where, pi ...), e.g. ``"0.5 * (1 + v / sqrt(1 + v**2))"``.
    """
    if f is None:
        return None
    if callable(f):
        return f
    if isinstance(f, str):
        source = f.strip()
        try:
            code = compile(source, f"<{what}>", "eval")
        except SyntaxError as exc:
            raise ValueError(f"{what}: cannot parse expression {f!r}: {exc.msg}") from None
        names = dict(_EXPRESSION_NAMES)
        names.update(_special_names())
        unknown = set(code.co_names) - set(names) - {"v"}
        if unknown:
            raise ValueError(f"{what}: unknown name(s) {', '.join(sorted(unknown))} in {f!r}; "
                             f"known: v, {', '.join(sorted(names))}")

        def evaluate(v, _code=code, _names=names):
            return _code_eval(_code, _names, v)

        evaluate.__name__ = what
        evaluate.expression = source
        return evaluate
    raise TypeError(f"{what} must be a callable or an expression string, got {type(f).__name__}")


def _code_eval(code, names, v):
    scope = dict(names)
    scope["v"] = v
    return eval(code, {"__builtins__": {}}, scope)  # noqa: S307 - the user's own expression


def _call(f, v, what):
    with np.errstate(all="ignore"):
        out = f(v)
    out = np.asarray(out, dtype=np.float64)
    if out.shape != np.shape(v):
        out = np.broadcast_to(out, np.shape(v)).astype(np.float64)
    if out.shape != np.shape(v):
        raise ValueError(f"{what} returned shape {out.shape} for input of shape {np.shape(v)}")
    return out


def _richardson_derivative(f, v, what, shrink=1.0):
    """f'(v) by central differences with two Richardson steps (error ~1e-13 for smooth f),
    the first step 1e-2 max(1, |v|) times ``shrink`` (the nodes' spacing against asinh's)."""
    h = 1e-2 * np.maximum(1.0, np.abs(v)) * shrink

    def central(step):
        return (_call(f, v + step, what) - _call(f, v - step, what)) / (2.0 * step)

    with np.errstate(all="ignore"):  # inf - inf where f overflows: outside the finite window
        d1, d2, d4 = central(h), central(h / 2), central(h / 4)
        r1 = (4.0 * d2 - d1) / 3.0
        r2 = (4.0 * d4 - d2) / 3.0
        return (16.0 * r2 - r1) / 15.0


def _quintic_coefficients(v, g, dg, d2g):
    """Per interval: (h, c0..c5) of the quintic Hermite in s = (v - v_k) / h."""
    h = np.diff(v)
    f0, f1 = g[:-1], g[1:]
    d0, d1 = h * dg[:-1], h * dg[1:]
    s0, s1 = h * h * d2g[:-1], h * h * d2g[1:]
    big_a = f1 - f0 - d0 - 0.5 * s0
    big_b = d1 - d0 - s0
    big_c = s1 - s0
    c3 = 10.0 * big_a - 4.0 * big_b + 0.5 * big_c
    c4 = -15.0 * big_a + 7.0 * big_b - big_c
    c5 = 6.0 * big_a - 3.0 * big_b + 0.5 * big_c
    return h, np.stack([f0, d0, 0.5 * s0, c3, c4, c5], axis=1)


def _antiderivative(integrals, start):
    """Node values of G - G(v_start) from the integrals over the intervals, summed outwards
    from node ``start`` (so that values near it do not cancel against far-away sums)."""
    g = np.zeros(integrals.size + 1)
    g[start + 1:] = np.cumsum(integrals[start:])
    g[:start] = -np.cumsum(integrals[:start][::-1])[::-1]
    return g


def _finite_window(ok, centre):
    """Largest run of True around index ``centre``."""
    if not ok[centre]:
        return None
    lo = centre
    while lo > 0 and ok[lo - 1]:
        lo -= 1
    hi = centre
    while hi < ok.size - 1 and ok[hi + 1]:
        hi += 1
    return lo, hi


@dataclass(frozen=True)
class FamilyInfo:
    """What was built: the user's functions and the table's measured properties."""

    description: str
    lipschitz: float          # sup psi'' = max Phi_c' / sigma over the nodes
    classification: bool      # Phi_c >= 0 everywhere (psi' <= 0)
    phi_range: tuple          # (inf, sup) of Phi_c over the table and its tails
    v_range: tuple            # (v_lo, v_hi) of the nodes
    n_nodes: int
    max_value_error: float    # max |G_table - G| / (1 + |G|) at the interval midpoints
    max_slope_error: float    # max |Phi_table - Phi_c| at interval midpoints (psi' error)


def _describe(f):
    expression = getattr(f, "expression", None)
    if expression is not None:
        return expression
    return getattr(f, "__qualname__", None) or repr(f)


def build_table(Phi_c, phi_c=None, dPhi_c=None, phi0=None, dx=1.0 / 128, v_max=1e16):
    """The float64 parameter array of a family member and its :class:`FamilyInfo`.

    The nodes are uniform in asinh(v) first. Where that table's error at the interval
    midpoints exceeds ``_TARGET_ERROR`` (a fast-growing Phi_c: for exp(v) the error is 7.1
    near v = 690, where the spacing v dx is 5.4), it is built again with the spacing capped
    on the span of those intervals (see ``_nodes``), by the quintic's h^6 error law, at
    most ``_EXTRA_NODES`` more nodes; the refined table is kept if it halves the error (it
    does not where the error is the user's function's own rounding, as
    0.5 (1 + v / sqrt(1 + v^2)) for v << 0).

    Parameters
    ----------
    Phi_c, phi_c, dPhi_c : callable or str
        Vectorised functions of v (or expressions in ``v``); phi_c and dPhi_c = Phi_c'
        are derived when None.
    phi0 : float, optional
        phi_c(0) when phi_c is derived; default: psi -> 0 on the flat side if Phi_c has an
        integrable lower tail, else 0.
    dx : float
        Node spacing in asinh(v).
    v_max : float
        Largest |v| of the nodes (where the user's functions are finite).

    Returns
    -------
    params : array of shape (16 + 8 * n_intervals,)
    info : FamilyInfo
    """
    Phi = as_function(Phi_c, "Phi_c")
    phi = as_function(phi_c, "phi_c")
    dPhi = as_function(dPhi_c, "dPhi_c")
    if Phi is None:
        raise ValueError("Phi_c is required")
    if not (0 < dx <= 0.25):
        raise ValueError(f"dx must be in (0, 0.25], got {dx}")
    params, info, errors, v = _table(Phi, phi, dPhi, phi0, dx, _nodes(dx, v_max, 0.0, 0.0, 0.0))
    bad = np.flatnonzero(errors > _TARGET_ERROR)
    if bad.size:  # the cap spans one interval more each side: the window may grow
        h = np.diff(v)
        cap_lo = min(0.0, float(v[bad[0]] - h[bad[0]]))
        cap_hi = max(0.0, float(v[bad[-1] + 1] + h[bad[-1]]))
        spacing = max(float(np.min(h[bad] * (_TARGET_ERROR / errors[bad]) ** (1.0 / 6.0))),
                      (cap_hi - cap_lo) / _EXTRA_NODES)
        try:
            refined = _table(Phi, phi, dPhi, phi0, dx,
                             _nodes(dx, v_max, cap_lo, cap_hi, dx / spacing))
        except ValueError:  # a kink of Phi_c, which the derived Phi_c' straddles
            refined = None
        if refined is not None and refined[1].max_value_error < 0.5 * info.max_value_error:
            params, info = refined[:2]
    return params, info


def _nodes(dx, v_max, cap_lo, cap_hi, inv_c):
    """The nodes v_k with T(v_k) = k dx, T(v) = asinh(v) + clip(v, cap_lo, cap_hi) inv_c
    (spacing at most dx / inv_c on [cap_lo, cap_hi]), |v_k| <= v_max about: (v, the index
    of v = 0, the caps for the layout, T, each node's spacing against asinh's alone)."""
    def transform(x):
        return np.arcsinh(x) + np.clip(x, cap_lo, cap_hi) * inv_c

    k = np.arange(int(np.floor(transform(-v_max) / dx)), int(np.ceil(transform(v_max) / dx)) + 1)
    if inv_c == 0.0:
        v = np.sinh(k * dx)
    else:  # T is increasing: bisect in u = asinh(v), bounded
        target = k * dx
        lo = np.full(k.size, np.arcsinh(-v_max) - 1.0)
        hi = -lo
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            below = transform(np.sinh(mid)) < target
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        v = np.sinh(0.5 * (lo + hi))
    centre = int(np.flatnonzero(k == 0)[0])
    v[centre] = 0.0
    inside = (cap_lo < v) & (v < cap_hi)
    shrink = 1.0 / (1.0 + inv_c * np.sqrt(1.0 + v * v) * inside)
    return v, centre, (cap_lo, cap_hi, inv_c), transform, shrink


def _table(Phi, phi, dPhi, phi0, dx, nodes):
    """params, info, the value error of each interval and the nodes, on these nodes."""
    v, m, caps, transform, shrink = nodes
    big_phi = _call(Phi, v, "Phi_c")
    d_phi = (_call(dPhi, v, "dPhi_c") if dPhi is not None
             else _richardson_derivative(Phi, v, "Phi_c", shrink))
    small_phi = _call(phi, v, "phi_c") if phi is not None else None
    ok = np.isfinite(big_phi) & np.isfinite(d_phi)
    if small_phi is not None:
        ok &= np.isfinite(small_phi)
    window = _finite_window(ok, m)
    if window is None:
        raise ValueError("Phi_c (or phi_c, Phi_c') is not finite at v = 0")
    lo, hi = window
    if hi - lo < 8:
        raise ValueError(f"Phi_c is finite only on [{v[lo]:.3g}, {v[hi]:.3g}]: too narrow a range")
    v, big_phi, d_phi = v[lo:hi + 1], big_phi[lo:hi + 1], d_phi[lo:hi + 1]
    centre = m - lo
    if small_phi is not None:
        small_phi = small_phi[lo:hi + 1]

    # Theorem GCL: Phi_c' >= 0 (checked on Phi_c' and on the increments of Phi_c)
    scale = max(float(np.max(np.abs(d_phi))), 1e-300)
    bad = np.flatnonzero(d_phi < -1e-8 * scale)
    steps = np.diff(big_phi)
    bad_steps = np.flatnonzero(steps < -1e-12 * np.maximum(1.0, np.abs(big_phi[1:])))
    if bad.size or bad_steps.size:
        k = bad[0] if bad.size else bad_steps[0]
        raise ValueError(f"Theorem GCL condition Phi_c'(v) >= 0 fails near v = {v[k]:.6g} "
                         f"(Phi_c'(v) = {d_phi[k]:.3g}): psi would not be convex")
    d_phi = np.maximum(d_phi, 0.0)  # rounding noise of a derived Phi_c' in the flat tails

    # integrals of Phi_c over each interval, and to each interval's midpoint
    h = np.diff(v)
    quad_v = v[:-1, None] + h[:, None] * _GL_X[None, :]
    integrals = h * (_call(Phi, quad_v, "Phi_c") @ _GL_W)
    g_int = _antiderivative(integrals, centre)  # G(v) - G(0) by quadrature
    if small_phi is not None:
        g = big_phi * v + small_phi
        g_rel = g - g[centre]
        tol = 1e-7 * (1.0 + np.abs(g_rel) + np.abs(v) * np.abs(big_phi))
        bad = np.flatnonzero(np.abs(g_rel - g_int) > tol)
        if bad.size:
            k = bad[np.argmin(np.abs(v[bad]))]
            dphi_fd = _richardson_derivative(phi, v[k:k + 1], "phi_c")[0]
            raise ValueError(
                "Theorem GCL condition Phi_c'(v) v + phi_c'(v) = 0 fails near "
                f"v = {v[k]:.6g}: phi_c'(v) = {dphi_fd:.6g} but -v Phi_c'(v) = "
                f"{-v[k] * d_phi[k]:.6g}")
    else:
        if phi0 is None:
            # psi -> 0 on the flat side: G(-inf) = 0 when the lower tail of Phi_c is integrable
            left_tail = _integrable_left_tail(v[0], big_phi[0], Phi)
            if left_tail is not None:  # summed from the left: the tail keeps its precision
                g = _antiderivative(integrals, 0) + left_tail
            else:
                g = g_int
        else:
            g = g_int + float(phi0)

    # the left tail model: G = g0 (v_lo / v)^q when g0 > 0 and Phi_c(v_lo) >= 0
    g0, phi_lo = float(g[0]), float(big_phi[0])
    q = phi_lo * abs(v[0]) / g0 if (g0 > 0.0 and phi_lo >= 0.0 and v[0] < 0.0) else -1.0
    h, coefficients = _quintic_coefficients(v, g, big_phi, d_phi)
    n = h.size
    params = np.zeros(_HEADER + _STRIDE * n)
    params[0] = 1.0
    params[1] = n
    params[2] = transform(v[0])
    params[3] = 1.0 / dx
    params[11:14] = caps
    params[4:8] = v[0], g0, phi_lo, q
    params[8:11] = v[-1], g[-1], big_phi[-1]
    body = params[_HEADER:].reshape(n, _STRIDE)
    body[:, 0] = v[:-1]
    body[:, 1] = h
    body[:, 2:] = coefficients

    # measured error at the interval midpoints
    mid = v[:-1] + 0.5 * h
    exact_slope = _call(Phi, mid, "Phi_c")
    exact_value = g[:-1] + 0.5 * h * (_call(Phi, v[:-1, None] + 0.5 * h[:, None] * _GL_X[None, :],
                                            "Phi_c") @ _GL_W)
    from .registry import _evaluate_with_params

    table = np.empty((3, mid.size))
    _evaluate_with_params(_scalar.FAMILY, -mid, 1.0, 0.0, params, table)  # sigma 1, theta 0: v = -a
    errors = np.abs(table[0] - exact_value) / (1.0 + np.abs(exact_value))
    slope_error = float(np.max(np.abs(-table[1] - exact_slope)))

    phi_low = 0.0 if q > 0.0 else phi_lo
    info = FamilyInfo(
        description=(f"Phi_c={_describe(Phi)}"
                     + (f", phi_c={_describe(phi)}" if phi is not None else "")
                     + (f", dPhi_c={_describe(dPhi)}" if dPhi is not None else "")),
        lipschitz=float(np.max(d_phi)),
        classification=bool(np.min(big_phi) >= 0.0),
        phi_range=(phi_low, float(big_phi[-1])),
        v_range=(float(v[0]), float(v[-1])),
        n_nodes=int(v.size),
        max_value_error=float(np.max(errors)),
        max_slope_error=slope_error,
    )
    return params, info, errors, v


def _integrable_left_tail(v_lo, phi_lo, Phi):
    """int_{-inf}^{v_lo} Phi_c for a power-law or faster tail, None when not integrable."""
    if phi_lo == 0.0:
        return 0.0
    if phi_lo < 0.0:
        return None
    phi_far = float(_call(Phi, np.array([2.0 * v_lo]), "Phi_c")[0])
    if not (np.isfinite(phi_far) and 0.0 <= phi_far < phi_lo):
        return None
    if phi_far == 0.0:
        return 0.0
    p = np.log(phi_lo / phi_far) / np.log(2.0)  # Phi_c ~ |v|^-p
    if p <= 1.0 + 1e-3:
        return None
    return phi_lo * abs(v_lo) / (p - 1.0)


def family_loss(Phi_c, phi_c=None, *, dPhi_c=None, sigma=1.0, theta=1.0, name="family",
                phi0=None, require_calibrated=False, dx=1.0 / 128):
    """A loss of the general family psi(a) = Phi_c(v)(theta - a) + phi_c(v) sigma.

    Parameters
    ----------
    Phi_c : callable or str
        Nondecreasing, differentiable; a vectorised function of v or an expression in ``v``
        (``"ndtr(v)"``, ``"0.5 * (1 + v / sqrt(1 + v**2))"``). Phi_c = -psi'.
    phi_c : callable or str, optional
        With Phi_c'(v) v + phi_c'(v) = 0 (checked); derived from Phi_c when None.
    dPhi_c : callable or str, optional
        Phi_c' (default: a Richardson central difference of Phi_c).
    sigma, theta : float
        Width (> 0) and kink location.
    name : str
        Shown in listings and saved with models.
    phi0 : float, optional
        phi_c(0) when phi_c is derived (see :func:`build_table`).
    require_calibrated : bool
        Raise unless Phi_c(theta / sigma) > 0 (Theorem GCL item 5).
    dx : float
        Node spacing in asinh(v) of the table.

    Returns
    -------
    Loss
        Code ``FAMILY``; ``loss.params`` is the table, ``loss.info`` a :class:`FamilyInfo`.

    Warns
    -----
    RuntimeWarning
        When the table's measured error (``loss.info.max_value_error``, relative) exceeds
        1e-8 after refinement (see :func:`build_table`): a kink of Phi_c (a clip or a step),
        a Phi_c that cancels in floating point, or one that grows too fast for the nodes.

    Examples
    --------
    >>> from scipy.special import ndtr
    >>> loss = family_loss(ndtr, sigma=0.125)           # psi_G, to ~1e-13
    >>> loss = family_loss("0.5 * (1 + v / sqrt(1 + v**2))", sigma=0.125)   # psi_M
    """
    from .registry import Loss

    sigma, theta = float(sigma), float(theta)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive finite number, got {sigma}")
    if not np.isfinite(theta):
        raise ValueError(f"theta must be finite, got {theta}")
    params, info = build_table(Phi_c, phi_c, dPhi_c, phi0=phi0, dx=dx)
    if info.max_value_error > _WARN_ERROR:
        warn(f"family_loss: the table of {info.description} is accurate only to "
             f"{info.max_value_error:.2g} (relative, info.max_value_error): Phi_c "
             "may have a kink, cancel in floating point or grow too fast for the "
             "table's nodes", RuntimeWarning)
    if require_calibrated:
        value = float(_call(as_function(Phi_c, "Phi_c"), np.array([theta / sigma]), "Phi_c")[0])
        if not value > 0.0:
            raise ValueError(f"Theorem GCL condition Phi_c(theta/sigma) > 0 (calibration) fails: "
                             f"Phi_c({theta / sigma:.6g}) = {value:.6g}")
    digest = hashlib.sha1(params.tobytes()).hexdigest()[:16]
    return Loss(name, _scalar.FAMILY, sigma, theta, True, params=params, digest=digest, info=info)
