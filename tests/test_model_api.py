"""train_stream and Model: matrix vs store, save / load, labels, scoring, errors, accuracy."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from shared_data import load_shared as load
from streamssvm import Model, train_stream
from streamssvm.data import InMemorySource, Store
from streamssvm.data import store




def write_store(path, X, y, compression=None, value_dtype=None, **blocking):
    """A real store file holding X, y, cut as InMemorySource(**blocking) cuts it."""
    return store.write_store(path, InMemorySource(X, y, **blocking), value_dtype=value_dtype,
                             compression=compression)


def blobs(n=400, d=20, labels=(-1.0, 1.0), seed=0):
    """Two well separated sparse classes labelled with the given values."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=rng).toarray()
    positive = rng.random(n) < 0.45
    X[:, 0] = np.where(positive, 1.5, -1.5) + 0.3 * rng.normal(size=n)
    return sp.csr_matrix(X), np.where(positive, labels[1], labels[0])


def relative_difference(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b)


TRAIN = dict(lam=1e-4, tol=1e-6, progress=False)


# ---------------------------------------------------------------- matrix vs store

@pytest.mark.parametrize("loss, fit_intercept, dtype", [
    pytest.param("psi_g", False, np.float64, id="psi_g-f64"),
    pytest.param("psi_m", True, np.float32, id="psi_m-intercept-f32"),
    pytest.param("squared_hinge", True, np.float64, id="squared_hinge-intercept-f64"),
])
def test_store_path_repeats_in_memory_training(tmp_path, loss, fit_intercept, dtype):
    """A store cut like the in-memory source (the converter's and InMemorySource's default
    cut at 2^19 nonzeros: two blocks for ijcnn1), one thread: the same model to 1e-10."""
    X, y = load("ijcnn1")
    X = X.astype(dtype)
    path = write_store(tmp_path / "ijcnn1.h5", X, y, compression="gzip")
    with Store(path) as store:
        assert store.n_blocks == InMemorySource(X, y).n_blocks == 2
        assert store.value_dtype == dtype
    options = dict(loss=loss, fit_intercept=fit_intercept, n_threads=1, **TRAIN)
    from_matrix = train_stream(X, y, **options)
    from_store = train_stream(path, **options)
    assert from_matrix.params["converged"] and from_store.params["converged"]
    assert relative_difference(from_store.coef_, from_matrix.coef_) <= 1e-10
    assert from_store.intercept_ == pytest.approx(from_matrix.intercept_, rel=1e-10, abs=1e-12)
    if fit_intercept:
        assert from_matrix.intercept_ != 0.0
    np.testing.assert_array_equal(from_store.classes_, from_matrix.classes_)
    assert from_store.params["n_samples"] == X.shape[0]


def test_store_path_with_other_blocks_and_threads_agrees_within_the_tolerance(tmp_path):
    """Other blocks and two threads change the order of floating-point sums, and TRON's
    stopping point moves with it inside the tolerance region (measured: 1e-5 relative in w
    on this a9a subset at tol 1e-6; 1e-8 on ijcnn1). What must hold: both points are
    within ||grad|| / lam of the minimiser (L is lam-strongly convex without intercept), so
    within the sum of those of each other, and L agrees to second order."""
    X, y = load("a9a", 5000)
    path = write_store(tmp_path / "a9a.h5", X, y, value_dtype="float64", block_nnz=25_000)
    with Store(path) as store:
        assert store.n_blocks == 3
    options = dict(loss="psi_g", lam=1e-4, tol=1e-8, progress=False)
    from_matrix = train_stream(X, y, **options)
    from_store = train_stream(path, **options)
    bound = (from_matrix.params["grad_norm"] + from_store.params["grad_norm"]) / 1e-4
    assert np.linalg.norm(from_store.coef_ - from_matrix.coef_) <= bound
    assert from_store.params["objective"] == pytest.approx(from_matrix.params["objective"],
                                                           rel=1e-10)
    agree = np.mean(from_store.predict(X) == from_matrix.predict(X))
    assert agree >= 0.999


# ---------------------------------------------------------------- save / load

def test_save_load_round_trip(tmp_path):
    X, y = blobs(labels=(1.0, 2.0))
    model = train_stream(X, y, loss="psi_m", sigma=0.25, fit_intercept=True,
                         forcing="quadratic", **TRAIN)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = Model.load(path)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.intercept_ == model.intercept_ and model.intercept_ != 0.0
    np.testing.assert_array_equal(loaded.classes_, [1.0, 2.0])
    assert loaded.params == model.params
    assert loaded.params["forcing"] == "quadratic" and loaded.params["sigma"] == 0.25
    assert loaded.history == model.history and len(loaded.history) > 1
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # a plain npz: readable without pickle, with a JSON description
    with np.load(path, allow_pickle=False) as z:
        assert set(z.files) == {"coef", "intercept", "classes", "meta"}
        np.testing.assert_array_equal(z["coef"], model.coef_)
        meta = json.loads(str(z["meta"]))
    assert meta["format"] == "streamssvm.model" and meta["params"]["loss"] == "psi_m"


