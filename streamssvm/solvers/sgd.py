"""Stochastic gradient descent and Pegasos, streamed block by block.

Step t on row i (drawn without replacement within an epoch):

    w <- (1 - eta_t lam) w - eta_t psi'(y_i w.x_i) y_i x_i

with the exogenous rate eta_t of a schedule and -psi'(.) = Phi_c(v_i) the endogenous rate
of the paper's section 4.1. The intercept (a constant feature, not regularised) takes the
same step without the shrink. Order of calls: an epoch of the objective's data plan
(``objective.data.epoch``, one pass) per epoch, ``objective.evaluate`` every
``eval_every`` epochs (see :mod:`~streamssvm.solvers.stochastic`).

References
----------
L. Bottou, "Stochastic gradient descent tricks", Neural Networks: Tricks of the Trade (2012):
the "optimal" schedule 1 / (lam (t0 + t)) and w = scale * v.
S. Shalev-Shwartz, Y. Singer, N. Srebro, A. Cotter, "Pegasos: primal estimated sub-gradient
solver for SVM", Mathematical Programming 127 (2011): eta_t = 1 / (lam t) and the projection
onto ||w|| <= 1 / sqrt(lam).
W. Xu, "Towards optimal one pass large scale learning with averaged stochastic gradient
descent", arXiv:1107.2490 (2011): the sparse form of the averaged iterate.
J. Langford, A. J. Smola, M. Zinkevich, "Slow learners are fast", NIPS 2009: SGD with
delayed updates (``delay``).
F. Niu, B. Recht, C. Re, S. J. Wright, "Hogwild!: a lock-free approach to parallelizing
stochastic gradient descent", NIPS 2011 (``hogwild``).
"""

import functools
import math

import numba
import numpy as np

from .._memory import available_memory_bytes
from .._names import named
from .._progress import closing_bars
from ..kernels import stochastic as sk
from ..kernels import threadsafe_parallel
from ..kernels._twins import SERIAL_BELOW
from ..losses._scalar import derivatives_with_params
from .common import check_step, start_point, start_state
from .registry import MAX_SECONDS, OVERLAP, SEED, STEP, Option, SolverRecord
from .stochastic import EpochRun, Evaluations, epoch_source, saved_array, spare_thread

SCHEDULES = {"optimal": sk.OPTIMAL, "pegasos": sk.OPTIMAL, "constant": sk.CONSTANT,
             "invscaling": sk.INVSCALING}
# the options of some schedules: what each is, the schedules that take it, and its value
# there when it is left out (None); refused with the others
RATE_OPTIONS = {"eta0": ("eta0 (--step) is the step", ("constant", "invscaling"), 0.01),
                "power_t": ("power_t is the exponent", ("invscaling",), 0.5)}


