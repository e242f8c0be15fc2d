"""Losses as user-facing objects: a name, a Numba code and its parameters.

Named losses (``get_loss(name, ...)``; a string ``"name:key=value,..."`` works too):

=====================  ======================  =====================================================
name                   parameters (defaults)   psi(a), t = theta - a
=====================  ======================  =====================================================
psi_g                  sigma=2^-3, theta=1     sigma (v Phi(v) + phi(v)), v = t / sigma (Example 2)
psi_m                  sigma=2^-3, theta=1     (t + sqrt(t^2 + sigma^2)) / 2 (Example 3)
squared_hinge          theta=1                 max(0, t)^2
logistic               theta=0                 log(1 + e^(theta - a)) (Example 5, sigma = 1)
smooth_plus            sigma=2^-3, theta=1     sigma log(1 + e^v): Example 5 for any sigma; Lee &
                                               Mangasarian's smooth plus function p(t; sigma)
hinge                  theta=1                 max(0, t); subgradient, psi'' = 0 (SGD / Pegasos)
smoothed_hinge         gamma=1, theta=1        l_gamma (Shalev-Shwartz & Zhang): t^2 / (2 gamma) on
                                               (0, gamma), t - gamma / 2 beyond
smooth_squared_hinge   sigma=2^-3, theta=1     p(t)^2, p(t) = sigma log(1 + e^(t / sigma)) (Lee &
                                               Mangasarian's SSVM)
kh_hinge               h=2^-3, theta=1         t H(t / h) (Wang et al.), H the integrated biweight
least_squares          theta=1                 t^2 / 2 (Example 1)
exponential            sigma=1, theta=0        sigma e^v (Example 4)
smooth_absolute        sigma=2^-3, theta=1     t arctan(v) - sigma log(1 + v^2) / 2 (Example 6)
smooth_relu            sigma=2^-3, theta=0     sigma (u Phi(u) + phi(u)), u = (a - theta) / sigma
=====================  ======================  =====================================================

Notes on the paper (Luo, Qiao & Zhang, "Learning with smooth hinge losses"):

- Conjugates: Theorem GCL item 6 states psi*(b) = b theta - sigma phi_c(Phi_c^{-1}(-b)); the
  proof's last line and Examples 1-6 drop the factor sigma. The forms here keep it (they
  agree with the examples at sigma = 1): psi_G b theta - sigma phi(Phi^{-1}(-b)), psi_M
  b theta - sigma sqrt(-b (1 + b)), logistic b theta + sigma ((-b) log(-b) + (1 + b)
  log(1 + b)), exponential b theta + sigma b (1 - log(-b)), smooth absolute
  b theta - sigma log(cos b). Example 1's b theta + b^2 / (2 sigma) is b theta + b^2 / 2:
  its psi = t^2 / 2 has no sigma. The others: hinge b theta, squared hinge
  b theta + b^2 / 4, l_gamma b theta + gamma b^2 / 2 (all on their domains, +inf outside);
  smooth_squared_hinge by a safeguarded Newton on psi'(a) = b.
- Smooth ReLU (Example 7) is psi_sReLU(a) = Phi(a / sigma) a + phi(a / sigma) sigma, the
  smoothed max(0, a - theta). It is the family member with Phi_c(v) = Phi(v) - 1,
  phi_c = phi (so psi' = 1 - Phi(v) >= 0), and equals psi_G(-a) with theta = 0 as the paper
  says. It is kept as the paper defines it, a function of a: an increasing loss, not a
  classification loss (the smoothed perceptron loss max(0, -a) is psi_g with theta = 0).
- The paper prints Lee & Mangasarian's loss as (1 - a) + sigma ln(1 + e^{-(1 - a)/sigma}):
  that is their smooth plus function p(1 - a), the Example 5 member with theta = 1 and any
  sigma: ``smooth_plus`` (``logistic`` is the member with sigma = 1, as the paper has it, and
  refuses a sigma so that a smooth hinge's sigma is not applied to it by mistake).
  Their SSVM squares it, approximating the squared hinge: that is ``smooth_squared_hinge``.
- K_h = t H(t / h) as printed is neither convex nor monotone: psi'' = 15 (1 - u^2)(1 - 3 u^2)
  / (8 h) < 0 for 1/3 < u^2 < 1, psi' reaches +0.174 and psi reaches -0.0706 h (u = t / h).
  It is listed as not convex, not a classification loss (psi' <= 0 fails) and without a
  conjugate; its Lipschitz constant is sup |psi''| = 15 / (8 h).
- l_gamma is the family member with Phi_c the uniform CDF on [0, 1] (sigma = gamma); psi_M's
  Phi_M is the CDF of a Student t with 2 degrees of freedom at sqrt(2) v.
"""

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .._names import named
from . import _scalar

