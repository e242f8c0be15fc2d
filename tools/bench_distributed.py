"""Benchmark of training across Dask workers: seconds per pass and scaling.

Prints, on one store (page-cached after a first pass, so that passes are bound by the
kernels and the transport, not by the disk):
  (a) the local objective's seconds per pass, ``evaluate`` (f, gradient, curvature) and a
      streamed ``hessp``, with 1 and 2 kernel threads;
  (b) the same passes through DaskObjective on a LocalCluster of 1 and of 2 worker
      processes (one kernel thread each), and the scaling ratio 1 worker / 2 workers;
  (c) the ways of summing one d-vector per worker for d = 1M floats on 2 workers: a tree
      of additions on the workers then one transfer (what DaskObjective does), gathering
      every vector to the driver and adding there, and the broadcast of a d-vector to the
      workers that every call starts with.
The median of ``--repeats`` timings is printed, with the spread; on a machine where other
jobs run, the spread says how far to trust them, and (b) also prints the CPU seconds the
workers spent per call (the busiest one's is what a call would take on free cores, but for
the transfers), which contention does not inflate as much.

Example:
    python tools/bench_distributed.py --svm bench-data/synth-200M.svm
    python tools/bench_distributed.py --store some.h5 --repeats 7
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from streamssvm import Store, convert_svmlight  # noqa: E402
from streamssvm.objective import SmoothSVMObjective  # noqa: E402
import bench_output  # noqa: E402
from tool_args import existing_file, existing_store  # noqa: E402


def timed(fn, repeats):
    """(median, min, max) seconds of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def show(label, stats, rows):
    """Print (median, min, max) seconds, and the workers' CPU seconds if given; append them
    to ``rows`` as one row."""
    median, lo, hi = stats[:3]
    row = dict(measured=label, median_seconds=median, min_seconds=lo, max_seconds=hi)
    if len(stats) > 3:
        row.update(busiest_worker_cpu_seconds=stats[3], all_workers_cpu_seconds=stats[4])
    rows.append(row)
    cpu = f"; CPU {stats[3]:.4f} s on the busiest worker, {stats[4]:.4f} on all" \
        if len(stats) > 3 else ""
    print(f"  {label:<44} {median:7.4f} s  (min {lo:.4f}, max {hi:.4f}){cpu}")
    return median


def pass_times(objective, w, s, repeats, cpu=None):
    """Seconds of an ``evaluate`` pass and of a streamed ``hessp`` pass, each as (median,
    min, max); with ``cpu`` (a function giving ``{worker: CPU seconds so far}``), followed
    by the busiest worker's and all workers' CPU seconds per call."""
    state = objective.evaluate(w)
    out = []
    for call in (lambda: objective.evaluate(w), lambda: objective.hessp(state, s)):
        before = cpu() if cpu else None
        stats = timed(call, repeats)
        if cpu:
            spent = [after - before[worker] for worker, after in cpu().items()]
            stats += (max(spent) / (repeats + 1), sum(spent) / (repeats + 1))
        out.append(stats)
    return out


def section_local(store, w, s, args, rows):
    print(f"(a) local objective, {store.path}")
    out = {}
    for threads in (1, 2):
        objective = SmoothSVMObjective(store, args.loss, args.lam, n_threads=threads,
                                       cache_curved=False)
        evaluate, hessp = pass_times(objective, w, s, args.repeats)
        out[threads] = (show(f"evaluate, {threads} thread(s)", evaluate, rows),
                        show(f"hessp (streamed), {threads} thread(s)", hessp, rows))
    return out


def section_dask(path, w, s, args, rows):
    from distributed import Client, LocalCluster

    from streamssvm.distributed import DaskObjective, DaskStores

    print("(b) DaskObjective on a LocalCluster (1 kernel thread per worker)")
    out = {}
    for n_workers in (1, 2):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client, \
                DaskStores(path, client) as stores:
            objective = DaskObjective(stores, args.loss, args.lam, n_threads=1,
                                      cache_curved=False)
            evaluate, hessp = pass_times(objective, w, s, args.repeats,
                                         cpu=lambda: client.run(time.process_time))
            out[n_workers] = (show(f"evaluate, {n_workers} worker(s)", evaluate, rows),
                              show(f"hessp (streamed), {n_workers} worker(s)", hessp, rows))
    print(f"  scaling 1 -> 2 workers: evaluate {out[1][0] / out[2][0]:.2f}x, "
          f"hessp {out[1][1] / out[2][1]:.2f}x")
    return out


