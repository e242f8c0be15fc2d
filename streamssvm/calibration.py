"""Class probabilities of a linear model: the logistic loss's own, or Platt's sigmoid.

A model trained with the logistic loss psi(a) = log(1 + e^(theta - a)) has its own
probabilities. For decision value f, the expected loss eta psi(f) + (1 - eta) psi(-f) is
least at the f where eta psi'(f) = (1 - eta) psi'(-f); inverted, the class probability at f is

    P(+1 | f) = s(theta + f) / (s(theta + f) + s(theta - f)),   s(z) = 1 / (1 + e^-z),

which is LIBLINEAR's s(f) (``-s 0 -b 1``) for the usual theta = 0.

Any other loss needs Platt's sigmoid (Platt 1999) fitted on decision values of rows that
the model did not see: P(+1 | f) = 1 / (1 + exp(A f + B)), A and B minimising the
cross-entropy against Platt's smoothed targets (N+ + 1) / (N+ + 2) for the positive rows
and 1 / (N- + 2) for the negative ones, by the Newton method with backtracking of Lin, Lin &
Weng (2007). The held-out values come from given calibration data (:meth:`Model.calibrate
<streamssvm.model.Model.calibrate>`) or from K-fold cross-fitting (:func:`calibrated`):
the model of the K - 1 other folds gives each fold's values, one sigmoid is fitted on all
of them and applied to the model trained on all rows (scikit-learn's
``CalibratedClassifierCV(method="sigmoid", ensemble=False)``).

One-vs-rest over k > 2 classes: each class's binary problem gives p_c, by its sigmoid or
by the logistic link, and the probabilities are p_c / sum_j p_j, as LIBLINEAR's
``predict_probability`` and scikit-learn's calibrated classifiers normalise them (computed
from log p_c, so that no row's sum underflows to 0).

References
----------
J. Platt, "Probabilistic outputs for support vector machines and comparisons to
regularized likelihood methods", Advances in Large Margin Classifiers, 1999.
H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's probabilistic outputs for support
vector machines", Machine Learning 68, 2007.
"""

import numpy as np
from scipy.special import logsumexp

from ._names import named
from ._warn import warn
from .data import BlockSource, RowSubset
from .data.storeset import names_stores, open_stores
from .losses import get_loss
from .solvers.common import ConvergenceWarning

PLATT_METHOD = "platt"
# Lin, Lin & Weng's Algorithm 1: Newton iterations, the smallest backtracking step, the
# ridge added to the Hessian's diagonal, the stopping threshold on both gradient entries
PLATT_MAX_ITER, PLATT_MIN_STEP, PLATT_RIDGE, PLATT_EPS = 100, 1e-10, 1e-12, 1e-5


def fit_sigmoid(decision, positive, sample_weight=None):
    """Platt's sigmoid P(+1 | f) = 1 / (1 + exp(a f + b)) fitted to decision values.

    Minimises F(a, b) = sum_i w_i (t_i z_i + log(1 + e^-z_i)), z_i = a f_i + b, the
    cross-entropy against the targets t_i = (N+ + 1) / (N+ + 2) for positive rows and
    1 / (N- + 2) for negative ones (N+-: their weights' sums), by Lin, Lin & Weng's Newton
    method: gradient (sum w f (t - p), sum w (t - p)), Hessian sum w p (1 - p) [f^2, f; f, 1]
    plus 1e-12 I, Armijo backtracking from the full step, from a = 0,
    b = log((N- + 1) / (N+ + 1)); stop when both gradient entries are below 1e-5.

    Parameters
    ----------
    decision : array of shape (n_samples,)
        Decision values f_i of rows the model was not trained on.
    positive : array of shape (n_samples,), bool
        The rows of the positive class.
    sample_weight : array of shape (n_samples,), optional
        Weights w_i (default 1): a weight counts as that many copies of the row.

    Returns
    -------
    a, b : float
    n_iter : int
    converged : bool
        False if the line search failed or the iterations ran out.
    """
    f = np.asarray(decision, np.float64)
    positive = np.asarray(positive, bool)
    w = np.ones_like(f) if sample_weight is None else np.asarray(sample_weight, np.float64)
    prior1, prior0 = w[positive].sum(), w[~positive].sum()
    t = np.where(positive, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))

    def value(a, b):
        z = a * f + b
        return float(w @ (t * z + np.logaddexp(0.0, -z)))

    a, b = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    current = value(a, b)
    for n_iter in range(PLATT_MAX_ITER):
        z = a * f + b
        # p = 1 / (1 + e^z) and q = 1 - p, each without overflow or cancellation
        p, q = np.exp(-np.logaddexp(0.0, z)), np.exp(-np.logaddexp(0.0, -z))
        d1, d2 = w * (t - p), w * p * q
        g1, g2 = float(f @ d1), float(d1.sum())
        if abs(g1) < PLATT_EPS and abs(g2) < PLATT_EPS:
            return a, b, n_iter, True
        h11 = PLATT_RIDGE + float((f * f) @ d2)
        h22 = PLATT_RIDGE + float(d2.sum())
        h21 = float(f @ d2)
        det = h11 * h22 - h21 * h21
        da, db = -(h22 * g1 - h21 * g2) / det, -(h11 * g2 - h21 * g1) / det
        slope = g1 * da + g2 * db
        step = 1.0
        while step >= PLATT_MIN_STEP:
            trial = value(a + step * da, b + step * db)
            if trial < current + 1e-4 * step * slope:
                a, b, current = a + step * da, b + step * db, trial
                break
            step /= 2.0
        else:  # the line search failed: no decrease along the Newton direction
            return a, b, n_iter + 1, False
    return a, b, PLATT_MAX_ITER, False


