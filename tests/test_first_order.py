"""The first-order and stochastic solvers: each reaches TRON's optimum, the monotone ones
never go up, SGD is reproducible from its seed, streamed and in-memory runs agree, SDCA's
duality gap closes for every loss with a conjugate, incremental training resumes exactly."""

import inspect
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from numba.core import event as numba_event

import streamssvm
from streamssvm.data import InMemorySource, Store, StoreError, write_store
from streamssvm.kernels import stochastic as sk
from streamssvm.losses import LOSS_NAMES, get_loss
from streamssvm.data import plan
from streamssvm.objective import SmoothSVMObjective, smooth_svm
from streamssvm.solvers import HESSIAN_PRODUCTS, SOLVERS, ConvergenceWarning, choose_solver, sdca
from streamssvm.solvers.sdca import dual_objective
from streamssvm.solvers.stochastic import EpochRun
from streamssvm._memory import per_sample_array

from shared_data import load_shared

LAM = 1e-3


@pytest.fixture(scope="module")
def data():
    X, y = load_shared("a9a", n_rows=3000)
    return X, y


def _source(data, block_rows=700):
    return InMemorySource(*data, block_rows=block_rows)


def _objective(source, loss="psi_g", fit_intercept=False, lam=LAM):
    return SmoothSVMObjective(source, loss, lam, fit_intercept=fit_intercept)


@pytest.fixture(scope="module")
def optimum(data):
    """TRON's optimal objective, far tighter than any tolerance below."""
    cache = {}

    def f_star(loss, fit_intercept):
        key = (loss, fit_intercept)
        if key not in cache:
            cache[key] = SOLVERS["tron"](_objective(_source(data), loss, fit_intercept),
                                         tol=1e-8).f
        return cache[key]
    return f_star


# (solver, options, relative objective error reached for psi_G (sigma 2^-3) / logistic); the
# stochastic solvers' max_iter counts epochs. psi_G's curvature 1/(sigma sqrt(2 pi)) makes
# the step of SVRG/SAGA (1/(c L_max)) small, so they get less far in the same epochs.
REACH = [
    ("newton", dict(tol=1e-8), (1e-9, 1e-9)),
    ("newton", dict(tol=1e-7, hessian_sample=0.2), (1e-9, 1e-9)),  # subsampled Hessian
    ("lbfgs", dict(tol=1e-7), (1e-9, 1e-9)),
    ("agd", dict(tol=1e-5, max_iter=1000), (1e-6, 1e-6)),
    ("gd", dict(tol=1e-4, max_iter=500), (5e-3, 5e-3)),
    ("svrg", dict(tol=1e-6, max_iter=60), (2e-3, 1e-5)),
    ("saga", dict(tol=1e-6, max_iter=60), (2e-3, 1e-5)),
    ("sgd", dict(tol=0.0, max_iter=15), (5e-2, 2e-2)),
    ("sgd", dict(tol=0.0, max_iter=15, average=True), (0.12, 5e-2)),
    ("sgd", dict(tol=0.0, max_iter=15, delay=16), (5e-2, 2e-2)),  # as serial SGD's
    ("pegasos", dict(tol=0.0, max_iter=15), (5e-2, 2e-2)),
]
LOSSES = ("psi_g", "logistic")


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("solver,options,rel", REACH,
                         ids=[f"{s}-{i}" for i, (s, _, _) in enumerate(REACH)])
def test_solver_reaches_tron_optimum(data, optimum, solver, options, rel, loss, fit_intercept):
    objective = _objective(_source(data), loss, fit_intercept)
    if solver == "pegasos" and fit_intercept:
        with pytest.raises(ValueError, match="Pegasos' rate"):
            SOLVERS[solver](objective, **options)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # sgd's tol 0 is never met
        result = SOLVERS[solver](objective, **options)
    f_star = optimum(loss, fit_intercept)
    assert result.f >= f_star * (1 - 1e-12)
    assert (result.f - f_star) / f_star <= rel[LOSSES.index(loss)]
    for entry in result.history:  # the same fields as TRON's, for plotting together
        assert {"iteration", "passes", "seconds"} <= set(entry)
    assert result.passes == objective.passes


@pytest.mark.parametrize("loss", ["psi_g", "logistic", "squared_hinge", "smoothed_hinge"])
def test_sdca_reaches_tron_optimum(data, optimum, loss):
    objective = _objective(_source(data), loss)
    result = sdca(objective, tol=1e-7, max_iter=200)
    f_star = SOLVERS["tron"](_objective(_source(data), loss), tol=1e-8).f
    assert result.converged
    assert 0 <= (result.f - f_star) / f_star <= 1e-8


@pytest.mark.parametrize("solver", ["gd", "lbfgs", "newton"])
def test_line_search_solvers_never_increase_the_objective(data, solver):
    result = SOLVERS[solver](_objective(_source(data), "psi_m"), tol=1e-6, max_iter=300)
    f = [h["f"] for h in result.history if h["accepted"]]
    assert len(f) > 3
    assert all(b <= a for a, b in zip(f, f[1:]))


def test_subsampled_newton_keeps_its_sample_in_memory(data, tmp_path):
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data))
    with Store(path) as store:  # the held data's sample is tested with the objective
        objective = SmoothSVMObjective(store, "psi_g", LAM, hold=False)
        state = objective.evaluate(np.zeros(objective.n_variables))
        before = objective.passes
        rng = np.random.default_rng(0)
        sampled = objective.subsampled(state, 0.25, rng)
        assert objective.passes == before  # drawn from the cached curved rows
        rows = sum(len(c) for *_, c in sampled.curved_rows)
        assert 0.15 * store.n_samples < rows < 0.35 * store.n_samples
        s = np.ones(objective.n_variables)
        full, approx = objective.hessp(state, s), objective.hessp(sampled, s)
        assert objective.passes == before
        assert np.linalg.norm(approx - full) < 0.5 * np.linalg.norm(full)
        with pytest.raises(ValueError, match="fraction"):
            objective.subsampled(state, 0.0, rng)
        streamed = SmoothSVMObjective(store, "psi_g", LAM, cache_curved=False, hold=False)
        state = streamed.evaluate(np.zeros(objective.n_variables))
        assert state.curved_rows is None
        sampled = streamed.subsampled(state, 0.25, np.random.default_rng(0))
        assert streamed.passes == 2  # one pass gathers the sample
        np.testing.assert_allclose(streamed.hessp(sampled, s), approx, rtol=1e-12)


@pytest.mark.parametrize("overlap", [False, True])
def test_sdca_dual_never_decreases(data, overlap):
    """At every epoch, evaluated with overlap or without (not spaced)."""
    objective = _objective(_source(data), "psi_g")
    result = sdca(objective, tol=0.0, max_iter=8, gap_tol=0.0, eval_every=1, overlap=overlap,
                  spaced=False)
    evaluated = [h for h in result.history if "f" in h]
    assert [h["iteration"] for h in evaluated] == list(range(9))
    dual = [h["f"] - h["gap"] for h in evaluated]
    assert all(b >= a - 1e-12 for a, b in zip(dual, dual[1:]))
    assert dual[-1] > dual[0]


def test_no_evaluation_beside_the_sweeps_on_one_kernel_thread(data):
    """overlap asks for a thread beside the sweeps; with n_threads=1 (one core, or a process
    per core) there is none to spare: SDCA and SGD stopping early sweep no epoch beyond
    their stopping one (beside its evaluation, and then undone)."""
    def objective(loss, threads):
        return SmoothSVMObjective(_source(data), loss, LAM, n_threads=threads)

    runs = {threads: sdca(objective("psi_g", threads), tol=0.2, max_iter=30, eval_every=1,
                          spaced=False) for threads in (1, 2)}
    assert runs[1].n_iter == runs[2].n_iter < 30
    assert runs[1].passes == runs[2].passes - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        runs = {(threads, overlap): SOLVERS["sgd"](objective("hinge", threads), max_iter=30,
                                                   tol=0.3, overlap=overlap)
                for threads in (1, 2) for overlap in (True, False)}
    assert runs[1, True].n_iter == runs[1, False].n_iter < 30
    assert runs[1, True].passes == runs[1, False].passes < runs[2, True].passes


def _sdca_losses():
    return [name for name in LOSS_NAMES if get_loss(name).conjugate_domain is not None]


