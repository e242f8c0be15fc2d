"""Stores whose metadata was edited after they were written: the reader checks every block
dataset's type, shape and place against HDF5's own headers, so that a missing, stale or
forged checksum can fail ``verify`` but never give another result (tools/tamper_store.py)."""

import importlib
import io
import os
import re
import shutil
import sys
import warnings

import h5py
import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from streamssvm import Store, StoreError, train_stream
from streamssvm.data.checksum import attributes_checksum
from streamssvm.data.verify import verify_store

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
tamper_store = importlib.import_module("tamper_store")

ROWS = 1000  # four blocks of tamper_store.BLOCK_ROWS rows


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Every kind of tamper_store.STORES, made from the shipped a9a: kind -> path."""
    folder = tmp_path_factory.mktemp("intact")
    return {kind: tamper_store.make_store(kind, str(folder), ROWS) for kind in tamper_store.STORES}


def trained(path):
    """A model of a few TRON iterations on the store at ``path``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter is reached on purpose
        return train_stream(path, max_iter=3, progress=False)


def fit_and_predict(path):
    """What the probe ran: train, then predict and score the same store."""
    model = trained(path)
    return model.decision_function(path), model.score(path)


def copy_of(stores, kind, tmp_path):
    path = tmp_path / f"{kind}-tampered.h5"
    shutil.copyfile(stores[kind], path)
    return path


@pytest.mark.parametrize("everything", [False, True])
def test_a_float64_store_relabelled_float32_without_checksums_is_refused(
        stores, tmp_path, everything):
    """The probe's first reproduction: without the checksum attributes, a float64 store whose
    ``value_dtype`` says float32 was read as float32 (each value's two halves as two
    values: another accuracy, no error). /checksums left without the attribute naming it
    is refused; without any checksum, the value type disagrees with the options and, with
    those changed to agree, with the data's real type, HDF5's: every read (training,
    prediction, scoring) refuses it, naming the file, the block and the dataset."""
    intact = fit_and_predict(stores["float64"])
    model = trained(stores["float64"])
    bad = copy_of(stores, "float64", tmp_path)
    with h5py.File(bad, "r+") as f:
        tamper_store.apply_mode(f, "stripped" if everything else "deleted")
        f.attrs["value_dtype"] = np.bytes_(b"float32")
    removed = f"^{bad}: metadata: the file holds the table /checksums but not the checksum"
    with pytest.raises(StoreError, match=removed if not everything else
                       f"^{bad}: metadata: value type float32, but the options record "
                       f"'float64'"):
        fit_and_predict(bad)
    with h5py.File(bad, "r+") as f:
        tamper_store._set_options(f, dict(tamper_store._options(f), value_dtype="float32"))
    typed = rf"^{bad}: block 0: dataset data has shape \(\d+,\) and type float64, expected"
    for run in (lambda: train_stream(bad, max_iter=3, progress=False),
                lambda: model.decision_function(bad), lambda: model.score(bad)):
        with pytest.raises(StoreError, match=typed if everything else removed):
            run()
    assert verify_store(bad)[0]
    assert np.array_equal(fit_and_predict(stores["float64"])[0], intact[0])


@pytest.mark.parametrize("mode", ["deleted", "stripped", "recomputed"])
@pytest.mark.parametrize("slot", [0, 3])  # indptr, y: the same length in every block
def test_a_layout_offset_moved_to_another_block_is_refused(stores, tmp_path, mode, slot):
    """The probe's second reproduction: /layout placing block 1's dataset at block 2's (of
    the same length) read block 2's bytes as block 1's. HDF5 places it elsewhere: the
    read refuses, naming the block, the dataset and both offsets, with the checksums
    removed or recomputed to match the bytes /layout now points at."""
    bad = copy_of(stores, "float32", tmp_path)
    with h5py.File(bad, "r+") as f:
        table = f["layout"][...]
        table[1, slot, 0] = table[2, slot, 0]
        f["layout"][...] = table
        tamper_store.apply_mode(f, mode)
        found = int(f[f"blocks/00000001/{tamper_store.BLOCK_DATASETS[slot]}"].id.get_offset())
    name = tamper_store.BLOCK_DATASETS[slot]
    message = (f"^{bad}: block 1: dataset {name}: /layout records it at byte "
               f"{table[2, slot, 0]}, HDF5 at byte {found}")
    if mode == "deleted":  # the probe's: /checksums left without the attribute naming it
        message = f"^{bad}: metadata: the file holds the table /checksums but not"
    with pytest.raises(StoreError, match=message):
        fit_and_predict(bad)
    assert verify_store(bad)[0]


def test_every_block_moved_and_retyped_is_refused(stores, tmp_path):
    """With every block's group moved out of /blocks, reads take /layout's places (checked
    by the checksums); a float64 store whose value type is forged to float32, checksums
    recomputed to match, still meets the moved datasets, of another type and length, in
    those bytes."""
    bad = copy_of(stores, "float64", tmp_path)
    with h5py.File(bad, "r+") as f:
        for k in range(int(f.attrs["n_blocks"])):
            f.move(f"blocks/{k:08d}", f"moved/{k:08d}")
        tamper_store.value_dtype_and_options(f)
        tamper_store.apply_mode(f, "recomputed")
    with pytest.raises(StoreError, match=f"^{bad}: block 0: dataset data: /layout places it "
                                         f"in the bytes of /moved/00000000/data"):
        fit_and_predict(bad)
    shutil.copyfile(stores["float64"], bad)
    with h5py.File(bad, "r+") as f:  # moved as they are: the same bytes, read as written
        for k in range(int(f.attrs["n_blocks"])):
            f.move(f"blocks/{k:08d}", f"moved/{k:08d}")
    assert np.array_equal(fit_and_predict(bad)[0], fit_and_predict(stores["float64"])[0])
    problems, _ = verify_store(bad)
    assert len(problems) == ROWS // tamper_store.BLOCK_ROWS
    assert all(": its datasets cannot be found" in p for p in problems)


