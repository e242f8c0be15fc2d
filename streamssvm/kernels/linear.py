"""Numba kernels over one CSR block: the only loops over nonzeros in the library.

Every kernel takes raw arrays ``(indptr, indices, data, ...)`` of a block (``indptr`` may
start at a nonzero offset) and an intercept feature value ``bias`` (0: no intercept; else
every row has an extra feature of value ``bias`` whose weight is the last entry of ``w``).

Losses are selected by ``code`` with scalar parameters ``sigma``, ``theta`` and an array
``params`` (the table of a user-built family loss; empty for the named ones).

Kernels that scatter into a d-vector take ``out`` of shape (n_parts, n_variables): the
block's rows are cut into ``n_parts`` ranges of equal nonzeros, range ``t`` adds into
``out[t]`` only, and the caller sums the rows of ``out`` once per pass. ``n_parts = 1``
is one range; with more, the ranges run in parallel threads (``prange``) and the result
equals that of one range up to the order of floating-point sums.

The kernels that run ``prange`` loops are :func:`~._twins.twins`: compiled parallel and
serial, the serial one run on small work (no thread is woken), with the same ranges and
so the same result. Each has one parallel region: arrays are made and reduced by loops
in serial functions it calls (``np.zeros`` or ``sum`` in a parallel function is a
parallel region of its own, a wake of the threads each).

Positions and indices are cast to unsigned (``np.uintp``) before they index an array:
numba then leaves out its negative-index wraparound, a compare and select on every access
of the inner loops. The stores check every index before a kernel sees it.
"""

import numpy as np
from numba import njit, prange

from .._memory import prefaulted
from ..losses._scalar import derivatives_with_params as derivatives
from . import codec
from ._intrinsics import prefetch
from ._twins import entries, losses, nonzeros, twins

# ranges of a sum over the rows that a prange loop reduces (the losses of loss_sum and
# loss_sum_along): a fixed count, so that the order of the sum, and its value to the bit, is
# the same in both twins and with any number of threads
SUM_PARTS = 64


@njit(cache=True, nogil=True)
def row_partition(indptr, n_parts):
    """Row bounds (n_parts + 1,) cutting the block into ranges of about equal nonzeros."""
    n = indptr.shape[0] - 1
    bounds = np.empty(n_parts + 1, np.int64)
    bounds[0] = 0
    start = indptr[0]
    total = indptr[n] - start
    for t in range(1, n_parts):
        target = start + (total * t) // n_parts
        # the first bound at or past the target (np.searchsorted, side "left", whose
        # implementation compiles longer than this loop)
        lo, hi = 0, n + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if indptr[mid] < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[t] = max(lo, bounds[t - 1])
    bounds[n_parts] = n
    for t in range(1, n_parts):
        bounds[t] = min(bounds[t], n)
    return bounds


@njit(cache=True, nogil=True, inline="always")
def row_span(indptr, i):
    """The positions of row i's nonzeros, unsigned."""
    return range(np.uintp(indptr[i]), np.uintp(indptr[i + 1]))


@njit(cache=True, nogil=True, inline="always")
def prefetch_rows(indptr, indices, data, order, pos):
    """Before row ``order[pos]``: ask the caches for the nonzeros of ``order[pos + 2]``.
    Rows in random order defeat the hardware's prefetcher, and each row's first lines
    would wait on memory. The entries of v that the row reads are not prefetched: that
    takes a second read of the row's indices, which costs more than it saves where the
    last-level cache holds v."""
    if pos + 2 < order.shape[0]:
        prefetch_row(indptr, indices, data, order[pos + 2])


@njit(cache=True, nogil=True, inline="always")
def prefetch_row(indptr, indices, data, i):
    """Ask the caches for the nonzeros of row i."""
    for k in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1]), 64 // indices.itemsize):
        prefetch(indices, k)
    for k in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1]), 64 // data.itemsize):
        prefetch(data, k)


@njit(cache=True, nogil=True, inline="always")
def row_dot(indptr, indices, data, i, v):
    """x_i.v"""
    acc = 0.0
    for k in row_span(indptr, i):
        acc += data[k] * v[np.uintp(indices[k])]
    return acc


@njit(cache=True, nogil=True, inline="always")
def row_axpy(indptr, indices, data, i, coef, v):
    """v += coef x_i"""
    for k in row_span(indptr, i):
        v[np.uintp(indices[k])] += coef * data[k]


@njit(cache=True, nogil=True, inline="always")
def row_norm2(indptr, indices, data, i):
    """||x_i||^2 (in float64 for float32 data)"""
    acc = 0.0
    for k in row_span(indptr, i):
        value = np.float64(data[k])
        acc += value * value
    return acc


@njit(cache=True, nogil=True, inline="always")
def row_dot_norm2(indptr, indices, data, i, v):
    """(x_i.v, ||x_i||^2) in one read of the row (SDCA's step)."""
    dot, norm2 = 0.0, 0.0
    for k in row_span(indptr, i):
        value = np.float64(data[k])
        dot += value * v[np.uintp(indices[k])]
        norm2 += value * value
    return dot, norm2


@njit(cache=True, nogil=True, inline="always")
def _dot(indptr, indices, data, i, w, bias):
    acc = row_dot(indptr, indices, data, i, w)
    if bias != 0.0:
        acc += bias * w[w.shape[0] - 1]
    return acc


