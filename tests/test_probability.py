"""Class probabilities: the logistic loss's own against LIBLINEAR's ``-s 0 -b 1``, Platt's
sigmoid against scikit-learn's fit on the same decision values, cross-fitting against
``CalibratedClassifierCV(method="sigmoid", ensemble=False)`` on the same folds, the folds,
the model file, SmoothSVC(probability=True) and the command line.

Data: the shipped a9a (``streamssvm.datasets``) and scikit-learn's bundled digits. The scale
conversion: LIBLINEAR and LinearSVC minimise 1/2 ||w||^2 + C sum_i loss_i, which is ours
times C n for C = 1 / (lam n).
"""

import json
import subprocess
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

sklearn = pytest.importorskip("sklearn")

from sklearn.calibration import (CalibratedClassifierCV, _sigmoid_calibration,  # noqa: E402
                                 _SigmoidCalibration)
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.metrics import brier_score_loss, log_loss  # noqa: E402
from sklearn.model_selection import PredefinedSplit  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from streamssvm import (Model, SmoothSVC, calibrated, train_one_vs_rest,  # noqa: E402
                        train_stream)
from streamssvm.calibration import (Platt, class_probabilities, fit_sigmoid,  # noqa: E402
                                    stratified_folds)
from streamssvm.cli import main  # noqa: E402
from streamssvm.data import InMemorySource, store  # noqa: E402
from streamssvm.datasets import a9a_paths  # noqa: E402
from streamssvm.losses import get_loss  # noqa: E402

N_TRAIN, N_TEST = 6000, 4000
TIGHT = dict(tol=1e-8, progress=False)  # fold models that any two codes solve alike


@pytest.fixture(scope="module")
def a9a(sklearn_load):
    """The first rows of the shipped a9a train and test files, 123 features."""
    train, test = a9a_paths()
    X, y = sklearn_load(train, n_features=123)
    X_test, y_test = sklearn_load(test, n_features=123)
    return X[:N_TRAIN], y[:N_TRAIN], X_test[:N_TEST], y_test[:N_TEST]


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:1200], order[1200:]
    return X[train], y[train], X[test], y[test]


def write_store(path, X, y, value_dtype=None, **blocking):
    """A real store file of X, y (its path as a str), cut as InMemorySource(**blocking)."""
    return str(store.write_store(path, InMemorySource(X, y, **blocking),
                                 value_dtype=value_dtype))


def platt_objective(f, positive, a, b):
    """Platt's cross-entropy against his smoothed targets at (a, b)."""
    n1, n0 = positive.sum(), (~positive).sum()
    t = np.where(positive, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))
    z = a * f + b
    return float(np.sum(t * z + np.logaddexp(0, -z)))


# ---------------------------------------------------------------- Platt's fit

