"""``train_stream``: one call from a store path or a matrix to a trained :class:`Model`."""

import contextlib
import sys

import numpy as np

from ._ahead import compiling_ahead
from ._interrupt import interrupts_after_compiling
from ._names import named
from ._progress import closing_bars, iteration_log
from ._runtime import one_blas_thread, prepare
from .data import BlockSource, InMemorySource, Store, StoreSet
from .data.source import label_text
from .data.storeset import index_base, names_stores, open_stores
from .data.textcache import store_paths
from .data.checksum import digest
from .model import Model
from .objective import SmoothSVMObjective
from .objective.problem import NO_DASK_ROW_WEIGHTS, check_lam
from .losses import get_loss
from .solvers import registry
from .solvers.auto import choose_solver
from .solvers.checkpoint import Checkpoint
from .solvers.common import check_max_seconds, check_w0


def check_w0_shape(w0, n_features, fit_intercept, n_classes=None):
    """Refuse a warm start ``w0`` that is not of n_variables (``n_features``, and the
    intercept if ``fit_intercept``), or of ``n_classes`` rows of them, saying so."""
    n_variables = n_features + bool(fit_intercept)
    shape = (n_variables,) if n_classes is None else (n_classes, n_variables)
    if np.shape(w0) != shape:
        rows = "" if n_classes is None else "one row per class of "
        intercept = " + 1 intercept (fit_intercept)" if fit_intercept else ""
        raise ValueError(f"w0 has shape {np.shape(w0)}, expected {shape}: {rows}n_variables "
                         f"= the data's {n_features} features{intercept}")


def check_both_classes(source, counts):
    """Refuse a binary source whose rows all hold one label (``counts`` rows per class; a
    store converted from such a text reads the other label as the missing one of -1/+1):
    nothing to separate. (No rows at all: the objective says so.)"""
    if source.n_samples and not source.multiclass and min(counts) == 0:
        present = int(np.argmax(counts))
        raise ValueError(f"{source.name}: all {counts[present]:,} rows are of the class "
                         f"{label_text(source.classes[present])}, none of "
                         f"{label_text(source.classes[1 - present])}: a classifier needs rows of "
                         f"two classes")


@contextlib.contextmanager
def open_source(data, y=None, client=None, check=None, progress=True):
    """A BlockSource for a store path, a list of store paths (read as one), a BlockSource,
    or a matrix with labels ``y``; with a Dask ``client``, the stores held by its workers.
    A path of svmlight text stands for its store, converted once and kept (announced with
    ``progress``; :mod:`streamssvm.data.textcache`). ``check(source)``, if given, is called
    as soon as the source is open, before any read (with a client, on the stores opened on
    the driver, before the workers are asked)."""
    paths = names_stores(data)
    if paths and y is not None:
        raise ValueError("y is given with a store path: the store holds its own labels")
    if paths:  # the workers of a client open the stores by these paths
        data = store_paths(data, progress=progress)
    if client is not None:
        if not (paths or isinstance(data, (Store, StoreSet))):
            raise ValueError(f"{getattr(data, 'name', 'a matrix')}: training with a Dask client "
                             f"needs stores, whose blocks every worker reads by path")
        from .distributed import DaskStores  # dask is an optional dependency
        with DaskStores(data, client, check=check) as stores:
            yield stores
        return
    if paths:
        opened = open_stores(data)
    elif isinstance(data, BlockSource):
        opened = contextlib.nullcontext(data)
    elif y is None:
        raise ValueError("training on a matrix needs its labels y")
    else:
        opened = contextlib.nullcontext(InMemorySource(data, y))
    with opened as source:
        if check is not None:
            check(source)
        yield source


