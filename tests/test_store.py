"""The HDF5 store: round trips, row ranges, block order, the in-memory twin, options, damage."""

import gc
import os
import shutil
import subprocess
import time

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import streamssvm.data.store as store_module
from streamssvm import InMemorySource, Store, StoreError, StoreWriter, convert_svmlight
from streamssvm.data.checksum import attributes_checksum, checksum
from streamssvm.data.verify import verify_store


def random_csr(rng, n_rows=257, n_features=40, density=0.1, dtype=np.float64):
    X = sp.random(n_rows, n_features, density=density, format="csr", random_state=rng,
                  dtype=dtype)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    y = np.where(rng.random(n_rows) < 0.4, 1, -1).astype(np.int8)
    return X, y


def write_store(path, X, y, offsets, n_features=None, classes=(-1.0, 1.0), **options):
    with StoreWriter(path, **options) as writer:
        for a, b in zip(offsets[:-1], offsets[1:]):
            block = X[a:b]
            writer.add_block(block.indptr, block.indices, block.data, y[a:b])
        writer.close(n_features if n_features is not None else X.shape[1], classes,
                     source={"name": "made-up.svm", "size": 123, "sha256": "ab" * 32},
                     extra_options={"note": "test"})


@pytest.fixture
def stored(tmp_path, rng):
    X, y = random_csr(rng)
    offsets = [0, 100, 101, 101, 180, 257]  # uneven, with an empty block
    path = tmp_path / "s.h5"
    write_store(path, X, y, offsets, encoding="plain")  # "auto": blocks 1 and 2 lean
    return path, X, y, offsets


def test_round_trip(stored):
    path, X, y, offsets = stored
    with Store(path) as store:
        assert (store.n_samples, store.n_features, store.nnz) == (X.shape[0], X.shape[1], X.nnz)
        assert store.n_blocks == len(offsets) - 1
        assert store.row_offsets.tolist() == offsets
        assert store.classes == (-1.0, 1.0)
        assert store.value_dtype == np.float32
        assert store.label_counts() == (int(np.sum(y < 0)), int(np.sum(y > 0)))
        Z, yz = store.read_rows(0, store.n_samples)
        meta = store.metadata
    assert Z.dtype == np.float32
    assert np.array_equal(Z.indptr, X.indptr) and np.array_equal(Z.indices, X.indices)
    assert np.array_equal(Z.data, X.data.astype(np.float32))
    assert np.array_equal(yz, y)
    assert meta["source_name"] == "made-up.svm" and meta["source_size"] == 123
    assert meta["source_sha256"] == "ab" * 32 and meta["options"]["note"] == "test"
    assert meta["format"] == "streamssvm.csr-blocks" and meta["version"] == 1
    assert meta["n_blocks"] == len(offsets) - 1 and meta["created"]


def test_read_rows_across_blocks(stored):
    path, X, y, offsets = stored
    X32 = X.astype(np.float32)
    with Store(path) as store:
        for start, stop in [(0, 0), (0, 1), (99, 102), (100, 101), (101, 101), (50, 200),
                            (179, 181), (256, 257), (0, 257), (257, 257), (101, 180)]:
            Z, yz = store.read_rows(start, stop)
            assert Z.shape == (stop - start, X.shape[1])
            assert (Z != X32[start:stop]).nnz == 0, (start, stop)
            assert np.array_equal(yz, y[start:stop])
        for bad in [(-1, 3), (5, 3), (0, 258)]:
            with pytest.raises(IndexError):
                store.read_rows(*bad)


def test_read_range_joins_blocks_and_checks_each(stored, tmp_path):
    """Consecutive blocks (the empty one included) as one block equal to those rows; a
    damaged block in the range is refused by name, as by read_block."""
    path, X, y, offsets = stored
    with Store(path) as store:
        for first, stop in [(0, 5), (1, 4), (2, 3), (3, 5), (0, 1)]:
            block = store.read_range(first, stop)
            a, b = offsets[first], offsets[stop]
            assert (block.index, block.row_start, block.n_rows) == (first, a, b - a)
            assert (block.to_csr(X.shape[1]) != X[a:b].astype(np.float32)).nnz == 0
            assert np.array_equal(block.y, y[a:b])
    bad = tmp_path / "bad.h5"
    shutil.copy(path, bad)
    with h5py.File(bad, "r+") as f:
        f["blocks/00000003/data"][0] += 1.0
    with Store(bad) as store, pytest.raises(StoreError, match="block 3: dataset data does not"):
        store.read_range(0, 5)


