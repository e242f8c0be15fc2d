"""Where the svmlight converter's time goes, stage by stage, against a plain memory scan of
the same text.

On one svmlight file (given, or generated with make_synthetic.py), read into memory once
(page cache warm), each stage alone, best of --repeats, in MB of text per second and in
nanoseconds per byte, on one core unless said:

- read: the file read in the converter's chunk size (page cache to user memory);
- scan: numpy's count of b'\\n' over the bytes in memory (the floor: one pass of a
  vectorised compare), and ``bytes.count`` (memchr);
- sha256: the digest of the text the converter records (in its reading thread);
- parse: the BlockParser over the bytes in memory, blocks handed to a no-op (tokenizing,
  number parsing and CSR assembly); and the same text with every value written ``1``, whose
  difference per nonzero is the number parsing's share;
- write: the parsed blocks written to a store by StoreWriter (gap encoding, HDF5, our
  checksums), and without our checksums;
- convert: convert_svmlight end to end (a reading thread, parse, write), its wall and
  CPU seconds (CPU / wall: how many cores it keeps busy).

Example:
    python tools/profile_convert.py bench-data/synth-200M.svm
    python tools/profile_convert.py --synthetic-bytes 100M --json /tmp/profile.json
"""

import argparse
import hashlib
import os
import re
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_output  # noqa: E402
from make_synthetic import generate, parse_size  # noqa: E402
from tool_args import existing_file  # noqa: E402

from streamssvm import convert_svmlight  # noqa: E402
from streamssvm.data.convert import DEFAULT_CHUNK_BYTES  # noqa: E402
from streamssvm.data.store import StoreWriter  # noqa: E402
from streamssvm.data.svmlight import BlockParser  # noqa: E402


def timed(fn, repeats):
    """(best wall seconds, CPU seconds of that run) of ``fn()`` over ``repeats`` calls."""
    runs = []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(runs)


def read_file(path):
    with open(path, "rb", buffering=0) as fh:
        while fh.read(DEFAULT_CHUNK_BYTES):
            pass


def parse(data, blocks=None):
    """Parse ``data`` (a uint8 array) in the converter's chunks; blocks copied into
    ``blocks`` if given, else dropped."""
    def keep(indptr, indices, values, y):
        blocks.append((indptr.copy(), indices.copy(), values.astype(np.float32), y.copy()))

    parser = BlockParser("profile", keep if blocks is not None else (lambda *a: None))
    pos = 0
    while pos < data.size:
        stop = min(pos + DEFAULT_CHUNK_BYTES, data.size)
        if stop < data.size:  # cut after the chunk's last newline, as the converter does
            stop = pos + int(np.flatnonzero(data[pos:stop] == 10)[-1]) + 1
        parser.feed(data[pos:stop].copy(), stop - pos)
        pos = stop
    parser.finish()
    return parser


def write(blocks, path, n_features, checksums):
    with StoreWriter(path, value_dtype="float32", overwrite=True,
                     checksums=checksums) as writer:
        for b in blocks:
            writer.add_block(*b)
        writer.close(n_features, (-1.0, 1.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", type=existing_file, help="svmlight file (plain text)")
    ap.add_argument("--synthetic-bytes", default="100M",
                    help="without SRC: generate this much text with make_synthetic")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each stage, best kept")
    ap.add_argument("--work", default=os.path.join(ROOT, "bench-data"),
                    help="folder of the generated text and the stores")
    ap.add_argument("--json", help="where to write the figures (default "
                    "benchmarks/profile_convert.json)")
    args = ap.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.work, prefix="profile-") as work:
        src = args.src
        if src is None:
            src = os.path.join(work, "synthetic.svm")
            generate(src, target_bytes=parse_size(args.synthetic_bytes))
        with open(src, "rb") as fh:
            raw = fh.read()
        data = np.frombuffer(raw, np.uint8)
        ones = np.frombuffer(re.sub(rb":[^ \n]+", b":1", raw), np.uint8)
        mb = len(raw) / 1e6
        # the kernels compiled (or loaded) outside the timings, on the first whole lines
        parse(data[:int(np.flatnonzero(data[:200000] == 10)[-1]) + 1])
        blocks = []
        parser = parse(data, blocks)
        store = os.path.join(work, "profile.h5")
        stages = {
            "read": lambda: read_file(src),
            "scan (numpy count of newlines)": lambda: np.count_nonzero(data == 10),
            "scan (bytes.count)": lambda: raw.count(b"\n"),
            "sha256": lambda: hashlib.sha256(raw).digest(),
            "parse": lambda: parse(data),
            "parse, values written 1": lambda: parse(ones),
            "write (encode, HDF5, checksums)": lambda: write(blocks, store, parser.n_features,
                                                             True),
            "write without our checksums": lambda: write(blocks, store, parser.n_features,
                                                         False),
            "convert_svmlight end to end": lambda: convert_svmlight(src, store, overwrite=True,
                                                                    progress=False),
        }
        figures = {"src": src, "text_bytes": len(raw), "n_samples": parser.n_samples,
                   "nnz": parser.nnz, "stages": {}}
        print(f"{src}: {mb:,.1f} MB of text, {parser.n_samples:,} rows, {parser.nnz:,} "
              f"nonzeros ({len(raw) / max(parser.nnz, 1):.1f} bytes each)")
        print(f"{'stage':<36}{'seconds':>9}{'CPU s':>8}{'MB/s':>9}{'ns/byte':>9}")
        for name, fn in stages.items():
            size = ones.size if name == "parse, values written 1" else len(raw)
            seconds, cpu = timed(fn, args.repeats)
            figures["stages"][name] = {"seconds": seconds, "cpu_seconds": cpu,
                                       "text_bytes": size, "mb_per_s": size / 1e6 / seconds,
                                       "ns_per_byte": seconds * 1e9 / size}
            print(f"{name:<36}{seconds:>9.3f}{cpu:>8.2f}{size / 1e6 / seconds:>9.1f}"
                  f"{seconds * 1e9 / size:>9.2f}", flush=True)
    st = figures["stages"]
    for clock in ("seconds", "cpu_seconds"):  # CPU seconds: what a loaded machine keeps
        parse_s, ones_s = st["parse"][clock], st["parse, values written 1"][clock]
        scan_s = max(st["scan (numpy count of newlines)"][clock], 1e-9)
        end = st["convert_svmlight end to end"]
        figures[clock] = {
            "number_parsing_ns_per_nonzero": (parse_s - ones_s) * 1e9 / max(parser.nnz, 1),
            "parse_over_scan": parse_s / scan_s, "convert_over_parse": end[clock] / parse_s}
        print(f"by {clock.replace('_', ' ')}: number parsing about "
              f"{figures[clock]['number_parsing_ns_per_nonzero']:.1f} ns per nonzero (parse "
              f"minus parse of the values written 1); parse / newline scan "
              f"{figures[clock]['parse_over_scan']:.1f}x; convert / parse alone "
              f"{figures[clock]['convert_over_parse']:.2f}x")
    figures["convert_cores_busy"] = end["cpu_seconds"] / end["seconds"]
    print(f"convert keeps {figures['convert_cores_busy']:.2f} cores busy (CPU / wall)")
    print("wrote", bench_output.write("profile_convert", figures, args.json))
    return figures


if __name__ == "__main__":
    main()
