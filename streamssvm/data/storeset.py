"""Blocks of one or several stores read as one source, and cut into shards.

A :class:`StoreSet` concatenates whole stores, or block ranges of stores, in the order
given: block ``k`` and row ``i`` of the set are numbered across all of them. It trains
on several stores as on one, and a Dask worker reads its shard of the data through one.
"""

import os
from dataclasses import replace

import numpy as np

from .checksum import digest
from .source import BlockSource, OneVsRestView
from .store import Store, StoreError
from .textcache import CONVERT_HINT, store_paths


def _is_piece(part):
    return isinstance(part, (str, os.PathLike)) or (
        isinstance(part, (list, tuple)) and len(part) == 3
        and isinstance(part[0], (str, os.PathLike)))


def names_stores(data):
    """True if ``data`` names stores: a path (of a store or of svmlight text), or a non-empty
    list of paths and ``(path, first, stop)`` block ranges (what :func:`open_stores`
    opens)."""
    return isinstance(data, (str, os.PathLike)) or (
        isinstance(data, (list, tuple)) and len(data) > 0 and all(map(_is_piece, data)))


def open_stores(data, like=None, cache_dir=None, progress=True):
    """The source that ``data`` names (see :func:`names_stores`): a Store for one path,
    else a StoreSet. A path of svmlight text stands for its store, converted once and kept
    (:func:`~streamssvm.data.textcache.store_path`, which takes ``like``, ``cache_dir`` and
    ``progress``)."""
    data = store_paths(data, like, cache_dir, progress)
    return _open_store(data) if isinstance(data, (str, os.PathLike)) else StoreSet(data)


def index_base(source):
    """The index base of the svmlight text that the stores of ``source`` (a Store, a
    StoreSet, or a one-vs-rest view of one) were converted from: True zero-based, False
    one-based; None if they do not say or disagree, or ``source`` is not stores."""
    while isinstance(source, OneVsRestView):
        source = source.source
    stores = ([source] if isinstance(source, Store) else
              list(source._stores.values()) if isinstance(source, StoreSet) else [])
    bases = {store.metadata["options"].get("zero_based") for store in stores}
    base = bases.pop() if len(bases) == 1 else None
    return base if base in (True, False) else None


def _open_store(path):
    """``Store(path)``; an HDF5 file that is not a store says how to make one."""
    try:
        return Store(path)
    except StoreError as exc:
        if "not a streamssvm store" not in str(exc):
            raise
        raise StoreError(f"{exc}; {CONVERT_HINT} (train and predict also take the text "
                         f"itself)") from None


