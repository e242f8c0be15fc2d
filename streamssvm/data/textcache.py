"""svmlight text where a store is expected: converted once, into a store kept for later runs.

The functions that take store paths (``train_stream``, ``train_one_vs_rest``, ``Model.score``
and its kin, ``SmoothSVC.fit`` / ``score``, the command line's ``train`` and ``predict``) also
take svmlight / libsvm text, plain or compressed (gzip, bzip2, xz), told from a store by its
first bytes. The text is converted by :func:`~streamssvm.data.convert_svmlight` into a cache
entry, a store and a small JSON record, used instead of it while it is unchanged.

Where
    Beside the text under a hidden name, ``.NAME.streamssvm.h5``, when the text's folder is
    writable, else in the user's cache folder (``$XDG_CACHE_HOME/streamssvm``, by default
    ``~/.cache/streamssvm``); in the folder ``cache_dir`` (``--cache-dir``) or
    ``$STREAMSSVM_CACHE_DIR`` instead, when one is given. The names in a cache folder carry a
    hash of the text's absolute path.
Which
    An entry is keyed by the conversion options that change the store (:data:`PLAIN` and
    :func:`conversion_options`). Text to train on is converted plainly: its own width, label
    values and index base (``zero_based="auto"``), with any number of classes (two give a
    binary store, as without ``multiclass``; ``train_one_vs_rest`` trains more, and
    ``train_stream`` refuses them naming it). Text to predict on is converted like the
    model's training data, to its width, classes and index base: an entry of its own,
    ``.NAME.KEY.streamssvm.h5`` (KEY hashes the options), unless the text's plain entry
    already has that width, those classes and that base (a training file predicted on).
Unchanged
    The record holds the text's fingerprint: size, mtime (ns) and the sha256 of its first and
    last MiB, with the sha256 of the whole text that the store records (``source_sha256``) as
    the conversion read it. The same fingerprint: the store is used without reading the text.
    Another size, or other ends: the text is converted again. Only the mtime other (touched,
    copied): the whole text is hashed once and, equal to the store's sha256, the record is
    renewed and the store used. A full hash at every use would read the whole text each run,
    for a check that the fingerprint makes at the cost of 2 MiB; it misses only an edit inside
    the text that keeps its size, both of its ends and its mtime.
Whole
    The store and then its record are written under temporary names and renamed
    (:func:`~streamssvm._atomic.atomic_output`): a failed or interrupted conversion publishes
    nothing (a killed one's temporary file is removed by the next write in its folder). Two
    processes converting the same text
    at once both convert and both publish, each reading a whole store of that text. A record
    is trusted only beside the store whose sha256 it gives.

Each use is announced in one line on stderr ("converting", "reusing"), with ``progress``,
as the converter's summary and the progress bars are. Not a warning: nothing is wrong, and
Python's default filter shows a warning once per line of code. Not logging: the package
configures none, and an unconfigured logger drops such lines, so the user would not learn
that a file was written beside the data.
"""

import contextlib
import hashlib
import json
import os
import stat
import sys

from .._atomic import atomic_output
from .convert import _HDF5_SIGNATURE, _MAGIC, convert_svmlight
from .store import Store, StoreError

__all__ = ["CACHE_DIR_ENV", "PLAIN", "conversion_options", "is_text", "store_path",
           "store_paths"]

CACHE_DIR_ENV = "STREAMSSVM_CACHE_DIR"
CONVERT_HINT = "a store is made from svmlight/libsvm text by `streamssvm convert IN OUT`"
RECORD_FORMAT = "streamssvm.text-cache"
# how text to train on is converted (see the module docstring)
PLAIN = {"n_features": None, "classes": None, "zero_based": "auto", "multiclass": True,
         "value_dtype": "float32"}
_END_BYTES = 1 << 20  # the fingerprint hashes this much of each end of the text
_HEAD_BYTES = 4096  # read to tell text from another file
# bytes that svmlight text holds nowhere: control codes other than \t \n \v \f \r
_CONTROL = bytes([*range(9), *range(14, 32), 127])


