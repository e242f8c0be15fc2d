"""Checkpoints: a run stopped and resumed ends at the model of an uninterrupted run, for
every solver that checkpoints; a checkpoint of another training is refused; a training
process killed (SIGKILL) at random moments leaves a readable checkpoint or none, and a
resume after the kills ends at the uninterrupted model."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import streamssvm
from streamssvm.data import InMemorySource, write_store
from streamssvm.solvers.checkpoint import Checkpoint

from shared_data import load_shared

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
sys.path.insert(0, TOOLS)
kill_train = importlib.import_module("kill_train")

RESUMABLE = [("tron", {}), ("tron", dict(preconditioner=True, forcing="quadratic")),
             ("newton", {}), ("newton", dict(hessian_sample=0.3)), ("gd", {}),
             ("sgd", dict(average=True)), ("sgd", dict(delay=8)), ("pegasos", {}), ("svrg", {}),
             ("saga", {}), ("sdca", {}), ("sdca", dict(eval_every=1)),
             ("sdca", dict(overlap=False))]


@pytest.fixture(scope="module")
def data():
    return load_shared("a9a", n_rows=4000)


def _train(data, solver, options, max_iter, **kwargs):
    X, y = data
    loss = "smoothed_hinge" if solver == "sdca" else "psi_g"
    # SDCA on two threads: it evaluates beside its sweeps (overlap), as a held run does
    # where a core is spare
    return streamssvm.train_stream(X, y, loss=loss, lam=1e-3, solver=solver, max_iter=max_iter,
                                   progress=False, n_threads=2 if solver == "sdca" else 1,
                                   **{"tol": 1e-9, **options}, **kwargs)


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver,options", RESUMABLE,
                         ids=[f"{s}-{i}" for i, (s, _) in enumerate(RESUMABLE)])
def test_a_stopped_and_resumed_run_ends_at_the_uninterrupted_model(data, tmp_path, solver,
                                                                    options):
    total = 6
    straight = _train(data, solver, options, total)
    path = tmp_path / "run.ckpt"
    first = _train(data, solver, options, 2, checkpoint=path, checkpoint_every=0)
    assert path.exists() and first.params["n_iter"] <= 2
    resumed = _train(data, solver, options, total, checkpoint=path, checkpoint_every=0)
    assert np.array_equal(resumed.coef_, straight.coef_)
    assert resumed.params["n_iter"] == straight.params["n_iter"]
    assert [h["f"] for h in resumed.history if "f" in h] == \
        [h["f"] for h in straight.history if "f" in h]


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("held", [True, False])
def test_a_run_resumed_with_hold_auto_holds_the_data_as_the_checkpoints_did(data, tmp_path,
                                                                           held):
    """Held and streamed data sum in other orders. A checkpoint's run that streamed (as
    under a memory cap), resumed where "auto" holds, ended elsewhere than either run."""
    store = write_store(tmp_path / "a9a.h5", InMemorySource(*data, block_rows=500))
    options = dict(loss="psi_g", lam=1e-5, tol=1e-9, progress=False, n_threads=2)
    straight = streamssvm.train_stream(store, hold=held, max_iter=12, **options)
    path = tmp_path / "run.ckpt"
    streamssvm.train_stream(store, hold=held, max_iter=4, checkpoint=path,
                            checkpoint_every=0, **options)
    resumed = streamssvm.train_stream(store, hold="auto", max_iter=12, checkpoint=path,
                                      checkpoint_every=0, **options)
    assert np.array_equal(resumed.coef_, straight.coef_)
    other = streamssvm.train_stream(store, hold=not held, max_iter=12, **options)
    assert not np.array_equal(other.coef_, straight.coef_)  # else this proves nothing


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_a_spaced_sdca_run_resumed_with_more_epochs_keeps_its_schedule(data, tmp_path):
    """On one thread SDCA spaces its evaluations by their history; the last epoch of a
    shorter run is evaluated off that schedule, and a resume from it evaluates where the
    uninterrupted run does (without shrinking, whose rows that evaluation brings back, the
    iterates are the same too)."""
    X, y = data

    def train(max_iter, **kwargs):
        return streamssvm.train_stream(X, y, loss="smoothed_hinge", lam=1e-3, solver="sdca",
                                       tol=0.0, max_iter=max_iter, shrinking=False,
                                       n_threads=1, progress=False, **kwargs)

    def evaluated(model):
        return [h["iteration"] for h in model.history if "f" in h]

    straight = train(30)
    assert evaluated(straight) == [0, 2, 6, 14, 22, 30]
    path = tmp_path / "run.ckpt"
    train(10, checkpoint=path, checkpoint_every=0)
    resumed = train(30, checkpoint=path, checkpoint_every=0)
    assert evaluated(resumed) == [0, 2, 6, 10, 14, 22, 30]
    assert np.array_equal(resumed.coef_, straight.coef_)


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver,options", [("tron", {}), ("gd", {}),
                                            ("newton", dict(hessian_sample=0.3))])
def test_a_stopped_run_called_again_keeps_its_solver_state(data, tmp_path, solver, options):
    """The same call again on a run stopped at max_iter (a retried job) saved the solver's
    scalars as empty: TRON's radius, GD's step and Newton's sample generator were lost,
    and a resume to more iterations left the uninterrupted run (found by a probe)."""
    straight = _train(data, solver, options, 6)
    path = tmp_path / "run.ckpt"
    for _ in range(2):
        _train(data, solver, options, 2, checkpoint=path, checkpoint_every=0)
    resumed = _train(data, solver, options, 6, checkpoint=path, checkpoint_every=0)
    assert np.array_equal(resumed.coef_, straight.coef_)
    assert [h["f"] for h in resumed.history] == [h["f"] for h in straight.history]


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["tron", "newton"])
def test_a_run_stopped_by_max_seconds_goes_on_with_a_larger_budget(data, tmp_path, solver):
    """max_seconds was part of the checkpoint's training: a run it stopped could be
    resumed only with the same budget, already spent (found by a probe). Like max_iter it
    is a budget now, and the resumed run ends at the uninterrupted model."""
    straight = _train(data, solver, {}, 6)
    path = tmp_path / "run.ckpt"
    first = _train(data, solver, dict(max_seconds=1e-9), 6, checkpoint=path,
                   checkpoint_every=0)
    assert first.params["message"] == "max_seconds reached" and path.exists()
    resumed = _train(data, solver, {}, 6, checkpoint=path, checkpoint_every=0)
    assert np.array_equal(resumed.coef_, straight.coef_)


@pytest.mark.parametrize("solver", ["tron", "sgd"])
def test_a_checkpoint_of_another_start_is_refused(data, tmp_path, solver):
    """w0 was not part of the checkpoint's training: a run from another start resumed
    the checkpoint's and ignored its w0 (found by a probe)."""
    path = tmp_path / "run.ckpt"
    with pytest.warns(streamssvm.ConvergenceWarning):
        _train(data, solver, {}, 2, checkpoint=path, checkpoint_every=0)
    with pytest.raises(ValueError, match="checkpoint of another training .differs in w0"):
        _train(data, solver, {}, 4, w0=np.full(data[0].shape[1], 0.5), checkpoint=path)


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["sgd", "svrg", "saga", "sdca"])
def test_an_epoch_run_stopped_by_max_seconds_checkpoints_its_last_epoch(data, tmp_path,
                                                                       solver):
    """SGD, SVRG and SAGA stopped by max_seconds wrote no checkpoint unless
    checkpoint_every was due: the next run started over (found by a probe)."""
    path = tmp_path / "run.ckpt"
    never = dict(tol=0.0)  # converged only at the optimum, within 0.2 s
    first = _train(data, solver, dict(never, max_seconds=0.2), 10 ** 6, checkpoint=path,
                   checkpoint_every=600)
    epochs = first.params["n_iter"]
    assert first.params["message"] == "max_seconds reached" and path.exists()
    resumed = _train(data, solver, never, epochs + 2, checkpoint=path, checkpoint_every=600)
    straight = _train(data, solver, never, epochs + 2)
    assert np.array_equal(resumed.coef_, straight.coef_)
    assert resumed.history[epochs - 1]["seconds"] == first.history[epochs - 1]["seconds"]


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["tron", "newton"])
def test_a_resumed_run_on_held_data_on_two_threads_takes_the_same_products(data, tmp_path,
                                                                          solver):
    """Held data's Hessian products switch to a copy of the curved rows' columns at a
    product count set by the state before: a resumed objective did not know it, took its
    products from the other columns, summed in other parts on two threads, and ended
    elsewhere (Newton on a9a: f 0.38656 against 0.38525; found by a probe)."""
    X, y = data
    options = dict(loss="squared_hinge", lam=1e-7, solver=solver, tol=1e-9, progress=False,
                   n_threads=2, hold=True)
    straight = streamssvm.train_stream(X, y, max_iter=12, **options)
    path = tmp_path / "run.ckpt"
    streamssvm.train_stream(X, y, max_iter=3, checkpoint=path, checkpoint_every=0, **options)
    resumed = streamssvm.train_stream(X, y, max_iter=12, checkpoint=path, checkpoint_every=0,
                                      **options)
    assert np.array_equal(resumed.coef_, straight.coef_)


