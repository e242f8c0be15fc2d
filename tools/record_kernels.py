"""Record the kernels each path compiles, for the helper that compiles them ahead
(``streamssvm/_ahead.py``), into ``streamssvm/_ahead.json``.

Each path of ``tools/bench_compile.py`` that a user's first run takes (``convert``,
``store:SOLVER``, ``matrix:SOLVER``) runs in a child Python whose numba cache is an empty
folder, the helper off: the package's functions that numba compiles, in the order their
compiles start, with their argument types. Run it after a change to a kernel's arguments;
``tests/test_ahead.py`` fails while the manifest is stale for the paths it checks.

Example::

    python tools/record_kernels.py            # every path
"""

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import bench_compile
from tool_args import REPO_ROOT

sys.path.insert(0, REPO_ROOT)
from streamssvm import _ahead  # noqa: E402
from streamssvm.solvers import SOLVERS  # noqa: E402


def paths():
    return ["convert"] + [f"{kind}:{s}" for kind in ("store", "matrix") for s in SOLVERS]


def record(names, jobs=2):
    """``{path: entries}``, each path from an empty cache, ``jobs`` at a time."""
    os.environ[_ahead.ENV] = "0"  # the children's: the whole path compiles in the run
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        bench_compile.make_inputs(work, os.path.join(tmp, "numba-setup"), REPO_ROOT)

        def one(name):
            cache = tempfile.mkdtemp(prefix="numba-", dir=tmp)
            return bench_compile.run_child(name, work, cache, REPO_ROOT)["entries"]

        with ThreadPoolExecutor(jobs) as pool:
            return dict(zip(names, pool.map(one, names)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=_ahead.MANIFEST, help="default: %(default)s")
    args = parser.parse_args(argv)
    recorded = record(paths())
    for name, entries in recorded.items():
        print(f"{name}: {len(entries)} kernels")
    tmp = f"{args.output}.{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump({"paths": recorded}, fh, indent=0, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
