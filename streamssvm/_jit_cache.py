"""Keep numba's on-disk cache coherent across edits of this package, one module at a time.

numba keys a cached function on its own source file and bytecode only. Its compiled code
also holds what it took from other modules when it was compiled: the jitted functions it
calls (linked in, most of them inlined) and the constants it reads (frozen into the code).
When only such another file changes, numba keeps the cached kernel, which then runs the old
callee or the old constant.

So each module that caches kernels (a *kernel module*: ``cache=True``) has *dependencies*:
the other package files whose contents its compiled code can see. A stamp beside the
module's cache files (in whichever folder numba caches it: ``__pycache__``,
``NUMBA_CACHE_DIR`` or the user's cache) records the digest of the module and of each
dependency. At import, a kernel module whose dependencies changed since its stamp was
written has its cache files removed; numba then recompiles that module's kernels, once,
and no other. A change of the module itself is numba's own business (its index is keyed
on the file; the files of functions moved or removed, which numba leaves, are removed
here), and an edit to a file that no kernel module depends on (the command line, the
solvers, the objective) recompiles nothing.

Dependencies, from the imports: a name a module imports from the package is a dependency
on the file it comes from (the submodule itself for ``from . import codec``) if code that
numba compiles or that runs at import reads it: module-level statements, class bodies,
decorated functions (kernels, intrinsics) and the functions such code names. The bodies
of other functions (plain Python, which numba never sees) do not count. A dependency's
own dependencies count too, by the same rule, transitively.

When a kernel is missing from the cache, :func:`watching_compiles` says so and measures
the compile (the command line's notice, the converter's throughput, ``streamssvm warmup``).
"""

import ast
import contextlib
import hashlib
import importlib
import json
import os
import sys
import threading
import time

from numba.core import event
from numba.core.dispatcher import Dispatcher

_ROOT = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = __name__.rpartition(".")[0]
_STAMP = ".streamssvm-deps.json"  # after the module's name, beside its cache files


def _path(rel):
    return os.path.join(_ROOT, rel)


def _module_file(parts):
    """The package file (relative path) of the module named by ``parts`` below the
    package, or None if there is none."""
    for rel in (os.path.join(*parts) + ".py" if parts else None,
                os.path.join(*parts, "__init__.py") if parts else "__init__.py"):
        if rel and os.path.isfile(_path(rel)):
            return rel
    return None


def _module_level(body):
    """The statements of ``body`` that run when the module is imported, nested blocks
    (if, try, with) opened."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)


def _imported(rel, tree):
    """{name bound by an import of the package: the file it comes from}, and the files
    of star imports."""
    folder = os.path.dirname(rel)
    here = folder.split(os.sep) if folder else []
    names, star = {}, set()
    for node in _module_level(tree.body):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1] if node.level > 1 else here
                parts = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == _PACKAGE:
                parts = node.module.split(".")[1:]
            else:
                continue
            source = _module_file(parts)
            for alias in node.names:
                if alias.name == "*":
                    star.add(source)
                    continue
                names[alias.asname or alias.name] = _module_file(parts + [alias.name]) or source
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == _PACKAGE:  # ``import streamssvm.x as y`` binds y to x
                    names[alias.asname or _PACKAGE] = _module_file(
                        parts[1:] if alias.asname else [])
    names = {name: source for name, source in names.items() if source}
    return names, star - {None}


def _compiled_names(tree):
    """The names read by code that numba compiles or that runs at import (above)."""
    functions, seen, todo = {}, set(), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, []).append(node)

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
            return  # a plain function: only if some compiled code names it (below)
        if isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            todo.extend(functions.get(node.id, ()))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    while todo:
        for child in ast.iter_child_nodes(todo.pop()):
            visit(child)
    return seen


def _direct_dependencies(rel):
    tree = ast.parse(open(_path(rel), "rb").read(), _path(rel))
    names, star = _imported(rel, tree)
    return {names[n] for n in _compiled_names(tree) if n in names} | star


def dependencies(rel, direct=None):
    """The package files (paths relative to the package) whose contents the compiled
    code of module ``rel`` can see, itself left out. ``direct``: a dict that keeps each
    file's direct dependencies for the next call."""
    direct = {} if direct is None else direct
    found, todo = set(), [rel]
    while todo:
        module = todo.pop()
        if module not in direct:
            direct[module] = _direct_dependencies(module)
        for dep in direct[module]:
            if dep not in found and dep != rel:
                found.add(dep)
                todo.append(dep)
    return found


def kernel_modules():
    """The package's modules that cache numba functions (relative paths, sorted)."""
    found = []
    for folder, _, files in os.walk(_ROOT):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and path != os.path.abspath(__file__):
                with open(path, "rb") as fh:
                    if b"cache=True" in fh.read():
                        found.append(os.path.relpath(path, _ROOT))
    return sorted(found)


