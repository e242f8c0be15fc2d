"""What every data source gives the rest of the library: CSR blocks of rows, in order.

A block is three CSR arrays and the labels of a contiguous range of rows. ``indptr`` may
start at any offset into ``indices`` / ``data`` (an in-memory source hands out views of one
big matrix without copying); kernels read row ``i`` of the block as
``indices[indptr[i]:indptr[i + 1]]``.
"""

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class Block:
    """Rows ``row_start .. row_start + n_rows`` of a source.

    Attributes
    ----------
    index : int
        Position of the block in the source.
    row_start : int
        Global index of the block's first row.
    indptr : array of shape (n_rows + 1,), int32 or int64
    indices : array of shape (>= indptr[-1],), int32
    data : array of shape (>= indptr[-1],), float32 or float64
    y : array of shape (n_rows,), int8, values -1 or +1
    """

    index: int
    row_start: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    y: np.ndarray

    @property
    def n_rows(self):
        return len(self.indptr) - 1

    @property
    def nnz(self):
        return int(self.indptr[-1] - self.indptr[0])

    def to_csr(self, n_features):
        """The block as a scipy CSR matrix of shape (n_rows, n_features) (a copy)."""
        start, stop = int(self.indptr[0]), int(self.indptr[-1])
        return sp.csr_matrix(
            (self.data[start:stop].copy(), self.indices[start:stop].copy(), self.indptr - start),
            shape=(self.n_rows, n_features),
        )


class BlockSource:
    """Base of the HDF5 store and the in-memory source; the solvers see only this.

    Subclasses set ``n_samples``, ``n_features``, ``nnz``, ``classes`` (the original
    label values mapped to -1 and +1, in that order), ``value_dtype``, ``row_offsets``
    (array of shape (n_blocks + 1,): block ``k`` holds rows
    ``row_offsets[k] .. row_offsets[k + 1]``) and implement ``read_block``.
    """

    name = "<source>"

    @property
    def n_blocks(self):
        return len(self.row_offsets) - 1

    def read_block(self, k):
        raise NotImplementedError

    def iter_blocks(self, order=None, transient=False):
        """Yield the blocks in storage order or in ``order`` (an iterable of block indices).

        With ``transient``, a source may hand out blocks whose arrays are reused: each is
        valid only until the next three blocks have been requested (a pass that uses every
        block at once and keeps nothing). Sources without buffers ignore it.
        """
        for k in range(self.n_blocks) if order is None else order:
            yield self.read_block(int(k))

    def iter_blocks_prefetched(self, order=None, depth=2, read=None):
        """Like :meth:`iter_blocks`, reading up to ``depth`` blocks ahead in a thread, so
        that reading and decoding the next block overlaps the (GIL-free) kernels working on
        this one. ``read(k, i)`` reads block ``k`` as the ``i``-th of the pass (default
        ``read_block(k)``)."""
        read = read or (lambda k, i: self.read_block(k))
        order = enumerate(int(k) for k in (range(self.n_blocks) if order is None else order))
        with ThreadPoolExecutor(1, thread_name_prefix="streamssvm-read") as pool:
            pending = deque(pool.submit(read, k, i) for _, (i, k) in zip(range(depth), order))
            while pending:
                block = pending.popleft().result()
                nxt = next(order, None)
                if nxt is not None:
                    pending.append(pool.submit(read, nxt[1], nxt[0]))
                yield block

    def read_rows(self, start, stop):
        """Rows ``start .. stop`` as ``(X, y)``: a CSR matrix and an int8 array of +-1."""
        if not 0 <= start <= stop <= self.n_samples:
            raise IndexError(f"{self.name}: row range {start}:{stop} outside 0:{self.n_samples}")
        first = int(np.searchsorted(self.row_offsets, start, side="right")) - 1
        parts, labels = [], []
        k = max(first, 0)
        while k < self.n_blocks and self.row_offsets[k] < stop:
            block = self.read_block(k)
            lo = max(start, block.row_start) - block.row_start
            hi = min(stop, block.row_start + block.n_rows) - block.row_start
            parts.append(block.to_csr(self.n_features)[lo:hi])
            labels.append(block.y[lo:hi])
            k += 1
        if not parts:
            return sp.csr_matrix((0, self.n_features), dtype=self.value_dtype), np.empty(0, np.int8)
        return sp.vstack(parts, format="csr"), np.concatenate(labels)

    def label_counts(self):
        """``(n_negative, n_positive)`` over the whole source (one pass over the labels)."""
        n_pos = sum(int(np.count_nonzero(b.y > 0)) for b in self.iter_blocks())
        return self.n_samples - n_pos, n_pos
