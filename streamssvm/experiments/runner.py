"""Run the paper's experiments on one store: the sigma sweep, the six methods, convergence.

Every training set and test set is a :class:`~streamssvm.data.RowSubset` of the one store,
read from it once per fold and held in memory for the fold's runs (:class:`FoldData`);
every method and every sigma sees the same folds. Each
run is a flat dict (one per fold, method or sigma) so that a results file can be checked
and summarised by anything that reads JSON.
"""

import functools
import math
import multiprocessing
import os
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

import numba
import numpy as np
from numba.core import event as numba_event
from threadpoolctl import threadpool_limits

from ..api import train_stream
from ..data import InMemorySource, RowSubset, Store
from ..objective import SmoothSVMObjective
from ..solvers import SOLVERS, STOCHASTIC, ConvergenceWarning
from .protocol import Fold

PAPER_LAM = 1e-5
PAPER_ABS_TOL = 1e-3  # "the same stopping criterion ||grad L(w_t)|| <= 0.001"
PAPER_XI = 0.1
SWEEP_LOG2_SIGMAS = (-30, -25, -20, -15, *range(-10, 6))
SWEEP_LOSSES = ("psi_g", "psi_m")


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
        Epochs (``max_iter``) of a stochastic solver that runs a fixed budget.
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
class Plateau:
    """When a stochastic run (Pegasos) stops: after ``chunk`` epochs at a time, once the
    objective changed by at most ``rtol`` |f| over the last chunk, or after ``max_epochs``.

    Pegasos never meets a gradient rule (the hinge has no gradient at its kink), and its
    objective gap after T steps falls like log(T) / (lambda T) (Shalev-Shwartz, Singer,
    Srebro & Cotter 2011): a fixed budget measures the budget, a plateau of the objective
    the method."""

    rtol: float = 1e-3
    chunk: int = 10
    max_epochs: int = 1000

    def describe(self):
        return (f"run {self.chunk} epochs at a time until the objective changes by at most "
                f"{self.rtol:g} |f| over {self.chunk} epochs, or {self.max_epochs} epochs")


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
        Our solver (a stochastic one runs to :class:`Plateau`).
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
        Width of psi_G and psi_M (the paper takes each data set's from its sigma sweep,
        section 5).
    gamma : float, optional
        Width of SIFS's smoothed hinge l_gamma (default ``sigma``; the paper does not give
        it). SIFS itself (Zhang et al. 2017) adds an L1 term and screens features and
        samples; here l_gamma with the L2 term alone is solved by ``sifs_solver``.
    pegasos_solver, sifs_solver : str
        Our solvers standing for Pegasos (hinge loss) and SIFS. TRON is the default for
        l_gamma: a second-order method meets the gradient rule on it, where SDCA's
        coordinate steps approach it linearly at a rate set by lambda n gamma (slow for the
        paper's lambda = 1e-5 and a small gamma).

    Returns
    -------
    list of Method
        psi_G before Pegasos: :func:`run_methods` measures Pegasos's objective against
        psi_G's solution on the same fold.
    """
    gamma = sigma if gamma is None else gamma
    return [Method("TRON", "Logistic loss", "logistic"),
            Method("TRON", "squared Hinge loss l2", "squared_hinge"),
            Method("TRON", "smooth Hinge loss psi_M", "psi_m", sigma),
            Method("TRON", "smooth Hinge loss psi_G", "psi_g", sigma),
            # the hinge's subgradient never meets the gradient rule: no evaluation passes
            # between epochs, only the one at the end of each chunk
            Method("PEGASOS", "Hinge loss l1", "hinge", solver=pegasos_solver,
                   options={"eval_every": 0} if pegasos_solver in STOCHASTIC else {}),
            Method("SIFS", "smooth Hinge loss l_gamma", f"smoothed_hinge:gamma={gamma!r}",
                   solver=sifs_solver)]


def model_weights(model):
    """The variables w of the objective the model came from (a warm start for the next)."""
    if model.params.get("fit_intercept"):
        return np.append(model.coef_, model.intercept_ / model.params["intercept_scaling"])
    return model.coef_


def _fit(train, loss, settings, sigma=None, solver="tron", w0=None, max_iter=None, **options):
    """``train_stream`` on ``train`` with the settings' rule; a stochastic solver gets
    ``settings.epochs`` (or ``max_iter``) epochs and ``settings.seed``."""
    stochastic = solver in STOCHASTIC
    if stochastic:
        options = dict(options, seed=settings.seed)
    if max_iter is None:
        max_iter = settings.epochs if stochastic else settings.max_iter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # recorded as converged=False
        return train_stream(train, loss=loss, sigma=sigma, lam=settings.lam, solver=solver,
                            tol=settings.tol, abs_tol=settings.abs_tol, max_iter=max_iter,
                            fit_intercept=settings.fit_intercept, w0=w0, progress=False,
                            **options)


@dataclass(frozen=True)
class FoldData:
    """A fold and its two row sets, each read from the data set's store once and held in
    memory for every training on the fold (the sweep makes 80; a read through the store
    decodes and checks every block at every pass), in the store's blocks: the kernels sum
    as over the store's :class:`~streamssvm.data.RowSubset`. (SDCA evaluates on its own
    schedule when the data is in memory from the start: its runs may stop at another
    epoch than over the store.)

    Attributes
    ----------
    fold : Fold
    train, test : InMemorySource
    """

    fold: Fold
    train: InMemorySource
    test: InMemorySource

    @classmethod
    def read(cls, source, fold):
        """The fold's rows of ``source`` (the whole data set, a store)."""
        return cls(fold, *(InMemorySource.copy_of(RowSubset(source, rows))
                           for rows in (fold.train_rows, fold.test_rows)))