@pytest.mark.parametrize("loss", _sdca_losses())
def test_sdca_duality_gap_closes_for_every_loss_with_a_conjugate(loss):
    X, y = load_shared("a9a", n_rows=600)
    objective = SmoothSVMObjective(InMemorySource(X, y, block_rows=150), loss, 1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = sdca(objective, tol=0.0, max_iter=300, gap_tol=1e-9)
    gaps = [h["gap"] for h in result.history if "gap" in h]
    assert min(gaps) >= -1e-9 * abs(result.f)  # weak duality, up to rounding
    if loss == "hinge":  # not smooth: the gap closes sublinearly
        assert gaps[-1] <= 1e-5 * abs(result.f)
    else:
        assert result.converged and result.message == "duality gap below gap_tol"
        assert gaps[-1] <= 1e-9 * abs(result.f) < gaps[0]


@pytest.mark.parametrize("loss", [n for n in _sdca_losses() if n != "hinge"])
def test_sdca_step_solves_its_equation_to_rounding_from_any_start(loss):
    """The coordinate step's margin z solves z + q psi'(z) = m to a few ulp: at stiff
    settings (sigma 2^-6 against q up to 1e3, where psi' turns over on a scale 1e5 times
    narrower than the bracket) and mild ones, from no start, the root itself, or a start
    outside the bracket, which must all give the same root. (Margins stay within 3 of the
    kink: beyond, the exponential's psi' passes e^200.)"""
    from streamssvm.kernels.stochastic import _prox_margin

    named = get_loss(f"{loss}:sigma=0.015625" if "sigma" in get_loss(loss).parameters else loss)
    code, sigma, theta, params = named.code, named.sigma, named.theta, named.params
    rng = np.random.default_rng(0)
    for q in (1e-3, 1.0, 8.8, 1e3):
        for m in theta + np.concatenate([rng.normal(0, 0.05, 40), rng.uniform(-3, 3, 40)]):
            z, step_slope, _ = _prox_margin(code, m, q, sigma, theta, params, np.nan)
            slope = float(named.derivatives(np.array([z]))[1][0])
            assert abs(z + q * slope - m) <= 1e-13 * max(1.0, abs(m), q), (q, m)
            assert abs(z + q * step_slope - m) <= 1e-13 * max(1.0, abs(m), q), (q, m)
            for start in (z, m - 1e6, m + 1e6, z + 0.1 * sigma):
                assert _prox_margin(code, m, q, sigma, theta, params, start)[0] == \
                    pytest.approx(z, rel=1e-14, abs=1e-14)


@pytest.mark.parametrize("loss", ["psi_g", "psi_m"])
def test_the_hinges_step_bent_into_a_narrow_bend_starts_at_the_root(loss):
    """psi_G's and psi_M's step starts at the hinge's (alpha = clip((theta - m) / q)),
    bent into the bend by the closed-form inverse of psi' where alpha is inside (0, 1):
    that inverse is psi'^-1, the start tends to the root as sigma / q -> 0, and the step
    from it is the step from anywhere else."""
    from streamssvm.kernels.stochastic import _bend_start, _prox_margin
    from streamssvm.losses._scalar import bend_slope_inverse

    rng = np.random.default_rng(1)
    for sigma in (2.0 ** -30, 2.0 ** -15, 2.0 ** -6, 1.0):
        named = get_loss(f"{loss}:sigma={sigma!r}")
        code, theta, params = named.code, named.theta, named.params
        for b in (-0.999, -0.7, -0.5, -0.1, -1e-6):
            a = bend_slope_inverse(code, b, sigma, theta)
            # to the resolution of a: psi' moves by at most an ulp of a / sigma across it
            assert abs(float(named.derivatives(np.array([a]))[1][0]) - b) <= (
                1e-9 + np.spacing(theta) / sigma)
        for q in (1.0, 8.8, 1e3):
            for m in theta - q * rng.uniform(-0.5, 1.5, 30):
                start = _bend_start(code, m, q, sigma, theta, m + 1.0)
                if sigma * 16.0 > q:
                    assert start == m + 1.0  # a wide bend: the row's margin
                    continue
                z = _prox_margin(code, m, q, sigma, theta, params, start)[0]
                # near the root: within the bend's width, and psi_M's slope nears its ends
                # as sigma^2 / t^2, which moves the root by up to (q sigma^2)^(1/3)
                assert abs(start - z) <= 4.0 * (sigma + (q * sigma * sigma) ** (1 / 3))
                assert z == pytest.approx(_prox_margin(code, m, q, sigma, theta, params,
                                                       np.nan)[0], rel=1e-14, abs=1e-14)


@pytest.mark.parametrize("sigma", [1.0, 2.0 ** -6, 2.0 ** -12])
def test_sdca_step_where_the_exponential_overflows(sigma):
    """Far below the kink the exponential's psi'(m) overflows (e^1000): the bracket's far
    end is then found by doubling steps, and every start reaches the same finite root
    (it gave NaN, or z stuck near m after 200 Newton steps creeping by sigma; at sigma
    2^-12 they crept even near the kink)."""
    from streamssvm.kernels.stochastic import _prox_margin

    named = get_loss(f"exponential:sigma={sigma}")
    code, theta, params = named.code, named.theta, named.params
    for q in (1e-6, 1e-3, 1.0, 8.8, 1e3):
        for m in (-1e6, -5e3, -1e3, -800.0, theta - 0.5, theta - 0.065):
            z, slope, _ = _prox_margin(code, m, q, sigma, theta, params, np.nan)
            assert np.isfinite(z) and abs(z + q * slope - m) <= 1e-13 * max(1, abs(m), q), \
                (q, m)
            for start in (z, m, m - 1e6, m + 1e6, z + 0.1 * sigma):
                assert _prox_margin(code, m, q, sigma, theta, params, start)[0] == \
                    pytest.approx(z, rel=1e-13, abs=1e-13), (q, m, start)


def test_sdca_step_brackets_beyond_the_points_newton_tried():
    """From the row's margin, Newton crept up the exponential's steep side past m_rest + 1
    before the bracket was made, psi'(m_rest) having overflowed: the doubling search began
    at m_rest + 1, inside the points tried, and stopped with the far end infinite, so the
    step returned z = inf and set alpha to 0 (a9a, sigma 1e-3: the dual fell at 16 of 141
    epochs). Found by a probe; the step now matches the one from m_rest."""
    from streamssvm.kernels.stochastic import _prox_margin

    named = get_loss("exponential:sigma=1e-3")
    code, sigma, theta, params = named.code, named.sigma, named.theta, named.params
    m, q = -1.0729665384939908, 3.685390497834833
    z, slope, _ = _prox_margin(code, m, q, sigma, theta, params, -0.00479305859441978)
    assert np.isfinite(z) and abs(z + q * slope - m) <= 1e-13 * q
    assert z == pytest.approx(_prox_margin(code, m, q, sigma, theta, params, np.nan)[0],
                              rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("loss, m, q", [("psi_m:sigma=1", -1e10, 1e100),
                                        ("squared_hinge", -1e300, 1e10),
                                        ("smooth_squared_hinge:sigma=1", -1e300, 1e10)])
def test_sdca_step_brackets_roots_beyond_2_to_the_53(loss, m, q):
    """The doubling search for the bracket's far end stepped from its near end by 1, a
    no-op once that end passed 2^53: psi_m (m = -1e10, q = 1e100) ran out of bisections at
    z = 2.5e40 (the root is 1.36e33), the squared hinges (m = -1e300, q = 1e10, where
    q psi'(m) overflows) returned z = inf. The root is checked by the sign of
    g(z) = z + q psi'(z) - m at 60 digits, 4 ulp either side of z."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    from streamssvm.kernels.stochastic import _prox_margin

    named = get_loss(loss)
    code, sigma, theta, params = named.code, named.sigma, named.theta, named.params
    s, th = mp.mpf(sigma), mp.mpf(theta)

    def slope(z):  # psi'(z) at 60 digits
        t = th - z
        if named.name == "psi_m":  # -(1 + t / h) / 2, h = sqrt(t^2 + s^2), without cancelling
            h = mp.sqrt(t * t + s * s)
            return -s * s / (2 * h * (h - t))
        if named.name == "squared_hinge":
            return -2 * max(t, 0)
        return -2 * s * mp.log1p(mp.exp(t / s)) / (1 + mp.exp(-t / s))  # -2 p sigmoid

    for start in (np.nan, m, 0.0):
        z = _prox_margin(code, m, q, sigma, theta, params, start)[0]
        assert np.isfinite(z), start
        step = 4 * np.spacing(abs(z))
        for side, sign in ((z - step, -1), (z + step, 1)):
            x = mp.mpf(float(side))
            assert sign * (x + q * slope(x) - m) >= 0, (start, z)


@pytest.mark.parametrize("loss", ["psi_g:sigma=0.015625", "squared_hinge", "hinge"])
def test_sdca_shrinking_skips_settled_rows_and_keeps_the_optimum(data, loss):
    """Rows that a sweep finds past the kink, their alpha matching their margin, are
    skipped; the gap (over all rows) closes as fast per epoch as without shrinking, to
    the same objective: both f exceed f* by at most their gap."""
    n = data[0].shape[0]
    runs = {}
    for shrinking in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs[shrinking] = sdca(_objective(_source(data), loss), tol=0.0, max_iter=300,
                                   gap_tol=1e-5, shrinking=shrinking)
    visited = [h["visited"] for h in runs[True].history[1:]]
    assert visited[0] == n and min(visited) < 0.8 * n
    assert all(h["visited"] == n for h in runs[False].history[1:])
    gaps = {k: r.history[-1]["gap"] for k, r in runs.items()}
    assert gaps[True] <= max(1e-5 * runs[True].f, 2 * gaps[False])
    assert runs[True].n_iter <= 1.2 * runs[False].n_iter
    assert abs(runs[True].f - runs[False].f) <= max(gaps.values())


@pytest.mark.parametrize("loss", ["psi_g:sigma=0.015625", "squared_hinge", "hinge"])
def test_settled_rows_are_those_whose_coordinate_step_is_zero(loss):
    """The kernel's rows are numpy's formula's: psi'' = 0 at the margin and alpha_i =
    -psi'(margin) to 1e-12, relative above 1 (rows on both sides of each bound)."""
    objective = _objective(InMemorySource(sp.csr_matrix(np.eye(2)), np.array([1.0, -1.0])),
                           loss)
    rng = np.random.default_rng(5)
    margins = np.concatenate([rng.uniform(-1, 3, 400), np.full(8, 5.0), np.full(8, -4.0)])
    slopes = np.empty_like(margins)
    sk.slopes_of_margins(margins, *objective.loss_args, slopes)
    curvature = np.where(rng.random(len(margins)) < 0.5, 0.0, rng.random(len(margins)))
    dual = -slopes + np.where(rng.random(len(margins)) < 0.5, 0.0, 1e-12) * np.maximum(
        1.0, np.abs(slopes)) * rng.choice([0.5, 2.0, -0.5, -2.0], len(margins))
    expected = (curvature == 0.0) & (np.abs(dual + slopes)
                                     <= 1e-12 * np.maximum(1.0, np.abs(dual)))
    settled = np.empty(len(margins), bool)
    sk.settled_rows(margins, curvature, dual, *objective.loss_args, settled)
    np.testing.assert_array_equal(settled, expected)
    assert 0 < expected.sum() < (curvature == 0.0).sum()


@pytest.mark.parametrize("eval_every", [1, 2])
def test_sdca_evaluates_beside_the_next_epoch_and_returns_an_evaluated_epoch(data, eval_every):
    """With the data held, an epoch's evaluation runs in a worker thread beside the next
    epoch. The run is still reproducible and records every epoch once, in order; when the
    gap rule stops it, the epochs swept meanwhile are undone (their passes counted) and
    the evaluated one returned, within its gap of the optimum that a run without overlap
    reaches. Shrinking is the sweeps' in both: the first epoch settles no row (it has no
    last epoch's reach), the second does, the third skips them. With overlap an
    evaluation's rows come back at the next one's collection, eval_every epochs later than
    without."""
    n = data[0].shape[0]
    runs, threads = [], set()
    for overlap in (True, True, False):
        objective = _objective(_source(data), "psi_g:sigma=0.015625")
        evaluate = objective.evaluate

        def recorded(w, *args, evaluate=evaluate, **kwargs):
            threads.add(threading.current_thread().name)
            return evaluate(w, *args, **kwargs)

        objective.evaluate = recorded
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs.append(sdca(objective, tol=0.0, max_iter=300, gap_tol=1e-5, overlap=overlap,
                             eval_every=eval_every, spaced=False))
        assert objective.data.holds_data
    first, again, inline = runs
    assert any(name.startswith("sdca-evaluation") for name in threads)
    assert np.array_equal(first.w, again.w)
    assert [{k: v for k, v in h.items() if k != "seconds"} for h in first.history] == \
        [{k: v for k, v in h.items() if k != "seconds"} for h in again.history]
    last = first.history[-1]
    assert [h["iteration"] for h in first.history] == list(range(first.n_iter + 1))
    assert first.message == "duality gap below gap_tol" and first.f == last["f"]
    assert first.passes == last["passes"] + eval_every
    for run in (first, inline):
        assert [h["visited"] for h in run.history[1:3]] == [n, n]
        assert run.history[3]["visited"] < n
        assert [h["iteration"] for h in run.history if "f" in h][:3] == [0, eval_every,
                                                                        2 * eval_every]
    assert abs(first.f - inline.f) <= max(last["gap"], inline.history[-1]["gap"])


def test_sdca_spaces_its_evaluations_where_they_hold_up_the_sweeps(data):
    """Without overlap an evaluation costs the sweeps a pass: while ||grad|| stalls they
    come twice as far apart each time, up to 4 eval_every, and the last epoch is evaluated;
    a run that meets the threshold stops within 4 eval_every epochs of where the fixed
    schedule stops it, with fewer evaluations, at the same solution to the rule's accuracy."""
    def run(spaced, loss="psi_g", **options):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return sdca(_objective(_source(data), loss), eval_every=2, overlap=False,
                        spaced=spaced, **options)

    def evaluated(result):
        return [h["iteration"] for h in result.history if "f" in h]

    assert evaluated(run(True, tol=0.0, max_iter=30)) == [0, 2, 6, 14, 22, 30]
    assert evaluated(run(False, tol=0.0, max_iter=30)) == list(range(0, 31, 2))
    abs_tol = 1e-5
    fixed, spaced = (run(s, tol=0.0, abs_tol=abs_tol, max_iter=300) for s in (False, True))
    assert fixed.message == spaced.message == "converged"
    assert fixed.n_iter > 24 and abs(spaced.n_iter - fixed.n_iter) <= 8
    assert len(evaluated(spaced)) < len(evaluated(fixed)) / 2
    gaps = np.diff(evaluated(spaced))
    assert gaps.min() >= 2 and gaps.max() <= 8
    # strongly convex by lam: ||w - w*|| <= ||grad L(w)|| / lam for each
    assert np.linalg.norm(spaced.w - fixed.w) <= 2 * abs_tol / LAM


def test_spaced_evaluations_stay_every_eval_every_within_a_fall_of_the_threshold(data):
    """SDCA's ||grad|| near the hinge jumps by factors of 2-5 between evaluations, around a
    threshold it meets at one of them: spaced out by the stall alone, those runs met the
    rule later or not at all. Within reach of the largest fall seen after the first
    evaluation, the next evaluation comes eval_every epochs later; beyond it, the stall
    spaces them out."""
    run = EpochRun("sdca", _objective(_source(data)), None, 0.0, 0.0, None, 100, 2, None, 0,
                   False, spaced=True)

    def due(threshold, norms):  # norms: epoch -> ||grad|| at the evaluated epochs
        run.threshold = threshold
        run.history = [dict(iteration=e, grad_norm=g) for e, g in norms.items()]
        return run.next_evaluation()

    # evaluated at 0, 2, 4 (predicted by the falls), 6 (a rise: 4 epochs to 10), 10
    hovering = {0: 100.0, 2: 10.0, 4: 3.0, 6: 4.0, 10: 2.5}  # largest fall 10 / 3
    assert due(1.0, hovering) == 12  # 2.5 <= 10 / 3 * 1: the next eval_every epochs on
    assert due(0.1, hovering) == 18  # beyond its reach: 2 (10 - 6) epochs on
    assert due(1.0, {0: 100.0, 2: 10.0, 4: 10.0}) == 8  # the start's fall is not counted


def test_sdca_refuses_an_intercept_and_a_loss_without_conjugate(data):
    with pytest.raises(ValueError, match=r"fit_intercept=False \(no --intercept\)"):
        sdca(_objective(_source(data), fit_intercept=True))
    with pytest.raises(ValueError, match="conjugate"):
        sdca(_objective(_source(data), "kh_hinge"))


@pytest.mark.parametrize("solver,options", [("sgd", {}), ("sgd", dict(average=True)),
                                            ("pegasos", {}), ("saga", {}), ("svrg", {}),
                                            ("sdca", {})])
def test_stochastic_runs_are_reproducible_bit_for_bit(data, solver, options):
    def run(seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return SOLVERS[solver](_objective(_source(data)), tol=0.0, max_iter=3, seed=seed,
                                   **options).w
    first = run(7)
    assert np.array_equal(first, run(7))
    assert not np.array_equal(first, run(8))


@pytest.mark.parametrize("solver", ["sgd", "saga", "sdca", "lbfgs"])
def test_store_and_in_memory_runs_agree(data, tmp_path, solver):
    source = _source(data)
    path = tmp_path / "a9a.h5"
    write_store(path, source, value_dtype="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        memory = SOLVERS[solver](_objective(source), tol=1e-4, max_iter=5)
        with Store(path) as store:
            assert np.array_equal(store.row_offsets, source.row_offsets)
            streamed = SOLVERS[solver](_objective(store), tol=1e-4, max_iter=5)
    np.testing.assert_allclose(streamed.w, memory.w, rtol=1e-12, atol=1e-14)


def test_per_sample_state_on_disk_gives_the_same_run(data):
    assert isinstance(per_sample_array(10, memory_limit=0), np.memmap)
    in_ram = sdca(_objective(_source(data)), tol=0.0, max_iter=3, gap_tol=0.0)
    on_disk = sdca(_objective(_source(data)), tol=0.0, max_iter=3, gap_tol=0.0, memory_limit=0)
    assert np.array_equal(in_ram.w, on_disk.w)
    assert [h.get("gap") for h in in_ram.history] == [h.get("gap") for h in on_disk.history]


def test_sdca_warm_start_maps_to_the_dual(data):
    objective = _objective(_source(data), "logistic")
    w_star = SOLVERS["tron"](objective, tol=1e-8).w
    result = sdca(_objective(_source(data), "logistic"), w0=w_star, tol=1e-6, max_iter=2)
    assert result.converged and result.n_iter <= 1
    np.testing.assert_allclose(result.w, w_star, rtol=0, atol=1e-6 * np.abs(w_star).max())


def test_sdca_warm_start_far_from_the_optimum_starts_from_zero(data):
    """From w0 = 0 the primal-dual map gives alpha_i = -psi'(0) and a w(alpha) far off
    (on a9a at lam 1e-5, f 23.9 after 10 epochs against 0.26 without w0): SDCA starts
    from alpha = 0 when its dual objective is higher, and takes the steps of a run
    without w0."""
    def run(w0):
        objective = SmoothSVMObjective(_source(data), "psi_g", 1e-5, n_threads=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return sdca(objective, w0=w0, tol=0.0, max_iter=4, overlap=False)
    fresh, zero = run(None), run(np.zeros(data[0].shape[1]))
    np.testing.assert_array_equal(zero.w, fresh.w)


def test_dual_objective_matches_the_primal_at_the_optimum(data):
    objective = _objective(_source(data), "smoothed_hinge")
    result = sdca(objective, tol=0.0, max_iter=200, gap_tol=1e-12)
    assert result.history[-1]["gap"] <= 1e-12 * result.f
    alpha = -get_loss("smoothed_hinge").derivatives(
        objective.evaluate(result.w).margins)[1]
    # D at the primal point's alpha, with its own w(alpha): off from P* to second order
    X, y = data
    w_alpha = X.T @ (alpha * y) / (objective.lam * objective.n_samples)
    assert dual_objective(objective, alpha, w_alpha) == pytest.approx(result.f, rel=1e-8)


def test_train_stream_runs_every_solver_and_records_its_defaults(data):
    X, y = data
    for solver in SOLVERS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = streamssvm.train_stream(X, y, loss="logistic", lam=LAM, solver=solver,
                                            progress=False, **({"max_iter": 20} if solver in (
                                                "gd", "agd") else {}))
        assert model.params["solver"] == solver
        assert model.score(X, y) > 0.8
    model = streamssvm.train_stream(X, y, loss="hinge", lam=LAM, solver="sgd", progress=False,
                                    tol=0.5, seed=3)
    assert model.params["max_iter"] == 20 and model.params["seed"] == 3


@pytest.mark.parametrize("delay", [0, 8])
@pytest.mark.parametrize("n_threads", [None, 1])
def test_online_trainer_resumes_exactly(data, tmp_path, n_threads, delay):
    """Also on another number of threads than the state was saved from (a machine's
    setting, not saved), and with a delay (saved)."""
    X, y = data
    halves = [(X[:1500], y[:1500]), (X[1500:], y[1500:])]
    straight = streamssvm.OnlineTrainer(loss="hinge", lam=LAM, average=True, delay=delay,
                                        seed=5)
    for Xb, yb in halves * 2:
        straight.partial_fit(Xb, yb)
    resumed = streamssvm.OnlineTrainer(loss="hinge", lam=LAM, average=True, delay=delay,
                                       seed=5)
    resumed.partial_fit(*halves[0]).partial_fit(*halves[1])
    resumed.save(tmp_path / "state.npz")
    resumed = streamssvm.OnlineTrainer.load(tmp_path / "state.npz", n_threads=n_threads)
    assert resumed.n_threads == n_threads
    for Xb, yb in halves:
        resumed.partial_fit(Xb, yb)
    a, b = straight.model(), resumed.model()
    assert np.array_equal(a.coef_, b.coef_)
    assert a.params["steps"] == b.params["steps"] == 2 * X.shape[0]
    assert a.score(X, y) > 0.8


@pytest.mark.parametrize("name, damage", [
    ("avg_u", lambda a: a[:3]),
    ("state", lambda a: a[:2]),
    ("v", lambda a: a.reshape(1, -1)),
    ("avg_u", lambda a: a[:0]),
])
def test_online_trainer_refuses_a_damaged_state(data, tmp_path, name, damage):
    """A state whose arrays do not fit its options is refused at load, naming the file
    (a short avg_u made the averaging kernel write past its end: a segfault)."""
    X, y = data
    trainer = streamssvm.OnlineTrainer(loss="hinge", lam=LAM, average=True)
    trainer.partial_fit(X[:500], y[:500])
    trainer.save(tmp_path / "state.npz")
    with np.load(tmp_path / "state.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays[name] = damage(arrays[name])
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=f"bad.npz: damaged online trainer state \\({name} "):
        streamssvm.OnlineTrainer.load(tmp_path / "bad.npz")


def test_online_trainer_stops_at_divergence_and_keeps_the_saved_state(data, tmp_path):
    """Divergence went on silently: save() overwrote the last good state with one that
    load() refuses (found by a probe)."""
    X, y = data
    trainer = streamssvm.OnlineTrainer(loss="squared_hinge", lam=1e-3, learning_rate="constant",
                                       eta0=0.5)
    path = tmp_path / "state.npz"
    trainer.partial_fit(X[:1], y[:1], classes=(-1, 1)).save(path)
    saved = path.read_bytes()
    with pytest.raises(FloatingPointError, match="sgd diverged: the weights are not finite"):
        trainer.partial_fit(X, y, epochs=3)
    with pytest.raises(ValueError, match="state.npz: not written: .* NaN or infinite"):
        trainer.save(path)
    with pytest.raises(ValueError, match="NaN or infinite values .it diverged"):
        trainer.model()
    assert path.read_bytes() == saved
    assert streamssvm.OnlineTrainer.load(path).epochs == 1


@pytest.mark.parametrize("options, message", [
    (dict(solver="pegasos", fit_intercept=True),
     r"Pegasos' rate.*fit_intercept=False \(no --intercept\)"),
    (dict(learning_rate="foo"), "unknown learning_rate 'foo'"),
    (dict(learning_rate="constant", eta0=0.0), "eta0 must be a positive finite number"),
])
def test_online_trainer_refuses_a_schedule_when_made(options, message):
    """These were refused by the first partial_fit, after it had set the trainer's state:
    model() then gave an untrained model, save() a state that could not train (found by
    a probe)."""
    with pytest.raises(ValueError, match=message):
        streamssvm.OnlineTrainer(**options)


def test_online_trainer_takes_single_class_batches_and_checks_width(data):
    X, y = data
    trainer = streamssvm.OnlineTrainer(solver="pegasos", lam=LAM)
    positive = y == 1
    # without classes, a first batch of one label is refused (it fixed the classes to
    # (-1, 1), and labels 0 / 1 then failed at the next batch; found by a probe)
    for labels in (y, (y > 0).astype(int)):
        with pytest.raises(ValueError, match=r"holds only the label 1: pass classes="):
            trainer.partial_fit(X[positive], labels[positive])
    assert trainer.classes is None and trainer.epochs == 0
    trainer.partial_fit(X[positive], y[positive], classes=[-1, 1])
    trainer.partial_fit(X[~positive], y[~positive])
    assert trainer.model().classes_.tolist() == [-1.0, 1.0]
    with pytest.raises(ValueError, match="features"):
        trainer.partial_fit(X[:, :50], y)


def test_online_trainer_refuses_classes_other_than_its_own(data, tmp_path):
    """A classes= that contradicts the trainer's (a later call's) or a store's was ignored:
    the batch was read with the first call's classes, the store with its own, as if the
    caller's were the same (found by a probe)."""
    X, y = data
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(X[:300], y[:300]))
    fresh = streamssvm.OnlineTrainer(lam=LAM)
    with pytest.raises(ValueError, match=r"a9a.h5: classes \(0.0, 1.0\) given, but its "
                                         r"classes are \(-1.0, 1.0\): leave classes out"):
        fresh.partial_fit(str(store), classes=(0, 1))
    assert fresh.classes is None
    trainer = streamssvm.OnlineTrainer(lam=LAM).partial_fit(X[:100], y[:100], classes=(-1, 1))
    for classes, shown in (((0, 1), r"\(0.0, 1.0\)"), ((1, -1), r"\(1.0, -1.0\)")):
        with pytest.raises(ValueError, match=shown + r" given, but the trainer's are "
                                                     r"\(-1.0, 1.0\)"):
            trainer.partial_fit(X[100:200], y[100:200], classes=classes)
    assert trainer.rows_seen == 100
    trainer.partial_fit(X[100:200], y[100:200], classes=[-1.0, 1.0])  # its own: goes on
    trainer.partial_fit(str(store), classes=np.array([-1, 1]))
    assert trainer.rows_seen == 500


def test_cli_trains_with_a_stochastic_solver(data, tmp_path):
    X, y = data
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(X, y))
    model = tmp_path / "m.npz"
    out = subprocess.run([sys.executable, "-m", "streamssvm", "train", str(store), "-o",
                          str(model), "--loss", "smoothed_hinge", "--solver", "sdca",
                          "--max-iter", "5", "--seed", "2", "--lam", "1e-3", "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert streamssvm.Model.load(model).params["seed"] == 2


def test_cli_passes_sgd_its_delay_and_hogwild(data, tmp_path, capsys):
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    train = ["train", str(store), "-o", str(model), "--solver", "sgd", "--max-iter", "2",
             "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert main([*train, "--delay", "4"]) == 0
    assert streamssvm.Model.load(model).params["delay"] == 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert main([*train, "--hogwild", "--overwrite"]) == 0
    assert streamssvm.Model.load(model).params["hogwild"] is True
    with pytest.raises(SystemExit) as exc:
        main([*train, "--delay", "-1", "--overwrite"])
    assert exc.value.code == 2
    assert "argument --delay: must be an integer >= 0, got '-1'" in capsys.readouterr().err


def test_cli_trains_subsampled_newton(data, tmp_path, capsys):
    """--hessian-sample reaches newton with its --seed (the CLI had no such option), as in
    train_stream; another solver refuses it."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    train = ["train", str(store), "-o", str(model), "--lam", "1e-3", "--quiet"]
    assert main([*train, "--solver", "newton", "--hessian-sample", "0.2", "--seed", "3"]) == 0
    direct = streamssvm.train_stream(store, lam=1e-3, solver="newton", hessian_sample=0.2,
                                     seed=3, progress=False)
    np.testing.assert_array_equal(streamssvm.Model.load(model).coef_, direct.coef_)
    assert main([*train, "--overwrite", "--solver", "tron", "--hessian-sample", "0.2"]) == 1
    assert "--solver tron takes no --hessian-sample (newton)" in capsys.readouterr().err
    # with auto, the option picks the solver that takes it
    assert main([*train, "--overwrite", "--hessian-sample", "0.2", "--seed", "3"]) == 0
    np.testing.assert_array_equal(streamssvm.Model.load(model).coef_, direct.coef_)


def test_cli_reports_an_unconverged_run_in_one_line(data, tmp_path, capsys):
    """The CLI printed the warning with the library's file, line and source line."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    assert main(["train", str(store), "-o", str(model), "--max-iter", "1", "--quiet"]) == 0
    solver = streamssvm.Model.load(model).params["solver"]
    assert capsys.readouterr().err.startswith(f"streamssvm: warning: {solver} stopped "
                                              f"unconverged (max_iter reached): ||grad|| = ")


def test_cli_interrupted_closes_its_bar_first(data, tmp_path, python, python_env):
    """Ctrl-C during a run printed "interrupted" on the bar's line, and the bar was drawn
    again below it at exit."""
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(*data))
    train = [python, "-m", "streamssvm", "train", str(store), "-o", str(tmp_path / "m.npz"),
             "--solver", "gd", "--tol", "1e-14", "--lam", "1e-7"]
    # numba's cache made first (a Ctrl-C while numba compiles is held until it ends)
    subprocess.run([*train, "--max-iter", "2", "--quiet"], env=python_env, check=True)
    (tmp_path / "m.npz").unlink()
    run = subprocess.Popen([*train, "--max-iter", "1000000"], env=python_env,
                           stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    seen = b""
    while b"gd: 0it" not in seen:  # the bar is drawn ...
        seen += os.read(run.stderr.fileno(), 1024)
    time.sleep(0.5)  # ... and made (a Ctrl-C inside tqdm's drawing leaves a bar it cannot close)
    run.send_signal(signal.SIGINT)
    err = seen + run.communicate(timeout=120)[1]
    assert run.returncode == 130
    assert err.endswith(b"]\nstreamssvm: interrupted\n"), err[-300:]
    assert not (tmp_path / "m.npz").exists()


# a script's start that sends it a real Ctrl-C while LLVM makes machine code: while the main
# thread is in llvmlite's call of LLVMPY_FinalizeObject (seen there twice, 1 ms apart: the
# code of a kernel, not a short call about to return), which calls back into Python when done
CODEGEN_INTERRUPTER = """
import os, signal, sys, threading, time

def in_codegen():
    frame = sys._current_frames()[threading.main_thread().ident]
    return (frame.f_code.co_name == "__call__"
            and frame.f_back.f_code.co_name == "finalize_object") and frame

def interrupt_in_codegen():
    while True:
        frame = in_codegen()
        time.sleep(0.001)
        if frame and in_codegen() is frame:
            os.kill(os.getpid(), signal.SIGINT)
            print("sent", flush=True)
            return

threading.Thread(target=interrupt_in_codegen, daemon=True).start()
"""


def test_cli_interrupted_while_numba_compiles_ends_as_interrupted(data, tmp_path, python,
                                                                  python_env):
    """Ctrl-C during numba's first compile (an empty cache) landed in llvmlite's callback,
    which printed and dropped it: the run went on, or numba failed on "no compiled object
    yet". The command line now ends as for a Ctrl-C during training."""
    store = tmp_path / "a9a.h5"
    write_store(store, InMemorySource(*data))
    script = CODEGEN_INTERRUPTER + "from streamssvm.cli import main\nsys.exit(main(sys.argv[1:]))"
    run = subprocess.run([python, "-c", script, "train", str(store), "-o",
                          str(tmp_path / "m.npz"), "--quiet"], capture_output=True, timeout=600,
                         env=dict(python_env, NUMBA_CACHE_DIR=str(tmp_path / "numba")))
    assert run.stdout == b"sent\n"
    assert (run.returncode, run.stderr) == (130, b"streamssvm: interrupted\n"), run.stderr[-2000:]
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("call", [
    "streamssvm.train_stream(store, max_iter=2, progress=False)",
    "streamssvm.OnlineTrainer().partial_fit(store)",
    "streamssvm.SmoothSVC(max_iter=2).fit(store)",
    "streamssvm.Model(np.zeros(123), 0.0, (-1, 1)).predict(store)",
    "streamssvm.convert_svmlight(svmlight, svmlight + '.h5')",
])
def test_api_interrupted_while_numba_compiles_raises_keyboard_interrupt(data, tmp_path, python,
                                                                        python_env, call):
    """Ctrl-C during numba's first compile (an empty cache) in a script's call of the API was
    lost in llvmlite's callback as on the command line: the call now raises KeyboardInterrupt
    when the compile ends."""
    store, svmlight = tmp_path / "a9a.h5", tmp_path / "two_rows.svm"
    write_store(store, InMemorySource(*data))
    svmlight.write_bytes(b"-1 1:1 3:0.5\n+1 2:1\n")
    script = (CODEGEN_INTERRUPTER
              + f"import numpy as np, streamssvm\nstore, svmlight = sys.argv[1:]\n{call}")
    run = subprocess.run([python, "-c", script, str(store), str(svmlight)], capture_output=True,
                         timeout=600, env=dict(python_env, NUMBA_CACHE_DIR=str(tmp_path / "numba")))
    assert run.stdout == b"sent\n"
    assert run.returncode == -signal.SIGINT, run.stderr[-2000:]
    assert run.stderr.endswith(b"\nKeyboardInterrupt\n"), run.stderr[-2000:]
    assert b"ctypes callback" not in run.stderr


class _CompilingSource(InMemorySource):
    """Rows whose reads record the SIGINT handler, then compile a new numba function."""

    def read_range(self, first, stop):
        self.handler = signal.getsignal(signal.SIGINT)
        numba.njit(lambda v: v + 1)(1)
        return super().read_range(first, stop)


class _HandlerAtCompile(numba_event.Listener):
    """The SIGINT handler in place as numba's compiler lock is taken."""

    def __init__(self):
        self.handlers = []

    def on_start(self, event):
        self.handlers.append(signal.getsignal(signal.SIGINT))

    def on_end(self, event):
        pass


def test_api_holds_ctrl_c_around_compiles_only_and_keeps_a_callers_handler(data):
    """The API's calls hold a Ctrl-C by a handler of their own while numba compiles in them,
    nested calls (train_one_vs_rest's of train_stream) too, and nowhere else: Python's
    handler is in place outside compiles and after a call, returned or raised; a compile
    outside the API's calls, and a caller's own handler, are left alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        streamssvm.train_stream(InMemorySource(*data), max_iter=1, progress=False)
        recorder = _HandlerAtCompile()  # after the API's own listener, which is made once
        with numba_event.install_listener("numba:compiler_lock", recorder):
            source = _CompilingSource(*data)
            streamssvm.train_one_vs_rest(source, max_iter=1, progress=False)
            assert source.handler is signal.default_int_handler  # outside the compile
            assert recorder.handlers
            assert signal.default_int_handler not in recorder.handlers
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            with pytest.raises(ValueError, match="lambda must be"):
                streamssvm.train_stream(_CompilingSource(*data), lam=-1)
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            recorder.handlers.clear()
            numba.njit(lambda v: v + 2)(1)  # not the API's: the handler is not touched
            assert set(recorder.handlers) == {signal.default_int_handler}

            def own(signum, frame):
                pass

            signal.signal(signal.SIGINT, own)
            try:
                recorder.handlers.clear()
                streamssvm.train_stream(_CompilingSource(*data), max_iter=1, progress=False)
                assert recorder.handlers and set(recorder.handlers) == {own}
                assert signal.getsignal(signal.SIGINT) is own
            finally:
                signal.signal(signal.SIGINT, signal.default_int_handler)


class _InterruptedSource(InMemorySource):
    """Rows in blocks whose ``at``-th read raises KeyboardInterrupt: Ctrl-C mid-run."""

    def __init__(self, X, y, at):
        super().__init__(X, y, block_rows=700)
        self.reads, self.at = 0, at

    def read_range(self, first, stop):
        self.reads += 1
        if self.reads == self.at:
            raise KeyboardInterrupt
        return super().read_range(first, stop)


@pytest.mark.parametrize("solver", ["tron", "gd", "sgd"])
def test_an_interrupted_run_closes_its_bar(data, solver, capsys):
    """train_stream left the bar of a run interrupted (or failed) open: the next output went
    on its line, and it was drawn again when collected. The command line closed it."""
    from tqdm import tqdm

    source = _InterruptedSource(*data, at=15)  # in the first iterations, after the start
    before = set(tqdm._instances)
    try:
        streamssvm.train_stream(source, solver=solver, hold=False, max_iter=3, progress=True)
    except KeyboardInterrupt:  # the handler, where the run's frames are still alive
        assert set(tqdm._instances) == before
        assert capsys.readouterr().err.endswith("]\n")  # drawn, then closed
    assert source.reads == 15


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_a_solver_called_directly_closes_its_bar_however_it_ends(data, solver, capsys):
    """A solver called outside train_stream left its bar open when its run was interrupted
    (or failed): only train_stream closed it. Each solver now closes its bars itself."""
    from tqdm import tqdm

    source = _InterruptedSource(*data, at=15)  # in the first iterations, after the start
    objective = SmoothSVMObjective(source, "psi_g", LAM, hold=False)
    before = set(tqdm._instances)
    # bound, never read: the traceback it holds keeps the run's frames alive
    with pytest.raises(KeyboardInterrupt) as interrupted:  # noqa: F841  (kept, see above)
        SOLVERS[solver](objective, tol=0.0, max_iter=10, progress=True)
    assert set(tqdm._instances) == before
    assert capsys.readouterr().err.endswith("]\n")  # drawn, then closed
    assert source.reads == 15


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_an_unconverged_solver_warns_at_the_line_that_called_it(data, solver):
    """A solver's ConvergenceWarning names the line that called it, not the wrapper that
    closes its bars, nor (sgd, pegasos) the function they share; so does train_stream's
    (it named a line of api.py)."""
    with pytest.warns(ConvergenceWarning) as record:
        SOLVERS[solver](_objective(_source(data)), tol=0.0, max_iter=1)
    with pytest.warns(ConvergenceWarning) as through_api:
        streamssvm.train_stream(_source(data), loss="psi_g", lam=LAM, solver=solver, tol=0.0,
                                max_iter=1, progress=False)
    for warned in (record, through_api):
        assert {w.filename for w in warned if w.category is ConvergenceWarning} == {__file__}


def test_cli_reports_a_diverged_run_in_one_line(data, tmp_path, capsys):
    """A stochastic run that diverged printed FloatingPointError's traceback."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    assert main(["train", str(store), "-o", str(model), "--solver", "sgd", "--max-iter", "1",
                 "--learning-rate", "constant", "--step", "1e300", "--quiet"]) == 1
    assert capsys.readouterr().err == (
        "streamssvm: error: sgd diverged: the objective is not finite after epoch 1 (a step "
        "too large for the data: lower the step size or its schedule's start)\n")
    assert not model.exists()


@pytest.mark.parametrize("loss, rows, given, expected", [
    # wide (123 features, 10 rows): SDCA, with its seed
    ("psi_g", 10, ["--seed", "3"], dict(solver="sdca", seed=3)),
    # not convex: TRON, with the TRON options given
    ("kh_hinge", 300, ["--backtrack", "--forcing", "quadratic", "--preconditioner"],
     dict(solver="tron", backtrack=True, forcing="quadratic", preconditioner=True)),
    # tall: Newton; TRON's default preconditioner (off) is not an option given, so Newton
    # keeps its own (on)
    ("squared_hinge", 1000, [], dict(solver="newton", preconditioner=None)),
])
def test_cli_passes_auto_the_options_given(data, tmp_path, loss, rows, given, expected):
    from streamssvm.cli import main

    X, y = data
    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(X[:rows], y[:rows]))
    assert main(["train", str(store), "-o", str(model), "--solver", "auto", "--loss", loss,
                 "--max-iter", "3", "--lam", "1e-2", "--quiet", *given]) == 0
    params = streamssvm.Model.load(model).params
    assert {k: params.get(k) for k in expected} == expected


@pytest.mark.parametrize("given, message", [
    (["--solver", "tron", "--step", "0.1"], "--solver tron takes no --step (sgd, svrg, saga"),
    (["--solver", "newton", "--backtrack"], "--solver newton takes no --backtrack (tron"),
    (["--solver", "saga", "--learning-rate", "constant"], "--solver saga takes no "
                                                           "--learning-rate (sgd"),
    (["--solver", "sgd", "--preconditioner"], "--solver sgd takes no --preconditioner"),
    (["--solver", "tron", "--average", "--delay", "4"], "--solver tron takes no --average "
                                                         "(sgd, pegasos), --delay (sgd)"),
    (["--solver", "tron", "--forcing", "quadratic", "--seed", "3"], "takes no --seed"),
    (["--solver", "pegasos", "--delay", "16"], "--solver pegasos takes no --delay"),
    (["--solver", "tron", "--delay", "0"], "--solver tron takes no --delay"),  # 0 is given
    (["--solver", "pegasos", "--hogwild"], "--solver pegasos takes no --hogwild (sgd)"),
    (["--solver", "sgd", "--hogwild", "--delay", "4"], "--delay and --hogwild are two ways"),
    (["--solver", "sgd", "--hogwild", "--intercept"], "--hogwild needs no --intercept: "),
    # sgd's default schedule takes no eta0, with sgd or auto
    (["--solver", "sgd", "--step", "0.1"], "eta0 (--step) is the step of the learning_rate "
                                           "schedules 'constant' and 'invscaling'; 'optimal'"),
    (["--solver", "auto", "--step", "0.1"], "eta0 (--step) is the step of the learning_rate"),
    (["--checkpoint-every", "5"], "--checkpoint-every needs --checkpoint FILE"),
])
def test_cli_refuses_options_the_solver_does_not_take(data, tmp_path, capsys, given, message):
    """An option given that the chosen solver would not use is refused before the data is
    read, as train_stream refuses it (the command line dropped it silently)."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    assert main(["train", str(store), "-o", str(model), "--max-iter", "2", "--quiet",
                 *given]) == 1
    assert message in capsys.readouterr().err
    assert not model.exists()


@pytest.mark.parametrize("given, option, value", [
    (["--lam", "0"], "--lam", "0"), (["--lam", "nan"], "--lam", "nan"),
    (["--lam", "inf"], "--lam", "inf"), (["--tol", "-1"], "--tol", "-1"),
    (["--abs-tol", "nan"], "--abs-tol", "nan"), (["--sigma", "-0.5"], "--sigma", "-0.5"),
    (["--sigma-path", "0.5,0"], "--sigma-path", "0"), (["--seed", "-1"], "--seed", "-1"),
    (["--solver", "newton", "--hessian-sample", "1.5"], "--hessian-sample", "1.5"),
    (["--solver", "saga", "--step", "0"], "--step", "0"),
    (["--solver", "sgd", "--learning-rate", "constant", "--step", "inf"], "--step", "inf"),
    (["--solver", "sgd", "--delay", "-2"], "--delay", "-2"), (["--threads", "0"], "--threads", "0"),
    (["--checkpoint", "c.npz", "--checkpoint-every", "-1"], "--checkpoint-every", "-1"),
    (["--class-weight", "1:-1"], "--class-weight", "1:-1"),
])
def test_cli_refuses_a_bad_number_naming_the_option(data, tmp_path, capsys, given, option,
                                                    value):
    """A bad value of a numeric option was refused by the library once training began,
    naming its Python parameter (lambda, abs_tol ...) with status 1: it is an argparse error
    naming the option, by the library's check of the parameter it sets."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    with pytest.raises(SystemExit) as exc:
        main(["train", str(store), "-o", str(model), "--quiet", *given])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: streamssvm train")
    assert f"streamssvm train: error: argument {option}: " in err and repr(value) in err
    assert not model.exists()


@pytest.mark.parametrize("given, message", [
    (["--loss", "psi_g:sigma=0.01", "--sigma-path", "0.5"],
     "--sigma-path [0.5]: --loss 'psi_g:sigma=0.01': sigma=0.01 in the name but sigma=0.5 "
     "given too"),
    (["--sigma-path", "0.01"], "--sigma-path [0.01]: stage 0.01 is not larger than --sigma "
                               "0.125"),
    (["--loss", "logistic", "--sigma", "0.1"], "--loss 'logistic' takes no sigma"),
    (["--lam", "0.5", "--solver", "saga", "--step", "4"], "--step must be below 1 / --lam = 2, "
                                                          "got 4.0"),
    (["--class-weight", "3:2"], "--class-weight names labels [3.0] that are not among the "
                                "classes [-1.0, 1.0]"),
])
def test_cli_names_the_options_of_a_combination_refused(data, tmp_path, capsys, given, message):
    """A combination of options the library refuses was named by its Python parameters
    (sigma_path, loss, lam, class_weight): by the options, as typed."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    assert main(["train", str(store), "-o", str(model), "--quiet", *given]) == 1
    assert capsys.readouterr().err.startswith(f"streamssvm: error: {message}")
    assert not model.exists()


def test_cli_train_help_states_the_default_solver(capsys):
    """--solver's help told what auto picks but not the default (found by a probe); the
    default it states is train_stream's."""
    from streamssvm.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    default = inspect.signature(streamssvm.train_stream).parameters["solver"].default
    assert "else newton" in help_text and f"takes it (default {default})" in help_text


@pytest.mark.parametrize("solver", ["tron", "sdca"])
def test_cli_max_seconds_stops_the_run_on_time(data, tmp_path, capsys, solver):
    """The API's max_seconds had no --max-seconds; a budget of 0 stops at the start point,
    says so, and a negative one is refused naming the option."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    assert main(["train", str(store), "-o", str(model), "--solver", solver,
                 "--max-seconds", "0"]) == 0
    out, err = capsys.readouterr()
    assert f"{solver} stopped: max_seconds reached" in out
    assert f"streamssvm: warning: {solver} stopped unconverged (max_seconds reached)" in err
    params = streamssvm.Model.load(model).params
    assert (params["message"], params["max_seconds"], params["converged"]) == \
        ("max_seconds reached", 0.0, False)
    with pytest.raises(SystemExit) as exc:
        main(["train", str(store), "-o", str(model), "--max-seconds", "-1"])
    assert exc.value.code == 2
    assert ("error: argument --max-seconds: must be a number of seconds >= 0, got '-1'\n"
            in capsys.readouterr().err)

def test_cli_takes_sigmas_as_powers_of_two(data, tmp_path, capsys):
    """--help gave --sigma's default as 2^-3, but only plain numbers were taken: --sigma and
    --sigma-path take 2^K as the loss's NAME:sigma=2^K does; a bad one is named."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert main(["train", str(store), "-o", str(model), "--max-iter", "2", "--quiet",
                     "--sigma", "2^-4", "--sigma-path", "2^-1,0.25"]) == 0
    params = streamssvm.Model.load(model).params
    assert (params["sigma"], params["sigma_path"]) == (2.0 ** -4, [0.5, 0.25])
    for option in ("--sigma", "--sigma-path"):
        with pytest.raises(SystemExit) as exc:
            main(["train", str(store), "-o", str(model), option, "2^x"])
        assert exc.value.code == 2
        assert (f"error: argument {option}: must be a positive finite number or 2^K (K an "
                f"integer), got '2^x'\n" in capsys.readouterr().err)

def test_cli_passes_the_solver_its_options_given_or_its_defaults(data, tmp_path):
    """Options the solver shares are passed to it; those left out are its defaults."""
    from streamssvm.cli import main

    store, model = tmp_path / "a9a.h5", tmp_path / "m.npz"
    write_store(store, InMemorySource(*data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert main(["train", str(store), "-o", str(model), "--max-iter", "2", "--quiet",
                     "--solver", "sgd", "--average", "--learning-rate", "constant", "--step",
                     "0.05", "--seed", "4"]) == 0
    params = streamssvm.Model.load(model).params
    assert {k: params[k] for k in ("average", "learning_rate", "eta0", "seed", "delay")} == \
        dict(average=True, learning_rate="constant", eta0=0.05, seed=4, delay=0)
    assert main(["train", str(store), "-o", str(model), "--max-iter", "2", "--quiet",
                 "--solver", "newton", "--overwrite"]) == 0
    assert streamssvm.Model.load(model).params["preconditioner"] is True  # Newton's own


@pytest.mark.parametrize("name, options, early", [
    ("sgd", dict(max_iter=5), False),
    ("sgd", dict(max_iter=1), False),
    ("sgd", dict(max_iter=5, abs_tol=1e6), True),  # the start meets the rule
    ("sgd", dict(max_iter=30, tol=0.3), True),
    ("sgd", dict(max_iter=12, eval_every=3, tol=0.3), True),
    ("sgd", dict(max_iter=7, eval_every=2, average=True), False),
    ("pegasos", dict(max_iter=6), False),
])
def test_sgd_evaluated_beside_the_next_epoch_is_sgd_without(data, tmp_path, name, options,
                                                            early):
    """With overlap (the start's and each epoch's evaluation on a worker thread beside the
    next epoch, on a store held in memory): the w, the epochs and the history (f and
    ||grad|| of every evaluated epoch) of the run without; a run that stops before max_iter
    has swept beside its last evaluation (or the start's), which its passes count."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data))
    runs = []
    with Store(path) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for overlap in (False, True):
            objective = SmoothSVMObjective(store, "hinge", 1e-5)
            runs.append(SOLVERS[name](objective, overlap=overlap, **options))
            assert objective.data.holds_data
    plain, beside = runs

    def entries(result):
        return [{k: v for k, v in h.items() if k not in ("seconds", "passes")}
                for h in result.history]

    assert np.array_equal(plain.w, beside.w)
    assert entries(plain) == entries(beside)
    assert (beside.n_iter, beside.converged, beside.message) == (plain.n_iter,
                                                                 plain.converged, plain.message)
    assert (plain.n_iter < options["max_iter"]) == early
    assert (beside.passes > plain.passes) == early


@pytest.mark.parametrize("overlap", [False, True])
def test_sdca_makes_the_transpose_once_its_evaluations_would_have_paid_for_it(overlap,
                                                                             monkeypatch):
    """SDCA cannot tell how many evaluations it will make: they take the rows' way until
    those so far would have paid for the transpose (rent_columns), then make it and read
    its columns, in an order set by the epochs, with overlap or without. The sweeps are
    the same either way, to the bit; after the run, wide data goes back to the columns."""
    rng = np.random.default_rng(7)
    X = sp.random(80, 3000, density=0.02, random_state=rng, format="csr")
    y = np.where(rng.random(80) < 0.5, -1.0, 1.0)
    runs = {}
    for pays_from in (3, None):
        monkeypatch.setattr(plan, "columns_pay", lambda n, d, nnz, k, at=pays_from:
                            at is not None and k >= at)
        objective = _objective(InMemorySource(X, y), "squared_hinge")
        ways, evaluate = [], objective.evaluate

        def recorded(w, *args, evaluate=evaluate, data=objective.data, ways=ways, **kwargs):
            ways.append(data.rows_way)
            return evaluate(w, *args, **kwargs)

        objective.evaluate = recorded
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs[pays_from] = sdca(objective, tol=0.0, max_iter=5, eval_every=1, spaced=False,
                                   shrinking=False, overlap=overlap)
        made = objective.data._held[1] is not None
        assert made == (pays_from is not None)
        assert ways == ([True, True, False, False, False, False] if made else [True] * 6)
        assert objective.data.rows_way is False
    assert np.array_equal(runs[3].w, runs[None].w)
    assert runs[3].f == pytest.approx(runs[None].f, rel=1e-13)


@pytest.mark.parametrize("name, products_by_rows", [("tron", True), ("lbfgs", True),
                                                     ("sdca", True), ("tron", False)])
def test_f_and_the_gradient_of_held_data_of_few_columns_take_the_rows_way(
        data, name, products_by_rows, monkeypatch):
    """On held data of fewer columns than GATHER_PER_ROW times its rows (a9a), f and the
    gradient take the rows' way, whatever the solver, and so do Hessian products (TRON)
    while a thread's vector of the variables fits ROW_PRODUCT_BYTES: then no transpose is
    made (nor by SDCA's evaluation thread). Beyond it, products read the transpose. The
    run is the one of the columns' way up to the order of the sums: both converge to the
    one optimum."""
    X, y = data
    assert X.shape[1] <= plan.GATHER_PER_ROW * X.shape[0]
    if not products_by_rows:
        monkeypatch.setattr(smooth_svm, "ROW_PRODUCT_BYTES", 8 * X.shape[1] - 1)

    def run():
        objective = SmoothSVMObjective(InMemorySource(X, y, block_rows=700), "psi_g", LAM)
        result = SOLVERS[name](objective, tol=1e-7, max_iter=500)
        return result, objective.data

    result, held = run()
    assert held.rows_way and held.holds_data and (held._held[1] is None) == products_by_rows
    monkeypatch.setattr(plan, "GATHER_PER_ROW", -1.0)
    other, held = run()
    assert not held.rows_way and held._held[1] is not None
    assert result.converged and other.converged
    # both within ||grad|| / lambda of the optimum (lambda-strong convexity)
    assert np.linalg.norm(result.w - other.w) <= (result.grad_norm + other.grad_norm) / LAM
    assert result.f == pytest.approx(other.f, rel=1e-9)


def _wide_data(n_rows=200, n_features=3000, per_row=50, seed=0):
    """Random rows, ``per_row`` nonzeros each, labels of a random direction."""
    rng = np.random.default_rng(seed)
    indices = np.concatenate([np.sort(rng.choice(n_features, per_row, replace=False))
                              for _ in range(n_rows)])
    X = sp.csr_matrix((rng.random(n_rows * per_row), indices,
                       np.arange(0, n_rows * per_row + 1, per_row)), (n_rows, n_features))
    y = np.where(X @ rng.standard_normal(n_features) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("name", ["sgd", "pegasos", "svrg", "saga"])
def test_evaluations_only_make_the_transpose_only_where_it_pays(data, name, monkeypatch):
    """The solvers whose passes are their epochs and evaluations evaluate held data
    without its transpose (the rows' way) unless it pays over their evaluations
    (plan.columns_pay): not on tall data (a9a), not on wide data over a few epochs, but
    over many. Either way, the run is the one of the other way up to the order of the
    sums."""
    wide = _wide_data()
    n, d = wide[0].shape
    few, many = 4, 40  # the wide data's transpose pays after about 20 evaluations
    assert not plan.columns_pay(n, d, wide[0].nnz, few + 1)
    assert plan.columns_pay(n, d, wide[0].nnz, many + 1)
    assert not plan.columns_pay(*data[0].shape, data[0].nnz, 10 ** 6)

    def run(X, y, epochs):
        objective = SmoothSVMObjective(InMemorySource(X, y, block_rows=700), "psi_g", LAM)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = SOLVERS[name](objective, tol=0.0, max_iter=epochs)
        assert objective.data.holds_data
        return result, objective.data.rows_way

    for X, y, epochs, rows_way in ((*data, few, True), (*wide, few, True),
                                   (*wide, many, False)):
        result, taken = run(X, y, epochs)
        assert taken == rows_way
        with monkeypatch.context() as m:  # the other way
            m.setattr(plan, "columns_pay", lambda *args, pays=rows_way: pays)
            m.setattr(plan, "GATHER_PER_ROW", -1.0)  # no decline as the rows are held
            other, taken = run(X, y, epochs)
            assert taken != rows_way
        np.testing.assert_allclose(result.w, other.w, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose([h["f"] for h in result.history],
                                   [h["f"] for h in other.history], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(SOLVERS))
@pytest.mark.parametrize("stop", [dict(tol=1e-2), dict(tol=1e-12, max_iter=4)])
def test_the_last_history_entry_counts_every_pass(data, name, stop):
    """A run's passes are its last entry's, converged or out of iterations: AGD evaluated
    an extrapolation it would not use; an epoch solver's last epoch without an evaluation
    (SDCA's first 2 eval_every are left out) had its entry without the one made at the end.
    (SDCA, SGD and Pegasos with overlap may sweep beyond their stopping epoch: passes made,
    counted by the run, not by that epoch's entry.)"""
    beside = name in ("sdca", "sgd", "pegasos") and "max_iter" not in stop
    options = dict(overlap=False) if beside else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = SOLVERS[name](SmoothSVMObjective(_source(data), "psi_g", 1e-3), **stop,
                               **options)
    assert result.history[-1]["passes"] == result.passes
    assert result.history[-1]["f"] == result.f


def _visited(objective, seed, window_bytes=None):
    """The global rows of one shuffled pass, in order, and the number of windows."""
    pairs = list(objective.data.epoch(np.random.default_rng(seed), window_bytes))
    return np.concatenate([b.row_start + rows for b, rows in pairs]), len(pairs)


def test_shuffled_windows_visit_every_row_once(data, tmp_path):
    """Streamed, the windows (one block, a few, all of them) visit every row once; held
    data is one window, in the order of streamed data in one window."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data, block_rows=300))
    with Store(path) as store:
        held = _objective(store)
        streamed = SmoothSVMObjective(store, "psi_g", LAM, hold=False)
        assert held.data.hold_rows() and not streamed.data.hold_rows()
        for window_bytes in (1, 150_000, None):
            rows, n_windows = _visited(streamed, 0, window_bytes)
            assert sorted(rows.tolist()) == list(range(store.n_samples))
            assert n_windows == {1: 10, None: 1}.get(window_bytes, n_windows)
            assert window_bytes != 150_000 or 1 < n_windows < 10
            assert not np.array_equal(rows, _visited(streamed, 1, window_bytes)[0])
            assert _visited(held, 0, window_bytes)[1] == 1
        np.testing.assert_array_equal(_visited(held, 0)[0], rows)


def test_shuffle_windows_do_not_depend_on_free_memory(data, tmp_path, monkeypatch):
    """The default window is a fixed size, not a share of the free memory; with too
    little memory for two of them they shrink, and a warning says the order changed (in
    MiB, as the command line's sizes: it said "MB" of whole MiB)."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data, block_rows=300))
    with Store(path) as store:
        objective = SmoothSVMObjective(store, "psi_g", LAM, hold=False)
        window = 2 * store.nnz * (4 + np.dtype(store.value_dtype).itemsize) // 3  # two windows
        monkeypatch.setattr(plan, "SHUFFLE_BYTES", window)
        rows, n_windows = _visited(objective, 0)
        assert n_windows == 2
        for free in (4 * window + 1, 1 << 40):
            monkeypatch.setattr(plan, "available_memory_bytes", lambda free=free: free)
            np.testing.assert_array_equal(_visited(objective, 0)[0], rows)
        monkeypatch.setattr(plan, "available_memory_bytes", lambda: 2 * window)
        mib = [f"{size / 2 ** 20:.1f} MiB" for size in (window, 2 * window, window // 2)]
        with pytest.warns(RuntimeWarning) as caught:
            shrunk, n_windows = _visited(objective, 0)
        assert str(caught[0].message) == (
            f"{store.name}: four shuffle windows of {mib[0]} do not fit in the {mib[1]} free; "
            f"windows of {mib[2]} make an order other than the seed's with more memory")
        assert n_windows > 2 and sorted(shrunk.tolist()) == list(range(store.n_samples))


def test_epochs_under_auto_hold_do_not_depend_on_free_memory(data, tmp_path, monkeypatch):
    """hold="auto": with free memory for the data and its transpose the store is held,
    without it streamed, and the epochs are the same: one permutation of all rows when the
    rows take at most PERMUTATION_BYTES (as hold=True's), windows of SHUFFLE_BYTES above
    (as hold=False's), views of the held rows or read; SGD's steps on them are the same
    to the bit."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data, block_rows=300))

    def epochs(objective):
        rng = np.random.default_rng(0)
        visits = [list(objective.data.epoch(rng)) for _ in range(2)]
        return ([np.concatenate([b.row_start + rows for b, rows in pairs]) for pairs in visits],
                len(visits[0]))

    with Store(path) as store:
        rows_bytes = store.nnz * (4 + np.dtype(store.value_dtype).itemsize) + 9 * store.n_samples
    # free memory that holds the data, and some whose quarter (the default cache_bytes) is
    # the rows alone, without the transpose: four windows of the rows fit it
    roomy, tight = 1 << 40, 4 * rows_bytes + 1024
    monkeypatch.setattr(plan, "SHUFFLE_BYTES", rows_bytes // 4)
    for permutation_bytes, pinned, n_windows in ((plan.PERMUTATION_BYTES, True, 1),
                                                 (rows_bytes // 2, False, 4)):
        monkeypatch.setattr(plan, "PERMUTATION_BYTES", permutation_bytes)
        runs, models = [], []
        for free, hold in ((roomy, "auto"), (tight, "auto"), (roomy, pinned)):
            monkeypatch.setattr(plan, "available_memory_bytes", lambda free=free: free)
            with Store(path) as store:
                objective = SmoothSVMObjective(store, "psi_g", LAM, hold=hold)
                runs.append((epochs(objective), objective.data.holds_data))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                models.append(streamssvm.train_stream(str(path), loss="psi_g", lam=LAM,
                                                      solver="sgd", max_iter=2, seed=0,
                                                      hold=hold, progress=False).coef_)
        assert [held for _, held in runs] == [True, False, pinned]
        (first, windows), _ = runs[0]
        assert windows >= n_windows and (windows == 1) == (n_windows == 1)
        assert sorted(first[0].tolist()) == list(range(len(first[0])))
        assert not np.array_equal(first[0], first[1])
        for (visited, count), _ in runs[1:]:
            assert count == windows
            for a, b in zip(first, visited):
                np.testing.assert_array_equal(a, b)
        assert models[0].tobytes() == models[1].tobytes() == models[2].tobytes()


def test_train_stream_pins_hold(data, tmp_path, monkeypatch):
    """``hold=False`` streams the store (in windows), ``hold=True`` holds it (one
    permutation): two orders from one seed; "auto" holds data that fits."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data, block_rows=300))
    monkeypatch.setattr(plan, "SHUFFLE_BYTES", 150_000)  # a few windows

    def fit(hold):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return streamssvm.train_stream(str(path), loss="psi_g", lam=LAM, solver="sgd",
                                           max_iter=1, seed=0, hold=hold,
                                           progress=False).coef_

    streamed, held = fit(False), fit(True)
    assert not np.array_equal(streamed, held)
    assert fit("auto").tobytes() == held.tobytes()
    assert fit(False).tobytes() == streamed.tobytes()


def test_epochs_over_held_data_read_nothing(data, tmp_path):
    """Data that fits is read by the first epoch (or evaluation); later epochs are one
    window of all rows served from memory: each still counts as a pass, and the store may
    be closed. Without ``hold`` every epoch reads the store."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data, block_rows=300))
    X = data[0]
    with Store(path) as store:
        objective, streamed = _objective(store), SmoothSVMObjective(store, "psi_g", LAM, hold=False)
        for obj in (objective, streamed):
            assert len(list(obj.data.epoch(np.random.default_rng(0)))) == 1
    windows = list(objective.data.epoch(np.random.default_rng(1)))
    assert objective.passes == 2 and len(windows) == 1
    block, rows = windows[0]
    assert sorted(rows.tolist()) == list(range(X.shape[0]))
    np.testing.assert_array_equal(block.indices[block.indptr[0]:block.indptr[-1]],
                                  X.indices.astype(np.int32))
    with pytest.raises(StoreError, match="cannot be read"):  # the store is closed
        list(streamed.data.epoch(np.random.default_rng(1)))


def test_auto_takes_a_solver_that_takes_the_options_given(data):
    """An option of one solver narrows auto to it (SDCA's gap_tol: SDCA where Newton would be
    picked; it was left out, and TRON's --backtrack with it), options no one solver takes
    together are refused, and a name no solver takes is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = streamssvm.train_stream(*data, loss="logistic", lam=LAM, solver="auto",
                                        max_iter=2, progress=False)
        model = streamssvm.train_stream(*data, loss="logistic", lam=LAM, solver="auto",
                                        max_iter=2, gap_tol=1e-3, progress=False)
    assert plain.params["solver"] == "newton"
    assert model.params["solver"] == "sdca" and model.params["gap_tol"] == 1e-3
    with pytest.raises(TypeError, match="no one solver takes the options backtrack, gap_tol"):
        streamssvm.train_stream(*data, solver="auto", gap_tol=1e-3, backtrack=True,
                                progress=False)
    with pytest.raises(TypeError, match="no solver takes the option.*gap_toll"):
        streamssvm.train_stream(*data, solver="auto", gap_toll=1e-3, progress=False)


def test_a_named_solver_refuses_the_options_it_does_not_take(data):
    """An explicit solver's options are checked before the data is read: one no solver
    takes (class_weight, which train_stream leaves to sample_weight) said only "tron() got
    an unexpected keyword argument" (found by a probe), and another solver's is named."""
    with pytest.raises(TypeError, match="no solver takes.*class_weight.*sample_weight"):
        streamssvm.train_stream(*data, solver="tron", class_weight="balanced", progress=False)
    with pytest.raises(TypeError, match="solver 'tron' takes no option.*gap_tol"):
        streamssvm.train_stream(*data, solver="tron", gap_tol=1e-3, progress=False)


@pytest.mark.parametrize("solver", ["tron", "newton", "lbfgs", "gd", "agd", "sgd", "sdca"])
def test_every_solver_stops_on_time(data, solver):
    with pytest.warns(ConvergenceWarning, match="max_seconds reached"):
        result = SOLVERS[solver](_objective(_source(data)), tol=1e-12, max_seconds=0.0)
    assert result.message == "max_seconds reached" and result.n_iter == 0


TALL, WIDE = (1000, 50), (1000, 20_000)


@pytest.mark.parametrize("loss,fit_intercept,shape,expected", [
    ("psi_g:sigma=0.015625", False, TALL, "newton"),  # n_features / n_samples from 0.099
    ("psi_g:sigma=0.015625", False, (1000, 100), "sdca"),
    ("psi_g:sigma=0.125", False, (1000, 279), "newton"),  # from 0.28
    ("psi_g:sigma=0.125", False, (1000, 281), "sdca"),
    ("logistic", False, (1000, 999), "newton"), ("logistic", False, (1000, 1000), "sdca"),
    ("squared_hinge", False, (1000, 353), "newton"),  # from 0.354
    ("squared_hinge", False, (1000, 354), "sdca"),
    ("squared_hinge", False, TALL, "newton"), ("squared_hinge", False, WIDE, "sdca"),
    ("logistic", False, TALL, "newton"), ("hinge", False, TALL, "sdca"),
    ("psi_g:sigma=0.015625", True, WIDE, "newton"), ("hinge", True, TALL, "sgd"),
    ("kh_hinge", False, WIDE, "tron"),
    ("exponential", False, WIDE, "newton")])  # psi'' unbounded: it chose SDCA on any data
def test_auto_chooses_by_loss_shape_and_intercept(loss, fit_intercept, shape, expected):
    assert choose_solver(get_loss(loss), *shape, fit_intercept) == expected


@pytest.mark.parametrize("solver", ["tron", "newton", "gd", "agd", "lbfgs"])
def test_gradient_solvers_refuse_the_hinge(data, solver):
    """They took its subgradient and said "converged" 2-4% above the optimum, where the
    gradient's norm means nothing (a9a, 1000 rows; found by a probe)."""
    with pytest.raises(ValueError, match=f"{solver} needs a loss with a gradient; hinge's "
                                         f"slope jumps at its kink: use sdca, sgd or pegasos"):
        streamssvm.train_stream(*data, loss="hinge", lam=LAM, solver=solver, progress=False)


@pytest.mark.parametrize("weighted, distributed, taken", [(True, False, "them"),
                                                          (False, True, "Dask workers")])
def test_auto_refuses_the_hinge_where_no_solver_takes_it(weighted, distributed, taken):
    """It chose Newton, which the hinge's kink leaves without a gradient."""
    with pytest.raises(ValueError, match=f"only sgd, pegasos and sdca take its kink, and none "
                                         f"takes {taken}"):
        choose_solver(get_loss("hinge"), *TALL, weighted=weighted, distributed=distributed)


def test_train_stream_applies_the_auto_choice_to_its_data(data):
    """a9a is tall (Newton for psi_G at 2^-6); a matrix with more columns than rows is
    wide (SDCA)."""
    wide = sp.random(300, 2000, density=0.01, format="csr", random_state=3)
    labels = np.where(np.arange(300) % 2, 1.0, -1.0)
    for X, y, expected in ((*data, "newton"), (wide, labels, "sdca")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = streamssvm.train_stream(X, y, loss="psi_g", sigma=2.0 ** -6, lam=LAM,
                                            solver="auto", max_iter=2, progress=False)
        assert model.params["solver"] == expected


def _long_rows(n=2000, d=200_000, row_nnz=300, seed=0, constant=0.0):
    """Rows of many nonzeros, labels of a random w; with ``constant``, a last feature of
    that value and 99% of the labels +1."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=row_nnz / d, format="csr", random_state=rng)
    y = np.where(X @ rng.standard_normal(d) > 0, 1, -1)
    if constant:
        X = sp.hstack([X, np.full((n, 1), constant)], format="csr")
        y = np.where(rng.random(n) < 0.99, 1, -1)
    X.indices = X.indices.astype(np.int32)
    return X, y


SGD_CASES = [
    pytest.param(dict(loss="hinge"), id="hinge"),  # few steps change v
    pytest.param(dict(loss="psi_g"), id="psi_g"),  # every step does
    pytest.param(dict(loss="hinge", average=True, fit_intercept=True), id="average-intercept"),
    # w set to 0 at step 1, then projected
    pytest.param(dict(loss="hinge", solver="pegasos"), id="pegasos"),
    # scale folded into v on steps that change nothing else: w halves at each step and
    # the constant feature keeps most margins above 1 for a dozen steps after an update
    pytest.param(dict(loss="hinge", learning_rate="constant", eta0=1.0, lam=0.5), id="fold"),
    pytest.param(dict(loss="hinge", delay=16), id="delay"),
    pytest.param(dict(loss="psi_g", delay=5, average=True, fit_intercept=True),
                 id="delay-average"),
    pytest.param(dict(loss="hinge", learning_rate="constant", eta0=1.0, lam=0.5, delay=8),
                 id="delay-fold"),
    # both threads fold at the averaging threshold, though only the lead averages
    pytest.param(dict(loss="hinge", learning_rate="constant", eta0=1.0, lam=0.5, delay=8,
                      average=True), id="delay-fold-average"),
]


def _train_sgd(X, y, **options):
    options = dict(dict(solver="sgd", lam=1e-4, max_iter=3, eval_every=0, progress=False),
                   **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return streamssvm.train_stream(X, y, **options)


@pytest.mark.parametrize("options", SGD_CASES)
def test_sgd_on_two_threads_takes_the_one_thread_steps_bit_for_bit(options):
    """The two threads, each stepping its own copy of v from shared dots, take the steps
    of one thread: the models are equal to the bit (with ``delay`` 0, those of serial
    SGD)."""
    X, y = _long_rows(constant=100.0 if options.get("learning_rate") else 0.0)
    assert numba.get_num_threads() >= 2
    one, two = (_train_sgd(X, y, n_threads=n, **options) for n in (1, 2))
    np.testing.assert_array_equal(one.coef_, two.coef_)
    assert one.intercept_ == two.intercept_ and np.any(one.coef_ != 0)


HOGWILD_CASES = [
    pytest.param(dict(loss="hinge"), id="hinge"),
    pytest.param(dict(loss="psi_g"), id="psi_g"),
    pytest.param(dict(loss="hinge", average=True), id="average"),
    pytest.param(dict(loss="logistic", learning_rate="invscaling", eta0=0.5, average=5),
                 id="invscaling-average-later"),
    # the scale folded into v every 30 steps: a step alone between parallel runs
    pytest.param(dict(loss="hinge", learning_rate="constant", eta0=1.0, lam=0.5), id="fold"),
    pytest.param(dict(loss="hinge", learning_rate="constant", eta0=1.0, lam=0.5, average=True),
                 id="fold-average"),
    # a shrink of 0 at every step (w set to 0 before each step): every step alone
    pytest.param(dict(loss="hinge", learning_rate="constant", eta0=2.0, lam=0.5), id="zero"),
]


def _disjoint_rows(n=3000, row_nnz=4, seed=0):
    """Rows without a feature in common, random values and labels."""
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix((rng.standard_normal(n * row_nnz), np.arange(n * row_nnz, dtype=np.int32),
                       np.arange(0, n * row_nnz + 1, row_nnz)), shape=(n, n * row_nnz))
    return X, np.where(rng.random(n) < 0.5, 1, -1)


@pytest.mark.parametrize("options", HOGWILD_CASES)
def test_hogwild_takes_serial_sgds_steps_where_no_thread_reads_anothers_writes(options):
    """On one thread Hogwild's steps are serial SGD's to the bit. On two, a step reads no
    entry of v another thread writes when the rows share no feature: the model is serial
    SGD's to the bit there too, rates, scales and averages taken by the steps' positions,
    the steps taken alone between parallel runs included."""
    assert numba.get_num_threads() >= 2
    for (X, y), threads in ((_long_rows(constant=100.0 if "eta0" in options else 0.0), 1),
                            (_disjoint_rows(), 2)):
        serial = _train_sgd(X, y, n_threads=1, **options)
        hogwild = _train_sgd(X, y, n_threads=threads, hogwild=True, **options)
        np.testing.assert_array_equal(serial.coef_, hogwild.coef_)
        assert serial.history[-1]["steps"] == hogwild.history[-1]["steps"] == 3 * X.shape[0]
        assert np.any(serial.coef_ != 0)


def test_hogwild_carries_its_scale_steps_and_average_between_calls():
    """Batches of 500 rows, one kernel call each, on two threads, rows sharing no feature:
    the scale, the step count and the average carried from call to call give serial SGD's
    model to the bit."""
    X, y = _disjoint_rows()
    trainers = [streamssvm.OnlineTrainer(loss="hinge", lam=1e-4, average=True, n_threads=n,
                                         hogwild=hogwild) for n, hogwild in ((1, False),
                                                                             (2, True))]
    for _ in range(2):
        for start in range(0, X.shape[0], 500):
            for trainer in trainers:
                trainer.partial_fit(X[start:start + 500], y[start:start + 500],
                                    classes=(-1, 1))
    serial, hogwild = (t.model() for t in trainers)
    np.testing.assert_array_equal(serial.coef_, hogwild.coef_)
    assert serial.params["steps"] == hogwild.params["steps"] == 2 * X.shape[0]
    assert np.any(serial.coef_ != 0)


def test_hogwild_on_two_threads_reaches_serial_sgds_objective(data):
    """a9a's rows share most of their features (14 of 123 each), so the threads' steps miss
    each other's writes and lose some. The median objective of 10 seeds after 20 epochs
    stays within 5% of serial SGD's (measured: 0.986-0.997 of it in 20 repetitions)."""
    X, y = data
    objective = SmoothSVMObjective(InMemorySource(X, y), "psi_g", 1e-3)
    medians = {hogwild: np.median([objective.value(streamssvm.OnlineTrainer(
        loss="psi_g", lam=1e-3, hogwild=hogwild, seed=seed).partial_fit(X, y, epochs=20)
        .model().coef_) for seed in range(10)]) for hogwild in (False, True)}
    assert medians[True] <= 1.05 * medians[False]
    assert medians[False] < 0.5  # they learnt (w = 0: about 1)


@pytest.mark.parametrize("options, message", [
    (dict(delay=4), "delay and hogwild are two ways of taking SGD's steps"),
    (dict(fit_intercept=True), "hogwild needs fit_intercept=False"),
    (dict(project=True), "hogwild needs project=False"),
    (dict(hogwild=1), "hogwild must be True or False, got 1"),
])
def test_hogwild_refuses_what_it_cannot_take(data, options, message):
    options = dict(dict(hogwild=True), **options)
    with pytest.raises(ValueError, match=message):
        streamssvm.OnlineTrainer(loss="hinge", **options)
    with pytest.raises(ValueError, match=message):
        _train_sgd(*data, **options)


def test_a_saved_hogwild_trainer_resumes_as_hogwild(data, tmp_path):
    """The option is saved; on one thread the resumed run is the straight one's."""
    X, y = data
    straight = streamssvm.OnlineTrainer(hogwild=True, n_threads=1).partial_fit(X, y, epochs=2)
    resumed = streamssvm.OnlineTrainer(hogwild=True, n_threads=1).partial_fit(X, y)
    resumed.save(tmp_path / "state.npz")
    resumed = streamssvm.OnlineTrainer.load(tmp_path / "state.npz", n_threads=1)
    assert resumed.options["hogwild"] is True
    np.testing.assert_array_equal(straight.model().coef_,
                                  resumed.partial_fit(X, y).model().coef_)


def test_delayed_sgd_copies_v_again_after_steps_on_one_thread():
    """An online trainer's epochs on one thread leave the helper's copy of v behind; the
    next two-thread epochs copy it again: the model equals one thread's throughout."""
    X, y = _long_rows(n=600)
    trainers = [streamssvm.OnlineTrainer(loss="hinge", lam=1e-4, delay=7, n_threads=n)
                for n in (1, 2)]
    for threads in (2, 1, 2):
        trainers[1].n_threads = threads
        for trainer in trainers:
            trainer.partial_fit(X, y)
        np.testing.assert_array_equal(*(t.model().coef_ for t in trainers))
    assert np.any(trainers[0].model().coef_ != 0)


def test_delayed_sgd_without_room_for_the_copy_of_v_runs_on_one_thread(monkeypatch):
    """When a quarter of the memory left cannot hold the helper's copy of v, the steps run
    on one thread, the same steps (the memory measure is the one thing replaced here)."""
    sgd_module = sys.modules["streamssvm.solvers.sgd"]  # (the package's ``sgd`` is the solver)
    X, y = _long_rows(n=400)
    roomy = streamssvm.OnlineTrainer(loss="hinge", lam=1e-4, delay=6).partial_fit(X, y)
    monkeypatch.setattr(sgd_module, "available_memory_bytes", lambda: 4 * X.shape[1] * 8 - 1)
    tight = streamssvm.OnlineTrainer(loss="hinge", lam=1e-4, delay=6).partial_fit(X, y)
    assert roomy.sgd_state.replica is not None and tight.sgd_state.replica is None
    np.testing.assert_array_equal(roomy.model().coef_, tight.model().coef_)


def test_sgd_delay_changes_the_steps_from_two_rows_a_chunk_on():
    """A chunk of one row sees every write before it: ``delay=1`` is serial SGD to the bit;
    longer chunks miss writes and take other steps (where they lead: REACH); a delay of
    more rows than there are is one chunk an epoch."""
    X, y = _long_rows(n=500)
    coef = {k: _train_sgd(X, y, delay=k).coef_ for k in (0, 1, 4, 500, 2**63 - 1)}
    np.testing.assert_array_equal(coef[0], coef[1])
    assert not np.array_equal(coef[0], coef[4])
    np.testing.assert_array_equal(coef[500], coef[2**63 - 1])  # one chunk an epoch


@pytest.mark.parametrize("delay, project, message", [
    (-1, False, "integer >= 0"), (2.0, False, "integer >= 0"), (True, False, "integer >= 0"),
    (4, True, "project=False"),
])
def test_sgd_delay_is_checked(delay, project, message):
    X, y = _long_rows(n=50)
    with pytest.raises(ValueError, match=message):
        _train_sgd(X, y, delay=delay, project=project)
    with pytest.raises(ValueError, match=message):
        streamssvm.OnlineTrainer(delay=delay, project=project)


def test_two_thread_sgd_kernel_runs_on_one_thread():
    """With one thread both roles of the two-thread kernel run one after the other: the
    helper's waits are bounded, the steps are the one-thread kernel's with the same delay,
    and the kernel says whether the helper's copy of v ended equal to v."""
    X, y = _long_rows(n=300)
    y = y.astype(np.int8)
    loss = get_loss("hinge")
    results = []
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        for parallel in (False, True):
            v, state = np.zeros(X.shape[1]), np.zeros(sk.SGD_STATE_SIZE)
            state[sk.SCALE] = 1.0
            rng = np.random.default_rng(0)
            for order in (rng.permutation(300) for _ in range(3)):
                args = (X.indptr, X.indices, X.data, y, order, v, np.zeros(0), state, 0.0,
                        loss.code, loss.sigma, loss.theta, loss.params, 1e-4, sk.OPTIMAL, 0.0,
                        0.0, 1e3, 0.0, 0, 8)
                if parallel:
                    replica, replica_state = v.copy(), state.copy()
                    if sk.sgd_rows_parallel(*args, replica, replica_state):
                        np.testing.assert_array_equal(replica, v)
                        np.testing.assert_array_equal(replica_state, state)
                else:
                    sk.sgd_rows(*args)
            results.append(v * state[sk.SCALE])
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(*results)
    assert np.any(results[0] != 0)


@pytest.mark.parametrize("schedule", ["pegasos", "fold"])
def test_averaged_sgd_kernel_takes_the_average_of_plain_numpy_steps(data, schedule):
    """ASGD's sum u + AVG_C v of the iterates, against the iterates summed by numpy: with
    Pegasos' projections (which make the scale fold often) and with a constant rate that
    halves w at every step. Folding AVG_C / scale into the sum cancelled it to nothing
    (Pegasos' average of iterates of norm <= 316 came out at 1e66)."""
    X, y = data[0][:400], data[1][:400].astype(np.int8)
    lam, eta0, t0, radius, kind = ((1e-5, 0.0, 0.0, 1e-5 ** -0.5, sk.OPTIMAL)
                                   if schedule == "pegasos" else
                                   (0.5, 1.0, 0.0, 0.0, sk.CONSTANT))
    order = np.random.default_rng(3).permutation(X.shape[0])
    loss = get_loss("hinge")
    v, avg_u, state = np.zeros(X.shape[1]), np.zeros(X.shape[1]), np.zeros(sk.SGD_STATE_SIZE)
    state[sk.SCALE] = 1.0
    sk.sgd_rows(X.indptr, X.indices, X.data, y, order, v, avg_u, state, 0.0, loss.code,
                loss.sigma, loss.theta, loss.params, lam, kind, eta0, 0.0, t0, radius, 1)
    w, total = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    for t, i in enumerate(order, 1):
        eta = 1.0 / (lam * t) if kind == sk.OPTIMAL else eta0
        x = X[i].toarray().ravel()
        w = (1.0 - eta * lam) * w + (eta * y[i] * x if y[i] * (x @ w) < 1.0 else 0.0)
        if radius and np.linalg.norm(w) > radius:
            w *= radius / np.linalg.norm(w)
        total += w
    assert state[sk.AVG_COUNT] == len(order)
    average = (avg_u + state[sk.AVG_C] * v) / state[sk.AVG_COUNT]
    np.testing.assert_allclose(state[sk.SCALE] * v, w, rtol=0, atol=1e-12 * np.abs(w).max())
    np.testing.assert_allclose(average, total / len(order), rtol=0,
                               atol=1e-10 * np.abs(total / len(order)).max())


def test_only_hessian_solvers_copy_the_curved_rows(data, tmp_path, monkeypatch):
    """train_stream has evaluations copy the rows with curvature into memory (for the
    Hessian products) only for the solvers that take them."""
    path = tmp_path / "a9a.h5"
    write_store(path, _source(data, block_rows=300))
    copies = []
    gather = streamssvm.kernels.gather_curved_rows

    def counted(*args):
        copies.append(1)
        return gather(*args)

    monkeypatch.setattr(streamssvm.kernels, "gather_curved_rows", counted)
    for solver in SOLVERS:
        copies.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            streamssvm.train_stream(str(path), loss="logistic", lam=LAM, solver=solver,
                                    max_iter=2, hold=False, progress=False)
        assert bool(copies) == (solver in HESSIAN_PRODUCTS), solver


def _small_problem():
    X = sp.random(60, 8, density=0.5, random_state=0, format="csr") * 2.0
    w = np.random.default_rng(0).standard_normal(8)
    y = np.where(X @ w + 0.3 * np.random.default_rng(1).standard_normal(60) >= 0, 1, -1)
    y[:2] = 1, -1
    return X, y


def test_sgd_schedules_refuse_what_would_divide_by_zero_or_diverge():
    """The optimal schedule's first step is 0 when the loss's slope at the typical weight
    overflows (ZeroDivisionError before); power_t NaN turned w into NaN; a step far too
    large for the data ends in a clear error, not in a model of NaNs."""
    X, y = _small_problem()
    for options in (dict(lam=1e-12), dict(lam=1e-3, sigma=1e-3)):
        with pytest.raises(ValueError, match="optimal schedule's first step is 0.*eta0"):
            streamssvm.train_stream(X, y, loss="exponential", solver="sgd", progress=False,
                                    **options)
    for power_t in (np.nan, -5.0):
        with pytest.raises(ValueError, match="power_t must be finite and >= 0"):
            streamssvm.train_stream(X, y, solver="sgd", learning_rate="invscaling",
                                    power_t=power_t, progress=False)
    with pytest.raises(FloatingPointError, match="svrg diverged.*lower the step size"):
        streamssvm.train_stream(X, y, loss="exponential", solver="svrg", step=10.0, lam=1e-3,
                                max_iter=5, progress=False)


def test_an_eta0_its_schedule_does_not_use_is_refused(tmp_path):
    """train_stream(solver="sgd", eta0=...) ran the optimal schedule (the default) without
    it, as OnlineTrainer did; the command line refused --step there. Left out, eta0 is
    accepted with any schedule, also from a trainer's state saved with its old default."""
    X, y = _small_problem()
    message = (r"^eta0 \(--step\) is the step of the learning_rate schedules 'constant' and "
               r"'invscaling'; '{}' takes none: leave eta0 out, or choose one of them$")
    for options in (dict(), dict(learning_rate="optimal")):
        with pytest.raises(ValueError, match=message.format("optimal")):
            streamssvm.train_stream(X, y, solver="sgd", eta0=0.5, progress=False, **options)
    with pytest.raises(ValueError, match=message.format("optimal")):
        streamssvm.OnlineTrainer(eta0=0.5)
    with pytest.raises(ValueError, match=message.format("pegasos")):
        streamssvm.OnlineTrainer(solver="pegasos", eta0=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for schedule in ("optimal", "constant"):
            model = streamssvm.train_stream(X, y, solver="sgd", learning_rate=schedule,
                                            max_iter=2, progress=False)
            assert model.params["learning_rate"] == schedule
    _assert_old_state_resumes(tmp_path, streamssvm.OnlineTrainer(seed=1), X, y, "eta0", 0.01)


def _assert_old_state_resumes(tmp_path, trainer, X, y, option, old_default):
    """``trainer``'s state saved as before ``option`` defaulted to None (holding
    ``old_default``) loads, and goes on as the trainer itself does."""
    trainer.partial_fit(X, y).save(tmp_path / "state.npz")
    with np.load(tmp_path / "state.npz") as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["options"][option] = old_default
    np.savez(tmp_path / "old.npz", **dict(arrays, meta=json.dumps(meta)))
    resumed = streamssvm.OnlineTrainer.load(tmp_path / "old.npz").partial_fit(X, y)
    assert np.array_equal(resumed.model().coef_, trainer.partial_fit(X, y).model().coef_)


def test_a_power_t_its_schedule_does_not_use_is_refused(tmp_path):
    """power_t is invscaling's exponent: train_stream and OnlineTrainer ran the other
    schedules without it. Left out, it is accepted with any schedule (0.5 for invscaling),
    also from a trainer's state saved with its old default."""
    X, y = _small_problem()
    message = (r"^power_t is the exponent of the learning_rate schedule 'invscaling'; '{}' "
               r"takes none: leave power_t out, or choose it$")
    for schedule in (None, "optimal", "constant"):
        options = dict(learning_rate=schedule) if schedule else {}
        with pytest.raises(ValueError, match=message.format(schedule or "optimal")):
            streamssvm.train_stream(X, y, solver="sgd", power_t=0.9, progress=False, **options)
        with pytest.raises(ValueError, match=message.format(schedule or "optimal")):
            streamssvm.OnlineTrainer(power_t=0.9, **options)
    with pytest.raises(ValueError, match=message.format("pegasos")):
        streamssvm.OnlineTrainer(solver="pegasos", power_t=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        runs = [streamssvm.train_stream(X, y, solver="sgd", learning_rate="invscaling",
                                        max_iter=2, progress=False, **options).coef_
                for options in (dict(), dict(power_t=0.5), dict(power_t=0.9))]
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[0], runs[2])
    _assert_old_state_resumes(tmp_path, streamssvm.OnlineTrainer(learning_rate="constant", seed=1),
                              X, y, "power_t", 0.5)


@pytest.mark.parametrize("solver", ["saga", "svrg"])
@pytest.mark.parametrize("times", [1.0, 2.0])
def test_a_step_of_one_over_lambda_or_more_is_refused(solver, times):
    """At step = 1 / lam the L2 term's shrink of w's scale is 0, and the kernels divided
    by it: a bare ZeroDivisionError (found by a probe). Such steps are beyond 1 / L_max."""
    X, y = _small_problem()
    with pytest.raises(ValueError, match=r"step must be below 1 / lam = 2,"):
        streamssvm.train_stream(X, y, loss="logistic", solver=solver, step=times * 2.0,
                                lam=0.5, progress=False)


@pytest.mark.parametrize("solver", ["saga", "svrg"])
def test_a_loss_without_lipschitz_gradient_asks_for_a_step_by_both_names(solver):
    X, y = _small_problem()
    with pytest.raises(ValueError, match=r"no Lipschitz gradient: give a step size "
                                         r"\(step=\.\.\. / --step\)"):
        streamssvm.train_stream(X, y, loss="exponential", solver=solver, progress=False)


def test_sdca_divergence_names_the_data_and_lambda_not_a_step_size():
    """SDCA has no step size: where its objective overflows (values of 1e152 at lambda
    1e-8), the error said to lower one. Found by a probe."""
    X, y = _small_problem()
    with pytest.raises(FloatingPointError, match="sdca diverged.*raise lambda or scale the data"):
        streamssvm.train_stream(X * 1e152, y, loss="psi_g", lam=1e-8, solver="sdca",
                                max_iter=10, progress=False)


@pytest.mark.parametrize("lam", [1e-8, 1e-10, 1e-12])
def test_newton_reaches_the_optimum_at_small_lambda(lam):
    """CG's breakdown test was absolute (d.Hd <= 1e-16): with the preconditioner's
    M ~ diag(H) / lambda the directions are tiny at small lambda, and Newton stopped
    after a zero step far from the optimum ("objective decrease too small"); it is relative
    to r.M^-1 r now. Checked against scipy's L-BFGS-B on the same objective."""
    from scipy.optimize import minimize

    X, y = _small_problem()
    loss = get_loss("psi_g")

    def f(w):
        p, dp, _ = loss.derivatives(y * (X @ w))
        return 0.5 * lam * w @ w + p.mean(), lam * w + X.T @ (dp * y) / len(y)

    best = minimize(f, np.zeros(8), jac=True, method="L-BFGS-B",
                    options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000)).fun
    model = streamssvm.train_stream(X, y, lam=lam, solver="newton", tol=1e-6, progress=False)
    assert model.params["converged"]
    assert abs(model.params["objective"] - best) <= 1e-7 * best


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("loss, limit", [("psi_g:sigma=1e-17", "hinge"),
                                         ("psi_g:sigma=1e-30", "hinge"),
                                         ("smooth_absolute:sigma=1e-17",
                                          "smooth_absolute:sigma=1e-6")])
def test_sdca_steps_where_sigma_is_below_the_margins_resolution(loss, limit):
    """psi' jumps from -1 to 0 between neighbouring floats: the step's first-order slope
    was then far off (alpha off by up to 0.96), and SDCA ended worse than w = 0 (f 3.8-25;
    132 for the smooth absolute loss, whose f here is below 1). Now the step takes the
    slope its equation gives, within the conjugate's domain: the run is the nonsmooth
    limit's (psi_G's that of the hinge, with its clip for a step, epoch for epoch)."""
    X, y = _small_problem()
    runs = [streamssvm.train_stream(X, y, loss=name, solver="sdca", lam=1e-3, max_iter=500,
                                    gap_tol=1e-7, progress=False) for name in (loss, limit)]
    gaps = [np.array([h["gap"] for h in m.history if h.get("gap") is not None]) for m in runs]
    assert np.all(np.isfinite(gaps[0])) and gaps[0].min() >= 0.0
    assert runs[0].params["objective"] == pytest.approx(runs[1].params["objective"], rel=1e-3)
    if limit == "hinge":
        assert np.allclose(gaps[0], gaps[1], rtol=1e-9, atol=1e-15)
        assert runs[0].params["converged"] and gaps[0][-1] <= 1e-7 * runs[0].params["objective"]


@pytest.mark.parametrize("loss", ["psi_g:sigma=0.015625", "hinge", "squared_hinge"])
def test_sdca_sweep_settles_a_row_only_while_its_step_stays_zero_within_reach(loss):
    """A sweep marks a row settled when its step is zero at its margin and as far again
    towards the kink as the margin moved since the row's last step: not when that reach
    crosses the kink (there alpha would move), nor at the row's first step (NaN: no
    reach), nor for a row at the kink. It keeps the margin after the step for the next."""
    from streamssvm.solvers.sdca import _slopes

    named = get_loss(loss)
    x, y = sp.csr_matrix(np.eye(3)), np.array([1.0, 1.0, -1.0])
    objective = _objective(InMemorySource(x, y), loss)
    # margins far past the kink, just past its bend (8.6 sigma), at the kink; alpha_i
    # = -psi'(margin_i), so that every step is zero
    margins = named.theta + np.array([2.0, 0.2, 0.0])
    dual = -named.derivatives(margins)[1]
    for reach, expected in ((np.nan, [False, False, False]), (0.05, [True, True, False]),
                            (-0.05, [True, True, False]), (1.0, [True, False, False]),
                            (3.0, [False, False, False])):
        settled, w, alpha, last = np.zeros(3, bool), margins * y, dual.copy(), margins + reach
        sk.sdca_rows(x.indptr, x.indices, x.data, y, np.arange(3), 0, alpha, w,
                     *objective.loss_args, 1.0 / (objective.lam * 3), *_slopes(named),
                     objective.curvature_floor, last, settled)
        assert np.allclose(w, margins * y, rtol=1e-12, atol=0) and np.allclose(alpha, dual)
        assert np.allclose(last, margins, rtol=1e-12, atol=0)
        assert list(settled) == expected, reach


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["gd", "agd", "lbfgs", "newton"])
def test_line_search_solvers_stop_at_the_optimum_with_the_reason(solver):
    """With tol = 0 the gradient rule never stops a run: at the optimum, either the line
    search finds no step (the history's last entry: a rejected iteration of step 0) or
    the step no longer changes f (its relative change below the solver's limit). Both
    end the run before max_iter, with the reason as its message."""
    X, y = _small_problem()
    model = streamssvm.train_stream(X, y, loss="logistic", lam=1e-2, solver=solver, tol=0.0,
                                    max_iter=100_000, progress=False)
    message, last = model.params["message"], model.history[-1]
    assert message in ("line search failed", "objective decrease too small")
    assert model.params["n_iter"] < 100_000
    if message == "line search failed":
        assert not last["accepted"] and last["step"] == 0.0
        assert model.history[-2]["iteration"] == last["iteration"]
    else:
        assert last["accepted"] and solver != "agd"  # AGD has no such rule
        rtol = 1e-12 if solver == "newton" else 1e-15
        assert abs(model.history[-2]["f"] - last["f"]) <= rtol * abs(last["f"])
    best = min(h["f"] for h in model.history)
    assert model.params["objective"] <= best * (1 + 1e-12)


@pytest.mark.parametrize("loss", ["psi_g", "squared_hinge", "logistic", "hinge"])
@pytest.mark.parametrize("overlap", [False, True])
def test_sdca_closes_the_gap_with_an_empty_row(loss, overlap):
    """An empty row's alpha was never stepped (its norm is 0), so the gap stayed at
    psi(0) / n for it and gap_tol never stopped the run (w8a: 8% of its rows are empty).
    Its step is alpha = -psi'(0): the gap closes, to the optimum of the rows' problem."""
    X, y = _small_problem()
    X = X.tolil()
    X[0, :] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    assert X.indptr[1] == 0
    model = streamssvm.train_stream(X, y, loss=loss, lam=1e-2, solver="sdca", gap_tol=1e-6,
                                    tol=0.0, max_iter=300, overlap=overlap, progress=False)
    gap = model.history[-1]["gap"]
    assert model.params["message"] == "duality gap below gap_tol"
    assert 0.0 <= gap <= 1e-6 * model.params["objective"]
    if loss != "hinge":
        reference = streamssvm.train_stream(X, y, loss=loss, lam=1e-2, solver="newton",
                                            tol=1e-10, progress=False)
        assert reference.params["objective"] <= model.params["objective"]
        assert model.params["objective"] - reference.params["objective"] <= gap + 1e-12


@pytest.mark.parametrize("eval_every", [0, 120, 200])
def test_sdca_shrinks_only_with_evaluations_to_bring_rows_back(data, optimum, eval_every):
    """Rows a sweep settles come back only at an evaluation. With none before the last
    epoch (eval_every 0, all the run's epochs or more), a row settled
    too early stayed skipped for good, and the run ended far above the optimum while its
    steps had stopped (a9a, squared hinge: 1e-3 above it after 300 epochs; found by a
    probe). Such a run now sweeps every row, as one without shrinking does, to the bit."""
    n = data[0].shape[0]
    runs = []
    for shrinking in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs.append(sdca(_objective(_source(data), "squared_hinge"), tol=0.0, max_iter=120,
                             eval_every=eval_every, shrinking=shrinking))
    assert all(h["visited"] == n for h in runs[0].history[1:])
    assert np.array_equal(runs[0].w, runs[1].w)
    assert runs[0].f - optimum("squared_hinge", False) <= 1e-9 * runs[0].f


def test_a_bar_written_to_a_log_draws_a_line_every_ten_seconds(data, python, python_env):
    """Not on a terminal, a solver's bar was redrawn at every iteration (set_postfix forced
    it): 300 quick iterations wrote 312 lines into a batch job's log. (``data``: skipped,
    as the others, where the shared data is missing; the child loads it itself.)"""
    script = ("import warnings, streamssvm; from shared_data import load_shared; "
              "warnings.simplefilter('ignore'); X, y = load_shared('a9a', n_rows=2000); "
              "streamssvm.train_stream(X, y, solver='gd', tol=0.0, max_iter=150, lam=1e-3, "
              "progress=True); streamssvm.train_stream(X, y, solver='sgd', tol=0.0, "
              "max_iter=60, lam=1e-3, eval_every=1, progress=True)")
    env = dict(python_env, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)) + os.pathsep
               + python_env["PYTHONPATH"])
    run = subprocess.run([python, "-c", script], env=env, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    lines = run.stderr.count(b"\r")
    assert lines <= 8, lines  # each bar: its start, its end, and one every 10 s
    assert b"150/" in run.stderr or b"150it" in run.stderr