class Platt:
    """Platt's sigmoids of a model, one per binary problem:
    P(problem's positive class | f) = 1 / (1 + exp(a f + b)).

    Parameters
    ----------
    a, b : array of shape (n_problems,)
        One entry for a binary model (its positive class, ``classes_[1]``), one per class
        of a one-vs-rest model (class c against the rest).
    fitted : dict
        How they were fitted: ``"method"`` ``"cross_fit"`` (with ``"folds"``, ``"seed"``,
        None for folds given as an array) or ``"held_out"`` (with ``"data"``, the
        calibration data's name), and ``"n_samples"``, ``"n_iter"`` and ``"converged"``
        (per problem) of the Newton fits.
    """

    def __init__(self, a, b, fitted=None):
        self.a = np.asarray(a, np.float64).reshape(-1)
        self.b = np.asarray(b, np.float64).reshape(-1)
        if self.a.shape != self.b.shape or not self.a.size:
            raise ValueError(f"Platt's a and b have shapes {self.a.shape} and {self.b.shape}, "
                             f"expected one value each per binary problem")
        if not (np.all(np.isfinite(self.a)) and np.all(np.isfinite(self.b))):
            raise ValueError("Platt's a or b holds NaN or infinite values")
        self.fitted = dict(fitted or {})

    def __repr__(self):
        return f"Platt(a={self.a.tolist()}, b={self.b.tolist()}, fitted={self.fitted})"

    @classmethod
    def fit(cls, decision, class_index, sample_weight=None, **fitted):
        """The sigmoids of decision values of held-out rows.

        Parameters
        ----------
        decision : array of shape (n_samples,) (binary) or (n_samples, n_classes)
        class_index : array of shape (n_samples,)
            Each row's class, an index into the model's ``classes_`` (binary: 0 or 1).
        sample_weight : array of shape (n_samples,), optional
        **fitted
            What to record of how (see the class's ``fitted``).
        """
        decision = np.asarray(decision, np.float64)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, np.float64)
            if sample_weight.shape != (len(decision),) or not np.all(
                    np.isfinite(sample_weight) & (sample_weight >= 0)):
                raise ValueError(f"sample_weight must be {len(decision)} finite values >= 0, "
                                 f"got shape {sample_weight.shape}")
        columns = decision[:, None] if decision.ndim == 1 else decision
        binary = decision.ndim == 1
        fits = [fit_sigmoid(column, class_index == (1 if binary else c), sample_weight)
                for c, column in enumerate(columns.T)]
        a, b, n_iter, converged = (list(v) for v in zip(*fits))
        if not all(converged):
            warn(f"Platt's sigmoid: the Newton fit of problem(s) "
                 f"{[c for c, ok in enumerate(converged) if not ok]} stopped before its "
                 f"gradient fell below {PLATT_EPS:g}", ConvergenceWarning)
        return cls(a, b, dict(fitted, n_samples=len(class_index), n_iter=n_iter,
                              converged=converged))

    def log_positive(self, decision):
        """log P(positive | f) and log P(negative | f), each of the shape of ``decision``
        ((n_samples,) or (n_samples, n_problems))."""
        z = self.a * np.asarray(decision, np.float64) + self.b  # a, b broadcast: (1,), (k,)
        return -np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)

    def to_json(self):
        """A JSON-able dict (floats by repr: read back exactly)."""
        return dict(method=PLATT_METHOD, a=self.a.tolist(), b=self.b.tolist(),
                    fitted=self.fitted)

    @classmethod
    def from_json(cls, record):
        """The inverse of :meth:`to_json`; None for None (a model without calibration)."""
        if record is None:
            return None
        if not isinstance(record, dict) or record.get("method") != PLATT_METHOD:
            raise ValueError(f"calibration {str(record)[:60]} is not a Platt record")
        return cls(record["a"], record["b"], record.get("fitted"))


