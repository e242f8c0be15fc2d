"""Numba kernels over CSR blocks: loss + gradient, Hessian-vector product, diagonal, margins
(``linear``); the stochastic solvers' per-row updates (``stochastic``)."""

from . import stochastic
from .linear import (decision, decision_classes, gather_curved_rows, hess_diag, hess_vec,
                     loss_grad, loss_sum, loss_sum_along, max_row_norm2, merge_parts,
                     row_partition)

__all__ = ["decision", "decision_classes", "gather_curved_rows", "hess_diag", "hess_vec",
           "loss_grad", "loss_sum", "loss_sum_along", "max_row_norm2", "merge_parts",
           "row_partition", "stochastic"]