@pytest.mark.parametrize("overlap", [True, False])
def test_a_run_stopped_by_the_duality_gap_stays_stopped_when_run_again(data, tmp_path,
                                                                       overlap):
    """SDCA's gap rule is its own: the checkpoint did not say the run had met it, so the
    same call again (or a resume after a kill past the last save) swept on, to another
    model. Found by a probe."""
    path = tmp_path / "run.ckpt"
    runs = [_train(data, "sdca", dict(gap_tol=1e-4, overlap=overlap), 100, checkpoint=path,
                   checkpoint_every=0) for _ in range(2)]
    assert [r.params["message"] for r in runs] == ["duality gap below gap_tol"] * 2
    assert runs[0].params["n_iter"] < 100
    assert runs[1].params["n_iter"] == runs[0].params["n_iter"]
    assert np.array_equal(runs[1].coef_, runs[0].coef_)
    assert runs[1].history == runs[0].history


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["tron", "newton"])
def test_a_run_stopped_by_its_solver_stays_stopped_when_run_again(data, tmp_path, solver):
    """The checkpoint did not say why a run had stopped short of convergence (TRON's
    reductions too small, Newton's decrease too small): the same call again (or a resume
    after a kill past the last save) iterated on, to another model, or failed its line
    search and recorded the last iteration twice. Found by a probe."""
    path = tmp_path / "run.ckpt"
    runs = [_train(data, solver, dict(tol=1e-14), 100, checkpoint=path, checkpoint_every=0)
            for _ in range(2)]
    assert runs[0].params["message"] in ("actual and predicted reductions too small",
                                         "objective decrease too small")
    assert runs[1].params["message"] == runs[0].params["message"]
    assert runs[1].params["n_iter"] == runs[0].params["n_iter"] < 100
    assert np.array_equal(runs[1].coef_, runs[0].coef_)
    assert runs[1].history == runs[0].history