@njit(cache=True, nogil=True, inline="always")
def _axpy_row(indptr, indices, data, i, coef, bias, out):
    row_axpy(indptr, indices, data, i, coef, out)
    if bias != 0.0:
        out[out.shape[0] - 1] += coef * bias


@njit(cache=True, nogil=True)
def is_zero(v):
    """Every entry of ``v`` is 0 (read up to the first that is not)."""
    for j in range(v.shape[0]):
        if v[j] != 0.0:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _row_terms(indptr, indices, data, y, i, w, bias, code, sigma, theta, params,
               curvature_floor, weights, zero):
    """:func:`_terms` of row i at w (at w = 0, ``zero``, without reading the row)."""
    return _terms(0.0 if zero else _dot(indptr, indices, data, i, w, bias), y, i, code, sigma,
                  theta, params, curvature_floor, weights)


@njit(cache=True, nogil=True, inline="always")
def _terms(xw, y, i, code, sigma, theta, params, curvature_floor, weights):
    """Row i's margin y_i ``xw`` (``xw`` = x_i.w, intercept included), c_i psi, c_i psi' y_i
    (its coefficient in the gradient) and c_i psi'' (0 below ``curvature_floor``)."""
    yi = float(y[i])
    margin = yi * xw
    value, slope, curv = derivatives(code, margin, sigma, theta, params)
    if not curv >= curvature_floor:
        curv = 0.0
    if weights is not None:
        value, slope, curv = weights[i] * value, weights[i] * slope, weights[i] * curv
    return margin, value, slope * yi, curv


@njit(cache=True, nogil=True)
def _loss_grad_rows(indptr, indices, data, y, w, bias, code, sigma, theta, params,
                    curvature_floor, lo, hi, margins, curvature, out, weights, zero):
    total = 0.0
    for i in range(lo, hi):
        margins[i], value, coef, curvature[i] = _row_terms(
            indptr, indices, data, y, i, w, bias, code, sigma, theta, params, curvature_floor,
            weights, zero)
        total += value
        if coef != 0.0:
            _axpy_row(indptr, indices, data, i, coef, bias, out)
    return total


@twins(nonzeros, "indptr", cache=True, nogil=True)
def loss_grad(indptr, indices, data, y, w, bias, code, sigma, theta, params, curvature_floor,
              margins, curvature, out, weights=None, zero=False):
    """Sum of c_i psi(y_i x_i.w) over the block; adds sum c_i psi'(.) y_i x_i into ``out``.

    Writes the margins y_i x_i.w into ``margins`` and c_i psi''(y_i x_i.w) into
    ``curvature`` (both of shape (n_rows,)); the curvature is the D of the Hessian X^T D X.
    A psi'' below ``curvature_floor`` is written as 0, so that Hessian products skip the
    row. ``weights``: the c_i, array of shape (n_rows,), or None for c_i = 1 (numba then
    compiles a version without the multiplications). ``zero``: w is 0, whose products are
    not read.
    """
    n_parts = out.shape[0]
    bounds = row_partition(indptr, n_parts)
    partial = np.empty(n_parts)
    for t in prange(n_parts):
        partial[t] = _loss_grad_rows(indptr, indices, data, y, w, bias, code, sigma, theta,
                                     params, curvature_floor, bounds[t], bounds[t + 1], margins,
                                     curvature, out[t], weights, zero)
    return sum_of(partial)


@njit(cache=True, nogil=True)
def _hess_vec_rows(indptr, indices, data, curvature, s, bias, lo, hi, out):
    for i in range(lo, hi):
        d = curvature[i]
        if d != 0.0:  # rows without curvature (margin past the kink) cost nothing
            _axpy_row(indptr, indices, data, i, d * _dot(indptr, indices, data, i, s, bias),
                      bias, out)


@twins(nonzeros, "indptr", cache=True, nogil=True)
def hess_vec(indptr, indices, data, curvature, s, bias, out):
    """Adds X^T D X s of the block into ``out``."""
    n_parts = out.shape[0]
    bounds = row_partition(indptr, n_parts)
    for t in prange(n_parts):
        _hess_vec_rows(indptr, indices, data, curvature, s, bias, bounds[t], bounds[t + 1],
                       out[t])


@njit(cache=True, nogil=True)
def _hess_diag_rows(indptr, indices, data, curvature, bias, lo, hi, out):
    for i in range(lo, hi):
        d = curvature[i]
        if d != 0.0:
            for k in row_span(indptr, i):
                value = np.float64(data[k])
                out[np.uintp(indices[k])] += d * value * value
            if bias != 0.0:
                out[out.shape[0] - 1] += d * bias * bias


@twins(nonzeros, "indptr", cache=True, nogil=True)
def hess_diag(indptr, indices, data, curvature, bias, out):
    """Adds the diagonal of X^T D X of the block into ``out``."""
    n_parts = out.shape[0]
    bounds = row_partition(indptr, n_parts)
    for t in prange(n_parts):
        _hess_diag_rows(indptr, indices, data, curvature, bias, bounds[t], bounds[t + 1], out[t])


