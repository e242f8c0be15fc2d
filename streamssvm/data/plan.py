"""How one objective's data is held and visited: the data plan.

A :class:`DataPlan` owns everything about the rows of one objective that is not the
loss's math: the counted pass over the blocks (``passes``, a progress bar), holding the
whole data in memory by rows and making its transpose (``hold``, within ``cache_bytes``),
the vectors of one number per row (spilled to files when memory is short), the budget of
the copies of rows the objective keeps, and the epoch order of the stochastic and dual
solvers (:meth:`DataPlan.epoch`). The objective asks it for blocks and computes on them;
the stochastic solvers ask it for their epochs.

Held data
---------
With ``hold`` True, or "auto" when the rows (for a source that reads a file) and the
transpose fit ``cache_bytes`` (default a quarter of the memory the process may still
use), the first pass that asks reads the whole data into one block; the transpose (the
``columns`` of :func:`~streamssvm.kernels.transpose`) is made by the first call that needs
it. Passes take the rows' way, without it, where it would not pay (:func:`columns_pay`):
always on data of fewer columns than ``GATHER_PER_ROW`` times its rows, over a stochastic
run's few evaluations (:meth:`DataPlan.evaluations_only`), and over a dual run's
evaluations until they would have paid for it (:meth:`DataPlan.rent_columns`).

The epoch order
---------------
An epoch visits every row once: windows of consecutive blocks in a random order, the rows
of each window in a random order, both drawn from the solver's seeded numpy Generator. The
windows depend on ``hold``, the seed and the data only, never on the free memory:

- ``hold=True``, or an in-memory source (its rows are in memory already): one window of
  all rows, one random permutation.
- ``hold=False``: windows of at most ``SHUFFLE_BYTES`` bytes of rows (at least a block
  each), each read while the one before is used.
- ``hold="auto"``: one window of all rows when the data's rows take at most
  ``PERMUTATION_BYTES``, a fixed size; windows of ``SHUFFLE_BYTES`` otherwise. Whether the
  data was held (which depends on the free memory) changes only where the windows come
  from: views of the held rows, or read from the source (a window of all rows at most
  ``PERMUTATION_BYTES`` large).

The larger the window, the closer the order is to one permutation, and the faster SDCA's
duality gap falls (rows shuffled only within small windows keep the correlation of
neighbouring rows in a file). Windows that are read must fit the memory four times over
(the window in use, the next one read meanwhile, and room for the solver's work): if they
do not, they are made smaller, with a warning that the order then differs from the
seed's with more memory.
"""

import threading

import numpy as np

from .._memory import available_memory_bytes, per_sample_array
from .._progress import progress_iter
from .._warn import warn
from .source import Block

# bytes of rows in a shuffle window of the stochastic solvers: small enough that four fit
# the memory of a tightly capped process, so capped runs keep the seed's order
SHUFFLE_BYTES = 32 << 20
# rows of at most this many bytes are one window under hold="auto", held or not (four
# windows' worth: what the windows of streamed data take in memory at once)
PERMUTATION_BYTES = 4 * SHUFFLE_BYTES
# columns_pay's costs, in units of what the columns' way saves a pass per column: what it
# loses a pass per row, and what the transpose costs per nonzero; from whole stochastic
# runs (their evaluations beside the epochs, and without), rows' way against columns', on
# the benchmark matrix's shapes (tools/bench_matrix.py)
GATHER_PER_ROW = 2.6
TRANSPOSE_PER_NONZERO = 5.0


