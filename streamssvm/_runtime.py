"""What the process needs before the first kernel runs, done when training starts.

:func:`prepare` is called by the entry points that run kernels (``train_stream``, the
objectives, ``OnlineTrainer``, the command line), not at import, so that importing the
package changes neither the environment nor the files of another program in the same
process. It runs once per process.

- ``GOMP_SPINCOUNT``: numba's OpenMP workers spin between parallel regions, 300,000 times
  by default; on a machine with more runnable threads than cores the spinning threads take
  the cores of the ones doing work. Not spinning at all (``OMP_WAIT_POLICY=passive``) wakes
  them from sleep at every kernel call. A short spin keeps both costs small. Set only if the
  user has not, and only before OpenMP starts (the first parallel kernel).
- numba's on-disk cache (:mod:`._jit_cache`): a kernel that calls a loss from another module
  keeps the compiled loss it was cached with; the package's cache files are removed when any
  of its source files changed.
"""

import os
import threading

from ._jit_cache import clear_stale_cache

SPIN_COUNT = "1000"
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
