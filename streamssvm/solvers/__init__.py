"""Solvers: they see only the objective's oracle (:mod:`streamssvm.objective.oracle`), and
the stochastic ones an epoch source of the data plan (:mod:`streamssvm.data.plan`).
Second order: TRON, line-search Newton, L-BFGS; full gradient: GD, AGD; stochastic
(``max_iter`` counts epochs): SGD, Pegasos, SVRG, SAGA, SDCA. Each module registers its
solver's record (:mod:`.registry`); the lists below are views of the records."""

from importlib import import_module

from .registry import (HESSIAN_PRODUCTS, SOLVERS, STOCHASTIC, Option, SolverRecord, record,
                       records, register)

# the modules of the built-in solvers, in the order of SOLVERS (auto's narrowing by options
# takes the first that fits): adding a solver is a module with its RECORDS, and its name here
BUILT_IN = ("tron", "newton", "lbfgs", "gd", "agd", "sgd", "svrg", "saga", "sdca")
for _module in BUILT_IN:
    for _record in import_module(f".{_module}", __name__).RECORDS:
        register(_record)

from .agd import agd  # noqa: E402  (the modules are imported by now)
from .auto import choose_solver  # noqa: E402
from .common import ConvergenceWarning, SolverResult  # noqa: E402
from .gd import gd  # noqa: E402
from .lbfgs import lbfgs  # noqa: E402
from .newton import newton  # noqa: E402
from .saga import saga  # noqa: E402
from .sdca import sdca  # noqa: E402
from .sgd import pegasos, sgd  # noqa: E402
from .svrg import svrg  # noqa: E402
from .tron import tron  # noqa: E402

__all__ = ["HESSIAN_PRODUCTS", "SOLVERS", "STOCHASTIC", "ConvergenceWarning", "Option",
           "SolverRecord", "SolverResult", "agd", "choose_solver", "gd", "lbfgs", "newton",
           "pegasos", "record", "records", "register", "saga", "sdca", "sgd", "svrg", "tron"]
