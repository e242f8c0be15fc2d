"""Progress bars: tqdm's when one is asked for, else nothing at all.

A tqdm bar takes tqdm's lock even when disabled, and that lock is a semaphore a forked
child shares with its parent: a child killed while holding it (a worker converting a file,
killed) would block the parent's next bar for good. So no bar is made unless asked for.
Their figures go in with ``set_postfix(..., refresh=False)``: drawn at the bar's pace.
"""

import contextlib
import contextvars
import sys
import weakref


class _NoBar:
    """What the code calls on a bar, doing nothing."""

    def update(self, n=1):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass


# seconds between two lines of a bar written to a file, not a terminal (a batch job's log):
# tqdm's own interval, meant for a terminal that redraws one line, writes a line for
# nearly every quick iteration into a file
LOG_INTERVAL = 10.0


def _options(options):
    """tqdm's ``options``, with a bar into a log drawn every ``LOG_INTERVAL`` seconds."""
    stream = options.get("file") or sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        options = dict(options, mininterval=options.get("mininterval", LOG_INTERVAL))
    return options


# the bars made under closing_bars() in this thread (None outside it)
_made = contextvars.ContextVar("streamssvm_bars", default=None)


@contextlib.contextmanager
def closing_bars():
    """Close the bars made inside on any exit: a run interrupted or failed leaves none open
    (an open bar's next output would go on its line, and the bar be drawn again when
    collected).
    Every solver is decorated with it (``@closing_bars()``): it closes its bars however it
    ends, called directly or by ``train_stream``."""
    token = _made.set(weakref.WeakSet())
    try:
        yield
    finally:
        bars = list(_made.get())
        _made.reset(token)
        for bar in bars:
            bar.close()  # a no-op on a closed bar


def _made_bar(bar):
    made = _made.get()
    if made is not None:
        made.add(bar)
    return bar


def progress_bar(enabled, **options):
    """A ``tqdm.auto.tqdm(**options)`` bar if ``enabled``, else one that does nothing."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return _made_bar(tqdm(**_options(options)))


def progress_iter(iterable, enabled, **options):
    """``iterable`` under a tqdm bar if ``enabled``, else as it is."""
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return _made_bar(tqdm(iterable, **_options(options)))


# where solvers write one line per iteration (None: nowhere), set by iteration_log()
_iteration_stream = contextvars.ContextVar("streamssvm_iteration_log", default=None)
_LOGGED = (("cg_steps", "CG", "d"), ("delta", "radius", ".3e"), ("step", "step", ".3e"),
           ("gap", "gap", ".3e"))


@contextlib.contextmanager
def iteration_log(stream):
    """Within, :func:`log_iteration` writes its lines to ``stream`` (None: nowhere)."""
    token = _iteration_stream.set(stream)
    try:
        yield
    finally:
        _iteration_stream.reset(token)


def log_iteration(label, entry):
    """One line of a solver's history ``entry`` (a dict, as ``Model.history`` holds), as
    LIBLINEAR's solvers print theirs: iteration, f, ||grad||, CG steps, the trust radius or
    the step, passes and seconds; on the stream of :func:`iteration_log`, if any."""
    stream = _iteration_stream.get()
    if stream is None:
        return
    parts = [f"{label}: iter {entry['iteration']:4d}"]
    if "f" in entry:
        parts.append(f"f {entry['f']:.10e} |g| {entry['grad_norm']:.3e}")
    parts += [f"{name} {entry[key]:{form}}" for key, name, form in _LOGGED
              if entry.get(key) is not None]
    if not entry.get("accepted", True):
        parts.append("rejected")
    parts.append(f"passes {entry['passes']} time {entry['seconds']:.3f} s")
    print(" ".join(parts), file=stream, flush=True)
