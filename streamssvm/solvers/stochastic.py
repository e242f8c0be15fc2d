"""What the stochastic solvers (SGD, Pegasos, SVRG, SAGA, SDCA) share: epochs over shuffled
blocks, and the evaluation that gives them the same history and stopping rule as TRON.
(Their per-sample state lives on disk when it is large: ``_memory.per_sample_array``.)

An epoch visits every row once: windows of blocks in a random order, the rows of each
window in a random order (:meth:`~streamssvm.data.plan.DataPlan.epoch` of the objective's
data plan, :func:`epoch_source`), both drawn from one seeded numpy Generator, so a run is
reproducible bit for bit from its seed. Every ``eval_every`` epochs (and after
the last) the objective is evaluated at the iterate (one more pass): the history then has
``f`` and ``grad_norm`` as TRON's does, and the run stops when ||grad L(w)|| meets the same
threshold (see :func:`~streamssvm.solvers.common.stopping_threshold`).
"""

import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from .._progress import log_iteration, progress_bar
from .._warn import warn
from ..errors import CheckpointError
from . import registry
from .common import (ConvergenceWarning, SolverResult, bar_label, check_max_seconds,
                     check_seed, start_state, stopping_threshold)


def epoch_source(name, objective):
    """The data plan of ``objective`` (``objective.data``) whose epochs solver ``name``
    takes. Refused, before any pass, for an objective without one (the oracle summed over
    Dask workers) and for row weights, which the stochastic kernels do not take."""
    plan = getattr(objective, "data", None)
    if plan is None:
        raise ValueError(registry.reads_blocks(name))
    if objective.sample_weight is not None:
        raise ValueError(registry.no_row_weights())
    return plan


def spare_thread(objective):
    """Whether a run on ``objective`` may evaluate in a thread beside its sweeps: not when
    its kernels run on one thread (``n_threads=1``, or numba's threads set to one, as on
    one core or in a process per core): the thread would share the sweeps' core."""
    return objective.n_threads > 1


class Evaluations:
    """Runs a stochastic solver's evaluations: with ``overlap``, in one worker thread on
    one numba thread, beside the next epoch on the other core (numba's kernels release the
    GIL; the kernels cut their sums into the objective's ``n_threads`` ranges whatever runs
    them, so the results are those of the calling thread); else where they are asked for.
    """

    def __init__(self, overlap, name="evaluation"):
        self.pool = ThreadPoolExecutor(1, f"{name}-evaluation", numba.set_num_threads,
                                       (1,)) if overlap else None

    def submit(self, fn, *args):
        """A Future of ``fn(*args)``."""
        if self.pool is not None:
            return self.pool.submit(fn, *args)
        done = Future()
        done.set_result(fn(*args))
        return done

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown()


def saved_array(arrays, name, shape, damaged):
    """``arrays[name]`` (a checkpoint's or a saved state's) if it has ``shape``; else a
    CheckpointError whose message starts with ``damaged``: the kernels index it unchecked."""
    if name not in arrays:
        raise CheckpointError(f"{damaged} (no array {name})")
    if arrays[name].shape != shape:
        raise CheckpointError(f"{damaged} ({name} has shape {arrays[name].shape}, expected "
                              f"{shape})")
    return arrays[name]


def check_epochs(max_iter, eval_every):
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0):
        raise ValueError(f"max_iter (epochs) must be a non-negative integer, got {max_iter!r}")
    if not (isinstance(eval_every, (int, np.integer)) and eval_every >= 0):
        raise ValueError(f"eval_every must be a non-negative integer, got {eval_every!r}")


@dataclass
class EpochEnd:
    """Where an epoch ended: its number, the passes made by then (the evaluation not
    counted) and the random generator's state, for a checkpoint or a rewind to it."""

    epoch: int
    passes: int
    rng: dict