@pytest.mark.parametrize("scale", [1.0, 100.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_sigmoid_fit_equals_scikit_learns(a9a, scale, weighted):
    """On the same decision values (scale 100: beyond scikit-learn's rescaling threshold
    of 30), Lin, Lin & Weng's Newton fit finds scikit-learn's a, b (L-BFGS), at an
    objective no larger."""
    X, y, X_test, y_test = a9a
    f = scale * train_stream(X, y, loss="psi_g", lam=1e-4, progress=False).decision_function(
        X_test)
    positive = y_test > 0
    weights = np.random.default_rng(1).uniform(0.2, 3.0, len(f)) if weighted else None
    a, b, n_iter, converged = fit_sigmoid(f, positive, weights)
    a_ref, b_ref = _sigmoid_calibration(f, positive.astype(float), sample_weight=weights)
    assert converged and n_iter < 20
    np.testing.assert_allclose([a, b], [a_ref, b_ref], rtol=2e-5, atol=1e-6)
    if not weighted:
        assert platt_objective(f, positive, a, b) <= platt_objective(f, positive, a_ref,
                                                                     b_ref) + 1e-9


def test_integer_weights_count_as_copies():
    rng = np.random.default_rng(2)
    f = rng.normal(size=300)
    positive = rng.random(300) < 1 / (1 + np.exp(-2 * f))
    copies = rng.integers(1, 4, 300)
    weighted = fit_sigmoid(f, positive, copies.astype(float))[:2]
    repeated = fit_sigmoid(np.repeat(f, copies), np.repeat(positive, copies))[:2]
    np.testing.assert_allclose(weighted, repeated, rtol=1e-9)


def test_calibrate_on_held_out_data_equals_scikit_learns_fit(a9a, tmp_path):
    """Model.calibrate on a matrix and on a store: scikit-learn's sigmoid of the model's
    decision values there."""
    X, y, X_test, y_test = a9a
    model = train_stream(X, y, loss="squared_hinge", lam=1e-4, progress=False)
    f = model.decision_function(X_test)
    reference = _SigmoidCalibration().fit(f, (y_test > 0).astype(float))
    model.calibrate(X_test, y_test)
    np.testing.assert_allclose([model.calibration.a[0], model.calibration.b[0]],
                               [reference.a_, reference.b_], rtol=2e-5)
    proba = model.predict_proba(X_test)
    np.testing.assert_allclose(proba[:, 1], reference.predict(f), rtol=1e-5, atol=1e-7)
    assert model.calibration.fitted["method"] == "held_out"
    store = write_store(tmp_path / "test.h5", X_test, y_test, value_dtype="float64")
    from_store = Model(model.coef_, model.intercept_, model.classes_, model.params)
    from_store.calibrate(store)
    np.testing.assert_allclose(from_store.calibration.a, model.calibration.a, rtol=1e-12)
    np.testing.assert_allclose(from_store.predict_proba(store), proba, rtol=1e-12)


# ---------------------------------------------------------------- cross-fitting

def test_cross_fit_sigmoid_is_scikit_learns_on_the_folds_decision_values(a9a):
    """psi_G: the sigmoid of calibrated(cv=folds) is scikit-learn's fitted on decision values
    made independently here, each fold's by a model of the other folds' rows (sliced
    matrices), and it is applied to the model of all rows."""
    X, y, X_test, _ = a9a
    options = dict(loss="psi_g", sigma=2 ** -4, lam=1e-4, **TIGHT)
    folds = stratified_folds((y > 0).astype(int), 4, seed=3)
    model = calibrated(X, y, cv=folds, **options)
    held_out = np.empty(len(y))
    for k in range(4):
        inside = folds != k
        held_out[~inside] = train_stream(X[inside], y[inside], **options).decision_function(
            X[~inside])
    a_ref, b_ref = _sigmoid_calibration(held_out, (y > 0).astype(float))
    platt = model.calibration
    np.testing.assert_allclose([platt.a[0], platt.b[0]], [a_ref, b_ref], rtol=1e-4, atol=1e-6)
    assert platt.fitted["folds"] == 4 and platt.fitted["seed"] is None
    full = train_stream(X, y, **options)
    np.testing.assert_allclose(model.coef_, full.coef_, rtol=1e-6, atol=1e-9)
    expected = 1 / (1 + np.exp(a_ref * full.decision_function(X_test) + b_ref))
    np.testing.assert_allclose(model.predict_proba(X_test)[:, 1], expected, atol=1e-5)


def sklearn_calibrated(base, X, y, folds):
    return CalibratedClassifierCV(base, method="sigmoid", ensemble=False,
                                  cv=PredefinedSplit(folds)).fit(X, y)


@pytest.mark.parametrize("classes", [2, 10])
def test_smooth_hinge_matches_calibrated_classifier_cv_on_the_same_base(digits, classes):
    """psi_G with an intercept, two classes and one-vs-rest over ten: CalibratedClassifierCV
    around SmoothSVC (the same base problems on the same folds) gives the same sigmoids
    and probabilities as calibrated() (their fits of the sigmoid differ, L-BFGS and
    Newton)."""
    X, y, X_test, y_test = digits
    if classes == 2:
        X, y, X_test, y_test = X, (y >= 5).astype(int), X_test, (y_test >= 5).astype(int)
    folds = stratified_folds(np.searchsorted(np.unique(y), y), 3, seed=0)
    options = dict(loss="psi_g", lam=1e-3, fit_intercept=True, tol=1e-8)
    ours = calibrated(X, y, cv=folds, progress=False, **options)
    theirs = sklearn_calibrated(SmoothSVC(**options), X, y, folds)
    calibrators = theirs.calibrated_classifiers_[0].calibrators
    np.testing.assert_allclose(ours.calibration.a, [c.a_ for c in calibrators], rtol=1e-5)
    np.testing.assert_allclose(ours.calibration.b, [c.b_ for c in calibrators], rtol=1e-5,
                               atol=1e-6)
    proba, reference = ours.predict_proba(X_test), theirs.predict_proba(X_test)
    assert proba.shape == (len(y_test), classes)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(proba, reference, atol=1e-6)


def test_squared_hinge_end_to_end_close_to_linear_svc_calibrated(a9a):
    """squared hinge, no intercept, 5 folds: log loss and Brier score on the test rows close to
    CalibratedClassifierCV(LinearSVC(C = 1 / (lam n))) on the same folds (LinearSVC keeps C
    on the folds, where ours keeps lam: their fold models differ a little)."""
    X, y, X_test, y_test = a9a
    lam = 1e-4
    folds = stratified_folds((y > 0).astype(int), 5, seed=0)
    ours = calibrated(X, y, cv=folds, loss="squared_hinge", lam=lam, **TIGHT)
    base = LinearSVC(C=1 / (lam * len(y)), dual=False, fit_intercept=False, tol=1e-10,
                     max_iter=10000)
    theirs = sklearn_calibrated(base, X, y, folds)
    p, q = ours.predict_proba(X_test), theirs.predict_proba(X_test)
    positive = (y_test > 0).astype(int)
    assert abs(log_loss(positive, p) - log_loss(positive, q)) < 5e-4 * log_loss(positive, q)
    assert abs(brier_score_loss(positive, p[:, 1]) - brier_score_loss(positive, q[:, 1])) \
        < 5e-4 * brier_score_loss(positive, q[:, 1])
    assert np.abs(p - q).max() < 0.005
    assert log_loss(positive, p) < 0.36  # better than the prior's 0.55


def test_cross_fit_on_a_store_equals_the_matrix(a9a, tmp_path):
    X, y, X_test, _ = a9a
    path = write_store(tmp_path / "a9a.h5", X, y, value_dtype="float64", block_rows=700)
    options = dict(loss="psi_m", lam=1e-4, cv=3, seed=5, **TIGHT)
    from_matrix, from_store = calibrated(X, y, **options), calibrated(str(path), **options)
    np.testing.assert_allclose(from_store.calibration.a, from_matrix.calibration.a, rtol=1e-6)
    np.testing.assert_allclose(from_store.calibration.b, from_matrix.calibration.b, rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(from_store.predict_proba(X_test),
                               from_matrix.predict_proba(X_test), atol=1e-7)


def test_stratified_folds():
    rng = np.random.default_rng(4)
    classes = np.repeat([0, 1, 2], [1000, 77, 13])[rng.permutation(1090)]
    folds = stratified_folds(classes, 5, seed=7)
    per_class = np.array([np.bincount(folds[classes == c], minlength=5) for c in range(3)])
    assert np.all(per_class.max(axis=1) - per_class.min(axis=1) <= 1)
    sizes = np.bincount(folds, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(folds, stratified_folds(classes, 5, seed=7))
    assert np.any(folds != stratified_folds(classes, 5, seed=8))


def test_cross_fit_refuses_a_fold_without_a_class(digits):
    X, y, _, _ = digits
    rare = np.concatenate([np.flatnonzero(y != 3), np.flatnonzero(y == 3)[:4]])
    with pytest.raises(ValueError, match=r"fold \d of 5 holds no rows of class 3 \(4 row"):
        calibrated(X[rare], y[rare], cv=5, lam=1e-3, progress=False)
    folds = np.arange(len(y)) % 3
    folds[y == 7] = 0  # folds 1 and 2 lack class 7
    with pytest.raises(ValueError, match="fold 1 of 3 holds no rows of class 7"):
        calibrated(X, y, cv=folds, lam=1e-3, progress=False)
    for cv, match in ((1, "integer >= 2"), (np.zeros(len(y), int), "at least 2 folds"),
                      (np.arange(3), "each row's fold")):
        with pytest.raises(ValueError, match=match):
            calibrated(X, y, cv=cv, lam=1e-3, progress=False)
    with pytest.raises(ValueError, match="both given"):
        calibrated(X, y, cv=3, calibration_data=X, calibration_y=y, progress=False)


# ---------------------------------------------------------------- the logistic loss's own

def liblinear_probabilities(X, y, X_test, lam, bias):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    C = 1 / (lam * len(y))
    flags = "-B 1 -R" if bias else "-B -1"  # -R: the bias unregularised, as our intercept
    lib = liblinear.train(liblinear.problem(y, sp.csr_matrix(X)),
                          liblinear.parameter(f"-s 0 -c {C!r} -e 1e-10 {flags} -q"))
    _, _, values = liblinear.predict(np.zeros(X_test.shape[0]), sp.csr_matrix(X_test), lib,
                                     "-b 1 -q")
    return np.array(values)[:, np.argsort(lib.get_labels())]  # columns in sorted labels


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_logistic_equals_liblinear_b1(a9a, fit_intercept):
    X, y, X_test, _ = a9a
    lam = 1e-4
    model = train_stream(X, y, loss="logistic", lam=lam, fit_intercept=fit_intercept,
                         **TIGHT)
    reference = liblinear_probabilities(X, y, X_test, lam, fit_intercept)
    np.testing.assert_allclose(model.predict_proba(X_test), reference, atol=1e-6)


def test_logistic_one_vs_rest_equals_liblinear_b1(digits):
    """Ten classes: each class's sigmoid, normalised over the classes (LIBLINEAR's
    predict_probability)."""
    X, y, X_test, _ = digits
    lam = 1e-3
    model = train_one_vs_rest(X, y, loss="logistic", lam=lam, **TIGHT)
    reference = liblinear_probabilities(X, y, X_test, lam, False)
    proba = model.predict_proba(X_test)
    np.testing.assert_allclose(proba, reference, atol=1e-6)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X_test))


@pytest.mark.parametrize("theta", [0.0, 0.5, -0.3])
def test_logistic_link_minimises_the_expected_loss(theta):
    """p(f) of the logistic loss with kink theta: f minimises p psi(f) + (1 - p) psi(-f),
    i.e. p psi'(f) = (1 - p) psi'(-f); p(0) = 1/2, increasing in f."""
    loss = get_loss(f"logistic:theta={theta}")
    f = np.linspace(-30, 30, 121)
    model = Model(np.ones(1), 0.0, (-1, 1), dict(loss="logistic", loss_spec=loss.spec))
    q, p = model.predict_proba(f[:, None]).T  # decision values f: coef 1, no intercept
    slope_f, slope_minus_f = loss.derivatives(f)[1], loss.derivatives(-f)[1]
    np.testing.assert_allclose(p * slope_f, q * slope_minus_f, rtol=1e-10)
    np.testing.assert_allclose(p + q, 1.0, rtol=1e-15)
    assert p[60] == pytest.approx(0.5) and np.all(np.diff(p) > 0)


def test_probabilities_of_extreme_decision_values_stay_normalised():
    """One-vs-rest rows whose every class has a decision below -800 (each sigmoid 0 in
    floating point) still get probabilities summing to 1, from the logs."""
    model = Model(np.zeros((3, 1)), np.zeros(3), (0, 1, 2), dict(loss="logistic"))
    decision = np.array([[-900.0, -800.0, -1000.0], [5.0, 0.0, -5.0]])
    proba = class_probabilities(model, decision)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba[0].argmax() == 1 and proba[0, 1] == pytest.approx(1.0)


# ---------------------------------------------------------------- no probabilities, files

def test_uncalibrated_smooth_hinge_says_how_to_calibrate(a9a):
    X, y, _, _ = a9a
    model = train_stream(X[:500], y[:500], loss="psi_g", progress=False)
    with pytest.raises(ValueError, match=r"loss 'psi_g'.*no calibration.*streamssvm\.calibrated"
                                         r".*model\.calibrate.*loss='logistic'"):
        model.predict_proba("no-such-store.h5")  # refused before the data is read


def test_calibration_round_trips_through_the_model_file(a9a, tmp_path):
    X, y, X_test, _ = a9a
    model = calibrated(X, y, cv=3, loss="psi_g", progress=False)
    model.save(tmp_path / "m.npz")
    loaded = Model.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.calibration.a, model.calibration.a)
    np.testing.assert_array_equal(loaded.calibration.b, model.calibration.b)
    assert loaded.calibration.fitted == json.loads(json.dumps(model.calibration.fitted))
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))