def is_text(path):
    """True for svmlight text (plain, or compressed), False for an HDF5 file (a store, if
    anything). Anything else is a StoreError saying what the file starts with."""
    with open(path, "rb") as fh:
        head = fh.read(_HEAD_BYTES)
    if head.startswith(_HDF5_SIGNATURE):
        return False
    if any(head.startswith(magic) for magic in _MAGIC.values()):
        return True
    if len(head.translate(None, _CONTROL)) == len(head):
        return True
    kind = " (a zip archive: a model file?)" if head.startswith(b"PK\x03\x04") else ""
    raise StoreError(f"{os.fspath(path)}: neither a store (HDF5) nor svmlight text: it starts "
                     f"with {head[:16]!r}{kind}; {CONVERT_HINT}")


def conversion_options(n_features=None, classes=None, zero_based="auto"):
    """The options converting text to a given width, label values and index base (those a
    model records of its training data), as a cache entry is keyed by them.

    Parameters
    ----------
    n_features : int, optional
    classes : sequence of floats, optional
        Two values (-1 and +1 in that order) or more (a multiclass store).
    zero_based : {"auto", True, False}
    """
    classes = None if classes is None else [float(c) for c in classes]
    return {"n_features": None if n_features is None else int(n_features), "classes": classes,
            "zero_based": zero_based, "multiclass": classes is None or len(classes) > 2,
            "value_dtype": "float32"}


def store_paths(data, like=None, cache_dir=None, progress=True):
    """``data``, a path or a list of paths and ``(path, first, stop)`` block ranges, with the
    path of every svmlight text replaced by its store's (:func:`store_path`)."""
    if isinstance(data, (str, os.PathLike)):
        return store_path(data, like, cache_dir, progress)
    return [store_path(part, like, cache_dir, progress) if isinstance(part, (str, os.PathLike))
            else (store_path(part[0], like, cache_dir, progress), *part[1:]) for part in data]


def store_path(path, like=None, cache_dir=None, progress=True):
    """The store to read for ``path``: itself if it is a store, else the store converted from
    the text, from the cache or converted now and kept.

    Parameters
    ----------
    path : str or path-like
    like : dict, optional
        Conversion options from :func:`conversion_options` (default :data:`PLAIN`).
    cache_dir : str or path-like, optional
        The folder of cache entries (default ``$STREAMSSVM_CACHE_DIR``, else beside the text
        or the user's cache folder).
    progress : bool
        Announce the conversion or reuse on stderr, and show the converter's bar and summary.

    Returns
    -------
    str

    Raises
    ------
    StoreError
        ``path`` is neither a store nor text, or is text that is not a regular file (a pipe).
    SvmlightFormatError
        The text does not parse (the file, line and column named).
    """
    mode = os.stat(path).st_mode  # a missing path: open()'s error, naming it
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # read once, a pipe cannot be cached
        raise StoreError(f"{os.fspath(path)}: not a regular file (a pipe?): its conversion "
                         f"cannot be kept; {CONVERT_HINT}")
    if not is_text(path):
        return os.fspath(path)
    text = os.path.abspath(os.fspath(path))
    options = dict(PLAIN if like is None else like)
    fingerprint = _fingerprint(text)
    cache_dir = cache_dir or os.environ.get(CACHE_DIR_ENV) or None
    beside = os.path.dirname(text)
    folders = [os.path.abspath(cache_dir)] if cache_dir else [beside, _user_cache()]
    for key in [options] + ([PLAIN] if options != PLAIN else []):
        for folder in folders:
            store, record = _entry(text, folder, key, folder == beside)
            note = _reused(text, store, record, fingerprint, key, options)
            if note is not None:
                _say(progress, f"reusing {_shown(path, store, folder == beside)}, converted "
                               f"from {os.fspath(path)}{note}")
                return store
    folder = beside if not cache_dir and os.access(beside, os.W_OK) else folders[-1]
    os.makedirs(folder, exist_ok=True)
    store, record = _entry(text, folder, options, folder == beside)
    again = " again (the text changed)" if os.path.exists(store) else ""
    _say(progress, f"converting {os.fspath(path)}{again} to "
                   f"{_shown(path, store, folder == beside)} (kept for the next run)")
    made = convert_svmlight(os.fspath(path), store, overwrite=True, progress=progress, **options)
    _write_record(record, text, fingerprint, made["source_sha256"], options)
    return store


