"""TRON on the smooth SVM objective, against reference solvers and for its own contract.

Scale conversion (written out once): LIBLINEAR minimises 1/2 ||w||^2 + C sum_i loss_i; divided
by C n this is lam/2 ||w||^2 + (1/n) sum_i loss_i with lam = 1 / (C n), i.e. C = 1 / (lam n).
LIBLINEAR's stopping rule for -s 0 / -s 2 is ||g|| <= eps max(min(#pos, #neg), 1) / n ||g(0)||,
scale-free, so ``liblinear_tol=True`` with the same eps is the same rule.
"""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import ndtr

from shared_data import load_shared as load
from streamssvm import ConvergenceWarning, Model, kernels
from streamssvm.data import InMemorySource, Store, write_store
from streamssvm.objective import SmoothSVMObjective
from streamssvm.solvers import tron
from streamssvm.solvers.common import backtracking, stopping_threshold

HISTORY_FIELDS = {"iteration", "f", "grad_norm", "cg_steps", "delta", "passes", "seconds",
                  "accepted"}



def solve(objective, **options):
    """TRON, failing the test on a ConvergenceWarning unless the caller expects one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return tron(objective, **options)


# ---------------------------------------------------------------- against LIBLINEAR

# eps = 1e-5, not LIBLINEAR's default 0.01: both solvers stop at ||g|| <= eps' ||g(0)||, which
# bounds L(w) - L* only to about ||g||^2 / (2 lam). At eps = 0.01 the two stopping points
# differ by up to 9e-4 relative in L (measured: a9a logistic 7e-4, w8a logistic 9e-4, a9a
# squared hinge 6e-4 at lam = 1e-5); at 1e-4 still up to 6e-6 (a9a squared hinge); at 1e-5
# at most 1e-7, so both are within 1e-6 of L* and of each other.
LIBLINEAR_EPS = 1e-5
LIBLINEAR_CASES = [
    pytest.param(data, loss, lam, id=f"{data}-{loss}-lam{lam:g}")
    for data, lams in (("a9a", (1e-5, 1e-3)), ("w8a", (1e-5,)), ("ijcnn1", (1e-5,)))
    for lam in lams
    for loss in ("squared_hinge", "logistic")
]


@pytest.mark.parametrize("data, loss, lam", LIBLINEAR_CASES)
def test_objective_equals_liblinear(data, loss, lam):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = load(data)
    n = X.shape[0]
    C = 1.0 / (lam * n)
    solver_type = {"squared_hinge": 2, "logistic": 0}[loss]
    options = f"-s {solver_type} -c {C!r} -e {LIBLINEAR_EPS} -B -1 -q"
    model = liblinear.train(liblinear.problem(y, X), liblinear.parameter(options))
    w_lib = np.array(model.get_decfun()[0])
    if model.get_labels()[0] != 1:  # LIBLINEAR's first label is its positive class
        w_lib = -w_lib

    objective = SmoothSVMObjective(InMemorySource(X, y), loss, lam)
    result = solve(objective, tol=LIBLINEAR_EPS, liblinear_tol=True)
    assert result.converged
    f_lib = objective.value(w_lib)
    gap = (result.f - f_lib) / f_lib
    print(f"\n{data} {loss} lam={lam:g}: ours {result.f:.12g} LIBLINEAR {f_lib:.12g} "
          f"relative gap {gap:+.2e} ({result.n_iter} iterations, {result.passes} passes)")
    assert abs(gap) <= 1e-6
    # same minimiser: both points predict the training labels alike
    agree = np.mean(np.sign(X @ result.w) == np.sign(X @ w_lib))
    assert agree > 0.999


# ---------------------------------------------------------------- against scipy L-BFGS

def numpy_objective(X, y, loss, sigma, lam, bias):
    """L and its gradient written independently of the library (scipy's ndtr, numpy)."""
    Z = sp.hstack([X, np.full((X.shape[0], 1), bias)], format="csr") if bias else sp.csr_matrix(X)
    ypm = np.where(y > 0, 1.0, -1.0)
    n, dim = Z.shape
    reg = np.ones(dim)
    if bias:
        reg[-1] = 0.0

    def fun(w):
        t = 1.0 - ypm * (Z @ w)
        if loss == "psi_g":
            v = t / sigma
            cdf = ndtr(v)
            psi = t * cdf + sigma * np.exp(-0.5 * v * v) / np.sqrt(2.0 * np.pi)
            dpsi = -cdf
        else:  # psi_m: Phi_M(v) t + phi_M(v) sigma = (t + sqrt(t^2 + sigma^2)) / 2
            root = np.hypot(t, sigma)
            psi = 0.5 * (t + root)
            dpsi = -0.5 * (1.0 + t / root)
        f = 0.5 * lam * np.sum(reg * w * w) + psi.mean()
        return f, lam * reg * w + Z.T @ (dpsi * ypm) / n

    return fun


LBFGS_CASES = [
    pytest.param("a9a", 6000, loss, sigma, 0.0, id=f"a9a-{loss}-2^{int(np.log2(sigma))}")
    for loss in ("psi_g", "psi_m") for sigma in (2.0 ** -3, 2.0 ** -6)
] + [
    pytest.param("ijcnn1", 6000, "psi_m", 2.0 ** -6, 1.0, id="ijcnn1-psi_m-2^-6-intercept"),
    pytest.param("w8a", 4000, "psi_g", 2.0 ** -3, 1.0, id="w8a-psi_g-2^-3-intercept"),
]


@pytest.mark.parametrize("data, n_rows, loss, sigma, bias", LBFGS_CASES)
def test_smooth_hinges_equal_tight_lbfgs(data, n_rows, loss, sigma, bias):
    X, y = load(data, n_rows)
    lam = 1e-4
    fun = numpy_objective(X, y, loss, sigma, lam, bias)
    objective = SmoothSVMObjective(InMemorySource(X, y), loss, lam, sigma=sigma,
                                   fit_intercept=bool(bias), intercept_scaling=bias or 1.0)
    result = solve(objective, tol=1e-7)
    assert result.converged
    reference = minimize(fun, np.zeros(objective.n_variables), jac=True, method="L-BFGS-B",
                         options=dict(maxiter=50000, maxfun=100000, maxcor=20, gtol=1e-10,
                                      ftol=1e-15))
    f_ref, g_ref = fun(reference.x)
    assert np.linalg.norm(g_ref) <= 1e-6, reference.message  # the reference is a minimiser
    # the two implementations agree on L at the same points ...
    assert objective.value(reference.x) == pytest.approx(f_ref, rel=1e-12)
    assert fun(result.w)[0] == pytest.approx(result.f, rel=1e-12)
    # ... and the minima agree
    gap = (result.f - f_ref) / f_ref
    print(f"\n{data} {loss} sigma={sigma:g}: TRON {result.f:.14g} L-BFGS {f_ref:.14g} "
          f"relative gap {gap:+.1e} ({result.n_iter} TRON iterations, {reference.nit} L-BFGS)")
    assert abs(gap) <= 1e-6


# ---------------------------------------------------------------- the solver's contract

@pytest.fixture(scope="module")
def small_problem():
    return load("a9a", 5000)


def make_objective(problem, loss="psi_g", sigma=2.0 ** -3, lam=1e-4, **kw):
    X, y = problem
    return SmoothSVMObjective(InMemorySource(X, y), loss, lam, sigma=sigma, **kw)


def accepted(history):
    return [h for h in history if h["accepted"]]


@pytest.mark.parametrize("loss, sigma", [("psi_g", 2.0 ** -3), ("logistic", None)])
def test_quadratic_forcing_converges_superlinearly(small_problem, loss, sigma):
    objective = make_objective(small_problem, loss, sigma)
    result = solve(objective, tol=1e-9, forcing="quadratic")
    assert result.converged
    g = np.array([h["grad_norm"] for h in accepted(result.history)])
    ratios = g[1:] / g[:-1]
    # superlinear: the contraction factor itself shrinks over the last iterations ...
    assert np.all(np.diff(ratios[-3:]) < 0), ratios
    # ... far below what the constant forcing term xi = 0.1 gives (a linear rate near xi)
    assert ratios[-1] <= 1e-2, ratios
    constant = make_objective(small_problem, loss, sigma)
    linear = tron(constant, tol=1e-6, forcing="constant")
    g_lin = np.array([h["grad_norm"] for h in accepted(linear.history)])
    # the same optimum: L is lam-strongly convex, so f(w) - f* <= ||grad f(w)||^2 / (2 lam)
    assert abs(result.f - linear.f) <= (result.grad_norm ** 2 + linear.grad_norm ** 2) / 2e-4
    assert np.min(g_lin[-3:][1:] / g_lin[-3:][:-1]) > ratios[-1]


def test_preconditioner_reaches_the_same_optimum(small_problem):
    plain = solve(make_objective(small_problem, sigma=2.0 ** -6), tol=1e-8)
    # streamed Hessian products (no in-memory copy of the curved rows): every product is a pass
    objective = make_objective(small_problem, sigma=2.0 ** -6, cache_curved=False, hold=False)
    pre = solve(objective, tol=1e-8, preconditioner=True)
    assert plain.converged and pre.converged
    assert pre.f == pytest.approx(plain.f, rel=1e-10)
    # L is lam-strongly convex: each point is within ||grad|| / lam of the minimiser
    assert np.linalg.norm(pre.w - plain.w) <= (pre.grad_norm + plain.grad_norm) / 1e-4
    # the diagonal costs one pass at each accepted point but the last, where the run stops
    steps = sum(h["cg_steps"] for h in pre.history[1:])
    trials = len(pre.history) - 1
    assert pre.passes == 1 + steps + trials + pre.n_iter


@pytest.mark.parametrize("loss, sigma, lam", [("squared_hinge", None, 1e-5),
                                             ("psi_g", 2.0 ** -6, 1e-4)])
def test_backtracking_takes_the_rejected_steps(small_problem, loss, sigma, lam):
    paper = solve(make_objective(small_problem, loss, sigma, lam), tol=1e-6)
    assert not all(h["accepted"] for h in paper.history)  # the case arises here
    # streamed, so that every Hessian product is a pass
    objective = make_objective(small_problem, loss, sigma, lam, cache_curved=False, hold=False)
    result = solve(objective, tol=1e-6, backtrack=True)
    assert result.converged and all(h["accepted"] for h in result.history)
    steps = [h["step"] for h in result.history[1:]]
    assert min(steps) < 1 and all(np.log2(t) == round(np.log2(t)) for t in steps)
    # a backtracked iteration costs one more pass
    for before, after in zip(result.history, result.history[1:]):
        extra = after["step"] < 1
        assert after["passes"] - before["passes"] == after["cg_steps"] + 1 + extra
    assert result.f == pytest.approx(paper.f, rel=1e-8)
    assert (sum(h["cg_steps"] for h in result.history)
            < sum(h["cg_steps"] for h in paper.history))


def test_backtracking_step_is_the_longest_armijo_halving(small_problem):
    objective = make_objective(small_problem, "squared_hinge", None, 1e-5)
    state = objective.evaluate(np.zeros(objective.n_variables))
    for scale in (10.0, 1e3, 1e5):  # steepest descent steps too long for the full step
        direction = -scale * state.grad
        trial = objective.evaluate(state.w + direction)
        gd = float(state.grad @ direction)
        moved, step = backtracking(objective, state, direction, trial, gd)
        assert 0 < step < 1
        np.testing.assert_allclose(moved.w, state.w + step * direction, rtol=1e-15)
        assert moved.f == pytest.approx(objective.value(state.w + step * direction), rel=1e-13)
        assert moved.f <= state.f + 0.01 * step * gd
        doubled = objective.value(state.w + 2 * step * direction)
        assert doubled > state.f + 0.01 * 2 * step * gd


@pytest.mark.parametrize("loss, sigma, lam", [("squared_hinge", None, 1e-5),
                                             ("psi_g", 2.0 ** -6, 1e-4)])
def test_kept_cg_path_takes_the_steps_of_solving_again(small_problem, loss, sigma, lam,
                                                      tmp_path):
    """After a rejected step, the step within the smaller region comes from the kept CG
    path: the paper's iterates, without the Hessian products of solving again. (Rounding
    differs, and over a long run of an ill-conditioned problem it grows: 12 iterations.)"""
    write_store(tmp_path / "a9a.h5", InMemorySource(*small_problem))
    runs = {}
    for reuse in (False, True):
        # streamed from the file: each Hessian product is a pass
        with Store(tmp_path / "a9a.h5") as store, warnings.catch_warnings():
            objective = SmoothSVMObjective(store, loss, lam, sigma=sigma, cache_curved=False,
                                           hold=False)
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs[reuse] = tron(objective, tol=1e-6, max_iter=12, reuse_cg=reuse)
    again, kept = runs[False].history, runs[True].history
    assert [h["accepted"] for h in kept] == [h["accepted"] for h in again]
    json.dumps(kept)  # as a model or checkpoint saves it
    retries = [i for i in range(1, len(again)) if not again[i - 1]["accepted"]]
    assert retries  # the case arises here
    for i, (a, k) in enumerate(zip(again, kept)):
        assert k["f"] == pytest.approx(a["f"], rel=1e-12)
        assert k["delta"] == pytest.approx(a["delta"], rel=1e-9)
        assert k["cg_steps"] == (0 if i in retries else a["cg_steps"])
    assert all(again[i]["cg_steps"] > 0 for i in retries)
    saved = sum(again[i]["cg_steps"] for i in retries)
    assert runs[True].passes == runs[False].passes - saved
    np.testing.assert_allclose(runs[True].w, runs[False].w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("preconditioned", [False, True])
@pytest.mark.parametrize("capacity", [1, 3, 1000])
def test_kept_cg_path_step_equals_a_new_solve(small_problem, preconditioned, capacity):
    """_CGPath.step_within gives, for each smaller radius, the step and model value of
    a new Steihaug CG solve, or None when it kept too few directions to know it."""
    from streamssvm.solvers.common import PreconditionedCG
    from streamssvm.solvers.tron import _CGPath, _trust_region_cg

    objective = make_objective(small_problem, "squared_hinge", None, 1e-5)
    state = objective.evaluate(np.zeros(objective.n_variables))
    precond = (1 + np.random.default_rng(1).uniform(0, 3, objective.n_variables)
               if preconditioned else None)
    path = _CGPath(objective.n_variables, capacity * 8 * objective.n_variables)
    cg, fresh_cg = (PreconditionedCG(objective.n_variables, 2) for _ in range(2))
    system = objective.newton_system(state)
    s, _, _, steps, _ = _trust_region_cg(system, precond, 1e6, 1e-8, cg, path)
    assert path.state is state and steps > 8
    kept = len(path.directions)
    assert kept == min(capacity, steps) - (capacity < steps)
    norm = np.sqrt(float(s @ (s if precond is None else precond * s)))
    for radius in norm * np.array([0.9, 0.5, 0.1, 1e-3]):
        fresh, sr, _, _, on_boundary = _trust_region_cg(system, precond, radius, 1e-8,
                                                        fresh_cg)
        assert on_boundary
        found = path.step_within(radius, precond)
        if found is None:  # the step that leaves the region was not kept
            assert not kept or radius * radius >= path.steps[-1][-1]
            continue
        np.testing.assert_allclose(found[0], fresh, rtol=1e-9, atol=1e-12 * np.abs(fresh).max())
        assert found[1] == pytest.approx(sr, rel=1e-9)
    assert capacity < steps or path.step_within(norm * 0.5, precond) is not None


@pytest.mark.parametrize("preconditioned", [False, True])
@pytest.mark.parametrize("leaves_at", [None, 3, 5])
def test_cg_on_the_curved_columns_takes_the_steps_of_cg_on_all(preconditioned, leaves_at):
    """Steihaug CG on a held wide state's Newton system (the columns of the curved rows,
    the others carried as multiples of -g there) gives the step, s.r, ||s||_M^2, the
    scalars of the last move and the CG steps of CG on every variable, to rounding:
    inside the region, and on its boundary when its radius is between the lengths of the
    inner solve's iterates ``leaves_at`` - 1 and ``leaves_at``."""
    from streamssvm.objective.system import NewtonSystem
    from streamssvm.solvers.common import PreconditionedCG, diag_preconditioner
    from streamssvm.solvers.tron import _CGPath, _trust_region_cg

    X = sp.random(150, 2000, density=0.004, random_state=3, format="csr")
    y = np.where(np.random.default_rng(4).random(150) < 0.5, -1.0, 1.0)
    objective = SmoothSVMObjective(InMemorySource(X, y), "psi_g", 1e-2, sigma=0.05,
                                   fit_intercept=True, hold=True, n_threads=2)
    w = np.random.default_rng(5).normal(scale=0.5, size=objective.n_variables)
    state = objective.evaluate(w)
    columns, full = objective.newton_system(state), NewtonSystem(objective, state)
    assert columns.rest_norm2 > 0 and len(columns.grad) < 0.7 * objective.n_variables
    cg = PreconditionedCG(objective.n_variables, 2)
    precond = {system: diag_preconditioner(system, preconditioned) for system in (columns, full)}
    radius = 1e6
    if leaves_at is not None:
        path = _CGPath(objective.n_variables, 1 << 30)
        _trust_region_cg(full, precond[full], radius, 1e-3, cg, path)
        lengths = [step[-1] for step in path.steps]  # ||s_j||_M^2 after step j
        radius = np.sqrt((lengths[leaves_at - 2] + lengths[leaves_at - 1]) / 2)
    results, last_move = [], []  # and s.H d, d.r before the last move (for a kept path)
    for system in (columns, full):
        results.append(_trust_region_cg(system, precond[system], radius, 1e-3, cg))
        last_move.append(np.array([cg.shd, cg.dr]))
    (s, sr, sms, steps, boundary), (s_all, sr_all, sms_all, steps_all, boundary_all) = results
    assert steps == steps_all == (leaves_at or steps) > 2
    assert boundary == boundary_all == (leaves_at is not None)
    assert np.linalg.norm(s - s_all) <= 1e-10 * np.linalg.norm(s_all)
    # s.r enters the model's decrease -(g.s - s.r) / 2: next to g.s, which is not ~0
    scale = abs(state.grad @ s_all)
    assert abs(sr - sr_all) <= 1e-10 * scale
    np.testing.assert_allclose(*last_move, rtol=1e-10, atol=1e-10 * scale)
    assert sms == pytest.approx(sms_all, rel=1e-10)


def test_cg_on_the_curved_columns_at_huge_feature_values():
    """Held wide data with feature values of 1e100 (gradients near 1e98, steps near
    1e-162): preconditioned TRON on the curved rows' columns converges to the streamed
    run's objective. (The rest's terms were a multiple squared times ||g_rest||^2, whose
    square underflowed to 0: a radius of 0, then NaN, reported as an overflow.)"""
    rng = np.random.default_rng(1)
    X = sp.random(40, 300, density=0.05, random_state=1, format="csr")
    X.data = rng.standard_normal(X.nnz) * 1e100
    X = (X @ sp.diags(np.repeat([1.0, 0.0], 150))).tocsr()  # half the columns empty
    X.eliminate_zeros()
    y = np.where(rng.standard_normal(40) > 0, 1.0, -1.0)
    runs = {hold: tron(SmoothSVMObjective(InMemorySource(X, y), "psi_g", 1e-3, sigma=0.125,
                                          hold=hold), preconditioner=True, max_iter=50)
            for hold in (True, False)}
    assert runs[True].converged and runs[False].converged
    assert runs[True].f == pytest.approx(runs[False].f, rel=1e-9)


def test_cli_passes_backtrack_on(small_problem, tmp_path):
    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*small_problem))
    out = subprocess.run([sys.executable, "-m", "streamssvm", "train", str(store), "-o",
                          str(model), "--loss", "squared_hinge", "--lam", "1e-5", "--tol", "1e-6",
                          "--backtrack", "--quiet"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    trained = Model.load(model)
    assert trained.params["backtrack"] is True
    assert min(h["step"] for h in trained.history[1:]) < 1


@pytest.mark.parametrize("n_parts", [1, 2, 3])
@pytest.mark.parametrize("preconditioned", [False, True])
@pytest.mark.parametrize("model", [False, True])
def test_fused_cg_sweeps_equal_numpy(n_parts, preconditioned, model):
    """CG's fused sweeps start a solve (s = 0, r = -g, z = M^-1 r, d = z: the numpy
    expressions to the bit, over whatever the arrays held), move s and r, make z = M^-1 r
    and d = z + beta d (in place or not), and return s.M s, z.r, s.r and s.g (0 without g)
    after the move and s.Hd and d.r before it, as the numpy expressions do; and make a
    trial point w + s with g.s."""
    rng = np.random.default_rng(40)
    d, hd, s, r, g = rng.standard_normal((5, 1001))
    precond = rng.uniform(0.5, 2.0, 1001) if preconditioned else None
    z = np.empty(1001) if preconditioned else r
    z[:] = np.nan
    kernels.vector.cg_start(g, precond, s, r, z, d, n_parts)
    np.testing.assert_array_equal(s, np.zeros(1001))
    np.testing.assert_array_equal(r, -g)
    np.testing.assert_array_equal(z, -g / precond if preconditioned else -g)
    np.testing.assert_array_equal(d, z)
    d, s, r = rng.standard_normal((3, 1001))
    z = np.empty(1001) if preconditioned else r
    s_new, r_new = s + 0.3 * d, r - 0.3 * hd
    z_new = r_new / precond if preconditioned else r_new
    m = precond if preconditioned else 1.0
    sums = kernels.vector.cg_move(0.3, d, hd, s, r, precond, z, g if model else None, n_parts)
    np.testing.assert_allclose(s, s_new, rtol=1e-15)
    np.testing.assert_allclose(r, r_new, rtol=1e-15)
    np.testing.assert_allclose(z, z_new, rtol=1e-15)
    expected = [s_new @ (m * s_new), z_new @ r_new, s_new @ r_new, s_new @ g if model else 0.0,
                (s_new - 0.3 * d) @ hd, d @ (r_new + 0.3 * hd)]
    np.testing.assert_allclose(sums, expected, rtol=1e-12)
    d_old, out = d.copy(), np.empty_like(d)
    kernels.vector.cg_direction(0.7, z, d, out, n_parts)  # into another array ...
    np.testing.assert_array_equal(d, d_old)
    kernels.vector.cg_direction(0.7, z, d, d, n_parts)  # ... and in place
    np.testing.assert_allclose(d, z_new + 0.7 * d_old, rtol=1e-15)
    np.testing.assert_array_equal(out, d)
    trial = np.empty_like(s)  # a trial point w + s and g.s
    assert kernels.vector.moved(r, s, g, trial, n_parts) == pytest.approx(g @ s, rel=1e-12)
    np.testing.assert_array_equal(trial, r + s)


def test_absolute_tolerance_rule(small_problem):
    objective = make_objective(small_problem)
    result = solve(objective, tol=0.0, abs_tol=1e-3)
    g = [h["grad_norm"] for h in accepted(result.history)]
    assert result.converged and g[-1] <= 1e-3
    assert all(x > 1e-3 for x in g[:-1])  # it stopped at the first point meeting the rule
    # the rule is max(tol ||g0||, abs_tol): a loose relative tol wins over a tiny abs_tol
    loose = solve(make_objective(small_problem), tol=0.5, abs_tol=1e-12)
    g = [h["grad_norm"] for h in accepted(loose.history)]
    assert loose.converged and g[-1] <= 0.5 * g[0] and all(x > 0.5 * g[0] for x in g[:-1])


def test_liblinear_tolerance_scaling(small_problem):
    objective = make_objective(small_problem)
    n_neg, n_pos = objective.source.label_counts()
    assert n_neg + n_pos == 5000 and 0 < n_pos < n_neg
    assert stopping_threshold(objective, 2.0, 0.01) == pytest.approx(0.02)
    assert stopping_threshold(objective, 2.0, 0.01, liblinear_tol=True) == pytest.approx(
        0.02 * n_pos / 5000)
    assert stopping_threshold(objective, 2.0, 0.01, abs_tol=0.5) == 0.5
    with pytest.raises(ValueError):
        stopping_threshold(objective, 2.0, -0.01)
    with pytest.raises(ValueError):
        stopping_threshold(objective, 2.0, 0.01, abs_tol=-1.0)


def test_max_iter_warns_unconverged(small_problem):
    objective = make_objective(small_problem)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        result = tron(objective, tol=1e-8, max_iter=1)
    assert not result.converged and result.n_iter == 1
    assert result.message == "max_iter reached"


def test_history_and_pass_accounting(small_problem):
    objective = make_objective(small_problem, sigma=2.0 ** -6, cache_curved=False, hold=False)
    result = solve(objective, tol=1e-6)
    history = result.history
    assert all(set(h) >= HISTORY_FIELDS for h in history)
    assert history[0]["iteration"] == 0 and history[0]["passes"] == 1
    passes = [h["passes"] for h in history]
    assert np.all(np.diff(passes) > 0)
    assert np.all(np.diff([h["seconds"] for h in history]) >= 0)
    # an iteration costs its CG steps (one Hv pass each) plus one pass for the trial point
    # (in memory, so a rejected step's region is solved again: CG's path is not kept)
    for before, after in zip(history, history[1:]):
        assert after["cg_steps"] >= 1
        assert after["passes"] - before["passes"] == after["cg_steps"] + 1
    assert passes[-1] == result.passes == objective.passes
    f = [h["f"] for h in accepted(history)]
    assert np.all(np.diff(f) < 0)  # every accepted step decreases L
    assert len(f) - 1 == result.n_iter == history[-1]["iteration"]
    assert history[-1]["grad_norm"] == result.grad_norm and history[-1]["f"] == result.f
    assert result.f == pytest.approx(objective.value(result.w), rel=1e-14)
    assert all(h["delta"] > 0 for h in history)


def test_warm_start_at_the_optimum_stops_at_once(small_problem):
    first = solve(make_objective(small_problem), tol=1e-6)
    objective = make_objective(small_problem)
    again = solve(objective, w0=first.w, tol=1e-6)
    assert again.converged and again.n_iter == 0 and len(again.history) == 1
    np.testing.assert_array_equal(again.w, first.w)
    assert objective.passes == 2  # the start point, and ||grad L(0)|| for the relative rule


@pytest.mark.parametrize("options, match", [
    (dict(forcing="cubic"), "forcing"),
    (dict(xi=0.0), "xi"),
    (dict(xi=1.0), "xi"),
    (dict(tol=-1.0), "tol"),
])
def test_bad_options(small_problem, options, match):
    with pytest.raises(ValueError, match=match):
        tron(make_objective(small_problem), **options)


NON_FINITE_SOLVERS = ["tron", "newton", "lbfgs", "gd", "agd", "sgd", "pegasos", "svrg",
                      "saga", "sdca"]


@pytest.mark.parametrize("solver", NON_FINITE_SOLVERS)
def test_a_non_finite_start_is_refused(solver):
    """A NaN or infinite w0 made TRON reject steps forever (every test compared with NaN)
    and the others end at a model that cannot be built; values so large that the
    gradient at 0 overflows made the threshold infinite, and a run "converged" at 0. The
    error names w0's first bad entry, from train_stream and from the solver itself."""
    from streamssvm import train_stream
    from streamssvm.solvers import SOLVERS

    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]]))
    y = np.array([1, -1, 1, -1])
    for bad in (np.nan, -np.inf):
        message = rf"^w0\[1\] is {bad}: a warm start must hold finite values$"
        with pytest.raises(ValueError, match=message):
            train_stream(X, y, solver=solver, lam=1e-3, max_iter=5, progress=False,
                         w0=np.array([0.0, bad]))
        with pytest.raises(ValueError, match=message):
            SOLVERS[solver](SmoothSVMObjective(InMemorySource(X, y), "psi_g", 1e-3),
                            w0=[0.0, bad])
    with pytest.raises(ValueError, match="not finite.*too large for the loss; scale them"):
        train_stream(X * 1e160, y, solver=solver, lam=1e-3, max_iter=5, progress=False)


