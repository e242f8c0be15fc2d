"""The helper that compiles a first run's kernels ahead (streamssvm._ahead): its manifest
against what a real run compiles from an empty cache, and the helper's compiles against
what the run then needs."""

import json
import os
import subprocess
import sys

import pytest

from streamssvm import _ahead

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
PATH = "store:newton"  # the default solver's on the shipped a9a


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """tools/bench_compile.py (its children run a path from a given cache) and a folder
    with its inputs (a9a's store and model)."""
    sys.path.insert(0, TOOLS)
    import bench_compile

    work = tmp_path_factory.mktemp("work")
    bench_compile.make_inputs(str(work), str(tmp_path_factory.mktemp("setup")),
                              bench_compile.REPO_ROOT)
    return bench_compile, str(work)


def run(bench, cache, ahead):
    bench_compile, work = bench
    return bench_compile.run_child(PATH, work, str(cache), bench_compile.REPO_ROOT, ahead)


def test_every_recorded_type_decodes_to_itself():
    paths = _ahead.manifest()
    assert {"convert", PATH, "matrix:sdca"} <= set(paths)
    for entries in paths.values():
        for _, _, args in entries:
            assert [_ahead.encode(_ahead.decode(a)) for a in args] == args


def test_the_manifest_is_what_a_run_compiles_from_an_empty_cache(bench, tmp_path):
    """Fails when a kernel's arguments change: run tools/record_kernels.py."""
    compiled = run(bench, tmp_path, False)["entries"]
    assert compiled == _ahead.manifest()[PATH]


def test_the_helper_compiles_what_the_run_needs_and_then_starts_no_other(bench, tmp_path,
                                                                      python_env):
    env = dict(python_env, NUMBA_CACHE_DIR=str(tmp_path))
    script = ("import json, sys\nfrom streamssvm import _ahead\n"
              "m = _ahead.manifest()[sys.argv[1]]\n"
              "with _ahead.compiling_ahead(sys.argv[1]):\n"
              "    helper = _ahead._running[0] if _ahead._running else None\n"
              "    if helper: helper.wait()\n"  # let it finish: the run below compiles nothing
              "print(json.dumps([helper is not None, helper and helper.returncode]))")
    started, code = json.loads(subprocess.run(
        [sys.executable, "-c", script, PATH], env=dict(env, **{_ahead.ENV: "1"}),
        capture_output=True, text=True, check=True).stdout)
    assert started and code == 0
    assert run(bench, tmp_path, True)["entries"] == []  # all loaded from the cache
    again = subprocess.run([sys.executable, "-c", script, PATH], capture_output=True,
                           text=True, check=True, env=dict(env, **{_ahead.ENV: "1"})).stdout
    assert json.loads(again) == [False, None]  # warm: no helper


def test_a_helper_is_stopped_when_its_run_ends(tmp_path, python_env):
    script = ("import json, sys\nfrom streamssvm import _ahead\n"
              "with _ahead.compiling_ahead('matrix:sdca'):\n"
              "    helper = _ahead._running[0]\n"
              "    with _ahead.compiling_ahead('convert'):\n"  # nested: the outer one serves
              "        nested = len(_ahead._running)\n"
              "print(json.dumps([helper.poll() is not None, nested, len(_ahead._running)]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env=dict(python_env, NUMBA_CACHE_DIR=str(tmp_path),
                                               **{_ahead.ENV: "1"}))
    assert json.loads(done.stdout) == [True, 1, 0]


def test_no_helper_starts_without_room_for_it(tmp_path, python_env):
    """A process whose share of the free memory is below HELPER_ROOM (memory_share: the
    share lockstep's runs take) starts no helper on a cold cache; with its whole share it
    does."""
    script = ("import json, sys\nfrom streamssvm import _ahead\n"
              "from streamssvm._memory import available_memory_bytes, memory_share\n"
              "parts = available_memory_bytes() // _ahead.HELPER_ROOM + 1\n"
              "with memory_share(parts), _ahead.compiling_ahead('convert'):\n"
              "    short = bool(_ahead._running)\n"
              "with _ahead.compiling_ahead('convert'):\n"
              "    whole = bool(_ahead._running)\n"
              "print(json.dumps([short, whole]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env=dict(python_env, NUMBA_CACHE_DIR=str(tmp_path),
                                               **{_ahead.ENV: "1"}))
    assert json.loads(done.stdout) == [False, True]


def test_the_demo_keys_its_helper_by_the_shipped_shape():
    import lzma

    from streamssvm.data.svmlight import parse_svmlight_bytes
    from streamssvm.datasets import A9A_SHAPE, a9a_paths

    with lzma.open(a9a_paths()[0]) as fh:
        X, _, _ = parse_svmlight_bytes(fh.read())
    assert X.shape == A9A_SHAPE
