"""Outputs appear whole or not at all: stores, models and predictions when the disk fills up,
and conversions killed with SIGKILL.

A full disk is made two ways: a file size limit (RLIMIT_FSIZE, set in a child process:
writes past it fail with EFBIG, no privileges needed), swept over many sizes so that
writing fails at every stage (file creation, blocks, metadata, closing); and, where this
process may mount one, a real 64 KiB tmpfs (ENOSPC).
"""

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from streamssvm import Store, convert_svmlight
from streamssvm.cli import main
from streamssvm.data.verify import verify_store
from streamssvm.model import Model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
kill_convert = importlib.import_module("kill_convert")

# Runs each write of argv[1] (a JSON list of [operation, limit]) under a file size limit and
# prints one JSON line per write: the error (errno and message) or None, and the folder.
CHILD = r"""
import contextlib, hashlib, io, json, os, resource, signal, sys
import numpy as np
from streamssvm import Store, convert_svmlight
from streamssvm.data.store import write_store
from streamssvm.cli import main
from streamssvm.model import Model

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
work, src, store, model = sys.argv[2:6]
out = os.path.join(work, "out")
unlimited = resource.RLIM_INFINITY
# compile (and cache) every kernel before any limit: numba's cache files are writes too
convert_svmlight(src, os.path.join(work, "warm.h5"), progress=False)
with contextlib.redirect_stdout(io.StringIO()):
    main(["predict", model, store, "-o", os.path.join(work, "warm.txt")])
for operation, limit in json.loads(sys.argv[1]):
    for name in os.listdir(out):
        if name != "keep":
            os.unlink(os.path.join(out, name))
    keep = open(os.path.join(out, "keep"), "rb").read()
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, unlimited))
    error, status, stderr = None, None, io.StringIO()
    try:
        if operation == "convert":
            convert_svmlight(src, os.path.join(out, "store.h5"), progress=False, block_nnz=500)
        elif operation == "convert over":
            convert_svmlight(src, os.path.join(out, "keep"), progress=False, block_nnz=500,
                             overwrite=True)
        elif operation == "write_store":
            with Store(store) as source:
                write_store(os.path.join(out, "copy.h5"), source)
        elif operation == "save":
            Model(np.linspace(-1, 1, 20000), 0.5, (-1.0, 1.0)).save(os.path.join(out, "m.npz"))
        else:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                status = main(["predict", model, store, "-o", os.path.join(out, "p.txt")])
    except OSError as exc:
        error = [exc.errno, str(exc)]
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (unlimited, unlimited))
    kept = keep == open(os.path.join(out, "keep"), "rb").read()
    print(json.dumps({"operation": operation, "limit": limit, "error": error, "status": status,
                      "stderr": stderr.getvalue(), "files": sorted(os.listdir(out)),
                      "kept": kept}))
"""


@pytest.fixture
def inputs(tmp_path, make_svmlight):
    src = tmp_path / "train.svm"
    src.write_bytes(make_svmlight(np.random.default_rng(4), 3000, 300, density=0.02))
    store = tmp_path / "train.h5"
    convert_svmlight(src, store, progress=False, block_nnz=500)
    model = tmp_path / "model.npz"
    Model(np.linspace(-1, 1, 300), 0.1, (-1.0, 1.0)).save(model)
    (tmp_path / "out").mkdir()
    return src, store, model


def test_writes_past_a_size_limit_fail_cleanly(tmp_path, inputs, python_env):
    src, store, model = inputs
    keep = tmp_path / "out" / "keep"
    convert_svmlight(src, keep, progress=False, block_rows=7)  # an older store to replace
    sizes = {"convert": os.path.getsize(store), "convert over": os.path.getsize(store),
             "write_store": os.path.getsize(store), "save": 170_000, "predict": 25_000}
    plan = [(operation, limit) for operation, size in sizes.items()
            for limit in [0, 1, 100, 700, 4096] + [int(size * f) for f in
                                                   (0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.5)]]
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps(plan), str(tmp_path),
                          str(src), str(store), str(model)],
                         env=python_env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(results) == len(plan)
    failed = set()
    for r in results:
        out = tmp_path / "out"
        kept = ["keep"] if r["operation"] != "convert over" else []
        if r["error"] is None and r["status"] in (None, 0):
            written = {"convert": "store.h5", "convert over": "keep", "write_store": "copy.h5",
                       "save": "m.npz", "predict": "p.txt"}[r["operation"]]
            assert r["files"] == sorted(kept + [written]), r
            continue
        failed.add(r["operation"])
        # the error says what happened to which file, and nothing is left behind
        assert r["files"] == ["keep"] and r["kept"], r
        if r["operation"] == "predict":
            assert r["status"] == 1 and r["stderr"] == (
                f"streamssvm: error: {out / 'p.txt'}: file too large (the file system's or "
                f"the process's size limit) while writing; nothing was written\n"), r
        else:
            assert r["error"][0] == 27 and "file too large" in r["error"][1], (r["operation"], r)
            assert "nothing was written" in r["error"][1] and str(out) in r["error"][1], r
    assert failed == set(sizes)  # every kind of write met the limit at some size
    # the last conversion over the old store had room: the store is the new one, whole
    problems, _ = verify_store(keep)
    assert problems == []
    with Store(keep) as new, Store(store) as reference:
        assert new.n_blocks == reference.n_blocks and new.nnz == reference.nnz


