"""What every benchmark writes beside the figures it prints: one JSON file with the
figures, the command that made them, the machine, the package versions and the date, so
that docs/benchmarks.md is rendered from data (tools/render_benchmarks.py), never typed."""

import datetime
import json
import os
import platform
import runpy
import shlex
import sys
from importlib import metadata

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO_ROOT, "benchmarks")
PACKAGES = ("streamssvm", "numpy", "scipy", "numba", "h5py", "scikit-learn",
            "liblinear-official", "vowpalwabbit")


def machine():
    """The CPU's model name, the cores this process may use, the memory, the OS."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh
                          if line.startswith("model name")), model)
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        memory = None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": model, "cores": cores, "memory_gib": None if memory is None
            else round(memory / 2 ** 30, 1), "os": platform.platform(),
            "python": platform.python_version()}


def versions():
    """Versions of the packages a benchmark compares (None: not installed); streamssvm's is
    this checkout's (the tools run the repository's package, whichever is installed)."""
    found = {}
    for name in PACKAGES:
        if name == "streamssvm":
            version = os.path.join(REPO_ROOT, "streamssvm", "_version.py")
            found[name] = runpy.run_path(version)["__version__"]
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def command(argv, output):
    """The command line that made a record, as one runs it from the repository: paths in the
    repository relative to it, and without the option naming the record's own file (its
    value ``output``, and the flag before it), which is where the record already is."""
    words, output = list(argv), os.path.abspath(output)
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if eq and flag.startswith("--") and os.path.abspath(value) == output:
            del words[i]
            break
        if os.path.abspath(word) == output:
            del words[i - 1 if i > 1 and words[i - 1].startswith("--") else i:i + 1]
            break

    def relative(word):
        path = os.path.abspath(word)
        inside = os.path.isabs(word) or os.path.exists(word)
        if inside and path.startswith(REPO_ROOT + os.sep):
            return os.path.relpath(path, REPO_ROOT)
        return word

    return shlex.join(["python"] + [relative(w) for w in words])


def write(name, figures, path=None):
    """Write ``figures`` (JSON-serialisable) as benchmark ``name`` to ``path`` (default
    benchmarks/NAME.json) with the command, machine, versions and date; returns the path."""
    path = path or os.path.join(RESULTS_DIR, f"{name}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    record = {"benchmark": name, "command": command(sys.argv, path),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "versions": versions(), "figures": figures}
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(record, fh, indent=1, default=float)
        fh.write("\n")
    os.replace(tmp, path)
    return path
