"""svmlight text where a store is expected: converted once into a cached store, reused while
the text is unchanged, converted like the model's training data for predictions."""

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import REPO_ROOT, compress, random_svmlight, sklearn_reference
from streamssvm import Model, train_stream
from streamssvm.cli import main
from streamssvm.data import Store, StoreError, SvmlightFormatError, convert_svmlight
from streamssvm.data.textcache import CACHE_DIR_ENV, store_path
from streamssvm.estimator import SmoothSVC
from streamssvm.multiclass import train_one_vs_rest

DATASETS = REPO_ROOT / "streamssvm" / "datasets"


@pytest.fixture(autouse=True)
def no_cache_dir(monkeypatch, tmp_path):
    """No cache folder from the environment; the user's cache folder inside tmp_path."""
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))


def entry(text, key=None):
    """The store and record beside ``text`` (the plain entry, or the one of hash ``key``)."""
    stem = text.parent / ".".join([f".{text.name}", *([key] if key else []), "streamssvm"])
    return stem.with_name(stem.name + ".h5"), stem.with_name(stem.name + ".json")


def stamp(path):
    st = os.stat(path)
    return st.st_ino, st.st_mtime_ns


def same_model(a, b):
    return (np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
            and np.array_equal(a.classes_, b.classes_))


@pytest.fixture
def text(tmp_path, rng):
    path = tmp_path / "train.svm"
    path.write_bytes(random_svmlight(rng, 400, 60, density=0.1))
    return path


def test_training_on_text_is_training_on_its_store(tmp_path, text, capsys):
    """train_stream, train_one_vs_rest, SmoothSVC and the command line: the model of the
    text is the model of the store `convert` makes of it, to the bit."""
    store = tmp_path / "train.h5"
    convert_svmlight(text, store, progress=False)
    reference = train_stream(str(store), progress=False)
    assert same_model(train_stream(str(text), progress=False), reference)
    assert same_model(train_one_vs_rest(text, progress=False), reference)
    assert capsys.readouterr().err == ""  # progress=False: not announced
    estimator = SmoothSVC().fit(str(store))
    fitted = SmoothSVC().fit(str(text))
    assert np.array_equal(fitted.coef_, estimator.coef_)
    assert fitted.score(str(text)) == estimator.score(str(store))
    assert main(["train", str(text), "-o", str(tmp_path / "m.npz"), "--quiet"]) == 0
    assert same_model(Model.load(tmp_path / "m.npz"), reference)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".train.svm.streamssvm.h5", ".train.svm.streamssvm.json", "m.npz", "train.h5",
        "train.svm"]
    assert Model.load(tmp_path / "m.npz").params["data"]["zero_based"] is False