@pytest.fixture
def small_tmpfs(tmp_path):
    mountpoint = tmp_path / "tmpfs"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                              str(mountpoint)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs privileges); the size-limit test "
                    "covers the same paths with EFBIG")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=True)


def test_a_full_disk_leaves_nothing_behind(small_tmpfs, inputs, capsys):
    src, store, model = inputs
    with pytest.raises(OSError, match="disk full while writing; nothing was written") as info:
        convert_svmlight(src, small_tmpfs / "store.h5", progress=False)
    assert info.value.errno == 28 and info.value.filename == str(small_tmpfs / "store.h5")
    with pytest.raises(OSError, match="disk full while writing") as info:
        Model(np.zeros(100_000), 0.0, (-1.0, 1.0)).save(small_tmpfs / "m.npz")
    assert info.value.errno == 28
    assert os.listdir(small_tmpfs) == []
    with open(small_tmpfs / "filler", "wb") as fh:  # 4 KiB left: too little for the predictions
        fh.write(b"\0" * (64 * 1024 - 4096))
    assert main(["predict", str(model), str(store), "-o", str(small_tmpfs / "p.txt"),
                 "--decision"]) == 1
    assert capsys.readouterr().err == (f"streamssvm: error: {small_tmpfs / 'p.txt'}: disk full "
                                       f"while writing; nothing was written\n")
    assert os.listdir(small_tmpfs) == ["filler"]


def test_conversions_killed_leave_the_old_store_or_the_new_one(tmp_path, make_svmlight, capsys):
    src = tmp_path / "big.svm"
    src.write_bytes(make_svmlight(np.random.default_rng(5), 20000, 2000, density=0.01))
    old = tmp_path / "old.svm"
    old.write_bytes(make_svmlight(np.random.default_rng(6), 500, 50))
    work = tmp_path / "work"
    work.mkdir()
    counts, leftovers, duration = kill_convert.run(src, old, work, 24, seed=3)
    with capsys.disabled():
        print(f"\n24 conversions killed (uninterrupted: {duration:.2f} s): {dict(counts)}, "
              f"{leftovers} temporary files left")
    assert counts["PARTIAL"] == 0
    assert counts["killed, old store intact"] + counts["killed, no store"] >= 8
    assert leftovers <= counts["killed, old store intact"] + counts["killed, no store"]


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_quiet_runs_take_no_progress_bar_lock(tmp_path, make_svmlight):
    """With progress off, converting and training make no tqdm bar: tqdm's lock, shared
    with forked children, may be left held by one that was killed, and must not block.
    (The work runs once before the lock is taken, so that the timed run compiles no kernel:
    on an empty numba cache, compiling them took longer than the wait.)"""
    import threading

    import tqdm.auto

    from streamssvm import train_stream

    src, dst = tmp_path / "s.svm", tmp_path / "s.h5"
    src.write_bytes(make_svmlight(np.random.default_rng(7), 300, 20))
    done = []

    def work():
        convert_svmlight(src, dst, progress=False)
        for solver in ("tron", "sgd"):  # the two kinds of solver book-keeping
            train_stream(dst, solver=solver, max_iter=2, progress=False)
        done.append(True)

    work()
    dst.unlink()
    done.clear()
    lock = tqdm.auto.tqdm.get_lock()
    lock.acquire()  # as a killed child leaves it
    try:
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        worker.join(60)
        assert done, "a quiet run waited for tqdm's lock"
    finally:
        lock.release()
        worker.join()


def test_output_errors_name_the_output_before_any_work(tmp_path, inputs, capsys):
    """Errors named the temporary file (".m.npz.tmp-3238: No such file or directory"), and
    train found the output's folder missing only after the whole fit."""
    src, store, model = inputs
    missing = tmp_path / "missing" / "m.npz"
    checkpoint = tmp_path / "ck.npz"
    assert main(["train", str(store), "-o", str(missing), "--quiet", "--solver", "sgd",
                 "--checkpoint", str(checkpoint), "--checkpoint-every", "0"]) == 1
    assert capsys.readouterr().err == (f"streamssvm: error: {missing}: no directory "
                                       f"{tmp_path / 'missing'} to write it in\n")
    assert not checkpoint.exists()  # refused before training, which writes it at once
    out = tmp_path / "out"
    for argv in (["train", str(store), "-o", str(out), "--overwrite"],
                 ["train", str(store), "-o", str(out)],  # said "output exists"
                 ["predict", str(model), str(store), "-o", str(out), "--overwrite"]):
        assert main(argv) == 1
        assert capsys.readouterr().err == (f"streamssvm: error: {out}: is a directory, not a "
                                           f"file to write\n")
    with pytest.raises(FileNotFoundError, match="no directory") as info:
        Model(np.ones(3), 0.0, (-1.0, 1.0)).save(missing)
    assert info.value.filename == str(missing)
    assert sorted(os.listdir(tmp_path)) == ["model.npz", "out", "train.h5", "train.svm"]


