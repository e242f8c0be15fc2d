"""Progress bars: tqdm's when one is asked for, else nothing at all.

A tqdm bar takes tqdm's lock even when disabled, and that lock is a semaphore a forked
child shares with its parent: a child killed while holding it (a worker converting a file,
killed) would block the parent's next bar for good. So no bar is made unless asked for.
Their figures go in with ``set_postfix(..., refresh=False)``: drawn at the bar's pace.
"""

import sys


class _NoBar:
    """What the code calls on a bar, doing nothing."""

    def update(self, n=1):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass


# seconds between two lines of a bar written to a file, not a terminal (a batch job's log):
# at tqdm's 0.1 s, 300 quick iterations wrote 312 lines
LOG_INTERVAL = 10.0


def _options(options):
    """tqdm's ``options``, with a bar into a log drawn every ``LOG_INTERVAL`` seconds."""
    stream = options.get("file") or sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        options = dict(options, mininterval=options.get("mininterval", LOG_INTERVAL))
    return options


def progress_bar(enabled, **options):
    """A ``tqdm.auto.tqdm(**options)`` bar if ``enabled``, else one that does nothing."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(**_options(options))


def progress_iter(iterable, enabled, **options):
    """``iterable`` under a tqdm bar if ``enabled``, else as it is."""
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, **_options(options))
