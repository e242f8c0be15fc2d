"""``SmoothSVC``: scikit-learn's classifier interface over :func:`train_one_vs_rest`.

scikit-learn stays optional. When it is installed (1.6 or later), SmoothSVC derives from its
``ClassifierMixin`` and ``BaseEstimator`` and validates inputs with its own functions, as
LightGBM and XGBoost do (their ``compat`` modules): what makes an estimator compatible
(tags, ``clone``, parameter handling, validation messages and warnings) is defined by
scikit-learn and changes between its versions, so only its own code keeps up. Without it,
a small base class below gives ``get_params`` / ``set_params`` / ``score`` and plain numpy
checks, enough to fit and predict (and to be cloned by an older scikit-learn).
"""

import functools
import inspect
import os

import numpy as np
import scipy.sparse as sp

from ._interrupt import interrupts_after_compiling
from .calibration import calibrated, class_probabilities, no_probabilities
from .data import InMemorySource, Store
from .data.memory import check_exact_labels
from .data.storeset import open_stores
from .losses import get_loss
from .model import Model
from .multiclass import train_one_vs_rest
from .online import OnlineTrainer
from .solvers import registry

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

    HAVE_SKLEARN = True
except ImportError:  # not installed, or older than 1.6 (no validate_data)
    HAVE_SKLEARN = False

    def available_if(check):
        """scikit-learn hides a method whose ``check`` fails; here the method checks itself."""
        return lambda method: method

    class NotFittedError(ValueError, AttributeError):
        """The estimator is used before ``fit`` (scikit-learn's class of the same name)."""

    class BaseEstimator:
        """``get_params`` / ``set_params`` from the ``__init__`` signature, as scikit-learn."""

        @classmethod
        def _get_param_names(cls):
            return sorted(p.name for p in inspect.signature(cls.__init__).parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                     f"valid: {valid}")
                setattr(self, name, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClassifierMixin:
        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            """Mean accuracy of ``predict(X)`` against ``y`` (weighted by ``sample_weight``);
            ``y`` must hold one label per row of ``X``."""
            predicted = self.predict(X)
            if y is None or np.shape(y) != predicted.shape:
                raise ValueError(f"y must hold {len(predicted)} labels, one per row of X, got "
                                 f"{'None' if y is None else f'shape {np.shape(y)}'}")
            return float(np.average(predicted == np.asarray(y), weights=sample_weight))


ONLINE_SOLVERS = ("sgd", "pegasos")  # what OnlineTrainer runs
PROBABILITY_FOLDS = 5  # of the cross-fitting behind probability=True, as SVC's
# the parameters partial_fit makes its OnlineTrainers from, on its first call
ONLINE_PARAMS = ("loss", "sigma", "lam", "solver", "fit_intercept", "intercept_scaling",
                 "random_state")


def _is_path(X):
    return isinstance(X, (str, os.PathLike))


def _refuse_labels(path, y):
    """A store holds its labels: ``y`` must be None with its path."""
    if y is not None:
        raise ValueError(f"{path}: y is given with a store path: the store holds its own "
                         f"labels")


def _online_solver(estimator):
    return estimator.solver in ONLINE_SOLVERS


def _logistic(loss):
    """``loss`` names the logistic loss (an unknown one: fit says so)."""
    try:
        return get_loss(loss).name == "logistic"
    except ValueError:
        return False


def _has_probabilities(estimator):
    """True if ``predict_proba`` can answer: the fitted model has a calibration or the
    logistic loss, or, before a fit, ``probability`` or the logistic loss is set; else an
    AttributeError saying how to get them."""
    if hasattr(estimator, "model_"):
        reason = no_probabilities(estimator.model_)
        if reason:
            raise AttributeError(f"predict_proba is not available: {reason}: fit with "
                                 f"probability=True (Platt's sigmoid on {PROBABILITY_FOLDS}-fold "
                                 f"cross-fitted decision values) or loss='logistic'")
        return True
    if estimator.probability or _logistic(estimator.loss):
        return True
    raise AttributeError("predict_proba is not available when probability=False and the loss "
                         "is not the logistic: set probability=True (Platt's sigmoid on "
                         f"{PROBABILITY_FOLDS}-fold cross-fitted decision values) or "
                         "loss='logistic'")


class SmoothSVC(ClassifierMixin, BaseEstimator):
    """Linear classifier minimising, for each binary problem (one-vs-rest over k > 2 classes),

        L(w) = lam / 2 ||w||^2 + (1 / S) sum_i s_i c_i psi(y_i (w.x_i + b))

    with s_i the sample weights (S their sum; 1 and n by default), c_i the class weights
    and psi a smooth hinge (Luo, Qiao & Zhang) or another loss of ``streamssvm.losses``.
    With unit sample weights this is LIBLINEAR's / LinearSVC's problem with
    C = 1 / (lam n) (LinearSVC also regularises its intercept; here it is not).

    Parameters
    ----------
    loss : str or Loss, default "psi_g"
        Any name :func:`streamssvm.get_loss` accepts ("psi_g", "psi_m", "squared_hinge",
        "logistic", ...).
    sigma : float, optional
        Smoothing width of psi_G / psi_M (default 2**-3).
    lam : float, default 1e-5
        Regularisation strength lambda > 0.
    solver : str, default "auto"
        A name of ``streamssvm.solvers.SOLVERS``. The stochastic ones take no weights.
    tol : float, default 1e-4
        Stop at ||grad L(w)|| <= tol ||grad L(0)|| (the rule of ``train_stream``, with its
        default).
    max_iter : int, optional
        Iterations (epochs for the stochastic solvers); default: the solver's.
    fit_intercept : bool, default True
        Learn an unregularised intercept b, as scikit-learn's linear classifiers do by
        default (``train_stream`` and the command line follow LIBLINEAR: no intercept unless
        asked, which leaves ``solver="auto"`` dual coordinate ascent on wide data).
    intercept_scaling : float, default 1.0
        Value of the constant feature carrying the intercept.
    class_weight : None, "balanced" or dict, default None
        Weights c of the classes (a dict maps labels to weights, others weigh 1); "balanced":
        S / (k S_c), S_c the weight of class c's samples. One-vs-rest: in the problem of
        class c, its samples weigh ``class_weight[c]`` and the others 1 (as LIBLINEAR).
    warm_start : bool, default False
        Start from the previous ``coef_`` / ``intercept_`` when refitting the same classes;
        data of another width is refused.
    n_threads : int, optional
        Kernel threads (default all cores numba sees).
    random_state : int, Generator or None
        Seed of the stochastic solvers (unused by the others).
    verbose : bool, default False
        Progress bars.
    probability : bool, default False
        Also fit Platt's sigmoid for ``predict_proba``, on decision values cross-fitted over
        5 stratified folds drawn with ``random_state`` (:func:`streamssvm.calibrated`: six
        trainings instead of one), as scikit-learn's SVC. Without it, ``predict_proba``
        exists for the logistic loss only (its own probabilities; with it, Platt's).

    Attributes
    ----------
    classes_ : array of shape (n_classes,)
    coef_ : array of shape (1, n_features) for two classes, else (n_classes, n_features)
    intercept_ : array of shape (1,) or (n_classes,)
    n_iter_ : int
        Largest number of iterations over the binary problems.
    n_features_in_ : int
    model_ : Model
        The trained :class:`~streamssvm.Model` (its ``classes_`` are the label values when
        they are numbers, else the class indices): ``model_.save(path)`` writes it for the
        command line.

    Notes
    -----
    ``fit``, ``predict``, ``decision_function``, ``predict_proba`` and ``score`` also take
    the path of a store (``y=None``: the store holds the labels), streamed block by block,
    or of svmlight text (converted once into a store kept for the next calls, announced
    with ``verbose``: :mod:`streamssvm.data.textcache`). ``partial_fit`` exists for
    ``solver="sgd"`` and ``"pegasos"`` (it fits no sigmoid).
    """

    def __init__(self, loss="psi_g", sigma=None, lam=1e-5, solver="auto", tol=1e-4,
                 max_iter=None, fit_intercept=True, intercept_scaling=1.0, class_weight=None,
                 warm_start=False, n_threads=None, random_state=None, verbose=False,
                 probability=False):
        self.loss = loss
        self.sigma = sigma
        self.lam = lam
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose
        self.probability = probability

    if HAVE_SKLEARN:
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.input_tags.sparse = True
            return tags

    # -- fit ---------------------------------------------------------------------------------
    @interrupts_after_compiling()
    def fit(self, X, y=None, sample_weight=None):
        """Fit on ``X`` and labels ``y``, or on a store (``X`` its path, ``y`` None).

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features), or a store path
        y : array of shape (n_samples,)
            Two or more distinct labels (integers that float64, in which ``model_`` keeps
            them, does not hold exactly are refused).
        sample_weight : array of shape (n_samples,), optional
            Weights s_i >= 0; an integer weight counts like that many copies of the row.

        Returns
        -------
        self
        """
        if _is_path(X):
            _refuse_labels(X, y)
            with open_stores(X, progress=bool(self.verbose)) as store:
                self._check_warm_start_width(store)
                present = [c for c, k in zip(store.classes, store.class_counts()) if k]
                self._check_two_classes(present, f"{X}: ")
                return self._fit_source(store, np.asarray(store.classes), sample_weight)
        self._check_warm_start_width(X)
        X, y = self._validate_fit(X, y)
        classes, y_index = np.unique(y, return_inverse=True)
        check_exact_labels(classes, "y")  # model_ keeps numbers as float64
        self._check_two_classes(classes)
        source = InMemorySource(X, y_index, classes=range(len(classes)))
        return self._fit_source(source, classes, sample_weight)

    @available_if(_online_solver)
    @interrupts_after_compiling()
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch of SGD / Pegasos over ``X``, continuing from the previous calls
        (:class:`~streamssvm.OnlineTrainer`, one per binary problem).

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features)
        y : array of shape (n_samples,)
        classes : array of shape (n_classes,)
            Every label the calls will see; required on the first call unless ``fit`` ran
            before (its ``classes_`` are taken; SGD still starts from zero, not from the
            weights ``fit`` found: OnlineTrainer has no warm start). The trainers are made
            on the first call: later calls refuse other ``loss``, ``sigma``, ``lam``,
            ``solver``, ``fit_intercept``, ``intercept_scaling`` or ``random_state``.
        sample_weight : None
            The stochastic solvers take no weights (neither ``class_weight``).

        Returns
        -------
        self
        """
        if not _online_solver(self):
            raise ValueError(f"partial_fit needs solver in {ONLINE_SOLVERS}, got {self.solver!r}")
        if sample_weight is not None or self.class_weight is not None:
            raise ValueError(registry.no_row_weights())
        first = not hasattr(self, "online_")
        params = {name: getattr(self, name) for name in ONLINE_PARAMS}
        changed = [] if first else [name for name in ONLINE_PARAMS
                                    if params[name] != self._online_params[name]]
        if changed:
            raise ValueError(", ".join(f"{name} {self._online_params[name]!r} -> "
                                       f"{params[name]!r}" for name in changed)
                             + " changed since the first call of partial_fit, whose trainers "
                               "it goes on with: set them back, or start over with fit (or "
                               "a new estimator)")
        if first and classes is None:
            if not hasattr(self, "classes_"):
                raise ValueError("classes must be passed on the first call to partial_fit")
            classes = self.classes_
        X, y = self._validate_fit(X, y, reset=first, ensure_min_samples=1)
        if first:
            check_exact_labels(classes, "classes")
            self.classes_ = np.unique(classes)
            if len(self.classes_) < 2:
                raise ValueError(f"classes must hold at least 2 labels, got {self.classes_}")
            seed = _seed(self.random_state)
            seed = np.random.default_rng().integers(2 ** 31 - 1) if seed is None else seed
            self.online_ = [
                OnlineTrainer(loss=self.loss, sigma=self.sigma, lam=self.lam, solver=self.solver,
                              fit_intercept=self.fit_intercept,
                              intercept_scaling=self.intercept_scaling, seed=seed + c)
                for c in range(1 if len(self.classes_) == 2 else len(self.classes_))]
            self._online_params = params
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"classes {np.unique(classes)} differ from the first call's "
                             f"{self.classes_}")
        unknown = ~np.isin(y, self.classes_)
        if np.any(unknown):
            raise ValueError(f"label {y[unknown][0]} is not in classes {self.classes_}")
        y_index = np.searchsorted(self.classes_, y)
        k = len(self.classes_)
        batch = InMemorySource(X, y_index, classes=range(k)).X  # canonical CSR, made once
        for c, trainer in enumerate(self.online_):
            trainer.n_threads = self.n_threads  # the steps are the same on any number
            positive = y_index == (1 if k == 2 else c)
            trainer.partial_fit(InMemorySource(batch, np.where(positive, 1, -1), classes=(-1, 1)))
        models = [trainer.model() for trainer in self.online_]
        self.coef_ = np.stack([m.coef_ for m in models])
        self.intercept_ = np.array([m.intercept_ for m in models])
        self.n_iter_ = self.online_[0].epochs
        self.n_features_in_ = X.shape[1]
        numeric = np.issubdtype(self.classes_.dtype, np.number)
        self.model_ = Model(self.coef_[0] if k == 2 else self.coef_,
                            self.intercept_[0] if k == 2 else self.intercept_,
                            self.classes_ if numeric else np.arange(k), models[0].params)
        return self

    def _validate_fit(self, X, y, reset=True, ensure_min_samples=2):
        if HAVE_SKLEARN:
            X, y = validate_data(self, X, y, accept_sparse="csr", reset=reset,
                                 dtype=[np.float64, np.float32],
                                 ensure_min_samples=ensure_min_samples)
            check_classification_targets(y)
            return X, y
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target "
                             f"y is None")
        X = _as_matrix(X)
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != X.shape[0]:
            raise ValueError(f"y has shape {y.shape}, expected ({X.shape[0]},)")
        if X.shape[0] < ensure_min_samples:  # as scikit-learn's checks say it
            raise ValueError(f"Found array with {X.shape[0]} sample(s) while a minimum of "
                             f"{ensure_min_samples} is required")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y holds NaN or infinite labels")
        if not reset and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        self.n_features_in_ = X.shape[1]
        return X, y

    def _sample_weight(self, sample_weight, X, n):
        """Checked weights scaled to sum to n; ``X`` the matrix, None for a store."""
        if sample_weight is None:
            return None
        if HAVE_SKLEARN and X is not None:
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                           ensure_non_negative=True)
        else:
            weights = np.asarray(sample_weight, np.float64)
            if weights.ndim == 0:  # one weight for every row, as scikit-learn takes it
                weights = np.full(n, weights)
            if weights.shape != (n,) or not np.all(np.isfinite(weights) & (weights >= 0)):
                raise ValueError(f"sample_weight must be {n} finite values >= 0, got shape "
                                 f"{weights.shape}")
        total = weights.sum()
        if not total > 0:
            raise ValueError("sample weights sum to 0: nothing to fit")
        return weights * (n / total)  # the objective's 1/n then is 1/S

    def _fit_source(self, source, classes, sample_weight):
        for name in ("online_", "_online_params"):  # a later partial_fit starts afresh
            self.__dict__.pop(name, None)
        row_weights = self._sample_weight(sample_weight, getattr(source, "X", None),
                                          source.n_samples)
        class_weight = self._class_weights(classes)
        options = dict(loss=self.loss, sigma=self.sigma, lam=self.lam, solver=self.solver,
                       tol=self.tol, fit_intercept=self.fit_intercept,
                       intercept_scaling=self.intercept_scaling, n_threads=self.n_threads,
                       progress=bool(self.verbose))
        if self.max_iter is not None:
            options["max_iter"] = self.max_iter
        takers = registry.option_takers("seed")  # an unknown name: train_stream says so
        if self.solver == "auto" or self.solver in takers:
            options["seed"] = _seed(self.random_state)  # a stochastic solver, or one it may pick
        train = train_one_vs_rest
        if self.probability:  # seeded by random_state, as the solvers
            train = functools.partial(calibrated, cv=PROBABILITY_FOLDS,
                                      seed=_seed(self.random_state))
        model = train(source, class_weight=class_weight, sample_weight=row_weights,
                      w0=self._warm_start_point(classes), names=classes, **options)
        return self._fitted(model, classes)

    def _class_weights(self, classes):
        """``class_weight`` as train_one_vs_rest takes it: a dict as a list in the order of
        ``classes`` (labels it names that are none of them refused)."""
        class_weight = self.class_weight
        if isinstance(class_weight, dict):
            unknown = set(class_weight) - set(classes.tolist())
            if unknown:
                raise ValueError(f"class_weight names labels {sorted(unknown, key=str)} that "
                                 f"are not among the classes {classes.tolist()}")
            class_weight = [class_weight.get(label, 1.0) for label in classes]
        return class_weight

    def _fitted(self, model, classes):
        """Set the fitted attributes from ``model``, trained on a source whose classes are
        the indices of ``classes`` (or the label values themselves); returns self."""
        coef = np.atleast_2d(model.coef_)
        self.classes_ = classes
        self.coef_ = coef
        self.intercept_ = np.atleast_1d(np.asarray(model.intercept_, np.float64)).copy()
        self.n_iter_ = int(model.params["n_iter"])
        self.n_features_in_ = coef.shape[1]
        numeric = np.issubdtype(classes.dtype, np.number)
        self.model_ = Model(model.coef_, model.intercept_,
                            classes if numeric else np.arange(len(classes)), model.params,
                            model.history, model.calibration)
        return self

    def _check_two_classes(self, classes, where=""):
        """Refuse data whose rows hold fewer than two classes (scikit-learn's message)."""
        if len(classes) < 2:
            raise ValueError(f"{where}{type(self).__name__} needs samples of at least 2 classes "
                             f"in the data, but the data contains only one class: "
                             f"{classes[0]!r}")

    def _check_warm_start_width(self, X):
        """With warm_start and a fit, refuse data (a matrix or an open Store) whose width is
        not coef_'s, before the fit changes anything."""
        if not (self.warm_start and hasattr(self, "coef_")):
            return
        shape = (X.n_samples, X.n_features) if isinstance(X, Store) else np.shape(X)
        if len(shape) == 2 and shape[1] != self.coef_.shape[1]:  # else validation refuses X
            raise ValueError(f"warm_start=True: X has {shape[1]} features, the fitted coef_ "
                             f"{self.coef_.shape[1]}; set warm_start=False to fit data of "
                             f"another width")

    def _warm_start_point(self, classes):
        """[coef_, intercept_ / intercept_scaling] per problem, if warm starting applies."""
        if not (self.warm_start and hasattr(self, "coef_")
                and np.array_equal(self.classes_, classes)):
            return None
        w0 = self.coef_
        if self.fit_intercept:
            w0 = np.hstack([w0, self.intercept_[:, None] / self.intercept_scaling])
        return w0[0] if len(classes) == 2 else w0

    # -- predict -----------------------------------------------------------------------------
    def _check_fitted(self):
        if HAVE_SKLEARN:
            check_is_fitted(self)
        elif not hasattr(self, "coef_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet: "
                                 f"call 'fit' first")

    def decision_function(self, X):
        """Decision values.

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features), or a store path

        Returns
        -------
        array of shape (n_samples,) for two classes (positive: ``classes_[1]``), else
        (n_samples, n_classes)
        """
        self._check_fitted()
        if _is_path(X):
            return self.model_.decision_function(X)
        if HAVE_SKLEARN:
            X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                              reset=False)
        else:
            X = _as_matrix(X)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                                 f"expecting {self.n_features_in_} features as input")
        scores = X @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predicted labels (values of ``classes_``), array of shape (n_samples,)."""
        return self._labels_of(self.decision_function(X))

    @available_if(_has_probabilities)
    def predict_proba(self, X):
        """Class probabilities: Platt's sigmoids (``probability=True``) or the logistic
        loss's own (see :mod:`streamssvm.calibration`). A sigmoid's 1/2 lies at its own
        offset, not at the decision function's 0: near the boundary the most probable class
        can differ from :meth:`predict`, as with SVC's ``predict_proba``.

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features), or a store path

        Returns
        -------
        array of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; each row sums to 1.
        """
        _has_probabilities(self)  # scikit-learn's available_if checked it; the stand-in not
        self._check_fitted()
        return class_probabilities(self.model_, self.decision_function(X))

    @available_if(_has_probabilities)
    def predict_log_proba(self, X):
        """The logarithm of :meth:`predict_proba`, array of shape (n_samples, n_classes)."""
        return np.log(self.predict_proba(X))

    def _labels_of(self, scores):
        index = (scores > 0).astype(np.intp) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]

    @interrupts_after_compiling()
    def score(self, X, y=None, sample_weight=None):
        """Mean accuracy on ``X`` and ``y``, or on a store (``X`` its path, ``y`` None)."""
        if not _is_path(X):
            return super().score(X, y, sample_weight=sample_weight)
        _refuse_labels(X, y)
        self._check_fitted()
        with open_stores(X, like=self.model_.text_options(),
                         progress=bool(self.verbose)) as store:
            scores, labels = self.model_.decision_and_labels(store)
            truth = np.asarray(store.classes)[_class_indices(store, labels)]
        return float(np.average(self._labels_of(scores) == truth, weights=sample_weight))


class SmoothSVCCV(SmoothSVC):
    """SmoothSVC with lambda (and sigma) chosen by k-fold cross-validation, as
    scikit-learn's ``LogisticRegressionCV``: :func:`streamssvm.cross_validate` walks each
    fold's warm-started path over the grid and the model is refitted on all rows at the
    point of highest mean accuracy.

    Parameters
    ----------
    lams : sequence of float, optional
        The lambdas, strictly decreasing. Default: from where the model is trivial down by
        factors of 2, stopped when the accuracy stops improving (see
        :mod:`streamssvm.selection`).
    sigmas : sequence of float, optional
        Widths of psi_G / psi_M, strictly decreasing (default 2^1, 2^-1, 2^-3, 2^-5 for
        them; for other losses, the loss's own).
    cv : int or array of shape (n_samples,), default 5
        Stratified folds (an int K >= 2) or each row's fold.
    random_state : int or None
        Seed of the folds (None: 0, so that fits repeat, as LogisticRegressionCV's
        unshuffled folds do).
    loss, solver, tol, max_iter, fit_intercept, intercept_scaling, class_weight, n_threads, verbose
        As for :class:`SmoothSVC`, at every point of the path and in the refit.

    Attributes
    ----------
    lam_ : float
        The lambda chosen.
    sigma_ : float or None
        The width chosen (None for a loss without a width).
    lams_ : array of shape (n_lams,)
        The lambdas walked.
    sigmas_ : tuple of n_sigmas
        The widths walked.
    scores_ : array of shape (n_sigmas, n_lams, n_folds)
        Held-out accuracy of each fold's model (NaN past where a sigma's path stopped).
    cv_results_ : dict
        The points as ``GridSearchCV.cv_results_`` gives them.
    cv_result_ : CVResult
        All that :func:`~streamssvm.cross_validate` returned.
    model_ : Model
        The refitted model; ``classes_``, ``coef_``, ``intercept_``, ``n_iter_`` and
        ``n_features_in_`` are its, as for :class:`SmoothSVC`.
    """

    warm_start = False  # what SmoothSVC's fit and predict_proba read: no warm start, and
    probability = False  # probabilities for the logistic loss only

    def __init__(self, lams=None, sigmas=None, cv=5, loss="psi_g", solver="auto", tol=1e-4,
                 max_iter=None, fit_intercept=True, intercept_scaling=1.0, class_weight=None,
                 n_threads=None, random_state=None, verbose=False):
        self.lams = lams
        self.sigmas = sigmas
        self.cv = cv
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None):
        """Cross-validate on ``X`` and labels ``y`` (or a store, ``X`` its path and ``y``
        None), then refit on all rows at the best point.

        Returns
        -------
        self
        """
        return super().fit(X, y)

    @available_if(lambda estimator: False)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Not available: the path is chosen on the whole data."""
        raise AttributeError(f"{type(self).__name__} has no partial_fit")

    def _fit_source(self, source, classes, sample_weight):
        from .selection import cross_validate

        options = dict(loss=self.loss, lams=self.lams, sigmas=self.sigmas, folds=self.cv,
                       seed=0 if self.random_state is None else _seed(self.random_state),
                       fit_intercept=self.fit_intercept, solver=self.solver, tol=self.tol,
                       intercept_scaling=self.intercept_scaling, n_threads=self.n_threads,
                       progress=bool(self.verbose), class_weight=self._class_weights(classes),
                       names=classes)
        if self.max_iter is not None:
            options["max_iter"] = self.max_iter
        result = cross_validate(source, **options)
        self.cv_result_ = result
        self.lam_, self.sigma_ = result.best_lam, result.best_sigma
        self.lams_, self.sigmas_ = result.lams, result.sigmas
        self.scores_ = result.accuracy
        self.cv_results_ = result.cv_results_
        return self._fitted(result.model, classes)


def _class_indices(source, labels):
    """A source's labels (as in its blocks) as indices into its ``classes``."""
    return labels if source.multiclass else (labels > 0).astype(np.intp)


def _as_matrix(X):
    """X as CSR or a 2-d float array, finite (checks without scikit-learn)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        values = X
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array, got shape {X.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("X holds NaN or infinite values")
    return X


def _seed(random_state):
    """An int seed (or None) for the stochastic solvers from any scikit-learn random_state."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2 ** 31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2 ** 31 - 1))
    return random_state

