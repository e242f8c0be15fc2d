"""Reading the library's own ``.npz`` files (models, trainer states, checkpoints)."""

import json
import zipfile

import numpy as np

from ._atomic import OPEN_ERRORS


def read_npz(path, error, what):
    """``(meta, arrays)`` of the ``.npz`` archive at ``path``: ``meta`` the JSON value of its
    member ``meta``, ``arrays`` every other member, all read (and checked by zip's CRC) here.

    Pickles are never loaded: numpy reads any other file as one and suggests
    allow_pickle=True, which runs a stranger's code. A path that cannot be opened raises
    open()'s OSError; any other failure (not a zip archive, a damaged member, a header
    numpy cannot parse, meta that is not JSON) raises ``error`` (an exception
    class) with "PATH: not WHAT (why)", ``what`` with its article."""
    try:
        with open(path, "rb") as fh:
            if not zipfile.is_zipfile(fh):
                raise ValueError("not an .npz archive: truncated, or another kind of file")
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as z:
                members = {name: z[name] for name in z.files}
        meta = json.loads(str(members.pop("meta")))
    except OPEN_ERRORS:
        raise
    except Exception as exc:  # zipfile, numpy's header parser, json: the file's fault
        raise error(f"{path}: not {what} ({exc or type(exc).__name__})") from exc
    return meta, members


def json_object(meta):
    """``meta`` if it is a JSON object (a dict), else a ValueError saying what it is."""
    if not isinstance(meta, dict):
        raise ValueError(f"meta {json.dumps(meta)[:40]} is not a JSON object")
    return meta
