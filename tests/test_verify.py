"""Checksums of stores and ``streamssvm verify``: flipped bytes are caught and blamed on their
block before a kernel sees them; verify checks a whole file, one line per problem."""

import importlib
import os
import re
import shutil
import sys

import h5py
import numpy as np
import pytest

from streamssvm import Store, StoreError, convert_svmlight, train_stream
from streamssvm.cli import main
from streamssvm.data.checksum import checksum
from streamssvm.data.store import BLOCK_DATASETS, write_store
from streamssvm.data.verify import verify_store

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
corrupt_store = importlib.import_module("corrupt_store")


def converted(tmp_path, make_svmlight, binary=False, **options):
    text = make_svmlight(np.random.default_rng(3), 2000, 200, density=0.05)
    if binary:
        text = re.sub(rb":[^ \n]+", b":1", text)
    src = tmp_path / "train.svm"
    src.write_bytes(text)
    path = tmp_path / "train.h5"
    convert_svmlight(src, path, block_nnz=3000, progress=False, **options)
    return path


@pytest.fixture
def store_path(tmp_path, make_svmlight):
    return converted(tmp_path, make_svmlight)


def documented_checksum(raw):
    """docs/FORMAT.md's numpy recipe, on the bytes as stored."""
    w = np.frombuffer(raw.ljust(-(-len(raw) // 8) * 8, b"\0"), "<u8")
    return [w.sum(dtype=np.uint64), (w * np.arange(len(w), 0, -1, dtype=np.uint64)).sum()]


def documented_attributes_checksum(attrs):
    """docs/FORMAT.md's recipe for ``attributes_checksum``."""
    raw = b"".join(name.encode() + b"\0" + (value.encode() if isinstance(value, str) else
                                            bytes(value) if isinstance(value, bytes) else
                                            np.asarray(value).tobytes()) + b"\0"
                   for name, value in sorted(attrs.items()) if name != "attributes_checksum")
    return documented_checksum(raw)


def flip(path, position, bit=3):
    corrupt_store.flip_bit(path, position, bit)


def rewrite_with_checksum(f, k, name, values):
    """Change a dataset the way a buggy writer would: new values, matching checksums."""
    ds = f[f"blocks/{k:08d}/{name}"]
    ds[...] = values
    table = f["checksums"]
    table[k, BLOCK_DATASETS.index(name)] = documented_checksum(ds[...].tobytes())
    table.attrs["checksum"] = documented_checksum(table[...].tobytes())


def test_checksums_follow_the_documented_formula(store_path):
    with h5py.File(store_path, "r") as f:
        assert f.attrs["checksum"] == b"fletcher64"
        n_blocks = int(f.attrs["n_blocks"])
        assert n_blocks >= 6 and f["checksums"].shape == (n_blocks, 4, 2)
        for k in range(n_blocks):
            for j, name in enumerate(BLOCK_DATASETS):
                raw = f[f"blocks/{k:08d}/{name}"][...].tobytes()
                assert f["checksums"][k, j].tolist() == documented_checksum(raw)
        for name in ("row_offsets", "nnz_offsets", "checksums"):
            assert f[name].attrs["checksum"].tolist() == documented_checksum(f[name][...].tobytes())
        assert f.attrs["attributes_checksum"].tolist() == documented_attributes_checksum(f.attrs)


def test_string_attributes_are_inline(store_path):
    """Variable-length strings live in HDF5's global heap, where one flipped bit made
    libhdf5 loop forever on reading the attribute (Store, info, verify all hung)."""
    with h5py.File(store_path, "r") as f:
        strings = [name for name in f.attrs
                   if f.attrs.get_id(name).get_type().get_class() == h5py.h5t.STRING]
        assert set(strings) >= {"format", "value_dtype", "source_name", "source_sha256",
                                "options", "created", "checksum"}
        assert not any(f.attrs.get_id(name).get_type().is_variable_str() for name in strings)
    with Store(store_path) as store:
        assert store.metadata["format"] == "streamssvm.csr-blocks"
        assert isinstance(store.metadata["options"], dict)


def test_verify_accepts_a_sound_store(store_path, capsys):
    problems, summary = verify_store(store_path)
    assert problems == [] and summary["checksums"] and summary["blocks_read"] == summary["n_blocks"]
    assert main(["verify", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{store_path}: ok, ") and "checksums verified" in out


@pytest.mark.parametrize("binary, options, names", [
    (False, {}, set(BLOCK_DATASETS)),
    (False, dict(encoding="lean"), {"indptr", "gaps", "data", "y"}),
    (True, {}, {"indptr", "gaps", "row_data", "y"}),  # "auto": rows of one value are lean
])
def test_a_flip_in_any_block_dataset_is_blamed_on_it(tmp_path, make_svmlight, capsys, binary,
                                                      options, names):
    store_path = converted(tmp_path, make_svmlight, binary, **options)
    bad = tmp_path / "bad.h5"
    extents = corrupt_store.dataset_extents(store_path)
    assert {name for _, name, _, _ in extents} == names
    rng = np.random.default_rng(0)
    for k, name, offset, length in extents:
        shutil.copyfile(store_path, bad)
        flip(bad, offset + int(rng.integers(length)), bit=int(rng.integers(8)))
        expected = f"{bad}: block {k}: dataset {name} does not match its checksum"
        with Store(bad) as store:
            with pytest.raises(StoreError, match=expected):
                store.read_block(k)
            for other in range(store.n_blocks):
                if other != k:
                    store.read_block(other)
        problems, summary = verify_store(bad)
        assert len(problems) == 1 and problems[0].startswith(expected), problems
        assert summary["blocks_read"] == summary["n_blocks"] - 1
        assert main(["verify", str(bad)]) == 1
        assert capsys.readouterr().out.splitlines() == [problems[0], f"{bad}: 1 problem"]


def test_training_stops_at_the_corrupt_block(store_path, tmp_path):
    bad = tmp_path / "bad.h5"
    shutil.copyfile(store_path, bad)
    _, _, offset, length = next(e for e in corrupt_store.dataset_extents(store_path)
                                if e[:2] == (3, "data"))
    flip(bad, offset + length // 2)
    with pytest.raises(StoreError, match=f"{bad}: block 3: dataset data does not match"):
        train_stream(str(bad), loss="squared_hinge", lam=1e-3, progress=False)


def test_random_flips_are_detected_or_harmless(store_path, capsys):
    """Single-bit flips anywhere in the file: every one is caught (naming a block, or the
    file's metadata), falls in unused bytes and changes nothing, or damages a block's HDF5
    headers, which reads do not use (/layout) and verify names; none is silent."""
    counts, failures = corrupt_store.run(store_path, 150, "anywhere", seed=1)
    assert failures == []
    assert set(counts) <= {"detected: block", "detected: file", "harmless",
                           "verify: block structure"}
    assert counts["detected: block"] > 100
    with capsys.disabled():
        print(f"\n150 random single-bit flips in a {os.path.getsize(store_path):,}-byte store: "
              f"{dict(counts)}")
    counts, failures = corrupt_store.run(store_path, 40, "data", seed=2)
    assert failures == [] and counts == {"detected: block": 40}



@pytest.mark.parametrize("compression", ["gzip", "lzf", "blosc-lz4"])
def test_flips_in_compressed_data_are_blamed_on_their_dataset(tmp_path, make_svmlight,
                                                              compression):
    """A flip in a compressed dataset can make its filter fail (not its checksum): the error
    still names the block and the dataset (a few flips decode to the same values)."""
    store_path = converted(tmp_path, make_svmlight, compression=compression)
    counts, failures = corrupt_store.run(store_path, 20, "data", seed=2)
    assert failures == [] and set(counts) <= {"detected: block", "harmless"}
    assert counts["detected: block"] >= 15

def test_stores_without_checksums_still_read(store_path, tmp_path, capsys):
    old = tmp_path / "old.h5"
    with Store(store_path) as store:
        write_store(old, store, checksums=False)
    with h5py.File(old, "r") as f:
        assert "checksum" not in f.attrs and "checksums" not in f
    with Store(old) as store, Store(store_path) as new:
        assert not store.checksums and new.checksums
        for k in range(store.n_blocks):
            a, b = store.read_block(k), new.read_block(k)
            assert np.array_equal(a.data, b.data) and np.array_equal(a.indices, b.indices)
    problems, summary = verify_store(old)
    assert problems == [] and not summary["checksums"]
    assert main(["verify", str(old)]) == 0
    assert "no checksums" in capsys.readouterr().out


def test_verify_reports_each_structural_problem(store_path, tmp_path, capsys):
    """Damage that matches its checksums (a writer's bug) is found by the other checks."""
    bad = tmp_path / "bad.h5"
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        data = f["blocks/00000001/data"][...]
        data[5] = np.nan
        rewrite_with_checksum(f, 1, "data", data)
        indptr = f["blocks/00000002/indptr"][...]
        indices = f["blocks/00000002/indices"][...]
        row = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
        a = indptr[row]
        indices[a], indices[a + 1] = indices[a + 1], indices[a]
        rewrite_with_checksum(f, 2, "indices", indices)
        y = f["blocks/00000004/y"][...]
        y[0] = 0
        rewrite_with_checksum(f, 4, "y", y)
    problems, _ = verify_store(bad)
    assert len(problems) == 3, problems
    assert problems[0].startswith(f"{bad}: block 1: 1 values are NaN or infinite")
    assert problems[1].startswith(f"{bad}: block 2: column indices not strictly increasing")
    assert problems[2] == f"{bad}: block 4: labels other than -1/+1"
    assert main(["verify", str(bad)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"{bad}: 3 problems"
    # with every block sound, the label counts are compared with the metadata
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        f.attrs["n_positive"] = f.attrs["n_positive"] + 1
        f.attrs["attributes_checksum"] = documented_attributes_checksum(f.attrs)
        n_positive = int(f.attrs["n_positive"])
        n_negative = int(f.attrs["n_samples"]) - n_positive
    problems, _ = verify_store(bad)
    assert problems == [f"{bad}: metadata: rows per class {[n_negative, n_positive]} but the "
                        f"blocks hold {[n_negative + 1, n_positive - 1]}"]


def test_damaged_metadata_is_named(store_path, tmp_path):
    bad = tmp_path / "bad.h5"
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        f["checksums"][0, 0, 0] += np.uint64(1)
    with pytest.raises(StoreError, match=f"{bad}: metadata: dataset checksums does not match"):
        Store(bad)
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        f["nnz_offsets"][1] += 1
    with pytest.raises(StoreError, match=f"{bad}: metadata: dataset nnz_offsets does not match"):
        Store(bad)
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        f.attrs["n_features"] = f.attrs["n_features"] + 1
    with pytest.raises(StoreError, match=f"{bad}: metadata: the file's attributes do not match"):
        Store(bad)
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        f.attrs["checksum"] = "sha3"
    with pytest.raises(StoreError, match="unknown checksum 'sha3'"):
        Store(bad)
    problems, _ = verify_store(bad)
    assert problems == [f"{bad}: unknown checksum 'sha3' (this library verifies 'fletcher64')"]


def test_verify_on_what_is_not_a_store(tmp_path, capsys):
    text = tmp_path / "train.svm"
    text.write_text("1 1:1\n")
    assert main(["verify", str(text)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{text}: not a readable HDF5 store")
    assert out[1] == f"{text}: 1 problem"
    # a missing store is a problem: the stores after it are checked (it ended the command)
    missing = tmp_path / "missing.h5"
    assert main(["verify", str(missing), str(text)]) == 1
    assert capsys.readouterr().out.splitlines()[:3] == [
        f"{missing}: No such file or directory", f"{missing}: 1 problem", out[0]]


@pytest.mark.parametrize("damage, message", [
    ("row_offsets", "row_offsets do not rise from 0"),
    ("n_positive", r"class counts \[-\d+, \d+\] do not add up"),
    ("options", "options are not JSON"),
    ("value_dtype", "value type float16 is not float32/float64"),
])
def test_metadata_that_matches_its_checksums_but_not_the_format_is_refused(
        store_path, tmp_path, damage, message):
    """Only ``verify`` checked these, and readers trusted them: row offsets from 1 read
    a row that is not there (labels of uninitialised memory), a count of positives past
    the rows gave negative class counts, options not JSON an error naming no file."""
    bad = tmp_path / "bad.h5"
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        if damage == "row_offsets":
            offsets = f["row_offsets"][...]
            offsets[0] = 1
            f["row_offsets"][...] = offsets
            f["row_offsets"].attrs["checksum"] = checksum(offsets)
        else:
            f.attrs[damage] = {"n_positive": f.attrs["n_samples"] + 100, "options": "{not json",
                               "value_dtype": "float16"}[damage]
            f.attrs["attributes_checksum"] = documented_attributes_checksum(f.attrs)
    with pytest.raises(StoreError, match=f"{bad}: metadata: {message}"):
        Store(bad)
    problems, _ = verify_store(bad)
    assert len(problems) == 1 and problems[0].startswith(f"{bad}: metadata: ")


@pytest.mark.parametrize("layout", ["recorded", "none"])
def test_a_group_where_a_block_dataset_belongs_is_named(store_path, tmp_path, layout):
    """h5py's Group has no ndim: an AttributeError escaped every reader before. Reads of a
    store with /layout do not open the blocks' groups: they get the labels as written
    (their bytes are still where /layout says, and match their checksum), and verify names
    the block; a store without /layout (written before it) is refused as it is read."""
    bad = tmp_path / "bad.h5"
    shutil.copyfile(store_path, bad)
    with h5py.File(bad, "r+") as f:
        del f["blocks/00000001/y"]
        f.create_group("blocks/00000001/y")
        if layout == "none":
            del f["layout"]
    with Store(bad) as store, Store(store_path) as written:
        for read, expected in ((store.labels, written.labels),
                               (lambda: store.read_block(1).y, lambda: written.read_block(1).y)):
            if layout == "recorded":
                assert np.array_equal(read(), expected())
                continue
            with pytest.raises(StoreError, match=f"{bad}: block 1: y is not a dataset"):
                read()
    problems, _ = verify_store(bad)
    assert problems == [f"{bad}: block 1: y is not a dataset"]