@pytest.mark.parametrize("solver", NON_FINITE_SOLVERS)
def test_a_start_of_the_wrong_length_is_refused_naming_w0(solver):
    """It was refused as "w has shape (4,), expected (2,)": not naming w0, nor what its
    length is made of."""
    from streamssvm import train_stream

    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]]))
    y = np.array([1, -1, 1, -1])
    for fit_intercept, expected in ((False, "(2,): n_variables = the data's 2 features"),
                                    (True, "(3,): n_variables = the data's 2 features + 1 "
                                           "intercept (fit_intercept)")):
        with pytest.raises(ValueError) as info:
            train_stream(X, y, solver=solver, lam=1e-3, max_iter=5, progress=False,
                         fit_intercept=fit_intercept, w0=np.zeros(4))
        assert str(info.value) == f"w0 has shape (4,), expected {expected}"


@pytest.mark.parametrize("solver", NON_FINITE_SOLVERS)
def test_a_start_meeting_the_stopping_rule_is_returned_as_it_is(small_problem, solver):
    """SDCA returned its primal-dual map of such a w0, w(alpha) (w0 only at the optimum;
    or 0 where alpha = 0 has the higher dual): along a lambda path with LIBLINEAR's rule,
    a fold's model at the next lambda was w = 0."""
    from streamssvm.solvers import SOLVERS

    w_star = solve(make_objective(small_problem), tol=1e-8).w
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = SOLVERS[solver](make_objective(small_problem), w0=w_star, tol=1e-3)
    assert result.converged and result.n_iter == 0
    np.testing.assert_array_equal(result.w, w_star)


