"""Choosing lambda and sigma: k-fold cross-validation along warm-started paths.

For each fold k of K, the model of the other K - 1 folds (a row subset of the data,
:class:`~streamssvm.data.RowSubset`: a store's rows are read through the store, never
copied to disk) is trained at every point of a grid and scored on fold k: the accuracy and
the mean loss psi(y_i f(x_i)) of its rows. The grid is walked as a path, each fold's model
at one point the warm start ``w0`` of the next (Chu, Chiang, Lin et al. 2015; glmnet's
lambda paths):

- along lambda, from the largest down: the solution moves little between neighbours, and a
  large lambda is solved in few iterations;
- along sigma, for psi_G and psi_M, from the widest down: the first lambda at each sigma
  starts from the model at the previous sigma (the continuation ``train_stream``'s
  ``sigma_path`` makes for a small sigma).

The K folds of each point train in lockstep (:mod:`streamssvm.data.lockstep`), up to one
per core at once: each pass over the data serves every fold waiting for one, so a point
reads a store about as often as its longest fold makes passes, not K times as often; each
fold computes what it would alone.

A warm start changes where the solver starts, not where it stops: every point is solved to
the stopping rule ||grad L(w)|| <= tol ||grad L(0)||. L is lambda-strongly convex (without
an intercept), so a model w meeting it lies within ||grad L(w)|| / lambda of the optimum
w*, and a warm and a cold fit of one point differ by at most the sum of their gradient
norms over lambda (in objective, each is within ||grad L(w)||^2 / (2 lambda) of L(w*)).

The default lambda grid starts where the model is trivial. From w = 0 the gradient is
(1 / n) sum_i psi'(0) y_i x_i = -c g, with c = -psi'(0) and g = (1 / n) sum_i y_i x_i, and
for a large lambda the solution is w = c g / lambda to first order in 1 / lambda (exactly
for psi_G and psi_M while every margin stays below 1 - a few sigma, where psi' = -1).
Its margins are at most c ||g|| max_i ||x_i|| / lambda in size, within the unit where the
hinge-like losses bend at

    lambda_max = c ||g|| max_i ||x_i||,

and above it the predictions are those of sign(g.x), whatever lambda. The grid is
lambda_max, rounded up to a point of LIBLINEAR's C grid (C = 1 / (lambda n) a power of
``lam_ratio``), then down by factors of ``lam_ratio`` (LIBLINEAR's -C steps C up by 2).
At each sigma the path stops once ``patience`` points in a row have not raised the mean CV
accuracy above the best so far (points that score as the first one does, the trivial
model's plateau, do not count), or after ``max_lams`` points (a floor of lambda_max /
lam_ratio^(max_lams - 1)). LIBLINEAR stops instead when the folds' models have stopped
changing for 5 points of C, or at C = 1024.

References
----------
B.-Y. Chu, C.-H. Ho, C.-H. Tsai, C.-Y. Lin and C.-J. Lin, "Warm start for parameter
selection of linear classifiers", KDD 2015.
J. Friedman, T. Hastie and R. Tibshirani, "Regularization paths for generalized linear
models via coordinate descent", Journal of Statistical Software 33, 2010.
"""

import functools
import math
import numbers
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import kernels
from ._interrupt import interrupts_after_compiling
from ._names import named
from ._progress import closing_bars, progress_bar
from ._warn import warn
from .calibration import check_n_folds, stratified_folds
from .data import RowSubset
from .data.lockstep import Lockstep
from .data.source import label_text
from .losses import get_loss
from .objective.smooth_svm import check_lam, check_threads
from .solvers.common import ConvergenceWarning

# the losses whose width is chosen along with lambda by default, and their default widths:
# from psi_G's widest useful bend down past its default 2^-3 towards the hinge
SIGMA_LOSSES = ("psi_g", "psi_m")
DEFAULT_SIGMAS = (2.0 ** 1, 2.0 ** -1, 2.0 ** -3, 2.0 ** -5)
# what cross_validate sets itself, so that train_options may not
OWN_OPTIONS = ("lam", "sigma", "w0", "sigma_path", "checkpoint", "client", "sample_weight")