def test_a_checkpoint_of_another_training_is_refused(data, tmp_path):
    path = tmp_path / "run.ckpt"
    _train(data, "tron", {}, 2, checkpoint=path)
    with pytest.raises(ValueError, match="another training.*lam"):
        streamssvm.train_stream(*data, loss="psi_g", lam=1e-4, tol=1e-9, max_iter=2,
                                progress=False, n_threads=1, checkpoint=path)
    with pytest.raises(ValueError, match="checkpoints work with"):
        _train(data, "lbfgs", {}, 2, checkpoint=tmp_path / "other.ckpt")
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="junk.ckpt: not a readable checkpoint"):
        _train(data, "tron", {}, 2, checkpoint=tmp_path / "junk.ckpt")


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["tron", "sgd", "saga", "sdca"])
def test_a_checkpoint_of_other_data_or_weights_of_the_same_shape_is_refused(data, tmp_path,
                                                                           solver):
    """Two matrices of the same shape and nonzeros (here the same rows in another order),
    and other row weights, are other trainings: resuming returned the first's model."""
    X, y = data
    half = X.shape[0] // 2
    path = tmp_path / "run.ckpt"
    _train((X[:half], y[:half]), solver, {}, 2, checkpoint=path)
    other = (X[:half][::-1], y[:half][::-1])
    assert other[0].shape == X[:half].shape and other[0].nnz == X[:half].nnz
    with pytest.raises(ValueError, match="another training \\(differs in data\\)"):
        _train(other, solver, {}, 2, checkpoint=path)
    if solver == "tron":  # the stochastic solvers take no weights
        weights = np.ones(half)
        _train((X[:half], y[:half]), solver, {}, 2, checkpoint=tmp_path / "w.ckpt",
               sample_weight=weights)
        weights[0] = 2.0
        with pytest.raises(ValueError, match="another training \\(differs in weights\\)"):
            _train((X[:half], y[:half]), solver, {}, 2, checkpoint=tmp_path / "w.ckpt",
                   sample_weight=weights)


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_a_store_checkpoint_is_of_its_contents(data, tmp_path):
    """A store converted again from other rows at the same path is other data (its
    blocks' checksums name it, without a pass), the same rows again, or under another
    path, the same."""
    X, y = data
    store = tmp_path / "s.h5"
    write_store(store, InMemorySource(X[:1000], y[:1000]))
    path = tmp_path / "run.ckpt"
    streamssvm.train_stream(store, lam=1e-3, max_iter=2, progress=False, checkpoint=path)
    write_store(store, InMemorySource(X[:1000], y[:1000]), overwrite=True)
    streamssvm.train_stream(store, lam=1e-3, max_iter=3, progress=False, checkpoint=path)
    moved = store.rename(tmp_path / "moved.h5")  # the same contents under another path
    streamssvm.train_stream(moved, lam=1e-3, max_iter=4, progress=False, checkpoint=path)
    moved.rename(store)
    write_store(store, InMemorySource(X[:1000][::-1], y[:1000][::-1]), overwrite=True)
    with pytest.raises(ValueError, match="differs in data"):
        streamssvm.train_stream(store, lam=1e-3, max_iter=5, progress=False, checkpoint=path)


