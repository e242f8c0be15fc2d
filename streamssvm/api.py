"""``train_stream``: one call from a store path or a matrix to a trained :class:`Model`."""

import contextlib
import os

import numpy as np

from .data import BlockSource, InMemorySource, Store
from .model import Model
from .objective import SmoothSVMObjective
from .solvers import SOLVERS


@contextlib.contextmanager
def open_source(data, y=None):
    """A BlockSource for a store path, a BlockSource, or a matrix with labels ``y``."""
    if isinstance(data, (str, os.PathLike)):
        if y is not None:
            raise ValueError("y is given with a store path: the store holds its own labels")
        with Store(data) as store:
            yield store
    elif isinstance(data, BlockSource):
        yield data
    else:
        if y is None:
            raise ValueError("training on a matrix needs its labels y")
        yield InMemorySource(data, y)


def train_stream(data, y=None, loss="psi_g", sigma=None, lam=1e-5, solver="tron", tol=0.01,
                 abs_tol=None, liblinear_tol=False, max_iter=1000, fit_intercept=False,
                 intercept_scaling=1.0, w0=None, sigma_path=(), n_threads=None, progress=True,
                 sample_weight=None, **solver_options):
    """Train a linear classifier by minimising

        L(w) = lam / 2 ||w||^2 + (1 / n) sum_i c_i psi(y_i w.x_i)

    streaming the data block by block (it never has to fit in memory).

    Parameters
    ----------
    data : str or path-like, BlockSource, or array / sparse matrix of shape (n_samples, n_features)
        A store made by ``convert_svmlight``, any block source, or an in-memory matrix.
    y : array of shape (n_samples,), optional
        Labels (two distinct values) when ``data`` is a matrix.
    loss : str or Loss
        ``"psi_g"``, ``"psi_m"`` (smooth hinges), ``"squared_hinge"``, ``"logistic"``.
    sigma : float, optional
        Smoothing width of psi_G / psi_M (default 2**-3).
    lam : float
        Regularisation strength lambda (LIBLINEAR's C = 1 / (lam * n)).
    solver : str
        ``"tron"`` or ``"newton"``.
    tol, abs_tol, liblinear_tol, max_iter
        Stopping rule: ||grad L(w)|| <= tol ||grad L(0)|| (tol scaled by
        max(min(#pos, #neg), 1) / n if ``liblinear_tol``), or <= abs_tol.
    fit_intercept : bool
        Learn an unregularised intercept (a constant feature of value ``intercept_scaling``).
    w0 : array of shape (n_variables,), optional
        Warm start.
    sigma_path : sequence of float
        Continuation for a small sigma: solve at each of these widths first (to the same
        tolerance), each warm-started from the last, then at ``sigma``. For psi_G at
        sigma = 2^-6 on news20 from a store, (2^-2, 2^-4) took 57 passes instead of 88 and
        stopped twice as close to the optimal objective, in about the same time.
    n_threads : int, optional
        Kernel threads (default all cores numba sees).
    progress : bool
        tqdm bars.
    sample_weight : array of shape (n_samples,), optional
        The row weights c_i >= 0 (default 1): LIBLINEAR's per-row C_i = c_i / (lam n).
        Not with the stochastic solvers. Class weights: see ``train_one_vs_rest``.
    **solver_options
        Passed to the solver (TRON: ``forcing``, ``xi``, ``kappa``, ``preconditioner``).

    Returns
    -------
    Model
    """
    try:
        solve = SOLVERS[solver]
    except KeyError:
        raise ValueError(f"unknown solver {solver!r}; known: {', '.join(SOLVERS)}") from None
    history, passes, seconds, cached_sweeps = [], 0, 0.0, 0
    with open_source(data, y) as source:
        for width in [*sigma_path, sigma]:
            objective = SmoothSVMObjective(
                source, loss, lam, sigma=width, fit_intercept=fit_intercept,
                intercept_scaling=intercept_scaling, n_threads=n_threads,
                progress=progress and source.nnz > 20_000_000, sample_weight=sample_weight)
            result = solve(objective, w0=w0, tol=tol, abs_tol=abs_tol,
                           liblinear_tol=liblinear_tol, max_iter=max_iter, progress=progress,
                           **solver_options)
            history += [dict(h, sigma=objective.loss.sigma, passes=h["passes"] + passes,
                             seconds=h["seconds"] + seconds) for h in result.history]
            passes, seconds = passes + result.passes, seconds + result.seconds
            cached_sweeps += objective.cached_sweeps
            w0 = result.w
        classes = source.classes
    w = result.w
    coef = w[:objective.n_features]
    intercept = w[-1] * objective.bias if fit_intercept else 0.0
    loss = objective.loss
    params = dict(loss=loss.name, loss_spec=None if loss.is_family else loss.spec,
                  sigma=loss.sigma, lam=objective.lam,
                  solver=solver, tol=tol, abs_tol=abs_tol, liblinear_tol=liblinear_tol,
                  max_iter=max_iter, fit_intercept=fit_intercept,
                  intercept_scaling=intercept_scaling, n_samples=objective.n_samples,
                  converged=result.converged, message=result.message, n_iter=result.n_iter,
                  passes=passes, cached_sweeps=cached_sweeps, seconds=seconds,
                  sigma_path=list(sigma_path), objective=result.f,
                  grad_norm=result.grad_norm, **solver_options)
    return Model(np.array(coef), intercept, classes, params, history)
