"""The regularised empirical risk over any block source: the only thing solvers see.

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

When the whole data and its transpose fit ``cache_bytes`` (``hold``), the first pass reads
it into memory by rows (the first gradient or Hessian product adds its columns), and every
later call computes from there, stochastic epochs included: the margins and curvature by
rows, the gradient, Hessian products and diagonal as column sums X^T v, which threads
compute without a d-vector each (a scatter into per-thread vectors is bound by scattered
memory traffic, while a column sum writes each entry of the result once). On wide data
(fewer rows than columns) the products X v are taken by columns too
(see ``_wide``). A state's Hessian products read a copy of the columns restricted to
the rows with curvature (see ``_state_columns``), and conjugate gradient on wide data
solves the Newton system in that copy's order of columns (:meth:`newton_system`).
Streaming stays the path for data that does not fit.
"""

import dataclasses
import functools
import numbers
import threading
from dataclasses import dataclass

import numba
import numpy as np

from .. import kernels
from .._memory import available_memory_bytes, per_sample_array
from .._names import named
from .._progress import progress_iter
from .._runtime import prepare
from .._warn import warn
from ..losses import get_loss
from .system import ColumnSystem, NewtonSystem

_PASS_LOCK = threading.Lock()
# bytes of rows in a shuffle window of the stochastic solvers (see shuffled_blocks): small
# enough that four fit the memory of a tightly capped process, so capped runs keep the
# seed's order
SHUFFLE_BYTES = 32 << 20
# rows drawn at a time for a Hessian sample (see subsampled)
DRAW_CHUNK = 1 << 16
# vectors of n_variables that any solver keeps (w, the gradient, a step): data whose width
# leaves no room for them is refused at once
MIN_VECTORS = 3
# why shuffled_blocks refuses a weighted objective (their kernels have no row weights)
NO_ROW_WEIGHTS = ("the stochastic solvers take no row weights (sample_weight, class_weight): "
                  "use tron, newton, lbfgs, gd or agd")
# why train_stream with a Dask client, and DaskObjective, refuse row weights
NO_DASK_ROW_WEIGHTS = ("sample_weight is not supported across Dask workers: train without "
                       "it, or without a client")


@dataclass
class PointState:
    """L, its gradient and the curvature D at a point ``w`` (see module docstring). ``w``
    is the caller's array when it was float64 and contiguous (no copy, as every solver
    makes a new array for a new point): changed in place afterwards, it changes the
    state."""

    w: np.ndarray
    f: float
    grad: np.ndarray
    margins: np.ndarray
    curvature: np.ndarray
    curved_rows: list = None  # [(indptr, indices, data, curvature)] of rows with D_ii != 0

    @functools.cached_property
    def grad_norm(self):
        return float(np.linalg.norm(self.grad))