class SGDState:
    """What SGD carries between epochs and between ``partial_fit`` calls.

    w = ``state[SCALE]`` * ``v`` (features) and ``state[INTERCEPT]``; with averaging,
    sum_k w_k = ``avg_u`` + ``state[AVG_C]`` * ``v`` over ``state[AVG_COUNT]`` steps. With a
    delay, the two-thread kernel's helper steps a copy of v and of the state (made when
    first needed, kept between calls while it stays equal).

    Parameters
    ----------
    n_features : int
    fit_intercept : bool
    average : bool or int
        Average the iterates from step 1 (True) or from step ``average`` (an int >= 1).
    delay : int
        0: serial SGD. K > 0: SGD with updates delayed by up to K - 1 steps, on two threads
        when there are two (see :func:`~streamssvm.kernels.stochastic.sgd_rows_parallel`);
        checked by the callers with :func:`check_delay_and_hogwild`, which know the
        projection.
    hogwild : bool
        The steps on all threads at once, on the one v, without locks (see
        :func:`~streamssvm.kernels.stochastic.sgd_rows_hogwild`); checked there too.
    """

    def __init__(self, n_features, fit_intercept, average=False, delay=0, hogwild=False):
        self.n_features, self.fit_intercept = n_features, bool(fit_intercept)
        self.avg_start = _average_start(average)
        self.delay, self.hogwild = int(delay), bool(hogwild)
        self.v = np.zeros(n_features)
        self.avg_u = np.zeros(n_features if self.avg_start else 0)
        self.state = np.zeros(sk.SGD_STATE_SIZE)
        self.state[sk.SCALE] = 1.0
        self.replica = self.replica_state = None
        self.replica_equal = False

    def rows(self, block, rows, objective, schedule, threads):
        """The steps on ``rows`` of ``block``: with a delay, on two threads when ``threads``
        > 1; Hogwild's on ``threads``."""
        code, sigma, theta, params = objective.loss_args
        data = (block.indptr, block.indices, block.data, block.y, rows, self.v, self.avg_u,
                self.state)
        rate = (objective.lam, schedule.code, schedule.eta0, schedule.power_t, schedule.t0)
        if self.hogwild:
            sk.sgd_rows_hogwild(*data, code, sigma, theta, params, *rate, self.avg_start,
                                threads)
            return
        args = (*data, objective.bias, code, sigma, theta, params, *rate, schedule.radius,
                self.avg_start, self.delay)
        if threads < 2 or not self.delay or not self._replica_room():
            sk.sgd_rows(*args)
            self.replica_equal = False
            return
        if self.replica is None:
            self.replica = np.empty_like(self.v)
            # a cache line of its own each side: the two threads write their states at
            # every step
            self.replica_state = np.zeros(sk.SGD_STATE_SIZE + 16)[8:8 + sk.SGD_STATE_SIZE]
        if not self.replica_equal:
            self.replica[:], self.replica_state[:] = self.v, self.state
        self.replica_equal = sk.sgd_rows_parallel(*args, self.replica, self.replica_state)

    def _replica_room(self):
        """Whether the helper's copy of v exists or a quarter of the memory the process may
        still use holds it (else the steps run on one thread: the same steps)."""
        return self.replica is not None or 4 * self.v.nbytes <= available_memory_bytes()

    def restore(self, arrays, damaged):
        """Take v, avg_u and the scalars from saved ``arrays`` (a checkpoint's or a saved
        trainer's). A shape that does not fit this state is refused, the message starting
        with ``damaged``: the kernels index avg_u by the features and the scalars by their
        slots, unchecked."""
        for name in ("v", "avg_u", "state"):
            kept = getattr(self, name)
            kept[:] = saved_array(arrays, name, kept.shape, damaged)
        self.replica_equal = False

    def start_at(self, w0):
        """Set w = ``w0`` (array of shape (n_variables,)) before the first step."""
        w0 = np.asarray(w0, dtype=np.float64)
        if w0.shape != (self.n_variables,):
            raise ValueError(f"w0 has shape {w0.shape}, expected ({self.n_variables},)")
        self.v[:] = w0[:self.n_features]
        self.replica_equal = False
        self.state[sk.SCALE] = 1.0
        self.state[sk.V_NORM2] = float(self.v @ self.v)
        if self.fit_intercept:
            self.state[sk.INTERCEPT] = w0[-1]

    @property
    def n_variables(self):
        return self.n_features + self.fit_intercept

    @property
    def steps(self):
        return int(self.state[sk.STEP])

    def weights(self, averaged=None):
        """w of shape (n_variables,): the last iterate, or the average when averaging
        (``averaged=None``: whichever this state was made for) and a step was averaged."""
        count = self.state[sk.AVG_COUNT]
        if (self.avg_start if averaged is None else averaged) and count > 0:
            coef = (self.avg_u + self.state[sk.AVG_C] * self.v) / count
            intercept = self.state[sk.AVG_INTERCEPT] / count
        else:
            coef = self.state[sk.SCALE] * self.v
            intercept = self.state[sk.INTERCEPT]
        return np.append(coef, intercept) if self.fit_intercept else coef