@interrupts_after_compiling()
def train_stream(data, y=None, loss="psi_g", sigma=None, lam=1e-5, solver="auto", tol=1e-4,
                 abs_tol=None, liblinear_tol=False, max_iter=None, fit_intercept=False,
                 intercept_scaling=1.0, w0=None, sigma_path=(), n_threads=None, progress=True,
                 sample_weight=None, checkpoint=None, checkpoint_every=60.0, client=None,
                 hold="auto", verbose=False, **solver_options):
    """Train a linear classifier by minimising

        L(w) = lam / 2 ||w||^2 + (1 / n) sum_i c_i psi(y_i w.x_i)

    streaming the data block by block (it never has to fit in memory).

    Parameters
    ----------
    data : str, path-like or list of them, BlockSource, or array / sparse matrix
        A store made by ``convert_svmlight``, several (same width and labels, read as one in
        the order given), any block source, or an in-memory matrix of shape
        (n_samples, n_features). svmlight text in place of a store is converted once into a
        store kept for the next calls (:mod:`streamssvm.data.textcache`).
    y : array of shape (n_samples,), optional
        Labels (two distinct values) when ``data`` is a matrix.
    loss : str or Loss
        ``"psi_g"``, ``"psi_m"`` (smooth hinges), ``"squared_hinge"``, ``"logistic"``.
    sigma : float, optional
        Smoothing width of psi_G / psi_M (default 2**-3).
    lam : float
        Regularisation strength lambda (LIBLINEAR's C = 1 / (lam * n)).
    solver : str
        ``"auto"`` (default): by the loss and the data's shape, SDCA (dual coordinate ascent) or
        line-search Newton (:func:`streamssvm.solvers.choose_solver`). Second order: ``"tron"``
        (trust-region Newton), ``"newton"`` (line search, LIBLINEAR 2.40's), ``"lbfgs"``;
        full gradient: ``"gd"``, ``"agd"`` (Nesterov); stochastic, streaming the blocks in
        a seeded random order: ``"sgd"``, ``"pegasos"``, ``"svrg"``, ``"saga"``, ``"sdca"``
        (dual coordinate ascent through the loss conjugate; no intercept).
    tol, abs_tol, liblinear_tol
        Stopping rule: ||grad L(w)|| <= tol ||grad L(0)|| (tol scaled by
        max(min(#pos, #neg), 1) / n if ``liblinear_tol``), or <= abs_tol. The stochastic
        solvers check it where they evaluate the full gradient (every ``eval_every``
        epochs). The default tol, 1e-4, stops where the test accuracy is that of the
        converged model (docs: the defaults); LIBLINEAR's eps 0.01 is ``tol=0.01,
        liblinear_tol=True``.
    max_iter : int, optional
        Iterations, or epochs for the stochastic solvers (default: the solver's own, e.g.
        1000 for TRON, 20 for SGD); with ``sigma_path``, for each stage (the model's
        ``n_iter``, passes and seconds count all stages).
    fit_intercept : bool
        Learn an unregularised intercept (a constant feature of value ``intercept_scaling``).
        Off by default, as LIBLINEAR's bias: SDCA, which ``"auto"`` picks on wide data,
        takes none.
    w0 : array of shape (n_variables,), optional
        Warm start: a weight per feature, then with ``fit_intercept`` the intercept over
        ``intercept_scaling`` (NaN or infinite values are refused before the data is opened,
        a wrong length as soon as it is: before any read, or Dask worker asked).
    sigma_path : sequence of float
        Continuation for a small sigma: solve at each of these widths first (decreasing,
        all larger than ``sigma``; to the same tolerance and ``max_iter``; a ``max_seconds``
        is the budget of all the stages, each starting with what the ones before left), each
        warm-started from the last, then at ``sigma``;
        ``loss`` is then a name without its sigma (``"psi_g"``). A sharp loss (small
        sigma) is ill-conditioned far from its optimum; each stage starts the next near
        its optimum, where fewer Newton iterations are needed.
    n_threads : int, optional
        Kernel threads (default all cores numba sees).
    progress : bool or str
        tqdm bars (a str: the solver's label, before its name), closed however the call
        ends (an exception or Ctrl-C too); and a line on stderr for text converted or
        reused.
    verbose : bool
        Print one line per iteration (epoch) on the standard error, as LIBLINEAR does:
        f, ||grad||, CG steps, trust radius or step, passes and seconds.
    sample_weight : array of shape (n_samples,), optional
        The row weights c_i >= 0 (default 1): LIBLINEAR's per-row C_i = c_i / (lam n).
        Not with the stochastic solvers. Class weights: see ``train_one_vs_rest``.
    client : distributed.Client, optional
        Train across the workers of this Dask client: ``data`` is one or several store
        paths that every worker opens itself (a shared filesystem), the driver runs the
        solver on the oracle summed over the workers (docs/DISTRIBUTED.md). Not with the
        stochastic solvers, nor with ``sample_weight``.
    checkpoint : str or path-like, optional
        Write the solver's state to this file every ``checkpoint_every`` seconds and at
        the end (atomically); if the file exists, resume from it: a killed run ends at the
        same model as an uninterrupted one. A file written for other data, settings or
        ``w0`` is refused; ``max_iter`` and ``max_seconds`` are budgets, and a run they
        stopped goes on with larger ones (SDCA's then takes other steps than a run given
        them at once: its evaluations and shrinking follow ``max_iter``). Not with
        ``sigma_path``, ``agd`` or ``lbfgs``.
    checkpoint_every : float
        Seconds between checkpoints (0: every iteration or epoch).
    hold : bool or "auto"
        Keep the data in memory, by rows and by columns, from its first pass on: True,
        False (every pass reads the file), or "auto" (when it fits a quarter of the memory
        the process may still use). The stochastic solvers' epochs follow ``hold``, not the
        free memory: one permutation of all rows with True (and for a matrix), windows of
        blocks with False, and with "auto" one permutation when the rows take at most a
        fixed size, windows above (:mod:`streamssvm.data.plan`). A run resumed from a
        ``checkpoint`` with "auto" holds the data as the checkpoint's run did.
    **solver_options
        Passed to the solver (with ``"auto"``, they narrow the choice to a solver that takes
        them: ``forcing`` means TRON, ``gap_tol`` SDCA), e.g. TRON: ``forcing``, ``xi``,
        ``kappa``, ``preconditioner``, ``backtrack``; stochastic: ``seed``, ``eval_every``,
        ``max_seconds``; SGD: ``learning_rate``, ``eta0``, ``power_t``, ``average``; SAGA/SVRG:
        ``step``; SDCA: ``gap_tol``, ``inner_epochs``, ``shrinking`` (see
        :mod:`streamssvm.solvers`).

    Returns
    -------
    Model
    """
    prepare()
    lam = check_lam(lam)  # before the data is opened
    if w0 is not None:
        w0 = check_w0(w0)
    if client is not None:  # before the workers are asked
        if sample_weight is not None:
            raise ValueError(NO_DASK_ROW_WEIGHTS)
        registry.check_on_workers(solver)
    if not isinstance(sigma_path, (list, tuple, np.ndarray)):
        raise ValueError(f"sigma_path must be a sequence of widths, got {sigma_path!r}")
    stages = []
    for width in sigma_path:  # each stage's loss, before the data is read
        try:
            stages.append(get_loss(loss, width).sigma)
        except ValueError as e:
            raise ValueError(f"{named('sigma_path')} {list(sigma_path)}: {e}") from None
    if stages:  # larger sigmas first, down to sigma
        ends = [*stages[1:], get_loss(loss, sigma).sigma]
        for i, (width, end) in enumerate(zip(stages, ends)):
            if not width > end:
                raise ValueError(
                    f"{named('sigma_path')} {list(sigma_path)}: stage {width:g} is not "
                    f"larger than {'the next stage' if i + 1 < len(stages) else named('sigma')} "
                    f"{end:g} (the stages go from larger sigmas down to sigma)")
    check = None if w0 is None else (  # as soon as the width is known
        lambda source: check_w0_shape(w0, source.n_features, fit_intercept))
    with one_blas_thread(), closing_bars(), \
            iteration_log(sys.stderr if verbose else None), \
            open_source(data, y, client, check, progress) as source:
        class_counts = [int(c) for c in source.class_counts()]
        check_both_classes(source, class_counts)
        chosen = solver == "auto"
        if chosen:
            solver = choose_solver(get_loss(loss, sigma), source.n_samples, source.n_features,
                                   fit_intercept, sample_weight is not None, client is not None)
        solver, solver_options = _options_for(registry.record(solver).name, solver_options,
                                              chosen)
        chosen_record = registry.record(solver)
        solve = chosen_record.function
        if client is not None:  # an option may have narrowed auto to a stochastic one
            registry.check_on_workers(solver)
        if sample_weight is not None and not chosen_record.takes_row_weights:
            raise ValueError(registry.no_row_weights())  # before the data is read
        make_objective = SmoothSVMObjective
        if client is not None:
            from .distributed import DaskObjective as make_objective
        if max_iter is None:
            max_iter = chosen_record.max_iter
        if checkpoint is not None and (not chosen_record.takes_checkpoint or len(sigma_path)):
            able = registry.names(lambda r: r.takes_checkpoint)
            raise ValueError(f"checkpoints work with the solvers {', '.join(able)}, without "
                             f"{named('sigma_path')}")
        history, passes, seconds, cached_sweeps, n_iter = [], 0, 0.0, 0, 0
        budget = solver_options.get("max_seconds")  # the whole call's, shared by the stages
        check_max_seconds(budget)  # here: the stages' remainders are clamped at 0
        # the rows with curvature, copied at every evaluation, serve only Hessian products:
        # a solver without them would hold the copy for nothing
        cache_curved = "auto" if chosen_record.uses_hessian_products else False
        kind = "matrix" if isinstance(source, InMemorySource) else "store"
        ahead = () if client is not None else (f"{kind}:{solver}",)  # workers compile theirs
        with compiling_ahead(*ahead):
            for width in [*sigma_path, sigma]:
                objective = make_objective(
                    source, loss, lam, sigma=width, fit_intercept=fit_intercept,
                    intercept_scaling=intercept_scaling, n_threads=n_threads,
                    progress=progress and source.nnz > 20_000_000, sample_weight=sample_weight,
                    hold=hold, cache_curved=cache_curved)
                if checkpoint is not None:
                    # the data's contents, not its name: a store resumes under any path
                    problem = dict(data=[source.n_samples, source.n_features, source.nnz,
                                         source.data_digest()],
                                   loss=objective.loss.key, lam=lam,
                                   solver=solver, tol=tol, abs_tol=abs_tol,
                                   liblinear_tol=liblinear_tol, fit_intercept=fit_intercept,
                                   intercept_scaling=intercept_scaling,
                                   # a budget, as max_iter is: a run stopped by it goes on
                                   options={k: v for k, v in solver_options.items()
                                            if k != "max_seconds"},
                                   weights=None if objective.sample_weight is None
                                   else digest([objective.sample_weight]),
                                   w0=None if w0 is None else digest([w0]))
                    plan = objective.data if client is None else None  # workers hold shards
                    saved = Checkpoint(checkpoint, checkpoint_every, problem,
                                       held=lambda plan=plan: plan is not None and plan.holds_data)
                    recorded = saved.recorded_hold()
                    if plan is not None and hold == "auto" and recorded is not None:
                        plan.hold_as(recorded)  # as the checkpoint's run did: its sums' order
                    solver_options = dict(solver_options, checkpoint=saved)
                left = {} if budget is None else {"max_seconds": max(budget - seconds, 0.0)}
                result = solve(objective, w0=w0, tol=tol, abs_tol=abs_tol,
                               liblinear_tol=liblinear_tol, max_iter=max_iter, progress=progress,
                               **dict(solver_options, **left))
                history += [dict(h, sigma=objective.loss.sigma, passes=h["passes"] + passes,
                                 seconds=h["seconds"] + seconds) for h in result.history]
                passes, seconds = passes + result.passes, seconds + result.seconds
                n_iter += result.n_iter
                cached_sweeps += objective.cached_sweeps
                w0 = result.w
        classes = source.classes
        data_record = dict(source=source.name, n_samples=source.n_samples,
                           n_features=source.n_features, nnz=source.nnz,
                           class_counts=class_counts, zero_based=index_base(source))
    w = result.w
    coef = w[:objective.n_features]
    intercept = w[-1] * objective.bias if fit_intercept else 0.0
    loss = objective.loss
    params = dict(loss=loss.name, loss_spec=None if loss.is_family else loss.spec,
                  sigma=loss.sigma, lam=objective.lam,
                  solver=solver, tol=tol, abs_tol=abs_tol, liblinear_tol=liblinear_tol,
                  max_iter=max_iter, fit_intercept=fit_intercept,
                  intercept_scaling=intercept_scaling, n_samples=objective.n_samples,
                  converged=result.converged, message=result.message, n_iter=n_iter,
                  passes=passes, cached_sweeps=cached_sweeps, seconds=seconds,
                  sigma_path=list(sigma_path), objective=result.f,
                  grad_norm=result.grad_norm, data=data_record,
                  **{k: v for k, v in solver_options.items() if k != "checkpoint"})
    return Model(np.array(coef), intercept, classes, params, history)


def _options_for(solver, options, chosen):
    """The solver and the ``options`` it takes. A name that no solver takes is an error; so is
    one that ``solver`` does not take, unless "auto" ``chosen`` it: the options then narrow the
    choice to a solver that takes them all (``forcing`` means TRON, ``gap_tol`` SDCA), as a
    user who names an option means the solver it belongs to."""
    takes = {r.name: r.option_names for r in registry.records()}
    unknown = sorted(set(options) - set().union(*takes.values()))
    if unknown:
        hint = (" (class weights: sample_weight, or train_one_vs_rest's class_weight)"
                if "class_weight" in unknown else "")
        raise TypeError(f"no solver takes the option(s) {', '.join(unknown)}{hint}")
    if chosen:
        takers = [name for name in (solver, *takes) if takes[name] >= options.keys()]
        if not takers:
            raise TypeError(f"no one solver takes the options {', '.join(sorted(options))} "
                            f"together")
        solver = takers[0]
    others = sorted(set(options) - takes[solver])
    if others:
        raise TypeError(f"solver {solver!r} takes no option(s) {', '.join(others)}")
    return solver, options
