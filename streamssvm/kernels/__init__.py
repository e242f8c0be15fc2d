"""Numba kernels over CSR blocks: loss + gradient, Hessian-vector product, diagonal, margins
(``linear``); the stochastic solvers' per-row updates (``stochastic``); conjugate gradient's
fused sweeps over dense vectors (``vector``); the store's lean block encodings (``codec``);
the LLVM intrinsics they use (``_intrinsics``); the parallel kernels' serial twins, run
on small work, and the choice between them (``_twins``)."""

import numba

from . import stochastic, vector
from .linear import (column_order, column_products, column_sums, csr_checks, curved_columns,
                     curved_products, decision, decision_classes, gather_curved_rows, hess_diag,
                     hess_vec, is_zero, loss_coef, loss_coef_by_columns, loss_grad, loss_sum,
                     loss_sum_along, max_row_norm2, merge_parts, row_partition, transpose)

__all__ = ["column_order", "column_products", "column_sums", "csr_checks", "curved_columns",
           "curved_products", "decision", "decision_classes", "gather_curved_rows", "hess_diag",
           "hess_vec", "is_zero", "loss_coef", "loss_coef_by_columns", "loss_grad", "loss_sum",
           "loss_sum_along", "max_row_norm2", "merge_parts", "row_partition", "stochastic",
           "threadsafe_parallel", "transpose", "vector"]


def threadsafe_parallel():
    """Whether numba can run parallel kernels from two threads at once: its "omp" and
    "tbb" threading layers can, "workqueue" aborts. (The layer is known once numba's
    threads are launched.)"""
    try:
        from numba.np.ufunc.parallel import _launch_threads

        _launch_threads()
        return numba.threading_layer() in ("omp", "tbb")
    except (ImportError, ValueError):
        return False
