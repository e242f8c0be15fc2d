"""More than two classes: the converter's multiclass mode and the version-2 store, the
one-vs-rest view of a source, one-vs-rest training and models, the command line.

References: scikit-learn's ``load_svmlight_file`` for the labels read; scikit-learn's
LinearSVC and LIBLINEAR (``-s 2``, one-vs-rest, class weights ``-wi``) for the models, with
C = 1 / (lam n) (LIBLINEAR's objective 1/2 ||w||^2 + C sum_i loss_i, divided by C n).
"""

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from streamssvm import (InMemorySource, Model, Store, StoreError, convert_svmlight,
                        train_one_vs_rest)
from streamssvm.cli import main
from streamssvm.data import OneVsRestView, write_store
from streamssvm.data.checksum import attributes_checksum, checksum
from streamssvm.multiclass import class_weight_vector
from streamssvm.objective import SmoothSVMObjective

LABELS = (3, -2, 7.5, 1)


@pytest.fixture
def text(rng, make_svmlight, write_text):
    """A multiclass svmlight file (four labels, first seen not in sorted order)."""
    return write_text(make_svmlight(rng, 400, 30, labels=LABELS, density=0.2))


@pytest.fixture(scope="module")
def digits():
    """scikit-learn's bundled digits (1797 x 64, 10 classes), scaled to [0, 1], split."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, test = order[:1200], order[1200:]
    return X[train], y[train], X[test], y[test]


# ---------------------------------------------------------------- converter and store

@pytest.mark.parametrize("block_rows", [None, 7])
def test_convert_multiclass_matches_sklearn(tmp_path, text, sklearn_load, block_rows):
    out = tmp_path / "m.h5"
    summary = convert_svmlight(text, out, multiclass=True, block_rows=block_rows, progress=False)
    X_ref, y_ref = sklearn_load(text)
    classes = tuple(sorted(float(c) for c in LABELS))
    assert summary["classes"] == classes and summary["label_counts"] is None
    assert summary["class_counts"] == [int(np.sum(y_ref == c)) for c in classes]
    with Store(out) as store:
        assert store.multiclass and store.classes == classes
        assert store.metadata["version"] == 2
        X, labels = store.read_rows(0, store.n_samples)
        assert labels.dtype == np.int32
        end = store.n_samples  # an empty range past the last block too (was int8)
        assert store.read_rows(end, end)[1].dtype == np.int32
        np.testing.assert_array_equal(np.asarray(classes)[labels], y_ref)
        np.testing.assert_array_equal(store.labels(), labels)
        np.testing.assert_array_equal(store.class_counts(), summary["class_counts"])
        assert (X != X_ref.astype(np.float32)).nnz == 0
        with pytest.raises(ValueError, match="class_counts"):
            store.label_counts()


def test_like_a_multiclass_store(tmp_path, write_text, text):
    train = tmp_path / "train.h5"
    convert_svmlight(text, train, multiclass=True, progress=False)
    test_text = write_text("7.5 1:1\n-2 2:1\n7.5 3:1\n", name="test.svm")
    test = tmp_path / "test.h5"
    convert_svmlight(test_text, test, like=train, progress=False)  # multiclass from the store
    with Store(test) as store:
        assert store.classes == (-2.0, 1.0, 3.0, 7.5)
        np.testing.assert_array_equal(store.labels(), [3, 0, 3])
        np.testing.assert_array_equal(store.class_counts(), [1, 0, 0, 2])
    bad = write_text("7.5 1:1\n\n4 2:1\n", name="bad.svm")
    with pytest.raises(ValueError, match=r"bad.svm: line 3, column 1: label '4' is none of the "
                                         r"4 classes \(-2, 1, 3, 7.5\)"):
        convert_svmlight(bad, tmp_path / "bad.h5", like=train, progress=False)
    assert not (tmp_path / "bad.h5").exists()


def test_many_classes_grow_the_class_table(tmp_path, write_text):
    labels = np.arange(150)[::-1]  # more than the parser's first table (64)
    out = tmp_path / "many.h5"
    convert_svmlight(write_text("".join(f"{c} {c % 5 + 1}:1\n" for c in labels)), out,
                     multiclass=True, progress=False)
    with Store(out) as store:
        assert store.classes == tuple(float(c) for c in range(150))
        np.testing.assert_array_equal(store.labels(), labels)


def test_two_labels_in_multiclass_mode_make_a_binary_store(tmp_path, write_text, sklearn_load):
    src = write_text("5 1:1\n2 2:1\n5 3:1\n5 1:2\n")
    out, plain = tmp_path / "two.h5", tmp_path / "plain.h5"
    # plain blocks: rows of one value would make a lean (version 3) store of either kind
    summary = convert_svmlight(src, out, multiclass=True, block_rows=2, encoding="plain",
                               progress=False)
    convert_svmlight(src, plain, block_rows=2, encoding="plain", progress=False)
    assert summary["classes"] == (2.0, 5.0) and summary["label_counts"] == (1, 3)
    with Store(out) as store, Store(plain) as reference:
        assert not store.multiclass and store.metadata["version"] == 1
        assert store.classes == reference.classes
        np.testing.assert_array_equal(store.labels(), reference.labels())
        assert store.labels().dtype == np.int8
        assert store.label_counts() == reference.label_counts() == (1, 3)


def test_one_label_in_multiclass_mode_is_refused(tmp_path, write_text):
    with pytest.raises(ValueError, match="every label is 4: a multiclass store needs two"):
        convert_svmlight(write_text("4 1:1\n4 2:1\n"), tmp_path / "o.h5", multiclass=True,
                         progress=False)


def test_binary_conversion_refuses_a_third_label(tmp_path, write_text):
    with pytest.raises(ValueError, match="third distinct label '7'.*multiclass=True"):
        convert_svmlight(write_text("1 1:1\n2 1:1\n7 1:1\n"), tmp_path / "o.h5", progress=False)


def test_in_memory_multiclass_round_trip(tmp_path, rng):
    X = sp.random(90, 12, density=0.3, format="csr", random_state=1)
    y = rng.choice(np.array(LABELS, float), 90)
    source = InMemorySource(X, y, block_rows=13)
    assert source.multiclass and source.classes == tuple(sorted(float(c) for c in LABELS))
    path = write_store(tmp_path / "m.h5", source)
    with Store(path) as store:
        assert store.multiclass and store.classes == source.classes
        np.testing.assert_array_equal(store.labels(), source.labels())
        np.testing.assert_array_equal(np.asarray(store.classes)[store.labels()], y)
        np.testing.assert_array_equal(store.class_counts(), source.class_counts())


def test_damaged_multiclass_stores(tmp_path):
    X = sp.random(40, 5, density=0.5, format="csr", random_state=2)
    y = np.arange(40) % 3
    path = write_store(tmp_path / "m.h5", InMemorySource(X, y, block_rows=10))
    with h5py.File(path, "r+") as f:
        ds = f["blocks/00000002/y"]
        labels = ds[...]
        labels[4] = 3
        ds[...] = labels
        # keep the checksums right (block 2, dataset y): only the label is wrong
        f["checksums"][2, 3] = checksum(labels)
        f["checksums"].attrs["checksum"] = checksum(f["checksums"][...])
    with Store(path) as store:
        with pytest.raises(StoreError, match=r"m.h5: block 2: class index outside 0..2"):
            store.read_block(2)
        with pytest.raises(StoreError, match="block 2: class index"):
            store.labels()
    with h5py.File(path, "r+") as f:
        f.attrs["version"] = 1
        f.attrs["attributes_checksum"] = attributes_checksum(f.attrs)  # only the version wrong
    with pytest.raises(StoreError, match="3 classes in a version 1 store"):
        Store(path)


# ---------------------------------------------------------------- one-vs-rest view

def test_one_vs_rest_view_relabels_without_copying_rows(tmp_path, rng):
    X = sp.random(60, 8, density=0.4, format="csr", random_state=3)
    y = rng.integers(0, 4, 60)
    memory = InMemorySource(X, y, block_rows=11)
    path = write_store(tmp_path / "m.h5", memory)
    with Store(path) as store:
        for source in (memory, store):
            for k in range(4):
                view = OneVsRestView(source, k)
                assert not view.multiclass and view.classes[1] == float(k)
                assert view.in_memory == source.in_memory
                labels = view.labels()
                assert labels.dtype == np.int8
                np.testing.assert_array_equal(labels, np.where(y == k, 1, -1))
                assert view.label_counts() == (int(np.sum(y != k)), int(np.sum(y == k)))
                for a, b in zip(view.iter_blocks(), source.iter_blocks()):
                    if source is memory:
                        assert a.data is b.data and a.indices is b.indices
    with pytest.raises(ValueError, match="binary source"):
        OneVsRestView(InMemorySource(X, y > 1), 0)
    with pytest.raises(IndexError, match="class index 4"):
        OneVsRestView(memory, 4)
    with pytest.raises(ValueError, match="4 classes; the objective needs two distinct labels"):
        SmoothSVMObjective(memory, "psi_g", 1e-3)


# ---------------------------------------------------------------- training

def test_one_vs_rest_squared_hinge_equals_linear_svc(digits):
    """Without intercept (LinearSVC regularises its own), the same C: the same weights."""
    from sklearn.svm import LinearSVC

    X, y, X_test, y_test = digits
    lam = 1e-3
    C = 1.0 / (lam * len(y))
    reference = LinearSVC(C=C, loss="squared_hinge", dual=False, fit_intercept=False,
                          tol=1e-8, max_iter=10000).fit(X, y)
    model = train_one_vs_rest(X, y, loss="squared_hinge", lam=lam, tol=1e-8, progress=False)
    assert model.multiclass and model.coef_.shape == (10, 64)
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    scale = np.abs(reference.coef_).max()
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0, atol=1e-5 * scale)
    assert np.mean(model.predict(X_test) == reference.predict(X_test)) == 1.0


@pytest.mark.parametrize("loss", ["psi_g", "psi_m"])
def test_one_vs_rest_smooth_hinges_as_accurate_as_linear_svc(digits, loss):
    from sklearn.svm import LinearSVC

    X, y, X_test, y_test = digits
    lam = 1e-4
    reference = LinearSVC(C=1.0 / (lam * len(y)), loss="hinge", max_iter=100000).fit(X, y)
    model = train_one_vs_rest(X, y, loss=loss, sigma=2.0 ** -4, lam=lam, fit_intercept=True,
                              progress=False)
    ours, theirs = model.score(X_test, y_test), reference.score(X_test, y_test)
    print(f"\ndigits test accuracy, {loss}: {ours:.4f}; LinearSVC (hinge): {theirs:.4f}")
    assert ours > 0.93 and abs(ours - theirs) <= 0.02
    assert model.params["converged"] and len(model.params["per_class"]) == 10


def test_class_weights_equal_liblinear_one_vs_rest(digits):
    """LIBLINEAR's one-vs-rest with -wi: class i's rows cost C w_i in its own problem and C
    in the others."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y, _, _ = digits
    lam, eps = 1e-3, 1e-6
    weights = {0: 5.0, 3: 0.2, 7: 2.0}
    C = 1.0 / (lam * len(y))
    flags = " ".join(f"-w{label} {w!r}" for label, w in weights.items())
    lib = liblinear.train(liblinear.problem(y, sp.csr_matrix(X)), liblinear.parameter(
        f"-s 2 -c {C!r} -e {eps} -B -1 -q {flags}"))
    labels = lib.get_labels()
    w_lib = np.array([lib.get_decfun(i)[0] for i in range(len(labels))])[np.argsort(labels)]
    model = train_one_vs_rest(X, y, class_weight=weights, loss="squared_hinge", lam=lam,
                              tol=eps, liblinear_tol=True, progress=False)
    vector = class_weight_vector(weights, model.classes_, np.ones(10))
    for c in range(10):
        rows = np.where(y == c, vector[c], 1.0)
        objective = SmoothSVMObjective(OneVsRestView(InMemorySource(X, y), c), "squared_hinge",
                                       lam, sample_weight=rows)
        ours, theirs = objective.value(model.coef_[c]), objective.value(w_lib[c])
        assert ours <= theirs * (1 + 1e-6), (c, ours, theirs)
    plain = train_one_vs_rest(X, y, loss="squared_hinge", lam=lam, tol=eps, progress=False)
    assert np.abs(plain.coef_[0] - model.coef_[0]).max() > 0.1 * np.abs(model.coef_[0]).max()


