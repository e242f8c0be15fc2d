"""Reproduce section 5 of Luo, Qiao & Zhang, "Learning with smooth hinge losses" (issue 8).

Subcommands:

``all``
    The whole reproduction on a9a, w8a, ijcnn1, the news20 rebuild and the synthetic set
    (one after another, each with --jobs), then ``report`` and the blocks of
    docs/RESULTS.md again.
    ``--quick``: a9a alone, on a small protocol, into a scratch folder (the test suite's).

``run DATA --name NAME``
    On one data set (an svmlight file, converted once to a store under --store-dir, or a
    store): the paper's protocol (4 independent 5-part partitions, 20 runs, every training
    and test set a row subset of the one store), then
      - ``sweep``: Figure 1, train and test accuracy of psi_G and psi_M for sigma from
        2^-30 to 2^5 to the paper's rule ||grad|| <= 1e-3: every sigma trained from w = 0
        ("cold", the paper's; by --sweep-solver), and TRON with xi_t = 0.1 on the path
        warm-started from the previous (larger) sigma ("warm"); the methods' sigma is the
        largest within one standard error of the best mean cold test accuracy (unless
        --sigma-log2);
      - ``methods``: the six methods of Tables 2 and 3 at that sigma (accuracy, time);
        Pegasos until its objective stops changing (--pegasos-rtol over --pegasos-chunk
        epochs) or --pegasos-max-epochs, with its hinge objective's gap to psi_G's solution;
      - ``convergence``: TRON on the whole set, xi_t = 0.1 against xi_t = min(0.1, kappa
        ||grad||), ||w_t - w*|| (w* by a tight Newton solve) and ||grad|| per iteration,
        with the fitted order of the last steps.
    Writes OUT/NAME.json (every number), then reads it back and writes OUT/NAME.md (the
    tables) and OUT/NAME-sweep.png, OUT/NAME-convergence.png (with matplotlib).

``render RESULTS.json ...``
    Summarise results files again and rewrite their tables and figures (after a change of
    the report, without running anything).

``report RESULTS.json ... --out FILE.md [--page docs/RESULTS.md]``
    Tables 2 and 3 across the data sets of several results files, beside the paper's; with
    ``--page``, that page's rendered blocks again (its prose is kept).

Examples::

    python tools/reproduce.py all --jobs 2       # everything, docs/results and docs/RESULTS.md
    python tools/reproduce.py all --quick        # a9a on a small protocol, in a scratch folder
    python tools/reproduce.py all --datasets a9a,w8a -- --sweep-max-iter 50
    python tools/reproduce.py run /work/shared/data/a9a.svm.xz --name a9a
    python tools/reproduce.py report docs/results/*.json --out docs/results/tables.md \\
        --page docs/RESULTS.md
"""

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace

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
from streamssvm.experiments import (Plateau, Settings, chosen_sigma,  # noqa: E402
                                    comparison_tables, make_folds, paper_methods, read_json,
                                    render_markdown, render_page, run_convergence,
                                    run_methods, run_sigma_sweep, summarize_results,
                                    write_json)
from streamssvm.experiments.report import (RESULTS_FORMAT, RESULTS_VERSION,  # noqa: E402
                                           plot_convergence, plot_sweep)
from streamssvm.experiments.runner import SWEEP_LOG2_SIGMAS, best_hinge_objectives  # noqa: E402
from tool_args import existing_file, repo_env  # noqa: E402

PARTS = ("sweep", "methods", "convergence")  # in this order: the sweep picks the sigma
RUN_FILE = "all.json"  # beside the results: all's wall time, for the page
# --quick: a protocol small enough for the test suite (every part, every kind of run)
QUICK = dict(partitions=1, parts_per_partition=3, log2_sigmas=[-20, -8, -3, 2],
             sweep_max_iter=30, max_iter=100, pegasos_chunk=5, pegasos_max_epochs=20,
             convergence_losses="psi_g,logistic", convergence_max_iter=300, lam=1e-3)
SYNTH_ROWS = 200_000