@twins(nonzeros, "indptr", cache=True, nogil=True)
def decision(indptr, indices, data, w, bias, out):
    """out[i] = x_i.w (+ bias * w[-1]) for the block's rows."""
    for i in prange(indptr.shape[0] - 1):
        out[i] = _dot(indptr, indices, data, i, w, bias)


@twins(nonzeros, "indptr", cache=True, nogil=True)
def decision_classes(indptr, indices, data, weights, out):
    """out[i, c] = x_i.weights[:d, c] + weights[d, c] for the block's rows: the decision
    values of every class at once, one visit of each nonzero.

    ``weights`` of shape (n_features + 1, n_classes): one column per class, its intercept
    last (row-major, so a nonzero reads one contiguous row); ``out`` (n_rows, n_classes).
    """
    n_classes = weights.shape[1]
    last = weights.shape[0] - 1
    for i in prange(indptr.shape[0] - 1):
        for c in range(n_classes):
            out[i, c] = weights[last, c]
        for k in row_span(indptr, i):
            j = np.uintp(indices[k])
            for c in range(n_classes):
                out[i, c] += data[k] * weights[j, c]


@twins(losses, "margins", cache=True, nogil=True)
def loss_sum_along(margins, trial_margins, alpha, code, sigma, theta, params, weights=None):
    """Sum of c_i psi(m_i + alpha (t_i - m_i)): the loss on the segment between two points
    from their cached margins m and t, no data, no vector of the rows' size (``weights`` as
    in :func:`loss_grad`); summed in :data:`SUM_PARTS` ranges."""
    partial = np.empty(SUM_PARTS)
    for t in prange(SUM_PARTS):
        lo, hi = _share(margins.shape[0], t, SUM_PARTS)
        total = 0.0
        for i in range(lo, hi):
            margin = margins[i] + alpha * (trial_margins[i] - margins[i])
            value = derivatives(code, margin, sigma, theta, params)[0]
            total += value if weights is None else weights[i] * value
        partial[t] = total
    return sum_of(partial)


@twins(nonzeros, "indptr", cache=True, nogil=True)
def loss_sum(indptr, indices, data, y, w, bias, code, sigma, theta, params, weights=None):
    """Sum of c_i psi(y_i x_i.w) over the block, no gradient (``weights`` as in
    :func:`loss_grad`); summed in :data:`SUM_PARTS` ranges."""
    partial = np.empty(SUM_PARTS)
    for t in prange(SUM_PARTS):
        lo, hi = _share(indptr.shape[0] - 1, t, SUM_PARTS)
        total = 0.0
        for i in range(lo, hi):
            value = derivatives(code, float(y[i]) * _dot(indptr, indices, data, i, w, bias),
                                sigma, theta, params)[0]
            total += value if weights is None else weights[i] * value
        partial[t] = total
    return sum_of(partial)


def transpose(indptr, indices, data, n_columns, n_parts, bucket_bits=13):
    """The block by columns, those with one nonzero apart: the tuple ``columns`` =
    ``(single, single_rows, single_values, multi, multi_ptr, multi_rows, multi_values,
    empty, row_values)`` that the column kernels take.

    ``single`` (int64, ascending) are the columns with one nonzero: column ``single[c]``
    has ``single_values[c]`` in row ``single_rows[c]`` (int32). ``multi`` are those with
    more: column ``multi[c]`` has its entries at ``multi_ptr[c]:multi_ptr[c + 1]`` of
    ``multi_rows`` (int32, ascending) and ``multi_values``. ``empty``: the others. Text
    has most columns single (its rare words); a loop over them alone has no per-column
    exit to mispredict. For the same reason the multi columns of each bucket (below)
    come by their number of entries, those with ``LENGTH_CLASSES`` or more last, ties in
    column order: an inner loop then mostly runs as long as the last one.

    Where every row holds one value (binary features, or such rows scaled to unit length:
    the store's test for lean blocks, ``codec.single_valued``), ``row_values`` holds them
    (float64) and ``single_values`` and ``multi_values`` are empty: X = diag(row_values) B
    with B's entries 1, and the column kernels read rows alone, no values. Else
    ``row_values`` is empty.

    ``indices`` must lie in ``0 .. n_columns - 1`` and the block must hold fewer than
    2^31 rows (the caller checks both). A two-level counting sort: the entries go first,
    in row order, into buckets of 2^``bucket_bits`` (<= 16) consecutive columns (a few
    hundred sequential write streams; the rows cut into ``n_parts`` ranges done in
    parallel), then each bucket is counted and placed by itself, its counters and its
    output in the caches (buckets in parallel). The large arrays are :func:`prefaulted`:
    numba's own allocations fault 4 KB at a time, and numpy's huge pages wait on the
    operating system's compaction where memory is fragmented."""
    if not 1 <= bucket_bits <= 16:  # a column's place in its bucket is a uint16
        raise ValueError(f"bucket_bits must be in 1..16, got {bucket_bits}")
    n_rows = indptr.shape[0] - 1
    by_row = n_rows > 0 and codec.single_valued(indptr, data)
    row_values = np.zeros(n_rows if by_row else 0)
    if by_row:
        codec.first_values(indptr, data, row_values)
    bounds = row_partition(indptr, n_parts)
    n_buckets = (n_columns + (1 << bucket_bits) - 1) >> bucket_bits
    sizes = np.zeros((n_parts, n_buckets), np.int64)
    _bucket_sizes(indptr, indices, bounds, bucket_bits, sizes)
    # bucket-major, then range: where range t's entries of bucket b start
    starts = np.zeros(n_buckets * n_parts + 1, np.int64)
    np.cumsum(sizes.T.ravel(), out=starts[1:])
    fills = starts[:-1].reshape(n_buckets, n_parts).T.copy()
    bucket_ptr = starts[::n_parts].copy()
    low = prefaulted(starts[-1], np.uint16)
    rows = prefaulted(starts[-1], np.int32)
    values = prefaulted(0 if by_row else starts[-1], data.dtype)
    _into_buckets(indptr, indices, data, bounds, bucket_bits, fills, low, rows, values)
    del fills
    counts = np.zeros(n_columns, np.int32)
    before = np.zeros((n_buckets + 1, 3), np.int64)  # singles, multis, multi entries
    _column_counts(low, bucket_ptr, bucket_bits, counts, before[1:])
    np.cumsum(before, axis=0, out=before)
    n_single, n_multi, n_entries = (int(v) for v in before[-1])
    columns = (prefaulted(n_single, np.int64), prefaulted(n_single, np.int32),
               prefaulted(0 if by_row else n_single, data.dtype), prefaulted(n_multi, np.int64),
               prefaulted(n_multi + 1, np.int64), prefaulted(n_entries, np.int32),
               prefaulted(0 if by_row else n_entries, data.dtype),
               prefaulted(n_columns - n_single - n_multi, np.int64))
    _place(low, rows, values, by_row, bucket_ptr, bucket_bits, counts, before, *columns)
    return columns + (row_values,)


