"""Stochastic dual coordinate ascent through the loss conjugate, streamed block by block.

The dual of L(w) = lam/2 ||w||^2 + (1/n) sum_i psi(y_i w.x_i) (no intercept) is

    D(alpha) = (1/n) sum_i -psi*(-alpha_i) - lam/2 ||w(alpha)||^2,
    w(alpha) = (1 / (lam n)) sum_i alpha_i y_i x_i,

with psi* the conjugate of the paper's Theorem GCL, item 6. Maximising D in alpha_i alone
is a 1-D monotone equation: with q = ||x_i||^2 / (lam n) and m the margin of row i without
its own term, the new margin z solves z + q psi'(z) = m and alpha_i = -psi'(z) (for psi_G,
with u = (theta - z) / sigma and Q_ii = q, the same equation in the dual's terms reads
1 - m_i + alpha_i Q_ii - Phi(u) Q_ii - sigma u = 0);
a safeguarded Newton solves it (:func:`~streamssvm.kernels.stochastic.sdca_rows`). The
hinge's step is LIBLINEAR -s 3's clip.

Shrinking (as LIBLINEAR's dual solvers do, within the sweep): a row whose psi'' is 0 at
its margin (past the kink's curved part) and whose alpha_i already equals -psi'(margin) has
a zero step, and keeps it while its margin stays on that flat part. A sweep settles the
rows it visits whose step stays zero as far towards the kink as their margin moved since
their last step; later sweeps skip them. Every evaluation (all rows) brings back the rows
it finds in play, and the duality gap, computed over all rows, certifies the result as
before. Deciding in the sweeps, not only at the evaluations, skips rows from the first
epochs on, where the evaluations alone would decide only every ``eval_every`` epochs.

When the data is held in memory (``overlap``), the evaluation of epoch k's w (a
margins pass and a column-sum gradient, about as long as an epoch) runs on a worker thread
while the next ``eval_every`` epochs sweep on the other core, and is collected when the
next evaluation is due (the rows it brings back return ``eval_every`` epochs later than
without overlap), and when epoch k's evaluation stops the run, the
epochs after it are undone and epoch k's w returned. A run stays reproducible from its
seed. Collected at the next due evaluation rather than after one sweep, an evaluation
does not hold up the sweep after it. Without a w0 the start's evaluation (at w = 0) is
made in that thread too, beside the first epoch, which starts once the data is read.

The sweeps read rows only; the evaluations of held data take the rows' way until the
transpose would have paid for itself over the evaluations so far, then make it and read
its columns (:meth:`~streamssvm.data.plan.DataPlan.rent_columns`): a dual run stops
when its gap closes, which no rule tells in advance.

Out of core this is the block minimisation of Yu, Hsieh, Chang & Lin: load a block, run
``inner_epochs`` sweeps over its rows (each in a fresh random order), move to the next
block. The dual variables (one float per sample) live on disk when they do not fit
memory. Order of calls: an epoch of ``objective.data`` (one pass) per epoch,
``objective.evaluate`` every ``eval_every`` epochs; the duality gap P(w) - D(alpha) is
recorded at each evaluation and is itself a stopping rule (``gap_tol``).

References
----------
S. Shalev-Shwartz, T. Zhang, "Stochastic dual coordinate ascent methods for regularized loss
minimization", JMLR 14 (2013).
C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi, S. Sundararajan, "A dual coordinate
descent method for large-scale linear SVM", ICML 2008 (LIBLINEAR -s 1 / -s 3).
H.-F. Yu, C.-J. Hsieh, K.-W. Chang, C.-J. Lin, "Large linear classification when data
cannot fit in memory", KDD 2010.
"""

import numpy as np

from .._memory import per_sample_array
from .._progress import closing_bars
from ..kernels import stochastic as sk
from .common import start_state
from .registry import MAX_SECONDS, MEMORY_LIMIT, OVERLAP, SEED, Option, SolverRecord
from .stochastic import EpochRun, Evaluations, epoch_source, spare_thread


def _check(objective):
    if objective.bias:
        raise ValueError("sdca solves the dual of a problem without an unregularised "
                         "intercept: use fit_intercept=False (no --intercept), or another "
                         "solver")
    if objective.loss.conjugate_domain is None:
        raise ValueError(f"sdca needs the conjugate of the loss; {objective.loss.name} has none "
                         "(it is not convex)")


