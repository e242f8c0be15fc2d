"""What a new user meets in the first hour: text labels, one-class data, argument edges,
the model's summary, the per-iteration log, and the solver names errors list."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import streamssvm
from streamssvm import Model, OnlineTrainer, convert_svmlight, train_stream
from streamssvm.cli import main

CLI = [sys.executable, "-m", "streamssvm"]


@pytest.fixture
def data(tmp_path, make_svmlight):
    src = tmp_path / "train.svm"
    src.write_bytes(make_svmlight(np.random.default_rng(8), 300, 20, density=0.3))
    store = tmp_path / "train.h5"
    convert_svmlight(src, store, progress=False)
    return src, store


def test_text_labels_are_taken_by_train_stream_and_kept_by_the_model(tmp_path):
    """train_stream refused the string labels that SmoothSVC accepts."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = np.where(X[:, 0] + 0.1 * rng.standard_normal(200) > 0, "spam", "ham")
    model = train_stream(X, y, lam=1e-2, progress=False)
    numeric = train_stream(X, (y == "spam").astype(int), lam=1e-2, progress=False)
    assert model.classes_.tolist() == ["ham", "spam"]
    assert np.array_equal(model.coef_, numeric.coef_)  # the same problem
    assert model.score(X, y) == numeric.score(X, (y == "spam").astype(int)) > 0.9
    model.save(tmp_path / "m.npz")
    loaded = Model.load(tmp_path / "m.npz")
    assert loaded.predict(X).tolist() == model.predict(X).tolist()
    three = np.array(["a", "b", "c"])[rng.integers(0, 3, 200)]
    ovr = streamssvm.train_one_vs_rest(X, three, lam=1e-2, progress=False)
    assert ovr.classes_.tolist() == ["a", "b", "c"] and set(ovr.predict(X)) <= {"a", "b", "c"}


@pytest.mark.parametrize("labels", ["1", "-1", "7"])
def test_data_of_one_class_is_refused(tmp_path, labels):
    """A text whose rows all hold one label trained silently, against an invented -1."""
    src = tmp_path / "one.svm"
    src.write_text("".join(f"{labels} 1:{i} 2:1\n" for i in range(1, 30)))
    store = tmp_path / "one.h5"
    if labels == "7":  # not -1/+1: the converter cannot tell its class
        with pytest.raises(ValueError, match="every label is 7"):
            convert_svmlight(src, store, progress=False)
        X, y = np.eye(3), np.full(3, 7)
        with pytest.raises(ValueError, match="at least two distinct labels"):
            train_stream(X, y, progress=False)
        return
    convert_svmlight(src, store, progress=False)
    with pytest.raises(ValueError, match=rf"{store}: all 29 rows are of the class {labels}, "
                                         rf"none of -?1: a classifier needs rows of two"):
        train_stream(store, progress=False)
    with pytest.raises(ValueError, match="a classifier needs rows of two classes"):
        train_stream(np.eye(3), np.full(3, int(labels)), progress=False)


@pytest.mark.parametrize("lam, shown", [(None, "None of type NoneType"),
                                        ("1e-3", "'1e-3' of type str"),
                                        (True, "True of type bool")])
def test_lambda_that_is_no_number_is_refused_naming_it(lam, shown):
    """lam=None was a TypeError that did not name lam; lam='1e-3' was accepted."""
    message = rf"lambda \(lam\) must be a positive finite number, got {shown}"
    with pytest.raises(ValueError, match=message):
        train_stream(np.eye(3), [1, -1, 1], lam=lam, progress=False)
    with pytest.raises(ValueError, match=message):
        OnlineTrainer(lam=lam)


def test_online_trainer_refuses_bad_arguments_at_construction():
    """OnlineTrainer(lam=0) was accepted, and refused only at partial_fit."""
    with pytest.raises(ValueError, match="lambda must be a positive finite number, got 0.0"):
        OnlineTrainer(lam=0)
    with pytest.raises(ValueError, match="unknown loss 'nope'"):
        OnlineTrainer(loss="nope")


def test_an_unknown_solver_lists_auto():
    with pytest.raises(ValueError, match=r"unknown solver 'tronn'; known: auto, tron, newton"):
        train_stream(np.eye(3), [1, -1, 1], solver="tronn", progress=False)