@twins(nonzeros, "indptr", cache=True, nogil=True)
def _bucket_sizes(indptr, indices, bounds, bits, sizes):
    """sizes[t, b]: the entries of row range t in bucket b."""
    for t in prange(bounds.shape[0] - 1):
        size = sizes[t]
        for k in range(np.uintp(indptr[bounds[t]]), np.uintp(indptr[bounds[t + 1]])):
            size[np.uintp(indices[k]) >> bits] += 1


@twins(nonzeros, "indptr", cache=True, nogil=True)
def _into_buckets(indptr, indices, data, bounds, bits, fills, low, rows, values):
    """Range t's entries, in row order, to their buckets from ``fills[t]`` on."""
    mask = (1 << bits) - 1
    for t in prange(bounds.shape[0] - 1):
        fill = fills[t]
        for i in range(bounds[t], bounds[t + 1]):
            for k in row_span(indptr, i):
                j = np.uintp(indices[k])
                p = np.uintp(fill[j >> bits])
                low[p] = j & mask
                rows[p] = i
                if values.shape[0]:  # else the values are the rows' (transpose)
                    values[p] = data[k]
                fill[j >> bits] = p + 1


@twins(len, "low", cache=True, nogil=True)
def _column_counts(low, bucket_ptr, bits, counts, totals):
    """Each column's entries, and per bucket its single columns, multi columns and their
    entries (``totals[b]``)."""
    n_columns = counts.shape[0]
    for b in prange(bucket_ptr.shape[0] - 1):
        base = b << bits
        for p in range(bucket_ptr[b], bucket_ptr[b + 1]):
            counts[base + np.uintp(low[p])] += 1
        for j in range(base, min(base + (1 << bits), n_columns)):
            if counts[j] == 1:
                totals[b, 0] += 1
            elif counts[j] > 1:
                totals[b, 1] += 1
                totals[b, 2] += counts[j]


LENGTH_CLASSES = 64  # multi columns are ordered by their entries up to this many
SORT_CHUNK = 4096  # a copy's multi columns are ordered within runs of this many


@njit(cache=True, nogil=True, inline="always")
def _length_class(count):
    return min(count, LENGTH_CLASSES)


@njit(cache=True, nogil=True, inline="always")
def _by_length(counts, lo, hi, least, slots, out, first):
    """The positions c in lo..hi - 1 with counts[c] >= ``least``, written into ``out``
    from ``first`` on by length class, ties in their order (a counting sort; ``slots``:
    scratch of LENGTH_CLASSES + 1). Returns the end."""
    slots[:] = 0
    for c in range(lo, hi):
        if counts[c] >= least:
            slots[_length_class(counts[c])] += 1
    for k in range(slots.shape[0]):
        n = slots[k]
        slots[k] = first
        first += n
    for c in range(lo, hi):
        if counts[c] >= least:
            k = _length_class(counts[c])
            out[slots[k]] = c
            slots[k] += 1
    return first


