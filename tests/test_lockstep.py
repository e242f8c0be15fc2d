"""Lockstep: runs over row subsets of one store share its passes, with the results of
running them one after the other."""

import threading

import numpy as np
import pytest

from shared_data import load_shared
from streamssvm import cross_validate, train_stream
from streamssvm._memory import available_memory_bytes
from streamssvm.data import InMemorySource, RowSubset, Store, write_store
from streamssvm.data.lockstep import Lockstep

N_ROWS, BLOCK_ROWS, FOLDS = 3000, 256, 4


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    X, y = load_shared("a9a", n_rows=N_ROWS)
    path = tmp_path_factory.mktemp("lockstep") / "a9a.h5"
    return write_store(path, InMemorySource(X, y, block_rows=BLOCK_ROWS))


class CountingStore(Store):
    """A store that counts the blocks read from it (the real HDF5 reads)."""

    def __init__(self, path):
        super().__init__(path)
        self.reads = 0

    def _read_raw(self, k, *args):
        self.reads += 1
        return super()._read_raw(k, *args)


def fold_rows(n, folds):
    return [np.flatnonzero(np.arange(n) % folds != f) for f in range(folds)]


def train_fold(base, rows):
    model = train_stream(RowSubset(base, rows), loss="squared_hinge", lam=1e-3, solver="tron",
                         hold=False, progress=False)
    return model.coef_, model.params["passes"]


def test_runs_give_the_sequential_results_and_share_the_passes(store_path):
    with CountingStore(store_path) as store:
        alone, reads_alone = [], []
        for rows in fold_rows(N_ROWS, FOLDS):
            store.reads = 0
            alone.append(train_fold(store, rows))
            reads_alone.append(store.reads)
        store.reads = 0
        shared = Lockstep(store)
        together = shared.run([lambda rows=rows: train_fold(shared, rows)
                               for rows in fold_rows(N_ROWS, FOLDS)])
        reads_together = store.reads
    for (w_alone, passes_alone), (w_together, passes_together) in zip(alone, together):
        np.testing.assert_array_equal(w_together, w_alone)  # bit-identical
        assert passes_together == passes_alone
    # every fold reads whole passes of the store (its rows lie in every block)
    assert all(reads % store.n_blocks == 0 for reads in reads_alone)
    # each shared pass serves every fold waiting: as many as the longest fold's
    assert shared.passes == max(reads_alone) // store.n_blocks
    assert reads_together == shared.passes * store.n_blocks < sum(reads_alone)


def test_a_run_that_leaves_a_pass_early_and_direct_reads(store_path):
    with Store(store_path) as store:
        shared = Lockstep(store)
        whole = [b.y.copy() for b in store.iter_blocks()]

        def leaves_early():
            got = []
            for b in shared.iter_blocks():  # the first two blocks, then a whole pass
                got.append(b.y.copy())
                if len(got) == 2:
                    break
            got += [b.y.copy() for b in shared.iter_blocks()]
            return got

        def shuffled():  # not in storage order: read directly, within the run's turn
            order = np.arange(store.n_blocks)[::-1]
            return [b.y.copy() for b in shared.iter_blocks(order)]

        def every_other():
            return [b.y.copy() for b in shared.iter_blocks(range(0, store.n_blocks, 2))]

        early, backwards, other = shared.run([leaves_early, shuffled, every_other])
    for got, want in zip(early, whole[:2] + whole):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(backwards, whole[::-1]):
        np.testing.assert_array_equal(got, want)
    assert len(other) == len(whole[::2])
    for got, want in zip(other, whole[::2]):
        np.testing.assert_array_equal(got, want)
    assert shared.passes == 2