def _say(progress, line):
    if progress:
        print(f"streamssvm: {line}", file=sys.stderr)


def _shown(path, store, beside):
    """``store`` as the user would name it: beside the text, by the folder the text was named
    with."""
    if beside:
        return os.path.join(os.path.dirname(os.fspath(path)), os.path.basename(store))
    return store


def _user_cache():
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                        "streamssvm")


def _digest(value, n=12):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:n]


def _entry(text, folder, options, beside):
    """The store and the record of the entry of ``text`` converted with ``options`` in
    ``folder``: hidden beside the text, keyed by the text's path in a cache folder."""
    name = os.path.basename(text)
    if beside:
        parts = [f".{name}"] + ([] if options == PLAIN else [_digest(options)])
    else:
        parts = [name, _digest([text, options])]
    stem = os.path.join(folder, ".".join([*parts, "streamssvm"]))
    return stem + ".h5", stem + ".json"


def _fingerprint(text):
    """``size``, ``mtime_ns`` and ``ends_sha256`` (of the first and last MiB) of the file."""
    sha256 = hashlib.sha256()
    with open(text, "rb") as fh:
        st = os.fstat(fh.fileno())
        sha256.update(fh.read(_END_BYTES))
        if st.st_size > _END_BYTES:
            fh.seek(max(_END_BYTES, st.st_size - _END_BYTES))
            sha256.update(fh.read(_END_BYTES))
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ends_sha256": sha256.hexdigest()}


def _file_sha256(text):
    sha256 = hashlib.sha256()
    buf = bytearray(1 << 20)
    with open(text, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            sha256.update(memoryview(buf)[:n])
    return sha256.hexdigest()


def _gives(store, options):
    """True if converting with ``options`` would write ``store``'s width, classes, index base
    and value type."""
    base = store.metadata["options"].get("zero_based")
    return ((options["n_features"] is None or store.n_features == options["n_features"])
            and (options["classes"] is None or list(store.classes) == options["classes"])
            and options["zero_based"] in ("auto", base)
            and store.value_dtype.name == options["value_dtype"])


def _reused(text, store, record, fingerprint, key, options):
    """None unless ``store``, the entry converted with ``key``, holds ``text`` as it is now,
    as converting with ``options`` would write it (see the module docstring); else what
    to add to the announcement. A touched text whose content is unchanged has its record
    renewed."""
    try:
        with Store(store) as made:
            meta = made.metadata
            if not _gives(made, options):
                return None
    except (OSError, StoreError):  # none yet, or not readable: made again
        return None
    sha256 = meta.get("source_sha256")
    saved = _read_record(record)
    trusted = saved if (saved.get("text") == text and sha256
                        and saved.get("source_sha256") == sha256) else {}
    if trusted and all(trusted.get(k) == v for k, v in fingerprint.items()):
        return ""
    if meta.get("source_size") != fingerprint["size"] or (
            trusted and trusted.get("ends_sha256") != fingerprint["ends_sha256"]):
        return None
    if _file_sha256(text) != sha256:
        return None
    with contextlib.suppress(OSError):  # not renewed: the next run hashes the text again
        _write_record(record, text, fingerprint, sha256, key)
    return " (its content unchanged: sha256 checked)"


def _read_record(record):
    try:
        with open(record, encoding="utf-8") as fh:
            saved = json.load(fh)
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) and saved.get("format") == RECORD_FORMAT else {}


def _write_record(record, text, fingerprint, sha256, options):
    with atomic_output(record, overwrite=True) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"format": RECORD_FORMAT, "version": 1, "text": text, **fingerprint,
                       "source_sha256": sha256, "options": options}, fh, indent=1)
