"""Numba kernels of the stochastic solvers: one call runs the updates of one block's rows.

Every kernel visits the rows of a block in the order given by ``order`` (positions in the
block) and updates the solver's state in place, so a solver streams a store block by block
and keeps nothing but its state between calls. Scalars that must survive between calls
travel in a small float64 array ``state`` (indices below); the intercept (when ``bias`` is
not 0) is the scalar ``state[INTERCEPT]``, never shrunk by the L2 term.

Sparse steps stay O(nnz of the row), never O(n_features):

- SGD keeps w = scale * v, so the shrink w <- (1 - eta lam) w is one multiplication of
  ``scale`` (Bottou; lightning). Its average (ASGD) is sum_k w_k = u + c v with a second
  vector u changed only on the row's features (Xu 2011).
- SVRG keeps w = scale * v + r * mu with mu the loss part of the snapshot's full gradient:
  the dense part of every step changes the two scalars only.
- SAGA adds the dense average gradient lazily: coordinate j is brought up to date only
  when a row touches it, from prefix sums of eta / scale (Schmidt, Le Roux & Bach's
  just-in-time updates), and all coordinates at the end of an epoch.
- SDCA updates w by the change of one dual variable times the row.

SGD with delayed updates shares an epoch's dot products between two threads, each stepping
its own copy of v (:func:`sgd_rows_parallel`).
"""

import math

import numpy as np
from numba import njit, prange

from ..losses._scalar import HINGE, PSI_G, PSI_M, bend_slope_inverse
from ..losses._scalar import conjugate_with_params as conjugate
from ..losses._scalar import derivatives_with_params as derivatives
from ._intrinsics import load_acquire, store_release
from .linear import (prefetch_row, prefetch_rows, row_axpy, row_dot, row_dot_norm2, row_norm2,
                     row_span)

# state[...] of the SGD kernels
SCALE = 0          # w = scale * v
STEP = 1           # steps taken so far (t)
V_NORM2 = 2        # ||v||^2, kept only when projecting (Pegasos)
AVG_C = 3          # sum of w over the averaged steps = u + AVG_C * v
AVG_COUNT = 4      # steps averaged
INTERCEPT = 5
AVG_INTERCEPT = 6  # sum of the intercepts over the averaged steps
SGD_STATE_SIZE = 7

# learning-rate schedules
OPTIMAL = 0        # 1 / (lam (t0 + t)); Pegasos is t0 = 0
CONSTANT = 1       # eta0
INVSCALING = 2     # eta0 / t^power_t

_RESCALE_BELOW = 1e-9  # fold scale into v below this, before v's entries grow too large
_RESCALE_AVERAGING_BELOW = 1e-5  # and with ASGD (as Bottou's svmasgd): u + AVG_C v cancels
                                 # more as 1 / scale grows
_ULP = float(np.finfo(np.float64).eps)


@njit(cache=True, nogil=True)
def learning_rate(schedule, t, lam, eta0, power_t, t0):
    """eta_t of step t >= 1 (the paper's exogenous rate)."""
    if schedule == OPTIMAL:
        return 1.0 / (lam * (t0 + t))
    if schedule == CONSTANT:
        return eta0
    return eta0 / t ** power_t


@njit(cache=True, nogil=True)
def _sgd_fold_scale(v, state, averaging, avg_u):
    """v <- scale * v, scale <- 1 (the represented w and its average unchanged). The
    average's AVG_C v goes into u first: AVG_C / scale would grow by 1 / scale at every
    fold, and u + AVG_C v then cancel to nothing (projections make folds frequent)."""
    scale = state[SCALE]
    if averaging:
        avg_u += state[AVG_C] * v
        state[AVG_C] = 0.0
    v *= scale
    state[V_NORM2] *= scale * scale
    state[SCALE] = 1.0


