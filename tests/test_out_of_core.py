"""Training on a store several times larger than a memory cap (page cache included).

The store is evicted from the page cache and trained in a child process under
``tools/bin/run-capped``; its weights must equal those of in-memory training.
"""

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamssvm.data import InMemorySource, Store, StoreWriter
from streamssvm.objective import SmoothSVMObjective
from streamssvm.solvers import ConvergenceWarning, tron

BIN = Path(__file__).resolve().parents[1] / "tools" / "bin"  # run-capped and evict
CAP_MB = 300
ROWS, NNZ_PER_ROW, FEATURES, BLOCK_ROWS = 1_250_000, 100, 20_000, 5_000
MAX_ITER = 2

CHILD = """
import sys, numpy as np
from streamssvm.data import Store
from streamssvm.objective import SmoothSVMObjective
from streamssvm.solvers import tron
with Store(sys.argv[1]) as store:
    objective = SmoothSVMObjective(store, "psi_g", 1e-4, sigma=2.0 ** -3, hold=False)
    result = tron(objective, tol=1e-12, max_iter=int(sys.argv[3]))
np.save(sys.argv[2], result.w)
"""


def make_store(path, seed=0, n_rows=ROWS, nnz_per_row=NNZ_PER_ROW, block_rows=BLOCK_ROWS):
    """Random sparse rows with labels from a hidden weight, written block by block."""
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(FEATURES)
    with StoreWriter(path) as writer:
        for start in range(0, n_rows, block_rows):
            rows = min(block_rows, n_rows - start)
            idx = np.sort(rng.integers(0, FEATURES, (rows, nnz_per_row), dtype=np.int32), axis=1)
            keep = np.ones_like(idx, dtype=bool)
            keep[:, 1:] = idx[:, 1:] != idx[:, :-1]  # CSR rows hold distinct columns
            val = rng.random((rows, nnz_per_row), dtype=np.float32)
            y = np.where((val * w_true[idx]).sum(1) + 0.5 * rng.standard_normal(rows) > 0, 1, -1)
            indptr = np.concatenate([[0], np.cumsum(keep.sum(1))]).astype(np.int32)
            writer.add_block(indptr, idx[keep], val[keep], y.astype(np.int8))
        writer.close(FEATURES, (-1.0, 1.0))


def capped_tron(tmp_path, store):
    """TRON's w after MAX_ITER iterations on ``store``, evicted, in a child under the cap
    (its kernels compiled first, uncapped: numba takes about 300 MB to compile on a cold
    cache, on a small store streamed as the big one is, hold=False; the capped run then
    loads them, as a second run does). Skips where run-capped has no cgroup."""
    make_store(tmp_path / "small.h5", n_rows=2 * BLOCK_ROWS)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "small.h5"),
                    str(tmp_path / "small.npy"), "1"], check=True, env=env)
    subprocess.run([str(BIN / "evict"), str(store)], check=True)
    out = tmp_path / "w.npy"
    proc = subprocess.run([str(BIN / "run-capped"), str(CAP_MB), sys.executable, "-c", CHILD,
                           str(store), str(out), str(MAX_ITER)],
                          capture_output=True, text=True, env=env)
    if proc.returncode == 3:
        pytest.skip("no writable memory cgroup for run-capped here")
    assert proc.returncode == 0, proc.stderr[-2000:]
    stats = dict(tok.split("=") for tok in proc.stderr.split()
                 if tok.startswith(("peak_mb=", "oom_kills=")))
    assert int(stats["oom_kills"]) == 0 and int(stats["peak_mb"]) <= CAP_MB
    return np.load(out)


def assert_trains_like_memory(store, got, block_rows=BLOCK_ROWS):
    """``got`` is TRON's w after MAX_ITER iterations on the store's rows in memory."""
    with Store(store) as s:
        X, y = s.read_rows(0, s.n_samples)
    source = InMemorySource(X, y, block_rows=block_rows)
    with pytest.warns(ConvergenceWarning):  # MAX_ITER iterations, as in the child
        expected = tron(SmoothSVMObjective(source, "psi_g", 1e-4, sigma=2.0 ** -3), tol=1e-12,
                        max_iter=MAX_ITER).w
    assert np.linalg.norm(got - expected) <= 1e-10 * np.linalg.norm(expected)


@pytest.mark.skipif(not (BIN / "run-capped").exists(), reason="tools/bin/run-capped not found")
def test_store_larger_than_the_memory_cap_trains_like_memory(tmp_path):
    store = tmp_path / "big.h5"
    make_store(store)
    size_mb = store.stat().st_size / 2 ** 20
    assert size_mb > 3 * CAP_MB
    assert_trains_like_memory(store, capped_tron(tmp_path, store))


@pytest.mark.skipif(not (BIN / "run-capped").exists(), reason="tools/bin/run-capped not found")
def test_rows_whose_vectors_outgrow_the_cap_train_like_memory(tmp_path):
    """Many rows of two nonzeros: TRON's vectors of the rows (margins and curvature of the
    point and the trial, 80 MB each) do not fit in the cap; they go to
    files (``per_sample_array``), and the run ends as in memory, where it was killed."""
    store = tmp_path / "tall.h5"
    rows = 10_000_000
    make_store(store, n_rows=rows, nnz_per_row=2, block_rows=200_000)
    assert 4 * 8 * rows > CAP_MB * 2 ** 20
    assert_trains_like_memory(store, capped_tron(tmp_path, store), block_rows=200_000)


READER = """
import sys
from streamssvm._memory import available_memory_bytes
with open(sys.argv[1], "rb", buffering=0) as fh:
    buf = bytearray(16 << 20)
    while fh.readinto(buf):
        pass
print(available_memory_bytes())
"""


