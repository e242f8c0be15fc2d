"""The regularised empirical risk over any block source, in one process: the local oracle.

    L(w) = lambda / 2 ||w_[:d]||^2 + (1 / n) sum_i c_i psi(y_i (x_i . w_[:d] + b w_d))

with the intercept weight w_d (present when ``fit_intercept``) not regularised, ``b``
the value of the constant feature (``intercept_scaling``) and c_i >= 0 the row weights
(``sample_weight``; 1 by default). LIBLINEAR's per-row cost is C c_i with C = 1 / (lambda n).

Which call caches what
----------------------
``evaluate(w)`` makes one pass over the data and returns a :class:`PointState` holding
L(w), the gradient, the margins y_i x_i.w and the per-row curvature D_ii = psi''(y_i x_i.w).
``hessp(state, s)`` and ``hess_diag(state)`` use that state's D; they never recompute it.
``value_on_segment(state, trial, alpha)`` gives L between two evaluated points from their
margins alone, without a pass (a line search's trial steps cost O(n)). A solver that
rejects a trial point simply keeps the previous state: nothing in the objective is
overwritten by a later ``evaluate``.

Only rows with D_ii != 0 enter a Hessian-vector product; a curvature below 2^-53 of the
loss's largest (psi_G beyond 8.6 sigma from its kink) is set to 0, which changes the
Hessian by less than rounding does next to a row at the kink. When ``cache_curved`` is on,
``evaluate`` also copies those rows into memory (while they fit ``cache_bytes``), and
``hessp`` then runs on that copy instead of making a pass: out of core, CG steps read
nothing from disk. For the smooth hinges at small sigma and for the squared hinge the
rows with curvature are a small part of the data.

How the data is held and visited is the data plan's (:mod:`streamssvm.data.plan`,
``objective.data``): the objective asks it for the blocks of a pass, or for the held data.
When the whole data and its transpose fit ``cache_bytes`` (``hold``), the first pass reads
it into memory by rows (the first gradient or Hessian product adds its columns), and every
later call computes from there: the margins and curvature by rows, the gradient, Hessian
products and diagonal as column sums X^T v, which threads compute without a d-vector each
(a scatter into per-thread vectors is bound by scattered memory traffic, while a column
sum writes each entry of the result once). On wide data (fewer rows than columns) the
products X v are taken by columns too (see ``_wide``). A state's Hessian products read a
copy of the columns restricted to the rows with curvature (see ``_state_columns``), and
conjugate gradient on wide data solves the Newton system in that copy's order of columns
(:meth:`newton_system`).
Streaming stays the path for data that does not fit.
"""

import dataclasses

import numba
import numpy as np

from .. import kernels
from ..data.plan import DataPlan
from .problem import PointState, Problem
from .problem import check_lam as check_lam  # where the command line and others take it
from .system import ColumnSystem, NewtonSystem

# rows drawn at a time for a Hessian sample (see subsampled)
DRAW_CHUNK = 1 << 16
# a thread's vector of the variables that Hessian products by rows scatter into: within
# a core's L2 cache (see SmoothSVMObjective._held_columns)
ROW_PRODUCT_BYTES = 256 << 10


