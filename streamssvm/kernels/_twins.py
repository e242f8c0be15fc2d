"""Parallel kernels with a serial twin, chosen per call by the size of the work.

A call of a numba kernel compiled with ``parallel=True`` wakes the threading layer's
workers and schedules its ``prange`` loops on them, a fixed cost that does not depend on
the size of the work; on a small block, or on the short vectors of a problem with few
features, that cost is most of the call. So each such kernel is compiled twice from one
Python body: with ``parallel=True`` and without (``prange`` then runs as ``range``, the
loop's iterations in order on the calling thread). Both run the same arithmetic on the
same ranges (a kernel cuts its work into ``n_parts`` ranges itself, whichever runs it),
so they agree to the bit (a sum that a ``prange`` loop reduces is cut into fixed ranges
first: numba's threads would group ``total += ...`` across iterations as they run). A twin
is compiled by its first call, so a process that only ever
runs small work compiles only the serial twins.

Rule: a call whose work is below :data:`SERIAL_BELOW` units runs serially; a unit is a
nonzero or a row of a block, an entry or a column of a transpose, an entry of a vector,
and a loss evaluation counts :data:`LOSS_WORK` units (it costs about that many sparse
multiply-adds). Below it, one thread ends the sweep before the others, woken, would have
shared it: that is where the parallel twins of the kernels that do the most per entry
(the scatters of X^T, the losses) start to win, serial and parallel timed on the same
inputs in one process. The sweeps of vectors and of a transpose's columns, bound by
memory, win later if at all.

A parallel twin costs a few times its serial twin's compile (numba's parfor passes and the
gufunc they build), most of a first run's wait on small data, which the threads then
cannot win back. So at or above the threshold the parallel twin runs once it is cheap to
have: compiled in this process, in numba's disk cache (loaded, not compiled), or once the
serial twin has spent :data:`PARALLEL_PAYS_SECONDS` on such calls in this process. That is
less than the parallel compile costs, as a rent paid once would have it (ski rental): the
compile is paid once for every later process (the disk cache keeps it), the serial twin's
extra time in every process, and a kernel that busy in one run is busy in the next. Until
then the serial twin runs; with
:data:`COMPILE_PARALLEL` (``streamssvm warmup``) the parallel twin is compiled at its first
call. The twins agree to the bit, so which one runs changes no result.
"""

import contextlib
import functools
import inspect
import time
import types

from numba import njit
from numba.core.compiler_lock import global_compiler_lock

SERIAL_BELOW = 1 << 15
LOSS_WORK = 16
# seconds of serial calls at or above SERIAL_BELOW after which a kernel's parallel twin is
# compiled in a process (a parallel compile takes seconds, once for every later process)
PARALLEL_PAYS_SECONDS = 0.25
# compile a parallel twin at its first call at or above SERIAL_BELOW (warmup's rule)
COMPILE_PARALLEL = False


def nonzeros(indptr):
    """The work of a kernel over a block's rows: its rows and their nonzeros."""
    return int(indptr[-1] - indptr[0]) + len(indptr)


def entries(columns):
    """The work of a kernel over a transpose (``kernels.transpose``): its entries and its
    columns."""
    single, _, _, multi, _, multi_rows, _, empty, _ = columns
    return len(single) + len(multi) + len(multi_rows) + len(empty)


def losses(margins):
    """The work of a kernel that evaluates a loss at each of ``margins``."""
    return LOSS_WORK * len(margins)


@contextlib.contextmanager
def compiling_parallel():
    """A context in which a parallel twin is compiled at its first call at or above
    SERIAL_BELOW (:data:`COMPILE_PARALLEL`), as ``streamssvm warmup`` does."""
    global COMPILE_PARALLEL
    before, COMPILE_PARALLEL = COMPILE_PARALLEL, True
    try:
        yield
    finally:
        COMPILE_PARALLEL = before


def twins(size, of, **options):
    """Decorate a kernel's Python body: ``njit(parallel=True, **options)`` of it is the
    result's ``parallel``, ``njit(**options)`` of it its ``serial``, and calling the result
    runs the serial twin when ``size(argument named of)`` < :data:`SERIAL_BELOW`, else the
    parallel one. Each twin is its own function to numba's cache (qualified names
    ``NAME.parallel`` and ``NAME.serial``: numba keys a cached function on its name and
    line, not on its options). ``dispatchers`` holds both (what the package's cache
    watch, ``_jit_cache``, looks for)."""
    def decorate(body):
        at = list(inspect.signature(body).parameters).index(of)
        parallel = njit(parallel=True, **options)(_named(body, "parallel"))
        serial = njit(**options)(_named(body, "serial"))
        rent = _Rent()

        @functools.wraps(body)
        def kernel(*args, **kwargs):
            if size(args[at] if at < len(args) else kwargs[of]) < SERIAL_BELOW:
                return serial(*args, **kwargs)
            if rent.bought or COMPILE_PARALLEL or rent.buys(parallel, args, kwargs):
                rent.bought = True
                return parallel(*args, **kwargs)
            compiled = bool(serial.overloads)  # else this call compiles: not rent
            start = time.perf_counter()
            result = serial(*args, **kwargs)
            if compiled:
                rent.paid += time.perf_counter() - start
            return result

        kernel.parallel, kernel.serial = parallel, serial
        kernel.dispatchers = (parallel, serial)
        return kernel
    return decorate


class _Rent:
    """Whether a kernel's parallel twin is to run (``bought``), and the seconds its serial
    twin has run in its place (``paid``)."""

    def __init__(self):
        self.bought, self.paid, self._probed = False, 0.0, False

    def buys(self, parallel, args, kwargs):
        """The parallel twin is compiled, in the cache (probed once), or paid for."""
        if parallel.overloads or self.paid >= PARALLEL_PAYS_SECONDS:
            return True
        if not self._probed:
            self._probed = True
            return _in_cache(parallel, args, kwargs)
        return False


def _in_cache(dispatcher, args, kwargs):
    """Whether numba's disk cache holds ``dispatcher``'s code for these arguments, as its
    ``compile`` looks it up (types of the arguments, defaults folded in), without
    compiling. Any failure of numba's internal API says no: the serial twin runs until the
    parallel one is paid for."""
    try:
        with global_compiler_lock:
            types_ = tuple(dispatcher.typeof_pyval(a) for a in args)
            named = {k: dispatcher.typeof_pyval(v) for k, v in kwargs.items()}
            _, folded = dispatcher.fold_argument_types(types_, named)
            return dispatcher._cache.load_overload(tuple(folded),
                                                   dispatcher.targetctx) is not None
    except Exception:  # numba's internals changed: no worse than a cold cache
        return False


def _named(body, twin):
    """A copy of the function ``body`` qualified as ``body.twin``."""
    copy = types.FunctionType(body.__code__, body.__globals__, body.__name__,
                              body.__defaults__, body.__closure__)
    copy.__kwdefaults__, copy.__doc__ = body.__kwdefaults__, body.__doc__
    copy.__qualname__ = f"{body.__qualname__}.{twin}"
    return copy