def check_delay_and_hogwild(delay, project, hogwild=False, fit_intercept=False):
    """Raise if SGD cannot take its steps with this ``delay`` or ``hogwild``: the
    projection (``project``) takes ||w|| from each step's exact dot; Hogwild's steps are
    not delayed, and take no intercept."""
    if not (isinstance(delay, (int, np.integer)) and not isinstance(delay, bool)
            and delay >= 0):
        raise ValueError(f"delay must be an integer >= 0, got {delay!r}")
    if not isinstance(hogwild, (bool, np.bool_)):
        raise ValueError(f"hogwild must be True or False, got {hogwild!r}")
    for name, given in (("delay", delay), ("hogwild", hogwild)):
        if given and project:
            raise ValueError(f"{named(name)} needs {_off('project')}: the projection onto "
                             f"the ball takes ||w|| from each step's exact dot product")
    if delay and hogwild:
        raise ValueError(f"{named('delay')} and {named('hogwild')} are two ways of taking "
                         f"SGD's steps on several threads: give one of them")
    if hogwild and fit_intercept:
        raise ValueError(f"{named('hogwild')} needs {_off('fit_intercept')}: the intercept "
                         f"is in every row, and the threads' late and lost updates made it "
                         f"drift (runs could end far above serial SGD's "
                         f"objective)")


def _off(parameter):
    """How the caller turns a flag off: ``name=False``, or no option on the command line."""
    option = named(parameter)
    return f"{parameter}=False" if option == parameter else f"no {option}"


def _average_start(average):
    if average is True:
        return 1
    if average is False or average is None:
        return 0
    if isinstance(average, (int, np.integer)) and average >= 1:
        return int(average)
    raise ValueError(f"average must be a bool or an int >= 1, got {average!r}")


def optimal_t0(objective):
    """t0 of the "optimal" schedule, by Bottou's heuristic (his svmsgd): the first step
    eta_1 = 1 / (lam t0) is a typical weight 1 / sqrt(sqrt(lam)) over max(1, |psi'|) at
    minus that weight. scikit-learn takes max(1, psi'), of the signed slope, which is 1:
    the same t0 where |psi'| <= 1 there (hinge, psi_G, logistic), a smaller one (larger
    first steps) for the squared hinge."""
    code, sigma, theta, params = objective.loss_args
    typical = math.sqrt(1.0 / math.sqrt(objective.lam))
    slope = abs(derivatives_with_params(code, -typical, sigma, theta, params)[1])
    if not np.isfinite(slope):
        raise ValueError(f"the optimal schedule's first step is 0: the slope of the "
                         f"{objective.loss.name} loss at -{typical:.3g} overflows (lam "
                         f"{objective.lam:g}); give learning_rate 'constant' or "
                         f"'invscaling' with eta0")
    eta1 = typical / max(1.0, slope)
    return 1.0 / (eta1 * objective.lam)


def check_rate_options(learning_rate, eta0=None, power_t=None):
    """Refuse an ``eta0`` or ``power_t`` given (not None) with a schedule that does not use
    it, or out of range with one that does."""
    for name, value in (("eta0", eta0), ("power_t", power_t)):
        what, schedules, _ = RATE_OPTIONS[name]
        if value is not None and learning_rate not in schedules:
            several = len(schedules) > 1
            raise ValueError(f"{what} of the learning_rate schedule{'s' * several} "
                             f"{' and '.join(map(repr, schedules))}; {learning_rate!r} takes "
                             f"none: leave {name} out, or choose "
                             f"{'one of them' if several else 'it'}")
    if eta0 is not None:
        check_step(eta0, "eta0")
    if power_t is not None and not (np.isfinite(power_t) and power_t >= 0):
        raise ValueError(f"power_t must be finite and >= 0, got {power_t}")