def _scored(model, data, seconds):
    params, fold = model.params, data.fold
    return dict(partition=fold.partition, part=fold.part, fold=fold.digest,
                train_accuracy=model.score(data.train),
                test_accuracy=model.score(data.test),
                seconds=seconds, solver_seconds=params["seconds"], n_iter=params["n_iter"],
                passes=params["passes"], converged=bool(params["converged"]),
                grad_norm=params["grad_norm"], objective=params["objective"],
                grad_norm_start=model.history[0]["grad_norm"] if model.history else None)


def train_and_score(data, loss, settings, sigma=None, solver="tron", w0=None, **options):
    """Train on a fold's training rows and score both its row sets.

    Parameters
    ----------
    data : FoldData
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
        ``solver_seconds``, ``n_iter``, ``passes``, ``converged``, ``grad_norm``,
        ``objective`` (L at the model), ``grad_norm_start`` (||grad L|| at the start point).
    """
    start = time.perf_counter()
    model = _fit(data.train, loss, settings, sigma, solver, w0, **options)
    return model, _scored(model, data, time.perf_counter() - start)


def train_to_plateau(data, loss, settings, plateau, solver="pegasos", **options):
    """A stochastic solver on a fold, ``plateau.chunk`` epochs at a time (each chunk resumes
    the last from a checkpoint: the iterates of one uninterrupted run), until its objective
    stops changing (:class:`Plateau`); scored as :func:`train_and_score`.

    Returns
    -------
    model : Model
    run : dict
        :func:`train_and_score`'s fields (``seconds``: the wall time of all chunks;
        ``solver_seconds``: the solver's time in all of them), ``path`` (epochs and
        objective after each chunk) and ``stopped`` (``"plateau"`` or ``"max_epochs"``).
    """
    path, stopped, seconds = [], "max_epochs", 0.0
    with tempfile.TemporaryDirectory(prefix="reproduce-") as tmp:
        checkpoint = os.path.join(tmp, "run.ckpt")
        for epochs in range(plateau.chunk, plateau.max_epochs + plateau.chunk, plateau.chunk):
            epochs = min(epochs, plateau.max_epochs)
            start = time.perf_counter()
            model = _fit(data.train, loss, settings, solver=solver, max_iter=epochs,
                         checkpoint=checkpoint, checkpoint_every=math.inf, **options)
            seconds += time.perf_counter() - start
            f = model.params["objective"]
            path.append(dict(epochs=epochs, f=f))
            if len(path) > 1 and abs(path[-2]["f"] - f) <= plateau.rtol * abs(f):
                stopped = "plateau"
                break
    # solver_seconds: the last chunk's, which a resumed run counts from the first chunk on
    return model, dict(_scored(model, data, seconds), path=path, stopped=stopped)


def hinge_objective(data, settings, model):
    """lam / 2 ||w||^2 + mean hinge loss of a model on a fold's training rows (one pass): the
    objective Pegasos minimises, at any model."""
    objective = SmoothSVMObjective(data.train, "hinge", settings.lam,
                                   fit_intercept=settings.fit_intercept)
    return float(objective.value(model_weights(model)))