def datasets(data_dir, bench_data, synth_rows=SYNTH_ROWS):
    """The data sets of ``all``: name, svmlight file, how to make it if it is missing
    (None: it must exist) and options of ``run`` for it."""
    synth = os.path.join(bench_data, "reproduce", "synth.svm" if synth_rows == SYNTH_ROWS
                         else f"synth-{synth_rows}.svm")
    return [
        ("a9a", os.path.join(data_dir, "a9a.svm.xz"), None, []),
        ("w8a", os.path.join(data_dir, "w8a.svm.xz"), None, []),
        ("ijcnn1", os.path.join(data_dir, "ijcnn1.svm.xz"), None, []),
        ("news20", os.path.join(bench_data, "news20.svm"),
         [sys.executable, os.path.join(ROOT, "tools", "make_news20.py"),
          "--out-dir", bench_data], []),
        ("synth", synth,
         [sys.executable, os.path.join(ROOT, "tools", "make_synthetic.py"), synth,
          "--rows", str(synth_rows), "--seed", "0"], []),
    ]


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
                        max_iter=args.max_iter, fit_intercept=args.fit_intercept,
                        seed=args.seed)
    plateau = Plateau(rtol=args.pegasos_rtol, chunk=args.pegasos_chunk,
                      max_epochs=args.pegasos_max_epochs)
    folds = make_folds(store.n_samples, args.partitions, args.parts_per_partition, args.seed)
    n_neg, n_pos = store.label_counts()
    results = dict(
        format=RESULTS_FORMAT, version=RESULTS_VERSION,
        dataset=dict(name=args.name, path=os.path.abspath(args.data), store=store.path,
                     n_samples=store.n_samples, n_features=store.n_features, nnz=store.nnz,
                     n_negative=n_neg, n_positive=n_pos),
        protocol=dict(n_partitions=args.partitions, n_parts=args.parts_per_partition,
                      seed=args.seed, lam=settings.lam, tol=settings.tol,
                      abs_tol=settings.abs_tol, max_iter=settings.max_iter,
                      fit_intercept=settings.fit_intercept,
                      folds=[dict(partition=f.partition, part=f.part, digest=f.digest,
                                  n_train=len(f.train_rows), n_test=len(f.test_rows))
                             for f in folds]),
        environment=dict(streamssvm=__version__, python=platform.python_version(),
                         numpy=np.__version__, numba=numba.__version__,
                         processes=args.jobs,
                         threads=1 if args.jobs > 1 else numba.get_num_threads(),
                         cpus=os.cpu_count()),
        command=" ".join(["python", "tools/reproduce.py", *sys.argv[1:]]),
        timings={})
    parts = args.only or PARTS
    sigma_log2, sigma_from = args.sigma_log2, "given"
    if "sweep" in parts:
        start = time.perf_counter()
        used = folds[:args.sweep_runs]
        log2_sigmas = args.log2_sigmas or SWEEP_LOG2_SIGMAS
        sweep_settings = replace(settings, max_iter=args.sweep_max_iter)
        results["sweep"] = dict(
            log2_sigmas=list(log2_sigmas), max_iter=args.sweep_max_iter,
            cold_solver=args.sweep_solver,
            note=(f"To ||grad|| <= {settings.abs_tol:g} or {args.sweep_max_iter} iterations "
                  f"(epochs for SDCA), on each of {len(used)} folds. 'cold': every sigma "
                  f"trained from w = 0 (the paper's sweep) by {args.sweep_solver!r}"
                  + (" (the library's choice for the loss at that sigma and the data's "
                     "shape)" if args.sweep_solver == "auto" else "")
                  + "; 'warm': TRON with xi_t = 0.1, the widths visited from "
                  f"2^{max(log2_sigmas)} down to 2^{min(log2_sigmas)}, each started at the "
                  "previous solution."),
            runs=run_sigma_sweep(store, used, sweep_settings, log2_sigmas=log2_sigmas,
                                 cold_solver=args.sweep_solver, log=log, jobs=args.jobs))
        summarize_results(results)
        if sigma_log2 is None:
            sigma_log2, sigma_from = chosen_sigma(results["sweep"]["summary"]), "sweep"
        results["timings"]["sweep"] = time.perf_counter() - start
    sigma = 2.0 ** sigma_log2
    if "methods" in parts:
        start = time.perf_counter()
        methods = paper_methods(sigma, None if args.gamma_log2 is None else 2.0 ** args.gamma_log2,
                                pegasos_solver=args.pegasos_solver, sifs_solver=args.sifs_solver)
        results["methods"] = dict(
            sigma_log2=sigma_log2, sigma_from=sigma_from,
            note=(f"sigma = 2^{sigma_log2:g} ("
                  + ("the largest within one standard error of the best mean cold test "
                     "accuracy of psi_G and psi_M in the sweep" if sigma_from == "sweep"
                     else "given")
                  + "); l_gamma's gamma = "
                  + ("sigma" if args.gamma_log2 is None else f"2^{args.gamma_log2:g}") + ". "
                  f"Second-order solvers to ||grad|| <= {settings.abs_tol:g} or "
                  f"{settings.max_iter} iterations; Pegasos: {plateau.describe()}; its "
                  "objective gap is P(w) - P(w_psi_G) with P the hinge objective it minimises "
                  "and w_psi_G psi_G's solution on the same fold, and P(w) minus the lowest P "
                  "of psi_G's solutions in the sweep on that fold."),
            runs=run_methods(store, folds[:args.methods_runs], methods, settings, plateau,
                             best_hinge_objectives(results.get("sweep", {}).get("runs", [])),
                             log, jobs=args.jobs))
        results["timings"]["methods"] = time.perf_counter() - start
    if "convergence" in parts:
        start = time.perf_counter()
        losses = [(loss, sigma if loss in ("psi_g", "psi_m") else None)
                  for loss in args.convergence_losses.split(",")]
        results["convergence"] = dict(
            note=(f"TRON on all {store.n_samples:,} rows to ||grad|| <= {args.convergence_tol:g} "
                  f"||grad L(0)|| (at most {args.convergence_max_iter} iterations); forcing "
                  f"'constant' is xi_t = 0.1, 'quadratic' is xi_t = min(0.1, "
                  f"{args.kappa:g} ||grad L(w_t)||); psi_G and psi_M at sigma = 2^{sigma_log2:g}. "
                  "w* is line-search Newton's solution with no tolerance, then one Newton "
                  "step solved by CG to 1e-8; the norm of a second such step estimates its "
                  "error. Order: the least-squares slope of log e_k+1 against log e_k over "
                  "the last 3 steps above the floor (10 x that estimate for e = ||w - w*||, "
                  "10 x ||grad L(w*)|| for ||grad||), the steps that stalled at the end left "
                  "out, and the last step of a run that stopped at float64's resolution of "
                  "L (its reductions below 1e-12 |L|): about 1 for linear convergence, 2 for "
                  "quadratic."),
            runs=run_convergence(store, losses, settings, tol=args.convergence_tol,
                                 max_iter=args.convergence_max_iter, kappa=args.kappa, log=log,
                                 jobs=args.jobs))
        results["timings"]["convergence"] = time.perf_counter() - start
    store.close()
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = os.path.join(args.out_dir, f"{args.name}.json")
    write_json(summarize_results(results), json_path)
    log(f"wrote {json_path}")
    write_report(json_path, args.out_dir, plots=not args.no_plots)
    return json_path


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
    if args.page:
        run_path = os.path.join(os.path.dirname(os.path.abspath(args.results[0])), RUN_FILE)
        recorded = None
        if os.path.exists(run_path):
            with open(run_path) as fh:
                recorded = json.load(fh)
        folder = os.path.relpath(os.path.dirname(os.path.abspath(args.results[0])),
                                 os.path.dirname(os.path.abspath(args.page)))
        with open(args.page) as fh:
            page = render_page(fh.read(), results, recorded, folder)
        with atomic_output(args.page, overwrite=True) as tmp:
            with open(tmp, "w") as fh:
                fh.write(page)
        log(f"rendered the tables of {args.page}")


