"""Outputs that respect what the path is, publications that never replace what appeared,
folders checked before the work, the litter of killed runs, and every damaged model or
checkpoint as one clear error.

A regular file (or a new path) is written whole or not at all; ``-``, a descriptor, a FIFO
or a device is written in place and never renamed over (streamssvm/_atomic.py).
"""

import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

import streamssvm
from streamssvm import Model, convert_svmlight
from streamssvm._atomic import _rename_noreplace, atomic_output, clean_stale, temporary_name
from streamssvm._npz import read_npz
from streamssvm.cli import main
from streamssvm.data.verify import verify_store
from streamssvm.errors import CheckpointError, FileFormatError, ModelFileError
from streamssvm.solvers.checkpoint import Checkpoint

CLI = [sys.executable, "-m", "streamssvm"]


@pytest.fixture
def data(tmp_path, make_svmlight):
    """A text file, its store and a model trained on it."""
    src = tmp_path / "train.svm"
    src.write_bytes(make_svmlight(np.random.default_rng(3), 400, 30, density=0.2))
    store = tmp_path / "train.h5"
    convert_svmlight(src, store, progress=False)
    model = tmp_path / "model.npz"
    streamssvm.train_stream(store, lam=1e-3, progress=False).save(model)
    return src, store, model


def _labels(model, store):
    m = Model.load(model)
    return [str(int(v)) for v in m.predict(store).tolist()]


