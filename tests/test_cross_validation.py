"""cross_validate: folds, warm paths against cold fits, a brute-force search, the refit,
stores against matrices, bad inputs, the command line (cv, train --lam auto), SmoothSVCCV."""

import io
import lzma
import math

import numpy as np
import pytest

from streamssvm import InMemorySource, Model, cross_validate, train_stream
from streamssvm.cli import main
from streamssvm.data import RowSubset, write_store
from streamssvm.datasets import a9a_paths
from streamssvm.selection import fold_numbers

N_ROWS = 1500
LAMS = (1e-1, 1e-2, 1e-3, 1e-4)
SIGMAS = (0.5, 2.0 ** -3)


@pytest.fixture(scope="module")
def a9a():
    """The first rows of the shipped a9a (needs no ../shared)."""
    from sklearn.datasets import load_svmlight_file

    with lzma.open(a9a_paths()[0]) as fh:
        X, y = load_svmlight_file(io.BytesIO(fh.read()), n_features=123)
    return X[:N_ROWS].tocsr(), y[:N_ROWS]


@pytest.fixture(scope="module")
def a9a_store(a9a, tmp_path_factory):
    X, y = a9a
    return str(write_store(tmp_path_factory.mktemp("cv") / "a9a.h5", InMemorySource(X, y)))


@pytest.fixture(scope="module")
def path_result(a9a):
    X, y = a9a
    return cross_validate(X, y, loss="psi_g", lams=LAMS, sigmas=SIGMAS, folds=4, seed=3,
                          progress=False)


class CountingSource(InMemorySource):
    """An in-memory source that counts the blocks read: a pass shows as reads."""

    reads = 0

    def read_block(self, k):
        CountingSource.reads += 1
        return super().read_block(k)


