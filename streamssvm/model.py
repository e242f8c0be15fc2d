"""A trained linear classifier: predictions on arrays and on stores, save and load.

The model file is a NumPy ``.npz`` archive read with ``allow_pickle=False``: arrays
``coef`` (n_features,), ``intercept`` (), ``classes`` (2,), and ``meta``, a JSON string
with the training parameters and the per-iteration history.
"""

import json
import os

import numpy as np
import scipy.sparse as sp

from . import kernels
from ._atomic import atomic_output
from .data import BlockSource, Store

MODEL_FORMAT = "streamssvm.model"
MODEL_VERSION = 1


class Model:
    """A linear classifier sign(x.coef_ + intercept_) over two classes.

    Attributes
    ----------
    coef_ : array of shape (n_features,)
    intercept_ : float
    classes_ : array of shape (2,)
        The original label values predicted for a negative and a positive decision.
    params : dict
        How the model was trained (loss, sigma, lambda, solver, tolerance ...).
    history : list of dict
        One entry per solver iteration.
    """

    def __init__(self, coef, intercept, classes, params=None, history=None):
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = float(intercept)
        self.classes_ = np.asarray(classes, dtype=np.float64)
        self.params = dict(params or {})
        self.history = list(history or [])

    @property
    def n_features_in_(self):
        return self.coef_.shape[0]

    def __repr__(self):
        keys = ("loss", "sigma", "lam", "solver")
        desc = ", ".join(f"{k}={self.params[k]!r}" for k in keys if k in self.params)
        return f"Model(n_features={self.n_features_in_}, {desc})"

    def _width_check(self, n_features, what):
        if n_features != self.n_features_in_:
            raise ValueError(f"{what} has {n_features} features, the model {self.n_features_in_}")

    def _weights(self):
        return np.append(self.coef_, self.intercept_)

    def decision_and_labels(self, source):
        """Decision values and the source's labels (+-1), in one pass over a BlockSource."""
        self._width_check(source.n_features, source.name)
        out = np.empty(source.n_samples)
        labels = np.empty(source.n_samples, np.int8)
        w = self._weights()
        for b in source.iter_blocks(transient=True):
            rows = slice(b.row_start, b.row_start + b.n_rows)
            kernels.decision(b.indptr, b.indices, b.data, w, 1.0, out[rows])
            labels[rows] = b.y
        return out, labels

    def decision_function(self, X):
        """Decision values x.coef_ + intercept_.

        Parameters
        ----------
        X : array or sparse matrix of shape (n_samples, n_features), a BlockSource, or the
            path of a store (streamed block by block).

        Returns
        -------
        array of shape (n_samples,)
        """
        if isinstance(X, (str, os.PathLike)):
            with Store(X) as store:
                return self.decision_and_labels(store)[0]
        if isinstance(X, BlockSource):
            return self.decision_and_labels(X)[0]
        X = sp.csr_matrix(X)
        self._width_check(X.shape[1], "X")
        if X.nnz and not np.all(np.isfinite(X.data)):
            raise ValueError("X holds NaN or infinite values")
        return X @ self.coef_ + self.intercept_

    def predict(self, X):
        """Predicted original labels, array of shape (n_samples,)."""
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def score(self, X, y=None):
        """Accuracy on ``X`` and labels ``y`` (original values), or on a store / source
        with its own labels (``y`` omitted)."""
        if y is None:
            source = Store(X) if isinstance(X, (str, os.PathLike)) else X
            if not isinstance(source, BlockSource):
                raise ValueError("score needs labels y unless X is a store or a BlockSource")
            try:
                decision, labels = self.decision_and_labels(source)
            finally:
                if source is not X:
                    source.close()
            return float(np.mean((decision > 0) == (labels > 0))) if len(labels) else float("nan")
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def save(self, path, overwrite=True):
        """Write the model to ``path`` (``.npz``; whole or not at all)."""
        meta = json.dumps({"format": MODEL_FORMAT, "version": MODEL_VERSION,
                           "params": self.params, "history": self.history})
        with atomic_output(path, overwrite=overwrite) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, coef=self.coef_, intercept=np.float64(self.intercept_),
                         classes=self.classes_, meta=np.array(meta))

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`."""
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("format") != MODEL_FORMAT:
                    raise ValueError("format tag missing")
                return cls(z["coef"], float(z["intercept"]), z["classes"], meta["params"],
                           meta["history"])
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"{path}: not a streamssvm model ({exc})") from exc