@twins(len, "low", cache=True, nogil=True)
def _place(low, rows, values, by_row, bucket_ptr, bits, counts, before, single, single_rows,
           single_values, multi, multi_ptr, multi_rows, multi_values, empty):
    """Number each bucket's columns after those of the buckets ``before`` it, its multi
    columns by length class (:func:`transpose`), and place its entries, in the order they
    came (row order)."""
    n_columns = counts.shape[0]
    n_buckets = bucket_ptr.shape[0] - 1
    multi_ptr[multi.shape[0]] = multi_rows.shape[0]
    for b in prange(n_buckets):
        base = b << bits
        end = min(base + (1 << bits), n_columns)
        n_single, first, entries = before[b]
        n_empty = base - n_single - first
        last = _by_length(counts, base, end, 2, np.empty(LENGTH_CLASSES + 1, np.int64), multi,
                          first)
        at = np.empty(end - base, np.int64)  # a single column's slot; a multi one's next
        for j in range(base, end):
            if counts[j] == 1:
                single[n_single] = j
                at[j - base] = n_single
                n_single += 1
            elif counts[j] == 0:
                empty[n_empty] = j
                n_empty += 1
        for m in range(first, last):
            j = multi[m]
            multi_ptr[m] = entries
            at[j - base] = entries
            entries += counts[j]
        for p in range(bucket_ptr[b], bucket_ptr[b + 1]):
            c = np.uintp(low[p])
            q = np.uintp(at[c])
            if counts[base + c] == 1:
                single_rows[q] = rows[p]
                if not by_row:
                    single_values[q] = values[p]
            else:
                multi_rows[q] = rows[p]
                if not by_row:
                    multi_values[q] = values[p]
                at[c] = q + 1


def curved_columns(columns, curvature, n_parts, out):
    """The transpose ``columns`` (:func:`transpose`) of the rows with ``curvature[i] != 0``
    alone, written into ``out`` (arrays as ``columns``', but ``empty`` as long as there are
    columns) and returned as views of it: Hessian products then read only the entries of
    rows with curvature. ``out`` is written from the front, so when it is reused, only
    the pages the largest copy needed are ever touched. The single columns keep their
    order; the multi ones are ordered again by their entries in the copy, as
    :func:`transpose` orders them, within runs of ``SORT_CHUNK``; a multi column left with
    one entry stays multi. Two passes over the entries, the columns cut into ``n_parts``
    ranges done in parallel. ``row_values`` are the transpose's own."""
    (single, single_rows, single_values, multi, multi_ptr, multi_rows, multi_values, empty,
     row_values) = columns
    (out_single, out_single_rows, out_single_values, out_multi, out_ptr, out_rows, out_values,
     out_empty) = out
    bounds = row_partition(multi_ptr, n_parts)
    counts = np.empty(multi.shape[0], np.int64)
    # per range, then summed before it: singles kept, multi columns kept, their entries,
    # columns left empty
    totals = np.zeros((n_parts + 1, 4), np.int64)
    _curved_counts(single_rows, multi_ptr, multi_rows, curvature, bounds, counts, totals[1:])
    np.cumsum(totals, axis=0, out=totals)
    n_empty = empty.shape[0]
    out_empty[:n_empty] = empty
    _curved_place(single, single_rows, single_values, multi, multi_ptr, multi_rows,
                  multi_values, row_values.shape[0] > 0, curvature, bounds, counts, totals,
                  n_empty, out_single, out_single_rows, out_single_values, out_multi, out_ptr,
                  out_rows, out_values, out_empty)
    n_single, n_multi, n_entries, n_dropped = (int(v) for v in totals[-1])
    out_ptr[n_multi] = n_entries
    return (out_single[:n_single], out_single_rows[:n_single], out_single_values[:n_single],
            out_multi[:n_multi], out_ptr[:n_multi + 1], out_rows[:n_entries],
            out_values[:n_entries], out_empty[:n_empty + n_dropped], row_values)


@twins(len, "multi_rows", cache=True, nogil=True)
def _curved_counts(single_rows, multi_ptr, multi_rows, curvature, bounds, counts, totals):
    """The curved entries of each multi column, and :func:`curved_columns`' totals of
    each range."""
    n_parts = bounds.shape[0] - 1
    for t in prange(n_parts):
        lo, hi = _share(single_rows.shape[0], t, n_parts)
        kept = 0
        for c in range(lo, hi):
            kept += curvature[np.uintp(single_rows[c])] != 0.0
        n_multi, entries = 0, 0  # locals: the ranges' totals share a cache line
        for c in range(bounds[t], bounds[t + 1]):
            k = 0
            for e in row_span(multi_ptr, c):
                k += curvature[np.uintp(multi_rows[e])] != 0.0
            counts[c] = k
            n_multi += k != 0
            entries += k
        n_columns = hi - lo + bounds[t + 1] - bounds[t]
        totals[t, 0], totals[t, 1], totals[t, 2] = kept, n_multi, entries
        totals[t, 3] = n_columns - kept - n_multi


