"""The regularised risk over a block source, as an oracle for the solvers."""

from .oracle import Oracle
from .smooth_svm import PointState, SmoothSVMObjective

__all__ = ["Oracle", "PointState", "SmoothSVMObjective"]
