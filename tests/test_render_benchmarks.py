"""tools/render_benchmarks.py: the benchmarks page and the README's results table are
rendered from the JSON records the benchmarks write, never typed."""

import importlib
import json
import os
import sys

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
bench_output = importlib.import_module("bench_output")
render_benchmarks = importlib.import_module("render_benchmarks")
bench_defaults = importlib.import_module("bench_defaults")


def defaults_rows(rng):
    """Rows as bench_defaults.measure writes them, with random figures."""
    rows = []
    for data, chosen in (("tall", "newton"), ("wide", "sdca")):
        for rule in bench_defaults.RULES:
            off = float(rng.uniform(-1, 1))
            rows.append(dict(data=data, n_samples=int(rng.integers(100, 1000)),
                             n_features=int(rng.integers(10, 10000)), classes=2,
                             intercept=False, solver="auto", chosen=chosen, rule=rule,
                             seconds=float(rng.uniform(0.1, 10)), accuracy=0.9 + off / 100,
                             reference_accuracy=0.9, points_off=off, converged=True,
                             accuracy_lam_over_n=0.9))
    return rows


@pytest.fixture
def record(tmp_path, monkeypatch, rng):
    """A record written by bench_output into a folder of its own, as bench_defaults does."""
    monkeypatch.setattr(sys, "argv", [str(REPO_ROOT / "tools" / "bench_defaults.py"),
                                      "--only", "tall,wide"])
    rows = defaults_rows(rng)
    path = bench_output.write("defaults", rows, str(tmp_path / "results" / "defaults.json"))
    return path, rows


def test_the_page_and_the_readme_table_show_the_records_figures(tmp_path, record):
    path, rows = record
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n\n{render_benchmarks.START}\nold table\n"
                      f"{render_benchmarks.END}\n\nafter\n")
    page = tmp_path / "benchmarks.md"
    render_benchmarks.render(str(tmp_path / "results"), str(page), str(readme))
    text = page.read_text()
    assert "## defaults" in text
    assert "python tools/bench_defaults.py --only tall,wide" in text
    assert bench_defaults.__doc__.split("\n")[0] in text  # what it compares
    with open(path) as fh:
        machine = json.load(fh)["machine"]
    assert machine["cpu"] in text and f"{machine['cores']} cores" in text
    for row in rows:  # every figure of every row, as the table writes it
        assert render_benchmarks.cell(row["seconds"]) in text
        assert render_benchmarks.cell(row["points_off"]) in text
    table = readme.read_text()
    assert table.startswith("# x\n\nbefore\n\n") and table.endswith("\n\nafter\n")
    assert "old table" not in table
    for rule in bench_defaults.RULES:
        worst = max(abs(r["points_off"]) for r in rows if r["rule"] == rule)
        assert f"| defaults | solver auto, {rule}: " in table
        assert f"within {worst:.2f} points" in table
    assert "newton on tall" in table and "sdca on wide" in table
    assert machine["cpu"] in table


def test_a_readme_without_both_markers_is_refused(tmp_path, record):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{render_benchmarks.START}\n")
    with pytest.raises(ValueError, match="needs one line <!-- results:start -->"):
        render_benchmarks.render(str(tmp_path / "results"), str(tmp_path / "b.md"), str(readme))
    assert not (tmp_path / "b.md").exists()


def test_the_readme_has_the_markers_and_the_rendered_pages_are_current(tmp_path):
    """What is committed is what the renderer makes of benchmarks/ (no figure by hand)."""
    readme = REPO_ROOT / "README.md"
    text = readme.read_text()
    assert text.count(render_benchmarks.START) == 1 and text.count(render_benchmarks.END) == 1
    copy = tmp_path / "README.md"
    copy.write_text(text)
    page = tmp_path / "benchmarks.md"
    render_benchmarks.render(bench_output.RESULTS_DIR, str(page), str(copy))
    assert copy.read_text() == text
    assert page.read_text() == (REPO_ROOT / "docs" / "benchmarks.md").read_text()
    assert os.listdir(bench_output.RESULTS_DIR)


def test_a_record_names_the_command_as_run_from_the_repository(tmp_path):
    """Paths in the repository relative to it, arguments quoted as a shell reads them, and
    without the option naming the record's own file (in either spelling)."""
    own = str(tmp_path / "out.json")
    script = str(REPO_ROOT / "tools" / "bench_defaults.py")
    train = str(REPO_ROOT / "tests" / "data")
    for argv in ([script, "--train", train, "--rules", "tol 1e-4,tol 0.01", "--json", own],
                 [script, f"--json={own}", "--train", train, "--rules", "tol 1e-4,tol 0.01"]):
        assert bench_output.command(argv, own) == (
            "python tools/bench_defaults.py --train tests/data --rules 'tol 1e-4,tol 0.01'")
    assert bench_output.command([script, "/elsewhere/x.svm"], own) == (
        "python tools/bench_defaults.py /elsewhere/x.svm")