def test_iter_blocks_in_given_order(stored):
    path, X, y, offsets = stored
    order = [3, 0, 4, 2, 0]
    with Store(path) as store:
        blocks = list(store.iter_blocks(order))
        in_order = [b.index for b in store.iter_blocks()]
        with pytest.raises(IndexError):
            store.read_block(5)
    assert in_order == [0, 1, 2, 3, 4]
    assert [b.index for b in blocks] == order
    for block in blocks:
        a, b = offsets[block.index], offsets[block.index + 1]
        assert block.row_start == a and block.n_rows == b - a
        assert (block.to_csr(X.shape[1]) != X[a:b].astype(np.float32)).nnz == 0
        assert np.array_equal(block.y, y[a:b])


def rows_of(block, width):
    M = block.to_csr(width)
    return M.indptr.tolist(), M.indices.tolist(), M.data.tolist(), block.y.tolist()


@pytest.mark.parametrize("block_rows, block_nnz", [(None, 100), (None, 1), (None, 1 << 19),
                                                    (13, 1 << 19)])
def test_in_memory_source_and_store_yield_identical_blocks(tmp_path, rng, make_svmlight,
                                                           sklearn_load, write_text,
                                                           block_rows, block_nnz):
    src = write_text(make_svmlight(rng, 200, 60, labels=(1, 2)))
    X, ylab = sklearn_load(src)
    memory = InMemorySource(X, ylab, block_rows=block_rows, block_nnz=block_nnz,
                            value_dtype=np.float32)
    convert_svmlight(src, tmp_path / "s.h5", block_rows=block_rows, block_nnz=block_nnz,
                     progress=False)
    with Store(tmp_path / "s.h5") as store:
        assert store.classes == memory.classes == (1.0, 2.0)
        assert np.array_equal(store.row_offsets, memory.row_offsets)
        assert store.label_counts() == memory.label_counts()
        for a, b in zip(store.iter_blocks(), memory.iter_blocks()):
            assert ((a.index, a.row_start, a.n_rows, a.nnz)
                    == (b.index, b.row_start, b.n_rows, b.nnz))
            assert rows_of(a, X.shape[1]) == rows_of(b, X.shape[1])
            assert a.data.dtype == b.data.dtype == np.float32


@pytest.mark.parametrize("options", [
    {"compression": "gzip"}, {"compression": "gzip", "compression_level": 9},
    {"compression": "lzf"}, {"fletcher32": True},
    {"compression": "lzf", "fletcher32": True, "value_dtype": "float64"}])
def test_options_recorded_and_readable(tmp_path, rng, options):
    X, y = random_csr(rng, 500, 30)
    path = tmp_path / "s.h5"
    write_store(path, X, y, [0, 200, 500], **options)
    with Store(path) as store:
        recorded = store.metadata["options"]
        Z, yz = store.read_rows(0, 500)
        dtype = store.value_dtype
    assert recorded["compression"] == options.get("compression")
    # the level used, h5py's 4 when none is given (it recorded None)
    assert recorded["compression_level"] == options.get(
        "compression_level", 4 if options.get("compression") == "gzip" else None)
    assert recorded["fletcher32"] == options.get("fletcher32", False)
    assert recorded["value_dtype"] == options.get("value_dtype", "float32") == dtype.name
    assert (Z != X.astype(dtype)).nnz == 0 and np.array_equal(yz, y)
    with h5py.File(path, "r") as f:
        ds = f["blocks/00000000/data"]
        assert ds.compression == options.get("compression")
        assert ds.fletcher32 == options.get("fletcher32", False)
        if options.get("compression") == "gzip":
            assert ds.compression_opts == options.get("compression_level", 4)


