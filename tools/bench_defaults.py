"""The measurements behind the defaults: solver, stopping rule, intercept and lambda.

For each data set (train and test files; one without a test file is split 80/20, seeded)
and with and without an intercept, the default loss (psi_G, sigma 2^-3) is trained

- to convergence (line-search Newton, tol 1e-8): the reference test accuracy, at the
  default lambda and at lambda = 1/n (LIBLINEAR's C = 1);
- by each candidate solver (tron, newton, auto) under each candidate stopping rule
  (tol 0.01 of ||grad L(0)||; the same scaled as LIBLINEAR scales it, by
  max(min(#pos, #neg), 1) / n; tol 1e-3; tol 1e-4),

and the table gives seconds and the test accuracy's distance from the reference, in
points (the target: within 0.1). More than two classes train one-vs-rest, as
``streamssvm train`` does. Each run is one call in this process, after one warm-up
training that compiles the kernels.

Example:
    python tools/make_news20.py                       # bench-data/news20.{train,test}.svm
    python tools/bench_defaults.py --news20-classes   # + the 20-class set from the posts
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_output  # noqa: E402
from bench_solvers import load  # noqa: E402

from streamssvm import ConvergenceWarning, train_one_vs_rest  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data")  # w8a and ijcnn1, shipped for the tests
DATASETS = {  # name: (train, test or None)
    "a9a": (os.path.join(ROOT, "streamssvm", "datasets", "a9a.svm.xz"),
            os.path.join(ROOT, "streamssvm", "datasets", "a9a.t.svm.xz")),
    "w8a": (os.path.join(DATA, "w8a.svm.xz"), None),
    "ijcnn1": (os.path.join(DATA, "ijcnn1.svm.xz"), os.path.join(DATA, "ijcnn1.t.svm.xz")),
    "news20": (os.path.join(ROOT, "bench-data", "news20.train.svm"),
               os.path.join(ROOT, "bench-data", "news20.test.svm")),
}
SOLVERS = ("tron", "newton", "auto")
RULES = {"tol 0.01": dict(tol=0.01), "tol 0.01 scaled": dict(tol=0.01, liblinear_tol=True),
         "tol 1e-3": dict(tol=1e-3), "tol 1e-4": dict(tol=1e-4)}


def split(X, y, seed=0):
    """80/20 rows, seeded."""
    order = np.random.default_rng(seed).permutation(X.shape[0])
    cut = int(0.8 * len(order))
    return X[order[:cut]], y[order[:cut]], X[order[cut:]], y[order[cut:]]


def news20_classes():
    """The 20 Newsgroups posts as make_news20 builds news20 (binary uni- and bigrams, rows
    of unit length, the training posts' vocabulary), labelled by their newsgroup."""
    import scipy.sparse as sp

    import make_news20 as m20

    posts = m20.read_posts(m20.DEFAULT_TAR)
    groups = sorted({p[1] for p in posts})
    terms = [m20.post_terms(p[3]) for p in posts]
    train = np.array([p[0] == "train" for p in posts])
    vocab = m20.build_vocabulary(t for t, tr in zip(terms, train) if tr)
    rows = list(m20._rows(terms, vocab))
    indptr = np.cumsum([0] + [len(r) for r in rows])
    data = np.concatenate([np.full(len(r), 1 / np.sqrt(max(len(r), 1))) for r in rows])
    X = sp.csr_matrix((data, np.concatenate(rows), indptr), shape=(len(rows), len(vocab)))
    y = np.array([groups.index(p[1]) for p in posts], np.float64)
    return X[train], y[train], X[~train], y[~train]


def fit(X, y, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model = train_one_vs_rest(X, y, loss="psi_g", sigma=0.125, progress=False, **options)
        return model, time.perf_counter() - start


def measure(name, X, y, Xt, yt, lam, solvers=SOLVERS, rules=tuple(RULES)):
    rows = []
    n = X.shape[0]
    warm = slice(None, None, max(1, n // 500))
    fit(X[warm], y[warm], lam=lam, solver="newton")  # compile, outside the timings
    for intercept in (False, True):
        reference, _ = fit(X, y, lam=lam, solver="newton", tol=1e-8, max_iter=500,
                           fit_intercept=intercept)
        ref_acc = reference.score(Xt, yt)
        per_n, _ = fit(X, y, lam=1.0 / n, solver="newton", tol=1e-8, max_iter=500,
                       fit_intercept=intercept)
        print(f"{name:<16} intercept {intercept!s:<5} converged: accuracy {ref_acc:.4f} at "
              f"lambda {lam:g}, {per_n.score(Xt, yt):.4f} at 1/n = {1 / n:.3g}", flush=True)
        for solver in solvers:
            for rule in rules:
                stop = RULES[rule]
                model, seconds = fit(X, y, lam=lam, solver=solver, fit_intercept=intercept,
                                     **stop)
                acc = model.score(Xt, yt)
                row = dict(data=name, n_samples=n, n_features=X.shape[1],
                           classes=len(np.unique(y)), intercept=intercept, solver=solver,
                           chosen=model.params["solver"], rule=rule, seconds=seconds,
                           accuracy=acc, reference_accuracy=ref_acc,
                           points_off=100 * (acc - ref_acc),
                           converged=bool(model.params["converged"]),
                           accuracy_lam_over_n=per_n.score(Xt, yt))
                rows.append(row)
                print(f"{name:<16} {str(intercept):<5} {solver:<7}({row['chosen']:<6}) "
                      f"{rule:<15} {seconds:8.3f} s  accuracy {acc:.4f} "
                      f"({row['points_off']:+.2f} points)", flush=True)
    return rows


def headline(rows):
    """The README's rows: for the default solver (auto) without an intercept, what it picked
    on each data set and, per stopping rule, the widest distance from the converged model's
    test accuracy."""
    auto = [r for r in rows if r["solver"] == "auto" and not r["intercept"]]
    lines = []
    picked = {}
    for r in auto:
        picked.setdefault(r["data"], (r["chosen"], r["n_features"] / r["n_samples"]))
    if picked:
        lines.append({"what": "solver auto picks (d / n of the data)",
                      "result": ", ".join(f"{chosen} on {data} ({ratio:.2g})"
                                          for data, (chosen, ratio) in picked.items())})
    for rule in RULES:
        off = [abs(r["points_off"]) for r in auto if r["rule"] == rule]
        if off:
            lines.append({"what": f"solver auto, {rule}: test accuracy against the converged "
                                  f"model's, on {len(off)} data sets",
                          "result": f"within {max(off):.2f} points"})
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lam", type=float, default=1e-5, help="lambda (default %(default)s)")
    ap.add_argument("--news20-classes", action="store_true",
                    help="also the 20-class newsgroups set, one-vs-rest (builds it)")
    ap.add_argument("--only", help="comma-separated data set names")
    ap.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated solvers")
    ap.add_argument("--rules", default=",".join(RULES),
                    help=f"comma-separated stopping rules of {', '.join(RULES)}")
    ap.add_argument("--json", help="where to write the figures (default benchmarks/defaults.json)")
    args = ap.parse_args(argv)
    picked = dict(solvers=args.solvers.split(","), rules=args.rules.split(","))
    unknown = set(picked["rules"]) - set(RULES)
    if unknown:
        ap.error(f"argument --rules: unknown {sorted(unknown)}")
    only = set(args.only.split(",")) if args.only else None
    rows = []
    for name, (train, test) in DATASETS.items():
        if only and name not in only:
            continue
        if not os.path.exists(train):
            print(f"{name}: {train} not found, skipped", flush=True)
            continue
        X, y = load(train)
        if test is None:
            X, y, Xt, yt = split(X, y)
        else:
            Xt, yt = load(test)
            Xt = Xt[:, :X.shape[1]] if Xt.shape[1] > X.shape[1] else Xt
            if Xt.shape[1] < X.shape[1]:
                Xt.resize((Xt.shape[0], X.shape[1]))
        rows += measure(name, X, y, Xt, yt, args.lam, **picked)
    if args.news20_classes and (not only or "news20-classes" in only):
        rows += measure("news20-classes", *news20_classes(), args.lam, **picked)
    print("wrote", bench_output.write("defaults", rows, args.json))


if __name__ == "__main__":
    main()
