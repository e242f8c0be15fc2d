"""Several runs over one source in lockstep: each pass of the source serves all of them.

K trainings over row subsets of one store (cross-validation's folds) each make their own
passes. One after the other, K trainings of P passes each read the store about K P times;
in lockstep a pass of the store serves every training waiting for one, and the store is
read about P times (the most any of them makes).

Each run is a thread; they pass batons, as coroutines would, and up to ``concurrent`` of
them hold one at a time (numba's thread count, where its threading layer runs parallel
kernels from several threads at once; else one). A run keeps its baton until it asks for a
pass over the source in storage order (any increasing order of blocks: a row subset's
blocks); once every run is waiting for a pass or done, the coordinator (the caller's
thread) reads the blocks that any waiting run asked for, once each, and hands each block to
the runs that asked for it, each running until it asks for its next block (or leaves the
pass). Runs share nothing but the blocks they read, so each computes what it would alone,
in the same order: results are bit-identical to running the runs one after the other. A
pass in any other order (a stochastic solver's shuffled epoch) and a read of single blocks
go straight to the source while the run holds its baton.

Memory: while K runs are alive, each sees a K-th of the free memory as its own
(:func:`~streamssvm._memory.memory_share`), so K budgets taken from the free memory add up
to what one run would take.
"""

import threading

import numba
import numpy as np

from .._memory import memory_share
from ..kernels import threadsafe_parallel
from .source import BlockSource

_END = object()  # handed to a run at the end of a pass


def check_concurrent(concurrent):
    """``concurrent`` as a count of runs at once: an integer >= 1, a ValueError else."""
    if isinstance(concurrent, bool) or not isinstance(concurrent, int) or concurrent < 1:
        raise ValueError(f"concurrent must be an integer >= 1, got {concurrent!r}")
    return concurrent


class _Aborted(BaseException):
    """Raised in a run at its next request once the lockstep is aborted (another run
    failed, or the coordinator was interrupted): it unwinds the run's thread."""


class _Run:
    def __init__(self, index, task):
        self.index, self.task = index, task
        self.state = "new"  # new, running, pass (waiting for one), next (in one), done
        self.order = None  # the blocks it asked a pass for
        self.joined = None  # the pass it is in (None: waiting for the next)
        self.at = 0  # where in ``order`` the pass it is in has come
        self.transient = True
        self.inbox = None
        self.go = False  # holds the baton
        self.result, self.error = None, None