@pytest.mark.parametrize("compression, level", [("blosc-lz4", None), ("blosc-zstd", 9)])
def test_blosc_stores_read_as_plain_ones_and_by_other_hdf5_readers(tmp_path, rng, compression,
                                                                   level):
    import hdf5plugin  # what any HDF5 reader needs for these blocks

    X, y = random_csr(rng, 500, 30)
    plain, packed = tmp_path / "plain.h5", tmp_path / "blosc.h5"
    write_store(plain, X, y, [0, 200, 500])
    write_store(packed, X, y, [0, 200, 500], compression=compression, compression_level=level)
    with Store(plain) as a, Store(packed) as b:
        assert b.metadata["options"]["compression"] == compression
        assert b.metadata["options"]["compression_level"] == (level or 5)
        assert _same_blocks(a, b)
    with h5py.File(packed, "r") as f, h5py.File(plain, "r") as g:
        for name in ("indptr", "indices", "data", "y"):
            ds = f[f"blocks/00000001/{name}"]
            blosc, _, values, _ = ds.id.get_create_plist().get_filter(0)
            # cd_values: ..., level, shuffle (1: bytes), codec (1: lz4, 5: zstd)
            assert blosc == hdf5plugin.BLOSC_ID and values[4:] == (
                level or 5, 1, {"blosc-lz4": 1, "blosc-zstd": 5}[compression])
            assert np.array_equal(ds[...], g[f"blocks/00000001/{name}"][...])


def test_blosc_without_hdf5plugin_is_refused_with_the_store_named(tmp_path, rng, python,
                                                                   python_env):
    """Where hdf5plugin cannot be imported, reading a Blosc store and writing one stop with
    the store named and the package to install, and nothing is written."""
    X, y = random_csr(rng, 100, 10)
    packed = tmp_path / "blosc.h5"
    write_store(packed, X, y, [0, 100], compression="blosc-lz4")
    src = tmp_path / "t.svm"
    src.write_text("1 1:1\n-1 2:1\n")
    out = tmp_path / "new.h5"
    code = ("import sys; sys.modules['hdf5plugin'] = None\n"  # as where it is not installed
            "from streamssvm.cli import main; sys.exit(main(sys.argv[1:]))")
    for args, named in ((["info", packed], packed),
                        (["train", packed, "-o", tmp_path / "m.npz"], packed),
                        (["convert", src, out, "--compression", "blosc-zstd"], out)):
        r = subprocess.run([python, "-c", code, *map(str, args)], env=python_env,
                           capture_output=True, text=True, timeout=120)
        compression = "blosc-zstd" if "convert" in args else "blosc-lz4"
        assert r.returncode == 1 and r.stderr == (
            f"streamssvm: error: {named}: {compression} compression needs the hdf5plugin "
            f"package (pip install 'streamssvm[blosc]')\n")
    assert sorted(os.listdir(tmp_path)) == ["blosc.h5", "t.svm"]


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_a_pass_over_a_blosc_store_keeps_its_memory(tmp_path, python, python_env):
    """HDF5's free lists kept what every block read through the Blosc filter had used (a
    pass over these 94 MB of blocks grew the process by 37-41 MB; now by 6-9 MB)."""
    rng = np.random.default_rng(5)
    path = tmp_path / "blosc.h5"
    with StoreWriter(path, compression="blosc-lz4") as writer:
        for _ in range(100):
            indices = np.cumsum(rng.integers(1, 10, (100, 2000)), axis=1, dtype=np.int32)
            writer.add_block(np.arange(0, 200001, 2000, dtype=np.int32), indices.ravel(),
                             rng.random(200000), np.where(rng.random(100) < 0.5, -1, 1))
        writer.close(20000, (-1.0, 1.0))
    code = ("import sys; from streamssvm.data import Store\n"
            "def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
            "with Store(sys.argv[1]) as s:\n"
            "    s.read_block(0); before = rss()\n"
            "    for b in s.iter_blocks(transient=True): pass\n"
            "print(rss() - before)")
    r = subprocess.run([python, "-c", code, str(path)], env=python_env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) < 20e6


def test_writer_leaves_nothing_on_error(tmp_path, rng):
    X, y = random_csr(rng)
    path = tmp_path / "s.h5"
    with pytest.raises(RuntimeError):
        with StoreWriter(path) as writer:
            writer.add_block(X.indptr, X.indices, X.data, y)
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="n_features=3"):
        with StoreWriter(path) as writer:
            writer.add_block(X.indptr, X.indices, X.data, y)
            writer.close(3, (-1, 1))
    assert list(tmp_path.iterdir()) == []


