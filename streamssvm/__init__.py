"""streamssvm: out-of-core smooth-hinge SVMs on HDF5 stores of CSR blocks.

Objective (Luo, Qiao & Zhang, "Learning with Smooth Hinge Losses")::

    L(w) = lambda / 2 ||w||^2 + (1 / n) sum_i psi(y_i w . x_i)
"""

__version__ = "0.1.0"

from .data import InMemorySource, Store, StoreError, StoreWriter

__all__ = ["InMemorySource", "Store", "StoreError", "StoreWriter", "__version__"]
