"""Check a whole store: every block's checksum and structure, and the metadata.

Reading a block during training already verifies its checksum and what the kernels index
(:meth:`Store.read_block`); :func:`verify_store` does that for every block without
stopping at the first problem, and adds the checks a training pass does not pay for:
finite values, strictly increasing indices within each row, the rows per class against
the metadata (:meth:`Store.class_counts`), and names the blocks whose datasets HDF5 does
not find (reads take them where /layout says, checked against their checksums).
"""

import json

import numpy as np

from .store import Store, StoreError

__all__ = ["verify_store"]


def _block_problems(store, block):
    """What :func:`_check_block` leaves to this pass: values, index order within rows."""
    problems = []
    where = f"{store.path}: block {block.index}"
    if block.nnz and not np.all(np.isfinite(block.data)):
        problems.append(f"{where}: {np.count_nonzero(~np.isfinite(block.data))} values are "
                        f"NaN or infinite")
    starts = np.zeros(len(block.indices), bool)
    starts[block.indptr[:-1][np.diff(block.indptr) > 0]] = True  # first entry of each row
    steps = np.diff(block.indices.astype(np.int64))
    bad = np.flatnonzero((steps <= 0) & ~starts[1:])
    if len(bad):
        row = int(np.searchsorted(block.indptr, bad[0] + 1, side="right")) - 1
        problems.append(f"{where}: column indices not strictly increasing in {len(bad)} "
                        f"places (first in row {block.row_start + row})")
    return problems


def verify_store(path):
    """Read every block of the store at ``path`` and check everything the format promises.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    problems : list of str
        One line per problem, naming the file and the block; empty if the store is sound.
    summary : dict
        ``n_blocks``, ``n_samples``, ``n_features``, ``nnz``, ``checksums`` (whether the
        store has them; without, changed values cannot be detected), ``blocks_read``
        (blocks that passed every check).
    """
    try:
        store = Store(path)
    except StoreError as exc:
        return [str(exc)], {"blocks_read": 0}
    except OSError as exc:  # missing, a folder, unreadable
        return [f"{path}: {exc.strerror}"], {"blocks_read": 0}
    with store:
        problems = []
        good = 0
        for k in range(store.n_blocks):
            try:
                block = store.read_block(k)
            except StoreError as exc:
                problems.append(str(exc))
                continue
            found = _block_problems(store, block)
            layout = store.layout_problem(k)  # a dataset HDF5 does not find, read by /layout
            found += [layout] if layout else []
            problems += found
            good += not found
        if good == store.n_blocks:
            try:  # the rows per class against the metadata
                store.class_counts()
            except StoreError as exc:
                problems.append(str(exc))
        summary = {"n_blocks": store.n_blocks, "n_samples": store.n_samples,
                   "n_features": store.n_features, "nnz": store.nnz,
                   "checksums": store.checksums, "blocks_read": good,
                   "options": json.dumps(store.metadata["options"], sort_keys=True)}
    return problems, summary
