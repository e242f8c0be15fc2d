"""The HDF5 store of CSR row blocks (format in docs/FORMAT.md). The only module using h5py."""

import ctypes
import datetime
import io
import json
import os
import threading
import time
import weakref

import h5py
import h5py.h5
import numpy as np

from .._atomic import NO_ROOM, OPEN_ERRORS, atomic_output
from ..errors import FileFormatError
from ..kernels import codec
from .checksum import ALGORITHM, attributes_checksum, checksum, digest
from .source import Block, BlockSource

FORMAT_NAME = "streamssvm.csr-blocks"
FORMAT_VERSION = 3  # the newest read; plain binary stores are still written as version 1
MULTICLASS_VERSION = 2  # more than two classes: class-index labels, ``class_counts``
LEAN_VERSION = 3  # blocks may hold ``gaps`` and ``row_data`` (any number of classes)
BLOSC = {"blosc-lz4": "lz4", "blosc-zstd": "zstd"}  # compression: Blosc's codec (hdf5plugin)
COMPRESSIONS = (None, "gzip", "lzf", *BLOSC)
LEVELLED = ("gzip", *BLOSC)  # the compressions that take a level
ENCODINGS = ("auto", "plain", "lean")
_PREFETCH = 2  # blocks read ahead of the one being used
BLOCK_DATASETS = ("indptr", "indices", "data", "y")  # their order in a row of /checksums
LEAN_DATASETS = {"gaps": "indices", "row_data": "data"}  # each stands for the plain one
INT32_MAX = np.iinfo(np.int32).max  # a block's row pointers and indices are int32
_free_lists_off = False
# What Store._open read and checked, per file opened in this process: (st_dev, st_ino) ->
# (the file's size and times, the fields below, whether the blocks' labels were counted).
# A file is known by its times only once they have settled: the kernel stamps them at its
# clock's tick, so a change within the tick of the last one could leave them as they were.
_OPENED, _OPENED_MAX, _SETTLED_NS = {}, 64, 1_000_000_000
_OPENED_FIELDS = ("_attrs", "_version", "checksums", "n_samples", "n_features", "nnz",
                  "classes", "value_dtype", "_options", "row_offsets", "nnz_offsets",
                  "_block_checksums", "_class_counts", "_label_dtype", "_recorded",
                  "_layouts", "_unfound")