def test_a_store_goes_to_disk_as_it_grows(tmp_path, rng, monkeypatch):
    """Past WRITEBACK_BYTES a thread starts the disk's write of what the file holds
    (fdatasync) while the writer goes on; closing waits for it, and the store reads back
    whole."""
    monkeypatch.setattr(store_module, "WRITEBACK_BYTES", 1 << 16)
    X, y = random_csr(rng, n_rows=4000, n_features=500, density=0.1)
    path = tmp_path / "s.h5"
    with StoreWriter(path, value_dtype="float64", encoding="plain") as writer:
        for a in range(0, 4000, 500):
            block = X[a:a + 500]
            writer.add_block(block.indptr, block.indices, block.data, y[a:a + 500])
        sink = writer._sink
        assert sink._writeback is not None  # started by the blocks' writes
        writer.close(X.shape[1], (-1.0, 1.0))
    assert not sink._writeback.is_alive()
    with Store(path) as store:
        got = sp.vstack([sp.csr_matrix((b.data, b.indices, b.indptr), shape=(b.n_rows, 500))
                         for b in store.iter_blocks()])
    assert (got != X).nnz == 0


def test_writer_left_without_close_publishes_nothing(tmp_path, rng):
    """Leaving the ``with`` without close() renamed the unfinished file onto ``path``: an
    unreadable store, in place of a good one with overwrite=True."""
    X, y = random_csr(rng)
    path = tmp_path / "s.h5"
    write_store(path, X, y, [0, X.shape[0]])
    with pytest.raises(StoreError, match=rf"^{path}: the writer was left without close\(\)"):
        with StoreWriter(path, overwrite=True) as writer:
            writer.add_block(X.indptr, X.indices, X.data, y)
    assert os.listdir(tmp_path) == ["s.h5"]
    with Store(path) as store:
        assert store.n_samples == X.shape[0]


def test_writer_refuses_a_block_beyond_int32_row_pointers(tmp_path):
    """Row pointers were cast to int32 without a check: these wrapped to [0, 1, 2], a
    block of two nonzeros written as valid."""
    path = tmp_path / "s.h5"
    with pytest.raises(StoreError, match=rf"^{path}: block 0: 4294967298 nonzeros, beyond "
                                         r"the 2147483647 of a block's int32 row pointers"):
        with StoreWriter(path) as writer:
            writer.add_block(np.array([0, 1, 2 ** 32 + 2]), np.array([0, 1], np.int32),
                             np.ones(2), np.array([1, -1], np.int8))
            writer.close(2, (-1, 1))
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_a_value_beyond_float32(tmp_path):
    """The converter's parser refuses it at its line and column; the writer is the
    backstop for its direct users. Rows count from 0, as in ``verify`` and blocks."""
    path = tmp_path / "s.h5"
    with pytest.raises(StoreError, match=rf"^{path}: row 1: the value 1e\+39 is beyond "
                                         r"float32's range"):
        with StoreWriter(path) as writer:
            writer.add_block(np.array([0, 1, 2]), np.array([0, 1], np.int32),
                             np.array([1.0, 1e39]), np.array([1, -1], np.int8))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("classes", [(np.nan, 1.0), (1.0, 1.0)])
def test_writer_refuses_classes_that_are_not_distinct_finite_values(tmp_path, rng, classes):
    """A class-vs-rest view has NaN for "rest": written as a store, every reader refused
    it only when opened (verify: broken)."""
    X, y = random_csr(rng)
    path = tmp_path / "s.h5"
    with pytest.raises(ValueError, match="classes must be distinct finite values"):
        with StoreWriter(path) as writer:
            writer.add_block(X.indptr, X.indices, X.data, y)
            writer.close(None, classes)
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_existing_output(tmp_path, rng):
    X, y = random_csr(rng)
    path = tmp_path / "s.h5"
    path.write_bytes(b"old")
    with pytest.raises(FileExistsError):
        write_store(path, X, y, [0, X.shape[0]])
    assert path.read_bytes() == b"old"
    write_store(path, X, y, [0, X.shape[0]], overwrite=True)
    with Store(path) as store:
        assert store.n_samples == X.shape[0]


def test_negate_labels(tmp_path, rng):
    X, y = random_csr(rng)
    path = tmp_path / "s.h5"
    with StoreWriter(path) as writer:
        writer.add_block(X[:50].indptr, X[:50].indices, X[:50].data, y[:50])
        writer.add_block(X[50:].indptr, X[50:].indices, X[50:].data, y[50:])
        writer.negate_labels()
        writer.close(X.shape[1], (0.0, 1.0))
    with Store(path) as store:
        assert np.array_equal(store.read_rows(0, X.shape[0])[1], -y)
        assert store.label_counts() == (int(np.sum(y > 0)), int(np.sum(y < 0)))


