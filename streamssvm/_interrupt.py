"""Ctrl-C while numba compiles, held until the compile ends.

Python raises KeyboardInterrupt in the first Python code run after the signal. While numba
compiles, that is mostly llvmlite's callback at the end of LLVM's code generation, and ctypes
prints an exception raised there and drops it ("Exception ignored on calling ctypes callback
function"): the run goes on, or numba fails on the code the callback did not keep ("no
compiled object yet"). The command line holds a Ctrl-C until the compile ends, and so do the
API's calls that can compile (``@interrupts_after_compiling()``: training, converting,
predicting, scoring, ``InMemorySource``), when called from the main thread of a script.
"""

import contextlib
import signal
import threading

from numba.core import event


class _HeldInterrupt(event.Listener):
    """Numba's compiler lock (taken around loading, compiling and caching a function) held
    by the main thread while callers are inside :func:`interrupts_after_compiling`
    (``active``): from its first hold to its last release SIGINT's handler holds a Ctrl-C,
    raised as KeyboardInterrupt once the lock is released. Registered once; outside a
    compile, and in other code's compiles, SIGINT's handler is left as it is."""

    def __init__(self):
        self.active = 0
        self.depth = 0
        self.held = False

    def on_start(self, event):
        if self.active and threading.current_thread() is threading.main_thread():
            if not self.depth:
                signal.signal(signal.SIGINT, self.interrupt)
            self.depth += 1

    def on_end(self, event):
        if self.depth and threading.current_thread() is threading.main_thread():
            self.depth -= 1
            if not self.depth:  # the lock is released: no compile is left
                signal.signal(signal.SIGINT, signal.default_int_handler)
                if self.held:
                    self.held = False
                    raise KeyboardInterrupt

    def interrupt(self, signum, frame):
        """The SIGINT handler while the lock is held: the Ctrl-C waits for its release."""
        self.held = True


_listener = None


@contextlib.contextmanager
def interrupts_after_compiling():
    """Inside, a Ctrl-C while numba compiles raises KeyboardInterrupt when the compile ends.
    Only in the main thread, where Ctrl-C raises KeyboardInterrupt: else (a handler of the
    caller's) nothing changes. Also a decorator of a function. A call costs a counter's
    increment and decrement: the listener is registered once, and SIGINT's handler is
    swapped only around a compile, not at every call."""
    global _listener
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    if _listener is None:
        _listener = _HeldInterrupt()
        event.register("numba:compiler_lock", _listener)
    _listener.active += 1
    try:
        yield
    finally:
        _listener.active -= 1