@pytest.mark.skipif(not (BIN / "run-capped").exists(), reason="tools/bin/run-capped not found")
def test_page_cache_of_a_streamed_file_leaves_headroom(tmp_path):
    """Under a cap that counts the page cache, a process that has read a file twice the
    cap still has memory to plan with: the cache it filled can be dropped."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as fh:
        for _ in range(2 * CAP_MB // 16):
            fh.write(bytes(16 << 20))
    subprocess.run([str(BIN / "evict"), str(big)], check=True)
    proc = subprocess.run([str(BIN / "run-capped"), str(CAP_MB), sys.executable, "-c", READER,
                           str(big)], capture_output=True, text=True)
    if proc.returncode == 3:
        pytest.skip("no writable memory cgroup for run-capped here")
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak = int(next(t for t in proc.stderr.split() if t.startswith("peak_mb=")).split("=")[1])
    assert peak >= 0.9 * CAP_MB  # the cache did fill the cap ...
    assert int(proc.stdout) >= CAP_MB / 4 * 2 ** 20  # ... and counts as room


FRESH = """
import os
import numpy as np
from streamssvm import _memory
from streamssvm._memory import available_memory_bytes
before = available_memory_bytes()
x = np.ones(300 << 17)  # 300 MiB, written
after = available_memory_bytes()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    room = available_memory_bytes() >> 20
    os.write(w, f"{room} {int(_memory._open_pid == os.getpid())}".encode())
    os._exit(0)
os.waitpid(pid, 0)
print(before >> 20, after >> 20, os.read(r, 64).decode())
"""


@pytest.mark.skipif(not (BIN / "run-capped").exists() or not hasattr(os, "fork"),
                    reason="tools/bin/run-capped not found, or no fork")
def test_the_room_under_a_cap_is_read_afresh_each_time_and_in_a_forked_child():
    """The cgroup's files are read again at each call (from descriptors kept open): 300
    MiB written take 300 MiB of the room; a forked child opens descriptors of its own (its
    parent's of /proc/self name the parent) and sees the room its parent saw."""
    proc = subprocess.run([str(BIN / "run-capped"), "1000", sys.executable, "-c", FRESH],
                          capture_output=True, text=True)
    if proc.returncode == 3:
        pytest.skip("no writable memory cgroup for run-capped here")
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, after, child, reopened = map(int, proc.stdout.split())
    assert before < 1000 and 280 <= before - after <= 340
    assert abs(child - after) <= 30 and reopened


FREED = """
import numpy as np
from streamssvm._memory import available_memory_bytes

def resident_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) >> 10 for line in fh if line.startswith("RssAnon"))

chunks = [np.ones(8192) for _ in range(2400)]  # 150 MB in 64 KB pieces: the heap's
top = np.ones(8192)  # above them, so that free() cannot give the heap's end back itself
del chunks
before = resident_mb()
free = available_memory_bytes()
print(before, resident_mb(), free >> 20)
"""


def run_freed(*capped):
    proc = subprocess.run([*capped, sys.executable, "-c", FREED], capture_output=True, text=True)
    if proc.returncode == 3 and capped:
        pytest.skip("no writable memory cgroup for run-capped here")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return map(int, proc.stdout.split())


GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not (GLIBC and (BIN / "run-capped").exists()),
                    reason="glibc's allocator, /proc/self/status, tools/bin/run-capped")
def test_memory_freed_by_earlier_work_counts_as_available_under_a_cap():
    """What a process freed but its allocator kept (earlier trainings' blocks) is handed
    back before the free memory is measured when it is a noticeable part of it, so the
    next training's budgets can use it."""
    before, after, _ = run_freed(str(BIN / "run-capped"), str(CAP_MB))
    assert before >= 150
    assert after <= before - 100


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator, /proc/self/status")
def test_memory_freed_is_kept_when_there_is_room():
    """With memory to spare, what the allocator holds free stays with it (handing it back
    made the next small training fault it in again)."""
    before, after, free_mb = run_freed()
    if free_mb < 16 * 200:
        pytest.skip(f"{free_mb} MB free: 150 MB held free is a noticeable part of it")
    assert after >= before - 20


def test_vectors_of_the_rows_in_a_folder_held_in_memory_are_warned_of_once(monkeypatch,
                                                                           tmp_path):
    """Their files are to spare memory: in a tmpfs (/tmp on some systems) they take it, and
    the user is told to set TMPDIR; once a process, and not for a folder on disk."""
    import tempfile
    import warnings

    from streamssvm import _memory

    if not _memory.in_memory_filesystem("/dev/shm"):
        pytest.skip("no tmpfs at /dev/shm")
    assert _memory.in_memory_filesystem("/dev/shm/a/folder/not/made")
    assert not _memory.in_memory_filesystem("/proc")
    monkeypatch.setattr(_memory, "_memory_folder_warned", False)
    monkeypatch.setattr(tempfile, "tempdir", "/dev/shm")  # as TMPDIR=/dev/shm
    with pytest.warns(RuntimeWarning, match=r"vectors of the rows \(0 MiB each\) go to files "
                      r"in /dev/shm, which is held in memory \(tmpfs\): .* set TMPDIR"):
        assert isinstance(_memory.per_sample_array(10, memory_limit=0), np.memmap)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _memory.per_sample_array(10, memory_limit=0)  # told once
        on_disk = next((p for p in (tmp_path, Path(__file__).parent)
                        if not _memory.in_memory_filesystem(p)), None)
        if on_disk is not None:
            monkeypatch.setattr(_memory, "_memory_folder_warned", False)
            monkeypatch.setattr(tempfile, "tempdir", str(on_disk))
            assert isinstance(_memory.per_sample_array(10, memory_limit=0), np.memmap)
