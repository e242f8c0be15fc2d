"""Benchmark: our svmlight -> HDF5 converter against scikit-learn's load_svmlight_file and
Vowpal Wabbit's text pass.

Prints, side by side in one run on one svmlight file (given, or generated with
make_synthetic.py): text MB/s of each, the ratios (targets: ours >= 5x scikit-learn's, >= 2x
VW's), peak memory of each, and the store's size against the text's. VW's text pass is
its first pass over its own text format (the same rows, ``|f`` after each label, written
beside the file, not timed): parsing, one pass of learning, and its cache written.
``--bound-check`` shows that the converter's memory does not grow with the file: it converts
a file at least 10x larger than a memory cap under that cap (``run-capped``, which counts
the page cache) and compares its peak RSS on a small and on the large file.

Every measured run is a child process (``run-capped CAP python bench_convert.py --child
...``), so that the peak figures are that run's own:

* peak RSS: the child's ``getrusage(RUSAGE_SELF).ru_maxrss`` (resident memory only; for
  ours it includes numba and llvmlite, about 150-250 MB however small the file);
* cgroup peak: ``peak_mb`` from ``run-capped``, everything charged to the run's memory
  cgroup, page cache of the input and output included (so it tends to the cap on big files:
  that is the kernel keeping cache, not the program's footprint).

The input is evicted from the page cache before each run (``--warm`` keeps it), so the
figures are cold-cache ones. Inside the child, the converter first converts a 3-line file so
that numba's compilation (or cache load) is not timed; times are of the call alone.
Temporary files go to ``bench-data/`` (git-ignored) and are removed unless ``--keep``.

Examples::

    python tools/bench_convert.py bench-data/synth-200M.svm
    python tools/bench_convert.py --synthetic-bytes 1G
    python tools/bench_convert.py --bound-check --bound-bytes 4G --bound-cap 400
"""

import argparse
import importlib.util
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time

import bench_output
import make_synthetic
from bench_vw import to_vw
from tool_args import BIN, REPO_ROOT, existing_file

sys.path.insert(0, REPO_ROOT)  # the repository's streamssvm, here and in the children (this file)
DEFAULT_WORK_DIR = os.path.join(REPO_ROOT, "bench-data")
RUN_CAPPED = os.path.join(BIN, "run-capped")
EVICT = os.path.join(BIN, "evict")
MB = 1e6
# targets: our text MB/s against scikit-learn's loader and against VW's text pass
SKLEARN_TARGET, VW_TARGET = 5.0, 2.0


# --------------------------------------------------------------------------------------
# Child side: one measured run, result as JSON on stdout
# --------------------------------------------------------------------------------------

def _cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def _child(args):
    if args.child == "ours":
        from streamssvm import convert_svmlight

        opts = json.loads(args.child_options)
        with tempfile.TemporaryDirectory(dir=os.path.dirname(args.child_dst)) as tmp:
            warm_src = os.path.join(tmp, "warm.svm")
            with open(warm_src, "w") as f:
                f.write("+1 1:0.5 3:1.25\n-1 2:1\n+1 1:2.5e-1 3:4\n")
            convert_svmlight(warm_src, os.path.join(tmp, "warm.h5"), progress=False, **opts)
        rss_before = _peak_rss_mb()
        c0, t0 = _cpu_seconds(), time.perf_counter()
        res = convert_svmlight(args.child_src, args.child_dst, progress=False, overwrite=True,
                               **opts)
        seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        out = {"seconds": seconds, "cpu_seconds": cpu, "n_samples": int(res["n_samples"]),
               "n_features": int(res["n_features"]), "nnz": int(res["nnz"]),
               "n_blocks": int(res.get("n_blocks", 0)), "text_bytes": int(res["text_bytes"]),
               "reported_seconds": float(res["seconds"]),
               "reported_mb_per_s": float(res["mb_per_s"]),
               "store_bytes": os.path.getsize(args.child_dst),
               "rss_before_mb": rss_before}
    elif args.child == "vw":
        import vowpalwabbit

        rss_before = _peak_rss_mb()
        c0, t0 = _cpu_seconds(), time.perf_counter()
        vw = vowpalwabbit.Workspace(f"-d {shlex.quote(args.child_src)} -k --cache_file "
                                    f"{shlex.quote(args.child_dst)} --holdout_off -b 24 --quiet")
        vw.finish()
        seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        out = {"seconds": seconds, "cpu_seconds": cpu, "rss_before_mb": rss_before,
               "text_bytes": os.path.getsize(args.child_src),
               "cache_bytes": os.path.getsize(args.child_dst)}
    else:
        import numpy as np  # noqa: F401  (imported before the clock starts)
        from sklearn.datasets import load_svmlight_file

        rss_before = _peak_rss_mb()
        c0, t0 = _cpu_seconds(), time.perf_counter()
        X, y = load_svmlight_file(args.child_src)
        seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        out = {"seconds": seconds, "cpu_seconds": cpu, "n_samples": int(X.shape[0]),
               "n_features": int(X.shape[1]), "nnz": int(X.nnz),
               "matrix_bytes": int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
                                   + y.nbytes), "rss_before_mb": rss_before}
    out["peak_rss_mb"] = _peak_rss_mb()
    print("RESULT " + json.dumps(out), flush=True)


