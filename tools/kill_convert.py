"""Kill conversions with SIGKILL at random moments and check what is left under the output's name.

Each trial forks a process that converts IN into OUT, kills it with SIGKILL after a random
delay (uniform over 1.2 times an uninterrupted conversion, so that some finish), and
looks at OUT. Half the trials start with an older store at OUT (converted with
``overwrite=True``), half with none. The outcome is one of

``killed, old store intact``
    OUT is byte for byte the older store;
``killed, no store``
    there was none and there is none;
``completed``
    OUT is the whole new store: ``verify`` finds nothing and its contents equal those of an
    uninterrupted conversion;
``PARTIAL``
    anything else: a failure.

A killed process cannot remove its temporary file (``.OUT.tmp-PID`` beside OUT): those are
counted, then deleted before the next trial.

    python tools/kill_convert.py IN --kills 200
"""

import argparse
import collections
import glob
import hashlib
import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from corrupt_store import read_everything, same_contents  # noqa: E402
from streamssvm.data.convert import convert_svmlight  # noqa: E402  (this checkout's package)
from streamssvm.data.verify import verify_store  # noqa: E402
from tool_args import existing_file  # noqa: E402


def _contents(path):
    """The store's contents, without what differs between two conversions of one file."""
    contents = read_everything(path)
    for key in ("created", "attributes_checksum"):
        del contents[0][key]
    return contents


def _digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _convert(src, dst, options):
    # quiet: no tqdm bar, so the child never holds tqdm's lock, which it shares with the
    # parent across the fork (killed holding it, it would block the parent's next bar)
    convert_svmlight(src, dst, overwrite=True, progress=False, **options)


def _start(src, dst, options):
    process = multiprocessing.get_context("fork").Process(target=_convert,
                                                          args=(src, dst, options))
    process.start()
    return process


def trial(src, dst, old, reference, delay, options):
    """One conversion killed after ``delay`` seconds; ``old`` is a store to put at ``dst``
    first (or None). Returns ``(outcome, temporary files left)``."""
    if os.path.exists(dst):
        os.unlink(dst)
    if old is not None:
        shutil.copyfile(old, dst)
    process = _start(src, dst, options)
    time.sleep(delay)
    process.kill()
    process.join()
    killed = process.exitcode == -signal.SIGKILL
    leftovers = glob.glob(os.path.join(os.path.dirname(dst), f".{os.path.basename(dst)}.tmp-*"))
    for path in leftovers:
        os.unlink(path)
    if not os.path.exists(dst):
        outcome = "killed, no store" if old is None and killed else "PARTIAL"
    elif old is not None and _digest(dst) == _digest(old):
        outcome = "killed, old store intact" if killed else "PARTIAL"
    else:
        problems, _ = verify_store(dst)
        outcome = ("completed" if not problems and same_contents(_contents(dst), reference)
                   else "PARTIAL")
    return outcome, len(leftovers)


def run(src, old_src, workdir, n_kills, seed=0, options=None):
    """``n_kills`` trials converting ``src`` in ``workdir``; an older store is made from
    ``old_src``. Returns ``(counts, temporary files left by killed processes)``."""
    options = options or {}
    rnd = random.Random(seed)
    dst = os.path.join(workdir, "out.h5")
    old = os.path.join(workdir, "old.h5")
    convert_svmlight(old_src, old, overwrite=True, progress=False, **options)
    durations = []  # of uninterrupted conversions, the first warming the caches
    for _ in range(4):
        t0 = time.perf_counter()
        process = _start(src, dst, options)
        process.join()
        durations.append(time.perf_counter() - t0)
    duration = min(durations[1:])
    reference = _contents(dst)
    counts, leftovers = collections.Counter(), 0
    for i in range(n_kills):
        outcome, left = trial(src, dst, old if i % 2 else None, reference,
                              rnd.uniform(0, 1.2 * duration), options)
        counts[outcome] += 1
        leftovers += left
    return counts, leftovers, duration


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", type=existing_file, help="svmlight text to convert")
    parser.add_argument("--old", type=existing_file,
                        help="text for the older store (default: the input's first half)")
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        old_src = args.old
        if old_src is None:
            old_src = os.path.join(workdir, "old.svm")
            with open(args.input, "rb") as fh, open(old_src, "wb") as out:
                out.write(fh.read(os.path.getsize(args.input) // 2).rsplit(b"\n", 1)[0] + b"\n")
        counts, leftovers, duration = run(args.input, old_src, workdir, args.kills, args.seed)
    print(f"{args.input}: {sum(counts.values())} conversions killed at random moments "
          f"(an uninterrupted one takes {duration:.2f} s); {leftovers} temporary files left "
          f"by killed processes")
    for outcome, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d}  {outcome}")
    return 1 if counts["PARTIAL"] else 0


if __name__ == "__main__":
    sys.exit(main())
