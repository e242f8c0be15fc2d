"""Compile a first run's kernels on a second core: a helper process works through the
run's kernels from the last one back while the run compiles them from the first.

numba compiles in one thread per process (its compiler lock, and Python's), so on a cold
cache a run waits for every kernel of its path in turn. The kernels a path compiles, with
their argument types, are recorded in :data:`MANIFEST` (``tools/record_kernels.py``, run on
the shipped demo data from an empty cache). When a run starts a path whose last kernel is
missing from numba's disk cache, :func:`compiling_ahead` starts ``python -m
streamssvm._ahead KEY...``, which compiles the path's kernels in reverse order into the
cache; the run, compiling in order, finds the kernels the helper has reached in the cache
and loads them, so the two meet about halfway. The helper is stopped when the run ends
(numba writes a cache file to a temporary name and renames it: a stopped helper leaves
whole files or none).

Keys: ``convert`` (svmlight text to a store) and ``store:SOLVER`` or
``matrix:SOLVER`` (train_stream on a store or on an in-memory matrix). A kernel whose
recorded types are not the run's (other dtypes, encodings, weights) is compiled for
nothing, on the other core: the run is no slower than without the helper, as with a stale
manifest. ``STREAMSSVM_COMPILE_AHEAD=0`` turns the helper off; so does a machine with one
core, and less free memory than :data:`HELPER_ROOM`: the helper is a second Python with
numba's compiler, and under a tight memory cap the run's own budgets need that memory more
than the run needs the seconds.
"""

import contextlib
import functools
import importlib
import json
import os
import subprocess
import sys

from numba import types
from numba.core.dispatcher import Dispatcher

from ._memory import available_memory_bytes
from ._runtime import cores, prepare

MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ahead.json")
ENV = "STREAMSSVM_COMPILE_AHEAD"
# free memory below which no helper starts: about four times the helper's peak RSS
# (``children_peak_rss_mb`` of tools/bench_compile.py), so that it takes at most a quarter
# of what the run could use, as the run's caches do
HELPER_ROOM = 1 << 30
_PACKAGE = __name__.rpartition(".")[0]
_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCALARS = {str(t): t for t in (types.boolean, types.none, *types.integer_domain,
                                *types.real_domain)}


def encode(t):
    """A numba argument type as JSON (the types a kernel of the package takes)."""
    if isinstance(t, types.Array):
        return ["array", str(t.dtype), t.ndim, t.layout, not t.mutable]
    if isinstance(t, types.BaseTuple):
        return ["tuple", [encode(e) for e in t]]
    if isinstance(t, types.Omitted):
        return ["omitted", t.value]
    if isinstance(t, types.Literal) and isinstance(t.literal_value, (bool, int, float)):
        return ["literal", t.literal_value]
    if str(t) in _SCALARS:
        return str(t)
    raise TypeError(f"no JSON form for the numba type {t!r}")


def decode(x):
    """The numba type of :func:`encode`'s JSON."""
    if isinstance(x, str):
        return _SCALARS[x]
    kind, *rest = x
    if kind == "array":
        dtype, ndim, layout, readonly = rest
        return types.Array(_SCALARS[dtype], ndim, layout, readonly=readonly)
    if kind == "tuple":
        return types.Tuple([decode(e) for e in rest[0]])
    if kind == "omitted":
        return types.Omitted(rest[0])
    if kind == "literal":
        return types.literal(rest[0])
    raise ValueError(f"not a numba type: {x!r}")


def entry(dispatcher, args):
    """A manifest entry: ``[module, qualified name, [argument types]]``, or None for a
    function outside the package."""
    func = dispatcher.py_func
    if not func.__module__.startswith(_PACKAGE + "."):
        return None
    return [func.__module__, func.__qualname__, [encode(t) for t in args]]


def recorded(records):
    """The manifest entries of numba's "numba:compile" event records, in the order the
    compiles started (a kernel before the callees its typing compiles)."""
    entries = (entry(ev.data["dispatcher"], ev.data["args"])
               for _, ev in records if ev.is_start)
    return [e for e in entries if e is not None]


@functools.cache
def manifest():
    """``{key: [entry, ...]}`` of :data:`MANIFEST`; empty if it is missing or unreadable."""
    try:
        with open(MANIFEST) as fh:
            return json.load(fh)["paths"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _dispatcher(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj if isinstance(obj, Dispatcher) else None


def _signature(entry_):
    module, qualname, args = entry_
    return _dispatcher(module, qualname), tuple(decode(a) for a in args)


def in_cache(dispatcher, signature):
    """Whether numba's disk cache of ``dispatcher`` lists code for ``signature`` (folded
    argument types), read from its index without loading the code. Any failure of numba's
    internal API says no."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:
        return False


def compile_entries(entries):
    """Compile each entry, last first, into numba's disk cache (one in the cache is
    loaded, not compiled). An entry that no longer names a kernel, or whose types it
    refuses, is passed over. Returns the number compiled or loaded."""
    done = 0
    for e in reversed(entries):
        try:
            dispatcher, signature = _signature(e)
            if dispatcher is not None and signature not in dispatcher.overloads:
                dispatcher.compile(signature)
                done += 1
        except Exception:  # a stale entry: the run compiles what it needs itself
            continue
    return done


def _cold(entries):
    """Whether the last of ``entries`` (the helper's first) is missing from the cache."""
    try:
        dispatcher, signature = _signature(entries[-1])
    except Exception:
        return False
    return dispatcher is not None and not in_cache(dispatcher, signature)


_running = []  # the helper of the outermost compiling_ahead in this process, if any
_warm = set()  # keys whose kernels were found in the cache: they stay there


def helps():
    """Whether a helper may start here: not turned off, more than one core, and
    :data:`HELPER_ROOM` free."""
    return (os.environ.get(ENV) != "0" and cores() >= 2
            and available_memory_bytes() >= HELPER_ROOM)


@contextlib.contextmanager
def compiling_ahead(*keys):
    """Inside, a helper process compiles the kernels of the paths ``keys`` (the module
    docstring) from the last back, if the first key's last kernel is missing from the
    cache, the machine has more than one core and :data:`HELPER_ROOM` free, and no helper
    of this process runs."""
    if _running or not keys or keys[0] in _warm or not helps():
        yield
        return
    prepare()  # the cache's stale files removed before either process compiles
    entries = manifest().get(keys[0])
    if not entries or not _cold(entries):
        _warm.add(keys[0])
        yield
        return
    env = dict(os.environ, **{ENV: "0"})  # a helper starts no helper of its own
    # this process's package, however it was found (installed, or a folder on sys.path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (_PARENT, env.get("PYTHONPATH"))))
    helper = subprocess.Popen(
        [sys.executable, "-m", __name__, *keys], env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _running.append(helper)
    try:
        yield
    finally:
        _running.pop()
        helper.terminate()
        helper.wait()


@contextlib.contextmanager
def turned_off():
    """Inside, no helper starts, in this process or in the processes it starts."""
    before = os.environ.get(ENV)
    os.environ[ENV] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[ENV]
        else:
            os.environ[ENV] = before


def main(keys):
    prepare()
    paths = manifest()
    for key in keys:
        compile_entries(paths.get(key, []))


if __name__ == "__main__":
    main(sys.argv[1:])
