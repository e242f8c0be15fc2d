"""The benchmark matrix: every speed figure on a set of data shapes, against
LIBLINEAR and scikit-learn side by side in one process, as ratios ours / peer.

Shapes: synthetic tf-idf text, a binary bag of words (the same generator, every value of a
row 1 / sqrt(its nonzeros), as news20's), news20 itself when tools/make_news20.py has built
it, a9a (shipped), ijcnn1 and w8a (../shared/data, when there), wide, tall, many rows of
few nonzeros, heavily unbalanced labels, and a tiny set where fixed costs dominate. The
synthetic shapes come from tools/make_synthetic.py. Each shape is converted to a store;
ours train from it (in the page cache), the peers from the same values in memory (float32
in the store, widened to float64 for them).

Figures, each ratio = our wall time / the peer's, best of --repeats rounds (each round runs
the peer, then ours, next to each other in time; more rounds for calls that sum to under
MIN_SECONDS); the kernels are compiled (or loaded) by
a warm-up before any timing, and that first call's time is reported apart:

- ``squared_hinge``: TRON and line-search Newton against LIBLINEAR -s 2, and ``logistic``
  against -s 0: eps = --eps with LIBLINEAR's stopping rule (``liblinear_tol``), the same
  lambda (C = 1 / (lambda n)); target <= 0.6.
- ``psi_g``: psi_G at --sigma, the time of our fastest solver (tron, newton, sdca, auto) to
  f* (1 + 1e-3), f* the smaller objective of two tight solves (SDCA to a duality gap of
  1e-6 f, Newton to tol 1e-9), against LIBLINEAR's fastest L2-SVM solver (-s 1, -s 2,
  -s 3 at their default eps); target <= 1.0.
- ``auto``: ``solver="auto"``'s time against the best of its candidates (Newton, SDCA), on
  psi_G to f* (1 + 1e-3) and on squared hinge to eps; target <= 1.3.
- ``sgd``: a whole ``train_stream(solver="sgd", loss="hinge", max_iter=5)`` call (and with
  ``hogwild=True``) against ``SGDClassifier(loss="hinge", max_iter=5, tol=None).fit``;
  target <= 0.5.
- ``end_to_end`` (tiny shape only): ``train_stream`` on the svmlight text (converted into
  a fresh cache each round) against LIBLINEAR's ``svm_read_problem`` + ``train``, squared
  hinge at eps; target <= 1.5.

The worst shape of each figure is printed against its target and written to the JSON
(tools/bench_output.py; default benchmarks/matrix.json). --quick runs small shapes once.

Example:
    python tools/bench_matrix.py
    python tools/bench_matrix.py --quick --json /tmp/matrix.json
"""

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_output  # noqa: E402
from bench_tron import best, liblinear_train, load_matrix, rounds  # noqa: E402
from make_synthetic import generate  # noqa: E402

from streamssvm import ConvergenceWarning, convert_svmlight, train_stream  # noqa: E402
from streamssvm._runtime import prepare  # noqa: E402
from streamssvm.data import InMemorySource  # noqa: E402
from streamssvm.data.store import write_store  # noqa: E402
from streamssvm.data.textcache import CACHE_DIR_ENV  # noqa: E402
from streamssvm.kernels._twins import compiling_parallel  # noqa: E402

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
DATASETS = os.path.join(ROOT, "streamssvm", "datasets")
# LIBLINEAR's L2-SVM solvers at their default eps: dual -s 1 and -s 3, primal -s 2
L2_SVM = ((1, 0.1), (2, 0.01), (3, 0.1))
PEER = {"squared_hinge": 2, "logistic": 0}
# rounds are added (up to 10 --repeats) until each timed call's rounds sum to this many
# seconds: the best of 2 calls of a few milliseconds is the machine's noise
MIN_SECONDS = 0.5

