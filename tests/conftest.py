"""Shared fixtures: the real data sets in tests/data, text files in tmp dirs, references."""

import bz2
import gzip
import io
import lzma
import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# no helper compiling a first run's kernels on another core (streamssvm._ahead): the suite's
# workers take every core; tests/test_ahead.py turns it on for its own children
os.environ.setdefault("STREAMSSVM_COMPILE_AHEAD", "0")
# the real data sets the tests read, shipped with the repository (tests/data/README.md); a9a
# links to the package's copy (streamssvm/datasets)
SHARED_DATA = REPO_ROOT / "tests" / "data"

# Real files and the width to convert them with (a9a's test file lacks the last feature).
SHARED_FILES = {
    "a9a.svm.xz": None,
    "a9a.t.svm.xz": 123,
    "w8a.svm.xz": None,
    "ijcnn1.svm.xz": None,
    "ijcnn1.t.svm.xz": None,
}


@pytest.fixture(scope="session")
def repo_root():
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data():
    """The folder of real data sets (tests/data)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} not found")
    return SHARED_DATA


def compress(data, kind):
    """``data`` (bytes) compressed as ``kind`` in {None, "gz", "bz2", "xz"}."""
    return {None: lambda b: b, "gz": gzip.compress, "bz2": bz2.compress,
            "xz": lzma.compress}[kind](data)


@pytest.fixture
def write_text(tmp_path):
    """``write_text(text, name="data.svm", kind=None) -> Path``: a (compressed) text file."""

    def write(text, name="data.svm", kind=None):
        if isinstance(text, str):
            text = text.encode()
        path = tmp_path / (name + (f".{kind}" if kind else ""))
        path.write_bytes(compress(text, kind))
        return path

    return write


def read_text(path):
    """The uncompressed bytes of a (possibly compressed) file."""
    raw = Path(path).read_bytes()
    for magic, decompress in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress),
                              (b"\xfd7zXZ\x00", lzma.decompress)):
        if raw.startswith(magic):
            return decompress(raw)
    return raw


def sklearn_reference(path, **kwargs):
    """``load_svmlight_file`` on any of our inputs (it cannot read .xz itself): returns
    ``(X, y)`` with int32 indices."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(io.BytesIO(read_text(path)), **kwargs)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y


def record_layout(f):
    """Record /layout of the open h5py file ``f`` again, with its checksum, as a writer
    that put the blocks' datasets where they now are would have."""
    from streamssvm.data.checksum import checksum
    from streamssvm.data.store import layout_table

    table = layout_table(f, int(f.attrs["n_blocks"]))
    f["layout"][...] = table
    f["layout"].attrs["checksum"] = checksum(table)


def random_svmlight(rng, n_rows, n_features, *, labels=(-1, 1), density=0.05, one_based=True,
                    formats=("%.7g", "%r", "%d", "%.3e"), unsorted=False, empty_rows=True):
    """Random svmlight text as bytes, with values in several float spellings."""
    lines = []
    base = 1 if one_based else 0
    for i in range(n_rows):
        k = 0 if (empty_rows and i % 17 == 5) else max(1, rng.binomial(n_features, density))
        cols = np.sort(rng.choice(n_features, size=min(k, n_features), replace=False))
        if unsorted and len(cols) > 2 and i % 3 == 0:
            cols = rng.permutation(cols)
        parts = [str(labels[rng.integers(len(labels))])]
        for c in cols:
            fmt = formats[rng.integers(len(formats))]
            v = float(rng.standard_normal() * 10.0 ** rng.integers(-4, 4))
            parts.append(f"{c + base}:" + (fmt % (round(v) if fmt == "%d" else v)))
        lines.append(" ".join(parts))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def python_env():
    """Environment for subprocesses running this checkout's package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture
def another_streamssvm(tmp_path, monkeypatch):
    """PYTHONPATH holding only another streamssvm, one that fails on import naming its file,
    for a tool that must use the repository's package whatever is installed or first."""
    other = tmp_path / "another" / "streamssvm"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text('raise ImportError(f"imported {__file__}")\n')
    monkeypatch.setenv("PYTHONPATH", str(other.parent))
    return other.parent


@pytest.fixture(scope="session")
def python():
    return sys.executable


@pytest.fixture(scope="session")
def sklearn_load():
    """:func:`sklearn_reference` as a fixture."""
    return sklearn_reference


@pytest.fixture(scope="session")
def make_svmlight():
    """:func:`random_svmlight` as a fixture."""
    return random_svmlight