def logistic_theta(model):
    """theta of the logistic loss the model was trained with, or None (another loss, or
    none recorded)."""
    spec = model.params.get("loss_spec") or model.params.get("loss")
    if not isinstance(spec, str):
        return None
    try:
        loss = get_loss(spec)
    except ValueError:  # a family loss's name, or a loss given with its sigma
        return None
    return loss.theta if loss.name == "logistic" else None


def no_probabilities(model):
    """Why ``model`` cannot give probabilities (no calibration, a loss other than the
    logistic), or None if it can."""
    if model.calibration is not None or logistic_theta(model) is not None:
        return None
    loss = model.params.get("loss")
    return (f"no probabilities: the model was trained with "
            f"{'loss ' + repr(loss) if loss else 'an unrecorded loss'}, not the logistic, and "
            f"has no calibration")


def check_probabilities(model):
    """A ValueError saying how to calibrate if ``model`` cannot give probabilities."""
    reason = no_probabilities(model)
    if reason:
        raise ValueError(f"{reason}: {PYTHON_HINT}")


def check_calibration(calibration, n_classes):
    """Refuse a calibration that does not have one sigmoid per binary problem of a model
    over ``n_classes`` classes."""
    if calibration is None:
        return
    if not isinstance(calibration, Platt):
        raise ValueError(f"calibration must be a Platt or None, got {type(calibration).__name__}")
    problems = 1 if n_classes == 2 else n_classes
    if calibration.a.size != problems:
        raise ValueError(f"calibration holds {calibration.a.size} sigmoid(s), the model has "
                         f"{problems} binary problem(s)")


def class_probabilities(model, decision):
    """Probabilities from a model's decision values: Platt's sigmoids if it has them, else
    the logistic loss's link (see the module docstring).

    Parameters
    ----------
    model : Model
    decision : array of shape (n_samples,), or (n_samples, n_classes) one-vs-rest

    Returns
    -------
    array of shape (n_samples, n_classes)
        Columns in the order of ``model.classes_``; each row sums to 1.
    """
    check_probabilities(model)
    decision = np.asarray(decision, np.float64)
    if model.calibration is not None:
        log_p, log_q = model.calibration.log_positive(decision)
    else:
        theta = logistic_theta(model)
        log_p = -np.logaddexp(0.0, -(theta + decision))  # log s(theta + f)
        log_q = -np.logaddexp(0.0, -(theta - decision))  # log s(theta - f)
        total = np.logaddexp(log_p, log_q)
        log_p, log_q = log_p - total, log_q - total
    if decision.ndim == 1:
        return np.column_stack([np.exp(log_q), np.exp(log_p)])
    return np.exp(log_p - logsumexp(log_p, axis=1, keepdims=True))


PYTHON_HINT = ("train with streamssvm.calibrated(data, cv=5, ...) (Platt's sigmoid on "
               "cross-fitted decision values), call model.calibrate(X, y) on held-out data, or "
               "train with loss='logistic'")


def class_indices(classes, values, what):
    """Indices into ``classes`` of the label ``values``; a ValueError naming ``what`` for
    a value that is none of them."""
    classes = np.asarray(classes, np.float64)
    values = np.asarray(values, np.float64)
    order = np.argsort(classes)
    at = np.minimum(np.searchsorted(classes[order], values), len(classes) - 1)
    unknown = classes[order][at] != values
    if np.any(unknown):
        raise ValueError(f"{what}: label {values[unknown][0]:g} is none of the model's classes "
                         f"{classes.tolist()}")
    return order[at]


