"""RowSubset: selected rows of a store or an in-memory source, read through it."""

import numpy as np
import pytest
import scipy.sparse as sp

from shared_data import load_shared
from streamssvm import train_stream
from streamssvm.data import InMemorySource, RowSubset, Store, write_store
from streamssvm.objective import SmoothSVMObjective

N_ROWS, BLOCK_ROWS = 3000, 256


@pytest.fixture(scope="module")
def a9a():
    return load_shared("a9a", n_rows=N_ROWS)


@pytest.fixture(scope="module", params=["memory", "store"])
def source(request, a9a, tmp_path_factory):
    X, y = a9a
    memory = InMemorySource(X, y, block_rows=BLOCK_ROWS)
    if request.param == "memory":
        yield memory
        return
    path = tmp_path_factory.mktemp("subset") / "a9a.h5"
    with Store(write_store(path, memory)) as store:
        yield store


def stacked(blocks, n_features):
    blocks = list(blocks)
    X = sp.vstack([b.to_csr(n_features) for b in blocks], format="csr")
    return X, np.concatenate([b.y for b in blocks])


def selections(rng):
    every_other_block = np.concatenate([np.arange(a, min(a + BLOCK_ROWS, N_ROWS))
                                        for a in range(0, N_ROWS, 2 * BLOCK_ROWS)])
    return {"random 80%": rng.choice(N_ROWS, int(0.8 * N_ROWS), replace=False),
            "every other block, whole": every_other_block,
            "all rows": np.arange(N_ROWS),
            "one row": np.array([N_ROWS - 1]),
            "inside one block": np.arange(300, 310)}


def test_blocks_hold_the_rows_of_the_sliced_matrix(source, a9a, rng):
    X, y = a9a
    labels = np.where(y > 0, 1, -1)
    for what, rows in selections(rng).items():
        subset = RowSubset(source, rows)
        expected = X[np.sort(rows)]
        got, got_y = stacked(subset.iter_blocks(), subset.n_features)
        assert subset.n_samples == len(rows), what
        assert (got != expected).nnz == 0 and got.shape == expected.shape, what
        np.testing.assert_array_equal(got_y, labels[np.sort(rows)], err_msg=what)
        assert subset.nnz == expected.nnz, what
        starts = [b.row_start for b in subset.iter_blocks()]
        np.testing.assert_array_equal(starts, subset.row_offsets[:-1], err_msg=what)
        assert subset.row_offsets[-1] == len(rows)


def test_blocks_in_any_order_and_by_index_agree(source, rng):
    subset = RowSubset(source, rng.choice(N_ROWS, 2000, replace=False))
    order = rng.permutation(subset.n_blocks)
    for k, block in zip(order, subset.iter_blocks(order)):
        alone = subset.read_block(int(k))
        assert block.index == alone.index == k
        assert block.row_start == alone.row_start
        assert (block.to_csr(subset.n_features) != alone.to_csr(subset.n_features)).nnz == 0
        np.testing.assert_array_equal(block.y, alone.y)


def test_transient_blocks_are_valid_when_yielded(source, a9a, rng):
    X, _ = a9a
    rows = np.sort(rng.choice(N_ROWS, 2500, replace=False))
    subset = RowSubset(source, rows)
    parts = [b.to_csr(subset.n_features) for b in subset.iter_blocks(transient=True)]
    assert (sp.vstack(parts, format="csr") != X[rows]).nnz == 0


def test_read_rows_and_label_counts(source, a9a, rng):
    X, y = a9a
    rows = np.sort(rng.choice(N_ROWS, 1000, replace=False))
    subset = RowSubset(source, rows)
    got, got_y = subset.read_rows(100, 700)
    assert (got != X[rows[100:700]]).nnz == 0
    np.testing.assert_array_equal(got_y, np.where(y[rows[100:700]] > 0, 1, -1))
    n_pos = int(np.count_nonzero(y[rows] > 0))
    assert subset.label_counts() == (len(rows) - n_pos, n_pos)


def test_subset_of_a_subset(source, a9a, rng):
    X, _ = a9a
    outer = rng.choice(N_ROWS, 2000, replace=False)
    inner = rng.choice(2000, 500, replace=False)
    nested = RowSubset(RowSubset(source, outer), inner)
    got, _ = stacked(nested.iter_blocks(), nested.n_features)
    assert (got != X[np.sort(outer)][np.sort(inner)]).nnz == 0


