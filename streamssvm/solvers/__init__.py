"""Solvers: they see only the objective's oracle (evaluate, hessp, hess_diag)."""

from .common import ConvergenceWarning, SolverResult
from .newton import newton
from .tron import tron

SOLVERS = {"tron": tron, "newton": newton}

__all__ = ["SOLVERS", "ConvergenceWarning", "SolverResult", "newton", "tron"]
