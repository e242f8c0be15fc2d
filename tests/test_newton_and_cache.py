"""Line-search Newton against TRON, segment values from margins, the curved-row cache."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import load_shared

from streamssvm.data import InMemorySource, Store, write_store
from streamssvm.objective import SmoothSVMObjective
from streamssvm.solvers import HESSIAN_PRODUCTS, SOLVERS, newton, tron
from streamssvm.solvers.common import line_search


@pytest.fixture(scope="module")
def a9a():
    return load_shared("a9a", n_rows=8000, n_features=123)


@pytest.fixture(scope="module")
def a9a_store(a9a, tmp_path_factory):
    """The same rows as an HDF5 store of uneven blocks."""
    path = tmp_path_factory.mktemp("store") / "a9a.h5"
    return write_store(path, InMemorySource(*a9a, block_rows=777), value_dtype="float64")


@pytest.mark.parametrize("loss,sigma", [("squared_hinge", None), ("logistic", None),
                                        ("psi_g", 2.0 ** -3), ("psi_m", 2.0 ** -6)])
def test_newton_reaches_trons_optimum(a9a, loss, sigma):
    source = InMemorySource(*a9a)
    results = [solver(SmoothSVMObjective(source, loss, 1e-4, sigma=sigma), tol=1e-6)
               for solver in (tron, newton)]
    assert all(r.converged for r in results)
    # lambda-strong convexity: 0 <= L(w) - L* <= ||grad L(w)||^2 / (2 lambda) for both
    assert abs(results[1].f - results[0].f) <= sum(r.grad_norm ** 2 for r in results) / 2e-4
    # lambda-strong convexity: ||w - w*|| <= ||grad L(w)|| / lambda for both
    assert np.linalg.norm(results[1].w - results[0].w) <= sum(r.grad_norm for r in results) / 1e-4


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("loss, lam, scale", [("squared_hinge", 0.1, 2.0), ("psi_g", 0.01, 0.5)])
@pytest.mark.parametrize("preconditioned", [False, True])
def test_newton_cg_on_the_curved_columns_takes_the_steps_of_cg_on_all(loss, lam, scale,
                                                                      preconditioned):
    """Newton's CG, stopped by the quadratic model's decrease, on a held wide state's
    system (the columns of the curved rows; the rest as multiples of -g there) takes the
    steps of CG on every variable and ends at its step, to rounding."""
    import scipy.sparse as sp

    from streamssvm.objective.system import NewtonSystem
    from streamssvm.solvers.common import PreconditionedCG, diag_preconditioner
    from streamssvm.solvers.newton import _newton_cg

    X = sp.random(150, 2000, density=0.004, random_state=3, format="csr")
    y = np.where(np.random.default_rng(4).random(150) < 0.5, -1.0, 1.0)
    objective = SmoothSVMObjective(InMemorySource(X, y), loss, lam,
                                   sigma=0.05 if loss == "psi_g" else None,
                                   fit_intercept=True, hold=True, n_threads=2)
    state = objective.evaluate(np.random.default_rng(5).normal(scale=scale, size=2001))
    cg = PreconditionedCG(objective.n_variables, 2, model=True)
    columns, full = objective.newton_system(state), NewtonSystem(objective, state)
    assert columns.rest_norm2 > 0 and len(columns.grad) < 0.7 * objective.n_variables
    (s, steps), (s_all, steps_all) = (
        _newton_cg(system, diag_preconditioner(system, preconditioned), 0.01, cg)
        for system in (columns, full))
    assert steps == steps_all > 2
    assert np.linalg.norm(s - s_all) <= 1e-10 * np.linalg.norm(s_all)


def test_newton_objective_decreases_and_backtracks(a9a):
    """psi_G at a tiny sigma makes full Newton steps fail: backtracking must take over and
    every accepted step must decrease the objective by Armijo's rule."""
    objective = SmoothSVMObjective(InMemorySource(*a9a), "psi_g", 1e-4, sigma=2.0 ** -12)
    result = newton(objective, tol=1e-6, max_iter=200)
    accepted = [h for h in result.history if h["accepted"]]
    values = [h["f"] for h in accepted]
    assert all(b < a for a, b in zip(values, values[1:]))
    assert any(h["step"] < 1.0 for h in accepted[1:])