class Lockstep(BlockSource):
    """``source`` as a source whose passes in storage order, made by the runs of
    :meth:`run`, are shared (module docstring); outside :meth:`run` it reads as ``source``.

    Parameters
    ----------
    source : BlockSource
    concurrent : int, optional
        Runs holding a baton at once (default: numba's thread count where its threading
        layer allows parallel kernels from several threads, else 1).

    Attributes
    ----------
    passes : int
        Passes the coordinator made over the source (each serving every run waiting).
    """

    def __init__(self, source, concurrent=None):
        self.source = source
        self.concurrent = (check_concurrent(concurrent) if concurrent is not None
                           else numba.get_num_threads() if threadsafe_parallel() else 1)
        for attr in ("name", "n_samples", "n_features", "classes", "value_dtype",
                     "row_offsets", "in_memory"):
            setattr(self, attr, getattr(source, attr))
        self.passes = 0
        self._cond = threading.Condition()
        self._runs = {}  # thread ident -> _Run, during run()
        self._aborted = False

    @property
    def nnz(self):
        return self.source.nnz

    def labels(self):
        return self.source.labels()

    def read_block(self, k):
        return self.source.read_block(k)

    def read_range(self, first, stop):
        return self.source.read_range(first, stop)

    def iter_blocks(self, order=None, transient=False):
        """A pass in increasing block order made by a run: shared with the other runs
        waiting for one; anything else: read from the source."""
        run = self._runs.get(threading.get_ident())
        if order is not None:
            order = np.asarray(list(order), np.int64)
        if run is None or (order is not None and np.any(np.diff(order) <= 0)):
            return self.source.iter_blocks(order, transient)
        return self._shared_pass(run, order, transient)

    def _shared_pass(self, run, order, transient):
        run.order = np.arange(self.n_blocks) if order is None else order
        run.transient, run.joined = transient, None
        self._yield(run, "pass")
        while run.inbox is not _END:
            yield run.inbox
            self._yield(run, "next")

    # the baton

    def _wait_turn(self, run):
        with self._cond:
            while not run.go:
                self._cond.wait()
        if self._aborted:
            raise _Aborted

    def _yield(self, run, state):
        """Run ``run`` gives the baton back to the coordinator in ``state``, and waits
        (once aborted, it unwinds at once)."""
        if self._aborted:
            raise _Aborted
        with self._cond:
            run.state, run.go = state, False
            self._cond.notify_all()
        self._wait_turn(run)
        run.state = "running"

    def _resume(self, runs, inbox=None):
        """The coordinator hands the baton to ``runs``, at most ``concurrent`` at a time,
        and waits until each has given it back."""
        for first in range(0, len(runs), self.concurrent):
            group = runs[first:first + self.concurrent]
            with self._cond:
                for run in group:
                    run.inbox, run.go = inbox, True
                self._cond.notify_all()
                while any(run.go for run in group):
                    self._cond.wait()

    def _body(self, run):
        try:
            self._wait_turn(run)
            run.state = "running"
            with memory_share(len(self._runs)):
                run.result = run.task()
        except _Aborted:
            pass
        except BaseException as exc:  # handed to the coordinator, raised there
            run.error = exc
        with self._cond:
            run.state, run.go = "done", False
            self._cond.notify_all()

    def run(self, tasks):
        """Call each of ``tasks`` (callables of no argument) in a thread of its own, in
        lockstep; return their results in order. The first error of a task (by the order
        of tasks) aborts the others and is raised, as is an interrupt of the caller."""
        if self._runs:
            raise RuntimeError(f"{self.name}: Lockstep.run called from within a run")
        runs = [_Run(i, task) for i, task in enumerate(tasks)]
        threads = [threading.Thread(target=self._body, args=(r,), daemon=True,
                                    name=f"streamssvm-lockstep-{r.index}") for r in runs]
        self._aborted = False
        try:
            for run, thread in zip(runs, threads):
                thread.start()
                self._runs[thread.ident] = run
            self._coordinate(runs)
        except BaseException:
            self._aborted = True
            raise
        finally:
            for run in runs:  # each aborted run unwinds at its next request
                while run.state != "done":
                    self._resume([run])
            for thread in threads:
                thread.join()
            self._runs = {}
        return [r.result for r in runs]

    def _coordinate(self, runs):
        while True:
            self._resume([r for r in runs if r.state == "new"])
            self._raise_first(runs)
            waiting = [r for r in runs if r.state == "pass"]
            if not waiting:
                return
            self._pass(waiting, runs)
            self._raise_first(runs)

    def _pass(self, waiting, runs):
        """One pass over the blocks any of ``waiting`` asked for, each handed to the runs
        that asked for it; those that leave the pass early wait for the next one, or are
        done."""
        self.passes += 1
        for run in waiting:
            run.joined, run.at = self.passes, 0
        order = np.unique(np.concatenate([r.order for r in waiting]))
        transient = all(r.transient for r in waiting)
        blocks = self.source.iter_blocks(order, transient=transient)
        try:
            for k, block in zip(order, blocks):
                takers = [r for r in waiting
                          if self._member(r) and r.at < len(r.order) and r.order[r.at] == k]
                for run in takers:
                    run.at += 1
                self._resume(takers, block)
                waiting = [r for r in waiting if self._member(r)]
                if not waiting or any(r.error is not None for r in runs):
                    break
        finally:
            blocks.close()
        self._resume([r for r in waiting if self._member(r)], _END)  # still in it: its end

    def _member(self, run):
        """``run`` is in the current pass (not left, nor waiting for the next)."""
        return run.joined == self.passes and run.state in ("pass", "next")

    @staticmethod
    def _raise_first(runs):
        for run in runs:
            if run.error is not None:
                raise run.error