def columns_pay(n_rows, n_columns, nnz, evaluations):
    """Whether the transpose of held data pays for itself over ``evaluations`` passes.
    The rows' way scatters X^T c (c a coefficient per row: a gradient's, or D X s of a
    Hessian product) into per-thread d-vectors, zeroed and summed at every pass: it
    loses per column. The columns' way gathers c along each column, reading c at random:
    it loses per row; and it first makes the transpose once, a cost per nonzero. So the
    columns' way saves n_columns - GATHER_PER_ROW n_rows a pass and costs
    TRANSPOSE_PER_NONZERO nnz once (:data:`GATHER_PER_ROW`,
    :data:`TRANSPOSE_PER_NONZERO`): it pays on data much wider than tall, over many
    passes; on data of fewer columns than GATHER_PER_ROW times its rows, never."""
    saved = evaluations * (n_columns - GATHER_PER_ROW * n_rows)
    return saved > TRANSPOSE_PER_NONZERO * nnz


def check_hold(hold):
    """``hold`` if "auto", True or False, else a ValueError."""
    if hold not in ("auto", True, False):
        raise ValueError(f"hold must be 'auto', True or False, got {hold!r}")
    return hold


class RowCopy:
    """Parts of rows copied into memory while they fit ``budget`` bytes: ``parts`` is
    their list, or None from the first part that did not fit (the copy is then not
    used, and the objective streams instead)."""

    def __init__(self, budget):
        self.parts, self._left = [], budget

    def add(self, part):
        """Keep ``part`` (a tuple of arrays) if it fits what is left; whether the copy is
        still whole."""
        if self.parts is not None:
            self._left -= sum(a.nbytes for a in part)
            if self._left >= 0:
                self.parts.append(part)
            else:
                self.parts = None
        return self.parts is not None


