"""The reproduction of the paper's experiments: protocol, runs on identical folds, reports.

The data set is the first rows of a9a: written to a real store for the runs, and as the
a9a file of ``reproduce.py all --quick``; every training and test set is a RowSubset.
"""

import functools
import importlib
import json
import lzma
import os
import re
import sys

import numba
import numpy as np
import pytest
from numba.core import event as numba_event

from shared_data import DATA, load_shared
from streamssvm.data import InMemorySource, RowSubset, Store, write_store
from streamssvm import train_stream
from streamssvm.experiments import (FoldData, Plateau, Settings, chosen_sigma, fitted_order,
                                    make_folds, observed_orders, partition_labels, read_json,
                                    paper_methods, render_markdown, render_page,
                                    run_convergence, run_methods, run_sigma_sweep,
                                    summarize_results, train_and_score, train_to_plateau)
from streamssvm.experiments import runner
from streamssvm.experiments.runner import accepted_history, best_hinge_objectives, tight_solution
from streamssvm.experiments.report import (RESULTS_VERSION, comparison_tables, mean_std,
                                           summarize)
from streamssvm.objective import SmoothSVMObjective

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
N_ROWS = 1500


@pytest.fixture(scope="module")
def a9a():
    return load_shared("a9a", n_rows=N_ROWS)


@pytest.fixture(scope="module")
def store_path(a9a, tmp_path_factory):
    X, y = a9a
    path = tmp_path_factory.mktemp("reproduce") / "a9a-small.h5"
    return write_store(path, InMemorySource(X, y, block_rows=200))


# ---------------------------------------------------------------------------------------
# protocol


@pytest.mark.parametrize("n", [5, 17, 1000, 1003])
def test_each_partition_is_a_partition_into_near_equal_parts(n):
    labels = partition_labels(n, n_partitions=4, n_parts=5, seed=3)
    assert labels.shape == (4, n)
    for p in range(4):
        sizes = np.bincount(labels[p], minlength=5)
        assert sizes.sum() == n and sizes.max() - sizes.min() <= 1 and sizes.min() >= 1


def test_folds_train_on_the_other_four_parts():
    n = 1003
    folds = make_folds(n, n_partitions=4, n_parts=5, seed=1)
    assert [(f.partition, f.part) for f in folds] == [(p, k) for p in range(4) for k in range(5)]
    for f in folds:
        assert len(np.intersect1d(f.train_rows, f.test_rows)) == 0
        np.testing.assert_array_equal(np.union1d(f.train_rows, f.test_rows), np.arange(n))
    for p in range(4):
        tests = np.concatenate([f.test_rows for f in folds if f.partition == p])
        np.testing.assert_array_equal(np.sort(tests), np.arange(n))  # each row tested once


def test_folds_are_reproducible_from_the_seed_and_partitions_independent():
    a = partition_labels(2000, 4, 5, seed=7)
    np.testing.assert_array_equal(a, partition_labels(2000, 4, 5, seed=7))
    assert not np.array_equal(a, partition_labels(2000, 4, 5, seed=8))
    # partition p does not depend on how many others are drawn
    np.testing.assert_array_equal(a[:2], partition_labels(2000, 2, 5, seed=7))
    for p in range(4):
        for q in range(p):
            # independent shuffles: about 1/5 of the rows share a part by chance
            assert 0.1 < np.mean(a[p] == a[q]) < 0.3
    digests = {f.digest for f in make_folds(2000, 4, 5, seed=7)}
    assert len(digests) == 20


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_samples=4, n_parts=5), "cannot be cut"),
    (dict(n_samples=10, n_parts=1), "n_parts must be at least 2"),
    (dict(n_samples=10, n_partitions=0), "n_partitions must be at least 1"),
])
def test_protocol_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        partition_labels(**kwargs)


# ---------------------------------------------------------------------------------------
# runs


def test_a_run_scores_a_model_of_its_training_rows_on_its_test_rows(store_path, a9a):
    X, y = a9a
    fold = make_folds(N_ROWS, n_partitions=1, n_parts=5, seed=0)[2]
    settings = Settings(lam=1e-4)
    with Store(store_path) as store:
        _, run = train_and_score(FoldData.read(store, fold), "psi_g", settings,
                                 sigma=2.0 ** -3)
    assert run["fold"] == fold.digest and run["converged"]
    model = train_stream(X[fold.train_rows], y[fold.train_rows], loss="psi_g",
                         sigma=2.0 ** -3, lam=1e-4, tol=0.0, abs_tol=1e-3, progress=False)
    # the two models stop within 1e-3 / lambda of each other, not at the same point: a
    # test row whose decision value is that close to 0 may go either way
    for rows, field in ((fold.test_rows, "test_accuracy"), (fold.train_rows, "train_accuracy")):
        predicted = np.where(X[rows] @ model.coef_ > 0, 1.0, -1.0)
        assert run[field] == pytest.approx(np.mean(predicted == y[rows]), abs=2.5 / len(rows))
    assert run["train_accuracy"] > 0.75 and run["test_accuracy"] > 0.75
    assert run["objective"] == pytest.approx(model.params["objective"], rel=1e-3)