def test_numpy_scalar_options_are_saved_as_python_values(tmp_path):
    """Options given as numpy scalars (as grids built with np.arange give) made the save
    fail in json: "Object of type int64 is not JSON serializable"."""
    from streamssvm import OnlineTrainer

    X, y = blobs()
    model = train_stream(X, y, fit_intercept=True, intercept_scaling=np.float32(2),
                         max_iter=np.int64(50), **TRAIN)
    model.params["flags"] = [np.bool_(True), np.longdouble(0.5)]
    model.save(tmp_path / "model.npz")
    params = Model.load(tmp_path / "model.npz").params
    assert params["intercept_scaling"] == 2.0 and params["max_iter"] == 50
    assert params["flags"] == [True, 0.5]
    trainer = OnlineTrainer(average=np.int64(3), seed=np.int64(4)).partial_fit(X, y)
    trainer.save(tmp_path / "state.npz")
    loaded = OnlineTrainer.load(tmp_path / "state.npz")
    assert loaded.options == trainer.options and loaded.options["average"] == 3
    model.params["callback"] = object()  # anything else is still refused
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        model.save(tmp_path / "other.npz")


def test_load_refuses_other_files(tmp_path):
    other = tmp_path / "other.npz"
    np.savez(other, coef=np.zeros(3))
    with pytest.raises(ValueError, match="not a streamssvm model"):
        Model.load(other)
    text = tmp_path / "text.npz"
    text.write_text("not a zip file")
    with pytest.raises(ValueError, match="not a streamssvm model"):
        Model.load(text)


def _snapshot(directory):
    return {p.name: p.read_bytes() for p in Path(directory).iterdir() if p.is_file()}


def test_failed_save_leaves_the_existing_file_untouched(tmp_path):
    X, y = blobs()
    good = train_stream(X, y, **TRAIN)
    path = tmp_path / "model.npz"
    good.save(path)
    before = _snapshot(tmp_path)

    broken = Model(good.coef_, 0.0, good.classes_, params={"callback": object()})
    with pytest.raises(TypeError):
        broken.save(path)
    assert _snapshot(tmp_path) == before

    with pytest.raises(FileExistsError):
        good.save(path, overwrite=False)
    assert _snapshot(tmp_path) == before

    # a directory as the target is refused before anything is written (failures after
    # the temporary file was written: tests/test_atomic_outputs.py's full disks)
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(OSError):
        good.save(target)
    assert (target / "keep.txt").read_text() == "mine"
    assert _snapshot(tmp_path) == before
    np.testing.assert_array_equal(Model.load(path).coef_, good.coef_)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs a non-root POSIX user for a read-only directory")
def test_save_into_read_only_directory_fails_cleanly(tmp_path):
    X, y = blobs()
    model = train_stream(X, y, **TRAIN)
    path = tmp_path / "model.npz"
    model.save(path)
    before = _snapshot(tmp_path)
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(OSError):
            model.save(path)
    finally:
        tmp_path.chmod(0o700)
    assert _snapshot(tmp_path) == before


# ---------------------------------------------------------------- labels and scores

@pytest.mark.parametrize("labels", [(0.0, 1.0), (1.0, 2.0), (-3.0, 7.5), (-1.0, 1.0)])
def test_predict_returns_the_original_labels(labels):
    X, y = blobs(labels=labels, seed=1)
    model = train_stream(X, y, loss="squared_hinge", **TRAIN)
    np.testing.assert_array_equal(model.classes_, labels)
    predicted = model.predict(X)
    assert set(np.unique(predicted)) == set(labels)
    assert np.mean(predicted == y) >= 0.97
    # the larger label is the positive side of the decision function
    decision = model.decision_function(X)
    np.testing.assert_array_equal(predicted, np.where(decision > 0, labels[1], labels[0]))
    assert model.score(X, y) == np.mean(predicted == y)


@pytest.mark.parametrize("classes, texts", [
    ((-1.0, 1.0), ["-1", "1"]),
    ((1000001.0, 1000002.0, 0.1234567), ["1000001", "1000002", "0.1234567"]),
    ((1e300, -2.5e-7, 2.0 ** 60), ["1e+300", "-2.5e-07", "1.152921504606847e+18"]),
])
def test_predict_writes_the_labels_exactly(tmp_path, capsys, classes, texts):
    """predict -o wrote labels with %g: 1000001 and 1000002 both as 1e+06."""
    from streamssvm.cli import main

    k, d = len(classes), 4
    X = sp.csr_matrix(np.eye(k, d))
    coef = np.eye(k, d) if k > 2 else np.array([0.0, 1.0, 0.0, 0.0])  # row i: class i
    model = Model(coef, np.zeros(k) if k > 2 else 0.0, classes)
    model.save(tmp_path / "model.npz")
    data = write_store(tmp_path / "data.h5", X, np.asarray(classes))
    out = tmp_path / "labels.txt"
    assert main(["predict", str(tmp_path / "model.npz"), str(data), "-o", str(out)]) == 0
    assert "accuracy 1.0000" in capsys.readouterr().out
    assert out.read_text().splitlines() == texts
    np.testing.assert_array_equal(np.loadtxt(out, ndmin=1), model.predict(X))
    assert main(["info", str(data)]) == 0  # and info names the classes as exactly
    shown = capsys.readouterr().out
    assert all(text in shown for text in texts)