def section_reduction(args, rows):
    """(c): the sum of one d-vector per worker, two ways, and the broadcast."""
    from distributed import Client, LocalCluster

    from streamssvm.distributed.worker import add_partials

    d = args.reduce_d
    vector = np.random.default_rng(0).random(d)
    for n_workers in args.reduce_workers:
        print(f"(c) summing one d-vector per worker, d = {d:,} float64, {n_workers} workers")
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            workers = sorted(client.nthreads())

            def held_parts(workers=workers):
                """One (loss, vector, counts) per worker, computed and held there."""
                futures = [client.submit(
                    lambda seed: (0.0, np.random.default_rng(seed).random(d), {}), k,
                    workers=[w], pure=False) for k, w in enumerate(workers)]
                client.gather(futures)
                return futures

            def tree():
                futures = held_parts()
                start = time.perf_counter()
                while len(futures) > 1:
                    pairs = [client.submit(add_partials, a, b, pure=False)
                             for a, b in zip(futures[0::2], futures[1::2])]
                    futures = pairs + futures[len(pairs) * 2:]
                futures[0].result()
                return time.perf_counter() - start

            def driver():
                futures = held_parts()
                start = time.perf_counter()
                parts = client.gather(futures)
                total = parts[0]
                for part in parts[1:]:
                    total = add_partials(total, part)
                return time.perf_counter() - start

            for label, fn in (("pairwise tree on the workers, one transfer", tree),
                              ("gather all to the driver, add there", driver)):
                fn()
                times = [fn() for _ in range(args.repeats)]
                show(f"{label}, {n_workers} workers",
                     (statistics.median(times), min(times), max(times)), rows)
            show(f"broadcast one d-vector to every worker, {n_workers} workers",
                 timed(lambda workers=workers: client.scatter(
                     vector, workers=workers, broadcast=True, hash=False).result(),
                     args.repeats), rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--store", type=existing_store, help="a store")
    source.add_argument("--svm", type=existing_file,
                        help="svmlight text, converted into a temporary store")
    ap.add_argument("--loss", default="psi_g")
    ap.add_argument("--lam", type=float, default=1e-5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reduce-d", type=int, default=1_000_000)
    ap.add_argument("--reduce-workers", type=int, nargs="+", default=[2, 4],
                    help="cluster sizes for (c) (default 2 4; 4 oversubscribes 2 cores, "
                         "but the sums are bound by transfers)")
    ap.add_argument("--skip-passes", action="store_true", help="only (c)")
    ap.add_argument("--json",
                    help="where to write the figures (default benchmarks/distributed.json)")
    args = ap.parse_args(argv)
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_passes:
            figures.update(section_passes(args, tmp))
    figures["(c) sums of d-vectors"] = []
    section_reduction(args, figures["(c) sums of d-vectors"])
    figures["load average at the end"] = os.getloadavg()[0]
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("wrote", bench_output.write("distributed", figures, args.json))


def headline(figures):
    """The README's row: the scaling from 1 to 2 workers of the busiest worker's CPU
    seconds per pass (wall times on a shared machine say less)."""
    rows = {r["measured"]: r for r in figures.get("(b) Dask", [])}
    out = []
    for call in ("evaluate", "hessp (streamed)"):
        one, two = rows.get(f"{call}, 1 worker(s)"), rows.get(f"{call}, 2 worker(s)")
        if one and two and "busiest_worker_cpu_seconds" in one:
            scaling = one["busiest_worker_cpu_seconds"] / two["busiest_worker_cpu_seconds"]
            out.append({"what": f"Dask, {call}: the busiest worker's CPU seconds per pass, "
                                f"1 worker over 2", "result": f"{scaling:.2f}x"})
    return out


def section_passes(args, tmp):
    """Sections (a) and (b) on the store (converted into ``tmp`` if given as text)."""
    path = args.store
    if path is None:
        path = os.path.join(tmp, "bench.h5")
        start = time.perf_counter()
        convert_svmlight(args.svm, path, progress=False)
        print(f"converted {args.svm} in {time.perf_counter() - start:.1f} s")
    with Store(path) as store:
        print(f"{store.n_samples:,} rows, {store.n_features:,} features, "
              f"{store.nnz:,} nonzeros, {store.n_blocks} blocks, "
              f"{os.path.getsize(path) / 2**20:.0f} MiB; loss {args.loss}, "
              f"lambda {args.lam:g}; load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores")
        rng = np.random.default_rng(0)
        w = rng.standard_normal(store.n_features) / np.sqrt(store.n_features)
        s = rng.standard_normal(store.n_features)
        figures = {"store": dict(rows=store.n_samples, features=store.n_features,
                                 nonzeros=store.nnz, blocks=store.n_blocks,
                                 mib=os.path.getsize(path) / 2**20, loss=args.loss,
                                 lam=args.lam),
                   "(a) local": [], "(b) Dask": []}
        local = section_local(store, w, s, args, figures["(a) local"])
    dask = section_dask(path, w, s, args, figures["(b) Dask"])
    print(f"  2 workers against the local objective with 2 threads: evaluate "
          f"{local[2][0] / dask[2][0]:.2f}x, hessp {local[2][1] / dask[2][1]:.2f}x")
    return figures


if __name__ == "__main__":
    main()
