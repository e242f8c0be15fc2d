"""Trust-region Newton method with (preconditioned) conjugate gradient: TRON.

Order of oracle calls per iteration: ``state = objective.evaluate(w)`` (one pass: f, grad,
curvature), then CG on the state's ``objective.newton_system`` makes one Hessian product
(a pass) per step (none after a rejected step when the last solve's steps were kept:
``reuse_cg``), then the trial point is evaluated with ``objective.evaluate(w + s)``, whose
state becomes the current one if the step is accepted (its gradient and curvature are
then already there, so an accepted iteration costs ``1 + cg_steps`` passes). With a
preconditioner, the system's diagonal adds one pass at each point CG starts from. With
``backtrack``, a rejected trial is followed by a backtracking step (one pass).

The radius follows LIBLINEAR's rule (Lin, Weng & Keerthi 2008, eq. 10, whose constants the
paper takes): for eta1 < rho < eta2 the new radius lies in [sigma1 Delta, sigma3 Delta],
where the paper's Algorithm 1 writes [delta1 Delta, delta2 Delta]; and the first step caps
the radius at its length ||s||, as LIBLINEAR does.

References
----------
C.-J. Lin, R. C. Weng, S. S. Keerthi, "Trust region Newton method for large-scale logistic
regression", JMLR 9 (2008) 627-650 (the trust-region constants used here).
J. Luo, H. Qiao, B. Zhang, "Learning with smooth hinge losses", Algorithms 1-2 and Theorem 4.
J. Nocedal, Y. Yuan, "Combining trust region and line search techniques", in Advances in
Nonlinear Programming (1998) 153-175 (``backtrack``).
C.-Y. Hsia, W.-L. Chiang, C.-J. Lin, "Preconditioned conjugate gradient methods in truncated
Newton frameworks for large-scale linear classification", ACML 2018 (M = 0.99 I + 0.01 diag H).
"""

import numpy as np

from .._memory import available_memory_bytes
from .._progress import closing_bars
from .common import (OVERFLOW, PreconditionedCG, Run, backtracking, diag_preconditioner,
                     m_dot, trial_point)
from .registry import MAX_SECONDS, Option, SolverRecord

ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0


def _to_boundary(std, sts, dtd, delta):
    """tau >= 0 with ||s + tau d||_M = delta, given s.M d, s.M s <= delta^2 and d.M d."""
    dsq = delta * delta
    rad = np.sqrt(max(std * std + dtd * (dsq - sts), 0.0))
    return (dsq - sts) / (std + rad) if std >= 0 else (rad - std) / dtd