@twins(len, "multi_rows", cache=True, nogil=True)
def _curved_place(single, single_rows, single_values, multi, multi_ptr, multi_rows,
                  multi_values, by_row, curvature, bounds, counts, before, n_empty, out_single,
                  out_single_rows, out_single_values, out_multi, out_ptr, out_rows, out_values,
                  out_empty):
    """Each range's kept columns and entries after those of the ranges ``before`` it.

    Whether a row has curvature is a coin toss to the branch predictor: every entry is
    written where a kept one would go, and the position moves on if it is kept (no
    branch), guarded so that no range writes into the next's."""
    n_parts = bounds.shape[0] - 1
    for t in prange(n_parts):
        n_single, n_multi, entries, dropped = before[t]
        end_single, _, end_entries, end_dropped = before[t + 1]
        dropped += n_empty
        end_dropped += n_empty
        lo, hi = _share(single_rows.shape[0], t, n_parts)
        for c in range(lo, hi):
            row = single_rows[c]
            keep = curvature[np.uintp(row)] != 0.0
            if n_single < end_single:
                out_single[np.uintp(n_single)] = single[c]
                out_single_rows[np.uintp(n_single)] = row
                if not by_row:
                    out_single_values[np.uintp(n_single)] = single_values[c]
            if dropped < end_dropped:
                out_empty[np.uintp(dropped)] = single[c]
            n_single += keep
            dropped += not keep
        slots = np.empty(LENGTH_CLASSES + 1, np.int64)
        kept = np.empty(SORT_CHUNK, np.int64)  # a chunk's kept columns, by class
        for lo in range(bounds[t], bounds[t + 1], SORT_CHUNK):
            hi = min(lo + SORT_CHUNK, bounds[t + 1])
            n_kept = _by_length(counts, lo, hi, 1, slots, kept, 0)
            for c in range(lo, hi):  # written in any case, kept if empty (as the singles)
                if dropped < end_dropped:
                    out_empty[np.uintp(dropped)] = multi[c]
                dropped += counts[c] == 0
            # in their new order, so that an entry written where a kept one would go
            # lands in a column still to come, or is guarded at the range's end
            for q in range(n_kept):
                c = kept[q]
                out_multi[np.uintp(n_multi)] = multi[c]
                out_ptr[np.uintp(n_multi)] = entries
                n_multi += 1
                for e in row_span(multi_ptr, c):
                    row = multi_rows[e]
                    if entries < end_entries:
                        out_rows[np.uintp(entries)] = row
                        if not by_row:
                            out_values[np.uintp(entries)] = multi_values[e]
                    entries += curvature[np.uintp(row)] != 0.0


@njit(cache=True, nogil=True)
def sum_rows(parts):
    """The sum of the rows of a 2-d array, in row order (as ``parts.sum(axis=0)``, whose
    implementation in numba is a compile of its own, for its checks of ``axis``)."""
    out = parts[0].copy()
    for t in range(1, parts.shape[0]):
        for j in range(out.shape[0]):
            out[j] += parts[t, j]
    return out


@njit(cache=True, nogil=True)
def sum_of(values):
    """The sum of a 1-d array's entries, in order (as ``values.sum()``, which in a parallel
    kernel is a parallel region of its own)."""
    acc = 0.0
    for k in range(values.shape[0]):
        acc += values[k]
    return acc


@njit(cache=True, nogil=True, inline="always")
def _share(n, t, n_parts):
    """Part t of range(n) cut into n_parts of equal length."""
    return n * t // n_parts, n * (t + 1) // n_parts


@njit(cache=True, nogil=True)
def _loss_rows(indptr, indices, data, y, w, bias, code, sigma, theta, params, curvature_floor,
               lo, hi, margins, curvature, coef, weights, zero):
    total = 0.0
    for i in range(lo, hi):
        margins[i], value, coef[i], curvature[i] = _row_terms(
            indptr, indices, data, y, i, w, bias, code, sigma, theta, params, curvature_floor,
            weights, zero)
        total += value
    return total


@twins(nonzeros, "indptr", cache=True, nogil=True)
def loss_coef(indptr, indices, data, y, w, bias, code, sigma, theta, params, curvature_floor,
              margins, curvature, coef, n_parts, weights=None, zero=False):
    """:func:`loss_grad` without the scatter: writes c_i psi'(y_i x_i.w) y_i into ``coef``
    (the gradient is then X^T coef, by :func:`column_sums` on the transpose). Rows run in
    ``n_parts`` parallel ranges; no per-thread d-vectors."""
    bounds = row_partition(indptr, n_parts)
    partial = np.empty(n_parts)
    for t in prange(n_parts):
        partial[t] = _loss_rows(indptr, indices, data, y, w, bias, code, sigma, theta, params,
                                curvature_floor, bounds[t], bounds[t + 1], margins, curvature,
                                coef, weights, zero)
    return sum_of(partial)


def loss_coef_by_columns(columns, y, w, bias, code, sigma, theta, params, curvature_floor,
                         margins, curvature, coef, n_parts, weights=None, zero=False):
    """:func:`loss_coef` with the products X w taken by columns from the transpose
    (:func:`column_products`): for wide data, whose margins fit in cache and w does not."""
    xw = np.zeros(y.shape[0]) if zero else column_products(columns, w, y.shape[0], n_parts)
    return _loss_of_products(xw, y, w, bias, code, sigma, theta, params, curvature_floor,
                             margins, curvature, coef, weights)


@njit(cache=True, nogil=True)
def _loss_of_products(xw, y, w, bias, code, sigma, theta, params, curvature_floor, margins,
                      curvature, coef, weights):
    """:func:`loss_coef_by_columns` from the products ``xw`` = X w (no intercept)."""
    wb = bias * w[w.shape[0] - 1] if bias != 0.0 else 0.0
    total = 0.0
    for i in range(y.shape[0]):
        margins[i], value, coef[i], curvature[i] = _terms(
            xw[i] + wb, y, i, code, sigma, theta, params, curvature_floor, weights)
        total += value
    return total


