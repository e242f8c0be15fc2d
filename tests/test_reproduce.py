"""The reproduction of the paper's experiments: protocol, runs on identical folds, reports.

The data set is the first rows of a9a, written to a real store; every training and test set
is a RowSubset of it.
"""

import importlib
import json
import os
import re
import sys

import numba
import numpy as np
import pytest
from numba.core import event as numba_event

from shared_data import load_shared
from streamssvm.data import InMemorySource, Store, write_store
from streamssvm import train_stream
from streamssvm.experiments import (Settings, make_folds, observed_orders, partition_labels,
                                    read_json, render_markdown, run_convergence,
                                    summarize_results, train_and_score)
from streamssvm.experiments import runner
from streamssvm.experiments.runner import accepted_history
from streamssvm.experiments.report import comparison_tables, mean_std, summarize

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
        _, run = train_and_score(store, fold, "psi_g", settings, sigma=2.0 ** -3)
    assert run["fold"] == fold.digest and run["converged"]
    model = train_stream(X[fold.train_rows], y[fold.train_rows], loss="psi_g",
                         sigma=2.0 ** -3, lam=1e-4, tol=0.0, abs_tol=1e-3, progress=False)
    # the two models stop within 1e-3 / lambda of each other, not at the same point: a
    # test row whose decision value is that close to 0 may go either way
    for rows, field in ((fold.test_rows, "test_accuracy"), (fold.train_rows, "train_accuracy")):
        predicted = np.where(X[rows] @ model.coef_ > 0, 1.0, -1.0)
        assert run[field] == pytest.approx(np.mean(predicted == y[rows]), abs=2.5 / len(rows))
    assert run["train_accuracy"] > 0.75 and run["test_accuracy"] > 0.75


def test_convergence_times_a_run_in_which_numba_compiled_nothing(store_path, monkeypatch):
    @numba.njit
    def fresh(x):
        return x + 1

    calls = []

    def train(source, **kwargs):  # the real training, watched for compilation
        with numba_event.install_recorder("numba:compile") as compiled:
            if not calls:  # the first run compiles, as TRON's kernels do in a new process
                fresh(1)
            model = train_stream(source, **kwargs)
        calls.append((kwargs, bool(compiled.buffer), model))
        return model

    monkeypatch.setattr(runner, "train_stream", train)
    with Store(store_path) as store:
        runs = run_convergence(store, [("psi_g", 2.0 ** -3), ("logistic", None)],
                               Settings(lam=1e-3), max_iter=10)
    assert calls[0][1] and calls[1][0] == calls[0][0]  # the same run again
    last = {}
    for kwargs, compiled, model in calls:
        last[kwargs["loss"], kwargs["forcing"]] = compiled, model
    assert [(r["loss"], r["forcing"]) for r in runs] == list(last)
    for run, (compiled, model) in zip(runs, last.values()):
        assert not compiled and run["history"] == accepted_history(model)


def test_observed_orders_of_known_sequences():
    linear = [0.5 ** k for k in range(8)]
    np.testing.assert_allclose(observed_orders(linear), 1.0, rtol=1e-12)
    quadratic = [1e-1]
    for _ in range(4):
        quadratic.append(quadratic[-1] ** 2)
    np.testing.assert_allclose(observed_orders(quadratic), 2.0, rtol=1e-12)
    assert observed_orders([1.0, 0.5, 0.5, 0.1]) == [None, None]
    assert observed_orders([1.0, 0.5]) == []


def test_mean_std_is_the_sample_deviation():
    stat = mean_std([0.9, 0.8, 1.0])
    assert stat["mean"] == pytest.approx(0.9)
    assert stat["std"] == pytest.approx(0.1)  # sqrt(((0.1)^2 * 2) / 2)
    assert mean_std([0.5]) == {"mean": 0.5, "std": None}


# ---------------------------------------------------------------------------------------
# the tool, end to end: JSON, tables from it, figures


@pytest.fixture(scope="module")
def tool_output(store_path, tmp_path_factory):
    sys.path.insert(0, TOOLS)
    reproduce = importlib.import_module("reproduce")
    out = tmp_path_factory.mktemp("results")
    reproduce.main(["run", str(store_path), "--name", "tiny", "--sigma-log2", "-3",
                    "--out-dir", str(out), "--partitions", "2", "--parts-per-partition", "3",
                    "--methods-runs", "3", "--sweep-runs", "3", "--sweep-max-iter", "15",
                    "--log2-sigmas=-8,-3,2", "--lam", "1e-3", "--max-iter", "15",
                    "--epochs", "3",
                    "--convergence-losses", "psi_g,logistic", "--convergence-max-iter", "30"])
    reproduce.main(["report", str(out / "tiny.json"), "--out", str(out / "tables.md")])
    return out, reproduce


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