# --------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------

def _evict(path):
    if os.path.exists(EVICT):
        subprocess.run([sys.executable, EVICT, path], check=False)


def _run_child(kind, src, dst, cap_mb, options, cold=True):
    """Run one measurement in a child process (under run-capped if available)."""
    if cold:
        _evict(src)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--child-src", src,
           "--child-dst", dst or "", "--child-options", json.dumps(options)]
    capped = os.path.exists(RUN_CAPPED) and cap_mb
    if capped:
        cmd = [RUN_CAPPED, str(int(cap_mb))] + cmd
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if capped and proc.returncode == 3 and "no writable memory cgroup" in proc.stderr:
        return _run_child(kind, src, dst, None, options, cold)
    result = {"returncode": proc.returncode, "wall_seconds": wall, "cap_mb": cap_mb
              if capped else None, "peak_cgroup_mb": None, "oom_kills": None}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result.update(json.loads(line[len("RESULT "):]))
    for line in proc.stderr.splitlines():
        if line.startswith("peak_mb="):
            fields = dict(item.split("=") for item in line.split())
            result["peak_cgroup_mb"] = int(fields["peak_mb"])
            result["oom_kills"] = int(fields.get("oom_kills", 0))
    result["completed"] = proc.returncode == 0 and "seconds" in result
    if not result["completed"]:
        result["stderr_tail"] = proc.stderr.strip().splitlines()[-5:]
    return result


def _best(runs):
    done = [r for r in runs if r["completed"]]
    return min(done, key=lambda r: r["seconds"]) if done else runs[-1]


def _generate(path, size_bytes, seed=0):
    print(f"# generating {path} ({size_bytes / MB:,.0f} MB) with make_synthetic ...",
          flush=True)
    stats = make_synthetic.generate(path, target_bytes=size_bytes, seed=seed)
    print(f"#   {stats['n_rows']:,} rows, nnz {stats['nnz']:,}, "
          f"{stats['mb_per_s']:,.0f} MB/s of text", flush=True)
    return stats


def _fmt(x, spec, missing="-"):
    return missing if x is None else format(x, spec)