_NO_PARAMS = np.empty(0)  # the params array of every named loss


# sup psi'' of Lee & Mangasarian's squared smooth plus function, the same for every sigma:
# 2 max_v [s^2 + log(1 + e^v) s (1 - s)], s = 1 / (1 + e^-v) (attained at v = 3.0977)
SMOOTH_SQUARED_HINGE_LIPSCHITZ = 2.0906667833389494
_INF = math.inf
_WIDTHS = ("sigma", "gamma", "h")
# what a Lipschitz formula may name besides the loss's width
_FORMULA_NAMES = {"sqrt": math.sqrt, "pi": math.pi, "inf": _INF,
                  "L_ssh": SMOOTH_SQUARED_HINGE_LIPSCHITZ}


@dataclass(frozen=True)
class LossRecord:
    """Everything the package knows of a named loss, each property stated once.

    Parameters
    ----------
    name : str
    code : int
        The kernels' code of its scalar functions (:mod:`._scalar`: ``derivatives`` and
        ``conjugate`` branch on it, so that every kernel stays cacheable by numba).
    params : tuple of (str, float)
        Its parameters and their defaults: the width first (sigma, gamma or h) if it has
        one, theta last.
    smooth : bool
        psi is twice continuously differentiable (else only a generalized Hessian exists).
    convex : bool
    classification : bool
        psi' <= 0 everywhere: for a convex loss, exactly when its conjugate's domain lies in
        b <= 0.
    lipschitz : str
        sup |psi''|, the Lipschitz constant of psi', as an expression of the width (by its
        name), of ``sqrt``, ``pi``, ``inf`` and ``L_ssh``: evaluated by :meth:`lipschitz_of`,
        printed by ``describe``.
    domain : tuple or None
        (lo, hi, lo_closed, hi_closed): where psi* is finite; None without a conjugate,
        exactly when the loss is not convex.
    theta_positive : bool
        theta > 0 is required (Phi_c(theta / sigma) > 0: calibration).
    summary : str

    A record whose properties contradict one another is refused with a ValueError.
    """

    name: str
    code: int
    params: tuple
    smooth: bool
    convex: bool
    classification: bool
    lipschitz: str
    domain: tuple
    theta_positive: bool
    summary: str

    def __post_init__(self):
        refuse = f"loss record {self.name!r}:"
        if not (isinstance(self.code, int) and 0 <= self.code < _scalar.FAMILY):
            raise ValueError(f"{refuse} code {self.code!r} is not one of the kernels' codes "
                             f"0..{_scalar.FAMILY - 1}")
        keys = [key for key, _ in self.params]
        if not keys or keys[-1] != "theta" or len(keys) > 2 or (
                len(keys) == 2 and keys[0] not in _WIDTHS):
            raise ValueError(f"{refuse} params must be (width, theta) or (theta,), the width "
                             f"one of {', '.join(_WIDTHS)}; got {keys}")
        if self.convex != (self.domain is not None):
            raise ValueError(f"{refuse} a convex loss has a conjugate and a loss that is not "
                             f"convex has none (SDCA's dual): convex={self.convex}, "
                             f"domain={self.domain}")
        if self.convex and self.classification != (self.domain[1] <= 0.0):
            raise ValueError(f"{refuse} classification={self.classification}, but its "
                             f"conjugate's domain ends at {self.domain[1]}: a convex loss has "
                             f"psi' <= 0 everywhere exactly when that end is <= 0")
        try:
            formula = compile(self.lipschitz, f"<lipschitz of {self.name}>", "eval")
        except SyntaxError:
            raise ValueError(f"{refuse} lipschitz {self.lipschitz!r} is not an "
                             f"expression") from None
        unknown = set(formula.co_names) - set(_FORMULA_NAMES) - {self.width_key}
        if unknown:
            raise ValueError(f"{refuse} lipschitz {self.lipschitz!r} names "
                             f"{', '.join(sorted(unknown))}: only its width "
                             f"({self.width_key or 'none'}) and {', '.join(_FORMULA_NAMES)}")
        object.__setattr__(self, "_formula", formula)
        value = self.lipschitz_of(dict(self.params).get(self.width_key, 1.0))
        if not value > 0:
            raise ValueError(f"{refuse} lipschitz {self.lipschitz!r} is {value} at the "
                             f"default width: sup |psi''| of a loss is > 0")

    @property
    def width_key(self):
        """The name of its width (sigma, gamma, h), or None."""
        return next((key for key, _ in self.params if key in _WIDTHS), None)

    def lipschitz_of(self, width):
        """sup |psi''| at the width ``width``."""
        names = dict(_FORMULA_NAMES)
        if self.width_key:
            names[self.width_key] = width
        return float(eval(self._formula, {"__builtins__": {}}, names))