@pytest.mark.parametrize("classes", [2, 10])
def test_balanced_class_weights_count_the_sample_weights(digits, classes):
    """"balanced" with sample weights: S / (k S_c), S_c the weight of class c's rows, as
    scikit-learn's LinearSVC (rows were counted: 13% off LinearSVC, found by a probe)."""
    from sklearn.svm import LinearSVC

    X, y, _, _ = digits
    X, y = X[y < classes], y[y < classes]
    weights = np.where(y % 2 == 1, 3.0, 0.5)
    weights *= len(y) / weights.sum()  # summing to n: LinearSVC's C stays 1 / (lam n)
    lam = 1e-3
    reference = LinearSVC(C=1.0 / (lam * len(y)), dual=False, fit_intercept=False, tol=1e-10,
                          class_weight="balanced", max_iter=10000).fit(X, y,
                                                                     sample_weight=weights)
    model = train_one_vs_rest(X, y, class_weight="balanced", sample_weight=weights,
                              loss="squared_hinge", lam=lam, tol=1e-9, progress=False)
    np.testing.assert_allclose(np.atleast_2d(model.coef_), reference.coef_, rtol=0,
                               atol=1e-5 * np.abs(reference.coef_).max())


def test_class_weight_vector():
    assert class_weight_vector(None, (1, 2), [3, 1]) is None
    np.testing.assert_allclose(class_weight_vector("balanced", (1, 2, 5), [6, 3, 0]),
                               [0.5, 1.0, 1.0])  # 9 / (3 * count); an absent class weighs 1
    np.testing.assert_allclose(class_weight_vector({5: 2.0}, (1, 2, 5), [1, 1, 1]), [1, 1, 2])
    with pytest.raises(ValueError, match=r"labels \[4\]"):
        class_weight_vector({4: 1.0}, (1, 2, 5), [1, 1, 1])
    with pytest.raises(ValueError, match="finite and >= 0"):
        class_weight_vector([1.0, -1.0], (1, 2), [1, 1])
    with pytest.raises(ValueError, match="'balanced'"):
        class_weight_vector("balance", (1, 2), [1, 1])


