"""Full gradient descent with a backtracking step (the paper's FGD, eq. (GD)).

    w <- w - eta_t grad L(w)

with eta_t found by Armijo backtracking from twice the last accepted step, so that L never
increases. Order of oracle calls per iteration: ``objective.evaluate`` at the trial point
(one pass); if Armijo's condition fails, smaller steps from the cached margins
(``value_on_segment``, no pass) and one more ``evaluate``.

References
----------
Y. Nesterov, Introductory Lectures on Convex Optimization (2004), section 2.1.5.
"""

import numpy as np

from .._progress import closing_bars
from .common import Run, line_search
from .registry import MAX_SECONDS, SolverRecord


def initial_step(state):
    """A first step length 1 / ||grad||: a unit move, refined by the line search."""
    return 1.0 / max(state.grad_norm, np.finfo(float).tiny)


@closing_bars()
def gd(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=1000,
       max_seconds=None, progress=False, checkpoint=None):
    """Minimise ``objective`` by gradient descent with backtracking.

    Parameters
    ----------
    objective : SmoothSVMObjective
    w0 : array of shape (n_variables,), optional
    tol, abs_tol, liblinear_tol, max_iter
        Stopping rule, as for :func:`~streamssvm.solvers.tron`.
    max_seconds : float, optional
    progress : bool or str
    checkpoint : Checkpoint, optional
        As for :func:`~streamssvm.solvers.tron`.

    Returns
    -------
    SolverResult
        ``history`` entries have ``step``, the accepted step length eta_t.
    """
    run = Run("gd", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              checkpoint, max_seconds, curved=False)
    eta = run.resumed.get("eta") or initial_step(run.state)
    while run.going():
        state = run.state
        trial, fraction = line_search(objective, state, -2.0 * eta * state.grad, curved=False)
        if not run.searched(trial):
            break
        eta *= 2.0 * fraction
        run.accept(trial)
        run.record(0, True, step=eta)
        run.save(eta=eta)
        if run.stalled(state, 1e-15):
            break
    return run.result()


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord("gd", gd, "full_gradient", options=(MAX_SECONDS,), takes_checkpoint=True),
)
