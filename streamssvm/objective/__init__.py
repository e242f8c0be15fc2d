"""The regularised risk over a block source, as an oracle for the solvers."""

from .smooth_svm import PointState, SmoothSVMObjective

__all__ = ["PointState", "SmoothSVMObjective"]
