"""How much memory this process may still use: the machine's and its cgroup's limit."""

import os


def _read_int(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_headroom():
    """Limit minus usage of this process's memory cgroup (v2 or v1), or None."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2
            base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
            limit, usage = _read_int(base + "/memory.max"), _read_int(base + "/memory.current")
        elif "memory" in controllers.split(","):
            base = os.path.join("/sys/fs/cgroup/memory", path.lstrip("/"))
            limit = _read_int(base + "/memory.limit_in_bytes")
            usage = _read_int(base + "/memory.usage_in_bytes")
        else:
            continue
        if limit is not None and usage is not None and limit < 1 << 60:
            return max(limit - usage, 0)
    return None


def available_memory_bytes():
    """Bytes this process can still allocate without swapping or hitting its cgroup cap."""
    available = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except OSError:
        pass
    headroom = _cgroup_headroom()
    candidates = [v for v in (available, headroom) if v is not None]
    return min(candidates) if candidates else 1 << 30
