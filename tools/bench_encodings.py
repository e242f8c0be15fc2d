"""Bytes per nonzero on disk against the time of a pass: the store's encodings measured
(issue 7, item 2).

For one svmlight file, prints:
  (a) for each encoding the converter writes (float32 / float64 values; no compression,
      lzf, gzip levels 1 and 4): the store's size, bytes per nonzero, and the seconds of one
      pass (loss and gradient) warm (page cache) and cold (evicted first), median of --repeats;
  (b) encodings the format does not have, measured on the data instead of built: values as
      float16 (the largest relative error, and the change of TRON's objective and test
      accuracy when training on the rounded values), rows whose values are all equal
      (stored as one scale per row, the values cost nothing), and the column indices as
      variable-length deltas (LEB128 of the gaps: the bytes they would take).

Example:
    python tools/bench_encodings.py bench-data/news20.train.svm --test bench-data/news20.test.svm
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

from streamssvm import convert_svmlight, train_stream  # noqa: E402
from streamssvm.data import Store  # noqa: E402
from streamssvm.objective import SmoothSVMObjective  # noqa: E402

BIN = os.path.join(os.path.dirname(ROOT), "shared", "bin")
ENCODINGS = [("float32", None, None), ("float64", None, None), ("float32", "lzf", None),
             ("float32", "gzip", 1), ("float32", "gzip", 4)]


def pass_seconds(path, cold, repeats):
    """Median seconds of one loss-and-gradient pass over the store at ``path``."""
    times = []
    with Store(path) as store:
        objective = SmoothSVMObjective(store, "psi_g", 1e-5, cache_curved=False)
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
    print(f"{'values':<9}{'compression':<13}{'MB':>9}{'B/nnz':>8}{'warm s':>9}{'cold s':>9}"
          f"{'cold MB/s':>11}")
    for dtype, compression, level in ENCODINGS:
        path = os.path.join(tmp, f"{dtype}-{compression}-{level}.h5")
        convert_svmlight(args.train, path, value_dtype=dtype, compression=compression,
                         compression_level=level, progress=False)
        with Store(path) as store:
            nnz = store.nnz
        size = os.path.getsize(path)
        warm = pass_seconds(path, False, args.repeats)
        cold = pass_seconds(path, True, args.repeats)
        label = f"{compression or 'none'}{'-' + str(level) if level else ''}"
        print(f"{dtype:<9}{label:<13}{size / 1e6:>9.1f}{size / nnz:>8.2f}{warm:>9.3f}"
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
          f"nonzeros; with one scale per row their values would cost nothing (4 B/nnz)")
    starts = X.indptr[:-1][lengths > 0]
    delta = np.empty(X.nnz, np.int64)  # the gap to the previous index, the index at a row start
    delta[1:] = np.diff(X.indices.astype(np.int64))
    delta[starts] = X.indices[starts]
    print(f"column indices as LEB128 deltas: {varint_bytes(delta) / X.nnz:.2f} B/nnz "
          f"(int32: 4)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("train")
    p.add_argument("--test")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sections", default="ab")
    args = p.parse_args(argv)
    print("command: python " + " ".join([os.path.relpath(__file__, ROOT)] + (argv or sys.argv[1:])))
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.train))) as tmp:
        if "a" in args.sections:
            section_stored(args, tmp)
        if "b" in args.sections:
            section_unbuilt(args, tmp)


if __name__ == "__main__":
    main()
