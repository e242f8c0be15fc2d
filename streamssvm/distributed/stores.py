"""The driver's side of distributed training: stores held by Dask workers, shard by shard.

:class:`DaskStores` opens the stores on the driver for their metadata only, cuts their
blocks into one shard per worker (equal nonzeros) and gives each shard to a worker, which
opens the same files by path (a filesystem shared under the same paths is assumed). Its
:meth:`DaskStores.run` calls a method of the objective on every shard and sums the results:
the shards' d-vectors by a pairwise tree of additions on the workers, so the driver
receives one vector whatever the number of workers.

A worker lost during a call (its process killed, its machine gone) is noticed by polling
the scheduler while waiting: its shards go to the live worker holding the fewest, which
recomputes the points the call needs by re-evaluating them (their ``w`` is sent with every
call), and only those shards' parts of the call are done again. The sums are then the same
as without the loss. After ``max_recoveries`` such moves, or when no worker is left within
``worker_timeout`` seconds, :class:`WorkerLostError` is raised: never a silently wrong sum.
"""

import itertools
import time
import uuid
import weakref
from asyncio import CancelledError
from concurrent.futures import CancelledError as FutureCancelled

import numpy as np
from distributed import TimeoutError as DaskTimeoutError
from distributed import KilledWorker

from .._warn import warn
from ..data import StoreSet
from .worker import add_partials, forget_session, run_shard


class WorkerLostError(RuntimeError):
    """Dask workers were lost and their shards could not be moved to others."""


class _Lost(Exception):
    def __init__(self, workers):
        self.workers = workers


class PointHandle:
    """A point evaluated on the workers: its id there, and ``w`` to recompute it."""

    __slots__ = ("id", "w", "w_future", "__weakref__")

    def __init__(self, point_id, w):
        self.id, self.w, self.w_future = point_id, w, None  # scattered with its first call