def test_files_without_calibration_load_as_before(a9a, tmp_path):
    """A model saved without calibration writes no calibration record; a file of the layout
    before calibrations (np.savez of coef, intercept, classes, meta) loads; a broken record
    is a file that is no model."""
    X, y, _, _ = a9a
    model = train_stream(X[:500], y[:500], loss="psi_g", progress=False)
    model.save(tmp_path / "plain.npz")
    with np.load(tmp_path / "plain.npz") as z:
        assert "calibration" not in json.loads(str(z["meta"]))
    assert Model.load(tmp_path / "plain.npz").calibration is None
    meta = json.dumps({"format": "streamssvm.model", "version": 1,
                       "params": {"loss": "logistic"}, "history": []})
    np.savez(tmp_path / "old.npz", coef=np.ones(3), intercept=np.array(0.5),
             classes=np.array([0.0, 1.0]), meta=np.array(meta))
    old = Model.load(tmp_path / "old.npz")
    assert old.calibration is None
    np.testing.assert_allclose(old.predict_proba(np.eye(3))[:, 1], 1 / (1 + np.exp(-1.5)))
    broken = json.loads(meta)
    broken["calibration"] = {"method": "platt", "a": [1.0, 2.0], "b": [0.0]}
    np.savez(tmp_path / "broken.npz", coef=np.ones(3), intercept=np.array(0.5),
             classes=np.array([0.0, 1.0]), meta=np.array(json.dumps(broken)))
    with pytest.raises(ValueError, match="broken.npz: not a streamssvm model.*Platt's a and b"):
        Model.load(tmp_path / "broken.npz")


