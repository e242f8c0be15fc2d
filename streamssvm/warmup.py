"""Compile the kernels of the common paths into numba's disk cache, ahead of a first run.

Each path runs once on the shipped a9a data, so that it reaches the kernels a real run
reaches (which ones depend on the data: lean blocks, rows with curvature): converting
svmlight text into a store; training by each solver of ``solvers`` on the store (the
stochastic ones for a few epochs: every epoch runs the same kernels); predicting
from the store; training the default solver on a scipy matrix (float64 values: kernels of
their own); and converting, training and predicting again on a9a's first
:data:`SMALL_ROWS` rows, whose work is small enough for the serial twins of the parallel
kernels (``kernels._twins``), which the whole data set does not run. The whole data set's
paths compile the parallel twins, which a first run leaves to the serial ones until they
pay (``kernels._twins.COMPILE_PARALLEL``). A path whose kernels are all cached compiles
nothing.
"""

import io
import itertools
import lzma
import multiprocessing
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

from . import _ahead
from ._jit_cache import watching_compiles
from .api import train_stream
from .data import convert_svmlight
from .data.svmlight import parse_svmlight_bytes
from .datasets import a9a_paths
from .kernels import _twins
from .solvers import SOLVERS, STOCHASTIC, ConvergenceWarning

# solver="auto" takes Newton or SDCA; TRON is the paper's
DEFAULT_SOLVERS = ("newton", "sdca", "tron")
EPOCHS = 3
SMALL_ROWS = 1000  # rows and nonzeros below the kernels' serial threshold (kernels._twins)


def check_solvers(solvers):
    """Refuse a name that is not a solver, saying which are."""
    unknown = [s for s in solvers if s not in SOLVERS]
    if unknown:
        raise ValueError(f"unknown solver {unknown[0]!r}: the solvers are {', '.join(SOLVERS)}")
    return solvers


def _path(name, run, out):
    """Run one path; print and return ``(name, kernels compiled, seconds compiling,
    seconds in all)``."""
    start = time.perf_counter()
    with watching_compiles() as compiles, _twins.compiling_parallel():
        run()
    seconds = time.perf_counter() - start
    done = (f"compiled {len(compiles.kernels)} kernels in {compiles.seconds:.1f} s"
            if compiles.kernels else "all kernels cached")
    print(f"{name}: {done} ({seconds:.1f} s in all)", file=out, flush=True)
    return name, len(compiles.kernels), compiles.seconds, seconds


def _store_paths(solvers, out=sys.stdout, rows=None):
    """Convert, train by each of ``solvers`` on the store, predict; on a9a's first ``rows``
    rows if given (the paths then named with them)."""
    report = []
    size = "" if rows is None else f" ({rows:,} rows)"
    with tempfile.TemporaryDirectory() as tmp:
        text, store = a9a_paths()[0], os.path.join(tmp, "a9a.h5")
        if rows is not None:
            text = os.path.join(tmp, "small.svm")
            with lzma.open(a9a_paths()[0]) as fh, open(text, "wb") as small:
                small.writelines(itertools.islice(fh, rows))
        report.append(_path(f"convert{size}",
                            lambda: convert_svmlight(text, store, progress=False), out))
        models = {}
        for solver in solvers:
            def train(solver=solver):
                epochs = dict(max_iter=EPOCHS) if solver in STOCHASTIC else {}
                with warnings.catch_warnings():  # not run to converge
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    models[solver] = train_stream(store, solver=solver, progress=False,
                                                  **epochs)
            report.append(_path(f"train --solver {solver}{size}", train, out))
        if models:
            model = next(iter(models.values()))
            report.append(_path(f"predict{size}", lambda: model.predict(store), out))
    return report


def _matrix_path(out=sys.stdout):
    """Train the default solver on a9a as a scipy matrix."""
    with lzma.open(a9a_paths()[0]) as fh:
        X, y, _ = parse_svmlight_bytes(fh.read())
    return [_path("train on a scipy matrix", lambda: train_stream(X, y, progress=False), out)]


def run_warmup(solvers=DEFAULT_SOLVERS, jobs=2, out=sys.stdout):
    """Run each path (module docstring), printing one line each: the kernels it compiled
    and the time, or that all were cached. With ``jobs`` > 1 the matrix's path, then the
    small store's, run in a process of their own beside the others (the matrix's kernels
    are of float64 values, the store's of float32, the small store's the serial twins:
    they compile little in common; numba compiles in one thread). Returns
    ``[(path, kernels compiled, seconds compiling, seconds in all)]``. No helper of
    ``_ahead`` runs: warmup's own processes take the cores."""
    check_solvers(solvers)
    with _ahead.turned_off():
        return _run_paths(solvers, jobs, out)


def _run_paths(solvers, jobs, out):
    if jobs < 2:
        return (_store_paths(solvers, out) + _matrix_path(out)
                + _store_paths(solvers, out, SMALL_ROWS))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        # each prints to the standard output it inherits
        matrix = pool.submit(_matrix_path)
        small = pool.submit(_store_paths, solvers, rows=SMALL_ROWS)
        report = _store_paths(solvers, out) + matrix.result() + small.result()
    return report + _settle(solvers, out)


def _quiet_paths(solvers):
    """Every path, printing nothing."""
    quiet = io.StringIO()
    return (_store_paths(solvers, quiet) + _matrix_path(quiet)
            + _store_paths(solvers, quiet, SMALL_ROWS))


def _settle(solvers, out):
    """Every path again, quietly, in a new process (one that loads the kernels from the
    cache): a function's cached overloads are listed in one index file, which each process
    that adds one rewrites from its own reading, so of two processes adding overloads of one
    function at once the later write can drop the earlier one's. Run again, the paths
    compile what was dropped and load the rest. One line if anything compiled."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        report = pool.submit(_quiet_paths, solvers).result()
    kernels = sum(compiled for _, compiled, _, _ in report)
    if not kernels:
        return []
    seconds = sum(spent for _, _, spent, _ in report)
    print(f"again, what two processes' cache writes dropped: compiled {kernels} kernels in "
          f"{seconds:.1f} s", file=out, flush=True)
    return [("again", kernels, seconds, sum(total for *_, total in report))]
