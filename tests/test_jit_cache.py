"""numba's disk cache kept per kernel module (streamssvm/_jit_cache.py), and what the first
run says about it: real files, a copy of the package and an empty NUMBA_CACHE_DIR, each
run a subprocess (numba keeps compiled code in the process)."""

import json
import math
import os
import pty
import shutil
import subprocess
import threading

import pytest

from streamssvm import _jit_cache
from streamssvm.cli import FIRST_COMPILE_SECONDS
from streamssvm.datasets import a9a_paths
from streamssvm.solvers import SOLVERS

# Small kernels of three modules, called directly after the sweep of the entry points:
# linear's calls a loss of losses/_scalar.py (on three rows: its serial twin runs), the
# checksum and the codec depend on no other file.
CALLS = """
import json, sys
import numpy as np
import streamssvm
from streamssvm._runtime import prepare
from streamssvm.data import checksum
from streamssvm.kernels import codec, linear

prepare()  # as every entry point that runs kernels does, before the first
linear.loss_sum_along(np.zeros(3), np.ones(3), 0.5, 0, 1.0, 1.0, np.empty(0))
checksum.checksum(np.arange(5))
codec.single_valued(np.array([0, 1, 2], np.int32), np.ones(2, np.float32))
print(json.dumps({name: sum(kernel.stats.cache_misses.values())
                  for name, kernel in [("linear", linear.loss_sum_along.serial),
                                       ("checksum", checksum._fletcher64),
                                       ("codec", codec.single_valued)]}))
"""