def test_objective_training_and_scoring_agree_with_the_sliced_matrix(source, a9a, rng):
    X, y = a9a
    rows = np.sort(rng.choice(N_ROWS, 2400, replace=False))
    rest = np.setdiff1d(np.arange(N_ROWS), rows)
    subset = RowSubset(source, rows)
    w = rng.standard_normal(X.shape[1]) * 0.1
    on_subset = SmoothSVMObjective(subset, "psi_g", 1e-4, sigma=0.5).evaluate(w)
    on_matrix = SmoothSVMObjective(InMemorySource(X[rows], y[rows]), "psi_g", 1e-4,
                                   sigma=0.5).evaluate(w)
    assert on_subset.f == pytest.approx(on_matrix.f, rel=1e-12)
    np.testing.assert_allclose(on_subset.grad, on_matrix.grad, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(on_subset.margins, on_matrix.margins, rtol=1e-12, atol=1e-14)

    options = dict(loss="psi_g", sigma=2.0 ** -3, lam=1e-4, tol=1e-6, progress=False)
    model = train_stream(subset, **options)
    reference = train_stream(X[rows], y[rows], **options)
    assert model.params["n_samples"] == len(rows) and model.params["converged"]
    # L is lam-strongly convex: ||w - w*|| <= ||grad L(w)|| / lam for both
    bound = (model.params["grad_norm"] + reference.params["grad_norm"]) / options["lam"]
    assert np.linalg.norm(model.coef_ - reference.coef_) <= bound
    test = RowSubset(source, rest)
    np.testing.assert_allclose(model.decision_function(test), X[rest] @ model.coef_,
                               rtol=1e-12, atol=1e-12)
    assert model.score(test) == model.score(X[rest], y[rest])


def test_a_subset_copied_into_memory_has_its_blocks_and_trains_the_same_model(source, rng):
    rows = rng.choice(N_ROWS, 2000, replace=False)
    subset = RowSubset(source, rows)
    copy = InMemorySource.copy_of(subset)
    assert copy.in_memory and copy.classes == subset.classes
    assert (copy.n_samples, copy.n_features, copy.nnz) == (len(rows), subset.n_features,
                                                           subset.nnz)
    np.testing.assert_array_equal(copy.row_offsets, subset.row_offsets)
    for a, b in zip(copy.iter_blocks(), subset.iter_blocks(), strict=True):
        (Xa, ya), (Xb, yb) = stacked([a], copy.n_features), stacked([b], copy.n_features)
        assert (Xa != Xb).nnz == 0 and a.row_start == b.row_start
        np.testing.assert_array_equal(ya, yb)
    options = dict(loss="psi_g", sigma=2.0 ** -3, lam=1e-4, tol=1e-6, progress=False)
    # the same blocks: the same sums in the same order, the same iterates
    np.testing.assert_array_equal(train_stream(copy, **options).coef_,
                                  train_stream(subset, **options).coef_)


def test_an_in_memory_source_is_transposed_once_for_every_objective_that_holds_it(a9a):
    X, y = a9a
    source = InMemorySource(X, y, block_rows=BLOCK_ROWS)
    first, second = (SmoothSVMObjective(source, "psi_g", 1e-4, sigma=0.5, n_threads=n).data
                     for n in (1, 2))
    columns = first.held_data()[1]
    assert second.held_data()[1] is columns
    # what a transpose made anew for a second source holds, whatever its threads
    fresh = SmoothSVMObjective(InMemorySource(X, y, block_rows=BLOCK_ROWS), "psi_g", 1e-4,
                               sigma=0.5, n_threads=2).data.held_data()[1]
    assert fresh is not columns and len(fresh) == len(columns)
    for a, b in zip(fresh, columns):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("rows, error, match", [
    ([1, 5, 5], ValueError, "row 5 selected twice"),
    ([0, N_ROWS], IndexError, f"row {N_ROWS} outside 0..{N_ROWS - 1}"),
    ([-1, 3], IndexError, "row -1 outside"),
    ([0.5, 2.0], ValueError, "1-d array of integers"),
    ([[1, 2]], ValueError, "1-d array of integers"),
])
def test_bad_rows_are_refused_with_the_source_named(source, rows, error, match):
    with pytest.raises(error, match=match) as info:
        RowSubset(source, rows)
    assert source.name in str(info.value)


def test_bad_block_indices_are_refused(source):
    subset = RowSubset(source, np.arange(0, N_ROWS, 3))
    with pytest.raises(IndexError, match="block 99 outside"):
        subset.read_block(99)
    with pytest.raises(IndexError, match="block order"):
        list(subset.iter_blocks([0, subset.n_blocks]))


def test_empty_subset(source):
    subset = RowSubset(source, np.array([], np.int64))
    assert subset.n_samples == 0 and subset.n_blocks == 0 and subset.nnz == 0
    with pytest.raises(ValueError, match="no rows to train on"):
        train_stream(subset, progress=False)


@pytest.mark.parametrize("checksums", [True, False])
def test_data_digest_covers_every_block(a9a, tmp_path, checksums):
    """Two stores whose first block's labels differ have different digests, read whole or
    through a subset of all rows (a checkpoint of one is refused for the other). The
    digest of a subset, or of a store without checksums, is taken in a pass that reuses
    read buffers: it took views of them, which later blocks overwrote."""
    X, y = a9a
    flipped = y.copy()
    flipped[:BLOCK_ROWS] *= -1
    digests = []
    for name, labels in (("a.h5", y), ("b.h5", flipped)):
        path = write_store(tmp_path / name, InMemorySource(X, labels, block_rows=BLOCK_ROWS),
                           checksums=checksums)
        with Store(path) as store:
            everything = RowSubset(store, np.arange(store.n_samples))
            digests.append((store.data_digest(), everything.data_digest()))
            same_rows = InMemorySource(X, labels, block_rows=BLOCK_ROWS)
            assert digests[-1][1] == same_rows.data_digest()
    assert digests[0][0] != digests[1][0] and digests[0][1] != digests[1][1]


def test_a_streamed_plan_does_not_read_a_subset_to_size_it(a9a):
    """hold=False asked the subset's nonzeros (a pass over it) to decide not to hold it."""
    from streamssvm.data.plan import DataPlan

    class Counting(InMemorySource):
        reads = 0

        def read_block(self, k):
            Counting.reads += 1
            return super().read_block(k)

    X, y = a9a
    subset = RowSubset(Counting(X, y, block_rows=1000), np.arange(0, X.shape[0], 3))
    assert DataPlan(subset, 1, hold=False).held_rows() is None and Counting.reads == 0
    assert DataPlan(subset, 1, hold=True).held_rows().n_rows == subset.n_samples
    assert Counting.reads > 0