@pytest.mark.parametrize("kind", [None, "gz", "bz2", "xz"])
def test_compressed_text_gives_the_store_of_plain_text(tmp_path, text, kind):
    packed = tmp_path / ("packed.svm" + (f".{kind}" if kind else ""))
    packed.write_bytes(compress(text.read_bytes(), kind))
    convert_svmlight(text, tmp_path / "plain.h5", progress=False)
    with Store(store_path(packed, progress=False)) as got, Store(tmp_path / "plain.h5") as want:
        assert got.data_digest() == want.data_digest()
        assert got.metadata["source_sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()


def test_the_second_run_reuses_the_store(tmp_path, text, capsys, monkeypatch):
    model = tmp_path / "m.npz"
    assert main(["train", str(text), "-o", str(model)]) == 0
    err = capsys.readouterr().err
    store, record = entry(text)
    assert (f"streamssvm: converting {text} to {store} (kept for the next run)\n"
            in err)
    before = stamp(store), stamp(record)
    assert main(["train", str(text), "-o", str(model), "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert f"streamssvm: reusing {store}, converted from {text}\n" in err
    assert "convert" not in err.replace("converted from", "")
    assert (stamp(store), stamp(record)) == before
    # the name as typed: relative, beside it
    monkeypatch.chdir(tmp_path)
    assert main(["train", "train.svm", "-o", "m.npz", "--overwrite", "--quiet"]) == 0
    assert main(["predict", "m.npz", "train.svm"]) == 0
    out = capsys.readouterr()
    assert out.err == "streamssvm: reusing .train.svm.streamssvm.h5, converted from train.svm\n"
    assert out.out.startswith("accuracy ") and out.out.endswith(" on 400 rows of train.svm\n")


def test_an_edit_converts_again_and_a_touch_revalidates(tmp_path, text, capsys):
    store, record = entry(text)
    store_path(text)
    capsys.readouterr()
    first = stamp(store)

    # touched: the content is hashed once, the record renewed, the store kept
    os.utime(text, ns=(time.time_ns(), time.time_ns() + 10 ** 9))
    assert store_path(text) == str(store)
    assert capsys.readouterr().err == (f"streamssvm: reusing {store}, converted from {text} "
                                       f"(its content unchanged: sha256 checked)\n")
    assert stamp(store) == first
    assert json.loads(record.read_text())["mtime_ns"] == os.stat(text).st_mtime_ns
    store_path(text)
    assert capsys.readouterr().err == f"streamssvm: reusing {store}, converted from {text}\n"

    # the same size, another label on the first line: converted again
    data = text.read_bytes()
    edited = (b"1" if data.startswith(b"-1") else b"-1") + data[data.index(b" "):]
    edited = edited[:len(data)] + b"\n" * (len(data) - len(edited))
    assert len(edited) == len(data) and edited != data
    text.write_bytes(edited)
    store_path(text)
    assert (f"streamssvm: converting {text} again (the text changed) to {store}"
            in capsys.readouterr().err)
    with Store(store) as s:
        assert s.metadata["source_sha256"] == hashlib.sha256(edited).hexdigest()

    # a record lost (killed between the store's rename and the record's): hashed, renewed
    record.unlink()
    kept = stamp(store)
    store_path(text)
    assert "(its content unchanged: sha256 checked)" in capsys.readouterr().err
    assert stamp(store) == kept and record.exists()


def test_an_edit_in_the_last_mib_is_seen_with_the_mtime_kept(tmp_path, rng, capsys):
    """The fingerprint hashes both ends of a text over 2 MiB: an edit of the same size in
    the last MiB, the mtime set back, is converted again."""
    text = tmp_path / "long.svm"
    block = random_svmlight(rng, 400, 60, density=0.1, empty_rows=False)
    data = block * (3 * (1 << 20) // len(block) + 1)
    text.write_bytes(data)
    assert len(data) > 3 << 20
    store, _ = entry(text)
    store_path(text, progress=False)
    mtime = os.stat(text).st_mtime_ns
    last = data.rindex(b"\n-1 ", 0, len(data) - 10) + 1
    edited = data[:last] + b"+1" + data[last + 2:]
    text.write_bytes(edited)
    os.utime(text, ns=(mtime, mtime))
    store_path(text)
    assert "converting" in capsys.readouterr().err
    with Store(store) as s:
        assert s.metadata["source_sha256"] == hashlib.sha256(edited).hexdigest()


def test_predict_converts_text_to_the_models_width(tmp_path, capsys):
    """a9a's test file lacks the last feature: converted plainly it is one column short of
    the model; converted like the model's training data, it is scored as the store that
    `convert --like` makes."""
    for name in ("a9a.svm.xz", "a9a.t.svm.xz"):
        shutil.copy(DATASETS / name, tmp_path / name)
    train, test = tmp_path / "a9a.svm.xz", tmp_path / "a9a.t.svm.xz"
    assert main(["train", str(train), "-o", str(tmp_path / "m.npz"), "--quiet"]) == 0
    model = Model.load(tmp_path / "m.npz")
    convert_svmlight(train, tmp_path / "train.h5", progress=False)
    convert_svmlight(test, tmp_path / "test.h5", like=tmp_path / "train.h5", progress=False)
    convert_svmlight(test, tmp_path / "plain.h5", progress=False)
    with Store(tmp_path / "plain.h5") as plain:
        assert plain.n_features < model.n_features_in_
    assert model.score(str(test)) == model.score(str(tmp_path / "test.h5"))
    assert np.array_equal(model.decision_function(str(test)),
                          model.decision_function(str(tmp_path / "test.h5")))
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m.npz"), str(test)]) == 0
    out = capsys.readouterr()
    assert out.err.startswith(f"streamssvm: reusing {tmp_path}/.a9a.t.svm.xz.")
    assert out.out == (f"accuracy {model.score(str(test)):.4f} on 16,281 rows of {test}\n")
    # the test file's own entry, at the model's width; the plain one is another
    like = [p for p in tmp_path.iterdir() if p.name.startswith(".a9a.t.svm.xz.")
            and p.suffix == ".h5"]
    assert len(like) == 1
    with Store(like[0]) as s:
        assert s.n_features == model.n_features_in_
    store_path(test, progress=False)  # plainly: not the entry made like the model
    with Store(entry(test)[0]) as s:
        assert s.n_features == plain.n_features


def test_predict_reads_text_in_the_index_base_of_the_training_text(tmp_path, rng):
    """Zero-based training text (an index 0 in it), test text without index 0: detected,
    it would read one-based, every feature one column off; the model records the base."""
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    train.write_bytes(b"1 0:1\n" + random_svmlight(rng, 300, 40, one_based=False))
    rows = random_svmlight(rng, 200, 40, one_based=False).splitlines()
    test.write_bytes(b"\n".join(r for r in rows if b" 0:" not in r) + b"\n")
    model = train_stream(str(train), progress=False)
    assert model.params["data"]["zero_based"] is True
    for name, base in (("zero.h5", True), ("auto.h5", "auto")):
        convert_svmlight(test, tmp_path / name, zero_based=base, n_features=40, progress=False)
    decision = model.decision_function(str(test))
    assert np.array_equal(decision, model.decision_function(str(tmp_path / "zero.h5")))
    assert not np.array_equal(decision, model.decision_function(str(tmp_path / "auto.h5")))
    X, y = sklearn_reference(test, zero_based=True, n_features=40)
    assert np.allclose(decision, model.decision_function(X), rtol=1e-6, atol=1e-6)


def test_the_training_text_predicted_on_reuses_its_entry(tmp_path, text, capsys):
    model = train_stream(str(text))
    store, _ = entry(text)
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    model.score(str(text))
    assert capsys.readouterr().err == f"streamssvm: reusing {store}, converted from {text}\n"
    assert sorted(os.listdir(tmp_path)) == before


def test_more_than_two_classes_train_one_vs_rest(tmp_path, rng, capsys):
    text = tmp_path / "three.svm"
    text.write_bytes(random_svmlight(rng, 300, 30, labels=(1, 2, 3), density=0.2))
    assert main(["train", str(text), "-o", str(tmp_path / "m.npz"), "--quiet"]) == 0
    model = Model.load(tmp_path / "m.npz")
    convert_svmlight(text, tmp_path / "three.h5", multiclass=True, progress=False)
    assert same_model(model, train_one_vs_rest(str(tmp_path / "three.h5"), progress=False))
    assert model.score(str(text)) == model.score(str(tmp_path / "three.h5"))
    with pytest.raises(ValueError, match="train_one_vs_rest"):
        train_stream(str(text), progress=False)


@contextlib.contextmanager
def read_only(folder):
    """``folder`` unwritable: a read-only bind mount as root (which ignores modes)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    mount = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mount.returncode:
        pytest.skip(f"root, and no bind mount: {mount.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        assert not os.access(folder, os.W_OK)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_an_unwritable_folder_puts_the_store_in_the_cache_folder(tmp_path, rng, capsys):
    data = tmp_path / "data"
    data.mkdir()
    text = data / "train.svm"
    text.write_bytes(random_svmlight(rng, 200, 30))
    cache = tmp_path / "user-cache" / "streamssvm"
    with read_only(data):
        assert main(["train", str(text), "-o", str(tmp_path / "m.npz")]) == 0
        first = capsys.readouterr().err
        assert main(["train", str(text), "-o", str(tmp_path / "m.npz"), "--overwrite"]) == 0
        again = capsys.readouterr().err
    assert os.listdir(data) == ["train.svm"]
    stores = sorted(cache.glob("train.svm.*.streamssvm.h5"))
    assert len(stores) == 1 and stores[0].with_suffix(".json").exists()
    assert f"converting {text} to {stores[0]} (kept for the next run)" in first
    assert f"reusing {stores[0]}, converted from {text}" in again


def test_a_cache_folder_given_is_used(tmp_path, text, monkeypatch):
    chosen, env = tmp_path / "chosen", tmp_path / "env"
    assert main(["train", str(text), "-o", str(tmp_path / "m.npz"), "--quiet",
                 "--cache-dir", str(chosen)]) == 0
    assert len(list(chosen.glob("train.svm.*.streamssvm.h5"))) == 1
    monkeypatch.setenv(CACHE_DIR_ENV, str(env))
    model = Model.load(tmp_path / "m.npz")
    model.score(str(text))
    assert len(list(env.glob("train.svm.*.streamssvm.h5"))) == 1
    assert not entry(text)[0].exists()


def test_a_failed_conversion_leaves_no_store(tmp_path, rng, capsys):
    text = tmp_path / "bad.svm"
    good = random_svmlight(rng, 300, 30)
    text.write_bytes(good + b"1 3:x\n")
    assert main(["train", str(text), "-o", str(tmp_path / "m.npz")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"streamssvm: error: {text}: line 301, column 5: value 'x' is not a number"
    assert os.listdir(tmp_path) == ["bad.svm"]
    with pytest.raises(SvmlightFormatError, match=f"{text}: line 301"):
        Model(np.zeros(30), 0.0, [-1, 1]).score(str(text))
    assert os.listdir(tmp_path) == ["bad.svm"]
    text.write_bytes(good)
    assert store_path(text, progress=False) == str(entry(text)[0])


def test_a_killed_conversion_leaves_no_store(tmp_path, rng, python, python_env):
    """SIGKILL in the middle of the conversion: no store, no record (its temporary file
    stays); the next run converts, and removes the temporary file of the dead process."""
    text = tmp_path / "big.svm"
    text.write_bytes(random_svmlight(rng, 2000, 1000, density=0.02) * 40)
    child = subprocess.Popen(
        [python, "-c", "import sys; from streamssvm.data.textcache import store_path; "
                       "store_path(sys.argv[1], progress=False)", str(text)],
        env=python_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    prefix = f"..big.svm.streamssvm.h5.tmp-{child.pid}-"
    deadline = time.monotonic() + 120
    while (not any(n.startswith(prefix) for n in os.listdir(tmp_path))
           and child.poll() is None):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    left = sorted(os.listdir(tmp_path))
    assert len(left) == 2 and left[0].startswith(prefix) and left[1] == "big.svm"
    store = store_path(text, progress=False)
    with Store(store) as s:
        assert s.n_samples == 80_000
    assert sorted(os.listdir(tmp_path)) == [".big.svm.streamssvm.h5",
                                            ".big.svm.streamssvm.json", "big.svm"]


def test_two_processes_converting_at_once_both_succeed(tmp_path, rng, python, python_env):
    text = tmp_path / "train.svm"
    text.write_bytes(random_svmlight(rng, 2000, 300, density=0.05) * 5)
    runs = [subprocess.Popen([python, "-m", "streamssvm", "train", str(text), "-o",
                              str(tmp_path / f"m{i}.npz"), "--quiet", "--max-iter", "3"],
                             env=python_env, stderr=subprocess.PIPE, text=True)
            for i in range(2)]
    for run in runs:
        assert run.wait(timeout=300) == 0, run.stderr.read()
    assert same_model(Model.load(tmp_path / "m0.npz"), Model.load(tmp_path / "m1.npz"))
    store, record = entry(text)
    assert sorted(os.listdir(tmp_path)) == sorted([text.name, store.name, record.name,
                                                   "m0.npz", "m1.npz"])
    kept = stamp(store)
    store_path(text, progress=False)  # the store and record published last go together
    assert stamp(store) == kept


def test_a_file_neither_store_nor_text_is_named_with_what_to_run(tmp_path, capsys):
    """A random binary file was "not a readable HDF5 store (Unable to synchronously open
    file (file signature not found))"; an HDF5 file not a store did not say to convert."""
    binary = tmp_path / "random.bin"
    binary.write_bytes(np.random.default_rng(0).bytes(4096))
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = [1, 2]
    model = tmp_path / "m.npz"
    Model(np.zeros(3), 0.0, [-1, 1]).save(model)
    for path, what in ((binary, "neither a store (HDF5) nor svmlight text: it starts with "),
                       (model, "(a zip archive: a model file?)"),
                       (other, "not a streamssvm store")):
        for argv in (["train", str(path), "-o", str(tmp_path / "new.npz")],
                     ["predict", str(model), str(path)]):
            assert main(argv) == 1
            err = capsys.readouterr().err
            assert err.startswith(f"streamssvm: error: {path}: ") and err.count("\n") == 1
            assert what in err and "`streamssvm convert IN OUT`" in err
    assert main(["info", str(binary)]) == 1  # a store expected, not text: say how to make it
    err = capsys.readouterr().err
    assert err.startswith(f"streamssvm: error: {binary}: not a readable HDF5 store (not an "
                          f"HDF5 file: it starts with ")
    assert "`streamssvm convert IN OUT`" in err
    with pytest.raises(StoreError, match="neither a store"):
        train_stream(str(binary), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["m.npz", "other.h5", "random.bin"]


def test_text_from_a_pipe_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(StoreError, match=f"{fifo}: not a regular file .* `streamssvm convert"):
        store_path(fifo)