def test_folds_are_disjoint_cover_the_rows_and_are_stratified(a9a):
    _, y = a9a
    class_index = (y > 0).astype(np.intp)
    folds = fold_numbers(5, class_index, (-1.0, 1.0), 7, "a9a")
    assert folds.shape == (N_ROWS,) and set(np.unique(folds)) == set(range(5))
    rows = [np.flatnonzero(folds == f) for f in range(5)]
    assert sum(len(r) for r in rows) == N_ROWS  # every row in exactly one fold
    np.testing.assert_array_equal(np.sort(np.concatenate(rows)), np.arange(N_ROWS))
    for c in (0, 1):
        per_fold = np.bincount(folds[class_index == c], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    np.testing.assert_array_equal(folds, fold_numbers(5, class_index, (-1.0, 1.0), 7, "a9a"))
    assert np.any(folds != fold_numbers(5, class_index, (-1.0, 1.0), 8, "a9a"))


def test_result_table_and_cv_results(path_result):
    r = path_result
    assert r.accuracy.shape == (len(SIGMAS), len(LAMS), 4) and not np.isnan(r.accuracy).any()
    np.testing.assert_array_equal(r.lams, LAMS)
    assert r.sigmas == SIGMAS and r.converged.all()
    mean = r.mean_accuracy
    i, j = SIGMAS.index(r.best_sigma), LAMS.index(r.best_lam)
    assert r.best_accuracy == mean[i, j] == np.nanmax(mean)
    assert r.best_std == pytest.approx(r.accuracy[i, j].std())
    table = r.table()
    # the header, a line per point, the shared passes, the best point
    assert len(table.splitlines()) == 1 + len(SIGMAS) * len(LAMS) + 1 + 1
    assert table.count("*") == 1 and "best: lambda" in table
    assert f"{r.data_passes} passes over the data" in table
    cv = r.cv_results_
    assert len(cv["params"]) == len(SIGMAS) * len(LAMS)
    assert cv["rank_test_score"][np.argmax(cv["mean_test_score"])] == 1
    np.testing.assert_array_equal(cv["split2_test_score"],
                                  [r.accuracy[i, j, 2] for i in range(2) for j in range(4)])


def test_warm_path_ends_at_the_cold_fits_within_the_stopping_rule(a9a, path_result):
    """L is lambda-strongly convex: a model with gradient norm g is within g^2 / (2 lambda)
    of the optimal objective, so a warm and a cold fit of one point differ by at most
    max(g_warm, g_cold)^2 / (2 lambda) in objective."""
    X, y = a9a
    r = path_result
    source = InMemorySource(X, y)
    for f in range(r.n_folds):
        inside = RowSubset(source, np.flatnonzero(r.folds != f))
        for i, sigma in enumerate(SIGMAS):
            for j, lam in enumerate(LAMS):
                cold = train_stream(inside, loss="psi_g", sigma=sigma, lam=lam, progress=False)
                g = max(cold.params["grad_norm"], r.grad_norm[i, j, f])
                bound = g ** 2 / (2 * lam)
                assert abs(cold.params["objective"] - r.objective[i, j, f]) <= bound, (f, i, j)
    # the warm path saves work: fewer passes than cold fits over the whole grid
    assert r.passes.sum() < sum(
        train_stream(RowSubset(source, np.flatnonzero(r.folds != 0)), loss="psi_g",
                     sigma=s, lam=lam, progress=False).params["passes"]
        for s in SIGMAS for lam in LAMS) * r.n_folds


def test_best_point_matches_a_brute_force_search(a9a):
    X, y = a9a
    options = dict(loss="psi_g", tol=1e-7, solver="newton")
    r = cross_validate(X, y, lams=LAMS, sigmas=SIGMAS, folds=3, seed=1, progress=False,
                       refit=False, **options)
    assert r.model is None
    source = InMemorySource(X, y)
    brute = np.empty((len(SIGMAS), len(LAMS), 3))
    for i, sigma in enumerate(SIGMAS):
        for j, lam in enumerate(LAMS):
            for f in range(3):
                model = train_stream(RowSubset(source, np.flatnonzero(r.folds != f)),
                                     sigma=sigma, lam=lam, progress=False, **options)
                brute[i, j, f] = model.score(RowSubset(source, np.flatnonzero(r.folds == f)))
    np.testing.assert_allclose(r.accuracy, brute, atol=1.5 / (N_ROWS / 3))
    mean = brute.mean(axis=2)
    # the highest mean accuracy; ties: the largest lambda, then the largest sigma
    j, i = max(((j, i) for j in range(len(LAMS)) for i in range(len(SIGMAS))),
               key=lambda p: (mean[p[1], p[0]], -p[0], -p[1]))
    assert (r.best_lam, r.best_sigma) == (LAMS[j], SIGMAS[i])


def test_refit_is_train_stream_at_the_best_point(a9a, path_result):
    X, y = a9a
    r = path_result
    wider = tuple(s for s in SIGMAS if s > r.best_sigma)
    expected = train_stream(X, y, loss="psi_g", sigma=r.best_sigma, lam=r.best_lam,
                            sigma_path=wider, progress=False)
    np.testing.assert_allclose(r.model.coef_, expected.coef_, rtol=1e-12, atol=1e-15)
    assert r.model.params["lam"] == r.best_lam and r.model.params["sigma"] == r.best_sigma


def test_store_and_matrix_give_the_same_table(a9a, a9a_store):
    X, y = a9a
    options = dict(loss="squared_hinge", folds=3, seed=5, progress=False, patience=2,
                   max_lams=8)
    from_matrix = cross_validate(X, y, **options)
    from_store = cross_validate(a9a_store, **options)
    assert from_store.lam_max == pytest.approx(from_matrix.lam_max, rel=1e-12)
    np.testing.assert_array_equal(from_store.folds, from_matrix.folds)
    np.testing.assert_array_equal(from_store.lams, from_matrix.lams)
    np.testing.assert_allclose(from_store.accuracy, from_matrix.accuracy, atol=1e-12)
    np.testing.assert_allclose(from_store.mean_loss, from_matrix.mean_loss, rtol=1e-9)
    assert (from_store.best_lam, from_store.best_sigma) == (from_matrix.best_lam,
                                                            from_matrix.best_sigma)
    assert from_store.sigmas == (None,)


def test_default_grid_starts_trivial_and_stops(a9a):
    """Above lambda_max the folds' models predict as sign(g.x): the first points score the
    same; the path stops after `patience` points without a higher mean accuracy."""
    X, y = a9a
    r = cross_validate(X, y, loss="psi_g", sigmas=(2.0 ** -3,), folds=3, patience=3,
                       max_lams=30, progress=False)
    n = N_ROWS
    assert r.lams[0] >= r.lam_max and r.lams[0] / 2 < r.lam_max
    c = np.log2(1 / (r.lams * n))  # on LIBLINEAR's C grid of powers of 2
    np.testing.assert_allclose(c, np.round(c), atol=1e-9)
    mean = r.mean_accuracy[0]
    assert mean[0] == mean[1]  # the trivial model's plateau
    best = int(np.argmax(mean))
    assert len(r.lams) < 30 and len(r.lams) - 1 - best == 3
    assert np.all(mean[best + 1:] <= mean[best])


def test_multiclass_paths(tmp_path):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:400] / 16.0, y[:400]
    r = cross_validate(X, y, loss="squared_hinge", lams=(1e-1, 1e-3), folds=3, progress=False)
    assert r.model.multiclass and r.best_accuracy > 0.85
    assert r.model.score(X, y) > r.best_accuracy - 0.1


