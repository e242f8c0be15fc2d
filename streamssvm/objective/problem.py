"""What every objective of the package shares, wherever its data is: the problem.

    L(w) = lambda / 2 ||w_[:d]||^2 + (1 / n) sum_i c_i psi(y_i (x_i . w_[:d] + b w_d))

:class:`Problem` checks the parameters and the data's shape, holds the loss, lambda and
the intercept's constant feature b, and makes L from a sum of losses, the point on a
segment between two states, the gradient without the L2 term and the smoothness constant
L_max: the formulas :class:`~streamssvm.objective.SmoothSVMObjective` (one process) and
:class:`~streamssvm.distributed.DaskObjective` (sums from Dask workers) both use, each
computing the sums its own way.
"""

import functools
import numbers
from dataclasses import dataclass

import numpy as np

from .._memory import available_memory_bytes
from .._names import named
from .._runtime import prepare
from ..losses import get_loss

# vectors of n_variables that any solver keeps (w, the gradient, a step): data whose width
# leaves no room for them is refused at once
MIN_VECTORS = 3
# why train_stream with a Dask client, and DaskObjective, refuse row weights
NO_DASK_ROW_WEIGHTS = ("sample_weight is not supported across Dask workers: train without "
                       "it, or without a client")


@dataclass
class PointState:
    """L, its gradient and the curvature D at a point ``w`` (see
    :mod:`~streamssvm.objective.oracle`). ``w`` is the caller's array when it was float64
    and contiguous (no copy, as every solver makes a new array for a new point): changed in
    place afterwards, it changes the state."""

    w: np.ndarray
    f: float
    grad: np.ndarray
    margins: np.ndarray
    curvature: np.ndarray
    curved_rows: list = None  # [(indptr, indices, data, curvature)] of rows with D_ii != 0

    @functools.cached_property
    def grad_norm(self):
        return float(np.linalg.norm(self.grad))