def warm_up(data, methods, settings):
    """Train every method once for two iterations (an epoch) on a fold's ``data``, so that
    compiling numba's kernels is not timed: on a fold itself, since which kernels a run
    compiles depends on the size of its work (small work runs their serial twins,
    kernels._twins)."""
    quick = replace(settings, max_iter=2, epochs=1)
    for m in methods:
        train_and_score(data, m.loss, quick, m.sigma, m.solver, **m.options)


def best_hinge_objectives(sweep_runs):
    """The lowest hinge objective of psi_G's solutions in a sweep, on each fold: the
    tightest upper bound on the hinge problem's optimum P* that the sweep holds (at a
    small sigma that met the rule, P* + 0.399 sigma at most, plus psi_G's own error).

    Returns
    -------
    dict
        fold digest -> the sweep run (``hinge_objective``, ``log2_sigma``, ``start``).
    """
    best = {}
    for r in sweep_runs:
        if r.get("hinge_objective") is not None and (
                r["fold"] not in best or r["hinge_objective"] < best[r["fold"]]["hinge_objective"]):
            best[r["fold"]] = r
    return best


def _each(calls, jobs):
    """``function(*args)`` of each ``(function, args)`` of ``calls``, yielded in order as each
    ends: one after another here (``jobs`` 1), or in ``jobs`` processes at once, spawned (a
    fork would copy numba's threads and the open HDF5 files) and each on one kernel thread
    (a core each, rather than threads that share them). A worker opens a store it is given
    by its path once (:func:`_opened`)."""
    if jobs == 1:
        for function, args in calls:
            yield function(*args)
        return
    with ProcessPoolExecutor(min(jobs, len(calls)), multiprocessing.get_context("spawn"),
                             initializer=numba.set_num_threads, initargs=(1,)) as pool:
        futures = [pool.submit(function, *args) for function, args in calls]
        try:
            for future in futures:
                yield future.result()
        finally:  # an error or an interrupt: the folds not started are not run
            for future in futures:
                future.cancel()


_STORES = {}  # a worker's stores, by path
_WARM = set()  # the fold jobs this process has warmed up for


def _opened(source):
    """``source``, or the store at the path ``source`` (opened once per process)."""
    if not isinstance(source, str):
        return source
    if source not in _STORES:
        _STORES[source] = Store(source)
    return _STORES[source]


def _shared(source, jobs):
    """What :func:`_each`'s calls are given for ``source``: a store's path for worker
    processes (each opens its own), else ``source`` itself."""
    if jobs == 1:
        return source
    if not isinstance(source, Store):
        raise ValueError(f"jobs = {jobs} needs a Store, which each process opens by its path; "
                         f"got {type(source).__name__}")
    return source.path


def _on_fold(job, source, fold, *args):
    """``job(data, first, *args)`` on ``fold`` of ``source`` (read once, :class:`FoldData`);
    ``first``: whether this process has not run ``job`` before (it warms up first, so that
    numba's compiling is not timed)."""
    first = job not in _WARM
    _WARM.add(job)
    return job(FoldData.read(_opened(source), fold), first, *args)


def _fold_calls(job, source, folds, jobs, *args):
    """:func:`_each`'s calls of ``job`` on every fold, the first of them a warm-up here too."""
    _WARM.discard(job)
    shared = _shared(source, jobs)
    return [(_on_fold, (job, shared, fold, *args)) for fold in folds]


def run_methods(source, folds, methods, settings, plateau=Plateau(), hinge_reference=None,
                log=None, jobs=1):
    """Every method on every fold; stochastic solvers to ``plateau``.

    Parameters
    ----------
    hinge_reference : dict, optional
        :func:`best_hinge_objectives` of a sweep on the same folds.
    jobs : int
        Folds at once, in processes of their own (``source`` then a Store).

    Returns
    -------
    list of dict
        One run per (method, fold): the method's fields and :func:`train_and_score`'s
        (:func:`train_to_plateau`'s for a stochastic solver). psi_G's runs also hold
        ``hinge_objective`` (Pegasos's objective at psi_G's solution); a hinge-loss run
        after them holds ``gap_to_psi_g``: its objective minus that, on the same fold; and
        with ``hinge_reference``, ``gap_to_best_psi_g`` and ``best_psi_g_log2_sigma``: its
        objective minus the sweep's lowest, and where that was.
    """
    runs = []
    for fold_runs in _each(_fold_calls(_methods_on_fold, source, folds, jobs, methods, settings,
                                       plateau, hinge_reference or {}), jobs):
        runs += fold_runs
        if log:
            for run in fold_runs:
                log(f"{run['method']} {run['losses']} fold {run['partition']}.{run['part']}: "
                    f"test {run['test_accuracy']:.4f} in {run['seconds']:.2f} s")
    return runs