class StoreSet(BlockSource):
    """Stores, or block ranges of stores, as one block source.

    Parameters
    ----------
    parts : str, path-like, or sequence of paths or of ``(path, first, stop)``
        Whole stores, or blocks ``first .. stop - 1`` of a store (``stop`` None: to the
        end). All stores must have the same width and the same label map. An open Store
        or StoreSet stands for its files (opened again).

    Attributes
    ----------
    pieces : list of (str, int, int)
        ``(absolute path, first block, stop block)`` of every part, in order.
    """

    def __init__(self, parts):
        if isinstance(parts, StoreSet):
            parts = parts.pieces
        elif isinstance(parts, Store):
            parts = [parts.path]
        elif isinstance(parts, (str, os.PathLike)):
            parts = [parts]
        if not isinstance(parts, (list, tuple)) or not parts:
            raise ValueError(f"stores: a path or a non-empty list of paths, got "
                             f"{type(parts).__name__}")
        for part in parts:
            if not _is_piece(part):
                raise ValueError(f"not a store path nor (path, first, stop): {part!r}")
        parts = [(p, 0, None) if isinstance(p, (str, os.PathLike)) else p for p in parts]
        self._stores = {}  # a store named twice is opened once
        self.pieces = []
        try:
            for path, first, stop in parts:
                path = os.path.abspath(os.fspath(path))
                if path not in self._stores:
                    self._stores[path] = _open_store(path)
                n_blocks = self._stores[path].n_blocks
                stop = n_blocks if stop is None else int(stop)
                if not 0 <= int(first) <= stop <= n_blocks:
                    raise ValueError(f"{path}: blocks {first}:{stop} outside 0:{n_blocks}")
                self.pieces.append((path, int(first), stop))
            self._check_alike()
        except BaseException:
            self.close()
            raise
        self.name = " + ".join(path for path, _, _ in self.pieces)
        stores = [self._stores[path] for path, _, _ in self.pieces]
        self.n_features = stores[0].n_features
        self.classes = stores[0].classes
        self.value_dtype = np.result_type(*(s.value_dtype for s in stores))
        self.row_offsets = self._concatenated("row_offsets")
        self.nnz_offsets = self._concatenated("nnz_offsets")
        self.n_samples = int(self.row_offsets[-1])
        self.nnz = int(self.nnz_offsets[-1])
        # first block of every piece, and the end: read_block finds a block's piece here
        self._piece_starts = np.cumsum([0] + [stop - first for _, first, stop in self.pieces])

    def _check_alike(self):
        first_path, first = next(iter(self._stores.items()))
        for path, store in self._stores.items():
            if store.n_features != first.n_features or store.classes != first.classes:
                raise StoreError(
                    f"{path}: {store.n_features} features and labels {store.classes}, but "
                    f"{first_path} has {first.n_features} and {first.classes} (convert every "
                    f"part with `streamssvm convert --like` the first one)")

    def _concatenated(self, name):
        """Row or nonzero offsets of the blocks of all pieces, counted from 0."""
        parts, total = [np.zeros(1, np.int64)], 0
        for path, first, stop in self.pieces:
            offsets = getattr(self._stores[path], name)[first:stop + 1]
            parts.append(offsets[1:] - offsets[0] + total)
            total = int(parts[-1][-1]) if len(parts[-1]) else total
        return np.concatenate(parts)

    def close(self):
        for store in self._stores.values():
            store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def fingerprint(self):
        """What identifies each store file: ``{path: (n_samples, n_features, nnz, n_blocks,
        created)}``; another process compares it to know that it opened the same files."""
        return {path: (s.n_samples, s.n_features, s.nnz, s.n_blocks, s.metadata.get("created"))
                for path, s in self._stores.items()}

    def data_digest(self):
        """As the source's, from the stores' tables of their blocks' checksums if they all
        have one (no pass)."""
        stores = [self._stores[path] for path, _, _ in self.pieces]
        if not all(s.checksums for s in stores):
            return super().data_digest()
        return digest([s._block_checksums[first:stop]
                       for s, (_, first, stop) in zip(stores, self.pieces)])

    def _renumbered(self, piece, block):
        """``block`` of a piece's store, with its index and first row in the set."""
        path, first, _ = self.pieces[piece]
        k = int(self._piece_starts[piece]) + block.index - first
        row = int(self.row_offsets[k])
        return replace(block, index=k, row_start=row)

    def read_block(self, k):
        if not 0 <= k < self.n_blocks:
            raise IndexError(f"{self.name}: block {k} outside 0..{self.n_blocks - 1}")
        piece = int(np.searchsorted(self._piece_starts, k, side="right")) - 1
        path, first, _ = self.pieces[piece]
        return self._renumbered(piece, self._stores[path].read_block(
            first + k - int(self._piece_starts[piece])))

    def iter_blocks(self, order=None, transient=False):
        """The blocks in order, each store read ahead as by :meth:`Store.iter_blocks`
        (with ``order``, block by block)."""
        if order is not None:
            yield from super().iter_blocks(order, transient)
            return
        for piece, (path, first, stop) in enumerate(self.pieces):
            for block in self._stores[path].iter_blocks(range(first, stop), transient):
                yield self._renumbered(piece, block)

    def class_counts(self):
        """Rows per class: from the metadata of whole stores, by reading the labels of
        block ranges."""
        counts = np.zeros(len(self.classes), np.int64)
        for path, first, stop in self.pieces:
            store = self._stores[path]
            if (first, stop) == (0, store.n_blocks):
                counts += store.class_counts()
                continue
            for b in store.iter_blocks(range(first, stop), transient=True):
                counts += np.bincount(b.y if self.multiclass else b.y > 0,
                                      minlength=len(counts))
        return counts

    def shards(self, n_shards):
        """Cut the blocks into at most ``n_shards`` runs of consecutive blocks with about
        equal nonzeros (at least one block each).

        Returns
        -------
        list of list of (str, int, int)
            The pieces of each shard, ``(path, first, stop)``, ready for ``StoreSet``.
        """
        n_shards = max(1, min(int(n_shards), self.n_blocks))
        targets = self.nnz * np.arange(1, n_shards) / n_shards
        bounds = [0]
        for t, cut in enumerate(np.searchsorted(self.nnz_offsets, targets), start=1):
            bounds.append(int(min(max(cut, bounds[-1] + 1), self.n_blocks - (n_shards - t))))
        bounds.append(self.n_blocks)
        return [self._pieces_of(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def _pieces_of(self, lo, hi):
        """Blocks ``lo .. hi - 1`` of the set as store pieces."""
        out = []
        for piece, (path, first, stop) in enumerate(self.pieces):
            start = int(self._piece_starts[piece])
            a, b = max(lo, start), min(hi, start + stop - first)
            if a < b:
                out.append((path, first + a - start, first + b - start))
        return out
