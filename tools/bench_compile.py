"""Benchmark: numba's compile on a first run, cold cache against warm, for each user path.

Each path runs in a child Python whose NUMBA_CACHE_DIR is an empty folder (cold), then
again with the folder that run filled (warm), and from another empty folder with the
helper that compiles a first run's kernels on a second core turned off (``alone``:
``STREAMSSVM_COMPILE_AHEAD=0``, streamssvm/_ahead.py), the figure before the helper. Each
gives the wall time of the child (interpreter, import and the call), the call's own time,
the part of it numba spent compiling, the package's kernels compiled (cache misses,
specializations and callees counted), the child's peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``) and its helper's. Compile memory is the cold peak
less the warm one, plus the helper's peak (a process beside the run, on the same machine
and under the same cap).

Paths, on the shipped a9a (32,561 x 123): ``convert`` (svmlight text to a store);
``store:SOLVER`` (train_stream on the store); ``matrix:SOLVER`` (train_stream on a scipy
CSR matrix, float64, loaded by scikit-learn); ``predict`` (a saved model on the store);
``smoothsvc`` (SmoothSVC.fit on the matrix); ``demo`` (``streamssvm demo`` end to end);
``warmup`` (``streamssvm warmup``: its peak is that of its larger process).
Peer, side by side: scikit-learn's LinearSVC (LIBLINEAR) fitting the same matrix in a child
of its own (nothing to compile): our first and warm runs as ratios of its time.

The edit check: a copy of the package, caching in its own ``__pycache__`` folders as an
install does, runs a path twice (warm),
then once after an edit to cli.py (no kernel module depends on it: no kernel may
recompile), then once after an edit to losses/_scalar.py (the kernels that call the losses
recompile, no other).

Targets: demo cold <= 10 s; the first run of any solver <= 3 s more than its warm
run; compile memory <= 150 MB above the run's; an edit to cli.py recompiles nothing.

Examples::

    python tools/bench_compile.py            # every solver, both inputs, the demo
    python tools/bench_compile.py --quick    # convert, Newton on the store, predict
    # before a change: the same paths on a checkout of the commit before it
    git worktree add /tmp/before COMMIT && python tools/bench_compile.py --package /tmp/before \
        --paths convert,predict,smoothsvc,demo,store:newton,store:tron --output before.json
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import bench_output
from tool_args import REPO_ROOT, repo_env

AHEAD_ENV = "STREAMSSVM_COMPILE_AHEAD"  # streamssvm._ahead.ENV (older checkouts lack it)
TARGETS = {"demo_cold_s": 10.0, "first_run_extra_s": 3.0, "compile_mb": 150.0}


def _matrix():
    import lzma

    from sklearn.datasets import load_svmlight_file

    from streamssvm.datasets import a9a_paths

    with lzma.open(a9a_paths()[0]) as fh:
        return load_svmlight_file(fh)


def compiled(records):
    """From numba's "numba:compile" events: the package's functions compiled (module.name)
    and the wall time of the outermost compiles. (numba's own recorder, not the package's
    watch: the tool also measures checkouts that have none, for figures before a change.)"""
    kernels, depth, seconds, start = [], 0, 0.0, 0.0
    for stamp, ev in records:
        if ev.is_start:
            func = ev.data["dispatcher"].py_func
            if func.__module__.startswith("streamssvm."):
                kernels.append(f"{func.__module__[len('streamssvm.'):]}.{func.__qualname__}")
            if not depth:
                start = stamp
            depth += 1
        else:
            depth -= 1
            if not depth:
                seconds += stamp - start
    return kernels, seconds


def child(path, work):
    """Run ``path`` here; print its figures as one JSON line."""
    import warnings

    if path == "peer:linearsvc":  # no streamssvm, no numba
        import numpy as np
        from sklearn.svm import LinearSVC

        X, y = _matrix()  # LIBLINEAR's wrapper refuses the loader's int64 indices
        X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)

        start = time.perf_counter()
        LinearSVC(C=1.0 / (1e-5 * X.shape[0]), tol=1e-4, max_iter=100_000).fit(X, y)
        figures = {"call_s": time.perf_counter() - start, "compile_s": 0.0, "kernels": []}
    else:
        from numba.core import event

        import streamssvm
        from streamssvm import cli
        from streamssvm.datasets import a9a_paths

        store = os.path.join(work, "a9a.h5")
        kind, _, solver = path.partition(":")
        X = y = None
        if kind in ("matrix", "smoothsvc"):
            X, y = _matrix()
        calls = {
            "convert": lambda: streamssvm.convert_svmlight(
                a9a_paths()[0], os.path.join(work, f"c{os.getpid()}.h5"), progress=False),
            "store": lambda: streamssvm.train_stream(store, solver=solver, progress=False),
            "matrix": lambda: streamssvm.train_stream(X, y, solver=solver, progress=False),
            "predict": lambda: streamssvm.Model.load(os.path.join(work, "a9a.npz")).predict(store),
            "smoothsvc": lambda: streamssvm.SmoothSVC().fit(X, y),
            "demo": lambda: cli.main(["demo", "--quiet"]),
            "warmup": lambda: cli.main(["warmup"]),
        }
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        start = time.perf_counter()
        with warnings.catch_warnings(), event.install_recorder("numba:compile") as records:
            warnings.simplefilter("ignore")  # unconverged stochastic runs: not the point
            calls[kind]()
        kernels, seconds = compiled(records.buffer)
        figures = {"call_s": time.perf_counter() - start, "compile_s": seconds,
                   "kernels": kernels}
        try:  # a checkout from before the helper has no manifest to record for
            from streamssvm._ahead import recorded
        except ImportError:
            pass
        else:
            figures["entries"] = recorded(records.buffer)
    figures["peak_rss_mb"] = max(resource.getrusage(who).ru_maxrss / 1024  # warmup's child
                                 for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    figures["children_peak_rss_mb"] = children
    # the compile helper's (streamssvm._ahead), a process beside the call: the largest child
    # the call waited for, if larger than those of the import (0 if none ran)
    if path != "peer:linearsvc":
        figures["helper_peak_rss_mb"] = children if children > children_before else 0.0
    print(json.dumps(figures))


def make_inputs(work, cache, package_parent):
    """The paths' inputs in folder ``work``: a9a's store and a model trained on it, made
    with numba caching in ``cache``."""
    subprocess.run([sys.executable, "-c", (
        "import sys, streamssvm\nfrom streamssvm.datasets import a9a_paths\n"
        "streamssvm.convert_svmlight(a9a_paths()[0], sys.argv[1] + '/a9a.h5', progress=False)\n"
        "streamssvm.train_stream(sys.argv[1] + '/a9a.h5', progress=False)"
        ".save(sys.argv[1] + '/a9a.npz')"), work], check=True,
        env=dict(repo_env(), NUMBA_CACHE_DIR=cache, PYTHONPATH=package_parent))


def run_child(path, work, cache, package_parent, ahead=None):
    """One child, importing the streamssvm of folder ``package_parent``, numba caching in
    ``cache`` (None: in the package's own ``__pycache__`` folders), the compile helper on
    or off by ``ahead`` (None: as in this process): its figures and its wall time
    (``wall_s``)."""
    env = dict(repo_env(), PYTHONPATH=package_parent)
    if ahead is not None:
        env[AHEAD_ENV] = "1" if ahead else "0"
    env.pop("NUMBA_CACHE_DIR", None)
    if cache:
        env["NUMBA_CACHE_DIR"] = cache
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path,
                           "--work", work], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{path}: the child failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall_s"] = wall
    return figures


def cold_and_warm(path, work, tmp, package_parent):
    cache = tempfile.mkdtemp(prefix="numba-", dir=tmp)
    cold = run_child(path, work, cache, package_parent, ahead=True)
    warm = run_child(path, work, cache, package_parent, ahead=True)
    alone = run_child(path, work, tempfile.mkdtemp(prefix="numba-", dir=tmp), package_parent,
                      ahead=False)
    for run in (cold, warm, alone):
        run.pop("entries", None)  # the manifest's (tools/record_kernels.py), not a figure
    row = {"path": path, "cold": cold, "warm": warm, "cold_alone": alone,
           "first_run_extra_s": cold["wall_s"] - warm["wall_s"],
           "first_run_extra_alone_s": alone["wall_s"] - warm["wall_s"],
           "compile_mb": (cold["peak_rss_mb"] - warm["peak_rss_mb"]
                          + cold.get("helper_peak_rss_mb", 0.0)),
           "compile_alone_mb": alone["peak_rss_mb"] - warm["peak_rss_mb"]}
    print(f"{path:18} cold {cold['wall_s']:6.1f} s ({cold['compile_s']:5.1f} s compiling "
          f"{len(cold['kernels']):3} kernels, {cold['peak_rss_mb']:5.0f} MB)   warm "
          f"{warm['wall_s']:5.1f} s ({len(warm['kernels'])} compiled, "
          f"{warm['peak_rss_mb']:5.0f} MB)   first run +{row['first_run_extra_s']:.1f} s "
          f"(helper off +{row['first_run_extra_alone_s']:.1f} s), "
          f"+{row['compile_mb']:.0f} MB (helper off +{row['compile_alone_mb']:.0f} MB)",
          flush=True)
    return row


def edit_check(path, work, tmp, package_parent):
    """Kernels recompiled by ``path`` after an edit to cli.py, then to losses/_scalar.py, in
    a copy of the package caching in its own folders, as an install does (the module
    docstring)."""
    parent = os.path.join(tmp, "copy")
    shutil.copytree(os.path.join(package_parent, "streamssvm"),
                    os.path.join(parent, "streamssvm"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    run_child(path, work, None, parent)
    found = {"path": path, "unedited": run_child(path, work, None, parent)["kernels"]}
    for edited in ("cli.py", os.path.join("losses", "_scalar.py")):
        with open(os.path.join(parent, "streamssvm", edited), "a") as fh:
            fh.write("\n# an edit\n")
        found[edited] = run_child(path, work, None, parent)["kernels"]
        print(f"edit check ({path}): after an edit to {edited}, {len(found[edited])} kernels "
              f"recompiled: {', '.join(sorted(set(found[edited]))) or 'none'}", flush=True)
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="convert, Newton on the store, predict, the edit check on "
                             "predict; no demo, no matrix, no peer (checks that the tool runs)")
    parser.add_argument("--paths", type=lambda text: text.split(","), metavar="LIST",
                        help="these paths only, comma-separated (names as above)")
    parser.add_argument("--package", default=REPO_ROOT, metavar="DIR",
                        help="measure the streamssvm of DIR/streamssvm, e.g. a checkout of the "
                             "commit before a change (default: this repository's)")
    parser.add_argument("--output", help="JSON file (default benchmarks/compile.json)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # its streamssvm is that of its PYTHONPATH (a copy for the edit check)
        return child(args.child, args.work)
    sys.path.insert(0, REPO_ROOT)  # the repository's streamssvm

    from streamssvm.solvers import SOLVERS

    if args.paths:
        paths = args.paths
    elif args.quick:
        paths = ["convert", "store:newton", "predict"]
    else:
        paths = (["convert", "predict", "smoothsvc", "demo", "warmup"]
                 + [f"store:{s}" for s in SOLVERS]
                 + [f"matrix:{s}" for s in SOLVERS])
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        setup = os.path.join(tmp, "numba-setup")  # the inputs' own cache, not the paths'
        make_inputs(work, setup, args.package)
        rows = [cold_and_warm(path, work, tmp, args.package) for path in paths]
        peer = None if args.quick else run_child("peer:linearsvc", work, setup, args.package)
        edits = edit_check("predict" if args.quick else "store:newton", work, tmp,
                           args.package)

    trains = [r for r in rows if r["path"].startswith(("store:", "matrix:"))]
    demo = next((r for r in rows if r["path"] == "demo"), None)
    summary = {
        "demo_cold_s": demo and demo["cold"]["wall_s"],
        "worst_first_run_extra_s": max((r["first_run_extra_s"] for r in trains), default=None),
        "demo_cold_alone_s": demo and demo["cold_alone"]["wall_s"],
        "worst_first_run_extra_alone_s": max((r["first_run_extra_alone_s"] for r in trains),
                                             default=None),
        "worst_compile_mb": max((r["compile_mb"] for r in rows if r["path"] != "warmup"),
                                default=None),
        "worst_compile_alone_mb": max((r["compile_alone_mb"] for r in rows
                                       if r["path"] != "warmup"), default=None),
        "edit_to_cli_recompiles": len(edits["cli.py"]),
    }
    if peer and trains:
        summary["peer_linearsvc_wall_s"] = peer["wall_s"]
        for r in trains:
            r["cold_over_peer"] = r["cold"]["wall_s"] / peer["wall_s"]
            r["warm_over_peer"] = r["warm"]["wall_s"] / peer["wall_s"]
        print(f"peer LinearSVC (LIBLINEAR), a child of its own: {peer['wall_s']:.1f} s; ours "
              f"(train paths) cold {min(r['cold_over_peer'] for r in trains):.1f}-"
              f"{max(r['cold_over_peer'] for r in trains):.1f}x, warm "
              f"{min(r['warm_over_peer'] for r in trains):.1f}-"
              f"{max(r['warm_over_peer'] for r in trains):.1f}x of it")
    def within(value, target):
        return None if value is None else value <= target

    met = {"demo_cold": within(summary["demo_cold_s"], TARGETS["demo_cold_s"]),
           "first_run_extra": within(summary["worst_first_run_extra_s"],
                                     TARGETS["first_run_extra_s"]),
           "compile_memory": within(summary["worst_compile_mb"], TARGETS["compile_mb"]),
           "edit_recompiles_nothing": summary["edit_to_cli_recompiles"] == 0}
    print("targets: " + ", ".join(f"{k} {'-' if v is None else 'met' if v else 'NOT met'}"
                                  for k, v in met.items()))
    path = bench_output.write("compile", {"quick": args.quick, "targets": TARGETS,
                                          "summary": summary, "met": met, "paths": rows,
                                          "peer": peer, "edit_check": edits}, args.output)
    print(f"wrote {path}")
    return 0


def headline(figures):
    """The README's rows: the first run against the warm one, and the targets."""
    summary, targets, met = figures["summary"], figures["targets"], figures["met"]

    def verdict(name):
        return "met" if met[name] else "not met"

    def alone(name, form):
        value = summary.get(name)  # a record from before the helper has none
        return "" if value is None else f", {form.format(value)} with the helper off"

    return [{"what": "streamssvm demo on an empty kernel cache",
             "result": f"{summary['demo_cold_s']:.1f} s (target <= "
                       f"{targets['demo_cold_s']:g} s: {verdict('demo_cold')}"
                       f"{alone('demo_cold_alone_s', '{:.1f} s')})"},
            {"what": "a first training run over the same run warm, worst path",
             "result": f"+{summary['worst_first_run_extra_s']:.1f} s (target <= "
                       f"{targets['first_run_extra_s']:g} s: {verdict('first_run_extra')}"
                       f"{alone('worst_first_run_extra_alone_s', '+{:.1f} s')})"},
            {"what": "compile memory above the run's (the helper's included), worst path",
             "result": f"+{summary['worst_compile_mb']:.0f} MB (target <= "
                       f"{targets['compile_mb']:g} MB: {verdict('compile_memory')}"
                       f"{alone('worst_compile_alone_mb', '+{:.0f} MB')})"}]

if __name__ == "__main__":
    sys.exit(main())