# --- damaged or foreign files -----------------------------------------------------------------
def test_not_hdf5(tmp_path):
    path = tmp_path / "text.h5"
    path.write_text("1 1:1\n")
    with pytest.raises(StoreError, match=str(path)):
        Store(path)


def test_hdf5_but_not_a_store(tmp_path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(StoreError, match=f"{path}: not a streamssvm store"):
        Store(path)


def test_truncated_store(stored, tmp_path):
    path = stored[0]
    for keep in (0.1, 0.5, 0.9):
        damaged = tmp_path / f"trunc{keep}.h5"
        data = path.read_bytes()
        damaged.write_bytes(data[:int(len(data) * keep)])
        with pytest.raises(StoreError, match=str(damaged)):
            with Store(damaged) as store:
                for _ in store.iter_blocks():
                    pass


def _flip(path, position, mask):
    """XOR the byte at ``position`` of the file at ``path`` with ``mask``."""
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ mask]))


def test_a_store_cut_short_while_open(stored, tmp_path):
    """Later passes read contiguous datasets straight from the file, at the offsets the
    first pass found: a file cut short since then is a StoreError naming the block, and
    a block changed since then fails its checksum."""
    path = tmp_path / "open.h5"
    shutil.copy(stored[0], path)
    with Store(path) as store:
        for _ in store.iter_blocks():  # the first pass finds where the datasets lie
            pass
        data_offset = next(d[4] for _, d in store._layouts[store.n_blocks - 1][1]
                           if d[0] == "data")
        assert data_offset is not None  # read by offset, not through HDF5
        _flip(path, data_offset, 1)
        with pytest.raises(StoreError, match=f"{path}: block {store.n_blocks - 1}: dataset "
                                             f"data does not match its checksum"):
            for _ in store.iter_blocks():
                pass
        os.truncate(path, data_offset + 2)
        with pytest.raises(StoreError, match=f"{path}: block {store.n_blocks - 1}: dataset "
                                             r"\w+ runs past the end of the file"):
            for _ in store.iter_blocks():
                pass


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_a_store_holds_no_descriptor_once_closed_or_dropped(stored):
    """The descriptor that later passes read by is closed with the store, or when a store
    never closed is collected; closing twice is harmless."""
    gc.collect()  # earlier tests' garbage (and its descriptors) out of the count
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        store = Store(stored[0])
        for _ in store.iter_blocks():
            pass
        del store  # dropped, never closed
    gc.collect()
    with Store(stored[0]) as store:
        for _ in store.iter_blocks():
            pass
    store.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_settled_store_is_checked_once_in_a_process_and_read_again_once_changed(
        stored, monkeypatch):
    """Metadata and labels checked at a store's first open serve its later opens in the
    process (the same arrays, read-only), while the file's identity and times stay; a
    store just written is not remembered, and a change in place is read and checked
    again."""
    path = stored[0]
    identity = (os.stat(path).st_dev, os.stat(path).st_ino)
    with Store(path) as fresh:
        fresh.class_counts()
    assert identity not in store_module._OPENED  # its times may not have settled
    monkeypatch.setattr(store_module, "_SETTLED_NS", 50_000_000)
    time.sleep(0.1)
    with Store(path) as first:
        first.class_counts()  # reads every block's labels: each block's layout is found
        offsets = first.row_offsets
    with Store(path) as again:
        assert again.row_offsets is offsets and not offsets.flags.writeable
        assert again._layouts is first._layouts and len(first._layouts) == first.n_blocks
        assert again._counted  # the labels' count is not read again
        np.testing.assert_array_equal(again.class_counts(), first.class_counts())
        blocks = [b.indices.copy() for b in again.iter_blocks()]
    with Store(path) as reread:
        assert all(np.array_equal(a, b.indices) for a, b in zip(blocks, reread.iter_blocks()))
    with h5py.File(path, "r+") as f:  # the same inode, its times moved on
        f.attrs["n_samples"] = 5
    with pytest.raises(StoreError, match="attributes do not match their checksum"):
        Store(path)