_RECORDS = {}


def register_loss(record):
    """Add a named loss (a :class:`LossRecord`); refused if the name is taken."""
    if not isinstance(record, LossRecord):
        raise TypeError(f"register_loss takes a LossRecord, got {type(record).__name__}")
    if record.name in _RECORDS:
        raise ValueError(f"a loss named {record.name!r} is already registered")
    _RECORDS[record.name] = record
    return record


for _record in (
    LossRecord("psi_g", _scalar.PSI_G, (("sigma", 2.0 ** -3), ("theta", 1.0)), True, True, True,
               "1/(sigma*sqrt(2*pi))", (-1.0, 0.0, True, True), False,
               "Gaussian smooth hinge (paper, Example 2)"),
    LossRecord("psi_m", _scalar.PSI_M, (("sigma", 2.0 ** -3), ("theta", 1.0)), True, True, True,
               "1/(2*sigma)", (-1.0, 0.0, True, True), False,
               "smooth hinge (t + sqrt(t^2 + sigma^2))/2 (paper, Example 3)"),
    LossRecord("squared_hinge", _scalar.SQUARED_HINGE, (("theta", 1.0),), False, True, True,
               "2", (-_INF, 0.0, False, True), False,
               "max(0, theta - a)^2 (L2-SVM; generalized Hessian)"),
    LossRecord("logistic", _scalar.LOGISTIC, (("theta", 0.0),), True, True, True,
               "1/4", (-1.0, 0.0, True, True), False,
               "log(1 + exp(theta - a)) (paper, Example 5 with sigma = 1)"),
    LossRecord("hinge", _scalar.HINGE, (("theta", 1.0),), False, True, True,
               "inf", (-1.0, 0.0, True, True), False,
               "max(0, theta - a), subgradient, psi''=0 (SGD/Pegasos)"),
    LossRecord("smoothed_hinge", _scalar.SMOOTHED_HINGE, (("gamma", 1.0), ("theta", 1.0)),
               False, True, True, "1/gamma", (-1.0, 0.0, True, True), False,
               "l_gamma of Shalev-Shwartz & Zhang (SDCA, SIFS)"),
    LossRecord("smooth_plus", _scalar.LOGISTIC, (("sigma", 2.0 ** -3), ("theta", 1.0)), True,
               True, True, "1/(4*sigma)", (-1.0, 0.0, True, True), False,
               "sigma log(1 + exp((theta - a)/sigma)): Example 5, Lee & Mangasarian's p"),
    LossRecord("smooth_squared_hinge", _scalar.SMOOTH_SQUARED_HINGE,
               (("sigma", 2.0 ** -3), ("theta", 1.0)), True, True, True, "L_ssh",
               (-_INF, 0.0, False, True), False,
               "(sigma log(1 + exp((theta - a)/sigma)))^2 (Lee & Mangasarian)"),
    LossRecord("kh_hinge", _scalar.KH_HINGE, (("h", 2.0 ** -3), ("theta", 1.0)), True, False,
               False, "15/(8*h)", None, False,
               "K_h of Wang et al.: (theta - a) H((theta - a)/h); not convex"),
    LossRecord("least_squares", _scalar.LEAST_SQUARES, (("theta", 1.0),), True, True, False,
               "1", (-_INF, _INF, False, False), True, "(theta - a)^2 / 2 (paper, Example 1)"),
    LossRecord("exponential", _scalar.EXPONENTIAL, (("sigma", 1.0), ("theta", 0.0)), True, True,
               True, "inf", (-_INF, 0.0, False, True), False,
               "sigma exp((theta - a)/sigma) (paper, Example 4)"),
    LossRecord("smooth_absolute", _scalar.SMOOTH_ABSOLUTE, (("sigma", 2.0 ** -3), ("theta", 1.0)),
               True, True, False, "1/sigma", (-math.pi / 2, math.pi / 2, False, False), True,
               "-> (pi/2)|theta - a| as sigma -> 0 (paper, Example 6)"),
    LossRecord("smooth_relu", _scalar.SMOOTH_RELU, (("sigma", 2.0 ** -3), ("theta", 0.0)), True,
               True, False, "1/(sigma*sqrt(2*pi))", (0.0, 1.0, True, True), False,
               "smooth max(0, a - theta) (paper, Example 7); increasing"),
):
    register_loss(_record)
