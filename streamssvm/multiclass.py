"""One-vs-rest training over k > 2 classes, and class weights, on any block source.

For each class c, the binary problem "c against the rest" is trained on a
:class:`~streamssvm.data.OneVsRestView` of the source: the same blocks (no copy of the rows;
a store is streamed as for a binary problem), labels +1 for class c and -1 for the others.

Class weights follow LIBLINEAR (and scikit-learn's LinearSVC and SGDClassifier): with two
classes, row i costs ``class_weight[y_i]``; in the problem of class c of a one-vs-rest fit,
the rows of class c cost ``class_weight[c]`` and the others 1. Row weights multiply them.
"""

import numpy as np

from ._interrupt import interrupts_after_compiling
from ._names import named
from .api import check_w0_shape, open_source, train_stream
from .data import OneVsRestView
from .data.source import label_text
from .model import Model
from .solvers.common import check_w0

# per-class results of a one-vs-rest model's params (the others are shared by all classes)
PER_CLASS_KEYS = ("converged", "message", "n_iter", "passes", "cached_sweeps", "seconds",
                  "objective", "grad_norm")


def class_weight_vector(class_weight, classes, class_counts):
    """Weights per class as an array of shape (n_classes,).

    Parameters
    ----------
    class_weight : None, "balanced", dict or array of shape (n_classes,)
        "balanced": S / (n_classes * S_c), S_c the count of class c and S their sum, as
        scikit-learn; a dict maps label values to weights (labels not in it weigh 1); an
        array is in ``classes`` order.
    classes : sequence of label values
    class_counts : array of shape (n_classes,)
        Rows per class, or the sum of their sample weights.

    Returns
    -------
    array of shape (n_classes,), or None for ``class_weight=None``
    """
    k = len(classes)
    if class_weight is None:
        return None
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced', a dict or an array, got "
                             f"{class_weight!r}")
        counts = np.asarray(class_counts, np.float64)
        with np.errstate(divide="ignore"):
            weights = counts.sum() / (k * counts)
        return np.where(counts > 0, weights, 1.0)  # an absent class has no rows to weigh
    if isinstance(class_weight, dict):
        index = {label: j for j, label in enumerate(classes)}
        unknown = [label for label in class_weight if label not in index]
        if unknown:
            raise ValueError(f"{named('class_weight')} names labels {unknown} that are not "
                             f"among the classes {list(classes)}")
        weights = np.ones(k)
        for label, weight in class_weight.items():
            weights[index[label]] = weight
    else:
        weights = np.asarray(class_weight, np.float64)
        if weights.shape != (k,):
            raise ValueError(f"class_weight has shape {weights.shape}, expected ({k},)")
    check_class_weights(weights)
    return weights


def check_class_weights(weights):
    """Refuse class weights (an array) that are not all finite and >= 0."""
    if not np.all(np.isfinite(weights) & (weights >= 0)):
        raise ValueError(f"class weights must be finite and >= 0, got {weights}")


@interrupts_after_compiling()
def train_one_vs_rest(data, y=None, *, class_weight=None, sample_weight=None, w0=None,
                      names=None, **train_options):
    """Train on two classes (one problem) or more (one per class, against the rest).

    Parameters
    ----------
    data, y
        As for :func:`~streamssvm.train_stream`: a store path, a BlockSource, or a matrix and
        its labels (any number of distinct values).
    class_weight : None, "balanced", dict or array of shape (n_classes,)
        See :func:`class_weight_vector` and the module docstring.
    sample_weight : array of shape (n_samples,), optional
        Row weights c_i as in ``train_stream`` (LIBLINEAR's C_i = c_i / (lam n)); "balanced"
        class weights count them (a class's count is its rows' sum of weights).
    w0 : array of shape (n_variables,), or (n_classes, n_variables) for k > 2, optional
        Warm start (NaN or infinite values are refused before the data is opened, a
        wrong shape as soon as it is: before any read).
    names : sequence of n_classes labels, optional
        What each class's progress bar calls it (default its label value), e.g. the label
        values of classes the source holds as indices.
    **train_options
        Passed to ``train_stream`` for every problem (loss, sigma, lam, solver, tol ...);
        ``checkpoint`` and ``client`` only with two classes, ``client`` without weights.

    Returns
    -------
    Model
        Binary, or with one row of ``coef_`` per class.
    """
    if w0 is not None:  # every class's, before the data is opened
        w0 = check_w0(w0)
    if class_weight is not None and train_options.get("client") is not None:
        raise ValueError("class weights (class_weight) are not supported across Dask workers: "
                         "train without them, or without a client")
    check = None if w0 is None else (  # as soon as the width is known: before any read
        lambda source: check_w0_shape(w0, source.n_features, train_options.get("fit_intercept"),
                                      len(source.classes) if source.multiclass else None))
    with open_source(data, y, check=check,
                     progress=train_options.get("progress", True)) as source:
        if sample_weight is not None and np.shape(sample_weight) != (source.n_samples,):
            raise ValueError(f"{source.name}: sample_weight has shape "
                             f"{np.shape(sample_weight)}, expected ({source.n_samples},)")
        k = len(source.classes)
        weights = None
        if class_weight is not None:
            labels = source.labels()
            if not source.multiclass:
                labels = (labels > 0).astype(np.intp)  # class indices, as a multiclass source's
            base = 1.0 if sample_weight is None else np.asarray(sample_weight, np.float64)
            counts = np.bincount(labels, weights=sample_weight, minlength=k)
            weights = class_weight_vector(class_weight, source.classes, counts)
        if not source.multiclass:
            if weights is not None:
                sample_weight = base * weights[labels]
            return train_stream(source, sample_weight=sample_weight, w0=w0, **train_options)
        if train_options.get("checkpoint") is not None:  # each problem would refuse the last's
            raise ValueError(f"{source.name}: checkpoints are for two classes (one-vs-rest "
                             f"trains one problem per class)")
        if train_options.get("client") is not None:  # each class's view is local
            raise ValueError(f"{source.name}: one-vs-rest over its {k} classes is not trained "
                             f"with a Dask client (only two classes are); train it without one")
        models = []
        progress = train_options.pop("progress", True)
        for c, name in enumerate(source.classes if names is None else names):
            rows = sample_weight
            if weights is not None:
                rows = np.where(labels == c, weights[c], 1.0) * base
            models.append(train_stream(OneVsRestView(source, c), sample_weight=rows,
                                       w0=None if w0 is None else w0[c],
                                       progress=progress
                                       and f"class {label_text(name)} ({c + 1}/{k})",
                                       **train_options))
        return _stacked(models, source)


def _stacked(models, source):
    """One one-vs-rest Model from the binary models of the classes of ``source``."""
    classes = source.classes
    params = {key: value for key, value in models[0].params.items() if key not in PER_CLASS_KEYS}
    params.update(
        data=dict(models[0].params["data"], source=source.name,
                  class_counts=[int(c) for c in source.class_counts()]),
        one_vs_rest=True,
        per_class=[dict({key: m.params.get(key) for key in PER_CLASS_KEYS}, label=label)
                   for label, m in zip(classes, models)],
        converged=all(m.params["converged"] for m in models),
        n_iter=max(m.params["n_iter"] for m in models),
        passes=sum(m.params["passes"] for m in models),
        seconds=sum(m.params["seconds"] for m in models))
    history = [dict(h, label=label) for label, m in zip(classes, models) for h in m.history]
    return Model(np.stack([m.coef_ for m in models]), [m.intercept_ for m in models], classes,
                 params, history)
