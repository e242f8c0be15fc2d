"""The documentation: Sphinx builds it with warnings as errors (a broken reference, a
docstring docutils cannot parse, a page outside every table of contents fail), and the
version is the one of streamssvm/_version.py everywhere it is reported."""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

import streamssvm
from streamssvm import cli


def test_sphinx_builds_the_docs_with_warnings_as_errors(tmp_path, python_env):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("sphinxarg")
    out = tmp_path / "html"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q",
                          "-j", "1", "-b", "html", "-d", str(tmp_path / "doctrees"),
                          str(REPO_ROOT / "docs"), str(out)],
                         env=python_env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    # the command line's reference is generated from the parser: every subcommand is there
    page = (out / "guide" / "cli.html").read_text()
    documented = set(", ".join(re.findall(r"<kbd>([^<]*)</kbd>", page)).split(", "))
    subcommands = cli.build_parser()._subparsers._group_actions[0].choices
    for name, parser in subcommands.items():
        assert f'id="streamssvm-{name}"' in page, name
        options = {o for action in parser._actions for o in action.option_strings}
        assert options - {"-h", "--help"} <= documented, name
    api = (out / "api" / "index.html").read_text()
    for name in ("train_stream", "SmoothSVC", "Model", "Store", "convert_svmlight"):
        assert f'id="streamssvm.{name}"' in api, name


def test_the_version_is_read_from_one_place(capsys):
    text = (REPO_ROOT / "streamssvm" / "_version.py").read_text()
    version = re.search(r'__version__ = "([^"]+)"', text).group(1)
    assert streamssvm.__version__ == version
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"streamssvm {version}"
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(REPO_ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert (project["tool"]["setuptools"]["dynamic"]["version"]
            == {"attr": "streamssvm._version.__version__"})


def test_the_changelog_has_an_entry_for_this_version():
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()
    assert f"## [{streamssvm.__version__}] - " in changelog
    assert os.path.exists(REPO_ROOT / "docs" / "changelog.md")
