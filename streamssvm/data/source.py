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

from .. import kernels
from .checksum import digest


def label_text(label):
    """A label as messages show it: a number by %g (3, 7.5), text as it is."""
    return f"{label:g}" if isinstance(label, (float, np.floating)) else str(label)


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
    y : array of shape (n_rows,)
        Binary source (two classes): int8, -1 or +1. Multiclass source (k > 2 classes):
        int32 class indices 0 .. k - 1 into the source's ``classes``.
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
    label values: two, mapped to -1 and +1 in that order, or k > 2 for a multiclass
    source, whose labels are the indices into them), ``value_dtype``, ``row_offsets``
    (array of shape (n_blocks + 1,): block ``k`` holds rows
    ``row_offsets[k] .. row_offsets[k + 1]``) and implement ``read_block``.
    """

    name = "<source>"
    in_memory = False  # True: a pass reads memory, not a file

    @property
    def multiclass(self):
        """More than two classes: labels are class indices (see :class:`Block`)."""
        return len(self.classes) > 2

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

    def data_digest(self):
        """A hex digest of the data (one pass): what a checkpoint records of the data it
        belongs to."""
        def arrays():  # each block's, checksummed before the next reuses its buffers
            for b in self.iter_blocks(transient=True):
                rows = slice(b.indptr[0], b.indptr[-1])
                yield from (b.indptr - b.indptr[0], b.indices[rows], b.data[rows], b.y)
        return digest(arrays())

    def transposed(self, rows, n_threads):
        """``rows``, all of the source as :meth:`read_range` gives them, by columns (the
        ``columns`` of :func:`~streamssvm.kernels.transpose`): what an objective holding
        the whole data asks for."""
        return kernels.transpose(rows.indptr, rows.indices, rows.data, self.n_features,
                                 n_threads)

    def check_blocks(self, first, stop):
        """Refuse a block range ``first .. stop - 1`` that is empty or leaves the source."""
        if not 0 <= first < stop <= self.n_blocks:
            raise IndexError(f"{self.name}: blocks {first}:{stop} outside 0:{self.n_blocks}")

    def read_range(self, first, stop):
        """Blocks ``first .. stop - 1`` as one Block (their rows, concatenated)."""
        self.check_blocks(first, stop)
        return self.joined([self.read_block(k) for k in range(first, stop)])

    @staticmethod
    def joined(blocks):
        """Consecutive blocks (a list) as one Block: their rows, concatenated."""
        first = blocks[0].index
        if len(blocks) == 1:
            return blocks[0]
        starts = [int(b.indptr[0]) for b in blocks]
        sizes = np.cumsum([0] + [b.nnz for b in blocks])
        indptr = np.concatenate([[0]] + [b.indptr[1:] - s + o
                                         for b, s, o in zip(blocks, starts, sizes)])
        return Block(first, blocks[0].row_start, indptr.astype(np.int64),
                     np.concatenate([b.indices[s:s + b.nnz] for b, s in zip(blocks, starts)]),
                     np.concatenate([b.data[s:s + b.nnz] for b, s in zip(blocks, starts)]),
                     np.concatenate([b.y for b in blocks]))

    def read_rows(self, start, stop):
        """Rows ``start .. stop - 1`` as ``(X, y)``: a CSR matrix and their labels as in
        :class:`Block` (int8 +-1, or int32 class indices of a multiclass source)."""
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
            return (sp.csr_matrix((0, self.n_features), dtype=self.value_dtype),
                    np.empty(0, np.int32 if self.multiclass else np.int8))
        return sp.vstack(parts, format="csr"), np.concatenate(labels)

    def labels(self):
        """The labels of all rows, array of shape (n_samples,) (as in :class:`Block`)."""
        parts = [b.y.copy() for b in self.iter_blocks(transient=True)]
        return np.concatenate(parts) if parts else np.empty(0, np.int8)

    def class_counts(self):
        """Rows per class, int64 array of shape (len(classes),)."""
        labels = self.labels()
        if not self.multiclass:
            labels = labels > 0
        return np.bincount(labels, minlength=len(self.classes)).astype(np.int64)

    def label_counts(self):
        """``(n_negative, n_positive)`` of a binary source."""
        if self.multiclass:
            raise ValueError(f"{self.name}: {len(self.classes)} classes, not two: see class_counts")
        n_neg, n_pos = self.class_counts()
        return int(n_neg), int(n_pos)


class OneVsRestView(BlockSource):
    """Class ``k`` of a multiclass source against all the others, as a binary source.

    The blocks are those of ``source`` (no copy of the rows; a pass reads the source as
    it would) with labels +1 for class ``k`` and -1 for the rest, made per block.

    Parameters
    ----------
    source : BlockSource
        A multiclass source; it must stay open while the view is used.
    k : int
        The class index, in ``0 .. len(source.classes) - 1``.

    Attributes
    ----------
    classes : tuple of 2 floats
        ``(nan, source.classes[k])``: -1 stands for no single label.
    """

    def __init__(self, source, k):
        if not source.multiclass:
            raise ValueError(f"{source.name}: binary source, one-vs-rest views need more than "
                             f"two classes")
        if not 0 <= k < len(source.classes):
            raise IndexError(f"{source.name}: class index {k} outside 0..{len(source.classes) - 1}")
        self.source, self.k = source, int(k)
        label = source.classes[k]
        self.name = f"{source.name} (class {label_text(label)} vs rest)"
        self.classes = (float("nan"), label)
        for attr in ("n_samples", "n_features", "nnz", "value_dtype", "row_offsets",
                     "in_memory"):
            setattr(self, attr, getattr(source, attr))

    def _binary(self, block):
        y = np.where(block.y == self.k, np.int8(1), np.int8(-1))
        return Block(block.index, block.row_start, block.indptr, block.indices, block.data, y)

    def read_block(self, k):
        return self._binary(self.source.read_block(k))

    def iter_blocks(self, order=None, transient=False):
        """The source's blocks, read as the source reads them (a store reads ahead)."""
        for block in self.source.iter_blocks(order, transient=transient):
            yield self._binary(block)

    def class_counts(self):
        counts = self.source.class_counts()
        return np.array([self.n_samples - counts[self.k], counts[self.k]], np.int64)
