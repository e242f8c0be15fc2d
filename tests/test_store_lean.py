"""The lean block encoding (format version 3): gaps for indices, one value per row."""

import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import record_layout
from shared_data import DATA
from streamssvm import Store, StoreError, StoreWriter, convert_svmlight, train_stream
from streamssvm.data.checksum import checksum
from streamssvm.data.verify import verify_store

N_FEATURES = 1 << 30


def awkward_csr(rng):
    """Rows that exercise every path: empty rows, index 0, the last column, gaps just below,
    at and above the escape (65,535), rows of one value (+-0.0 included) and of several."""
    rows = [[], [0], [N_FEATURES - 1], [0, 1, 2, 65_537, 131_073, 196_610, 262_147,
                                        N_FEATURES - 1], [65_535], [65_534]]
    for _ in range(60):
        k = int(rng.integers(0, 30))
        rows.append(sorted(rng.choice(1 << int(rng.integers(8, 30)), k, replace=False).tolist()))
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int32)
    indices = np.concatenate([np.asarray(r, np.int64) for r in rows]).astype(np.int32)
    return indptr, indices


def write(path, indptr, indices, data, y, offsets, encoding):
    with StoreWriter(path, encoding=encoding) as writer:
        for a, b in zip(offsets[:-1], offsets[1:]):
            lo, hi = indptr[a], indptr[b]
            writer.add_block(indptr[a:b + 1] - lo, indices[lo:hi], data[lo:hi], y[a:b])
        writer.close(N_FEATURES, (-1.0, 1.0))


@pytest.fixture
def pair(tmp_path, rng):
    """The same rows as a plain, a lean and an auto store: blocks 0 and 2 of one value per
    row (block 0 with a row of -0.0s), block 1 of several, block 3 empty, block 4 one value
    per row but a row of 0.0 and -0.0 (not one value, to the bit)."""
    indptr, indices = awkward_csr(rng)
    n = len(indptr) - 1
    lengths = np.diff(indptr)
    offsets = [0, 20, 40, 55, 55, n]
    row_value = np.repeat(rng.standard_normal(n).astype(np.float32), lengths)
    data = row_value.copy()
    data[indptr[20]:indptr[40]] = rng.standard_normal(indptr[40] - indptr[20])
    data[indptr[3]:indptr[4]] = -0.0  # block 0: a row of -0.0s is one value
    long_row = 55 + int(np.argmax(lengths[55:] > 1))
    data[indptr[long_row]:indptr[long_row + 1]] = 0.0
    data[indptr[long_row]] = -0.0
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    assert set(np.diff(indices[indptr[3]:indptr[4]]) - 1) >= {65_534, 65_535, 65_536}
    paths = {}
    for encoding in ("plain", "lean", "auto"):
        paths[encoding] = tmp_path / f"{encoding}.h5"
        write(paths[encoding], indptr, indices, data, y, offsets, encoding)
    return paths, offsets, indptr


def same_block(a, b):
    return (a.index == b.index and a.row_start == b.row_start
            and all(np.array_equal(getattr(a, n), getattr(b, n))
                    for n in ("indptr", "indices", "y"))
            and a.data.dtype == b.data.dtype and a.data.tobytes() == b.data.tobytes())


def test_lean_store_reads_as_the_plain_store_to_the_bit(pair):
    paths, offsets, _ = pair
    with h5py.File(paths["lean"], "r") as f:
        assert f.attrs["version"] == 3
        kinds = [sorted(f[f"blocks/{k:08d}"].keys()) for k in range(len(offsets) - 1)]
    assert kinds[0] == kinds[2] == kinds[3] == ["gaps", "indptr", "row_data", "y"]
    assert kinds[1] == kinds[4] == ["data", "gaps", "indptr", "y"]
    with Store(paths["plain"]) as plain, Store(paths["lean"]) as lean:
        assert lean.metadata["options"]["encoding"] == "lean"
        for k in range(plain.n_blocks):
            assert same_block(plain.read_block(k), lean.read_block(k))
        assert same_block(plain.read_range(0, plain.n_blocks), lean.read_range(0, lean.n_blocks))
        order = [4, 0, 3, 1, 2, 1, 0]
        fresh = [plain.read_block(k) for k in order]
        # transient blocks reuse buffers: compare each while it is valid
        for want, got in zip(fresh, lean.iter_blocks(order, transient=True)):
            assert same_block(want, got)
    problems, summary = verify_store(paths["lean"])
    assert problems == [] and summary["blocks_read"] == len(offsets) - 1