class SmoothSVMObjective(Problem):
    """Oracle of L(w) over a :class:`~streamssvm.data.BlockSource`
    (:class:`~streamssvm.objective.Oracle`).

    Parameters
    ----------
    source : BlockSource
        The store or in-memory source.
    loss : str or Loss
    lam : float
        L2 regularisation strength lambda > 0.
    sigma : float, optional
        Smoothing width when ``loss`` is a name.
    fit_intercept : bool
    intercept_scaling : float
        Value of the constant feature that carries the intercept.
    n_threads : int, optional
        Threads for the kernels (default: numba's thread count).
    progress : bool
        A tqdm bar over the blocks of every pass.
    cache_curved : bool or "auto"
        Keep the rows with curvature in memory for ``hessp``. "auto": always for sources
        whose passes read a file (``not source.in_memory``); for in-memory sources when at
        most half the rows have curvature (then the compact copy makes CG steps cheaper
        than the sparse matrix). Not used while the data is held (``hold``). Solvers that
        take no Hessian products never use the copy: ``train_stream`` turns it off for them.
    cache_bytes : int, optional
        Memory for that copy, or for the data held by ``hold`` (default a quarter of what
        the process may still use).
    hold : bool or "auto"
        Hold the whole data in memory, by rows and by columns, from the first pass on (see
        the module docstring); "auto": when the rows (for a source that reads a file) and
        the transpose fit ``cache_bytes``. The stochastic solvers' epoch order follows
        ``hold``, not whether the data was held (:mod:`streamssvm.data.plan`).
    sample_weight : array of shape (n_samples,), optional
        The row weights c_i >= 0 (class weights folded in by the caller). The curvature
        D_ii holds c_i psi''(.), so Hessian products need no weights and rows of weight 0
        never enter them.

    Attributes
    ----------
    data : DataPlan
        How the data is held and visited: the passes, the held rows and columns, the
        vectors of the rows, the stochastic solvers' epochs.
    passes : int
        Passes over the data made so far (every block read once = one pass): the plan's.
    cached_sweeps : int
        Hessian-vector products or diagonals computed from memory (the curved rows, or
        the held data), without a pass.
    """

    def __init__(self, source, loss, lam, sigma=None, fit_intercept=False,
                 intercept_scaling=1.0, n_threads=None, progress=False, cache_curved="auto",
                 cache_bytes=None, sample_weight=None, hold="auto"):
        super().__init__(source, loss, lam, sigma, fit_intercept, intercept_scaling,
                         sample_weight)
        self.n_threads = check_threads(n_threads) or numba.get_num_threads()
        self.cache_curved = check_cache_curved(cache_curved)
        self.data = DataPlan(source, self.n_threads, hold, cache_bytes, progress)
        self._ones = None  # see ones()
        # Hessian products of held data (see _state_columns): the curvature of their
        # state, the columns they read and the arrays a copy of its curved rows' columns
        # is written into
        self._curved_of, self._curved, self._curved_out = None, None, None
        self.cached_sweeps = 0
        self._scatter, self._scatter_dirty = None, False  # made by the first scatter pass
        self._row_norm2 = None  # max_i ||x_i||^2 once computed (see smoothness)

    @property
    def passes(self):
        return self.data.passes

    @passes.setter
    def passes(self, passes):  # a resumed run adds the passes made before
        self.data.passes = passes

    @property
    def _wide(self):
        """Fewer rows than columns: held data's products X v then run by columns (see
        :func:`~streamssvm.kernels.column_products`: each thread then writes its own
        rows of the result, and reads a column's entries in sequence)."""
        return self.n_samples < self.n_features

    def _start_scatter(self):
        """Make the per-thread scatter buffers at the first pass that scatters (held data's
        by the transpose and the stochastic epochs' never do), or clear them if a pass was
        interrupted before its merge."""
        if self._scatter is None:
            self._scatter = np.zeros((self.n_threads, self.n_variables))
        elif self._scatter_dirty:
            self._scatter[...] = 0.0
        self._scatter_dirty = True

    def _pass(self, scatter=True):
        """The blocks of one pass over the source (counted by the plan), the scatter buffers
        made ready if ``scatter``."""
        if scatter:
            self._start_scatter()
        return self.data.blocks()

    def _held_columns(self):
        """For Hessian products and diagonals: :meth:`~streamssvm.data.plan.DataPlan.held_data`
        (the held rows and their transpose), or None when the data is streamed or, where
        held data takes the rows' way (:attr:`~streamssvm.data.plan.DataPlan.rows_way`),
        a thread's vector of the variables fits :data:`ROW_PRODUCT_BYTES`
        (:meth:`_curved_blocks` then serves the held rows). A product's scatter reads and
        writes that vector at random, once per entry of the curved rows; beyond a core's
        cache the columns' gathers, from a copy of the curved rows alone, are faster."""
        if self.data.held_rows() is None or (self.data.rows_way
                                             and 8 * self.n_variables <= ROW_PRODUCT_BYTES):
            return None
        return self.data.held_data()

    def _column_sums(self, v, squared, x, lam, columns=None):
        """As :meth:`_merged`, of X^T v (X.^2 if ``squared``) from the held transpose (or
        ``columns``, a part of it holding every row where v is not 0), and its dot
        product with ``x``."""
        lam, scale, _ = self._combination(lam)
        out = np.empty(self.n_variables)
        x_out = kernels.column_sums(self.data.held_data()[1] if columns is None else columns, v,
                                    squared, self.bias, x, lam, scale, self.n_threads, out)
        return out, x_out

    def _state_columns(self, state):
        """The columns Hessian products at ``state`` read from held data: a copy of the
        transpose restricted to the rows with curvature, made by the first call at
        ``state`` if at most 3/4 of the rows have curvature and it fits
        (:meth:`_copy_room`), else the transpose. A product from the copy reads only the
        entries of rows with curvature, and the copy makes CG's vectors shorter
        (:meth:`newton_system`); made once per state, it pays over CG's products. The
        copy is written over the last one, into arrays as
        large as the transpose, of which it touches only what it needs. It depends on
        the state alone, so a run resumed from a checkpoint takes its products from the
        same columns, to the bit."""
        if self._curved_of is not state.curvature:
            columns = self.data.held_data()[1]
            self._curved_of, self._curved = state.curvature, columns
            if (4 * np.count_nonzero(state.curvature) <= 3 * self.n_samples
                    and self._copy_room(columns)):
                self._curved = kernels.curved_columns(columns, state.curvature, self.n_threads,
                                                      self._curved_out)
        return self._curved

    def newton_system(self, state):
        """The system H s = -g at ``state`` for conjugate gradient (:mod:`.system`): on
        held wide data with a copy of the curved rows' columns (:meth:`_state_columns`), a
        :class:`~.system.ColumnSystem` over them, else in the order of the variables (on
        the whole transpose every column has entries: the columns' order would only add
        a gather and a scatter)."""
        held = self._held_columns()
        if held is None or not self._wide:
            return NewtonSystem(self, state)
        columns = self._state_columns(self._check_state(state))
        if columns is held[1]:
            return NewtonSystem(self, state)
        return ColumnSystem(self, state, columns)

    def _copy_room(self, columns):
        """Whether there are arrays for :meth:`_state_columns`' copies: made the first
        time a quarter of the memory the process may still use holds them whole (by then
        CG's vectors are live beside the held data)."""
        if self._curved_out is None:
            size = sum(a.nbytes for a in columns[:7]) + 8 * self.n_features
            if not self.data.room_for(size):
                return False
            self._curved_out = (tuple(np.empty_like(a) for a in columns[:7])
                                + (np.empty(self.n_features, np.int64),))
        return True

    def _max_row_norm2(self):
        """max_i ||x_i||^2 for :meth:`smoothness`: one pass the first time, then cached."""
        if self._row_norm2 is None:
            self._row_norm2 = max((kernels.max_row_norm2(b.indptr, b.indices, b.data)
                                   for b in self._pass(scatter=False)), default=0.0)
        return self._row_norm2

    def _merged(self, x, lam):
        """lam * x (intercept excluded) + (what the kernels scattered) / n; resets the
        scatter buffers for the next pass."""
        out = np.empty(self.n_variables)
        kernels.merge_parts(self._scatter, x, *self._combination(lam), out)
        self._scatter_dirty = False
        return out

    def evaluate(self, w, curved=True):
        """One pass: L(w), grad L(w) and the curvature D at ``w``, as a PointState. At w = 0
        (every solver's start) the margins are 0 and the pass reads no products. With
        ``curved`` False (solvers that make no Hessian products) no copy of the curved rows
        is gathered, whatever ``cache_curved``: the copy would take memory for nothing,
        and under a memory cap that memory is what the run has."""
        w = self._check(w)
        zero = kernels.is_zero(w)
        code, sigma, theta = self.loss.code, self.loss.sigma, self.loss.theta
        params = self.loss.params
        rows = self.data.held_rows()  # first: holding the rows may decline the columns
        if rows is None:
            held = None
        elif self.data.rows_way:  # the rows alone: their columns would not pay
            held = (rows, None)
        else:
            held = self.data.held_data()
        loss, margins, curvature = 0.0, self.data.rows_vector(), self.data.rows_vector()
        if held is not None and held[1] is not None:
            self.data.count_pass()
            b, coef = held[0], np.empty(self.n_samples)
            if self._wide:
                loss = kernels.loss_coef_by_columns(
                    held[1], b.y, w, self.bias, code, sigma, theta, params,
                    self.curvature_floor, margins, curvature, coef, self.n_threads,
                    self.sample_weight, zero)
            else:
                loss = kernels.loss_coef(b.indptr, b.indices, b.data, b.y, w, self.bias, code,
                                         sigma, theta, params, self.curvature_floor, margins,
                                         curvature, coef, self.n_threads, self.sample_weight,
                                         zero)
            grad = self._column_sums(coef, False, w, self.lam)[0]
            return PointState(w, self._total(w, loss), grad, margins, curvature)
        streamed = not self.source.in_memory
        gather = curved and held is None and (self.cache_curved is True
                                              or (self.cache_curved == "auto" and streamed))
        copy = self.data.row_copy() if gather else None
        if held is not None:
            self._start_scatter()
            self.data.count_pass()
        for b in ([held[0]] if held is not None else self._pass()):
            block_rows = slice(b.row_start, b.row_start + b.n_rows)
            rows = curvature[block_rows]
            loss += kernels.loss_grad(b.indptr, b.indices, b.data, b.y, w, self.bias, code,
                                      sigma, theta, params, self.curvature_floor,
                                      margins[block_rows], rows, self._scatter,
                                      self._block_weights(block_rows), zero)
            if copy is not None and copy.parts is not None:
                # not fitting, Hessian-vector products will stream instead
                copy.add(kernels.gather_curved_rows(b.indptr, b.indices, b.data, rows))
        kept = None if copy is None else copy.parts
        if (curved and held is None and self.cache_curved == "auto" and not streamed
                and 2 * np.count_nonzero(curvature) <= self.n_samples):
            kept = self._gather_in_memory(curvature)
        grad = self._merged(w, self.lam)
        return PointState(w, self._total(w, loss), grad, margins, curvature, kept)

    def _gather_in_memory(self, curvature):
        """The curved rows of an in-memory source, copied (no pass: the data is in memory),
        or None if they do not fit ``cache_bytes``."""
        copy = self.data.row_copy()
        for b in self.source.iter_blocks(transient=True):
            if not copy.add(kernels.gather_curved_rows(
                    b.indptr, b.indices, b.data, curvature[b.row_start:b.row_start + b.n_rows])):
                break
        return copy.parts

    def subsampled(self, state, fraction, rng):
        """``state`` with the Hessian of a random ``fraction`` of its rows, their curvature
        divided by ``fraction`` (Byrd, Chin, Neveitt & Nocedal's subsampled Hessian,
        unbiased); f, the gradient and the margins unchanged. The sampled rows are copied
        into memory within ``cache_bytes``: from the state's copy of the curved rows (no
        pass), or by one pass; when they do not fit, Hessian products stream the source
        and compute on the sampled rows only."""
        check_hessian_sample(fraction)
        state = self._check_state(state)
        # one draw per row of the data, so that a seed samples the same rows whether the
        # curved rows were copied or not (held data, free memory); drawn in chunks (the
        # same numbers as one draw of n), so that the sample's curvature is the only new
        # vector of the rows' size (out of core the rows may be millions, the memory capped)
        curvature = self.data.rows_vector()
        np.divide(state.curvature, fraction, out=curvature)
        draws = np.empty(min(self.n_samples, DRAW_CHUNK))
        for start in range(0, self.n_samples, DRAW_CHUNK):
            part = draws[:min(DRAW_CHUNK, self.n_samples - start)]
            rng.random(out=part)
            curvature[start:start + len(part)][part >= fraction] = 0.0
        if state.curved_rows is not None:  # the copy holds the rows of D_ii != 0, in order
            sampled, copied = [], curvature[state.curvature != 0.0]
            for indptr, indices, data, _ in state.curved_rows:
                rows, copied = np.split(copied, [len(indptr) - 1])
                sampled.append(kernels.gather_curved_rows(indptr, indices, data, rows))
            return dataclasses.replace(state, curved_rows=sampled)
        if self.data.held_rows() is not None:  # products from memory skip the rows of D_ii = 0
            return dataclasses.replace(state, curvature=curvature, curved_rows=None)
        copy = self.data.row_copy()
        for b in self._pass(scatter=False):
            if not copy.add(kernels.gather_curved_rows(
                    b.indptr, b.indices, b.data, curvature[b.row_start:b.row_start + b.n_rows])):
                break  # stream instead
        return dataclasses.replace(state, curvature=curvature, curved_rows=copy.parts)

    def _block_weights(self, block_rows):
        """The row weights of a block (None when unweighted)."""
        return None if self.sample_weight is None else self.sample_weight[block_rows]

    def _segment_loss(self, state, trial, alpha):
        """The sum of the losses of :meth:`value_on_segment`, from the margins."""
        return kernels.loss_sum_along(state.margins, trial.margins, alpha,
                                      self.loss.code, self.loss.sigma, self.loss.theta,
                                      self.loss.params, self.sample_weight)

    def _curved_blocks(self, state):
        """(indptr, indices, data, curvature) per block: the in-memory copy if there is
        one, else the held rows, else a pass over the source."""
        held = self.data.held_rows()
        if state.curved_rows is None and held is None:
            return ((b.indptr, b.indices, b.data,
                     state.curvature[b.row_start:b.row_start + b.n_rows]) for b in self._pass())
        self._start_scatter()
        self.cached_sweeps += 1
        if state.curved_rows is not None:
            return state.curved_rows
        return ((held.indptr, held.indices, held.data, state.curvature),)

    def value(self, w):
        """One pass: L(w) alone."""
        w = self._check(w)
        b = self.data.held_rows()
        if b is not None:
            self.data.count_pass()
            loss = kernels.loss_sum(b.indptr, b.indices, b.data, b.y, w, self.bias,
                                    *self.loss_args, self.sample_weight)
            return self._total(w, loss)
        loss = 0.0
        for b in self._pass(scatter=False):
            block_rows = slice(b.row_start, b.row_start + b.n_rows)
            loss += kernels.loss_sum(b.indptr, b.indices, b.data, b.y, w, self.bias,
                                     self.loss.code, self.loss.sigma, self.loss.theta,
                                     self.loss.params, self._block_weights(block_rows))
        return self._total(w, loss)

    def hessp_quad(self, state, s):
        """One pass (none from memory): (lambda E + X^T D X / n) s with D from ``state``
        (:meth:`hessp`) and s.(H s), the curvature along s that CG needs, from the same
        sweep when the data is held and its transpose is used. (The solvers' products on
        held wide data come from :meth:`newton_system`.)"""
        s, state = self._check(s, "s"), self._check_state(state)
        held = self._held_columns()
        if held is not None:
            self.cached_sweeps += 1
            b, curvature = held[0], state.curvature
            columns = self._state_columns(state)
            if self._wide and (columns is not held[1]
                               or 2 * np.count_nonzero(curvature) >= self.n_samples):
                xs = kernels.column_products(columns, s, self.n_samples, self.n_threads)
                v = curvature * (xs + self.bias * s[-1] if self.bias else xs)
            else:  # rows without curvature are not read
                v = np.empty(self.n_samples)
                kernels.curved_products(b.indptr, b.indices, b.data, curvature, s, self.bias,
                                        self.n_threads, v)
            return self._column_sums(v, False, s, self.lam, columns)
        for indptr, indices, data, curvature in self._curved_blocks(state):
            kernels.hess_vec(indptr, indices, data, curvature, s, self.bias, self._scatter)
        hs = self._merged(s, self.lam)
        return hs, float(s @ hs)

    def hessp_reads_file(self, state):
        """Whether :meth:`hessp` at ``state`` reads the source's file (neither the data
        nor the state's curved rows are in memory): then a product costs a disk pass."""
        return not (self.data.in_memory or state.curved_rows is not None)

    def ones(self, n):
        """n ones, the x of a diagonal's sums: one vector, kept (written once, not at every
        call), and of the layout the kernels see for their other vectors (a read-only
        broadcast 1 compiled each of them a second time)."""
        if self._ones is None or self._ones.shape[0] < n:
            self._ones = np.ones(max(n, self.n_variables))
        return self._ones[:n]

    def hess_diag(self, state):
        """One pass: the diagonal of the Hessian at ``state``."""
        state = self._check_state(state)
        ones = self.ones(self.n_variables)
        if self._held_columns() is not None:
            self.cached_sweeps += 1
            return self._column_sums(state.curvature, True, ones, self.lam)[0]
        for indptr, indices, data, curvature in self._curved_blocks(state):
            kernels.hess_diag(indptr, indices, data, curvature, self.bias, self._scatter)
        return self._merged(ones, self.lam)


def check_hessian_sample(fraction):
    """Refuse a Hessian sample fraction (newton's ``hessian_sample``) outside (0, 1]."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the Hessian sample fraction must be in (0, 1], got {fraction}")


def check_threads(n_threads):
    """``n_threads`` if None or a positive integer (the kernels' row and column ranges,
    run on numba's threads), else a ValueError."""
    if n_threads is not None and not (isinstance(n_threads, (int, np.integer))
                                      and not isinstance(n_threads, bool) and n_threads >= 1):
        raise ValueError(f"n_threads must be a positive integer or None, got {n_threads!r}")
    return n_threads


def check_cache_curved(cache_curved):
    """``cache_curved`` if "auto", True or False, else a ValueError."""
    if cache_curved not in ("auto", True, False):
        raise ValueError(f"cache_curved must be 'auto', True or False, got {cache_curved!r}")
    return cache_curved