class Problem:
    """The parameters of L(w) over ``source``, checked, and its formulas.

    Parameters
    ----------
    source : BlockSource
    loss : str or Loss
    lam : float
        L2 regularisation strength lambda > 0.
    sigma : float, optional
        Smoothing width when ``loss`` is a name.
    fit_intercept : bool
    intercept_scaling : float
        Value of the constant feature that carries the intercept.
    sample_weight : array of shape (n_samples,), optional
        The row weights c_i >= 0.

    A subclass computes the sums over the rows: ``hessp_quad(state, s)`` (H s and s.H s),
    ``_segment_loss(state, trial, alpha)`` (sum_i c_i psi(.) at w + alpha (w_trial - w),
    from the states' margins) and ``_max_row_norm2()`` (max_i ||x_i||^2).

    Attributes
    ----------
    curvature_floor : float
        A curvature psi'' below 2^-53 of the loss's largest is taken for 0: it changes the
        Hessian by less than rounding does next to a row at the kink.
    """

    def __init__(self, source, loss, lam, sigma=None, fit_intercept=False,
                 intercept_scaling=1.0, sample_weight=None):
        prepare()
        lam = check_lam(lam)
        if source.n_samples == 0:
            raise ValueError(f"{source.name}: no rows to train on")
        if source.n_features == 0 and not fit_intercept:
            raise ValueError(f"{source.name}: no features to train on (and no intercept)")
        if len(source.classes) != 2:
            raise ValueError(f"{source.name}: {len(source.classes)} classes; the objective "
                             f"needs two distinct labels: train each class against the rest "
                             f"(streamssvm.train_one_vs_rest)")
        self.sample_weight = _row_weights(sample_weight, source)
        self.source = source
        self.loss = get_loss(loss, sigma)
        self.lam = lam
        self.bias = float(intercept_scaling) if fit_intercept else 0.0
        if fit_intercept and not (np.isfinite(self.bias) and self.bias > 0):
            raise ValueError(f"intercept_scaling must be positive, got {intercept_scaling}")
        lipschitz = self.loss.lipschitz
        self.curvature_floor = 2.0 ** -53 * lipschitz if np.isfinite(lipschitz) else 0.0
        self.n_features = source.n_features
        self.n_variables = self.n_features + (1 if fit_intercept else 0)
        free = available_memory_bytes()
        if MIN_VECTORS * 8 * self.n_variables > free:  # else a solver's zeros fail, or swap
            raise ValueError(
                f"{source.name}: {self.n_features:,} features: a solver's vectors of that "
                f"length ({8 * self.n_variables / 2**30:.3g} GiB each, {MIN_VECTORS} at "
                f"least) do not fit the {free / 2**30:.3g} GiB of memory free (a stray large "
                f"index in the input? convert with --n-features to refuse one)")

    @property
    def n_samples(self):
        return self.source.n_samples

    @property
    def loss_args(self):
        """``(code, sigma, theta, params)``: the loss as the kernels take it."""
        return self.loss.code, self.loss.sigma, self.loss.theta, self.loss.params

    def _check(self, w, name="w"):
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_variables,):
            raise ValueError(f"{name} has shape {w.shape}, expected ({self.n_variables},)")
        return w

    def _check_state(self, state):
        """``state``, if it is of this data: the kernels index its curvature by the rows."""
        if state.curvature.shape != (self.n_samples,):
            raise ValueError(f"the state is of other data: its curvature has shape "
                             f"{state.curvature.shape}, this data {self.n_samples} rows")
        return state

    def _combination(self, lam):
        """``(lam, scale, unregularised_last)``: a vector of the oracle is lam * x plus scale
        times the sum over rows, lam * x left out of the intercept's entry if the last."""
        return lam, 1.0 / self.n_samples, bool(self.bias)

    def _total(self, w, loss_sum):
        """L(w) from the sum of the losses."""
        return (0.5 * self.lam * float(w[:self.n_features] @ w[:self.n_features])
                + loss_sum / self.n_samples)

    def value_on_segment(self, state, trial, alpha):
        """L(w + alpha (w_trial - w)) for two evaluated states, from their margins: O(n), no
        pass (the sum of the losses: :meth:`_segment_loss`)."""
        loss = self._segment_loss(state, trial, alpha)
        return self._total(state.w + alpha * (trial.w - state.w), loss)

    def hessp(self, state, s):
        """(lambda E + X^T D X / n) s with D from ``state``."""
        return self.hessp_quad(state, s)[0]

    def loss_gradient(self, state):
        """(1 / n) sum_i psi'(y_i x_i.w) y_i x_i at ``state``: its gradient without the L2 term."""
        grad = state.grad.copy()
        grad[:self.n_features] -= self.lam * state.w[:self.n_features]
        return grad

    def smoothness(self):
        """L_max = sup psi'' max_i ||(x_i, bias)||^2 + lambda: a Lipschitz constant of the
        gradient of every term lam/2 ||w||^2 + psi(y_i x_i.w) (the stochastic solvers'
        step sizes); max_i ||x_i||^2 from :meth:`_max_row_norm2`."""
        return self.loss.lipschitz * (self._max_row_norm2() + self.bias ** 2) + self.lam

def check_lam(lam):
    """``lam`` as a float if a positive finite real number, else a ValueError naming the
    parameter (a string or None is no number, even one that float() would read)."""
    if isinstance(lam, (bool, np.bool_)) or not isinstance(lam, numbers.Real):
        raise ValueError(f"lambda ({named('lam')}) must be a positive finite number, got "
                         f"{lam!r} of type {type(lam).__name__}")
    lam = float(lam)
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lambda must be a positive finite number, got {lam} "
                         f"({named('lam')})")
    return lam


def _row_weights(sample_weight, source):
    """``sample_weight`` as a float64 array of shape (n_samples,), checked; None stays None."""
    if sample_weight is None:
        return None
    weights = np.ascontiguousarray(sample_weight, dtype=np.float64)
    if weights.shape != (source.n_samples,):
        raise ValueError(f"{source.name}: sample_weight has shape {weights.shape}, expected "
                         f"({source.n_samples},)")
    if not np.all(np.isfinite(weights) & (weights >= 0)):
        bad = int(np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))[0])
        raise ValueError(f"{source.name}: sample_weight[{bad}] = {weights[bad]!r}: weights "
                         f"must be finite and >= 0")
    return weights
