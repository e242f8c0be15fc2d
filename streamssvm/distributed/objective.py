"""The objective's oracle computed by Dask workers, for the same solvers as locally."""

import numpy as np

from .. import kernels
from ..objective.problem import NO_DASK_ROW_WEIGHTS, PointState, Problem
from ..objective.smooth_svm import check_cache_curved
from ..objective.system import NewtonSystem
from .stores import DaskStores


class DaskObjective(Problem):
    """L(w) of :class:`~streamssvm.objective.SmoothSVMObjective` over stores held by Dask
    workers: the same oracle (:class:`~streamssvm.objective.Oracle`: ``evaluate``,
    ``hessp``, ``hess_diag``, ``value_on_segment``, ...) and the same calls cached, so TRON
    and Newton run on it unchanged. It shares the local objective's
    :class:`~streamssvm.objective.Problem` (checks, L from the sums, the gradient without
    the L2 term), not its data plan: the workers hold and read the data, and the
    stochastic solvers, which read the blocks themselves, do not run on it.

    Every call runs on all shards of ``source`` at once; each worker keeps its shard's
    margins, curvature and curved rows of every point alive on the driver (a PointState's
    ``margins`` is a :class:`~streamssvm.distributed.stores.PointHandle`, its
    ``curvature`` None), and returns its shard's unscaled sums, which are added across
    workers and then scaled and regularised here exactly as locally.

    Parameters
    ----------
    source : DaskStores
    loss, lam, sigma, fit_intercept, intercept_scaling
        As for SmoothSVMObjective.
    n_threads : int, optional
        Kernel threads on each worker (default: numba's thread count there).
    progress : bool
        Ignored: blocks are read on the workers (the solvers' bars still show iterations).
    cache_curved : bool or "auto"
        Workers keep the rows with curvature for ``hessp`` ("auto": yes, as for stores).
    cache_bytes : int, optional
        Memory for that copy on each worker, per shard (default a quarter of what the
        worker may still use).
    hold : bool or "auto"
        Workers hold their shard by rows and columns (as SmoothSVMObjective's ``hold``,
        within ``cache_bytes``).
    sample_weight : None
        Row weights are not supported here (a ValueError if given).

    Attributes
    ----------
    passes, cached_sweeps : int
        As for SmoothSVMObjective: a ``hessp`` counts as a pass when any shard read its
        blocks.
    recomputed_points : int
        Shard states recomputed on a worker that did not hold them (after a lost worker).
    """

    def __init__(self, source, loss, lam, sigma=None, fit_intercept=False,
                 intercept_scaling=1.0, n_threads=None, progress=False, cache_curved="auto",
                 cache_bytes=None, sample_weight=None, hold="auto"):
        if not isinstance(source, DaskStores):
            raise TypeError(f"DaskObjective needs DaskStores, got {type(source).__name__}")
        if sample_weight is not None:
            raise ValueError(NO_DASK_ROW_WEIGHTS)
        super().__init__(source, loss, lam, sigma, fit_intercept, intercept_scaling)
        check_cache_curved(cache_curved)
        self.n_threads = 1  # the driver's vector operations
        self.passes, self.cached_sweeps = 0, 0
        self._summed = np.zeros((1, self.n_variables))  # the workers' sum, as one scatter row
        self._config = dict(loss=self.loss, lam=self.lam, fit_intercept=fit_intercept,
                            intercept_scaling=intercept_scaling, n_threads=n_threads,
                            cache_curved=True if cache_curved == "auto" else cache_curved,
                            cache_bytes=cache_bytes, hold=hold)
        self._id = source.register(self)
        self.recomputed_points = 0

    def _run(self, method, points=(), args=(), vector=False):
        loss, summed, counts = self.source.run(method, self._id, self._config, points, args,
                                               vector)
        self.recomputed_points += counts["recomputed"]
        if method in ("evaluate", "value"):
            self.passes += 1
        elif method in ("hessp", "hess_diag"):
            self.passes += counts["streamed"] > 0
            self.cached_sweeps += counts["streamed"] == 0
        return loss, summed

    def _scaled(self, summed, x):
        """lam * x (intercept excluded) + summed / n, as the local objective merges."""
        self._summed[0] = summed
        out = np.empty(self.n_variables)
        kernels.merge_parts(self._summed, x, *self._combination(self.lam), out)
        return out

    def evaluate(self, w, curved=True):
        """L(w), its gradient, and the point's state kept on the workers (``curved``: as
        :meth:`SmoothSVMObjective.evaluate`'s, on each shard)."""
        w = self._check(w)
        handle = self.source.new_point(w)
        loss, summed = self._run("evaluate", [handle], (curved,), vector=True)
        return PointState(w, self._total(w, loss), self._scaled(summed, w), handle, None)

    def value(self, w):
        w = self._check(w)
        return self._total(w, self._run("value", args=(w,))[0])

    def _segment_loss(self, state, trial, alpha):
        return self._run("value_on_segment", [state.margins, trial.margins], (float(alpha),))[0]

    def newton_system(self, state):
        """The system H s = -g at ``state`` in the order of the variables."""
        return NewtonSystem(self, state)

    def hessp_quad(self, state, s):
        s = self._check(s)
        hs = self._scaled(self._run("hessp", [state.margins], (s,), vector=True)[1], s)
        return hs, float(s @ hs)

    def hessp_reads_file(self, state):
        """A product is a round trip to the workers, which may read their stores."""
        return True

    def hess_diag(self, state):
        summed = self._run("hess_diag", [state.margins], vector=True)[1]
        return self._scaled(summed, np.broadcast_to(1.0, self.n_variables))

    def subsampled(self, state, fraction, rng):
        """Not across workers: the sampled rows would have to be drawn on each shard."""
        raise ValueError("a subsampled Hessian (hessian_sample) is not supported across Dask "
                         "workers")

    def _max_row_norm2(self):
        """Not across workers (the shards' sums add, a maximum does not): L_max serves the
        stochastic solvers' steps, which do not run on the workers."""
        raise ValueError("the smoothness constant L_max (the stochastic solvers' step size) "
                         "is not computed across Dask workers")
