"""Progress bars: tqdm's when one is asked for, else nothing at all.

A tqdm bar takes tqdm's lock even when disabled, and that lock is a semaphore a forked
child shares with its parent: a child killed while holding it (a worker converting a file,
killed) would block the parent's next bar for good. So no bar is made unless asked for.
"""


class _NoBar:
    """What the code calls on a bar, doing nothing."""

    def update(self, n=1):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass


def progress_bar(enabled, **options):
    """A ``tqdm.auto.tqdm(**options)`` bar if ``enabled``, else one that does nothing."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(**options)


def progress_iter(iterable, enabled, **options):
    """``iterable`` under a tqdm bar if ``enabled``, else as it is."""
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, **options)