class DaskStores(StoreSet):
    """Stores whose blocks Dask workers read, one shard per worker.

    A :class:`~streamssvm.data.StoreSet` on the driver (metadata, labels), whose oracle
    calls :class:`~streamssvm.distributed.DaskObjective` runs on the workers.

    Parameters
    ----------
    paths : str, path-like, or sequence of them (or of ``(path, first, stop)``)
        The stores, at paths every worker can open.
    client : distributed.Client
    n_shards : int, optional
        Shards to cut the blocks into (default: one per worker at the start).
    max_recoveries : int
        Shard moves after lost workers allowed in all (0: the first loss is an error).
    worker_timeout : float
        Seconds to wait for a worker to join when none is left (or at the start).
    poll_seconds : float
        How often the scheduler is asked, while waiting for a call, whether the shards'
        workers are alive.
    check : callable, optional
        Called with the stores opened on the driver, before the workers are asked (to
        refuse what does not fit them, e.g. a warm start of another width).

    Attributes
    ----------
    shard_specs : list of dict
        ``pieces`` and ``fingerprint`` of each shard (what its worker opens).
    owners : list of str
        The address of the worker holding each shard.
    recoveries : int
        Shards moved to another worker so far.
    """

    def __init__(self, paths, client, n_shards=None, max_recoveries=3, worker_timeout=60.0,
                 poll_seconds=0.25, check=None):
        super().__init__(paths)
        try:
            if check is not None:
                check(self)
            self.client = client
            self.max_recoveries = int(max_recoveries)
            self.worker_timeout = float(worker_timeout)
            self.poll_seconds = float(poll_seconds)
            workers = self._live_workers(wait=True)
            fingerprint = self.fingerprint()
            self.shard_specs = [
                dict(pieces=pieces, fingerprint={path: fingerprint[path] for path, _, _ in pieces})
                for pieces in self.shards(n_shards or len(workers))]
        except BaseException:
            StoreSet.close(self)
            raise
        self.owners = [workers[i % len(workers)] for i in range(len(self.shard_specs))]
        self.session = uuid.uuid4().hex
        self.recoveries = 0
        self._ids = itertools.count()
        self._released = ([], [])  # point ids, objective ids: sent with the next call

    def _live_workers(self, wait=False):
        """Addresses of the workers alive now (sorted); with ``wait``, waits up to
        ``worker_timeout`` for one if there is none."""
        workers = sorted(self.client.nthreads())
        if not workers and wait:
            try:
                self.client.wait_for_workers(1, timeout=self.worker_timeout)
            except (DaskTimeoutError, TimeoutError):
                raise WorkerLostError(f"no Dask worker joined the scheduler within "
                                      f"{self.worker_timeout:g} s") from None
            workers = sorted(self.client.nthreads())
        return workers

    def close(self):
        """Drop the shards on the workers and close the stores on the driver."""
        if getattr(self, "session", None) is not None and self.client.status == "running":
            holders = sorted(set(self._live_workers()).intersection(self.owners))
            if holders:
                self.client.run(forget_session, self.session, workers=holders, on_error="return")
        StoreSet.close(self)

    def register(self, objective):
        """An id for ``objective``; its shard copies are dropped when it is."""
        key = next(self._ids)
        weakref.finalize(objective, self._released[1].append, key)
        return key

    def _scatter(self, x):
        """``x`` sent to one of the shards' workers, as one future (the others fetch it).

        Not a broadcast: the scheduler replicates a broadcast to every worker named, and
        retries a worker killed meanwhile for as long as it still lists it (minutes). A
        worker it has already removed is a KeyError of its own (seen once in the test
        suite, the worker killed just before the send)."""
        try:
            return self.client.scatter(x, workers=sorted(set(self.owners)), hash=False)
        except (OSError, ValueError, KeyError) as exc:  # a worker gone (or going)
            self._raise_lost(exc)

    def _raise_lost(self, cause):
        """Raise _Lost once the scheduler sees a shard's worker gone; ``cause`` if it does
        not within ``worker_timeout``."""
        deadline = time.monotonic() + self.worker_timeout
        while time.monotonic() < deadline:
            lost = set(self.owners) - set(self._live_workers())
            if lost:
                raise _Lost(lost) from cause
            time.sleep(self.poll_seconds)
        raise cause

    def new_point(self, w):
        """A handle of the point ``w``; the workers drop the point once it is gone."""
        handle = PointHandle(next(self._ids), w)
        weakref.finalize(handle, self._released[0].append, handle.id)
        return handle

    def run(self, method, objective_id, config, points=(), args=(), vector=False):
        """``method`` of the objective on every shard, summed.

        Parameters
        ----------
        method : str
            See :func:`~streamssvm.distributed.worker.run_shard`.
        objective_id : int
            From :meth:`register`.
        config : dict
            The shard objective's parameters.
        points : sequence of PointHandle
        args : tuple
            Further arguments; arrays are sent to the workers once.
        vector : bool
            The call returns a d-vector (summed by a tree of additions on the workers);
            else a scalar (summed on the driver).

        Returns
        -------
        (float, array of shape (n_variables,) or None, dict)
            The summed loss, vector and counters of :func:`run_shard`.
        """
        # popped one by one: a finalizer may append from another thread meanwhile
        release = tuple([ids.pop() for _ in range(len(ids))] for ids in self._released)
        parts = [None] * len(self.shard_specs)
        while True:
            try:
                sent = self._send(points, args)
                for i, part in enumerate(parts):
                    if part is None:
                        parts[i] = self._submit(i, method, objective_id, config, release, *sent)
                if vector:
                    return self._wait([self._tree(parts)])[0]
                results = self._wait(parts)
                total = results[0]
                for part in results[1:]:
                    total = add_partials(total, part)
                return total
            except _Lost as lost:  # the moved shards' parts are done again, and those the
                # scheduler cancelled or lost with the dead worker's tasks (its partial sums)
                for i in self._recover(lost.workers):
                    parts[i] = None
                for i, part in enumerate(parts):
                    if part is not None and part.status in ("cancelled", "lost"):
                        parts[i] = None

    def _send(self, points, args):
        """Scatter what the call needs: the points' ``w`` unless the workers still have it
        (the lost worker may have held the only copy), and the array arguments."""
        for handle in points:
            if handle.w_future is None or handle.w_future.status != "finished":
                handle.w_future = self._scatter(handle.w)
        sent_points = [(handle.id, handle.w_future) for handle in points]
        sent_args = tuple(self._scatter(a) if isinstance(a, np.ndarray) else a for a in args)
        return sent_points, sent_args

    def _submit(self, i, method, objective_id, config, release, points, args):
        return self.client.submit(
            run_shard, self.session, i, self.shard_specs[i], objective_id, config, release, method,
            points, args, workers=[self.owners[i]], allow_other_workers=False, pure=False,
            key=f"streamssvm-{method}-shard{i}-{uuid.uuid4().hex}")

    def _tree(self, futures):
        """One future of the sum of ``futures``, added pairwise on the workers."""
        while len(futures) > 1:
            pairs = [self.client.submit(add_partials, a, b, pure=False)
                     for a, b in zip(futures[0::2], futures[1::2])]
            futures = pairs + futures[len(pairs) * 2:]
        return futures[0]

    def _wait(self, futures):
        """The results of ``futures``; raises _Lost when a shard's worker is gone.

        A cancelled future (the scheduler may cancel the tasks that needed a worker that
        died) counts as a loss if a shard's worker is gone, else it is an error. A wait
        cut short is waited again: distributed's ``sync`` catches ``Exception`` only, so
        an asyncio CancelledError inside it comes out as an UnboundLocalError (seen once
        in the test suite, a worker being killed)."""
        results = []
        for future in futures:
            while True:
                if future.cancelled():
                    self._raise_lost(WorkerLostError(
                        f"{self.name}: Dask cancelled task {future.key} while no shard's "
                        f"worker was lost"))
                try:
                    results.append(future.result(timeout=self.poll_seconds))
                    break
                except (DaskTimeoutError, TimeoutError, UnboundLocalError):
                    lost = set(self.owners) - set(self._live_workers())
                    if lost:
                        raise _Lost(lost) from None
                except (FutureCancelled, CancelledError):
                    pass  # the check at the top
                except OSError as exc:  # the connection to a worker holding a result broke
                    self._raise_lost(exc)
                except KilledWorker as exc:
                    raise WorkerLostError(
                        f"{self.name}: a task killed every worker it ran on ({exc}); "
                        "not retried") from exc
        return results

    def _recover(self, lost):
        """Move the shards of the ``lost`` workers to live ones; the moved shard ids."""
        moved = [i for i, owner in enumerate(self.owners) if owner in lost]
        if self.recoveries + len(moved) > self.max_recoveries:
            raise WorkerLostError(
                f"lost Dask worker(s) {', '.join(sorted(lost))} holding shard(s) "
                f"{', '.join(self._describe(i) for i in moved)}; {self.recoveries} shard(s) "
                f"moved before, max_recoveries={self.max_recoveries}")
        live = self._live_workers(wait=True)
        for i in moved:
            load = {w: sum(o == w for o in self.owners) for w in live}
            self.owners[i] = min(live, key=lambda w: (load[w], w))
            warn(f"Dask worker {', '.join(sorted(lost))} lost: shard "
                 f"{self._describe(i)} moved to {self.owners[i]}, its points are "
                 "recomputed there", RuntimeWarning)
        self.recoveries += len(moved)
        return moved

    def _describe(self, i):
        return f"{i} (" + ", ".join(f"{path} blocks {a}:{b}"
                                    for path, a, b in self.shard_specs[i]["pieces"]) + ")"
