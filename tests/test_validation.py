"""Bad input at the public entries of the data path and the model: a clear error, at once.

Numba kernels do not check bounds or values, so what they would choke on (wrong shapes,
non-numbers, NaN, a model applied to data of another width) must be refused before them.
"""

import json
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from streamssvm import InMemorySource, Model, Store, StoreError, convert_svmlight, train_stream
from streamssvm.cli import main
from streamssvm.data.store import write_store

X = sp.random(20, 5, density=0.5, format="csr", random_state=0)
Y = np.arange(20) % 2


# --- in-memory matrices -----------------------------------------------------------------------
@pytest.mark.parametrize("X_, y, message", [
    (X, np.where(Y == 0, np.nan, 1.0), "y holds NaN or infinite labels"),
    (X, np.where(Y == 0, -np.inf, 1.0), "y holds NaN or infinite labels"),
    (X, np.array([None] * 20), "labels must be numbers or text, got dtype object"),
    (X, Y[:, None], r"y has shape \(20, 1\), expected \(20,\)"),
    (X, Y[:10], r"y has shape \(10,\), expected \(20,\)"),
    (X.astype(complex) * 1j, Y, "X must hold real numbers, got dtype complex128"),
    (np.array([["a"] * 5] * 20), Y, "X must hold real numbers, got dtype <U1"),
    (np.ones(20), Y, r"X must be 2-D \(n_samples, n_features\), got shape \(20,\); one sample"),
    (np.ones((20, 5, 2)), Y, r"X must be 2-D .* got shape \(20, 5, 2\)"),
    (np.full((20, 5), np.nan), Y, "X holds NaN or infinite values"),
    (sp.csr_matrix(np.where(np.eye(20, 5) > 0, np.inf, 0)), Y, "X holds NaN or infinite"),
    (np.zeros((0, 5)), np.zeros(0), "X has no rows"),
    (X, np.full(20, 3.0), "y must hold at least two distinct labels, found 1"),
    # float64 keeps the labels: these merged, or became labels y never held (a probe)
    (X, np.where(Y == 0, 2**53, 2**53 + 1), r"y holds labels 9007199254740993 beyond 2\*\*53"),
    (X, np.where(Y == 0, 2**53 + 1, 2**53 + 3),
     r"y holds labels 9007199254740993, 9007199254740995 beyond"),
])
def test_in_memory_matrix_refused(X_, y, message):
    with pytest.raises(ValueError, match=f"<in-memory matrix>: {message}"):
        InMemorySource(X_, y)
    with pytest.raises(ValueError, match=message):  # the same through training
        train_stream(X_, y, loss="squared_hinge", lam=1e-2, progress=False)


def test_duplicates_summing_to_infinity_refused():
    big = np.finfo(np.float64).max
    X_ = sp.coo_matrix(([big, big], ([0, 0], [1, 1])), shape=(2, 3))  # one entry, twice
    with pytest.raises(ValueError, match="X holds NaN or infinite values"):
        InMemorySource(X_, [1, -1])
    X_ = sp.csr_matrix(([big, big], [1, 1], [0, 2, 2]), shape=(2, 3))  # CSR, summed here
    with pytest.raises(ValueError, match="X holds NaN or infinite values"):
        InMemorySource(X_, [1, -1])


