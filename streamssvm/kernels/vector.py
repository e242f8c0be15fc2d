"""Fused sweeps over the dense d-vectors of conjugate gradient (TRON, Newton), and the
parallel gather and placement between a Newton system's vectors and the variables'.

After a Hessian-vector product has streamed the data, CG's vectors are read back from
memory, not cache, so a CG step is made of as few sweeps as its arithmetic allows: d.Hd
(read off by the product, ``kernels.column_sums``) and two sweeps, :func:`cg_move` (s and
r moved, and the dot products the solvers test, read off as they are written) and
:func:`cg_direction`, 11 vector transfers where separate BLAS and numpy calls make 15.

On a Newton system of the curved rows' columns the direction d = z + beta d is made by
the product's X d as it reads d (``kernels.column_products``), not by :func:`cg_direction`.
A trial point w + s and g.s are one sweep (:func:`moved`).

Each vector is cut into ``n_parts`` equal ranges run in parallel; the sums equal the serial
ones up to the order of floating-point additions. Every kernel is a
:func:`~._twins.twins`, serial on short vectors, with one parallel region (its arrays made
and summed by serial functions).
"""

import numpy as np
from numba import prange

from ._twins import twins
from .linear import _share, sum_of, sum_rows


@twins(len, "g", cache=True, nogil=True)
def cg_start(g, precond, s, r, z, d, n_parts):
    """s = 0, r = -g, z = M^-1 r with a diagonal ``precond`` M (None: z is r, not
    written) and d = z, into the arrays given: one sweep."""
    n = s.shape[0]
    for t in prange(n_parts):
        lo, hi = _share(n, t, n_parts)
        for j in range(lo, hi):
            rj = -g[j]
            s[j] = 0.0
            r[j] = rj
            zj = rj if precond is None else rj / precond[j]
            if precond is not None:
                z[j] = zj
            d[j] = zj


@twins(len, "d", cache=True, nogil=True)
def cg_move(alpha, d, hd, s, r, precond, z, g, n_parts):
    """s += alpha d, r -= alpha hd and, with a diagonal ``precond`` M (None: the identity),
    z = M^-1 r, in place. Returns (s.M s, z.r, s.r, s.g) after the move, s.g 0 when ``g``
    is None, and (s.hd, d.r) before it."""
    n = s.shape[0]
    sums = np.empty((n_parts, 6))
    for t in prange(n_parts):
        lo, hi = _share(n, t, n_parts)
        sms = zr = sr = sg = shd = dr = 0.0
        for j in range(lo, hi):
            shd += s[j] * hd[j]
            dr += d[j] * r[j]
            sj = s[j] + alpha * d[j]
            rj = r[j] - alpha * hd[j]
            s[j] = sj
            r[j] = rj
            if precond is None:
                sms += sj * sj
                zr += rj * rj
            else:
                zj = rj / precond[j]
                z[j] = zj
                sms += sj * sj * precond[j]
                zr += zj * rj
            sr += sj * rj
            if g is not None:
                sg += sj * g[j]
        sums[t, 0], sums[t, 1], sums[t, 2], sums[t, 3] = sms, zr, sr, sg
        sums[t, 4], sums[t, 5] = shd, dr
    return sum_rows(sums)


@twins(len, "z", cache=True, nogil=True)
def cg_direction(beta, z, d, out, n_parts):
    """out = z + beta d (``out`` may be d: in place)."""
    n = d.shape[0]
    for t in prange(n_parts):
        lo, hi = _share(n, t, n_parts)
        for j in range(lo, hi):
            out[j] = z[j] + beta * d[j]


@twins(len, "w", cache=True, nogil=True)
def moved(w, s, g, out, n_parts):
    """out = w + s (a trial point); returns g.s: one sweep."""
    n = w.shape[0]
    sums = np.empty(n_parts)
    for t in prange(n_parts):
        lo, hi = _share(n, t, n_parts)
        total = 0.0
        for j in range(lo, hi):
            out[j] = w[j] + s[j]
            total += g[j] * s[j]
        sums[t] = total
    return sum_of(sums)


@twins(len, "index", cache=True, nogil=True)
def gather(v, index, out, n_parts):
    """out = v[index] (``out`` None: not written). Returns the sum of v[index]^2."""
    n = index.shape[0]
    sums = np.empty(n_parts)
    for t in prange(n_parts):
        lo, hi = _share(n, t, n_parts)
        total = 0.0
        for p in range(lo, hi):
            vj = v[np.uintp(index[p])]
            if out is not None:
                out[p] = vj
            total += vj * vj
        sums[t] = total
    return sum_of(sums)


@twins(len, "out", cache=True, nogil=True)
def place(s, index, g, rest, out, n_parts):
    """out = -rest g, then out[index] = s: a vector of the variables from its part ``s``
    on ``index`` and its part elsewhere, ``rest`` times -g (a Newton system's step)."""
    n, m = out.shape[0], index.shape[0]
    for t in prange(n_parts):
        lo, hi = _share(n, t, n_parts)
        for j in range(lo, hi):
            out[j] = -rest * g[j]
    for t in prange(n_parts):
        lo, hi = _share(m, t, n_parts)
        for p in range(lo, hi):
            out[np.uintp(index[p])] = s[p]
