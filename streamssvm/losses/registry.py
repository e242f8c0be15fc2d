"""Losses as user-facing objects: a name, a Numba code and its parameters."""

from dataclasses import dataclass

import numpy as np
from numba import njit

from . import _scalar


@dataclass(frozen=True)
class Loss:
    """A loss of the margin, psi(a), usable by every solver.

    Attributes
    ----------
    name : str
    code : int
        Selects the formula inside the Numba kernels.
    sigma : float
        Smoothing width (1 for losses without one).
    theta : float
        Location of the kink being smoothed (1 for hinge-like losses).
    smooth : bool
        Twice differentiable (False: only a generalized Hessian exists).
    """

    name: str
    code: int
    sigma: float = 1.0
    theta: float = 1.0
    smooth: bool = True

    def __call__(self, a):
        return self.derivatives(a)[0]

    def derivatives(self, a):
        """psi(a), psi'(a), psi''(a) for an array of margins (three float64 arrays)."""
        a = np.asarray(a, dtype=np.float64)
        out = np.empty((3,) + a.shape)
        _evaluate(self.code, a.ravel(), self.sigma, self.theta, out.reshape(3, -1))
        return out[0], out[1], out[2]


@njit(cache=True)
def _evaluate(code, a, sigma, theta, out):
    for i in range(a.shape[0]):
        out[0, i], out[1, i], out[2, i] = _scalar.derivatives(code, a[i], sigma, theta)


# name -> (code, default sigma, theta, smooth, takes sigma)
_NAMED = {
    "psi_g": (_scalar.PSI_G, 2.0 ** -3, 1.0, True, True),
    "psi_m": (_scalar.PSI_M, 2.0 ** -3, 1.0, True, True),
    "squared_hinge": (_scalar.SQUARED_HINGE, 1.0, 1.0, False, False),
    "logistic": (_scalar.LOGISTIC, 1.0, 0.0, True, False),
}
LOSS_NAMES = tuple(_NAMED)


def get_loss(loss, sigma=None):
    """The :class:`Loss` for a name (``"psi_g"``, ``"psi_m"``, ``"squared_hinge"``,
    ``"logistic"``) or a Loss itself; ``sigma`` sets the smoothing width of psi_G / psi_M."""
    if isinstance(loss, Loss):
        if sigma is not None and sigma != loss.sigma:
            raise ValueError(f"sigma={sigma} given with a Loss object of sigma={loss.sigma}")
        return loss
    try:
        code, default_sigma, theta, smooth, takes_sigma = _NAMED[loss]
    except (KeyError, TypeError):
        raise ValueError(f"unknown loss {loss!r}; known: {', '.join(LOSS_NAMES)}") from None
    if sigma is None:
        sigma = default_sigma
    elif not takes_sigma:
        raise ValueError(f"loss {loss!r} takes no sigma")
    sigma = float(sigma)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive finite number, got {sigma}")
    return Loss(loss, code, sigma, theta, smooth)