def test_model_refuses_a_calibration_of_another_shape():
    with pytest.raises(ValueError, match="holds 2 sigmoid"):
        Model(np.zeros(3), 0.0, (0, 1), calibration=Platt([1.0, 1.0], [0.0, 0.0]))


# ---------------------------------------------------------------- SmoothSVC

# the checks' data with 3 rows of a class: 5 folds cannot all hold it (SVC's probability
# fit does not refuse such data; CalibratedClassifierCV, as this, does)
FEW_ROWS = "a class of fewer rows than the 5 folds: refused, as CalibratedClassifierCV does"
PROBABILITY_FAILURES = {name: FEW_ROWS for name in (
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data", "check_fit2d_1feature")}
# predict is the decision function's sign, and Platt's sigmoid 1 / (1 + exp(A f + B)) puts
# probability 1/2 at f = -B/A, not 0: near the boundary the two disagree, as SVC's
# predict_proba and LIBSVM's -b 1 do (test_predict_is_the_decision_functions_sign)
PROBABILITY_FAILURES["check_classifiers_train"] = (
    "Platt's offset: predict_proba's 1/2 is not the decision function's 0, as in SVC")


@parametrize_with_checks([SmoothSVC(probability=True, random_state=0)],
                         expected_failed_checks=lambda estimator: PROBABILITY_FAILURES,
                         xfail_strict=True)
def test_sklearn_estimator_checks_with_probability(estimator, check):
    check(estimator)


def test_smooth_svc_probability_is_the_cross_fit(digits):
    X, y, X_test, _ = digits
    clf = SmoothSVC(lam=1e-3, probability=True, random_state=3).fit(X, y)
    model = calibrated(X, y, cv=5, seed=3, lam=1e-3, fit_intercept=True, progress=False)
    np.testing.assert_allclose(clf.predict_proba(X_test), model.predict_proba(X_test),
                               rtol=1e-12)
    np.testing.assert_allclose(clf.predict_log_proba(X_test),
                               np.log(clf.predict_proba(X_test)))
    assert clf.model_.calibration.fitted["folds"] == 5


def test_smooth_svc_predict_proba_is_there_when_it_can_answer(digits):
    X, y, X_test, _ = digits
    assert not hasattr(SmoothSVC(), "predict_proba")
    assert hasattr(SmoothSVC(probability=True), "predict_proba")
    assert hasattr(SmoothSVC(loss="logistic"), "predict_proba")
    fitted = SmoothSVC(lam=1e-3).fit(X, y)
    with pytest.raises(AttributeError) as refused:
        fitted.predict_proba(X_test)
    # scikit-learn's available_if raises its own AttributeError from the check's
    assert "loss 'psi_g'" in str(refused.value.__cause__ or refused.value)
    assert "probability=True" in str(refused.value.__cause__ or refused.value)
    logistic = SmoothSVC(loss="logistic", lam=1e-3).fit(X, y)
    proba = logistic.predict_proba(X_test)
    np.testing.assert_array_equal(logistic.classes_[proba.argmax(axis=1)],
                                  logistic.predict(X_test))


def test_predict_is_the_decision_functions_sign():
    """With Platt's sigmoid, predict stays the decision function's sign (as SVC's); the
    probabilities disagree with it only between f = 0 and the sigmoid's midpoint -b/a."""
    from sklearn.datasets import make_classification

    X, y = make_classification(400, 8, flip_y=0.2, random_state=0)
    clf = SmoothSVC(lam=1e-2, probability=True, random_state=0).fit(X, y)
    f = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(f > 0).astype(int)])
    platt = clf.model_.calibration
    midpoint = -platt.b[0] / platt.a[0]
    disagree = clf.classes_[clf.predict_proba(X).argmax(axis=1)] != clf.predict(X)
    between = (np.minimum(0, midpoint) <= f) & (f <= np.maximum(0, midpoint))
    assert disagree.any() and np.all(between[disagree])