def dual_objective(objective, dual, w):
    """D(alpha) for the dual variables ``dual`` and their w."""
    code, sigma, theta, params = objective.loss_args
    loss = sk.dual_loss_sum(np.asarray(dual), code, sigma, theta, params) / objective.n_samples
    return loss - 0.5 * objective.lam * float(w @ w)


def dual_at_zero(objective):
    """D(0) = -psi*(0) (w(0) = 0), without a vector of the rows."""
    return sk.dual_loss_sum(np.zeros(1), *objective.loss_args)


@closing_bars()
def sdca(objective, w0=None, tol=0.01, abs_tol=None, liblinear_tol=False, max_iter=100,
         gap_tol=None, inner_epochs=1, seed=0, eval_every=2, spaced=True, shrinking=True,
         overlap=True, max_seconds=None, memory_limit=None, progress=False, checkpoint=None):
    """Maximise the dual of ``objective`` by coordinate ascent; return the primal w(alpha).

    Parameters
    ----------
    objective : SmoothSVMObjective
        Without intercept; a loss with a conjugate (every convex named loss and the family).
    w0 : array of shape (n_features,), optional
        Warm start: alpha_i = -psi'(y_i w0.x_i), and w = w(alpha) (equal to w0 at the
        optimum, not in general), unless the dual objective is higher at alpha = 0 (w0 far
        from the optimum: from w0 = 0, w(alpha) is (1 / (lam n)) sum_i -psi'(0) y_i x_i),
        where SDCA then starts.
    tol, abs_tol, liblinear_tol
        Stopping rule on ||grad L(w)|| at the evaluations (as TRON's).
    max_iter : int
        Epochs (one epoch visits every block once).
    gap_tol : float, optional
        Also stop when the duality gap P(w) - D(alpha) <= gap_tol |P(w)|.
    inner_epochs : int
        Sweeps over a block's rows per visit (block minimisation).
    seed : int
    eval_every : int
        Evaluate P(w), its gradient and the gap every this many epochs (one pass). An
        evaluation reads every row twice (X w, then X^T of the slopes), a sweep only the
        rows not shrunk: an evaluation costs more than a sweep, and the gap it reports
        moves little between two epochs.
    spaced : bool
        Without overlap, where each evaluation holds up the sweeps, space them out while
        ||grad|| is far from the threshold (:meth:`~.stochastic.EpochRun.next_evaluation`): from
        ``eval_every`` epochs apart to 4 ``eval_every``. With overlap they cost the sweeps
        nothing and come every ``eval_every`` epochs.
    shrinking : bool
        Skip the rows whose step stays zero (see the module docstring). Only when rows
        come back before the last epoch (at an evaluation, or the full sweep that stands
        for the left-out ones): without that, a row settled too early would stay skipped
        for good, and the run end above the optimum.
    overlap : bool
        When the data is held in memory and the kernels have more than one thread, evaluate
        each epoch's w in a thread beside the next epoch (see the module docstring).
    max_seconds : float, optional
    memory_limit : int, optional
        Bytes above which the dual variables go to a temporary file.
    progress : bool or str
    checkpoint : Checkpoint, optional
        As for :func:`~streamssvm.solvers.sgd`.

    Returns
    -------
    SolverResult
        ``history`` entries have ``gap`` where evaluated, ``max_change``, the largest
        change of a margin in the epoch, and ``visited``, the rows it visited.
    """
    _check(objective)
    data = epoch_source("sdca", objective)
    if gap_tol is not None and not gap_tol >= 0:
        raise ValueError(f"gap_tol must be >= 0 or None, got {gap_tol}")
    if not (isinstance(inner_epochs, (int, np.integer)) and inner_epochs >= 1):
        raise ValueError(f"inner_epochs must be an integer >= 1, got {inner_epochs!r}")
    overlap = overlap and spare_thread(objective) and data.hold_rows()
    data.rent_columns(0)  # the evaluation at the start (w0 or 0) by rows
    with Evaluations(overlap, "sdca") as evaluations:
        start = None if w0 is not None else lambda: evaluations.submit(_start, objective)
        run = EpochRun("sdca", objective, w0, tol, abs_tol, liblinear_tol, max_iter, eval_every,
                       max_seconds, seed, progress, checkpoint, start,
                       divergence="its steps are exact: the data's scale against lambda "
                                  "overflows the objective; raise lambda or scale the data",
                       spaced=spaced and not overlap)
        # the sweeps skip settled rows only if an evaluation before the last epoch brings
        # them back (the first, of epoch eval_every); the evaluations decide the rows
        # whenever ``shrinking``, so that a checkpoint holds what a longer run goes on from
        skipping = shrinking and 0 < eval_every < max_iter
        dual = per_sample_array(objective.n_samples, memory_limit)
        w = np.zeros(objective.n_features)
        if run.resumed is not None:
            dual[:], w[:] = run.resumed["dual"], run.resumed["w"]
        elif w0 is not None and run.converged:  # w0 meets the rule: no sweep, w0 returned
            w = run.state.w.copy()  # (w(alpha) of the map below is w0 only at the optimum)
        elif w0 is not None:  # the primal-dual map at w0, if its dual beats alpha = 0's
            sk.slopes_of_margins(run.state.margins, *objective.loss_args, dual)
            dual *= -1.0
            w = run.state.w - run.state.grad / objective.lam
            if dual_objective(objective, dual, w) < dual_at_zero(objective):
                dual[:], w[:] = 0.0, 0.0
        scale = 1.0 / (objective.lam * objective.n_samples)
        slopes = _slopes(objective.loss)

        # shrinking: the rows the sweeps skip, each sweep deciding the rows it visits from
        # the margins after their ``last`` steps, and each evaluation bringing back the rows
        # it finds in play (its ``decision``: with overlap, applied at the next collection);
        # as the checkpoint's run had them
        settled, decision = np.zeros(objective.n_samples, bool), None
        last = per_sample_array(objective.n_samples, memory_limit)
        last[:] = np.nan
        if run.resumed is not None and "last" in run.resumed:
            settled[:], last[:] = run.resumed["settled"], run.resumed["last"]
            decision = _unmask(run.resumed["decision"])
        pending = []  # epochs swept, not yet recorded: with overlap, those since the last due one
        # the passes made, an evaluation counted once submitted: with overlap it counts its
        # pass in its own thread, before or after the next epoch ends (a fresh run's start
        # too: its history entry has it)
        passes = objective.passes if run.resumed is not None else run.history[0]["passes"]
        while run.next_epoch():
            extra = _sweep(objective, run.rng, settled, skipping, inner_epochs, dual, w, scale,
                           slopes, last)
            passes += 1
            due = run.due()
            if overlap and due:  # the last evaluation has had the sweeps since its epoch
                decision, stop = _collect(run, pending, None, decision, gap_tol)
                pending = []
                if stop is not None:  # the epochs after it were not needed: back to it
                    w[:], dual[:] = stop.w, stop.dual
                    run.rewind(stop.end)
                    break
                if decision is not None:
                    settled &= decision
            # copies for what reads them after the next sweeps: its evaluation, a checkpoint
            saved = overlap and run.checkpoint is not None
            keep = saved or (overlap and due)
            epoch = _Epoch(run.epoch_end(passes), w.copy() if keep else w,
                           np.array(dual) if keep else dual,
                           {k: np.array(a) if saved else a
                            for k, a in (("settled", settled), ("last", last))}, extra)
            if due:
                epoch.evaluation = evaluations.submit(_evaluate, objective, epoch.w, epoch.dual,
                                                      shrinking, 1 + run.epoch // eval_every)
                passes += 1
            pending.append(epoch)
            if not overlap:
                _collect(run, pending, settled, None, gap_tol)
                pending = []
        _, stop = _collect(run, pending, None if overlap else settled, decision, gap_tol)
        if stop is not None and stop is not pending[-1]:
            w[:], dual[:] = stop.w, stop.dual
            run.rewind(stop.end)
    result = run.result(w)  # by the way of the last evaluation, if it evaluates
    data.rent_columns()
    return result


def _sweep(objective, rng, settled, skipping, inner_epochs, dual, w, scale, slopes, last):
    """One epoch of coordinate steps, deciding ``settled`` for the rows it visits (and
    skipping those already settled, if ``skipping``), psi' kept in ``slopes``
    (:func:`_slopes`); what the history records of it."""
    largest, visited = 0.0, 0
    for block, rows in objective.data.epoch(rng):
        for sweep in range(inner_epochs):
            if sweep:
                rows = rng.permutation(block.n_rows)
            if skipping:
                rows = rows[~settled[block.row_start + rows]]
            visited += rows.shape[0]
            largest = max(largest, sk.sdca_rows(
                block.indptr, block.indices, block.data, block.y, rows, block.row_start,
                dual, w, *objective.loss_args, scale, *slopes, objective.curvature_floor,
                last, settled))
    return dict(max_change=largest, visited=visited)


def _slopes(loss):
    """The closed range of psi' where psi* is finite (an open end moved in by an ulp)."""
    lo, hi, lo_closed, hi_closed = loss.conjugate_domain
    return (lo if lo_closed else np.nextafter(lo, hi)), (hi if hi_closed else np.nextafter(hi, lo))


class _Epoch:
    """An epoch's end: where (EpochEnd), its w, alpha and shrinking's ``rows`` (dict of
    arrays), what the history records of it, and its evaluation (a Future of
    :func:`_evaluate`'s result, or None)."""

    def __init__(self, end, w, dual, rows, extra):
        self.end, self.w, self.dual, self.rows, self.extra = end, w, dual, rows, extra
        self.evaluation = None


def _start(objective):
    """The start at w = 0 (:func:`~streamssvm.solvers.common.start_state`) and its duality
    gap (alpha = 0), for :class:`EpochRun`'s ``start``."""
    state, grad0_norm = start_state(objective, None, curved=False)
    gap = state.f - dual_at_zero(objective)
    return state, grad0_norm, dict(gap=gap)


def _evaluate(objective, w, dual, shrinking, made):
    """The state at w, the duality gap, and the rows it settles (if ``shrinking``); by the
    rows or the columns as ``made`` evaluations would pay (:meth:`DataPlan.rent_columns
    <streamssvm.data.plan.DataPlan.rent_columns>`: the way taken follows the epoch, not
    the threads' timing, and is set in the thread that evaluates)."""
    objective.data.rent_columns(made)
    state = objective.evaluate(w, curved=False)
    gap = state.f - dual_objective(objective, dual, w)
    return state, gap, _settled(objective, state, dual) if shrinking else None


def _collect(run, epochs, live, decision, gap_tol):
    """Record ``epochs`` in order (waiting for their evaluations) and checkpoint each, up to
    the first that stops the run. Returns the latest evaluation's decision (or
    ``decision``) and that epoch (or None). Without overlap, ``live`` is the rows the
    sweeps skip, and a decision is applied to it at once; with overlap (``live`` None), the
    caller applies it at the next collection, and a checkpoint holds it beside the rows
    settled by its epoch's end."""
    for epoch in epochs:
        state, gap, found = (epoch.evaluation.result() if epoch.evaluation is not None
                             else (None, None, None))
        if found is not None:
            decision = found
            if live is not None:
                live &= decision
        run.record(state, at=epoch.end, **epoch.extra)
        if state is not None:
            run.history[-1]["gap"] = gap
            if gap_tol is not None and gap <= gap_tol * abs(state.f):
                run.finish("duality gap below gap_tol")
        run.save(epoch.w, at=epoch.end, dual=epoch.dual,
                 decision=_mask(decision if live is None else None), **epoch.rows)
        if run.converged:
            return decision, epoch
    return decision, None


def _mask(settled):
    """``settled`` as a checkpoint array (empty: none decided)."""
    return np.zeros(0, bool) if settled is None else settled


def _unmask(array):
    return array if array.size else None


def _settled(objective, state, dual):
    """The rows whose coordinate step is zero at the evaluated ``state`` (boolean array of
    shape (n_samples,); :func:`~streamssvm.kernels.stochastic.settled_rows`)."""
    settled = np.empty(objective.n_samples, bool)
    sk.settled_rows(state.margins, state.curvature, np.asarray(dual), *objective.loss_args,
                    settled)
    return settled


# the records of this module's solvers (:mod:`.registry`), registered by the package's __init__
RECORDS = (
    SolverRecord(
        "sdca", sdca, "stochastic", takes_checkpoint=True, takes_kink=True, takes_intercept=False,
        options=(Option("gap_tol", float, None, "also stop when the duality gap is at most "
                        "gap_tol |P(w)|"),
                 Option("inner_epochs", int, 1, "sweeps over a block's rows per visit"),
                 SEED,
                 Option("eval_every", int, 2, "evaluate P(w), its gradient and the duality gap "
                        "every this many epochs"),
                 Option("spaced", bool, True, "without overlap, space the evaluations out "
                        "while ||grad|| is far from the threshold (up to 4 eval_every)"),
                 Option("shrinking", bool, True, "skip the rows whose step stays zero"),
                 OVERLAP,
                 MAX_SECONDS, MEMORY_LIMIT)),
)