def _blosc(path, compression):
    """hdf5plugin, which gives HDF5 the Blosc filter of ``compression`` (that of the store at
    ``path``); StoreError if it is missing. HDF5's free lists are turned off at the first
    call: they keep the memory of every block decoded through this filter and never hand
    it back, so a pass's memory would grow with the store, past any cap for a store larger
    than the memory."""
    global _free_lists_off
    try:
        import hdf5plugin
    except ImportError:
        raise StoreError(f"{path}: {compression} compression needs the hdf5plugin package "
                         f"(pip install 'streamssvm[blosc]')") from None
    if not _free_lists_off:
        _free_lists_off = True
        try:  # h5py's module resolves the HDF5 library it was built with (not on Windows)
            ctypes.CDLL(h5py.h5.__file__).H5set_free_list_limits(0, 0, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the lists keep their memory: a long pass needs more of it
    return hdf5plugin


def _inline(text):
    """A string attribute of fixed length (UTF-8), kept in the object's header: HDF5 keeps
    variable-length strings in a global heap, where one flipped bit made libhdf5 loop
    forever on reading the attribute (stores written before read as they are)."""
    return np.bytes_(text.encode("utf-8"))


def _decoded(value):
    """An attribute as written: a fixed-length string back to ``str``."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


class StoreError(FileFormatError):
    """A store that cannot be read: wrong format, corrupt block, inconsistent metadata."""


# bytes written to a store between two starts of the disk's write (see _Sink)
WRITEBACK_BYTES = 32 << 20


def _block_name(k):
    return f"blocks/{k:08d}"


class _Sink(io.RawIOBase):
    """The temporary file as HDF5 writes it, through h5py's file-object driver.

    HDF5 does not survive a failed write: the file can then neither be flushed nor closed,
    and closing it crashes the process (a limitation of h5py's file-object driver). So once the
    disk is full (or the file size limit reached), this keeps the error in ``error`` and
    pretends that the following writes succeed; the writer raises ``error`` after the
    current step, HDF5 closes the file normally, and the file is deleted.

    Every :data:`WRITEBACK_BYTES` written, a thread starts the disk's write of what the
    file holds so far (fdatasync), unless the last one is still at it: the fsync before
    the store is published then has little left to wait for, and the written pages can be
    dropped from memory (a memory cap counts them) while the conversion goes on. An error
    of that write is kept in ``error`` too (a later fsync on another descriptor would not
    see it).
    """

    def __init__(self, path):
        self._fh = open(path, "w+b", buffering=0)  # a buffer would fail in seek(), later
        self.error = None
        self._unsynced, self._writeback = 0, None

    def readable(self):
        return True

    def writable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = self._fh.readinto(b)
        if self.error is None:
            return n
        with memoryview(b) as view:  # bytes that were never written read as zeros
            view[n:] = bytes(len(view) - n)
            return len(view)

    def write(self, b):
        with memoryview(b) as view, view.cast("B") as data:
            done = 0
            while self.error is None and done < len(data):
                try:
                    done += self._fh.write(data[done:])  # short when the room runs out
                except OSError as exc:
                    if exc.errno not in NO_ROOM:
                        raise
                    self.error = exc
            self._unsynced += len(data)
            if self._unsynced >= WRITEBACK_BYTES and (self._writeback is None
                                                      or not self._writeback.is_alive()):
                self._unsynced = 0
                self._writeback = threading.Thread(target=self._sync, daemon=True,
                                                   name="streamssvm-writeback")
                self._writeback.start()
            return len(data)

    def _sync(self):
        try:
            os.fdatasync(self._fh.fileno())
        except OSError as exc:
            if self.error is None:
                self.error = exc

    def seek(self, offset, whence=io.SEEK_SET):
        return self._fh.seek(offset, whence)

    def tell(self):
        return self._fh.tell()

    def truncate(self, size=None):
        if self.error is None:
            try:
                return self._fh.truncate(size)
            except OSError as exc:
                if exc.errno not in NO_ROOM:
                    raise
                self.error = exc
        return size

    def flush(self):
        if self.error is None:
            try:
                self._fh.flush()
            except OSError as exc:
                if exc.errno not in NO_ROOM:
                    raise
                self.error = exc

    def settle(self):
        """Wait for the disk's write started last, if any (its error is then in ``error``)."""
        if self._writeback is not None:
            self._writeback.join()

    def close(self):
        self.settle()
        super().close()  # flushes first
        self._fh.close()

    def raise_error(self):
        """Raise the write error met so far, if any."""
        if self.error is not None:
            raise self.error


class StoreWriter:
    """Write a store block by block; the file appears at ``path`` only on :meth:`close`.

    Use as a context manager: leaving the ``with`` on an exception, or without
    :meth:`close`, removes the temporary file and leaves ``path`` as it was (the latter
    raises StoreError).

    Parameters
    ----------
    path : str or path-like
    value_dtype : {"float32", "float64"}
    compression : {None, "gzip", "lzf", "blosc-lz4", "blosc-zstd"}
        The Blosc ones (with byte shuffle) need hdf5plugin, to write and to read.
    compression_level : int or None
        gzip or Blosc level (1-9; default 4, h5py's, for gzip, and 5 for Blosc).
    fletcher32 : bool
        Also store HDF5's Fletcher-32 checksum with every dataset (for other HDF5 readers;
        off by default: the store's own ``checksums`` cover every dataset already, for
        less CPU time than HDF5's filter).
    encoding : {"auto", "plain", "lean"}
        ``"lean"`` (format version 3) writes each block's column indices as 16-bit gaps
        within rows (``gaps``), and one value per row (``row_data``) in the blocks whose
        rows each hold a single value; lossless, decoded as blocks are read. ``"auto"``
        writes only those blocks lean, the others plain (a store without such blocks is
        a plain one). A lean block reads fewer bytes (16-bit gaps for int32 indices, one
        value for a row's values) and is decoded once read, so it pays where the disk, not
        the CPU, bounds a pass (docs/PERFORMANCE.md has the measurements).
    checksums : bool
        Store our own checksum of every dataset (:mod:`.checksum`), which :class:`Store`
        verifies on every read, in one pass at memory speed (off only to measure their
        cost).
    overwrite : bool
        Replace an existing ``path``.
    multiclass : bool
        Blocks come with class indices (int, 0 ..) instead of -1/+1; :meth:`close` with
        more than two classes writes a multiclass store (version 2), with two a binary one.
    """

    def __init__(self, path, value_dtype="float32", compression=None, compression_level=None,
                 fletcher32=False, encoding="auto", checksums=True, overwrite=False,
                 multiclass=False):
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        self.encoding, self.lean_blocks = encoding, 0
        if compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}, got {compression!r}")
        if compression_level is not None and not (
                compression in LEVELLED and compression_level in range(1, 10)):
            raise ValueError(f"compression_level must be 1..9 with gzip or Blosc compression, "
                             f"got {compression_level!r} with {compression!r}")
        self.path = os.fspath(path)
        if str(value_dtype) not in ("float32", "float64") and value_dtype not in (
                np.float32, np.float64):
            raise ValueError(f"value_dtype must be float32 or float64, got {value_dtype!r}")
        self.value_dtype = np.dtype(value_dtype)
        if compression_level is None and compression in LEVELLED:
            compression_level = 4 if compression == "gzip" else 5  # recorded as used
        self._filters = {}
        if compression in BLOSC:
            plugin = _blosc(self.path, compression)
            self._filters.update(plugin.Blosc(cname=BLOSC[compression], clevel=compression_level,
                                              shuffle=plugin.Blosc.SHUFFLE))
        elif compression is not None:
            self._filters["compression"] = compression
            if compression == "gzip":
                self._filters["compression_opts"] = compression_level
                self._filters["shuffle"] = True
        if fletcher32:
            self._filters["fletcher32"] = True
        self.options = {"value_dtype": self.value_dtype.name, "compression": compression,
                        "compression_level": compression_level, "fletcher32": bool(fletcher32)}
        self._checksums = bool(checksums)
        self._block_checksums = {}  # block -> array of shape (4, 2), rows as BLOCK_DATASETS
        self._atomic = atomic_output(self.path, overwrite=overwrite)
        self._row_offsets = [0]
        self._nnz_offsets = [0]
        self.multiclass = bool(multiclass)
        self._class_counts = np.zeros(0 if multiclass else 2, np.int64)  # binary: -1, +1
        self._max_index = -1

    def __enter__(self):
        tmp = self._atomic.__enter__()
        try:
            self._sink = _Sink(tmp)
            self._file = h5py.File(self._sink, "w", libver="latest")
            self._sink.raise_error()
        except BaseException as exc:  # e.g. no room for the file's first bytes
            self._close_file()
            self._atomic.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        unclosed = exc_type is None and self._file.id.valid  # close() publishes, nothing else
        if unclosed:
            exc_type, exc = StoreError, StoreError(
                f"{self.path}: the writer was left without close(), which writes the "
                f"metadata: nothing was written")
        if exc_type is not None:
            self._close_file()
        suppress = self._atomic.__exit__(exc_type, exc, tb)
        if unclosed:
            raise exc
        return suppress

    def _close_file(self):
        """Close the HDF5 file and the file under it (after an error: whatever is open)."""
        if getattr(self, "_file", None) is not None and self._file.id.valid:
            self._file.close()
        if getattr(self, "_sink", None) is not None:
            self._sink.close()

    @property
    def n_blocks(self):
        return len(self._row_offsets) - 1

    @property
    def class_counts(self):
        """Rows written per class (binary: -1, +1), array of int64."""
        return self._class_counts.copy()

    def _dataset(self, group, name, array):
        filters = self._filters if array.size else {}
        chunks = array.shape if filters else None
        self._note_checksum(group.create_dataset(name, data=array, chunks=chunks, **filters),
                            array)

    def _note_checksum(self, ds, array):
        """Record the checksum of ``array``, the contents of ``ds``: a root dataset keeps
        its own as an attribute, a block's go to the table written as /checksums."""
        if not self._checksums:
            return
        parent, name = ds.name.rsplit("/", 1)
        if not parent:
            ds.attrs["checksum"] = checksum(array)
            return
        k = int(parent.rsplit("/", 1)[1])
        table = self._block_checksums.setdefault(k, np.zeros((len(BLOCK_DATASETS), 2), np.uint64))
        table[_slot(name)] = checksum(array)

    def rewrite(self, k, name, change):
        """Replace dataset ``name`` of block ``k`` by ``change(its values)`` (same type),
        keeping its checksum right. Lean blocks' ``indices`` are decoded, changed and
        encoded again."""
        group = self._file[_block_name(k)]
        if name == "indices" and "gaps" in group:
            indptr = group["indptr"][...]
            indices = np.empty(int(indptr[-1]), np.int32)
            gaps = group["gaps"][...]
            codec.decode(indptr, gaps, codec.far_positions(gaps, len(indices)),
                         np.empty(0, self.value_dtype), INT32_MAX, indices,
                         indices[:0])
            del group["gaps"]
            self._write_gaps(group, indptr, np.asarray(change(indices), np.int32))
        else:
            ds = group[name]
            if ds.shape[0]:
                array = np.asarray(change(ds[...]), ds.dtype)
                ds[...] = array
                self._note_checksum(ds, array)
        self._sink.raise_error()

    def _write_gaps(self, group, indptr, indices):
        gaps = np.empty(int(indptr[-1]) + 3 * codec.far_gaps(indptr, indices), np.uint16)
        codec.encode_gaps(indptr, indices, gaps)
        self._dataset(group, "gaps", gaps)

    def add_block(self, indptr, indices, data, y):
        """Append rows. ``indptr`` starts at 0; ``y`` holds -1/+1, or class indices if
        ``multiclass``.

        The caller has validated the arrays (sorted in-range indices, finite values).
        """
        nnz = int(indptr[-1])
        if nnz > INT32_MAX:  # a block's row pointers are int32: they would wrap
            raise StoreError(f"{self.path}: block {self.n_blocks}: {nnz} nonzeros, beyond "
                             f"the {INT32_MAX} of a block's int32 row pointers (split it)")
        indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        group = self._file.create_group(_block_name(self.n_blocks))
        self._dataset(group, "indptr", indptr)
        indices = np.ascontiguousarray(indices[:nnz], dtype=np.int32)
        values = data[:nnz]
        with np.errstate(over="ignore"):
            data = np.ascontiguousarray(values, dtype=self.value_dtype)
        if not np.all(np.isfinite(data)):  # finite in the input: too large for float32
            k = int(np.argmin(np.isfinite(data)))
            row = self._row_offsets[-1] + int(np.searchsorted(indptr, k, side="right")) - 1
            raise StoreError(f"{self.path}: row {row}: the value {float(values[k]):g} is "
                             f"beyond {self.value_dtype.name}'s range: write float64 values "
                             f"(value_dtype='float64', convert --float64)")
        single = self.encoding != "plain" and codec.single_valued(indptr, data)
        if single or self.encoding == "lean":
            self.lean_blocks += 1
            self._write_gaps(group, indptr, indices)
            if single:
                # filled in float64, as training fills its rows: one specialization
                row_data = np.empty(len(indptr) - 1)
                codec.first_values(indptr, data, row_data)
                self._dataset(group, "row_data", row_data.astype(self.value_dtype, copy=False))
            else:
                self._dataset(group, "data", data)
        else:
            self._dataset(group, "indices", indices)
            self._dataset(group, "data", data)
        y = np.ascontiguousarray(y, dtype=np.int32 if self.multiclass else np.int8)
        self._dataset(group, "y", y)
        self._row_offsets.append(self._row_offsets[-1] + len(indptr) - 1)
        self._nnz_offsets.append(self._nnz_offsets[-1] + nnz)
        counts = np.bincount(y if self.multiclass else y > 0, minlength=len(self._class_counts))
        counts[:len(self._class_counts)] += self._class_counts
        self._class_counts = counts
        if nnz:
            self._max_index = max(self._max_index, int(indices[:nnz].max()))
        self._sink.raise_error()

    def negate_labels(self):
        """Flip the sign of every label written so far (the converter learns the label
        order only at the end of its input)."""
        self._rewrite_labels(np.negative)
        self._class_counts = self._class_counts[::-1].copy()

    def relabel_classes(self, new_index):
        """Class ``j`` of the blocks written so far becomes ``new_index[j]`` (``multiclass``;
        the converter numbers classes as they appear and sorts them at the end)."""
        new_index = np.asarray(new_index, np.int32)
        self._rewrite_labels(lambda y: new_index[y])
        counts = np.zeros(max(len(new_index), len(self._class_counts)), np.int64)
        counts[new_index[:len(self._class_counts)]] = self._class_counts
        self._class_counts = counts

    def _rewrite_labels(self, relabel):
        for k in range(self.n_blocks):
            self.rewrite(k, "y", relabel)

    def _binary_labels(self):
        """Class indices 0/1 written so far become int8 -1/+1 (a ``multiclass`` writer
        that met only two classes writes a binary store)."""
        for k in range(self.n_blocks):
            group = self._file[_block_name(k)]
            y = group["y"][...]
            del group["y"]
            self._dataset(group, "y", (2 * y - 1).astype(np.int8))
        self._class_counts = np.append(self._class_counts, np.zeros(2, np.int64))[:2]
        self.multiclass = False

    def close(self, n_features, classes, source=None, extra_options=None):
        """Write the metadata and move the file into place.

        Parameters
        ----------
        n_features : int or None
            Width of the matrix; None takes the largest column index + 1.
        classes : sequence of floats
            The original label values that -1 and +1 stand for, or (``multiclass``) the
            value of each class index; a multiclass writer given two classes writes a
            binary store (index 0 as -1).
        source : dict, optional
            ``name``, ``size`` and ``sha256`` of the text the store was made from.
        """
        width = self._max_index + 1 if n_features is None else int(n_features)
        if width <= self._max_index:
            raise ValueError(f"n_features={width} but column index {self._max_index} occurs")
        classes = np.asarray(classes, np.float64)
        if self.multiclass and len(classes) < len(self._class_counts):
            raise ValueError(f"class index {len(self._class_counts) - 1} occurs but "
                             f"{len(classes)} classes are given")
        if len(classes) < 2:
            raise ValueError(f"a store needs at least two classes, got {len(classes)}")
        if len(set(classes.tolist())) != len(classes) or not np.all(np.isfinite(classes)):
            raise ValueError(f"classes must be distinct finite values, got {classes.tolist()}")
        if self.multiclass and len(classes) == 2:
            self._binary_labels()
        if len(classes) != 2 and not self.multiclass:
            raise ValueError(f"a binary store has two classes, got {len(classes)}")
        f = self._file
        self._dataset(f, "layout", layout_table(f, self.n_blocks))
        self._dataset(f, "row_offsets", np.asarray(self._row_offsets, np.int64))
        self._dataset(f, "nnz_offsets", np.asarray(self._nnz_offsets, np.int64))
        attrs = f.attrs
        if self._checksums:
            self._dataset(f, "checksums", np.array(
                [self._block_checksums[k] for k in range(self.n_blocks)], np.uint64).reshape(
                    self.n_blocks, len(BLOCK_DATASETS), 2))
            attrs["checksum"] = _inline(ALGORITHM)
        attrs["format"] = _inline(FORMAT_NAME)
        attrs["version"] = (LEAN_VERSION if self.lean_blocks
                            else MULTICLASS_VERSION if self.multiclass else 1)
        attrs["n_samples"] = self._row_offsets[-1]
        attrs["n_features"] = width
        attrs["nnz"] = self._nnz_offsets[-1]
        attrs["n_blocks"] = self.n_blocks
        if self.multiclass:
            attrs["class_counts"] = np.append(
                self._class_counts, np.zeros(len(classes) - len(self._class_counts), np.int64))
        else:
            attrs["n_positive"] = int(self._class_counts[1])
        attrs["classes"] = classes
        attrs["value_dtype"] = _inline(self.value_dtype.name)
        source = source or {}
        attrs["source_name"] = _inline(str(source.get("name", "")))
        attrs["source_size"] = int(source.get("size", -1))
        attrs["source_sha256"] = _inline(str(source.get("sha256", "")))
        lean = (dict(encoding=self.encoding, lean_blocks=self.lean_blocks) if self.lean_blocks
                else {})
        attrs["options"] = _inline(json.dumps({**self.options, **lean, **(extra_options or {})},
                                              sort_keys=True))
        attrs["created"] = _inline(datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"))
        if self._checksums:
            attrs["attributes_checksum"] = attributes_checksum(attrs)
        f.close()
        self._sink.settle()
        self._sink.raise_error()
        self._sink.close()
        self._atomic.__exit__(None, None, None)


class Store(BlockSource):
    """Read a store written by :class:`StoreWriter`.

    Parameters
    ----------
    path : str or path-like
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.name = self.path
        try:
            self._file = h5py.File(self.path, "r")
        except OPEN_ERRORS as exc:
            # as open() words it: h5py's text repeats HDF5's internals
            raise type(exc)(exc.errno, os.strerror(exc.errno), self.path) from None
        except OSError as exc:
            with open(self.path, "rb") as fh:
                head = fh.read(16)
            if head.startswith(b"\x89HDF\r\n\x1a\n"):  # HDF5's signature: a damaged file
                raise StoreError(f"{self.path}: not a readable HDF5 store ({exc})") from exc
            raise StoreError(f"{self.path}: not a readable HDF5 store (not an HDF5 file: it "
                             f"starts with {head!r}); a store is made from svmlight/libsvm "
                             f"text by `streamssvm convert IN OUT`") from exc
        try:
            self._open_known()
        except Exception as exc:
            self._file.close()
            if isinstance(exc, StoreError):
                raise
            # damaged metadata surfaces as any of h5py's and numpy's errors
            raise StoreError(f"{self.path}: unreadable metadata ({type(exc).__name__}: "
                             f"{exc})") from exc
        # where each block's datasets lie (_layout: made by _open_known), and a descriptor
        # to read them by, closed by close() or, for a store never closed, when collected
        self._extents = None
        self._fd = os.open(self.path, os.O_RDONLY) if hasattr(os, "preadv") else None
        self._close_fd = (weakref.finalize(self, os.close, self._fd) if self._fd is not None
                          else None)

    def _open_known(self):
        """:meth:`_open`, or the fields it read and checked, as they were for this file
        earlier in the process (:data:`_OPENED`: the same device, inode, size and times,
        settled) without reading them again: a process that trains on a store many times
        (a grid of fits) checks its metadata, its labels and each block's layout
        (:meth:`_layout`) once."""
        stat = os.stat(self.path)
        self._known = (stat.st_dev, stat.st_ino), (stat.st_size, stat.st_mtime_ns,
                                                    stat.st_ctime_ns)
        known = _OPENED.get(self._known[0])
        if known is not None and known[0] == self._known[1]:
            for name, value in zip(_OPENED_FIELDS, known[1]):
                setattr(self, name, value)
            self._counted = known[2]
            self._load_filter()
            self._ring = None
            return
        self._block_checksums, self._counted = None, False
        self._layouts, self._unfound = {}, {}  # filled by the blocks' first reads
        self._open()
        if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) <= _SETTLED_NS:
            self._known = None
            return
        for value in (self.row_offsets, self.nnz_offsets, self._block_checksums,
                      self._class_counts, self._recorded):
            if value is not None:
                value.flags.writeable = False  # shared by every Store of the file
        self._remember()

    def _remember(self):
        """Keep this store's checked fields in :data:`_OPENED` (the oldest entry out when
        it is full)."""
        key, stamp = self._known
        _OPENED.pop(key, None)
        if len(_OPENED) >= _OPENED_MAX:
            _OPENED.pop(next(iter(_OPENED)))
        _OPENED[key] = (stamp, tuple(getattr(self, name) for name in _OPENED_FIELDS),
                        self._counted)

    def _load_filter(self):
        """Give HDF5 the Blosc filter of the store's compression, if it is one (:func:`_blosc`)."""
        compression = self._options.get("compression")
        if isinstance(compression, str) and compression in BLOSC:
            _blosc(self.path, compression)

    def _open(self):
        attrs = self._attrs = {k: _decoded(v) for k, v in self._file.attrs.items()}
        if attrs.get("format") != FORMAT_NAME:
            raise StoreError(f"{self.path}: not a streamssvm store, or its metadata is damaged "
                             f"(format attribute {attrs.get('format')!r})")
        version = self._version = int(attrs["version"])
        if version > FORMAT_VERSION:
            raise StoreError(f"{self.path}: store format version {version} is newer than this "
                             f"library reads ({FORMAT_VERSION})")
        algorithm = attrs.get("checksum")
        if algorithm not in (None, ALGORITHM):
            raise StoreError(f"{self.path}: unknown checksum {algorithm!r} (this library "
                             f"verifies {ALGORITHM!r})")
        self.checksums = algorithm is not None
        if not self.checksums and "checksums" in self._file:
            raise StoreError(f"{self.path}: metadata: the file holds the table /checksums but "
                             f"not the checksum attribute that says it is checked (removed "
                             f"after the store was written)")
        if self.checksums and not np.array_equal(attributes_checksum(attrs),
                                                 attrs.get("attributes_checksum")):
            raise StoreError(f"{self.path}: metadata: the file's attributes do not match their "
                             f"checksum (changed after the store was written: the file is "
                             f"corrupt)")
        self.n_samples = int(attrs["n_samples"])
        self.n_features = int(attrs["n_features"])
        self.nnz = int(attrs["nnz"])
        self.classes = tuple(float(c) for c in attrs["classes"])
        self.value_dtype = np.dtype(str(attrs["value_dtype"]))
        try:
            options = json.loads(attrs["options"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"{self.path}: metadata: options are not JSON ({exc})") from None
        if not isinstance(options, dict):
            raise StoreError(f"{self.path}: metadata: options {options!r} is not a JSON object")
        self._options = options
        self._load_filter()  # before the first dataset
        self._ring = None
        self.row_offsets = self._read_verified(self._file["row_offsets"])
        self.nnz_offsets = self._read_verified(self._file["nnz_offsets"])
        n_blocks = int(attrs["n_blocks"])
        if (self.row_offsets.shape != (n_blocks + 1,) or self.nnz_offsets.shape != (n_blocks + 1,)
                or self.row_offsets[-1] != self.n_samples or self.nnz_offsets[-1] != self.nnz):
            raise StoreError(f"{self.path}: block offsets disagree with the file's metadata")
        if _block_name(n_blocks) in self._file:  # the blocks after a count cut short
            raise StoreError(f"{self.path}: metadata: n_blocks = {n_blocks}, but the file "
                             f"holds block {n_blocks} too")
        if self.checksums:
            self._block_checksums = self._read_verified(self._file["checksums"])
            if (self._block_checksums.dtype != np.uint64
                    or self._block_checksums.shape != (self.n_blocks, len(BLOCK_DATASETS), 2)):
                raise StoreError(f"{self.path}: metadata: checksums of shape "
                                 f"{self._block_checksums.shape} and type "
                                 f"{self._block_checksums.dtype} for {self.n_blocks} blocks")
        if version < LEAN_VERSION and self.multiclass != (version == MULTICLASS_VERSION):
            raise StoreError(f"{self.path}: {len(self.classes)} classes in a version "
                             f"{version} store (version 2 stores have more than two, "
                             f"version 1 stores two)")
        if self.multiclass:
            self._class_counts = np.asarray(attrs["class_counts"], np.int64)
        else:
            n_positive = int(attrs["n_positive"])
            self._class_counts = np.array([self.n_samples - n_positive, n_positive], np.int64)
        self._label_dtype = np.dtype(np.int32 if self.multiclass else np.int8)
        problem = self._metadata_problem()
        if problem:
            raise StoreError(f"{self.path}: metadata: {problem}")
        self._recorded = self._checked_layout(version) if "layout" in self._file else None

    def _checked_layout(self, version):
        """/layout (docs/FORMAT.md), refused unless every dataset it places has the length
        the block offsets give and lies inside the file: checked here for every block at
        once, then each block's row against HDF5 at its first read (:meth:`_layout`)."""
        table = self._read_verified(self._file["layout"])
        if table.dtype != np.int64 or table.shape != (self.n_blocks, len(BLOCK_DATASETS), 3):
            raise StoreError(f"{self.path}: metadata: layout of shape {table.shape} and type "
                             f"{table.dtype} for {self.n_blocks} blocks")
        offset, length, lean = np.moveaxis(table, 2, 0)
        rows, nnz = np.diff(self.row_offsets), np.diff(self.nnz_offsets)
        gaps, single = lean[:, 1] == 1, lean[:, 2] == 1
        size = os.path.getsize(self.path)
        item = np.stack(np.broadcast_arrays(4, np.where(gaps, 2, 4), self.value_dtype.itemsize,
                                            self._label_dtype.itemsize), axis=1)
        # each check per block (row) and dataset (column, as in /checksums)
        flag = (lean != 0) & (lean != 1)
        flag[:, 0] |= lean[:, 0] != 0
        flag[:, 3] |= lean[:, 3] != 0  # indptr and y have no lean form
        flag[:, 2] |= single & ~gaps
        flag[:, 1] |= gaps & (version < LEAN_VERSION)
        # lengths bounded by the counts, not by the file's size (a compressed dataset may
        # hold more values than the file has bytes); a far gap takes 4 words
        counted = length != np.stack([rows + 1, nnz, np.where(single, rows, nnz), rows], axis=1)
        counted[:, 1] = np.where(gaps, (length[:, 1] < nnz) | (length[:, 1] > 4 * nnz),
                                 length[:, 1] != nnz)
        outside = (offset < -1) | (offset > size) | (offset >= 0) & (offset + length * item > size)
        bad = flag | counted | outside
        if bad.any():
            k, j = np.unravel_index(int(np.argmax(bad)), bad.shape)
            what = (f"lean flag {lean[k, j]}" if flag[k, j]
                    else f"{length[k, j]} values for {rows[k]} rows and {nnz[k]} nonzeros"
                    if counted[k, j] else f"{length[k, j]} values from byte {offset[k, j]} "
                                          f"do not fit in the file's {size} bytes")
            name = _slot_name(j, lean[k, j] == 1)
            raise StoreError(f"{self.path}: metadata: layout: the datasets of block {k} "
                             f"{table[k, :, :2].tolist()} (offset and length of each) do not "
                             f"fit its rows and nonzeros, or lie outside the file: dataset "
                             f"{name}: {what}")
        return table

    def _metadata_problem(self):
        """What is wrong with the root attributes and offsets that the checks above leave
        (readers index by them: row offsets not from 0 read rows that are not there), or
        None."""
        for name, offsets, total in (("row_offsets", self.row_offsets, self.n_samples),
                                     ("nnz_offsets", self.nnz_offsets, self.nnz)):
            if offsets.dtype != np.int64:
                return f"{name} of type {offsets.dtype}, not int64"
            if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
                return f"{name} do not rise from 0 to {total}"
        if self.n_features < 0 or self.n_samples < 0:
            return f"negative shape {self.n_samples} x {self.n_features}"
        classes = self.classes
        if len(set(classes)) != len(classes) or len(classes) < 2 or not np.all(
                np.isfinite(classes)):
            return f"classes {classes} are not distinct finite values"
        counts = self._class_counts
        if len(counts) != len(classes) or np.any(counts < 0) or counts.sum() != self.n_samples:
            return f"class counts {counts.tolist()} do not add up to {self.n_samples} rows"
        if self.value_dtype not in (np.float32, np.float64):
            return f"value type {self.value_dtype} is not float32/float64"
        recorded = self._options.get("value_dtype", self.value_dtype.name)
        if recorded != self.value_dtype.name:
            return f"value type {self.value_dtype}, but the options record {recorded!r}"
        return None

    def close(self):
        self._file.close()
        if self._close_fd is not None:
            self._close_fd()  # once: a second call does nothing
            self._fd = None

    def _read_verified(self, ds, k=None, out=None):
        """The values of dataset ``ds`` of block ``k`` (a root dataset if None), into
        ``out`` if given, checked against their checksum when the store keeps them."""
        if out is None:
            out = np.empty(ds.shape, ds.dtype)
        if out.size:
            ds.read_direct(out)
        self._verify(out, k, ds.name.rsplit("/", 1)[1], ds)
        return out

    def _verify(self, values, k, name, ds=None):
        """Check dataset ``name`` of block ``k`` (a root dataset ``ds`` if k is None), as
        read into ``values``, against its checksum when the store keeps them."""
        if not self.checksums:
            return
        expected = ds.attrs["checksum"] if k is None else self._block_checksums[k, _slot(name)]
        if not np.array_equal(checksum(values), expected):
            raise StoreError(f"{self.path}: {'metadata' if k is None else f'block {k}'}: "
                             f"dataset {name} does not match its checksum (bytes changed "
                             f"after the store was written: the file is corrupt)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def metadata(self):
        """All file attributes as a dict (``options`` decoded from JSON)."""
        meta = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in self._attrs.items()}
        meta["classes"] = list(self.classes)
        meta["options"] = json.loads(meta["options"])
        return meta

    def class_counts(self):
        """Rows per class as ``n_positive`` (binary) or ``class_counts`` record them,
        compared with the blocks' labels at the first call (one read of every block's
        ``y``): a solver's tolerance or a class weight is never made of a count the blocks
        do not hold."""
        if not self._counted:
            counts = super().class_counts()
            if not np.array_equal(counts, self._class_counts):
                raise StoreError(f"{self.path}: metadata: rows per class "
                                 f"{self._class_counts.tolist()} but the blocks hold "
                                 f"{counts.tolist()}")
            self._counted = True
            if self._known is not None:
                self._remember()
        return self._class_counts.copy()

    def labels(self):
        """The labels of all rows, read without the matrix."""
        out = np.empty(self.n_samples, self._label_dtype)
        for k in range(self.n_blocks):
            rows = out[int(self.row_offsets[k]):int(self.row_offsets[k + 1])]
            try:
                y = next(dataset for i, dataset in self._layout(k)[1] if i == 1)
                self._read(k, {"y": rows}, *y)
            except (OSError, KeyError) as exc:
                raise StoreError(f"{self.path}: block {k}: dataset y cannot be read ({exc})") \
                    from exc
            self._verify(rows, k, "y")
            _check_labels(self.path, k, rows, len(self.classes))
        return out

    def iter_blocks(self, order=None, transient=False):
        """Yield the blocks in storage order or in ``order``, read ahead in a thread.

        With ``transient`` the blocks are read into a ring of reused buffers (fresh
        multi-megabyte arrays cost a page fault per 4 KiB); a block is then valid until
        three more have been requested. Lean blocks are decoded here, by the thread that
        uses them, not by the reading thread: reading and decoding, both serial, then run
        on two threads at once (a block decoded while the next ones are read) instead of
        one after the other on the reading thread.
        """
        if not transient:
            for raw in self.iter_blocks_prefetched(order, read=lambda k, i: self._read_raw(k)):
                yield self._decoded(raw)
            return
        # the ring is kept for the next pass (its pages are touched once); a second
        # transient iteration running at the same time gets a ring of its own
        ring, self._ring = self._ring or self._new_ring(), None
        try:
            for raw in self.iter_blocks_prefetched(
                    order, _PREFETCH, lambda k, i: self._read_raw(k, ring[i % len(ring)])):
                yield self._decoded(raw)
        finally:
            self._ring = ring

    def _new_ring(self):
        rows = int(np.diff(self.row_offsets).max(initial=0))
        nnz = int(np.diff(self.nnz_offsets).max(initial=0))
        return [dict(indptr=np.empty(rows + 1, np.int32), indices=np.empty(nnz, np.int32),
                     data=np.empty(nnz, self.value_dtype), y=np.empty(rows, self._label_dtype))
                for _ in range(_PREFETCH + 3)]  # 3 in use, _PREFETCH being read

    def read_range(self, first, stop):
        """Blocks ``first .. stop - 1`` as one Block, each block read straight into its
        place in the joined arrays: the data is in memory once, not twice, and no block copy
        touches fresh memory (whose page faults would cost more than the copy)."""
        self.check_blocks(first, stop)
        if stop - first == 1:
            return super().read_range(first, stop)
        rows, nnz = self.row_offsets[first:stop + 1], self.nnz_offsets[first:stop + 1]
        rows, nnz = rows - rows[0], nnz - nnz[0]
        indptr = np.empty(rows[-1] + 1, np.int64)
        indptr[0] = 0
        indices, data = np.empty(nnz[-1], np.int32), np.empty(nnz[-1], self.value_dtype)
        y = np.empty(rows[-1], self._label_dtype)
        buffers = dict(indptr=np.empty(int(np.diff(rows).max()) + 1, np.int32))
        for i, k in enumerate(range(first, stop)):
            (r0, r1), (z0, z1) = rows[i:i + 2], nnz[i:i + 2]
            buffers.update(indices=indices[z0:z1], data=data[z0:z1], y=y[r0:r1])
            block = self.read_block(k, buffers)  # lean blocks' scratch stays in buffers
            indptr[r0 + 1:r1 + 1] = block.indptr[1:] + z0
        return Block(first, int(self.row_offsets[first]), indptr, indices, data, y)

    def data_digest(self):
        """As the source's, from the table of the blocks' checksums if the store has one
        (no pass)."""
        return digest([self._block_checksums]) if self.checksums else super().data_digest()

    def read_block(self, k, buffers=None):
        """Block ``k``, as fresh arrays or as views of ``buffers`` (a dict of arrays named
        like the datasets, large enough; lean blocks keep their scratch arrays in it too); a
        corrupt or inconsistent block raises StoreError."""
        return self._decoded(self._read_raw(k, buffers))

    def _read_raw(self, k, buffers=None):
        """Block ``k`` as stored, read but neither checked nor decoded: ``(k, indptr,
        indices or gaps, data or row_data, whether it is row_data, y, buffers)``;
        :meth:`_decoded` checks it and makes the Block. A pass's reading thread only reads:
        the checksums and index checks run in the thread that uses the block, so that the
        reading thread does not take a core that the kernels' threads need too."""
        if not 0 <= k < self.n_blocks:
            raise IndexError(f"{self.path}: block {k} outside 0..{self.n_blocks - 1}")
        if not self._file:  # closed: its layouts are no licence to read on
            raise StoreError(f"{self.path}: block {k} cannot be read (the store is closed)")
        buffers = {} if buffers is None else buffers
        where = f"block {k}"  # then the dataset being read, named in an error
        try:
            single, datasets = self._layout(k)
            arrays = [None] * len(datasets)
            for i, dataset in datasets:
                where = f"block {k}: dataset {dataset[0]}"
                arrays[i] = self._read(k, buffers, *dataset)
            indptr, y, indices, data = arrays
        except (OSError, KeyError) as exc:
            raise StoreError(f"{self.path}: {where} cannot be read ({exc})") from exc
        return k, indptr, indices, data, single, y, buffers

    def _layout(self, k):
        """Block ``k``'s datasets: ``(whether it holds row_data, [(i, (name, dtype, length,
        scratch, offset))])`` for indptr, y, indices (or gaps) and data (or row_data) as i =
        0..3, in file order, ``offset`` the byte offset of a contiguous dataset in the file,
        None for another (chunked: compressed; read through HDF5, by name).

        Found through HDF5 at the block's first read (:meth:`_hdf5_layout`: the type,
        shape and offset that each dataset's own header gives) and, in a store with
        /layout, compared with its row ``k`` (:meth:`_compared_layout`), so that no forged
        attribute or offset makes a read take bytes for what they are not; kept, so that
        every later pass of this store (and of the file opened again in the process:
        :meth:`_open_known`) reads contiguous datasets with one ``preadv`` each and no
        HDF5 call. The check costs, once a block: the group's and the four
        datasets' headers opened, two link lookups, and each dataset's type, shape and
        offset asked for.
        """
        layout = self._layouts.get(k)
        if layout is None:
            layout = self._layouts[k] = (self._found_layout(k) if self._recorded is None
                                         else self._compared_layout(k))
        return layout

    def _datasets(self, k, lean, single):
        """Block ``k``'s datasets as :meth:`_layout` lists them, without the offsets: (name,
        dtype, length (None: any), whether it is decoded into other arrays)."""
        rows = int(self.row_offsets[k + 1] - self.row_offsets[k])
        nnz = int(self.nnz_offsets[k + 1] - self.nnz_offsets[k])
        return [("indptr", np.dtype(np.int32), rows + 1, False),
                ("y", self._label_dtype, rows, False),
                ("gaps", np.dtype(np.uint16), None, True) if lean
                else ("indices", np.dtype(np.int32), nnz, False),
                ("row_data", self.value_dtype, rows, True) if single
                else ("data", self.value_dtype, nnz, False)]

    @staticmethod
    def _in_file_order(single, datasets):
        # y lies after data: a jump back would stop the kernel's read-ahead of the file
        order = sorted(range(len(datasets)), key=lambda i: datasets[i][4] or 0)
        return single, [(i, datasets[i]) for i in order]

    def _recorded_layout(self, k):
        """:meth:`_layout` as /layout's row ``k`` records it (its lengths checked against
        the block offsets when the store was opened)."""
        offset, length, lean = self._recorded[k].T.tolist()
        datasets = []
        for name, dtype, _, scratch in self._datasets(k, lean[1], lean[2]):
            j = _slot(name)
            at = None if offset[j] < 0 or self._fd is None else offset[j]
            datasets.append((name, dtype, length[j], scratch, at))
        return self._in_file_order(bool(lean[2]), datasets)

    def _hdf5_layout(self, k):
        """Block ``k``'s datasets as HDF5 finds them: ``(whether it holds row_data, [entry
        for i = 0..3])``, an entry as in :meth:`_layout`, or, for a dataset HDF5 does not
        find, the error that says so: KeyError (no such group or member) or StoreError (not
        a dataset). A dataset whose type or shape differs from what the root attributes
        and block offsets give is a StoreError naming it."""
        group = self._file.get(_block_name(k))
        if not isinstance(group, h5py.Group):
            missing = KeyError(f"{_block_name(k)} is {'missing' if group is None else 'no group'}")
            return False, [missing] * len(BLOCK_DATASETS)
        lean, single = "gaps" in group, "row_data" in group
        if single and not lean:
            raise StoreError(f"{self.path}: block {k}: dataset row_data without gaps")
        if lean and self._version < LEAN_VERSION:
            raise StoreError(f"{self.path}: block {k}: dataset gaps in a version "
                             f"{self._version} store (lean blocks are version {LEAN_VERSION})")
        datasets = []
        for name, dtype, size, scratch in self._datasets(k, lean, single):
            ds = group.get(name)
            if not isinstance(ds, h5py.Dataset):
                datasets.append(KeyError(f"no member {name}") if ds is None else
                                StoreError(f"{self.path}: block {k}: {name} is not a dataset"))
                continue
            if ds.ndim != 1 or ds.dtype != dtype or size is not None and ds.shape != (size,):
                expected = "(n,)" if size is None else f"({size},)"
                raise StoreError(f"{self.path}: block {k}: dataset {name} has shape "
                                 f"{ds.shape} and type {ds.dtype}, expected {expected} "
                                 f"{dtype}")
            offset = ds.id.get_offset() if self._fd is not None else None
            datasets.append((name, dtype, ds.shape[0], scratch, offset))
        return single, datasets

    def _found_layout(self, k):
        """:meth:`_layout` through HDF5 alone (a store without /layout): a dataset it does
        not find is a StoreError, or KeyError for a missing group or member."""
        single, datasets = self._hdf5_layout(k)
        for entry in datasets:
            if isinstance(entry, Exception):
                raise entry
        return self._in_file_order(single, datasets)

    def _compared_layout(self, k):
        """:meth:`_layout` of a store with /layout: HDF5's, refused unless /layout's row
        ``k`` records the same datasets, lengths and byte offsets (an offset moved to
        another block's dataset of the same length, into the middle of a dataset or to
        another dataset of the block would read their bytes as this one's). A dataset HDF5
        does not find (its group's or its own header damaged) is read where /layout says
        if :meth:`_unfound_bytes` allows it; ``verify`` names its block."""
        single, found = self._hdf5_layout(k)
        recorded = self._recorded_layout(k)
        problems = []
        for i, (name, dtype, length, scratch, offset) in sorted(recorded[1]):
            entry = found[i]
            if isinstance(entry, Exception):
                reason = (str(entry) if isinstance(entry, StoreError) else
                          f"{self.path}: block {k}: its datasets cannot be found "
                          f"({entry.args[0]})")
                self._unfound_bytes(k, name, dtype, length, offset, reason)
                problems.append(reason)
                found[i] = (name, dtype, length, scratch, offset)
                continue
            real, _, size, _, at = entry
            if real != name:
                problem = f"dataset {real}: /layout records {name} in its place"
            elif size != length:
                problem = f"dataset {name}: /layout records {length} values, HDF5 {size}"
            elif at != offset:
                problem = (f"dataset {name}: /layout records it at {_where(offset)}, HDF5 "
                           f"at {_where(at)}")
            else:
                continue
            raise StoreError(f"{self.path}: block {k}: {problem} (the file was changed "
                             f"after it was written)")
        if problems:
            self._unfound[k] = problems[0]
            single = recorded[0]
        return self._in_file_order(single, found)

    def _unfound_bytes(self, k, name, dtype, length, offset, reason):
        """Refuse to read dataset ``name`` of block ``k`` (``length`` values of type
        ``dtype``), which HDF5 does not find (``reason``), at ``offset`` as /layout records
        it, unless the store has checksums (its bytes are then checked against the block's
        row of /checksums, and /layout and that table against their own) and its bytes
        hold no dataset HDF5 finds but, outside /blocks, one of that name, type and shape
        that starts and ends with them (a block's group moved away)."""
        if not self.checksums:
            raise StoreError(f"{reason}; the store has no checksums by which the bytes "
                             f"/layout places there could be trusted")
        n_bytes = length * dtype.itemsize
        if offset is None or not n_bytes:
            return  # read through HDF5 by name, which fails; or nothing to read
        if self._extents is None:
            try:
                self._extents = _dataset_extents(self._file)
            except (OSError, KeyError, RuntimeError) as exc:  # h5py's, for damaged headers
                raise StoreError(f"{reason}; the file's datasets, which the bytes /layout "
                                 f"places there must not hold, cannot be listed ({exc})") \
                    from exc
        for where, start, size, kind in self._extents:
            moved = (not where.startswith("/blocks/") and where.rsplit("/", 1)[1] == name
                     and (start, size, kind) == (offset, n_bytes, (dtype, (length,))))
            if start < offset + n_bytes and offset < start + size and not moved:
                raise StoreError(f"{self.path}: block {k}: dataset {name}: /layout places it "
                                 f"in the bytes of {where} ({reason})")

    def layout_problem(self, k):
        """What HDF5 does not find of block ``k``'s datasets, which reads then take where
        /layout says (see :meth:`_compared_layout`), or None. Reads of a store that
        disagree with HDF5 fail: this is :func:`~streamssvm.data.verify.verify_store`'s
        report of a block that read."""
        self._layout(k)
        return self._unfound.get(k)

    def _read(self, k, buffers, name, dtype, n, scratch, offset):
        """Dataset ``name`` of block ``k`` (as :meth:`_layout` found it) into
        ``buffers[name]``, made and kept there if ``scratch`` and it is missing or too
        small; its checksum is :meth:`_decoded`'s to check."""
        out = buffers.get(name)
        if out is None or scratch and len(out) < n:
            out = np.empty(n, dtype)
            if scratch:
                buffers[name] = out
        out = out[:n]
        if not n:
            return out
        if offset is None:
            self._file[_block_name(k)][name].read_direct(out)
            return out
        view, done = memoryview(out).cast("B"), 0
        while done < len(view):  # a read may stop short (a signal); the file's end stops it
            got = os.preadv(self._fd, [view[done:]], offset + done)
            if not got:
                raise StoreError(f"{self.path}: block {k}: dataset {name} runs past the end "
                                 f"of the file (the file is cut short)")
            done += got
        return out

    def _decoded(self, raw):
        """The Block of :meth:`_read_raw`'s ``raw``, checked (checksums, row pointers,
        column indices and labels, before any kernel indexes with them), a lean block's
        gaps and row values decoded (see :mod:`~streamssvm.kernels.codec`)."""
        k, indptr, indices, data, single, y, buffers = raw
        lean = indices.dtype == np.uint16
        for name, values in (("indptr", indptr), ("y", y),
                             ("gaps" if lean else "indices", indices),
                             ("row_data" if single else "data", data)):
            self._verify(values, k, name)
        _check_indptr(self.path, k, indptr, int(self.nnz_offsets[k + 1] - self.nnz_offsets[k]))
        if not lean:
            _check_indices(self.path, k, indices, self.n_features)
        _check_labels(self.path, k, y, len(self.classes))
        if lean:
            nnz = int(indptr[-1])
            gaps, indices = indices, (buffers["indices"][:nnz] if "indices" in buffers
                                      else np.empty(nnz, np.int32))
            row_data = data[:0]
            if single:
                row_data, data = data, (buffers["data"][:nnz] if "data" in buffers
                                        else np.empty(nnz, self.value_dtype))
            positions = codec.far_positions(gaps, nnz)
            if positions is None:
                raise StoreError(f"{self.path}: block {k}: dataset gaps is corrupt: not one "
                                 f"word per nonzero ({nnz}) and three per far gap in "
                                 f"increasing positions")
            bad = codec.decode(indptr, gaps, positions, row_data, self.n_features, indices,
                               data)
            if bad != codec.OK:
                raise StoreError(f"{self.path}: block {k}: dataset gaps is corrupt in row "
                                 f"{bad} of the block: a column index reaches n_features = "
                                 f"{self.n_features}")
        return Block(k, int(self.row_offsets[k]), indptr, indices, data, y)


def _where(offset):
    """A dataset's byte offset as an error names it (None: not contiguous)."""
    return "no offset (chunked or empty)" if offset is None else f"byte {offset}"


def _dataset_extents(f):
    """``[(name, first byte, bytes, dtype and shape or None)]`` of what every dataset HDF5
    finds in the open file ``f`` stores: the whole of a contiguous one (with its type and
    shape), each chunk of another (None)."""
    extents = []

    def add(name, ds):
        if not isinstance(ds, h5py.Dataset):
            return
        if ds.chunks is None:
            start = ds.id.get_offset()
            if start is not None:
                extents.append((ds.name, start, ds.id.get_storage_size(), (ds.dtype, ds.shape)))
            return
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            extents.append((ds.name, info.byte_offset, info.size, None))

    f.visititems(add)
    return extents


def _slot(name):
    """The row of /checksums that holds dataset ``name``'s checksum."""
    return BLOCK_DATASETS.index(LEAN_DATASETS.get(name, name))


def _slot_name(j, lean):
    """The dataset in row ``j`` of /checksums, its lean form if ``lean``."""
    plain = BLOCK_DATASETS[j]
    lean_names = {of: name for name, of in LEAN_DATASETS.items()}
    return lean_names.get(plain, plain) if lean else plain


def _check_indptr(path, k, indptr, nnz):
    """Validate the row pointers before anything indexes with them."""
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise StoreError(f"{path}: block {k}: row pointers are not monotone from 0 to nnz")


def _check_indices(path, k, indices, n_features):
    """Validate what a kernel will index: numba does not check bounds."""
    if len(indices) and (indices.min() < 0 or indices.max() >= n_features):
        raise StoreError(f"{path}: block {k}: column index outside 0..{n_features - 1}")


def _check_labels(path, k, y, n_classes):
    """Labels -1/+1 (two classes) or class indices 0 .. n_classes - 1."""
    if not len(y):
        return
    if n_classes == 2 and np.any(np.abs(y) != 1):
        raise StoreError(f"{path}: block {k}: labels other than -1/+1")
    if n_classes > 2 and (y.min() < 0 or y.max() >= n_classes):
        raise StoreError(f"{path}: block {k}: class index outside 0..{n_classes - 1}")


def layout_table(f, n_blocks):
    """/layout of the open HDF5 file ``f``: where each block's datasets lie, as a writer
    records it once no rewrite can move them (docs/FORMAT.md)."""
    table = np.zeros((n_blocks, len(BLOCK_DATASETS), 3), np.int64)
    for k in range(n_blocks):
        for name, ds in f[_block_name(k)].items():
            offset = ds.id.get_offset()  # None: chunked, or empty and never allocated
            table[k, _slot(name)] = (-1 if offset is None else offset, ds.shape[0],
                                     name in LEAN_DATASETS)
    return table


def write_store(path, source, value_dtype=None, **writer_options):
    """Write any BlockSource (an in-memory matrix, another store) as a store, keeping its
    blocks; ``writer_options`` as for :class:`StoreWriter`. Returns ``path``."""
    value_dtype = value_dtype or source.value_dtype.name
    with StoreWriter(path, value_dtype=value_dtype, multiclass=source.multiclass,
                     **writer_options) as writer:
        for b in source.iter_blocks(transient=True):
            lo, hi = int(b.indptr[0]), int(b.indptr[-1])
            writer.add_block(b.indptr - lo, b.indices[lo:hi], b.data[lo:hi], b.y)
        writer.close(source.n_features, source.classes)
    return path