def _methods_on_fold(data, first, methods, settings, plateau, hinge_reference):
    """:func:`run_methods` on one fold."""
    if first:
        warm_up(data, methods, settings)
    best = hinge_reference.get(data.fold.digest)
    runs, hinge_at_psi_g = [], None
    for m in methods:
        if m.solver in STOCHASTIC:
            model, run = train_to_plateau(data, m.loss, settings, plateau, m.solver, **m.options)
        else:
            model, run = train_and_score(data, m.loss, settings, m.sigma, m.solver, **m.options)
        if m.loss == "psi_g":
            run["hinge_objective"] = hinge_at_psi_g = hinge_objective(data, settings, model)
        if m.loss == "hinge" and hinge_at_psi_g is not None:
            run["gap_to_psi_g"] = run["objective"] - hinge_at_psi_g
        if m.loss == "hinge" and best is not None:
            run["gap_to_best_psi_g"] = run["objective"] - best["hinge_objective"]
            run["best_psi_g_log2_sigma"] = best["log2_sigma"]
        runs.append(dict(method=m.method, losses=m.losses, loss=m.loss, sigma=m.sigma,
                         solver=m.solver, **run))
    return runs


def run_sigma_sweep(source, folds, settings, losses=SWEEP_LOSSES, log2_sigmas=SWEEP_LOG2_SIGMAS,
                    starts=("cold", "warm"), cold_solver="auto", log=None, jobs=1):
    """Train and test accuracy of each loss at each sigma on every fold, to the settings'
    rule.

    ``"cold"``: every sigma trained from w = 0, as the paper does, by ``cold_solver``. The
    paper ran TRON; the solution at a width does not depend on the solver that meets the
    rule, and ``"auto"`` takes the library's choice for the loss at that width and the
    data's shape (SDCA near the hinge, where TRON's iterations crawl: the paper's rule is
    then met at widths where a TRON budget is not). ``"warm"``: TRON with xi_t = 0.1, the
    widths visited from the largest to the smallest, each training started at the solution
    of the previous width (continuation; at a small sigma the rule is then often met at
    once, so this path shows where the rule stops, not the problem's solution).

    ``jobs``: folds at once, in processes of their own (``source`` then a Store).

    Returns
    -------
    list of dict
        One run per (loss, start, fold, sigma) with ``loss``, ``start``, ``log2_sigma``,
        ``solver`` (the one that ran) and :func:`train_and_score`'s fields; psi_G's runs also
        ``hinge_objective`` (:func:`hinge_objective`, for :func:`best_hinge_objectives`).
    """
    order = sorted(log2_sigmas, reverse=True)
    runs = []
    for fold_runs in _each(_fold_calls(_sweep_on_fold, source, folds, jobs, settings, losses,
                                       order, starts, cold_solver), jobs):
        runs += fold_runs
        if log:
            for run in fold_runs:
                log(f"{run['loss']} {run['start']} sigma 2^{run['log2_sigma']} fold "
                    f"{run['partition']}.{run['part']}: train {run['train_accuracy']:.4f} "
                    f"test {run['test_accuracy']:.4f} ({run['solver']} {run['n_iter']} it, "
                    f"{run['seconds']:.2f} s)")
    return runs


def _sweep_on_fold(data, first, settings, losses, order, starts, cold_solver):
    """:func:`run_sigma_sweep` on one fold, the widths in ``order``."""
    solvers = {"cold": cold_solver, "warm": "tron"}
    if first:  # every solver each start may run: auto's choice changes with the width
        warm_up(data, [Method("", "", loss, 2.0 ** width, solvers[start])
                       for loss in losses for start in starts
                       for width in {order[0], order[-1]}], settings)
    runs = []
    for loss in losses:
        for start in starts:
            solver, w = solvers[start], None
            options = dict(forcing="constant", xi=PAPER_XI) if solver == "tron" else {}
            for log2_sigma in order:
                model, run = train_and_score(data, loss, settings, 2.0 ** log2_sigma,
                                             solver, w0=w, **options)
                if start == "warm":
                    w = model_weights(model)
                if loss == "psi_g":
                    run["hinge_objective"] = hinge_objective(data, settings, model)
                runs.append(dict(loss=loss, start=start, log2_sigma=log2_sigma,
                                 solver=model.params["solver"], **run))
    return runs