def documented_h5py_reader():
    """The code of docs/FORMAT.md's "Reading a store with plain h5py"."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "FORMAT.md").read_text()
    section = text.split("## Reading a store with plain h5py", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_documented_h5py_reader_reads_every_encoding(pair):
    """The recipe for readers without streamssvm reads plain and lean blocks (far gaps,
    rows of one value, an empty block) as the store does."""
    paths, _, _ = pair
    code = documented_h5py_reader()
    for path in paths.values():
        scope = {}
        exec(code.replace('"train.h5"', repr(str(path))), scope)
        with Store(path) as store:
            X, y = store.read_rows(0, store.n_samples)
        assert (scope["X"] != X).nnz == 0 and scope["X"].shape == X.shape
        np.testing.assert_array_equal(scope["y"], y)


def test_auto_encoding_writes_only_blocks_of_one_value_per_row_lean(pair, tmp_path, rng):
    paths, offsets, _ = pair
    with h5py.File(paths["auto"], "r") as f:
        assert f.attrs["version"] == 3
        lean = ["gaps" in f[f"blocks/{k:08d}"] for k in range(len(offsets) - 1)]
    assert lean == [True, False, True, True, False]
    with Store(paths["plain"]) as plain, Store(paths["auto"]) as auto:
        assert auto.metadata["options"]["lean_blocks"] == 3
        for k in range(plain.n_blocks):
            assert same_block(plain.read_block(k), auto.read_block(k))
    several = tmp_path / "several.h5"  # no row of one value: a plain (version 1) store
    indptr = np.array([0, 2, 4], np.int32)
    write(several, indptr, np.array([0, 5, 1, 2], np.int32),
          np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([1, -1], np.int8), [0, 2], "auto")
    with h5py.File(several, "r") as f:
        assert f.attrs["version"] == 1 and "indices" in f["blocks/00000000"]
        assert b"encoding" not in f.attrs["options"]


def corrupt(path, k, name, change):
    """Change dataset ``name`` of block ``k`` (replacing it if its size changes), keeping
    the checksums right, as a writer's bug would."""
    with h5py.File(path, "r+") as f:
        group = f[f"blocks/{k:08d}"]
        values = change(group[name][...])
        del group[name]
        group[name] = values
        slot = {"gaps": 1, "row_data": 2}[name]
        f["checksums"][k, slot] = checksum(values)
        f["checksums"].attrs["checksum"] = checksum(f["checksums"][...])
        record_layout(f)


def with_first_gap(gaps, nnz, high):
    """``gaps`` with the first gap's high 16 bits set to ``high`` (a far gap at 0)."""
    far = gaps[nnz:].reshape(-1, 3)
    if len(far) and far[0, 0] == 0 and far[0, 1] == 0:
        far = far[1:]
    head = np.array([0, 0, high], np.uint16)
    return np.concatenate([gaps[:nnz], head, far.ravel()])


@pytest.mark.parametrize("change, row, message", [
    (lambda g, nnz: g[:-1], None, "not one word per nonzero"),
    (lambda g, nnz: np.append(g, np.uint16(1)), None, "not one word per nonzero"),
    (lambda g, nnz: np.concatenate([g[:nnz], np.array([0, nnz, 1], np.uint16), g[nnz:]]),
     None, "not one word per nonzero"),  # a far gap's position at nnz
    (lambda g, nnz: np.concatenate([g, g[nnz:nnz + 3]]), None,
     "in increasing positions"),  # a far gap repeated
    (lambda g, nnz: with_first_gap(g, nnz, 0x4000), "first", "corrupt in row"),
])
def test_damaged_gaps_are_refused_naming_the_block_and_row(pair, tmp_path, change, row, message):
    """Gaps of the wrong length, far gaps out of place, a column index at or beyond
    n_features (a first gap of 2^30 or more): refused, naming the block (and the row),
    before anything indexes with them."""
    paths, offsets, indptr = pair
    bad = tmp_path / "bad.h5"
    shutil.copy(paths["lean"], bad)
    nnz = int(indptr[offsets[3]] - indptr[offsets[2]])
    corrupt(bad, 2, "gaps", lambda g: change(g, nnz))
    lengths = np.diff(indptr[offsets[2]:offsets[3] + 1])
    if row is not None:
        nonempty = np.flatnonzero(lengths)
        message += f" {nonempty[0 if row == 'first' else -1]} of the block"
    with Store(bad) as store:
        store.read_block(1)
        with pytest.raises(StoreError, match=f"{bad}: block 2: dataset gaps .*{message}"):
            store.read_block(2)


def test_a_layout_of_more_gaps_than_four_words_a_nonzero_is_refused(pair, tmp_path):
    """/layout bounds a block's gaps by 4 words a nonzero (a far gap's): reads size their
    buffers by it, and a compressed store's file may be smaller than its lengths."""
    paths, offsets, indptr = pair
    bad = tmp_path / "bad.h5"
    shutil.copy(paths["lean"], bad)
    nnz = int(indptr[offsets[3]] - indptr[offsets[2]])
    with h5py.File(bad, "r+") as f:
        table = f["layout"][...]
        table[2, 1, 1] = 4 * nnz + 1
        f["layout"][...] = table
        f["layout"].attrs["checksum"] = checksum(table)
    with pytest.raises(StoreError, match=rf"{bad}: metadata: layout: the datasets of block 2 "):
        Store(bad)


