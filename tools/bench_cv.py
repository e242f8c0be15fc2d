"""Benchmark of choosing lambda (and sigma) by cross-validation, side by side in one run.

On one training file (default bench-data/news20.train.svm, made by tools/make_news20.py):

  (a) our 5-fold squared-hinge path (``cross_validate``, default lambda grid: factors of 2
      from where the model is trivial, on LIBLINEAR's C grid) against LIBLINEAR's
      ``-s 2 -C -v 5`` (its warm-started search over C, from the same rows as a matrix),
      ours with our default tol and with LIBLINEAR's own stopping rule (eps 0.01 scaled by
      min(#pos, #neg) / n): seconds and their ratio, the best lambda against LIBLINEAR's
      best C (lambda = 1 / (C n)) in grid steps of 2, both CV accuracies;
  (b) our psi_G lambda x sigma path (the default sigmas 2^1 .. 2^-5) on the same store:
      seconds, fits, passes, the best point;
  (c) with --ooc STORE, the psi_G path out of core (``--ooc-max-lams`` points at each of
      ``--ooc-sigmas``): in a child under tools/bin/run-capped --cap-mb after evicting
      STORE from the page cache (the store should be >= 4x the cap; its ratio is
      recorded): seconds, the folds' passes and the store's, peak memory; with the folds in
      lockstep (each pass of the store serving every fold) and one after the other, side by
      side, with the ratios.

Prints the figures and writes them as JSON (tools/bench_output.py). --quick runs every part
on the shipped a9a with a short grid, to check the tool end to end.

Example:
    python tools/bench_cv.py --train bench-data/news20.train.svm \\
        --ooc bench-data/synth-2G.h5 --cap-mb 500
    python tools/bench_cv.py --quick
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(TOOLS))
sys.path.insert(0, TOOLS)

import bench_output  # noqa: E402
from tool_args import BIN, REPO_ROOT, existing_file, existing_store, repo_env  # noqa: E402

from streamssvm import Store, convert_svmlight, cross_validate  # noqa: E402
from streamssvm.cli import _width_list  # noqa: E402
from streamssvm.datasets import a9a_paths  # noqa: E402

DEFAULT_TRAIN = os.path.join(REPO_ROOT, "bench-data", "news20.train.svm")
LIBLINEAR_RULE = dict(tol=0.01, liblinear_tol=True)


def liblinear_search(store, folds):
    """LIBLINEAR's ``-s 2 -C -v folds`` on the store's rows: (best C, CV accuracy, seconds)."""
    from liblinear.liblinearutil import train

    with Store(store) as source:
        X, labels = source.read_rows(0, source.n_samples)
    y = np.where(labels > 0, 1.0, -1.0)
    start = time.perf_counter()
    best_c, _, rate = train(y, X, f"-s 2 -C -v {folds} -q")
    return best_c, rate, time.perf_counter() - start


def ours(store, folds, **options):
    """``cross_validate`` on the store without the refit: the result and its seconds."""
    start = time.perf_counter()
    result = cross_validate(store, folds=folds, refit=False, progress=False, **options)
    return result, time.perf_counter() - start


def path_figures(result, seconds):
    return dict(seconds=seconds, fits=int((result.passes >= 0).sum()),
                passes=int(result.passes[result.passes >= 0].sum()), best_lam=result.best_lam,
                best_sigma=result.best_sigma, best_accuracy=result.best_accuracy,
                best_std=result.best_std, lams=result.lams.tolist(),
                sigmas=list(result.sigmas),
                mean_accuracy=[[None if math.isnan(v) else float(v) for v in row]
                               for row in result.mean_accuracy])


def ooc_path(store, cap_mb, folds, options):
    """The path on ``store`` in a capped child after evicting it; its figures."""
    subprocess.run([sys.executable, os.path.join(BIN, "evict"), store], check=True)
    code = ("import json, sys, time; from streamssvm import cross_validate; "
            "s = time.perf_counter(); "
            f"r = cross_validate({store!r}, folds={folds}, refit=False, progress=False, "
            f"**{options!r}); "
            "print(json.dumps(dict(seconds=time.perf_counter() - s, "
            "passes=int(r.passes[r.passes >= 0].sum()), fits=int((r.passes >= 0).sum()), "
            "data_passes=r.data_passes, best_lam=r.best_lam, best_sigma=r.best_sigma, "
            "best_accuracy=r.best_accuracy, accuracy=r.to_json()['accuracy'])))")
    out = subprocess.run([os.path.join(BIN, "run-capped"), str(cap_mb), sys.executable, "-c",
                          code], env=repo_env(), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    peak = [p.split("=")[1] for p in out.stderr.split() if p.startswith("peak_mb=")]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    size_mb = os.path.getsize(store) / 2 ** 20
    return dict(figures, cap_mb=cap_mb, store_mb=size_mb, store_over_cap=size_mb / cap_mb,
                peak_mb=float(peak[0]) if peak else None)


def ooc_paths(store, cap_mb, folds, options):
    """:func:`ooc_path` with the folds in lockstep and one after the other, side by side:
    both figures, the ratio of their times, and the shared passes of the store over the
    folds' training passes (a lower bound of the store's passes one after the other, which
    also reads it to score each fold)."""
    together = ooc_path(store, cap_mb, folds, options)
    alone = ooc_path(store, cap_mb, folds, dict(options, lockstep=False))
    if together["accuracy"] != alone["accuracy"]:
        raise RuntimeError("the folds in lockstep and one after the other scored differently")
    return dict(lockstep=together, one_after_the_other=alone,
                time_ratio=together["seconds"] / alone["seconds"],
                store_passes_ratio=together["data_passes"] / alone["passes"])


def parts_of(text):
    """``text`` as a set of the parts a, b, c."""
    if not text or set(text) - set("abc"):
        raise argparse.ArgumentTypeError(f"{text!r}: give some of a, b, c (e.g. ac)")
    return set(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=existing_file,
                    help="svmlight training file (default bench-data/news20.train.svm)")
    ap.add_argument("--folds", type=int, default=5, help="folds (default %(default)s)")
    ap.add_argument("--ooc", type=existing_store, metavar="STORE",
                    help="a store (>= 4x --cap-mb) for the out-of-core psi_G path")
    ap.add_argument("--cap-mb", type=int, default=500, help="memory cap of (c) in MB")
    ap.add_argument("--ooc-max-lams", type=int, default=8,
                    help="points of (c)'s lambda grid at each sigma (default %(default)s)")
    ap.add_argument("--ooc-sigmas", type=_width_list, metavar="S1,S2,...",
                    help="sigmas of (c), decreasing (default: the path's default sigmas)")
    ap.add_argument("--parts", type=parts_of, default="abc",
                    help="which of (a), (b), (c) to run, e.g. c (default abc)")
    ap.add_argument("--quick", action="store_true",
                    help="the shipped a9a and short grids: check that the tool runs")
    ap.add_argument("--output", help="JSON file (default benchmarks/cv.json)")
    args = ap.parse_args(argv)
    train = a9a_paths()[0] if args.quick else args.train or DEFAULT_TRAIN
    if not os.path.isfile(train):
        ap.error(f"no training file {train}: make it with tools/make_news20.py, or give --train")
    short = dict(max_lams=6) if args.quick else {}
    with tempfile.TemporaryDirectory() as folder:
        store = os.path.join(folder, "train.h5")
        convert_svmlight(train, store, value_dtype="float64", progress=False)
        with Store(store) as source:
            n = source.n_samples
        figures = dict(data=os.path.basename(train), n_samples=n, folds=args.folds)
        print(f"{figures['data']}: {n:,} rows, {args.folds} folds")
        if "a" in args.parts:
            best_c, rate, liblinear_seconds = liblinear_search(store, args.folds)
            figures["liblinear"] = dict(best_C=best_c, best_lam=1 / (best_c * n),
                                        accuracy=rate, seconds=liblinear_seconds)
            print(f"  LIBLINEAR -s 2 -C -v {args.folds}: best C {best_c:g} (lambda "
                  f"{1 / (best_c * n):.4g}), accuracy {rate:.5f}, {liblinear_seconds:.2f} s")
            for label, rule in (("default tol", {}), ("LIBLINEAR's rule", LIBLINEAR_RULE)):
                result, seconds = ours(store, args.folds, loss="squared_hinge", **rule, **short)
                steps = math.log2(result.best_lam * best_c * n)
                figures[f"squared_hinge, {label}"] = dict(
                    path_figures(result, seconds), time_ratio=seconds / liblinear_seconds,
                    grid_steps_from_liblinear=steps)
                print(f"  ours, squared hinge, {label}: best lambda {result.best_lam:.4g} "
                      f"({steps:+.2f} steps of 2 from LIBLINEAR's), accuracy "
                      f"{result.best_accuracy:.5f}, {seconds:.2f} s = "
                      f"{seconds / liblinear_seconds:.2f}x LIBLINEAR's")
        psi_g = dict(loss="psi_g", **short)
        if args.quick:
            psi_g["sigmas"] = (0.5, 0.125)
        if "b" in args.parts:
            result, seconds = ours(store, args.folds, **psi_g)
            figures["psi_g path"] = path_figures(result, seconds)
            print(f"  ours, psi_G lambda x sigma: best lambda {result.best_lam:.4g} sigma "
                  f"{result.best_sigma:g}, accuracy {result.best_accuracy:.5f}, "
                  f"{figures['psi_g path']['fits']} fits, {figures['psi_g path']['passes']} "
                  f"passes, {seconds:.2f} s")
        ooc = args.ooc or (store if args.quick else None)
        if ooc and "c" in args.parts:
            options = dict(psi_g, max_lams=args.ooc_max_lams)
            if args.ooc_sigmas:
                options["sigmas"] = args.ooc_sigmas
            figures["psi_g path out of core"] = f = ooc_paths(ooc, args.cap_mb, args.folds,
                                                              options)
            for label, run in (("lockstep", f["lockstep"]),
                               ("one after the other", f["one_after_the_other"])):
                print(f"  out of core, folds {label} ({run['store_mb']:.0f} MB store = "
                      f"{run['store_over_cap']:.1f}x the {args.cap_mb} MB cap): "
                      f"{run['seconds']:.2f} s, {run['fits']} fits, {run['passes']} "
                      f"training passes of the folds, "
                      f"{run['data_passes'] or '-'} shared passes of the store, "
                      f"peak {run['peak_mb']} MB, best lambda {run['best_lam']:.4g} sigma "
                      f"{run['best_sigma']:g}")
            print(f"  lockstep / one after the other: {f['time_ratio']:.2f}x the time; "
                  f"shared passes / the folds' training passes: "
                  f"{f['store_passes_ratio']:.2f}")
    path = bench_output.write("cv", figures, args.output)
    print(f"wrote {path}")
    return 0


def headline(figures):
    """The README's rows: the squared-hinge path against LIBLINEAR's -C (each stopping rule
    of (a) that ran), and (c)'s folds in lockstep against one after the other."""
    rows = []
    for label in ("LIBLINEAR's rule", "default tol"):
        run = figures.get(f"squared_hinge, {label}")
        if run is not None:
            rows.append({"what": f"{figures['folds']}-fold squared-hinge lambda path, "
                                 f"{label}, against LIBLINEAR -s 2 -C -v {figures['folds']} "
                                 f"({figures['data']})",
                         "result": f"{run['time_ratio']:.2f}x LIBLINEAR's time; best lambda "
                                   f"{run['grid_steps_from_liblinear']:+.0f} grid steps from "
                                   f"its best C"})
    ooc = figures.get("psi_g path out of core")
    if ooc is not None:
        run = ooc["lockstep"]
        rows.append({"what": f"psi_G path out of core ({run['store_over_cap']:.1f}x the cap), "
                             f"folds in lockstep against one after the other",
                     "result": f"{ooc['time_ratio']:.2f}x the time"})
    return rows


if __name__ == "__main__":
    sys.exit(main())