@njit(cache=True, nogil=True, inline="always")
def _sgd_step(indptr, indices, data, y, i, xv, v, avg_u, state, bias, code, sigma, theta, params,
              lam, schedule, eta0, power_t, t0, radius, avg_start, fold):
    """The step of :func:`sgd_rows` on row i, given xv = x_i.v; ``fold``: fold a small scale
    into v here (else the caller does, between steps)."""
    averaging = avg_start > 0
    t = state[STEP] + 1.0
    state[STEP] = t
    eta = learning_rate(schedule, t, lam, eta0, power_t, t0)
    yi = float(y[i])
    margin = yi * (state[SCALE] * xv + bias * state[INTERCEPT])
    slope = derivatives(code, margin, sigma, theta, params)[1]
    shrink = 1.0 - eta * lam
    if shrink <= 0.0:  # Pegasos' first step: w is set to 0, then moved
        if averaging:
            avg_u += state[AVG_C] * v
            state[AVG_C] = 0.0
        v[:] = 0.0
        xv = 0.0
        state[V_NORM2] = 0.0
        state[SCALE] = 1.0
    else:
        state[SCALE] *= shrink
    coef = -eta * slope * yi
    if bias != 0.0:
        state[INTERCEPT] += coef * bias
    if coef != 0.0:
        delta = coef / state[SCALE]
        if radius > 0.0:
            state[V_NORM2] += delta * (2.0 * xv + delta * row_norm2(indptr, indices, data, i))
        row_axpy(indptr, indices, data, i, delta, v)
        if averaging and t >= avg_start:
            row_axpy(indptr, indices, data, i, -state[AVG_C] * delta, avg_u)
    if radius > 0.0:
        norm = state[SCALE] * math.sqrt(max(state[V_NORM2], 0.0))
        if norm > radius:
            state[SCALE] *= radius / norm
    if averaging and t >= avg_start:
        state[AVG_C] += state[SCALE]
        state[AVG_COUNT] += 1.0
        state[AVG_INTERCEPT] += state[INTERCEPT]
    if fold and state[SCALE] < (_RESCALE_AVERAGING_BELOW if averaging else _RESCALE_BELOW):
        _sgd_fold_scale(v, state, averaging, avg_u)


@njit(cache=True, nogil=True)
def sgd_rows(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma, theta, params,
             lam, schedule, eta0, power_t, t0, radius, avg_start, delay=0):
    """SGD steps w <- (1 - eta_t lam) w - eta_t psi'(y_i w.x_i) y_i x_i on rows ``order``.

    ``radius`` > 0 projects w onto the ball ||w|| <= radius after every step (Pegasos:
    1 / sqrt(lam)). Steps t >= ``avg_start`` (> 0) are averaged into ``avg_u`` and
    ``state[AVG_C]`` (ASGD); ``avg_start = 0`` turns averaging off. ``delay`` > 0 takes
    the steps of SGD with delayed updates (:func:`sgd_rows_parallel`) on this thread.
    """
    if delay:
        n = order.shape[0]
        _chunks(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma, theta,
                params, lam, schedule, eta0, power_t, t0, radius, avg_start, delay,
                np.empty(n), np.empty(0), np.zeros(n, np.int64), np.zeros(_CTL_SIZE, np.int64),
                True)
        return
    for pos in range(order.shape[0]):
        prefetch_rows(indptr, indices, data, order, pos)
        i = order[pos]
        _sgd_step(indptr, indices, data, y, i, row_dot(indptr, indices, data, i, v), v, avg_u,
                  state, bias, code, sigma, theta, params, lam, schedule, eta0, power_t, t0,
                  radius, avg_start, True)


# ctl[...] of sgd_rows_parallel, a cache line (8 int64) apart: written by the lead thread,
# read by the helper with acquire loads (LEFT: written by the helper)
CHUNK = 0          # the chunk whose dots the lead is computing (1, 2, ...)
READY = 8          # the last chunk whose dots are final in ``dots``
LEFT = 16          # 1 if the helper left before the end: its copy of v is not v
_CTL_SIZE = 24
_WAIT = 20_000     # spins the lead waits for a dot the helper is computing
_AHEAD = 4         # a thread prefetches the nonzeros of its row this many ahead: far
                   # enough to hide a load's latency, near enough to stay in cache
_START = 1_000_000  # spins the helper waits for the lead's first chunk (if both roles run on
                    # one thread, the helper's may come first), before leaving


