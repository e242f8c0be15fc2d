"""The extension points of docs/ARCHITECTURE.md, used from outside the package: a solver
registered from this file alone runs through train_stream and the command line (as a
plugin); records that contradict themselves or their function are refused; importing the
package changes nothing in the process."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import streamssvm
from streamssvm.data import InMemorySource
from streamssvm.data.store import write_store
from streamssvm.losses import _scalar
from streamssvm.losses.registry import LossRecord, register_loss
from streamssvm.solvers import ConvergenceWarning, Option, SolverRecord, register, registry
from streamssvm.solvers.common import Run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAM = 0.1


def toy_gd(objective, w0=None, tol=1e-4, abs_tol=None, liblinear_tol=False, max_iter=2000,
           rate=1.0, progress=False):
    """Gradient descent with the step rate / L_max (L_max >= the Lipschitz constant of
    grad L): the oracle's evaluate and smoothness, nothing else."""
    run = Run("toy_gd", objective, w0, tol, abs_tol, liblinear_tol, max_iter, progress,
              curved=False)
    step = rate / objective.smoothness()
    while run.going():
        run.accept(objective.evaluate(run.state.w - step * run.state.grad, curved=False))
        run.record(0, True, step=step)
    return run.result()


TOY = SolverRecord("toy_gd", toy_gd, "full_gradient",
                   options=(Option("rate", float, 1.0, "toy_gd: the step times L_max",
                                   "--toy-rate"),))


def register_toy():
    """The plugin's entry (STREAMSSVM_PLUGINS=test_extension_points:register_toy)."""
    register(TOY)


@pytest.fixture
def own_registry(monkeypatch):
    """The solvers registered by a test are gone after it."""
    monkeypatch.setattr(registry, "_RECORDS", dict(registry._RECORDS))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = np.where(X @ rng.normal(size=8) + 0.3 * rng.normal(size=300) > 0, 1.0, -1.0)
    return X, y


def test_a_registered_solver_runs_through_train_stream(data, own_registry):
    """The toy solver reaches TRON's objective, takes its option and row weights (a
    full-gradient solver does), and is listed with the others."""
    register_toy()
    assert "toy_gd" in streamssvm.solvers.SOLVERS and "toy_gd" not in registry.STOCHASTIC
    options = dict(loss="logistic", lam=LAM, tol=1e-6, progress=False)
    model = streamssvm.train_stream(*data, solver="toy_gd", rate=1.5, **options)
    reference = streamssvm.train_stream(*data, solver="tron", **options)
    assert model.params["solver"] == "toy_gd" and model.params["rate"] == 1.5
    assert model.params["converged"]
    assert model.params["objective"] == pytest.approx(reference.params["objective"], rel=1e-6)
    weighted = streamssvm.train_stream(*data, solver="toy_gd", sample_weight=np.full(300, 2.0),
                                       **options)
    assert weighted.params["converged"]
    with pytest.raises(TypeError, match="solver 'toy_gd' takes no option.*gap_tol"):
        streamssvm.train_stream(*data, solver="toy_gd", gap_tol=1e-3, **options)
    with pytest.raises(ValueError, match="already registered"):
        register_toy()