@pytest.mark.parametrize("options, message", [
    (dict(lams=(1e-2, 0.0)), "positive"),
    (dict(lams=(1e-2, -1e-3)), "positive"),
    (dict(lams=(1e-2, math.inf)), "finite"),
    (dict(lams=(1e-2, math.nan)), "finite"),
    (dict(lams=(1e-3, 1e-2)), "decreasing"),
    (dict(lams=(1e-2, 1e-2)), "twice"),
    (dict(lams=()), "empty"),
    (dict(lams="0.1"), "sequence"),
    (dict(sigmas=(0.125, 0.5)), "decreasing"),
    (dict(sigmas=(0.5, -1.0)), "sigma"),
    (dict(loss="squared_hinge", sigmas=(0.5,)), "takes no sigma"),
    (dict(folds=1), "cv"),
    (dict(folds=True), "cv"),
    (dict(folds=N_ROWS + 1), "at most one fold per row"),
    (dict(folds=np.zeros(N_ROWS, int)), "at least 2 folds"),
    (dict(lam_ratio=1.0), "lam_ratio"),
    (dict(patience=0), "patience"),
    (dict(w0=np.zeros(123)), "set by cross_validate"),
])
def test_bad_input_is_refused_before_any_pass(a9a, options, message):
    X, y = a9a
    CountingSource.reads = 0
    with pytest.raises(ValueError, match=message):
        cross_validate(CountingSource(X, y), progress=False, **options)
    assert CountingSource.reads == 0


def test_a_class_in_one_fold_only_is_refused_before_any_pass(a9a):
    X, y = a9a
    y = np.where(np.arange(N_ROWS) == 10, 5.0, y)  # one row of a third class
    CountingSource.reads = 0
    with pytest.raises(ValueError, match="class 5 are in fold"):
        cross_validate(CountingSource(X, y), lams=LAMS, progress=False)
    folds = np.arange(N_ROWS) % 3
    positive = np.flatnonzero(y[:N_ROWS] > 0)
    folds[positive] = 0  # every positive row in fold 0
    with pytest.raises(ValueError, match="class 1 are in fold 0"):
        cross_validate(CountingSource(X, a9a[1]), lams=LAMS, folds=folds, progress=False)
    assert CountingSource.reads == 0


def test_cli_cv_prints_the_table_and_the_best_point(a9a_store, capsys, tmp_path):
    status = main(["cv", a9a_store, "--loss", "psi_g", "--lams", "0.1,0.001",
                   "--sigmas", "0.5,2^-3", "--folds", "3", "--quiet", "--json",
                   str(tmp_path / "cv.json")])
    out = capsys.readouterr().out
    assert status == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[:3] == ["sigma", "lambda", "C=1/(lam"]
    assert len(lines) == 1 + 4 + 1 + 1 and lines[-1].startswith("best: lambda")
    import json

    record = json.loads((tmp_path / "cv.json").read_text())
    assert record["best_lam"] in (0.1, 0.001) and len(record["accuracy"]) == 2
    # a store's passes, shared by the folds: fewer than the folds' own
    fold_passes = sum(p for plane in record["passes"] for row in plane for p in row)
    assert lines[-2] == (f"{record['data_passes']} passes over the data, shared by the "
                         f"folds (their training passes: {fold_passes})")
    assert record["data_passes"] < fold_passes


