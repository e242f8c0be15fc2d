"""Training across the worker processes of a real Dask LocalCluster (issue 9, item 2).

The model must be the local one (same rows, same order: only the order of floating-point
sums differs), with the stores split into two files or one store split across workers by
blocks; a worker process killed mid-training must leave the same model, or a clear error.
"""

import os
import re
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
import dask  # noqa: E402  (installed with distributed)

from streamssvm import InMemorySource, Store, StoreError, convert_svmlight  # noqa: E402
from streamssvm.data import write_store  # noqa: E402
from streamssvm.datasets import a9a_paths  # noqa: E402
from streamssvm.distributed import DaskObjective, DaskStores, WorkerLostError  # noqa: E402
from streamssvm.objective import Oracle, Problem, SmoothSVMObjective  # noqa: E402
from streamssvm.solvers import newton, sgd, tron  # noqa: E402

LAM = 1e-4
BLOCK_ROWS = 4096
# Newton's run on a9a at lambda = 1e-4 is itself chaotic in the order of sums: its first
# Armijo steps are 2^-14 and 2^-10, and locally 1 and 2 kernel threads end 5e-4 apart. At
# lambda = 1e-3, sigma = 0.5 they end 6e-11 apart: there "the local model" is one model.
NEWTON = dict(loss="psi_g", lam=1e-3, sigma=0.5)


@pytest.fixture(scope="module")
def a9a_stores(tmp_path_factory):
    """The shipped a9a: one store of 8 blocks, and the same rows in two stores."""
    folder = tmp_path_factory.mktemp("distributed")
    full = str(folder / "full.h5")
    convert_svmlight(a9a_paths()[0], full, block_rows=BLOCK_ROWS, progress=False)
    halves = []
    with Store(full) as store:
        for name, (lo, hi) in (("a.h5", (0, 16384)), ("b.h5", (16384, store.n_samples))):
            X, y = store.read_rows(lo, hi)
            source = InMemorySource(X, y, block_rows=BLOCK_ROWS, classes=store.classes)
            halves.append(write_store(str(folder / name), source))
    return full, halves


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(autouse=True)
def _every_worker_alive(request):
    """Each test that takes the cluster starts with both workers alive, whatever the tests
    before it killed: the scheduler may still list a killed worker, and its nanny restarts it
    under a new address a moment later, so both must answer."""
    if "client" not in request.fixturenames:
        return
    client = request.getfixturevalue("client")
    deadline = time.monotonic() + 60
    while True:
        answers = client.run(os.getpid, on_error="return")
        if len(answers) == 2 and all(isinstance(pid, int) for pid in answers.values()):
            return
        assert time.monotonic() < deadline, f"the cluster's workers: {answers}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def local(a9a_stores):
    """The local solvers' results on the single store, per solver name."""
    full, _ = a9a_stores
    with Store(full) as store:
        return dict(tron=tron(SmoothSVMObjective(store, "psi_g", LAM)),
                    newton=newton(SmoothSVMObjective(store, **NEWTON)))


def assert_same_model(result, reference):
    assert result.converged and reference.converged
    assert result.n_iter == reference.n_iter
    assert result.passes == reference.passes
    error = np.linalg.norm(result.w - reference.w) / np.linalg.norm(reference.w)
    assert error <= 1e-8, error
    assert abs(result.f - reference.f) <= 1e-10 * abs(reference.f)


def test_tron_on_two_stores_gives_the_local_model(a9a_stores, client, local):
    _, halves = a9a_stores
    with DaskStores(halves, client) as stores:
        assert len(set(stores.owners)) == 2  # one shard, one file, per worker
        assert [[p[0] for p in spec["pieces"]] for spec in stores.shard_specs] == \
               [[halves[0]], [halves[1]]]
        objective = DaskObjective(stores, "psi_g", LAM)
        result = tron(objective)
        assert objective.cached_sweeps > 0  # CG ran on the curved rows the workers kept
    assert_same_model(result, local["tron"])


