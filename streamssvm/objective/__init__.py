"""The regularised risk over a block source, as an oracle for the solvers."""

from .oracle import Oracle
from .problem import PointState, Problem
from .smooth_svm import SmoothSVMObjective

__all__ = ["Oracle", "PointState", "Problem", "SmoothSVMObjective"]
