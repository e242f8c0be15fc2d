"""What the process needs before the first kernel runs, done when training starts.

:func:`prepare` is called by the entry points that run kernels (``train_stream``, the
objectives, ``OnlineTrainer``, the command line), not at import, so that importing the
package changes neither the environment nor the files of another program in the same
process. It runs once per process.

- ``GOMP_SPINCOUNT``: numba's OpenMP workers spin between parallel regions, 300,000 times
  by default; on a machine with more runnable threads than cores the spinning threads take
  the cores of the ones doing work. Not spinning at all (``OMP_WAIT_POLICY=passive``) wakes
  them from sleep at every kernel call. A short spin keeps both costs small. Set only if the
  user has not; libgomp reads it once, when it is loaded, so a library that loads it
  before the first run (scikit-learn's import does) leaves its default in force.
- numba's on-disk cache (:mod:`._jit_cache`): numba keys a cached kernel on its own file
  only, so a kernel that calls a loss from another module keeps the compiled loss it was
  cached with; the cache files of the kernel modules whose dependencies changed are removed.
"""

import functools
import importlib
import os
import threading

from threadpoolctl import ThreadpoolController

from ._jit_cache import clear_stale_cache

SPIN_COUNT = "1000"
# modules the command line imports before it reads its arguments, so that the solvers and
# losses they register are there (``--solver``'s choices, the solvers' flags)
PLUGINS_ENV = "STREAMSSVM_PLUGINS"
_LOCK = threading.Lock()
_prepared = False


def prepare():
    """Set up the process for the kernels (see the module docstring); a no-op after the
    first call."""
    global _prepared
    if _prepared:
        return
    with _LOCK:
        if not _prepared:
            os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
            clear_stale_cache()
            _prepared = True


def cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@functools.cache
def _threadpools():
    """The process's thread pools (BLAS, OpenMP), found once: threadpoolctl's scan of the
    loaded libraries is the dearest part of a limit, and the BLAS that numpy loads is loaded
    by the time a run starts."""
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS runs on one thread: it serves only the solvers' vector
    operations here, and OpenBLAS's threads spin on the cores the kernels' threads need."""
    return _threadpools().limit(limits=1, user_api="blas")


def load_plugins(spec=None):
    """Import the plugins named by ``spec`` (default: the ``STREAMSSVM_PLUGINS`` variable),
    comma-separated entries ``module`` or ``module:function``; a function is called with no
    arguments. A plugin registers solvers (:func:`streamssvm.solvers.register`) or losses
    (:func:`streamssvm.losses.registry.register_loss`). A module that cannot be imported
    is a ValueError naming it and the variable."""
    spec = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
    for entry in filter(None, (item.strip() for item in spec.split(","))):
        name, _, function = entry.partition(":")
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(f"{PLUGINS_ENV}: cannot import the plugin {name!r}: {exc}") from exc
        if function:
            hook = getattr(module, function, None)
            if not callable(hook):
                raise ValueError(f"{PLUGINS_ENV}: the plugin {name!r} has no function "
                                 f"{function!r}")
            hook()
