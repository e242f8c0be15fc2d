"""Trust-region Newton method with (preconditioned) conjugate gradient: TRON.

Order of oracle calls per iteration: ``state = objective.evaluate(w)`` (one pass: f, grad,
curvature), then CG makes one ``objective.hessp(state, d)`` pass per step, then the trial
point is evaluated with ``objective.evaluate(w + s)``, whose state becomes the current one
if the step is accepted (its gradient and curvature are then already there, so an accepted
iteration costs ``1 + cg_steps`` passes). With a preconditioner, ``objective.hess_diag``
adds one pass per accepted iteration. With ``backtrack``, a rejected trial is followed by a
backtracking step (one pass).

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

from .common import PreconditionedCG, Run, backtracking, diag_preconditioner, m_dot

ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0


def _trust_region_cg(objective, state, precond, delta, forcing):
    """Steihaug-Toint CG on the model g.s + s.H.s / 2 within ||s||_M <= delta.

    Returns the step, the residual r = -g - H s, the CG steps taken and whether the step
    reached the boundary. Stops when ||r||_{M^-1} <= forcing * ||g||_{M^-1}. ``precond``
    None is M = I.
    """
    cg = PreconditionedCG(state.grad, precond, objective.n_threads)
    s, d = cg.s, cg.d
    cgtol = forcing * np.sqrt(cg.ztr)
    steps = 0
    while steps < max(len(s), 5) and np.sqrt(cg.ztr) > cgtol:
        steps += 1
        hd = objective.hessp(state, d)
        alpha = cg.ztr / float(d @ hd)
        cg.move(alpha, hd)
        if np.sqrt(cg.sms) > delta:
            cg.move(-alpha, hd)  # back inside, then along d to the boundary
            std, sts, dtd = cg.m_dot(s, d), cg.sms, cg.m_dot(d, d)
            dsq = delta * delta
            rad = np.sqrt(max(std * std + dtd * (dsq - sts), 0.0))
            cg.move((dsq - sts) / (std + rad) if std >= 0 else (rad - std) / dtd, hd)
            return s, cg.r, steps, True
        cg.next_direction()
    return s, cg.r, steps, False


def tron(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=1000,
         forcing="constant", xi=0.1, kappa=1.0, preconditioner=False, backtrack=False,
         max_seconds=None, progress=False, checkpoint=None):
    """Minimise ``objective`` with TRON.

    Parameters
    ----------
    objective : SmoothSVMObjective
        Oracle with ``evaluate``, ``hessp``, ``hess_diag`` (see its docstring).
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
        smaller region. On a9a, w8a and news20 it saved 10-48% of the CG steps of runs
        that rejected steps.
    max_seconds : float, optional
        Also stop after this long (checked between iterations).
    progress : bool
        A tqdm bar over iterations.
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
    run = Run("tron", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              checkpoint, max_seconds)
    precond = diag_preconditioner(objective, run.state, preconditioner)
    g = run.state.grad
    delta = run.resumed.get("delta")
    if delta is None:
        delta = np.sqrt(float(g @ (g if precond is None else g / precond)))
        run.history[0]["delta"] = delta  # the start's record gets the initial radius too
    while run.going():
        state = run.state
        xi_t = xi if forcing == "constant" else min(xi, kappa * state.grad_norm)
        s, r, steps, on_boundary = _trust_region_cg(objective, state, precond, delta, xi_t)
        trial = objective.evaluate(state.w + s)
        gs = float(state.grad @ s)
        predicted = -0.5 * (gs - float(s @ r))
        actual = state.f - trial.f
        snorm = np.sqrt(m_dot(s, s, precond))
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
            trial, step = backtracking(objective, state, s, trial)
            if trial is not None:
                accepted, delta = True, step * snorm
        if accepted:
            run.accept(trial)
            precond = diag_preconditioner(objective, trial, preconditioner)
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
