"""The linter: ruff, with the configuration of pyproject.toml ([tool.ruff]), finds nothing in
the package, the tools and the tests."""

import subprocess
import sys

import pytest

from conftest import REPO_ROOT


@pytest.mark.lint
def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "streamssvm", "tools", "tests"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