def _table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).rjust(w) if i else str(h).ljust(w)
                     for i, (h, w) in enumerate(zip(headers, widths)))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def side_by_side(src, args, options, work_dir):
    src_bytes = os.path.getsize(src)
    dst = os.path.join(work_dir, f"bench-{os.getpid()}.h5")
    ours_runs, sk_runs = [], []
    try:
        for _ in range(args.repeat):
            ours_runs.append(_run_child("ours", src, dst, args.cap, options, not args.warm))
        ours = _best(ours_runs)
    finally:
        if os.path.exists(dst) and not args.keep:
            os.remove(dst)
    text_bytes = ours.get("text_bytes", src_bytes)
    run_sklearn = not args.no_sklearn and text_bytes <= args.sklearn_max_bytes
    if run_sklearn:
        for _ in range(args.repeat):
            sk_runs.append(_run_child("sklearn", src, None, args.cap, {}, not args.warm))
        sk = _best(sk_runs)
    else:
        sk = None
    vw = None
    if not args.no_vw and importlib.util.find_spec("vowpalwabbit") is not None:
        vw_text = os.path.join(work_dir, f"bench-{os.getpid()}.vw")
        vw_cache = vw_text + ".cache"
        try:
            to_vw(src, vw_text)  # its own format, written once (not timed)
            vw = _best([_run_child("vw", vw_text, vw_cache, args.cap, {}, not args.warm)
                        for _ in range(args.repeat)])
        finally:
            for path in (vw_text, vw_cache):
                if os.path.exists(path):
                    os.remove(path)

    print(f"\ninput: {src}  ({src_bytes / MB:,.1f} MB on disk, {text_bytes / MB:,.1f} MB of "
          f"text; {ours.get('n_samples', 0):,} rows x {ours.get('n_features', 0):,} features,"
          f" nnz {ours.get('nnz', 0):,})")
    rows = []
    for name, r, out_mb in (("streamssvm convert_svmlight", ours,
                             ours.get("store_bytes", 0) / MB),
                            ("sklearn load_svmlight_file", sk,
                             (sk or {}).get("matrix_bytes", 0) / MB),
                            ("Vowpal Wabbit 1 pass + cache", vw,
                             (vw or {}).get("cache_bytes", 0) / MB)):
        if r is None:
            rows.append([name, "skipped", "-", "-", "-", "-", "-", "-"])
            continue
        if not r["completed"]:
            rows.append([name, "FAILED", "-", "-", "-", _fmt(r.get("peak_cgroup_mb"), ",d"),
                         "-", "-"])
            continue
        rows.append([name, f"{r['seconds']:.2f}", f"{r['cpu_seconds']:.2f}",
                     f"{r.get('text_bytes', text_bytes) / MB / r['seconds']:,.1f}",
                     f"{r['peak_rss_mb']:,.0f}", _fmt(r.get("peak_cgroup_mb"), ",d"),
                     f"{out_mb:,.1f}", f"{out_mb * MB / text_bytes:.3f}"])
    print(_table(["", "seconds", "CPU s", "MB/s text", "peak RSS MB", "cgroup peak MB",
                  "output MB", "output/text"], rows))
    if args.repeat > 1:
        print(f"(best of {args.repeat} runs; all ours: "
              + ", ".join(f"{r['seconds']:.2f}" for r in ours_runs if r["completed"])
              + ("; all sklearn: " + ", ".join(f"{r['seconds']:.2f}" for r in sk_runs
                                              if r["completed"]) if sk_runs else "") + " s)")
    print("output = the HDF5 store for ours (on disk), the CSR matrix + labels for sklearn "
          "(in memory, float64 values, int64 indices), its cache for VW (its own text format, "
          "`|f` after each label: MB/s of that text)")
    summary = {"src": src, "src_bytes": src_bytes, "text_bytes": text_bytes, "ours": ours,
               "sklearn": sk, "vw": vw}
    if ours["completed"]:
        print(f"ours: the converter's own figure: {ours['reported_mb_per_s']:,.1f} MB/s "
              f"({ours['reported_seconds']:.2f} s); "
              f"store/text {ours['store_bytes'] / text_bytes:.3f},"
              f" {ours['store_bytes'] / max(ours['nnz'], 1):.2f} bytes per nonzero")
    if sk is not None and sk["completed"] and ours["completed"]:
        ratio = sk["seconds"] / ours["seconds"]
        summary["ratio"] = ratio
        cpu_ratio = sk["cpu_seconds"] / max(ours["cpu_seconds"], 1e-9)
        summary["cpu_ratio"] = cpu_ratio
        print(f"speed ratio ours/sklearn: {ratio:.2f}x in wall time (target >= "
              f"{SKLEARN_TARGET:g}x: {'met' if ratio >= SKLEARN_TARGET else 'NOT met'}); "
              f"{cpu_ratio:.2f}x in CPU time")
        if (sk["n_samples"], sk["nnz"]) != (ours["n_samples"], ours["nnz"]):
            print(f"WARNING: shapes differ: sklearn {sk['n_samples']} rows, {sk['nnz']} nnz; "
                  f"ours {ours['n_samples']} rows, {ours['nnz']} nnz")
    elif sk is None:
        why = ("--no-sklearn" if args.no_sklearn else
               f"text larger than --sklearn-max-bytes = {args.sklearn_max_bytes / MB:,.0f} MB")
        print(f"sklearn skipped ({why})")
    if vw is not None and vw["completed"] and ours["completed"]:
        ours_rate = text_bytes / ours["seconds"]
        summary["vw_ratio"] = ours_rate / (vw["text_bytes"] / vw["seconds"])
        summary["vw_cpu_ratio"] = (ours_rate * ours["seconds"] / ours["cpu_seconds"]) / (
            vw["text_bytes"] / max(vw["cpu_seconds"], 1e-9))
        print(f"MB/s ratio ours/VW's text pass: {summary['vw_ratio']:.2f}x in wall time "
              f"(target >= {VW_TARGET:g}x: "
              f"{'met' if summary['vw_ratio'] >= VW_TARGET else 'NOT met'}); "
              f"{summary['vw_cpu_ratio']:.2f}x in CPU time")
    return summary