def test_the_tables_hold_the_numbers_of_the_json(tool_output):
    out, _ = tool_output
    results = read_json(out / "tiny.json")
    text = (out / "tiny.md").read_text()
    assert text == render_markdown(results, {"sweep": "tiny-sweep.png",
                                             "convergence": "tiny-convergence.png"})
    methods, sweep, convergence = markdown_tables(text)

    summary = results["methods"]["summary"]
    assert len(methods) == 1 + len(summary) == 7
    for row, s in zip(methods[1:], summary):
        assert row[:2] == [s["method"], s["losses"]]
        for col, field, scale, digits in ((4, "test_accuracy", 100, 2),
                                          (5, "train_accuracy", 100, 2), (6, "seconds", 1, 3)):
            mean, std = cell(row[col])
            assert mean == pytest.approx(s[field]["mean"] * scale, abs=0.51 * 10 ** -digits)
            assert std == pytest.approx(s[field]["std"] * scale, abs=0.51 * 10 ** -digits)
        assert row[8] == f"{s['n_converged']}/{s['n_runs']}"

    by = {(s["loss"], s["log2_sigma"]): s for s in results["sweep"]["summary"]}
    assert [int(r[0]) for r in sweep[1:]] == [-8, -3, 2]
    for row in sweep[1:]:
        for i, loss in enumerate(("psi_g", "psi_m")):
            s = by[(loss, int(row[0]))]
            for j, field in enumerate(("train_accuracy", "test_accuracy")):
                mean, std = cell(row[1 + 3 * i + j])
                assert mean == pytest.approx(100 * s[field]["mean"], abs=0.0051)
                assert std == pytest.approx(100 * s[field]["std"], abs=0.0051)

    assert len(convergence) == 1 + 4
    for row, run in zip(convergence[1:], results["convergence"]["runs"]):
        assert row[0] == run["loss"] and row[2] == run["forcing"]
        assert int(row[3]) == len(run["history"]) - 1
        g = [h["grad_norm"] for h in run["history"]]
        assert float(row[7]) == pytest.approx(g[0], rel=0.01)
        assert float(row[8]) == pytest.approx(g[-1], rel=0.01)
        assert row[9] == ", ".join(f"{r:.1e}" for r in np.divide(g[1:], g[:-1])[-4:])
        orders = [None if x == "–" else float(x) for x in row[10].split(", ")]
        assert orders == [None if q is None else pytest.approx(q, abs=0.0051)
                          for q in run["observed_orders"][-4:]]


def test_every_method_and_every_sigma_ran_on_identical_folds(tool_output):
    out, _ = tool_output
    results = read_json(out / "tiny.json")
    folds = make_folds(N_ROWS, n_partitions=2, n_parts=3, seed=0)
    assert [f["digest"] for f in results["protocol"]["folds"]] == [f.digest for f in folds]
    assert [(f["n_train"], f["n_test"]) for f in results["protocol"]["folds"]] == [
        (len(f.train_rows), len(f.test_rows)) for f in folds]
    first_partition = [f.digest for f in folds if f.partition == 0]
    groups = {}
    for r in results["methods"]["runs"]:
        groups.setdefault((r["method"], r["losses"]), []).append(r["fold"])
    for r in results["sweep"]["runs"]:
        groups.setdefault((r["loss"], r["log2_sigma"]), []).append(r["fold"])
    assert len(groups) == 6 + 2 * 3
    for key, digests in groups.items():
        assert digests == first_partition, key


def test_the_json_summaries_are_those_of_its_runs(tool_output):
    out, _ = tool_output
    results = read_json(out / "tiny.json")
    first_partition = [f["digest"] for f in results["protocol"]["folds"] if f["partition"] == 0]
    for s in results["methods"]["summary"] + results["sweep"]["summary"]:
        assert s["folds"] == first_partition and s["n_runs"] == 3
    recomputed = summarize_results(json.loads(json.dumps(results)))
    assert recomputed["methods"]["summary"] == results["methods"]["summary"]
    for s in results["sweep"]["summary"]:
        runs = [r for r in results["sweep"]["runs"]
                if (r["loss"], r["log2_sigma"]) == (s["loss"], s["log2_sigma"])]
        accuracy = [r["test_accuracy"] for r in runs]
        assert s["test_accuracy"]["mean"] == pytest.approx(np.mean(accuracy), rel=1e-12)
        assert s["test_accuracy"]["std"] == pytest.approx(np.std(accuracy, ddof=1), rel=1e-12)
    assert summarize([], ("loss",)) == []