@pytest.fixture
def package_copy(tmp_path, python, python_env):
    """``run() -> {kernel: cache misses}`` in a copy of the package (its folder
    ``run.package``) with a cache folder of its own (``run.cache``)."""
    root = tmp_path / "copy"
    shutil.copytree(_jit_cache._ROOT, root / "streamssvm",
                    ignore=shutil.ignore_patterns("__pycache__", "datasets"))
    shutil.copytree(f"{_jit_cache._ROOT}/datasets", root / "streamssvm" / "datasets",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(python_env, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def run():
        done = subprocess.run([python, "-c", CALLS], env=env,
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    run.package, run.cache = root / "streamssvm", tmp_path / "numba"
    return run


def append_comment(path):
    with open(path, "a") as fh:
        fh.write("\n# an edit\n")


def test_dependencies_are_the_files_compiled_code_sees():
    """linear's kernels call the losses and the intrinsics; the codec and the checksum
    nothing of the package; no kernel module sees the command line or the solvers."""
    assert {"losses/_scalar.py", "kernels/_intrinsics.py"} <= _jit_cache.dependencies(
        "kernels/linear.py")
    assert "_memory.py" not in _jit_cache.dependencies("kernels/linear.py")  # plain Python
    assert _jit_cache.dependencies("kernels/codec.py") == set()
    assert "kernels/linear.py" in _jit_cache.dependencies("kernels/stochastic.py")
    seen = set().union(*map(_jit_cache.dependencies, _jit_cache.kernel_modules()))
    assert not seen & {"cli.py", "api.py", "solvers/tron.py", "objective/smooth_svm.py"}


def test_an_edit_recompiles_the_kernels_that_depend_on_the_file_only(package_copy):
    assert package_copy() == {"linear": 1, "checksum": 1, "codec": 1}  # cold
    assert package_copy() == {"linear": 0, "checksum": 0, "codec": 0}  # warm
    append_comment(package_copy.package / "cli.py")  # no kernel depends on it
    append_comment(package_copy.package / "solvers" / "tron.py")
    assert package_copy() == {"linear": 0, "checksum": 0, "codec": 0}
    append_comment(package_copy.package / "losses" / "_scalar.py")  # linear's kernels call it
    assert package_copy() == {"linear": 1, "checksum": 0, "codec": 0}
    assert package_copy() == {"linear": 0, "checksum": 0, "codec": 0}
    # numba names a function's files by its first line: those of the line before are removed
    codec = package_copy.package / "kernels" / "codec.py"
    codec.write_text("\n" + codec.read_text())
    before = {p.name for p in package_copy.cache.rglob("codec.single_valued-*")}
    assert package_copy() == {"linear": 0, "checksum": 0, "codec": 1}
    after = {p.name for p in package_copy.cache.rglob("codec.single_valued-*")}
    assert after and not after & before, (before, after)


# The command line with its stderr on a terminal (a pseudo-terminal), printing to stdout
# the number of the package's kernels it compiled.
COUNTING_MAIN = """
import sys
from streamssvm._jit_cache import watching_compiles
from streamssvm.cli import main

with watching_compiles() as compiles:
    status = main(sys.argv[1:])
print(len(compiles.kernels))
sys.exit(status)
"""


def on_terminal(python, env, *argv):
    """Run the command line, stderr a terminal: ``(kernels compiled, stderr text)``."""
    master, slave = pty.openpty()
    chunks = []

    def read():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal's other end closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        done = subprocess.run([python, "-c", COUNTING_MAIN, *map(str, argv)], env=env,
                              stdout=subprocess.PIPE, stderr=slave, timeout=900, text=True)
    finally:
        os.close(slave)
        reader.join()
        os.close(master)
    stderr = b"".join(chunks).decode(errors="replace")
    assert done.returncode == 0, stderr[-3000:]
    return int(done.stdout.split()[-1]), stderr


NOTICE = "streamssvm: compiling kernels for the first run (~"


def test_a_cold_cache_is_announced_and_warmup_fills_it(tmp_path, python, python_env):
    """On a terminal, a first run says that it compiles, once; ``streamssvm warmup`` then
    compiles what training and predicting need: they compile nothing and say nothing."""
    env = dict(python_env, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    text = tmp_path / "small.svm"
    text.write_bytes(b"+1 1:0.5 3:1\n-1 2:1\n+1 1:1 2:0.25\n-1 3:2\n")
    compiled, stderr = on_terminal(python, env, "convert", text, tmp_path / "small.h5")
    assert compiled > 0 and stderr.count(NOTICE) == 1, stderr
    compiled, stderr = on_terminal(python, env, "convert", text, tmp_path / "again.h5")
    assert compiled == 0 and NOTICE not in stderr, stderr

    warmup = subprocess.run([python, "-m", "streamssvm.cli", "warmup", "--solvers", "tron"],
                            env=env, capture_output=True, text=True, timeout=900)
    assert warmup.returncode == 0, warmup.stderr[-3000:]
    assert "train --solver tron: compiled" in warmup.stdout, warmup.stdout
    store, model = tmp_path / "a9a.h5", tmp_path / "a9a.npz"
    for argv in (["convert", a9a_paths()[0], store], ["train", store, "--solver", "tron",
                                                       "-o", model], ["predict", model, store]):
        compiled, stderr = on_terminal(python, env, *argv)
        assert compiled == 0 and NOTICE not in stderr, (argv, stderr)


# the paths of tools/bench_compile.py whose first-run compile each command's notice estimates
NOTICE_PATHS = {"convert": ("convert",), "predict": ("predict",), "demo": ("demo",),
                "train": tuple(f"store:{name}" for name in SOLVERS)}


def test_the_notices_estimates_are_the_benchmarks_figures():
    """Each command's estimate, with the compile helper and without, is its worst path's
    first-run extra seconds in benchmarks/compile.json rounded up, give or take a second
    of the benchmark's noise: fails when a record moves and the notice stays."""
    record = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks", "compile.json")
    with open(record) as fh:
        rows = {r["path"]: r for r in json.load(fh)["figures"]["paths"]}
    assert set(FIRST_COMPILE_SECONDS) == set(NOTICE_PATHS)
    for command, paths in NOTICE_PATHS.items():
        for estimate, key in zip(FIRST_COMPILE_SECONDS[command],
                                 ("first_run_extra_s", "first_run_extra_alone_s")):
            worst = max(rows[p][key] for p in paths)
            assert abs(estimate - math.ceil(worst)) <= 1, (command, key, estimate, worst)


SPECIALIZATIONS = """
import sys
import streamssvm
from streamssvm.data import svmlight
from streamssvm.kernels import codec

folder = sys.argv[1]
with open(folder + "/multi.svm", "w") as fh:  # unsorted rows: the heap sort runs
    fh.write("".join(f"{k % 3} 5:1 2:1 {7 + k % 4}:1\\n" for k in range(60)))
streamssvm.convert_svmlight(folder + "/multi.svm", folder + "/multi.h5", multiclass=True,
                            progress=False)
with open(folder + "/binary.svm", "w") as fh:  # single-valued rows: lean blocks' row values
    fh.write("".join(f"{1 if k % 2 else -1} 4:1 {1 + k % 3}:1\\n" for k in range(60)))
streamssvm.convert_svmlight(folder + "/binary.svm", folder + "/binary.h5", progress=False)
streamssvm.train_stream(folder + "/binary.h5", progress=False, max_iter=2)
for kernel in (svmlight._sift_down, svmlight._find_class, codec.first_values):
    print(kernel.py_func.__name__, len(kernel.signatures))
"""


def test_convert_and_train_compile_one_specialization_of_each_helper(tmp_path, python,
                                                                     python_env):
    """A literal argument or a second dtype makes numba compile a function again: the
    parser's heap sort and class lookup, and a lean block's row values (written by the
    store, read by training), each compile once on an empty cache."""
    env = dict(python_env, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    done = subprocess.run([python, "-c", SPECIALIZATIONS, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = dict(line.split() for line in done.stdout.splitlines())
    assert counts == {"_sift_down": "1", "_find_class": "1", "first_values": "1"}, counts