@twins(entries, "columns", cache=True, nogil=True)
def column_products(columns, v, n_rows, n_parts, compact=False, z=None, beta=0.0):
    """X v (the columns' part, without an intercept) from the transpose ``columns``
    (:func:`transpose`): each of ``n_parts`` column ranges reads its part of v in order
    and adds into its own n_rows-vector, summed at the end. Where X v fits in cache and v
    does not (wide data), this beats row dot products' scattered reads of v. ``compact``: v is in
    the columns' own order (:func:`column_order`), read in sequence; then, with ``z``, v
    is first made z + beta v in place (CG's next direction, written as it is read: no
    sweep of its own; the intercept's entry, if any, is the caller's). Values by row
    (:func:`transpose`): each row's sum of v, times the row's value at the end."""
    (single, single_rows, single_values, multi, multi_ptr, multi_rows, multi_values, _,
     row_values) = columns
    by_row = row_values.shape[0] > 0
    n_single = single.shape[0]
    bounds = row_partition(multi_ptr, n_parts)
    partial = np.empty((n_parts, n_rows))
    for t in prange(n_parts):
        out = partial[t]
        for i in range(n_rows):
            out[i] = 0.0
        lo, hi = _share(n_single, t, n_parts)
        for c in range(lo, hi):
            j = np.uintp(c) if compact else np.uintp(single[c])
            if z is not None:
                v[j] = z[j] + beta * v[j]
            out[np.uintp(single_rows[c])] += v[j] if by_row else single_values[c] * v[j]
        for c in range(bounds[t], bounds[t + 1]):
            j = np.uintp(n_single + c) if compact else np.uintp(multi[c])
            if z is not None:
                v[j] = z[j] + beta * v[j]
            vj = v[j]
            if vj != 0.0:
                for k in row_span(multi_ptr, c):
                    out[np.uintp(multi_rows[k])] += vj if by_row else multi_values[k] * vj
    return _summed(partial, row_values)


@njit(cache=True, nogil=True)
def _summed(parts, row_values):
    """:func:`sum_rows` of ``parts``, entry by entry times ``row_values`` if it has any."""
    out = sum_rows(parts)
    for i in range(row_values.shape[0]):
        out[i] *= row_values[i]
    return out


def column_order(columns):
    """The columns of ``columns`` (:func:`transpose`) that hold entries, in the kernels'
    own order (the single ones, then the others): the vectors of ``compact`` products are
    indexed by position in it. Sequential reads of v, and no reads of the column numbers;
    vectors without the empty columns (many, on the rows with curvature only) are shorter
    for CG's sweeps too."""
    return np.concatenate((columns[0], columns[3]))


@twins(nonzeros, "indptr", cache=True, nogil=True)
def curved_products(indptr, indices, data, curvature, s, bias, n_parts, out):
    """out[i] = D_ii x_i.s (0 where D_ii = 0, without reading the row): X^T out is the
    block's X^T D X s (:func:`column_sums`)."""
    bounds = row_partition(indptr, n_parts)
    for t in prange(n_parts):
        for i in range(bounds[t], bounds[t + 1]):
            d = curvature[i]
            out[i] = d * _dot(indptr, indices, data, i, s, bias) if d != 0.0 else 0.0


@twins(entries, "columns", cache=True, nogil=True)
def column_sums(columns, v, squared, bias, x, lam, scale, n_parts, out, compact=False):
    """out[j] = lam x[j] + scale sum_i x_ij v_i (x_ij^2 v_i if ``squared``) from the
    transpose ``columns`` (:func:`transpose`); when ``out`` has one more entry than there
    are columns, it is the intercept's, scale bias sum_i v_i (bias^2 if ``squared``), not
    regularised. Columns run in ``n_parts`` parallel ranges of equal work, each entry
    written once (a gather: threads share nothing). Returns x.out, read off as ``out`` is
    written: for a Hessian product, CG's d.Hd without another read of both vectors.
    ``compact``: x and out are in the columns' own order
    (:func:`column_order`), without the empty columns, the intercept last. Values by row
    (:func:`transpose`): v times the rows' values (squared) first, then sums of it."""
    (single, single_rows, single_values, multi, multi_ptr, multi_rows, multi_values, empty,
     row_values) = columns
    by_row = row_values.shape[0] > 0
    u = _by_rows(v, row_values, squared) if by_row else v
    n_single = single.shape[0]
    n_columns = n_single + multi.shape[0] + (0 if compact else empty.shape[0])
    bounds = row_partition(multi_ptr, n_parts)
    dots = np.empty(n_parts)
    for t in prange(n_parts):
        dot = 0.0
        lo, hi = _share(n_single, t, n_parts)
        for c in range(lo, hi):
            j = np.uintp(c) if compact else np.uintp(single[c])
            ui = u[np.uintp(single_rows[c])]
            if not by_row:
                value = np.float64(single_values[c])  # squared in float64 (data may be float32)
                ui *= value * value if squared else value
            xj = x[j]
            out[j] = oj = lam * xj + scale * ui
            dot += xj * oj
        for c in range(bounds[t], bounds[t + 1]):
            acc = 0.0
            if by_row:
                for k in row_span(multi_ptr, c):
                    acc += u[np.uintp(multi_rows[k])]
            elif squared:
                for k in row_span(multi_ptr, c):
                    value = np.float64(multi_values[k])
                    acc += value * value * u[np.uintp(multi_rows[k])]
            else:
                acc = row_dot(multi_ptr, multi_rows, multi_values, c, u)
            j = np.uintp(n_single + c) if compact else np.uintp(multi[c])
            xj = x[j]
            out[j] = oj = lam * xj + scale * acc
            dot += xj * oj
        lo, hi = _share(0 if compact else empty.shape[0], t, n_parts)
        for c in range(lo, hi):
            j = np.uintp(empty[c])
            xj = x[j]
            out[j] = oj = lam * xj
            dot += xj * oj
        dots[t] = dot
    total = sum_of(dots)
    if out.shape[0] > n_columns:
        out[n_columns] = scale * (bias * bias if squared else bias) * sum_of(v)
        total += x[n_columns] * out[n_columns]
    return total


