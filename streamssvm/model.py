"""A trained linear classifier: predictions on arrays and on stores, save and load.

The model file is a NumPy ``.npz`` archive read with ``allow_pickle=False``: arrays
``coef`` (n_features,), ``intercept`` (), ``classes`` (2,), and ``meta``, a JSON string
with the training parameters and the per-iteration history (version 1). A one-vs-rest
model over k > 2 classes (version 2) has ``coef`` (k, n_features), ``intercept`` (k,),
``classes`` (k,), and one parameter set and history per class. A calibrated model's meta
also holds ``calibration``, its Platt sigmoids (:meth:`Platt.to_json
<streamssvm.calibration.Platt.to_json>`); a file without it loads as a model without one.
"""

import json

import numpy as np

from . import kernels
from ._atomic import open_output
from ._interrupt import interrupts_after_compiling
from ._json import json_default
from ._npz import json_object, read_npz
from ._runtime import prepare
from ._warn import warn
from .calibration import (Platt, check_calibration, check_every_class, check_probabilities,
                          class_probabilities, held_out_decisions)
from .errors import ModelFileError
from .data import BlockSource, InMemorySource
from .data.storeset import names_stores, open_stores
from .data.textcache import conversion_options
from .data.memory import as_csr

MODEL_FORMAT = "streamssvm.model"
MODEL_VERSION = 2  # the newest read; binary models are still written as version 1
RECONVERT = ": convert its text like the training store (like= / --like), to the model's width"