def held_out_decisions(model, X, y=None):
    """Decision values of ``model`` on held-out data and each row's class.

    Parameters
    ----------
    model : Model
    X : array or sparse matrix of shape (n_samples, n_features) with labels ``y`` (values of
        ``model.classes_``), or stores (a path or a list) or a BlockSource with their own.

    Returns
    -------
    decision : array of shape (n_samples,), or (n_samples, n_classes) one-vs-rest
    class_index : array of shape (n_samples,), indices into ``model.classes_``
    name : str
        What the data is called (a store's path, a source's name, "X").
    """
    if names_stores(X) or isinstance(X, BlockSource):
        if y is not None:
            raise ValueError("y is given with a store or a source: it holds its own labels")
        source = open_stores(X) if names_stores(X) else X
        try:
            decision, labels = model.decision_and_labels(source)
        finally:
            if source is not X:
                source.close()
        classes = np.asarray(source.classes, np.float64)
        values = classes[labels if len(classes) > 2 else (labels > 0).astype(np.intp)]
        return decision, class_indices(model.classes_, values, source.name), source.name
    if y is None:
        raise ValueError("calibrating on a matrix needs its labels y")
    decision = model.decision_function(X)
    y = np.asarray(y)
    if y.shape != (len(decision),):
        raise ValueError(f"y has shape {y.shape}, X has {len(decision)} rows")
    return decision, class_indices(model.classes_, y, "y"), "X"


def check_every_class(class_index, classes, what):
    """Refuse held-out rows that lack a class: its sigmoid would have no positive row."""
    counts = np.bincount(class_index, minlength=len(classes))
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        raise ValueError(f"{what}: no rows of class {float(classes[missing[0]]):g}: Platt's "
                         f"sigmoid needs rows of every class")


def stratified_folds(class_index, n_folds, seed=None):
    """A fold in 0 .. n_folds - 1 for every row, each class spread evenly over the folds.

    The rows of each class, in a random order (``numpy.random.default_rng(seed)``), are dealt
    to the folds in turn, continuing where the previous class stopped: every fold gets
    floor or ceil of a class's count / n_folds of its rows, and the folds' sizes differ by
    at most one.

    Parameters
    ----------
    class_index : array of shape (n_samples,), non-negative integers
    n_folds : int
    seed : int or None

    Returns
    -------
    array of shape (n_samples,), int64
    """
    rng = np.random.default_rng(seed)
    class_index = np.asarray(class_index)
    folds = np.empty(len(class_index), np.int64)
    start = 0
    for c in np.unique(class_index):
        rows = rng.permutation(np.flatnonzero(class_index == c))
        folds[rows] = (start + np.arange(len(rows))) % n_folds
        start += len(rows)
    return folds


def check_n_folds(value):
    """Refuse a number of folds that is not an integer >= 2."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 2:
        raise ValueError(f"{named('cv')} must be an integer >= 2 or an array of folds, got "
                         f"{value!r}")


def check_folds(folds, class_index, classes, name):
    """Refuse folds (an array of fold numbers 0 .. K - 1, K >= 2) of which one lacks a class.

    Every fold must hold rows of every class: the other folds' model is trained without its
    rows, and a class absent from a fold's complement would have no model of its own."""
    k = len(classes)
    n_folds = int(folds.max()) + 1
    counts = np.bincount(folds * k + class_index, minlength=n_folds * k).reshape(n_folds, k)
    empty_folds = np.flatnonzero(counts.sum(axis=1) == 0)
    if n_folds < 2 or empty_folds.size:
        raise ValueError(f"{name}: {named('cv')} gives {n_folds} fold(s)"
                         + (f", fold {empty_folds[0]} with no rows" if empty_folds.size else "")
                         + ": cross-fitting needs at least 2 folds numbered 0 .. K - 1")
    fold, c = np.argwhere(counts == 0)[0] if np.any(counts == 0) else (None, None)
    if fold is not None:
        total = int(counts[:, c].sum())
        raise ValueError(f"{name}: fold {fold} of {n_folds} holds no rows of class "
                         f"{float(classes[c]):g} ({total} row(s) in all): every fold needs rows "
                         f"of every class; use fewer folds ({named('cv')}) or more data")