class SmoothSVMObjective:
    """Oracle of L(w) over a :class:`~streamssvm.data.BlockSource`.

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
        the transpose fit ``cache_bytes``.
    sample_weight : array of shape (n_samples,), optional
        The row weights c_i >= 0 (class weights folded in by the caller). The curvature
        D_ii holds c_i psi''(.), so Hessian products need no weights and rows of weight 0
        never enter them.

    Attributes
    ----------
    passes : int
        Passes over the data made so far (every block read once = one pass).
    cached_sweeps : int
        Hessian-vector products or diagonals computed from memory (the curved rows, or
        the held data), without a pass.
    """

    def __init__(self, source, loss, lam, sigma=None, fit_intercept=False,
                 intercept_scaling=1.0, n_threads=None, progress=False, cache_curved="auto",
                 cache_bytes=None, sample_weight=None, hold="auto"):
        prepare()
        lam = check_lam(lam)
        if source.n_samples == 0:
            raise ValueError(f"{source.name}: no rows to train on")
        if source.n_features == 0 and not fit_intercept:
            raise ValueError(f"{source.name}: no features to train on (and no intercept)")
        if len(source.classes) != 2:
            raise ValueError(f"{source.name}: {len(source.classes)} classes; the objective "
                             f"needs two distinct labels: train each class against the rest "
                             f"(streamssvm.train_one_vs_rest)")
        self.sample_weight = _row_weights(sample_weight, source)
        self.source = source
        self.loss = get_loss(loss, sigma)
        self.lam = lam
        self.bias = float(intercept_scaling) if fit_intercept else 0.0
        if fit_intercept and not (np.isfinite(self.bias) and self.bias > 0):
            raise ValueError(f"intercept_scaling must be positive, got {intercept_scaling}")
        lipschitz = self.loss.lipschitz
        self.curvature_floor = 2.0 ** -53 * lipschitz if np.isfinite(lipschitz) else 0.0
        self.n_features = source.n_features
        self.n_variables = self.n_features + (1 if fit_intercept else 0)
        free = available_memory_bytes()
        if MIN_VECTORS * 8 * self.n_variables > free:  # else a solver's zeros fail, or swap
            raise ValueError(
                f"{source.name}: {self.n_features:,} features: a solver's vectors of that "
                f"length ({8 * self.n_variables / 2**30:.3g} GiB each, {MIN_VECTORS} at "
                f"least) do not fit the {free / 2**30:.3g} GiB of memory free (a stray large "
                f"index in the input? convert with --n-features to refuse one)")
        self.n_threads = check_threads(n_threads) or numba.get_num_threads()
        self.progress = progress
        if cache_curved not in ("auto", True, False):
            raise ValueError(f"cache_curved must be 'auto', True or False, got {cache_curved!r}")
        self.cache_curved = cache_curved
        if hold not in ("auto", True, False):
            raise ValueError(f"hold must be 'auto', True or False, got {hold!r}")
        self.hold = hold
        self._held = None  # [Block of all rows, its transpose or None] once read; False: streamed
        self._columns_pending = None  # a Future of the transpose (see make_columns)
        self._ones = None  # see ones()
        # Hessian products of held data (see _state_columns): the curvature of their
        # state, the columns they read and the arrays a copy of its curved rows' columns
        # is written into
        self._curved_of, self._curved, self._curved_out = None, None, None
        self._window_warned = False
        self.cache_bytes = free // 4 if cache_bytes is None else int(cache_bytes)
        self.passes = 0
        self.cached_sweeps = 0
        self._scatter, self._scatter_dirty = None, False  # made by the first scatter pass
        self._max_row_norm2 = None

    @property
    def n_samples(self):
        return self.source.n_samples

    def _count_pass(self):
        with _PASS_LOCK:  # SDCA evaluates in a thread beside its epochs
            self.passes += 1

    @property
    def _wide(self):
        """Fewer rows than columns: held data's products X v then run by columns (see
        :func:`~streamssvm.kernels.column_products`: each thread then writes its own
        rows of the result, and reads a column's entries in sequence)."""
        return self.n_samples < self.n_features

    @property
    def holds_data(self):
        """The rows are held in memory (read once, by the first pass, as ``hold`` allows)."""
        return bool(self._held)

    def _start_scatter(self):
        """Make the per-thread scatter buffers at the first pass that scatters (held data's
        and the stochastic epochs' never do), or clear them if a pass was interrupted
        before its merge."""
        if self._scatter is None:
            self._scatter = np.zeros((self.n_threads, self.n_variables))
        elif self._scatter_dirty:
            self._scatter[...] = 0.0
        self._scatter_dirty = True

    def _pass(self, scatter=True, order=None):
        """The blocks of one pass over the source (counted), in storage order or ``order``."""
        if scatter:
            self._start_scatter()
        self._count_pass()
        return progress_iter(self.source.iter_blocks(order=order, transient=True), self.progress,
                             total=self.source.n_blocks, unit="block", leave=False,
                             desc=f"pass {self.passes}")

    def _held_rows(self):
        """The whole data as one Block, read by the first call that asks when ``hold``
        allows (the caller counts the pass); None when the data is streamed."""
        if self._held is None:
            self._held = False
            source = self.source
            nnz_bytes = 4 + np.dtype(source.value_dtype).itemsize
            # the transpose, and its scratch and column counts while it is made
            size = source.nnz * (2 * nnz_bytes + 2) + 20 * (self.n_features + 1)
            if not source.in_memory:
                size += source.nnz * nnz_bytes + 9 * self.n_samples
            fits = self.hold is True or (self.hold == "auto" and size <= self.cache_bytes)
            if fits and self.n_samples < 2 ** 31:  # the transpose's row numbers are int32
                self._held = [source.read_range(0, source.n_blocks), None]
        return self._held[0] if self._held else None

    def hold_rows(self):
        """Read the data now if it is to be held (see ``hold``); True if it is held."""
        return self._held_rows() is not None

    def make_columns(self, executor):
        """Have the transpose of held data made by ``executor`` (a
        ``concurrent.futures`` executor), rather than by the first pass that needs it, so
        that a solver can start meanwhile (SDCA). Until :meth:`columns_made`,
        :meth:`evaluate` takes the rows' way, a scatter of X^T: the same numbers up to
        the order of the sums, and which way is taken depends on the calls, not on which
        thread is faster, so runs stay reproducible. Nothing when the data is streamed."""
        if self.hold_rows():
            self._columns_pending = executor.submit(self._held_data)

    def columns_made(self):
        """Wait for the transpose asked of :meth:`make_columns`; evaluations use it from
        now on."""
        if self._columns_pending is not None:
            self._columns_pending.result()
            self._columns_pending = None

    def _held_data(self):
        """:meth:`_held_rows` and their transpose (the ``columns`` of
        :func:`~streamssvm.kernels.transpose`), made by the first call that needs it (the
        stochastic solvers' epochs do not); None when the data is streamed."""
        block = self._held_rows()
        if block is None:
            return None
        if self._held[1] is None:
            self._held[1] = kernels.transpose(block.indptr, block.indices, block.data,
                                              self.n_features, self.n_threads)
        return block, self._held[1]

    def _column_sums(self, v, squared, x, lam, columns=None):
        """As :meth:`_merged`, of X^T v (X.^2 if ``squared``) from the held transpose (or
        ``columns``, a part of it holding every row where v is not 0), and its dot
        product with ``x``."""
        lam, scale, _ = self._combination(lam)
        out = np.empty(self.n_variables)
        x_out = kernels.column_sums(self._held_data()[1] if columns is None else columns, v,
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
            columns = self._held[1]
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
        held = self._held_data()
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
            if 4 * size > available_memory_bytes():
                return False
            self._curved_out = (tuple(np.empty_like(a) for a in columns[:7])
                                + (np.empty(self.n_features, np.int64),))
        return True

    @property
    def loss_args(self):
        """``(code, sigma, theta, params)``: the loss as the kernels take it."""
        return self.loss.code, self.loss.sigma, self.loss.theta, self.loss.params

    def shuffled_blocks(self, rng, window_bytes=None):
        """One pass (counted) in a random order for the stochastic solvers: ``(block,
        rows)`` pairs, ``rows`` (int64 array) a random order of some of ``block``'s rows
        (positions in the block), drawn from the numpy Generator ``rng``.

        Data held in memory (``hold``; read by the first pass that asks) or an in-memory
        source is one window: one random permutation of all rows, used in place, and later
        epochs read nothing. Streamed data is cut into windows of consecutive source
        blocks, as many as fit ``window_bytes`` of rows (default ``SHUFFLE_BYTES``), visited
        in a random order, each window's rows in a random order, the next window read while
        this one is used. The larger the window, the closer the order is to one
        permutation, and the faster SDCA's duality gap falls (rows shuffled only within
        small windows keep the correlation of neighbouring rows in a file). The
        windows depend on the data and ``window_bytes`` only, so a streamed run's order is
        its seed's however much memory is free; only if four windows do not fit in it are
        they made smaller, with a warning that the order then differs."""
        if self.sample_weight is not None:
            raise ValueError(NO_ROW_WEIGHTS)
        held = self._held_rows()  # data that fits is read once, by this pass or an earlier one
        in_place = held is not None or self.source.in_memory
        windows = ([(0, self.source.n_blocks)] if in_place
                   else self._shuffle_windows(SHUFFLE_BYTES if window_bytes is None
                                              else window_bytes))
        self._count_pass()
        order = rng.permutation(len(windows))
        if held is not None:  # no copy, no read
            blocks = (held,)
        elif len(windows) == 1:
            blocks = (self.source.read_range(*windows[0]),)
        else:  # the next window is read (a thread, GIL released in h5py) while this one runs
            blocks = self.source.iter_blocks_prefetched(
                order, depth=1, read=lambda k, i: self.source.read_range(*windows[k]))
        for block in blocks:
            yield block, rng.permutation(block.n_rows)

    def _shuffle_windows(self, budget):
        """``[(first, stop)]``: runs of consecutive source blocks of at most ``budget`` bytes
        of rows (at least one block each); smaller, with a warning, if four such windows do
        not fit in the free memory."""
        free = available_memory_bytes()
        if 4 * budget > free:
            asked, budget = budget, max(free // 4, 1)
            if not self._window_warned:
                self._window_warned = True
                mib = [f"{size / 2 ** 20:.1f} MiB" for size in (asked, free, budget)]
                warn(f"{self.source.name}: four shuffle windows of {mib[0]} do not "
                     f"fit in the {mib[1]} free; windows of {mib[2]} make an order "
                     f"other than the seed's with more memory", RuntimeWarning)
        offsets = self.source.row_offsets
        nnz_bytes = 4 + np.dtype(self.source.value_dtype).itemsize
        row_bytes = nnz_bytes * self.source.nnz / self.n_samples + 9  # + indptr, label
        windows, first, n_blocks = [], 0, self.source.n_blocks
        for k in range(1, n_blocks + 1):
            if k == n_blocks or (offsets[k + 1] - offsets[first]) * row_bytes > budget:
                windows.append((first, k))
                first = k
        return windows

    def smoothness(self):
        """L_max = sup psi'' max_i ||(x_i, bias)||^2 + lambda: a Lipschitz constant of the
        gradient of every term lam/2 ||w||^2 + psi(y_i x_i.w) (the stochastic solvers'
        step sizes). One pass the first time, then cached."""
        if self._max_row_norm2 is None:
            self._max_row_norm2 = max((kernels.max_row_norm2(b.indptr, b.indices, b.data)
                                       for b in self._pass(scatter=False)), default=0.0)
        return self.loss.lipschitz * (self._max_row_norm2 + self.bias ** 2) + self.lam

    def loss_gradient(self, state):
        """(1 / n) sum_i psi'(y_i x_i.w) y_i x_i at ``state``: its gradient without the L2 term."""
        grad = state.grad.copy()
        grad[:self.n_features] -= self.lam * state.w[:self.n_features]
        return grad

    def _combination(self, lam):
        """``(lam, scale, unregularised_last)``: a vector of the oracle is lam * x plus scale
        times the sum over rows, lam * x left out of the intercept's entry if the last."""
        return lam, 1.0 / self.n_samples, bool(self.bias)

    def _merged(self, x, lam):
        """lam * x (intercept excluded) + (what the kernels scattered) / n; resets the
        scatter buffers for the next pass."""
        out = np.empty(self.n_variables)
        kernels.merge_parts(self._scatter, x, *self._combination(lam), out)
        self._scatter_dirty = False
        return out

    def _check(self, w, name="w"):
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_variables,):
            raise ValueError(f"{name} has shape {w.shape}, expected ({self.n_variables},)")
        return w

    def _check_state(self, state):
        """``state``, if it is of this data: the kernels index its curvature by the rows."""
        if state.curvature.shape != (self.n_samples,):
            raise ValueError(f"the state is of other data: its curvature has shape "
                             f"{state.curvature.shape}, this data {self.n_samples} rows")
        return state

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
        if self._columns_pending is not None:  # the rows, while their columns are made
            held = (self._held_rows(), None)
        else:
            held = self._held_data()
        loss, margins, curvature = 0.0, self._rows_vector(), self._rows_vector()
        if held is not None and held[1] is not None:
            self._count_pass()
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
        kept, cached = [] if gather else None, 0
        if held is not None:
            self._start_scatter()
            self._count_pass()
        for b in ([held[0]] if held is not None else self._pass()):
            block_rows = slice(b.row_start, b.row_start + b.n_rows)
            rows = curvature[block_rows]
            loss += kernels.loss_grad(b.indptr, b.indices, b.data, b.y, w, self.bias, code,
                                      sigma, theta, params, self.curvature_floor,
                                      margins[block_rows], rows, self._scatter,
                                      self._block_weights(block_rows), zero)
            if kept is not None:
                part = kernels.gather_curved_rows(b.indptr, b.indices, b.data, rows)
                cached += sum(a.nbytes for a in part)
                if cached <= self.cache_bytes:
                    kept.append(part)
                else:  # does not fit: Hessian-vector products will stream instead
                    kept = None
        if (curved and held is None and self.cache_curved == "auto" and not streamed
                and 2 * np.count_nonzero(curvature) <= self.n_samples):
            kept = self._gather_in_memory(curvature)
        grad = self._merged(w, self.lam)
        return PointState(w, self._total(w, loss), grad, margins, curvature, kept)

    def _rows_vector(self):
        """A float64 vector of the rows for a state: in memory when the data is, else where
        :func:`~streamssvm._memory.per_sample_array` puts it (a file when it would take
        more than an eighth of the memory left): on many short rows under a memory cap,
        a few vectors of the rows can take more memory than the process has."""
        if self.holds_data or self.source.in_memory:
            return np.empty(self.n_samples)
        return per_sample_array(self.n_samples)

    def _gather_in_memory(self, curvature):
        """The curved rows of an in-memory source, copied (no pass: the data is in memory),
        or None if they do not fit ``cache_bytes``."""
        curved, cached = [], 0
        for b in self.source.iter_blocks(transient=True):
            part = kernels.gather_curved_rows(
                b.indptr, b.indices, b.data, curvature[b.row_start:b.row_start + b.n_rows])
            cached += sum(a.nbytes for a in part)
            if cached > self.cache_bytes:
                return None
            curved.append(part)
        return curved

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
        curvature = self._rows_vector()
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
        if self._held_data() is not None:  # products from memory skip the rows of D_ii = 0
            return dataclasses.replace(state, curvature=curvature, curved_rows=None)
        sampled, cached = [], 0
        for b in self._pass(scatter=False):
            part = kernels.gather_curved_rows(
                b.indptr, b.indices, b.data, curvature[b.row_start:b.row_start + b.n_rows])
            cached += sum(a.nbytes for a in part)
            if cached > self.cache_bytes:  # stream instead
                return dataclasses.replace(state, curvature=curvature, curved_rows=None)
            sampled.append(part)
        return dataclasses.replace(state, curvature=curvature, curved_rows=sampled)

    def _block_weights(self, block_rows):
        """The row weights of a block (None when unweighted)."""
        return None if self.sample_weight is None else self.sample_weight[block_rows]

    def _total(self, w, loss_sum):
        """L(w) from the sum of the losses."""
        return (0.5 * self.lam * float(w[:self.n_features] @ w[:self.n_features])
                + loss_sum / self.n_samples)

    def value_on_segment(self, state, trial, alpha):
        """L(w + alpha (w_trial - w)) for two evaluated states, from their margins: O(n), no
        pass."""
        w = state.w + alpha * (trial.w - state.w)
        loss = kernels.loss_sum_along(state.margins, trial.margins, alpha,
                                      self.loss.code, self.loss.sigma, self.loss.theta,
                                      self.loss.params, self.sample_weight)
        return self._total(w, loss)

    def _curved_blocks(self, state):
        """(indptr, indices, data, curvature) per block: the in-memory copy if there is
        one, else a pass over the source."""
        if state.curved_rows is not None:
            self._start_scatter()
            self.cached_sweeps += 1
            return state.curved_rows
        return ((b.indptr, b.indices, b.data, state.curvature[b.row_start:b.row_start + b.n_rows])
                for b in self._pass())

    def value(self, w):
        """One pass: L(w) alone."""
        w = self._check(w)
        b = self._held_rows()
        if b is not None:
            self._count_pass()
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

    def hessp(self, state, s):
        """One pass: (lambda E + X^T D X / n) s with D from ``state``."""
        return self.hessp_quad(state, s)[0]

    def hessp_quad(self, state, s):
        """:meth:`hessp` and s.(H s), the curvature along s that CG needs: from the same
        sweep when the data is held. (A subclass overrides this, not :meth:`hessp`; the
        solvers' products on held wide data come from :meth:`newton_system`.)"""
        s, state = self._check(s, "s"), self._check_state(state)
        held = self._held_data()
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
        return not (self.holds_data or self.source.in_memory or state.curved_rows is not None)

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
        if self._held_data() is not None:
            self.cached_sweeps += 1
            return self._column_sums(state.curvature, True, ones, self.lam)[0]
        for indptr, indices, data, curvature in self._curved_blocks(state):
            kernels.hess_diag(indptr, indices, data, curvature, self.bias, self._scatter)
        return self._merged(ones, self.lam)


def check_lam(lam):
    """``lam`` as a float if a positive finite real number, else a ValueError naming the
    parameter (a string or None is no number, even one that float() would read)."""
    if isinstance(lam, (bool, np.bool_)) or not isinstance(lam, numbers.Real):
        raise ValueError(f"lambda ({named('lam')}) must be a positive finite number, got "
                         f"{lam!r} of type {type(lam).__name__}")
    lam = float(lam)
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lambda must be a positive finite number, got {lam} "
                         f"({named('lam')})")
    return lam


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


def _row_weights(sample_weight, source):
    """``sample_weight`` as a float64 array of shape (n_samples,), checked; None stays None."""
    if sample_weight is None:
        return None
    weights = np.ascontiguousarray(sample_weight, dtype=np.float64)
    if weights.shape != (source.n_samples,):
        raise ValueError(f"{source.name}: sample_weight has shape {weights.shape}, expected "
                         f"({source.n_samples},)")
    if not np.all(np.isfinite(weights) & (weights >= 0)):
        bad = int(np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))[0])
        raise ValueError(f"{source.name}: sample_weight[{bad}] = {weights[bad]!r}: weights "
                         f"must be finite and >= 0")
    return weights
