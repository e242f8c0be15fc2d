"""streamssvm: out-of-core smooth-hinge SVMs on HDF5 stores of CSR blocks.

Objective (Luo, Qiao & Zhang, "Learning with Smooth Hinge Losses")::

    L(w) = lambda / 2 ||w||^2 + (1 / n) sum_i psi(y_i w . x_i)
"""

import os

# numba's OpenMP workers spin between parallel regions, 300,000 times by default: on a busy
# machine the spinning threads starved the ones doing work (30x slower kernels at load 6 on
# 2 cores). Not spinning at all (OMP_WAIT_POLICY=passive) wakes them from sleep at every
# kernel call, about 100 us here: a9a's TRON took 80 ms so, 50 ms with 1000 spins, which
# at load 6 were no slower than passive.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

from ._jit_cache import clear_stale_cache
from ._version import __version__

clear_stale_cache()

from .api import train_stream
from .calibration import calibrated
from .data import (InMemorySource, Store, StoreError, StoreWriter, SvmlightFormatError,
                   convert_svmlight)
from .errors import CheckpointError, FileFormatError, ModelFileError
from .losses import Loss, get_loss
from .model import Model
from .multiclass import train_one_vs_rest
from .online import OnlineTrainer
from .solvers import ConvergenceWarning

__all__ = ["CheckpointError", "ConvergenceWarning", "FileFormatError", "InMemorySource", "Loss",
           "Model", "ModelFileError", "OnlineTrainer", "SmoothSVC", "Store", "StoreError",
           "StoreWriter", "SvmlightFormatError", "calibrated", "convert_svmlight", "get_loss",
           "train_one_vs_rest", "train_stream", "__version__"]


def __getattr__(name):
    # scikit-learn's import costs about a second: only when the estimator is asked for
    if name == "SmoothSVC":
        from .estimator import SmoothSVC

        return SmoothSVC
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
