"""Reading the library's own ``.npz`` files (models, trainer states, checkpoints)."""

import zipfile

import numpy as np


def load_npz(path):
    """``np.load`` of the ``.npz`` archive at ``path``, without pickles. Any other file is a
    ValueError: numpy reads it as a pickle and suggests allow_pickle=True, which no file of
    ours needs and which runs a stranger's code."""
    with open(path, "rb") as f:
        if not zipfile.is_zipfile(f):
            raise ValueError("not an .npz archive: truncated, or another kind of file")
    return np.load(path, allow_pickle=False)
