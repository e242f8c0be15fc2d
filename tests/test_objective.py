"""The objective oracle L(w) = lam/2 ||w_[:d]||^2 + (1/n) sum_i psi(y_i (x_i.w_[:d] + b w_d)).

Checked against finite differences of itself, against an explicit dense numpy Hessian, and
for invariance: one block vs many uneven blocks, an in-memory source vs a real HDF5 store
(plain and gzip), one thread vs two.
"""


import mmap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from shared_data import load_shared
from streamssvm import _memory, kernels
from streamssvm.data import InMemorySource, Store
from streamssvm.data import store
from streamssvm.losses import get_loss
from streamssvm.data import plan
from streamssvm.objective import SmoothSVMObjective, problem
from streamssvm.solvers import ConvergenceWarning, newton, sdca, tron


LOSSES = [
    pytest.param("psi_g", 2.0 ** -3, id="psi_g-2^-3"),
    pytest.param("psi_g", 2.0 ** -6, id="psi_g-2^-6"),
    pytest.param("psi_m", 2.0 ** -3, id="psi_m-2^-3"),
    pytest.param("squared_hinge", None, id="squared_hinge"),
    pytest.param("logistic", None, id="logistic"),
]
INTERCEPTS = [pytest.param(0.0, id="no-intercept"), pytest.param(2.5, id="intercept-2.5")]
DTYPES = [pytest.param(np.float64, id="f64"), pytest.param(np.float32, id="f32")]


# ---------------------------------------------------------------- data and helpers

def random_problem(n=300, d=40, density=0.2, dtype=np.float64, seed=0):
    """Sparse X (some rows empty, a few dense columns) and labels in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.uniform(-1.0, 2.0, k)).astype(dtype)
    keep = np.ones(n)
    keep[rng.choice(n, size=n // 20, replace=False)] = 0.0  # some empty rows
    X = sp.csr_matrix(sp.diags(keep) @ X).astype(dtype)
    X.eliminate_zeros()
    assert X.dtype == dtype
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    return X, y


def one_value_per_row(X, seed):
    """X with each row's entries one value of the row's own (binary features scaled by
    row, as text scaled to unit length): the column kernels then hold the values by row."""
    X = X.copy()
    values = np.random.default_rng(seed).uniform(-1.0, 2.0, X.shape[0])
    X.data = np.repeat(values, np.diff(X.indptr)).astype(X.dtype)
    return X


# the values of the column kernels' transpose: one per entry, or one per row
VALUES = ["entries", "rows"]


def valued(X, values, seed=0):
    """X as it is (``values`` "entries") or with one value per row ("rows")."""
    return X if values == "entries" else one_value_per_row(X, seed)


def a9a_subset(n_rows):
    X, y = load_shared("a9a")
    return X[:n_rows], y[:n_rows]




def write_store(path, X, y, compression=None, value_dtype=None, **blocking):
    """A real store file holding X, y, cut as InMemorySource(**blocking) cuts it."""
    return store.write_store(path, InMemorySource(X, y, **blocking), value_dtype=value_dtype,
                             compression=compression)


def point(objective, seed=1, scale=0.6):
    """A point whose margins spread over the kinks of the losses (and a nonzero intercept)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(scale=scale, size=objective.n_variables)
    if objective.bias:
        w[-1] = 0.3
    return w


def augmented(X, bias):
    """X with the constant intercept column (the dense reference's design matrix)."""
    X = X.astype(np.float64).toarray()
    return np.hstack([X, np.full((X.shape[0], 1), bias)]) if bias else X


def reference(X, y, loss_name, sigma, lam, bias, w, weights=None):
    """f, gradient and dense Hessian from numpy, independent of the kernels (row weights
    c_i: ``weights``, default 1)."""
    loss = get_loss(loss_name, sigma)
    Z = augmented(X, bias)
    n = Z.shape[0]
    c = np.ones(n) if weights is None else weights
    psi, dpsi, d2psi = loss.derivatives(y * (Z @ w))
    reg = np.ones(Z.shape[1])
    if bias:
        reg[-1] = 0.0
    f = 0.5 * lam * np.sum(reg * w * w) + np.sum(c * psi) / n
    grad = lam * reg * w + Z.T @ (c * dpsi * y) / n
    hess = np.diag(lam * reg) + (Z.T * (c * d2psi)) @ Z / n
    return f, grad, hess


def assert_close_vec(actual, desired, rtol):
    """Componentwise rtol, with an absolute floor of rtol * max|desired| for cancelled entries."""
    np.testing.assert_allclose(actual, desired, rtol=rtol,
                               atol=rtol * float(np.max(np.abs(desired))))


def oracle_outputs(objective, w, s):
    state = objective.evaluate(w)
    return state.f, state.grad, objective.hessp(state, s), objective.hess_diag(state)


def assert_same_oracle(a, b, rtol=1e-12):
    fa, ga, ha, da = a
    fb, gb, hb, db = b
    assert fa == pytest.approx(fb, rel=rtol, abs=0)
    assert_close_vec(ga, gb, rtol)
    assert_close_vec(ha, hb, rtol)
    assert_close_vec(da, db, rtol)


# ---------------------------------------------------------------- derivatives

# the ways the oracle computes: from the data held by rows and columns (products X v by
# rows; for wide data, with fewer rows than columns, by columns), or block by block with
# per-thread scatter vectors (the streamed path)
HOLDS = [pytest.param(True, id="held"), pytest.param("wide", id="held-wide"),
         pytest.param(False, id="streamed")]


def shaped(hold, tall, wide):
    """The problem's shape (n, d): ``wide`` for ``hold`` "wide", else ``tall``; and the
    objective's ``hold``."""
    return (wide if hold == "wide" else tall), hold == "wide" or hold


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", INTERCEPTS)
@pytest.mark.parametrize("loss, sigma", LOSSES)
def test_gradient_against_five_point_differences(loss, sigma, bias, dtype, hold):
    (n, d), hold = shaped(hold, (300, 40), (40, 300))
    X, y = random_problem(n=n, d=d, dtype=dtype, seed=3)
    obj = SmoothSVMObjective(InMemorySource(X, y), loss, lam=1e-2, sigma=sigma,
                             fit_intercept=bool(bias), intercept_scaling=bias or 1.0, hold=hold)
    w = point(obj, scale=0.6 * np.sqrt(40 / d))  # margins as spread when wide
    assert obj.value(w) == pytest.approx(obj.evaluate(w).f, rel=1e-14)
    assert_gradient_matches_differences(obj, w, np.random.default_rng(7))