def bound_check(args, options, work_dir, cleanup):
    cap = args.bound_cap
    large = args.bound_file
    if large is None:
        size = make_synthetic.parse_size(args.bound_bytes)
        large = os.path.join(work_dir, f"bound-large-{size >> 20}M.svm")
        if not os.path.exists(large) or os.path.getsize(large) < size:
            _generate(large, size, seed=1)
            cleanup.append(large)
    small = args.bound_small_file
    if small is None:
        size = make_synthetic.parse_size(args.bound_small_bytes)
        small = os.path.join(work_dir, f"bound-small-{size >> 20}M.svm")
        if not os.path.exists(small) or os.path.getsize(small) < size:
            _generate(small, size, seed=2)
            cleanup.append(small)
    dst = os.path.join(work_dir, f"bound-{os.getpid()}.h5")
    results = []
    try:
        for name, path, run_cap in (("small file, generous cap", small, args.cap),
                                    ("small file, bound cap", small, cap),
                                    ("large file, bound cap", large, cap)):
            r = _run_child("ours", path, dst, run_cap, options, cold=True)
            r["name"], r["path"], r["file_bytes"] = name, path, os.path.getsize(path)
            results.append(r)
            if os.path.exists(dst):
                os.remove(dst)
    finally:
        if os.path.exists(dst):
            os.remove(dst)
    print(f"\nbounded memory: converter under a cap of {cap} MB (cgroup memory incl. page "
          f"cache; run-capped)")
    rows = []
    for r in results:
        tb = r.get("text_bytes", r["file_bytes"])
        rows.append([r["name"], f"{r['file_bytes'] / MB:,.0f}", _fmt(r["cap_mb"], ",d"),
                     f"{r['file_bytes'] / MB / r['cap_mb']:.1f}x" if r["cap_mb"] else "-",
                     "yes" if r["completed"] else f"NO (rc {r['returncode']})",
                     _fmt(r.get("oom_kills"), "d"),
                     _fmt(r.get("peak_rss_mb"), ",.0f"), _fmt(r.get("peak_cgroup_mb"), ",d"),
                     f"{tb / MB / r['seconds']:,.1f}" if r["completed"] else "-",
                     f"{r.get('nnz', 0):,}" if r["completed"] else "-"])
    print(_table(["run", "file MB", "cap MB", "file/cap", "completed", "OOM kills",
                  "peak RSS MB", "cgroup peak MB", "MB/s text", "nnz"], rows))
    small_r, large_r = results[1], results[2]
    if small_r["completed"] and large_r["completed"]:
        growth = large_r["peak_rss_mb"] / small_r["peak_rss_mb"]
        print(f"peak RSS large/small: {growth:.2f} for a file "
              f"{large_r['file_bytes'] / small_r['file_bytes']:.0f}x larger; the large file is "
              f"{large_r['file_bytes'] / MB / cap:.1f}x the cap")
    for r in results:
        if not r["completed"]:
            print(f"{r['name']} failed: " + " | ".join(r.get("stderr_tail", [])))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("src", nargs="?", type=existing_file,
                    help="svmlight file (plain, .gz, .bz2, .xz)")
    ap.add_argument("--synthetic-bytes", help="generate a synthetic file of this size (e.g. "
                    "1G) with make_synthetic.py instead of giving SRC")
    ap.add_argument("--work-dir", default=DEFAULT_WORK_DIR, help="for generated files and "
                    "stores")
    ap.add_argument("--keep", action="store_true", help="keep generated files and stores")
    ap.add_argument("--cap", type=int, default=16000,
                    help="generous memory cap (MB) of the side-by-side runs")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each, best time kept")
    ap.add_argument("--warm", action="store_true", help="do not evict the input first")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--no-vw", action="store_true", help="skip Vowpal Wabbit's text pass")
    ap.add_argument("--json", help="where to write the figures (default "
                    "benchmarks/convert.json)")
    ap.add_argument("--sklearn-max-bytes", default="2G",
                    help="skip sklearn on text larger than this (it holds it all in memory)")
    ap.add_argument("--value-dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--compression", choices=("gzip", "lzf"))
    ap.add_argument("--block-nnz", type=int)
    ap.add_argument("--bound-check", action="store_true",
                    help="show bounded memory on a file >= 10x the cap")
    ap.add_argument("--bound-cap", type=int, default=400, help="cap (MB) of the bound check")
    ap.add_argument("--bound-file", type=existing_file,
                    help="large file for the bound check (default: generate --bound-bytes)")
    ap.add_argument("--bound-bytes", default="4G")
    ap.add_argument("--bound-small-file", type=existing_file, help="small file for the bound check")
    ap.add_argument("--bound-small-bytes", default="50M")
    for name in ("--child", "--child-src", "--child-dst", "--child-options"):
        ap.add_argument(name, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args)

    args.sklearn_max_bytes = make_synthetic.parse_size(args.sklearn_max_bytes)
    if args.src is None and args.synthetic_bytes is None and not args.bound_check:
        ap.error("give SRC, --synthetic-bytes or --bound-check")
    if args.src is not None and args.synthetic_bytes is not None:
        ap.error("give SRC or --synthetic-bytes, not both")
    print("command: " + " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv))
    print(f"machine: {os.cpu_count()} cores; run-capped "
          f"{'available' if os.path.exists(RUN_CAPPED) else 'missing (no cgroup figures)'}; "
          f"load average {os.getloadavg()[0]:.2f} at start")
    os.makedirs(args.work_dir, exist_ok=True)
    options = {"value_dtype": args.value_dtype}
    if args.compression:
        options["compression"] = args.compression
    if args.block_nnz:
        options["block_nnz"] = args.block_nnz
    print(f"converter options: {options}")
    cleanup = []
    results = {}
    try:
        src = args.src
        if args.synthetic_bytes is not None:
            size = make_synthetic.parse_size(args.synthetic_bytes)
            src = os.path.join(args.work_dir, f"synthetic-{size >> 20}M.svm")
            if not os.path.exists(src) or os.path.getsize(src) < size:
                _generate(src, size)
                cleanup.append(src)
        if src is not None:
            results["side_by_side"] = side_by_side(src, args, options, args.work_dir)
        if args.bound_check:
            results["bound_check"] = bound_check(args, options, args.work_dir, cleanup)
    finally:
        if not args.keep:
            for path in cleanup:
                if os.path.exists(path):
                    os.remove(path)
    print(f"load average {os.getloadavg()[0]:.2f} at end (2 cores shared with other work: "
          f"times vary)")
    print("wrote", bench_output.write("convert", results, args.json))
    return results


def headline(results):
    """The README's rows: our converter's speed against scikit-learn's loader and against
    VW's text pass, each with its target."""
    side = results.get("side_by_side") or {}
    rows = []
    for key, peer, target in (("ratio", "scikit-learn's load_svmlight_file", SKLEARN_TARGET),
                              ("vw_ratio", "Vowpal Wabbit's text pass", VW_TARGET)):
        if key in side:
            rate = side["text_bytes"] / MB / side["ours"]["seconds"]
            rows.append({"what": f"svmlight text to a store, against {peer}",
                         "result": f"{side[key]:.2f}x its MB/s ({rate:,.0f} MB/s of text; "
                                   f"target >= {target:g}x: "
                                   f"{'met' if side[key] >= target else 'not met'})"})
    return rows


if __name__ == "__main__":
    main()
