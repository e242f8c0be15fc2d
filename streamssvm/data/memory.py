"""An in-memory source: a scipy CSR matrix cut into the same row blocks as a store."""

import numba
import numpy as np
import scipy.sparse as sp

from .. import kernels
from .._interrupt import interrupts_after_compiling
from .source import Block, BlockSource

DEFAULT_BLOCK_NNZ = 1 << 19


def as_csr(X, what="X"):
    """``X`` as a CSR matrix, checked for what the kernels cannot: a ValueError naming
    ``what`` if it is not 2-D, holds anything but real numbers, or NaN or infinite values.
    Floats other than the kernels' float32 and float64 (float16, longdouble) become float64.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    """
    shape = X.shape if sp.issparse(X) else np.shape(X)
    if len(shape) != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got shape {shape}"
                         + ("; one sample is X.reshape(1, -1)" if len(shape) == 1 else ""))
    if not sp.issparse(X):
        X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what} must hold real numbers, got dtype {X.dtype}")
    if not X.dtype.isnative:  # big-endian values: the kernels take the machine's order
        X = X.astype(X.dtype.newbyteorder("="))
    if X.dtype.kind == "f" and X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)  # a longdouble beyond float64's range: inf, refused below
    X = sp.csr_matrix(X)
    # every check in one parallel read of the arrays, the index pointers and the column
    # indices too (numpy's and scipy's checks, a pass each, leave those unchecked)
    values = X.data if X.dtype.kind == "f" else np.zeros(0)  # integers are finite
    bad_row, canonical, in_range, finite = kernels.csr_checks(
        X.indptr, X.indices, values, X.shape[1], numba.get_num_threads())
    if bad_row >= 0:  # scipy's routines and ours would read and write out of bounds
        raise ValueError(f"{what} has row {bad_row} with index pointers "
                         f"({X.indptr[bad_row]}, {X.indptr[bad_row + 1]}) that decrease or "
                         f"leave its {X.indices.shape[0]} stored entries")
    if not in_range:  # scipy builds such a matrix unless asked for a full check
        raise ValueError(f"{what} has a column index outside 0..{X.shape[1] - 1}")
    if not finite:
        raise ValueError(f"{what} holds NaN or infinite values")
    if canonical:  # else scipy finds what is wrong when asked
        X.has_canonical_format = True
    return X


def check_exact_labels(labels, what):
    """Refuse integer ``labels`` beyond 2**53 that float64, in which sources and models keep
    labels, does not hold exactly (they would merge or change): a ValueError naming them."""
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        return
    big = labels[(labels > 2**53) | (labels < -2**53)]
    inexact = [v for v in np.unique(big).tolist() if float(v) != v]  # compared exactly
    if inexact:
        shown = ", ".join(map(str, inexact[:3])) + (f" and {len(inexact) - 3} more"
                                                    if len(inexact) > 3 else "")
        raise ValueError(f"{what} holds labels {shown} beyond 2**53, which float64 (the type "
                         f"labels are kept in) does not hold exactly: map the labels to "
                         f"smaller numbers, e.g. their indices in np.unique")


def block_offsets_by_nnz(indptr, block_nnz=DEFAULT_BLOCK_NNZ, block_rows=None):
    """Row offsets cutting a CSR matrix into blocks.

    With ``block_rows``, every block but the last has that many rows; otherwise a block
    ends at the first row that brings it to ``block_nnz`` nonzeros (at least one row).
    """
    n = len(indptr) - 1
    if block_rows is not None:
        if block_rows < 1:
            raise ValueError(f"block_rows must be >= 1, got {block_rows}")
        if not n:
            return np.zeros(1, np.int64)
        return np.append(np.arange(0, n, block_rows, dtype=np.int64), n)
    if block_nnz < 1:
        raise ValueError(f"block_nnz must be >= 1, got {block_nnz}")
    offsets = [0]
    while offsets[-1] < n:
        target = indptr[offsets[-1]] + block_nnz
        stop = int(np.searchsorted(indptr, target, side="left"))
        offsets.append(min(max(stop, offsets[-1] + 1), n))
    return np.asarray(offsets, np.int64)


