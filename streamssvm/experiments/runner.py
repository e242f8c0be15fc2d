"""Run the paper's experiments on one store: the sigma sweep, the six methods, convergence.

Every training set and test set is a :class:`~streamssvm.data.RowSubset` of the one store
(read through it, out of core); every method and every sigma sees the same folds. Each
run is a flat dict (one per fold, method or sigma) so that a results file can be checked
and summarised by anything that reads JSON.
"""

import functools
import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from numba.core import event as numba_event

from ..api import train_stream
from ..data import RowSubset
from ..solvers import STOCHASTIC, ConvergenceWarning

PAPER_LAM = 1e-5
PAPER_ABS_TOL = 1e-3  # "the same stopping criterion ||grad L(w_t)|| <= 0.001"
PAPER_XI = 0.1
SWEEP_LOG2_SIGMAS = (-30, -25, -20, -15, *range(-10, 6))


@dataclass(frozen=True)
class Settings:
    """What every training run shares.

    Attributes
    ----------
    lam : float
        lambda of L(w) = lam / 2 ||w||^2 + (1 / n) sum_i psi(y_i w.x_i).
    tol, abs_tol : float
        Stop when ||grad L(w)|| <= max(tol ||grad L(0)||, abs_tol).
    max_iter : int
        Iterations of a second-order solver.
    epochs : int
        Epochs (``max_iter``) of a stochastic solver.
    fit_intercept : bool
    seed : int
        Seed of the stochastic solvers (the folds have their own).
    """

    lam: float = PAPER_LAM
    tol: float = 0.0
    abs_tol: float = PAPER_ABS_TOL
    max_iter: int = 1000
    epochs: int = 20
    fit_intercept: bool = False
    seed: int = 0


@dataclass(frozen=True)
class Method:
    """One row of the paper's Tables 2 and 3.

    Attributes
    ----------
    method, losses : str
        The paper's METHODS and LOSSES columns.
    loss : str
        Our loss name (with its width in the name for losses whose width is not sigma).
    sigma : float or None
        Width of psi_G / psi_M.
    solver : str
        Our solver (a stochastic one gets ``Settings.epochs`` and ``Settings.seed``).
    options : dict
        Further solver options.
    """

    method: str
    losses: str
    loss: str
    sigma: float = None
    solver: str = "tron"
    options: dict = field(default_factory=dict)

    @property
    def key(self):
        return f"{self.method} {self.losses}"


def paper_methods(sigma, gamma=None, pegasos_solver="pegasos", sifs_solver="tron"):
    """The six methods of Tables 2 and 3.

    Parameters
    ----------
    sigma : float
        Width of psi_G and psi_M (the paper: 2^-6 news20, 2^-1 real-sim, 2^-3 rcv1).
    gamma : float, optional
        Width of SIFS's smoothed hinge l_gamma (default ``sigma``; the paper does not give
        it). SIFS itself (Zhang et al. 2017) adds an L1 term and screens features and
        samples; here l_gamma with the L2 term alone is solved by ``sifs_solver``.
    pegasos_solver, sifs_solver : str
        Our solvers standing for Pegasos (hinge loss) and SIFS. TRON is the default for
        l_gamma: on 80% of a9a at gamma = 2^-6, lambda = 1e-5 it met ||grad|| <= 1e-3 in 67
        iterations (4.5 s, machine loaded); SDCA had not after 100 epochs (7.3 s,
        ||grad|| = 0.078, objective 1.2% above TRON's).

    Returns
    -------
    list of Method
    """
    gamma = sigma if gamma is None else gamma
    return [Method("TRON", "Logistic loss", "logistic"),
            Method("TRON", "squared Hinge loss l2", "squared_hinge"),
            Method("TRON", "smooth Hinge loss psi_M", "psi_m", sigma),
            Method("TRON", "smooth Hinge loss psi_G", "psi_g", sigma),
            # the hinge's subgradient never meets the gradient rule: no evaluation passes
            # between epochs, only the one at the end
            Method("PEGASOS", "Hinge loss l1", "hinge", solver=pegasos_solver,
                   options={"eval_every": 0} if pegasos_solver in STOCHASTIC else {}),
            Method("SIFS", "smooth Hinge loss l_gamma", f"smoothed_hinge:gamma={gamma!r}",
                   solver=sifs_solver)]


