"""Reproduce section 5 of Luo, Qiao & Zhang, "Learning with smooth hinge losses" (issue 8).

Subcommands:

``run DATA --name NAME --sigma-log2 S``
    On one data set (an svmlight file, converted once to a store under --store-dir, or a
    store): the paper's protocol (4 independent 5-part partitions, 20 runs, every training
    and test set a row subset of the one store), then
      - ``methods``: the six methods of Tables 2 and 3 at sigma = 2^S (accuracy, time);
      - ``sweep``: Figure 1, train and test accuracy of psi_G and psi_M for sigma from
        2^-30 to 2^5, each sigma warm-started from the previous (larger) one;
      - ``convergence``: ||grad|| per TRON iteration on the whole set, forcing term
        xi_t = 0.1 against xi_t = min(0.1, kappa ||grad||), with observed orders.
    Writes OUT/NAME.json (every number), then reads it back and writes OUT/NAME.md (the
    tables) and OUT/NAME-sweep.png, OUT/NAME-convergence.png (with matplotlib).

``render RESULTS.json ...``
    Summarise results files again and rewrite their tables and figures (after a change of
    the report, without running anything).

``report RESULTS.json ... --out FILE.md``
    Tables 2 and 3 across the data sets of several results files, beside the paper's.

Examples::

    python tools/reproduce.py run /work/shared/data/a9a.svm.xz --name a9a --sigma-log2 -3
    python tools/reproduce.py run bench-data/news20.svm --name news20 --sigma-log2 -6 \\
        --methods-runs 5 --sweep-runs 1
    python tools/reproduce.py report docs/results/*.json --out docs/results/tables.md
"""

import argparse
import hashlib
import os
import platform
import sys
import time
from dataclasses import asdict

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from streamssvm import __version__, convert_svmlight  # noqa: E402
from streamssvm._atomic import atomic_output  # noqa: E402
from streamssvm.cli import _positive_int  # noqa: E402
from streamssvm.data import Store, StoreError  # noqa: E402
from streamssvm.losses import get_loss  # noqa: E402
from streamssvm.solvers import SOLVERS  # noqa: E402
from streamssvm.experiments import (Settings, comparison_tables, make_folds,  # noqa: E402
                                    paper_methods, read_json, render_markdown,
                                    run_convergence, run_methods, run_sigma_sweep,
                                    summarize_results, write_json)
from streamssvm.experiments.report import (RESULTS_FORMAT, RESULTS_VERSION,  # noqa: E402
                                           plot_convergence, plot_sweep)
from streamssvm.experiments.runner import SWEEP_LOG2_SIGMAS  # noqa: E402
from tool_args import existing_file  # noqa: E402

PARTS = ("methods", "sweep", "convergence")


def open_store(data, name, store_dir):
    """A Store for ``data``: the store itself, or the svmlight file converted once into
    ``store_dir/NAME.h5`` (kept while the text file's SHA-256, which the store records,
    matches: one read of the file, against a conversion)."""
    try:
        return Store(data)
    except StoreError:
        pass
    path = os.path.join(store_dir, f"{name}.h5")
    if os.path.exists(path):
        store = Store(path)
        with open(data, "rb") as f:
            text_digest = hashlib.file_digest(f, "sha256").hexdigest()
        if store.metadata.get("source_sha256") == text_digest:
            return store
        store.close()
    os.makedirs(store_dir, exist_ok=True)
    log(f"converting {data} to {path}")
    convert_svmlight(data, path, overwrite=True, progress=False)
    return Store(path)


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parts_list(text):
    """--only: comma-separated names among PARTS."""
    parts = text.split(",")
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown part {unknown[0]!r}: choose among "
                                         f"{','.join(PARTS)}")
    return parts