def chosen_sigma(summary, losses=SWEEP_LOSSES):
    """The width the methods use, read off a sweep's summary by the one-standard-error rule
    (Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 7.10): the
    largest sigma whose cold-start test accuracy, averaged over ``losses``, is within one
    standard error of the best. Below a width the curve is flat to within the folds' noise
    (the losses approach the hinge), and there the larger sigma is the better conditioned
    problem: the highest mean alone would pick among equal accuracies by noise.

    The standard error of a width is std / sqrt(runs) of each loss's accuracies, averaged
    over the losses.

    Returns
    -------
    int or float
        log2 sigma.
    """
    by = {}
    for r in summary:
        if r.get("start", "cold") == "cold" and r["loss"] in losses:
            acc = r["test_accuracy"]
            se = 0.0 if acc.get("std") is None else acc["std"] / math.sqrt(r["n_runs"])
            by.setdefault(r["log2_sigma"], []).append((acc["mean"], se))
    if not by:
        raise ValueError("the sweep has no cold-start runs of " + ", ".join(losses))
    mean = {s: float(np.mean([m for m, _ in v])) for s, v in by.items()}
    best = max(mean, key=lambda s: (mean[s], s))
    within = mean[best] - float(np.mean([se for _, se in by[best]]))
    return max(s for s in mean if mean[s] >= within)


def accepted_history(history, points=None):
    """The accepted iterates of a second-order run's ``history``: ``iteration``,
    ``grad_norm``, ``f``, ``passes``, ``seconds``, ``cg_steps`` (the CG steps spent since the
    previous accepted iterate, rejected trial steps included) and, with ``points`` (one
    value per history entry, e.g. ||w - w*|| of each point evaluated), ``distance``."""
    out, cg_steps = [], 0
    for i, h in enumerate(history):
        cg_steps += h["cg_steps"]
        if h["accepted"]:
            entry = dict(iteration=len(out), grad_norm=h["grad_norm"], f=h["f"],
                         passes=h["passes"], seconds=h["seconds"], cg_steps=cg_steps)
            if points is not None:
                entry["distance"] = points[i]
            out.append(entry)
            cg_steps = 0
    return out


class DistanceRecorder(SmoothSVMObjective):
    """The objective, recording f and ||w - w_star|| at every point it evaluates (a TRON
    run evaluates its start, then one trial point per iteration: entry i of the record
    is entry i of the run's history, the new iterate where that trial was accepted)."""

    def __init__(self, source, loss, lam, w_star, **kwargs):
        super().__init__(source, loss, lam, **kwargs)
        self.w_star = w_star
        self.points = []

    def evaluate(self, w, curved=True):
        state = super().evaluate(w, curved)
        self.points.append((state.f, float(np.linalg.norm(w - self.w_star))))
        return state


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


def newton_correction(objective, w, rtol=1e-8, max_steps=500):
    """The Newton step d = -H(w)^-1 grad L(w), by conjugate gradient on the objective's
    Hessian products to ||H d + g|| <= ``rtol`` ||g|| (or ``max_steps`` products). Near the
    solution ||w + d - w_opt|| = O(||w - w_opt||^2): one correction turns a solution
    accurate to 1e-6 into one accurate to rounding, and the norm of a second correction
    estimates what is left.

    Returns
    -------
    d : array of shape (n_variables,)
    grad_norm : float
        ||grad L(w)||.
    steps : int
        Hessian products.
    residual : float
        ||H d + g|| / ||g||.
    """
    state = objective.evaluate(w)
    g = state.grad
    d, r = np.zeros_like(g), -g
    p, rr = r.copy(), float(r @ r)
    g2, steps = rr, 0
    while rr > rtol ** 2 * g2 and steps < max_steps:
        hp = objective.hessp(state, p)
        steps += 1
        alpha = rr / float(p @ hp)
        d += alpha * p
        r -= alpha * hp
        rr, rr_old = float(r @ r), rr
        p = r + (rr / rr_old) * p
    return d, state.grad_norm, steps, float(np.sqrt(rr / g2)) if g2 > 0 else 0.0


