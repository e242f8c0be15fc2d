"""What every solver shares: its result, the stopping rule, the history, the warning."""

import time
from dataclasses import dataclass, field

import numpy as np

from .._progress import log_iteration, progress_bar
from .._warn import warn
from ..kernels import vector

PRECONDITIONER_WEIGHT = 0.01
ARMIJO_ETA = 0.01
MAX_HALVINGS = 60  # a Newton step along a nearly flat direction (an intercept) can be huge


class ConvergenceWarning(UserWarning):
    """A solver stopped before its stopping rule was met."""


@dataclass
class SolverResult:
    """The minimiser found and how it was reached.

    ``history`` has one dict per iteration (trial steps included, with ``accepted``):
    ``iteration``, ``f``, ``grad_norm``, ``cg_steps``, ``passes``, ``seconds`` and
    solver-specific entries (TRON: ``delta``; line-search Newton: ``step``).
    """

    w: np.ndarray
    f: float
    grad_norm: float
    n_iter: int
    converged: bool
    message: str
    passes: int
    seconds: float
    history: list = field(default_factory=list)


def stopping_threshold(objective, grad0_norm, tol, abs_tol=None, liblinear_tol=False):
    """The gradient norm at which to stop.

    ``tol * ||grad L(0)||``, with ``tol`` scaled by max(min(#pos, #neg), 1) / n when
    ``liblinear_tol`` (LIBLINEAR's rule for -s 0 / -s 2), or ``abs_tol`` if that is larger.
    """
    check_tol(tol)
    if liblinear_tol:
        n_neg, n_pos = objective.source.label_counts()
        tol = tol * max(min(n_pos, n_neg), 1) / objective.n_samples
    threshold = tol * grad0_norm
    if abs_tol is not None:
        check_tol(abs_tol, "abs_tol")
        threshold = max(threshold, abs_tol)
    return threshold


def check_tol(tol, name="tol"):
    """Refuse a stopping tolerance (``tol``, ``abs_tol``) that is not >= 0."""
    if not tol >= 0:
        raise ValueError(f"{name} must be >= 0, got {tol}")


def check_step(step, name="step"):
    """Refuse a step size (saga's and svrg's ``step``, sgd's ``eta0``) that is not a positive
    finite number."""
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"{name} must be a positive finite number, got {step}")


def check_seed(seed):
    """``seed`` as numpy's generators take it: None (fresh entropy, as scikit-learn's
    ``random_state=None``) or a non-negative integer."""
    if seed is None:
        return None
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        raise ValueError(f"seed must be None or a non-negative integer, got {seed!r}")
    return int(seed)


def check_max_seconds(max_seconds):
    if max_seconds is not None and not max_seconds >= 0:
        raise ValueError(f"max_seconds must be >= 0 or None, got {max_seconds}")


OVERFLOW = "a Hessian product is not finite (the feature values are too large: scale them)"


def check_w0(w0):
    """The warm start ``w0`` (of any shape) as a new float64 array; one holding NaN or
    infinite values is refused, naming its first such entry."""
    w = np.array(w0, dtype=np.float64)
    bad = np.argwhere(~np.isfinite(w))
    if len(bad):
        raise ValueError(f"w0[{', '.join(map(str, bad[0]))}] is {w[tuple(bad[0])]}: a warm "
                         f"start must hold finite values")
    return w


def start_point(objective, w0):
    """The start point: zeros if ``w0`` is None, else ``w0`` checked (:func:`check_w0`)."""
    return np.zeros(objective.n_variables) if w0 is None else check_w0(w0)


def start_state(objective, w0, curved=True):
    """The state at the start point ``w0`` (zeros if None) and ||grad L(0)||. Refuses a
    ``w0`` holding NaN or infinite values (:func:`check_w0`), and a start where L or its
    gradient is not finite (feature values so large that the loss overflows): the
    solvers' tests would compare with NaN, and TRON would reject steps forever."""
    w = start_point(objective, w0)
    state = objective.evaluate(w, curved)
    zero = objective.evaluate(np.zeros_like(w), False) if np.any(w) else state
    for point, at in ((zero, "w = 0"), (state, "w0")):
        if not (np.isfinite(point.f) and np.isfinite(point.grad_norm)):
            raise ValueError(f"the objective or its gradient's norm is not finite at {at} "
                             f"(L = {point.f:.3g}, ||grad|| = {point.grad_norm:.3g}): the "
                             f"feature values are too large for the loss; scale them")
    return state, zero.grad_norm


