"""Training across Dask workers: each reads its own blocks of the stores, the driver runs
the same solvers on the summed oracle (docs/DISTRIBUTED.md). Needs ``dask[distributed]``
(``pip install 'streamssvm[dask]'``)."""

try:
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("streamssvm.distributed needs dask[distributed]: "
                      "pip install 'streamssvm[dask]'") from exc

from .objective import DaskObjective
from .stores import DaskStores, PointHandle, WorkerLostError
from .train import train_distributed

__all__ = ["DaskObjective", "DaskStores", "PointHandle", "WorkerLostError",
           "train_distributed"]
