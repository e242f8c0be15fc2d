"""Outputs that appear whole or not at all, and outputs that are not files.

A regular file (or a new path) is written under a temporary name in its folder, fsync'ed,
and published by a rename (then the folder is fsync'ed): a reader sees the old file or
the new one, never a part. Without ``overwrite`` it is published by a hard link instead
(``renameat2(RENAME_NOREPLACE)`` where the file system has no links), which fails if the
name appeared while the work ran: the file another writer put there is kept. A symbolic
link keeps pointing where it did: its target is what is replaced.

Anything else is written in place, never replaced nor renamed over: ``-`` is the standard
output; ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` and ``/proc/self/fd/N`` are the
open descriptor, written at its offset (as the shell's redirection opened it); an
existing FIFO or character device is opened by its name. A store (HDF5 seeks in its
file) must be a regular file: ``regular=True`` refuses the others.

Temporary names are ``.NAME.tmp-PID-HOST`` (``.NAME.probe-PID-HOST`` for the empty file that
checks a folder can be written: never the name of the output's own temporary file, so that
the one is not taken for the other). Those of a process that no longer runs on this host
(killed before it could remove its file) are removed by the next write into the same
folder, or by :func:`clean_stale` (``streamssvm verify --clean``).
"""

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import re
import socket
import stat
import sys


# errors that mean the output did not fit, and how to say so
NO_ROOM = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded",
           errno.EFBIG: "file too large (the file system's or the process's size limit)"}
# errors that mean an input path cannot be opened (missing, a folder, unreadable): raised as
# open() words them ("PATH: No such file or directory"), not as a file of the wrong kind
OPEN_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
STDOUT = "-"
_DESCRIPTOR = re.compile(r"/(?:dev|proc/self)/fd/(\d+)")
_NAMED_DESCRIPTORS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_HOST = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:32] or "host"
_TEMPORARY = re.compile(
    r"\.(?P<name>.+)\.(?:tmp|probe)-(?P<pid>\d+)(?:-(?P<host>[A-Za-z0-9_.]+))?")
# link() errors of a file system without hard links
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS}
_RENAME_NOREPLACE = 1


def descriptor(path):
    """The file descriptor that ``path`` names (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/self/fd/N``), or None for any other path."""
    path = os.fspath(path)
    if path in _NAMED_DESCRIPTORS:
        return _NAMED_DESCRIPTORS[path]
    match = _DESCRIPTOR.fullmatch(path)
    return int(match.group(1)) if match else None


def is_stdout(path):
    """Whether writing ``path`` writes the standard output (``-``, ``/dev/stdout``,
    ``/dev/fd/1``): what else a command prints goes to the standard error then."""
    return os.fspath(path) == STDOUT or descriptor(path) == 1