def diag_preconditioner(system, enabled):
    """M = 0.99 I + 0.01 diag(H) / lambda (Hsia, Chiang & Lin 2018) of a Newton system
    (``objective.newton_system``), or None (M = I) when not ``enabled``. (On the system's
    rest, where H is lambda I, M is I.)

    Hsia et al. (and LIBLINEAR) state M for the objective scaled by 1 / lambda, whose
    Hessian is I + C X^T D X with C = 1 / (lambda n); taken on our H = lambda I + X^T D X / n
    it would be 0.99 I plus a negligible diagonal, and precondition nothing."""
    if not enabled:
        return None
    diag = system.hess_diag()
    diag *= PRECONDITIONER_WEIGHT / system.lam
    diag += 1 - PRECONDITIONER_WEIGHT
    return diag


def trial_point(objective, state, step):
    """(w + ``step``, g.``step``) at ``state``, in one parallel sweep."""
    w = np.empty_like(state.w)
    return w, float(vector.moved(state.w, step, state.grad, w, objective.n_threads))


def line_search(objective, state, direction, eta=ARMIJO_ETA, curved=True):
    """Armijo backtracking from ``state`` along ``direction`` (a descent direction): the
    full step is evaluated (one pass), then :func:`backtracking`. Returns ``(PointState,
    t)``, or ``(None, 0.0)`` when no step passes. ``curved``: as ``objective.evaluate``'s."""
    w, gd = trial_point(objective, state, direction)
    return backtracking(objective, state, direction, objective.evaluate(w, curved), gd, eta,
                        curved)


def backtracking(objective, state, direction, trial, gd, eta=ARMIJO_ETA, curved=True):
    """The first of t = 1, 2^-1, ..., 2^-60 with f(w + t d) <= f(w) + eta t g.d, given
    ``trial``, the evaluated state at w + ``direction``, and ``gd`` = g.d: the halvings are
    tried from the margins of the two points (no pass), and the one that passes is
    evaluated (one more pass). Returns ``(PointState, t)``, or ``(None, 0.0)`` when no step
    passes."""
    if trial.f - state.f <= eta * gd:
        return trial, 1.0
    step = 0.5
    while step >= 2.0 ** -MAX_HALVINGS:
        if objective.value_on_segment(state, trial, step) - state.f <= eta * step * gd:
            # the rejected point's vectors of the rows go before the new point's are made
            # (where the caller keeps no reference: out of core they may be the largest)
            del trial
            return objective.evaluate(state.w + step * direction, curved), step
        step /= 2
    return None, 0.0


def m_dot(u, v, precond, work=None):
    """u^T M v for the diagonal preconditioner M (None: the identity); ``work``: scratch."""
    if precond is None:
        return float(u @ v)
    return float(u @ np.multiply(precond, v, out=work))