def test_the_sweep_warm_starts_from_larger_sigmas_and_convergence_is_recorded(tool_output):
    out, _ = tool_output
    results = read_json(out / "tiny.json")
    runs = results["sweep"]["runs"]
    first = [r["log2_sigma"] for r in runs if r["loss"] == "psi_g"][:3]
    assert first == [2, -3, -8]
    for run in results["convergence"]["runs"]:
        g = [h["grad_norm"] for h in run["history"]]
        assert g[-1] < 1e-6 * g[0]
        assert len(run["observed_orders"]) == len(g) - 2
    quadratic = [r for r in results["convergence"]["runs"] if r["forcing"] == "quadratic"]
    constant = [r for r in results["convergence"]["runs"] if r["forcing"] == "constant"]
    # psi_G and logistic are twice differentiable: the xi_t = kappa ||grad|| runs end with
    # orders clearly above those of xi_t = 0.1 (Theorem 4)
    for q, c in zip(quadratic, constant):
        best_q = max(x for x in q["observed_orders"][-3:] if x is not None)
        assert best_q > 1.5
        assert len(q["history"]) <= len(c["history"])


def test_the_comparison_table_puts_ours_beside_the_paper(tool_output):
    out, _ = tool_output
    results = read_json(out / "tiny.json")
    accuracy, seconds = markdown_tables((out / "tables.md").read_text())
    assert accuracy[0] == ["method / loss", "tiny (3 runs)", "paper NEWS20", "paper REALSIM",
                           "paper RCV1"]
    assert accuracy[4] == ["TRON smooth Hinge loss psi_G",
                           accuracy[4][1], "96.73 ± 0.21", "97.41 ± 0.12", "97.61 ± 0.04"]
    psi_g = next(s for s in results["methods"]["summary"] if s["loss"] == "psi_g")
    assert cell(accuracy[4][1])[0] == pytest.approx(100 * psi_g["test_accuracy"]["mean"],
                                                    abs=0.0051)
    assert seconds[6][-3:] == ["238.19", "39.06", "430.18"]
    assert comparison_tables([results])[0] in (out / "tables.md").read_text()


def test_render_rewrites_the_same_report_from_the_json(tool_output, tmp_path):
    out, reproduce = tool_output
    copy = tmp_path / "tiny.json"
    copy.write_text((out / "tiny.json").read_text())
    reproduce.main(["render", str(copy), "--no-plots"])
    assert read_json(copy) == read_json(out / "tiny.json")
    assert (tmp_path / "tiny.md").read_text() == render_markdown(read_json(copy))


def test_figures_are_png(tool_output):
    pytest.importorskip("matplotlib")
    out, _ = tool_output
    for name in ("tiny-sweep.png", "tiny-convergence.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("options, message", [
    (["--only", "method"], "argument --only: unknown part 'method'"),
    (["--only", "methods,"], "argument --only: unknown part ''"),
    (["--methods-runs", "0"], "argument --methods-runs: must be >= 1, got 0"),
    (["--only", "sweep", "--sweep-runs", "-1"], "argument --sweep-runs: must be >= 1, got -1"),
    (["--only", "methods", "--methods-runs", "4"],
     "argument --methods-runs: 4 runs, but there are 3 folds"),
    # found after the methods and the sweep had run, and their results were lost
    (["--convergence-losses", "psi_g,hinge2"],
     "argument --convergence-losses: unknown loss 'hinge2'"),
    (["--convergence-losses", "hinge"], "hinge's slope jumps, and the convergence part runs"),
    (["--sifs-solver", "foo"], "argument --sifs-solver: unknown solver 'foo'"),
    (["--epochs", "0"], "argument --epochs: must be >= 1, got 0"),  # were run as w = 0
    (["--sweep-max-iter", "0"], "argument --sweep-max-iter: must be >= 1, got 0"),
])
def test_run_refuses_bad_options_before_any_work(store_path, tmp_path, capsys, options,
                                                 message):
    sys.path.insert(0, TOOLS)
    reproduce = importlib.import_module("reproduce")
    earlier = tmp_path / "t.json"
    earlier.write_text("earlier results")
    with pytest.raises(SystemExit) as exc:
        reproduce.main(["run", str(store_path), "--name", "t", "--sigma-log2", "-3",
                        "--out-dir", str(tmp_path), "--partitions", "1",
                        "--parts-per-partition", "3", "--max-iter", "2", "--epochs", "1",
                        "--sweep-max-iter", "2", "--log2-sigmas=2",
                        "--convergence-max-iter", "2", "--no-plots", *options])
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["t.json"] and earlier.read_text() == "earlier results"


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
