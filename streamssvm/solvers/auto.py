"""``solver="auto"``: the solver for a loss and the data's shape.

Dual coordinate ascent (SDCA; LIBLINEAR's default for the L2-SVM) pays when the data is
wide: it has one variable per row and its steps touch only a row, and near the hinge (a
kink or a sharp bend in psi') Newton needs many iterations. Line-search Newton pays on
tall data, where its Hessian has few directions. The boundary is

    n_features >= n_samples * min(WIDE, CURVED / sqrt(sup psi''))

(the sharper the loss, the narrower the data SDCA wins on; the hinge, always), fitted by
``tools/bench_auto.py`` over losses, lambdas and shapes from tall to wide.
"""

import math

from .registry import listed, names, record

WIDE = 10.0
CURVED = 0.5
# the solvers the rule below may return
CANDIDATES = ("tron", "newton", "sgd", "sdca")


def choose_solver(loss, n_samples, n_features, fit_intercept=False, weighted=False,
                  distributed=False):
    """The solver for ``solver="auto"``.

    SDCA on wide data, Newton on tall data (see the module docstring). When SDCA cannot run
    (an intercept, row weights, Dask workers), or converges slowly (psi'' unbounded, as the
    exponential loss's: its steps crawl): Newton, or SGD for a kinked loss (whose kink
    leaves Newton no gradient), which takes an intercept but neither row weights nor Dask
    workers: a ValueError then. TRON for a loss that is not convex (its trust region copes
    with negative curvature).
    """
    if not loss.convex:
        return "tron"
    dual = record("sdca")
    if (fit_intercept and not dual.takes_intercept) or weighted or distributed:
        if not loss.kinked:
            return "newton"
        if not (weighted or distributed):
            return "sgd"
        kink = names(lambda r: r.takes_kink)
        raise ValueError(f"the {loss.name} loss with {'row weights' if weighted else 'Dask'}: "
                         f"only {listed(kink, 'and')} take its kink, and none takes "
                         f"{'them' if weighted else 'Dask workers'}; use a smooth hinge "
                         f"(psi_g, psi_m)")
    if loss.smooth and not math.isfinite(loss.lipschitz):  # psi'' unbounded (exponential)
        return "newton"
    wide = min(WIDE, CURVED / math.sqrt(loss.lipschitz))
    return "sdca" if n_features >= wide * n_samples else "newton"


def auto_option(flag):
    """The option a command-line ``flag`` sets when the solver is "auto": that of the
    candidates that take the flag (``--step``: sgd's ``eta0``), or None if none does."""
    found = {o.name for name in CANDIDATES for o in record(name).options if o.flag == flag}
    return found.pop() if len(found) == 1 else None