def _module_name(rel):
    parts = os.path.splitext(rel)[0].split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([_PACKAGE] + parts)


def cached_functions(module):
    """The functions of ``module`` that numba caches on disk (their dispatchers): those
    bound in the module and those a kernel compiled twice holds (its ``dispatchers``,
    ``kernels._twins``)."""
    found = []
    for value in vars(module).values():
        for dispatcher in getattr(value, "dispatchers", (value,)):
            if (isinstance(dispatcher, Dispatcher)
                    and dispatcher.py_func.__module__ == module.__name__
                    and dispatcher.stats.cache_path):
                found.append(dispatcher)
    return found


def cache_files(folder, rel):
    """The names of numba's index and data files of module ``rel`` in ``folder``."""
    prefix = os.path.splitext(os.path.basename(rel))[0] + "."
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(prefix) and n.endswith((".nbi", ".nbc")))


class _Digests(dict):
    """sha256 of each package file's contents, read once (None: the file is gone)."""

    def __missing__(self, rel):
        try:
            with open(_path(rel), "rb") as fh:
                value = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            value = None
        self[rel] = value
        return value


def _refresh(rel, functions, digests, direct):
    """Remove module ``rel``'s cache files if its dependencies changed since its stamp was
    written (or it has none), else, if the module itself changed, the files of functions it
    no longer has (numba names a function's files by its name and first line: a moved or
    removed function leaves files no run reads); write the stamp. ``functions``: the
    module's cached functions. Returns whether the module's files were all removed."""
    folder = functions[0].stats.cache_path
    base = os.path.splitext(os.path.basename(rel))[0]
    stamp = os.path.join(folder, base + _STAMP)
    try:
        with open(stamp) as fh:
            recorded = json.load(fh)["files"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if recorded and all(digests[f] == digest for f, digest in recorded.items()):
        return False
    files = {f: digests[f] for f in sorted(dependencies(rel, direct) | {rel})}
    others = {f: digest for f, digest in files.items() if f != rel}
    stale = recorded is None or others != {f: d for f, d in recorded.items() if f != rel}
    live = () if stale else tuple(
        f"{base}.{f.py_func.__qualname__.replace('<', '').replace('>', '')}-"
        f"{f.py_func.__code__.co_firstlineno}." for f in functions)
    for name in cache_files(folder, rel):
        if not name.startswith(live):
            os.unlink(os.path.join(folder, name))
    tmp = f"{stamp}.{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump({"module": rel, "files": files}, fh, indent=0)
    os.replace(tmp, stamp)
    return stale


def clear_stale_cache():
    """Remove the cache files of each kernel module whose dependencies changed since its
    cache was written (the module docstring). Imports the kernel modules; call it before
    any kernel runs. Returns the modules whose files were removed."""
    digests, direct, cleared = _Digests(), {}, []
    for rel in kernel_modules():
        functions = cached_functions(importlib.import_module(_module_name(rel)))
        try:
            if functions and _refresh(rel, functions, digests, direct):
                cleared.append(rel)
        except OSError:  # a cache folder we cannot write: numba cannot either
            pass
    return cleared


class CompileWatch(event.Listener):
    """numba's compiles while installed by :func:`watching_compiles`: ``kernels``, the
    package's functions compiled (``module.name``, once per specialization, callees
    included), and ``seconds``, the wall time of the outermost compiles (of any code),
    kernels loaded from the cache not included."""

    def __init__(self, notice=None):
        self.notice = notice
        self.kernels = []
        self.seconds = 0.0
        self._depth = {}  # per thread: SDCA's evaluations compile in a thread of their own
        self._start = {}

    def on_start(self, ev):
        thread = threading.get_ident()
        if not self._depth.get(thread):
            self._start[thread] = time.perf_counter()
        self._depth[thread] = self._depth.get(thread, 0) + 1
        func = ev.data["dispatcher"].py_func
        if func.__module__.startswith(_PACKAGE + "."):
            if self.notice and not self.kernels:
                print(self.notice, file=sys.stderr, flush=True)
            self.kernels.append(f"{func.__module__[len(_PACKAGE) + 1:]}.{func.__qualname__}")

    def on_end(self, ev):
        thread = threading.get_ident()
        self._depth[thread] -= 1
        if not self._depth[thread]:
            self.seconds += time.perf_counter() - self._start.pop(thread)


@contextlib.contextmanager
def watching_compiles(notice=None):
    """Inside, a :class:`CompileWatch` (yielded) records numba's compiles; ``notice``, if
    given, is printed to stderr (one line) when the first of the package's kernels starts
    compiling, that is when one is missing from the cache."""
    watch = CompileWatch(notice)
    with event.install_listener("numba:compile", watch):
        yield watch