def test_a_checkpoint_named_as_the_model_is_refused_before_training(tmp_path, inputs, capsys,
                                                                   monkeypatch):
    """-o X --checkpoint X trained, then found the model's name taken by the checkpoint
    (and left it there); the same file by another name too."""
    src, store, model = inputs
    monkeypatch.chdir(tmp_path)
    for checkpoint in ("m.npz", str(tmp_path / "m.npz"), "./m.npz"):
        assert main(["train", str(store), "-o", "m.npz", "--quiet", "--checkpoint",
                     checkpoint]) == 1
        assert capsys.readouterr().err == (f"streamssvm: error: --checkpoint {checkpoint} is "
                                           f"the model file -o m.npz: give it another name\n")
        assert not (tmp_path / "m.npz").exists()


def test_an_output_that_is_an_input_is_refused_even_with_overwrite(tmp_path, inputs, capsys,
                                                                    monkeypatch):
    """convert, train and predict with --overwrite replaced their input by their output
    (the text by a store, the store by a model or by predictions)."""
    src, store, model = inputs
    monkeypatch.chdir(tmp_path)
    before = {path: path.read_bytes() for path in (src, store, model)}
    quiet = ["--overwrite", "--quiet"]
    for argv, output, source in (
            (["convert", str(src), "./train.svm", *quiet], "./train.svm", src),
            (["convert", str(src), "out.h5", "--like", "train.h5", *quiet], None, None),
            (["train", "train.h5", "-o", str(store), *quiet], str(store), "train.h5"),
            (["train", str(store), str(store), "-o", "train.h5", *quiet], "train.h5", store),
            (["predict", "model.npz", "train.h5", "-o", "train.h5", "--overwrite"], "train.h5",
             "train.h5"),
            (["predict", "model.npz", "train.h5", "-o", str(model), "--overwrite"], str(model),
             "model.npz")):
        status = main(argv)
        if output is None:  # another output of the same inputs: written
            assert status == 0
            continue
        assert status == 1
        assert capsys.readouterr().err == (f"streamssvm: error: {output}: the output is the "
                                           f"input {source}: give the output another name\n")
    assert {path: path.read_bytes() for path in before} == before


@pytest.mark.parametrize("where, error", [("missing/run.ckpt", FileNotFoundError),
                                          (".", IsADirectoryError)])
def test_a_checkpoint_that_cannot_be_written_is_refused_before_the_run(tmp_path, where, error):
    """A checkpoint's folder was found missing at its first write: with checkpoint_every's
    default, after the whole run, whose model was then lost (found by a probe)."""
    from streamssvm.solvers.checkpoint import Checkpoint

    path = tmp_path / where
    with pytest.raises(error) as info:
        Checkpoint(path)
    assert info.value.filename == str(path)


def test_an_output_name_at_the_length_limit_is_written(tmp_path, inputs):
    """The temporary name added ".tmp-<pid>" to the output's: at 250 characters and more
    it passed the file system's limit of 255 and the write failed ("File name too
    long"). It is cut to the limit now."""
    src, store, _ = inputs
    for name in ("m" * 255, "m" * 250 + ".npz"):
        Model(np.arange(3.0), 0.5, (-1.0, 1.0)).save(tmp_path / name)
        assert np.array_equal(Model.load(tmp_path / name).coef_, np.arange(3.0))
    long_store = tmp_path / ("s" * 252 + ".h5")
    convert_svmlight(src, long_store, progress=False)
    assert Store(long_store).n_samples == Store(store).n_samples
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["m" * 255, "m" * 250 + ".npz", long_store.name, "model.npz", "out", "train.h5",
         "train.svm"])


def test_demo_creates_its_workdir_and_keeps_the_stores_there(tmp_path, capsys):
    """demo --workdir replaced a9a.h5 and a9a.t.h5 there without asking (overwrite=True)."""
    work = tmp_path / "new" / "work"  # created
    assert main(["demo", "--quiet", "--workdir", str(work)]) == 0
    accuracy = capsys.readouterr().out.split("test accuracy  ")[1]
    assert float(accuracy) >= 0.84
    stores = {name: (work / name).read_bytes() for name in ("a9a.h5", "a9a.t.h5")}
    (work / "a9a.h5").unlink()  # the other is refused too, before either is written
    assert main(["demo", "--quiet", "--workdir", str(work)]) == 1
    assert capsys.readouterr().err == (f"streamssvm: error: {work / 'a9a.t.h5'}: output exists "
                                       f"(pass overwrite=True / --overwrite to replace it)\n")
    assert os.listdir(work) == ["a9a.t.h5"]
    assert (work / "a9a.t.h5").read_bytes() == stores["a9a.t.h5"]
