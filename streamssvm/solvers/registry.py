"""One record per solver, from which everything that lists solvers is derived.

A solver is a function ``solve(objective, w0=None, tol=..., abs_tol=None,
liblinear_tol=False, max_iter=..., <options>, progress=False[, checkpoint=None])``
returning a :class:`~streamssvm.solvers.common.SolverResult`, and one
:class:`SolverRecord` passed to :func:`register` (its module does it, beside the function).
From the records come :data:`SOLVERS` and the kind views, ``train_stream``'s checks and
error messages, ``solver="auto"``'s narrowing by options, the command line's ``--solver``
choices and its solver flags, and ``SmoothSVC``'s checks: nothing else lists solvers.

:func:`register` refuses a record that disagrees with its function (an option the
function does not take, a default other than the function's, a checkpoint it has no
parameter for), so that a record cannot drift from the code it describes.
"""

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .common import check_max_seconds, check_seed, check_step

# what every solver takes from train_stream itself, not as a solver option
COMMON_PARAMETERS = ("w0", "tol", "abs_tol", "liblinear_tol", "max_iter", "progress")
KINDS = ("second_order", "full_gradient", "stochastic")


@dataclass(frozen=True)
class Option:
    """A solver option: the keyword ``name`` of the solver function, the ``type`` of its
    values, its ``default`` (the function's), what it does (``help``), and the command
    line's ``flag`` that sets it (None: only through the API). Options that several
    solvers share (``seed``, ``max_seconds``) are one object. A flag sets, for the solver
    run, its option with that flag (``--step``: saga's and svrg's ``step``, sgd's
    ``eta0``); its help is that of the option named as the flag, else of the first.

    ``check`` (a function raising ValueError on a bad value) and ``expected`` (what a good
    value is, for the command line's error) check a flag's value as argparse reads it;
    ``choices`` are its values when they are a few names. A bool option's flag is a switch.
    """

    name: str
    type: type
    default: object
    help: str
    flag: str = None
    check: object = None
    expected: str = None
    choices: tuple = None
    metavar: str = None


@dataclass(frozen=True)
class SolverRecord:
    """What the rest of the package knows of a solver.

    Parameters
    ----------
    name : str
        The name ``train_stream(solver=...)`` and ``--solver`` take.
    function : callable
        The solver (see the module docstring).
    kind : {"second_order", "full_gradient", "stochastic"}
        Stochastic solvers count epochs in ``max_iter``, take their rows from the
        objective's data plan (:meth:`~streamssvm.data.plan.DataPlan.epoch`), and read the
        blocks themselves: they run neither with row weights nor across Dask workers.
    options : tuple of Option
        Its options beyond :data:`COMMON_PARAMETERS`, ``checkpoint``.
    takes_checkpoint : bool
        It resumes from and writes a :class:`~streamssvm.solvers.checkpoint.Checkpoint`.
    uses_hessian_products : bool
        It calls the oracle's ``newton_system`` / ``hessp`` / ``hess_diag``: only then does
        the objective keep a copy of the curved rows.
    takes_kink : bool
        It converges on a loss whose slope jumps (the hinge): a subgradient or dual method.
    takes_intercept : bool
        It takes an unregularised intercept (SDCA's dual has none).
    takes_row_weights : bool, optional
        Default: all kinds but the stochastic one.
    """

    name: str
    function: object
    kind: str
    options: tuple = ()
    takes_checkpoint: bool = False
    uses_hessian_products: bool = False
    takes_kink: bool = False
    takes_intercept: bool = True
    takes_row_weights: bool = None
    option_names: frozenset = field(init=False, repr=False)

    def __post_init__(self):
        if self.takes_row_weights is None:
            object.__setattr__(self, "takes_row_weights", self.kind != "stochastic")
        object.__setattr__(self, "option_names", frozenset(o.name for o in self.options))

    @property
    def stochastic(self):
        return self.kind == "stochastic"

    @property
    def on_workers(self):
        """It runs on the oracle summed over Dask workers (it reads no blocks itself)."""
        return not self.stochastic

    @property
    def max_iter(self):
        """The function's default ``max_iter`` (iterations, or epochs)."""
        return inspect.signature(self.function).parameters["max_iter"].default

    def option(self, name):
        return next(o for o in self.options if o.name == name)


_RECORDS = {}


