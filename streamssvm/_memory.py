"""How much memory this process may still use: the machine's and its cgroup's limit, with what
its allocator holds free handed back when that is a noticeable part of it."""

import contextlib
import ctypes
import mmap
import os
import sys
import tempfile
import threading

import numpy as np

from ._warn import warn

# arrays from this size on are made by :func:`prefaulted` with their pages
PREFAULT_BYTES = 4 << 20


_open = {}  # path -> descriptor (None: unreadable), of the process _open_pid (see _read)
_open_pid = None


def _read(path):
    """The text of a file of /proc or of the cgroup file system, or None if unreadable:
    read from offset 0 of a descriptor kept open, for which the kernel makes the text
    anew each time (an open per reading took most of the time of a training's budgets on
    small data). A forked child opens its own (``/proc/self`` named its parent)."""
    global _open_pid
    if _open_pid != os.getpid():
        for fd in _open.values():
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        _open.clear()
        _open_pid = os.getpid()
    fd = _open.get(path, -1)
    if fd == -1:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            fd = None
        _open[path] = fd
    if fd is None:
        return None
    try:
        chunks = [os.pread(fd, 1 << 16, 0)]
        while len(chunks[-1]) == 1 << 16:  # longer than one read
            chunks.append(os.pread(fd, 1 << 16, (1 << 16) * len(chunks)))
    except OSError:
        return None
    return b"".join(chunks).decode("ascii", "replace")


def _read_int(path):
    text = _read(path)
    text = text.strip() if text is not None else ""
    return int(text) if text.isdigit() else None


def _reclaimable(stat_path, v2):
    """Bytes of the cgroup's page cache the kernel can drop at once (neither mapped nor
    dirty), from its memory.stat; 0 if unreadable. The cgroup's usage counts them, so a
    process that has streamed a file would otherwise see no headroom at all."""
    names = (("file", "file_mapped", "file_dirty", "file_writeback") if v2 else
             ("total_cache", "total_mapped_file", "total_dirty", "total_writeback"))
    text = _read(stat_path)
    if text is None:
        return 0
    try:
        stat = dict(line.split(maxsplit=1) for line in text.splitlines())
        cache, mapped, dirty, writeback = (int(stat.get(n, 0)) for n in names)
    except ValueError:
        return 0
    return max(cache - mapped - dirty - writeback, 0)


def _cgroup_headroom():
    """Limit minus usage of this process's memory cgroup (v2 or v1), its droppable page
    cache not counted as used, or None."""
    text = _read("/proc/self/cgroup")
    if text is None:
        return None
    lines = text.splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2
            base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
            limit, usage = _read_int(base + "/memory.max"), _read_int(base + "/memory.current")
            v2 = True
        elif "memory" in controllers.split(","):
            base = os.path.join("/sys/fs/cgroup/memory", path.lstrip("/"))
            limit = _read_int(base + "/memory.limit_in_bytes")
            usage = _read_int(base + "/memory.usage_in_bytes")
            v2 = False
        else:
            continue
        if limit is not None and usage is not None and limit < 1 << 60:
            return max(limit - usage + _reclaimable(base + "/memory.stat", v2), 0)
    return None


_SIZE_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _SIZE_FIELDS]


class _MallInfo(ctypes.Structure):  # glibc < 2.33: int fields, read unsigned (< 4 GB)
    _fields_ = [(name, ctypes.c_uint) for name in _SIZE_FIELDS]


def _glibc_allocator():
    """(malloc_trim, mallinfo) of glibc, or None (another C library, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
        if hasattr(libc, "mallinfo2"):
            info = libc.mallinfo2
            info.restype = _MallInfo2
        else:
            info = libc.mallinfo
            info.restype = _MallInfo
    except (OSError, AttributeError):
        return None
    return trim, info


_GLIBC = _glibc_allocator()


def _memory_free():
    """MemAvailable, or the cgroup's headroom if smaller (1 GB if neither is known)."""
    available = None
    text = _read("/proc/meminfo") or ""
    at = text.find("\nMemAvailable:")
    if at >= 0:
        available = int(text[at + 14:text.index("kB", at)]) * 1024
    headroom = _cgroup_headroom()
    candidates = [v for v in (available, headroom) if v is not None]
    return min(candidates) if candidates else 1 << 30


