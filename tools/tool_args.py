"""What the tools share: argparse types, with which an input path is checked when the
arguments are parsed, so that a wrong one ends in ``error: argument NAME: ...`` (exit 2), not
in a traceback; and the environment of their child Pythons."""

import argparse
import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# run-capped (a command under a memory cap, page cache included) and evict (files out of the
# page cache), for the out-of-core benchmarks and tests
BIN = os.path.join(REPO_ROOT, "tools", "bin")


def repo_env():
    """This process's environment with the repository root first on PYTHONPATH: a child
    Python imports the repository's streamssvm, as the tools do (the root first on
    ``sys.path``), not an installed one."""
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=REPO_ROOT + (os.pathsep + path if path else ""))


def existing_file(path):
    """``path`` if it is a file; else an error naming it."""
    if not os.path.isfile(path):
        what = "a folder, not a file" if os.path.isdir(path) else "no such file"
        raise argparse.ArgumentTypeError(f"{what}: {path!r}")
    return path


def existing_store(path):
    """``path`` if it is a file that opens as a store; else an error naming it (a
    StoreError's message starts with the path and says what is wrong)."""
    # imported here: the tools without a store argument (make_news20) do not need the package
    from streamssvm.data.store import Store, StoreError

    try:
        Store(existing_file(path)).close()
    except (StoreError, OSError) as exc:  # e.g. unreadable: Store words it as open() does
        raise argparse.ArgumentTypeError(str(exc)) from None
    return path