def test_a_run_to_a_plateau_is_one_uninterrupted_run(store_path):
    """Pegasos in chunks resumed from checkpoints ends where one run of as many epochs does,
    and stops at the first chunk whose objective changed by at most rtol |f|; on the fold's
    rows held in memory as on the store's row subset (the same blocks, the same run)."""
    fold = make_folds(N_ROWS, n_partitions=1, n_parts=5, seed=0)[0]
    settings = Settings(lam=1e-3)
    plateau = Plateau(rtol=2e-2, chunk=3, max_epochs=30)
    with Store(store_path) as store:
        data = FoldData.read(store, fold)
        assert data.train.in_memory and data.test.n_samples == len(fold.test_rows)
        model, run = train_to_plateau(data, "hinge", settings, plateau, eval_every=0)
        train = RowSubset(store, fold.train_rows)
        once = train_stream(train, loss="hinge", solver="pegasos", lam=1e-3, seed=0,
                            max_iter=run["n_iter"], eval_every=0, progress=False)
    np.testing.assert_array_equal(model.coef_, once.coef_)
    f = [p["f"] for p in run["path"]]
    assert [p["epochs"] for p in run["path"]] == list(range(3, 3 * len(f) + 1, 3))
    changes = [abs(a - b) / abs(b) for a, b in zip(f, f[1:])]
    assert run["stopped"] == "plateau" and changes[-1] <= 2e-2
    assert all(c > 2e-2 for c in changes[:-1])
    assert run["objective"] == f[-1] == once.params["objective"]


def test_the_sigma_of_the_methods_is_the_largest_within_a_standard_error_of_the_best():
    def row(loss, s, acc, start="cold", std=None, n_runs=1):
        return dict(loss=loss, start=start, log2_sigma=s, n_runs=n_runs,
                    test_accuracy={"mean": acc, "std": std})

    summary = [row("psi_g", -3, 0.90), row("psi_m", -3, 0.80), row("psi_g", 0, 0.86),
               row("psi_m", 0, 0.86), row("psi_g", -6, 0.9), row("psi_m", -6, 0.7),
               row("psi_g", 2, 0.99, "warm")]  # warm runs do not count
    assert chosen_sigma(summary) == 0  # no spread: the highest mean, 0.86 > 0.85 > 0.80
    summary += [row("psi_g", 1, 0.86), row("psi_m", 1, 0.86)]
    assert chosen_sigma(summary) == 1  # a tie: the larger sigma
    # 20 runs of std 0.0089 and 0.0067 at the best: a standard error of 0.00175
    noisy = [row("psi_g", -10, 0.9711, std=0.0089, n_runs=20),
             row("psi_m", -10, 0.9711, std=0.0067, n_runs=20),
             row("psi_g", -5, 0.9695, std=0.01, n_runs=20),  # 0.0015 below: within
             row("psi_m", -5, 0.9697, std=0.01, n_runs=20),
             row("psi_g", -2, 0.9690, std=0.01, n_runs=20),  # 0.0021 below: outside
             row("psi_m", -2, 0.9690, std=0.01, n_runs=20)]
    assert chosen_sigma(noisy) == -5
    with pytest.raises(ValueError, match="no cold-start runs"):
        chosen_sigma([row("psi_g", 2, 0.9, "warm")])


def test_convergence_times_a_run_in_which_numba_compiled_nothing(store_path, monkeypatch):
    @numba.njit
    def fresh(x):
        return x + 1

    calls = []
    tron = runner.SOLVERS["tron"]

    def watched(objective, **kwargs):  # the real TRON, watched for compilation
        with numba_event.install_recorder("numba:compile") as compiled:
            if not calls:  # the first run compiles, as TRON's kernels do in a new process
                fresh(1)
            result = tron(objective, **kwargs)
        calls.append((objective.loss.name, kwargs, bool(compiled.buffer), result))
        return result

    monkeypatch.setattr(runner, "SOLVERS", dict(runner.SOLVERS, tron=watched))
    with Store(store_path) as store:
        runs = run_convergence(store, [("psi_g", 2.0 ** -3), ("logistic", None)],
                               Settings(lam=1e-3), max_iter=10)
    assert calls[0][2] and calls[1][:2] == calls[0][:2]  # the same run again
    last = {}
    for loss, kwargs, compiled, result in calls:
        last[loss, kwargs["forcing"]] = compiled, result
    assert [(r["loss"], r["forcing"]) for r in runs] == list(last)
    for run, (compiled, result) in zip(runs, last.values()):
        assert not compiled
        assert [h["grad_norm"] for h in run["history"]] == [
            h["grad_norm"] for h in accepted_history(result.history)]


