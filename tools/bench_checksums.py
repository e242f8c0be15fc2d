"""What checksums cost when a store is read: seconds per pass, with and without them.

Converts one svmlight file to a store (with our per-dataset checksum, the default), copies
it without checksums and with HDF5's Fletcher-32 filter instead, then times passes over
each, warm page cache, alternating the stores:

``read``
    ``iter_blocks(transient=True)``, as training reads a store (reused buffers, structural
    checks, checksums verified);
``evaluate``
    one loss/gradient pass of the training objective (psi_G, sigma 1/8), what a solver pays.

It prints the best and the median wall time of ``--passes`` passes of each, and the median
CPU time of the process (all threads), which other processes on the cores disturb less.

    python tools/bench_checksums.py bench-data/synth-200M.svm --passes 7

Wall times taken while other processes share the cores are noisy: compare CPU times.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bench_output  # noqa: E402
from tool_args import existing_file  # noqa: E402
from streamssvm.data.convert import convert_svmlight  # noqa: E402  (this checkout's package)
from streamssvm.data.store import Store, write_store  # noqa: E402
from streamssvm.objective import SmoothSVMObjective  # noqa: E402

VARIANTS = {"none": dict(checksums=False), "fletcher64 (ours)": {},
            "HDF5 fletcher32": dict(checksums=False, fletcher32=True)}


def read_pass(store):
    for _ in store.iter_blocks(transient=True):
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("svmlight", type=existing_file, help="text file to convert")
    parser.add_argument("--passes", type=int, default=7, help="timed passes (>= 1)")
    parser.add_argument("--workdir", help="keep the stores here, created if missing "
                        "(default: a temporary folder)")
    parser.add_argument("--json",
                        help="where to write the figures (default benchmarks/checksums.json)")
    args = parser.parse_args(argv)
    if args.passes < 1:
        parser.error(f"argument --passes: must be >= 1, got {args.passes}")
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench-checksums-")
    converted = os.path.join(workdir, "converted.h5")
    if not os.path.exists(converted):
        convert_svmlight(args.svmlight, converted, progress=False)
    paths = {}
    with Store(converted) as source:
        nnz, n_blocks = source.nnz, source.n_blocks
        for i, (name, options) in enumerate(VARIANTS.items()):
            paths[name] = os.path.join(workdir, f"variant{i}.h5")
            if not os.path.exists(paths[name]):
                write_store(paths[name], source, **options)
    stores = {name: Store(path) for name, path in paths.items()}
    objectives = {name: SmoothSVMObjective(store, "psi_g", 1e-5, sigma=0.125,
                                           cache_curved=False)
                  for name, store in stores.items()}
    w = np.full(stores["none"].n_features, 1e-3)
    times = {(name, what): [] for name in stores for what in ("read", "evaluate")}
    cpu = {key: [] for key in times}
    for repeat in range(args.passes + 1):  # the first round warms caches and compiles
        for name, store in stores.items():
            for what, run in (("read", lambda store=store: read_pass(store)),
                              ("evaluate", lambda name=name: objectives[name].evaluate(w))):
                t0, c0 = time.perf_counter(), time.process_time()
                run()
                if repeat:
                    times[name, what].append(time.perf_counter() - t0)
                    cpu[name, what].append(time.process_time() - c0)
    print(f"{args.svmlight}: {nnz:,} nonzeros in {n_blocks} blocks, store "
          f"{os.path.getsize(paths['none']) / 1e6:.1f} MB; best and median of {args.passes}")
    rows = []
    for what in ("read", "evaluate"):
        base = statistics.median(cpu["none", what])
        for name in stores:
            seconds, cpu_seconds = times[name, what], statistics.median(cpu[name, what])
            print(f"  {what:<8} {name:<18} wall best {min(seconds) * 1e3:6.1f} ms, median "
                  f"{statistics.median(seconds) * 1e3:6.1f} ms; CPU median "
                  f"{cpu_seconds * 1e3:6.1f} ms ({100 * (cpu_seconds / base - 1):+4.0f}%)")
            rows.append(dict(measured=what, checksums=name, wall_best_ms=min(seconds) * 1e3,
                             wall_median_ms=statistics.median(seconds) * 1e3,
                             cpu_median_ms=cpu_seconds * 1e3,
                             cpu_over_none=cpu_seconds / base))
    for store in stores.values():
        store.close()
    if not args.workdir:
        shutil.rmtree(workdir)
    print("wrote", bench_output.write("checksums", dict(nonzeros=nnz, blocks=n_blocks,
                                                        passes=args.passes, rows=rows),
                                      args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
