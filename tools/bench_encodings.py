"""Bytes per nonzero on disk against the time of a pass: the store's encodings measured.

For one svmlight file, prints:
  (a) for each encoding the converter writes (float32 / float64 values; no compression,
      lzf, gzip levels 1 and 4, Blosc's lz4 and zstd): the store's size, bytes per nonzero,
      and the seconds of one pass (loss and gradient) warm (page cache) and cold (evicted
      first), median of --repeats;
  (b) encodings the format does not have, measured on the data instead of built: values as
      float16 (the largest relative error, and the change of TRON's objective and test
      accuracy when training on the rounded values), and the column indices as LEB128
      varints (the bytes they would take, against the lean encoding's 16-bit gaps);
  (c) with --ooc-store (a plain store, repeatable; --ooc-blocks: its first N blocks): out
      of core, the seconds of a pass over it and over its twins written beside it (lean,
      and plain and lean with each --compression), each evicted and run under a memory cap
      (--cap-mb), alternating, with the disk's read rate measured in the same run; with
      --disk-mbps again with the disk's reads limited to those rates, as on a slower disk;
      --binary also makes each store's binary twin (every row's values replaced by
      1 / sqrt(its length), as news20's), whose lean twin keeps one value per row.

Example:
    python tools/bench_encodings.py bench-data/news20.train.svm --test bench-data/news20.test.svm
    python tools/bench_encodings.py bench-data/news20.train.svm --sections c \
        --ooc-store bench-data/synth-4G.h5 --binary --cap-mb 500
    python tools/bench_encodings.py bench-data/news20.train.svm --sections c \
        --ooc-store bench-data/ooc-4g.h5 --ooc-blocks 240 --cap-mb 300 \
        --compression blosc-lz4,blosc-zstd --disk-mbps 0,500,250
"""

import argparse
import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import bench_output  # noqa: E402
from bench_tron import _READ, run_capped  # noqa: E402
from tool_args import BIN, existing_file, existing_store  # noqa: E402
from streamssvm import convert_svmlight, train_stream  # noqa: E402
from streamssvm.data import RowSubset, Store, StoreWriter, write_store  # noqa: E402
from streamssvm.objective import SmoothSVMObjective  # noqa: E402

ENCODINGS = [("float32", None, None, "plain"), ("float32", None, None, "lean"),
             ("float64", None, None, "plain"), ("float32", "lzf", None, "plain"),
             ("float32", "gzip", 1, "plain"), ("float32", "gzip", 4, "plain"),
             ("float32", "lzf", None, "lean"), ("float32", "blosc-lz4", None, "plain"),
             ("float32", "blosc-lz4", None, "lean"), ("float32", "blosc-zstd", None, "lean")]


def pass_seconds(path, cold, repeats):
    """Median seconds of one loss-and-gradient pass over the store at ``path``."""
    times = []
    with Store(path) as store:
        objective = SmoothSVMObjective(store, "psi_g", 1e-5, cache_curved=False, hold=False)
        w = np.zeros(objective.n_variables)
        objective.evaluate(w)  # compile, open
        for _ in range(repeats):
            if cold:
                subprocess.run([os.path.join(BIN, "evict"), path], check=True)
            start = time.perf_counter()
            objective.evaluate(w)
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def varint_bytes(gaps):
    """Bytes of the LEB128 encodings of non-negative integers."""
    return int(np.sum(1 + (gaps >= 1 << 7) + (gaps >= 1 << 14) + (gaps >= 1 << 21)
                      + (gaps >= 1 << 28)))


