"""Nesterov's accelerated gradient with backtracking and adaptive restart.

    x_{k+1} = y_k - eta_k grad L(y_k),   y_{k+1} = x_{k+1} + (t_k - 1) / t_{k+1} (x_{k+1} - x_k)

with t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2; eta_k by backtracking until
L(x_{k+1}) <= L(y_k) - eta_k / 2 ||grad L(y_k)||^2 (starting from 1.25 eta_{k-1}, so the step
can grow back); the momentum restarts (t = 1, y = x) when grad L(y_k).(x_{k+1} - x_k) > 0
(O'Donoghue & Candes' gradient restart). L(x_k) may increase between iterations; the
history records the x_k. Order of oracle calls per iteration: ``objective.evaluate`` at
x_{k+1} (one pass, plus one after a backtrack, whose trial steps use the margins) and at
y_{k+1} (one pass; none after a restart or the last iteration).

References
----------
Y. Nesterov, Introductory Lectures on Convex Optimization (2004), section 2.2.
B. O'Donoghue, E. Candes, "Adaptive restart for accelerated gradient schemes", Foundations of
Computational Mathematics 15 (2015).
"""

import math

from .._progress import closing_bars
from .common import Run, line_search
from .gd import initial_step
from .registry import MAX_SECONDS, SolverRecord

GROWTH = 1.25


@closing_bars()
def agd(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=1000,
        max_seconds=None, progress=False):
    """Minimise ``objective`` by Nesterov's accelerated gradient method.

    Parameters and result as :func:`~streamssvm.solvers.gd`; ``history`` entries also have
    ``restart``.
    """
    run = Run("agd", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              max_seconds=max_seconds, curved=False)
    eta = initial_step(run.state)
    y, t = run.state, 1.0
    while run.going():
        x = run.state
        eta *= GROWTH
        x_new, fraction = line_search(objective, y, -eta * y.grad, eta=0.5, curved=False)
        if not run.searched(x_new):
            break
        eta *= fraction
        move = x_new.w - x.w
        restart = float(y.grad @ move) > 0.0
        run.accept(x_new)
        run.record(0, True, step=eta, restart=restart)
        if not run.going():  # no extrapolation to evaluate for an iteration not taken
            break
        if restart:
            y, t = x_new, 1.0
        else:
            t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            y = objective.evaluate(x_new.w + ((t - 1.0) / t_new) * move, curved=False)
            t = t_new
    return run.result()


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord("agd", agd, "full_gradient", options=(MAX_SECONDS,)),
)