def run(args):
    store = open_store(args.data, args.name, args.store_dir)
    settings = Settings(lam=args.lam, tol=args.tol, abs_tol=args.abs_tol,
                        max_iter=args.max_iter, epochs=args.epochs,
                        fit_intercept=args.fit_intercept, seed=args.seed)
    folds = make_folds(store.n_samples, args.partitions, args.parts_per_partition, args.seed)
    n_neg, n_pos = store.label_counts()
    sigma = 2.0 ** args.sigma_log2
    results = dict(
        format=RESULTS_FORMAT, version=RESULTS_VERSION,
        dataset=dict(name=args.name, path=os.path.abspath(args.data), store=store.path,
                     n_samples=store.n_samples, n_features=store.n_features, nnz=store.nnz,
                     n_negative=n_neg, n_positive=n_pos),
        protocol=dict(n_partitions=args.partitions, n_parts=args.parts_per_partition,
                      seed=args.seed, lam=settings.lam, tol=settings.tol,
                      abs_tol=settings.abs_tol, max_iter=settings.max_iter,
                      epochs=settings.epochs, fit_intercept=settings.fit_intercept,
                      folds=[dict(partition=f.partition, part=f.part, digest=f.digest,
                                  n_train=len(f.train_rows), n_test=len(f.test_rows))
                             for f in folds]),
        environment=dict(streamssvm=__version__, python=platform.python_version(),
                         numpy=np.__version__, numba=numba.__version__,
                         threads=numba.get_num_threads(), cpus=os.cpu_count(),
                         load_average_at_start=list(os.getloadavg()),
                         started=time.strftime("%Y-%m-%d %H:%M:%S")),
        command=" ".join(["python", "tools/reproduce.py", *sys.argv[1:]]),
        timings={})
    parts = args.only or PARTS
    if "methods" in parts:
        start = time.perf_counter()
        methods = paper_methods(sigma, None if args.gamma_log2 is None else 2.0 ** args.gamma_log2,
                                pegasos_solver=args.pegasos_solver, sifs_solver=args.sifs_solver)
        results["methods"] = dict(
            sigma_log2=args.sigma_log2,
            runs=run_methods(store, folds[:args.methods_runs], methods, settings, log))
        results["timings"]["methods"] = time.perf_counter() - start
    if "sweep" in parts:
        start = time.perf_counter()
        used = folds[:args.sweep_runs]
        log2_sigmas = args.log2_sigmas or SWEEP_LOG2_SIGMAS
        sweep_settings = Settings(**{**asdict(settings), "max_iter": args.sweep_max_iter})
        results["sweep"] = dict(
            log2_sigmas=list(log2_sigmas), max_iter=args.sweep_max_iter,
            note=(f"TRON, xi_t = 0.1, at most {args.sweep_max_iter} iterations per sigma; on "
                  f"each of {len(used)} folds the widths are visited from 2^{max(log2_sigmas)} "
                  f"down to 2^{min(log2_sigmas)}, each warm-started from the previous solution."),
            runs=run_sigma_sweep(store, used, sweep_settings, log2_sigmas=log2_sigmas, log=log))
        results["timings"]["sweep"] = time.perf_counter() - start
    if "convergence" in parts:
        start = time.perf_counter()
        losses = [(loss, sigma if loss in ("psi_g", "psi_m") else None)
                  for loss in args.convergence_losses.split(",")]
        results["convergence"] = dict(
            note=(f"TRON on all {store.n_samples:,} rows to ||grad|| <= {args.convergence_tol:g} "
                  f"||grad L(0)|| (at most {args.convergence_max_iter} iterations); forcing "
                  f"'constant' is xi_t = 0.1, 'quadratic' is xi_t = min(0.1, "
                  f"{args.kappa:g} ||grad L(w_t)||). Observed order q_k = log(g_k+1 / g_k) / "
                  "log(g_k / g_k-1): about 1 for linear convergence, 2 for quadratic."),
            runs=run_convergence(store, losses, settings, tol=args.convergence_tol,
                                 max_iter=args.convergence_max_iter, kappa=args.kappa, log=log))
        results["timings"]["convergence"] = time.perf_counter() - start
    store.close()
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = os.path.join(args.out_dir, f"{args.name}.json")
    write_json(summarize_results(results), json_path)
    log(f"wrote {json_path}")
    write_report(json_path, args.out_dir, plots=not args.no_plots)


def write_report(json_path, out_dir, plots=True):
    """NAME.md and the figures, from the results file alone; without ``plots``, the
    figures already in ``out_dir`` are linked as they are."""
    results = read_json(json_path)
    name = results["dataset"]["name"]
    figures = {}
    for part, plot in (("sweep", plot_sweep), ("convergence", plot_convergence)):
        path = os.path.join(out_dir, f"{name}-{part}.png")
        if part in results and plots:
            plot(results, path)
        if part in results and os.path.exists(path):
            figures[part] = os.path.basename(path)
    md_path = os.path.join(out_dir, f"{name}.md")
    with atomic_output(md_path, overwrite=True) as tmp:
        with open(tmp, "w") as fh:
            fh.write(render_markdown(results, figures))
    log(f"wrote {md_path}" + (f" (figures: {', '.join(figures.values())})" if figures else ""))


def render(args):
    for path in args.results:
        results = summarize_results(read_json(path))
        write_json(results, path)
        write_report(path, os.path.dirname(os.path.abspath(path)), plots=not args.no_plots)