@pytest.mark.parametrize("solver, options", [("tron", {}),
                                             ("newton", dict(preconditioner=False))])
def test_overflowing_hessian_products_stop_the_run(solver, options):
    """Values of 1e150 keep L and its gradient finite, but a first direction g overflows
    X^T D X d: TRON rejected its NaN steps forever; both stop now, with the reason.
    (Newton's preconditioner scales its direction down to where the products fit.)"""
    from streamssvm import train_stream

    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])) * 1e150
    with pytest.warns(ConvergenceWarning, match="a Hessian product is not finite"):
        model = train_stream(X, np.array([1, -1, 1]), solver=solver, lam=1e-3, max_iter=5,
                             progress=False, **options)
    assert model.params["message"].startswith("a Hessian product is not finite")


@pytest.mark.parametrize("solver", ["tron", "newton"])
def test_a_direction_without_curvature_is_followed(solver):
    """With no feature but the intercept, psi_G is flat at w = 0 (every psi'' is 0) and
    the intercept is not regularised: CG's first direction has no curvature. TRON divided
    by it (ZeroDivisionError); Newton stopped where it began, f = 1 (found by a probe).
    Both follow it now (TRON to the region's boundary, Newton by its line search) to the
    optimum L-BFGS finds."""
    from streamssvm import train_stream

    X = sp.csr_matrix((300, 5))
    y = np.where(np.arange(300) < 200, 1.0, -1.0)
    options = dict(loss="psi_g", sigma=2.0 ** -4, fit_intercept=True, progress=False)
    reference = train_stream(X, y, solver="lbfgs", tol=1e-10, **options)
    model = train_stream(X, y, solver=solver, tol=1e-10, **options)
    assert model.params["converged"]
    assert model.params["objective"] == pytest.approx(reference.params["objective"], rel=1e-12)
    assert model.params["objective"] < 0.7  # f(0) = 1
