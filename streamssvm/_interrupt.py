"""Ctrl-C while numba compiles, held until the compile ends.

Python raises KeyboardInterrupt in the first Python code run after the signal. While numba
compiles, that is mostly llvmlite's callback at the end of LLVM's code generation, and ctypes
prints an exception raised there and drops it ("Exception ignored on calling ctypes callback
function"): the run went on, or numba failed on the code the callback did not keep ("no
compiled object yet"). The command line holds a Ctrl-C until the compile ends, and so do the
API's calls that can compile (``@interrupts_after_compiling()``: training, converting,
predicting, scoring, ``InMemorySource``), when called from the main thread of a script.
"""

import contextlib
import signal
import threading

from numba.core import event


class _HeldInterrupt(event.Listener):
    """Counts the main thread's holds of numba's compiler lock (taken around loading,
    compiling and caching a function) and raises a Ctrl-C held meanwhile when the last ends."""

    def __init__(self):
        self.depth = 0
        self.held = False

    def on_start(self, event):
        if threading.current_thread() is threading.main_thread():
            self.depth += 1

    def on_end(self, event):
        if threading.current_thread() is threading.main_thread():
            self.depth -= 1
            if self.held and not self.depth:  # the lock is released: no compile is left
                self.held = False
                raise KeyboardInterrupt

    def interrupt(self, signum, frame):
        """The SIGINT handler: KeyboardInterrupt now, or when the compile ends."""
        if not self.depth:
            raise KeyboardInterrupt
        self.held = True


@contextlib.contextmanager
def interrupts_after_compiling():
    """Inside, a Ctrl-C while numba compiles raises KeyboardInterrupt when the compile ends.
    Only in the main thread, where Ctrl-C raises KeyboardInterrupt: else (a handler of the
    caller's, or nested inside another) nothing changes. Also a decorator of a function."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    listener = _HeldInterrupt()
    with event.install_listener("numba:compiler_lock", listener):
        signal.signal(signal.SIGINT, listener.interrupt)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