def test_score_and_decision_on_arrays_equal_those_on_a_store(tmp_path):
    X, y = blobs(n=600, labels=(1.0, 2.0), seed=2)
    y[::10] = 3.0 - y[::10]  # label noise, so that the accuracy is not trivially 1
    model = train_stream(X, y, loss="psi_g", fit_intercept=True, **TRAIN)
    path = write_store(tmp_path / "data.h5", X, y, value_dtype="float64", block_rows=64)
    expected = model.score(X, y)
    assert 0.8 < expected < 1.0
    assert model.score(path) == expected
    assert model.score(str(path)) == expected
    with Store(path) as store:
        assert model.score(store) == expected
    assert model.score(InMemorySource(X, y, block_rows=50)) == expected
    np.testing.assert_allclose(model.decision_function(path), model.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.predict(path), model.predict(X))
    np.testing.assert_array_equal(model.predict(X.toarray()), model.predict(X))


def test_width_mismatch_is_a_clear_error(tmp_path):
    X, y = blobs(d=20)
    model = train_stream(X, y, **TRAIN)
    wider = sp.hstack([X, X[:, :1]], format="csr")
    for call in (model.decision_function, model.predict, lambda Z: model.score(Z, y)):
        with pytest.raises(ValueError, match="21 features.*20"):
            call(wider)
    with pytest.raises(ValueError, match="features"):
        model.decision_function(X[:, :19].toarray())
    path = write_store(tmp_path / "wide.h5", wider, y)
    with pytest.raises(ValueError, match="21 features"):
        model.score(path)


# ---------------------------------------------------------------- accuracy against LIBLINEAR

def test_a9a_test_accuracy_close_to_liblinear(tmp_path):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = load("a9a")
    X_test, y_test = load("a9a.t", n_features=X.shape[1])  # the test file's widest index is 122
    lam = 1e-5
    C = 1.0 / (lam * X.shape[0])
    lib = liblinear.train(liblinear.problem(y, X),
                          liblinear.parameter(f"-s 2 -c {C!r} -e 0.01 -B -1 -q"))
    w_lib = np.array(lib.get_decfun()[0])
    if lib.get_labels()[0] != 1:
        w_lib = -w_lib
    lib_accuracy = np.mean(np.where(X_test @ w_lib > 0, 1.0, -1.0) == y_test)

    model = train_stream(X, y, loss="squared_hinge", lam=lam, tol=0.01, liblinear_tol=True,
                         progress=False)
    accuracy = model.score(X_test, y_test)
    print(f"\na9a.t accuracy: ours {accuracy:.4%}, LIBLINEAR -s 2 {lib_accuracy:.4%}")
    assert accuracy > 0.84
    assert abs(accuracy - lib_accuracy) <= 0.005
    # the test file as a store scores the same
    path = write_store(tmp_path / "a9a.t.h5", X_test, y_test, value_dtype="float64")
    assert model.score(path) == accuracy


# ---------------------------------------------------------------- train_stream errors

@pytest.mark.parametrize("kwargs, match", [
    (dict(solver="sgd_typo"), "unknown solver"),
    (dict(loss="hinge_typo"), "unknown loss"),
    (dict(lam=0.0), "lambda"),
    (dict(lam=-1e-3), "lambda"),
    (dict(loss="psi_g", sigma=0.0), "sigma"),
    (dict(loss="psi_m", sigma=-0.5), "sigma"),
    (dict(loss="logistic", sigma=0.5), "takes no sigma"),
])
def test_train_stream_errors(kwargs, match):
    X, y = blobs(n=50)
    with pytest.raises(ValueError, match=match):
        train_stream(X, y, progress=False, **kwargs)


def test_train_stream_data_errors(tmp_path):
    X, y = blobs(n=50)
    path = write_store(tmp_path / "data.h5", X, y)
    with pytest.raises(ValueError, match="store path"):
        train_stream(path, y, progress=False)
    with pytest.raises(ValueError, match="labels"):
        train_stream(X, progress=False)
    with pytest.raises(ValueError, match="two distinct labels"):
        train_stream(X, np.arange(50), progress=False)


class _BlasWatchingSource(InMemorySource):
    """An in-memory source that notes the BLAS thread counts whenever a block is read."""

    def __init__(self, X, y):
        super().__init__(X, y)
        self.seen = []

    def read_range(self, first, stop):
        from threadpoolctl import threadpool_info
        self.seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
        return super().read_range(first, stop)


def test_training_runs_blas_single_threaded_and_restores_it():
    """BLAS threads would spin on the cores the kernels use: one while training, the
    caller's count again afterwards."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    X, y = load("a9a", 2000)
    source = _BlasWatchingSource(X, y)
    train_stream(source, loss="squared_hinge", lam=1e-3, progress=False)
    assert source.seen and all(counts and set(counts) == {1} for counts in source.seen)
    assert blas_threads() == before
