"""A row subset of another source, read through it: folds of one store without copies on disk."""

import numpy as np

from .. import kernels
from .source import Block, BlockSource


class RowSubset(BlockSource):
    """The rows ``rows`` of ``source``, in increasing order, as a source of their own.

    Block ``k`` of the subset holds the selected rows of the ``k``-th block of ``source``
    that has any; its arrays are a compact copy of those rows (the whole block, uncopied,
    when every row of it is selected). Rows are renumbered ``0 .. len(rows)``: models and
    objectives see an ordinary source of ``len(rows)`` samples.

    Parameters
    ----------
    source : BlockSource
        A store, an in-memory source or another subset; it must stay open while the subset
        is used.
    rows : array of shape (n_selected,), integers
        Distinct row indices of ``source``, in any order.
    """

    def __init__(self, source, rows):
        rows = np.asarray(rows)
        if rows.ndim != 1 or not (rows.size == 0 or np.issubdtype(rows.dtype, np.integer)):
            raise ValueError(f"{source.name}: rows must be a 1-d array of integers, got "
                             f"shape {rows.shape} and type {rows.dtype}")
        rows = np.sort(rows.astype(np.int64))
        if rows.size and (rows[0] < 0 or rows[-1] >= source.n_samples):
            bad = rows[0] if rows[0] < 0 else rows[-1]
            raise IndexError(f"{source.name}: row {bad} outside 0..{source.n_samples - 1}")
        if np.any(rows[1:] == rows[:-1]):
            raise ValueError(f"{source.name}: row {rows[1:][rows[1:] == rows[:-1]][0]} "
                             "selected twice")
        self.source = source
        self.rows = rows
        self.name = f"{source.name}[{rows.size} of {source.n_samples} rows]"
        self.n_samples = int(rows.size)
        self.n_features = source.n_features
        self.classes = source.classes
        self.value_dtype = source.value_dtype
        self.in_memory = source.in_memory
        bounds = np.searchsorted(rows, source.row_offsets)
        self._base_blocks = np.flatnonzero(np.diff(bounds))
        self.row_offsets = np.append(0, bounds[self._base_blocks + 1]).astype(np.int64)
        self._nnz = None

    @property
    def nnz(self):
        """Nonzeros of the selected rows (one pass over the source the first time)."""
        if self._nnz is None:
            self._nnz = sum(b.nnz for b in self.iter_blocks(transient=True))
        return self._nnz

    def _local_rows(self, k):
        """The selected rows of subset block ``k``, numbered within its source block."""
        base = self._base_blocks[k]
        return (self.rows[self.row_offsets[k]:self.row_offsets[k + 1]]
                - self.source.row_offsets[base])

    def _select(self, k, block):
        """Subset block ``k`` from ``block``, the source block it comes from."""
        local = self._local_rows(k)
        row_start = int(self.row_offsets[k])
        if len(local) == block.n_rows:
            return Block(k, row_start, block.indptr, block.indices, block.data, block.y)
        # the rows a mask marks nonzero, compacted: what the curved-row cache does for D
        mask = np.zeros(block.n_rows)
        mask[local] = 1.0
        indptr, indices, data, _ = kernels.gather_curved_rows(block.indptr, block.indices,
                                                              block.data, mask)
        return Block(k, row_start, indptr, indices, data, block.y[local])

    def labels(self):
        """The selected rows' labels, from the source's (a store reads its labels alone)."""
        return self.source.labels()[self.rows]

    def read_block(self, k):
        if not 0 <= k < self.n_blocks:
            raise IndexError(f"{self.name}: block {k} outside 0..{self.n_blocks - 1}")
        return self._select(k, self.source.read_block(int(self._base_blocks[k])))

    def read_range(self, first, stop):
        """Blocks ``first .. stop - 1`` as one Block, read as one pass of the source (a
        shared pass of :class:`~streamssvm.data.lockstep.Lockstep`)."""
        self.check_blocks(first, stop)
        return self.joined(list(self.iter_blocks(range(first, stop))))

    def iter_blocks(self, order=None, transient=False):
        """Yield the blocks in order (or in ``order``), read through the source's own
        iteration (a store reads ahead in a thread). Selected rows are copied out of a
        transient source block at once, so ``transient`` is passed on."""
        order = np.arange(self.n_blocks) if order is None else np.asarray(list(order), np.int64)
        if order.size and (order.min() < 0 or order.max() >= self.n_blocks):
            raise IndexError(f"{self.name}: block order holds indices outside "
                             f"0..{self.n_blocks - 1}")
        blocks = self.source.iter_blocks(self._base_blocks[order], transient=transient)
        for k, block in zip(order, blocks):
            yield self._select(int(k), block)
