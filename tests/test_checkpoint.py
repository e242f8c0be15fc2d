"""Checkpoints: a run stopped and resumed ends at the model of an uninterrupted run, for
every solver that checkpoints; a checkpoint of another training is refused; a training
process killed (SIGKILL) at random moments leaves a readable checkpoint or none, and a
resume after the kills ends at the uninterrupted model."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import streamssvm
from streamssvm.data import InMemorySource, write_store
from streamssvm.solvers.checkpoint import Checkpoint

from shared_data import load_shared

RESUMABLE = [("tron", {}), ("tron", dict(preconditioner=True, forcing="quadratic")),
             ("newton", {}), ("newton", dict(hessian_sample=0.3)), ("gd", {}),
             ("sgd", dict(average=True)), ("pegasos", {}), ("svrg", {}), ("saga", {}),
             ("sdca", {})]


@pytest.fixture(scope="module")
def data():
    return load_shared("a9a", n_rows=4000)


def _train(data, solver, options, max_iter, **kwargs):
    X, y = data
    loss = "smoothed_hinge" if solver == "sdca" else "psi_g"
    return streamssvm.train_stream(X, y, loss=loss, lam=1e-3, solver=solver, tol=1e-9,
                                   max_iter=max_iter, progress=False, n_threads=1,
                                   **options, **kwargs)


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


def test_checkpoints_are_written_every_so_often(tmp_path):
    checkpoint = Checkpoint(tmp_path / "c.ckpt", every=3600.0, problem={"a": 1})
    checkpoint.save({"iteration": 1}, {"w": np.zeros(3)})
    assert not (tmp_path / "c.ckpt").exists()  # not due yet
    checkpoint.save({"iteration": 2}, {"w": np.ones(3)}, force=True)
    meta, arrays = checkpoint.load()
    assert meta["iteration"] == 2 and np.array_equal(arrays["w"], np.ones(3))


def _cli_train(store, model, checkpoint, resume):
    command = [sys.executable, "-m", "streamssvm", "train", str(store), "-o", str(model),
               "--loss", "psi_g", "--lam", "1e-4", "--solver", "sgd", "--max-iter", "60",
               "--seed", "11", "--tol", "0", "--threads", "1", "--quiet", "--overwrite"]
    if checkpoint:
        command += ["--checkpoint", str(checkpoint), "--checkpoint-every", "0"]
        if resume:
            command.append("--resume")
    return command


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_training_killed_twenty_times_resumes_to_the_uninterrupted_model(tmp_path):
    X, y = load_shared("a9a")
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(X, y))
    straight = tmp_path / "straight.npz"
    subprocess.run(_cli_train(store, straight, None, False), check=True)
    model, checkpoint = tmp_path / "model.npz", tmp_path / "run.ckpt"
    rng = np.random.default_rng(0)
    epochs, kills = [], 0
    while kills < 20:
        before = checkpoint.stat().st_mtime_ns if checkpoint.exists() else None
        child = subprocess.Popen(_cli_train(store, model, checkpoint, checkpoint.exists()),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if kills % 2:  # at a random moment of training: after it has written a checkpoint
            deadline = time.monotonic() + 60
            while (child.poll() is None and time.monotonic() < deadline and
                   (checkpoint.stat().st_mtime_ns if checkpoint.exists() else None) == before):
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3))
        else:  # anywhere, start-up included
            time.sleep(rng.uniform(0.0, 1.5))
        if child.poll() is not None:  # finished before the kill: not a kill
            assert child.returncode == 0, child.stderr.read().decode()
            break
        child.send_signal(signal.SIGKILL)
        child.wait()
        kills += 1
        assert not model.exists()  # the model appears only at the end, whole
        if checkpoint.exists():  # the old state or the new one, never a torn file
            with np.load(checkpoint, allow_pickle=False) as z:
                epochs.append(json.loads(str(z["meta"]))["epoch"])
                assert len(z["v"]) == X.shape[1]
    assert kills == 20 and epochs == sorted(epochs) and epochs and epochs[-1] > 0
    subprocess.run(_cli_train(store, model, checkpoint, True), check=True)
    a, b = streamssvm.Model.load(straight), streamssvm.Model.load(model)
    assert np.array_equal(a.coef_, b.coef_)
    leftovers = [p for p in os.listdir(tmp_path) if ".tmp-" in p]
    assert all(p.startswith(".run.ckpt.tmp-") for p in leftovers)  # only a killed write's
