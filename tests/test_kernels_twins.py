"""The kernels compiled twice (streamssvm/kernels/_twins.py): the serial and the parallel
twin of each agree to the bit on random inputs, a call takes the serial twin below the
threshold and the parallel one at it once cached or paid for, and training on small data
runs no parallel kernel."""

import json
import math
import subprocess
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from streamssvm import _jit_cache, kernels, train_stream
from streamssvm.kernels import _twins, linear, vector
from streamssvm.losses._scalar import LOGISTIC, PSI_G, SQUARED_HINGE
from streamssvm.solvers import ConvergenceWarning

N_PARTS = 3
PARAMS = np.empty(0)


def problem(n=300, d=200, per_row=12, seed=0, dtype=np.float32, by_row=False):
    """A random CSR block (a few rows empty, sorted indices), labels, row weights."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 2 * per_row, n)
    lengths[rng.choice(n, n // 20, replace=False)] = 0
    indices = np.concatenate([np.sort(rng.choice(d, k, replace=False)) for k in lengths])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    if by_row:  # one value a row (the transpose then keeps the values by row)
        data = np.repeat(rng.uniform(0.5, 2.0, n), lengths)
    else:
        data = rng.uniform(-1.0, 2.0, indptr[-1])
    X = sp.csr_matrix((data.astype(dtype), indices.astype(np.int32), indptr), shape=(n, d))
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0).astype(np.float32)
    return X, y, rng.uniform(0.5, 2.0, n)


def both(monkeypatch, call):
    """``call()`` with every kernel's serial twin, then with its parallel twin."""
    results = []
    for below in (math.inf, 0):
        monkeypatch.setattr(_twins, "SERIAL_BELOW", below)
        results.append(call())
    return results


def assert_agree(serial, parallel):
    """Equal to the bit, tuples and arrays entry by entry."""
    if isinstance(serial, tuple):
        assert len(serial) == len(parallel)
        for a, b in zip(serial, parallel):
            assert_agree(a, b)
    else:
        np.testing.assert_array_equal(serial, parallel)


def state_at(X, y, w, code, weights=None):
    """loss_grad's outputs at ``w`` (margins, curvature, the scatter's parts)."""
    n, d = X.shape
    margins, curvature, out = np.empty(n), np.empty(n), np.zeros((N_PARTS, d + 1))
    loss = kernels.loss_grad(X.indptr, X.indices, X.data, y, w, 1.0, code, 0.5, 0.0, PARAMS,
                             0.0, margins, curvature, out, weights)
    return loss, margins, curvature, out


@pytest.mark.parametrize("code", [SQUARED_HINGE, LOGISTIC, PSI_G])
@pytest.mark.parametrize("weighted", [False, True])
def test_row_kernels_agree(monkeypatch, code, weighted):
    X, y, c = problem(seed=code)
    weights = c if weighted else None
    n, d = X.shape
    rng = np.random.default_rng(1)
    w, s = rng.normal(size=d + 1), rng.normal(size=d + 1)
    block = (X.indptr, X.indices, X.data)

    def rows():
        loss, margins, curvature, out = state_at(X, y, w, code, weights)
        hv, diag = np.zeros((N_PARTS, d + 1)), np.zeros((N_PARTS, d + 1))
        kernels.hess_vec(*block, curvature, s, 1.0, hv)
        kernels.hess_diag(*block, curvature, 1.0, diag)
        decision = np.empty(n)
        kernels.decision(*block, w, 1.0, decision)
        classes = np.empty((n, 4))
        kernels.decision_classes(*block, rng_weights(d), classes)
        coef, m2, c2 = np.empty(n), np.empty(n), np.empty(n)
        loss_c = kernels.loss_coef(*block, y, w, 1.0, code, 0.5, 0.0, PARAMS, 0.0, m2, c2,
                                   coef, N_PARTS, weights)
        m0, c0, out0 = np.empty(n), np.empty(n), np.zeros((N_PARTS, d + 1))
        loss0 = kernels.loss_grad(*block, y, w, 1.0, code, 0.5, 0.0, PARAMS, 0.0, m0, c0, out0,
                                  weights, True)  # at w = 0
        curved = np.empty(n)
        kernels.curved_products(*block, curvature, s, 1.0, N_PARTS, curved)
        merged = np.empty(d + 1)
        kernels.merge_parts(out, w, 0.1, 0.5, True, merged)
        return (loss, margins, curvature, hv, diag, decision, classes, loss_c, m2, c2, coef,
                loss0, m0, c0, out0, curved, merged, out)

    def sums():
        margins = state_at(X, y, w, code, weights)[1]
        trial = state_at(X, y, s, code, weights)[1]
        return (kernels.loss_sum(*block, y, w, 1.0, code, 0.5, 0.0, PARAMS, weights),
                kernels.loss_sum_along(margins, trial, 0.3, code, 0.5, 0.0, PARAMS, weights))

    assert_agree(*both(monkeypatch, rows))
    assert_agree(*both(monkeypatch, sums))  # reduced in fixed ranges (linear.SUM_PARTS)