def register(record):
    """Add ``record`` (a :class:`SolverRecord`); a ValueError if it disagrees with its
    function or reuses a name. Returns the record's function (a module can end with
    ``solve = register(SolverRecord(...))``)."""
    if not isinstance(record, SolverRecord):
        raise TypeError(f"register takes a SolverRecord, got {type(record).__name__}")
    if record.name in _RECORDS or record.name == "auto":
        raise ValueError(f"a solver named {record.name!r} is already registered")
    if record.kind not in KINDS:
        raise ValueError(f"solver {record.name!r}: kind must be one of {', '.join(KINDS)}, "
                         f"got {record.kind!r}")
    parameters = inspect.signature(record.function).parameters
    missing = [name for name in COMMON_PARAMETERS if name not in parameters]
    if missing or ("max_iter" in parameters
                   and parameters["max_iter"].default is inspect.Parameter.empty):
        raise ValueError(f"solver {record.name!r}: its function must take "
                         f"{', '.join(COMMON_PARAMETERS)} (max_iter with a default); "
                         f"missing {', '.join(missing) or 'the default of max_iter'}")
    if record.takes_checkpoint != ("checkpoint" in parameters):
        raise ValueError(f"solver {record.name!r}: takes_checkpoint is {record.takes_checkpoint} "
                         f"but its function {'takes' if 'checkpoint' in parameters else 'has'} "
                         f"{'a' if 'checkpoint' in parameters else 'no'} checkpoint parameter")
    stated = {*COMMON_PARAMETERS, "checkpoint", *record.option_names}
    unstated = [name for name in list(parameters)[1:] if name not in stated]
    if unstated:
        raise ValueError(f"solver {record.name!r}: its function takes {', '.join(unstated)}, "
                         f"which its record does not list among its options")
    for option in record.options:
        if option.name not in parameters:
            raise ValueError(f"solver {record.name!r}: its function takes no option "
                             f"{option.name!r}")
        if parameters[option.name].default != option.default:
            raise ValueError(f"solver {record.name!r}: option {option.name!r} defaults to "
                             f"{option.default!r} in the record, "
                             f"{parameters[option.name].default!r} in the function")
    flags = [option.flag for option in record.options if option.flag]
    if len(set(flags)) != len(flags):
        raise ValueError(f"solver {record.name!r}: two of its options have one flag")
    _RECORDS[record.name] = record
    return record.function


def records():
    """The registered records, in the order of registration."""
    return tuple(_RECORDS.values())


def record(name):
    """The record of solver ``name``; a ValueError naming the known ones if unknown."""
    try:
        return _RECORDS[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: auto, {', '.join(_RECORDS)}") from None


def all_options():
    """Every solver's options, each object once, in the order of the records."""
    seen = {}
    for r in _RECORDS.values():
        for option in r.options:
            seen.setdefault(id(option), option)
    return tuple(seen.values())


def option_takers(name):
    """The names of the solvers that take the option ``name``."""
    return [r.name for r in _RECORDS.values() if name in r.option_names]


def names(predicate=None):
    """The names of the solvers whose record satisfies ``predicate`` (all: None)."""
    return tuple(n for n, r in _RECORDS.items() if predicate is None or predicate(r))


def listed(items, last="or"):
    """'a, b or c'."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def no_row_weights():
    """Why a solver refuses row weights (``sample_weight``, ``class_weight``), naming those
    that take them."""
    refusing = names(lambda r: not r.takes_row_weights)
    who = ("the stochastic solvers" if refusing == names(lambda r: r.stochastic)
           else f"the solvers {', '.join(refusing)}")
    return (f"{who} take no row weights (sample_weight, class_weight): use "
            f"{listed(names(lambda r: r.takes_row_weights))}")


def reads_blocks(name):
    """Why solver ``name`` does not run on the oracle summed over Dask workers."""
    return (f"solver {name!r} reads the blocks itself; with a Dask client use "
            f"{', '.join(names(lambda r: r.on_workers))}")


def check_on_workers(name):
    """Refuse solver ``name`` if it cannot run with a Dask client
    (:attr:`SolverRecord.on_workers`)."""
    if name in names(lambda r: not r.on_workers):
        raise ValueError(reads_blocks(name))


class _Names(Sequence):
    """A live tuple of the names of the records satisfying a predicate (a solver registered
    later appears in it)."""

    def __init__(self, predicate):
        self._predicate = predicate

    def __getitem__(self, index):
        return names(self._predicate)[index]

    def __len__(self):
        return len(names(self._predicate))

    def __contains__(self, name):
        return name in _RECORDS and self._predicate(_RECORDS[name])

    def __repr__(self):
        return repr(names(self._predicate))


class _Functions(Mapping):
    """A live mapping of the registered names to their functions."""

    def __getitem__(self, name):
        return _RECORDS[name].function

    def __iter__(self):
        return iter(_RECORDS)

    def __len__(self):
        return len(_RECORDS)

    def __repr__(self):
        return repr(dict(self))


SOLVERS = _Functions()
STOCHASTIC = _Names(lambda r: r.stochastic)
HESSIAN_PRODUCTS = _Names(lambda r: r.uses_hessian_products)


# options of several solvers
SEED = Option("seed", int, 0, "stochastic solvers: seed of the visiting order; newton: of "
              "the --hessian-sample (default 0)", "--seed", check_seed, "an integer >= 0")
MAX_SECONDS = Option("max_seconds", float, None,
                     "time budget: stop the solver after SECONDS, with the model reached "
                     "(one-vs-rest: each class's; with --sigma-path: the whole path's)",
                     "--max-seconds", check_max_seconds, "a number of seconds >= 0",
                     metavar="SECONDS")
STEP = Option("step", float, None, "saga / svrg step size (default 1/(3 or 4 L_max)); sgd: "
              "eta0 of the constant or invscaling schedule", "--step", check_step,
              "a positive finite number")
OVERLAP = Option("overlap", bool, True, "sdca / sgd / pegasos: evaluate beside the next "
                 "epoch when the data is held in memory and the kernels have two threads "
                 "or more")
MEMORY_LIMIT = Option("memory_limit", int, None, "bytes above which the vectors of one "
                      "number per row go to a temporary file")