@njit(cache=True, nogil=True)
def sgd_rows_parallel(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma,
                      theta, params, lam, schedule, eta0, power_t, t0, radius, avg_start, delay,
                      replica, replica_state):
    """SGD with delayed updates (``delay`` = K >= 1) on two threads, each with its own copy
    of v: the lead's ``v`` and ``state``, the helper's ``replica`` and ``replica_state``
    (equal to them on entry).

    The rows go in chunks of K: every step of a chunk takes its dot x_i.v at the v of the
    chunk's start, so it misses the writes of the steps before it in its chunk (Langford,
    Smola & Zinkevich's delayed updates; K = 1 is serial SGD). An epoch is nearly all dot
    products in random row order, each waiting on scattered reads of v: the two threads
    compute a chunk's dots half each, and both then take the chunk's steps from those
    dots, each on its own copy. The same arithmetic in the same order keeps the copies
    equal to the bit, and no line of v is written by one core and read by the other
    (sharing one v, whose lines then move between the cores at every write, can make an
    epoch slower on two threads than on one). The lead never waits: it computes the dots
    of its half, takes the helper's where they are ready and computes the others; a
    helper that falls behind catches up by taking the steps alone. A scale that becomes
    small is folded into v at a chunk's end. The steps are those of :func:`sgd_rows` with
    the same ``delay``, on one thread.

    Returns True when the helper's copy equals v at the end (not when the helper left
    early: the caller then copies v again before the next call).
    """
    n = order.shape[0]
    ctl = np.zeros(_CTL_SIZE, np.int64)
    _two_roles(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma, theta,
               params, lam, schedule, eta0, power_t, t0, radius, avg_start, delay, replica,
               replica_state, np.empty(n), np.empty(n), np.zeros(n, np.int64), ctl)
    return ctl[LEFT] == 0


@njit(cache=True, nogil=True, parallel=True)
def _two_roles(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma, theta,
               params, lam, schedule, eta0, power_t, t0, radius, avg_start, delay, replica,
               replica_state, dots, helped, marks, ctl):
    """The lead and the helper of :func:`sgd_rows_parallel`, one thread each. (Read after
    the loop in this function, ``ctl`` held what it held before the loop: numba's parfor
    passes do not see what the functions called in the loop write.)"""
    for role in prange(2):
        if role == 0:
            _chunks(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma, theta,
                    params, lam, schedule, eta0, power_t, t0, radius, avg_start, delay, dots,
                    helped, marks, ctl, True)
        else:
            _chunks(indptr, indices, data, y, order, replica, np.empty(0), replica_state, bias,
                    code, sigma, theta, params, lam, schedule, eta0, power_t, t0, radius,
                    avg_start, delay, dots, helped, marks, ctl, False)