def rng_weights(d, n_classes=4):
    return np.random.default_rng(2).normal(size=(d + 1, n_classes))


@pytest.mark.parametrize("by_row", [False, True])
@pytest.mark.parametrize("squared", [False, True])
def test_column_kernels_agree(monkeypatch, by_row, squared):
    """The transpose, its copy on the rows with curvature and the products by columns."""
    X, y, c = problem(n=200, d=500, seed=3, by_row=by_row)
    n, d = X.shape
    rng = np.random.default_rng(4)
    w, v = rng.normal(size=d + 1), rng.normal(size=n)
    curvature = np.where(rng.random(n) < 0.5, rng.uniform(0.5, 1.5, n), 0.0)

    def columns():
        cols = kernels.transpose(X.indptr, X.indices, X.data, d, N_PARTS, bucket_bits=6)
        assert (cols[8].shape[0] > 0) == by_row
        space = tuple(np.empty_like(a) for a in cols[:7]) + (np.empty(d, np.int64),)
        curved = kernels.curved_columns(cols, curvature, N_PARTS, space)
        out, out_compact = np.empty(d + 1), np.empty(len(kernels.column_order(curved)) + 1)
        dot = kernels.column_sums(cols, v, squared, 1.0, w, 0.1, 0.5, N_PARTS, out)
        x_compact = rng_compact(len(out_compact))
        dot_compact = kernels.column_sums(curved, v, squared, 1.0, x_compact, 0.1, 0.5,
                                          N_PARTS, out_compact, True)
        xw = kernels.column_products(cols, w, n, N_PARTS)
        direction = rng_compact(len(out_compact) - 1)
        fused = kernels.column_products(curved, direction, n, N_PARTS, True,
                                        rng_compact(len(direction), 6), 0.7)
        margins, curv, coef = np.empty(n), np.empty(n), np.empty(n)
        loss = kernels.loss_coef_by_columns(cols, y, w, 1.0, SQUARED_HINGE, 0.5, 0.0, PARAMS,
                                            0.0, margins, curv, coef, N_PARTS, c)
        return (cols, tuple(np.array(a) for a in curved), out, dot, out_compact, dot_compact,
                xw, fused, direction, loss, margins, curv, coef)

    assert_agree(*both(monkeypatch, columns))


def rng_compact(n, seed=5):
    return np.random.default_rng(seed).normal(size=n)


def test_csr_checks_agree(monkeypatch):
    X = problem(seed=7)[0]
    unsorted = X.indices.copy()
    unsorted[[10, 11]] = unsorted[[11, 10]]
    bad = X.indptr.copy()
    bad[50] = bad[49] - 1
    for indptr, indices in ((X.indptr, X.indices), (X.indptr, unsorted), (bad, X.indices)):
        serial, parallel = both(monkeypatch, lambda indptr=indptr, indices=indices:
                                kernels.csr_checks(indptr, indices, X.data, X.shape[1],
                                                   N_PARTS))
        assert serial == parallel