class DataPlan:
    """How the rows of ``source`` are held and visited (see the module docstring).

    Parameters
    ----------
    source : BlockSource
    n_threads : int
        Threads of the transpose.
    hold : bool or "auto"
        Hold the whole data in memory from its first pass on; the epoch order follows it.
    cache_bytes : int, optional
        Memory for the held data and for the objective's copies of rows (default a
        quarter of what the process may still use).
    progress : bool
        A tqdm bar over the blocks of every pass.

    Attributes
    ----------
    passes : int
        Passes over the data made so far (every block read once, or the held data used
        once, is one pass).
    """

    def __init__(self, source, n_threads, hold="auto", cache_bytes=None, progress=False):
        self.source = source
        self.n_threads = n_threads
        self.hold = check_hold(hold)
        self._holding = hold  # whether to hold: ``hold``, or as a resumed run did (hold_as)
        self.cache_bytes = (available_memory_bytes() // 4 if cache_bytes is None
                            else int(cache_bytes))
        self.progress = progress
        self.passes = 0
        self._lock = threading.Lock()
        self._held = None  # [Block of all rows, its transpose or None] once read; False: streamed
        self._columns_declined = False  # by decline_columns, rent_columns
        self._window_warned = False

    @property
    def n_samples(self):
        return self.source.n_samples

    def count_pass(self):
        with self._lock:  # SDCA evaluates in a thread beside its epochs
            self.passes += 1

    def blocks(self, order=None):
        """The blocks of one pass over the source (counted), in storage order or
        ``order``; transient (see :meth:`~streamssvm.data.BlockSource.iter_blocks`)."""
        self.count_pass()
        return progress_iter(self.source.iter_blocks(order=order, transient=True), self.progress,
                             total=self.source.n_blocks, unit="block", leave=False,
                             desc=f"pass {self.passes}")

    def hold_as(self, held):
        """Hold the data if ``held`` (or not), whatever ``cache_bytes`` says: as the run
        that wrote a checkpoint did, so that a resumed run sums in its order. The epoch
        order still follows ``hold``. Before the first pass only."""
        self._holding = bool(held)

    def held_rows(self):
        """The whole data as one Block, read by the first call that asks when ``hold``
        allows (the caller counts the pass); None when the data is streamed."""
        if self._held is None:
            self._held = False
            if self._holding is False:  # without asking the size (a subset's: a pass)
                return None
            source = self.source
            nnz_bytes = 4 + np.dtype(source.value_dtype).itemsize
            # the transpose, and its scratch and column counts while it is made
            size = source.nnz * (2 * nnz_bytes + 2) + 20 * (source.n_features + 1)
            if not source.in_memory:
                size += source.nnz * nnz_bytes + 9 * self.n_samples
            fits = self._holding is True or (self._holding == "auto" and size <= self.cache_bytes)
            if fits and self.n_samples < 2 ** 31:  # the transpose's row numbers are int32
                self._held = [source.read_range(0, source.n_blocks), None]
                if self._columns_never_pay():
                    self.decline_columns()
        return self._held[0] if self._held else None

    def hold_rows(self):
        """Read the data now if it is to be held (see ``hold``); True if it is held."""
        return self.held_rows() is not None

    @property
    def holds_data(self):
        """The rows are held in memory (read once, by the first pass, as ``hold`` allows)."""
        return bool(self._held)

    @property
    def in_memory(self):
        """A pass reads memory, not a file: the data is held, or the source is in memory."""
        return self.holds_data or self.source.in_memory

    def evaluations_only(self, count):
        """A solver that makes at most ``count`` passes, none with a Hessian product (SGD,
        Pegasos, SVRG, SAGA), says so before its first: the transpose of held data is then made only
        if it pays for itself over them (:func:`columns_pay`); else every pass takes the
        rows' way (:attr:`rows_way`). Streamed data takes the rows' way anyway."""
        block = self.held_rows()
        if block is not None and not columns_pay(self.n_samples, self.source.n_features,
                                                 block.nnz, count):
            self.decline_columns()

    def decline_columns(self):
        """Passes over held data take the rows' way from now on (:attr:`rows_way`): no
        transpose is made for them."""
        self._columns_declined = True

    def _columns_never_pay(self):
        return self.source.n_features <= GATHER_PER_ROW * self.n_samples

    def rent_columns(self, evaluations=None):
        """For a solver that cannot tell in advance how many passes it will make (SDCA,
        until its gap closes), ``evaluations`` the passes it has made: the next passes over
        held data take the rows' way while those would not have paid for the transpose
        (:func:`columns_pay`), the columns' way once they would, or if the transpose is
        made already. This is rent or buy (ski rental): in hindsight it costs at most twice
        the cheaper of the two ways. ``evaluations`` None ends the rent: passes take the
        columns' way again where they can pay. Streamed data takes the rows' way anyway."""
        block = self.held_rows()
        if block is None:
            return
        if evaluations is None:
            self._columns_declined = self._columns_never_pay()
        else:
            self._columns_declined = not (self._held[1] is not None or columns_pay(
                self.n_samples, self.source.n_features, block.nnz, evaluations))

    @property
    def rows_way(self):
        """Passes over held data take the rows' way, scatters of X^T (f and the gradient,
        Hessian products and diagonals), without the transpose (:meth:`decline_columns`,
        :meth:`rent_columns`)."""
        return self._columns_declined

    def held_data(self):
        """:meth:`held_rows` and their transpose (the ``columns`` of
        :func:`~streamssvm.kernels.transpose`), made by the first call that needs it (the
        epochs do not); None when the data is streamed."""
        block = self.held_rows()
        if block is None:
            return None
        if self._held[1] is None:
            self._held[1] = self.source.transposed(block, self.n_threads)
        return block, self._held[1]

    def rows_vector(self):
        """A float64 vector of the rows: in memory when the data is, else where
        :func:`~streamssvm._memory.per_sample_array` puts it (a file when it would take
        more than an eighth of the memory left): on many short rows under a memory cap,
        a few vectors of the rows can take more memory than the process has."""
        if self.in_memory:
            return np.empty(self.n_samples)
        return per_sample_array(self.n_samples)

    def row_copy(self):
        """A :class:`RowCopy` within ``cache_bytes`` (the objective's copies of the rows
        with curvature, or of a Hessian sample)."""
        return RowCopy(self.cache_bytes)

    def room_for(self, nbytes):
        """Whether a quarter of the memory the process may still use holds ``nbytes``."""
        return 4 * nbytes <= available_memory_bytes()

    def _row_bytes(self):
        """Bytes of a row on average as a window holds it (its entries, indptr, label)."""
        nnz_bytes = 4 + np.dtype(self.source.value_dtype).itemsize
        return nnz_bytes * self.source.nnz / self.n_samples + 9

    def _one_window(self):
        """Whether an epoch is one permutation of all rows (see the module docstring)."""
        if self.hold is True or self.source.in_memory:
            return True
        return self.hold == "auto" and self._row_bytes() * self.n_samples <= PERMUTATION_BYTES

    def epoch(self, rng, window_bytes=None):
        """One pass (counted) in a random order: ``(block, rows)`` pairs, ``rows`` (int64
        array) a random order of ``block``'s rows (positions in the block), drawn from the
        numpy Generator ``rng``; windows as the module docstring says, of ``window_bytes``
        bytes of rows (default ``SHUFFLE_BYTES``) where they are not all rows. Held data is
        read by the first pass that asks; its windows are views of the held rows and later
        epochs read nothing."""
        held = self.held_rows()
        budget = SHUFFLE_BYTES if window_bytes is None else window_bytes
        if self._one_window():
            windows = [(0, self.source.n_blocks)]
            if held is None and not self.source.in_memory:  # read whole: it must fit
                whole = self._row_bytes() * self.n_samples
                if 4 * whole > available_memory_bytes():
                    windows = self._windows(self._fitting(whole))
        else:
            windows = self._windows(budget if held is not None else self._fitting(budget))
        self.count_pass()
        order = rng.permutation(len(windows))
        if held is not None:  # no copy, no read
            blocks = (held,) if len(windows) == 1 else (self._held_window(*windows[k])
                                                        for k in order)
        elif len(windows) == 1:
            blocks = (self.source.read_range(*windows[0]),)
        else:  # the next window is read (a thread, GIL released in h5py) while this one runs
            blocks = self.source.iter_blocks_prefetched(
                order, depth=1, read=lambda k, i: self.source.read_range(*windows[k]))
        for block in blocks:
            yield block, rng.permutation(block.n_rows)

    def _held_window(self, first, stop):
        """Blocks ``first .. stop - 1`` of the held rows as one Block of views (the
        arrays :meth:`~streamssvm.data.BlockSource.read_range` would read)."""
        held, offsets = self._held[0], self.source.row_offsets
        start, end = int(offsets[first]), int(offsets[stop])
        return Block(first, start, held.indptr[start:end + 1], held.indices, held.data,
                     held.y[start:end])

    def _fitting(self, budget):
        """``budget``, or less, with a warning, if four windows of it do not fit in the
        free memory."""
        free = available_memory_bytes()
        if 4 * budget <= free:
            return budget
        smaller = max(free // 4, 1)
        if not self._window_warned:
            self._window_warned = True
            mib = [f"{size / 2 ** 20:.1f} MiB" for size in (budget, free, smaller)]
            warn(f"{self.source.name}: four shuffle windows of {mib[0]} do not "
                 f"fit in the {mib[1]} free; windows of {mib[2]} make an order "
                 f"other than the seed's with more memory", RuntimeWarning)
        return smaller

    def _windows(self, budget):
        """``[(first, stop)]``: runs of consecutive source blocks of at most ``budget``
        bytes of rows (at least one block each)."""
        offsets = self.source.row_offsets
        row_bytes = self._row_bytes()
        windows, first, n_blocks = [], 0, self.source.n_blocks
        for k in range(1, n_blocks + 1):
            if k == n_blocks or (offsets[k + 1] - offsets[first]) * row_bytes > budget:
                windows.append((first, k))
                first = k
        return windows