def check_schedule(learning_rate, eta0, power_t, fit_intercept):
    """The kernels' code of ``learning_rate``, after the checks of :class:`Schedule` that
    need no data."""
    try:
        code = SCHEDULES[learning_rate]
    except KeyError:
        raise ValueError(f"unknown learning_rate {learning_rate!r}; known: "
                         f"{', '.join(SCHEDULES)}") from None
    if learning_rate == "pegasos" and fit_intercept:
        raise ValueError("Pegasos' rate 1 / (lam t) makes the first steps of an "
                         "unregularised intercept huge (1 / lam); use solver 'sgd' (the "
                         "optimal schedule) or fit_intercept=False (no --intercept)")
    check_rate_options(learning_rate, eta0, power_t)
    return code


class Schedule:
    """The exogenous learning rate eta_t and Pegasos' projection radius.

    Parameters
    ----------
    learning_rate : {"optimal", "pegasos", "constant", "invscaling"}
        1 / (lam (t0 + t)) with Bottou's t0; 1 / (lam t); eta0; eta0 / t^power_t.
    eta0 : float, optional
        The step of "constant" and "invscaling" (default 0.01); refused with the others.
    power_t : float, optional
        The exponent of "invscaling" (default 0.5); refused with the others.
    project : bool
        Project w onto the ball of radius 1 / sqrt(lam) after each step (Pegasos).
    """

    def __init__(self, objective, learning_rate="optimal", eta0=None, power_t=None,
                 project=False):
        self.code = check_schedule(learning_rate, eta0, power_t, bool(objective.bias))
        self.eta0, self.power_t = (float(RATE_OPTIONS[name][2] if value is None else value)
                                   for name, value in (("eta0", eta0), ("power_t", power_t)))
        self.t0 = optimal_t0(objective) if learning_rate == "optimal" else 0.0
        self.radius = 1.0 / math.sqrt(objective.lam) if project else 0.0


def sgd_epoch(objective, sgd_state, schedule, rng):
    """One epoch of SGD steps over ``objective``'s source (one pass), in place. With a delay
    and two threads or more, the steps run on two threads
    (:func:`~streamssvm.kernels.stochastic.sgd_rows_parallel`), with the same result; with
    ``hogwild``, on all of them at once."""
    threads = min(objective.n_threads, numba.get_num_threads())
    for block, rows in objective.data.epoch(rng):
        sgd_state.rows(block, rows, objective, schedule, threads)


def sgd(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=20,
        learning_rate="optimal", eta0=None, power_t=None, average=False, project=False, delay=0,
        hogwild=False, seed=0, eval_every=1, overlap=True, max_seconds=None, progress=False,
        checkpoint=None):
    """Minimise ``objective`` by stochastic gradient descent.

    Parameters
    ----------
    objective : SmoothSVMObjective
    w0 : array of shape (n_variables,), optional
    tol, abs_tol, liblinear_tol
        Stopping rule on the full gradient, checked at the evaluations (as TRON's).
    max_iter : int
        Epochs.
    learning_rate, eta0, power_t, project
        See :class:`Schedule`.
    average : bool or int
        Return the average of the iterates (ASGD) from step 1 or from step ``average``.
    delay : int
        0: serial SGD, on one thread. K > 0: each step sees the writes of the up to K - 1
        steps before it in its chunk of K rows only at the chunk's start (SGD with delayed
        updates), and two threads share an epoch's dots
        (:func:`~streamssvm.kernels.stochastic.sgd_rows_parallel`); the steps are the same
        on one thread or two. Not with ``project``.
    hogwild : bool
        The threads take their rows' steps at once, on the one v, without locks (Niu et
        al.'s Hogwild!): where two write one feature's weight at once, one update can be
        lost, so a run on several threads is not reproducible to the bit (on one, it is
        serial SGD's); the threads share an epoch's steps. Not with ``project``,
        ``delay`` or an intercept.
    seed : int
        Seed of the visiting order: a run is reproducible bit for bit (but for ``hogwild``
        on several threads).
    eval_every : int
        Evaluate the objective (one pass) every this many epochs; 0: only at the end.
    overlap : bool
        Evaluate each epoch's w on a worker thread beside the next epoch, collected when
        the next evaluation is due (the last epoch's on every thread), and the start's
        beside the first epoch where held data takes the rows' way: when the data is
        held in memory and not tiny (the parallel kernels' threshold,
        :data:`~streamssvm.kernels._twins.SERIAL_BELOW`), the kernels have more than one
        thread, the steps run on one of them (no ``delay``, no ``hogwild``), there is no
        checkpoint, and numba's threading layer runs parallel kernels from two threads (omp,
        tbb). When an evaluation stops the run, the epochs swept after it are undone: the
        result, the history and the epochs are those of the run without overlap (the passes
        count the sweeps made beside it).
    max_seconds : float, optional
    progress : bool or str
    checkpoint : Checkpoint, optional
        Resume from it if its file exists; write it at the ends of epochs (see
        :mod:`~streamssvm.solvers.checkpoint`).

    Returns
    -------
    SolverResult
        ``history`` has one entry per epoch (``f``, ``grad_norm`` where evaluated).
    """
    return _run("sgd", objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every,
                max_seconds, seed, progress, checkpoint, average, delay, hogwild,
                dict(learning_rate=learning_rate, eta0=eta0, power_t=power_t, project=project),
                overlap)


