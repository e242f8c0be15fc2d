"""StoreSet: several stores, or block ranges of them, read as one source; shards of it."""

import numpy as np
import pytest

from streamssvm import InMemorySource, Store, StoreError, convert_svmlight
from streamssvm.data import StoreSet, write_store
from streamssvm.datasets import a9a_paths
from streamssvm.objective import SmoothSVMObjective


@pytest.fixture(scope="module")
def a9a_stores(tmp_path_factory):
    """The shipped a9a as one store of 8 blocks, and its rows cut at block 3 into two."""
    folder = tmp_path_factory.mktemp("storeset")
    full = str(folder / "full.h5")
    convert_svmlight(a9a_paths()[0], full, block_rows=4096, progress=False)
    halves = []
    with Store(full) as store:
        for name, (lo, hi) in (("a.h5", (0, 3 * 4096)), ("b.h5", (3 * 4096, store.n_samples))):
            X, y = store.read_rows(lo, hi)
            halves.append(write_store(str(folder / name),
                                      InMemorySource(X, y, block_rows=4096, classes=store.classes)))
    return full, halves


def _rows(source):
    X, y = source.read_rows(0, source.n_samples)
    return X.toarray(), y


def test_two_stores_read_as_the_store_they_were_cut_from(a9a_stores):
    full, halves = a9a_stores
    with Store(full) as store, StoreSet(halves) as both:
        assert (both.n_samples, both.n_features, both.nnz, both.n_blocks) == \
               (store.n_samples, store.n_features, store.nnz, store.n_blocks)
        assert both.classes == store.classes
        assert both.label_counts() == store.label_counts()
        np.testing.assert_array_equal(both.row_offsets, store.row_offsets)
        for mine, theirs in zip(both.iter_blocks(transient=True), store.iter_blocks()):
            assert (mine.index, mine.row_start) == (theirs.index, theirs.row_start)
            np.testing.assert_array_equal(mine.to_csr(both.n_features).toarray(),
                                          theirs.to_csr(store.n_features).toarray())
            np.testing.assert_array_equal(mine.y, theirs.y)
        X, y = _rows(both)
        X_ref, y_ref = _rows(store)
        np.testing.assert_array_equal(X, X_ref)
        np.testing.assert_array_equal(y, y_ref)
        block = both.read_block(5)  # second store, its block 2
        assert (block.index, block.row_start) == (5, 5 * 4096)
        np.testing.assert_array_equal(block.y, y_ref[5 * 4096:6 * 4096])


def test_block_ranges_and_label_counts_of_part_of_a_store(a9a_stores):
    full, _ = a9a_stores
    with Store(full) as store, StoreSet([(full, 6, None), (full, 1, 3)]) as part:
        assert part.n_blocks == 4
        assert part.n_samples == store.n_samples - 6 * 4096 + 2 * 4096
        labels = np.concatenate([store.read_rows(6 * 4096, store.n_samples)[1],
                                 store.read_rows(4096, 3 * 4096)[1]])
        assert part.label_counts() == (int(np.sum(labels < 0)), int(np.sum(labels > 0)))
        np.testing.assert_array_equal(_rows(part)[1], labels)
        with pytest.raises(IndexError, match="block 4 outside 0..3"):
            part.read_block(4)
    with pytest.raises(ValueError, match="blocks 2:9 outside 0:8"):
        StoreSet([(full, 2, 9)])


def test_training_on_two_stores_equals_training_on_one(a9a_stores):
    """Same blocks in the same order: the same sums to the last bit."""
    full, halves = a9a_stores
    w = np.random.default_rng(0).standard_normal(123) * 0.1
    with Store(full) as store, StoreSet(halves) as both:
        one = SmoothSVMObjective(store, "psi_g", 1e-4, n_threads=1).evaluate(w)
        two = SmoothSVMObjective(both, "psi_g", 1e-4, n_threads=1).evaluate(w)
    assert one.f == two.f
    np.testing.assert_array_equal(one.grad, two.grad)
    np.testing.assert_array_equal(one.curvature, two.curvature)


