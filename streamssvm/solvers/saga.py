"""SAGA, streamed block by block: one scalar per sample, lazy dense steps.

Step on row i (s_i the slope psi' stored at its last visit, g the average (1/n) sum_j s_j y_j x_j):

    w <- (1 - eta lam) w - eta (g + (psi'(y_i w.x_i) - s_i) y_i x_i),   then s_i, g updated.

The dense part is applied lazily (:func:`~streamssvm.kernels.stochastic.saga_rows`), so a
step costs O(nnz of the row). The table s starts at the slopes of w0 (one evaluation, which
also gives g exactly). Order of oracle calls: ``objective.smoothness`` (one pass, for the
default step 1 / (3 L_max)), ``objective.evaluate`` at w0, then per epoch one epoch of
the data plan (``objective.data.epoch``, one pass) and ``objective.evaluate`` every
``eval_every``.

References
----------
A. Defazio, F. Bach, S. Lacoste-Julien, "SAGA: a fast incremental gradient method with support
for non-strongly convex composite objectives", NIPS 2014.
M. Schmidt, N. Le Roux, F. Bach, "Minimizing finite sums with the stochastic average
gradient", Mathematical Programming 162 (2017): the just-in-time sparse updates.
"""

import numpy as np

from .._memory import per_sample_array
from .._names import named
from .._progress import closing_bars
from ..kernels import stochastic as sk
from .common import check_step
from .registry import MAX_SECONDS, MEMORY_LIMIT, SEED, STEP, Option, SolverRecord
from .stochastic import EpochRun, epoch_source, saved_array


def step_size(objective, step, factor):
    """``step``, or 1 / (``factor`` L_max) when it is None."""
    if step is None:
        smoothness = objective.smoothness()
        if not np.isfinite(objective.loss.lipschitz):
            raise ValueError(f"the loss {objective.loss.name} has no Lipschitz gradient: "
                             "give a step size (step=... / --step)")
        if not np.isfinite(smoothness):
            raise ValueError("the rows' squared norms are not finite: the feature values are "
                             "too large for the loss; scale them")
        return 1.0 / (factor * smoothness)
    # the L2 term's shrink 1 - step lam is a factor of w's scale: 0 would divide by zero
    # (and 1 / lam is beyond 1 / L_max, where the steps converge, as L_max >= lam)
    check_step(step)
    if not step * objective.lam < 1:
        raise ValueError(f"{named('step')} must be below 1 / {named('lam')} = "
                         f"{1 / objective.lam:.6g}, got {step}")
    return float(step)


@closing_bars()
def saga(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=50,
         step=None, seed=0, eval_every=1, max_seconds=None, memory_limit=None, progress=False,
         checkpoint=None):
    """Minimise ``objective`` by SAGA.

    Parameters
    ----------
    objective : SmoothSVMObjective
    w0 : array of shape (n_variables,), optional
    tol, abs_tol, liblinear_tol
        Stopping rule on ||grad L(w)|| at the evaluations (as TRON's).
    max_iter : int
        Epochs.
    step : float, optional
        Step size (default 1 / (3 L_max), Defazio et al.'s).
    seed, eval_every, max_seconds, progress
        As for :func:`~streamssvm.solvers.sgd`.
    memory_limit : int, optional
        Bytes above which the table of slopes goes to a temporary file.
    checkpoint : Checkpoint, optional
        As for :func:`~streamssvm.solvers.sgd`.

    Returns
    -------
    SolverResult
    """
    data = epoch_source("saga", objective)
    eta = step_size(objective, step, 3.0)
    run = EpochRun("saga", objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every,
                   max_seconds, seed, progress, checkpoint, evaluations_only=True)
    code, sigma, theta, params = objective.loss_args
    d, n = objective.n_features, objective.n_samples
    slopes = per_sample_array(n, memory_limit)
    state = np.zeros(sk.SAGA_STATE_SIZE)
    state[sk.SAGA_SCALE] = 1.0
    if run.resumed is not None:
        slopes[:], state[:] = run.resumed["slopes"], run.resumed["state"]
        damaged = f"{checkpoint.path}: damaged checkpoint"
        avg_grad = saved_array(run.resumed, "avg_grad", (d,), damaged).copy()
        v = saved_array(run.resumed, "w", (objective.n_variables,), damaged)[:d].copy()
    else:
        sk.slopes_of_margins(run.state.margins, code, sigma, theta, params, slopes)
        average = objective.loss_gradient(run.state)
        avg_grad = np.ascontiguousarray(average[:d])
        v = run.state.w[:d].copy()
        if objective.bias:
            state[sk.SAGA_INTERCEPT] = run.state.w[-1]
            state[sk.SAGA_AVG_INTERCEPT] = average[-1]
    last = np.zeros(d, np.int64)
    cumulative = np.zeros(n + 1)

    def weights():
        return np.append(v, state[sk.SAGA_INTERCEPT]) if objective.bias else v.copy()

    while run.next_epoch():
        for block, rows in data.epoch(run.rng):
            sk.saga_rows(block.indptr, block.indices, block.data, block.y, rows, block.row_start,
                         slopes, v, avg_grad, last, cumulative, state, n, objective.bias, code,
                         sigma, theta, params, objective.lam, eta)
        sk.saga_flush(v, avg_grad, last, cumulative, state)
        w = weights()  # a copy of v made once an epoch
        run.end_epoch(w, step=eta)
        run.save(w, slopes=slopes, avg_grad=avg_grad, state=state)
    return run.result(weights())


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord(
        "saga", saga, "stochastic", takes_checkpoint=True,
        options=(STEP, SEED,
                 Option("eval_every", int, 1, "evaluate the objective every this many epochs"),
                 MAX_SECONDS, MEMORY_LIMIT)),
)