def run_all(args, run_options):
    """``run`` on every data set of :func:`datasets` (made first where missing), one after
    another, each with ``--jobs`` (its folds that many at a time, in processes of their own),
    then ``report`` over their results."""
    chosen = datasets(args.data_dir, args.bench_data, args.synth_rows)
    if args.quick:
        chosen = chosen[:1]
    if args.datasets:
        names = args.datasets.split(",")
        unknown = sorted(set(names) - {name for name, *_ in chosen})
        if unknown:
            raise SystemExit(f"reproduce.py all: error: unknown data set {unknown[0]!r}")
        chosen = [d for d in chosen if d[0] in names]
    start = time.perf_counter()
    commands = []
    for name, path, make, options in chosen:
        if not os.path.exists(path):
            if make is None:
                raise SystemExit(f"reproduce.py all: error: {path} does not exist")
            log(f"making {path}")
            subprocess.run(make, check=True, env=repo_env())
        commands.append(["run", path, "--name", name, "--out-dir", args.out_dir, "--store-dir",
                         args.store_dir, "--jobs", str(args.jobs), *options, *run_options])
    paths = [main(command) for command in commands]
    wall = time.perf_counter() - start
    with atomic_output(os.path.join(args.out_dir, RUN_FILE), overwrite=True) as tmp:
        with open(tmp, "w") as fh:
            json.dump(dict(wall_seconds=wall, jobs=args.jobs,
                           datasets=[name for name, *_ in chosen]), fh, indent=1)
    main(["report", *paths, "--out", os.path.join(args.out_dir, "tables.md"),
          *(["--page", args.page] if args.page else [])])
    log(f"all: {wall:.0f} s of wall time")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = run_parser = sub.add_parser("run", help="run the experiments on one data set",
                                    formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("data", type=existing_file, help="svmlight file (.gz/.bz2/.xz too) or store")
    p.add_argument("--name", required=True, help="data set name (output file names)")
    p.add_argument("--quick", action="store_true",
                   help="a small protocol (the test suite's): " + ", ".join(
                       f"--{k.replace('_', '-')} {v}" for k, v in QUICK.items()))
    p.add_argument("--sigma-log2", type=float,
                   help="log2 of psi_G / psi_M's sigma for the methods and convergence "
                   "(default: the sweep's best; needed without the sweep)")
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
                   help="iterations (epochs for SDCA) per sigma in the sweep")
    p.add_argument("--sweep-solver", default="auto",
                   help="solver of the sweep's cold starts (the paper's: tron; auto: the "
                   "library's choice at each sigma); the warm path runs TRON")
    p.add_argument("--log2-sigmas", type=lambda s: [int(x) for x in s.split(",")],
                   help="comma-separated (default: the paper's -30,-25,-20,-15,-10..5)")
    p.add_argument("--seed", type=int, default=0, help="folds and stochastic solvers")
    p.add_argument("--lam", type=float, default=1e-5)
    p.add_argument("--tol", type=float, default=0.0, help="relative to ||grad L(0)||")
    p.add_argument("--abs-tol", type=float, default=1e-3, help="the paper's ||grad|| <= 0.001")
    p.add_argument("--max-iter", type=_positive_int, default=1000)
    p.add_argument("--fit-intercept", action="store_true")
    p.add_argument("--pegasos-solver", default="pegasos")
    p.add_argument("--pegasos-rtol", type=float, default=1e-3,
                   help="stop when the objective changed by at most this times |f| over a chunk")
    p.add_argument("--pegasos-chunk", type=_positive_int, default=10, help="epochs")
    p.add_argument("--pegasos-max-epochs", type=_positive_int, default=1000)
    p.add_argument("--sifs-solver", default="tron", help="our solver for l_gamma")
    p.add_argument("--convergence-losses", default="psi_g,psi_m,squared_hinge,logistic")
    p.add_argument("--convergence-tol", type=float, default=1e-12)
    p.add_argument("--convergence-max-iter", type=_positive_int, default=100)
    p.add_argument("--kappa", type=float, default=1.0)
    p.add_argument("--jobs", type=_positive_int, default=1,
                   help="folds (and convergence losses) at once, each in a process of its own "
                   "on one kernel thread")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=run)
    p = all_parser = sub.add_parser(
        "all", help="every data set, then the report and docs/RESULTS.md's tables",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="a9a alone on run's --quick protocol, into --store-dir/quick "
                   "(not docs/), and no page")
    p.add_argument("--datasets", help="comma-separated names among "
                   + ",".join(name for name, *_ in datasets("", "")))
    p.add_argument("--data-dir", default="/work/shared/data", help="a9a, w8a, ijcnn1")
    p.add_argument("--bench-data", default=os.path.join(ROOT, "bench-data"),
                   help="news20.svm (tools/make_news20.py), reproduce/synth.svm")
    p.add_argument("--out-dir", help="default docs/results (--quick: STORE_DIR/quick)")
    p.add_argument("--store-dir", default=os.path.join(ROOT, "bench-data", "reproduce"))
    p.add_argument("--page", help="default docs/RESULTS.md (--quick: none)")
    p.add_argument("--jobs", type=_positive_int, default=1,
                   help="run's --jobs for every data set (the data sets one after another)")
    p.add_argument("--synth-rows", type=_positive_int, default=SYNTH_ROWS,
                   help="rows of the synthetic set (made if missing; its file name says them)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("run_options", nargs=argparse.REMAINDER,
                   help="after --: options of run for every data set (e.g. -- "
                   "--sweep-max-iter 50)")
    p.set_defaults(func=None)
    p = sub.add_parser("render", help="summarise results files again and rewrite their "
                       "tables and figures (beside them)")
    p.add_argument("results", nargs="+", type=existing_file)
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=render)
    p = sub.add_parser("report", help="Tables 2 and 3 across results files")
    p.add_argument("results", nargs="+", type=existing_file)
    p.add_argument("--out", required=True)
    p.add_argument("--page", type=existing_file,
                   help="a page whose <!-- BEGIN name --> blocks are rendered again")
    p.set_defaults(func=report)
    if argv[:1] == ["run"] and "--quick" in argv:  # the preset, under explicit options
        run_parser.set_defaults(**QUICK)
    args = parser.parse_args(argv)
    if args.command == "all":
        if args.out_dir is None:
            args.out_dir = (os.path.join(args.store_dir, "quick") if args.quick
                            else os.path.join(ROOT, "docs", "results"))
        if args.page is None and not args.quick:
            args.page = os.path.join(ROOT, "docs", "RESULTS.md")
        if args.page is not None and not os.path.isfile(args.page):
            all_parser.error(f"argument --page: no such file: {args.page!r}")
        extra = args.run_options[1:] if args.run_options[:1] == ["--"] else args.run_options
        return run_all(args, [*(["--quick"] if args.quick else []),
                              *(["--no-plots"] if args.no_plots else []), *extra])
    if args.func is run:  # before the data is read or converted
        if args.sigma_log2 is None and "sweep" not in (args.only or PARTS):
            run_parser.error("argument --sigma-log2: needed without the sweep, which "
                             "picks it")
        for loss in args.convergence_losses.split(","):
            try:
                kinked = get_loss(loss, 1.0 if loss in ("psi_g", "psi_m") else None).kinked
            except ValueError as exc:
                run_parser.error(f"argument --convergence-losses: {exc}")
            if kinked:
                run_parser.error(f"argument --convergence-losses: {loss}'s slope jumps, and "
                                 f"the convergence part runs TRON")
        for option, solver in (("--pegasos-solver", args.pegasos_solver),
                               ("--sifs-solver", args.sifs_solver),
                               ("--sweep-solver", args.sweep_solver)):
            if solver not in SOLVERS and not (option == "--sweep-solver" and solver == "auto"):
                run_parser.error(f"argument {option}: unknown solver {solver!r}; known: "
                                 f"{', '.join(SOLVERS)}")
        if not 0 <= args.pegasos_rtol < 1:
            run_parser.error(f"argument --pegasos-rtol: must be in [0, 1), got "
                             f"{args.pegasos_rtol}")
        n_folds = args.partitions * args.parts_per_partition
        for option, runs in (("--methods-runs", args.methods_runs),
                             ("--sweep-runs", args.sweep_runs)):
            if runs is not None and runs > n_folds:
                run_parser.error(f"argument {option}: {runs} runs, but there are {n_folds} "
                                 "folds (--partitions x --parts-per-partition)")
    return args.func(args)


if __name__ == "__main__":
    main()
