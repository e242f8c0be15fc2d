"""Convert svmlight / libsvm text (plain, .gz, .bz2, .xz) into an HDF5 store, streaming."""

import bz2
import gzip
import hashlib
import io
import lzma
import os
import queue
import sys
import threading
import time
import zlib

import numpy as np

from .._atomic import check_output
from .._interrupt import interrupts_after_compiling
from .._ahead import compiling_ahead
from .._jit_cache import watching_compiles
from .._progress import progress_bar
from .._runtime import prepare
from .store import Store, StoreError, StoreWriter
from .svmlight import BlockParser, SvmlightFormatError, last_newline

__all__ = ["convert_svmlight"]

DEFAULT_CHUNK_BYTES = 8 << 20
_READ_BYTES = 1 << 20  # compressed input read at a time
_CR_PROBE = 64 << 10  # a line this long without newline is checked for CRs with text after,
# and again each time it doubles

_MAGIC = {"gzip": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00"}
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_EXTENSIONS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz"}
_DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
STDIN, STDIN_NAME = "-", "<stdin>"  # the input name that reads the standard input


class _HashingReader(io.RawIOBase):
    """The raw file as read: counts and hashes every byte, and advances the progress bar."""

    def __init__(self, fh, bar):
        self._fh = fh
        self._bar = bar
        self.sha256 = hashlib.sha256()
        self.size = 0

    def readable(self):
        return True

    def readinto(self, b):
        n = self._fh.readinto(b)
        if n:
            with memoryview(b) as view:
                self.sha256.update(view[:n])
            self._count(n)
        return n

    def read(self, size=-1):
        data = self._fh.read(size)
        if data:
            self.sha256.update(data)
            self._count(len(data))
        return data

    def _count(self, n):
        self.size += n
        self._bar.update(n)

    def drain(self):
        """Read what the decompressor left (trailing bytes) so that the hash covers the file."""
        buf = bytearray(1 << 20)
        while self.readinto(buf):
            pass


def _compression(path, head):
    """The compression of ``path``, from its first bytes; its extension must agree. An HDF5
    file (a store, most likely) is refused."""
    if head.startswith(_HDF5_SIGNATURE):
        raise SvmlightFormatError(f"{path}: an HDF5 file, not svmlight text: " + (
            "it is a store already, which needs no conversion" if _is_store(path) else
            "give the svmlight/libsvm text file to convert"))
    found = next((kind for kind, magic in _MAGIC.items() if head.startswith(magic)), None)
    claimed = _EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if claimed is not None and found != claimed:
        raise SvmlightFormatError(f"{path}: the name says {claimed} but the file does not "
                                  f"start with the {claimed} signature (corrupt or misnamed)")
    return found


def _is_store(path):
    try:
        Store(path).close()
    except (StoreError, OSError):  # not one, or not a file (the standard input)
        return False
    return True


class _CheckedDecompressor:
    """Report corrupt or truncated compressed input as a format error."""

    def __init__(self, stream, name, kind, raw):
        self._stream, self._name, self._kind, self._raw = stream, name, kind, raw

    def read(self, size):
        try:
            return self._stream.read(size)
        except _DECOMPRESSION_ERRORS as exc:
            raise SvmlightFormatError(f"{self._name}: cannot decompress {self._kind} data "
                                      f"after {self._raw.size} bytes read ({exc})") from exc


class _Streams:
    """The text of a file of bz2 or xz streams, one after another (xz's may be followed by
    zero padding, a multiple of 4 bytes). BZ2File and LZMAFile stop quietly at a next
    stream that fails to start (its rows lost) and take junk after the last stream for
    trailing data; here both are errors, as with gzip."""

    def __init__(self, raw, kind):
        self._raw = raw
        self._new = bz2.BZ2Decompressor if kind == "bz2" else lzma.LZMADecompressor
        self._padding = kind == "xz"
        self._decompressor = self._new()
        self._zeros = 0  # padding read since the last stream ended

    def read(self, size):
        while True:
            d = self._decompressor
            if d is None or d.eof:  # a next stream or the end of the file
                data = (d.unused_data if d is not None else b"") or self._raw.read(_READ_BYTES)
                self._decompressor = None
                if self._padding:
                    stripped = data.lstrip(b"\0")
                    self._zeros += len(data) - len(stripped)
                    if data and not stripped:
                        continue
                    data = stripped
                if self._zeros % 4:
                    raise lzma.LZMAError(f"stream padding of {self._zeros} zero bytes, not "
                                         f"a multiple of 4")
                if not data:
                    return b""
                self._zeros = 0
                d = self._decompressor = self._new()
            elif d.needs_input:
                data = self._raw.read(_READ_BYTES)
                if not data:
                    raise EOFError("Compressed file ended before the end-of-stream marker "
                                   "was reached")
            else:
                data = b""  # output held back by max_length
            out = d.decompress(data, size)
            if out:
                return out


def _open_text(raw, kind):
    if kind is None:
        return raw
    if kind == "gzip":
        return gzip.GzipFile(fileobj=io.BufferedReader(raw, _READ_BYTES), mode="rb")
    return _Streams(raw, kind)


def _shift_written_indices(writer):
    """Add 1 to the column indices of every block already in the writer's temporary file.

    Only ``zero_based="auto"`` needs this, when an index 0 shows up after blocks were
    written one-based; the writer's largest index is private, so this reaches into it.
    """
    for k in range(writer.n_blocks):
        writer.rewrite(k, "indices", lambda indices: indices + 1)
    if writer._max_index >= 0:
        writer._max_index += 1


@interrupts_after_compiling()
def convert_svmlight(src, dst, *, n_features=None, zero_based="auto", classes=None, like=None,
                     multiclass=False, value_dtype="float32", block_rows=None, block_nnz=1 << 19,
                     compression=None, compression_level=None, fletcher32=False, encoding="auto",
                     overwrite=False, progress=True, _chunk_bytes=DEFAULT_CHUNK_BYTES):
    """Convert an svmlight / libsvm text file into an HDF5 store of CSR row blocks.

    The input is streamed: memory depends on the chunk size, the block size and the longest
    line, never on the file size. Plain, gzip, bzip2 and xz inputs are recognised by their
    first bytes (a ``.gz``, ``.bz2`` or ``.xz`` name must agree with them); an HDF5 file
    (such as a store) is refused.

    Parameters
    ----------
    src : str or path-like
        The text file, or ``"-"`` for the standard input.
    dst : str or path-like
        The store to write, a regular file (HDF5 seeks in it). It appears whole when the
        conversion succeeds and not at all otherwise (written under a hidden temporary
        name, then renamed).
    n_features : int, optional
        Width of the matrix; an index at or beyond it is an error. Default: the largest
        index + 1.
    zero_based : {"auto", True, False}
        Index base. ``"auto"`` behaves like scikit-learn's ``load_svmlight_file``: the file
        is one-based unless an index 0 occurs anywhere in it. It is parsed as one-based;
        when a 0 appears, every block already written to the temporary file is rewritten
        with its indices shifted back by one, and parsing continues zero-based.
    classes : sequence of floats, optional
        The label values that stand for -1 and +1; any other label is an error. Default:
        the two distinct labels of the file, the smaller one as -1 (a file whose labels
        are all -1 or all +1 is read as {-1, +1}). More than two values: a multiclass
        store with these classes.
    like : str or path-like, optional
        An existing store whose ``n_features``, ``classes`` and index base this conversion
        uses, so that a test file shares the training file's width, label map (multiclass
        or not) and columns (with ``zero_based="auto"``, a test file without index 0 would
        be read one-based after a training file read zero-based: every feature one column
        off).
    multiclass : bool
        Accept any number of distinct labels. With more than two, the store is a multiclass
        one (format version 2): its labels are indices into the sorted distinct values,
        ``classes``. With two, it is the usual binary store.
    value_dtype : {"float32", "float64"}
        Values are parsed to float64 (bit-identical to ``float()``), then stored in this type
        (float32: a value beyond its range is refused).
    block_rows : int, optional
        Rows per block. By default a block ends at the first row that brings it to
        ``block_nnz`` nonzeros (as :func:`block_offsets_by_nnz` cuts an in-memory matrix),
        or after ``max(block_nnz, 65536)`` rows if rows are nearly empty.
    block_nnz : int
    compression : {None, "gzip", "lzf", "blosc-lz4", "blosc-zstd"}
        Blosc needs hdf5plugin (``pip install 'streamssvm[blosc]'``), to write and to read.
    compression_level : int, optional
        gzip or Blosc level, 1-9.
    fletcher32 : bool
        Also store HDF5's Fletcher-32 checksums (the store's own checksums, verified on
        every read, are always written).
    encoding : {"auto", "plain", "lean"}
        ``"lean"``: column indices as 16-bit gaps within rows, and one value per row in
        blocks whose rows each hold one value (format version 3; lossless); ``"auto"``:
        lean only those blocks (see :class:`~streamssvm.data.store.StoreWriter`).
    overwrite : bool
        Replace an existing ``dst``; otherwise FileExistsError.
    progress : bool
        Show a progress bar on bytes read (on a terminal) and print the throughput to stderr.

    Returns
    -------
    summary : dict
        ``n_samples``, ``n_features``, ``nnz``, ``n_blocks``, ``classes``, ``class_counts``
        (rows per class), ``label_counts`` (rows coded -1, +1; None if multiclass),
        ``zero_based`` (the base in effect), ``zero_based_option`` (``"auto"``, or the base
        given or taken from ``like``), ``repaired_rows``,
        ``seconds`` (wall time of the whole conversion), ``compile_seconds`` (the part of
        it numba spent compiling kernels missing from its cache), ``text_bytes``
        (uncompressed text), ``source_bytes`` (file size), ``store_bytes``, ``mb_per_s``
        (text megabytes, 1e6 bytes, per second of the conversion, compiling left out),
        ``src``, ``dst``, ``source_sha256`` (of the file's bytes, as the store records it).

    Raises
    ------
    SvmlightFormatError
        On bad input, with the file name, the 1-based line and column (byte position within
        the line) of the offending field, and what is wrong with it.
    FileExistsError
        ``dst`` exists and ``overwrite`` is false.

    Notes
    -----
    Repaired: indices out of order within a row are sorted (``repaired_rows`` counts the
    rows). Tolerated: ``qid:N`` right after the label (ignored), ``#`` comments, blank and
    comment-only lines (skipped), CRLF line ends, tabs, a last line without newline,
    explicit zero values (kept, as scikit-learn keeps them), labels written in any float
    form ("1", "+1.0", "1e0").

    Refused: a non-numeric label, value or index; a label list ("1,2"); a pair without
    colon; an index below 1 (one-based) or 0 (zero-based) or at or beyond ``n_features``;
    NaN or infinite values and labels (including overflow such as 1e999); a value beyond
    float32's range when ``value_dtype`` is float32; an index repeated within a row; an
    unparsable or misplaced qid; a third distinct label (unless ``multiclass``) or, with
    ``classes``/``like``, a label outside them; a file with one label value other than
    -1/+1 and no ``classes``; a file with no data lines; a carriage return with more text
    after it on its line (lines ended by CR alone, old Mac style, would be read as one),
    checked once a line without newline reaches 64 KiB, and again each time it doubles,
    before the rest of it is read: the error is then the line's first, as when it is whole.
    """
    prepare()
    t0 = time.perf_counter()
    # their time is left out of the throughput
    with watching_compiles() as compiles, compiling_ahead("convert"):
        src, dst = os.fspath(src), os.fspath(dst)
        # before the parse, not at the writer's end (``like`` is read before: it may be dst)
        check_output(dst, overwrite, (src,), regular=True)
        if like is not None:
            with Store(like) as model:
                like_features, like_classes = model.n_features, model.classes
                like_base = model.metadata["options"].get("zero_based")
            if like_base in (True, False):  # older stores may not say
                if zero_based not in ("auto", like_base):
                    raise ValueError(f"zero_based={zero_based} (--zero-based) contradicts {like}, "
                                     f"read {'zero' if like_base else 'one'}-based")
                zero_based = like_base
            if n_features is not None and int(n_features) != like_features:
                raise ValueError(f"n_features={n_features} contradicts {like}, whose width is "
                                 f"{like_features}")
            if classes is not None and tuple(map(float, classes)) != like_classes:
                raise ValueError(f"classes={tuple(classes)} contradicts {like}'s {like_classes}")
            n_features, classes = like_features, like_classes
        if classes is not None:
            multiclass = len(classes) > 2  # the classes say which store it is
        if _chunk_bytes < 1:
            raise ValueError(f"_chunk_bytes must be >= 1, got {_chunk_bytes}")

        stdin = src == STDIN
        with (os.fdopen(os.dup(sys.stdin.fileno()), "rb") if stdin else open(src, "rb")) as fh:
            if stdin:
                src = STDIN_NAME  # as errors and the store's source name say it
            head = fh.peek(8)[:8]  # not read and seek back: the input may be a pipe
            kind = _compression(src, head)
            source_bytes = os.fstat(fh.fileno()).st_size
            # unit_scale: kB, MB, GB of 10^3, 10^6, 10^9 bytes, as in the summary's MB/s
            bar = progress_bar(progress, total=source_bytes, unit="B", unit_scale=True,
                               desc=os.path.basename(src), disable=None,
                               file=sys.stderr, leave=False)  # disable=None: on a terminal only
            try:
                with StoreWriter(dst, value_dtype=value_dtype, compression=compression,
                                 compression_level=compression_level, fletcher32=fletcher32,
                                 encoding=encoding, overwrite=overwrite,
                                 multiclass=multiclass) as writer:
                    parser = BlockParser(src, writer.add_block,
                                         lambda: _shift_written_indices(writer),
                                         zero_based=zero_based, n_features=n_features,
                                         classes=classes, multiclass=multiclass,
                                         block_rows=block_rows, block_nnz=block_nnz,
                                         value_dtype=writer.value_dtype,
                                         like=None if like is None else os.fspath(like))
                    raw = _HashingReader(fh, bar)
                    text = _open_text(raw, kind)
                    if kind is not None:
                        text = _CheckedDecompressor(text, src, kind, raw)
                    text_bytes = _stream(text, parser, _chunk_bytes)
                    raw.drain()
                    parser.finish()
                    final_classes, relabel = parser.classes()
                    if multiclass:
                        writer.relabel_classes(relabel)
                    elif relabel:
                        writer.negate_labels()
                    options = {"zero_based": parser.zero_based, "zero_based_option": zero_based,
                               "block_rows": block_rows,
                               "block_nnz": None if block_rows else block_nnz,
                               "repaired_rows": parser.repaired_rows, "input_compression": kind,
                               "multiclass": multiclass}
                    sha256 = raw.sha256.hexdigest()
                    writer.close(parser.n_features, final_classes,
                                 source={"name": os.path.basename(src), "size": raw.size,
                                         "sha256": sha256},
                                 extra_options=options)
            finally:
                bar.close()

    seconds = time.perf_counter() - t0
    working = max(seconds - compiles.seconds, 1e-9)
    summary = {
        "src": src, "dst": dst,
        "n_samples": parser.n_samples, "n_features": parser.n_features, "nnz": parser.nnz,
        "n_blocks": parser.n_blocks, "classes": final_classes,
        "class_counts": [int(c) for c in writer.class_counts],
        "label_counts": None if len(final_classes) > 2 else
        tuple(int(c) for c in writer.class_counts),
        "zero_based": parser.zero_based, "zero_based_option": zero_based,
        "repaired_rows": parser.repaired_rows,
        "seconds": seconds, "text_bytes": text_bytes, "source_bytes": source_bytes,
        "store_bytes": os.path.getsize(dst), "compile_seconds": compiles.seconds,
        "mb_per_s": text_bytes / 1e6 / working, "source_sha256": sha256,
    }
    if progress:
        print(f"streamssvm: converted {src} -> {dst}: {summary['n_samples']:,} rows x "
              f"{summary['n_features']:,} features, {summary['nnz']:,} nonzeros in "
              f"{seconds:.2f} s{_compiling(compiles.seconds)} ({summary['mb_per_s']:.1f} MB/s of "
              f"text)", file=sys.stderr)
    return summary


def _compiling(seconds):
    """The part of the summary's time numba spent compiling, if any."""
    return f", {seconds:.2f} s of it compiling kernels" if seconds else ""


class _Prefetcher:
    """Read ``text`` in a thread, ``depth`` chunks ahead: decompression and hashing (which
    release the GIL) overlap with parsing (Numba, nogil) and writing."""

    def __init__(self, text, chunk, depth=2):
        self._text = text
        self._chunk = chunk
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="streamssvm-reader", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                data = self._text.read(self._chunk)
                self._put(data)
                if not data:
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(exc)

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def read(self):
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.1)
            except queue.Empty:
                pass
        self._thread.join()