def test_block_ranges_train_and_score_as_the_stores_they_name(a9a_stores):
    """train_stream, Model.score and decision_function take what StoreSet takes: paths and
    (path, first, stop) ranges. A list of ranges was taken for a matrix ("needs its labels
    y"), and score took one store only."""
    from streamssvm import train_stream
    full, halves = a9a_stores
    options = dict(lam=1e-3, progress=False, n_threads=1)
    ranges = [(full, 0, 3), (full, 3, None)]
    model = train_stream(ranges, **options)
    np.testing.assert_array_equal(model.coef_, train_stream(full, **options).coef_)
    for data in (ranges, halves, [halves[0], (halves[1], 0, None)]):
        assert model.score(data) == model.score(full)
        np.testing.assert_array_equal(model.decision_function(data),
                                      model.decision_function(full))


def test_shards_cover_every_block_once_with_balanced_nonzeros(a9a_stores):
    full, halves = a9a_stores
    with StoreSet(halves) as both:
        for n_shards in (1, 2, 3, 8, 20):
            shards = both.shards(n_shards)
            assert len(shards) == min(n_shards, both.n_blocks)
            covered = [(path, k) for pieces in shards for path, a, b in pieces
                       for k in range(a, b)]
            assert covered == [(path, k) for path, a, b in both.pieces for k in range(a, b)]
            nnz = []
            for pieces in shards:
                with StoreSet(pieces) as shard:
                    nnz.append(shard.nnz)
            assert sum(nnz) == both.nnz
            biggest_block = int(np.diff(both.nnz_offsets).max())
            assert max(nnz) - min(nnz) <= 2 * biggest_block
        # 2 shards of 3 + 5 blocks: the first spans the boundary between the two files
        assert [len(pieces) for pieces in both.shards(2)] == [2, 1]


def test_stores_that_do_not_match_are_refused(a9a_stores, tmp_path):
    full, _ = a9a_stores
    with Store(full) as store:
        X, y = store.read_rows(0, 100)
    narrow = write_store(str(tmp_path / "narrow.h5"), InMemorySource(X[:, :50], y))
    with pytest.raises(StoreError, match="narrow.h5: 50 features"):
        StoreSet([full, narrow])
    swapped = write_store(str(tmp_path / "swapped.h5"),
                          InMemorySource(X, y, classes=store.classes[::-1]))
    with pytest.raises(StoreError, match="swapped.h5: 123 features and labels"):
        StoreSet([full, swapped])
    with pytest.raises(FileNotFoundError, match="missing.h5"):
        StoreSet([full, str(tmp_path / "missing.h5")])
    with pytest.raises(ValueError, match="not a store path nor"):
        StoreSet([full, X])
    with pytest.raises(ValueError, match="a path or a non-empty list of paths"):
        StoreSet([])


def test_class_counts_of_multiclass_stores_and_of_block_ranges(a9a_stores, tmp_path):
    full, _ = a9a_stores
    with Store(full) as store:
        X, _ = store.read_rows(0, 3000)
    labels = np.random.default_rng(2).choice([3.0, 5.0, 7.0], size=3000)
    paths = [write_store(str(tmp_path / f"{i}.h5"),
                         InMemorySource(X[i * 1500:(i + 1) * 1500], labels[i * 1500:(i + 1) * 1500],
                                        block_rows=500, classes=(3.0, 5.0, 7.0)))
             for i in range(2)]
    expected = np.bincount(np.searchsorted([3.0, 5.0, 7.0], labels), minlength=3)
    with StoreSet(paths) as both, StoreSet([(paths[0], 1, 3), paths[1]]) as part:
        assert both.multiclass
        np.testing.assert_array_equal(both.class_counts(), expected)
        np.testing.assert_array_equal(part.class_counts(),
                                      np.bincount(part.labels(), minlength=3))
        assert part.class_counts().sum() == 2500
        with pytest.raises(ValueError, match="3 classes, not two"):
            both.label_counts()