def section_stored(args, tmp):
    print(f"(a) encodings of the store, one pass of loss + gradient (median of {args.repeats})")
    print(f"{'values':<9}{'encoding':<10}{'compression':<13}{'MB':>9}{'B/nnz':>8}{'warm s':>9}"
          f"{'cold s':>9}{'cold MB/s':>11}")
    rows = []
    for dtype, compression, level, encoding in ENCODINGS:
        if (compression or "").startswith("blosc") and not importlib.util.find_spec("hdf5plugin"):
            print(f"{dtype:<9}{encoding:<10}{compression:<13}skipped: needs hdf5plugin")
            rows.append(dict(values=dtype, encoding=encoding, compression=compression,
                             skipped="needs hdf5plugin"))
            continue
        path = os.path.join(tmp, f"{dtype}-{compression}-{level}-{encoding}.h5")
        convert_svmlight(args.train, path, value_dtype=dtype, compression=compression,
                         compression_level=level, encoding=encoding, progress=False)
        with Store(path) as store:
            nnz = store.nnz
        size = os.path.getsize(path)
        warm = pass_seconds(path, False, args.repeats)
        cold = pass_seconds(path, True, args.repeats)
        label = f"{compression or 'none'}{'-' + str(level) if level else ''}"
        print(f"{dtype:<9}{encoding:<10}{label:<13}{size / 1e6:>9.1f}{size / nnz:>8.2f}{warm:>9.3f}"
              f"{cold:>9.3f}{size / 1e6 / cold:>11.0f}")
        rows.append(dict(values=dtype, encoding=encoding, compression=label, mb=size / 1e6,
                         bytes_per_nonzero=size / nnz, warm_seconds=warm, cold_seconds=cold,
                         cold_mb_per_s=size / 1e6 / cold))
        os.unlink(path)
    return rows


def section_unbuilt(args, tmp):
    store = os.path.join(tmp, "train.h5")
    convert_svmlight(args.train, store, progress=False)
    with Store(store) as s:
        X, y = s.read_rows(0, s.n_samples)
    print("\n(b) encodings the format does not have, measured on the data")
    data = X.data.astype(np.float32)
    half = data.astype(np.float16).astype(np.float32)
    finite = np.isfinite(half)
    rel = np.abs(half[finite] - data[finite]) / np.maximum(np.abs(data[finite]), 1e-30)
    figures = dict(float16_overflows=int(np.count_nonzero(~finite)),
                   float16_largest_relative_error=float(rel.max()))
    print(f"float16 values: {np.count_nonzero(~finite)} overflow to inf; largest relative "
          f"error {rel.max():.2e} (2 B/nnz instead of 4)")
    rounded = X.copy()
    rounded.data = half.astype(np.float64)
    test = None
    if args.test:
        test_store = os.path.join(tmp, "test.h5")
        convert_svmlight(args.test, test_store, like=store, progress=False)
        with Store(test_store) as s:
            test = s.read_rows(0, s.n_samples)
    for name, matrix in (("float32", X), ("float16-rounded", rounded)):
        m = train_stream(matrix, y, loss="psi_g", sigma=2**-3, lam=1e-5, solver="tron",
                         progress=False)
        acc = f", test accuracy {m.score(*test):.4f}" if test else ""
        print(f"  TRON psi_G on {name:<16} objective {m.params['objective']:.10g}{acc}")
        figures[f"objective on {name}"] = m.params["objective"]
        if test:
            figures[f"test accuracy on {name}"] = m.score(*test)
    lengths = np.diff(X.indptr)
    nonempty = X.indptr[:-1][lengths > 0]
    same = np.ones(len(lengths), bool)
    same[lengths > 0] = (np.maximum.reduceat(X.data, nonempty)
                         == np.minimum.reduceat(X.data, nonempty))
    share = np.sum(lengths[same]) / X.nnz
    print(f"rows whose values are all equal: {np.mean(same):.1%}, holding {share:.1%} of the "
          f"nonzeros (a lean block whose rows all are keeps one value per row)")
    starts = X.indptr[:-1][lengths > 0]
    gaps = np.empty(X.nnz, np.int64)  # the gap to the previous index, the index at a row start
    gaps[1:] = np.diff(X.indices.astype(np.int64)) - 1
    gaps[starts] = X.indices[starts]
    print(f"column indices as LEB128 varints of the gaps: {varint_bytes(gaps) / X.nnz:.2f} "
          f"B/nnz; as the lean encoding's 16-bit gaps "
          f"{2 + 6 * np.count_nonzero(gaps >= 1 << 16) / X.nnz:.2f} (int32: 4)")
    figures.update(rows_of_equal_values=float(np.mean(same)), their_nonzeros=float(share),
                   varint_bytes_per_nonzero=varint_bytes(gaps) / X.nnz,
                   lean_gap_bytes_per_nonzero=2 + 6 * np.count_nonzero(gaps >= 1 << 16) / X.nnz)
    return figures