def test_newton_on_one_store_split_by_blocks_gives_the_local_model(a9a_stores, client, local):
    full, _ = a9a_stores
    with DaskStores(full, client) as stores:
        assert [spec["pieces"] for spec in stores.shard_specs] == [[(full, 0, 4)], [(full, 4, 8)]]
        result = newton(DaskObjective(stores, **NEWTON))  # line search: value_on_segment
    assert_same_model(result, local["newton"])


def test_the_dask_objective_is_an_oracle_of_its_own(a9a_stores, client):
    """DaskObjective implements the oracle protocol beside the local objective, sharing its
    Problem, not inheriting it: it has no data plan, so a stochastic solver, which takes
    its epochs from one, refuses it before any pass, with train_stream's message."""
    full, _ = a9a_stores
    with Store(full) as store, DaskStores(full, client) as stores:
        local = SmoothSVMObjective(store, "psi_g", LAM)
        objective = DaskObjective(stores, "psi_g", LAM)
        assert isinstance(local, Oracle) and isinstance(objective, Oracle)
        assert isinstance(objective, Problem) and not isinstance(objective, SmoothSVMObjective)
        assert not hasattr(objective, "data") and not hasattr(objective, "shuffled_blocks")
        with pytest.raises(ValueError, match="^solver 'sgd' reads the blocks itself; with a "
                                             "Dask client use tron, "):
            sgd(objective, max_iter=1)
        with pytest.raises(ValueError, match="not computed across Dask workers"):
            objective.smoothness()
        assert objective.passes == 0
        w = np.full(objective.n_variables, 0.01)
        state, expected = objective.evaluate(w), local.evaluate(w)
        assert objective.passes == 1
        assert state.f == pytest.approx(expected.f, rel=1e-12)
        np.testing.assert_allclose(objective.loss_gradient(state), local.loss_gradient(expected),
                                   rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("hold", [False, True])
def test_oracle_calls_match_the_local_objective(a9a_stores, client, hold):
    """Every oracle call, including the streamed Hessian products (no curved-row cache)
    or those from the held data, and the intercept, against the local objective at
    random points."""
    full, halves = a9a_stores
    rng = np.random.default_rng(1)
    options = dict(fit_intercept=True, intercept_scaling=2.0, cache_curved=False, hold=hold)
    with Store(full) as store, DaskStores(halves, client) as stores:
        mine = DaskObjective(stores, "psi_m", LAM, sigma=0.25, **options)
        ref = SmoothSVMObjective(store, "psi_m", LAM, sigma=0.25, **options)
        w, v, s = (rng.standard_normal(124) * 0.2 for _ in range(3))
        # the local calls first: the workers then load the kernels numba cached for them
        a_ref, b_ref = ref.evaluate(w), ref.evaluate(v)
        expected = [a_ref.f, a_ref.grad, ref.hessp(a_ref, s), ref.hess_diag(b_ref),
                    ref.value(v), ref.value_on_segment(a_ref, b_ref, 0.3)]
        a, b = mine.evaluate(w), mine.evaluate(v)
        got = [a.f, a.grad, mine.hessp(a, s), mine.hess_diag(b), mine.value(v),
               mine.value_on_segment(a, b, 0.3)]
        for value, reference in zip(got, expected):
            np.testing.assert_allclose(value, reference, rtol=1e-12, atol=1e-15)
        expected_counts = (3, 2) if hold else (5, 0)
        assert ((mine.passes, mine.cached_sweeps) == (ref.passes, ref.cached_sweeps)
                == expected_counts)


def _held_points(client):
    """Points each worker holds, summed over its shards."""
    def count():
        from streamssvm.distributed import worker
        return sum(len(shard.points) for shard in worker._SHARDS.values())
    return sum(client.run(count).values())


def test_workers_drop_what_the_driver_no_longer_holds(a9a_stores, client):
    full, _ = a9a_stores
    with DaskStores(full, client) as stores:
        objective = DaskObjective(stores, "psi_g", LAM)
        state = objective.evaluate(np.zeros(123))
        for _ in range(5):
            state = objective.evaluate(state.w - 0.1 * state.grad)
        objective.hessp(state, state.grad)  # the call that tells the workers
        assert _held_points(client) == 2  # the current point on each of the two shards
    assert _held_points(client) == 0  # closing the stores drops the session


def _kill_after(objective, passes, pid):
    """A thread that SIGKILLs process ``pid`` once ``objective`` has made ``passes``."""
    def watch():
        while objective.passes < passes:
            time.sleep(0.002)
        os.kill(pid, signal.SIGKILL)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_killed_worker_is_replaced_and_the_model_is_the_same(a9a_stores, client, local):
    _, halves = a9a_stores
    with DaskStores(halves, client) as stores:
        objective = DaskObjective(stores, "psi_g", LAM)
        victim = stores.owners[0]
        killer = _kill_after(objective, 3, client.run(os.getpid)[victim])
        with pytest.warns(RuntimeWarning, match=f"worker {victim} lost: shard 0"):
            result = tron(objective)
        assert not killer.is_alive()  # the kill happened during the solve
        assert stores.recoveries == 1 and victim not in stores.owners
        assert objective.recomputed_points >= 1  # the current point, re-evaluated elsewhere
    assert_same_model(result, local["tron"])


class _CancelsTheSurvivors(DaskStores):
    """At a recovery, cancels the other shards' last tasks, as the scheduler did when it
    dropped the dead worker's tasks with the partial sums that needed them."""

    def _submit(self, i, *args):
        self.submitted = {**getattr(self, "submitted", {}), i: super()._submit(i, *args)}
        return self.submitted[i]

    def _recover(self, lost):
        moved = super()._recover(lost)
        self.client.cancel([f for i, f in self.submitted.items() if i not in moved])
        return moved


def test_a_survivor_cancelled_with_a_lost_worker_is_done_again(a9a_stores, client, local):
    """The other shard's task, cancelled with the lost worker's, was added to the moved
    shard's: TRON failed after worker_timeout, saying that no worker was lost (2 kills in
    12 at 0.1-0.18 s; found by a probe)."""
    _, halves = a9a_stores
    client.wait_for_workers(2, timeout=60)  # the nanny restarted an earlier victim
    with _CancelsTheSurvivors(halves, client, worker_timeout=5) as stores:
        objective = DaskObjective(stores, "psi_g", LAM)
        victim = stores.owners[0]
        _kill_after(objective, 3, client.run(os.getpid)[victim])
        with pytest.warns(RuntimeWarning, match=f"worker {victim} lost: shard 0"):
            result = tron(objective)
        assert stores.recoveries == 1
    assert_same_model(result, local["tron"])


def test_a_send_to_a_worker_the_scheduler_has_removed_is_a_loss(a9a_stores, client):
    """The scheduler answers a scatter to a worker it has removed with a KeyError: that is
    the shard's worker lost (recovered as such), not an error of the run."""
    from streamssvm.distributed.stores import _Lost

    full, _ = a9a_stores
    client.wait_for_workers(2, timeout=60)  # the nanny restarted an earlier victim
    with DaskStores(full, client) as stores:
        victim = stores.owners[0]
        os.kill(client.run(os.getpid)[victim], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while victim in client.nthreads() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert victim not in client.nthreads()
        with pytest.raises(_Lost) as lost:
            stores._scatter(np.ones(3))
        assert victim in lost.value.workers and isinstance(lost.value.__cause__, KeyError)


def test_killed_worker_without_recoveries_is_a_clear_error(a9a_stores, client):
    full, _ = a9a_stores
    client.wait_for_workers(2, timeout=60)  # the nanny restarted the last test's victim
    with DaskStores(full, client, max_recoveries=0) as stores:
        objective = DaskObjective(stores, "psi_g", LAM)
        victim = stores.owners[1]
        _kill_after(objective, 2, client.run(os.getpid)[victim])
        expected = rf"lost Dask worker\(s\) {re.escape(victim)} holding shard\(s\) 1 " \
                   rf"\({re.escape(full)} blocks 4:8\)"
        with pytest.raises(WorkerLostError, match=expected):
            tron(objective)


def test_a_cancelled_task_is_a_clear_error(a9a_stores, client):
    """A task cancelled while the driver waits for it (as the scheduler may cancel those
    that needed a dead worker) and one cancelled before: with every worker alive, both are
    a WorkerLostError that says so."""
    full, _ = a9a_stores
    with DaskStores(full, client, worker_timeout=0.5, poll_seconds=0.1) as stores:
        during = client.submit(time.sleep, 30, pure=False)
        threading.Timer(0.5, client.cancel, [during]).start()
        with pytest.raises(WorkerLostError, match="cancelled task .* no shard's worker was lost"):
            stores._wait([during])
        before = client.submit(time.sleep, 30, pure=False)
        client.cancel(before)
        with pytest.raises(WorkerLostError, match="cancelled task"):
            stores._wait([before])


def test_a_different_file_under_the_same_path_is_refused(a9a_stores, client, tmp_path):
    """What a worker sees when the filesystem is not shared: another file at the path."""
    full, halves = a9a_stores
    path = str(tmp_path / "moving.h5")
    with Store(halves[0]) as first, Store(halves[1]) as second:
        write_store(path, first)
        with DaskStores(path, client) as stores:
            write_store(path, second, overwrite=True)  # the workers open this one
            with pytest.raises(StoreError, match="moving.h5 on worker .* is not the file the "
                                                 "driver opened"):
                DaskObjective(stores, "psi_g", LAM).evaluate(np.zeros(123))


def test_train_distributed_and_the_cli_give_the_local_model(a9a_stores, client, tmp_path):
    from streamssvm import Model, train_stream
    from streamssvm.cli import main
    from streamssvm.distributed import train_distributed

    full, halves = a9a_stores
    client.wait_for_workers(2, timeout=60)
    # TRON to LIBLINEAR's tolerance: further on, the sums' order (two workers' partial sums
    # against one process's) shows in the last digits that ill-conditioned steps amplify
    run = dict(lam=LAM, solver="tron", tol=0.01, progress=False)
    reference = train_stream(full, **run)
    for model in (train_distributed(halves, client, **run),
                  train_stream(halves, **run)):  # locally, as one source
        assert model.params["passes"] == reference.params["passes"]
        error = np.linalg.norm(model.coef_ - reference.coef_) / np.linalg.norm(reference.coef_)
        assert error <= 1e-8, error
    out = tmp_path / "model.npz"
    assert main(["train", *halves, "--scheduler", client.scheduler.address, "--lam", str(LAM),
                 "--solver", "tron", "--tol", "0.01", "-o", str(out), "--quiet"]) == 0
    loaded = Model.load(out)
    error = np.linalg.norm(loaded.coef_ - reference.coef_) / np.linalg.norm(reference.coef_)
    assert error <= 1e-8, error
    assert list(loaded.classes_) == list(reference.classes_)


def test_what_cannot_run_on_workers_is_refused(a9a_stores, client, capsys):
    from streamssvm import train_stream
    from streamssvm.cli import main

    full, _ = a9a_stores
    with pytest.raises(ValueError, match="solver 'sgd' reads the blocks itself"):
        train_stream(full, solver="sgd", client=client)
    with pytest.raises(ValueError, match="training with a Dask client needs stores"):
        train_stream(np.eye(3), np.array([1, -1, 1]), client=client)
    with pytest.raises(ValueError, match="sample_weight is not supported across Dask workers"):
        train_stream(full, sample_weight=np.ones(32561), client=client)
    with pytest.raises(ValueError, match="hessian_sample.* not supported across Dask workers"):
        train_stream(full, solver="newton", hessian_sample=0.5, client=client)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main(["train", full, "--scheduler", "tcp://127.0.0.1:9", "-o", "never.npz"]) == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err


def test_sample_weight_with_a_client_is_refused_before_the_workers_are_asked(a9a_stores):
    """It was refused once the stores were sharded over the workers: with none there, the
    run waited 60 s for one and then said so, not what was wrong."""
    from streamssvm import train_stream

    full, _ = a9a_stores
    message = ("sample_weight is not supported across Dask workers: train without it, or "
               "without a client")
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as empty:
            with pytest.raises(ValueError) as info:
                train_stream(full, sample_weight=np.ones(32561), client=empty)
    assert str(info.value) == message


def test_a_stochastic_solver_with_a_client_is_refused_before_the_workers_are_asked(
        a9a_stores):
    """It was refused once the stores were sharded over the workers: with none there, the
    run waited 60 s for one and then said so, not what was wrong."""
    from streamssvm import train_stream
    from streamssvm.solvers import STOCHASTIC

    full, _ = a9a_stores
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as empty:
            for solver in STOCHASTIC:
                with pytest.raises(ValueError) as info:
                    train_stream(full, solver=solver, client=empty)
                assert str(info.value) == (f"solver {solver!r} reads the blocks itself; with "
                                           f"a Dask client use tron, newton, lbfgs, gd, agd")


def test_a_w0_of_the_wrong_width_with_a_client_is_refused_before_the_workers_are_asked(
        a9a_stores):
    """It was refused once the stores were sharded over the workers: with none there, the
    run waited 60 s for one and then said so, not what was wrong."""
    from streamssvm import train_one_vs_rest, train_stream

    full, halves = a9a_stores
    message = "w0 has shape (5,), expected (123,): n_variables = the data's 123 features"
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as empty:
            for train, data in ((train_stream, full), (train_stream, halves),
                                (train_one_vs_rest, full)):
                with pytest.raises(ValueError) as info:
                    train(data, w0=np.zeros(5), client=empty, progress=False)
                assert str(info.value) == message


def test_one_vs_rest_with_a_client_is_refused_before_training(client, tmp_path, capsys):
    """One-vs-rest trains each class on a local view of the store: with a client it said
    "(class 0 vs rest): training with a Dask client needs stores", of a store path."""
    from streamssvm import train_one_vs_rest
    from streamssvm.cli import main

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    store = str(tmp_path / "three.h5")
    write_store(store, InMemorySource(X, np.argmax(X[:, :3], axis=1)))
    message = (f"{store}: one-vs-rest over its 3 classes is not trained with a Dask client "
               f"(only two classes are); train it without one")
    with pytest.raises(ValueError) as info:
        train_one_vs_rest(store, client=client, progress=False)
    assert str(info.value) == message
    model = tmp_path / "m.npz"
    assert main(["train", store, "--scheduler", client.scheduler.address, "-o", str(model),
                 "--quiet"]) == 1
    assert capsys.readouterr().err == f"streamssvm: error: {message}\n"
    assert not model.exists()


def test_class_weights_with_a_client_are_refused_as_such(a9a_stores, client, tmp_path, capsys):
    """--class-weight with --scheduler said "sample_weight is not supported across Dask
    workers", of a sample_weight never given."""
    from streamssvm import train_one_vs_rest
    from streamssvm.cli import main

    full, _ = a9a_stores
    message = ("class weights (class_weight) are not supported across Dask workers: train "
               "without them, or without a client")
    with pytest.raises(ValueError) as info:
        train_one_vs_rest(full, class_weight="balanced", client=client, progress=False)
    assert str(info.value) == message
    with pytest.raises(ValueError, match="^sample_weight is not supported across Dask"):
        train_one_vs_rest(full, sample_weight=np.ones(32561), client=client, progress=False)
    model = tmp_path / "m.npz"
    assert main(["train", full, "--class-weight", "1:2", "--scheduler",
                 client.scheduler.address, "-o", str(model), "--quiet"]) == 1
    assert capsys.readouterr().err == f"streamssvm: error: {message}\n"