@njit(cache=True, nogil=True)
def _by_rows(v, row_values, squared):
    """v times the rows' values (squared if ``squared``), entry by entry."""
    return v * (row_values * row_values if squared else row_values)


@twins(len, "indices", cache=True, nogil=True)
def csr_checks(indptr, indices, data, n_columns, n_parts):
    """``(bad_row, canonical, in_range, finite)`` of a CSR matrix in one parallel read: the
    first row whose bounds decrease or leave ``indices`` (-1: none; such a row is not
    read), whether every row's indices increase strictly (scipy's canonical format: sorted,
    no duplicates), whether every index of the rows lies in [0, ``n_columns``), and whether
    every value is finite. The rows, and the values, are cut into ``n_parts`` equal ranges
    (not by ``indptr``: it is under test)."""
    n, nnz = indptr.shape[0] - 1, indices.shape[0]
    # filled and reduced by loops (np.full and ndarray.all are compiles of their own)
    bad = np.empty(n_parts, np.int64)
    ok = np.empty((n_parts, 3), np.bool_)
    for t in prange(n_parts):
        bad[t] = -1
        lo, hi = _share(n, t, n_parts)
        canonical = True
        low, high = 0, -1  # the least and largest index of the rows
        for i in range(lo, hi):
            a, b = indptr[i], indptr[i + 1]
            if a < 0 or b < a or b > nnz:
                if bad[t] < 0:
                    bad[t] = i
                continue
            if b > a:
                before = indices[a]
                low, high = min(low, before), max(high, before)
                for k in range(a + 1, b):
                    j = indices[k]
                    canonical &= j > before
                    low, high = min(low, j), max(high, j)
                    before = j
        in_range = low >= 0 and high < n_columns
        lo, hi = _share(data.shape[0], t, n_parts)
        zero = 0.0  # x - x is 0 for a finite x, NaN for an infinite one or NaN
        for k in range(lo, hi):
            zero += data[k] - data[k]
        ok[t, 0], ok[t, 1], ok[t, 2] = canonical, in_range, zero == 0.0
    first = -1
    all_canonical = all_in_range = all_finite = True
    for t in range(n_parts):
        if first < 0 and bad[t] >= 0:
            first = bad[t]
        all_canonical &= ok[t, 0]
        all_in_range &= ok[t, 1]
        all_finite &= ok[t, 2]
    return first, all_canonical, all_in_range, all_finite


@njit(cache=True, nogil=True)
def max_row_norm2(indptr, indices, data):
    """max_i ||x_i||^2 over the block's rows (0 for an empty block)."""
    best = 0.0
    for i in range(indptr.shape[0] - 1):
        best = max(best, row_norm2(indptr, indices, data, i))
    return best


@njit(cache=True, nogil=True)
def gather_curved_rows(indptr, indices, data, curvature):
    """The rows with curvature != 0 as a compact CSR block.

    Returns ``(indptr, indices, data, curvature)`` of those rows only: all that a
    Hessian-vector product needs, so CG steps can run on it without reading the block again.
    """
    n = indptr.shape[0] - 1
    rows = 0
    nnz = 0
    for i in range(n):
        if curvature[i] != 0.0:
            rows += 1
            nnz += indptr[i + 1] - indptr[i]
    out_indptr = np.empty(rows + 1, np.int64)
    out_indices = np.empty(nnz, indices.dtype)
    out_data = np.empty(nnz, data.dtype)
    out_curvature = np.empty(rows)
    out_indptr[0] = 0
    r = 0
    pos = 0
    for i in range(n):
        if curvature[i] != 0.0:
            for k in row_span(indptr, i):
                out_indices[pos] = indices[k]
                out_data[pos] = data[k]
                pos += 1
            out_curvature[r] = curvature[i]
            r += 1
            out_indptr[r] = pos
    return out_indptr, out_indices, out_data, out_curvature


@twins(np.size, "parts", cache=True, nogil=True)
def merge_parts(parts, x, lam, scale, unregularised_last, out):
    """out = lam * x + scale * sum_t parts[t], and parts zeroed for the next pass.

    The last entry of ``x`` is not regularised when ``unregularised_last`` (an intercept).
    """
    n_parts, n = parts.shape
    for j in prange(n):
        acc = 0.0
        for t in range(n_parts):
            acc += parts[t, j]
            parts[t, j] = 0.0
        # the intercept's entry without lam x (adding it and taking it away would lose the
        # digits of lam |x| to the cancellation)
        regularised = not unregularised_last or j != n - 1
        out[j] = (lam * x[j] if regularised else 0.0) + scale * acc