def test_smooth_svc_probability_on_a_store(a9a, tmp_path):
    X, y, X_test, y_test = a9a
    path = (write_store(tmp_path / "a9a.h5", X, y))
    test = (write_store(tmp_path / "a9a.t.h5", X_test, y_test))
    clf = SmoothSVC(lam=1e-4, probability=True, random_state=0).fit(path)
    proba = clf.predict_proba(test)
    assert proba.shape == (N_TEST, 2)
    np.testing.assert_allclose(proba, clf.predict_proba(X_test), atol=1e-6)


def test_smooth_svc_probability_without_scikit_learn(python, python_env):
    """scikit-learn blocked: probability=True fits and predicts probabilities, and without
    it predict_proba of a smooth hinge refuses, saying how to get them."""
    code = textwrap.dedent("""
        import sys
        sys.modules["sklearn"] = None  # any import of scikit-learn now fails
        import numpy as np
        import streamssvm
        rng = np.random.default_rng(0)
        X = rng.normal(size=(300, 5))
        y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + rng.normal(size=(300, 3)), axis=1)]
        clf = streamssvm.SmoothSVC(lam=1e-3, probability=True, random_state=0).fit(X, y)
        proba = clf.predict_proba(X)
        assert proba.shape == (300, 3) and np.allclose(proba.sum(axis=1), 1.0)
        plain = streamssvm.SmoothSVC(lam=1e-3).fit(X, y)
        try:
            plain.predict_proba(X)
        except AttributeError as e:
            assert "probability=True" in str(e), e
        else:
            raise AssertionError("predict_proba without probabilities")
    """)
    result = subprocess.run([python, "-c", code], env=python_env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- the command line

def test_cli_calibrate_and_predict_probability(a9a, tmp_path, capsys):
    X, y, X_test, y_test = a9a
    train = (write_store(tmp_path / "train.h5", X, y))
    test = (write_store(tmp_path / "test.h5", X_test, y_test))
    model, out = str(tmp_path / "m.npz"), str(tmp_path / "p.txt")
    assert main(["train", train, "-o", model, "--calibrate", "3", "--calibration-seed", "2",
                 "--quiet"]) == 0
    assert main(["predict", model, test, "-o", out, "--probability"]) == 0
    lines = open(out).read().splitlines()
    assert lines[0] == "# -1 1" and len(lines) == N_TEST + 1
    written = np.loadtxt(out)
    loaded = Model.load(model)
    assert loaded.calibration.fitted["seed"] == 2
    np.testing.assert_array_equal(written, loaded.predict_proba(test))
    held = str(tmp_path / "held.npz")
    assert main(["train", train, "-o", held, "--calibration-data", test]) == 0
    assert "Platt's sigmoid on held-out" in capsys.readouterr().out
    assert Model.load(held).calibration.fitted["method"] == "held_out"


def test_cli_multiclass_probability_columns(digits, tmp_path):
    X, y, _, _ = digits
    labels = np.array([3.0, -2.0, 7.5])[y % 3]
    store = (write_store(tmp_path / "m.h5", X, labels))  # a multiclass store
    model, out = str(tmp_path / "m.npz"), str(tmp_path / "p.txt")
    assert main(["train", store, "-o", model, "--loss", "logistic", "--lam", "1e-3",
                 "--quiet"]) == 0
    assert main(["predict", model, store, "-o", out, "--probability"]) == 0
    assert open(out).readline() == "# -2 3 7.5\n"
    written = np.loadtxt(out)
    np.testing.assert_allclose(written.sum(axis=1), 1.0)
    np.testing.assert_array_equal(written, Model.load(model).predict_proba(store))


def test_cli_errors(a9a, tmp_path, capsys):
    X, y, _, _ = a9a
    train = (write_store(tmp_path / "train.h5", X[:800], y[:800]))
    model = str(tmp_path / "m.npz")
    assert main(["train", train, "-o", model, "--quiet"]) == 0
    capsys.readouterr()
    # refused before the store is opened: it does not exist
    assert main(["predict", model, "missing.h5", "-o", str(tmp_path / "p"),
                 "--probability"]) == 1
    err = capsys.readouterr().err
    assert "m.npz: no probabilities" in err and "--calibrate K" in err \
        and "--calibration-data STORE" in err and "--loss logistic" in err
    assert main(["predict", model, train, "--probability"]) == 1
    assert "--probability says what to write to -o FILE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["predict", model, train, "-o", "x", "--probability", "--decision"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        main(["train", train, "-o", model, "--calibrate", "1"])
    assert "--calibrate: must be an integer >= 2" in capsys.readouterr().err
    assert main(["train", train, "-o", str(tmp_path / "n.npz"), "--calibration-seed", "1"]) == 1
    assert "--calibration-seed needs --calibrate K" in capsys.readouterr().err
    assert main(["train", train, "-o", str(tmp_path / "n.npz"), "--calibrate", "2",
                 "--checkpoint", str(tmp_path / "ck")]) == 1
    assert "--checkpoint is not supported with cross-fitted calibration (--calibrate)" \
        in capsys.readouterr().err
    assert main(["train", train, "-o", train, "--calibration-data", train,
                 "--overwrite"]) == 1
    assert "the output is the input" in capsys.readouterr().err
