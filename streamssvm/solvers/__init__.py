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

__all__ = ["SOLVERS", "STOCHASTIC", "ConvergenceWarning", "SolverResult", "agd", "gd", "lbfgs",
           "newton", "pegasos", "saga", "sdca", "sgd", "svrg", "tron"]
