"""The oracle: what the second-order and full-gradient solvers may ask of an objective.

    L(w) = lambda / 2 ||w_[:d]||^2 + (1 / n) sum_i c_i psi(y_i (x_i . w_[:d] + b w_d))

:class:`~streamssvm.objective.SmoothSVMObjective` (one process, any block source) and
:class:`~streamssvm.distributed.DaskObjective` (the sum over Dask workers) implement it,
each on the shared :class:`~streamssvm.objective.Problem` (neither inherits the other). A
pass reads every block once; the objective counts them in ``passes``. The stochastic
solvers read the blocks themselves, from the epochs of the local objective's data plan
(:mod:`streamssvm.data.plan`), not through the oracle.

Which call caches what: :meth:`Oracle.evaluate` returns a
:class:`~streamssvm.objective.PointState` holding f, the gradient, the margins and the
curvature D at w. Every later call about that point takes the state: nothing in the
objective is overwritten by a later ``evaluate``, so a solver that rejects a trial point
keeps the previous state and goes on with it.
"""

from typing import Protocol, runtime_checkable


@runtime_checkable
class Oracle(Protocol):
    """The methods and attributes a solver may use (LIBLINEAR's ``function`` class has
    ``fun``, ``grad``, ``Hv``, ``get_nr_variable`` and ``get_diag_preconditioner``).

    Attributes
    ----------
    n_variables : int
        d, plus 1 with an intercept: the length of w.
    n_features, n_samples : int
    lam : float
    bias : float
        The constant feature's value (0: no intercept).
    loss : Loss
    n_threads : int
        Threads the kernels and the solvers' vector sweeps run on.
    passes : int
        Passes over the data made so far.
    source
        Its ``label_counts()`` give LIBLINEAR's scaled tolerance.
    """

    n_variables: int
    n_features: int
    n_samples: int
    lam: float
    bias: float
    passes: int

    def evaluate(self, w, curved=True):
        """One pass: the PointState at ``w`` (f, gradient, margins y_i x_i.w, curvature
        D_ii = c_i psi''). With ``curved``, the state may keep a copy of the rows with
        D_ii != 0 for later Hessian products (no pass for them then)."""

    def value_on_segment(self, state, trial, alpha):
        """L(w + alpha (w_trial - w)) from the margins of two evaluated states: O(n), no
        pass (a line search's trial steps)."""

    def newton_system(self, state):
        """The system H s = -g at ``state`` for conjugate gradient
        (:mod:`~streamssvm.objective.system`): its ``hessp_quad`` (H d and d.H d, one pass,
        or none from a copy held in memory) and ``hess_diag``. Caches nothing beyond the
        state it is made at."""

    def hessp(self, state, s):
        """(lambda E + X^T D X / n) s with D of ``state``: one pass, or none from memory."""

    def hess_diag(self, state):
        """The diagonal of the Hessian at ``state`` (the preconditioner): one pass, or none
        from memory."""

    def hessp_reads_file(self, state):
        """Whether a Hessian product at ``state`` reads the file (then it costs a disk
        pass): TRON keeps CG's directions only then."""

    def subsampled(self, state, fraction, rng):
        """``state`` with the curvature of a random ``fraction`` of the rows, scaled by
        1 / fraction (subsampled Newton); at most one pass."""

    def smoothness(self):
        """A Lipschitz constant of the gradient of every term (step sizes): one pass the
        first time, then cached."""

    def loss_gradient(self, state):
        """The gradient at ``state`` without the L2 term: no pass."""