# name: make_synthetic.generate options (full size, --quick size), or a file
SYNTHETIC = {
    "tfidf": (dict(n_rows=40000, n_features=200000, min_nnz=30, max_nnz=300,
                   row_length="lognormal"),
              dict(n_rows=3000, n_features=20000, min_nnz=30, max_nnz=300,
                   row_length="lognormal")),
    "binary": (dict(n_rows=30000, n_features=100000, min_nnz=50, max_nnz=200, model_seed=1),
               dict(n_rows=2000, n_features=10000, min_nnz=50, max_nnz=200, model_seed=1)),
    "wide": (dict(n_rows=5000, n_features=1000000, min_nnz=100, max_nnz=400, model_seed=2),
             dict(n_rows=500, n_features=50000, min_nnz=100, max_nnz=400, model_seed=2)),
    "tall": (dict(n_rows=400000, n_features=2000, min_nnz=20, max_nnz=60, model_seed=3),
             dict(n_rows=8000, n_features=500, min_nnz=20, max_nnz=60, model_seed=3)),
    "few_nonzeros": (dict(n_rows=600000, n_features=50000, min_nnz=1, max_nnz=8,
                          model_seed=4, density=0.2),
                     dict(n_rows=12000, n_features=5000, min_nnz=1, max_nnz=8,
                          model_seed=4, density=0.2)),
    "unbalanced": (dict(n_rows=50000, n_features=50000, min_nnz=50, max_nnz=200,
                        pos_fraction=0.02, flip=0.002, model_seed=5),
                   dict(n_rows=4000, n_features=5000, min_nnz=50, max_nnz=200,
                        pos_fraction=0.02, flip=0.002, model_seed=5)),
    "tiny": (dict(n_rows=1000, n_features=2000, min_nnz=5, max_nnz=40, model_seed=6),
             dict(n_rows=300, n_features=1000, min_nnz=5, max_nnz=40, model_seed=6)),
}
FILES = {  # name: the svmlight file; skipped (and said so) when absent; not in --quick
    "news20": os.path.join(ROOT, "bench-data", "news20.train.svm"),
    "a9a": os.path.join(DATASETS, "a9a.svm.xz"),
    "ijcnn1": os.path.join(SHARED, "ijcnn1.svm.xz"),
    "w8a": os.path.join(SHARED, "w8a.svm.xz"),
}
QUICK_FILES = ("a9a",)


def binarize(X):
    """Every value of a row 1 / sqrt(its nonzeros): a binary bag of words of unit rows."""
    X = X.copy()
    counts = np.diff(X.indptr)
    X.data[:] = np.repeat(1.0 / np.sqrt(np.maximum(counts, 1)), counts)
    return X


def make_shape(name, work, quick):
    """(svmlight path, store path, X, y) of shape ``name``, made under ``work``."""
    text = os.path.join(work, f"{name}.svm")
    if name in SYNTHETIC:
        generate(text, seed=0, **SYNTHETIC[name][1 if quick else 0])
    else:
        text = FILES[name]
    store = os.path.join(work, f"{name}.h5")
    convert_svmlight(text, store, progress=False)
    X, y = load_matrix(store)
    if name == "binary":
        X = binarize(X)
        store = write_store(os.path.join(work, f"{name}-binary.h5"), InMemorySource(X, y),
                            value_dtype="float32")
        text = None  # the text holds the tf-idf values: the binary shape has no text
    return text, store, X, y