TIMES = ("seconds", "solver_seconds")


def untimed(runs):
    """Runs without their wall times (nor a convergence history's)."""
    out = []
    for run in runs:
        run = {k: v for k, v in run.items() if k not in TIMES}
        if "history" in run:
            run["history"] = [{k: v for k, v in h.items() if k not in TIMES}
                              for h in run["history"]]
        out.append(run)
    return out


def test_folds_in_processes_run_as_one_after_another(store_path):
    """jobs = 2 spreads the folds (and the convergence losses) over two processes on one
    kernel thread each: every run the same as in this process on one thread, in order."""
    folds = make_folds(N_ROWS, n_partitions=1, n_parts=3, seed=0)
    settings = Settings(lam=1e-3, max_iter=50, epochs=5)
    methods = [m for m in paper_methods(2.0 ** -3) if m.loss in ("psi_g", "hinge")]
    plateau = Plateau(chunk=2, max_epochs=4)
    found = {}
    threads = numba.get_num_threads()
    with Store(store_path) as store:
        for jobs in (1, 2):
            numba.set_num_threads(1)  # as in a worker: the same ranges, the same sums
            try:
                sweep = run_sigma_sweep(store, folds, settings, log2_sigmas=(-10, 0),
                                        jobs=jobs)
                found[jobs] = dict(
                    sweep=sweep,
                    methods=run_methods(store, folds, methods, settings, plateau,
                                        best_hinge_objectives(sweep), jobs=jobs),
                    convergence=run_convergence(store, [("psi_g", 2.0 ** -3), ("logistic", None)],
                                                settings, max_iter=10, jobs=jobs))
            finally:
                numba.set_num_threads(threads)
    for part, runs in found[1].items():
        assert untimed(found[2][part]) == untimed(runs), part
    assert [r["fold"] for r in found[2]["methods"]] == [f.digest for f in folds for _ in methods]
    assert {r["solver"] for r in found[2]["sweep"]} >= {"sdca", "tron"}
    with pytest.raises(ValueError, match="needs a Store"):
        run_sigma_sweep(InMemorySource(*load_shared("a9a", n_rows=100)), folds[:1], settings,
                        jobs=2)


def test_the_distances_are_to_a_tight_solution(store_path):
    settings = Settings(lam=1e-3)
    with Store(store_path) as store:
        w_star, star = tight_solution(store, "psi_g", 2.0 ** -3, settings)
        runs = run_convergence(store, [("psi_g", 2.0 ** -3)], settings, max_iter=40)
        at_star = SmoothSVMObjective(store, "psi_g", 1e-3, sigma=2.0 ** -3).evaluate(w_star)
    # the Newton correction goes below what the solver's own tests resolve
    assert at_star.grad_norm == pytest.approx(star["grad_norm_corrected"])
    assert star["grad_norm_corrected"] < 1e-3 * star["grad_norm"]
    assert star["distance_floor"] < 1e-3 * star["correction"]
    assert 1 <= star["correction_cg_steps"] < 500 and star["correction_residual"] <= 1e-8
    for run in runs:
        e = [h["distance"] for h in run["history"]]
        assert run["w_star"] == star
        assert e[0] == pytest.approx(np.linalg.norm(w_star), rel=1e-12)  # from w = 0
        assert e[-1] < 1e-5 * e[0]


def test_observed_orders_of_known_sequences():
    linear = [0.5 ** k for k in range(8)]
    np.testing.assert_allclose(observed_orders(linear), 1.0, rtol=1e-12)
    quadratic = [1e-1]
    for _ in range(4):
        quadratic.append(quadratic[-1] ** 2)
    np.testing.assert_allclose(observed_orders(quadratic), 2.0, rtol=1e-12)
    assert observed_orders([1.0, 0.5, 0.5, 0.1]) == [None, None]
    assert observed_orders([1.0, 0.5]) == []


def test_fitted_orders_of_known_sequences():
    linear = [3.0 * 0.1 ** k for k in range(10)]
    assert fitted_order(linear) == pytest.approx(1.0, abs=1e-9)
    quadratic = [0.5 * 1e-1 ** (2 ** k) for k in range(4)]  # 5e-2, 5e-3, 5e-5, 5e-9
    assert fitted_order(quadratic) == pytest.approx(2.0, abs=0.2)
    # e_k+1 = e_k^2 exactly: the slope is 2 whatever the constant
    exact = [0.3]
    for _ in range(4):
        exact.append(exact[-1] ** 2)
    assert fitted_order(exact) == pytest.approx(2.0, rel=1e-9)
    # the last steps: a linear start, then quadratic; values at the floor and a stall left out
    mixed = [0.5 ** k for k in range(8)] + [0.5 ** 8 * 0.5 ** (2 ** k - 1) for k in range(1, 5)]
    tail = mixed + [1e-20, 2e-20]
    assert fitted_order(tail, floor=1e-15) == pytest.approx(fitted_order(mixed))
    assert fitted_order(mixed + [mixed[-1] * 1.5]) == pytest.approx(fitted_order(mixed))
    assert fitted_order(mixed) > 1.5 and fitted_order(mixed[:8]) == pytest.approx(1.0)
    assert fitted_order([1.0, 0.1]) is None and fitted_order([1.0, 0.1, 0.01], floor=0.05) is None


