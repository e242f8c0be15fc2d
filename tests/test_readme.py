"""The README's quickstart runs as written: its code blocks, extracted from the README, run
top to bottom in an empty folder (shell blocks by bash, Python blocks by this Python), with
the `streamssvm` command and the package of this checkout."""

import os
import re
import stat
import subprocess
import sys

from conftest import REPO_ROOT

README = REPO_ROOT / "README.md"


def quickstart_blocks():
    """``[(language, code)]`` of the fenced blocks of the README's Quickstart section."""
    text = README.read_text()
    section = re.search(r"^## Quickstart\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no '## Quickstart' section"
    return re.findall(r"^```(\w+)\n(.*?)^```", section.group(1), re.S | re.M)


def test_the_quickstart_has_a_shell_and_a_python_block():
    languages = [language for language, _ in quickstart_blocks()]
    assert "sh" in languages and "python" in languages


def test_the_quickstart_writes_every_output_to_a_path_of_its_own():
    """Two commands writing one path would collide ("output exists") on the second."""
    outputs = []
    for _, code in quickstart_blocks():
        outputs += re.findall(r"convert\s+\S+\s+(\S+\.h5)", code)       # convert IN OUT
        outputs += re.findall(r"-o\s+(\S+)", code)                       # train / predict
        outputs += re.findall(r"convert_svmlight\([^,]+,\s*\"([^\"]+)\"", code)
        outputs += re.findall(r"\.save\(\"([^\"]+)\"\)", code)
    assert len(outputs) >= 6
    assert len(outputs) == len(set(outputs)), outputs


def test_the_quickstart_runs_top_to_bottom(tmp_path, python_env):
    bin_dir = tmp_path / "bin"  # `streamssvm` and `python` as this checkout's
    bin_dir.mkdir()
    command = bin_dir / "streamssvm"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m streamssvm "$@"\n')
    command.chmod(command.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "python").symlink_to(sys.executable)
    env = dict(python_env, PATH=f"{bin_dir}{os.pathsep}{python_env['PATH']}")
    work = tmp_path / "work"
    work.mkdir()
    for i, (language, code) in enumerate(quickstart_blocks()):
        argv = (["bash", "-euo", "pipefail", "-c", code] if language == "sh"
                else [sys.executable, "-c", code])
        run = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                             timeout=900)
        assert run.returncode == 0, f"block {i} ({language}):\n{code}\n{run.stderr[-3000:]}"
        if language == "python":
            accuracy = float(re.search(r"^test accuracy (\S+)$", run.stdout, re.M).group(1))
            assert accuracy > 0.84  # a9a's test accuracy of a linear SVM
    for name in ("train.h5", "test.h5", "piped.h5", "model.npz", "predictions.txt",
                 "from-text.npz", "py-train.h5", "py-test.h5", "py-model.npz"):
        assert (work / name).stat().st_size > 0, name
    predictions = (work / "predictions.txt").read_text().split()
    assert len(predictions) == 16281 and set(predictions) <= {"-1", "1"}
    assert list((work / "cache").iterdir())  # the text's store went to --cache-dir