class _CGPath:
    """The directions d_j and step lengths of the last :func:`_trust_region_cg`, kept so
    that the smaller region after a rejected step costs no Hessian product.

    From the same g, H and M, CG takes the same steps whatever the radius until a step
    leaves the region, and Steihaug's iterates grow in ||.||_M: within a smaller radius
    the solve ends at s_j + tau d_j, j the first step that leaves it and s_j the sum of
    the steps before (which the paper's Algorithm 1 computes again, one Hessian product
    each). The directions are written into kept buffers instead of over each other (no
    copies), at most ``capacity`` of them; a region whose step was not kept is solved
    again."""

    def __init__(self, n, budget_bytes):
        self.capacity = max(int(budget_bytes // (8 * n)), 1)
        self.buffers = []
        self.reset()

    def reset(self, state=None):
        """Forget the path (and the state it was for): a solve at ``state`` begins."""
        self.state, self.full = state, False
        self.directions, self.steps = [], []

    def record(self, d, alpha, cg, dhd, start_sr):
        """Step j, just taken by ``cg`` (a PreconditionedCG): s_{j+1} = s_j + alpha d, with
        the scalars a step to the boundary needs: d.H d, s_j.r_j (``start_sr``), s_j.H d
        and d.r_j, and the end's ||s_{j+1}||_M^2."""
        if not self.full:
            self.directions.append(d)
            self.steps.append((alpha, dhd, start_sr, cg.shd, cg.dr, cg.sms))

    def spare(self):
        """A buffer for CG's next direction, or None (CG then overwrites the last kept
        one, which is forgotten, and the path stops growing)."""
        k = len(self.directions) - 1  # d_0 is CG's own array
        if self.full or k >= self.capacity - 1:
            if not self.full:
                self.full = True
                self.directions.pop()
                self.steps.pop()
            return None
        if k == len(self.buffers):
            self.buffers.append(np.empty_like(self.directions[0]))
        return self.buffers[k]

    def step_within(self, delta, precond):
        """(s, s.r) of the solve within ``delta`` from the kept path, or None when the step
        that leaves the region was not kept. s.r (r = -g - H s) is expanded in the kept
        scalars, which are the terms a new solve's residual would have."""
        j = next((j for j, step in enumerate(self.steps) if step[-1] > delta * delta), None)
        if j is None:
            return None
        s = np.zeros_like(self.directions[0])
        for (alpha, *_), d in zip(self.steps[:j], self.directions):
            s += alpha * d
        d = self.directions[j]
        _, dhd, sr, shd, dr, _ = self.steps[j]
        tau = _to_boundary(m_dot(s, d, precond), m_dot(s, s, precond), m_dot(d, d, precond),
                           delta)
        s += tau * d
        return s, float(sr + tau * (dr - shd) - tau * tau * dhd)


def _trust_region_cg(system, precond, delta, forcing, cg, path=None):
    """Steihaug-Toint CG on the model g.s + s.H.s / 2 of a Newton system
    (``objective.newton_system``) within ||s||_M <= delta, by ``cg`` (a
    PreconditionedCG, started here).

    Returns the step (a vector of the variables), s.r for the residual r = -g - H s,
    ||s||_M^2, the CG steps taken and whether the step reached the boundary. Stops when
    ||r||_{M^-1} <= forcing * ||g||_{M^-1}. ``precond`` None is M = I. The steps are kept
    in ``path`` (a :class:`_CGPath`) if given.
    """
    cg.start(system, precond)
    if path is not None:
        path.reset(system.state)
    cgtol = forcing * np.sqrt(cg.ztr)
    steps = 0
    on_boundary = False
    while steps < max(system.n_variables, 5) and np.sqrt(cg.ztr) > cgtol:
        steps += 1
        d = cg.d
        hd, dhd = cg.hessp()
        if dhd <= 0.0:  # no curvature along d (an unregularised intercept's, no row curved):
            on_boundary = True  # the model falls along d to the boundary (Steihaug)
            break
        alpha = cg.ztr / dhd
        start_sr = cg.sr
        # from s = 0 along d = M^-1 r, ||alpha d||_M^2 = alpha^2 z.r: a first step that
        # leaves the region stops on its boundary at once (one sweep, not three); the path
        # keeps that end, which every smaller region also leaves
        first_out = steps == 1 and alpha * alpha * cg.ztr > delta * delta
        cg.move(delta / np.sqrt(cg.ztr) if first_out else alpha, hd)
        if path is not None:
            path.record(d, alpha, cg, dhd, start_sr)
        if first_out:
            return cg.step(), cg.sr, cg.sms, steps, True
        if np.sqrt(cg.sms) > delta:
            cg.move(-alpha, hd)  # back inside, then along d to the boundary
            on_boundary = True
            break
        cg.next_direction(path.spare() if path is not None else None)
    if on_boundary:
        std, dtd = cg.m_dots()
        cg.move(_to_boundary(std, cg.sms, dtd, delta), hd)
    return cg.step(), cg.sr, cg.sms, steps, on_boundary


@closing_bars()
def tron(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=1000,
         forcing="constant", xi=0.1, kappa=1.0, preconditioner=False, backtrack=False,
         reuse_cg=True, max_seconds=None, progress=False, checkpoint=None):
    """Minimise ``objective`` with TRON.

    Parameters
    ----------
    objective : SmoothSVMObjective
        Oracle with ``evaluate`` and ``newton_system`` (see its docstring).
    w0 : array of shape (n_variables,), optional
        Starting point (default zeros).
    tol : float
        Stop when ||grad L(w)|| <= tol * ||grad L(0)||.
    abs_tol : float, optional
        Also stop when ||grad L(w)|| <= abs_tol (the paper's rule).
    liblinear_tol : bool
        Multiply ``tol`` by max(min(#pos, #neg), 1) / n, as LIBLINEAR does for -s 0 / -s 2.
    max_iter : int
        Maximum number of accepted iterations.
    forcing : {"constant", "quadratic"}
        CG stops at ||r|| <= xi_t ||g|| with xi_t = xi, or xi_t = min(xi, kappa ||g||)
        (the quadratic regime of the paper's Theorem 4).
    preconditioner : bool
        Precondition CG by M = 0.99 I + 0.01 diag(H) (one more pass per iteration).
    backtrack : bool
        A rejected trial step s is not thrown away: the largest t = 2^-k (k = 1..60) with
        f(w + t s) <= f(w) + 0.01 t g.s is found from the two points' margins (no pass)
        and w + t s evaluated (one pass) and accepted, with radius t ||s||_M (Nocedal &
        Yuan 1998). Off: the paper's Algorithm 1, which keeps w and solves again in a
        smaller region: a rejected step's CG work is not thrown away.
    reuse_cg : bool
        Where a Hessian product reads the file (``objective.hessp_reads_file``), keep each
        solve's CG directions (one vector per CG step, within an eighth of the memory free
        at the start), so that after a rejected step the smaller region's step is found
        from them without Hessian products (see :class:`_CGPath`): the iterates of solving
        again, as the paper's Algorithm 1 does, up to rounding (so whether the products
        read the file, e.g. whether the curved rows fit in memory, can change the last
        bits, which an ill-conditioned problem amplifies). In memory the directions' extra
        memory traffic costs more than the products it saves. Unused with ``backtrack``,
        which solves no region twice.
    max_seconds : float, optional
        Also stop after this long (checked between iterations).
    progress : bool or str
        A tqdm bar over iterations (a str: its label, before the solver's name).
    checkpoint : Checkpoint, optional
        Resume from it if its file exists; write it as iterations end (see
        :mod:`~streamssvm.solvers.checkpoint`).

    Returns
    -------
    SolverResult
    """
    if forcing not in ("constant", "quadratic"):
        raise ValueError(f"forcing must be 'constant' or 'quadratic', got {forcing!r}")
    if not 0 < xi < 1:
        raise ValueError(f"xi must be in (0, 1), got {xi}")
    if not 0 < kappa < np.inf:
        raise ValueError(f"kappa must be a positive number, got {kappa}")
    run = Run("tron", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              checkpoint, max_seconds)
    system = objective.newton_system(run.state)
    precond = diag_preconditioner(system, preconditioner)
    delta = run.resumed.get("delta")
    if delta is None:
        g = system.grad
        delta = np.sqrt(float(g @ (g if precond is None else g / precond)) + system.rest_norm2)
        run.history[0]["delta"] = delta  # the start's record gets the initial radius too
    n = objective.n_variables
    path = _CGPath(n, available_memory_bytes() // 8) if reuse_cg and not backtrack else None
    cg = PreconditionedCG(n, objective.n_threads)
    while run.going():
        state = run.state
        if system.state is not state:
            system = objective.newton_system(state)
            precond = diag_preconditioner(system, preconditioner)
        kept = (path.step_within(delta, precond)
                if path is not None and path.state is state else None)
        if kept is not None:
            (s, sr), steps, on_boundary = kept, 0, True
            sms = m_dot(s, s, precond)
        else:
            xi_t = xi if forcing == "constant" else min(xi, kappa * state.grad_norm)
            keep = path is not None and objective.hessp_reads_file(state)
            if path is not None and not keep:
                path.reset()  # products from memory: no path (nor an old state) is kept
            s, sr, sms, steps, on_boundary = _trust_region_cg(system, precond, delta, xi_t,
                                                               cg, path if keep else None)
        w, gs = trial_point(objective, state, s)
        predicted = -0.5 * (gs - sr)
        if not np.isfinite(predicted):  # else every test below is False: rejected forever
            run.message = OVERFLOW
            break
        trial = objective.evaluate(w)
        actual = state.f - trial.f
        snorm = np.sqrt(sms)
        if run.iteration == 0:
            delta = min(delta, snorm)
        denom = trial.f - state.f - gs
        alpha = SIGMA3 if denom <= 0 else max(SIGMA1, -0.5 * gs / denom)
        if actual < ETA0 * predicted:
            delta = min(alpha * snorm, SIGMA2 * delta)
        elif actual < ETA1 * predicted:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actual < ETA2 * predicted:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        elif on_boundary:
            delta = SIGMA3 * delta
        else:
            delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        accepted = actual > ETA0 * predicted
        step = 1.0 if accepted else 0.0
        if not accepted and backtrack:
            trial, step = backtracking(objective, state, s, trial, gs)
            if trial is not None:
                accepted, delta = True, step * snorm
        if accepted:
            run.accept(trial)
        run.record(steps, accepted, delta=delta, **(dict(step=step) if backtrack else {}))
        run.save(delta=delta)
        if run.converged:
            break
        if predicted <= 0:
            run.message = "predicted reduction <= 0"
            break
        if abs(actual) <= 1e-12 * abs(run.state.f) and abs(predicted) <= 1e-12 * abs(run.state.f):
            run.message = "actual and predicted reductions too small"
            break
    return run.result()


PRECONDITIONER = Option("preconditioner", bool, False, "diagonal preconditioner for CG (tron; "
                        "newton always uses it)", "--preconditioner")
# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord(
        "tron", tron, "second_order", takes_checkpoint=True, uses_hessian_products=True,
        options=(Option("forcing", str, "constant", "tron's CG forcing term: 0.1 (constant, the "
                        "default), or min(0.1, ||grad||) (quadratic regime)", "--forcing",
                        choices=("constant", "quadratic")),
                 Option("xi", float, 0.1, "CG's forcing constant"),
                 Option("kappa", float, 1.0, "the quadratic forcing term's factor of ||grad||"),
                 PRECONDITIONER,
                 Option("backtrack", bool, False, "tron: take a backtracking step along a "
                        "rejected trial step instead of solving again in a smaller region "
                        "(Nocedal & Yuan)", "--backtrack"),
                 Option("reuse_cg", bool, True, "keep CG's directions where Hessian products "
                        "read the file, to solve a smaller region without them"),
                 MAX_SECONDS)),
)