class Model:
    """A linear classifier: ``sign(x.coef_ + intercept_)`` over two classes, or one-vs-rest
    ``argmax_c (x.coef_[c] + intercept_[c])`` over k > 2.

    Attributes
    ----------
    coef_ : array of shape (n_features,), or (n_classes, n_features) one-vs-rest
    intercept_ : float, or array of shape (n_classes,) one-vs-rest
    classes_ : array of shape (2,) or (n_classes,)
        The original label values (float64, or str for text labels): predicted for a
        negative and a positive decision, or for each row of ``coef_``.
    params : dict
        How the model was trained (loss, sigma, lambda, solver, tolerance ...); one-vs-rest:
        the parameters shared by the classes' problems, ``"one_vs_rest": True`` and
        ``"per_class"``, the results of each problem (``"converged"``, ``"n_iter"`` ...)
        with its class's ``"label"``.
    history : list of dict
        One entry per solver iteration (one-vs-rest: each carries its class's ``"label"``).
    calibration : Platt or None
        Platt's sigmoids that :meth:`predict_proba` applies (:meth:`calibrate`,
        :func:`streamssvm.calibrated`); None: probabilities only for the logistic loss.
    """

    def __init__(self, coef, intercept, classes, params=None, history=None, calibration=None):
        self.coef_ = np.asarray(coef, dtype=np.float64)
        classes = np.asarray(classes).reshape(-1)
        # labels of a matrix's y may be text; a store's are numbers
        self.classes_ = classes.astype(str if classes.dtype.kind in "US" else np.float64)
        k = len(self.classes_)
        if self.coef_.ndim == 1 and k == 2 and np.size(intercept) == 1:
            self.intercept_ = float(np.reshape(intercept, ()))
        elif self.coef_.ndim == 2 and self.coef_.shape[0] == k > 2 and np.size(intercept) == k:
            self.intercept_ = np.asarray(intercept, dtype=np.float64).reshape(k)
        else:
            raise ValueError(f"coef of shape {self.coef_.shape}, intercept of shape "
                             f"{np.shape(intercept)} with {k} classes: expected (n_features,), "
                             f"() and 2, or (n_classes > 2, n_features), (n_classes,)")
        if len(np.unique(self.classes_)) != k:  # NaN: a one-vs-rest view's "rest"
            raise ValueError(f"classes {self.classes_.tolist()} are not distinct")
        if not (np.all(np.isfinite(self.coef_)) and np.all(np.isfinite(self.intercept_))):
            raise ValueError("coef or intercept holds NaN or infinite values")
        self.params = dict(params or {})
        self.history = list(history or [])
        check_calibration(calibration, k)
        self.calibration = calibration

    @property
    def multiclass(self):
        """One row of ``coef_`` per class (more than two classes)."""
        return self.coef_.ndim == 2

    @property
    def n_features_in_(self):
        return self.coef_.shape[-1]

    def __repr__(self):
        keys = ("loss", "sigma", "lam", "solver")
        desc = ", ".join(f"{k}={self.params[k]!r}" for k in keys if k in self.params)
        return f"Model(n_features={self.n_features_in_}, {desc})"

    def _width_check(self, n_features, what, hint=""):
        if n_features != self.n_features_in_:
            raise ValueError(f"{what} has {n_features} features, the model "
                             f"{self.n_features_in_}{hint}")

    def _weights(self):
        """coef_ and intercept_ as the kernels take them: (n_features + 1,) or, one-vs-rest,
        (n_features + 1, n_classes) (see ``kernels.decision_classes``)."""
        if self.multiclass:
            return np.ascontiguousarray(np.vstack([self.coef_.T, self.intercept_]))
        return np.append(self.coef_, self.intercept_)

    def text_options(self):
        """How svmlight text is converted to this model's inputs: to its width, its classes
        and the index base of its training text (unknown: detected), as ``convert --like``
        the training store does; ``like`` of :func:`~streamssvm.data.storeset.open_stores`."""
        base = (self.params.get("data") or {}).get("zero_based")
        numeric = self.classes_.dtype.kind == "f" and np.all(np.isfinite(self.classes_))
        classes = self.classes_ if numeric else None
        return conversion_options(self.n_features_in_, classes,
                                  base if base in (True, False) else "auto")

    def decision_and_labels(self, source):
        """Decision values (shape (n_samples,), or (n_samples, n_classes) one-vs-rest) and
        the source's labels (as in its blocks), in one pass over a BlockSource."""
        prepare()
        in_memory = isinstance(source, InMemorySource)  # else a store: what to do about it
        self._width_check(source.n_features, source.name, "" if in_memory else RECONVERT)
        out = np.empty((source.n_samples, *self.coef_.shape[:-1]))
        labels = np.empty(source.n_samples, np.int32 if source.multiclass else np.int8)
        w = self._weights()
        for b in source.iter_blocks(transient=True):
            rows = slice(b.row_start, b.row_start + b.n_rows)
            if self.multiclass:
                kernels.decision_classes(b.indptr, b.indices, b.data, w, out[rows])
            else:
                kernels.decision(b.indptr, b.indices, b.data, w, 1.0, out[rows])
            labels[rows] = b.y
        return out, labels

    def labels_of(self, decision):
        """The predicted original labels for decision values from :meth:`decision_function`."""
        if self.multiclass:
            return self.classes_[np.argmax(decision, axis=1)]
        return self.classes_[(decision > 0).astype(np.intp)]

    def accuracy(self, decision, labels, source_classes):
        """Fraction of rows predicted right, from :meth:`decision_and_labels` on a source
        whose ``classes`` are ``source_classes`` (NaN for no rows)."""
        if not len(labels):
            return float("nan")
        if not self.multiclass and tuple(source_classes) == tuple(self.classes_):  # signs
            return float(np.mean((decision > 0) == (labels > 0)))
        truth = np.asarray(source_classes)[_class_index(labels, source_classes)]
        return float(np.mean(self.labels_of(decision) == truth))

    def unknown_labels(self, labels, source_classes, name):
        """What to warn of when ``labels`` (from :meth:`decision_and_labels` on the source
        ``name`` of classes ``source_classes``) hold values that are none of ``classes_``
        (their rows count as wrong), or None."""
        present = np.asarray(source_classes, np.float64)[
            np.unique(_class_index(labels, source_classes))]
        unknown = present[~np.isin(present, self.classes_)]
        if len(unknown):
            return (f"{name}: labels {present.tolist()} are not all among the model's classes "
                    f"{self.classes_.tolist()} (rows labelled {unknown.tolist()} count as "
                    f"wrong)")
        return None

    def summary(self, top=0, names=None):
        """What the model is and how it was trained, as a dict (``streamssvm info MODEL``
        prints it).

        Parameters
        ----------
        top : int
            Also list the ``top`` largest positive and negative weights (of each class's
            row, one-vs-rest).
        names : sequence of str, optional
            Feature names, one per column of ``coef_``, for those weights.

        Returns
        -------
        dict
            ``classes``, ``n_features``, ``nonzero_weights``, ``intercept``; ``training``
            (loss, sigma, lambda, solver, tolerances, intercept, the solver's options);
            ``data`` (source, rows, features, nonzeros, rows per class, where recorded);
            ``result`` (converged, message, iterations, passes, seconds, objective,
            gradient norm; one-vs-rest: per class); ``calibration`` (Platt's sigmoids, or
            None); with ``top``, ``top_weights``: for
            each class's row, ``positive`` and ``negative`` lists of ``(index, name,
            weight)`` (name None without ``names``).
        """
        if names is not None and len(names) != self.n_features_in_:
            raise ValueError(f"{len(names)} feature names for {self.n_features_in_} features")
        params = self.params
        per_class = params.get("per_class")
        result_keys = ("converged", "message", "n_iter", "passes", "seconds", "objective",
                       "grad_norm")
        skipped = {"data", "per_class", "one_vs_rest", "n_samples", "cached_sweeps",
                   "loss_spec", *result_keys}
        out = dict(classes=self.classes_.tolist(), n_features=self.n_features_in_,
                   nonzero_weights=int(np.count_nonzero(self.coef_)),
                   intercept=np.asarray(self.intercept_).tolist(),
                   training={k: v for k, v in params.items() if k not in skipped},
                   data=params.get("data"),
                   result=per_class if per_class is not None else
                   {k: params.get(k) for k in result_keys},
                   calibration=None if self.calibration is None else self.calibration.to_json())
        if top:
            rows = self.coef_ if self.multiclass else self.coef_[None]
            labels = self.classes_ if self.multiclass else self.classes_[1:]
            out["top_weights"] = [dict(label=label.item(), **_largest(row, top, names))
                                  for label, row in zip(labels, rows)]
        return out

    @interrupts_after_compiling()
    def decision_function(self, X):
        """Decision values ``x.coef_ + intercept_`` (one-vs-rest: ``x.coef_[c] + intercept_[c]``).

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features), a BlockSource, or
            stores (a path or a list, as ``train_stream`` takes; streamed block by block;
            svmlight text converted as :meth:`text_options` says, once, kept).

        Returns
        -------
        array of shape (n_samples,), or (n_samples, n_classes) one-vs-rest
        """
        if names_stores(X):
            with open_stores(X, like=self.text_options()) as stores:
                return self.decision_and_labels(stores)[0]
        if isinstance(X, BlockSource):
            return self.decision_and_labels(X)[0]
        X = as_csr(X)
        self._width_check(X.shape[1], "X")
        return X @ self.coef_.T + self.intercept_

    def predict(self, X):
        """Predicted original labels, array of shape (n_samples,)."""
        return self.labels_of(self.decision_function(X))

    @interrupts_after_compiling()
    def score(self, X, y=None):
        """Accuracy on ``X`` and labels ``y`` (original values), or on stores (a path or
        a list, as ``train_stream`` takes) or a source with their own labels (``y``
        omitted; a UserWarning if some are none of ``classes_``)."""
        if y is None:
            source = open_stores(X, like=self.text_options()) if names_stores(X) else X
            if not isinstance(source, BlockSource):
                raise ValueError("score needs labels y unless X is a store or a BlockSource")
            try:
                decision, labels = self.decision_and_labels(source)
            finally:
                if source is not X:
                    source.close()
            unknown = self.unknown_labels(labels, source.classes, source.name)
            if unknown:
                warn(unknown, UserWarning)
            return self.accuracy(decision, labels, source.classes)
        predicted, y = self.predict(X), np.asarray(y)
        if y.shape != predicted.shape:
            raise ValueError(f"y has shape {y.shape}, X has {len(predicted)} rows")
        return float(np.mean(predicted == y))

    # -- probabilities -------------------------------------------------------------------------
    @interrupts_after_compiling()
    def predict_proba(self, X):
        """Class probabilities: Platt's sigmoids of the decision values if the model has a
        ``calibration``, else the logistic loss's own (see :mod:`streamssvm.calibration`);
        a ValueError saying how to calibrate for any other loss.

        Parameters
        ----------
        X : as for :meth:`decision_function`

        Returns
        -------
        array of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; each row sums to 1.
        """
        check_probabilities(self)  # before X is read
        return class_probabilities(self, self.decision_function(X))

    @interrupts_after_compiling()
    def calibrate(self, X, y=None, sample_weight=None):
        """Fit Platt's sigmoids (one per binary problem) on held-out data: rows the model
        was not trained on, of every class. Replaces any calibration; a logistic model's
        probabilities are then Platt's too.

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features) with labels ``y`` (values
            of ``classes_``), or stores (a path or a list) or a BlockSource with their own
            labels (``y`` omitted).
        sample_weight : array of shape (n_samples,), optional
            Row weights of the fit (a weight counts as that many copies of the row).

        Returns
        -------
        self
        """
        decision, class_index, name = held_out_decisions(self, X, y)
        check_every_class(class_index, self.classes_, name)
        self.calibration = Platt.fit(decision, class_index, sample_weight, method="held_out",
                                     data=name)
        return self

    def save(self, path, overwrite=True):
        """Write the model to ``path`` (``.npz``): a file whole or not at all, or ``-``, a
        pipe or a descriptor in place (see :func:`~streamssvm._atomic.open_output`)."""
        meta = json.dumps({"format": MODEL_FORMAT, "version": 2 if self.multiclass else 1,
                           "params": self.params, "history": self.history,
                           **self._calibration_meta()},
                          default=json_default)
        with open_output(path, "wb", overwrite=overwrite) as fh:
            np.savez(fh, coef=self.coef_, intercept=np.asarray(self.intercept_, np.float64),
                     classes=self.classes_, meta=np.array(meta))

    def _calibration_meta(self):
        """What ``meta`` records of the calibration: nothing without one (the file is then one
        that a reader without calibrations reads too)."""
        return {} if self.calibration is None else {"calibration": self.calibration.to_json()}

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`. A path that cannot be opened raises open()'s
        OSError (FileNotFoundError ...); any other file that is no model, or a damaged one,
        a :class:`~streamssvm.errors.ModelFileError`."""
        meta, arrays = read_npz(path, ModelFileError, "a streamssvm model")
        try:
            if json_object(meta).get("format") != MODEL_FORMAT:
                raise ValueError("format tag missing")
            if meta.get("version", 1) > MODEL_VERSION:
                raise ValueError(f"model version {meta['version']} is newer than this "
                                 f"library reads ({MODEL_VERSION})")
            if arrays["classes"].dtype.kind not in "US" and not np.all(
                    np.isfinite(arrays["classes"])):
                raise ValueError(f"classes {arrays['classes'].tolist()} are not all finite")
            return cls(arrays["coef"], arrays["intercept"], arrays["classes"], meta["params"],
                       meta["history"], Platt.from_json(meta.get("calibration")))
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: not a streamssvm model ({exc})") from exc


def _largest(row, top, names):
    """The ``top`` largest positive and negative entries of ``row`` as ``(index, name,
    weight)`` lists, largest magnitude first."""
    order = np.argsort(row, kind="stable")
    picks = {"positive": order[::-1][:top], "negative": order[:top]}
    return {sign: [(int(j), None if names is None else str(names[j]), float(row[j]))
                   for j in index if (row[j] > 0 if sign == "positive" else row[j] < 0)]
            for sign, index in picks.items()}


def _class_index(labels, source_classes):
    """Indices into ``source_classes`` of a source's labels as in its blocks (class indices
    of a multiclass source, -1/+1 of a binary one)."""
    return labels if len(source_classes) > 2 else (labels > 0).astype(np.intp)