_PASSES = r"""
import subprocess, sys, time, numpy as np
from streamssvm.data import Store
from streamssvm.objective import SmoothSVMObjective
with Store(sys.argv[1]) as store:
    obj = SmoothSVMObjective(store, "psi_g", 1e-5, sigma=0.125, cache_curved=False, hold=False)
    w = np.zeros(obj.n_variables)
    times = []
    for _ in range(int(sys.argv[2])):  # each pass cold, also where the store fits the cap
        subprocess.run([sys.argv[3], sys.argv[1]], check=True)
        start = time.perf_counter(); obj.value(w); times.append(time.perf_counter() - start)
print(min(times))
"""


def binary_twin(path, out):
    """The store at ``path`` with every row's values 1 / sqrt(its length)."""
    with Store(path) as store, StoreWriter(out, encoding="plain", overwrite=True) as writer:
        for b in store.iter_blocks(transient=True):
            lengths = np.diff(b.indptr)
            values = (1 / np.sqrt(np.maximum(lengths, 1))).astype(store.value_dtype)
            writer.add_block(b.indptr - b.indptr[0], b.indices, np.repeat(values, lengths), b.y)
        writer.close(store.n_features, store.classes)
    return out


def disk_of(path):
    """``major:minor`` of the disk holding ``path`` (of the whole disk, for a partition)."""
    dev = os.stat(path).st_dev
    block = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if os.path.exists(os.path.join(block, "partition")):
        block = os.path.dirname(block)
    with open(os.path.join(block, "dev")) as fh:
        return fh.read().strip()