def test_mean_std_is_the_sample_deviation():
    stat = mean_std([0.9, 0.8, 1.0])
    assert stat["mean"] == pytest.approx(0.9)
    assert stat["std"] == pytest.approx(0.1)  # sqrt(((0.1)^2 * 2) / 2)
    assert mean_std([0.5]) == {"mean": 0.5, "std": None}


# ---------------------------------------------------------------------------------------
# the tool, end to end: `all --quick` on a small a9a, JSON, tables from it, figures, page

PAGE = """# Results

Prose the render keeps.

<!-- BEGIN datasets -->
stale
<!-- END datasets -->

More prose.

<!-- BEGIN tables -->
<!-- END tables -->
<!-- BEGIN sweep -->
<!-- END sweep -->
<!-- BEGIN pegasos -->
<!-- END pegasos -->
<!-- BEGIN convergence -->
<!-- END convergence -->
<!-- BEGIN claims -->
<!-- END claims -->
<!-- BEGIN sweep-figures -->
<!-- END sweep-figures -->
<!-- BEGIN convergence-figures -->
<!-- END convergence-figures -->
Last line.
"""


@pytest.fixture(scope="module")
def tool_output(tmp_path_factory):
    sys.path.insert(0, TOOLS)
    reproduce = importlib.import_module("reproduce")
    root = tmp_path_factory.mktemp("reproduce-all")
    (root / "data").mkdir()
    with lzma.open(DATA / "a9a.svm.xz") as fh:
        lines = fh.read().splitlines(keepends=True)[:N_ROWS]
    with lzma.open(root / "data" / "a9a.svm.xz", "wb") as fh:
        fh.write(b"".join(lines))
    (root / "RESULTS.md").write_text(PAGE)
    reproduce.main(["all", "--quick", "--jobs", "2", "--data-dir", str(root / "data"),
                    "--store-dir", str(root / "stores"), "--page", str(root / "RESULTS.md")])
    return root / "stores" / "quick", reproduce, root / "RESULTS.md"