def test_store_training_equals_in_memory_and_model_round_trip(tmp_path, digits):
    X, y, X_test, y_test = digits
    X, y = X[:600], y[:600]
    source = InMemorySource(X, y, block_rows=100)
    path = write_store(tmp_path / "digits.h5", source, value_dtype="float64")
    test_path = write_store(tmp_path / "test.h5", InMemorySource(X_test, y_test,
                                                                 classes=range(10)),
                            value_dtype="float64")
    # the same blocks and one thread: the same sums in the same order, the same model
    options = dict(loss="psi_g", lam=1e-3, fit_intercept=True, tol=1e-6, n_threads=1,
                   progress=False)
    in_memory = train_one_vs_rest(source, class_weight="balanced", **options)
    streamed = train_one_vs_rest(path, class_weight="balanced", **options)
    np.testing.assert_allclose(streamed.coef_, in_memory.coef_, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(streamed.intercept_, in_memory.intercept_, rtol=1e-10)
    decision = streamed.decision_function(X_test)
    assert decision.shape == (len(y_test), 10)
    np.testing.assert_allclose(streamed.decision_function(test_path), decision, rtol=1e-12,
                               atol=1e-12)
    assert streamed.score(test_path) == streamed.score(X_test, y_test) > 0.9
    saved = tmp_path / "model.npz"
    streamed.save(saved)
    loaded = Model.load(saved)
    assert loaded.multiclass and loaded.intercept_.shape == (10,)
    np.testing.assert_array_equal(loaded.coef_, streamed.coef_)
    np.testing.assert_array_equal(loaded.predict(X_test), streamed.predict(X_test))
    assert [h["label"] for h in loaded.history][0] == 0.0
    # warm start at the solution: every class stops at once
    w0 = np.hstack([streamed.coef_, streamed.intercept_[:, None]])
    again = train_one_vs_rest(path, class_weight="balanced", w0=w0, **options)
    assert again.params["n_iter"] == 0


def test_one_vs_rest_refuses_a_non_finite_w0_before_training(rng, capsys):
    """A NaN or infinite warm start of class c was refused, without its place, only once
    the classes before it were trained."""
    X = rng.standard_normal((60, 4))
    y = np.argmax(X[:, :3], axis=1)
    w0 = np.zeros((3, 4))
    w0[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"^w0\[2, 1\] is inf: a warm start must hold finite"):
        train_one_vs_rest(X, y, w0=w0, progress=True)
    assert capsys.readouterr().err == ""  # no class was trained: no bar was drawn


def test_one_vs_rest_refuses_a_w0_of_the_wrong_shape_before_training(rng, capsys):
    """A w0 of k rows of the wrong width was refused as class 0's "w has shape (5,),
    expected (4,)", once its bar was drawn; one of another number of dimensions failed with
    an IndexError."""
    X = rng.standard_normal((60, 4))
    y = np.argmax(X[:, :3], axis=1)
    for w0, fit_intercept in ((np.zeros((3, 4)), True), (np.zeros((3, 5)), False),
                              (np.zeros(5), True), (0.0, True)):
        with pytest.raises(ValueError) as info:
            train_one_vs_rest(X, y, w0=w0, fit_intercept=fit_intercept, progress=True)
        expected = ("(3, 5): one row per class of n_variables = the data's 4 features + 1 "
                    "intercept (fit_intercept)" if fit_intercept else
                    "(3, 4): one row per class of n_variables = the data's 4 features")
        assert str(info.value) == f"w0 has shape {np.shape(w0)}, expected {expected}"
    assert capsys.readouterr().err == ""  # no class was trained: no bar was drawn


class _LabelCountingStore(Store):
    """A store that counts the reads of its labels (class weights read them all)."""

    label_reads = 0

    def labels(self):
        self.label_reads += 1
        return super().labels()


@pytest.mark.parametrize("n_classes", [2, 10])
def test_one_vs_rest_refuses_a_w0_of_the_wrong_width_before_reading_a_store(tmp_path, digits,
                                                                           n_classes):
    """A w0 of the wrong width was refused once the store's labels had been read for the
    class weights (a pass over a large store): now as soon as the store is open."""
    X, y = digits[:2]
    path = tmp_path / "digits.h5"
    write_store(path, InMemorySource(sp.csr_matrix(X), y % n_classes))
    w0, expected = ((np.zeros(5), "(64,): n_variables = the data's 64 features")
                    if n_classes == 2 else
                    (np.zeros((10, 5)), "(10, 64): one row per class of n_variables = the "
                                        "data's 64 features"))
    with _LabelCountingStore(path) as store:
        with pytest.raises(ValueError) as info:
            train_one_vs_rest(store, class_weight="balanced", w0=w0, progress=False)
        assert str(info.value) == f"w0 has shape {w0.shape}, expected {expected}"
        assert store.label_reads == 0


def test_one_vs_rest_bars_name_their_class(rng, capsys):
    """Each class's bar was labelled "tron" only: k bars that did not say whose they were."""
    X = rng.standard_normal((80, 4))
    y = np.array(LABELS)[np.argmax(X, axis=1)]
    model = train_one_vs_rest(X, y, lam=1e-2, progress=True)
    err = capsys.readouterr().err
    for i, label in enumerate(sorted(LABELS)):
        solver = model.params["solver"]
        assert f"\rclass {label:g} ({i + 1}/4): {solver}: " in err, err


def test_model_docstring_names_the_keys_one_vs_rest_writes(rng):
    """It named "classes" and "class" for "per_class" and "label" (found by a probe)."""
    X = rng.standard_normal((60, 4))
    y = np.argmax(X[:, :3], axis=1)
    model = train_one_vs_rest(X, y, progress=False)
    binary = train_one_vs_rest(X, y > 0, progress=False)
    keys = (set(model.params) - set(binary.params)) | (set(model.params["per_class"][0])
                                                       - set(binary.params))
    keys |= set(model.history[0]) - set(binary.history[0])
    assert keys == {"one_vs_rest", "per_class", "label"}
    for key in keys:
        assert f'"{key}"' in Model.__doc__, key


# ---------------------------------------------------------------- command line

def test_cli_multiclass_convert_info_train_predict(tmp_path, text, capsys, sklearn_load):
    store, model, out = tmp_path / "m.h5", tmp_path / "model.npz", tmp_path / "pred.txt"
    assert main(["convert", str(text), str(store), "--multiclass", "--quiet"]) == 0
    assert main(["info", str(store)]) == 0
    info = {line[:13].strip(): line[13:].strip() for line in capsys.readouterr().out.splitlines()}
    counts = {c: int(np.sum(sklearn_load(text)[1] == c)) for c in sorted(LABELS)}
    assert info["classes"] == "4: " + ", ".join(f"{c:g} ({n} rows)" for c, n in counts.items())
    assert info["format"] == "streamssvm.csr-blocks version 2" and "labels" not in info
    assert main(["train", str(store), "-o", str(model), "--lam", "1e-3", "--intercept",
                 "--class-weight", "balanced"]) == 0
    printed = capsys.readouterr().out
    loaded = Model.load(model)
    solver = loaded.params["solver"]
    assert printed.startswith(f"one-vs-rest over 4 classes: {solver} converged")
    assert loaded.coef_.shape == (4, 30) and loaded.classes_.tolist() == sorted(LABELS)
    assert main(["predict", str(model), str(store), "-o", str(out)]) == 0
    accuracy = float(capsys.readouterr().out.split()[1])
    predicted = np.loadtxt(out)
    assert set(predicted) <= set(LABELS)
    X, y = sklearn_load(text)
    np.testing.assert_array_equal(predicted, loaded.predict(X.astype(np.float32)))
    assert accuracy == pytest.approx(np.mean(predicted == y), abs=1e-4)
    assert main(["train", str(store), "-o", str(model), "--overwrite",
                 "--class-weight", "3:2,9:1"]) == 1
    assert "--class-weight names labels [9.0]" in capsys.readouterr().err


def test_cli_predict_decision_columns_are_in_the_model_class_order(tmp_path, digits, capsys):
    """--decision wrote one column per class without saying which: --help says, and the
    columns follow the model's classes, as info lists the training store's (real digits,
    labels permuted so that their first-seen order is not the sorted one)."""
    from sklearn.datasets import dump_svmlight_file

    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("more, one column per class in the model's class order, the training store's as "
            "'streamssvm info STORE' lists them" in help_text)
    X, y = digits[0], (digits[1] * 7 + 3) % 10 - 4.5
    text, store, model = tmp_path / "d.svm", tmp_path / "d.h5", tmp_path / "m.npz"
    decision, labels = tmp_path / "decision.txt", tmp_path / "labels.txt"
    dump_svmlight_file(X, y, str(text), zero_based=False)
    assert main(["convert", str(text), str(store), "--multiclass", "--n-features", "64",
                 "--quiet"]) == 0
    assert main(["train", str(store), "-o", str(model), "--lam", "1e-2", "--quiet"]) == 0
    assert main(["info", str(store)]) == 0
    info = {line[:13].strip(): line[13:].strip() for line in capsys.readouterr().out.splitlines()}
    listed = [float(item.split()[0]) for item in info["classes"].split(":", 1)[1].split(",")]
    assert main(["predict", str(model), str(store), "-o", str(decision), "--decision"]) == 0
    assert main(["predict", str(model), str(store), "-o", str(labels)]) == 0
    loaded, columns = Model.load(model), np.loadtxt(decision)
    assert loaded.classes_.tolist() == listed == sorted(set(y)) != list(dict.fromkeys(y))
    np.testing.assert_allclose(columns, loaded.decision_function(X.astype(np.float32)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.loadtxt(labels), loaded.classes_[columns.argmax(axis=1)])


def test_one_vs_rest_refuses_a_checkpoint_before_training(tmp_path, rng):
    """Class 0 trained and wrote the checkpoint, then class 1 refused it as another
    training's: the work was lost and the file left (found by a probe). The command line
    said so before training; the function now does."""
    X = rng.standard_normal((60, 4))
    y = np.argmax(X[:, :3], axis=1)
    path = tmp_path / "run.ckpt"
    with pytest.raises(ValueError, match="checkpoints are for two classes"):
        train_one_vs_rest(X, y, checkpoint=path, progress=False)
    assert not path.exists()
    store, model = tmp_path / "mc.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(X, y))
    assert main(["train", str(store), "-o", str(model), "--checkpoint", str(path),
                 "--quiet"]) == 1
    assert not path.exists() and not model.exists()