def assert_gradient_matches_differences(obj, w, rng):
    """The gradient at ``w`` along 3 random directions against five-point differences."""
    state = obj.evaluate(w)
    # small enough that (almost surely) no margin of these 300 rows crosses the squared
    # hinge's kink; rounding is then eps * f / h ~ 1e-11
    h = 1e-5
    for _ in range(3):
        v = rng.normal(size=obj.n_variables)
        v /= np.linalg.norm(v)
        f = [obj.value(w + k * h * v) for k in (-2, -1, 1, 2)]
        fd = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h)
        assert abs(fd - state.grad @ v) <= 1e-7 * state.grad_norm + 1e-9, (fd, state.grad @ v)


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", INTERCEPTS)
@pytest.mark.parametrize("loss, sigma", LOSSES)
def test_hessian_vector_product_against_gradient_differences(loss, sigma, bias, dtype, hold):
    (n, d), hold = shaped(hold, (300, 40), (40, 300))
    X, y = random_problem(n=n, d=d, dtype=dtype, seed=4)
    obj = SmoothSVMObjective(InMemorySource(X, y), loss, lam=1e-2, sigma=sigma,
                             fit_intercept=bool(bias), intercept_scaling=bias or 1.0, hold=hold)
    w = point(obj, seed=2, scale=0.6 * np.sqrt(40 / d))
    assert_hessp_matches_differences(obj, w, np.random.default_rng(8))


