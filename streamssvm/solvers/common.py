"""What every solver shares: its result, the stopping threshold, the unconverged warning."""

import warnings
from dataclasses import dataclass, field

import numpy as np


class ConvergenceWarning(UserWarning):
    """A solver stopped before its stopping rule was met."""


@dataclass
class SolverResult:
    """The minimiser found and how it was reached.

    ``history`` has one dict per iteration (trial steps included, with ``accepted``):
    ``iteration``, ``f``, ``grad_norm``, ``cg_steps``, ``delta``, ``passes``, ``seconds``.
    """

    w: np.ndarray
    f: float
    grad_norm: float
    n_iter: int
    converged: bool
    message: str
    passes: int
    seconds: float
    history: list = field(default_factory=list)


def stopping_threshold(objective, grad0_norm, tol, abs_tol=None, liblinear_tol=False):
    """The gradient norm at which to stop.

    ``tol * ||grad L(0)||``, with ``tol`` scaled by max(min(#pos, #neg), 1) / n when
    ``liblinear_tol`` (LIBLINEAR's rule for -s 0 / -s 2), or ``abs_tol`` if that is larger.
    """
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if liblinear_tol:
        n_neg, n_pos = objective.source.label_counts()
        tol = tol * max(min(n_pos, n_neg), 1) / objective.n_samples
    threshold = tol * grad0_norm
    if abs_tol is not None:
        if not abs_tol >= 0:
            raise ValueError(f"abs_tol must be >= 0, got {abs_tol}")
        threshold = max(threshold, abs_tol)
    return threshold


def warn_unconverged(solver, message, grad_norm, threshold):
    warnings.warn(f"{solver} stopped unconverged ({message}): ||grad|| = {grad_norm:.3g} "
                  f"> {threshold:.3g}", ConvergenceWarning, stacklevel=3)