if {r.code for r in _RECORDS.values()} != set(range(_scalar.FAMILY)):  # the family's is built
    raise RuntimeError("a code of the kernels' loss dispatch (losses._scalar) has no record")
LOSS_NAMES = tuple(_RECORDS)
_ALIASES = {"l_gamma": "smoothed_hinge", "k_h": "kh_hinge", "srelu": "smooth_relu",
            "least_square": "least_squares", "square_hinge": "squared_hinge"}


@dataclass(frozen=True)
class Loss:
    """A loss of the margin, psi(a), usable by every solver.

    Attributes
    ----------
    name : str
    code : int
        Selects the formula inside the Numba kernels.
    sigma : float
        Smoothing width (gamma of ``smoothed_hinge``, h of ``kh_hinge``; 1 for losses
        without one).
    theta : float
        Location of the kink being smoothed (1 for hinge-like losses).
    smooth : bool
        Twice differentiable (False: only a generalized Hessian exists).
    params : array of float64
        What the kernels pass as ``params`` to ``derivatives_with_params``: the table of a
        family loss, empty for the named ones.
    digest : str
        Identifies a family loss's table (two family losses are equal when their tables are).
    info : FamilyInfo or None
        What :func:`~streamssvm.losses.family_loss` built.
    """

    name: str
    code: int
    sigma: float = 1.0
    theta: float = 1.0
    smooth: bool = True
    params: np.ndarray = field(default_factory=lambda: _NO_PARAMS, compare=False, repr=False)
    digest: str = field(default="", repr=False)
    info: object = field(default=None, compare=False, repr=False)

    @property
    def _spec(self):
        return _RECORDS.get(self.name) if self.code != _scalar.FAMILY else None

    @property
    def is_family(self):
        """Built from a user's Phi_c (code FAMILY, evaluated from the ``params`` table)."""
        return self.code == _scalar.FAMILY

    @property
    def parameters(self):
        """The loss's parameters under their own names, e.g. ``{"gamma": 1.0, "theta": 1.0}``."""
        spec = self._spec
        if spec is None:
            return {"sigma": self.sigma, "theta": self.theta}
        out = {}
        for key, _ in spec.params:
            out[key] = self.theta if key == "theta" else self.sigma
        return out

    @property
    def spec(self):
        """``"name:key=value,..."``: a string that :func:`get_loss` turns back into this loss
        (named losses only: a ValueError for a family loss, whose Phi_c is code)."""
        if self.is_family:
            raise ValueError(f"the family loss {self.name!r} has no spec: its Phi_c is code, "
                             f"not a name")
        return self.name + ":" + ",".join(f"{k}={v!r}" for k, v in self.parameters.items())

    @property
    def lipschitz(self):
        """sup ``|psi''|``, the Lipschitz constant of psi' (inf when psi' is unbounded or jumps)."""
        if self.is_family:
            return self.info.lipschitz / self.sigma
        return self._spec.lipschitz_of(self.sigma)

    @property
    def key(self):
        """What identifies the loss in a checkpoint: its spec, or a family loss's name,
        table digest, sigma and theta."""
        if self.is_family:
            return [self.name, self.digest, self.sigma, self.theta]
        return self.spec

    @property
    def kinked(self):
        """psi' jumps (the hinge): no gradient where a margin is at the kink."""
        return not (self.smooth or math.isfinite(self.lipschitz))

    @property
    def lipschitz_formula(self):
        return "max Phi_c'/sigma" if self.is_family else self._spec.lipschitz

    @property
    def convex(self):
        return True if self.is_family else self._spec.convex

    @property
    def classification(self):
        """psi' <= 0 everywhere: a loss that only penalises small margins."""
        if self.is_family:
            return self.info.classification
        return self._spec.classification

    @property
    def calibrated(self):
        """Classification-calibrated: a convex loss is iff it is differentiable at 0 with
        psi'(0) < 0 (Bartlett et al., the paper's Theorem 1), as least squares is for
        theta > 0 although it also penalises large margins."""
        if not self.convex or (self.kinked and self.theta == 0.0):  # the hinge's kink at 0
            return False
        return bool(self.derivatives(np.zeros(1))[1][0] < 0.0)

    @property
    def conjugate_domain(self):
        """(lo, hi, lo_closed, hi_closed): where psi* is finite; None without a conjugate."""
        if self.is_family:
            lo, hi = self.info.phi_range
            return (0.0 - hi, 0.0 - lo, True, True)
        return self._spec.domain

    def __call__(self, a):
        return self.derivatives(a)[0]

    def derivatives(self, a):
        """psi(a), psi'(a), psi''(a) for an array of margins (three float64 arrays)."""
        a = np.asarray(a, dtype=np.float64)
        out = np.empty((3,) + a.shape)
        if self.is_family:
            _evaluate_with_params(self.code, a.ravel(), self.sigma, self.theta, self.params,
                                  out.reshape(3, -1))
        else:
            _evaluate(self.code, a.ravel(), self.sigma, self.theta, out.reshape(3, -1))
        return out[0], out[1], out[2]

    def conjugate(self, b, return_argmax=False):
        """psi*(b) = sup_a (b a - psi(a)) for an array of b (+inf outside the domain).

        With ``return_argmax`` also the maximiser a* = (psi*)'(b) (+-inf at a domain end
        that is reached only in the limit).
        """
        if self.conjugate_domain is None:
            raise ValueError(f"loss {self.name!r} has no conjugate (it is not convex)")
        b = np.asarray(b, dtype=np.float64)
        out = np.empty((2,) + b.shape)
        _conjugate_many(self.code, b.ravel(), self.sigma, self.theta, self.params,
                        out.reshape(2, -1))
        return (out[0], out[1]) if return_argmax else out[0]

    def describe(self):
        """One line: name, parameters, smoothness, Lipschitz constant of psi', conjugate."""
        params = ", ".join(f"{k}={_fmt(v)}" for k, v in self.parameters.items())
        smooth = "smooth" if self.smooth else "nonsmooth"
        formula = self.lipschitz_formula
        value = "inf" if self.lipschitz == _INF else f"{self.lipschitz:.4g}"
        if formula in _FORMULA_NAMES or _is_number(formula):
            lip = value
        else:
            lip = formula if formula == value else f"{formula} = {value}"
        domain = self.conjugate_domain
        conj = "no conjugate" if domain is None else f"conjugate on {_interval(domain)}"
        kind = ("classification" if self.classification else
                "not convex" if not self.convex else "regression/other")
        summary = self.info.description if self.is_family else self._spec.summary
        return (f"{self.name:<21} {params:<24} {smooth:<9}  L(psi')={lip:<28} {conj:<31} "
                f"{kind:<16} {summary}")


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _fmt(x):
    if x == _INF:
        return "inf"
    if x == -_INF:
        return "-inf"
    for exponent in range(-12, 13):
        if x == 2.0 ** exponent and abs(exponent) >= 3:
            return f"2^{exponent}"
    return f"{x:.4g}"


