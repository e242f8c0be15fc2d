"""Solvers: they see only the objective's oracle (evaluate, newton_system, hessp, hess_diag,
and for the stochastic ones shuffled_blocks). Second order: TRON, line-search Newton, L-BFGS; full
gradient: GD, AGD; stochastic (``max_iter`` counts epochs): SGD, Pegasos, SVRG, SAGA, SDCA."""

import math

from .agd import agd
from .common import ConvergenceWarning, SolverResult
from .gd import gd
from .lbfgs import lbfgs
from .newton import newton
from .saga import saga
from .sdca import sdca
from .sgd import pegasos, sgd
from .svrg import svrg
from .tron import tron

SOLVERS = {"tron": tron, "newton": newton, "lbfgs": lbfgs, "gd": gd, "agd": agd, "sgd": sgd,
           "pegasos": pegasos, "svrg": svrg, "saga": saga, "sdca": sdca}
STOCHASTIC = ("sgd", "pegasos", "svrg", "saga", "sdca")
HESSIAN_PRODUCTS = ("tron", "newton")  # the solvers that call hessp / hess_diag


# solver="auto": SDCA when n_features >= n_samples * min(WIDE, CURVED / sqrt(sup psi'')),
# else Newton (the sharper the loss, the narrower the data SDCA wins on; the hinge,
# always). tools/bench_auto.py, 108 runs to eps 0.01 (LIBLINEAR's rule): four losses,
# lambda 1e-4 to 1e-6, on a9a, w8a, ijcnn1 (n_features / n_samples <= 0.006), news20
# (105) and news20 cut to its 500 to 100,000 most frequent words (0.044 to 8.8). Once
# SDCA evaluated beside its epochs and wide data took its products by columns (11-26 c),
# this rule picked the slower solver in 11 of 107 runs (one was left out: it timed a
# compilation), by at most 1.9x and 4% on average; the rule before, 5 / sup psi'', in 23,
# by up to 2.1x and 11% on average. Choosing by the loss alone (SDCA for the squared
# hinge and psi_G at 2^-6) had picked the slower in 53 runs, by up to 219x, on tall data.
WIDE = 10.0
CURVED = 0.5


def choose_solver(loss, n_samples, n_features, fit_intercept=False, weighted=False,
                  distributed=False):
    """The solver for ``solver="auto"``.

    Dual coordinate ascent (SDCA; LIBLINEAR's default for the L2-SVM) pays when the data
    is wide: it has one variable per row and its steps touch only a row, and near the
    hinge (a kink or a sharp bend in psi') Newton needs many iterations. Line-search
    Newton pays on tall data, where its Hessian has few directions. When SDCA cannot run
    (an intercept, row weights, Dask workers), or converges slowly (psi'' unbounded, as
    the exponential loss's): Newton, or SGD for the hinge (whose kink leaves Newton no
    gradient), which takes an intercept but neither row weights nor Dask workers: a
    ValueError then. TRON for a loss that is not convex (its trust region copes with
    negative curvature).
    """
    if not loss.convex:
        return "tron"
    if fit_intercept or weighted or distributed:
        if not loss.kinked:
            return "newton"
        if not (weighted or distributed):
            return "sgd"
        raise ValueError(f"the {loss.name} loss with {'row weights' if weighted else 'Dask'}: "
                         f"only sgd, pegasos and sdca take its kink, and none takes "
                         f"{'them' if weighted else 'Dask workers'}; use a smooth hinge "
                         f"(psi_g, psi_m)")
    if loss.smooth and not math.isfinite(loss.lipschitz):  # psi'' unbounded (exponential):
        return "newton"  # SDCA's steps crawl (a9a: unconverged after 1.6 s, Newton 0.1 s)
    wide = min(WIDE, CURVED / math.sqrt(loss.lipschitz))
    return "sdca" if n_features >= wide * n_samples else "newton"


__all__ = ["HESSIAN_PRODUCTS", "SOLVERS", "STOCHASTIC", "ConvergenceWarning", "choose_solver",
           "SolverResult", "agd", "gd", "lbfgs", "newton", "pegasos", "saga", "sdca", "sgd",
           "svrg", "tron"]