class EpochRun:
    """Book-keeping of a stochastic solver: seed, epochs, evaluations, history, progress
    bar (closed by :meth:`result`, or by the solver's ``closing_bars`` however the run
    ends), result.

    ``state`` is the PointState of the last evaluation. Use::

        data = epoch_source(name, objective)
        run = EpochRun(...)
        while run.next_epoch():
            for block, rows in data.epoch(run.rng): ...
            run.end_epoch(w)          # w: the iterate after the epoch
            run.save(w, **arrays)     # the checkpoint, if one was asked for
        return run.result(w)

    ``evaluations_only``: the solver's passes are its epochs and these evaluations (no
    Hessian product, no gradient pass of its own): the data plan then makes the transpose
    of held data only if it pays for itself over them
    (:meth:`~streamssvm.data.plan.DataPlan.evaluations_only`).
    """

    def __init__(self, name, objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every,
                 max_seconds, seed, progress, checkpoint=None, start=None,
                 divergence="a step too large for the data: lower the step size or its "
                            "schedule's start", spaced=False, evaluations_only=False):
        check_epochs(max_iter, eval_every)
        if evaluations_only:  # the start's, every eval_every epochs' and the last's
            objective.data.evaluations_only(
                1 + (-(-max_iter // eval_every) if eval_every else 1))
        self.spaced = spaced  # :meth:`due`'s spacing
        self.divergence = divergence  # what :meth:`result` says when f is not finite
        check_max_seconds(max_seconds)
        self.name, self.objective = name, objective
        self.label = bar_label(name, progress)
        self.max_iter, self.eval_every, self.max_seconds = max_iter, eval_every, max_seconds
        self.rng = np.random.default_rng(check_seed(seed))
        self.start = time.perf_counter()
        self.message = "max_iter reached"
        self.finished = False
        self._timed = (None, False)  # (epoch, whether max_seconds had passed at its end)
        self.checkpoint, self.resumed, self._start = checkpoint, None, None
        self._start_state = None  # the start's PointState, once taken (:meth:`started`)
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is not None:  # the state at the end of an epoch, as it was
            meta, self.resumed = saved
            self.threshold, self.epoch, self.history = (meta["threshold"], meta["epoch"],
                                                        meta["history"])
            if meta.get("finished"):  # stopped by the solver's own rule: it stays stopped
                self.finish(meta["finished"])
            self.rng.bit_generator.state = meta["rng"]
            objective.passes += meta["passes"]
            self.start -= meta["seconds"]
            evaluated = self.history[-1].get("f") is not None
            self.state = objective.evaluate(self.resumed["w"], False) if evaluated else None
        else:
            # ``start``: a function submitting the start's one evaluation elsewhere (the
            # evaluation thread, while the first epochs run), which returns a Future of
            # start_state's result and, optionally, more for the history's first entry
            # (:meth:`started` waits for it), or None to have it made here
            self._tolerances = tol, abs_tol, liblinear_tol
            self.state, self.threshold = None, None
            self.epoch = 0
            self.history = []
            passes = objective.passes
            self._start = None if start is None else start()
            if self._start is None:
                self._start = Future()
                self._start.set_result(start_state(objective, w0, curved=False))
                self._record()
                self.started()
            else:  # its pass counted once submitted, as the solvers count evaluations
                self._record(passes=passes + 1)
        self.bar = progress_bar(progress, total=max_iter, initial=self.epoch, unit="epoch",
                                desc=self.label)

    def started(self):
        """Take the start state (the stopping threshold, f and ||grad|| at the start in the
        history's first entry) once it is made; a no-op after."""
        if self._start is None:
            return
        state, grad0_norm, *extra = self._start.result()
        self._start = None
        self.threshold = stopping_threshold(self.objective, grad0_norm, *self._tolerances)
        self.history[0].update(f=state.f, grad_norm=state.grad_norm,
                               **(extra[0] if extra else {}))
        self._start_state = state
        if self.epoch == 0:
            self.state = state

    def back_to_start(self, at):
        """If the start's state (waited for) meets the stopping rule, go back to ``at``, the
        :class:`EpochEnd` before the first epoch, and return True: the epochs swept beside
        a start evaluated elsewhere are undone, as a run that waited for it would not have
        swept them. Before any epoch is recorded."""
        self.started()
        state = self._start_state
        if not state.grad_norm <= self.threshold:
            return False
        self.rewind(at)
        self.state = state
        return True

    def save(self, w, at=None, **arrays):
        """Checkpoint the end of this epoch: the iterate ``w``, the solver's ``arrays``, the
        history and the random generator (if a checkpoint was asked for and is due). ``at``:
        an :class:`EpochEnd` to save instead of this epoch (the generator as it was then)."""
        if self.checkpoint is not None:
            self.started()
            at = self.epoch_end() if at is None else at
            self.checkpoint.save(dict(epoch=at.epoch, history=self.history, passes=at.passes,
                                      threshold=self.threshold,
                                      seconds=time.perf_counter() - self.start, rng=at.rng,
                                      finished=self.message if self.finished else None),
                                 dict(arrays, w=w), force=not self.next_due())

    def next_due(self):
        """Another epoch will run (as far as epochs, convergence and time tell). The time is
        read once an epoch, so that an epoch's checkpoint and :meth:`next_epoch` agree: the
        last epoch's is written whatever ``checkpoint_every`` says."""
        if self._timed[0] != self.epoch:
            self._timed = (self.epoch, self.max_seconds is not None
                           and time.perf_counter() - self.start >= self.max_seconds)
        return not (self.converged or self.epoch >= self.max_iter or self._timed[1])

    @property
    def converged(self):
        return self.finished or (self.state is not None and self.state.grad_norm <= self.threshold)

    def finish(self, message):
        """Stop, converged by a solver's own rule (e.g. SDCA's duality gap)."""
        self.finished, self.message = True, message

    def _record(self, epoch=None, passes=None, **extra):
        entry = dict(iteration=self.epoch if epoch is None else epoch,
                     passes=self.objective.passes if passes is None else passes,
                     seconds=time.perf_counter() - self.start, accepted=True, **extra)
        if self.state is not None:
            entry.update(f=self.state.f, grad_norm=self.state.grad_norm)
        self.history.append(entry)
        log_iteration(self.label, entry)

    def next_epoch(self):
        """True while another epoch is due (not converged, epochs and time left)."""
        if self.converged:
            return False
        if self.state is not None and not np.isfinite(self.state.f):
            return False  # diverged: :meth:`result` says so
        if not self.next_due():
            if self.epoch < self.max_iter:
                self.message = "max_seconds reached"
            return False
        self.epoch += 1
        return True

    def epoch_end(self, passes=None):
        """This epoch's :class:`EpochEnd` (before its evaluation); ``passes``: the passes
        made by then, if not ``objective.passes`` (which an evaluation in another thread
        may or may not have counted yet)."""
        return EpochEnd(self.epoch, self.objective.passes if passes is None else passes,
                        self.rng.bit_generator.state)

    def due(self):
        """An evaluation is due at the end of this epoch: at the last, and every
        ``eval_every`` epochs, or, ``spaced``, at :meth:`next_evaluation`."""
        if not self.eval_every:
            return False
        if self.epoch >= self.max_iter:
            return True
        if not self.spaced:
            return self.epoch % self.eval_every == 0
        return self.epoch >= self.next_evaluation()

    def next_evaluation(self):
        """The next evaluated epoch of a ``spaced`` run, for when an evaluation holds up the
        epochs (a pass of its own): the first ``eval_every`` epochs from the start; after
        two scheduled evaluations e1 < e2, half the epochs that their rate of fall of
        ||grad|| (linear convergence, g_k = g_0 r^k) takes to the threshold, at least
        ``eval_every`` and at most 2 (e2 - e1) and 4 ``eval_every``; and ``eval_every``
        while ||grad|| is within the largest fall seen between two scheduled evaluations
        (after the start's) of the threshold: SDCA's ||grad|| near the hinge jumps up and
        down by such factors, and meets the threshold at one of its falls. A run that
        meets the threshold is evaluated at least as often as its rate predicts half its
        remaining epochs; one whose ||grad|| stalls far from it (a budget of epochs) pays
        few evaluations. The schedule is walked from the history's norms at its own epochs
        only (not at the last epoch of a shorter run), so a run resumed with more epochs
        keeps it."""
        norms = {h["iteration"]: h["grad_norm"] for h in self.history
                 if h.get("grad_norm") is not None}
        e2, due, fall = 0, self.eval_every, 1.0
        while due in norms:
            e1, e2 = e2, due
            spacing = min(2 * (e2 - e1), 4 * self.eval_every)
            g1, g2 = norms.get(e1), norms[e2]
            if e1 > 0 and g2 > 0:
                fall = max(fall, g1 / g2)
            if g2 <= fall * self.threshold:
                spacing = self.eval_every  # within reach of a fall as large as any seen
            elif g1 is not None and 0 < self.threshold < g2 < g1:
                spacing = min(spacing, (e2 - e1) * math.log(g2 / self.threshold)
                              / (2 * math.log(g1 / g2)))
            due = e2 + max(self.eval_every, int(spacing))
        return due

    def end_epoch(self, w, **extra):
        """Evaluate at ``w`` when due and record the epoch; returns the new PointState or
        None."""
        return self.record(self.objective.evaluate(w, False) if self.due() else None, **extra)

    def record(self, state, at=None, **extra):
        """Record an epoch with its evaluation ``state`` (or None): this epoch, or the one
        ``at`` (an :class:`EpochEnd`) if its evaluation ran beside the next epoch."""
        if state is not None:
            self.started()
        self.state = state
        if at is None:
            self._record(**extra)
        else:
            self._record(epoch=at.epoch, passes=at.passes + (state is not None), **extra)
        self.bar.update(1)
        if self.state is not None:
            self.bar.set_postfix(f=f"{self.state.f:.6g}", grad=f"{self.state.grad_norm:.3g}",
                                 refresh=False)
        return self.state

    def rewind(self, at):
        """Go back to the end of epoch ``at`` (an :class:`EpochEnd`): the solver has undone
        the epochs after it (its evaluation there was the last one needed)."""
        self.epoch = at.epoch
        self.rng.bit_generator.state = at.rng

    def result(self, w):
        """The SolverResult at ``w`` (evaluated if the last epoch was not: its history
        entry then gets f, the gradient's norm and that pass)."""
        self.started()
        self.bar.close()
        if self.state is None or not np.array_equal(self.state.w, w):
            self.state = self.objective.evaluate(w, False)
            last = self.history[-1]
            if "f" not in last and last["iteration"] == self.epoch:
                last.update(f=self.state.f, grad_norm=self.state.grad_norm,
                            passes=self.objective.passes)
        if not np.isfinite(self.state.f):
            raise FloatingPointError(
                f"{self.name} diverged: the objective is not finite after epoch {self.epoch} "
                f"({self.divergence})")
        converged = self.converged
        if converged and not self.finished:
            self.message = "converged"
        elif not converged:
            warn(f"{self.name} stopped unconverged ({self.message}): ||grad|| = "
                 f"{self.state.grad_norm:.3g} > {self.threshold:.3g}",
                 ConvergenceWarning)
        return SolverResult(w=self.state.w, f=self.state.f, grad_norm=self.state.grad_norm,
                            n_iter=self.epoch, converged=converged, message=self.message,
                            passes=self.objective.passes,
                            seconds=time.perf_counter() - self.start, history=self.history)