@pytest.mark.parametrize("layout", ["recorded", "none"])
def test_damaged_lean_blocks_fail_their_checksum_or_shape(pair, tmp_path, layout):
    """A row_data one value short: /layout recording it is refused when the store is
    opened; without /layout (a store written before it) reading the block refuses it."""
    paths, offsets, _ = pair
    bad = tmp_path / "bad.h5"
    shutil.copy(paths["lean"], bad)
    with h5py.File(bad, "r+") as f:
        gaps = f["blocks/00000000/gaps"]
        gaps[3] ^= 1
        row_data = f["blocks/00000002/row_data"][...]
        del f["blocks/00000002/row_data"]
        f["blocks/00000002/row_data"] = row_data[:-1]
        if layout == "recorded":
            record_layout(f)
        else:
            del f["layout"]
    if layout == "recorded":
        with pytest.raises(StoreError, match=rf"{bad}: metadata: layout: the datasets of "
                                             rf"block 2 "):
            Store(bad)
        return
    with Store(bad) as store:
        with pytest.raises(StoreError, match=f"{bad}: block 0: dataset gaps does not match its "
                                             f"checksum"):
            store.read_block(0)
        rows = offsets[3] - offsets[2]
        with pytest.raises(StoreError,
                           match=rf"block 2: dataset row_data has shape \({rows - 1},\)"):
            store.read_block(2)


def test_converted_lean_store_trains_to_the_same_model(tmp_path):
    """a9a (binary features): every block is one value per row; the lean store gives TRON
    the same iterates to the bit."""
    src = DATA / "a9a.svm.xz"
    if not src.exists():
        pytest.skip(f"{src} not found")
    models, sizes = {}, {}
    for encoding in ("plain", "lean"):
        path = tmp_path / f"{encoding}.h5"
        convert_svmlight(src, path, encoding=encoding, block_nnz=1 << 16, progress=False)
        sizes[encoding] = path.stat().st_size
        with h5py.File(path, "r") as f:
            assert all(("row_data" in g) == (encoding == "lean") for g in f["blocks"].values())
        models[encoding] = train_stream(path, loss="psi_g", sigma=0.1, lam=1e-4, tol=1e-4,
                                        progress=False)
    with Store(tmp_path / "plain.h5") as store:
        nnz = store.nnz
    assert sizes["plain"] - sizes["lean"] > 5 * nnz  # 8 bytes a nonzero -> 2, and 4 a row
    assert models["lean"].coef_.tobytes() == models["plain"].coef_.tobytes()
    assert models["lean"].params["n_iter"] == models["plain"].params["n_iter"]


def test_zero_based_shift_rewrites_the_gaps_of_written_blocks(tmp_path):
    """With zero_based="auto", an index 0 met after blocks were written shifts their
    indices: lean blocks are decoded, shifted and encoded again."""
    lines = [f"{1 if i % 2 else -1} {i % 7 + 1}:1 {200 + i}:0.5 {20_000 + 3 * i}:2"
             for i in range(40)] + ["1 0:3 5:1"]
    src = tmp_path / "late-zero.svm"
    src.write_text("\n".join(lines) + "\n")
    blocks = {}
    for encoding in ("plain", "lean"):
        path = tmp_path / f"{encoding}.h5"
        convert_svmlight(src, path, encoding=encoding, block_rows=8, progress=False)
        with Store(path) as store:
            assert store.n_blocks == 6
            blocks[encoding] = list(store.iter_blocks())
    assert blocks["plain"][0].indices[0] == 1  # the file is zero-based: "1:1" is column 1
    assert all(same_block(a, b) for a, b in zip(blocks["plain"], blocks["lean"]))


def test_cli_converts_lean_and_info_says_so(tmp_path, python_env):
    src = tmp_path / "t.svm"
    src.write_text("1 1:0.5 3:0.5\n-1 2:1\n1 1:2 2:1 4:1\n")
    out = tmp_path / "t.h5"
    run = [sys.executable, "-m", "streamssvm.cli"]
    subprocess.run(run + ["convert", str(src), str(out), "--encoding", "lean", "--quiet"],
                   check=True, env=python_env)
    info = subprocess.run(run + ["info", str(out)], check=True, env=python_env,
                          capture_output=True, text=True).stdout
    assert "lean (1 of 1 blocks lean)" in info and "version 3" in info
    with Store(out) as store:
        X, _ = store.read_rows(0, 3)
    assert X.toarray().tolist() == [[0.5, 0, 0.5, 0], [0, 1, 0, 0], [2, 1, 0, 1]]


def test_lean_writer_rejects_unknown_encoding(tmp_path):
    with pytest.raises(ValueError, match="encoding must be one of"):
        StoreWriter(tmp_path / "x.h5", encoding="zip")
    assert not (tmp_path / "x.h5").exists()


def test_single_valued_blocks_need_identical_bits():
    from streamssvm.kernels import codec

    indptr = np.array([0, 2, 3], np.int32)
    assert codec.single_valued(indptr, np.array([1.5, 1.5, 2.0], np.float32))
    assert not codec.single_valued(indptr, np.array([0.0, -0.0, 2.0], np.float32))
    assert not codec.single_valued(indptr, np.array([1.5, 1.25, 2.0], np.float32))
    assert codec.single_valued(np.zeros(3, np.int32), np.zeros(0, np.float32))
