"""Benchmark behind ``solver="auto"``: line-search Newton against SDCA, by data shape.

For every data set, lambda and loss, both solvers train to eps = 0.01 (LIBLINEAR's rule)
in the same run; the table gives both times, the ratio SDCA / Newton, and what "auto"
picks. The shapes: the given svmlight files, and, with --cut, the first of them (or
--cut-from) cut to its most frequent columns (each row rescaled to unit length), which
keeps the text's statistics while n_features / n_samples moves from tall to wide.

Example:
    python tools/bench_auto.py tests/data/a9a.svm.xz tests/data/w8a.svm.xz \
        tests/data/ijcnn1.svm.xz bench-data/news20.train.svm \
        --cut-from bench-data/news20.train.svm --cut 500,2000,6000,20000,100000
"""

import argparse
import os
import sys
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_output  # noqa: E402
from bench_solvers import load  # noqa: E402
from tool_args import existing_file  # noqa: E402

from streamssvm import ConvergenceWarning, train_stream  # noqa: E402
from streamssvm.losses import get_loss  # noqa: E402
from streamssvm.solvers import choose_solver  # noqa: E402

LOSSES = (("logistic", None), ("squared_hinge", None), ("psi_g", 0.125), ("psi_g", 2.0 ** -6))


def column_cut(X, y, k):
    """X restricted to its k most frequent columns, rows rescaled to unit length, empty
    rows dropped."""
    counts = np.diff(X.tocsc().indptr)
    keep = np.sort(np.argsort(-counts, kind="stable")[:k])
    Xk = X[:, keep].tocsr()
    norms = np.sqrt(np.asarray(Xk.multiply(Xk).sum(axis=1)).ravel())
    rows = norms > 0
    Xk = Xk[rows]
    Xk = Xk.multiply(1.0 / norms[rows][:, None]).tocsr()
    return Xk, y[rows]


def compare(name, X, y, lams):
    """Print and return one row per lambda and loss: both solvers' seconds and auto's pick."""
    n, d = X.shape
    rows = []
    for lam in lams:
        for loss, sigma in LOSSES:
            seconds = {}
            for solver in ("newton", "sdca"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    m = train_stream(X, y, loss=loss, sigma=sigma, lam=lam, solver=solver,
                                     tol=0.01, liblinear_tol=True, progress=False,
                                     max_iter=300 if solver == "sdca" else 1000)
                seconds[solver] = (m.params["seconds"], m.params["converged"])
            auto = choose_solver(get_loss(loss, sigma), n, d)
            faster = min(seconds, key=lambda s: seconds[s][0])
            label = loss if sigma is None else f"{loss} 2^{np.log2(sigma):g}"
            print(f"{name:<16}{d / n:>9.3g}{lam:>8.0e}  {label:<16}"
                  + "".join(f"{seconds[s][0]:>8.2f}{'' if seconds[s][1] else '*':1}"
                            for s in ("newton", "sdca"))
                  + f"{seconds['sdca'][0] / seconds['newton'][0]:>8.2f}  {auto:<7}"
                  + ("" if auto == faster else " (slower)"), flush=True)
            rows.append(dict(data=name, d_over_n=d / n, lam=lam, loss=label,
                             newton_seconds=seconds["newton"][0],
                             newton_converged=bool(seconds["newton"][1]),
                             sdca_seconds=seconds["sdca"][0],
                             sdca_converged=bool(seconds["sdca"][1]),
                             ratio=seconds["sdca"][0] / seconds["newton"][0], auto=auto,
                             auto_slower=auto != faster))
    return rows


def headline(rows):
    """The README's row: how often auto picked the slower solver, and by how much."""
    slower = [max(r["newton_seconds"], r["sdca_seconds"]) / min(r["newton_seconds"],
                                                                r["sdca_seconds"])
              for r in rows if r["auto_slower"]]
    return [{"what": "solver auto against the faster of Newton and SDCA",
             "result": f"the slower in {len(slower)} of {len(rows)} cases"
                       + (f", by at most {max(slower):.2f}x" if slower else "")}]


def _numbers(kind, valid, what):
    """An argparse type: comma-separated ``kind`` values that pass ``valid``, else an
    error saying they must be ``what``."""
    def parse(text):
        refusal = argparse.ArgumentTypeError(f"must be comma-separated {what}, got {text!r}")
        try:
            values = [kind(v) for v in text.split(",")]
        except ValueError:
            raise refusal from None
        if not all(valid(v) for v in values):
            raise refusal
        return values
    return parse


_column_counts = _numbers(int, lambda c: c >= 1, "column counts (integers >= 1)")
_lambdas = _numbers(float, lambda lam: 0 < lam < np.inf, "positive finite numbers")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("train", nargs="+", type=existing_file, help="svmlight files (.xz read as is)")
    p.add_argument("--lams", type=_lambdas, default="1e-4,1e-5,1e-6",
                   help="comma-separated regularization strengths (> 0)")
    p.add_argument("--cut", type=_column_counts, default=[],
                   help="comma-separated column counts to cut --cut-from to")
    p.add_argument("--cut-from", type=existing_file,
                   help="svmlight file to cut to its most frequent columns (default: the "
                        "first TRAIN file)")
    p.add_argument("--json", help="where to write the figures (default benchmarks/auto.json)")
    args = p.parse_args(argv)
    if args.cut_from and not args.cut:
        p.error("argument --cut-from: needs --cut (the column counts to cut it to)")
    X, y = load(args.train[0])
    for solver in ("newton", "sdca"):  # compile (or load numba's cache) outside the timings
        for loss, sigma in LOSSES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                train_stream(X[:100], y[:100], loss=loss, sigma=sigma, solver=solver,
                             max_iter=1, progress=False)
    print(f"{'data':<16}{'d / n':>9}{'lambda':>8}  {'loss':<16}{'newton s':>9}{'sdca s':>9}"
          f"{'ratio':>8}  auto      (* = not converged; ratio = SDCA / Newton)")
    rows = []
    for path in args.train:
        X, y = load(path)
        rows += compare(os.path.basename(path).split(".")[0], X, y, args.lams)
    if args.cut:
        X, y = load(args.cut_from or args.train[0])
        for k in args.cut:
            Xk, yk = column_cut(X, y, k)
            rows += compare(f"cut to {k}", Xk, yk, args.lams)
    print("wrote", bench_output.write("auto", rows, args.json))


if __name__ == "__main__":
    main()