@closing_bars()
def _run(name, objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every, max_seconds,
         seed, progress, checkpoint, average, delay, hogwild, schedule_options, overlap):
    data = epoch_source(name, objective)
    check_delay_and_hogwild(delay, schedule_options["project"], hogwild, bool(objective.bias))
    schedule = Schedule(objective, **schedule_options)
    state = SGDState(objective.n_features, bool(objective.bias), average, delay, hogwild)
    # the evaluations beside the epochs: on held data (an evaluation then reads memory, as
    # the epochs do), with the second core free (no delay, no Hogwild), no checkpoint
    # (whose epoch's arrays would be overwritten by the epoch after it), and a threading
    # layer that runs parallel kernels from two threads at once (other runs in lockstep
    # may launch theirs while the evaluation runs); and not on data so small that handing
    # an evaluation to another thread costs more than it (the parallel kernels' threshold)
    overlap = (overlap and eval_every and not (delay or hogwild) and checkpoint is None
               and spare_thread(objective)
               and data.hold_rows()  # before the nonzeros, which a row subset counts once
               and objective.source.nnz + objective.n_samples >= SERIAL_BELOW
               and threadsafe_parallel())
    with Evaluations(overlap, name) as evaluations:
        start = functools.partial(_start, evaluations, objective, w0) if overlap else None
        run = EpochRun(name, objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every,
                       max_seconds, seed, progress, checkpoint, start, evaluations_only=True)
        # a start evaluated beside the first epoch, which starts at once from w0
        deferred = run.resumed is None and run.state is None
        w_start = start_point(objective, w0) if deferred else None
        if run.resumed is not None:
            state.restore(run.resumed, f"{checkpoint.path}: damaged checkpoint")
        else:
            state.start_at(w_start if deferred else run.state.w)
        # epochs swept, not yet recorded: (EpochEnd, w, steps, Future of its evaluation or
        # None); the passes made, an evaluation's counted once submitted (its thread counts
        # it in the objective before or after the next epoch ends; a deferred start's too,
        # which its history entry has); the end before the first epoch, to go back to if a
        # deferred start's evaluation meets the stopping rule
        pending, stop = [], None
        passes = run.history[0]["passes"] if deferred else objective.passes
        first = run.epoch_end(passes) if deferred else None
        while run.next_epoch():
            sgd_epoch(objective, state, schedule, run.rng)
            passes += 1
            w = state.weights()  # a d-vector made once an epoch
            if not overlap:
                run.end_epoch(w, steps=state.steps)
                run.save(w, v=state.v, avg_u=state.avg_u, state=state.state)
                continue
            due = run.due()
            # the last evaluation (or the start's) has had this epoch's time
            if due and (pending or run.epoch >= max_iter):
                stop = _collect(run, pending, first, w_start)
                pending, first = [], None
                if stop is not None:
                    break
            if due and run.epoch >= max_iter:  # nothing to sweep beside it: on every thread
                run.end_epoch(w, steps=state.steps)
                continue
            pending.append((run.epoch_end(passes), w, state.steps,
                            evaluations.submit(objective.evaluate, w, False) if due else None))
            if due:
                passes += 1
        if stop is None:
            stop = _collect(run, pending, first, w_start)
    return run.result(state.weights() if stop is None else stop)


