"""What runs on a Dask worker: the shards it holds, and the points evaluated on them.

A shard is a run of blocks of one or several stores (a :class:`~streamssvm.data.StoreSet`
the worker opens by path). For each shard the worker keeps, between the driver's calls,
the state of every evaluated point still alive on the driver (margins, curvature, and the
rows with curvature): ``hessp`` and ``value_on_segment`` reuse them as the local objective
does. The driver names points by an integer id and sends their ``w`` with every call that
uses them, so a worker that does not hold a point (the shard was moved to it after a
worker was lost) recomputes it by one pass over the shard.
"""

import threading
from dataclasses import replace

import numpy as np
from distributed import get_worker

from ..data import StoreError, StoreSet
from ..objective import SmoothSVMObjective

_SHARDS = {}  # (worker address, session, shard id) -> _Shard
_LOCK = threading.Lock()


class ShardObjective(SmoothSVMObjective):
    """The data part of the objective on one shard, unscaled: ``evaluate(w).f`` is
    sum_i psi(y_i x_i.w) and its ``grad`` sum_i psi'(.) y_i x_i, ``hessp`` gives X^T D X s,
    ``hess_diag`` the diagonal of X^T D X, ``value`` and ``value_on_segment`` sums of psi.
    The driver adds the shards' sums, then scales and regularises them once."""

    def _combination(self, lam):
        return 0.0, 1.0, False

    def _total(self, w, loss_sum):
        return loss_sum


class _Shard:
    """A shard's source, its objectives (one per loss and sigma) and its points."""

    def __init__(self, spec):
        self.source = StoreSet(spec["pieces"])
        seen = self.source.fingerprint()
        for path, expected in spec["fingerprint"].items():
            if seen[path] != tuple(expected):
                self.source.close()
                raise StoreError(
                    f"{path} on worker {get_worker().address} is not the file the driver "
                    f"opened (rows, features, nonzeros, blocks, created: {seen[path]} here, "
                    f"{tuple(expected)} there); the stores must be on a filesystem that the "
                    f"driver and every worker see under the same path")
        self.objectives = {}  # objective id -> ShardObjective
        self.points = {}  # point id -> PointState without its gradient
        self.recomputed = 0

    def objective(self, key, config):
        if key not in self.objectives:
            self.objectives[key] = ShardObjective(self.source, **config)
        return self.objectives[key]

    def point(self, objective, point_id, w):
        """The state of point ``point_id`` at ``w``, evaluated now if not held."""
        if point_id not in self.points:
            self.points[point_id] = replace(objective.evaluate(w), grad=None)
            self.recomputed += 1
        return self.points[point_id]

    def release(self, point_ids, objective_ids):
        for key in point_ids:
            self.points.pop(key, None)
        for key in objective_ids:
            self.objectives.pop(key, None)

    def close(self):
        self.source.close()


def _shard(session, shard_id, spec):
    key = (get_worker().address, session, shard_id)
    with _LOCK:
        if key not in _SHARDS:
            _SHARDS[key] = _Shard(spec)
        return _SHARDS[key]


def run_shard(session, shard_id, spec, objective_id, config, release, method, points, args):
    """One oracle call of the driver's objective on one shard.

    Parameters
    ----------
    session : str
        The driver's :class:`~streamssvm.distributed.DaskStores` session.
    shard_id : int
    spec : dict
        ``pieces`` (the shard's store pieces) and ``fingerprint`` (the files the driver
        opened).
    objective_id : int
    config : dict
        Keyword arguments of :class:`ShardObjective` (loss, lam, ...).
    release : (list of int, list of int)
        Points and objectives the driver no longer holds.
    method : str
        ``"evaluate"`` (the new point ``points[0]``, with ``args``), or a method of the
        objective called with the states of ``points`` then ``args``.
    points : list of (int, array of shape (n_variables,))
        ``(point id, w)`` of the points the call uses.
    args : tuple

    Returns
    -------
    (float, array of shape (n_variables,) or None, dict)
        The shard's sum of losses (0 for a vector call), its d-vector (None for a scalar
        call), and counters: ``streamed`` (1 if the call read the shard's blocks),
        ``recomputed`` (points recomputed because the worker did not hold them).
    """
    shard = _shard(session, shard_id, spec)
    shard.release(*release)
    objective = shard.objective(objective_id, config)
    recomputed = shard.recomputed
    if method == "evaluate":
        (point_id, w), = points
        state = objective.evaluate(w, *args)
        shard.points[point_id] = replace(state, grad=None)
        out, streamed = (state.f, state.grad), 1
    else:
        states = [shard.point(objective, point_id, w) for point_id, w in points]
        passes = objective.passes
        value = getattr(objective, method)(*states, *args)
        out = (0.0, value) if isinstance(value, np.ndarray) else (value, None)
        streamed = int(objective.passes > passes)
    return (*out, dict(streamed=streamed, recomputed=shard.recomputed - recomputed))


def add_partials(a, b):
    """The sum of two shards' results of :func:`run_shard` (new arrays: the inputs may be
    needed again if a worker is lost and the sum recomputed)."""
    vector = None if a[1] is None else a[1] + b[1]
    return a[0] + b[0], vector, {k: a[2][k] + b[2][k] for k in a[2]}


def forget_session(session):
    """Close and drop this worker's shards of ``session`` (run by ``client.run``)."""
    with _LOCK:
        keys = [k for k in _SHARDS if k[1] == session]
        shards = [_SHARDS.pop(k) for k in keys]
    for shard in shards:
        shard.close()
    return len(shards)
