"""The store's lean block encodings (docs/FORMAT.md, version 3): column indices as gaps
within rows, and one value per row where a block's rows each hold a single value (binary
features, or rows scaled to unit length).

A row's indices i_0 < i_1 < ... are the gaps g_0 = i_0, g_k = i_k - i_{k-1} - 1. A block's
``gaps`` (uint16) holds the low 16 bits of its nnz gaps, one word each, then, for each gap
of 2^16 or more (rare on text, whose frequent words have small indices), three words: its
position (high word, low word) and its high 16 bits, in increasing position. That is 2
bytes per index (a little more than LEB128 varints), but every gap is at a known place: no
load waits on the one before to know where it starts, as with varints or a 16-bit gap
whose escape is inline. Decoding is serial: the decoding thread shares the cores with the
kernels' threads and the reading thread, and a parallel kernel must not run from the
stochastic solvers' window-reading thread under numba's workqueue threading layer.
"""

import math

import numpy as np
from numba import njit

OK = -1
_NONE = np.iinfo(np.int64).max


@njit(cache=True, nogil=True)
def far_gaps(indptr, indices):
    """How many of the block's gaps are 2^16 or more (sorted, in-range indices)."""
    count = 0
    for i in range(indptr.shape[0] - 1):
        prev = -1
        for k in range(indptr[i], indptr[i + 1]):
            count += indices[k] - prev - 1 >= 65536
            prev = indices[k]
    return count


@njit(cache=True, nogil=True)
def encode_gaps(indptr, indices, out):
    """Write the gaps into ``out`` (nnz + 3 * ``far_gaps`` uint16 words)."""
    far = indptr[indptr.shape[0] - 1]
    for i in range(indptr.shape[0] - 1):
        prev = np.int64(-1)
        for k in range(indptr[i], indptr[i + 1]):
            gap = np.int64(indices[k]) - prev - 1
            prev = indices[k]
            out[k] = gap & 0xFFFF
            if gap >= 65536:
                out[far] = k >> 16
                out[far + 1] = k & 0xFFFF
                out[far + 2] = gap >> 16
                far += 3


def far_positions(gaps, nnz):
    """The positions of a block's far gaps, or None when ``gaps`` is not nnz + 3m words
    with m strictly increasing positions below nnz (checked before :func:`decode`)."""
    extra = len(gaps) - nnz
    if extra < 0 or extra % 3:
        return None
    far = gaps[nnz:].reshape(-1, 3).astype(np.int64)
    positions = (far[:, 0] << 16) | far[:, 1]
    if len(positions) and (positions[-1] >= nnz or np.any(np.diff(positions) <= 0)):
        return None
    return positions


@njit(cache=True, nogil=True)
def decode(indptr, gaps, positions, row_values, n_features, indices, data):
    """Fill ``indices`` from ``gaps`` and, if ``row_values`` is not empty, ``data`` with
    each row's value. ``indptr`` must be checked (monotone from 0) and ``positions`` be
    :func:`far_positions`' first.

    Returns ``OK``, or the first row with a column index at or beyond ``n_features``."""
    nnz = indptr[indptr.shape[0] - 1]
    n_far = positions.shape[0]
    expand = row_values.shape[0] > 0
    e = 0
    at = positions[0] if n_far else _NONE
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        prev = np.int64(-1)
        for k in range(lo, hi):
            gap = np.int64(gaps[k])
            if k == at:
                gap |= np.int64(gaps[nnz + 3 * e + 2]) << 16
                e += 1
                at = positions[e] if e < n_far else _NONE
            prev += gap + 1
            indices[k] = prev
        if prev >= n_features:  # indices rise within a row: the last is the largest
            return i
        if expand:
            data[lo:hi] = row_values[i]
    return OK


@njit(cache=True, nogil=True)
def single_valued(indptr, data):
    """Whether every row of the block holds one value, to the bit (finite values: equal
    and of the same sign, so 0.0 and -0.0 differ): then one value per row encodes it."""
    for i in range(indptr.shape[0] - 1):
        if indptr[i + 1] > indptr[i]:
            first = data[indptr[i]]
            sign = math.copysign(1.0, first)
            for k in range(indptr[i] + 1, indptr[i + 1]):
                if data[k] != first or math.copysign(1.0, data[k]) != sign:
                    return False
    return True


@njit(cache=True, nogil=True)
def first_values(indptr, data, out):
    """Each row's first value (0 for an empty row)."""
    for i in range(indptr.shape[0] - 1):
        out[i] = data[indptr[i]] if indptr[i + 1] > indptr[i] else 0.0
