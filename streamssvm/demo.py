"""The main job on the shipped data: convert a9a to stores, train psi_G, test."""

import os
import sys
import tempfile
import time

from ._ahead import compiling_ahead
from ._atomic import check_output
from ._jit_cache import watching_compiles
from .api import train_stream
from .data import Store, convert_svmlight
from .datasets import A9A_SHAPE, a9a_paths
from .losses import get_loss
from .solvers.auto import choose_solver


def run_demo(workdir=None, loss="psi_g", sigma=2.0 ** -3, lam=1e-5, progress=True, out=sys.stdout,
             overwrite=False):
    """Convert the shipped a9a train/test files, train, print the test accuracy.

    Returns the trained Model. Stores go to ``workdir`` (created if missing; a temporary
    folder by default); stores already there are refused unless ``overwrite``.
    """
    train_txt, test_txt = a9a_paths()
    with tempfile.TemporaryDirectory() as tmp:
        if workdir and not os.path.exists(workdir):
            os.makedirs(workdir)
        workdir = workdir or tmp
        train_h5 = os.path.join(workdir, "a9a.h5")
        test_h5 = os.path.join(workdir, "a9a.t.h5")
        for path in (train_h5, test_h5):  # both, before either is written
            check_output(path, overwrite)
        # one helper for the whole demo: the training's kernels, on the other core while
        # this one converts (streamssvm._ahead); the conversions start no helper of their own
        solver = choose_solver(get_loss(loss, sigma), *A9A_SHAPE)
        with compiling_ahead(f"store:{solver}"):
            convert_svmlight(train_txt, train_h5, overwrite=overwrite, progress=progress)
            convert_svmlight(test_txt, test_h5, like=train_h5, overwrite=overwrite,
                             progress=progress)
            with Store(train_h5) as store:
                n_neg, n_pos = store.label_counts()
                print(f"store {train_h5}: {store.n_samples} rows x {store.n_features} "
                      f"features, {store.nnz} nonzeros, {store.n_blocks} blocks, labels -1: "
                      f"{n_neg}, +1: {n_pos}", file=out)
            start = time.perf_counter()
            with watching_compiles() as compiles:
                model = train_stream(train_h5, loss=loss, sigma=sigma, lam=lam, progress=progress)
            seconds = time.perf_counter() - start
            compiling = (f" ({compiles.seconds:.2f} s of it compiling kernels)"
                         if compiles.kernels else "")
            p = model.params
            print(f"trained {loss} (sigma={sigma:g}, lambda={lam:g}) by {p['solver']}: "
                  f"{p['n_iter']} iterations, {p['passes']} passes, {seconds:.2f} s{compiling}, "
                  f"objective {p['objective']:.6f}",
                  file=out)
            print(f"train accuracy {model.score(train_h5):.4f}", file=out)
            print(f"test accuracy  {model.score(test_h5):.4f}", file=out)
    return model