@pytest.mark.parametrize("n_parts", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csr_checks_agree_with_scipy_and_numpy(n_parts, dtype):
    """The one-read check of the in-memory path finds scipy's canonical format (sorted,
    no duplicates), column indices outside the width and numpy's finiteness on every
    damage, wherever it sits, and never reads a row whose bounds are wrong."""
    from streamssvm.kernels import csr_checks

    rng = np.random.default_rng(3)
    base = sp.random(40, 30, density=0.3, format="csr", random_state=4, dtype=dtype)
    base.sort_indices()

    def damaged(row, how):
        indptr, indices, data = base.indptr.copy(), base.indices.copy(), base.data.copy()
        a, b = indptr[row], indptr[row + 1]
        if how == "unsorted":
            indices[a], indices[a + 1] = indices[a + 1], indices[a]
        elif how == "duplicate":
            indices[a + 1] = indices[a]
        elif how in ("nan", "inf", "-inf"):
            data[rng.integers(a, b)] = float(how)
        elif how == "bounds":  # a row's end beyond the indices
            indptr[row + 1] = indptr[-1] + 100
        elif how == "wide":  # the row's last index one past the width
            indices[b - 1] = 30
        elif how == "negative":
            indices[a] = -1
        return indptr, indices, data

    assert csr_checks(base.indptr, base.indices, base.data, 30, n_parts) == (-1, True, True,
                                                                              True)
    rows = [r for r in range(40) if base.indptr[r + 1] - base.indptr[r] >= 2]
    for row in (rows[0], rows[len(rows) // 2], rows[-1]):
        for how in ("unsorted", "duplicate", "nan", "inf", "-inf", "bounds", "wide", "negative"):
            indptr, indices, data = damaged(row, how)
            bad_row, canonical, in_range, finite = csr_checks(indptr, indices, data, 30,
                                                              n_parts)
            assert bad_row == (row if how == "bounds" else -1), (row, how)
            assert in_range == (how not in ("wide", "negative")), (row, how)
            assert finite == bool(np.all(np.isfinite(data))), (row, how)
            if how != "bounds" and how != "wide":  # scipy reads past the indices at
                # the one, and its shape check refuses the other
                reference = sp.csr_matrix((data, indices, indptr), shape=base.shape)
                assert canonical == reference.has_canonical_format, (row, how)


@pytest.mark.parametrize("indptr, row", [([0, 2, 1, 3], 1), ([0, 5, 6, 3], 0)])
def test_index_pointers_that_decrease_or_overrun_refused(indptr, row):
    """Index pointers scipy lets through (it checks the first and the last) made scipy's
    duplicate summing corrupt the heap and abort the process."""
    X_ = sp.csr_matrix((3, 3))
    X_.indices, X_.data = np.array([0, 1, 2], np.int32), np.array([1.0, 2.0, 3.0])
    X_.indptr = np.array(indptr, np.int32)
    message = f"X has row {row} with index pointers .* that decrease or leave its 3 stored"
    with pytest.raises(ValueError, match=message):
        InMemorySource(X_, [1, -1, 1])
    with pytest.raises(ValueError, match=message):
        train_stream(X_, [1, -1, 1], loss="squared_hinge", lam=1e-2, progress=False)


@pytest.mark.parametrize("index", [3, 7_000_000, -1])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_column_index_outside_the_width_refused(index, dtype):
    """scipy builds a CSR matrix whose indices pass its width unless asked for a full
    check; the kernels would read and write past w's end."""
    X_ = sp.csr_matrix((np.array([1, 2], dtype), np.array([1, index]), np.array([0, 1, 2])),
                       shape=(2, 3))
    with pytest.raises(ValueError, match=r"X has a column index outside 0\.\.2"):
        InMemorySource(X_, [1, -1])
    with pytest.raises(ValueError, match=r"column index outside 0\.\.2"):
        train_stream(X_, [1, -1], loss="squared_hinge", lam=1e-2, progress=False)


def test_unsorted_and_duplicate_entries_train_as_summed():
    """A CSR matrix with unsorted and repeated entries is the matrix of their sums."""
    dense = np.array([[0.0, 2.0, 1.0], [1.5, 0.0, 0.0], [0.0, 0.5, 2.0], [1.0, 1.0, 0.0]])
    messy = sp.csr_matrix(([1.0, 1.0, 1.0, 1.5, 2.0, 0.5, 1.0, 1.0], [2, 1, 1, 0, 2, 1, 1, 0],
                           [0, 3, 4, 6, 8]), shape=(4, 3))
    y = [1, -1, 1, -1]
    kw = dict(loss="squared_hinge", lam=1e-2, tol=1e-10, progress=False)
    np.testing.assert_array_equal(InMemorySource(messy, y).X.toarray(), dense)
    np.testing.assert_allclose(train_stream(messy, y, **kw).coef_,
                               train_stream(sp.csr_matrix(dense), y, **kw).coef_, rtol=1e-12)


def test_values_beyond_float32_refused():
    X_ = sp.csr_matrix(np.array([[1e300, 0.0], [0.0, 1.0]]))
    with pytest.warns(RuntimeWarning, match="overflow"):
        with pytest.raises(ValueError, match="X holds NaN or infinite values"):
            InMemorySource(X_, [1, -1], value_dtype=np.float32)


@pytest.mark.parametrize("kwargs, message", [
    (dict(classes=(np.nan, 1)), r"classes must be at least two distinct finite values"),
    (dict(classes=(1, 1)), r"classes must be at least two distinct finite values"),
    (dict(classes=(0, 2)), r"label 1 is not one of \(0.0, 2.0\)"),
    (dict(classes=(0, 2**53 + 1)), r"classes holds labels 9007199254740993 beyond 2\*\*53"),
    (dict(value_dtype=np.int32), "value_dtype must be float32 or float64"),
    (dict(block_rows=0), "block_rows must be >= 1, got 0"),
    (dict(block_nnz=-5), "block_nnz must be >= 1, got -5"),
])
def test_in_memory_options_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InMemorySource(X, Y.astype(float), **kwargs)


@pytest.mark.parametrize("dtype", [np.longdouble, np.float16])
def test_floats_the_kernels_do_not_take_are_read_as_float64(dtype):
    """A longdouble matrix passed the dtype check and reached a numba kernel: a raw
    TypingError from predict and from training."""
    dense = X.toarray()
    assert InMemorySource(dense.astype(dtype), Y).value_dtype == np.float64
    for X_ in (dense.astype(dtype), sp.csr_matrix(dense.astype(np.longdouble))):
        np.testing.assert_array_equal(MODEL.predict(X_), MODEL.predict(dense.astype(np.float64)))
    trained = train_stream(dense.astype(dtype), Y, lam=1e-2, progress=False)
    exact = train_stream(dense.astype(dtype).astype(np.float64), Y, lam=1e-2, progress=False)
    np.testing.assert_array_equal(trained.coef_, exact.coef_)


@pytest.mark.parametrize("dtype", [">f8", ">f4"])
def test_big_endian_values_are_read(dtype):
    """Values in the other byte order reached a numba kernel: a raw TypingError."""
    dense = X.toarray()
    sparse = sp.csr_matrix(dense)
    sparse.data = sparse.data.astype(dtype)  # scipy makes none such, but holds one
    for X_ in (dense.astype(dtype), sparse):
        np.testing.assert_array_equal(MODEL.predict(X_),
                                      MODEL.predict(dense.astype(dtype[1:])))


def test_more_columns_than_int32_indices_hold_refused():
    """The indices were cast to int32 unchecked: 3e9 wrapped to -1.8e9, and training
    segfaulted."""
    wide = sp.csr_matrix((np.ones(2), np.array([3_000_000_000 - 1, 5], np.int64),
                          np.array([0, 1, 2])), shape=(2, 3_000_000_000))
    with pytest.raises(ValueError, match="3000000000 columns, more than the 2147483647"):
        InMemorySource(wide, [1, -1])


def test_block_ranges_outside_a_source_refused():
    """An in-memory source's read_block(-1) returned a block of -1 rows."""
    source = InMemorySource(X, Y, block_rows=7)
    for first, stop in ((-1, 0), (0, 0), (source.n_blocks, source.n_blocks + 1)):
        with pytest.raises(IndexError, match=rf"blocks {first}:{stop} outside "
                                             rf"0:{source.n_blocks}"):
            source.read_range(first, stop)
    with pytest.raises(IndexError, match="outside"):
        source.read_block(source.n_blocks)


def test_longdouble_beyond_float64_refused():
    huge = np.full((2, 5), np.finfo(np.longdouble).max)
    if huge.dtype == np.float64:
        pytest.skip("longdouble is float64 here")
    with pytest.warns(RuntimeWarning, match="overflow"):
        with pytest.raises(ValueError, match="X holds NaN or infinite values"):
            MODEL.predict(huge)


def test_labels_of_any_real_type_are_read():
    assert InMemorySource(X, Y.astype(bool)).classes == (0.0, 1.0)
    assert InMemorySource(X, 2 * Y - 2**53).classes == (-2.0**53, 2.0 - 2**53)  # float64 holds
    assert InMemorySource(X, 256 * Y.astype(np.uint64) + 2**60).classes == (2.0**60,
                                                                           2.0**60 + 256)
    assert InMemorySource(X.astype(np.int64), Y).value_dtype == np.float64
    assert InMemorySource(X.astype(np.float32), Y).value_dtype == np.float32


# --- training parameters (validated by the objective; api.py is not ours to change) ----------
@pytest.mark.parametrize("kwargs, message", [
    (dict(lam=0), "lambda must be a positive finite number, got 0.0"),
    (dict(lam=-1), "lambda must be a positive finite number, got -1.0"),
    (dict(lam=np.nan), "lambda must be a positive finite number, got nan"),
    (dict(lam=np.inf), "lambda must be a positive finite number, got inf"),
    (dict(sigma=0), "sigma must be a positive finite number, got 0.0"),
    (dict(sigma=np.nan), "sigma must be a positive finite number, got nan"),
    (dict(loss="psi_m", sigma=-1), "sigma must be a positive finite number, got -1.0"),
    (dict(tol=-1), "tol must be >= 0, got -1"),
    (dict(n_threads=0), "n_threads must be a positive integer or None, got 0"),
    (dict(n_threads=-1), "n_threads must be a positive integer or None, got -1"),
    (dict(n_threads=1.5), "n_threads must be a positive integer or None, got 1.5"),
    (dict(n_threads=True), "n_threads must be a positive integer or None, got True"),
    (dict(solver="newton", hessian_sample=0),
     r"Hessian sample fraction must be in \(0, 1\], got 0"),
    # passed through before: NaN and negative settings, numpy's or Python's own messages
    (dict(solver="newton", eps_cg=0), r"eps_cg must be in \(0, 1\], got 0"),
    (dict(solver="newton", eps_cg=np.nan), r"eps_cg must be in \(0, 1\], got nan"),
    (dict(solver="tron", forcing="quadratic", kappa=np.nan), "kappa must be a positive"),
    (dict(solver="tron", kappa=-1), "kappa must be a positive number, got -1"),
    (dict(solver="sdca", gap_tol=np.nan), "gap_tol must be >= 0 or None, got nan"),
    (dict(solver="sdca", memory_limit=-1), "memory_limit must be >= 0 bytes or None, got -1"),
    (dict(solver="tron", max_seconds=-1), "max_seconds must be >= 0 or None, got -1"),
    (dict(solver="sgd", max_seconds=np.nan), "max_seconds must be >= 0 or None, got nan"),
    (dict(solver="sgd", seed=-1), "seed must be None or a non-negative integer, got -1"),
    (dict(solver="newton", hessian_sample=0.5, seed=1.5), "seed must be None or a non-neg"),
    (dict(sigma_path=0.5), "sigma_path must be a sequence of widths, got 0.5"),
    # each stage's loss: said the sigma was "given", which the caller had not
    (dict(sigma_path=[0.5], loss="psi_g:sigma=0.1"),
     r"sigma_path \[0.5\]: loss 'psi_g:sigma=0.1': sigma=0.1 in the name but sigma=0.5"),
    (dict(sigma_path=[0.5], loss="logistic"),
     r"sigma_path \[0.5\]: loss 'logistic' takes no sigma"),
    (dict(sigma_path=[0.5, -1]), r"sigma_path \[0.5, -1\]: sigma must be a positive finite"),
    # larger sigmas first, down to sigma (2^-3 by default): smaller ones were taken silently
    (dict(sigma_path=[0.1]), r"sigma_path \[0.1\]: stage 0.1 is not larger than sigma 0.125"),
    (dict(sigma_path=[0.5], sigma=0.5), r"stage 0.5 is not larger than sigma 0.5"),
    (dict(sigma_path=[0.25, 0.5], sigma=0.1),
     r"sigma_path \[0.25, 0.5\]: stage 0.25 is not larger than the next stage 0.5"),
    # an array: numpy's "truth value of an array is ambiguous"
    (dict(sigma_path=np.array([0.5, 0.25]), checkpoint="run.ckpt"),
     "checkpoints work with the solvers .*, without sigma_path"),
])
def test_training_parameters_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_stream(X, Y, progress=False, **{"lam": 1e-2, **kwargs})


def test_online_trainer_threads_refused():
    """n_threads -1 reached the kernels as a count of row ranges: a ValueError from numpy
    inside a parallel kernel, then a segfault at the interpreter's exit."""
    from streamssvm import OnlineTrainer

    with pytest.raises(ValueError, match="n_threads must be a positive integer or None"):
        OnlineTrainer(n_threads=-1)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_online_trainer_seed_refused(seed):
    """-1 gave numpy's message, which does not name the seed."""
    from streamssvm import OnlineTrainer

    with pytest.raises(ValueError, match=f"seed must be None or a non-negative integer, got "
                                         f"{re.escape(repr(seed))}"):
        OnlineTrainer(seed=seed)


def test_online_trainer_without_a_seed_saves_where_it_is(tmp_path):
    """seed=None (fresh entropy, as train_stream's and scikit-learn's) gave int()'s
    TypeError; a saved state resumes its generator where it was."""
    from streamssvm import OnlineTrainer

    trainer = OnlineTrainer(seed=None, lam=1e-2)
    trainer.partial_fit(X, Y)
    trainer.save(tmp_path / "state.npz")
    loaded = OnlineTrainer.load(tmp_path / "state.npz")
    trainer.partial_fit(X, Y)
    loaded.partial_fit(X, Y)
    np.testing.assert_array_equal(trainer.model().coef_, loaded.model().coef_)


# --- models -----------------------------------------------------------------------------------
MODEL = Model(np.ones(5), 0.5, (-1.0, 1.0))


@pytest.mark.parametrize("args, message", [
    (([np.nan, 1], 0, (-1, 1)), "coef or intercept holds NaN or infinite values"),
    (([1, 1], np.inf, (-1, 1)), "coef or intercept holds NaN or infinite values"),
    (([1, 1], 0, (0, 1, 2)), r"coef of shape \(2,\), intercept of shape \(\) with 3 classes"),
    (([1, 1], [0, 0], (0, 1)), r"intercept of shape \(2,\) with 2 classes"),
    (([1, 1], 0, (1, 1)), r"classes \[1.0, 1.0\] are not distinct"),
    ((np.ones((3, 2)), np.zeros(2), (0, 1, 2)),
     r"coef of shape \(3, 2\), intercept of shape \(2,\)"),
])
def test_model_refuses_inconsistent_parts(args, message):
    with pytest.raises(ValueError, match=message):
        Model(*args)


@pytest.mark.parametrize("X_, message", [
    (np.ones((3, 4)), "X has 4 features, the model 5"),
    (sp.csr_matrix((3, 6)), "X has 6 features, the model 5"),
    (np.ones(5), r"X must be 2-D .* got shape \(5,\); one sample is X.reshape\(1, -1\)"),
    (np.ones((2, 5, 1)), r"X must be 2-D"),
    (np.full((2, 5), np.nan), "X holds NaN or infinite values"),
    (np.ones((2, 5)) * 1j, "X must hold real numbers, got dtype complex128"),
    (np.array([["1"] * 5]), "X must hold real numbers, got dtype <U1"),
    (sp.csr_matrix(([1.0], [9], [0, 1]), shape=(1, 5)), r"X has a column index outside 0\.\.4"),
])
def test_model_refuses_bad_X(X_, message):
    for method in (MODEL.decision_function, MODEL.predict, lambda x: MODEL.score(x, [1])):
        with pytest.raises(ValueError, match=message):
            method(X_)


@pytest.mark.parametrize("y", [[1], [1, 1], [[1], [1], [1]]])
def test_score_refuses_labels_of_another_length(y):
    with pytest.raises(ValueError, match=r"y has shape .*, X has 3 rows"):
        MODEL.score(np.ones((3, 5)), y)


def test_model_on_a_store_of_another_width(tmp_path, capsys):
    """The error says what to do (it did not; found by a probe): a store of the model's
    width is one converted like the training store."""
    wide = InMemorySource(sp.random(30, 7, density=0.3, random_state=1), np.arange(30) % 2)
    path = write_store(tmp_path / "wide.h5", wide)
    message = (f"{path} has 7 features, the model 5: convert its text like the training "
               f"store (like= / --like), to the model's width")
    for call in (MODEL.predict, MODEL.decision_function, MODEL.score):
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            call(str(path))
    with pytest.raises(ValueError, match="^<in-memory matrix> has 7 features, the model 5$"):
        MODEL.predict(wide)  # not a store: nothing to convert
    MODEL.save(tmp_path / "m.npz")
    assert main(["predict", str(tmp_path / "m.npz"), str(path)]) == 1
    assert capsys.readouterr().err == f"streamssvm: error: {message}\n"


@pytest.mark.filterwarnings("ignore:.* are not all among the model's classes")  # see below
def test_score_on_a_store_with_other_label_values(tmp_path):
    """A store whose two labels are not the model's: predictions are compared as labels,
    not as signs (the +1 of one map is not the +1 of the other)."""
    model = Model(np.ones(3), 1.0, (0.0, 1.0))  # every decision is > 0: predicts 1
    rows = sp.csr_matrix(np.ones((4, 3)))
    for labels, expected in (([1.0, 1.0, 2.0, 2.0], 0.5), ([0.0, 0.0, 0.0, 1.0], 0.25),
                             ([1.0, 1.0, 1.0, 1.0], 1.0)):
        source = InMemorySource(rows, labels, classes=(1.0, 2.0) if 2.0 in labels else None)
        path = write_store(tmp_path / f"s{expected}.h5", source)
        assert model.score(path) == expected == model.score(rows, labels)


def test_a_store_with_labels_the_model_does_not_know_is_warned_of(tmp_path, capsys):
    """A model of classes (3, 7, 12.5) on a -1/+1 store scored 0 with no word of why."""
    rows = sp.csr_matrix(np.ones((4, 3)))
    for model, labels, foreign in ((Model(np.ones((3, 3)), np.zeros(3), (3.0, 7.0, 12.5)),
                                    [-1.0, 1.0, 1.0, -1.0], [-1.0, 1.0]),
                                   (Model(np.ones(3), 1.0, (0.0, 1.0)), [1.0, 2.0, 2.0, 1.0],
                                    [2.0])):
        path = write_store(tmp_path / "s.h5", InMemorySource(rows, labels), overwrite=True)
        message = (f"{path}: labels {sorted(set(labels))} are not all among the model's "
                   f"classes {model.classes_.tolist()} (rows labelled {foreign} count as "
                   f"wrong)")
        with pytest.warns(UserWarning) as record:
            model.score(path)
        assert [str(w.message) for w in record] == [message]
        model.save(tmp_path / "m.npz")
        assert main(["predict", str(tmp_path / "m.npz"), str(path)]) == 0
        assert capsys.readouterr().err == f"streamssvm: warning: {message}\n"
    with warnings.catch_warnings():  # labels all among the classes, some never seen: none
        warnings.simplefilter("error")
        path = write_store(tmp_path / "s.h5", InMemorySource(rows, [0.0] * 4, classes=(0.0, 1.0)),
                           overwrite=True)
        assert model.score(path) == 0.0
        assert main(["predict", str(tmp_path / "m.npz"), str(path)]) == 0
    assert capsys.readouterr().err == ""


def _npz(path, **arrays):
    meta = '{"format": "streamssvm.model", "version": 1, "params": {}, "history": []}'
    np.savez(path, **{"coef": np.ones(2), "intercept": np.float64(0),
                      "classes": np.array([-1.0, 1.0]), "meta": np.array(meta), **arrays})
    return path


@pytest.mark.parametrize("make, reason", [
    (lambda p: p.write_bytes(b""), "not an .npz archive"),
    (lambda p: p.write_bytes(b"PK\x03\x04 truncated"), "not an .npz archive"),
    (lambda p: _npz(p, coef=np.array([np.nan, 1.0])), "coef or intercept holds NaN"),
    (lambda p: _npz(p, classes=np.array([np.nan, 1.0])),
     r"classes \[nan, 1.0\] are not all finite"),
    (lambda p: _npz(p, coef=np.array(["a", "b"])), "could not convert string to float"),
    (lambda p: _npz(p, intercept=np.zeros(2)), r"intercept of shape \(2,\) with 2 classes"),
    (lambda p: _npz(p, meta=np.array('{"format": "streamssvm.model"')), "Expecting"),
    (lambda p: _npz(p, meta=np.array('{"format": "other"}')), "format tag missing"),
    (lambda p: _npz(p, meta=np.array('{"format": "streamssvm.model", "version": 9}')),
     "model version 9 is newer"),
    (lambda p: _npz(p, meta=np.array('{"format": "streamssvm.model", "params": [1], '
                                     '"history": []}')), "dictionary update sequence"),
    (lambda p: _npz(p, meta=np.array("[1, 2]")), r"meta \[1, 2\] is not a JSON object"),
    (lambda p: _npz(p, meta=np.array("3.5")), r"meta 3.5 is not a JSON object"),
    (lambda p: _npz(p, meta=np.array("null")), r"meta null is not a JSON object"),
])
def test_load_refuses_damaged_model_files(tmp_path, make, reason):
    path = tmp_path / "model.npz"
    make(path)
    with pytest.raises(ValueError, match=f"{path}: not a streamssvm model .*({reason})"):
        Model.load(path)


def test_a_truncated_model_file_is_refused(tmp_path):
    path = tmp_path / "model.npz"
    MODEL.save(path)
    raw = path.read_bytes()
    for keep in (0.1, 0.5, 0.9, 0.99):
        path.write_bytes(raw[:int(len(raw) * keep)])
        with pytest.raises(ValueError, match=f"{path}: not a streamssvm model"):
            Model.load(path)


def test_a_file_that_is_no_npz_archive_is_named_as_such(tmp_path, capsys):
    """numpy read a store or a text file as a pickle, and the message told the user to
    pass allow_pickle=True (found by a probe)."""
    from streamssvm import OnlineTrainer
    from streamssvm.solvers.checkpoint import Checkpoint

    store = write_store(tmp_path / "data.h5", InMemorySource(X, Y))
    text = tmp_path / "model.txt"
    text.write_text("1 1:1\n")
    for path in (store, text):
        for load, what in ((Model.load, "a streamssvm model"),
                           (OnlineTrainer.load, "an online trainer state"),
                           (lambda p: Checkpoint(p).load(), "a readable checkpoint")):
            with pytest.raises(ValueError, match=rf"^{path}: not {what} \(not an .npz "
                                                 rf"archive: truncated, or another kind of "
                                                 rf"file\)$"):
                load(path)
    assert main(["predict", str(store), str(store)]) == 1
    assert "allow_pickle" not in capsys.readouterr().err


def test_a_missing_model_file_is_named_as_open_words_it(tmp_path, capsys):
    """A missing model file (or a folder) was "not a streamssvm model ([Errno 2] ...)": it is
    the OSError open() raises, and the command line says what it says of a missing store."""
    from streamssvm import OnlineTrainer

    data = write_store(tmp_path / "data.h5", InMemorySource(X, Y))
    missing = tmp_path / "missing.npz"
    for path, error, reason in ((missing, FileNotFoundError, "No such file or directory"),
                                (tmp_path, IsADirectoryError, "Is a directory")):
        for load in (Model.load, OnlineTrainer.load):
            with pytest.raises(error) as raised:
                load(path)
            assert (str(raised.value.filename), raised.value.strerror) == (str(path), reason)
        assert main(["predict", str(path), str(data)]) == 1
        assert capsys.readouterr().err == f"streamssvm: error: {path}: {reason}\n"


def test_predict_decision_without_an_output_is_refused(tmp_path, capsys):
    """--decision without -o was ignored: exit 0, nothing written (found by a probe)."""
    model = tmp_path / "model.npz"
    MODEL.save(model)
    data = write_store(tmp_path / "data.h5", InMemorySource(X, Y))
    assert main(["predict", str(model), str(data), "--decision"]) == 1
    assert capsys.readouterr().err == ("streamssvm: error: --decision says what to write to "
                                       "-o FILE: give one\n")


def test_predict_with_a_model_whose_meta_is_not_an_object(tmp_path, capsys):
    """JSON that is not an object made Model.load's meta.get an AttributeError: a
    traceback from the command line."""
    model = _npz(tmp_path / "model.npz", coef=np.ones(5), meta=np.array("[1, 2]"))
    data = write_store(tmp_path / "data.h5", InMemorySource(X, Y))
    assert main(["predict", str(model), str(data)]) == 1
    assert capsys.readouterr().err == (f"streamssvm: error: {model}: not a streamssvm model "
                                       f"(meta [1, 2] is not a JSON object)\n")


def _online_state(path):
    """A trainer's saved state as (arrays, meta), and its file at ``path``."""
    from streamssvm import OnlineTrainer

    OnlineTrainer(lam=1e-2, average=True).partial_fit(X, Y).save(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(str(arrays.pop("meta")))


def _without(meta, key):
    return {k: v for k, v in meta.items() if k != key}


@pytest.mark.parametrize("damage, reason", [
    (lambda raw, a, m: raw[:300], "not an .npz archive"),
    (lambda raw, a, m: b"", "not an .npz archive"),
    (lambda raw, a, m: (a, [1]), r"meta \[1\] is not a JSON object"),
    (lambda raw, a, m: (a, None), "meta null is not a JSON object"),
    (lambda raw, a, m: (a, dict(m, format="other")), "format 'other'"),
    (lambda raw, a, m: (a, _without(m, "options")), "'options'"),
    (lambda raw, a, m: (a, _without(m, "rng")), "'rng'"),
    (lambda raw, a, m: (a, dict(m, rng="x")), "state must be a dict"),
    (lambda raw, a, m: (a, dict(m, classes=None)), "classes None are not two distinct"),
    (lambda raw, a, m: (a, dict(m, classes=[1, 2, 3])), r"classes \[1, 2, 3\] are not two"),
    (lambda raw, a, m: (a, dict(m, classes=[1, 1])), r"classes \[1, 1\] are not two"),
    (lambda raw, a, m: (a, dict(m, classes=["a", "b"])), "could not convert string"),
    (lambda raw, a, m: (a, dict(m, epochs="1")), "epochs, rows_seen .* are not non-negative"),
    (lambda raw, a, m: (a, dict(m, options=dict(m["options"], bogus=1))),
     "unexpected keyword argument 'bogus'"),
    (lambda raw, a, m: (a, dict(m, options=dict(m["options"], solver="tron"))),
     "solver must be 'sgd' or 'pegasos'"),
    (lambda raw, a, m: (dict(a, v=np.full_like(a["v"], np.nan)), m),
     "the state holds NaN or infinite values"),
    (lambda raw, a, m: (dict(a, v=np.array(["a"] * len(a["v"]))), m), "could not convert"),
    (lambda raw, a, m: (dict(a, v=np.float64(1)), m), r"len\(\) of unsized object"),
])
def test_online_trainer_load_refuses_damaged_files(tmp_path, damage, reason):
    """Such files escaped as BadZipFile, EOFError, AttributeError, KeyError or TypeError;
    classes [1, 2, 3] loaded and failed at the next partial_fit."""
    from streamssvm import OnlineTrainer

    arrays, meta = _online_state(tmp_path / "good.npz")
    OnlineTrainer.load(tmp_path / "good.npz")  # the undamaged file loads
    path = tmp_path / "state.npz"
    damaged = damage((tmp_path / "good.npz").read_bytes(), arrays, meta)
    if isinstance(damaged, bytes):
        path.write_bytes(damaged)
    else:
        np.savez(path, **damaged[0], meta=np.array(json.dumps(damaged[1])))
    with pytest.raises(ValueError, match=f"{path}: not an online trainer state .*{reason}"):
        OnlineTrainer.load(path)


# --- conversion options -----------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(block_nnz=0), ValueError, r"block_nnz must be an integer in 1..2147483647 \(a "
                                    r"block's index pointers are int32\), got 0"),
    (dict(block_rows=-1), ValueError, "block_rows must be an integer in 1..2147483647 .* got -1"),
    # a block this large was allocated before (a MemoryError), 2.5 rows taken
    (dict(block_nnz=1 << 40), ValueError, "block_nnz must be an integer .* got 1099511627776"),
    (dict(block_rows=2.5), ValueError, "block_rows must be an integer .* got 2.5"),
    (dict(compression="zip"), ValueError, "compression must be one of"),
    (dict(compression="gzip", compression_level=0), ValueError, "compression_level must be 1..9"),
    (dict(compression="gzip", compression_level=12), ValueError, "compression_level must be 1"),
    (dict(compression="lzf", compression_level=3), ValueError,
     "with gzip or Blosc compression, got 3 with 'lzf'"),
    (dict(compression="blosc-lz4", compression_level=10), ValueError,
     "compression_level must be 1..9 with gzip or Blosc compression, got 10"),
    (dict(value_dtype="foo"), ValueError, "value_dtype must be float32 or float64, got 'foo'"),
    (dict(value_dtype="int32"), ValueError, "value_dtype must be float32 or float64"),
    (dict(n_features=-3), ValueError, r"n_features must be an integer in 0..2147483647, got -3"),
    (dict(n_features=1.5), ValueError, "n_features must be an integer .* got 1.5"),
    (dict(classes=(np.nan, 1)), ValueError, r"classes must be finite numbers, got \(nan, 1\)"),
    (dict(classes=(1, 1)), ValueError, "classes must be two distinct values"),
    (dict(zero_based="maybe"), ValueError, "zero_based must be 'auto', True or False"),
    (dict(n_features=1), Exception, r"line 2, column 4: index 2 is beyond n_features=1"),
])
def test_conversion_options_refused(tmp_path, kwargs, error, message):
    src = tmp_path / "t.svm"
    src.write_text("1 1:1\n-1 2:1\n")
    with pytest.raises(error, match=message):
        convert_svmlight(src, tmp_path / "o.h5", progress=False, **kwargs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.svm"]


def test_conversion_like_what_is_not_a_store(tmp_path):
    src = tmp_path / "t.svm"
    src.write_text("1 1:1\n-1 2:1\n")
    with pytest.raises(StoreError, match=f"{src}: not a readable HDF5 store"):
        convert_svmlight(src, tmp_path / "o.h5", like=src, progress=False)
    with pytest.raises(FileNotFoundError, match=r"No such file or directory: '.*missing.h5'"):
        Store(tmp_path / "missing.h5")