def test_the_tamper_tool_finds_no_silent_result(tmp_path):
    """A representative subset of tools/tamper_store.py's cases: every store kind and
    checksum mode, edits of each piece of metadata reads rely on; none gives a result other
    than the intact store's without an error naming the file, and an edit of block 1's
    row of /layout, with no checksum to tell, is blamed on block 1 and a dataset."""
    edits = ["value dtype", "value dtype and options", "options compression", "version=1",
             "version=3", "n blocks -1", "n features -1", "n positive +1",
             "class counts moved", "classes extra", "nnz offsets[1] +1",
             "row offsets as int32", "layout: block 1 data at block 2's",
             "layout: block 1 y at block 2's", "layout: block 1 indices 8 bytes on",
             "layout: block 1 indices and data swapped", "layout onto chunk",
             "layout: block 1 not contiguous", "layout: block 1 indices length +3",
             "layout: block 1 data lean flag flipped", "checksums short", "block 1 data retyped",
             "block 1 y retyped", "drop last block", "group moved data elsewhere",
             "block 1 data deleted"]
    assert set(edits) <= {tamper_store.edit_name(e) for e in tamper_store.EDITS}
    summary = tamper_store.run(str(tmp_path), tamper_store.cases(edits=edits), rows=ROWS,
                               max_iter=2)
    counts = summary["counts"]
    assert counts["SILENT"] == 0 and counts["OTHER"] == 0, [
        c for c in summary["cases"] if c["outcome"] in ("SILENT", "OTHER")]
    assert counts["clear error"] > 300 and counts["correct result"] > 10
    for case in summary["cases"]:
        if case["edit"].startswith("layout: block 1") and case["mode"] == "stripped":
            assert re.search(r"\bblock 1\b.*\bdataset \w+: ", case["message"]), case


def reference(kind):
    """The matrix and labels of tamper_store's store of ``kind``, parsed by scikit-learn."""
    _, scaled, multiclass = tamper_store.STORES[kind]
    text = tamper_store.shipped_text(ROWS, scaled, multiclass).encode()
    X, y = load_svmlight_file(io.BytesIO(text), n_features=123)
    return X, y


@pytest.mark.parametrize("kind", list(tamper_store.STORES))
def test_intact_stores_read_as_written(stores, kind):
    """Every kind of store reads back the text it was made from, by every read (blocks,
    passes, ranges, labels, class counts), twice in one open store (the second from the
    kept layouts), and verifies clean; contiguous datasets are read by their offsets."""
    X, y = reference(kind)
    with Store(stores[kind]) as store:
        classes = np.asarray(store.classes)
        labels = classes[store.labels()] if store.multiclass else classes[
            (store.labels() > 0).astype(int)]
        assert np.array_equal(labels, y)
        for _ in range(2):
            for block in store.iter_blocks(transient=True):
                rows = slice(block.row_start, block.row_start + block.n_rows)
                assert (block.to_csr(123) != X[rows].astype(store.value_dtype)).nnz == 0
        whole = store.read_range(0, store.n_blocks)
        assert (whole.to_csr(123) != X.astype(store.value_dtype)).nnz == 0
        assert np.array_equal(store.class_counts(),
                              np.bincount(np.searchsorted(classes, y), minlength=len(classes)))
        offsets = [d[4] for k in range(store.n_blocks) for _, d in store._layout(k)[1]]
        assert all((offset is None) == (kind == "gzip") for offset in offsets)
    assert verify_store(stores[kind])[0] == []


def test_class_counts_are_checked_against_the_labels(stores, tmp_path):
    """A count of positives forged with its checksum recomputed: a reader that counts rows
    per class (LIBLINEAR's tolerance, class weights) refuses it, naming the counts."""
    bad = copy_of(stores, "float32", tmp_path)
    with h5py.File(bad, "r+") as f:
        f.attrs["n_positive"] = int(f.attrs["n_positive"]) + 1
        f.attrs["attributes_checksum"] = attributes_checksum(f.attrs)
    with Store(bad) as store:
        n_positive = store.metadata["n_positive"]
        with pytest.raises(StoreError, match=rf"^{bad}: metadata: rows per class "
                                             rf"\[{ROWS - n_positive}, {n_positive}\] but "
                                             rf"the blocks hold \[{ROWS - n_positive + 1}, "
                                             rf"{n_positive - 1}\]"):
            store.class_counts()
    with pytest.raises(StoreError, match="rows per class"):
        train_stream(bad, max_iter=2, liblinear_tol=True, progress=False)
    assert verify_store(bad)[0] == [f"{bad}: metadata: rows per class "
                                    f"{[ROWS - n_positive, n_positive]} but the blocks hold "
                                    f"{[ROWS - n_positive + 1, n_positive - 1]}"]