def _start(evaluations, objective, w0):
    """:class:`EpochRun`'s ``start`` beside the first epoch: the start's evaluation in the
    evaluation thread when held data takes the rows' way; else None, made by the run
    before the first epoch, so that the transpose it makes is made on every thread."""
    if objective.data.rows_way:
        return evaluations.submit(start_state, objective, w0, False)
    return None


def _collect(run, epochs, first=None, w_start=None):
    """Record ``epochs`` (swept beside their evaluations) in order, up to the first whose
    evaluation ends the run (converged, or not finite); return that epoch's w, the run
    rewound to it (the epochs after it undone, as they would not have run without
    overlap), or None. ``first``, at the first collection of a run whose start was
    evaluated beside the first epoch: the :class:`EpochEnd` before it, gone back to (and
    ``w_start`` returned) if the start meets the stopping rule."""
    if first is not None and run.back_to_start(first):
        return w_start
    for at, w, steps, evaluation in epochs:
        state = run.record(None if evaluation is None else evaluation.result(), at=at,
                           steps=steps)
        if run.converged or (state is not None and not np.isfinite(state.f)):
            run.rewind(at)
            return w
    return None


def pegasos(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=20,
            project=True, average=False, seed=0, eval_every=1, overlap=True, max_seconds=None,
            progress=False, checkpoint=None):
    """Pegasos: SGD with eta_t = 1 / (lam t) and, by default, the projection onto
    ||w|| <= 1 / sqrt(lam) (the paper compares it with the hinge loss). Parameters as
    :func:`sgd`."""
    return _run("pegasos", objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every,
                max_seconds, seed, progress, checkpoint, average, 0, False,
                dict(learning_rate="pegasos", project=project), overlap)


AVERAGE = Option("average", bool, False, "sgd / pegasos: averaged iterate", "--average")
# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord(
        "sgd", sgd, "stochastic", takes_checkpoint=True, takes_kink=True,
        options=(Option("learning_rate", str, "optimal", "sgd's schedule (default optimal, which "
                        "takes no --step)", "--learning-rate",
                        choices=("optimal", "constant", "invscaling")),
                 Option("eta0", float, None, STEP.help, "--step", check_step,
                        "a positive finite number"),
                 Option("power_t", float, None, "the exponent of the invscaling schedule"),
                 AVERAGE,
                 Option("project", bool, False, "project w onto the ball of radius "
                        "1 / sqrt(lam) after each step"),
                 Option("delay", int, 0, "sgd: updates delayed by up to K - 1 steps, on two "
                        "threads; 0 (default): serial SGD", "--delay",
                        lambda value: check_delay_and_hogwild(value, False), "an integer >= 0",
                        metavar="K"),
                 Option("hogwild", bool, False, "sgd: the steps on all threads at once, without "
                        "locks (Hogwild!); a run on several threads is not reproducible to the "
                        "bit; not with --intercept", "--hogwild"),
                 SEED,
                 Option("eval_every", int, 1, "evaluate the objective every this many epochs"),
                 OVERLAP, MAX_SECONDS)),
    SolverRecord(
        "pegasos", pegasos, "stochastic", takes_checkpoint=True, takes_kink=True,
        options=(Option("project", bool, True, "project w onto the ball of radius "
                        "1 / sqrt(lam) after each step"),
                 AVERAGE, SEED,
                 Option("eval_every", int, 1, "evaluate the objective every this many epochs"),
                 OVERLAP, MAX_SECONDS)),
)
