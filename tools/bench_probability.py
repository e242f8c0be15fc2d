"""Benchmark of class probabilities: log loss, Brier score and accuracy on a test set.

For each data set (the shipped a9a, tall and dense-ish; a generated text-like set, wide and
sparse, from ``make_synthetic.py``; any other train/test pair given) the training file is
converted to a store, the test file like it, and these are compared on the test rows:

- ``logistic``: our logistic loss, its own probabilities;
- ``liblinear -s 0 -b 1``: LIBLINEAR's logistic regression (C = 1 / (lam n), no bias);
- ``psi_g + Platt``: our psi_G, Platt's sigmoid on 5-fold cross-fitted decision values;
- ``sklearn LinearSVC + sigmoid``: ``CalibratedClassifierCV(LinearSVC(C = 1 / (lam n)),
  method="sigmoid", ensemble=False)`` on the same folds (squared hinge, no intercept);
- ``squared_hinge + Platt``: our squared hinge, Platt's sigmoid on the same folds.

Our models train from the stores (streamed); LIBLINEAR and scikit-learn get the stores' rows
as matrices. Every solver stops by LIBLINEAR's rule (eps = 0.01, scaled by
max(min(#pos, #neg), 1) / n) except LinearSVC (its own default tol). Accuracy is that of
the most probable class. Prints a table and writes it as JSON.

Example:
    python tools/bench_probability.py                 # writes benchmarks/probability.json
    python tools/bench_probability.py --pair w8a tests/data/w8a.svm.xz W8A_TEST.svm.xz
"""

import argparse
import os
import sys
import tempfile
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(ROOT))
sys.path.insert(0, ROOT)

import bench_output  # noqa: E402
from tool_args import existing_file  # noqa: E402

from streamssvm import ConvergenceWarning, Store, calibrated, convert_svmlight  # noqa: E402
from streamssvm import train_stream  # noqa: E402
from streamssvm.calibration import stratified_folds  # noqa: E402
from streamssvm.datasets import a9a_paths  # noqa: E402

N_FOLDS = 5
LIBLINEAR_RULE = dict(tol=0.01, liblinear_tol=True, progress=False)


def stores(train, test, folder):
    """The two files converted (the test file like the training one), their paths and the
    rows as matrices: ``(train_store, test_store, X, y, X_test, y_test)``."""
    train_store, test_store = os.path.join(folder, "train.h5"), os.path.join(folder, "test.h5")
    convert_svmlight(train, train_store, value_dtype="float64", progress=False)
    convert_svmlight(test, test_store, like=train_store, value_dtype="float64", progress=False)
    out = [train_store, test_store]
    for path in out[:]:
        with Store(path) as store:
            X, labels = store.read_rows(0, store.n_samples)
            X.indices = X.indices.astype(np.int32)  # LinearSVC refuses int64 indices
            out += [X, np.asarray(store.classes)[(labels > 0).astype(np.intp)]]
    return out


def scores(proba, y, classes):
    """Log loss, Brier score (of the second class) and accuracy of the most probable
    class, for probabilities with columns in ``classes`` order."""
    from sklearn.metrics import brier_score_loss, log_loss

    positive = (y == classes[1]).astype(int)
    return dict(log_loss=float(log_loss(positive, proba, labels=[0, 1])),
                brier=float(brier_score_loss(positive, proba[:, 1])),
                accuracy=float(np.mean(np.asarray(classes)[proba.argmax(axis=1)] == y)))


def liblinear_proba(X, y, X_test, lam):
    from liblinear.liblinearutil import parameter, predict, problem, train

    C = 1.0 / (lam * X.shape[0])
    model = train(problem(y, X), parameter(f"-s 0 -c {C!r} -e 0.01 -B -1 -q"))
    _, _, values = predict(np.zeros(X_test.shape[0]), X_test, model, "-b 1 -q")
    return np.array(values)[:, np.argsort(model.get_labels())]