class PreconditionedCG:
    """The state of preconditioned CG on a Newton system H s = -g
    (``objective.newton_system``), shared by TRON and Newton: made once per run for ``n``
    unknowns at most, and :meth:`start`-ed by every solve.

    ``s`` the step, ``r = -g - H s`` the residual, ``z = M^-1 r``, ``d`` the direction,
    ``ztr = z.r``; after :meth:`move`, ``sms`` = s.M s, ``sr`` = s.r and, with ``model``,
    ``sg`` = s.g (the quadratic model is -(sr - sg) / 2), and ``shd`` = s.H d and ``dr``
    = d.r as they were before it. The vector updates are fused parallel sweeps
    (:mod:`~streamssvm.kernels.vector`) on ``n_parts`` threads: with millions of features
    the vectors come from memory, not cache. The solves reuse the vectors: fresh ones
    cost the first touch of their pages at every solve, so ``s`` and ``d`` are only valid
    until the next start. After
    :meth:`next_direction` in place, ``d`` is the new direction only once :meth:`hessp`
    has made it (the system's product makes it as it reads d).

    The vectors hold the system's columns. On its rest (:mod:`~streamssvm.objective.system`),
    where H is lambda I and M is I, r, d and s are multiples of r_0 = -g there, whose norms
    ``rho``, ``delta`` and ``sigma`` (signed) follow CG's recurrences as three scalars; the
    dot products above include their terms. (Norms, not multiples: a multiple's square
    times ||r_0||^2 underflowed where the product does not, with feature values of 1e100.)
    """

    def __init__(self, n, n_parts, model=False):
        self.n_parts, self.model = n_parts, model
        self._vectors = tuple(np.empty(n) for _ in range(5))

    def start(self, system, precond):
        """Begin a solve of ``system`` preconditioned by the diagonal ``precond`` (None: M
        = I): s = 0, r = -g, z = M^-1 r, d = z, in one sweep. Returns self."""
        n = len(system.grad)
        self.s, self.r, self._z, self._d, self.work = (v[:n] for v in self._vectors)
        self.system, self.g, self.precond = system, system.grad, precond
        self.z = self.r if precond is None else self._z
        self.d = self._d
        vector.cg_start(self.g, precond, self.s, self.r, self.z, self.d, self.n_parts)
        self.rest_norm, self.rest_lam = np.sqrt(system.rest_norm2), system.rest_curvature
        self.rho, self.delta, self.sigma = self.rest_norm, self.rest_norm, 0.0
        self.ztr = self._ztr_next = float(self.z @ self.r) + self.rho * self.rho
        self.sms = self.sr = self.sg = self.shd = self.dr = 0.0
        self._beta = None
        return self

    def hessp(self):
        """H d and d.H d (d made first if :meth:`next_direction` left it to this)."""
        if self._beta is None:
            hd, dhd = self.system.hessp_quad(self.d)
        else:
            hd, dhd = self.system.hessp_quad(self.d, self.z, self._beta)
            self._beta = None
        return hd, dhd + self.rest_lam * self.delta * self.delta

    def move(self, alpha, hd):
        """s += alpha d, r -= alpha H d, z = M^-1 r: one sweep."""
        sms, zr, sr, sg, shd, dr = (float(v) for v in vector.cg_move(
            alpha, self.d, hd, self.s, self.r, self.precond, self.z,
            self.g if self.model else None, self.n_parts))
        if self.rest_norm:
            delta = self.delta
            shd += self.sigma * self.rest_lam * delta
            dr += delta * self.rho
            self.sigma += alpha * delta
            self.rho -= alpha * self.rest_lam * delta
            sms += self.sigma * self.sigma
            zr += self.rho * self.rho
            sr += self.sigma * self.rho
            if self.model:
                sg -= self.sigma * self.rest_norm
        self.sms, self._ztr_next, self.sr, self.sg, self.shd, self.dr = sms, zr, sr, sg, shd, dr

    def next_direction(self, out=None):
        """d = z + (z.r / previous z.r) d: into ``out``, which becomes d (the previous d
        is then left as it was), or in place by the next :meth:`hessp`, as the system's
        product reads d (until then ``d`` is the previous direction)."""
        beta = self._ztr_next / self.ztr
        if out is None:
            self._beta = beta
        else:
            vector.cg_direction(beta, self.z, self.d, out, self.n_parts)
            self.d = out
        self.delta = self.rho + beta * self.delta
        self.ztr = self._ztr_next

    def m_dots(self):
        """s.M d and d.M d."""
        delta = self.delta
        return (m_dot(self.s, self.d, self.precond, self.work) + self.sigma * delta,
                m_dot(self.d, self.d, self.precond, self.work) + delta * delta)

    def step(self, direction=False):
        """The step s (or the direction d) as a vector of the variables."""
        norm = self.delta if direction else self.sigma
        return self.system.step(self.d if direction else self.s,
                                norm / self.rest_norm if self.rest_norm else 0.0)


def bar_label(name, progress):
    """The label of solver ``name``'s bar: its name, after ``progress`` when that is a str
    (one-vs-rest's "class 3 (2/20)")."""
    return f"{progress}: {name}" if isinstance(progress, str) else name


