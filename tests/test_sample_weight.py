"""Row weights in the objective: L(w) = lam/2 ||w||^2 + (1/n) sum_i c_i psi(y_i x_i.w).

Checked against a dense numpy reference, finite differences, duplicated rows (weight 2 is a
row written twice, weight 0 a row left out), across blockings, threads and a real store, and
against LIBLINEAR's class weights: ``-wi`` multiplies C for class i, i.e. c_i = weight of
y_i with C = 1 / (lam n).
"""

import warnings

import numpy as np
import pytest

from shared_data import load_shared
from streamssvm import ConvergenceWarning
from streamssvm.data import InMemorySource, Store, write_store
from streamssvm.objective import SmoothSVMObjective
from streamssvm.solvers import tron
from test_objective import (assert_close_vec, assert_gradient_matches_differences,
                            assert_hessp_matches_differences, assert_same_oracle, oracle_outputs,
                            point, random_problem, reference)

LOSSES = [
    pytest.param("psi_g", 2.0 ** -3, id="psi_g"),
    pytest.param("psi_m", 2.0 ** -3, id="psi_m"),
    pytest.param("squared_hinge", None, id="squared_hinge"),
    pytest.param("logistic", None, id="logistic"),
]


def row_weights(n, seed=0):
    """Weights in [0, 3) with some exact zeros."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.0, 3.0, n)
    c[rng.choice(n, size=n // 10, replace=False)] = 0.0
    return c


@pytest.mark.parametrize("bias", [0.0, 1.5])
@pytest.mark.parametrize("loss, sigma", LOSSES)
def test_weighted_oracle_against_dense_reference(loss, sigma, bias):
    X, y = random_problem(n=80, d=12, density=0.4, seed=31)
    c = row_weights(80, seed=1)
    lam = 0.05
    obj = SmoothSVMObjective(InMemorySource(X, y), loss, lam=lam, sigma=sigma,
                             fit_intercept=bool(bias), intercept_scaling=bias or 1.0,
                             sample_weight=c)
    w = point(obj, seed=4)
    f, grad, hess = reference(X, np.where(y > 0, 1.0, -1.0), loss, sigma, lam, bias, w,
                              weights=c)
    state = obj.evaluate(w)
    assert state.f == pytest.approx(f, rel=1e-12)
    assert obj.value(w) == pytest.approx(f, rel=1e-12)
    assert_close_vec(state.grad, grad, 1e-12)
    s = np.random.default_rng(5).normal(size=obj.n_variables)
    assert_close_vec(obj.hessp(state, s), hess @ s, 1e-12)
    assert_close_vec(obj.hess_diag(state), np.diag(hess), 1e-12)
    assert np.all(state.curvature[c == 0] == 0)  # weight 0: the row never enters Hv


@pytest.mark.parametrize("loss, sigma", LOSSES)
def test_weighted_derivatives_against_finite_differences(loss, sigma):
    X, y = random_problem(seed=32)
    c = row_weights(X.shape[0], seed=2)
    obj = SmoothSVMObjective(InMemorySource(X, y), loss, lam=1e-2, sigma=sigma,
                             fit_intercept=True, intercept_scaling=2.0, sample_weight=c)
    w = point(obj, seed=6)
    rng = np.random.default_rng(9)
    assert_gradient_matches_differences(obj, w, rng)
    assert_hessp_matches_differences(obj, w, rng)
    # the line search's O(n) values use the same weights
    state = obj.evaluate(w)
    trial = obj.evaluate(w + 0.3 * rng.normal(size=obj.n_variables))
    for alpha in (0.0, 0.4, 1.0):
        assert obj.value_on_segment(state, trial, alpha) == pytest.approx(
            obj.value(state.w + alpha * (trial.w - state.w)), rel=1e-12)


@pytest.mark.parametrize("loss, sigma", LOSSES)
def test_integer_weights_equal_duplicated_rows(loss, sigma):
    """Weight 2 = the row twice, weight 0 = the row absent; the 1/n of the duplicated data
    (n' rows) is matched by scaling the weights by n / n'."""
    X, y = random_problem(n=120, seed=33)
    counts = np.random.default_rng(3).integers(0, 3, X.shape[0])
    repeat = np.repeat(np.arange(X.shape[0]), counts)
    n, n_dup = X.shape[0], len(repeat)
    kw = dict(lam=1e-2, sigma=sigma, fit_intercept=True)
    weighted = SmoothSVMObjective(InMemorySource(X, y), loss,
                                  sample_weight=counts * n / n_dup, **kw)
    duplicated = SmoothSVMObjective(InMemorySource(X[repeat], y[repeat]), loss, **kw)
    w = point(weighted, seed=8)
    s = np.random.default_rng(10).normal(size=weighted.n_variables)
    assert_same_oracle(oracle_outputs(weighted, w, s), oracle_outputs(duplicated, w, s),
                       rtol=1e-11)


def test_weighted_blocks_threads_and_store_agree(tmp_path):
    X, y = load_shared("a9a", n_rows=3000)
    c = row_weights(X.shape[0], seed=4)
    kw = dict(lam=1e-4, sigma=2.0 ** -4, fit_intercept=True, sample_weight=c)
    whole = SmoothSVMObjective(InMemorySource(X, y), "psi_g", n_threads=1, **kw)
    w = point(whole, scale=0.3)
    s = np.random.default_rng(12).normal(size=whole.n_variables)
    expected = oracle_outputs(whole, w, s)
    cut = SmoothSVMObjective(InMemorySource(X, y, block_nnz=3001), "psi_g", n_threads=2, **kw)
    assert cut.source.n_blocks > 5
    assert_same_oracle(oracle_outputs(cut, w, s), expected)
    path = write_store(tmp_path / "a9a.h5", InMemorySource(X, y, block_rows=333))
    with Store(path) as store:
        on_disk = SmoothSVMObjective(store, "psi_g", **kw)
        assert_same_oracle(oracle_outputs(on_disk, w, s), expected)
        assert on_disk.value(w) == pytest.approx(expected[0], rel=1e-12)


@pytest.mark.parametrize("bad, match", [
    (np.ones(7), "shape"),
    (-np.ones(120), "sample_weight\\[0\\]"),
    (np.r_[np.ones(119), np.nan], "sample_weight\\[119\\]"),
])
def test_bad_weights(bad, match):
    X, y = random_problem(n=120, seed=34)
    with pytest.raises(ValueError, match=match):
        SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2, sample_weight=bad)


@pytest.mark.parametrize("solver", ["sgd", "pegasos", "svrg", "saga", "sdca"])
def test_stochastic_solvers_refuse_weights_before_reading(solver):
    """They were refused at their first epoch: SVRG and SAGA after a pass and an
    evaluation, and with max_iter=0 a weighted model came back (found by a probe)."""
    from streamssvm import train_stream

    X, y = random_problem(n=120, seed=34)
    with pytest.raises(ValueError, match="the stochastic solvers take no row weights"):
        train_stream(X, y, loss="psi_g", solver=solver, max_iter=0,
                     sample_weight=row_weights(120), progress=False)


@pytest.mark.parametrize("solver", ["sgd", "pegasos", "svrg", "saga", "sdca"])
def test_stochastic_solvers_called_directly_refuse_a_weighted_objective_before_any_pass(solver):
    """The solver layer refuses them (its message derived from the solver records), before
    SAGA's and SVRG's step-size pass or the evaluation at the start."""
    from streamssvm.solvers import SOLVERS, registry

    X, y = random_problem(n=120, seed=34)
    objective = SmoothSVMObjective(InMemorySource(X, y), "psi_g", lam=1e-2,
                                   sample_weight=row_weights(120))
    with pytest.raises(ValueError) as info:
        SOLVERS[solver](objective, max_iter=1)
    assert str(info.value) == registry.no_row_weights()
    assert str(info.value).startswith("the stochastic solvers take no row weights")
    assert objective.passes == 0


@pytest.mark.parametrize("weights", [(1.0, 4.0), (0.3, 1.0)], ids=["w+4", "w-0.3"])
def test_class_weights_equal_liblinear(weights):
    """LIBLINEAR -s 2 -w-1 a -w1 b, against TRON on c_i = (a if y_i = -1 else b)."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = load_shared("a9a", n_rows=8000)
    lam, eps = 1e-4, 1e-5
    C = 1.0 / (lam * X.shape[0])
    w_neg, w_pos = weights
    model = liblinear.train(liblinear.problem(y, X), liblinear.parameter(
        f"-s 2 -c {C!r} -e {eps} -B -1 -q -w-1 {w_neg!r} -w1 {w_pos!r}"))
    w_lib = np.array(model.get_decfun()[0])
    if model.get_labels()[0] != 1:  # LIBLINEAR's first label is its positive class
        w_lib = -w_lib
    c = np.where(y > 0, w_pos, w_neg)
    objective = SmoothSVMObjective(InMemorySource(X, y), "squared_hinge", lam, sample_weight=c)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = tron(objective, tol=eps, liblinear_tol=True)
    f_lib = objective.value(w_lib)
    assert abs(result.f - f_lib) <= 1e-6 * f_lib
    # a9a's one-hot features make w itself poorly determined: compare predictions
    assert np.mean(np.sign(X @ result.w) == np.sign(X @ w_lib)) > 0.999
    # the weights matter: the unweighted optimum is elsewhere
    unweighted = SmoothSVMObjective(InMemorySource(X, y), "squared_hinge", lam)
    assert objective.value(tron(unweighted, tol=eps).w) > f_lib * (1 + 1e-3)
