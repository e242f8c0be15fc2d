"""Outputs that appear whole or not at all: write to a temporary name, then rename."""

import contextlib
import errno
import os


# errors that mean the output did not fit, and how to say so
NO_ROOM = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded",
           errno.EFBIG: "file too large (the file system's or the process's size limit)"}
# errors that mean an input path cannot be opened (missing, a folder, unreadable): raised as
# open() words them ("PATH: No such file or directory"), not as a file of the wrong kind
OPEN_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def check_output(path, overwrite=False, inputs=()):
    """Refuse an output ``path`` before any work: an existing one (unless ``overwrite``), one
    of the ``inputs`` (paths read by the same work, whatever ``overwrite``), a directory, or
    one in a directory that does not exist (an OSError naming ``path``). Returns the
    directory that will hold it."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file to write", path)
    for source in inputs:
        if os.path.exists(path) and os.path.exists(source) and os.path.samefile(path, source):
            raise ValueError(f"{path}: the output is the input {os.fspath(source)}: give "
                             f"the output another name")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(errno.EEXIST, "output exists (pass overwrite=True / --overwrite "
                                            "to replace it)", path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"no directory {directory} to write it in", path)
    return directory


def _temporary_name(directory, name):
    """A hidden name beside ``name`` for this process, cut to the file system's limit on
    a name's length (an output's name may be at it)."""
    suffix = f".tmp-{os.getpid()}"
    try:
        longest = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    return f".{name[:max(1, longest - len(suffix) - 1)]}{suffix}"


@contextlib.contextmanager
def atomic_output(path, overwrite=False):
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    On any exception (including KeyboardInterrupt) the temporary file is removed and
    ``path`` is untouched. ``path`` is checked by :func:`check_output` first; errors name
    ``path``, never the temporary file. The data is fsync'ed before the rename so that a
    crash cannot leave a renamed but truncated file.
    """
    path = os.fspath(path)
    directory = check_output(path, overwrite)
    tmp = os.path.join(directory, _temporary_name(directory, os.path.basename(path)))
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):  # never made (or never makeable): exc says why
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in NO_ROOM:
            raise OSError(exc.errno, f"{NO_ROOM[exc.errno]} while writing; nothing was "
                                     f"written", path) from exc
        if isinstance(exc, OSError) and tmp in (exc.filename, exc.filename2):
            raise OSError(exc.errno, exc.strerror, path) from exc  # of its type, by errno
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
