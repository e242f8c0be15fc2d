"""Outputs that appear whole or not at all: write to a temporary name, then rename."""

import contextlib
import errno
import os


# errors that mean the output did not fit, and how to say so
NO_ROOM = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded",
           errno.EFBIG: "file too large (the file system's or the process's size limit)"}


@contextlib.contextmanager
def atomic_output(path, overwrite=False):
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    On any exception (including KeyboardInterrupt) the temporary file is removed and
    ``path`` is untouched. An existing ``path`` is refused unless ``overwrite``.
    The data is fsync'ed before the rename so that a crash cannot leave a renamed but
    truncated file.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(errno.EEXIST, "output exists (pass overwrite to replace it)", path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in NO_ROOM:
            raise OSError(exc.errno, f"{NO_ROOM[exc.errno]} while writing; nothing was "
                                     f"written", path) from exc
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
