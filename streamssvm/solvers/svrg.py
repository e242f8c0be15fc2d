"""SVRG, streamed: a full gradient at a snapshot, then an epoch of variance-reduced steps.

At the snapshot w~ (one evaluation: its gradient mu, and the slopes psi'(y_i w~.x_i), one
scalar per sample, from its margins), an epoch of steps on rows i

    w <- (1 - eta lam) w - eta (mu_loss + (psi'(y_i w.x_i) - psi'(y_i w~.x_i)) y_i x_i)

with mu_loss the loss part of mu. The dense part changes two scalars of w = scale v + r mu_loss
(:func:`~streamssvm.kernels.stochastic.svrg_rows`). The epoch's last iterate is the next
snapshot. Order of oracle calls: ``objective.smoothness`` (one pass, for the default step
1 / (4 L_max)), then per epoch ``objective.evaluate`` (the snapshot: f, gradient and the
history) and an epoch of ``objective.data`` (one pass): two passes per epoch, ``eval_every``
is always 1.

References
----------
R. Johnson, T. Zhang, "Accelerating stochastic gradient descent using predictive variance
reduction", NIPS 2013.
"""

import numpy as np

from .._memory import per_sample_array
from .._progress import closing_bars
from ..kernels import stochastic as sk
from .saga import step_size
from .registry import MAX_SECONDS, MEMORY_LIMIT, SEED, STEP, SolverRecord
from .stochastic import EpochRun, epoch_source


@closing_bars()
def svrg(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=50,
         step=None, seed=0, max_seconds=None, memory_limit=None, progress=False,
         checkpoint=None):
    """Minimise ``objective`` by SVRG (one inner epoch of n steps per snapshot).

    Parameters as :func:`~streamssvm.solvers.saga` (default step 1 / (4 L_max)).

    Returns
    -------
    SolverResult
    """
    data = epoch_source("svrg", objective)
    eta = step_size(objective, step, 4.0)
    run = EpochRun("svrg", objective, w0, tol, abs_tol, liblinear_tol, max_iter, 1,
                   max_seconds, seed, progress, checkpoint, evaluations_only=True)
    code, sigma, theta, params = objective.loss_args
    d = objective.n_features
    snapshot_slopes = per_sample_array(objective.n_samples, memory_limit)
    state = np.zeros(sk.SVRG_STATE_SIZE)
    w = run.state.w  # the snapshot: also where a resumed run continues
    while run.next_epoch():
        snapshot = run.state
        sk.slopes_of_margins(snapshot.margins, code, sigma, theta, params, snapshot_slopes)
        mu = objective.loss_gradient(snapshot)
        mu_features = np.ascontiguousarray(mu[:d])
        mu_intercept = mu[-1] if objective.bias else 0.0
        v = snapshot.w[:d].copy()
        state[:] = 0.0
        state[sk.SVRG_SCALE] = 1.0
        if objective.bias:
            state[sk.SVRG_INTERCEPT] = snapshot.w[-1]
        for block, rows in data.epoch(run.rng):
            sk.svrg_rows(block.indptr, block.indices, block.data, block.y, rows,
                         snapshot_slopes[block.row_start:block.row_start + block.n_rows], v,
                         mu_features, mu_intercept, state, objective.bias, code, sigma, theta,
                         params, objective.lam, eta)
        w = state[sk.SVRG_SCALE] * v + state[sk.SVRG_R] * mu_features
        if objective.bias:
            w = np.append(w, state[sk.SVRG_INTERCEPT])
        run.end_epoch(w, step=eta)
        run.save(w)
    return run.result(w)


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord("svrg", svrg, "stochastic", takes_checkpoint=True,
                          options=(STEP, SEED, MAX_SECONDS, MEMORY_LIMIT)),
)