def assert_hessp_matches_differences(obj, w, rng):
    """Hessian-vector products at ``w`` along 3 random directions against central
    differences of the gradient."""
    state = obj.evaluate(w)
    h = 1e-6  # the squared hinge's generalized Hessian is its Hessian off the kinks
    for _ in range(3):
        v = rng.normal(size=obj.n_variables)
        hv = obj.hessp(state, v)
        fd = (obj.evaluate(w + h * v).grad - obj.evaluate(w - h * v).grad) / (2 * h)
        np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6 * np.linalg.norm(hv))


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("bias", INTERCEPTS)
@pytest.mark.parametrize("loss, sigma", LOSSES)
def test_against_explicit_dense_hessian(loss, sigma, bias, hold, values):
    """f, g against numpy; Hv and the diagonal against X^T D X, and e_j^T H e_j; with a
    value per entry and one per row (held: the transpose holds them by row)."""
    (n, d), hold = shaped(hold, (60, 12), (40, 80))
    X, y = random_problem(n=n, d=d, density=0.4, seed=5)
    X = valued(X, values)
    lam = 0.05
    obj = SmoothSVMObjective(InMemorySource(X, y), loss, lam=lam, sigma=sigma,
                             fit_intercept=bool(bias), intercept_scaling=bias or 1.0, hold=hold)
    w = point(obj, seed=3, scale=0.6 * np.sqrt(12 / d))
    f, grad, hess = reference(X, np.where(y > 0, 1.0, -1.0), loss, sigma, lam, bias, w)
    state = obj.evaluate(w)
    assert state.f == pytest.approx(f, rel=1e-12)
    assert_close_vec(state.grad, grad, 1e-12)
    assert np.count_nonzero(state.curvature) > 0
    s = np.random.default_rng(9).normal(size=obj.n_variables)
    assert_close_vec(obj.hessp(state, s), hess @ s, 1e-12)
    diag = obj.hess_diag(state)
    assert_close_vec(diag, np.diag(hess), 1e-12)
    unit_columns = np.array([obj.hessp(state, e)[j] for j, e in enumerate(np.eye(obj.n_variables))])
    assert_close_vec(diag, unit_columns, 1e-12)


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("bias", INTERCEPTS)
def test_zero_and_a_last_nonzero_entry_against_numpy(bias, hold):
    """At w = 0 the pass reads no products (its margins are 0): f, g and the curvature as
    numpy has them there, and at a w whose only nonzero entry is its last, which must not
    be taken for 0, on each way the oracle computes, and with row weights."""
    (n, d), hold = shaped(hold, (60, 12), (40, 80))
    X, y = random_problem(n=n, d=d, density=0.4, seed=6)
    weights = np.random.default_rng(7).uniform(0.5, 2.0, n)
    obj = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=0.05, sigma=0.5,
                             fit_intercept=bool(bias), intercept_scaling=bias or 1.0, hold=hold,
                             sample_weight=weights)
    last = np.zeros(obj.n_variables)
    last[-1] = 0.7
    for w in (np.zeros(obj.n_variables), last):
        f, grad, hess = reference(X, y, "psi_g", 0.5, 0.05, bias, w, weights)
        state = obj.evaluate(w)
        assert state.f == pytest.approx(f, rel=1e-12)
        assert_close_vec(state.grad, grad, 1e-12)
        margins = y * (augmented(X, bias) @ w)
        np.testing.assert_allclose(state.margins, margins, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(
            state.curvature, weights * get_loss("psi_g", 0.5).derivatives(margins)[2],
            rtol=1e-12)


# ---------------------------------------------------------------- invariance

BLOCKINGS = [
    pytest.param(dict(block_rows=1), id="rows-1"),
    pytest.param(dict(block_rows=7), id="rows-7"),
    pytest.param(dict(block_rows=1000), id="rows-1000"),
    pytest.param(dict(block_nnz=13), id="nnz-13"),
    pytest.param(dict(block_nnz=257), id="nnz-257"),
]


@pytest.mark.parametrize("blocking", BLOCKINGS)
@pytest.mark.parametrize("loss, sigma, bias, dtype", [
    pytest.param("psi_g", 2.0 ** -3, 0.0, np.float64, id="psi_g-f64"),
    pytest.param("psi_g", 2.0 ** -3, 2.5, np.float32, id="psi_g-intercept-f32"),
    pytest.param("squared_hinge", None, 1.0, np.float64, id="squared_hinge-intercept-f64"),
    pytest.param("logistic", None, 0.0, np.float32, id="logistic-f32"),
])
def test_one_block_equals_many_uneven_blocks(loss, sigma, bias, dtype, blocking):
    X, y = random_problem(n=131, d=40, dtype=dtype, seed=6)
    kw = dict(lam=1e-3, sigma=sigma, fit_intercept=bool(bias), intercept_scaling=bias or 1.0)
    whole = SmoothSVMObjective(InMemorySource(X, y), loss, **kw)
    cut = SmoothSVMObjective(InMemorySource(X, y, **blocking), loss, hold=False, **kw)
    assert whole.source.n_blocks == 1
    assert cut.source.n_blocks > 1 or blocking.get("block_rows") == 1000
    w = point(whole)
    s = np.random.default_rng(11).normal(size=whole.n_variables)
    assert_same_oracle(oracle_outputs(cut, w, s), oracle_outputs(whole, w, s))
    assert cut.value(w) == pytest.approx(whole.value(w), rel=1e-12, abs=0)


def test_one_block_equals_many_blocks_on_a9a():
    X, y = a9a_subset(6000)
    kw = dict(lam=1e-4, sigma=2.0 ** -6, fit_intercept=True)
    whole = SmoothSVMObjective(InMemorySource(X, y), "psi_g", **kw)
    cut = SmoothSVMObjective(InMemorySource(X, y, block_nnz=5000), "psi_g", hold=False, **kw)
    assert cut.source.n_blocks > 10
    w = point(whole, scale=0.3)
    s = np.random.default_rng(12).normal(size=whole.n_variables)
    assert_same_oracle(oracle_outputs(cut, w, s), oracle_outputs(whole, w, s))


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("compression", [None, "gzip", "blosc-lz4"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", INTERCEPTS)
def test_store_file_equals_in_memory_source(tmp_path, compression, dtype, bias, hold):
    (n, d), hold = shaped(hold, (503, 40), (40, 503))
    X, y = random_problem(n=n, d=d, dtype=dtype, seed=13)
    path = write_store(tmp_path / "data.h5", X, y, compression=compression, block_rows=37)
    kw = dict(lam=1e-3, sigma=2.0 ** -3, fit_intercept=bool(bias), intercept_scaling=bias or 1.0)
    memory = SmoothSVMObjective(InMemorySource(X, y), "psi_m", **kw)
    with Store(path) as store:
        assert store.n_blocks == -(-n // 37) and store.value_dtype == dtype
        assert store.metadata["options"]["compression"] == compression
        on_disk = SmoothSVMObjective(store, "psi_m", hold=hold, **kw)
        w = point(memory, scale=0.6 * np.sqrt(40 / d))
        s = np.random.default_rng(14).normal(size=memory.n_variables)
        assert_same_oracle(oracle_outputs(on_disk, w, s), oracle_outputs(memory, w, s))
        assert on_disk.value(w) == pytest.approx(memory.value(w), rel=1e-12, abs=0)


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("loss, sigma", [LOSSES[1], LOSSES[4]])
def test_two_threads_equal_one_thread(loss, sigma, hold):
    X, y = random_problem(n=500, d=4000, density=0.01, seed=16) if hold == "wide" else \
        a9a_subset(8000)
    kw = dict(lam=1e-4, sigma=sigma, fit_intercept=True, hold=bool(hold))
    for blocking in (dict(), dict(block_nnz=20000)):
        serial = SmoothSVMObjective(InMemorySource(X, y, **blocking), loss, n_threads=1, **kw)
        threaded = SmoothSVMObjective(InMemorySource(X, y, **blocking), loss, n_threads=2, **kw)
        w = point(serial, scale=0.3)
        s = np.random.default_rng(15).normal(size=serial.n_variables)
        assert_same_oracle(oracle_outputs(threaded, w, s), oracle_outputs(serial, w, s))
        assert threaded.value(w) == pytest.approx(serial.value(w), rel=1e-12, abs=0)


# ---------------------------------------------------------------- bookkeeping

def test_every_oracle_call_is_one_pass():
    X, y = random_problem(seed=16)
    obj = SmoothSVMObjective(InMemorySource(X, y, block_rows=50), "psi_g", lam=1e-2,
                             cache_curved=False, hold=False)
    w = point(obj)
    assert obj.passes == 0
    state = obj.evaluate(w)
    assert obj.passes == 1
    obj.hessp(state, w)
    assert obj.passes == 2
    obj.hess_diag(state)
    assert obj.passes == 3
    obj.value(w)
    assert obj.passes == 4
    for _ in range(3):
        obj.hessp(state, w)
    assert obj.passes == 7


def test_store_passes_and_cached_curved_rows(tmp_path):
    """On a store, hessp / hess_diag stream the file (one pass each) or, with the rows that
    have curvature kept in memory, read nothing; both give the same numbers."""
    X, y = random_problem(n=503, seed=22)
    path = write_store(tmp_path / "data.h5", X, y, block_rows=40)
    with Store(path) as store:
        results = {}
        for cache, cache_bytes in ((False, None), (True, None), (True, 0)):
            obj = SmoothSVMObjective(store, "squared_hinge", lam=1e-2, fit_intercept=True,
                                     cache_curved=cache, cache_bytes=cache_bytes, hold=False)
            w = point(obj)
            state = obj.evaluate(w)
            assert obj.passes == 1
            assert 0 < np.count_nonzero(state.curvature) < X.shape[0]  # some rows are flat
            s = np.random.default_rng(23).normal(size=obj.n_variables)
            (hv, curvature_along), diag = obj.hessp_quad(state, s), obj.hess_diag(state)
            assert curvature_along == s @ hv
            in_memory = cache and cache_bytes is None
            assert obj.passes == (1 if in_memory else 3)
            assert obj.cached_sweeps == (2 if in_memory else 0)
            obj.value(w)
            assert obj.passes == (2 if in_memory else 4)
            results[cache, cache_bytes] = (state.f, state.grad, hv, diag)
        assert_same_oracle(results[True, None], results[False, None])
        assert_same_oracle(results[True, 0], results[False, None])


def test_vectors_of_the_rows_go_to_files_when_they_would_not_fit(tmp_path, monkeypatch):
    """Streamed from a store, a state's margins and curvature, and a subsampled state's
    curvature, are files when 8 n bytes exceed an eighth of the memory left (the memory
    measure is the one thing replaced here), holding what vectors in memory hold: TRON,
    Newton with a subsampled Hessian and SDCA end where they end in memory, to the bit.
    Held data keeps them in memory."""
    X, y = random_problem(n=503, seed=24)
    path = write_store(tmp_path / "data.h5", X, y, block_rows=40)

    def oracle(store, hold=False):
        return SmoothSVMObjective(store, "psi_g", lam=1e-2, sigma=0.125, hold=hold)

    def runs(store):
        obj = oracle(store)
        state = obj.evaluate(point(obj))
        sampled = obj.subsampled(state, 0.5, np.random.default_rng(3))
        ws = [solver(oracle(store), tol=1e-6, max_iter=20, **options).w
              for solver, options in ((tron, {}), (newton, dict(hessian_sample=0.5)),
                                      (sdca, {}))]
        return (state.margins, state.curvature, sampled.curvature), (state.f, state.grad, ws)

    with Store(path) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        roomy = runs(store)
        monkeypatch.setattr(_memory, "available_memory_bytes", lambda: 8 * 8 * 503 - 1)
        tight = runs(store)
        held = oracle(store, hold=True).evaluate(np.zeros(X.shape[1]))
    assert not any(isinstance(v, np.memmap) for v in roomy[0])
    assert all(isinstance(v, np.memmap) for v in tight[0])
    assert not isinstance(held.margins, np.memmap)
    for a, b in zip(roomy[0], tight[0]):
        np.testing.assert_array_equal(a, b)
    assert roomy[1][0] == tight[1][0]
    np.testing.assert_array_equal(roomy[1][1], tight[1][1])
    for a, b in zip(roomy[1][2], tight[1][2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("columns", [False, True])
def test_held_data_is_read_once_and_products_read_nothing(tmp_path, monkeypatch, columns):
    """hold: the first evaluate reads the store (one pass), Hessian products and diagonals
    then come from memory, by the rows (this data has few columns: plan.columns_pay) or
    by the transpose (``columns``); the numbers equal the streamed oracle's, row weights
    included. A budget too small for the data and its transpose streams instead."""
    if columns:
        monkeypatch.setattr(plan, "GATHER_PER_ROW", -1.0)
    X, y = random_problem(n=503, seed=24)
    path = write_store(tmp_path / "data.h5", X, y, block_rows=40)
    weights = np.random.default_rng(25).uniform(0.0, 3.0, X.shape[0])
    kw = dict(lam=1e-2, fit_intercept=True, intercept_scaling=1.5, sample_weight=weights)
    with Store(path) as source:
        held = SmoothSVMObjective(source, "squared_hinge", hold="auto", **kw)
        streamed = SmoothSVMObjective(source, "squared_hinge", hold=False, cache_curved=False, **kw)
        tight = SmoothSVMObjective(source, "squared_hinge", hold="auto", cache_bytes=1000,
                                   cache_curved=False, **kw)
        w = point(held)
        s = np.random.default_rng(26).normal(size=held.n_variables)
        outputs = [oracle_outputs(obj, w, s) for obj in (held, streamed, tight)]
        assert (held.passes, held.cached_sweeps) == (1, 2)
        assert ((streamed.passes, streamed.cached_sweeps) == (tight.passes, tight.cached_sweeps)
                == (3, 0))
        # the per-thread d-vectors of a scatter are made by the first pass that scatters
        assert held.data.rows_way != columns and (held._scatter is None) == columns
        assert streamed._scatter.shape == (held.n_threads, held.n_variables)
        assert_same_oracle(outputs[0], outputs[1])
        assert_same_oracle(outputs[2], outputs[1])
        assert held.value(w) == pytest.approx(streamed.value(w), rel=1e-12, abs=0)
        assert held.passes == 2
        # a subsampled Hessian needs no pass either: the sample is a mask on D
        state = held.evaluate(w)
        sampled = held.subsampled(state, 0.5, np.random.default_rng(27))
        assert held.passes == 3
        kept = sampled.curvature != 0
        assert 0 < np.count_nonzero(kept) < np.count_nonzero(state.curvature)
        np.testing.assert_array_equal(sampled.curvature[kept], state.curvature[kept] / 0.5)


@pytest.mark.parametrize("n_parts", [1, 2, 3, 7])
@pytest.mark.parametrize("bucket_bits", [2, 13])
@pytest.mark.parametrize("values", VALUES)
def test_transpose_of_a_block_with_an_offset(n_parts, bucket_bits, values):
    """The columns of rows taken out of the middle of a matrix (indptr not starting at 0),
    with empty rows, empty columns and columns of one nonzero, equal scipy's CSC, made by
    any number of threads, in one bucket of columns or in ten; values by entry, or by row
    where each row holds one."""
    X, _ = random_problem(n=200, d=30, seed=28)
    lo, hi = 37, 161
    one = sp.csr_matrix((np.arange(1.0, 6.0), ([40, 90, 160, 10, 100], [0, 1, 2, 3, 3])),
                        shape=(200, 4))  # one nonzero in the block; column 3 has one outside
    X = sp.hstack([one, X, sp.csr_matrix((200, 3)), one]).tocsr()  # empty columns too
    X = valued(X, values, seed=29)
    columns = kernels.transpose(X.indptr[lo:hi + 1], X.indices, X.data, X.shape[1], n_parts,
                                bucket_bits)
    single, _, _, multi, _, _, _, empty, row_values = columns
    expected = X[lo:hi].tocsc()
    expected.sort_indices()
    lengths = np.diff(expected.indptr)
    np.testing.assert_array_equal(single, np.flatnonzero(lengths == 1))
    expected_multi = np.flatnonzero(lengths > 1)
    np.testing.assert_array_equal(multi, by_length(expected_multi, lengths[expected_multi],
                                                   expected_multi >> bucket_bits))
    np.testing.assert_array_equal(empty, np.flatnonzero(lengths == 0))
    assert len(single) == 8 and len(empty) >= 3
    assert_entries_as_csc(columns, expected, values == "rows")
    if values == "rows":  # empty rows' value is 0
        assert np.all((row_values == 0) == (np.diff(X.indptr[lo:hi + 1]) == 0))


def test_transpose_keeps_values_by_row_only_where_each_row_holds_one():
    """Each row's one value (0 for an empty row), also from a block with an offset; values
    by entry as soon as one row, the last included, holds two, however alike."""
    indptr = np.array([0, 3, 3, 4, 6])
    indices = np.array([0, 1, 2, 1, 0, 2], np.int32)
    data = np.array([0.5, 0.5, 0.5, -2.0, 7.0, 7.0], np.float32)
    np.testing.assert_array_equal(kernels.transpose(indptr, indices, data, 3, 2)[8],
                                  [0.5, 0.0, -2.0, 7.0])
    np.testing.assert_array_equal(kernels.transpose(indptr[1:], indices, data, 3, 2)[8],
                                  [0.0, -2.0, 7.0])
    for k in (2, 5):  # the first row's last entry, the last row's
        other = data.copy()
        other[k] = np.nextafter(other[k], np.float32(10))
        columns = kernels.transpose(indptr, indices, other, 3, 2)
        assert columns[8].shape == (0,) and len(columns[2]) + len(columns[6]) == 6


def test_a_large_transpose_is_made_in_prefaulted_arrays():
    """Arrays of 4 MiB and more (here a million float32 values and int32 rows) are made
    with their pages by the kernel (an anonymous map, not numpy's huge pages, on whose
    compaction the transpose waited): the kernels write and read them as any array."""
    rng = np.random.default_rng(31)
    X = sp.random(3000, 400_000, density=1e-3, format="csr", random_state=rng,
                  dtype=np.float32)
    columns = kernels.transpose(X.indptr, X.indices, X.data, X.shape[1], 2)
    single, single_rows, single_values, multi, multi_ptr, multi_rows, multi_values = columns[:7]
    assert multi_rows.nbytes >= _memory.PREFAULT_BYTES
    if hasattr(mmap, "MAP_POPULATE"):
        assert isinstance(multi_rows.base, memoryview) and multi_rows.flags.writeable
    rows = np.concatenate([single_rows, multi_rows])
    cols = np.concatenate([single, np.repeat(multi, np.diff(multi_ptr))])
    made = sp.csc_matrix((np.concatenate([single_values, multi_values]), (rows, cols)),
                         shape=X.shape)
    assert (made != X.tocsc()).nnz == 0
    v = rng.normal(size=X.shape[0])
    out = np.empty(X.shape[1])
    kernels.column_sums(columns, v, False, 0.0, np.zeros(X.shape[1]), 0.0, 1.0, 2, out)
    np.testing.assert_allclose(out, X.T @ v, rtol=1e-12, atol=1e-12)
    # more than the machine has: refused as numpy refuses it, not as an OSError of mmap
    with pytest.raises(MemoryError):
        _memory.prefaulted(1 << 50, np.float64)


def by_length(columns, lengths, runs):
    """``columns`` in the order the column kernels give multi columns: within each run of
    equal ``runs``, by their ``lengths`` (those of LENGTH_CLASSES or more alike), ties in
    their order."""
    classes = np.minimum(lengths, kernels.linear.LENGTH_CLASSES)
    return columns[np.lexsort((np.arange(len(columns)), classes, runs))]


def assert_entries_as_csc(columns, expected, by_row):
    """The single and multi columns of ``columns`` (:func:`kernels.transpose`'s tuple) hold
    the rows and values of those columns of ``expected`` (CSC, indices sorted): the values
    in ``single_values`` and ``multi_values``, or, ``by_row``, in ``row_values`` alone,
    those two empty."""
    single, single_rows, single_values, multi, multi_ptr, multi_rows, multi_values, _, \
        row_values = columns
    if by_row:
        assert len(single_values) == len(multi_values) == 0 and len(row_values) > 0
        single_values, multi_values = row_values[single_rows], row_values[multi_rows]
    else:
        assert len(row_values) == 0
    np.testing.assert_array_equal(single_rows, expected.indices[expected.indptr[single]])
    np.testing.assert_array_equal(single_values, expected.data[expected.indptr[single]])
    assert multi_ptr[0] == 0
    np.testing.assert_array_equal(np.diff(multi_ptr), np.diff(expected.indptr)[multi])
    for c, j in enumerate(multi):
        entries = slice(expected.indptr[j], expected.indptr[j + 1])
        np.testing.assert_array_equal(multi_rows[multi_ptr[c]:multi_ptr[c + 1]],
                                      expected.indices[entries])
        np.testing.assert_array_equal(multi_values[multi_ptr[c]:multi_ptr[c + 1]],
                                      expected.data[entries])


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("n_parts", [1, 2, 3, 7])
def test_column_kernels_equal_scipy(n_parts, values):
    """X v, X^T u and (X.^2)^T u from the columns, with single, multiple and empty columns,
    in the variables' order and in the columns' own (``compact``, where X v may first make
    v = z + beta v), with values by entry and by row."""
    rng = np.random.default_rng(30)
    X = sp.random(60, 400, density=0.01, random_state=31, format="csr")  # many single
    X = valued(sp.hstack([X, sp.random(60, 20, density=0.5, random_state=32)]).tocsr(), values)
    columns = kernels.transpose(X.indptr, X.indices, X.data, X.shape[1], n_parts)
    assert (len(columns[8]) > 0) == (values == "rows")
    assert min(len(columns[0]), len(columns[3]), len(columns[7])) > 10
    v, u, x = rng.standard_normal(X.shape[1]), rng.standard_normal(60), rng.standard_normal(421)
    np.testing.assert_allclose(kernels.column_products(columns, v, 60, n_parts), X @ v,
                               rtol=1e-13, atol=1e-13)
    for squared, M in ((False, X), (True, X.multiply(X))):
        out = np.empty(421)
        kernels.column_sums(columns, u, squared, 2.0, x, 0.3, 0.5, n_parts, out)
        np.testing.assert_allclose(out[:420], 0.3 * x[:420] + 0.5 * (M.T @ u), rtol=1e-13,
                                   atol=1e-13)
        assert out[420] == pytest.approx(0.5 * (4.0 if squared else 2.0) * u.sum(), rel=1e-13)
    # compact: the vectors in the columns' order (column_order), without the empty columns
    order = kernels.column_order(columns)
    np.testing.assert_array_equal(np.sort(order), np.flatnonzero(np.diff(X.tocsc().indptr)))
    np.testing.assert_array_equal(kernels.column_products(columns, v[order], 60, n_parts, True),
                                  kernels.column_products(columns, v, 60, n_parts))
    # with z: v made z + beta v in place as it is read (CG's next direction), then X v
    z, fused = rng.standard_normal(order.size), v[order]
    xv = kernels.column_products(columns, fused, 60, n_parts, True, z, 0.7)
    np.testing.assert_allclose(fused, z + 0.7 * v[order], rtol=1e-15)
    np.testing.assert_array_equal(xv, kernels.column_products(columns, fused, 60, n_parts, True))
    x_compact = np.r_[x[order], x[420]]
    for squared in (False, True):
        out, compact = np.empty(421), np.empty(order.size + 1)
        dot = kernels.column_sums(columns, u, squared, 2.0, x, 0.3, 0.5, n_parts, out)
        dot_compact = kernels.column_sums(columns, u, squared, 2.0, x_compact, 0.3, 0.5, n_parts,
                                          compact, True)
        np.testing.assert_array_equal(compact, np.r_[out[order], out[420]])
        assert dot_compact == pytest.approx(dot - x[columns[7]] @ out[columns[7]], rel=1e-12)


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("n_parts", [1, 2, 3, 7])
def test_curved_columns_are_the_transpose_of_the_curved_rows(n_parts, values):
    """curved_columns keeps the entries of the rows with curvature: single columns so
    kept, in order, multi columns with any such entry (one or more) ordered by their
    entries left (in runs: each thread's range cut into SORT_CHUNK columns), the rest
    empty; written again into the same arrays for another curvature, larger or smaller."""
    rng = np.random.default_rng(42)
    X = sp.random(80, 500, density=0.01, random_state=43, format="csr")  # many single
    X = sp.hstack([X, sp.random(80, 30, density=0.4, random_state=44),
                   sp.random(80, 12000, density=0.04, random_state=45),  # > SORT_CHUNK multi
                   sp.random(80, 20, density=0.95, random_state=46),  # > LENGTH_CLASSES
                   sp.csr_matrix((80, 3))]).tocsr()
    X = valued(X, values)
    columns = kernels.transpose(X.indptr, X.indices, X.data, X.shape[1], n_parts)
    out = tuple(np.empty_like(a) for a in columns[:7]) + (np.empty(X.shape[1], np.int64),)
    lengths = np.diff(X.tocsc().indptr)
    # the run of each of the transpose's multi columns
    bounds = kernels.linear.row_partition(columns[4], n_parts)
    position = np.arange(len(columns[3]))
    part = np.searchsorted(bounds, position, side="right") - 1
    runs = part * len(position) + (position - bounds[part]) // kernels.linear.SORT_CHUNK
    run_of = dict(zip(columns[3], runs))
    assert n_parts > 2 or len(np.unique(runs)) > n_parts  # more than one run in a range
    for fraction in (0.6, 0.1, 0.0, 1.0, 0.3):
        curvature = np.where(rng.random(80) < fraction, rng.uniform(0.5, 2.0, 80), 0.0)
        curved = kernels.curved_columns(columns, curvature, n_parts, out)
        single, multi, empty = curved[0], curved[3], curved[7]
        expected = sp.csc_matrix(sp.diags((curvature != 0).astype(float)) @ X)
        expected.eliminate_zeros()
        expected.sort_indices()
        kept = np.diff(expected.indptr)
        np.testing.assert_array_equal(single, np.flatnonzero((lengths == 1) & (kept == 1)))
        expected_multi = columns[3][np.isin(columns[3], np.flatnonzero(kept > 0))]
        np.testing.assert_array_equal(multi, by_length(
            expected_multi, kept[expected_multi], [run_of[j] for j in expected_multi]))
        np.testing.assert_array_equal(np.sort(empty), np.flatnonzero(kept == 0))
        assert_entries_as_csc(curved, expected, values == "rows")


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("shape", [(60, 400), (400, 60)], ids=["wide", "tall"])
def test_newton_system_reads_the_curved_rows_columns(shape, values, monkeypatch):
    """Held data: the first Hessian product or (wide data) Newton system at a state copies
    the columns of its curved rows (at most 3/4 of the rows curved), a subsampled state's
    included, and the state's products read that copy. On wide data the system's vectors
    are the copy's columns with entries (the intercept last): its products and diagonal
    are H's rows and columns there, H is lambda I on the others (the rest), ||g||^2 on
    them is ``rest_norm2``, and ``step`` puts a system vector and a multiple of -g's rest
    back in the variables' order. Tall data's system is in the variables' order. Most
    rows curved: no copy, and the system is in the variables' order (on the whole
    transpose the columns' order saves no time: news20, logistic, Newton 15% slower).
    (The tall data would take the rows' way, plan.columns_pay: the transpose is asked
    for here.)"""
    monkeypatch.setattr(plan, "GATHER_PER_ROW", -1.0)
    made = []
    real = kernels.curved_columns
    monkeypatch.setattr(kernels, "curved_columns",
                        lambda *args: made.append(1) or real(*args))
    X, y = random_problem(n=shape[0], d=shape[1], density=0.02, seed=45)
    X = valued(X, values)
    lam, bias = 1e-2, 1.5
    obj = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=lam, sigma=2.0 ** -3,
                             fit_intercept=True, intercept_scaling=bias, hold=True)
    Z = augmented(X, bias)
    regulariser = lam * np.diag(np.r_[np.ones(X.shape[1]), 0.0])
    rng = np.random.default_rng(46)
    wide = shape[0] < shape[1]
    state = obj.evaluate(point(obj, seed=47, scale=0.3))
    assert 0 < 4 * np.count_nonzero(state.curvature) <= 3 * obj.n_samples
    for at in (state, obj.subsampled(state, 0.5, rng)):
        hess = regulariser + Z.T @ sp.diags(at.curvature) @ Z / X.shape[0]
        before = len(made)
        system = obj.newton_system(at)
        assert len(made) - before == wide and system.state is at
        s = rng.normal(size=obj.n_variables)
        hv, curvature_along = obj.hessp_quad(at, s)  # from the copy
        assert_close_vec(hv, hess @ s, 1e-12)
        assert curvature_along == pytest.approx(s @ hess @ s, rel=1e-12)
        assert len(made) - before == 1
        if not wide:
            assert system.rest_norm2 == 0 and system.grad is at.grad
            assert_close_vec(system.hessp_quad(s)[0], hess @ s, 1e-12)
            continue
        order = system.order
        touched = np.r_[np.flatnonzero(np.diff((sp.diags(at.curvature) @ X).tocsc().indptr)),
                        X.shape[1]]
        np.testing.assert_array_equal(np.sort(order), touched)
        rest = np.setdiff1d(np.arange(obj.n_variables), order)
        assert rest.size > 0 and np.all(hess[np.ix_(rest, rest)] == lam * np.eye(rest.size))
        assert not hess[np.ix_(rest, order)].any()
        np.testing.assert_array_equal(system.grad, at.grad[order])
        assert system.rest_norm2 == pytest.approx(at.grad[rest] @ at.grad[rest], rel=1e-12)
        d = rng.normal(size=order.size)
        hd, dhd = system.hessp_quad(d)
        assert_close_vec(hd, hess[np.ix_(order, order)] @ d, 1e-12)
        assert dhd == pytest.approx(d @ hess[np.ix_(order, order)] @ d, rel=1e-12)
        assert_close_vec(system.hess_diag(), np.diag(hess)[order], 1e-12)
        full = system.step(d, 0.25)
        np.testing.assert_array_equal(full[order], d)
        np.testing.assert_array_equal(full[rest], -0.25 * at.grad[rest])
    curved = obj.evaluate(np.zeros(obj.n_variables))
    assert np.all(curved.curvature != 0)
    before = len(made)
    system = obj.newton_system(curved)
    obj.hessp(curved, rng.normal(size=obj.n_variables))
    assert len(made) == before
    assert system.rest_norm2 == 0 and system.grad is curved.grad


def test_newton_system_outlives_a_product_at_another_state():
    """A state's Newton system keeps giving that state's products and diagonal after a
    product at another state, whose copy of the curved rows' columns is written over its
    own (the copy is made again)."""
    X, y = random_problem(n=40, d=300, density=0.05, seed=52)
    obj = SmoothSVMObjective(InMemorySource(X, y), "squared_hinge", lam=1e-3, hold=True)
    a, b = (obj.evaluate(point(obj, seed=seed, scale=3.0)) for seed in (53, 54))
    system = obj.newton_system(a)
    assert len(system.grad) < obj.n_variables  # a ColumnSystem
    hess = 1e-3 * np.eye(300) + (X.T @ sp.diags(a.curvature) @ X).toarray() / 40
    order = system.order
    d = np.random.default_rng(55).normal(size=order.size)
    expected = (hess[np.ix_(order, order)] @ d, np.diag(hess)[order])
    for _ in range(2):
        assert_close_vec(system.hessp_quad(d)[0], expected[0], 1e-12)
        assert_close_vec(system.hess_diag(), expected[1], 1e-12)
        obj.hessp(b, np.ones(300))


def test_no_copy_of_the_curved_rows_columns_without_the_memory(monkeypatch):
    """When a quarter of the memory left cannot hold the copy's arrays, the products read
    the whole held transpose, with the same results, the Newton system is in the
    variables' order, and the copy is tried again at the next state (the memory measure
    is the one thing replaced here)."""
    made = []
    real = kernels.curved_columns
    monkeypatch.setattr(kernels, "curved_columns",
                        lambda *args: made.append(1) or real(*args))
    X, y = random_problem(n=60, d=400, density=0.1, seed=48)
    obj = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2, sigma=2.0 ** -3,
                             hold=True)
    rng = np.random.default_rng(49)
    state = obj.evaluate(point(obj, seed=50, scale=0.3))
    assert 4 * np.count_nonzero(state.curvature) <= 3 * obj.n_samples
    hess = (1e-2 * np.eye(X.shape[1])
            + X.T.toarray() @ np.diag(state.curvature) @ X.toarray() / X.shape[0])
    free = [0]
    monkeypatch.setattr(plan, "available_memory_bytes", lambda: free[0])
    system = obj.newton_system(state)
    assert system.rest_norm2 == 0 and system.grad is state.grad
    s = rng.normal(size=obj.n_variables)
    assert_close_vec(system.hessp_quad(s)[0], hess @ s, 1e-12)
    assert_close_vec(obj.hessp(state, s), hess @ s, 1e-12)
    assert made == []
    free[0] = 1 << 40
    obj.newton_system(obj.evaluate(point(obj, seed=51, scale=0.3)))
    assert made == [1]


@pytest.mark.parametrize("shape", ["wide", "tall"])
def test_rented_columns_are_made_once_the_passes_would_have_paid_for_them(shape):
    """rent_columns(k): evaluate scatters X^T by rows, without the transpose, while k
    passes would not have paid for it (columns_pay), the same state up to rounding; from
    the first k that would, it makes the transpose and reads the columns, to the bit as an
    objective that made them itself, and keeps them whatever k. rent_columns() ends the
    rent: data of few columns goes back to the rows, wide data stays on the columns."""
    n, d = (60, 400) if shape == "wide" else (400, 60)
    X, y = random_problem(n=n, d=d, seed=41)
    reference = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2)
    w = point(reference)
    expected = reference.evaluate(w)
    objective = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2)
    data = objective.data
    pays = next(k for k in range(10 ** 6) if plan.columns_pay(n, d, X.nnz, k)) \
        if shape == "wide" else None
    for k in (0, 1, pays - 1) if pays else (0, 10 ** 9):
        data.rent_columns(k)
        early = objective.evaluate(w)
        assert data.rows_way and data._held[1] is None
        assert early.f == pytest.approx(expected.f, rel=1e-13)
        np.testing.assert_allclose(early.grad, expected.grad, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(early.margins, expected.margins, rtol=1e-12, atol=1e-15)
    if pays:
        for k in (pays, 0):
            data.rent_columns(k)
            later = objective.evaluate(w)
            assert not data.rows_way and data._held[1] is not None
            assert later.f == expected.f and np.array_equal(later.grad, expected.grad)
    data.rent_columns()
    assert data.rows_way == (shape == "tall")


def test_hold_must_be_auto_or_a_bool():
    X, y = random_problem(seed=29)
    with pytest.raises(ValueError, match="hold must be"):
        SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2, hold="yes")


def test_state_is_not_overwritten_by_a_later_evaluate():
    """hessp uses the curvature of the state it is given, not of the last evaluate."""
    X, y = random_problem(seed=17)
    obj = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2)
    w = point(obj)
    first = obj.evaluate(w)
    s = np.ones(obj.n_variables)
    before = obj.hessp(first, s)
    obj.evaluate(3 * w)
    np.testing.assert_array_equal(obj.hessp(first, s), before)


@pytest.mark.parametrize("bias", [1.0, 2.5])
def test_intercept_is_not_regularised(bias):
    X, y = random_problem(seed=18)
    lam = 0.5  # large, so that a regularised intercept would show
    obj = SmoothSVMObjective(InMemorySource(X, y), "psi_m", lam=lam, sigma=0.25,
                             fit_intercept=True, intercept_scaling=bias)
    assert obj.n_variables == X.shape[1] + 1
    w = point(obj)
    w[-1] = 4.0
    ypm = np.where(y > 0, 1.0, -1.0)
    margins = ypm * (X @ w[:-1] + bias * w[-1])
    psi, dpsi, d2psi = get_loss("psi_m", 0.25).derivatives(margins)
    state = obj.evaluate(w)
    assert state.grad[-1] == pytest.approx(np.mean(dpsi * ypm * bias), rel=1e-12)
    assert state.f == pytest.approx(0.5 * lam * w[:-1] @ w[:-1] + psi.mean(), rel=1e-12)
    e_last = np.zeros(obj.n_variables)
    e_last[-1] = 1.0
    assert obj.hessp(state, e_last)[-1] == pytest.approx(np.mean(d2psi) * bias ** 2, rel=1e-12)
    assert obj.hess_diag(state)[-1] == pytest.approx(np.mean(d2psi) * bias ** 2, rel=1e-12)
    # every other coordinate is regularised
    first_column = X[:, 0].toarray().ravel()
    expected = lam * w[0] + np.mean(dpsi * ypm * first_column)
    assert state.grad[0] == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("lam", [0.0, -1e-3, float("nan"), float("inf")])
def test_lambda_must_be_positive(lam):
    X, y = random_problem(seed=19)
    with pytest.raises(ValueError, match="lambda"):
        SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=lam)


