"""Solvers: they see only the objective's oracle (evaluate, hessp, hess_diag, and for the
stochastic ones shuffled_blocks). Second order: TRON, line-search Newton, L-BFGS; full
gradient: GD, AGD; stochastic (``max_iter`` counts epochs): SGD, Pegasos, SVRG, SAGA, SDCA."""

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
SHARP = 8.0  # psi'' above this (psi_G at sigma < 2^-4.3, psi_M < 2^-4): near the hinge


def choose_solver(loss, fit_intercept=False, weighted=False, distributed=False):
    """The solver for ``solver="auto"``: SDCA (dual coordinate ascent, LIBLINEAR's default
    for the L2-SVM) for a loss with a conjugate whose psi' has a kink or a sharp bend (the
    hinge, the squared hinge, the smooth hinges at small sigma), where Newton methods need
    many iterations; when SDCA cannot run (an intercept, row weights, Dask workers),
    SGD for the hinge (no curvature at all) and line-search Newton for the rest; TRON
    for a loss that is not convex (its trust region copes with negative curvature)."""
    if not loss.convex:
        return "tron"
    if fit_intercept or weighted or distributed:
        return "sgd" if loss.name == "hinge" and not (weighted or distributed) else "newton"
    return "sdca" if not loss.smooth or loss.lipschitz >= SHARP else "newton"


__all__ = ["SOLVERS", "STOCHASTIC", "ConvergenceWarning", "choose_solver", "SolverResult", "agd", "gd", "lbfgs",
           "newton", "pegasos", "saga", "sdca", "sgd", "svrg", "tron"]