def test_an_error_in_one_run_aborts_the_others_and_is_raised(store_path):
    finished = []

    with Store(store_path) as store:
        shared = Lockstep(store)

        def fails():
            next(iter(shared.iter_blocks()))
            raise ValueError("fold 1 failed")

        def passes_forever():
            try:
                while True:
                    for _ in shared.iter_blocks():
                        pass
            finally:
                finished.append("unwound")

        with pytest.raises(ValueError, match="fold 1 failed"):
            shared.run([passes_forever, fails])
        assert finished == ["unwound"]
        assert not [t for t in threading.enumerate() if t.name.startswith("streamssvm-lock")]
        # the lockstep is usable again
        assert shared.run([lambda: sum(b.n_rows for b in shared.iter_blocks())]) == [N_ROWS]


def test_each_run_sees_its_share_of_the_memory(store_path):
    with Store(store_path) as store:
        shared = Lockstep(store)
        free = available_memory_bytes()
        shares = shared.run([available_memory_bytes] * 4)
    for share in shares:
        assert 0.15 * free < share < 0.35 * free  # a quarter, give or take others' use
    assert available_memory_bytes() > 0.5 * free  # outside the runs: the whole again


def test_cross_validation_on_a_store_shares_its_passes(store_path):
    X, y = load_shared("a9a", n_rows=N_ROWS)
    options = dict(loss="squared_hinge", lams=(1e-2, 1e-3), folds=FOLDS, refit=False,
                   progress=False, hold=False)
    on_store = cross_validate(str(store_path), **options)
    one_after_the_other = cross_validate(str(store_path), lockstep=False, **options)
    in_memory = cross_validate(X, y, **options)
    for what in ("accuracy", "mean_loss", "objective", "passes"):
        np.testing.assert_array_equal(getattr(on_store, what),
                                      getattr(one_after_the_other, what), err_msg=what)
    assert one_after_the_other.data_passes is None
    np.testing.assert_array_equal(on_store.accuracy, in_memory.accuracy)
    # both within ||grad L||^2 / (2 lambda) of each point's optimum
    lam = on_store.lams[None, :, None]
    bound = (on_store.grad_norm ** 2 + in_memory.grad_norm ** 2) / (2 * lam)
    assert np.all(np.abs(on_store.objective - in_memory.objective) <= bound)
    assert 0 < in_memory.data_passes < in_memory.passes.sum()
    # at each point the longest fold's training passes and a scoring pass, shared; and
    # once the folds' counts of nonzeros
    per_point = on_store.passes.max(axis=2).sum() + on_store.passes.shape[1] + 1
    assert on_store.data_passes <= per_point < on_store.passes.sum()


class InterruptedStore(Store):
    """A store whose passes are interrupted (KeyboardInterrupt) at their third block, in the
    thread that reads them: the coordinator's."""

    def iter_blocks(self, order=None, transient=False):
        for i, block in enumerate(super().iter_blocks(order, transient)):
            if i == 2:
                raise KeyboardInterrupt
            yield block


def test_an_interrupt_of_the_coordinator_unwinds_every_run(store_path):
    unwound = []

    def run_passes():
        try:
            for _ in shared.iter_blocks():
                pass
        finally:
            unwound.append(threading.current_thread().name)

    with InterruptedStore(store_path) as store:
        shared = Lockstep(store)
        with pytest.raises(KeyboardInterrupt):
            shared.run([run_passes] * 3)
    assert len(unwound) == 3
    assert not [t for t in threading.enumerate() if t.name.startswith("streamssvm-lock")]


def test_up_to_concurrent_runs_hold_a_baton_at_once(store_path):
    with Store(store_path) as store:
        for concurrent, expected in ((2, [True, True]), (1, [False, False])):
            meet = threading.Barrier(2, timeout=2)  # both runs at once, or a timeout

            def met(meet=meet):
                try:
                    meet.wait()
                    return True
                except threading.BrokenBarrierError:
                    return False

            assert Lockstep(store, concurrent).run([met, met]) == expected
        with pytest.raises(ValueError, match="concurrent"):
            Lockstep(store, 0)


def test_cross_validation_refuses_bad_threads_before_any_pass(store_path):
    with pytest.raises(ValueError, match="n_threads must be a positive integer"):
        cross_validate(str(store_path), loss="squared_hinge", lams=(1e-2,), n_threads=0,
                       progress=False)