def test_cli_cv_takes_liblinears_stopping_rule(a9a_store, capsys, tmp_path):
    import json

    argv = ["cv", a9a_store, "--loss", "squared_hinge", "--lams", "0.1,0.001,1e-5",
            "--folds", "3", "--quiet", "--tol", "0.01"]
    records = []
    for extra in ([], ["--liblinear-tol"]):
        path = tmp_path / f"cv{len(records)}.json"
        assert main(argv + extra + ["--json", str(path)]) == 0
        records.append(json.loads(path.read_text()))
    capsys.readouterr()
    rule = cross_validate(a9a_store, loss="squared_hinge", lams=(0.1, 0.001, 1e-5), folds=3,
                          tol=0.01, liblinear_tol=True, refit=False, progress=False)
    assert records[1]["passes"] == rule.passes.tolist() != records[0]["passes"]


def test_cli_cv_refuses_an_unsorted_grid(a9a_store, capsys):
    assert main(["cv", a9a_store, "--lams", "0.001,0.1", "--quiet"]) == 1
    assert "--lams" in capsys.readouterr().err


def test_cli_train_lam_auto_selects_then_fits(a9a_store, capsys, tmp_path):
    out = tmp_path / "m.npz"
    status = main(["train", a9a_store, "-o", str(out), "--loss", "squared_hinge",
                   "--lam", "auto", "--cv", "3"])
    printed = capsys.readouterr().out
    assert status == 0 and "best: lambda" in printed
    model = Model.load(out)
    chosen = float(printed.split("best: lambda ")[1].split()[0])
    assert model.params["lam"] == pytest.approx(chosen, rel=1e-5)
    r = cross_validate(a9a_store, loss="squared_hinge", folds=3, progress=False)
    assert model.params["lam"] == r.best_lam
    np.testing.assert_allclose(model.coef_, r.model.coef_, rtol=1e-12, atol=1e-15)


def test_plot_needs_matplotlib_or_writes_a_png(path_result, tmp_path):
    target = tmp_path / "cv.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="matplotlib"):
            path_result.plot(target)
        return
    path_result.plot(target)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_smoothsvccv_exposes_the_chosen_point(a9a):
    from streamssvm import SmoothSVCCV

    X, y = a9a
    y = np.where(y > 0, "yes", "no")
    estimator = SmoothSVCCV(lams=LAMS, sigmas=SIGMAS, cv=3, fit_intercept=False,
                            random_state=4).fit(X, y)
    r = cross_validate(X, y, lams=LAMS, sigmas=SIGMAS, folds=3, seed=4, progress=False)
    assert (estimator.lam_, estimator.sigma_) == (r.best_lam, r.best_sigma)
    np.testing.assert_array_equal(estimator.scores_, r.accuracy)
    assert estimator.cv_results_["params"] == r.cv_results_["params"]
    np.testing.assert_allclose(estimator.coef_[0], r.model.coef_, rtol=1e-12, atol=1e-15)
    assert set(estimator.predict(X[:50])) <= {"yes", "no"}
    assert not hasattr(estimator, "partial_fit")


@pytest.mark.parametrize("lockstep", [True, False])
def test_unconverged_fits_are_warned_of_once_at_the_callers_line(a9a_store, lockstep):
    """Each unconverged fold warned on its own, from threading.py's line in lockstep."""
    import warnings

    from streamssvm import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = cross_validate(a9a_store, loss="squared_hinge", lams=LAMS, folds=3, refit=False,
                           progress=False, solver="tron", max_iter=1, lockstep=lockstep)
    found = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(found) == 1 and found[0].filename == __file__
    stopped = int((~r.converged).sum())
    assert 0 < stopped and str(found[0].message).startswith(
        f"{stopped} of {r.converged.size} fits stopped unconverged")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert cross_validate(a9a_store, loss="squared_hinge", lams=LAMS, folds=3,
                              refit=False, progress=False).converged.all()