def _run(args, env, **kwargs):
    return subprocess.run([*CLI, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300, **kwargs)


def test_a_symlink_to_stdout_is_written_through_not_replaced(tmp_path, data, python_env):
    """-o /dev/stdout --overwrite, as root, replaced the /dev/stdout symlink by a regular
    file. A link of our own to /dev/stdout stands for it here."""
    _, store, model = data
    link = tmp_path / "stdout-link"
    link.symlink_to("/dev/stdout")
    run = _run(["predict", model, store, "-o", link, "--overwrite"], python_env)
    assert run.returncode == 0, run.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    assert run.stdout.split("\n")[1:-1] == _labels(model, store)


def test_dev_stdout_and_dash_write_the_standard_output(data, python_env, tmp_path):
    _, store, model = data
    expected = _labels(model, store)
    for output in ("-", "/dev/stdout"):
        run = _run(["predict", model, store, "-o", output], python_env, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines() == expected  # the accuracy went to stderr
        assert run.stderr.startswith("accuracy ")
    assert not (tmp_path / "-").exists()


def test_a_descriptor_is_written_in_place(data, python_env):
    """-o >(wc -l) (/dev/fd/63) computed everything and then failed on /dev/fd/63."""
    _, store, model = data
    read, write = os.pipe()
    with subprocess.Popen([*CLI, "predict", str(model), str(store), "-o", f"/dev/fd/{write}"],
                          env=python_env, pass_fds=(write,), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        os.close(write)
        with os.fdopen(read) as fh:
            written = fh.read()
        assert proc.wait(300) == 0, proc.stderr.read()
    assert written.splitlines() == _labels(model, store)


def test_a_fifo_is_written_in_place_even_with_overwrite(tmp_path, data, python_env):
    """-o FIFO --overwrite replaced the named pipe by a file; its reader got nothing."""
    _, store, model = data
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    run = _run(["predict", model, store, "-o", fifo, "--overwrite"], python_env)
    written = reader.communicate(timeout=300)[0]
    assert run.returncode == 0, run.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert written.splitlines() == _labels(model, store)


def test_a_model_goes_to_the_standard_output(tmp_path, data, python_env):
    _, store, _ = data
    run = subprocess.run([*CLI, "train", str(store), "-o", "-", "--lam", "1e-3"],
                         env=python_env, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr
    (tmp_path / "piped.npz").write_bytes(run.stdout)
    assert b"wrote -" in run.stderr  # the summary is not in the model's bytes
    piped = Model.load(tmp_path / "piped.npz")
    direct = streamssvm.train_stream(store, lam=1e-3, progress=False)
    assert np.array_equal(piped.coef_, direct.coef_)


def test_convert_reads_the_standard_input(tmp_path, data, python_env):
    """convert - x.h5 said "-: No such file or directory"."""
    src, store, _ = data
    piped = tmp_path / "piped.h5"
    with open(src, "rb") as fh:
        run = _run(["convert", "-", piped, "--quiet"], python_env, stdin=fh)
    assert run.returncode == 0, run.stderr
    with streamssvm.Store(piped) as a, streamssvm.Store(store) as b:
        assert (a.n_samples, a.nnz, a.data_digest()) == (b.n_samples, b.nnz, b.data_digest())
        assert a.metadata["source_name"] == "<stdin>"
    bad = _run(["convert", "-", tmp_path / "bad.h5"], python_env, input="1 x:1\n")
    assert bad.returncode == 1 and bad.stderr.startswith("streamssvm: error: <stdin>: line 1")


def test_a_store_or_checkpoint_must_be_a_regular_file(tmp_path, data, capsys, monkeypatch):
    src, store, _ = data
    monkeypatch.chdir(tmp_path)  # where a "-" would be written
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for argv in (["convert", str(src), "-"], ["convert", str(src), str(fifo)],
                 ["train", str(store), "-o", str(tmp_path / "m.npz"), "--checkpoint",
                  str(fifo), "--resume"]):
        assert main(argv) == 1
        assert "not a regular file" in capsys.readouterr().err
    assert main(["train", str(store), "-o", str(tmp_path / "m.npz"), "--checkpoint", "-"]) == 1
    assert "-: not a regular file" in capsys.readouterr().err


def test_a_link_to_a_regular_file_keeps_pointing_there(tmp_path):
    target = tmp_path / "models" / "current.npz"
    target.parent.mkdir()
    Model(np.zeros(3), 0.0, (-1.0, 1.0)).save(target)
    link = tmp_path / "model.npz"
    link.symlink_to(target)
    Model(np.ones(3), 0.0, (-1.0, 1.0)).save(link)
    assert link.is_symlink() and np.array_equal(Model.load(target).coef_, np.ones(3))


def test_a_file_that_appears_while_the_work_runs_is_kept(tmp_path):
    """Two writers of one absent output, without overwrite: the later rename silently
    replaced the other's file."""
    path = tmp_path / "out.npz"
    with pytest.raises(FileExistsError, match="appeared while this ran") as raised:
        with atomic_output(path) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"mine")
            path.write_bytes(b"theirs")  # the other writer publishes first
    assert raised.value.filename == os.fspath(path)
    assert path.read_bytes() == b"theirs"
    assert os.listdir(tmp_path) == ["out.npz"]  # no temporary file left
    with atomic_output(path, overwrite=True) as tmp:  # asked to replace: replaced
        with open(tmp, "wb") as fh:
            fh.write(b"mine")
    assert path.read_bytes() == b"mine"


def test_two_conversions_racing_for_one_output_leave_one_whole_store(tmp_path, data,
                                                                     python_env):
    src, _, _ = data
    out = tmp_path / "race.h5"
    procs = [subprocess.Popen([*CLI, "convert", str(src), str(out), "--quiet"], env=python_env,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(p.wait(300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stderr.close()
    assert [code for code, _ in results].count(0) >= 1
    for code, err in results:
        assert code == 0 or ("output exists" in err or "appeared while this ran" in err), err
    assert verify_store(out)[0] == []
    assert os.listdir(tmp_path).count("race.h5") == 1
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_rename_without_replace(tmp_path):
    """The publication used where a file system has no hard links."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    with pytest.raises(FileExistsError):
        _rename_noreplace(a, b)
    assert b.read_bytes() == b"b"
    b.unlink()
    _rename_noreplace(a, b)
    assert b.read_bytes() == b"a" and not a.exists()


def _dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_temporary_files_of_killed_runs_are_removed_by_the_next_write(tmp_path, data,
                                                                      capsys):
    """A SIGKILLed conversion left its .OUT.tmp-PID file; nothing ever removed it."""
    src, _, _ = data
    folder = tmp_path / "out"
    folder.mkdir()
    dead, host = _dead_pid(), temporary_name(folder, "x").rsplit("-", 1)[1]
    stale = [folder / f".old.h5.tmp-{dead}-{host}", folder / f".legacy.h5.tmp-{dead}",
             folder / f".old.h5.probe-{dead}-{host}"]
    kept = [folder / f".live.h5.tmp-{os.getpid()}-{host}",   # a running process's
            folder / f".away.h5.tmp-{dead}-otherhost",        # another machine's
            folder / ".notours.tmp", folder / "data.h5"]
    for path in stale + kept:
        path.write_bytes(b"x")
    convert_svmlight(src, folder / "new.h5", progress=False)
    assert sorted(os.listdir(folder)) == sorted([p.name for p in kept] + ["new.h5"])
    stale[0].write_bytes(b"x")
    assert main(["verify", "--clean", str(folder)]) == 0
    assert capsys.readouterr().out == f"removed {stale[0]} (left by a killed run)\n"
    assert clean_stale(folder) == []


def _read_only_run(tmp_path, argv):
    """``argv`` of the command line, run with its outputs on a read-only file system (a
    tmpfs mounted read-only in a user and mount namespace of its own)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) not found: no read-only file system to write into")
    ro = tmp_path / "ro"
    ro.mkdir(exist_ok=True)
    script = f"mount -t tmpfs -o ro none {ro} && exec \"$@\""
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", *CLI, *map(str, argv)],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    if "mount" in run.stderr and "permission denied" in run.stderr.lower():
        pytest.skip(f"cannot mount a read-only tmpfs here: {run.stderr.strip()}")
    return ro, run


@pytest.mark.parametrize("command", ["convert", "train", "predict", "checkpoint"])
def test_a_read_only_file_system_is_refused_before_the_work(tmp_path, data, command):
    """convert, train -o, predict -o and --checkpoint escaped as OSError tracebacks
    ([Errno 30] Read-only file system), train's after all its iterations."""
    src, store, model = data
    ro = tmp_path / "ro"
    argv, output = {
        "convert": (["convert", src, ro / "s.h5"], ro / "s.h5"),
        "train": (["train", store, "-o", ro / "m.npz", "--max-iter", "1000000", "--tol", "0"],
                  ro / "m.npz"),
        "predict": (["predict", model, store, "-o", ro / "p.txt"], ro / "p.txt"),
        "checkpoint": (["train", store, "-o", tmp_path / "m.npz", "--checkpoint",
                        ro / "run.ckpt"], ro / "run.ckpt"),
    }[command]
    _, run = _read_only_run(tmp_path, argv)
    assert run.returncode == 1, run.stderr
    assert run.stderr == (f"streamssvm: error: {output}: read-only file system: cannot write "
                          f"in {ro}\n")
    assert run.stdout == ""  # nothing trained, nothing predicted


def _flips(path, raw):
    """Write every single-bit flip of ``raw`` to ``path`` in turn, yielding after each: the
    byte is written in place and restored (rewriting the whole file each time cost more
    than the reads under test)."""
    path.write_bytes(raw)
    fd = os.open(path, os.O_WRONLY)
    try:
        for i, byte in enumerate(raw):
            for bit in range(8):
                os.pwrite(fd, bytes([byte ^ 1 << bit]), i)
                yield
            os.pwrite(fd, bytes([byte]), i)
    finally:
        os.close(fd)


def test_every_bit_flip_of_a_model_is_a_clear_error_or_harmless(tmp_path):
    """193 of 64,336 flips of a model escaped as tokenize.TokenError, NotImplementedError
    (zip version), RuntimeError (encrypted), SyntaxError."""
    good = tmp_path / "good.npz"
    Model(np.array([0.5, -1.25]), 0.25, (-1.0, 1.0), {"lam": 0.1}, []).save(good)
    reference = Model.load(good)
    path = tmp_path / "model.npz"
    errors = harmless = 0
    for _ in _flips(path, good.read_bytes()):
        try:
            model = Model.load(path)
        except ModelFileError as exc:
            assert str(exc).startswith(f"{path}: not a streamssvm model ("), exc
            errors += 1
            continue
        assert (np.array_equal(model.coef_, reference.coef_)
                and model.intercept_ == reference.intercept_
                and np.array_equal(model.classes_, reference.classes_)
                and model.params == reference.params and model.history == reference.history)
        harmless += 1  # a flip in a field the archive does not use (a time, a copy)
    assert errors > harmless > 0


@pytest.mark.filterwarnings("ignore::streamssvm.ConvergenceWarning")
def test_every_bit_flip_of_a_checkpoint_is_a_clear_error_or_harmless(tmp_path, data):
    """250 of 250 flips of a checkpoint on --resume escaped as zipfile.BadZipFile."""
    ckpt = tmp_path / "run.ckpt"
    X, y = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([1, -1, 1])
    streamssvm.train_stream(X, y, lam=0.1, max_iter=1, checkpoint=ckpt, progress=False)
    reference = read_npz(ckpt, CheckpointError, "a checkpoint")
    errors = harmless = 0
    for _ in _flips(ckpt, ckpt.read_bytes()):
        try:
            meta, arrays = Checkpoint(ckpt, problem=reference[0]["problem"]).load()
        except CheckpointError as exc:
            assert str(exc).startswith(f"{ckpt}: "), exc
            errors += 1
            continue
        assert meta == reference[0] and arrays.keys() == reference[1].keys()
        assert all(np.array_equal(arrays[k], reference[1][k]) for k in arrays)
        harmless += 1  # a flip in a field the archive does not use (a time, a copy)
    assert errors > harmless > 0
    # the command line says so in one line
    _, store, model = data
    assert main(["train", str(store), "-o", str(model), "--overwrite", "--quiet", "--max-iter",
                 "2", "--checkpoint", str(ckpt), "--resume"]) == 1  # another training's
    ckpt.unlink()
    assert main(["train", str(store), "-o", str(model), "--overwrite", "--quiet", "--max-iter",
                 "2", "--checkpoint", str(ckpt)]) == 0
    raw = ckpt.read_bytes()
    ckpt.write_bytes(raw[:100] + bytes([raw[100] ^ 4]) + raw[101:])
    run = subprocess.run([*CLI, "train", str(store), "-o", str(model), "--overwrite",
                          "--max-iter", "4", "--checkpoint", str(ckpt), "--resume"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 1
    assert run.stderr.startswith(f"streamssvm: error: {ckpt}: not a readable checkpoint (")
    assert run.stderr.count("\n") == 1


def test_the_file_errors_are_value_errors_of_one_family():
    from streamssvm import StoreError, SvmlightFormatError

    for error in (ModelFileError, CheckpointError, StoreError, SvmlightFormatError):
        assert issubclass(error, FileFormatError) and issubclass(error, ValueError)
    assert streamssvm.FileFormatError is FileFormatError