def ours(data, loss, lam, eps, solver, sigma=None, **options):
    """Wall seconds of one train_stream call and its model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model = train_stream(data, loss=loss, sigma=sigma, lam=lam, solver=solver, tol=eps,
                             liblinear_tol=True, progress=False, **options)
        return time.perf_counter() - start, model


def to_target(store, lam, sigma, solver, target, budget, **options):
    """Wall seconds until the first recorded objective <= target (inf if never), counting
    the call's set-up (its wall time beyond the solver's own clock); and the model."""
    seconds, m = ours(store, "psi_g", lam, 1e-6, solver, sigma, max_seconds=budget, **options)
    setup = max(seconds - m.params["seconds"], 0.0)
    reached = next((h["seconds"] for h in m.history
                    if h.get("f") is not None and h["f"] <= target), None)
    return (np.inf if reached is None else reached + setup), m


def ratio(ours_s, peer_s):
    return float(ours_s / peer_s) if peer_s > 0 else float("nan")


def like_for_like(store, X, y, args):
    """Squared hinge and logistic: TRON and Newton against LIBLINEAR -s 2 / -s 0."""
    out = {}
    for loss, s in PEER.items():
        runs = {"peer": lambda s=s: liblinear_train(X, y, s, args.lam, args.eps)}
        for solver in ("tron", "newton"):
            runs[solver] = lambda solver=solver, loss=loss: ours(store, loss, args.lam,
                                                                 args.eps, solver)
        timed = rounds(args.repeats, runs, args.min_seconds)
        peer_s = best(timed.pop("peer"))[0]
        row = {"peer": f"LIBLINEAR -s {s}", "peer_seconds": peer_s}
        for solver, results in timed.items():
            seconds, m = best(results)
            row[solver] = {"seconds": seconds, "ratio": ratio(seconds, peer_s),
                           "n_iter": m.params["n_iter"], "passes": m.params["passes"],
                           "objective": m.params["objective"]}
        row["ratio"] = max(row[s]["ratio"] for s in ("tron", "newton"))
        out[loss] = row
    return out


def fastest_psi_g(store, X, y, args):
    """psi_G: our fastest solver to f* (1 + 1e-3) against LIBLINEAR's fastest L2-SVM."""
    tight = [ours(store, "psi_g", args.lam, 0.0, "sdca", args.sigma, gap_tol=1e-6,
                  max_iter=1000)[1],
             ours(store, "psi_g", args.lam, 1e-9, "newton", args.sigma, max_iter=500)[1]]
    f_star = min(m.params["objective"] for m in tight)
    target = f_star * (1 + 1e-3)
    runs = {f"-s {s}": (lambda s=s, e=e: liblinear_train(X, y, s, args.lam, e))
            for s, e in L2_SVM}
    peers = rounds(args.repeats, runs, args.min_seconds)
    peer_times = {name: best(r)[0] for name, r in peers.items()}
    fastest = min(peer_times.values())
    budget = max(20 * fastest, 5.0)
    candidates = {"tron": {}, "newton": {}, "sdca": dict(gap_tol=1e-4, max_iter=300),
                  "auto": {}}
    timed = rounds(args.repeats, {
        solver: (lambda solver=solver, o=o: to_target(store, args.lam, args.sigma, solver,
                                                      target, budget, **o))
        for solver, o in candidates.items()}, args.min_seconds)
    solvers = {}
    for solver, results in timed.items():
        reached, m = best(results)
        solvers[solver] = {"seconds": reached if np.isfinite(reached) else None,
                           "ratio": ratio(reached, fastest) if np.isfinite(reached) else None,
                           "chose": m.params["solver"]}
    reached = {s: v["seconds"] for s, v in solvers.items() if v["seconds"] is not None}
    ours_best = min(reached, key=reached.get) if reached else None
    fig = {"f_star": f_star, "sigma": args.sigma,
           "peers": {name: {"seconds": t} for name, t in peer_times.items()},
           "peer_fastest": min(peer_times, key=peer_times.get), "peer_seconds": fastest,
           "solvers": solvers, "ours_fastest": ours_best,
           "ratio": ratio(reached[ours_best], fastest) if ours_best else None}
    cands = [reached[s] for s in ("newton", "sdca") if s in reached]
    auto = {"psi_g": {"seconds": reached.get("auto"), "chose": solvers["auto"]["chose"],
                      "best_candidate_seconds": min(cands) if cands else None,
                      "ratio": ratio(reached["auto"], min(cands))
                      if "auto" in reached and cands else None}}
    return fig, auto


def auto_squared_hinge(store, args):
    """squared hinge to eps: auto's time against the best of Newton and SDCA."""
    runs = {solver: (lambda solver=solver: ours(store, "squared_hinge", args.lam, args.eps,
                                                solver))
            for solver in ("auto", "newton", "sdca")}
    timed = {solver: best(r) for solver, r in rounds(args.repeats, runs, args.min_seconds).items()}
    cand = min(timed["newton"][0], timed["sdca"][0])
    return {"seconds": timed["auto"][0], "chose": timed["auto"][1].params["solver"],
            "newton_seconds": timed["newton"][0], "sdca_seconds": timed["sdca"][0],
            "best_candidate_seconds": cand, "ratio": ratio(timed["auto"][0], cand)}