@dataclass
class CVResult:
    """What :func:`cross_validate` found.

    Attributes
    ----------
    loss : str
        The loss's name.
    lams : array of shape (n_lams,)
        The grid's lambdas, decreasing (the default grid: as far as any sigma's path went).
    sigmas : tuple of n_sigmas floats, or (None,)
        The widths, decreasing; (None,) for a loss without one (or whose name fixes it).
    accuracy : array of shape (n_sigmas, n_lams, n_folds)
        Held-out accuracy of each fold's model at each point; NaN past where a sigma's
        path stopped.
    mean_loss : array of shape (n_sigmas, n_lams, n_folds)
        Mean loss psi(y_i f(x_i)) over each fold's held-out rows (one-vs-rest: summed over
        the classes' problems), at the point's sigma.
    n_iter, passes : arrays of shape (n_sigmas, n_lams, n_folds), int
        Solver iterations and passes over the fold's rows at each point (-1: not run).
    converged : array of shape (n_sigmas, n_lams, n_folds), bool
    objective, grad_norm : arrays of shape (n_sigmas, n_lams, n_folds)
        L(w) and ||grad L(w)|| of each fold's model on its training rows (one-vs-rest: the
        sum and the largest over the classes' problems): w is within grad_norm / lambda
        of the point's optimum.
    folds : array of shape (n_samples,)
        Each row's fold, 0 .. n_folds - 1.
    lam_max : float or None
        Where the default lambda grid starts (None for a given grid).
    best_lam, best_sigma : float, float or None
        The point of highest mean accuracy (ties: the largest lambda, then the largest
        sigma: the simplest model).
    best_accuracy, best_std : float
        Mean and standard deviation over the folds of the accuracy there.
    model : Model or None
        Trained on all rows at the best point (``refit``).
    seconds : float
        Wall time of the path (the refit excluded).
    data_passes : int or None
        Passes over the data the path made with its folds in lockstep, each shared by
        every fold waiting for one (:mod:`streamssvm.data.lockstep`); None with
        ``lockstep=False``.
    """

    loss: str
    lams: np.ndarray
    sigmas: tuple
    accuracy: np.ndarray
    mean_loss: np.ndarray
    n_iter: np.ndarray
    passes: np.ndarray
    converged: np.ndarray
    objective: np.ndarray
    grad_norm: np.ndarray
    folds: np.ndarray
    lam_max: object
    best_lam: float
    best_sigma: object
    best_accuracy: float
    best_std: float
    model: object = None
    seconds: float = 0.0
    data_passes: object = None
    options: dict = field(default_factory=dict)

    @property
    def n_folds(self):
        return self.accuracy.shape[2]

    @property
    def mean_accuracy(self):
        """Mean over the folds, array of shape (n_sigmas, n_lams) (NaN where not run)."""
        return _mean(self.accuracy)

    @property
    def std_accuracy(self):
        """Standard deviation over the folds, array of shape (n_sigmas, n_lams)."""
        return _std(self.accuracy)

    def points(self):
        """``(i, j)`` indices into ``sigmas`` and ``lams`` of the points that were run, in
        path order."""
        ran = ~np.isnan(self.accuracy[:, :, 0])
        return [(i, j) for i in range(len(self.sigmas)) for j in range(len(self.lams))
                if ran[i, j]]

    @property
    def cv_results_(self):
        """The points as scikit-learn's ``GridSearchCV.cv_results_`` gives them: a dict of
        arrays, one entry per point run (in path order): ``params``, ``param_lam``,
        ``param_sigma``, ``split{k}_test_score`` (accuracy), ``mean_test_score``,
        ``std_test_score``, ``rank_test_score`` (1: best; ties share the lowest rank),
        ``mean_test_loss``, ``std_test_loss``."""
        points = self.points()
        acc = np.array([self.accuracy[i, j] for i, j in points]).reshape(-1, self.n_folds)
        losses = np.array([self.mean_loss[i, j] for i, j in points]).reshape(-1, self.n_folds)
        mean = acc.mean(axis=1)
        out = {"params": [{"lam": float(self.lams[j]), "sigma": self.sigmas[i]}
                          for i, j in points],
               "param_lam": np.array([self.lams[j] for _, j in points]),
               "param_sigma": np.array([self.sigmas[i] for i, _ in points], dtype=object)}
        for k in range(self.n_folds):
            out[f"split{k}_test_score"] = acc[:, k]
        out.update(mean_test_score=mean, std_test_score=acc.std(axis=1),
                   rank_test_score=1 + np.array([np.sum(mean > m) for m in mean]),
                   mean_test_loss=losses.mean(axis=1), std_test_loss=losses.std(axis=1))
        return out

    def table(self):
        """The points as text: one line per point run, the passes over a store, then the
        best point."""
        lines = [f"{'sigma':>10} {'lambda':>12} {'C=1/(lam n)':>12} {'accuracy':>9} "
                 f"{'std':>7} {'loss':>9} {'passes':>7}"]
        n = len(self.folds)
        mean, std = self.mean_accuracy, self.std_accuracy
        losses = _mean(self.mean_loss)
        for i, j in self.points():
            sigma = "-" if self.sigmas[i] is None else f"{self.sigmas[i]:.4g}"
            best = "  *" if (self.lams[j], self.sigmas[i]) == (self.best_lam,
                                                                self.best_sigma) else ""
            lines.append(f"{sigma:>10} {self.lams[j]:12.4g} {1 / (self.lams[j] * n):12.4g} "
                         f"{mean[i, j]:9.5f} {std[i, j]:7.4f} {losses[i, j]:9.5f} "
                         f"{int(self.passes[i, j].sum()):7d}{best}")
        if self.data_passes is not None:
            fold_passes = int(self.passes[self.passes >= 0].sum())
            lines.append(f"{self.data_passes} passes over the data, shared by the folds "
                         f"(their training passes: {fold_passes})")
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self):
        """One line: the best point and its accuracy."""
        sigma = "" if self.best_sigma is None else f" sigma {self.best_sigma:.6g}"
        return (f"best: lambda {self.best_lam:.6g}{sigma} (C = 1/(lambda n) = "
                f"{1 / (self.best_lam * len(self.folds)):.6g}): {self.n_folds}-fold accuracy "
                f"{self.best_accuracy:.5f} +- {self.best_std:.5f}")

    def to_json(self):
        """The result as plain JSON values (the model left out: ``model.save`` writes it)."""
        return dict(loss=self.loss, lams=self.lams.tolist(), sigmas=list(self.sigmas),
                    accuracy=_nan_none(self.accuracy), mean_loss=_nan_none(self.mean_loss),
                    n_iter=self.n_iter.tolist(), passes=self.passes.tolist(),
                    converged=self.converged.tolist(), objective=_nan_none(self.objective),
                    grad_norm=_nan_none(self.grad_norm), n_folds=self.n_folds,
                    lam_max=self.lam_max, best_lam=self.best_lam, best_sigma=self.best_sigma,
                    best_accuracy=self.best_accuracy, best_std=self.best_std,
                    seconds=self.seconds, data_passes=self.data_passes,
                    options=self.options)

    def plot(self, path, overwrite=False):
        """Write CV accuracy against lambda, one curve per sigma (error bars: the folds'
        standard deviation), to ``path`` (any format matplotlib writes, e.g. .png; an
        existing file replaced only with ``overwrite``); a ValueError saying how to install
        matplotlib without it."""
        try:
            import matplotlib
        except ImportError:
            raise ValueError("plotting needs matplotlib: pip install 'streamssvm[plot]'") from None
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from ._atomic import open_output

        fig, ax = plt.subplots(figsize=(6, 4))
        mean, std = self.mean_accuracy, self.std_accuracy
        for i, sigma in enumerate(self.sigmas):
            ran = ~np.isnan(mean[i])
            ax.errorbar(self.lams[ran], mean[i, ran], yerr=std[i, ran], marker="o", ms=3,
                        capsize=2, label=self.loss if sigma is None else f"sigma {sigma:.4g}")
        ax.axvline(self.best_lam, color="grey", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("lambda")
        ax.set_ylabel(f"{self.n_folds}-fold CV accuracy")
        ax.set_title(f"{self.loss}: {self.summary().split(': ', 1)[0]}", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fmt = str(path).rsplit(".", 1)[-1] if "." in str(path) else "png"
        with open_output(path, "wb", overwrite=overwrite) as fh:
            fig.savefig(fh, format=fmt, dpi=120)
        plt.close(fig)


def _mean(values):
    """Mean over the last axis, NaN (without a warning) where a point was not run."""
    with np.errstate(invalid="ignore"):
        return values.sum(axis=-1) / values.shape[-1]


def _std(values):
    mean = _mean(values)
    with np.errstate(invalid="ignore"):
        return np.sqrt(_mean((values - mean[..., None]) ** 2))


def _nan_none(values):
    return [[[None if math.isnan(v) else float(v) for v in row] for row in plane]
            for plane in values]


def check_grid(values, what, check):
    """``values`` as a tuple of floats, each taken by ``check``, strictly decreasing (the
    path's order); a ValueError naming ``what`` (and the first offending value) else."""
    if isinstance(values, (str, bytes)) or not np.iterable(values):
        raise ValueError(f"{named(what)} must be a sequence of numbers, got {values!r}")
    values = tuple(check(v) for v in values)
    if not values:
        raise ValueError(f"{named(what)} is empty: give at least one value")
    for a, b in zip(values, values[1:]):
        if not b < a:
            why = "twice" if a == b else "after the smaller"
            raise ValueError(f"{named(what)} {list(values)}: {b:g} comes {why} {a:g}; give "
                             f"them decreasing, without repeats (the path goes from the "
                             f"largest down, each point warm-starting the next)")
    return values


def _check_sigma(loss, sigma):
    """``sigma`` as the width ``loss`` takes (a ValueError from get_loss otherwise)."""
    if isinstance(sigma, (bool, np.bool_)):
        raise ValueError(f"{named('sigmas')}: {sigma!r} is not a width")
    return get_loss(loss, sigma).sigma


def sigma_grid(loss, sigmas):
    """The widths of the path: ``sigmas`` checked (decreasing, each one ``loss`` takes),
    or by default :data:`DEFAULT_SIGMAS` for a plain psi_g / psi_m, else (None,): the
    loss's own width."""
    if sigmas is None:
        return DEFAULT_SIGMAS if isinstance(loss, str) and loss in SIGMA_LOSSES else (None,)
    return check_grid(sigmas, "sigmas", lambda s: _check_sigma(loss, s))


def check_training_classes(folds, class_index, classes, name):
    """Refuse folds whose training part (the other folds' rows) lacks a class: its model
    could not be trained. A held-out fold may lack one (it is only scored)."""
    k, n_folds = len(classes), int(folds.max()) + 1
    counts = np.bincount(folds * k + class_index, minlength=n_folds * k).reshape(n_folds, k)
    outside = counts.sum(axis=0) - counts
    fold, c = np.argwhere(outside == 0)[0] if np.any(outside == 0) else (None, None)
    if fold is not None:
        raise ValueError(f"{name}: all {int(counts[fold, c])} row(s) of class "
                         f"{label_text(classes[c])} are in fold {fold} of {n_folds}: the "
                         f"model of the other folds would have none; every class needs rows "
                         f"in at least two folds (more data, or other {named('folds')})")


def fold_numbers(folds, class_index, classes, seed, name):
    """Each row's fold: ``folds`` stratified folds drawn with ``seed`` (an int K, 2 <= K <=
    n), or ``folds`` itself (an array of n fold numbers 0 .. K - 1, each fold non-empty);
    checked so that every fold's training part holds every class."""
    n = len(class_index)
    if np.ndim(folds) == 0:
        check_n_folds(folds)
        if folds > n:
            raise ValueError(f"{name}: {named('folds')} = {folds} folds for {n} rows: at most "
                             f"one fold per row")
        fold_of = stratified_folds(class_index, int(folds), seed)
    else:
        fold_of = np.asarray(folds)
        if fold_of.shape != (n,) or not np.issubdtype(fold_of.dtype, np.integer) or \
                (n and fold_of.min() < 0):
            raise ValueError(f"{name}: {named('folds')} as an array gives each row's fold: "
                             f"{n} integers >= 0, got shape {fold_of.shape} of type "
                             f"{fold_of.dtype}")
        fold_of = fold_of.astype(np.int64)
        sizes = np.bincount(fold_of)
        if len(sizes) < 2 or np.any(sizes == 0):
            empty = np.flatnonzero(sizes == 0)
            raise ValueError(f"{name}: {named('folds')} gives {len(sizes)} fold(s)"
                             + (f", fold {empty[0]} with no rows" if empty.size else "")
                             + ": cross-validation needs at least 2 folds numbered 0 .. K - 1")
    check_training_classes(fold_of, class_index, classes, name)
    return fold_of


def slope_at_zero(loss):
    """c = -psi'(0) of a Loss: the pull on every margin at w = 0."""
    return -float(loss.derivatives(np.zeros(1))[1][0])


def lam_max(source, c, fit_intercept=False, intercept_scaling=1.0):
    """Where the model is trivial: c ||g|| max_i ||x_i|| (module docstring), in one pass.

    ``c`` is -psi'(0); g = (1 / n) sum_i y_i x_i, for each class's one-vs-rest problem over
    k > 2 classes (the largest ||g|| of them); with an intercept, x_i carries its constant
    ``intercept_scaling``.
    """
    k = len(source.classes) if source.multiclass else 1
    xty = np.zeros((source.n_features, k))
    ysum = np.zeros(k)
    r2 = 0.0
    for b in source.iter_blocks(transient=True):
        signs = ((b.y[:, None] == np.arange(k)) * 2.0 - 1.0 if source.multiclass
                 else b.y[:, None].astype(np.float64))
        xty += b.to_csr(source.n_features).T @ signs
        ysum += signs.sum(axis=0)
        r2 = max(r2, kernels.max_row_norm2(b.indptr, b.indices, b.data))
    if fit_intercept:
        xty = np.vstack([xty, intercept_scaling * ysum])
        r2 += intercept_scaling ** 2
    g = np.sqrt((xty ** 2).sum(axis=0)).max() / source.n_samples
    if not g > 0:  # sum_i y_i x_i = 0: bound ||g|| by max ||x_i|| instead
        g = math.sqrt(r2)
    return c * g * math.sqrt(r2)


def lam_grid(start, n_samples, ratio, length):
    """``length`` lambdas decreasing by ``ratio`` from ``start`` rounded up to a point of
    LIBLINEAR's C grid: lambda = 1 / (n ratio^k), k an integer (C = ratio^k)."""
    k = math.floor(math.log(1.0 / (start * n_samples)) / math.log(ratio))
    return 1.0 / (n_samples * ratio ** (k + np.arange(length, dtype=np.float64)))


def warm_point(model, fit_intercept, intercept_scaling):
    """The solver's variables of ``model``, as ``train_stream``'s ``w0`` takes them: the
    weights, then with an intercept the intercept over ``intercept_scaling`` (one row per
    class one-vs-rest)."""
    if not fit_intercept:
        return model.coef_
    bias = np.asarray(model.intercept_, np.float64) / intercept_scaling
    return np.hstack([model.coef_, bias[..., None]])


def held_out_loss(loss, decision, labels, multiclass):
    """Mean psi(y f(x)) over held-out rows: decision values and labels as
    :meth:`Model.decision_and_labels` gives them (one-vs-rest: the classes' sum)."""
    if multiclass:
        signs = np.where(labels[:, None] == np.arange(decision.shape[1]), 1.0, -1.0)
        return float(loss(signs * decision).sum(axis=1).mean())
    return float(loss(labels * decision).mean())


def _check_search(lam_ratio, patience, max_lams):
    if isinstance(lam_ratio, (bool, np.bool_)) or not isinstance(lam_ratio, numbers.Real) \
            or not (math.isfinite(lam_ratio) and lam_ratio > 1):
        raise ValueError(f"{named('lam_ratio')} must be a finite number > 1, got {lam_ratio!r}")
    for what, value in (("patience", patience), ("max_lams", max_lams)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
                or value < 1:
            raise ValueError(f"{named(what)} must be an integer >= 1, got {value!r}")


def _warn_unconverged(converged, n_iter, lams):
    """One ConvergenceWarning for the fits that stopped before the stopping rule (the
    path's points ran, ``n_iter`` >= 0), naming how many and the lambdas where."""
    ran = n_iter >= 0
    stopped = ran & ~converged
    if stopped.any():
        where = lams[stopped.any(axis=(0, 2))]
        span = (f"{where[0]:.4g}" if len(where) == 1 else f"{where[0]:.4g} .. {where[-1]:.4g}")
        warn(f"{int(stopped.sum())} of {int(ran.sum())} fits stopped unconverged (their "
             f"solver's max_iter or max_seconds), at lambda {span}: their scores are the "
             f"models' they reached (CVResult.converged); raise max_iter, or tol",
             ConvergenceWarning)


def _fit_and_score(views, w0, **train_options):
    """One fold's model at one point, trained on ``views``' first part from ``w0``, and
    its decision values and labels on the second (held-out) part."""
    from .multiclass import train_one_vs_rest

    inside, held = views
    model = train_one_vs_rest(inside, w0=w0, progress=False, **train_options)
    return (model, *model.decision_and_labels(held))


@interrupts_after_compiling()
def cross_validate(data, y=None, *, loss="psi_g", lams=None, sigmas=None, folds=5, seed=0,
                   fit_intercept=False, solver="auto", tol=1e-4, refit=True, progress=True,
                   lam_ratio=2.0, patience=5, max_lams=30, lockstep=True, **train_options):
    """K-fold cross-validation of lambda (and sigma) along warm-started paths, then a model
    refitted on all rows at the best point (see the module docstring).

    Parameters
    ----------
    data, y
        As ``train_stream`` takes them: a store path, several (read as one), svmlight text,
        a BlockSource, or a matrix of shape (n_samples, n_features) and its labels. Folds
        are row subsets of it, read through it (a store's rows are never copied).
    loss : str or Loss
        As for ``train_stream``.
    lams : sequence of float, optional
        The lambdas, positive, finite, strictly decreasing. Default: from where the model
        is trivial down by factors of ``lam_ratio``, each sigma's path stopped by
        ``patience`` or ``max_lams``.
    sigmas : sequence of float, optional
        The widths of psi_G / psi_M (or of another loss that has one), strictly
        decreasing. Default for a plain "psi_g" or "psi_m": 2^1, 2^-1, 2^-3, 2^-5; for
        other losses, the loss's own.
    folds : int or array of shape (n_samples,)
        K >= 2 (at most n) stratified folds drawn with ``seed``
        (:func:`streamssvm.calibration.stratified_folds`: each class dealt evenly), or each
        row's fold 0 .. K - 1. Each fold's training part must hold every class.
    seed : int or None
        Seed of the folds.
    fit_intercept, solver, tol
        As for ``train_stream``, at every point and in the refit.
    refit : bool
        Train on all rows at the best point (``model`` of the result), warm-started along
        the grid's larger sigmas (``sigma_path``) as the folds' paths were.
    progress : bool
        A bar over the path's fits (the solvers' own bars off), and the refit's bars.
    lam_ratio : float
        Factor between the default grid's lambdas (LIBLINEAR's -C: 2).
    patience : int
        The default grid stops at a sigma after this many points without a higher mean
        accuracy (not counting the trivial model's plateau at its start).
    max_lams : int
        Most points of the default grid at each sigma (its floor).
    lockstep : bool
        Train the folds of each point in lockstep, up to ``n_threads`` (default numba's
        thread count) at once, each pass over the data serving every fold waiting for one
        (:mod:`streamssvm.data.lockstep`; the results are the same); False: one fold after
        the other, each making its own passes (one fold's memory at a time, where lockstep
        holds every fold's at once, each in a K-th of the free memory).
    **train_options
        Passed to every training (``max_iter``, ``intercept_scaling``, ``n_threads``,
        ``hold``, ``class_weight``, solver options ...); not ``lam``, ``sigma``, ``w0``,
        ``sigma_path`` (the path sets them), ``checkpoint``, ``client``, ``sample_weight``.

    Returns
    -------
    CVResult
        Per point and fold the held-out accuracy and mean loss; the best point, its mean
        and standard deviation; the refitted model; ``cv_results_`` for scikit-learn users.

    Raises
    ------
    ValueError
        Before any pass over the data: a grid that is not positive, finite and strictly
        decreasing; folds < 2 or > n; a fold whose training part lacks a class.
    """
    from .api import open_source
    from .multiclass import train_one_vs_rest

    own = [name for name in OWN_OPTIONS if name in train_options]
    if own:
        raise ValueError(f"{', '.join(own)}: set by cross_validate along its path, not "
                         f"options of it (give {named('lams')} / {named('sigmas')} for the "
                         f"grid)")
    sigma_values = sigma_grid(loss, sigmas)
    lam_values = None if lams is None else np.array(check_grid(lams, "lams", check_lam))
    _check_search(lam_ratio, patience, max_lams)
    if np.ndim(folds) == 0:
        check_n_folds(folds)
    losses = [get_loss(loss, sigma) for sigma in sigma_values]
    scaling = train_options.get("intercept_scaling", 1.0)
    with closing_bars(), open_source(data, y, progress=progress) as source:
        labels = source.labels()
        class_index = labels if source.multiclass else (labels > 0).astype(np.intp)
        fold_of = fold_numbers(folds, class_index, source.classes, seed, source.name)
        n_folds, n = int(fold_of.max()) + 1, source.n_samples
        # the passes over the data shared by the folds' runs (a run per fold at each point)
        # as many folds at once as the kernels may use threads
        threads = check_threads(train_options.get("n_threads"))
        shared = Lockstep(source, threads and min(threads, n_folds)) if lockstep else None
        base = shared or source
        views = [(RowSubset(base, np.flatnonzero(fold_of != f)),
                  RowSubset(base, np.flatnonzero(fold_of == f))) for f in range(n_folds)]
        start = None
        if lam_values is None:
            c = max(slope_at_zero(each) for each in losses)
            if not c > 0:
                raise ValueError(f"loss {losses[0].name!r} has psi'(0) >= 0: no default "
                                 f"lambda grid; give the lambdas ({named('lams')})")
            start = lam_max(source, c, fit_intercept, scaling)
            lam_values = lam_grid(start, n, lam_ratio, max_lams)
        shape = (len(sigma_values), len(lam_values), n_folds)
        accuracy, mean_loss = np.full(shape, np.nan), np.full(shape, np.nan)
        n_iter, passes = np.full(shape, -1, np.int64), np.full(shape, -1, np.int64)
        converged = np.zeros(shape, bool)
        objective, grad_norm = np.full(shape, np.nan), np.full(shape, np.nan)
        bar = progress_bar(progress, total=None if start is not None else int(np.prod(shape)),
                           desc="cross-validation", unit="fit")
        began = time.perf_counter()
        latest, first = [None] * n_folds, [None] * n_folds
        reached = 0
        # a fold stopped unconverged is warned of once, after the path (from the folds'
        # threads the warning would name no line of the caller's)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for i, (sigma, loss_i) in enumerate(zip(sigma_values, losses)):
                best, stale, plateau, moved = -np.inf, 0, None, False
                for j, lam in enumerate(lam_values):
                    # along lambda; a sigma's first lambda from the wider sigma's first
                    tasks = [functools.partial(_fit_and_score, views[f],
                                               w0=latest[f] if j else first[f], loss=loss,
                                               sigma=sigma, lam=float(lam), solver=solver, tol=tol,
                                               fit_intercept=fit_intercept, **train_options)
                             for f in range(n_folds)]
                    fitted = shared.run(tasks) if shared else [task() for task in tasks]
                    for f, (model, decision, held_labels) in enumerate(fitted):
                        latest[f] = warm_point(model, fit_intercept, scaling)
                        if j == 0:
                            first[f] = latest[f]
                        accuracy[i, j, f] = model.accuracy(decision, held_labels, source.classes)
                        mean_loss[i, j, f] = held_out_loss(loss_i, decision, held_labels,
                                                           source.multiclass)
                        params = model.params
                        n_iter[i, j, f], passes[i, j, f] = params["n_iter"], params["passes"]
                        converged[i, j, f] = params["converged"]
                        problems = params.get("per_class", [params])
                        objective[i, j, f] = sum(p["objective"] for p in problems)
                        grad_norm[i, j, f] = max(p["grad_norm"] for p in problems)
                    bar.update(n_folds)
                    bar.set_postfix(lam=f"{lam:.3g}", sigma=sigma, best=f"{best:.4f}",
                                    refresh=False)
                    reached = max(reached, j + 1)
                    if start is None:
                        continue
                    score = accuracy[i, j].mean()
                    plateau = score if plateau is None else plateau
                    moved = moved or score != plateau
                    if score > best:
                        best, stale = score, 0
                    elif moved:
                        stale += 1
                    if stale >= patience:
                        break
        seconds = time.perf_counter() - began
        bar.close()
        lam_values = lam_values[:reached]
        accuracy, mean_loss = accuracy[:, :reached], mean_loss[:, :reached]
        n_iter, passes, converged = n_iter[:, :reached], passes[:, :reached], converged[:, :reached]
        _warn_unconverged(converged, n_iter, lam_values)
        objective, grad_norm = objective[:, :reached], grad_norm[:, :reached]
        mean = _mean(accuracy)
        # the highest mean; ties: the largest lambda, then the largest sigma
        ran = [(j, i) for j in range(reached) for i in range(len(sigma_values))
               if not np.isnan(mean[i, j])]
        j, i = max(ran, key=lambda p: (mean[p[1], p[0]], -p[0], -p[1]))
        best_lam, best_sigma = float(lam_values[j]), sigma_values[i]
        model = None
        if refit:
            path = () if best_sigma is None else tuple(s for s in sigma_values if s > best_sigma)
            model = train_one_vs_rest(source, loss=loss, sigma=best_sigma, lam=best_lam,
                                      sigma_path=path, solver=solver, tol=tol,
                                      fit_intercept=fit_intercept, progress=progress,
                                      **train_options)
    name = losses[0].name
    return CVResult(loss=name, lams=lam_values, sigmas=tuple(sigma_values), accuracy=accuracy,
                    mean_loss=mean_loss, n_iter=n_iter, passes=passes, converged=converged,
                    objective=objective, grad_norm=grad_norm, folds=fold_of, lam_max=start,
                    best_lam=best_lam, best_sigma=best_sigma,
                    best_accuracy=float(mean[i, j]), best_std=float(_std(accuracy)[i, j]),
                    model=model, seconds=seconds,
                    data_passes=None if shared is None else shared.passes,
                    options=dict(solver=solver, tol=tol, fit_intercept=fit_intercept,
                                 seed=seed if np.ndim(folds) == 0 else None,
                                 lam_ratio=lam_ratio, patience=patience, max_lams=max_lams,
                                 lockstep=shared is not None,
                                 default_grid=start is not None))
