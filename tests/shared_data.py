"""The real data sets of tests/data, loaded once per test session."""

import functools
import io
import lzma
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

DATA = Path(__file__).resolve().parent / "data"


@functools.lru_cache(maxsize=None)
def _load(name, n_features):
    from sklearn.datasets import load_svmlight_file

    path = DATA / f"{name}.svm.xz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    X, y = load_svmlight_file(io.BytesIO(lzma.open(path).read()), n_features=n_features)
    X = sp.csr_matrix(X)
    X.indices = X.indices.astype(np.int32)
    return X, y


def load_shared(name, n_rows=None, n_features=None):
    """``(X, y)`` of ``name`` (e.g. "a9a"): CSR with int32 indices; the first ``n_rows``.
    Copies of the session's arrays, so that no test sees what another did to its own."""
    X, y = _load(name, n_features)
    return X[:n_rows].copy(), y[:n_rows].copy()