def sgd(store, X, y, args):
    """A whole 5-epoch train_stream SGD call against SGDClassifier's 5-epoch fit."""
    from sklearn.linear_model import SGDClassifier

    def theirs():
        clf = SGDClassifier(loss="hinge", alpha=args.lam, max_iter=args.epochs, tol=None,
                            fit_intercept=False, random_state=0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, y)
        return time.perf_counter() - start, clf

    runs = {"peer": theirs}
    for label, options in (("sgd", {}), ("sgd hogwild", dict(hogwild=True))):
        runs[label] = lambda options=options: ours(store, "hinge", args.lam, args.eps, "sgd",
                                                   max_iter=args.epochs, **options)
    timed = rounds(args.repeats, runs, args.min_seconds)
    peer_s = best(timed.pop("peer"))[0]
    fig = {"peer": f"SGDClassifier(max_iter={args.epochs}, tol=None).fit",
           "peer_seconds": peer_s, "epochs": args.epochs}
    for label, results in timed.items():
        seconds = best(results)[0]
        fig[label] = {"seconds": seconds, "ratio": ratio(seconds, peer_s)}
    fig["ratio"] = min(fig["sgd"]["ratio"], fig["sgd hogwild"]["ratio"])
    return fig


@contextlib.contextmanager
def fresh_cache():
    """A new, empty text cache folder for the duration (the text is converted again)."""
    old = os.environ.get(CACHE_DIR_ENV)
    folder = tempfile.mkdtemp(prefix="matrix-cache-")
    os.environ[CACHE_DIR_ENV] = folder
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if old is None:
            os.environ.pop(CACHE_DIR_ENV)
        else:
            os.environ[CACHE_DIR_ENV] = old


def end_to_end(text, args):
    """Squared hinge from the svmlight text: ours (conversion included) against LIBLINEAR's
    reader and train."""
    from liblinear.liblinearutil import parameter, problem, svm_read_problem, train

    def theirs():
        start = time.perf_counter()
        yl, Xl = svm_read_problem(text, return_scipy=True)
        c = 1.0 / (args.lam * Xl.shape[0])
        model = train(problem(yl, Xl), parameter(f"-s 2 -c {c} -e {args.eps} -q"))
        return time.perf_counter() - start, model

    def mine():
        with fresh_cache():
            return ours(text, "squared_hinge", args.lam, args.eps, "auto")

    timed = rounds(args.repeats, {"peer": theirs, "ours": mine}, args.min_seconds)
    peer_s, ours_s = best(timed["peer"])[0], best(timed["ours"])[0]
    return {"peer": "LIBLINEAR svm_read_problem + train -s 2", "peer_seconds": peer_s,
            "seconds": ours_s, "ratio": ratio(ours_s, peer_s)}


def make_warm_store(work):
    """A small store (and its text) for the first warm-up."""
    text = os.path.join(work, "warm.svm")
    generate(text, n_rows=200, n_features=500, min_nnz=5, max_nnz=20, seed=9)
    store = os.path.join(work, "warm.h5")
    convert_svmlight(text, store, progress=False)
    return text, store


def warm_up(text, store, args):
    """Compile (or load) every kernel the figures take on this store (one iteration or
    epoch of each; a store's block encodings may take kernels of their own), and on its
    text if given, parallel twins included (as ``streamssvm warmup`` compiles them: the
    figures are of warm kernels, not of a process still paying for its parallel twins,
    :mod:`streamssvm.kernels._twins`); the seconds of each of these first calls."""
    with compiling_parallel():
        return _first_calls(text, store, args)


def _first_calls(text, store, args):
    first = {}
    calls = [("squared_hinge", s, None) for s in ("tron", "newton", "sdca", "auto")]
    calls += [("logistic", s, None) for s in ("tron", "newton")]
    calls += [("psi_g", s, args.sigma) for s in ("tron", "newton", "sdca", "auto")]
    for loss, solver, sigma in calls:
        first[f"{loss} {solver}"] = ours(store, loss, args.lam, args.eps, solver, sigma,
                                         max_iter=1)[0]
    for label, options in (("sgd", {}), ("sgd hogwild", dict(hogwild=True))):
        first[f"hinge {label}"] = ours(store, "hinge", args.lam, args.eps, "sgd", max_iter=1,
                                       **options)[0]
    if text is not None:
        with fresh_cache():
            first["text squared_hinge auto"] = ours(text, "squared_hinge", args.lam,
                                                    args.eps, "auto", max_iter=1)[0]
    return first


