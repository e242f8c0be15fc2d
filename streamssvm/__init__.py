"""streamssvm: out-of-core smooth-hinge SVMs on HDF5 stores of CSR blocks.

Objective (Luo, Qiao & Zhang, "Learning with Smooth Hinge Losses")::

    L(w) = lambda / 2 ||w||^2 + (1 / n) sum_i psi(y_i w . x_i)
"""

from ._version import __version__

from .api import train_stream
from .calibration import calibrated
from .data import (InMemorySource, Store, StoreError, StoreWriter, SvmlightFormatError,
                   convert_svmlight)
from .errors import CheckpointError, FileFormatError, ModelFileError
from .losses import Loss, get_loss
from .model import Model
from .multiclass import train_one_vs_rest
from .online import OnlineTrainer
from .selection import CVResult, cross_validate
from .solvers import ConvergenceWarning

__all__ = ["CVResult", "CheckpointError", "ConvergenceWarning", "FileFormatError",
           "InMemorySource", "Loss", "Model", "ModelFileError", "OnlineTrainer", "SmoothSVC",
           "SmoothSVCCV", "Store", "StoreError", "StoreWriter", "SvmlightFormatError",
           "calibrated", "convert_svmlight", "cross_validate", "get_loss", "train_one_vs_rest",
           "train_stream", "__version__"]


def __getattr__(name):
    # scikit-learn's import loads scipy's and its own modules: only when the estimator is
    # asked for
    if name in ("SmoothSVC", "SmoothSVCCV"):
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
