"""The paper's evaluation protocol: independent random 5-part partitions of the rows.

Section 5 of Luo, Qiao & Zhang: "we randomly divide [a data set] into 5 parts, choose 4 parts
for training, and the remaining one for testing ... we generate 4 independent 5-part
partitions, leading to a total 20 runs". A fold is one (partition, part) pair: its test rows
are that part, its training rows the other four.
"""

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fold:
    """One run of the protocol.

    Attributes
    ----------
    partition : int
        Which of the independent partitions.
    part : int
        Which part of it is the test set.
    train_rows, test_rows : arrays of shape (n_train,), (n_test,), int64, increasing
        Row indices of the data set.
    """

    partition: int
    part: int
    train_rows: np.ndarray
    test_rows: np.ndarray

    @property
    def digest(self):
        """A short hash of the test rows (with n, it identifies the fold in a results file)."""
        return hashlib.sha256(self.test_rows.tobytes()).hexdigest()[:16]


def partition_labels(n_samples, n_partitions=4, n_parts=5, seed=0):
    """Part labels of every row under each partition.

    Partition ``p`` shuffles the rows with its own generator (spawned from ``seed``, so the
    partitions are independent and each is reproducible alone) and cuts the shuffled order
    into ``n_parts`` parts whose sizes differ by at most one.

    Parameters
    ----------
    n_samples, n_partitions, n_parts : int
    seed : int

    Returns
    -------
    array of shape (n_partitions, n_samples), int8
        ``labels[p, i]`` is the part of row ``i`` in partition ``p``.
    """
    if n_parts < 2:
        raise ValueError(f"n_parts must be at least 2, got {n_parts}")
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be at least 1, got {n_partitions}")
    if n_samples < n_parts:
        raise ValueError(f"{n_samples} rows cannot be cut into {n_parts} non-empty parts")
    labels = np.empty((n_partitions, n_samples), np.int8)
    for p, child in enumerate(np.random.SeedSequence(seed).spawn(n_partitions)):
        order = np.random.default_rng(child).permutation(n_samples)
        for part, rows in enumerate(np.array_split(order, n_parts)):
            labels[p, rows] = part
    return labels


def make_folds(n_samples, n_partitions=4, n_parts=5, seed=0):
    """The ``n_partitions * n_parts`` folds, partition by partition.

    Returns
    -------
    list of Fold
    """
    labels = partition_labels(n_samples, n_partitions, n_parts, seed)
    return [Fold(p, part, np.flatnonzero(labels[p] != part), np.flatnonzero(labels[p] == part))
            for p in range(n_partitions) for part in range(n_parts)]
