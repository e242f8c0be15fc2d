"""Solvers: they see only the objective's oracle (evaluate, hessp, hess_diag)."""

from .common import ConvergenceWarning, SolverResult
from .tron import tron

SOLVERS = {"tron": tron}

__all__ = ["SOLVERS", "ConvergenceWarning", "SolverResult", "tron"]