def worst(shapes, figure, path):
    """(shape, ratio) of the largest ratio at ``path`` (keys) in ``figure`` over shapes."""
    found = []
    for name, figs in shapes.items():
        node = figs.get(figure)
        for key in path:
            node = None if node is None else node.get(key)
        if node is not None and np.isfinite(node):
            found.append((name, float(node)))
    return max(found, key=lambda t: t[1]) if found else (None, None)


def summary(shapes):
    rows = {}
    for label, figure, path, target in (
            ("squared hinge TRON / LIBLINEAR -s 2", "squared_hinge", ("tron", "ratio"), 0.6),
            ("squared hinge Newton / LIBLINEAR -s 2", "squared_hinge", ("newton", "ratio"), 0.6),
            ("logistic TRON / LIBLINEAR -s 0", "logistic", ("tron", "ratio"), 0.6),
            ("logistic Newton / LIBLINEAR -s 0", "logistic", ("newton", "ratio"), 0.6),
            ("psi_G fastest to 1e-3 / LIBLINEAR's fastest", "psi_g", ("ratio",), 1.0),
            ("auto / best candidate, psi_G", "auto", ("psi_g", "ratio"), 1.3),
            ("auto / best candidate, squared hinge", "auto", ("squared_hinge", "ratio"), 1.3),
            ("SGD 5-epoch call / SGDClassifier fit", "sgd", ("sgd", "ratio"), 0.5),
            ("SGD hogwild 5-epoch call / SGDClassifier fit", "sgd", ("sgd hogwild", "ratio"),
             0.5),
            ("tiny set end to end / LIBLINEAR", "end_to_end", ("ratio",), 1.5)):
        shape, value = worst(shapes, figure, path)
        rows[label] = {"worst_shape": shape, "ratio": value, "target": target,
                       "met": None if value is None else value <= target}
    return rows