def test_newer_version_and_inconsistent_metadata(stored, tmp_path):
    path = stored[0]
    newer = tmp_path / "newer.h5"
    shutil.copy(path, newer)
    with h5py.File(newer, "r+") as f:
        f.attrs["version"] = 99
    with pytest.raises(StoreError, match=f"{newer}: store format version 99 is newer"):
        Store(newer)
    bad = tmp_path / "bad.h5"
    shutil.copy(path, bad)
    with h5py.File(bad, "r+") as f:
        f.attrs["n_samples"] = 5
        f.attrs["attributes_checksum"] = attributes_checksum(f.attrs)  # as a buggy writer would
    with pytest.raises(StoreError, match=f"{bad}: block offsets disagree"):
        Store(bad)


def test_corrupt_block_contents(stored, tmp_path):
    """Contents that pass the checksum (a writer's bug, say) meet the structural checks."""
    path = stored[0]
    bad = tmp_path / "bad.h5"
    shutil.copy(path, bad)
    with h5py.File(bad, "r+") as f:
        indices = f["blocks/00000001/indices"]
        indices[0] = 10_000
        f["checksums"][1, 1] = checksum(indices[...])  # row: block, column: indptr, indices ..
        f["checksums"].attrs["checksum"] = checksum(f["checksums"][...])
    with Store(bad) as store:
        store.read_block(0)
        with pytest.raises(StoreError, match=f"{bad}: block 1: column index outside"):
            store.read_block(1)


def _same_blocks(a, b):
    return all(np.array_equal(x, z) for k in range(a.n_blocks)
               for x, z in zip(*(astuple(s.read_block(k)) for s in (a, b))))


def astuple(block):
    return block.indptr, block.indices, block.data, block.y


@pytest.mark.parametrize("options", [
    dict(encoding="plain"), dict(encoding="auto"), dict(encoding="lean"),
    dict(encoding="plain", value_dtype="float64", checksums=False),
    dict(encoding="plain", compression="gzip"), dict(encoding="lean", compression="lzf"),
    dict(encoding="lean", compression="blosc-zstd")])
def test_the_recorded_layout_is_where_hdf5_finds_the_datasets(tmp_path, rng, options):
    """/layout, written at close after the labels are rewritten (negated here), lists every
    block's datasets where HDF5 finds them (-1: chunked, or empty), and reads follow it."""
    X, y = random_csr(rng)
    X.data[X.indptr[100]:X.indptr[180]] = 1.0  # one value a row: lean blocks under "auto"
    path = tmp_path / "s.h5"
    with StoreWriter(path, **options) as writer:
        for a, b in zip([0, 100, 101, 101, 180], [100, 101, 101, 180, 257]):
            writer.add_block(X[a:b].indptr, X[a:b].indices, X[a:b].data, y[a:b])
        writer.negate_labels()
        writer.close(X.shape[1], (-1.0, 1.0))
    old = tmp_path / "old.h5"  # as written before /layout
    shutil.copy(path, old)
    with h5py.File(old, "r+") as f:
        del f["layout"]
    with Store(path) as store, Store(old) as before:
        table = store._recorded
        assert table is not None and before._recorded is None
        for k in range(store.n_blocks):
            assert store._recorded_layout(k) == store._found_layout(k)
        assert (table[..., 0] >= 0).any() == ("compression" not in options)
        assert _same_blocks(store, before)
        assert np.array_equal(store.labels(), -y)
    assert verify_store(path)[0] == []


def test_reads_follow_the_layout_not_the_blocks_groups(stored, tmp_path):
    """Blocks whose groups were moved still read as written (no group is opened) and
    verify names each; a store without /layout is refused naming the block."""
    path = stored[0]
    moved = tmp_path / "moved.h5"
    shutil.copy(path, moved)
    with h5py.File(moved, "r+") as f:
        for k in (0, 3):
            f.move(f"blocks/{k:08d}", f"elsewhere{k}")
    with Store(moved) as store, Store(path) as written:
        assert _same_blocks(store, written)
        assert np.array_equal(store.labels(), written.labels())
    problems, _ = verify_store(moved)
    assert [p.split(": its datasets cannot be found")[0] for p in problems] == [
        f"{moved}: block 0", f"{moved}: block 3"]
    with h5py.File(moved, "r+") as f:
        del f["layout"]
    with Store(moved) as store:
        with pytest.raises(StoreError, match=f"{moved}: block 0 cannot be read"):
            store.read_block(0)