@pytest.mark.parametrize("scaling", [0.0, -1.0])
def test_intercept_scaling_must_be_positive(scaling):
    X, y = random_problem(seed=19)
    with pytest.raises(ValueError, match="intercept_scaling"):
        SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-3, fit_intercept=True,
                           intercept_scaling=scaling)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_w_of_wrong_shape(fit_intercept):
    X, y = random_problem(seed=20)
    obj = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-3, fit_intercept=fit_intercept)
    good = np.zeros(obj.n_variables)
    state = obj.evaluate(good)
    passes = obj.passes
    for bad in (np.zeros(obj.n_variables + 1), np.zeros(obj.n_variables - 1),
                np.zeros((1, obj.n_variables)), np.zeros(0)):
        with pytest.raises(ValueError, match="^w has shape"):
            obj.evaluate(bad)
        with pytest.raises(ValueError, match="^w has shape"):
            obj.value(bad)
        with pytest.raises(ValueError, match="^s has shape"):  # it said w
            obj.hessp(state, bad)
    assert obj.passes == passes  # refused before reading any data


@pytest.mark.parametrize("hold", [True, False])
def test_a_state_of_other_data_is_refused(hold):
    """The kernels index a state's curvature by the rows, unchecked: a state of another
    objective.s data (10 rows against 300) was read past its end (found by a probe)."""
    X, y = random_problem(seed=20)
    small = SmoothSVMObjective(InMemorySource(X[:10], y[:10]), "squared_hinge", lam=0.1,
                               hold=hold)
    obj = SmoothSVMObjective(InMemorySource(X, y), "squared_hinge", lam=0.1, hold=hold)
    state = small.evaluate(np.zeros(small.n_variables))
    for call in (lambda: obj.hessp(state, np.ones(obj.n_variables)),
                 lambda: obj.hess_diag(state),
                 lambda: obj.subsampled(state, 0.5, np.random.default_rng(0))):
        with pytest.raises(ValueError, match="state is of other data.*10,.*300 rows"):
            call()


