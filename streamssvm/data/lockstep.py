"""Several runs over one source in lockstep: each pass of the source serves all of them.

K trainings over row subsets of one store (cross-validation's folds) each make their own
passes. One after the other, K trainings of P passes each read the store about K P times;
in lockstep a pass of the store serves every training waiting for one, and the store is
read about P times (the most any of them makes).

Each run is a thread, but only one thread runs at a time: they pass a baton, as
coroutines would. A run keeps the baton until it asks for a pass over the source in
storage order (any increasing order of blocks: a row subset's blocks); once every run is
waiting for a pass or done, the coordinator (the caller's thread) reads the blocks that any
waiting run asked for, once each, and hands each block to the waiting runs in turn, each
running until it asks for its next block (or leaves the pass). Every computation of a run
is then that of a sequential run, in the same order, so results are bit-identical to
running the runs one after the other, and numba's parallel kernels are never launched from
two threads at once. A pass in any other order (a stochastic solver's shuffled epoch) and a
read of single blocks go straight to the source while the run holds the baton.

Memory: while K runs are alive, each sees a K-th of the free memory as its own
(:func:`~streamssvm._memory.memory_share`), so K budgets taken from the free memory add up
to what one run would take.
"""

import threading

import numpy as np

from .._memory import memory_share
from .source import BlockSource

_END = object()  # handed to a run at the end of a pass


class _Aborted(BaseException):
    """Raised in a run at its next request once the lockstep is aborted (another run
    failed, or the coordinator was interrupted): it unwinds the run's thread."""


class _Run:
    def __init__(self, index, task):
        self.index, self.task = index, task
        self.state = "new"  # new, running, pass (waiting for one), next (in one), done
        self.order = None  # the blocks it asked a pass for
        self.joined = None  # the pass it is in (None: waiting for the next)
        self.transient = True
        self.inbox = None
        self.result, self.error = None, None


class Lockstep(BlockSource):
    """``source`` as a source whose passes in storage order, made by the runs of
    :meth:`run`, are shared (module docstring); outside :meth:`run` it reads as ``source``.

    Attributes
    ----------
    passes : int
        Passes the coordinator made over the source (each serving every run waiting).
    """

    def __init__(self, source):
        self.source = source
        for attr in ("name", "n_samples", "n_features", "classes", "value_dtype",
                     "row_offsets", "in_memory"):
            setattr(self, attr, getattr(source, attr))
        self.passes = 0
        self._cond = threading.Condition()
        self._turn = None  # the _Run that may run, or None: the coordinator
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
            while self._turn is not run:
                self._cond.wait()
        if self._aborted:
            raise _Aborted

    def _yield(self, run, state):
        """Run ``run`` gives the baton back to the coordinator in ``state``, and waits
        (once aborted, it unwinds at once)."""
        if self._aborted:
            raise _Aborted
        with self._cond:
            run.state = state
            self._turn = None
            self._cond.notify_all()
        self._wait_turn(run)
        run.state = "running"

    def _resume(self, run, inbox=None):
        """The coordinator hands the baton to ``run`` and waits until it comes back."""
        with self._cond:
            run.inbox = inbox
            self._turn = run
            self._cond.notify_all()
            while self._turn is not None:
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
            run.state = "done"
            self._turn = None
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
                    self._resume(run)
            for thread in threads:
                thread.join()
            self._runs = {}
        return [r.result for r in runs]

    def _coordinate(self, runs):
        while True:
            for run in runs:
                if run.state == "new":
                    self._resume(run)
                self._raise_first(runs)
            waiting = [r for r in runs if r.state == "pass"]
            if not waiting:
                return
            self._pass(waiting, runs)
            self._raise_first(runs)

    def _pass(self, waiting, runs):
        """One pass over the blocks any of ``waiting`` asked for, each handed to them in
        turn; those that leave the pass early wait for the next one, or are done."""
        self.passes += 1
        for run in waiting:
            run.joined = self.passes
        order = np.unique(np.concatenate([r.order for r in waiting]))
        cursor = {r.index: 0 for r in waiting}
        transient = all(r.transient for r in waiting)
        blocks = self.source.iter_blocks(order, transient=transient)
        try:
            for k, block in zip(order, blocks):
                for run in waiting:
                    at = cursor[run.index]
                    if self._member(run) and at < len(run.order) and run.order[at] == k:
                        cursor[run.index] = at + 1
                        self._resume(run, block)
                waiting = [r for r in waiting if self._member(r)]
                if not waiting or any(r.error is not None for r in runs):
                    break
        finally:
            blocks.close()
        for run in waiting:  # still in the pass: its end
            if self._member(run):
                self._resume(run, _END)

    def _member(self, run):
        """``run`` is in the current pass (not left, nor waiting for the next)."""
        return run.joined == self.passes and run.state in ("pass", "next")

    @staticmethod
    def _raise_first(runs):
        for run in runs:
            if run.error is not None:
                raise run.error