@pytest.mark.parametrize("change, message", [
    (lambda t, size: t.__setitem__((4, 2, 0), size - 8), "block 4"),  # runs past the end
    (lambda t, size: t.__setitem__((4, 2, 0), size + 1), "block 4"),  # starts past it
    (lambda t, size: t.__setitem__((3, 1, 0), -2), "block 3"),
    (lambda t, size: t.__setitem__((0, 1, 1), 3), "block 0"),  # indices of another length
    (lambda t, size: t.__setitem__((1, 1, 2), 1), "block 1"),  # gaps in a version 1 store
    (lambda t, size: t.__setitem__((2, 3, 2), 1), "block 2"),  # y has no lean form
    (lambda t, size: t.__setitem__((3, 3, 1), -1), "block 3"),  # a negative length
])
def test_a_layout_that_does_not_fit_the_blocks_is_refused_when_opened(stored, tmp_path,
                                                                      change, message):
    bad = tmp_path / "bad.h5"
    shutil.copy(stored[0], bad)
    size = os.path.getsize(bad)
    with h5py.File(bad, "r+") as f:
        table = f["layout"][...]
        change(table, size)
        f["layout"][...] = table
        f["layout"].attrs["checksum"] = checksum(table)  # a writer's bug, not a flipped bit
    assert os.path.getsize(bad) == size
    with pytest.raises(StoreError, match=f"{bad}: metadata: layout: the datasets of {message} "):
        Store(bad)
    problems, _ = verify_store(bad)
    assert len(problems) == 1 and problems[0].startswith(f"{bad}: metadata: layout")


@pytest.mark.parametrize("compression", ["gzip", "lzf", "blosc-zstd"])
@pytest.mark.parametrize("encoding", ["plain", "lean"])
def test_compressed_datasets_of_more_values_than_the_file_has_bytes_open(tmp_path, compression,
                                                                         encoding):
    """/layout's check bounded a dataset's length by the file's size: a9a converted with
    gzip (451,592 nonzeros in a smaller file) was refused as damaged."""
    n, width = 50_000, 10
    X = sp.csr_matrix((np.ones(n * width), np.tile(np.arange(width, dtype=np.int32), n),
                       np.arange(0, n * width + 1, width, dtype=np.int32)), shape=(n, width))
    y = np.where(np.arange(n) % 3, 1, -1).astype(np.int8)
    path = tmp_path / "s.h5"
    write_store(path, X, y, [0, n], compression=compression, encoding=encoding)
    assert os.path.getsize(path) < X.nnz
    with Store(path) as store:
        Z, yz = store.read_rows(0, n)
    assert (Z != X).nnz == 0 and np.array_equal(yz, y)
    assert verify_store(path)[0] == []


def test_a_flipped_bit_in_the_layout_fails_its_checksum(stored, tmp_path):
    bad = tmp_path / "bad.h5"
    shutil.copy(stored[0], bad)
    with h5py.File(bad, "r") as f:
        where = f["layout"].id.get_offset() + 8 * 3  # block 0's indices' offset
    _flip(bad, where, 4)
    with pytest.raises(StoreError, match=f"{bad}: metadata: dataset layout does not match its "
                                         f"checksum"):
        Store(bad)


def test_a_layout_of_another_shape_is_refused(stored, tmp_path):
    bad = tmp_path / "bad.h5"
    shutil.copy(stored[0], bad)
    with h5py.File(bad, "r+") as f:
        table = f["layout"][:-1]
        del f["layout"]
        f["layout"] = table
        f["layout"].attrs["checksum"] = checksum(table)
    with pytest.raises(StoreError, match=rf"{bad}: metadata: layout of shape \(4, 4, 3\) and "
                                         rf"type int64 for 5 blocks"):
        Store(bad)


def test_fletcher32_detects_flipped_bytes(tmp_path, rng):
    X, y = random_csr(rng, 300, 30)
    path = tmp_path / "s.h5"
    write_store(path, X, y, [0, 300], fletcher32=True)
    with h5py.File(path, "r") as f:
        offset = f["blocks/00000000/data"].id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as fh:
        fh.seek(offset + 16)
        byte = fh.read(1)
        fh.seek(offset + 16)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with Store(path) as store:
        with pytest.raises(StoreError, match=f"{path}: block 0: dataset data cannot be read"):
            store.read_block(0)
    assert os.path.exists(path)