def tight_solution(source, loss, sigma, settings, max_iter=200):
    """w* for the convergence study: line-search Newton (another method than the TRON runs
    it measures) with no tolerance, until the objective stops decreasing in float64, then
    one :func:`newton_correction` (a solver's own tests end where f no longer resolves the
    decrease, ||grad|| ~ 1e-9; the correction reaches what the gradient resolves).

    Returns
    -------
    w : array of shape (n_variables,)
    record : dict
        ``solver``, ``n_iter``, ``message``, ``grad_norm`` (after the solver),
        ``correction`` (the norm of the correction applied), ``correction_cg_steps`` and
        ``correction_residual`` (its CG), ``grad_norm_corrected`` (at w*) and
        ``distance_floor``: the norm of a second correction, an estimate of ||w* - w_opt||.
    """
    tight = replace(settings, tol=0.0, abs_tol=0.0, max_iter=max_iter)
    model = _fit(source, loss, tight, sigma, solver="newton")
    objective = SmoothSVMObjective(source, loss, settings.lam, sigma=sigma,
                                   fit_intercept=settings.fit_intercept)
    w = model_weights(model)
    with threadpool_limits(1, user_api="blas"):
        d1, _, steps, residual = newton_correction(objective, w)
        w_star = w + d1
        d2, grad_norm, _, _ = newton_correction(objective, w_star)
    p = model.params
    return w_star, dict(solver="newton", n_iter=p["n_iter"], message=p["message"],
                        grad_norm=p["grad_norm"], correction=float(np.linalg.norm(d1)),
                        correction_cg_steps=steps, correction_residual=residual,
                        grad_norm_corrected=grad_norm,
                        distance_floor=float(np.linalg.norm(d2)))


def run_convergence(source, losses, settings, tol=1e-12, max_iter=100, kappa=1.0, log=None,
                    jobs=1):
    """TRON on the whole data set with the forcing term xi_t = 0.1 and xi_t = min(0.1,
    kappa ||grad L(w_t)||) (the paper's Theorem 4: Q-linear and quadratic convergence of
    ||w_t - w*||), with w* from :func:`tight_solution`.

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
    jobs : int
        Losses at once, in processes of their own (``source`` then a Store).

    Returns
    -------
    list of dict
        One per (loss, forcing): ``loss``, ``sigma``, ``forcing``, ``xi``, ``kappa``,
        ``seconds`` (of a run in which numba compiled nothing: :func:`timed_without_compiling`),
        ``message``, ``w_star`` (:func:`tight_solution`'s record), ``history`` (see
        :func:`accepted_history`, with ``distance`` = ||w_t - w*||).
    """
    shared = _shared(source, jobs)
    runs = []
    for loss_runs in _each([(_converge, (shared, loss, sigma, settings, tol, max_iter, kappa))
                            for loss, sigma in losses], jobs):
        for run, summary in loss_runs:
            runs.append(run)
            if log:
                log(f"convergence {run['loss']} {run['forcing']}: {summary}")
    return runs


def _converge(source, loss, sigma, settings, tol, max_iter, kappa):
    """:func:`run_convergence`'s runs of one loss, each with what the log says of it."""
    source = _opened(source)
    tron = SOLVERS["tron"]
    w_star, star = tight_solution(source, loss, sigma, settings)

    def fit(forcing):
        objective = DistanceRecorder(source, loss, settings.lam, w_star, sigma=sigma,
                                     fit_intercept=settings.fit_intercept)
        # as train_stream runs a solver: BLAS's threads would spin on the kernels' cores
        with threadpool_limits(1, user_api="blas"):
            return objective, tron(objective, tol=tol, max_iter=max_iter, forcing=forcing,
                                   xi=PAPER_XI, kappa=kappa)

    runs = []
    for forcing in ("constant", "quadratic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the floor is the aim
            (objective, result), seconds = timed_without_compiling(
                functools.partial(fit, forcing))
        if len(objective.points) != len(result.history) or any(
                h["accepted"] and h["f"] != f
                for h, (f, _) in zip(result.history, objective.points)):
            raise RuntimeError("TRON's evaluations do not match its history")
        runs.append((dict(loss=loss, sigma=sigma, forcing=forcing, xi=PAPER_XI, kappa=kappa,
                          seconds=seconds, message=result.message, w_star=star,
                          history=accepted_history(result.history,
                                                   [d for _, d in objective.points])),
                     f"{result.n_iter} it, ||grad|| {result.grad_norm:.3g}, ||w - w*|| "
                     f"{objective.points[-1][1]:.3g} ({result.message})"))
    return runs