@pytest.mark.parametrize("text", ["2**-3", "2^-3", "0.125"])
def test_sigma_takes_both_powers(data, tmp_path, text, capsys):
    """--sigma 2**-3 was refused where 2^-3 was taken."""
    _, store = data
    out = tmp_path / f"m{len(text)}.npz"
    assert main(["train", str(store), "-o", str(out), "--sigma", text, "--quiet"]) == 0
    assert Model.load(out).params["sigma"] == 0.125
    assert main(["train", str(store), "-o", str(out), "--loss", f"psi_m:sigma={text}",
                 "--overwrite", "--quiet"]) == 0
    assert Model.load(out).params["sigma"] == 0.125


def test_verbose_prints_a_line_per_iteration(data, tmp_path, python_env):
    _, store = data
    run = subprocess.run([*CLI, "train", str(store), "-o", str(tmp_path / "m.npz"),
                          "--verbose", "--lam", "1e-3"], env=python_env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    model = Model.load(tmp_path / "m.npz")
    lines = [line for line in run.stderr.splitlines()
             if line.startswith(f"{model.params['solver']}: iter")]
    assert len(lines) == len(model.history)
    for line, entry in zip(lines, model.history):
        assert f"iter {entry['iteration']:4d} f {entry['f']:.10e}" in line
        assert f"CG {entry['cg_steps']}" in line and f"passes {entry['passes']}" in line
        assert ("radius" in line) == ("delta" in entry) or entry["iteration"] == 0
    quiet = subprocess.run([*CLI, "train", str(store), "-o", str(tmp_path / "q.npz"),
                            "--quiet", "--lam", "1e-3"], env=python_env, capture_output=True,
                           text=True, timeout=300)
    assert "iter" not in quiet.stderr


def test_model_summary_and_info(data, tmp_path, capsys):
    """streamssvm info model.npz failed; nothing showed what a model was trained with."""
    _, store = data
    model = train_stream(store, lam=1e-3, progress=False)
    path = tmp_path / "m.npz"
    model.save(path)
    summary = Model.load(path).summary(top=3, names=[f"w{j}" for j in range(20)])
    with streamssvm.Store(store) as s:
        assert summary["data"] == dict(source=str(store), n_samples=s.n_samples,
                                       n_features=s.n_features, nnz=s.nnz,
                                       class_counts=s.class_counts().tolist(),
                                       zero_based=False)
    assert summary["training"]["lam"] == 1e-3 and summary["training"]["loss"] == "psi_g"
    assert summary["result"]["converged"] and summary["result"]["n_iter"] == model.params["n_iter"]
    order = np.argsort(model.coef_)
    top = summary["top_weights"][0]
    assert [j for j, _, _ in top["positive"]] == order[::-1][:3].tolist()
    assert [j for j, _, _ in top["negative"]] == order[:3].tolist()
    assert top["positive"][0] == (int(order[-1]), f"w{order[-1]}", float(model.coef_[order[-1]]))
    json.dumps(summary)  # plain data
    names = tmp_path / "names.txt"
    names.write_text("".join(f"w{j}\n" for j in range(20)))
    assert main(["info", str(path), "--top", "3", "--names", str(names)]) == 0
    out = capsys.readouterr().out
    assert f"data               {store}" in out
    assert f"{model.coef_[order[-1]]:+.6g}  feature {order[-1]}  w{order[-1]}" in out
    assert "largest negative weights (toward" in out
    names.write_text("a\nb\n")
    assert main(["info", str(path), "--top", "3", "--names", str(names)]) == 1
    assert "2 names for the model's 20 features" in capsys.readouterr().err
    assert main(["info", str(store), "--top", "3"]) == 1


def test_summary_of_a_one_vs_rest_model():
    rng = np.random.default_rng(1)
    X = sp.random(90, 6, density=0.6, random_state=1, format="csr")
    y = rng.integers(0, 3, 90)
    model = streamssvm.train_one_vs_rest(X, y, lam=1e-2, progress=False)
    summary = model.summary(top=2)
    assert [r["label"] for r in summary["result"]] == [0.0, 1.0, 2.0]
    assert summary["data"]["class_counts"] == np.bincount(y).tolist()
    assert [row["label"] for row in summary["top_weights"]] == [0.0, 1.0, 2.0]
