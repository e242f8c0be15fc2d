"""The Newton system H s = -g at a state, as conjugate gradient solves it (TRON, Newton).

A Hessian product on held wide data reads a copy of the columns restricted to the rows
with curvature (``SmoothSVMObjective._state_columns``). Every column j without an entry
there has H e_j = lambda e_j: it is decoupled from the others, and CG's residual,
direction and step there stay multiples of g's part on those columns (the "rest"),
which :class:`~streamssvm.solvers.common.PreconditionedCG` carries as three scalars. So
a :class:`ColumnSystem`'s vectors hold only the copy's columns with entries, in the
order the column kernels read them (``compact``: in sequence, without the column
numbers): where many columns have no entry in the rows with curvature, CG's vector
operations run over fewer entries, and the products read the columns in sequence.
"""

import numpy as np

from .. import kernels


class NewtonSystem:
    """H s = -g at ``state`` in the order of the variables: ``grad`` is the state's
    gradient, products are the objective's ``hessp_quad`` and ``hess_diag``, and there is
    no rest (``rest_norm2`` = 0)."""

    rest_norm2 = 0.0

    def __init__(self, objective, state):
        self.objective, self.state, self.lam = objective, state, objective.lam
        self.n_variables = objective.n_variables
        self.grad = state.grad
        self.rest_curvature = self.lam

    def hessp_quad(self, d, z=None, beta=0.0):
        """H d and d.H d (the rest's part left out); with ``z``, of d made z + beta d
        first, in place (CG's next direction)."""
        if z is not None:
            kernels.vector.cg_direction(beta, z, d, d, self.objective.n_threads)
        return self.objective.hessp_quad(self.state, d)

    def hess_diag(self):
        return self.objective.hess_diag(self.state)

    def step(self, s, rest):
        """The vector of the variables whose system part is ``s`` and whose rest is
        ``rest`` times -g there."""
        return s


class ColumnSystem(NewtonSystem):
    """H s = -g at ``state`` over the columns of ``columns`` (the held transpose's copy
    on the rows with curvature) that hold entries, in their order
    (:func:`~streamssvm.kernels.column_order`), the intercept last; the empty columns are
    the rest, on which H is ``rest_curvature`` times the identity. The copy is asked of
    the objective at every product: one at another state is written over it, and then
    made again."""

    def __init__(self, objective, state, columns):
        super().__init__(objective, state)
        order = kernels.column_order(columns)
        self.bias = objective.bias
        if self.bias:
            order = np.append(order, objective.n_features)
        self.order = order
        n_parts = objective.n_threads
        self.grad = np.empty(len(order))
        kernels.vector.gather(state.grad, order, self.grad, n_parts)
        self.rest_norm2 = kernels.vector.gather(state.grad, columns[7], None, n_parts)
        self.rest_curvature, self._scale, _ = objective._combination(objective.lam)

    def _sums(self, columns, v, squared, x):
        objective = self.objective
        objective.cached_sweeps += 1
        out = np.empty(len(self.order))
        dot = kernels.column_sums(columns, v, squared, self.bias, x, self.rest_curvature,
                                  self._scale, objective.n_threads, out, True)
        return out, dot

    def hessp_quad(self, d, z=None, beta=0.0):
        columns = self.objective._state_columns(self.state)
        if z is not None and self.bias:
            d[-1] = z[-1] + beta * d[-1]
        xd = kernels.column_products(columns, d, self.objective.n_samples,
                                     self.objective.n_threads, True, z, beta)
        if self.bias:
            xd += self.bias * d[-1]
        return self._sums(columns, self.state.curvature * xd, False, d)

    def hess_diag(self):
        return self._sums(self.objective._state_columns(self.state), self.state.curvature, True,
                          self.objective.ones(len(self.order)))[0]

    def step(self, s, rest):
        full = np.empty(self.n_variables)
        kernels.vector.place(s, self.order, self.state.grad, rest, full,
                             self.objective.n_threads)
        return full