class Run:
    """Book-keeping of a second-order or full-gradient solver: start point, stopping
    threshold, history, progress bar (closed by :meth:`result`, or by the solver's
    ``closing_bars`` however the run ends), checkpoints and the final result. ``run.state`` is
    the current PointState; ``run.resumed`` the solver scalars of the checkpoint resumed
    from (empty on a fresh start); ``run.stopped`` the message of a run that stopped for
    the solver's own reason (a line search failed, too small a decrease: no budget would
    take it further), which the checkpoint keeps, so that the same call again returns
    its result at once. ``curved``: whether its states keep a copy of the curved rows, for
    Hessian products (TRON and Newton; ``objective.evaluate``)."""

    def __init__(self, name, objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
                 checkpoint=None, max_seconds=None, curved=True):
        if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0):
            raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
        check_max_seconds(max_seconds)
        if objective.loss.kinked:  # the gradient's norm would stop the run anywhere
            raise ValueError(f"{name} needs a loss with a gradient; {objective.loss.name}'s "
                             f"slope jumps at its kink: use sdca, sgd or pegasos, or a smooth "
                             f"hinge (psi_g, psi_m)")
        self.name, self.objective, self.max_iter = name, objective, max_iter
        self.label = bar_label(name, progress)
        self.max_seconds, self.message = max_seconds, "max_iter reached"
        self.stopped, self._due = None, False
        self.start = time.perf_counter()
        self.checkpoint, self.resumed, self._scalars = checkpoint, {}, {}
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is not None:
            meta, arrays = saved
            self.state = objective.evaluate(arrays["w"], curved)
            self.threshold = meta["threshold"]
            self.iteration, self.history = meta["iteration"], meta["history"]
            objective.passes += meta["passes"]
            self.start -= meta["seconds"]
            self.resumed = meta["solver"]
            self.stopped = meta.get("stopped")
            self.message = self.stopped or self.message
            self._scalars = dict(self.resumed)  # what the next save keeps if no step is taken
        else:
            self.state, grad0_norm = start_state(objective, w0, curved)
            self.threshold = stopping_threshold(objective, grad0_norm, tol, abs_tol,
                                                liblinear_tol)
            self.history = []
            self.iteration = 0
            self.record(0, True)
        self.bar = progress_bar(progress, unit="it", desc=self.label)

    def save(self, force=False, **scalars):
        """Checkpoint the current point, the history and the solver's ``scalars`` (if a
        checkpoint was asked for and is due)."""
        self._scalars = scalars
        if self.checkpoint is not None:
            self.checkpoint.save(dict(iteration=self.iteration, history=self.history,
                                      passes=self.objective.passes, threshold=self.threshold,
                                      seconds=time.perf_counter() - self.start, solver=scalars,
                                      stopped=self.stopped),
                                 {"w": self.state.w}, force=force)

    @property
    def converged(self):
        return self.state.grad_norm <= self.threshold

    def going(self):
        """True while another iteration is due: not stopped nor converged, iterations and
        time left. A loop left while one was due stopped for the solver's reason."""
        self._due = False
        if self.stopped or self.converged or self.iteration >= self.max_iter:
            return False
        if self.max_seconds is not None and time.perf_counter() - self.start >= self.max_seconds:
            self.message = "max_seconds reached"
            return False
        self._due = True
        return True

    def record(self, cg_steps, accepted, **extra):
        self.history.append(dict(iteration=self.iteration, f=self.state.f,
                                 grad_norm=self.state.grad_norm, cg_steps=cg_steps,
                                 passes=self.objective.passes,
                                 seconds=time.perf_counter() - self.start, accepted=accepted,
                                 **extra))
        log_iteration(self.label, self.history[-1])

    def searched(self, trial, cg_steps=0):
        """Whether a line search found a step (``trial``, its PointState, not None); if not,
        the history records the failed iteration and the run stops with the reason."""
        if trial is None:
            self.record(cg_steps, False, step=0.0)
            self.message = "line search failed"
        return trial is not None

    def stalled(self, before, rtol):
        """Whether the step just accepted from ``before`` (a PointState) changed f by at
        most ``rtol`` |f|; if so, the run stops with the reason."""
        if abs(before.f - self.state.f) <= rtol * abs(self.state.f):
            self.message = "objective decrease too small"
            return True
        return False

    def accept(self, state):
        """Move to ``state`` (a new iterate)."""
        self.iteration += 1
        self.state = state
        self.bar.update(1)
        self.bar.set_postfix(f=f"{state.f:.6g}", grad=f"{state.grad_norm:.3g}",
                             passes=self.objective.passes, refresh=False)

    def result(self):
        """The SolverResult, checkpointed; ``self.message`` says why the run stopped if
        unconverged (kept as ``stopped`` if not for lack of iterations or time)."""
        message = self.message
        self.bar.close()
        converged = self.converged
        if self._due and not converged:
            self.stopped = message
        self.save(force=True, **self._scalars)
        if converged:
            message = "converged"
        else:
            warn(f"{self.name} stopped unconverged ({message}): ||grad|| = "
                 f"{self.state.grad_norm:.3g} > {self.threshold:.3g}", ConvergenceWarning)
        return SolverResult(w=self.state.w, f=self.state.f, grad_norm=self.state.grad_norm,
                            n_iter=self.iteration, converged=converged, message=message,
                            passes=self.objective.passes, seconds=time.perf_counter() - self.start,
                            history=self.history)
