"""Keep numba's on-disk cache coherent across edits of this package.

numba invalidates a cached function only when the file defining it changes; a kernel that
calls a loss from another module would silently keep the old loss. At import, if any
source file of the package changed since the cache was written, this package's cache files
are removed (numba then recompiles once).
"""

import hashlib
import os

_ROOT = os.path.dirname(os.path.abspath(__file__))
_STAMP = os.path.join(_ROOT, "__pycache__", "numba-sources.stamp")


def _sources_digest():
    digest = hashlib.sha256()
    for folder, _, names in sorted(os.walk(_ROOT)):
        for name in sorted(n for n in names if n.endswith(".py")):
            st = os.stat(os.path.join(folder, name))
            digest.update(f"{os.path.relpath(folder, _ROOT)}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def clear_stale_cache():
    """Remove the package's numba cache files if its sources changed since the last run."""
    digest = _sources_digest()
    try:
        with open(_STAMP) as fh:
            if fh.read() == digest:
                return
    except OSError:
        pass
    try:
        for folder, _, names in os.walk(_ROOT):
            for name in names:
                if name.endswith((".nbi", ".nbc")):
                    os.unlink(os.path.join(folder, name))
        os.makedirs(os.path.dirname(_STAMP), exist_ok=True)
        tmp = f"{_STAMP}.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(digest)
        os.replace(tmp, _STAMP)
    except OSError:  # read-only install: numba caches elsewhere, keyed by unchanged files
        pass
