"""Bytes per nonzero on disk against the time of a pass: the store's encodings measured
(issue 7, item 2).

For one svmlight file, prints:
  (a) for each encoding the converter writes (float32 / float64 values; no compression,
      lzf, gzip levels 1 and 4): the store's size, bytes per nonzero, and the seconds of one
      pass (loss and gradient) warm (page cache) and cold (evicted first), median of --repeats;
  (b) encodings the format does not have, measured on the data instead of built: values as
      float16 (the largest relative error, and the change of TRON's objective and test
      accuracy when training on the rounded values), and the column indices as LEB128
      varints (the bytes they would take, against the lean encoding's 16-bit gaps);
  (c) with --ooc-store (a plain store, repeatable): out of core, the seconds of a pass
      over it and over its lean twin (written beside it), each evicted and run under a
      memory cap (--cap-mb), alternating, with the disk's read rate measured in the same
      run; --binary also makes each store's binary twin (every row's values replaced by
      1 / sqrt(its length), as news20's), whose lean twin keeps one value per row.

Example:
    python tools/bench_encodings.py bench-data/news20.train.svm --test bench-data/news20.test.svm
    python tools/bench_encodings.py bench-data/news20.train.svm --sections c \
        --ooc-store bench-data/synth-4G.h5 --binary --cap-mb 500
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench_tron import _READ, run_capped  # noqa: E402
from tool_args import existing_file, existing_store  # noqa: E402
from streamssvm import convert_svmlight, train_stream  # noqa: E402
from streamssvm.data import Store, StoreWriter, write_store  # noqa: E402
from streamssvm.objective import SmoothSVMObjective  # noqa: E402

BIN = os.path.join(os.path.dirname(ROOT), "shared", "bin")
ENCODINGS = [("float32", None, None, "plain"), ("float64", None, None, "plain"),
             ("float32", "lzf", None, "plain"), ("float32", "gzip", 1, "plain"),
             ("float32", "gzip", 4, "plain"), ("float32", None, None, "lean"),
             ("float32", "lzf", None, "lean")]


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
    for dtype, compression, level, encoding in ENCODINGS:
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
        os.unlink(path)


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
        m = train_stream(matrix, y, loss="psi_g", sigma=2**-3, lam=1e-5, progress=False)
        acc = f", test accuracy {m.score(*test):.4f}" if test else ""
        print(f"  TRON psi_G on {name:<16} objective {m.params['objective']:.10g}{acc}")
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


_PASSES = r"""
import sys, time, numpy as np
from streamssvm.data import Store
from streamssvm.objective import SmoothSVMObjective
with Store(sys.argv[1]) as store:
    obj = SmoothSVMObjective(store, "psi_g", 1e-5, sigma=0.125, cache_curved=False, hold=False)
    w = np.zeros(obj.n_variables)
    times = []
    for _ in range(int(sys.argv[2])):
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


def section_out_of_core(args):
    print(f"\n(c) out of core: a loss pass, evicted, under a {args.cap_mb} MB cap; best of "
          f"{args.repeats} passes in each of {args.rounds} alternating rounds")
    print(f"{'store':<34}{'GB':>7}{'B/nnz':>7}{'pass s':>9}{'GB/s':>7}{'x disk':>8}"
          f"{'x plain':>9}")
    made = []
    try:
        for plain in args.ooc_store:
            twins = [plain]
            if args.binary:
                twins.append(binary_twin(plain, plain[:-3] + "-binary.h5"))
                made.append(twins[-1])
            for path in twins:
                lean = path[:-3] + "-lean.h5"
                with Store(path) as store:
                    write_store(lean, store, encoding="lean", overwrite=True)
                    nnz = store.nnz
                made.append(lean)
                compare_passes(args, path, lean, nnz)
    finally:
        for path in made:
            os.unlink(path)


def compare_passes(args, plain, lean, nnz):
    """Print the best pass of each store over ``args.rounds`` alternating capped rounds."""
    best = {plain: [], lean: []}
    for _ in range(args.rounds):
        for path in (plain, lean):
            subprocess.run([os.path.join(BIN, "evict"), path], check=True)
            best[path].append(float(run_capped(args.cap_mb, _PASSES, path, args.repeats)[0]))
    subprocess.run([os.path.join(BIN, "evict"), plain], check=True)
    disk = float(run_capped(args.cap_mb, _READ, plain)[0])
    for path in (plain, lean):
        size, seconds = os.path.getsize(path), min(best[path])
        print(f"{os.path.basename(path):<34}{size / 1e9:>7.2f}{size / nnz:>7.2f}{seconds:>9.2f}"
              f"{size / seconds / 1e9:>7.2f}{size / seconds / disk:>8.2f}"
              f"{seconds / min(best[plain]):>9.2f}")
    print(f"  disk read rate {disk / 1e9:.2f} GB/s (the plain store, evicted, same cap)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("train", type=existing_file)
    p.add_argument("--test", type=existing_file)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sections", default="ab")
    p.add_argument("--ooc-store", action="append", default=[], type=existing_store,
                   help="a plain store for (c) (repeatable)")
    p.add_argument("--binary", action="store_true", help="(c) also on binary twins")
    p.add_argument("--cap-mb", type=int, default=500)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    print("command: python " + " ".join([os.path.relpath(__file__, ROOT)] + (argv or sys.argv[1:])))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.train))) as tmp:
        if "a" in args.sections:
            section_stored(args, tmp)
        if "b" in args.sections:
            section_unbuilt(args, tmp)
    if "c" in args.sections:
        section_out_of_core(args)


if __name__ == "__main__":
    main()
