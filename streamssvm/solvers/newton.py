"""Line-search truncated Newton with preconditioned CG (LIBLINEAR's solver since 2.40).

Order of oracle calls per iteration: CG on the state's ``objective.newton_system`` (one
Hessian product per step), then ``objective.evaluate(w + s)`` (one pass).
If the full step fails Armijo's condition, smaller steps are tried with
``objective.value_on_segment`` from the two points' margins (no pass), and the accepted
point is evaluated (one more pass). With a preconditioner, the system's diagonal once
per iteration. With ``hessian_sample``, ``objective.subsampled`` first (no pass when the
state's curved rows are in memory, else one), and CG and the preconditioner on its sample.

References
----------
C.-P. Lee, C.-J. Lin, "A study on L2-loss (squared hinge-loss) multiclass SVM", Neural
Computation 25 (2013); LIBLINEAR 2.40 ``newton.cpp`` (CG stopped by the relative decrease of
the quadratic model, Armijo backtracking with eta = 0.01, step halving).
R. H. Byrd, G. M. Chin, W. Neveitt, J. Nocedal, "On the use of stochastic Hessian
information in optimization methods for machine learning", SIAM J. Optim. 21 (2011).
C.-Y. Hsia, W.-L. Chiang, C.-J. Lin, "Preconditioned conjugate gradient methods in truncated
Newton frameworks for large-scale linear classification", ACML 2018.
"""

import numpy as np

from .._progress import closing_bars
from ..objective.smooth_svm import check_hessian_sample
from .common import (OVERFLOW, PreconditionedCG, Run, check_seed, diag_preconditioner,
                     line_search)
from .registry import MAX_SECONDS, SEED, Option, SolverRecord

def _newton_cg(system, precond, eps_cg, cg):
    """Preconditioned CG on a Newton system H s = -g (``objective.newton_system``), stopped
    when the quadratic model's decrease stalls: j (Q_j - Q_{j-1}) >= cgtol Q_j with
    cgtol = min(eps_cg, sqrt(||g / lambda||_{M^-1})).

    LIBLINEAR takes sqrt(||g||_{M^-1}) on the objective scaled by 1 / lambda; on ours the
    gradient is lambda times smaller, and the tolerance would shrink with lambda (more CG
    steps than LIBLINEAR's to the same eps at small lambda). ``cg``: a
    PreconditionedCG with ``model``, started here. The step (a vector of the variables)
    is None if a product overflowed."""
    cg.start(system, precond)
    cgtol = min(eps_cg, np.sqrt(np.sqrt(cg.ztr) / system.lam))
    q_prev = 0.0
    steps = 0
    while steps < max(system.n_variables, 5):
        steps += 1
        hd, dhd = cg.hessp()
        if not np.isfinite(dhd):
            return None, steps
        if dhd <= 1e-16 * cg.ztr:  # d (nearly) where H is 0: an unregularised intercept's
            # direction when no row is curved (relative: small lambda); with no step yet, d
            # itself, for the line search to scale (s = 0 stopped the run where it began)
            return cg.step(direction=steps == 1), steps
        cg.move(cg.ztr / dhd, hd)
        q = -0.5 * (cg.sr - cg.sg)
        q_diff = q - q_prev
        if q > 0 or q_diff > 0 or steps * q_diff >= cgtol * q:
            break
        q_prev = q
        cg.next_direction()
    return cg.step(), steps


@closing_bars()
def newton(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=1000,
           eps_cg=0.5, preconditioner=True, hessian_sample=None, seed=0, max_seconds=None,
           progress=False, checkpoint=None):
    """Minimise ``objective`` by line-search Newton-CG.

    Parameters
    ----------
    objective : SmoothSVMObjective
    w0 : array of shape (n_variables,), optional
    tol, abs_tol, liblinear_tol, max_iter
        Stopping rule, as for :func:`~streamssvm.solvers.tron`.
    eps_cg : float
        Upper bound of the CG stopping ratio (LIBLINEAR's 0.5).
    preconditioner : bool
        M = 0.99 I + 0.01 diag(H), LIBLINEAR's default.
    hessian_sample : float, optional
        Subsampled Newton (Byrd, Chin, Neveitt & Nocedal 2011): CG on the Hessian of this
        fraction of the rows, drawn afresh each iteration (seeded by ``seed``) and held in
        memory; the gradient and the line search use all rows.
    seed : int
    max_seconds : float, optional
    progress : bool or str
    checkpoint : Checkpoint, optional
        As for :func:`~streamssvm.solvers.tron`.

    Returns
    -------
    SolverResult
    """
    if not 0 < eps_cg <= 1:
        raise ValueError(f"eps_cg must be in (0, 1], got {eps_cg}")
    rng = np.random.default_rng(check_seed(seed))
    run = Run("newton", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              checkpoint, max_seconds)
    cg = PreconditionedCG(objective.n_variables, objective.n_threads, model=True)
    if "rng" in run.resumed:
        rng.bit_generator.state = run.resumed["rng"]
    while run.going():
        state = run.state
        curved = (objective.subsampled(state, hessian_sample, rng)
                  if hessian_sample is not None else state)
        system = objective.newton_system(curved)
        s, steps = _newton_cg(system, diag_preconditioner(system, preconditioner), eps_cg, cg)
        if s is None:
            run.message = OVERFLOW
            break
        trial, step = line_search(objective, state, s)
        if not run.searched(trial, steps):
            break
        run.accept(trial)
        run.record(steps, True, step=step)
        run.save(rng=rng.bit_generator.state)
        if run.stalled(state, 1e-12):
            break
    return run.result()


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord(
        "newton", newton, "second_order", takes_checkpoint=True, uses_hessian_products=True,
        options=(Option("eps_cg", float, 0.5, "upper bound of CG's stopping ratio"),
                 Option("preconditioner", bool, True, "M = 0.99 I + 0.01 diag(H)",
                        "--preconditioner"),
                 Option("hessian_sample", float, None, "newton: CG's Hessian products on a "
                        "random FRACTION of the rows, drawn again each iteration (subsampled "
                        "Newton); the gradient on all", "--hessian-sample", check_hessian_sample,
                        "in (0, 1]", metavar="FRACTION"),
                 SEED, MAX_SECONDS)),
)