def available_memory_bytes():
    """Bytes this process can still allocate without swapping or hitting its cgroup cap.

    Memory that the process freed but its allocator kept counts as free: glibc keeps what
    is freed below its mmap threshold (which rises to 32 MB: a store's blocks, shuffle
    windows, d-vectors) in the arena of the thread that allocated it, and the system
    counts it as the process's. When what glibc holds free exceeds a sixteenth of the
    free memory (then the budgets made from it, a quarter or an eighth, would shrink
    noticeably), it is handed back first (malloc_trim): solvers run in turn in one process
    then each see the memory the previous one freed. Below that share it is kept, so that
    a small run does not fault in again pages that glibc would have reused."""
    free = _memory_free()
    if _GLIBC is not None:
        trim, info = _GLIBC
        if info().fordblks > free // 16:
            trim(0)
            free = _memory_free()
    return free // getattr(_share, "parts", 1)


_share = threading.local()  # see memory_share


@contextlib.contextmanager
def memory_share(parts):
    """Inside, in this thread, :func:`available_memory_bytes` gives a ``parts``-th of the
    free memory: the share of one of ``parts`` runs alive at once, each taking its budgets
    from the free memory (:mod:`streamssvm.data.lockstep`)."""
    outer = getattr(_share, "parts", 1)
    _share.parts = outer * max(int(parts), 1)
    try:
        yield
    finally:
        _share.parts = outer


_memory_folder_warned = False  # per_sample_array's warning, given once


def in_memory_filesystem(path):
    """Whether ``path`` lies on a filesystem held in memory (tmpfs, ramfs), by the mount
    table (False where there is none to read)."""
    try:
        with open("/proc/self/mounts") as fh:
            mounts = [line.split()[1:3] for line in fh]
    except OSError:
        return False
    path = os.path.realpath(path)
    kinds = {point.replace("\\040", " "): kind for point, kind in mounts}  # the last mount wins
    while True:
        if path in kinds:
            return kinds[path] in ("tmpfs", "ramfs")
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def per_sample_array(n, memory_limit=None):
    """A zeroed float64 array of shape (n,): in memory, or a file-backed ``np.memmap`` in a
    deleted temporary file when 8 n bytes exceed ``memory_limit`` (default: an eighth of
    the memory the process may still use). Vectors of the rows: with many rows and few
    nonzeros each they are a good part of the store (8 bytes a row against 8 a nonzero,
    a float32 value and its int32 index, plus 5 a row, its row pointer and int8 label: with
    3 nonzeros a row, 8 against 29)."""
    if memory_limit is not None and not memory_limit >= 0:
        raise ValueError(f"memory_limit must be >= 0 bytes or None, got {memory_limit}")
    limit = available_memory_bytes() // 8 if memory_limit is None else memory_limit
    if 8 * n <= limit:
        return np.zeros(n)
    global _memory_folder_warned
    folder = tempfile.gettempdir()
    if not _memory_folder_warned and in_memory_filesystem(folder):
        _memory_folder_warned = True
        warn(f"vectors of the rows ({8 * n / 2 ** 20:.0f} MiB each) go to files in {folder}, "
             f"which is held in memory (tmpfs): they take the memory they were to spare; "
             f"set TMPDIR to a folder on disk", RuntimeWarning)
    with tempfile.NamedTemporaryFile(prefix="streamssvm-state-", suffix=".f64") as f:
        f.truncate(8 * n)  # a sparse file of zeros
        array = np.memmap(f.name, dtype=np.float64, mode="r+", shape=(n,))
    return array  # the mapping outlives the unlinked file


def prefaulted(n, dtype):
    """An uninitialised array of ``n`` items of ``dtype`` whose pages the kernel makes in one
    call (an anonymous map with Linux's MAP_POPULATE), for large arrays written whole at
    once. numpy's arrays of 4 MiB and more ask for huge pages (madvise), and where the
    machine's memory is fragmented the kernel compacts it at their first touch, a cost that
    varies from run to run; a populated map of small pages costs the same every time.
    Elsewhere, or below ``PREFAULT_BYTES``, numpy's array."""
    dtype = np.dtype(dtype)
    populate = getattr(mmap, "MAP_POPULATE", None)
    if populate is None or n * dtype.itemsize < PREFAULT_BYTES:
        return np.empty(n, dtype)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate
    try:
        pages = mmap.mmap(-1, n * dtype.itemsize, flags=flags)
    except OSError as exc:  # as numpy's arrays say it
        raise MemoryError(f"cannot allocate {n * dtype.itemsize} bytes ({exc})") from exc
    return np.frombuffer(pages, dtype)
