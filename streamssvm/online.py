"""Incremental training: SGD or Pegasos fed one store or one batch after another.

An :class:`OnlineTrainer` keeps the SGD state (weights, step count, average, random
generator) between ``partial_fit`` calls and saves it to one ``.npz`` file, so a stream that
never ends can be learnt piece by piece, and a stopped job resumed where it was.
"""

import json
import os

import numpy as np

from ._atomic import open_output
from ._interrupt import interrupts_after_compiling
from ._json import json_default
from ._npz import json_object, read_npz
from ._runtime import prepare
from .api import open_source
from .data import InMemorySource
from .errors import ModelFileError
from .model import Model
from .losses import get_loss
from .objective.smooth_svm import SmoothSVMObjective, check_lam, check_threads
from .solvers.common import check_seed
from .solvers.sgd import (RATE_OPTIONS, SGDState, Schedule, check_delay_and_hogwild,
                          check_schedule, sgd_epoch)

STATE_FORMAT = "streamssvm.online-state"


class OnlineTrainer:
    """SGD (``solver="sgd"``) or Pegasos (``"pegasos"``) on
    lam/2 ||w||^2 + E psi(y w.x), one ``partial_fit`` at a time.

    Parameters
    ----------
    loss : str or Loss
        Any loss name of :func:`streamssvm.losses.get_loss` (default the hinge).
    sigma : float, optional
    lam : float
    solver : {"sgd", "pegasos"}
    learning_rate : str, optional
        SGD's schedule (default "optimal"; Pegasos always uses 1 / (lam t)); see
        :class:`~streamssvm.solvers.sgd.Schedule`.
    eta0 : float, optional
        The step of the "constant" and "invscaling" schedules (default 0.01); refused with
        the others.
    power_t : float, optional
        The exponent of the "invscaling" schedule (default 0.5); refused with the others.
    average : bool or int
        Averaged SGD, from step 1 or from step ``average``.
    project : bool, optional
        Pegasos' projection (default: on for Pegasos, off for SGD).
    fit_intercept : bool
    intercept_scaling : float
    delay : int
        0: serial SGD, on one thread; K > 0: SGD with updates delayed by up to K - 1 steps,
        on two threads (see :func:`streamssvm.solvers.sgd`).
    hogwild : bool
        The steps on all threads at once, on the one v, without locks (Hogwild!; see
        :func:`streamssvm.solvers.sgd`): not reproducible to the bit on several threads.
        Not with an intercept.
    seed : int or None
        None: fresh entropy (a saved state keeps where its generator is).
    n_threads : int, optional
        Threads (default numba's): with two and a delay, the dot products of an epoch
        are shared between them, the steps the same on one thread or two; with
        ``hogwild``, the steps.
    """

    def __init__(self, loss="hinge", sigma=None, lam=1e-5, solver="sgd", learning_rate=None,
                 eta0=None, power_t=None, average=False, project=None, fit_intercept=False,
                 intercept_scaling=1.0, delay=0, hogwild=False, seed=0, n_threads=None):
        prepare()
        if solver not in ("sgd", "pegasos"):
            raise ValueError(f"solver must be 'sgd' or 'pegasos', got {solver!r}")
        pegasos = solver == "pegasos"
        project = pegasos if project is None else bool(project)
        check_delay_and_hogwild(delay, project, hogwild, fit_intercept)
        get_loss(loss, sigma)  # refused now, not at the first partial_fit
        self.options = dict(
            loss=loss if isinstance(loss, str) else loss.spec, sigma=sigma, lam=check_lam(lam),
            solver=solver, learning_rate="pegasos" if pegasos else (learning_rate or "optimal"),
            eta0=None if eta0 is None else float(eta0),
            power_t=None if power_t is None else float(power_t), average=average,
            project=project, fit_intercept=bool(fit_intercept),
            intercept_scaling=float(intercept_scaling), delay=int(delay),
            hogwild=bool(hogwild), seed=check_seed(seed))
        o = self.options  # refused now, not at the first partial_fit
        check_schedule(o["learning_rate"], o["eta0"], o["power_t"], o["fit_intercept"])
        self.n_threads = check_threads(n_threads)
        self.rng = np.random.default_rng(seed)
        self.sgd_state = None
        self.classes = None
        self.epochs = 0
        self.rows_seen = 0

    def _objective(self, source):
        o = self.options
        return SmoothSVMObjective(source, o["loss"], o["lam"], sigma=o["sigma"],
                                  fit_intercept=o["fit_intercept"],
                                  intercept_scaling=o["intercept_scaling"],
                                  n_threads=self.n_threads)

    @interrupts_after_compiling()
    def partial_fit(self, data, y=None, classes=None, epochs=1):
        """Run ``epochs`` epochs of steps over ``data`` (a store path, a block source, or a
        matrix with labels ``y``), continuing from the state of the previous calls.

        ``classes`` (two label values, negative class first) is needed on the first call
        when its ``y`` does not hold both (refused without); later batches are read with
        the classes of the first. Classes other than the trainer's (or a store's) are
        refused.
        """
        if not (isinstance(epochs, (int, np.integer)) and epochs >= 1):
            raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
        if y is not None and not isinstance(data, (str, os.PathLike)):
            known = classes if self.classes is None else self.classes
            data = InMemorySource(data, y, classes=known)
            if known is None and min(data.class_counts()) == 0:  # it took (-1, 1) for them
                raise ValueError(f"{data.name}: the first batch's y holds only the label "
                                 f"{float(np.asarray(y)[0]):g}: pass classes=(negative label, "
                                 f"positive label) with it")
            y = None
        with open_source(data, y) as source:
            known = self.classes or tuple(source.classes)
            given = None if classes is None else tuple(float(c) for c in classes)
            if given not in (None, known):
                owner = "the trainer's are" if self.classes else "its classes are"
                raise ValueError(f"{source.name}: classes {given} given, but {owner} {known}: "
                                 f"leave classes out, or start a new trainer")
            objective = self._objective(source)
            if self.sgd_state is not None and source.n_features != self.sgd_state.n_features:
                raise ValueError(f"{source.name} has {source.n_features} features, the trainer "
                                 f"{self.sgd_state.n_features}")
            if self.sgd_state is not None and tuple(source.classes) != self.classes:
                raise ValueError(f"{source.name} has classes {tuple(source.classes)}, the "
                                 f"trainer {self.classes}")
            o = self.options
            schedule = Schedule(objective, o["learning_rate"], o["eta0"], o["power_t"],
                                o["project"])
            if self.sgd_state is None:
                self.classes = tuple(source.classes)
                self.sgd_state = SGDState(source.n_features, o["fit_intercept"], o["average"],
                                          o["delay"], o["hogwild"])
            for _ in range(epochs):
                sgd_epoch(objective, self.sgd_state, schedule, self.rng)
            if not self._finite():  # once a call, not a step: one read of w
                raise FloatingPointError(
                    f"{o['solver']} diverged: the weights are not finite after this call's "
                    f"epochs (a step too large for the data: lower the step size or its "
                    f"schedule's start); the trainer cannot go on")
            self.epochs += epochs
            self.rows_seen += epochs * source.n_samples
        return self

    def _finite(self):
        st = self.sgd_state
        return all(np.all(np.isfinite(a)) for a in (st.v, st.avg_u, st.state))

    def model(self):
        """The current :class:`~streamssvm.model.Model` (the averaged weights when averaging)."""
        if self.sgd_state is None:
            raise ValueError("partial_fit has not been called yet")
        if not self._finite():
            raise ValueError("the trainer's state holds NaN or infinite values (it diverged)")
        w = self.sgd_state.weights()
        fit_intercept = self.options["fit_intercept"]
        coef = w[:-1] if fit_intercept else w
        intercept = w[-1] * self.options["intercept_scaling"] if fit_intercept else 0.0
        params = dict(self.options, epochs=self.epochs, rows_seen=self.rows_seen,
                      steps=self.sgd_state.steps)
        return Model(coef.copy(), intercept, self.classes, params)

    def save(self, path, overwrite=True):
        """Write the whole state (resumable with :meth:`load`) atomically to ``path``."""
        if self.sgd_state is None:
            raise ValueError("partial_fit has not been called yet")
        if not self._finite():  # load would refuse it: the file keeps the last good state
            raise ValueError(f"{path}: not written: the trainer's state holds NaN or infinite "
                             f"values (it diverged)")
        st = self.sgd_state
        meta = dict(format=STATE_FORMAT, options=self.options, classes=self.classes,
                    epochs=self.epochs, rows_seen=self.rows_seen,
                    rng=self.rng.bit_generator.state)
        with open_output(path, "wb", overwrite=overwrite) as f:
            np.savez(f, v=st.v, avg_u=st.avg_u, state=st.state,
                     meta=json.dumps(meta, default=json_default))

    @classmethod
    def load(cls, path, n_threads=None):
        """An OnlineTrainer from a file written by :meth:`save`, on ``n_threads`` threads
        (the machine's, not the state's: the steps are the same on any number, but with
        ``hogwild``). A path that cannot be opened raises open()'s OSError; any other file
        that is no state, or a damaged one, a :class:`~streamssvm.errors.ModelFileError`."""
        n_threads = check_threads(n_threads)  # the caller's, not the file's
        meta, members = read_npz(path, ModelFileError, "an online trainer state")
        try:
            if json_object(meta).get("format") != STATE_FORMAT:
                raise ValueError(f"format {meta.get('format')!r}")
            arrays = {k: members[k].astype(np.float64) for k in ("v", "avg_u", "state")}
            if not all(np.all(np.isfinite(a)) for a in arrays.values()):
                raise ValueError("the state holds NaN or infinite values")
            classes = np.asarray(meta["classes"], dtype=np.float64)
            if classes.shape != (2,) or classes[0] == classes[1] or not np.all(
                    np.isfinite(classes)):
                raise ValueError(f"classes {meta['classes']!r} are not two distinct finite "
                                 f"numbers")
            counts = (meta["epochs"], meta["rows_seen"])
            if not all(isinstance(c, int) and c >= 0 for c in counts):
                raise ValueError(f"epochs, rows_seen {counts} are not non-negative integers")
            options = meta["options"]
            # older states hold eta0's and power_t's old defaults with every schedule
            for name, (_, schedules, _) in RATE_OPTIONS.items():
                if options.get("learning_rate") not in schedules:  # unused there
                    options[name] = None
            trainer = cls(**options, n_threads=n_threads)
            trainer.classes = tuple(classes.tolist())
            trainer.epochs, trainer.rows_seen = counts
            trainer.rng.bit_generator.state = meta["rng"]
            o = trainer.options
            st = SGDState(len(arrays["v"]), o["fit_intercept"], o["average"], o["delay"],
                          o["hogwild"])
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise ModelFileError(f"{path}: not an online trainer state ({exc})") from exc
        try:
            st.restore(arrays, f"{path}: damaged online trainer state")
        except ValueError as exc:
            raise ModelFileError(str(exc)) from None
        trainer.sgd_state = st
        return trainer