@njit(cache=True, nogil=True)
def _chunks(indptr, indices, data, y, order, v, avg_u, state, bias, code, sigma, theta, params,
            lam, schedule, eta0, power_t, t0, radius, avg_start, delay, dots, helped, marks,
            ctl, lead):
    """One thread of :func:`sgd_rows_parallel`: the lead (``lead``) or the helper, which
    averages nothing (averaging does not change v) but folds its scale when the lead does."""
    n = order.shape[0]
    averaging = lead and avg_start > 0
    fold_below = _RESCALE_AVERAGING_BELOW if avg_start > 0 else _RESCALE_BELOW
    if not lead:
        spins = 0
        while load_acquire(ctl, CHUNK) == 0:
            spins += 1
            if spins > _START:
                store_release(ctl, LEFT, 1)
                return
    for chunk in range(1, (n - 1) // delay + 2):  # ceil(n / delay) chunks, no overflow
        lo = (chunk - 1) * delay
        hi = lo + min(n - lo, delay)  # no overflow, whatever the delay
        mid = lo + (hi - lo) // 2
        if lead:
            store_release(ctl, CHUNK, chunk)
            for pos in range(mid, hi):
                if pos + _AHEAD < hi:
                    prefetch_row(indptr, indices, data, order[pos + _AHEAD])
                dots[pos] = row_dot(indptr, indices, data, order[pos], v)
            for pos in range(mid - 1, lo - 1, -1):  # the helper's half, from its end
                if pos > lo and load_acquire(marks, pos - 1) == chunk:
                    # the helper is on this row: wait for it a while
                    for _ in range(_WAIT):
                        if load_acquire(marks, pos) == chunk:
                            break
                if load_acquire(marks, pos) == chunk:  # the helper has done lo..pos
                    for done in range(lo, pos + 1):  # (a slice copy compiles numba's
                        dots[done] = helped[done]    # formatting of its shape error)
                    break
                dots[pos] = row_dot(indptr, indices, data, order[pos], v)
            store_release(ctl, READY, chunk)
        else:
            for pos in range(lo, mid):
                if load_acquire(ctl, READY) >= chunk:
                    break
                if pos + _AHEAD < mid:
                    prefetch_row(indptr, indices, data, order[pos + _AHEAD])
                helped[pos] = row_dot(indptr, indices, data, order[pos], v)
                store_release(marks, pos, chunk)
            while load_acquire(ctl, READY) < chunk:
                pass
        # this thread's first rows of the next chunk, to arrive during the steps
        nxt = hi + min(n - hi, delay) // 2 if lead else hi
        for pos in range(nxt, min(nxt + _AHEAD, n)):
            prefetch_row(indptr, indices, data, order[pos])
        for pos in range(lo, hi):  # the helper's own dots equal the lead's to the bit
            xv = dots[pos] if lead or load_acquire(marks, pos) != chunk else helped[pos]
            _sgd_step(indptr, indices, data, y, order[pos], xv, v, avg_u, state, bias,
                      code, sigma, theta, params, lam, schedule, eta0, power_t, t0, radius,
                      avg_start if averaging else 0, False)
        if state[SCALE] < fold_below:
            _sgd_fold_scale(v, state, averaging, avg_u)


_HOG_AHEAD = 2  # a thread prefetches the nonzeros of its row this many of its rows ahead


@njit(cache=True, nogil=True)
def sgd_rows_hogwild(indptr, indices, data, y, order, v, avg_u, state, code, sigma, theta, params,
                     lam, schedule, eta0, power_t, t0, avg_start, n_parts):
    """The steps of :func:`sgd_rows` without an intercept or a projection, taken by
    ``n_parts`` threads at once on the one v, without locks (Niu, Recht, Re & Wright's
    Hogwild!): thread k takes the rows at positions k, k + n_parts, ... of ``order``, each
    step reading v as the other threads leave it and adding its update into it. A step
    misses the writes the others have not made yet, and where two threads write one entry
    of v at once, one update can be lost. So the steps are not serial SGD's and a run is
    not reproducible to the bit, except on one thread, where they are serial SGD's to the
    bit.

    No scalar is shared between the threads: w = scale * v with the scale of the step's
    position, which depends on the step count alone, so every step's rate, scale and
    average weight are computed first, serially (:func:`_hogwild_plan`). A step whose
    shrink is <= 0 (w set to 0) or after which the scale is folded into v is taken by
    itself between two parallel runs. The plan holds three float64 a row of the call."""
    n = order.shape[0]
    etas, scales, avg_cs = np.empty(n), np.empty(n), np.empty(n)
    fold_below = _RESCALE_AVERAGING_BELOW if avg_start > 0 else _RESCALE_BELOW
    lo = 0
    while lo < n:
        hi, scale, avg_c, averaged = _hogwild_plan(state, lo, n, lam, schedule, eta0, power_t,
                                                   t0, avg_start, fold_below, etas, scales,
                                                   avg_cs)
        if hi > lo:
            _hogwild_threads(indptr, indices, data, y, order, lo, hi, v, avg_u, state[SCALE],
                             state[STEP], code, sigma, theta, params, avg_start, etas, scales,
                             avg_cs, n_parts)
            state[STEP] += hi - lo
            state[SCALE], state[AVG_C] = scale, avg_c
            state[AVG_COUNT] += averaged
        if hi < n:
            i = order[hi]
            _sgd_step(indptr, indices, data, y, i, row_dot(indptr, indices, data, i, v), v,
                      avg_u, state, 0.0, code, sigma, theta, params, lam, schedule, eta0,
                      power_t, t0, 0.0, avg_start, True)
        lo = hi + 1


@njit(cache=True, nogil=True)
def _hogwild_plan(state, lo, n, lam, schedule, eta0, power_t, t0, avg_start, fold_below, etas,
                  scales, avg_cs):
    """The steps at positions lo, lo + 1, ... as serial SGD computes them: the rate
    etas[p], the scale after the step scales[p] and the average's weight of v before it
    avg_cs[p], up to the first step that must be taken alone (a shrink <= 0, or a scale
    below ``fold_below`` after it). Returns that position (n if none) and the scale, the
    weight and the number of averaged steps before it."""
    t, scale, avg_c, averaged = state[STEP], state[SCALE], state[AVG_C], 0
    for p in range(lo, n):
        t += 1.0
        eta = learning_rate(schedule, t, lam, eta0, power_t, t0)
        shrink = 1.0 - eta * lam
        if shrink <= 0.0 or scale * shrink < fold_below:
            return p, scale, avg_c, averaged
        scale *= shrink
        etas[p], scales[p], avg_cs[p] = eta, scale, avg_c
        if avg_start > 0 and t >= avg_start:
            avg_c += scale
            averaged += 1
    return n, scale, avg_c, averaged


@njit(cache=True, nogil=True, parallel=True)
def _hogwild_threads(indptr, indices, data, y, order, lo, hi, v, avg_u, scale, step, code, sigma,
                     theta, params, avg_start, etas, scales, avg_cs, n_parts):
    """The steps at positions lo..hi - 1 of :func:`sgd_rows_hogwild`, from the scale
    ``scale`` and the step count ``step`` before them."""
    for k in prange(n_parts):
        for p in range(lo + k, hi, n_parts):
            ahead = p + _HOG_AHEAD * n_parts
            if ahead < hi:
                prefetch_row(indptr, indices, data, order[ahead])
            i = order[p]
            yi = float(y[i])
            before = scales[p - 1] if p > lo else scale
            margin = yi * (before * row_dot(indptr, indices, data, i, v))
            coef = -etas[p] * derivatives(code, margin, sigma, theta, params)[1] * yi
            if coef != 0.0:
                delta = coef / scales[p]
                row_axpy(indptr, indices, data, i, delta, v)
                if avg_start > 0 and step + (p - lo + 1) >= avg_start:
                    row_axpy(indptr, indices, data, i, -avg_cs[p] * delta, avg_u)


# state[...] of SVRG
SVRG_SCALE = 0     # w = scale * v + r * mu
SVRG_R = 1
SVRG_INTERCEPT = 2
SVRG_STATE_SIZE = 3


@njit(cache=True, nogil=True)
def svrg_rows(indptr, indices, data, y, order, snapshot_slopes, v, mu, mu_intercept, state, bias,
              code, sigma, theta, params, lam, eta):
    """SVRG steps w <- (1 - eta lam) w - eta (mu + (psi'(m_i(w)) - psi'(m_i(w~))) y_i x_i).

    ``snapshot_slopes[i]`` is psi' at the snapshot's margin of row i (of this block);
    ``mu`` (n_features,) and ``mu_intercept`` the loss part of the snapshot's full gradient.
    """
    shrink = 1.0 - eta * lam
    for pos in range(order.shape[0]):
        prefetch_rows(indptr, indices, data, order, pos)
        i = order[pos]
        yi = float(y[i])
        xw = (state[SVRG_SCALE] * row_dot(indptr, indices, data, i, v)
              + state[SVRG_R] * row_dot(indptr, indices, data, i, mu)
              + bias * state[SVRG_INTERCEPT])
        slope = derivatives(code, yi * xw, sigma, theta, params)[1]
        diff = (slope - snapshot_slopes[i]) * yi
        state[SVRG_SCALE] *= shrink
        state[SVRG_R] = shrink * state[SVRG_R] - eta
        if bias != 0.0:
            state[SVRG_INTERCEPT] -= eta * (mu_intercept + diff * bias)
        if diff != 0.0:
            row_axpy(indptr, indices, data, i, -eta * diff / state[SVRG_SCALE], v)
        if state[SVRG_SCALE] < _RESCALE_BELOW:
            v *= state[SVRG_SCALE]
            state[SVRG_SCALE] = 1.0


# state[...] of SAGA
SAGA_SCALE = 0     # w = scale * v
SAGA_STEP = 1      # steps since the last flush
SAGA_INTERCEPT = 2
SAGA_AVG_INTERCEPT = 3  # intercept part of the average gradient
SAGA_STATE_SIZE = 4


@njit(cache=True, nogil=True)
def saga_flush(v, avg_grad, last, cumulative, state):
    """Bring every coordinate of v up to date and fold the scale into v (O(n_features));
    restarts the prefix sums."""
    now = int(state[SAGA_STEP])
    top = cumulative[now]
    for j in range(v.shape[0]):
        v[j] -= avg_grad[j] * (top - cumulative[np.uintp(last[j])])
        last[j] = 0
    v *= state[SAGA_SCALE]
    state[SAGA_SCALE] = 1.0
    state[SAGA_STEP] = 0.0
    cumulative[0] = 0.0


@njit(cache=True, nogil=True)
def saga_rows(indptr, indices, data, y, order, row_start, slopes, v, avg_grad, last, cumulative,
              state, n_samples, bias, code, sigma, theta, params, lam, eta):
    """SAGA steps w <- (1 - eta lam) w - eta (g_avg + (psi'(m_i) - s_i) y_i x_i), s_i <- psi'(m_i).

    ``slopes[row_start + i]`` is the stored psi' of row i (one scalar per sample);
    ``avg_grad`` (n_features,) = (1/n) sum_i s_i y_i x_i, added lazily: coordinate j of v is
    behind by avg_grad[j] (cumulative[now] - cumulative[last[j]]), where ``cumulative``
    holds prefix sums of eta / scale. ``cumulative`` needs room for every step until the
    next :func:`saga_flush`; the kernel flushes by itself when the scale gets small.
    """
    shrink = 1.0 - eta * lam
    inv_n = 1.0 / n_samples
    for pos in range(order.shape[0]):
        prefetch_rows(indptr, indices, data, order, pos)
        i = order[pos]
        now = int(state[SAGA_STEP])
        top = cumulative[now]
        for k in row_span(indptr, i):  # bring the row's coordinates up to date
            j = np.uintp(indices[k])
            v[j] -= avg_grad[j] * (top - cumulative[np.uintp(last[j])])
            last[j] = now
        yi = float(y[i])
        xw = (state[SAGA_SCALE] * row_dot(indptr, indices, data, i, v)
              + bias * state[SAGA_INTERCEPT])
        slope = derivatives(code, yi * xw, sigma, theta, params)[1]
        diff = (slope - slopes[row_start + i]) * yi
        slopes[row_start + i] = slope
        state[SAGA_SCALE] *= shrink
        step = eta / state[SAGA_SCALE]
        cumulative[now + 1] = top + step
        for k in row_span(indptr, i):
            j = np.uintp(indices[k])
            # this step's dense part with the old average, then the new average
            v[j] -= step * (avg_grad[j] + diff * data[k])
            avg_grad[j] += inv_n * diff * data[k]
            last[j] = now + 1
        if bias != 0.0:
            state[SAGA_INTERCEPT] -= eta * (state[SAGA_AVG_INTERCEPT] + diff * bias)
            state[SAGA_AVG_INTERCEPT] += inv_n * diff * bias
        state[SAGA_STEP] = now + 1
        if state[SAGA_SCALE] < _RESCALE_BELOW or now + 1 == cumulative.shape[0] - 1:
            saga_flush(v, avg_grad, last, cumulative, state)


@njit(cache=True, nogil=True)
def _prox_margin(code, m_rest, q, sigma, theta, params, start):
    """The margin z solving z + q psi'(z) = m_rest (z = prox_{q psi}(m_rest)), the SDCA
    step, psi'(z) and psi''(z): ``(z, slope, curvature)`` (the curvature from the last
    evaluation, within 4 ulp of z).

    g(z) = z + q psi'(z) - m_rest is increasing with slope >= 1 and has its root between
    m_rest and m_rest - q psi'(m_rest). Newton from ``start`` (the row's margin, near the
    root once the epochs settle; m_rest if ``start`` is NaN) needs no bracket while every
    step at least halves both |g| and the move before it. When one does not (plain Newton
    can bounce between two points on either side of a kink-like bend, as psi_G's and
    psi_M's at small sigma, or creep down an exponential), or g is not finite, the bracket
    is made (:func:`_bracket`) and the step bisects it. Stops when a step moves z by at
    most 4 ulp (not on the bracket's width: once Newton has converged from one side, the
    bracket's far end stays where it was, and bisections would follow), with psi'(z) from
    the last evaluation to first order in that step: no bracket unless needed and no
    evaluation at the end, the fewest evaluations a row.
    """
    z = start if math.isfinite(start) else m_rest
    lo, hi = -math.inf, math.inf
    bracketed = False
    last = math.inf  # |g| before the last Newton step; inf after a bisection
    moved = math.inf  # how far the last step moved z
    for _ in range(200):
        if not (lo < z < hi):
            z, last = 0.5 * (lo + hi), math.inf
        _, slope, curv = derivatives(code, z, sigma, theta, params)
        g = z + q * slope - m_rest
        if g == 0.0:
            return z, slope, curv
        if g > 0.0:
            hi = z
        elif g < 0.0:
            lo = z
        step = g / (1.0 + q * curv)
        # a Newton step must also halve the last move (Numerical Recipes' rtsafe): on the
        # exponential's steep side it creeps by about sigma a step, |g| falling by e
        if abs(g) <= 0.5 * last and math.isfinite(step) and abs(step) <= 0.5 * moved:
            last = abs(g)
        else:
            if not bracketed:
                lo, hi = _bracket(code, m_rest, q, sigma, theta, params, lo, hi)
                bracketed = True
            step, last = z - 0.5 * (lo + hi), math.inf
        moved = abs(step)
        z -= step
        width = 4.0 * _ULP * max(abs(z), 1.0)
        if abs(step) <= width:
            estimate = slope - curv * step if step != 0.0 else slope
            # the root lies within 2 width of z, so the equation pins psi'(z) to within
            # 2 width / q of (m_rest - z) / q; where the estimate is not, psi' jumps
            # within an ulp (sigma below z's resolution): the equation's slope then
            exact = (m_rest - z) / q
            bound = (2.0 * width + _ULP * abs(m_rest)) / q + _ULP * abs(exact)
            return z, estimate if abs(estimate - exact) <= bound else exact, curv
    return (z, *derivatives(code, z, sigma, theta, params)[1:])


@njit(cache=True, nogil=True)
def _bend_start(code, m_rest, q, sigma, theta, margin):
    """Where :func:`_prox_margin` starts for psi_G and psi_M when their bend (width sigma)
    is narrow against the step's scale q: at the hinge's answer. The hinge's step is
    alpha = clip((theta - m_rest) / q, 0, 1) (LIBLINEAR -s 3); as sigma / q -> 0 the root
    tends to the margin m_rest + alpha q, inside the bend where alpha is between 0 and 1
    (psi'(z) = -alpha there: :func:`~streamssvm.losses._scalar.bend_slope_inverse`). From
    the row's margin instead, a row in the bend (a support vector on the margin) bisected
    its way into a bend narrower than the margin's last move; from here, Newton's steps
    start inside it. Other losses, and a wide bend: the row's margin."""
    if sigma * 16.0 > q or (code != PSI_G and code != PSI_M):
        return margin
    a = (theta - m_rest) / q
    if not 0.0 < a < 1.0:
        return m_rest + q * min(1.0, max(0.0, a))
    z = bend_slope_inverse(code, -a, sigma, theta)
    return z if math.isfinite(z) else margin


@njit(cache=True, nogil=True)
def _bracket(code, m_rest, q, sigma, theta, params, lo, hi):
    """The bracket of :func:`_prox_margin`'s root: ``(lo, hi)`` (from the points tried)
    cut to m_rest and m_rest - q psi'(m_rest). Where that second end is far (more than
    16 max(1, |m_rest|) away) or infinite (psi' overflowed: the exponential loss far below
    its kink), it is found instead by steps doubling from max(1, eps |near end|) (from 1
    alone, a near end past 2^53 did not move) beyond the bracket's near end
    (m_rest, or a point tried past it: from m_rest, a first step inside the points tried
    ended the search with that end still infinite, and bisection returned z = inf), so
    that bisection starts within twice the root's distance."""
    slope0 = derivatives(code, m_rest, sigma, theta, params)[1]
    far = m_rest - q * slope0
    lo, hi = max(lo, min(m_rest, far)), min(hi, max(m_rest, far))
    if abs(far - m_rest) <= 16.0 * max(1.0, abs(m_rest)):
        return lo, hi
    near = lo if slope0 < 0.0 else hi
    width = max(1.0, _ULP * abs(near))
    for _ in range(1100):  # doublings from 1 pass any float
        trial = near + width if slope0 < 0.0 else near - width
        if not (lo < trial < hi):
            break
        if trial + q * derivatives(code, trial, sigma, theta, params)[1] - m_rest >= 0.0:
            hi = trial
        else:
            lo = trial
        if (slope0 < 0.0) == (hi == trial):  # the far side of the root: the bracket is made
            break
        width *= 2.0
    return lo, hi


@njit(cache=True, nogil=True)
def _flat(curv, curvature_floor):
    """The objective takes the curvature ``curv`` for 0 (as ``loss_grad`` does)."""
    return curv == 0.0 or not curv >= curvature_floor


@njit(cache=True, nogil=True)
def _settles(code, z, alpha, reach, sigma, theta, params, lowest, highest, curvature_floor):
    """SDCA's row at margin z with dual ``alpha`` has a zero step while its margin moves less
    than ``reach`` towards the kink: at z and at that distance, alpha = -psi'(margin) to
    1e-12 and psi'' is 0 to the objective (psi' is monotone: so it is in between)."""
    _, slope, curv = derivatives(code, z, sigma, theta, params)
    if not (_flat(curv, curvature_floor) and abs(alpha + slope) <= 1e-12 * max(1.0, alpha)):
        return False
    # psi' at its high end: the kink is at smaller margins
    _, slope, curv = derivatives(code, z - reach if abs(slope - highest) <= abs(slope - lowest)
                                 else z + reach, sigma, theta, params)
    return _flat(curv, curvature_floor) and abs(alpha + slope) <= 1e-12 * max(1.0, alpha)


@njit(cache=True, nogil=True)
def sdca_rows(indptr, indices, data, y, order, row_start, dual, w, code, sigma, theta, params,
              scale, lowest, highest, curvature_floor, last, settled):
    """Dual coordinate ascent on rows ``order``: alpha_i >= 0 with w = scale sum_i alpha_i y_i x_i
    (scale = 1 / (lam n)). Returns the largest |change of alpha_i| times ||x_i||^2 scale
    (the change of the row's margin), a stopping measure.

    Shrinking: ``last[row_start + i]`` holds row i's margin after its last step (NaN before
    one), and ``settled[row_start + i]`` is set for each row visited: its next step is
    zero while its margin moves towards the kink no further than it moved since that last
    step (:func:`_settles`). LIBLINEAR's rule is alike with one reach for all rows, the last
    epoch's largest violation: a reach of each row's own lets rows settle while a few
    others still move far.

    The step maximises -psi*(-alpha_i) - the quadratic in alpha_i exactly: with
    q = scale ||x_i||^2 and m_rest the margin without row i's own term, the new margin
    z = prox_{q psi}(m_rest) and alpha_i = -psi'(z), psi'(z) kept in [``lowest``,
    ``highest``], where psi* is finite (the step's rounding may pass a closed end by an
    ulp). The hinge's prox is the clip alpha_i = min(1, max(0, (theta - m_rest) / q))
    (LIBLINEAR -s 3).
    """
    largest = 0.0
    for pos in range(order.shape[0]):
        prefetch_rows(indptr, indices, data, order, pos)
        i = order[pos]
        xw, norm2 = row_dot_norm2(indptr, indices, data, i, w)
        if norm2 == 0.0:  # its margin is 0 for ever: alpha_i = -psi'(0) is its step, once
            # (left at 0, it kept the gap at psi(0) / n a row: gap_tol never stopped a run)
            dual[row_start + i] = -min(max(derivatives(code, 0.0, sigma, theta, params)[1],
                                           lowest), highest)
            last[row_start + i] = 0.0
            settled[row_start + i] = True
            continue
        q = scale * norm2
        yi = float(y[i])
        old = dual[row_start + i]
        margin = yi * xw
        m_rest = margin - old * q
        curv = 0.0
        if code == HINGE:
            new = min(1.0, max(0.0, (theta - m_rest) / q))
        else:  # the step's own curvature sorts out the rows in the kink's bend at no cost
            _, slope, curv = _prox_margin(code, m_rest, q, sigma, theta, params,
                                          _bend_start(code, m_rest, q, sigma, theta, margin))
            new = -min(max(slope, lowest), highest)
        z = m_rest + new * q
        reach = abs(margin - last[row_start + i])  # since its last step: NaN before one
        last[row_start + i] = z
        settled[row_start + i] = (
            _flat(curv, curvature_floor) and math.isfinite(reach)
            and _settles(code, z, new, reach, sigma, theta, params, lowest, highest,
                         curvature_floor))
        change = new - old
        if change != 0.0:
            dual[row_start + i] = new
            row_axpy(indptr, indices, data, i, change * yi * scale, w)
            largest = max(largest, abs(change) * q)
    return largest


@njit(cache=True, nogil=True)
def dual_loss_sum(dual, code, sigma, theta, params):
    """sum_i -psi*(-alpha_i): the loss part of the SDCA dual objective (times n)."""
    total = 0.0
    for i in range(dual.shape[0]):
        total -= conjugate(code, -dual[i], sigma, theta, params)[0]
    return total


@njit(cache=True, nogil=True)
def settled_rows(margins, curvature, dual, code, sigma, theta, params, out):
    """out[i] = whether SDCA's coordinate step on row i is zero: psi'' is 0 at its margin
    and alpha_i = -psi'(margin) to 1e-12 (relative; absolute below 1). No vector of the
    rows but ``out`` (numpy's expression makes four temporaries of the rows' size)."""
    for i in range(margins.shape[0]):
        slope = derivatives(code, margins[i], sigma, theta, params)[1]
        out[i] = curvature[i] == 0.0 and abs(dual[i] + slope) <= 1e-12 * max(1.0, abs(dual[i]))


@njit(cache=True, nogil=True)
def slopes_of_margins(margins, code, sigma, theta, params, out):
    """out[i] = psi'(margins[i])."""
    for i in range(margins.shape[0]):
        out[i] = derivatives(code, margins[i], sigma, theta, params)[1]