def _interval(domain):
    lo, hi, lo_closed, hi_closed = domain
    lo_s = "-pi/2" if lo == -math.pi / 2 else _fmt(lo)
    hi_s = "pi/2" if hi == math.pi / 2 else _fmt(hi)
    return f"{'[' if lo_closed else '('}{lo_s}, {hi_s}{']' if hi_closed else ')'}"


@njit(cache=True)
def _evaluate(code, a, sigma, theta, out):
    for i in range(a.shape[0]):
        out[0, i], out[1, i], out[2, i] = _scalar.derivatives(code, a[i], sigma, theta)


@njit(cache=True)
def _evaluate_with_params(code, a, sigma, theta, params, out):
    for i in range(a.shape[0]):
        out[0, i], out[1, i], out[2, i] = _scalar.derivatives_with_params(code, a[i], sigma,
                                                                          theta, params)


@njit(cache=True)
def _conjugate_many(code, b, sigma, theta, params, out):
    for i in range(b.shape[0]):
        out[0, i], out[1, i] = _scalar.conjugate_with_params(code, b[i], sigma, theta, params)


def parse_number(text):
    """A number, or ``2^K`` / ``2**K`` with K an integer (the paper's widths, e.g. ``2^-3``)
    -> float."""
    base, caret, exponent = text.strip().replace("**", "^", 1).partition("^")
    try:
        if not caret:
            return float(text)
        if base == "2":
            return 2.0 ** int(exponent)
    except (ValueError, OverflowError):
        pass
    raise ValueError(f"{text!r} is not a number nor 2^K (K an integer)")


