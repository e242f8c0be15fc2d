"""Benchmark of the first-order and stochastic solvers, side by side in one run.

Prints, on one training file:
  (a) seconds per SGD epoch (hinge, alpha = lambda, no intercept) of ours (serial SGD, SGD
      with updates delayed by --delay on two threads, Hogwild on all) against scikit-learn's
      SGDClassifier on the same in-memory matrix, in --rounds rounds that run them one
      after the other: the best of the rounds, the ratio, each round's own ratio, and the
      training objectives; against the dots every epoch computes on that matrix: one
      thread's X w in storage order and in a random row order (floors), and the random
      order cut between all threads (the floor of an epoch that splits its dots);
  (b) (with --ooc STORE) seconds per SGD epoch from a store evicted from the page cache,
      under tools/bin/run-capped with --cap-mb, with the store's size over the cap and
      the peak memory;
  (c) the objective against passes and against seconds for every solver on the training
      file, each for --budget seconds (f - f*, f* certified by SDCA's duality gap), as a
      table, and with --plot a PNG of both curves.

Example:
    python tools/bench_solvers.py --train bench-data/news20.train.svm --plot docs/solvers.png
    python tools/bench_solvers.py --train ... --ooc bench-data/synth-4G.h5 --cap-mb 500
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import bench_output  # noqa: E402
from streamssvm import ConvergenceWarning, OnlineTrainer, convert_svmlight  # noqa: E402
from streamssvm._runtime import prepare  # noqa: E402
from streamssvm.data import InMemorySource, Store  # noqa: E402
from streamssvm.kernels.linear import _share, prefetch_rows, row_dot  # noqa: E402
from streamssvm.objective import SmoothSVMObjective  # noqa: E402
from streamssvm.solvers import SOLVERS, STOCHASTIC  # noqa: E402
from tool_args import BIN, existing_file, existing_store, repo_env  # noqa: E402



def load(path):
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "train.h5")
        convert_svmlight(path, store, value_dtype="float64", progress=False)
        with Store(store) as s:
            X, y = s.read_rows(0, s.n_samples)
    X.indices = X.indices.astype(np.int32)
    return X, y.astype(np.float64)


def sgd_epochs(X, y, lam, epochs, rounds, delay):
    """Seconds per epoch of hinge SGD in ``rounds`` rounds, each ours (serial), ours with
    ``delay`` (if not 0), ours Hogwild and scikit-learn's one after the other: ``{name:
    [seconds per round]}``; and each one's training objective."""
    from sklearn.linear_model import SGDClassifier

    ours = {"ours": {}}
    if delay:
        ours[f"ours delay={delay}"] = dict(delay=delay)
    ours["ours hogwild"] = dict(hogwild=True)
    for options in ours.values():  # compile or load every kernel the rounds take
        OnlineTrainer(loss="hinge", lam=lam, **options).partial_fit(X, y)
    times = {name: [] for name in [*ours, "scikit-learn"]}
    coef = {}
    for _ in range(rounds):
        for name, options in ours.items():
            trainer = OnlineTrainer(loss="hinge", lam=lam, seed=0, **options)
            start = time.perf_counter()
            trainer.partial_fit(X, y, epochs=epochs)
            times[name].append((time.perf_counter() - start) / epochs)
            coef[name] = trainer.model().coef_
        theirs = SGDClassifier(loss="hinge", alpha=lam, fit_intercept=False, max_iter=epochs,
                               tol=None, random_state=0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs.fit(X, y)
        times["scikit-learn"].append((time.perf_counter() - start) / epochs)
        coef["scikit-learn"] = theirs.coef_.ravel()
    objective = SmoothSVMObjective(InMemorySource(X, y), "hinge", lam)
    return times, {name: objective.value(c) for name, c in coef.items()}


def dot_floor(X, repeats, order=None, threads=1):
    """Seconds (best of ``repeats``) of the dots x_i.w of every row on ``threads`` threads:
    X w in storage order, or, given ``order``, in that order, cut into ``threads`` equal
    ranges. An epoch of SGD computes these dots in a random order, one row after the other;
    cut between threads, they bound what any exact split of an epoch's dots can reach."""
    from streamssvm import kernels

    w, out = np.random.default_rng(0).standard_normal(X.shape[1]), np.empty(X.shape[0])
    numba.set_num_threads(threads)
    times = []
    for _ in range(repeats + 1):  # the first compiles or loads the kernel
        start = time.perf_counter()
        if order is None:
            kernels.decision(X.indptr, X.indices, X.data, w, 0.0, out)
        else:
            _dots_in_order(X.indptr, X.indices, X.data, order, w, threads, out)
        times.append(time.perf_counter() - start)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return min(times[1:])


@numba.njit(parallel=True)
def _dots_in_order(indptr, indices, data, order, w, n_parts, out):
    """out[order[pos]] = x.w, the positions cut into ``n_parts`` ranges run in parallel,
    with the prefetch of SGD's kernels."""
    for t in numba.prange(n_parts):
        lo, hi = _share(order.shape[0], t, n_parts)
        for pos in range(lo, hi):
            prefetch_rows(indptr, indices, data, order, pos)
            out[order[pos]] = row_dot(indptr, indices, data, order[pos], w)


def ooc_epoch(store, cap_mb, lam, epochs):
    """Run SGD epochs on ``store`` in a capped child after evicting it; parse its figures."""
    subprocess.run([os.path.join(BIN, "evict"), store], check=True)
    code = ("import sys, time; from streamssvm import OnlineTrainer; t = OnlineTrainer("
            f"loss='hinge', lam={lam}); s = time.perf_counter(); t.partial_fit({store!r}, "
            f"epochs={epochs}); print((time.perf_counter() - s) / {epochs})")
    out = subprocess.run([os.path.join(BIN, "run-capped"), str(cap_mb), sys.executable, "-c",
                          code], env=repo_env(), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    peak = [p.split("=")[1] for p in out.stderr.split() if p.startswith("peak_mb=")]
    return float(out.stdout.split()[-1]), peak[0] if peak else "?"


def solver_curves(X, y, loss, lam, budget):
    """Every solver for ``budget`` seconds (or until its stopping rule): their histories as
    (passes, seconds, f - f*), with f* certified by SDCA's duality gap (or TRON's when the
    loss has no conjugate)."""
    source = InMemorySource(X, y)
    objective = SmoothSVMObjective(source, loss, lam)
    if objective.loss.conjugate_domain is not None:
        reference = SOLVERS["sdca"](objective, tol=0.0, gap_tol=1e-9, max_iter=2000)
        f_star = reference.f - reference.history[-1]["gap"]  # the dual: a lower bound
    else:
        f_star = SOLVERS["tron"](objective, tol=1e-8).f
    curves, rows = {}, []
    for name in SOLVERS:
        objective = SmoothSVMObjective(source, loss, lam)
        options = dict(max_iter=10**6, max_seconds=budget)
        if name == "sdca" and objective.bias:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = SOLVERS[name](objective, tol=1e-6, **options)
        points = [(h["passes"], h["seconds"], h["f"] - f_star) for h in result.history
                  if h.get("f") is not None and h.get("accepted", True)]
        curves[name] = points
        rows.append(dict(solver=name, iterations=result.n_iter, passes=result.passes,
                         seconds=result.seconds, relative_gap=(result.f - f_star) / f_star))
        print(f"  {name:8s} {result.n_iter:6d} it {result.passes:6d} passes "
              f"{result.seconds:8.2f} s  (f - f*)/f* = {(result.f - f_star) / f_star:.2e}")
    return f_star, curves, rows


def plot(curves, f_star, title, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, points in curves.items():
        p = np.array(points)
        gap = np.maximum(p[:, 2] / f_star, 1e-12)
        style = "--" if name in STOCHASTIC else "-"
        axes[0].semilogy(p[:, 0], gap, style, label=name)
        axes[1].semilogy(p[:, 1], gap, style, label=name)
    axes[0].set_xlabel("passes over the data")
    axes[1].set_xlabel("seconds")
    for ax in axes:
        ax.set_ylabel("(f - f*) / f*")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(ncol=2, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv=None):
    prepare()  # before scikit-learn's import loads OpenMP (see bench_matrix)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train", required=True, type=existing_file)
    p.add_argument("--lam", type=float, default=1e-5)
    p.add_argument("--loss", default="psi_g:sigma=0.125")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5, help="rounds of (a)")
    p.add_argument("--delay", type=int, default=16,
                   help="SGD's delay for a row of (a) (0: none; default %(default)s)")
    p.add_argument("--ooc", metavar="STORE", type=existing_store,
                   help="store for the out-of-core SGD epoch")
    p.add_argument("--cap-mb", type=int, default=500)
    p.add_argument("--budget", type=float, default=30.0, help="seconds per solver in (c)")
    p.add_argument("--plot", metavar="PNG")
    p.add_argument("--sections", default="a,b,c")
    p.add_argument("--json", help="where to write the figures (default benchmarks/solvers.json)")
    args = p.parse_args(argv)
    figures = {}
    sections = set(args.sections.split(","))
    X, y = load(args.train)
    print(f"{args.train}: {X.shape[0]} x {X.shape[1]}, {X.nnz} nonzeros, lambda {args.lam}")
    if "a" in sections:
        times, f = sgd_epochs(X, y, args.lam, args.epochs, args.rounds, args.delay)
        best = {name: min(t) for name, t in times.items()}
        theirs = best["scikit-learn"]
        print(f"(a) SGD hinge epoch in memory, best of {args.rounds} rounds: "
              + ", ".join(f"{name} {t:.4f} s ({t / theirs:.2f}x)" for name, t in best.items())
              + f"; objective after {args.epochs} epochs: "
              + ", ".join(f"{name} {value:.5f}" for name, value in f.items()))
        rows = [dict(method=name, best_seconds=t, ratio=t / theirs, objective=f[name])
                for name, t in best.items()]
        for name in times:
            if name == "scikit-learn":
                continue
            ratios = sorted(a / b for a, b in zip(times[name], times["scikit-learn"]))
            print(f"    {name} / scikit-learn in each round: "
                  + " ".join(f"{r:.2f}" for r in ratios) + f", median {np.median(ratios):.2f}")
            next(r for r in rows if r["method"] == name).update(
                round_ratios=ratios, median_ratio=float(np.median(ratios)))
        floor = dot_floor(X, args.epochs)
        order = np.random.default_rng(0).permutation(X.shape[0])
        shuffled = dot_floor(X, args.epochs, order)
        threads = numba.config.NUMBA_NUM_THREADS
        split = dot_floor(X, args.epochs, order, threads)
        print(f"    floors, one thread: X w (the dots an epoch cannot skip) {floor:.4f} s, in a "
              f"random row order {shuffled:.4f} s ({shuffled / theirs:.2f}x scikit-learn); ours "
              f"{best['ours'] / shuffled:.2f}x the latter")
        shared = [name for name in best if name.startswith("ours ")]
        print(f"    {threads} threads' dots in that order (the floor of an epoch that splits its "
              f"dots) {split:.4f} s, {split / theirs:.2f}x scikit-learn; "
              + ", ".join(f"{name} {best[name] / split:.2f}x it" for name in shared))
        figures[SECTIONS["a"]] = dict(epochs=args.epochs, rounds=args.rounds, methods=rows,
                                      floor_seconds=floor, shuffled_floor_seconds=shuffled,
                                      threads=threads, split_floor_seconds=split)
    if "b" in sections and args.ooc:
        size_mb = os.path.getsize(args.ooc) / 2**20
        seconds, peak = ooc_epoch(args.ooc, args.cap_mb, args.lam, 1)
        print(f"(b) SGD hinge epoch out of core: {args.ooc} ({size_mb:.0f} MB, "
              f"{size_mb / args.cap_mb:.1f}x the {args.cap_mb} MB cap): {seconds:.2f} s, "
              f"{size_mb / seconds:.0f} MB/s, peak {peak} MB")
        figures[SECTIONS["b"]] = dict(store_mb=size_mb, cap_mb=args.cap_mb, seconds=seconds,
                                      mb_per_s=size_mb / seconds, peak_mb=peak)
    if "c" in sections:
        print(f"(c) objective {args.loss} by solver:")
        f_star, curves, rows = solver_curves(X, y, args.loss, args.lam, args.budget)
        figures[SECTIONS["c"]] = dict(loss=args.loss, budget_seconds=args.budget,
                                      f_star=f_star, solvers=rows)
        if args.plot:
            plot(curves, f_star, f"{os.path.basename(args.train)}, {args.loss}, "
                 f"lambda = {args.lam:g}", args.plot)
    print("wrote", bench_output.write("solvers", figures, args.json))


SECTIONS = {"a": "SGD epoch in memory", "b": "SGD epoch out of core",
            "c": "objective by solver"}


def headline(figures):
    """The README's rows: each of our SGD epochs (a) against scikit-learn's SGDClassifier."""
    sgd = figures.get(SECTIONS["a"])
    return [{"what": f"SGD epoch (hinge), {r['method']}, against scikit-learn's SGDClassifier",
             "result": f"{r['ratio']:.2f}x ({r['best_seconds'] * 1e3:.1f} ms)"}
            for r in (sgd["methods"] if sgd else []) if r["method"] != "scikit-learn"]


if __name__ == "__main__":
    main()