def _stream(text, parser, chunk, prefetch=True):
    """Feed ``text`` to ``parser`` in chunks cut after their last newline; return the
    number of text bytes. A line longer than the free space grows the buffer; once it has
    64 KiB or more without newline, and again each time it doubles, it is checked for a
    carriage return with more text after it (lines ended by CR alone), refused with the
    line's first error before the rest is read."""
    reader = _Prefetcher(text, chunk) if prefetch else None
    buf = np.empty(2 * chunk, np.uint8)
    filled = 0
    total = 0
    probe = _CR_PROBE  # the length of the line in buf[:filled] at which to check it next
    try:
        while True:
            data = reader.read() if prefetch else text.read(chunk)
            n = len(data)
            if not n:
                if filled:
                    parser.feed(buf, filled)
                return total
            if buf.shape[0] - filled < n:
                grown = np.empty(max(2 * buf.shape[0], filled + n), np.uint8)
                grown[:filled] = buf[:filled]
                buf = grown
            buf[filled:filled + n] = np.frombuffer(data, np.uint8)
            del data
            total += n
            newline = last_newline(buf, filled, filled + n)
            filled += n
            if newline < 0:
                if filled >= probe:
                    probe = 2 * filled
                    parser.refuse_cr(buf, filled)
                continue
            probe = _CR_PROBE
            end = newline + 1
            parser.feed(buf, end)
            tail = filled - end
            buf[:tail] = buf[end:filled]
            filled = tail
    finally:
        if reader is not None:
            reader.close()