class InMemorySource(BlockSource):
    """Blocks of rows of ``X`` as zero-copy views.

    Parameters
    ----------
    X : sparse matrix or array of shape (n_samples, n_features)
        Converted to CSR with int32 indices and sorted, summed duplicates. Refused (a
        ValueError): NaN or infinite values, a column index outside the width, index
        pointers that decrease or pass the stored entries (scipy lets both through).
    y : array of shape (n_samples,)
        Numbers or text labels. Two distinct values: the smaller maps to -1, the larger to
        +1 (or as ``classes`` says). More than two: a multiclass source, whose labels are
        the indices of the values in ``classes`` (default: the sorted distinct values).
        Integers that float64 does not hold exactly (beyond 2**53) are refused.
    block_rows, block_nnz : int, optional
        How to cut blocks, as in the converter.
    classes : sequence of values, optional
        The label values: two, standing for -1 and +1, or more (multiclass).
    """

    name = "<in-memory matrix>"
    in_memory = True

    @interrupts_after_compiling()
    def __init__(self, X, y, block_rows=None, block_nnz=DEFAULT_BLOCK_NNZ, classes=None,
                 value_dtype=None):
        X = as_csr(X, f"{self.name}: X")
        if value_dtype is not None and np.dtype(value_dtype) not in (np.float32, np.float64):
            raise ValueError(f"{self.name}: value_dtype must be float32 or float64, got "
                             f"{value_dtype!r}")
        checked = X.dtype  # as_csr found X's values finite in this type
        X = X.astype(value_dtype or (X.dtype if X.dtype in (np.float32, np.float64)
                                     else np.float64), copy=False)
        # a narrower type or a sum of duplicates may overflow
        check = X.dtype != checked or not X.has_canonical_format
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if check and X.nnz and not np.all(np.isfinite(X.data)):
            raise ValueError(f"{self.name}: X holds NaN or infinite values")
        if not X.shape[0]:
            raise ValueError(f"{self.name}: X has no rows")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"{self.name}: y has shape {y.shape}, expected ({X.shape[0]},)")
        # labels as text ("spam"): classes kept as str
        text = y.dtype.kind in "US" or (y.dtype.kind == "O" and all(
            isinstance(v, str) for v in y.tolist()))
        if text:
            y = y.astype(str)
        elif y.dtype.kind not in "biuf":
            raise ValueError(f"{self.name}: labels must be numbers or text, got dtype {y.dtype}")
        elif not np.all(np.isfinite(y)):
            raise ValueError(f"{self.name}: y holds NaN or infinite labels")
        else:
            check_exact_labels(y, f"{self.name}: y")
        if classes is not None:
            if not text:
                check_exact_labels(classes, f"{self.name}: classes")
        else:
            classes = np.unique(y)
            if len(classes) == 1 and not text and classes[0] in (-1, 1):
                classes = np.array([-1, 1])
            if len(classes) < 2:
                raise ValueError(f"{self.name}: y must hold at least two distinct labels, "
                                 f"found {len(classes)}: {classes}")
        classes = tuple(str(c) if text else float(c) for c in classes)
        if len(set(classes)) != len(classes) or len(classes) < 2 or not (
                text or np.all(np.isfinite(classes))):
            raise ValueError(f"{self.name}: classes must be at least two distinct finite "
                             f"values, got {classes}")
        unknown = ~np.isin(y, classes)
        if np.any(unknown):
            label = y[unknown][0]
            shown = repr(str(label)) if text else f"{float(label):g}"
            raise ValueError(f"{self.name}: label {shown} is not one of {classes}")
        if X.shape[1] > np.iinfo(np.int32).max:  # the indices would wrap below
            raise ValueError(f"{self.name}: X has {X.shape[1]} columns, more than the "
                             f"{np.iinfo(np.int32).max} that int32 column indices hold")
        self.X = X
        self.indices = X.indices.astype(np.int32, copy=False)
        self.classes = classes
        if self.multiclass:
            order = np.argsort(classes)
            self.y = order[np.searchsorted(np.asarray(classes)[order], y)].astype(np.int32)
        else:
            self.y = np.where(y == classes[1], 1, -1).astype(np.int8)
        self.n_samples, self.n_features = X.shape
        self.nnz = X.nnz
        self.value_dtype = X.dtype
        self.row_offsets = block_offsets_by_nnz(X.indptr, block_nnz, block_rows)
        self._columns = None  # the transpose of all rows (see transposed)

    @classmethod
    def copy_of(cls, source):
        """All of ``source`` (a store, a row subset) read once into memory, cut into the same
        blocks: the kernels then sum in the same order as over ``source`` itself, and give
        the same results, without a read of the source at every pass."""
        block = source.read_range(0, source.n_blocks)
        start, stop = int(block.indptr[0]), int(block.indptr[-1])
        X = sp.csr_matrix((block.data[start:stop], block.indices[start:stop],
                           block.indptr - start), shape=(source.n_samples, source.n_features))
        classes = np.asarray(source.classes)
        y = classes[block.y if source.multiclass else (block.y > 0).astype(np.intp)]
        copy = cls(X, y, classes=source.classes, value_dtype=source.value_dtype)
        copy.name = f"{source.name} (in memory)"
        copy.row_offsets = np.array(source.row_offsets, np.int64)
        return copy

    def transposed(self, rows, n_threads):
        """All rows by columns, made by the first call and kept: the source's arrays do not
        change, and every objective that holds it (a grid of fits on one source) asks for
        the same transpose (which does not depend on ``n_threads``)."""
        if self._columns is None:
            self._columns = super().transposed(rows, n_threads)
        return self._columns

    def read_block(self, k):
        return self.read_range(k, k + 1)

    def read_range(self, first, stop):
        """Blocks ``first .. stop - 1`` as one Block, without a copy."""
        self.check_blocks(first, stop)
        a, b = int(self.row_offsets[first]), int(self.row_offsets[stop])
        return Block(first, a, self.X.indptr[a:b + 1], self.indices, self.X.data, self.y[a:b])

    def labels(self):
        return self.y.copy()