@pytest.mark.parametrize("hold", [True, False])
def test_the_intercept_entry_is_exact_beside_a_large_lambda_w(hold):
    """The streamed path added lam w_d to the intercept's gradient entry, then took it
    away: at lam 1e8 the entry kept 8 digits, the held path all of them (found by a
    probe). Both compute it directly now."""
    X, y = random_problem(seed=21)
    lam = 1e8
    obj = SmoothSVMObjective(InMemorySource(X, y), "logistic", lam=lam, fit_intercept=True,
                             hold=hold)
    w = point(obj)
    w[-1] = 0.7  # lam w_d = 7e7
    ypm = np.where(y > 0, 1.0, -1.0)
    _, dpsi, d2psi = get_loss("logistic").derivatives(ypm * (X @ w[:-1] + w[-1]))
    state = obj.evaluate(w)
    assert state.grad[-1] == pytest.approx(np.mean(dpsi * ypm), rel=1e-13)
    e_last = np.zeros(obj.n_variables)
    e_last[-1] = 1.0
    assert obj.hessp(state, e_last)[-1] == pytest.approx(np.mean(d2psi), rel=1e-13)


def test_unknown_loss_and_bad_sigma():
    X, y = random_problem(seed=21)
    with pytest.raises(ValueError, match="unknown loss"):
        SmoothSVMObjective(InMemorySource(X, y), "hinge_typo", lam=1e-3)
    with pytest.raises(ValueError, match="sigma"):
        SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-3, sigma=0.0)


def test_a_width_whose_vectors_do_not_fit_memory_is_refused():
    """One stray index near 2**31 in an svmlight file made a store 2**31 - 1 wide: a run
    allocated vectors of 16 GiB until the kernel killed it (or numpy's MemoryError)."""
    width = 2**31 - 1
    if problem.MIN_VECTORS * 8 * width <= _memory.available_memory_bytes():
        pytest.skip("this machine has room for the vectors")
    X = sp.csr_matrix((np.ones(2), np.array([0, width - 1], np.int32),
                       np.array([0, 1, 2], np.int32)), shape=(2, width))
    with pytest.raises(ValueError, match=r"<in-memory matrix>: 2,147,483,647 features: a solver's "
                                         r"vectors of that length \(16 GiB each, 3 at least\) "
                                         r"do not fit .* GiB of memory free \(a stray large "
                                         r"index in the input\?"):
        SmoothSVMObjective(InMemorySource(X, np.array([-1, 1])), "psi_g", 1e-3)