def test_a_registered_solver_runs_through_the_command_line(data, tmp_path):
    """As a plugin (STREAMSSVM_PLUGINS): ``--solver toy_gd`` and its flag ``--toy-rate``
    exist, and the model says what ran; a flag of another solver is refused, naming it."""
    store, model = tmp_path / "toy.h5", tmp_path / "toy.npz"
    write_store(store, InMemorySource(*data))
    env = dict(os.environ, STREAMSSVM_PLUGINS="test_extension_points:register_toy",
               PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests")]))
    train = [sys.executable, "-m", "streamssvm", "train", str(store), "-o", str(model),
             "--solver", "toy_gd", "--loss", "logistic", "--lam", str(LAM), "--quiet"]
    done = subprocess.run([*train, "--toy-rate", "1.5"], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    params = streamssvm.Model.load(model).params
    assert (params["solver"], params["rate"], params["converged"]) == ("toy_gd", 1.5, True)
    refused = subprocess.run([*train, "--backtrack", "--overwrite"], env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 1
    assert "--solver toy_gd takes no --backtrack (tron)" in refused.stderr
    missing = subprocess.run([*train, "--toy-rate", "0.5"], capture_output=True, text=True,
                             env=dict(env, STREAMSSVM_PLUGINS="no_such_plugin_module"))
    assert missing.returncode == 1
    assert "STREAMSSVM_PLUGINS: cannot import the plugin 'no_such_plugin_module'" in missing.stderr


def test_a_solver_record_that_disagrees_with_its_function_is_refused(own_registry):
    def solve(objective, w0=None, tol=1e-4, abs_tol=None, liblinear_tol=False, max_iter=10,
              rate=1.0, progress=False):
        raise AssertionError("never run")

    cases = [
        (dict(options=(Option("rate", float, 2.0, "the rate"),)), "defaults to 2.0 in the record"),
        (dict(options=()), "takes rate, which its record does not list"),
        (dict(options=(Option("rate", float, 1.0, "r"), Option("other", int, 0, "o"))),
         "takes no option 'other'"),
        (dict(options=(Option("rate", float, 1.0, "r"),), takes_checkpoint=True),
         "takes_checkpoint is True"),
        (dict(options=(Option("rate", float, 1.0, "r"),), kind="dual"), "kind must be one of"),
    ]
    for fields, message in cases:
        fields = dict(dict(kind="full_gradient"), **fields)
        with pytest.raises(ValueError, match=message):
            register(SolverRecord("refused", solve, **fields))
    assert "refused" not in registry.SOLVERS
    with pytest.raises(ValueError, match="already registered"):
        register(SolverRecord("tron", solve, "second_order",
                              options=(Option("rate", float, 1.0, "r"),)))


def _loss_record(**changes):
    fields = dict(name="psi_g_copy", code=_scalar.PSI_G,
                  params=(("sigma", 2.0 ** -3), ("theta", 1.0)), smooth=True, convex=True,
                  classification=True, lipschitz="1/(sigma*sqrt(2*pi))",
                  domain=(-1.0, 0.0, True, True), theta_positive=False, summary="psi_g again")
    return LossRecord(**dict(fields, **changes))


def test_a_loss_record_with_an_inconsistent_property_is_refused():
    """Each property of a loss is stated once; one that contradicts another is refused."""
    assert _loss_record().lipschitz_of(2.0 ** -3) == streamssvm.get_loss("psi_g").lipschitz
    cases = [
        (dict(convex=False), "a convex loss has a conjugate"),
        (dict(domain=None), "a convex loss has a conjugate"),
        (dict(classification=False),
         "classification=False, but its conjugate's domain ends at 0.0"),
        (dict(domain=(-1.0, 1.0, True, True)), "classification=True, but"),
        (dict(lipschitz="1/(width*2)"), "names width: only its width"),
        (dict(lipschitz="1/("), "is not an expression"),
        (dict(lipschitz="-1/sigma"), "is -8.0 at the default width"),
        (dict(code=_scalar.FAMILY), "is not one of the kernels' codes"),
        (dict(params=(("theta", 1.0), ("sigma", 1.0))), "params must be"),
    ]
    for changes, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            _loss_record(**changes)
    with pytest.raises(ValueError, match="already registered"):
        register_loss(_loss_record(name="psi_g"))


def test_import_changes_nothing_and_training_prepares_the_process(data, tmp_path):
    """Importing the package sets no environment variable; training does (once)."""
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    env["PYTHONPATH"] = ROOT
    code = ("import os, numpy as np, streamssvm\n"
            "print(os.environ.get('GOMP_SPINCOUNT'))\n"
            "X = np.array([[1.0], [-1.0]]); y = np.array([1.0, -1.0])\n"
            "streamssvm.train_stream(X, y, solver='newton', progress=False)\n"
            "print(os.environ.get('GOMP_SPINCOUNT'))\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "1000"]