def model_weights(model):
    """The variables w of the objective the model came from (a warm start for the next)."""
    if model.params.get("fit_intercept"):
        return np.append(model.coef_, model.intercept_ / model.params["intercept_scaling"])
    return model.coef_


def train_and_score(source, fold, loss, settings, sigma=None, solver="tron", w0=None,
                    **options):
    """Train on a fold's training rows and score both its row sets.

    Parameters
    ----------
    source : BlockSource
        The whole data set (a store).
    fold : Fold
    loss : str
    settings : Settings
    sigma : float, optional
    solver : str
        A stochastic solver gets ``settings.epochs`` as ``max_iter`` and ``settings.seed``.
    w0 : array of shape (n_variables,), optional
    **options
        Solver options.

    Returns
    -------
    model : Model
    run : dict
        ``train_accuracy``, ``test_accuracy``, ``seconds`` (wall time of the training call),
        ``solver_seconds``, ``n_iter``, ``passes``, ``converged``, ``grad_norm``.
    """
    train = RowSubset(source, fold.train_rows)
    stochastic = solver in STOCHASTIC
    if stochastic:
        options = dict(options, seed=settings.seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # recorded as converged=False
        model = train_stream(train, loss=loss, sigma=sigma, lam=settings.lam, solver=solver,
                             tol=settings.tol, abs_tol=settings.abs_tol,
                             max_iter=settings.epochs if stochastic else settings.max_iter,
                             fit_intercept=settings.fit_intercept, w0=w0, progress=False,
                             **options)
    seconds = time.perf_counter() - start
    params = model.params
    run = dict(partition=fold.partition, part=fold.part, fold=fold.digest,
               train_accuracy=model.score(train),
               test_accuracy=model.score(RowSubset(source, fold.test_rows)),
               seconds=seconds, solver_seconds=params["seconds"], n_iter=params["n_iter"],
               passes=params["passes"], converged=bool(params["converged"]),
               grad_norm=params["grad_norm"])
    return model, run


def warm_up(source, fold, methods, settings):
    """Train every method once on a few hundred rows, so that compiling numba's kernel
    variants is not timed."""
    rows = fold.train_rows[:min(len(fold.train_rows), 400)]
    small = type(fold)(fold.partition, fold.part, rows[::2], rows[1::2])
    quick = Settings(**{**asdict(settings), "max_iter": 2, "epochs": 1})
    for m in methods:
        train_and_score(source, small, m.loss, quick, m.sigma, m.solver, **m.options)


def run_methods(source, folds, methods, settings, log=None):
    """Every method on every fold.

    Returns
    -------
    list of dict
        One run per (method, fold): the method's fields and :func:`train_and_score`'s.
    """
    warm_up(source, folds[0], methods, settings)
    runs = []
    for m in methods:
        for fold in folds:
            _, run = train_and_score(source, fold, m.loss, settings, m.sigma, m.solver,
                                     **m.options)
            runs.append(dict(method=m.method, losses=m.losses, loss=m.loss, sigma=m.sigma,
                             solver=m.solver, **run))
            if log:
                log(f"{m.key} fold {fold.partition}.{fold.part}: test "
                    f"{run['test_accuracy']:.4f} in {run['seconds']:.2f} s")
    return runs


def run_sigma_sweep(source, folds, settings, losses=("psi_g", "psi_m"),
                    log2_sigmas=SWEEP_LOG2_SIGMAS, log=None):
    """Train and test accuracy of each loss at each sigma on every fold.

    On each fold the widths are visited from the largest to the smallest, each training
    warm-started from the solution at the previous width (continuation: a small sigma is
    the hard, nearly non-smooth problem).

    Returns
    -------
    list of dict
        One run per (loss, sigma, fold) with ``loss``, ``log2_sigma`` and
        :func:`train_and_score`'s fields.
    """
    order = sorted(log2_sigmas, reverse=True)
    warm_up(source, folds[0], [Method("", "", loss, 2.0 ** order[0]) for loss in losses],
            settings)
    runs = []
    for loss in losses:
        for fold in folds:
            w = None
            for log2_sigma in order:
                model, run = train_and_score(source, fold, loss, settings, 2.0 ** log2_sigma,
                                             w0=w, forcing="constant", xi=PAPER_XI)
                w = model_weights(model)
                runs.append(dict(loss=loss, log2_sigma=log2_sigma, **run))
                if log:
                    log(f"{loss} sigma 2^{log2_sigma} fold {fold.partition}.{fold.part}: "
                        f"train {run['train_accuracy']:.4f} test {run['test_accuracy']:.4f} "
                        f"({run['n_iter']} it, {run['seconds']:.2f} s)")
    return runs


def accepted_history(model):
    """The accepted iterates of a second-order run: ``iteration``, ``grad_norm``, ``f``,
    ``passes``, ``seconds`` and ``cg_steps`` (the CG steps spent since the previous accepted
    iterate, rejected trial steps included)."""
    out, cg_steps = [], 0
    for h in model.history:
        cg_steps += h["cg_steps"]
        if h["accepted"]:
            out.append(dict(iteration=len(out), grad_norm=h["grad_norm"], f=h["f"],
                            passes=h["passes"], seconds=h["seconds"], cg_steps=cg_steps))
            cg_steps = 0
    return out


def timed_without_compiling(fit):
    """``fit()`` and the wall time of a call of it in which numba compiled nothing: a call
    that compiled a kernel variant is made again. (Which variants a run reaches depends on
    its data: TRON's first iterations may take neither a second CG step nor a copy of the
    curved columns, so a short warm-up run does not compile them all.)"""
    while True:
        with numba_event.install_recorder("numba:compile") as compiled:
            start = time.perf_counter()
            result = fit()
            seconds = time.perf_counter() - start
        if not compiled.buffer:
            return result, seconds


def run_convergence(source, losses, settings, tol=1e-12, max_iter=100, kappa=1.0, log=None):
    """TRON on the whole data set with the forcing term xi_t = 0.1 and xi_t = min(0.1,
    kappa ||grad L(w_t)||) (the paper's Theorem 4: linear and quadratic convergence).

    Parameters
    ----------
    source : BlockSource
    losses : sequence of (str, float or None)
        Loss names and their sigma.
    settings : Settings
        ``lam`` and ``fit_intercept`` are used; the stopping rule is ``tol`` (relative).
    tol : float
    max_iter : int
    kappa : float

    Returns
    -------
    list of dict
        One per (loss, forcing): ``loss``, ``sigma``, ``forcing``, ``seconds`` (of a run
        in which numba compiled nothing: :func:`timed_without_compiling`),
        ``message``, ``history`` (see :func:`accepted_history`).
    """
    runs = []
    for loss, sigma in losses:
        for forcing in ("constant", "quadratic"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model, seconds = timed_without_compiling(functools.partial(
                    train_stream, source, loss=loss, sigma=sigma, lam=settings.lam, tol=tol,
                    max_iter=max_iter, fit_intercept=settings.fit_intercept, progress=False,
                    forcing=forcing, xi=PAPER_XI, kappa=kappa))
            runs.append(dict(loss=loss, sigma=sigma, forcing=forcing, xi=PAPER_XI, kappa=kappa,
                             seconds=seconds,
                             message=model.params["message"],
                             history=accepted_history(model)))
            if log:
                log(f"convergence {loss} {forcing}: {model.params['n_iter']} it, "
                    f"||grad|| {model.params['grad_norm']:.3g} ({model.params['message']})")
    return runs