def _parse(text):
    """``"name"`` or ``"name:key=value,key=value"`` -> (name, {key: float}); a value may be
    ``2^K``."""
    name, _, rest = text.partition(":")
    name = name.strip()
    name = _ALIASES.get(name, name)
    values = {}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key:
                raise ValueError(f"loss {text!r}: expected 'name:key=value,...', got {item!r}")
            if key in values:
                raise ValueError(f"loss {text!r}: {key} given twice")
            try:
                values[key] = parse_number(value)
            except ValueError as exc:
                raise ValueError(f"loss {text!r}: {key}={exc}") from None
    return name, values


def check_width(key, value):
    """A loss width ``key`` (sigma, gamma, h) as a float if a positive finite number, else a
    ValueError."""
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{key} must be a positive finite number, got {value}")
    return value


def get_loss(loss, sigma=None, *, theta=None, gamma=None, h=None):
    """The :class:`Loss` for a name or a Loss itself.

    Parameters
    ----------
    loss : str or Loss
        One of :data:`LOSS_NAMES` (see the module docstring), optionally with parameters
        ``"smoothed_hinge:gamma=0.5,theta=1"`` (a value may be ``2^K``); or a Loss, returned
        as it is (parameters given with it must agree with it).
    sigma, gamma, h : float, optional
        The loss's width, under the name it has (sigma for psi_g, psi_m, smooth_plus,
        exponential, smooth_absolute, smooth_relu, smooth_squared_hinge; gamma for
        smoothed_hinge; h for kh_hinge). Default: the loss's own.
    theta : float, optional
        Kink location (every named loss has one).

    Raises
    ------
    ValueError
        Unknown name, a parameter the loss does not have, or an invalid value.
    """
    given = {k: v for k, v in (("sigma", sigma), ("gamma", gamma), ("h", h), ("theta", theta))
             if v is not None}
    if isinstance(loss, Loss):
        current = loss.parameters
        for key, value in given.items():
            if key not in current:
                raise ValueError(f"{key}={value} given with a Loss object {loss.name!r} "
                                 f"(parameters: {', '.join(current)})")
            if float(value) != current[key]:
                raise ValueError(f"{key}={value} given with a Loss object of "
                                 f"{key}={current[key]}")
        return loss
    if not isinstance(loss, str):
        raise ValueError(f"unknown loss {loss!r}; known: {', '.join(LOSS_NAMES)}")
    name, from_string = _parse(loss)
    spec = _RECORDS.get(name)
    if spec is None:
        raise ValueError(f"unknown loss {loss!r}; known: {', '.join(LOSS_NAMES)}")
    for key, value in from_string.items():
        if key in given and float(given[key]) != value:
            raise ValueError(f"{named('loss')} {loss!r}: {key}={value} in the name but "
                             f"{key}={given[key]} given too")
        given[key] = value
    names = [key for key, _ in spec.params]
    for key in given:
        if key not in names:
            listing = ", ".join(f"{k} (default {_fmt(d)})" for k, d in spec.params)
            raise ValueError(f"{named('loss')} {name!r} takes no {key}; its parameters: "
                             f"{listing}")
    defaults = dict(spec.params)
    width_key = next((k for k in names if k in _WIDTHS), None)
    width = check_width(width_key, given.get(width_key, defaults[width_key])) if width_key else 1.0
    theta_value = float(given.get("theta", defaults["theta"]))
    if not np.isfinite(theta_value):
        raise ValueError(f"theta must be finite, got {theta_value}")
    if spec.theta_positive and not theta_value > 0:
        raise ValueError(f"loss {name!r} needs theta > 0 (Theorem GCL item 5: "
                         f"Phi_c(theta/sigma) > 0), got theta={theta_value}")
    return Loss(name, spec.code, width, theta_value, spec.smooth)


def describe_losses():
    """One line per named loss (defaults): name, parameters, smooth or not, the Lipschitz
    constant of psi' (formula = value), the conjugate's domain, the kind of loss."""
    return [get_loss(name).describe() for name in LOSS_NAMES]