def markdown_tables(text):
    """Every Markdown table in ``text`` as a list of rows of cell strings (header first)."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            if not re.fullmatch(r"\|(---\|)+", line):
                current.append([c.strip() for c in line.strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    return tables


def cell(value):
    """A table cell 'mean ± std' back to its two numbers."""
    return [float(x) for x in value.split(" ± ")]


def test_the_quick_run_is_the_small_protocol(tool_output):
    out, reproduce, _ = tool_output
    results = read_json(out / "a9a.json")
    figures = ["a9a-convergence.png", "a9a-sweep.png"] if (out / "a9a-sweep.png").exists() else []
    assert sorted(os.listdir(out)) == sorted(figures + ["a9a.json", "a9a.md", "all.json",
                                                        "tables.md"])
    run = json.loads((out / "all.json").read_text())
    assert run["jobs"] == 2 and run["datasets"] == ["a9a"] and run["wall_seconds"] > 0
    assert results["environment"]["processes"] == 2
    p = results["protocol"]
    assert (p["n_partitions"], p["n_parts"], p["lam"]) == (1, 3, 1e-3)
    assert results["sweep"]["log2_sigmas"] == reproduce.QUICK["log2_sigmas"]
    assert results["dataset"]["n_samples"] == N_ROWS


def test_the_tables_hold_the_numbers_of_the_json(tool_output):
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    text = (out / "a9a.md").read_text()
    figures = {k: f"a9a-{k}.png" for k in ("sweep", "convergence") if (out / f"a9a-{k}.png")
               .exists()}
    assert text == render_markdown(results, figures)
    cold, warm, methods, convergence = markdown_tables(text)

    for table, start in ((cold, "cold"), (warm, "warm")):
        by = {(s["loss"], s["log2_sigma"]): s for s in results["sweep"]["summary"]
              if s["start"] == start}
        assert [int(r[0]) for r in table[1:]] == [-20, -8, -3, 2]
        for row in table[1:]:
            for i, loss in enumerate(("psi_g", "psi_m")):
                s = by[(loss, int(row[0]))]
                for j, field in enumerate(("train_accuracy", "test_accuracy")):
                    mean, std = cell(row[1 + 5 * i + j])
                    assert mean == pytest.approx(100 * s[field]["mean"], abs=0.0051)
                    assert std == pytest.approx(100 * s[field]["std"], abs=0.0051)
                solvers = {r["solver"] for r in results["sweep"]["runs"] if (
                    r["loss"], r["start"], r["log2_sigma"]) == (loss, start, int(row[0]))}
                assert s["solvers"] == {solvers.pop(): s["n_runs"]} and not solvers
                assert row[3 + 5 * i] == next(iter(s["solvers"]))
                assert row[5 + 5 * i] == f"{s['n_converged']}/{s['n_runs']}"

    summary = results["methods"]["summary"]
    assert len(methods) == 1 + len(summary) == 7
    for row, s in zip(methods[1:], summary):
        assert row[:2] == [s["method"], s["losses"]]
        for col, field, scale, digits in ((4, "test_accuracy", 100, 2),
                                          (5, "train_accuracy", 100, 2), (6, "seconds", 1, 3)):
            mean, std = cell(row[col])
            assert mean == pytest.approx(s[field]["mean"] * scale, abs=0.51 * 10 ** -digits)
            assert std == pytest.approx(s[field]["std"] * scale, abs=0.51 * 10 ** -digits)
        if s["loss"] == "hinge":
            assert row[8] == f"{s['n_plateau']}/{s['n_runs']} plateau"
            mean, std = cell(row[9])
            assert mean == pytest.approx(s["gap_to_psi_g"]["mean"], abs=0.000051)
        else:
            assert row[8] == f"{s['n_converged']}/{s['n_runs']}" and row[9] == ""

    assert len(convergence) == 1 + 4
    for row, run in zip(convergence[1:], results["convergence"]["runs"]):
        assert row[0] == run["loss"] and row[2] == run["forcing"]
        assert int(row[3]) == len(run["history"]) - 1
        g = [h["grad_norm"] for h in run["history"]]
        e = [h["distance"] for h in run["history"]]
        assert float(row[7]) == pytest.approx(g[0], rel=0.01)
        assert float(row[8]) == pytest.approx(g[-1], rel=0.01)
        assert float(row[9]) == pytest.approx(e[-1], rel=0.01)
        assert row[10] == ", ".join(f"{r:.1e}" for r in np.divide(e[1:], e[:-1])[-4:])
        assert float(row[11]) == pytest.approx(run["fitted_order_distance"], abs=0.0051)
        assert float(row[12]) == pytest.approx(run["fitted_order_grad"], abs=0.0051)


def test_every_method_and_every_sigma_ran_on_identical_folds(tool_output):
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    folds = make_folds(N_ROWS, n_partitions=1, n_parts=3, seed=0)
    assert [f["digest"] for f in results["protocol"]["folds"]] == [f.digest for f in folds]
    assert [(f["n_train"], f["n_test"]) for f in results["protocol"]["folds"]] == [
        (len(f.train_rows), len(f.test_rows)) for f in folds]
    digests = [f.digest for f in folds]
    groups = {}
    for r in results["methods"]["runs"]:
        groups.setdefault((r["method"], r["losses"]), []).append(r["fold"])
    for r in results["sweep"]["runs"]:
        groups.setdefault((r["loss"], r["start"], r["log2_sigma"]), []).append(r["fold"])
    assert len(groups) == 6 + 2 * 2 * 4
    for key, fold_digests in groups.items():
        assert fold_digests == digests, key


def test_the_cold_sweep_starts_every_sigma_from_zero(tool_output):
    """Cold runs start at w = 0 (their first gradient is that of L at 0, and a cold run is
    an independent training); warm runs below the largest sigma start nearer a solution."""
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    fold = make_folds(N_ROWS, n_partitions=1, n_parts=3, seed=0)[1]
    runs = {(r["loss"], r["start"], r["log2_sigma"]): r for r in results["sweep"]["runs"]
            if r["fold"] == fold.digest}
    with Store(results["dataset"]["store"]) as store:
        train = RowSubset(store, fold.train_rows)
        for (loss, start, s), r in runs.items():
            if start != "cold":
                continue
            at_zero = SmoothSVMObjective(train, loss, 1e-3, sigma=2.0 ** s).evaluate(
                np.zeros(store.n_features))
            assert r["grad_norm_start"] == pytest.approx(at_zero.grad_norm, rel=1e-12)
        # on one kernel thread, as the quick run's processes: the same sums, the same run;
        # the cold runs by auto's choice, the warm path's first width by TRON from 0
        fit = functools.partial(train_stream, train, lam=1e-3, tol=0.0, abs_tol=1e-3,
                                max_iter=30, progress=False, n_threads=1)
        for loss, s in (("psi_m", -8), ("psi_g", -20), ("psi_g", 2)):
            model = fit(loss=loss, sigma=2.0 ** s, solver="auto")
            alone = runs[loss, "cold", s]
            assert (alone["solver"], alone["n_iter"], alone["objective"]) == (
                model.params["solver"], model.params["n_iter"], model.params["objective"])
        first = fit(loss="psi_m", sigma=2.0 ** 2, solver="tron", forcing="constant", xi=0.1)
    assert {r["solver"] for (_, start, _), r in runs.items() if start == "cold"} == {
        "sdca", "newton"}  # auto's choices: SDCA near the hinge
    assert {r["solver"] for (_, start, _), r in runs.items() if start == "warm"} == {"tron"}
    assert (runs["psi_m", "warm", 2]["n_iter"], runs["psi_m", "warm", 2]["objective"]) == (
        first.params["n_iter"], first.params["objective"])
    for loss in ("psi_g", "psi_m"):
        for s in (-20, -8, -3):
            assert runs[loss, "warm", s]["grad_norm_start"] < runs[loss, "cold", s][
                "grad_norm_start"] / 5


def test_the_methods_use_the_sweeps_sigma_and_pegasos_reports_its_gap(tool_output):
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    methods = results["methods"]
    assert methods["sigma_from"] == "sweep"
    assert methods["sigma_log2"] == chosen_sigma(results["sweep"]["summary"])
    for r in methods["runs"]:
        if r["loss"] in ("psi_g", "psi_m"):
            assert r["sigma"] == 2.0 ** methods["sigma_log2"]
    psi_g = {r["fold"]: r for r in methods["runs"] if r["loss"] == "psi_g"}
    pegasos = [r for r in methods["runs"] if r["loss"] == "hinge"]
    assert len(pegasos) == 3
    sweep = [r for r in results["sweep"]["runs"] if r["loss"] == "psi_g"]
    # hinge <= psi_G, each objective a sum in its own order (a pass of loss_sum, the
    # training's partial sums): at a small sigma, where psi_G's excess is below rounding,
    # they agree to rounding
    assert all(r["hinge_objective"] <= r["objective"] * (1 + 1e-14) for r in sweep)
    for r in pegasos:
        assert r["gap_to_psi_g"] == pytest.approx(
            r["objective"] - psi_g[r["fold"]]["hinge_objective"], rel=1e-12)
        on_fold = [x for x in sweep if x["fold"] == r["fold"]]
        best = min(on_fold, key=lambda x: x["hinge_objective"])
        assert len(on_fold) == 2 * 4 and r["best_psi_g_log2_sigma"] == best["log2_sigma"]
        assert r["gap_to_best_psi_g"] == r["objective"] - best["hinge_objective"]
        # psi_G's solutions at the sweep's small sigmas are nearer the hinge's optimum than
        # the methods' (here at least): the sweep's lowest is no higher
        assert r["gap_to_best_psi_g"] >= r["gap_to_psi_g"] - 1e-9
        assert r["path"][-1]["epochs"] == r["n_iter"] and r["stopped"] in ("plateau",
                                                                         "max_epochs")
        assert (r["stopped"] == "max_epochs") == (r["n_iter"] == 20)
        # the hinge objective of psi_G's solution: psi_G >= hinge, and the hinge objective of
        # a minimiser of psi_G's objective is below psi_G's objective there
        assert psi_g[r["fold"]]["hinge_objective"] <= psi_g[r["fold"]]["objective"]


def test_the_convergence_study_fits_the_orders_of_theorem_4(tool_output):
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    runs = {(r["loss"], r["forcing"]): r for r in results["convergence"]["runs"]}
    assert sorted(runs) == [(loss, f) for loss in ("logistic", "psi_g")
                            for f in ("constant", "quadratic")]
    for (loss, forcing), run in runs.items():
        e = [h["distance"] for h in run["history"]]
        assert e[-1] < 1e-5 * e[0]
        assert run["fitted_order_distance"] is not None and run["fitted_order_grad"] is not None
        # psi_G and logistic are twice differentiable: xi_t = min(0.1, ||grad||) ends with an
        # order near 2, xi_t = 0.1 with one near 1 (Theorem 4)
        if forcing == "quadratic":
            assert run["fitted_order_distance"] > 1.6
            assert len(run["history"]) <= len(runs[loss, "constant"]["history"])
        else:
            assert run["fitted_order_distance"] < 1.4


def test_the_json_summaries_are_those_of_its_runs(tool_output):
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    digests = [f["digest"] for f in results["protocol"]["folds"]]
    for s in results["methods"]["summary"] + results["sweep"]["summary"]:
        assert s["folds"] == digests and s["n_runs"] == 3
    recomputed = summarize_results(json.loads(json.dumps(results)))
    assert recomputed == results
    for s in results["sweep"]["summary"]:
        runs = [r for r in results["sweep"]["runs"]
                if (r["loss"], r["start"], r["log2_sigma"]) == (s["loss"], s["start"],
                                                                s["log2_sigma"])]
        accuracy = [r["test_accuracy"] for r in runs]
        assert s["test_accuracy"]["mean"] == pytest.approx(np.mean(accuracy), rel=1e-12)
        assert s["test_accuracy"]["std"] == pytest.approx(np.std(accuracy, ddof=1), rel=1e-12)
    assert summarize([], ("loss",)) == []


def test_the_comparison_table_puts_ours_beside_the_paper(tool_output):
    out, _, _ = tool_output
    results = read_json(out / "a9a.json")
    accuracy, seconds = markdown_tables((out / "tables.md").read_text())
    s = results["methods"]["sigma_log2"]
    assert accuracy[0] == ["method / loss", f"a9a (3 runs, sigma 2^{s:g})",
                           "paper NEWS20 (sigma 2^-6)", "paper REALSIM (sigma 2^-1)",
                           "paper RCV1 (sigma 2^-3)"]
    assert accuracy[4] == ["TRON smooth Hinge loss psi_G",
                           accuracy[4][1], "96.73 ± 0.21", "97.41 ± 0.12", "97.61 ± 0.04"]
    psi_g = next(s for s in results["methods"]["summary"] if s["loss"] == "psi_g")
    assert cell(accuracy[4][1])[0] == pytest.approx(100 * psi_g["test_accuracy"]["mean"],
                                                    abs=0.0051)
    assert seconds[6][-3:] == ["238.19", "39.06", "430.18"]
    assert comparison_tables([results])[0] in (out / "tables.md").read_text()


def test_the_page_is_rendered_from_the_json_around_its_prose(tool_output, tmp_path):
    out, reproduce, page = tool_output
    results = read_json(out / "a9a.json")
    text = page.read_text()
    run = json.loads((out / "all.json").read_text())
    assert text == render_page(PAGE, [results], run, "stores/quick")
    assert "stale" not in text
    assert (f"The whole reproduction (`all --jobs 2`: each data set's folds 2 at a time): "
            f"{run['wall_seconds'] / 60:.1f} min of wall time") in text
    for prose in ("# Results\n\nProse the render keeps.\n\n<!-- BEGIN datasets -->\n",
                  "<!-- END datasets -->\n\nMore prose.\n\n", "<!-- END convergence-figures -->\n"
                  "Last line.\n"):
        assert prose in text
    assert render_page(text, [results], run, "stores/quick") == text  # again: the same
    (datasets, accuracy, _, sweep, pegasos, convergence, claims, sweep_figures,
     convergence_figures) = markdown_tables(text)
    for table, part in ((sweep_figures, "sweep"), (convergence_figures, "convergence")):
        assert table[1] == [f"![a9a](stores/quick/a9a-{part}.png)", ""]
        assert (page.parent / "stores" / "quick" / f"a9a-{part}.png").exists() or (
            "matplotlib" not in sys.modules)
    assert datasets[1][0] == "a9a" and datasets[1][3].startswith(
        f"2^{results['methods']['sigma_log2']:g} (sweep)")
    by = {s["loss"]: s for s in results["methods"]["summary"]}
    assert cell(pegasos[1][5])[0] == pytest.approx(by["hinge"]["gap_to_psi_g"]["mean"],
                                                   abs=0.000051)
    runs = {(r["loss"], r["forcing"]): r for r in results["convergence"]["runs"]}
    row = next(r for r in convergence[1:] if r[1] == "psi_g")
    assert row[4] == (f"{runs['psi_g', 'constant']['fitted_order_distance']:.2f} / "
                      f"{runs['psi_g', 'quadratic']['fitted_order_distance']:.2f}")
    assert [r[:2] for r in sweep[1:]] == [["a9a", "psi_g"], ["a9a", "psi_m"]]
    claimed = {row[0]: row[2] for row in claims[1:]}
    assert claimed["TRON beats the first-order Pegasos"].endswith(
        f"Pegasos's objective gap to psi_G's solution {by['hinge']['gap_to_psi_g']['mean']:+.4f}"
        f"; Pegasos's objective gap to the sweep's lowest "
        f"{by['hinge']['gap_to_best_psi_g']['mean']:+.4f}")
    assert cell(pegasos[1][6].split(" (")[0])[0] == pytest.approx(
        by["hinge"]["gap_to_best_psi_g"]["mean"], abs=0.000051)
    assert f"psi_G {100 * by['psi_g']['test_accuracy']['mean']:.2f}" in claimed[
        "the smooth hinges are the most accurate"]
    broken = tmp_path / "broken.md"
    broken.write_text("<!-- BEGIN tables -->\nno end\n")
    with pytest.raises(ValueError, match="has no <!-- END tables -->"):
        render_page(broken.read_text(), [results])


def test_render_rewrites_the_same_report_from_the_json(tool_output, tmp_path):
    out, reproduce, _ = tool_output
    copy = tmp_path / "a9a.json"
    copy.write_text((out / "a9a.json").read_text())
    reproduce.main(["render", str(copy), "--no-plots"])
    assert read_json(copy) == read_json(out / "a9a.json")
    assert (tmp_path / "a9a.md").read_text() == render_markdown(read_json(copy))


def test_figures_are_png(tool_output):
    pytest.importorskip("matplotlib")
    out, _, _ = tool_output
    for name in ("a9a-sweep.png", "a9a-convergence.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("options, message", [
    (["--only", "method"], "argument --only: unknown part 'method'"),
    (["--only", "methods,"], "argument --only: unknown part ''"),
    (["--methods-runs", "0"], "argument --methods-runs: must be >= 1, got 0"),
    (["--only", "sweep", "--sweep-runs", "-1"], "argument --sweep-runs: must be >= 1, got -1"),
    (["--only", "methods", "--sigma-log2", "-3", "--methods-runs", "4"],
     "argument --methods-runs: 4 runs, but there are 3 folds"),
    (["--only", "methods,convergence"], "argument --sigma-log2: needed without the sweep"),
    # found after the methods and the sweep had run, and their results were lost
    (["--convergence-losses", "psi_g,hinge2"],
     "argument --convergence-losses: unknown loss 'hinge2'"),
    (["--convergence-losses", "hinge"], "hinge's slope jumps, and the convergence part runs"),
    (["--sifs-solver", "foo"], "argument --sifs-solver: unknown solver 'foo'"),
    (["--pegasos-chunk", "0"], "argument --pegasos-chunk: must be >= 1, got 0"),
    (["--pegasos-rtol", "1"], "argument --pegasos-rtol: must be in [0, 1), got 1.0"),
    (["--sweep-max-iter", "0"], "argument --sweep-max-iter: must be >= 1, got 0"),
])
def test_run_refuses_bad_options_before_any_work(store_path, tmp_path, capsys, options,
                                                 message):
    sys.path.insert(0, TOOLS)
    reproduce = importlib.import_module("reproduce")
    earlier = tmp_path / "t.json"
    earlier.write_text("earlier results")
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["run", str(store_path), "--name", "t",
                        "--out-dir", str(tmp_path), "--partitions", "1",
                        "--parts-per-partition", "3", "--max-iter", "2",
                        "--pegasos-max-epochs", "1", "--sweep-max-iter", "2",
                        "--log2-sigmas=2", "--convergence-max-iter", "2", "--no-plots",
                        *options])
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["t.json"] and earlier.read_text() == "earlier results"


def test_all_refuses_an_unknown_data_set_and_passes_options_to_run(tmp_path, capsys):
    sys.path.insert(0, TOOLS)
    reproduce = importlib.import_module("reproduce")
    with pytest.raises(SystemExit, match="unknown data set 'a9b'"):
        reproduce.main(["all", "--quick", "--datasets", "a9b", "--store-dir", str(tmp_path)])
    assert os.listdir(tmp_path) == []
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a9a.svm.xz").write_bytes(b"")
    with pytest.raises(SystemExit) as exc:  # run's own check, before the data is read
        reproduce.main(["all", "--quick", "--data-dir", str(tmp_path / "data"), "--store-dir",
                        str(tmp_path / "stores"), "--", "--sweep-max-iter", "0"])
    assert exc.value.code == 2
    assert "argument --sweep-max-iter: must be >= 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "stores").exists()
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:  # with --jobs too: before any process starts
        reproduce.main(["all", "--quick", "--jobs", "2", "--data-dir", str(tmp_path / "data"),
                        "--out-dir", str(out), "--store-dir", str(tmp_path / "stores"), "--",
                        "--sweep-max-iter", "0"])
    assert exc.value.code == 2
    assert "argument --sweep-max-iter: must be >= 1, got 0" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "stores").exists()


def test_a_converted_store_is_reused_only_for_the_same_text(a9a, tmp_path, make_svmlight):
    """The store made from a svmlight file was reused for any file of the same name and
    size: one with every label flipped was scored with the first file's rows."""
    sys.path.insert(0, TOOLS)
    reproduce = importlib.import_module("reproduce")
    text = re.sub(rb"^\+?1(?=\s)", b"+1", make_svmlight(np.random.default_rng(2), 300, 20,
                                                       density=0.2), flags=re.M)
    flipped = re.sub(rb"^([+-])1(?=\s)", lambda m: b"-1" if m.group(1) == b"+" else b"+1",
                     text, flags=re.M)
    assert len(flipped) == len(text) and flipped != text
    for folder, contents in (("a", text), ("b", flipped)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.svm").write_bytes(contents)
    labels = []
    for folder in ("a", "b", "a"):
        with reproduce.open_store(str(tmp_path / folder / "x.svm"), "s",
                                  str(tmp_path / "stores")) as store:
            labels.append(store.label_counts())
    assert labels[0] == labels[2] and labels[1] == labels[0][::-1]


def test_report_refuses_other_json(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a results file"):
        read_json(path)
    path.write_text('{"format": "streamssvm.reproduction", "version": 1}')
    with pytest.raises(ValueError, match=f"results version 1; this library reads version "
                       f"{RESULTS_VERSION}"):
        read_json(path)