def compare(name, train, test, lam, sigma, folder):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import PredefinedSplit
    from sklearn.svm import LinearSVC

    train_store, test_store, X, y, X_test, y_test = stores(train, test, folder)
    classes = np.unique(y)
    folds = stratified_folds((y == classes[1]).astype(int), N_FOLDS, seed=0)
    results = {}

    def platt(loss, **options):
        model = calibrated(train_store, cv=folds, loss=loss, lam=lam, **options,
                           **LIBLINEAR_RULE)
        return model.predict_proba(test_store), dict(A=model.calibration.a[0],
                                                     B=model.calibration.b[0])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        logistic = train_stream(train_store, loss="logistic", lam=lam, **LIBLINEAR_RULE)
        results["logistic"] = (logistic.predict_proba(test_store), {})
        results["liblinear -s 0 -b 1"] = (liblinear_proba(X, y, X_test, lam), {})
        results["psi_g + Platt"] = platt("psi_g", sigma=sigma)
        base = LinearSVC(C=1.0 / (lam * X.shape[0]), dual=False, fit_intercept=False)
        sk = CalibratedClassifierCV(base, method="sigmoid", ensemble=False,
                                    cv=PredefinedSplit(folds)).fit(X, y)
        calibrator = sk.calibrated_classifiers_[0].calibrators[0]
        results["sklearn LinearSVC + sigmoid"] = (sk.predict_proba(X_test),
                                                 dict(A=calibrator.a_, B=calibrator.b_))
        results["squared_hinge + Platt"] = platt("squared_hinge")
    table = {method: dict(scores(proba, y_test, classes),
                          **{k: float(v) for k, v in sigmoid.items()})
             for method, (proba, sigmoid) in results.items()}
    return dict(n_train=X.shape[0], n_test=X_test.shape[0], n_features=X.shape[1],
                positive_fraction_test=float(np.mean(y_test == classes[1])), lam=lam,
                sigma=sigma, folds=N_FOLDS, methods=table)


def synthetic_pair(folder, rows):
    """A generated text-like train/test pair (``make_synthetic.generate``, its defaults:
    50,000 features, 5% of the labels flipped), ``rows`` training rows and a quarter as many
    test rows."""
    from make_synthetic import generate

    train, test = os.path.join(folder, "synth.svm"), os.path.join(folder, "synth.t.svm")
    generate(train, n_rows=rows, test_path=test, test_rows=rows // 4)
    return train, test


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json",
                   help="where to write the figures (default benchmarks/probability.json)")
    p.add_argument("--lam", type=float, default=1e-5, help="lambda (default %(default)s)")
    p.add_argument("--sigma", type=float, default=2.0 ** -3, help="psi_g's sigma")
    p.add_argument("--synthetic-rows", type=int, default=40000,
                   help="training rows of the generated set (0: leave it out)")
    p.add_argument("--pair", nargs=3, action="append", default=[],
                   metavar=("NAME", "TRAIN", "TEST"), help="another svmlight train/test pair")
    args = p.parse_args(argv)
    for _, train, test in args.pair:
        existing_file(train), existing_file(test)
    report = {}
    with tempfile.TemporaryDirectory() as folder:
        pairs = [("a9a", *a9a_paths())]
        if args.synthetic_rows:
            pairs.append((f"synthetic {args.synthetic_rows}",
                          *synthetic_pair(folder, args.synthetic_rows)))
        pairs += [tuple(pair) for pair in args.pair]
        for name, train, test in pairs:
            work = tempfile.mkdtemp(dir=folder)
            report[name] = result = compare(name, train, test, args.lam, args.sigma, work)
            print(f"\n{name}: {result['n_train']:,} training rows, {result['n_test']:,} test "
                  f"rows, {result['n_features']:,} features, lambda {args.lam:g}")
            print(f"{'method':<30}{'log loss':>10}{'Brier':>9}{'accuracy':>10}{'A':>10}{'B':>10}")
            for method, row in result["methods"].items():
                sigmoid = "".join(f"{row[k]:>10.4g}" for k in ("A", "B") if k in row)
                print(f"{method:<30}{row['log_loss']:>10.5f}{row['brier']:>9.5f}"
                      f"{row['accuracy']:>10.4f}{sigmoid}")
    print("\nwrote", bench_output.write("probability", report, args.json))


def headline(report):
    """The README's rows: on each data set, the log loss of psi_G with Platt's sigmoid and
    of our logistic loss against LIBLINEAR's logistic regression (-s 0 -b 1)."""
    rows = []
    for name, result in report.items():
        methods = result["methods"]
        peer = methods["liblinear -s 0 -b 1"]["log_loss"]
        for method in ("logistic", "psi_g + Platt"):
            rows.append({"what": f"log loss of {method} on {name}'s test rows, against "
                                 f"LIBLINEAR -s 0 -b 1",
                         "result": f"{methods[method]['log_loss']:.4f} against {peer:.4f}"})
    return rows


if __name__ == "__main__":
    main()