def test_value_on_segment_equals_a_pass(a9a):
    objective = SmoothSVMObjective(InMemorySource(*a9a), "psi_g", 1e-4, sigma=2.0 ** -4,
                                   fit_intercept=True)
    rng = np.random.default_rng(0)
    w0, w1 = rng.standard_normal((2, objective.n_variables)) * 0.1
    s0, s1 = objective.evaluate(w0), objective.evaluate(w1)
    for alpha in (0.0, 0.3, 1.0, 1.7):
        expected = objective.value(w0 + alpha * (w1 - w0))
        assert objective.value_on_segment(s0, s1, alpha) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("loss,sigma", [("squared_hinge", None), ("psi_g", 2.0 ** -6)])
def test_curved_row_cache_gives_the_same_iterates_with_fewer_passes(a9a_store, loss, sigma):
    runs = {}
    for cache, budget in ((False, None), (True, None), (True, 0)):
        with Store(a9a_store) as store:
            # one thread: the same rows are summed in the same order with or without the
            # cache, so the iterates agree to the last bit (with two threads the rows are
            # split differently and CG amplifies the rounding on this ill-conditioned set).
            # For the same reason TRON solves rejected steps' regions again in every run
            # (reuse_cg=False): it keeps CG's path only when the products read the file,
            # and a step found from the path is the same only up to rounding.
            objective = SmoothSVMObjective(store, loss, 1e-4, sigma=sigma, cache_curved=cache,
                                           cache_bytes=budget, n_threads=1, hold=False)
            runs[cache, budget] = (tron(objective, tol=1e-6, reuse_cg=False),
                                   objective.cached_sweeps)
    plain, _ = runs[False, None]
    cached, sweeps = runs[True, None]
    streamed, streamed_sweeps = runs[True, 0]  # budget too small: falls back to passes
    np.testing.assert_allclose(cached.w, plain.w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(streamed.w, plain.w, rtol=1e-12, atol=1e-14)
    cg_steps = sum(h["cg_steps"] for h in plain.history)
    assert sweeps == cg_steps and streamed_sweeps == 0
    assert cached.passes == plain.passes - cg_steps
    assert streamed.passes == plain.passes


def test_subsampled_newton_samples_the_same_rows_with_or_without_the_copy(a9a, a9a_store):
    """A seed draws the same Hessian sample from held data, from a store whose curved rows
    were copied, and from one whose copy did not fit (it drew once a copied row there)."""
    runs, sweeps = [], []
    for options in (dict(hold=True), dict(hold=False), dict(hold=False, cache_bytes=0)):
        with Store(a9a_store) as store:
            objective = SmoothSVMObjective(store, "squared_hinge", 1e-4, n_threads=1,
                                           **options)
            runs.append(newton(objective, tol=1e-12, max_iter=3, hessian_sample=0.3, seed=1))
            sweeps.append(objective.cached_sweeps)
    assert sweeps[1] > 0 and sweeps[2] == 0  # the copy was used, then did not fit
    for run in runs[1:]:
        np.testing.assert_allclose(run.w, runs[0].w, rtol=1e-10, atol=1e-13)


def _tall(n, seed=3):
    """A tall source of ``n`` rows and two features, one nonzero a row: its vectors of one
    float64 a row (8 n bytes) dwarf everything else an evaluation makes."""
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix((np.ones(n), rng.integers(0, 2, n), np.arange(n + 1)), shape=(n, 2))
    return InMemorySource(X, np.where(rng.random(n) < 0.5, -1.0, 1.0))


def _traced_peak(call):
    """(call(), the peak of the memory numpy allocated during it beyond what was held before)."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        out = call()
        return out, tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_a_hessian_sample_makes_no_row_vector_but_its_curvature():
    """Out of core the rows may be millions and the memory capped: the sample's curvature is
    the only new vector of the rows' size (the draw and a mask beside it made subsampled
    Newton's peak the largest of its iterations)."""
    n = 400_000
    objective = SmoothSVMObjective(_tall(n), "squared_hinge", 1e-4, hold=True)
    state = objective.evaluate(np.zeros(2))
    sampled, peak = _traced_peak(lambda: objective.subsampled(state, 0.3,
                                                              np.random.default_rng(1)))
    assert peak < 1.25 * 8 * n, peak / (8 * n)
    keep = np.random.default_rng(1).random(n) < 0.3  # the rows one draw of n picks
    np.testing.assert_array_equal(sampled.curvature, np.where(keep, state.curvature / 0.3, 0.0))


def test_a_backtracking_line_search_holds_one_trial_point_at_a_time():
    """The rejected full step's margins and curvature are let go before the backtracked
    point is evaluated, and the segment's values need no vector of the rows: the search's
    peak is one evaluation's (5.1M rows under a 500 MB cap: subsampled Newton was killed
    with three points' vectors alive at once)."""
    n = 400_000
    objective = SmoothSVMObjective(_tall(n), "squared_hinge", 1e-4, hold=False,
                                   cache_curved=False)
    state = objective.evaluate(np.zeros(2))
    _, one = _traced_peak(lambda: objective.evaluate(np.ones(2)))
    direction = -1e4 * state.grad  # far too long: the full step is rejected
    (trial, step), peak = _traced_peak(lambda: line_search(objective, state, direction))
    assert 0 < step < 1
    assert peak < one + 0.5 * 8 * n, (peak / (8 * n), one / (8 * n))
    expected = objective.evaluate(state.w + step * direction)
    assert trial.f == expected.f


class _Recording(SmoothSVMObjective):
    """The objective, keeping every state its evaluations return (nothing else changed)."""

    def evaluate(self, w, *args, **kwargs):
        state = super().evaluate(w, *args, **kwargs)
        self.states.append(state)
        return state


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_only_solvers_that_make_hessian_products_gather_the_curved_rows(a9a_store, name):
    """Out of core the copy of the curved rows is for Hessian products: the other solvers'
    evaluations gather none (on 5.1M rows under a 500 MB cap SDCA's gathered up to 90 MB
    and it was killed at the cap), and compute the same values as with the copy."""
    with Store(a9a_store) as store:
        objective = _Recording(store, "psi_g", 1e-3, sigma=0.125, hold=False)
        objective.states = []
        SOLVERS[name](objective, max_iter=2)
        states = objective.states
        assert states
        gathered = [s.curved_rows is not None for s in states]
        assert any(gathered) if name in HESSIAN_PRODUCTS else not any(gathered)
        plain = SmoothSVMObjective(store, "psi_g", 1e-3, sigma=0.125, hold=False)
        again = plain.evaluate(states[-1].w, curved=not gathered[-1])
        assert again.f == states[-1].f and np.array_equal(again.grad, states[-1].grad)
        np.testing.assert_array_equal(again.curvature, states[-1].curvature)


def test_in_memory_rows_gather_their_curved_rows_unless_told_not_to():
    """An in-memory source not held copies its curved rows when at most half are curved
    (no pass: the data is in memory), for Hessian products only."""
    rng = np.random.default_rng(2)
    X = sp.random(2000, 30, density=0.2, format="csr", random_state=1)
    w = 50 * rng.standard_normal(30)
    y = np.where(X @ w >= 0, 1.0, -1.0)
    objective = SmoothSVMObjective(InMemorySource(X, y), "squared_hinge", 1e-3, hold=False)
    state = objective.evaluate(w)
    assert 0 < np.count_nonzero(state.curvature) <= len(y) / 2
    assert state.curved_rows is not None
    assert sum(len(part[3]) for part in state.curved_rows) == np.count_nonzero(state.curvature)
    lean = objective.evaluate(w, curved=False)
    assert lean.curved_rows is None
    assert lean.f == state.f and np.array_equal(lean.grad, state.grad)


def test_curved_rows_are_the_rows_with_curvature(a9a):
    """squared hinge: exactly the rows with margin < 1 are kept."""
    objective = SmoothSVMObjective(InMemorySource(*a9a, block_rows=1000), "squared_hinge", 1e-4,
                                   cache_curved=True, hold=False)
    w = np.random.default_rng(1).standard_normal(objective.n_variables) * 0.3
    state = objective.evaluate(w)
    kept = sum(len(part[3]) for part in state.curved_rows)
    assert kept == np.count_nonzero(state.margins < 1) > 0
    assert all(np.all(part[3] == 2.0) for part in state.curved_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hv = objective.hessp(state, np.ones(objective.n_variables))
    objective.cache_curved = False
    reference = objective.hessp(objective.evaluate(w), np.ones(objective.n_variables))
    np.testing.assert_allclose(hv, reference, rtol=1e-12)


def test_user_built_family_loss_trains_like_the_named_one(a9a):
    """A psi_G rebuilt from the normal CDF by family_loss runs in the same kernels."""
    from streamssvm.losses import family_loss

    source = InMemorySource(*a9a)
    built = family_loss("ndtr(v)", sigma=2.0 ** -3, theta=1.0)
    results = [tron(SmoothSVMObjective(source, loss, 1e-4, sigma=sigma), tol=1e-6)
               for loss, sigma in ((built, None), ("psi_g", 2.0 ** -3))]
    assert all(r.converged for r in results)
    assert results[0].f == pytest.approx(results[1].f, rel=1e-9)


def test_sigma_path_reaches_the_same_optimum(a9a):
    """Continuation through larger sigmas ends at the optimum of the last one."""
    from streamssvm import train_stream

    X, y = a9a
    direct = train_stream(X, y, loss="psi_g", sigma=2.0 ** -6, lam=1e-4, tol=1e-6, progress=False)
    path = train_stream(X, y, loss="psi_g", sigma=2.0 ** -6, sigma_path=(2.0 ** -2, 2.0 ** -4),
                        lam=1e-4, tol=1e-6, progress=False)
    assert path.params["converged"] and direct.params["converged"]
    grads = path.params["grad_norm"] ** 2 + direct.params["grad_norm"] ** 2
    assert abs(path.params["objective"] - direct.params["objective"]) <= grads / 2e-4
    sigmas = [h["sigma"] for h in path.history]
    assert sigmas[0] == 2.0 ** -2 and sigmas[-1] == 2.0 ** -6
    assert sigmas == sorted(sigmas, reverse=True)
    passes = [h["passes"] for h in path.history]
    assert passes == sorted(passes) and passes[-1] == path.params["passes"]
    # the iterations of all stages, as the passes (n_iter was the last stage's alone)
    stages = [max(h["iteration"] for h in path.history if h["sigma"] == s) for s in set(sigmas)]
    assert path.params["n_iter"] == sum(stages) > max(stages)


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_max_seconds_is_the_budget_of_the_whole_sigma_path(a9a):
    """max_seconds was each stage's budget: a sigma path of three stages ran up to three
    times as long as asked, and ended "converged" after its first stage had run out of
    time. The stages now share it: a stage starts with what the ones before left."""
    from streamssvm import train_stream

    X, y = a9a
    budget = 0.3
    model = train_stream(X, y, loss="psi_g", sigma=2.0 ** -6, sigma_path=(2.0 ** -2, 2.0 ** -4),
                         lam=1e-4, solver="gd", tol=1e-12, max_iter=10 ** 6,
                         max_seconds=budget, progress=False)
    # gd does not reach tol 1e-12 in the budget: the first stage spends it, the others
    # evaluate their start point and stop
    later = [h["iteration"] for h in model.history if h["sigma"] != 2.0 ** -2]
    assert later == [0, 0]
    assert model.params["message"] == "max_seconds reached" and not model.params["converged"]
    assert model.params["max_seconds"] == budget

@pytest.mark.parametrize("loss,solver_type", [("squared_hinge", 2), ("logistic", 0)])
def test_newton_takes_liblinears_steps(a9a, capfd, loss, solver_type):
    """The same algorithm as LIBLINEAR's Newton (-s 2 / -s 0, since 2.40): the same CG
    steps per iteration and Armijo steps, the same objective (LIBLINEAR's f is ours /
    lambda). LIBLINEAR states its CG tolerance and preconditioner on the objective scaled
    by 1 / lambda; taken literally on ours they would take other steps."""
    from liblinear.liblinearutil import parameter, problem, train

    X, y = a9a
    lam = 1e-4
    capfd.readouterr()
    train(problem(y, X), parameter(f"-s {solver_type} -c {1 / (lam * X.shape[0])} -e 0.01"))
    printed = capfd.readouterr().out
    theirs = [(int(line.split("CG")[1].split()[0]), float(line.split("step_size")[1]),
               float(line.split()[3]) * lam)
              for line in printed.splitlines() if line.startswith("iter")]
    assert len(theirs) >= 3
    result = newton(SmoothSVMObjective(InMemorySource(X, y), loss, lam), tol=0.01,
                    liblinear_tol=True)
    ours = [(h["cg_steps"], h["step"], h["f"]) for h in result.history[1:]]
    assert [o[:2] for o in ours] == [t[:2] for t in theirs]
    np.testing.assert_allclose([o[2] for o in ours], [t[2] for t in theirs], rtol=1e-3)