def calibrated(data, y=None, *, cv=None, seed=0, calibration_data=None, calibration_y=None,
               sample_weight=None, progress=True, **train_options):
    """Train a model (:func:`~streamssvm.train_one_vs_rest`) and fit Platt's sigmoid to
    decision values that its training did not see.

    Parameters
    ----------
    data, y
        The training data, as ``train_one_vs_rest`` takes it: a store path (or a list), a
        BlockSource, or a matrix and its labels.
    cv : int or array of shape (n_samples,), optional
        K-fold cross-fitting (default 5 folds unless ``calibration_data`` is given): an int
        K >= 2, stratified folds drawn with ``seed``; or each row's fold, 0 .. K - 1. The
        model of the other K - 1 folds (row subsets of ``data``, not copies) gives each
        fold's decision values; one sigmoid per binary problem is fitted on all of them and
        applied to the model trained on all rows. It trains K + 1 models. Every fold must
        hold rows of every class.
    seed : int or None
        Seed of the folds.
    calibration_data, calibration_y : optional
        Held-out data to fit the sigmoids on instead (a store path or list, a BlockSource,
        or a matrix and its labels, the label values of ``data``'s).
    sample_weight : array of shape (n_samples,), optional
        Row weights of the training (each fold's model gets its rows'), also weighting the
        sigmoid's fit on cross-fitted values.
    progress : bool
        Progress bars.
    **train_options
        Passed to every training (loss, lam, solver, tol, class_weight ...); ``checkpoint``
        and ``client`` are refused with cross-fitting.

    Returns
    -------
    Model
        With ``calibration`` set: ``predict_proba`` gives Platt's probabilities.
    """
    # here: multiclass imports the model, which imports this module
    from .api import open_source
    from .multiclass import train_one_vs_rest

    if calibration_data is not None:
        if cv is not None:
            raise ValueError(f"{named('cv')} and {named('calibration_data')} both given: "
                             f"cross-fit, or fit on the calibration data, not both")
        if calibration_y is not None and names_stores(calibration_data):
            raise ValueError("calibration_y is given with a store: it holds its own labels")
        model = train_one_vs_rest(data, y, sample_weight=sample_weight, progress=progress,
                                  **train_options)
        return model.calibrate(calibration_data, calibration_y)
    if calibration_y is not None:
        raise ValueError("calibration_y is given without calibration_data")
    for option in ("checkpoint", "client"):
        if train_options.get(option) is not None:
            raise ValueError(f"{named(option)} is not supported with cross-fitted calibration "
                             f"({named('cv')}): give {named('calibration_data')} instead")
    cv = 5 if cv is None else cv
    with open_source(data, y) as source:
        labels = source.labels()
        class_index = labels if source.multiclass else (labels > 0).astype(np.intp)
        if np.ndim(cv) == 0:
            check_n_folds(cv)
            folds, fold_seed = stratified_folds(class_index, int(cv), seed), seed
        else:
            folds, fold_seed = np.asarray(cv), None
            if folds.shape != (source.n_samples,) or not np.issubdtype(folds.dtype, np.integer) \
                    or folds.min() < 0:
                raise ValueError(f"{named('cv')} as an array gives each row's fold: "
                                 f"{source.n_samples} integers >= 0, got shape {folds.shape} "
                                 f"of type {folds.dtype}")
            folds = folds.astype(np.int64)
        check_folds(folds, class_index, train_options.get("names", source.classes),
                    source.name)  # before any training
        model = train_one_vs_rest(source, sample_weight=sample_weight, progress=progress,
                                  **train_options)
        n_folds = int(folds.max()) + 1
        weights = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        decision = np.empty((source.n_samples, *model.coef_.shape[:-1]))
        fold_converged = []
        for fold in range(n_folds):
            inside, held = np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)
            part = train_one_vs_rest(
                RowSubset(source, inside),
                sample_weight=None if weights is None else weights[inside],
                progress=progress and f"fold {fold + 1}/{n_folds}", **train_options)
            decision[held] = part.decision_function(RowSubset(source, held))
            fold_converged.append(bool(part.params["converged"]))
        model.calibration = Platt.fit(decision, class_index, weights, method="cross_fit",
                                      folds=n_folds, seed=fold_seed, data=source.name,
                                      fold_models_converged=fold_converged)
    return model