def report(args):
    results = [read_json(p) for p in args.results]
    accuracy, seconds = comparison_tables(results)
    text = ("### Test accuracy (%), mean ± std over the runs\n\n" + accuracy
            + "\n\n### Training time (s per run), mean ± std\n\n" + seconds + "\n")
    with atomic_output(args.out, overwrite=True) as tmp:
        with open(tmp, "w") as fh:
            fh.write(text)
    log(f"wrote {args.out}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = run_parser = sub.add_parser("run", help="run the experiments on one data set",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("data", type=existing_file, help="svmlight file (.gz/.bz2/.xz too) or store")
    p.add_argument("--name", required=True, help="data set name (output file names)")
    p.add_argument("--sigma-log2", type=float, required=True,
                   help="log2 of psi_G / psi_M's sigma for the methods and convergence")
    p.add_argument("--gamma-log2", type=float, help="log2 of l_gamma's gamma (default: sigma)")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "docs", "results"))
    p.add_argument("--store-dir", default=os.path.join(ROOT, "bench-data", "reproduce"))
    p.add_argument("--only", type=parts_list,
                   help=f"comma-separated parts among {','.join(PARTS)}")
    p.add_argument("--partitions", type=_positive_int, default=4)
    p.add_argument("--parts-per-partition", type=_positive_int, default=5)
    p.add_argument("--methods-runs", type=_positive_int,
                   help="only the first N folds (default all)")
    p.add_argument("--sweep-runs", type=_positive_int,
                   help="only the first N folds (default all)")
    p.add_argument("--sweep-max-iter", type=_positive_int, default=100,
                   help="TRON iterations per sigma in the sweep")
    p.add_argument("--log2-sigmas", type=lambda s: [int(x) for x in s.split(",")],
                   help="comma-separated (default: the paper's -30,-25,-20,-15,-10..5)")
    p.add_argument("--seed", type=int, default=0, help="folds and stochastic solvers")
    p.add_argument("--lam", type=float, default=1e-5)
    p.add_argument("--tol", type=float, default=0.0, help="relative to ||grad L(0)||")
    p.add_argument("--abs-tol", type=float, default=1e-3, help="the paper's ||grad|| <= 0.001")
    p.add_argument("--max-iter", type=_positive_int, default=1000)
    p.add_argument("--epochs", type=_positive_int, default=20, help="of the stochastic solvers")
    p.add_argument("--fit-intercept", action="store_true")
    p.add_argument("--pegasos-solver", default="pegasos")
    p.add_argument("--sifs-solver", default="tron", help="our solver for l_gamma")
    p.add_argument("--convergence-losses", default="psi_g,psi_m,squared_hinge,logistic")
    p.add_argument("--convergence-tol", type=float, default=1e-12)
    p.add_argument("--convergence-max-iter", type=_positive_int, default=60)
    p.add_argument("--kappa", type=float, default=1.0)
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=run)
    p = sub.add_parser("render", help="summarise results files again and rewrite their "
                       "tables and figures (beside them)")
    p.add_argument("results", nargs="+", type=existing_file)
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=render)
    p = sub.add_parser("report", help="Tables 2 and 3 across results files")
    p.add_argument("results", nargs="+", type=existing_file)
    p.add_argument("--out", required=True)
    p.set_defaults(func=report)
    args = parser.parse_args(argv)
    if args.func is run:  # before the data is read or converted
        for loss in args.convergence_losses.split(","):
            try:
                kinked = get_loss(loss, 1.0 if loss in ("psi_g", "psi_m") else None).kinked
            except ValueError as exc:
                run_parser.error(f"argument --convergence-losses: {exc}")
            if kinked:
                run_parser.error(f"argument --convergence-losses: {loss}'s slope jumps, and "
                                 f"the convergence part runs TRON")
        for option, solver in (("--pegasos-solver", args.pegasos_solver),
                               ("--sifs-solver", args.sifs_solver)):
            if solver not in SOLVERS:
                run_parser.error(f"argument {option}: unknown solver {solver!r}; known: "
                                 f"{', '.join(SOLVERS)}")
        n_folds = args.partitions * args.parts_per_partition
        for option, runs in (("--methods-runs", args.methods_runs),
                             ("--sweep-runs", args.sweep_runs)):
            if runs is not None and runs > n_folds:
                run_parser.error(f"argument {option}: {runs} runs, but there are {n_folds} "
                                 "folds (--partitions x --parts-per-partition)")
    args.func(args)


if __name__ == "__main__":
    main()
