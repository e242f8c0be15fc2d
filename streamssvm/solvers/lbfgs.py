"""Limited-memory BFGS with an Armijo backtracking line search.

The direction is -H g with H the L-BFGS inverse-Hessian approximation of the last
``memory`` pairs (s, y) = (w_{k+1} - w_k, grad_{k+1} - grad_k) (two-loop recursion, initial
scaling s.y / y.y); a pair with s.y <= 1e-10 ||s|| ||y|| is skipped (L is convex, so this
only guards rounding). Order of oracle calls per iteration: ``objective.evaluate`` at
w + d (one pass); if Armijo's condition fails, shorter steps from the cached margins
(no pass) and one more ``evaluate``. L never increases.

References
----------
D. C. Liu, J. Nocedal, "On the limited memory BFGS method for large scale optimization",
Mathematical Programming 45 (1989).
J. Nocedal, S. J. Wright, Numerical Optimization (2006), Algorithm 7.4.
"""

from collections import deque

import numpy as np

from .._progress import closing_bars
from .common import Run, line_search
from .registry import MAX_SECONDS, Option, SolverRecord
from .gd import initial_step


def _two_loop(g, pairs):
    """H g for the L-BFGS matrix of ``pairs`` [(s, y, 1 / s.y)], oldest first."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        alpha = rho * float(s @ q)
        q -= alpha * y
        alphas.append(alpha)
    s, y, _ = pairs[-1]
    q *= float(s @ y) / float(y @ y)
    for (s, y, rho), alpha in zip(pairs, reversed(alphas)):
        q += (alpha - rho * float(y @ q)) * s
    return q


@closing_bars()
def lbfgs(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=1000,
          memory=10, max_seconds=None, progress=False):
    """Minimise ``objective`` by L-BFGS.

    Parameters
    ----------
    objective : SmoothSVMObjective
    w0 : array of shape (n_variables,), optional
    tol, abs_tol, liblinear_tol, max_iter
        Stopping rule, as for :func:`~streamssvm.solvers.tron`.
    memory : int
        Number of (s, y) pairs kept.
    max_seconds : float, optional
    progress : bool or str

    Returns
    -------
    SolverResult
        ``history`` entries have ``step``, the accepted fraction of the L-BFGS step.
    """
    if not (isinstance(memory, (int, np.integer)) and memory >= 1):
        raise ValueError(f"memory must be an integer >= 1, got {memory!r}")
    run = Run("lbfgs", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              max_seconds=max_seconds, curved=False)
    pairs = deque(maxlen=memory)
    while run.going():
        state = run.state
        if pairs:
            direction = -_two_loop(state.grad, pairs)
        else:
            direction = -initial_step(state) * state.grad
        trial, step = line_search(objective, state, direction, curved=False)
        if not run.searched(trial):
            break
        s, y = trial.w - state.w, trial.grad - state.grad
        sy = float(s @ y)
        if sy > 1e-10 * np.linalg.norm(s) * np.linalg.norm(y):
            pairs.append((s, y, 1.0 / sy))
        run.accept(trial)
        run.record(0, True, step=step)
        if run.stalled(state, 1e-15):
            break
    return run.result()


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord("lbfgs", lbfgs, "second_order",
                          options=(Option("memory", int, 10, "number of (s, y) pairs kept"),
                                   MAX_SECONDS)),
)