@pytest.mark.parametrize("damage", ["nan", "meta"])
def test_a_checkpoint_with_nan_or_meta_not_an_object_is_refused(data, tmp_path, damage):
    """A NaN in w made TRON reject its steps forever; meta that is JSON but not an object
    raised an AttributeError."""
    path = tmp_path / "run.ckpt"
    _train(data, "tron", {}, 2, checkpoint=path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    if damage == "nan":
        arrays["w"][3] = np.nan
    else:
        arrays["meta"] = np.array("[1, 2]")
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    message = ("damaged checkpoint \\(w holds NaN" if damage == "nan"
               else "not a streamssvm checkpoint")
    with pytest.raises(ValueError, match=message):
        _train(data, "tron", {}, 4, checkpoint=path)


@pytest.mark.parametrize("solver, options, name", [("sgd", dict(average=True), "avg_u"),
                                                   ("saga", {}, "avg_grad")])
def test_a_damaged_checkpoint_is_refused(data, tmp_path, solver, options, name):
    """A checkpoint of the same training whose array of one entry a feature is cut short
    is refused, naming the file (the kernels would write past its end)."""
    path = tmp_path / "run.ckpt"
    _train(data, solver, options, 2, checkpoint=path, checkpoint_every=0)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[name] = arrays[name][:5]
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(ValueError, match=rf"run.ckpt: damaged checkpoint \({name} has shape "
                                         r"\(5,\), expected \(123,\)\)"):
        _train(data, solver, options, 4, checkpoint=path, checkpoint_every=0)


def test_checkpoints_are_written_every_so_often(tmp_path):
    checkpoint = Checkpoint(tmp_path / "c.ckpt", every=3600.0, problem={"a": 1})
    checkpoint.save({"iteration": 1}, {"w": np.zeros(3)})
    assert not (tmp_path / "c.ckpt").exists()  # not due yet
    checkpoint.save({"iteration": 2}, {"w": np.ones(3)}, force=True)
    meta, arrays = checkpoint.load()
    assert meta["iteration"] == 2 and np.array_equal(arrays["w"], np.ones(3))


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_training_killed_twenty_times_resumes_to_the_uninterrupted_model(tmp_path):
    X, y = load_shared("a9a")
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(X, y))
    work = tmp_path / "work"
    work.mkdir()
    seen, finished, equal = kill_train.run(store, work, 20, seed=0)
    assert len(seen) >= 10 and max(seen) > 0  # most kills landed after a checkpoint
    assert equal
    leftovers = [p for p in os.listdir(work) if ".tmp-" in p]
    # only the temporary files of killed writes: a checkpoint's, or the model's when a
    # kill lands in the final write (once in ten full runs of the suite on 11-27)
    assert all(p.startswith((".run.ckpt.tmp-", ".model.npz.tmp-")) for p in leftovers), \
        leftovers


def test_kill_train_runs_the_repository_package_beside_another(data, tmp_path,
                                                               another_streamssvm):
    """kill_train imported, and trained in its children, whichever streamssvm was installed:
    run from a checkout beside another version, it tested the other one. It and its children
    now import the repository's package, whatever PYTHONPATH holds first."""
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(*data))
    run = subprocess.run([sys.executable, os.path.join(TOOLS, "kill_train.py"), str(store),
                          "--kills", "0", "--epochs", "2"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and "imported" not in run.stderr, run.stderr
    assert run.stdout.endswith("resumed model equals the uninterrupted one\n")


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_numpy_scalar_options_checkpoint(data, tmp_path):
    """The training's description holds the solver's options: np.int64(4) raised "Object
    of type int64 is not JSON serializable" before the first epoch."""
    path = tmp_path / "run.ckpt"
    first = _train(data, "sgd", dict(delay=np.int64(4)), np.int64(2), checkpoint=path)
    resumed = _train(data, "sgd", dict(delay=4), 3, checkpoint=path)  # the same training
    assert resumed.params["n_iter"] == 3 > first.params["n_iter"]