@pytest.mark.parametrize("preconditioned", [False, True])
def test_vector_kernels_agree(monkeypatch, preconditioned):
    n = 1001
    rng = np.random.default_rng(8)
    g, d0, hd, w = (rng.normal(size=n) for _ in range(4))
    precond = rng.uniform(0.5, 2.0, n) if preconditioned else None
    index = rng.choice(2 * n, n // 3, replace=False)

    def sweeps():
        s, r, z, d = (np.empty(n) for _ in range(4))
        vector.cg_start(g, precond, s, r, z, d, N_PARTS)
        start = (s.copy(), r.copy(), d.copy())
        d[:] = d0
        moved_sums = vector.cg_move(0.3, d, hd, s, r, precond, z, g, N_PARTS)
        direction = np.empty(n)
        vector.cg_direction(0.6, z if preconditioned else r, d, direction, N_PARTS)
        vector.cg_direction(0.6, z if preconditioned else r, d, d, N_PARTS)
        trial = np.empty(n)
        gs = vector.moved(w, s, g, trial, N_PARTS)
        long = rng_compact(2 * n)
        picked = np.empty(len(index))
        norm2 = vector.gather(long, index, picked, N_PARTS)
        norm2_only = vector.gather(long, index, None, N_PARTS)
        placed = np.empty(2 * n)
        vector.place(picked, index, long, 0.4, placed, N_PARTS)
        return (start, s, r, z if preconditioned else 0, d, moved_sums, direction, trial, gs,
                picked, norm2, norm2_only, placed)

    assert_agree(*both(monkeypatch, sweeps))


@pytest.mark.parametrize("solver", ["tron", "newton"])
@pytest.mark.parametrize("wide", [False, True])
def test_training_agrees(monkeypatch, solver, wide):
    """A whole training on the twins of one kind, then of the other: the same model, to
    the bit (the losses' sums reduced in fixed ranges; they agreed to rounding when a
    prange loop reduced them)."""
    X, y, _ = problem(n=400, d=600 if wide else 60, seed=9, dtype=np.float64)

    def train():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = train_stream(X, y, loss="squared_hinge", lam=1e-3, solver=solver,
                                 tol=1e-6, progress=False)
        return model.coef_, model.intercept_

    (w_serial, b_serial), (w_parallel, b_parallel) = both(monkeypatch, train)
    np.testing.assert_array_equal(w_serial, w_parallel)
    assert b_serial == b_parallel



# In a process of its own (numba keeps what it compiled or loaded in the process): which
# twins have run, as {kernel: [twins with a compiled or loaded specialization]}.
RAN = """
import json
import numpy as np
from streamssvm import _jit_cache
from streamssvm.kernels import _twins, linear, vector


def ran():
    out = {}
    for module in (linear, vector):
        for name, value in vars(module).items():
            if hasattr(value, "dispatchers"):
                out[name] = [t for t in ("serial", "parallel")
                             if getattr(value, t).signatures]
    return out
"""

DISPATCH = RAN + """
below = _twins.SERIAL_BELOW
_twins.COMPILE_PARALLEL = True  # the threshold alone, whatever the cache holds
runs = {}
for n in (below - 1, below):
    z, d = np.ones(n), np.ones(n)
    vector.cg_direction(0.5, z, d, d, 2)
    runs[n] = ran()["cg_direction"]
rows = 64  # a block of rows + nonzeros just below the threshold, then at it
for nnz in (below - rows - 2, below - rows - 1):
    indptr = np.linspace(0, nnz, rows + 1).astype(np.int64)
    indices = (np.arange(nnz) % 97).astype(np.int32)
    out = np.zeros((2, 97))
    linear.hess_vec(indptr, indices, np.ones(nnz, np.float32), np.ones(rows), np.ones(97),
                    0.0, out)
    runs[f"hess_vec {_twins.nonzeros(indptr)}"] = ran()["hess_vec"]
print(json.dumps(runs))
"""


def run_child(python, python_env, code):
    done = subprocess.run([python, "-c", code], env=python_env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_serial_twin_runs_below_the_threshold(python, python_env):
    below = _twins.SERIAL_BELOW
    assert run_child(python, python_env, DISPATCH) == {
        str(below - 1): ["serial"], str(below): ["serial", "parallel"],
        f"hess_vec {below - 1}": ["serial"], f"hess_vec {below}": ["serial", "parallel"]}


CACHED = RAN + """
import sys
_twins.COMPILE_PARALLEL = sys.argv[1] == "warmup"
z = np.ones(_twins.SERIAL_BELOW)
runs = []
for pays in (_twins.PARALLEL_PAYS_SECONDS, _twins.PARALLEL_PAYS_SECONDS, 0.0, 0.0):
    _twins.PARALLEL_PAYS_SECONDS = pays
    vector.cg_direction(0.5, z, z, z, 2)
    runs.append(ran()["cg_direction"])
print(json.dumps(runs))
"""


def test_a_parallel_twin_runs_once_cached_or_paid_for(python, python_env, tmp_path):
    """At the threshold, on an empty cache: the serial twin (its compile is the cheaper),
    until it has run PARALLEL_PAYS_SECONDS (0 from the third call; the first call, its
    compile, does not count); the parallel twin from the first call under
    warmup's rule, and then from the cache in a process of its own."""
    env = dict(python_env, NUMBA_CACHE_DIR=str(tmp_path))

    def child(mode):
        done = subprocess.run([python, "-c", CACHED, mode], env=env, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    assert child("first run") == [["serial"], ["serial"], ["serial", "parallel"],
                                  ["serial", "parallel"]]
    assert child("warmup") == [["parallel"]] * 4
    assert child("cached") == [["parallel"]] * 4


SMALL_TRAINING = RAN + """
import warnings
import scipy.sparse as sp
from streamssvm import train_stream

rng = np.random.default_rng(0)
# columns enough (more than plan.GATHER_PER_ROW times the rows) that held data is read
# by its transpose
X = sp.random(300, 1000, density=0.015, format="csr", random_state=rng)
y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
parallel = {}
for solver in ("tron", "newton"):
    for hold in (True, False):  # held (products by columns), streamed (by rows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train_stream(X, y, solver=solver, hold=hold, progress=False)
# every numba function of the package that is parallel and has run
for rel in _jit_cache.kernel_modules():
    module = __import__(_jit_cache._module_name(rel), fromlist=["_"])
    for f in _jit_cache.cached_functions(module):
        if f.targetoptions.get("parallel") and f.signatures:
            parallel[f.py_func.__qualname__] = len(f.signatures)
print(json.dumps({"parallel": parallel, "serial": sorted(
    k for k, twins in ran().items() if "serial" in twins)}))
"""


def test_training_on_small_data_runs_no_parallel_kernel(python, python_env):
    """TRON and Newton on a small matrix, held and streamed: no parallel kernel runs (none
    wakes threads, none is compiled on a first run), the serial twins do."""
    ran = run_child(python, python_env, SMALL_TRAINING)
    assert ran["parallel"] == {}
    assert {"column_sums", "column_products", "loss_grad", "hess_vec", "cg_move",
            "merge_parts"} <= set(ran["serial"]), ran["serial"]


def test_the_twins_are_two_functions_to_the_cache():
    """numba names a cached function's files by its qualified name and line: the twins'
    differ, and the package's cache watch sees both."""
    found = {f.py_func.__qualname__ for f in _jit_cache.cached_functions(linear)}
    assert {"loss_grad.serial", "loss_grad.parallel", "column_sums.serial",
            "column_sums.parallel"} <= found
    assert {f.py_func.__qualname__ for f in _jit_cache.cached_functions(vector)} >= {
        "cg_move.serial", "cg_move.parallel"}
