"""Parallel kernels with a serial twin, chosen per call by the size of the work.

A call of a numba kernel compiled with ``parallel=True`` wakes the threading layer's
workers and schedules its ``prange`` loops on them, a fixed cost that does not depend on
the size of the work; on a small block, or on the short vectors of a problem with few
features, that cost is most of the call. So each such kernel is compiled twice from one
Python body: with ``parallel=True`` and without (``prange`` then runs as ``range``, the
loop's iterations in order on the calling thread). Both run the same arithmetic on the
same ranges (a kernel cuts its work into ``n_parts`` ranges itself, whichever runs it),
so they agree to the bit, except where a ``prange`` loop reduces a sum across its
iterations (``total += ...``): numba's threads then group it differently, and the twins
agree to rounding. A twin is compiled by its first call, so a process that only ever
runs small work compiles only the serial twins.

Rule: a call whose work is below :data:`SERIAL_BELOW` units runs serially; a unit is a
nonzero or a row of a block, an entry or a column of a transpose, an entry of a vector,
and a loss evaluation counts :data:`LOSS_WORK` units (it costs about that many sparse
multiply-adds). Below it, one thread ends the sweep before the others, woken, would have
shared it: that is where the parallel twins of the kernels that do the most per entry
(the scatters of X^T, the losses) start to win, serial and parallel timed on the same
inputs in one process. The sweeps of vectors and of a transpose's columns, bound by
memory, win later if at all.
"""

import functools
import inspect
import types

from numba import njit

SERIAL_BELOW = 1 << 15
LOSS_WORK = 16


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

        @functools.wraps(body)
        def kernel(*args, **kwargs):
            small = size(args[at] if at < len(args) else kwargs[of]) < SERIAL_BELOW
            return (serial if small else parallel)(*args, **kwargs)

        kernel.parallel, kernel.serial = parallel, serial
        kernel.dispatchers = (parallel, serial)
        return kernel
    return decorate


def _named(body, twin):
    """A copy of the function ``body`` qualified as ``body.twin``."""
    copy = types.FunctionType(body.__code__, body.__globals__, body.__name__,
                              body.__defaults__, body.__closure__)
    copy.__kwdefaults__, copy.__doc__ = body.__kwdefaults__, body.__doc__
    copy.__qualname__ = f"{body.__qualname__}.{twin}"
    return copy
