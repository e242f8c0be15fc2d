"""Checkpoints: a solver's whole state written atomically every so often, and resumed.

A checkpoint is one ``.npz`` file (read with ``allow_pickle=False``): the solver's arrays
(``w``, and e.g. SGD's ``v``, SDCA's dual variables) and ``meta``, a JSON string with the
iteration, the history, the pass count, solver scalars (TRON's trust radius), the random
generator's state, the message of a run that stopped by the solver's own rule
(``stopped``: e.g. TRON's reductions too small, a failed line search; ``finished``: SDCA's
duality gap), and the description of the training it belongs to (``problem``: data, loss,
lambda, solver and its options). A resumed run starts from exactly that state, so it ends
at the same model as an uninterrupted one: the same iterates for TRON, the same steps for
SGD with the same seed (but Hogwild's on several threads, which no run repeats to the bit);
a stopped run's returns at once. (One exception, to rounding:
TRON resumed from a checkpoint written just after a rejected step solves the smaller
region again, where the uninterrupted run, if its products read the file, took the step
from the kept CG path; see ``reuse_cg``.)
"""

import json
import os
import time

import numpy as np

from .._atomic import atomic_output, check_output
from .._json import json_default
from .._npz import read_npz
from ..errors import CheckpointError

CHECKPOINT_FORMAT = "streamssvm.checkpoint"


def check_every(every):
    """Refuse seconds between checkpoints (``checkpoint_every``) that are not >= 0."""
    if not every >= 0:
        raise ValueError(f"checkpoint every must be >= 0 seconds, got {every}")


class Checkpoint:
    """Where and how often to checkpoint, and what training the file must belong to.

    Parameters
    ----------
    path : str or path-like
    every : float
        Seconds between two checkpoints (0: after every iteration or epoch).
    problem : dict
        JSON-serialisable description of the training; a file written for another one is
        refused rather than resumed.
    held : callable, optional
        Says whether the objective holds the data in memory (``objective.data.holds_data``),
        written with each checkpoint: held and streamed data sum in other orders, so a
        resumed run must do as the checkpoint's did to end at its model
        (:meth:`recorded_hold`).
    """

    def __init__(self, path, every=60.0, problem=None, held=None):
        check_every(every)
        # a directory, none to write in, a pipe: before the run
        check_output(path, overwrite=True, regular=True)
        self.path, self.every = os.fspath(path), float(every)
        self.problem = json.loads(json.dumps(problem or {}, default=json_default))
        self.held = held
        self._last = time.monotonic()

    def recorded_hold(self):
        """Whether the run that wrote the file held the data (None: no file, or not
        recorded); read before :meth:`load`, whose checks come with the solver's start."""
        try:
            meta = read_npz(self.path, CheckpointError, "a readable checkpoint")[0]
        except (OSError, CheckpointError):
            return None  # no file, or one load() refuses with its reason
        held = meta.get("held") if isinstance(meta, dict) else None
        return held if isinstance(held, bool) else None

    def load(self):
        """``(meta, arrays)`` of the file, or None if there is none. A file that is not a
        checkpoint of this training, or a damaged one, raises
        :class:`~streamssvm.errors.CheckpointError`."""
        if not os.path.exists(self.path):
            return None
        meta, arrays = read_npz(self.path, CheckpointError, "a readable checkpoint")
        if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(f"{self.path}: not a streamssvm checkpoint")
        if meta.get("problem") != self.problem:
            theirs = meta.get("problem", {})
            keys = sorted(k for k in set(theirs) | set(self.problem)
                          if theirs.get(k) != self.problem.get(k))
            raise CheckpointError(f"{self.path}: checkpoint of another training (differs in "
                             f"{', '.join(keys)}); remove it or train with its settings")
        names = meta.get("arrays", sorted(arrays))  # not recorded by older versions
        if names != sorted(arrays):
            raise CheckpointError(f"{self.path}: damaged checkpoint (arrays {sorted(arrays)}, "
                                  f"written with {names})")
        damaged = [k for k, a in arrays.items()
                   if a.dtype.kind == "f" and not np.all(np.isfinite(a))]
        if damaged:  # no solver's state holds them: TRON would reject steps forever
            raise CheckpointError(f"{self.path}: damaged checkpoint ({', '.join(damaged)} holds "
                             f"NaN or infinite values)")
        return meta, arrays

    def save(self, state, arrays, force=False):
        """Write ``state`` (JSON-serialisable dict) and ``arrays`` if ``every`` seconds have
        passed since the last write (or ``force``)."""
        now = time.monotonic()
        if not force and now - self._last < self.every:
            return
        meta = dict(format=CHECKPOINT_FORMAT, problem=self.problem, arrays=sorted(arrays),
                    **state)
        if self.held is not None:
            meta["held"] = bool(self.held())
        with atomic_output(self.path, overwrite=True) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, meta=json.dumps(meta, default=json_default), **arrays)
        self._last = time.monotonic()