def main(argv=None):
    # the process set up as a user's that trains before it imports scikit-learn, whose
    # import loads OpenMP (libgomp reads GOMP_SPINCOUNT once, as it loads)
    prepare()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small shapes, one round: checks the tool end to end")
    ap.add_argument("--shapes", help="comma-separated shapes to run (default: all; "
                    f"{', '.join([*SYNTHETIC, *FILES])})")
    ap.add_argument("--lam", type=float, default=1e-5, help="lambda (C = 1 / (lambda n))")
    ap.add_argument("--eps", type=float, default=0.01, help="tolerance, LIBLINEAR's rule")
    ap.add_argument("--sigma", type=float, default=2.0 ** -3, help="psi_G's sigma")
    ap.add_argument("--epochs", type=int, default=5, help="SGD epochs of both")
    ap.add_argument("--repeats", type=int, help="rounds, best kept (default 3; 1 with --quick); "
                    "more, up to 10 times as many, for calls that sum to under half a second")
    ap.add_argument("--work", default=os.path.join(ROOT, "bench-data"),
                    help="folder for the shapes' text and stores (a temporary one inside)")
    ap.add_argument("--json", help="where to write the figures (default benchmarks/matrix.json)")
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    args.min_seconds = 0.0 if args.quick else MIN_SECONDS
    if args.repeats < 1:
        ap.error("argument --repeats: must be >= 1")
    names = [*SYNTHETIC, *(QUICK_FILES if args.quick else FILES)]
    if args.shapes:
        wanted = args.shapes.split(",")
        unknown = sorted(set(wanted) - set(SYNTHETIC) - set(FILES))
        if unknown:
            ap.error(f"argument --shapes: unknown {unknown}; known: "
                     f"{', '.join([*SYNTHETIC, *FILES])}")
        names = wanted
    os.makedirs(args.work, exist_ok=True)
    shapes, skipped = {}, {}
    with tempfile.TemporaryDirectory(dir=args.work, prefix="matrix-") as work:
        start = time.perf_counter()
        first_call = warm_up(*make_warm_store(work), args)
        print(f"warm-up (compile or load of the kernels) {time.perf_counter() - start:.1f} s",
              flush=True)
        for name in names:
            if name in FILES and not os.path.exists(FILES[name]):
                skipped[name] = f"{FILES[name]} not found"
                print(f"{name}: skipped, {skipped[name]}", flush=True)
                continue
            text, store, X, y = make_shape(name, work, args.quick)
            n, d = X.shape
            figs = {"n_samples": n, "n_features": d, "nnz": int(X.nnz),
                    "positive_fraction": float(np.mean(y > 0)),
                    "first_call_seconds": warm_up(text if name == "tiny" else None, store,
                                                  args)}
            print(f"\n{name}: {n:,} x {d:,}, {X.nnz:,} nonzeros "
                  f"({X.nnz / n:.1f} a row), +1: {figs['positive_fraction']:.1%}", flush=True)
            figs.update(like_for_like(store, X, y, args))
            for loss in PEER:
                r = figs[loss]
                print(f"  {loss:<14} {r['peer']} {r['peer_seconds']:.3f} s; tron "
                      f"{r['tron']['seconds']:.3f} s ({r['tron']['ratio']:.2f}x), newton "
                      f"{r['newton']['seconds']:.3f} s ({r['newton']['ratio']:.2f}x)",
                      flush=True)
            figs["psi_g"], figs["auto"] = fastest_psi_g(store, X, y, args)
            p = figs["psi_g"]
            print(f"  psi_g to 1e-3: LIBLINEAR {p['peer_fastest']} {p['peer_seconds']:.3f} s; "
                  + ", ".join(f"{s} " + (f"{v['seconds']:.3f} s ({v['ratio']:.2f}x)"
                                         if v["seconds"] is not None else "not reached")
                              for s, v in p["solvers"].items()), flush=True)
            figs["auto"]["squared_hinge"] = auto_squared_hinge(store, args)
            for loss, a in figs["auto"].items():
                shown = "-" if a["ratio"] is None else f"{a['ratio']:.2f}x"
                print(f"  auto ({a['chose']}) / best candidate, {loss}: {shown}", flush=True)
            figs["sgd"] = sgd(store, X, y, args)
            g = figs["sgd"]
            print(f"  sgd {args.epochs} epochs: SGDClassifier {g['peer_seconds']:.3f} s; ours "
                  f"{g['sgd']['seconds']:.3f} s ({g['sgd']['ratio']:.2f}x), hogwild "
                  f"{g['sgd hogwild']['seconds']:.3f} s ({g['sgd hogwild']['ratio']:.2f}x)",
                  flush=True)
            if name == "tiny":
                figs["end_to_end"] = end_to_end(text, args)
                e = figs["end_to_end"]
                print(f"  end to end: LIBLINEAR {e['peer_seconds']:.3f} s, ours "
                      f"{e['seconds']:.3f} s ({e['ratio']:.2f}x)", flush=True)
            shapes[name] = figs
    worst_rows = summary(shapes)
    print("\nworst shape per figure (ratio = ours / peer):")
    for label, r in worst_rows.items():
        shown = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        verdict = "" if r["met"] is None else ("met" if r["met"] else "NOT met")
        print(f"  {label:<46} {shown:>6} on {r['worst_shape']} (target <= {r['target']}) "
              f"{verdict}")
    figures = {"quick": args.quick, "repeats": args.repeats, "min_seconds": args.min_seconds,
               "lam": args.lam, "eps": args.eps,
               "sigma": args.sigma, "first_call_seconds": first_call, "shapes": shapes,
               "skipped": skipped, "worst": worst_rows}
    print("wrote", bench_output.write("matrix", figures, args.json))
    return figures


def headline(figures):
    """The README's rows: each figure's worst shape against its target (the docs' claims
    are the matrix's worst case)."""
    shapes = len(figures["shapes"])
    return [{"what": f"{label}, worst of {shapes} data shapes",
             "result": f"{row['ratio']:.2f}x on {row['worst_shape']} (target <= "
                       f"{row['target']:g}: {'met' if row['met'] else 'not met'})"}
            for label, row in figures["worst"].items()]

if __name__ == "__main__":
    main()