@contextlib.contextmanager
def throttled(path, mb_per_s):
    """Reads of this process and its children from the disk of ``path`` limited to
    ``mb_per_s`` MB/s (a slower disk: a cloud volume, a network filesystem), by a cgroup v1
    blkio throttle; 0: no limit. Yields False (and limits nothing) where no such cgroup
    can be made."""
    if not mb_per_s:
        yield True
        return
    root = "/sys/fs/cgroup/blkio"
    group = os.path.join(root, f"bench-encodings-{os.getpid()}")
    try:
        os.mkdir(group)
    except OSError:
        yield False
        return
    try:
        with open(os.path.join(group, "blkio.throttle.read_bps_device"), "w") as fh:
            fh.write(f"{disk_of(path)} {int(mb_per_s * 1e6)}")
        with open(os.path.join(group, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
        yield True
    finally:
        with open(os.path.join(root, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
        os.rmdir(group)


def section_out_of_core(args):
    print(f"\n(c) out of core: a loss pass, evicted, under a {args.cap_mb} MB cap; best of "
          f"{args.repeats} passes (each evicted) in each of {args.rounds} alternating rounds")
    variants = [("lean", None)] + [(encoding, compression) for compression in args.compression
                                   for encoding in ("plain", "lean")]
    made, runs = [], []
    try:
        for store in args.ooc_store:
            if args.ooc_blocks:
                made.append(first_blocks(store, args.ooc_blocks))
                store = made[-1]
            twins = [store]
            if args.binary:
                twins.append(binary_twin(store, store[:-3] + "-binary.h5"))
                made.append(twins[-1])
            for plain in twins:
                stores = [plain]
                for encoding, compression in variants:
                    stores.append(f"{plain[:-3]}-{encoding}-{compression or 'none'}.h5")
                    with Store(plain) as source:
                        write_store(stores[-1], source, encoding=encoding,
                                    compression=compression, overwrite=True)
                        nnz = source.nnz
                    made.append(stores[-1])
                for rate in args.disk_mbps:
                    with throttled(plain, rate) as done:
                        if not done:
                            print(f"  reads cannot be limited to {rate} MB/s here (no "
                                  f"writable blkio cgroup): skipped")
                            continue
                        runs.append(compare_passes(args, stores, nnz, rate))
    finally:
        for path in made:
            os.unlink(path)
    return runs


def first_blocks(store, n_blocks):
    """A plain copy of the first ``n_blocks`` blocks of ``store``, beside it."""
    out = f"{store[:-3]}-first{n_blocks}.h5"
    with Store(store) as source:
        rows = np.arange(source.row_offsets[min(n_blocks, source.n_blocks)])
        write_store(out, RowSubset(source, rows), encoding="plain", overwrite=True)
    return out


def compare_passes(args, stores, nnz, rate):
    """Print the best pass over each store in ``args.rounds`` alternating capped rounds, and
    the disk's rate in the same run (``rate``: the limit put on it, 0 none)."""
    best = {path: [] for path in stores}
    for _ in range(args.rounds):
        for path in stores:
            subprocess.run([os.path.join(BIN, "evict"), path], check=True)
            best[path].append(float(run_capped(args.cap_mb, _PASSES, path, args.repeats,
                                               os.path.join(BIN, "evict"))[0]))
    subprocess.run([os.path.join(BIN, "evict"), stores[0]], check=True)
    disk = float(run_capped(args.cap_mb, _READ, stores[0])[0])
    print(f"disk read rate {disk / 1e9:.2f} GB/s (the first store, evicted, same cap"
          f"{f'; reads limited to {rate} MB/s' if rate else ''})")
    print(f"  {'store':<44}{'GB':>6}{'B/nnz':>7}{'pass s':>8}{'GB/s':>7}{'x disk':>8}"
          f"{'x first':>9}")
    rows = []
    for path in stores:
        size, seconds = os.path.getsize(path), min(best[path])
        print(f"  {os.path.basename(path):<44}{size / 1e9:>6.2f}{size / nnz:>7.2f}"
              f"{seconds:>8.2f}{size / seconds / 1e9:>7.2f}{size / seconds / disk:>8.2f}"
              f"{seconds / min(best[stores[0]]):>9.2f}")
        rows.append(dict(store=os.path.basename(path), gb=size / 1e9,
                         bytes_per_nonzero=size / nnz, pass_seconds=seconds,
                         gb_per_s=size / seconds / 1e9, over_disk=size / seconds / disk,
                         over_first=seconds / min(best[stores[0]])))
    return dict(disk_limit_mb_per_s=rate or None, disk_gb_per_s=disk / 1e9, stores=rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("train", type=existing_file)
    p.add_argument("--test", type=existing_file)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sections", default="ab")
    p.add_argument("--ooc-store", action="append", default=[], type=existing_store,
                   help="a plain store for (c) (repeatable)")
    p.add_argument("--binary", action="store_true", help="(c) also on binary twins")
    p.add_argument("--ooc-blocks", type=int, help="(c) only the store's first N blocks")
    p.add_argument("--compression", type=lambda t: t.split(","), default=[],
                   help="(c) also twins with these compressions (comma-separated), plain "
                        "and lean")
    p.add_argument("--disk-mbps", type=lambda t: [int(r) for r in t.split(",")], default=[0],
                   help="(c) repeat with the disk's reads limited to these MB/s (0: as it "
                        "is; cgroup v1 blkio, as root)")
    p.add_argument("--cap-mb", type=int, default=500)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json", help="where to write the figures (default benchmarks/encodings.json)")
    args = p.parse_args(argv)
    figures = {}
    print("command: python " + " ".join([os.path.relpath(__file__, ROOT)] + (argv or sys.argv[1:])))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.train))) as tmp:
        if "a" in args.sections:
            figures["(a) encodings of the store"] = section_stored(args, tmp)
        if "b" in args.sections:
            figures["(b) encodings the format does not have"] = section_unbuilt(args, tmp)
    if "c" in args.sections:
        figures["(c) out of core"] = section_out_of_core(args)
    print("wrote", bench_output.write("encodings", figures, args.json))


if __name__ == "__main__":
    main()