def _special(path):
    """Whether ``path`` exists and is neither a regular file nor a folder (a FIFO, a
    device, a socket): written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _same_file(info, source):
    """Whether ``info`` (an os.stat_result) is the file at ``source``."""
    if os.fspath(source) == STDOUT:
        return False
    try:
        other = os.stat(source)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == (other.st_dev, other.st_ino)


def _refuse_inputs(path, info, inputs):
    for source in inputs:
        if info is not None and _same_file(info, source):
            raise ValueError(f"{path}: the output is the input {os.fspath(source)}: give "
                             f"the output another name")


def check_output(path, overwrite=False, inputs=(), regular=False):
    """Refuse an output ``path`` before any work, with an OSError or ValueError naming it.

    Refused: one of the ``inputs`` (paths read by the same work, whatever ``overwrite``);
    for a regular file, an existing one (unless ``overwrite``), a directory, one in a
    directory that does not exist or cannot be written (a probe file is made and
    removed); a descriptor that is not open for writing; a FIFO or device that cannot be
    written; and with ``regular``, anything but a regular file. Returns the directory
    that will hold a regular file (None for the others)."""
    path = os.fspath(path)
    fd = None if path == STDOUT else descriptor(path)
    if path == STDOUT or fd is not None or _special(path):
        if regular:
            raise ValueError(f"{path}: not a regular file: this output is written by seeking "
                             f"in it (an HDF5 store, a checkpoint): give a file name")
        if path == STDOUT:
            return None
        if fd is not None:
            try:
                info, flags = os.fstat(fd), fcntl.fcntl(fd, fcntl.F_GETFL)
            except OSError:
                raise OSError(errno.EBADF, "no such open file descriptor", path) from None
            if flags & os.O_ACCMODE == os.O_RDONLY:
                raise OSError(errno.EBADF, "the descriptor is open for reading only", path)
        else:
            info = os.stat(path)
            if not os.access(path, os.W_OK):
                raise PermissionError(errno.EACCES, "cannot be written", path)
        _refuse_inputs(path, info, inputs)
        return None
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file to write", path)
    exists = os.path.exists(path)
    _refuse_inputs(path, os.stat(path) if exists else None, inputs)
    if exists and not overwrite:
        raise FileExistsError(errno.EEXIST, "output exists (pass overwrite=True / --overwrite "
                                            "to replace it)", path)
    directory = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"no directory {directory} to write it in", path)
    _probe(directory, path)
    return directory


def _probe(directory, path):
    """Make and remove this process's probe file in ``directory``: an OSError naming
    ``path`` if the folder cannot be written (read-only file system, permissions)."""
    probe = os.path.join(directory,
                         temporary_name(directory, os.path.basename(path), kind="probe"))
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:  # another thread of this process probes it: the folder takes files
        return
    except OSError as exc:
        reason = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
                  errno.EPERM: "permission denied"}.get(exc.errno, exc.strerror)
        raise type(exc)(exc.errno, f"{reason}: cannot write in {directory}", path) from None
    os.unlink(probe)


def temporary_name(directory, name, kind="tmp"):
    """This process's hidden temporary name for ``name`` (``kind`` "tmp" for the output's
    temporary file, "probe" for :func:`_probe`'s), cut to the file system's limit on a
    name's length (an output's name may be at it)."""
    suffix = f".{kind}-{os.getpid()}-{_HOST}"
    try:
        longest = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    return f".{name[:max(1, longest - len(suffix) - 1)]}{suffix}"


def _alive(pid):
    if pid <= 0:
        return True  # not a process of ours: never removed
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def clean_stale(directory):
    """Remove the temporary files in ``directory`` that processes killed on this host left
    (their name is :func:`temporary_name`'s, their process is gone). Returns the paths
    removed; a file that cannot be removed is left as it is."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMPORARY.fullmatch(entry.name)
        if (match is None or match.group("host") not in (None, _HOST)
                or _alive(int(match.group("pid")))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(entry.path)
    return removed


def _rename_noreplace(tmp, path):
    """Rename ``tmp`` to ``path`` unless ``path`` exists (FileExistsError): Linux's
    renameat2, else a check before the rename (the one case with a window for a race)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        at_fdcwd = -100
        if renameat2(at_fdcwd, os.fsencode(tmp), at_fdcwd, os.fsencode(path),
                     _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(code, os.strerror(code), path)
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
    os.rename(tmp, path)


def _publish(tmp, path, overwrite):
    """Move the complete ``tmp`` to ``path``: replacing it if ``overwrite``, else only if
    no file has appeared there."""
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            _rename_noreplace(tmp, path)
        else:
            os.unlink(tmp)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "output appeared while this ran (another "
                                            "process wrote it): kept it, and this output was "
                                            "not written", path) from None


@contextlib.contextmanager
def atomic_output(path, overwrite=False):
    """Yield a temporary path beside the regular file ``path``; publish it on success.

    On any exception (including KeyboardInterrupt) the temporary file is removed and
    ``path`` is untouched. ``path`` is checked by :func:`check_output` first (a path that
    is not a regular file is refused); errors name ``path``, never the temporary file. The
    data is fsync'ed before it is published, so that a crash cannot leave a published but
    truncated file. Stale temporary files in the folder are removed first
    (:func:`clean_stale`).
    """
    path = os.fspath(path)
    directory = check_output(path, overwrite, regular=True)
    final = os.path.realpath(path)
    clean_stale(directory)
    tmp = os.path.join(directory, temporary_name(directory, os.path.basename(final)))
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        _publish(tmp, final, overwrite)
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


@contextlib.contextmanager
def open_output(path, mode="wb", overwrite=False):
    """Yield a file object that writes ``path`` as the module docstring says: the standard
    output for ``-``, the descriptor for ``/dev/fd/N`` and its kin, a FIFO or device in
    place, and a regular file whole or not at all (:func:`atomic_output`). ``mode`` is
    ``"wb"`` or ``"w"`` (UTF-8 text)."""
    path = os.fspath(path)
    encoding = None if "b" in mode else "utf-8"
    check_output(path, overwrite)
    fd = descriptor(path)
    if path == STDOUT:
        stream = sys.stdout.buffer if "b" in mode else sys.stdout
        yield stream
        stream.flush()
    elif fd is not None:
        for stream in (sys.stdout, sys.stderr):  # what was printed before comes first
            if stream is not None and not stream.closed:
                stream.flush()
        with os.fdopen(os.dup(fd), mode, encoding=encoding) as fh:
            yield fh
    elif _special(path):
        with open(path, mode, encoding=encoding) as fh:
            yield fh
    else:
        with atomic_output(path, overwrite) as tmp, open(tmp, mode, encoding=encoding) as fh:
            yield fh
