"""Results of a reproduction: summaries, Markdown tables and figures, all from the JSON.

A results dict (``format`` :data:`RESULTS_FORMAT`) holds the raw runs of
:mod:`~streamssvm.experiments.runner`; :func:`summarize_results` adds their means and
standard deviations; every table and figure here reads only that dict, so what the tables
say is what the JSON says.
"""

import collections
import functools
import json
import math

import numpy as np

from .._atomic import atomic_output

RESULTS_FORMAT = "streamssvm.reproduction"
RESULTS_VERSION = 3

# Luo, Qiao & Zhang, Tables 2 (test accuracy, %, mean +- std over 20 runs) and 3 (seconds).
PAPER_DATASETS = ("NEWS20", "REALSIM", "RCV1")
PAPER_SIGMA_LOG2 = {"NEWS20": -6, "REALSIM": -1, "RCV1": -3}
PAPER_ACCURACY = {
    "TRON Logistic loss": ((95.99, 0.21), (97.20, 0.12), (97.23, 0.04)),
    "TRON squared Hinge loss l2": ((96.57, 0.23), (97.40, 0.12), (97.65, 0.04)),
    "TRON smooth Hinge loss psi_M": ((96.72, 0.22), (97.36, 0.13), (97.60, 0.04)),
    "TRON smooth Hinge loss psi_G": ((96.73, 0.21), (97.41, 0.12), (97.61, 0.04)),
    "PEGASOS Hinge loss l1": ((94.12, 0.41), (96.42, 0.16), (97.50, 0.05)),
    "SIFS smooth Hinge loss l_gamma": ((94.20, 0.40), (96.77, 0.14), (97.52, 0.04)),
}
PAPER_SECONDS = {
    "TRON Logistic loss": (1.82, 0.46, 7.43),
    "TRON squared Hinge loss l2": (10.23, 1.31, 31.97),
    "TRON smooth Hinge loss psi_M": (16.43, 2.01, 24.25),
    "TRON smooth Hinge loss psi_G": (19.95, 2.45, 19.63),
    "PEGASOS Hinge loss l1": (683.46, 86.95, 2486.50),
    "SIFS smooth Hinge loss l_gamma": (238.19, 39.06, 430.18),
}
SUMMARY_FIELDS = ("train_accuracy", "test_accuracy", "seconds", "n_iter", "passes")
# summarised where every run of a group has them: Pegasos's objective gap to psi_G's
# solution, the hinge objective at psi_G's solution, L at the model
OPTIONAL_FIELDS = ("gap_to_psi_g", "gap_to_best_psi_g", "hinge_objective", "objective")
ACCURACY_FIELDS = ("train_accuracy", "test_accuracy")


def mean_std(values):
    """Mean and sample standard deviation (ddof = 1, MATLAB's ``std``, which the paper
    used); the deviation is None for a single value."""
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()),
            "std": float(values.std(ddof=1)) if len(values) > 1 else None}


def summarize(runs, keys):
    """Group runs by ``keys`` (in order of first appearance) and summarise each group.

    Returns
    -------
    list of dict
        The key fields, ``n_runs``, ``n_converged``, ``folds`` (the fold digests in run
        order), ``{"mean", "std"}`` of each of :data:`SUMMARY_FIELDS` and of each of
        :data:`OPTIONAL_FIELDS` that all the group's runs hold, and ``n_plateau`` (runs
        stopped by :class:`~streamssvm.experiments.runner.Plateau`) where they have a
        ``stopped``, and ``solvers`` (runs per solver) where they have a ``solver`` that
        is not a key.
    """
    groups = {}
    for run in runs:
        groups.setdefault(tuple(run[k] for k in keys), []).append(run)
    out = []
    for values, group in groups.items():
        row = dict(zip(keys, values), n_runs=len(group),
                   n_converged=sum(bool(r["converged"]) for r in group),
                   folds=[r["fold"] for r in group])
        row.update({f: mean_std([r[f] for r in group]) for f in SUMMARY_FIELDS})
        row.update({f: mean_std([r[f] for r in group]) for f in OPTIONAL_FIELDS
                    if all(r.get(f) is not None for r in group)})
        if all("stopped" in r for r in group):
            row["n_plateau"] = sum(r["stopped"] == "plateau" for r in group)
        if "solver" not in keys and all("solver" in r for r in group):  # auto's choices
            row["solvers"] = dict(collections.Counter(r["solver"] for r in group))
        out.append(row)
    return out


def observed_orders(grad_norms):
    """Observed orders of convergence q_k = log(g_{k+1} / g_k) / log(g_k / g_{k-1}).

    About 1 for linear convergence at any rate, 2 for quadratic (g_{k+1} ~ C g_k^2 gives
    log(g_{k+1} / g_k) ~ log(g_k / g_{k-1}) * 2 once C's share vanishes). Estimates that
    involve a gradient norm that did not decrease are None.

    Parameters
    ----------
    grad_norms : sequence of float, shape (n_iter,)
        ||grad L(w_k)|| at the accepted iterates.

    Returns
    -------
    list of float or None, shape (max(n_iter - 2, 0),)
        ``q_1 .. q_{n_iter - 2}``.
    """
    g = np.asarray(grad_norms, dtype=np.float64)
    out = []
    for k in range(1, len(g) - 1):
        if 0 < g[k + 1] < g[k] < g[k - 1]:
            out.append(float(math.log(g[k + 1] / g[k]) / math.log(g[k] / g[k - 1])))
        else:
            out.append(None)
    return out


def fitted_order(values, floor=0.0, last=3):
    """The order q of the last steps of a sequence converging to 0: the least-squares slope
    of log v_k+1 against log v_k over its last ``last`` steps (q ~ 1 linear, 2 quadratic).

    The steps fitted are those between values above ``floor`` (what float64 resolves: below
    it the values are rounding), with the trailing steps that did not decrease left out
    (a run ends where its arithmetic can take it no further).

    Returns
    -------
    float or None
        None with fewer than 2 steps to fit.
    """
    v = [x for x in np.asarray(values, dtype=np.float64)]
    n = 0
    while n < len(v) and v[n] > floor:
        n += 1
    v = v[:n]
    while len(v) > 1 and v[-1] >= v[-2]:
        v.pop()
    v = np.log(v[-(last + 1):])
    if len(v) < 3:
        return None
    return float(np.polyfit(v[:-1], v[1:], 1)[0])


# TRON's stops at float64's resolution of L: the step that ended the run was taken where
# the decrease was below 1e-12 |L|, and its length is not the method's
FLOOR_MESSAGES = ("actual and predicted reductions too small", "predicted reduction <= 0")


def convergence_floors(run):
    """The floors below which :func:`fitted_order` ignores a convergence run's values:
    ten times ||grad L(w*)|| (what the gradient resolves at the solution) for ||grad||,
    ten times the estimate of w*'s own error
    (:func:`~streamssvm.experiments.runner.tight_solution`) for ||w - w*||."""
    star = run["w_star"]
    return 10 * star["grad_norm_corrected"], 10 * star["distance_floor"]


def summarize_results(results):
    """Add ``summary`` entries to a results dict (in place) and return it."""
    if "methods" in results:
        results["methods"]["summary"] = summarize(
            results["methods"]["runs"], ("method", "losses", "loss", "sigma", "solver"))
    if "sweep" in results:
        results["sweep"]["summary"] = summarize(results["sweep"]["runs"],
                                                ("loss", "start", "log2_sigma"))
    for run in results.get("convergence", {}).get("runs", []):
        g = [h["grad_norm"] for h in run["history"]]
        e = [h["distance"] for h in run["history"]]
        g_floor, e_floor = convergence_floors(run)
        if run["message"] in FLOOR_MESSAGES:  # the last step is float64's, not TRON's
            g, e = g[:-1], e[:-1]
        run["observed_orders"] = observed_orders([h["grad_norm"] for h in run["history"]])
        run["fitted_order_grad"] = fitted_order(g, g_floor)
        run["fitted_order_distance"] = fitted_order(e, e_floor)
    return results


def write_json(results, path):
    """Write a results dict (atomically)."""
    with atomic_output(path, overwrite=True) as tmp:
        with open(tmp, "w") as fh:
            json.dump(results, fh, indent=1)
            fh.write("\n")


def read_json(path):
    """Read a results dict written by :func:`write_json`."""
    with open(path) as fh:
        results = json.load(fh)
    if results.get("format") != RESULTS_FORMAT:
        raise ValueError(f"{path}: not a results file of {RESULTS_FORMAT} "
                         f"(format {results.get('format')!r})")
    if results.get("version", 0) != RESULTS_VERSION:
        raise ValueError(f"{path}: results version {results.get('version')}; this library "
                         f"reads version {RESULTS_VERSION} (run the reproduction again)")
    return results


def pm(stat, scale=1.0, digits=2):
    """``mean ± std`` of a :func:`mean_std` dict, both times ``scale``."""
    mean = f"{stat['mean'] * scale:.{digits}f}"
    return mean if stat["std"] is None else f"{mean} ± {stat['std'] * scale:.{digits}f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _width(row):
    if row["sigma"] is not None:
        return f"sigma = 2^{math.log2(row['sigma']):g}"
    loss = row["loss"]
    return loss.split(":", 1)[1].replace("gamma=", "gamma = ") if ":" in loss else ""


def _log2(sigma):
    return f"2^{math.log2(sigma):g}"


def methods_table(results):
    """Tables 2 and 3 for one data set: test and training accuracy (%), seconds per
    training run, iterations (epochs for stochastic solvers), converged runs (runs stopped
    at a plateau for stochastic solvers), and for Pegasos its hinge objective's gap to
    that of psi_G's solution on the same folds."""
    rows = []
    for r in results["methods"]["summary"]:
        done = (f"{r['n_plateau']}/{r['n_runs']} plateau" if "n_plateau" in r
                else f"{r['n_converged']}/{r['n_runs']}")
        gap = pm(r["gap_to_psi_g"], digits=4) if "gap_to_psi_g" in r else ""
        rows.append([r["method"], r["losses"], _width(r), r["solver"],
                     pm(r["test_accuracy"], 100), pm(r["train_accuracy"], 100),
                     pm(r["seconds"], digits=3), pm(r["n_iter"], digits=1), done, gap])
    return _table(["method", "loss", "width", "our solver", "test accuracy %",
                   "train accuracy %", "seconds", "iterations", "converged",
                   "objective gap to psi_G"], rows)


def sweep_starts(results):
    return list(dict.fromkeys(r["start"] for r in results["sweep"]["summary"]))


def sweep_table(results, start="cold"):
    """Figure 1 as a table, for one start (``"cold"``: every sigma from w = 0; ``"warm"``:
    from the previous sigma's solution): accuracy (%), the solver (with its runs where
    they differ), its iterations (epochs for SDCA) and runs that met the rule at each log2
    sigma, one column group per loss."""
    summary = [r for r in results["sweep"]["summary"] if r["start"] == start]
    losses = list(dict.fromkeys(r["loss"] for r in summary))
    by = {(r["loss"], r["log2_sigma"]): r for r in summary}
    header = ["log2 sigma"]
    for loss in losses:
        header += [f"{loss} train %", f"{loss} test %", f"{loss} solver",
                   f"{loss} iterations", f"{loss} converged"]
    rows = []
    for s in sorted({r["log2_sigma"] for r in summary}):
        row = [s]
        for loss in losses:
            r = by.get((loss, s))
            if r is None:
                row += [""] * 5
                continue
            row += [pm(r[f], 100) for f in ACCURACY_FIELDS]
            row += [_solvers(r), pm(r["n_iter"], digits=1),
                    f"{r['n_converged']}/{r['n_runs']}"]
        rows.append(row)
    return _table(header, rows)


def _solvers(row):
    """The solvers of a summary row: a name, or names with their runs."""
    counts = row.get("solvers", {})
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


def _fmt(x, spec):
    return "–" if x is None else format(x, spec)


def convergence_table(results, last=4):
    """Per TRON run: iterations, CG steps, passes, seconds, ||grad|| at 0 and at the end,
    ||w - w*|| at the end, the last ``last`` contraction factors e_k+1 / e_k of
    e_k = ||w_k - w*||, and the fitted orders of the last steps of e and of ||grad||."""
    rows = []
    for run in results["convergence"]["runs"]:
        h = run["history"]
        g = [x["grad_norm"] for x in h]
        e = [x["distance"] for x in h]
        width = "" if run["sigma"] is None else _log2(run["sigma"])
        ratios = ", ".join(f"{b / a:.1e}" if a > 0 else "–"
                           for a, b in list(zip(e, e[1:]))[-last:])
        rows.append([run["loss"], width, run["forcing"], len(h) - 1,
                     sum(x["cg_steps"] for x in h), h[-1]["passes"], f"{run['seconds']:.2f}",
                     f"{g[0]:.2e}", f"{g[-1]:.2e}", f"{e[-1]:.2e}", ratios,
                     _fmt(run["fitted_order_distance"], ".2f"),
                     _fmt(run["fitted_order_grad"], ".2f")])
    return _table(["loss", "sigma", "forcing", "iterations", "CG steps", "passes", "seconds",
                   "‖grad‖ at 0", "final ‖grad‖", "final ‖w - w*‖",
                   f"last {last} e_k+1 / e_k", "order of ‖w - w*‖", "order of ‖grad‖"],
                  rows)


def render_markdown(results, figures=None):
    """The Markdown report of one results dict; ``figures`` maps ``"sweep"`` /
    ``"convergence"`` to image paths to link."""
    figures = figures or {}
    d, p = results["dataset"], results["protocol"]
    out = [f"## {d['name']}",
           "",
           f"{d['n_samples']:,} rows x {d['n_features']:,} features, {d['nnz']:,} nonzeros; "
           f"lambda = {p['lam']:g}; stop at ||grad L(w)|| <= max({p['tol']:g} ||grad L(0)||, "
           f"{p['abs_tol']:g}); folds: {p['n_partitions']} partitions x {p['n_parts']} parts "
           f"(seed {p['seed']}) = {len(p['folds'])}, of which each part below uses the first "
           "'runs'; mean ± std (ddof 1) over its runs."]
    if "sweep" in results:
        sweep = results["sweep"]
        out += ["", "### Sigma sweep (Figure 1)", "",
                f"Runs: {sweep['summary'][0]['n_runs']}. {sweep['note']}"]
        for start in sweep_starts(results):
            out += ["", f"{start.capitalize()} start:", "", sweep_table(results, start)]
        if "sweep" in figures:
            out += ["", f"![sigma sweep, {d['name']}]({figures['sweep']})"]
    if "methods" in results:
        m = results["methods"]
        out += ["", "### Methods (Tables 2 and 3)", "",
                f"Runs: {m['summary'][0]['n_runs']}. {m['note']}", "", methods_table(results)]
    if "convergence" in results:
        out += ["", "### Convergence of TRON", "", results["convergence"]["note"], "",
                convergence_table(results)]
        if "convergence" in figures:
            out += ["", f"![TRON convergence, {d['name']}]({figures['convergence']})"]
    if "timings" in results:
        out += ["", "Wall time of each part (s): " + ", ".join(
            f"{k} {v:.1f}" for k, v in results["timings"].items()) + "."]
    return "\n".join(out) + "\n"


def _dataset_label(results):
    m = results["methods"]
    return (f"{results['dataset']['name']} ({m['summary'][0]['n_runs']} runs, "
            f"sigma 2^{m['sigma_log2']:g})")


def comparison_tables(results_list):
    """Tables 2 and 3 across data sets, beside the paper's: rows are the six methods,
    columns our data sets (with their runs and sigma) then the paper's (test accuracy %,
    seconds)."""
    results_list = [r for r in results_list if "methods" in r]
    by = [{f"{m['method']} {m['losses']}": m for m in r["methods"]["summary"]}
          for r in results_list]
    names = [_dataset_label(r) for r in results_list]
    keys = list(PAPER_ACCURACY)
    accuracy, seconds = [], []
    for key in keys:
        ours = [pm(b[key]["test_accuracy"], 100) if key in b else "" for b in by]
        accuracy.append([key] + ours + [f"{m:.2f} ± {s:.2f}" for m, s in PAPER_ACCURACY[key]])
        ours = [pm(b[key]["seconds"], digits=3) if key in b else "" for b in by]
        seconds.append([key] + ours + [f"{s:.2f}" for s in PAPER_SECONDS[key]])
    header = (["method / loss"] + names
              + [f"paper {n} (sigma 2^{PAPER_SIGMA_LOG2[n]})" for n in PAPER_DATASETS])
    return (_table(header, accuracy), _table(header, seconds))


def datasets_table(results_list, run=None):
    """What ran on each data set: its size, the methods' sigma and where it came from, the
    runs of each part, the passes and the wall time; with ``run`` (``all``'s record:
    ``wall_seconds``, ``jobs``), the wall time of the whole."""
    rows = []
    for r in results_list:
        d = r["dataset"]
        sweep = r.get("sweep")
        methods = r.get("methods")
        conv = r.get("convergence")
        sweep_text = "" if sweep is None else (
            f"{sweep['summary'][0]['n_runs']} runs x {len(sweep['log2_sigmas'])} sigmas x "
            f"{' + '.join(sweep_starts(r))}")
        rows.append([d["name"], f"{d['n_samples']:,} x {d['n_features']:,}", f"{d['nnz']:,}",
                     "" if methods is None else
                     f"2^{methods['sigma_log2']:g} ({methods['sigma_from']})",
                     "" if methods is None else f"{methods['summary'][0]['n_runs']} runs",
                     sweep_text,
                     "" if conv is None else f"{len(conv['runs'])} runs",
                     f"{work_passes(r):,}",
                     f"{sum(r.get('timings', {}).values()) / 60:.1f} min"])
    total = sum(sum(r.get("timings", {}).values()) for r in results_list)
    whole = (f"Summed over the data sets: {total / 60:.1f} min." if run is None else
             f"The whole reproduction (`all --jobs {run['jobs']}`: each data set's folds "
             f"{run['jobs']} at a time): {run['wall_seconds'] / 60:.1f} min of wall time; "
             f"summed over the data sets: {total / 60:.1f} min.")
    return _table(["data set", "rows x features", "nonzeros", "sigma (methods)", "methods",
                   "sweep", "convergence", "passes", "wall time"], rows) + "\n\n" + whole


def work_passes(results):
    """Passes over the data (training rows or all rows) of every training run of a
    results dict: the work of the reproduction, whatever machine ran it."""
    runs = (results.get("methods", {}).get("runs", []) + results.get("sweep", {}).get("runs", []))
    return (sum(r["passes"] for r in runs)
            + sum(run["history"][-1]["passes"]
                  for run in results.get("convergence", {}).get("runs", [])))


def pegasos_table(results_list):
    """Pegasos beside psi_G on each data set: epochs, runs stopped at the plateau, the hinge
    objective P(w) = lambda / 2 ||w||^2 + mean hinge at Pegasos's model and at psi_G's
    solution (the methods' sigma), their gap, the gap to the lowest P of psi_G's solutions
    in the sweep (and the sigmas where it was), and both test accuracies."""
    rows = []
    for r in results_list:
        by = {s["loss"]: s for s in r.get("methods", {}).get("summary", [])}
        peg, psi = by.get("hinge"), by.get("psi_g")
        if peg is None or psi is None or "gap_to_psi_g" not in peg:
            continue
        runs = [x for x in r["methods"]["runs"] if x["loss"] == "hinge"]
        where = sorted({x["best_psi_g_log2_sigma"] for x in runs
                        if "best_psi_g_log2_sigma" in x})
        best = ("" if "gap_to_best_psi_g" not in peg else
                f"{pm(peg['gap_to_best_psi_g'], digits=4)} (2^"
                + ", 2^".join(f"{s:g}" for s in where) + ")")
        rows.append([r["dataset"]["name"], pm(peg["n_iter"], digits=0),
                     f"{peg.get('n_plateau', 0)}/{peg['n_runs']}",
                     pm(peg["objective"], digits=4), pm(psi["hinge_objective"], digits=4),
                     pm(peg["gap_to_psi_g"], digits=4), best, pm(peg["test_accuracy"], 100),
                     pm(psi["test_accuracy"], 100)])
    return _table(["data set", "Pegasos epochs", "stopped at plateau", "P(w) Pegasos",
                   "P(w) at psi_G's solution", "gap", "gap to the sweep's lowest P (sigma)",
                   "Pegasos test %", "psi_G test %"], rows)


def convergence_summary_table(results_list):
    """Fitted orders of the last steps of ||w - w*|| (and of ||grad||) per data set and
    loss, xi_t = 0.1 against xi_t = min(0.1, kappa ||grad||), with TRON's iterations."""
    rows = []
    for r in results_list:
        runs = {}
        for run in r.get("convergence", {}).get("runs", []):
            runs.setdefault((run["loss"], run["sigma"]), {})[run["forcing"]] = run
        for (loss, sigma), by in runs.items():
            c, q = by.get("constant"), by.get("quadratic")
            if c is None or q is None:
                continue
            rows.append([r["dataset"]["name"], loss, "" if sigma is None else _log2(sigma),
                         f"{len(c['history']) - 1} / {len(q['history']) - 1}",
                         f"{_fmt(c['fitted_order_distance'], '.2f')} / "
                         f"{_fmt(q['fitted_order_distance'], '.2f')}",
                         f"{_fmt(c['fitted_order_grad'], '.2f')} / "
                         f"{_fmt(q['fitted_order_grad'], '.2f')}"])
    return _table(["data set", "loss", "sigma", "iterations (0.1 / kappa ‖g‖)",
                   "order of ‖w - w*‖ (0.1 / kappa ‖g‖)",
                   "order of ‖grad‖ (0.1 / kappa ‖g‖)"], rows)


def sweep_summary_table(results_list):
    """Per data set and loss: the best cold-start test accuracy over sigma and where, the
    accuracy at the smallest and the largest sigma, and the cold runs at the smallest sigma
    that met the rule."""
    rows = []
    for r in results_list:
        summary = [s for s in r.get("sweep", {}).get("summary", []) if s["start"] == "cold"]
        for loss in dict.fromkeys(s["loss"] for s in summary):
            by = {s["log2_sigma"]: s for s in summary if s["loss"] == loss}
            best = max(by, key=lambda k: (by[k]["test_accuracy"]["mean"], k))
            lo, hi = by[min(by)], by[max(by)]
            rows.append([r["dataset"]["name"], loss,
                         f"{100 * by[best]['test_accuracy']['mean']:.2f} at 2^{best:g}",
                         f"{100 * lo['test_accuracy']['mean']:.2f}",
                         f"{100 * hi['test_accuracy']['mean']:.2f}",
                         f"{lo['n_converged']}/{lo['n_runs']}"])
    return _table(["data set", "loss", "best cold test %", "at the smallest sigma",
                   "at the largest sigma", "converged at the smallest"], rows)


def _cold(results, loss):
    """{log2 sigma: summary row} of a loss's cold-start sweep."""
    return {r["log2_sigma"]: r for r in results.get("sweep", {}).get("summary", [])
            if r["loss"] == loss and r["start"] == "cold"}


def _short(loss):
    """A loss's name without its width (l_gamma for the smoothed hinge)."""
    return "l_gamma" if loss.startswith("smoothed_hinge") else loss.split(":", 1)[0]


def claims_table(results_list):
    """The paper's findings of section 5, each with our numbers on every data set that
    has the parts it needs (the verdict is the reader's)."""
    rows = []
    for r in results_list:
        name = r["dataset"]["name"]
        by = {_short(m["loss"]): m for m in r.get("methods", {}).get("summary", [])}
        acc = {k: 100 * v["test_accuracy"]["mean"] for k, v in by.items()}
        if "psi_g" in acc:
            best = max(acc, key=acc.get)
            rows.append(["the smooth hinges are the most accurate", name,
                         f"best {best} {acc[best]:.2f}; psi_G {acc['psi_g']:.2f}, psi_M "
                         f"{acc.get('psi_m', math.nan):.2f}, logistic "
                         f"{acc.get('logistic', math.nan):.2f}"])
            second = {k: v["n_iter"]["mean"] for k, v in by.items() if v["solver"] == "tron"}
            fewest = min(second, key=second.get)
            rows.append(["the logistic loss takes the fewest iterations", name,
                         f"fewest {fewest} {second[fewest]:.1f}; " + ", ".join(
                             f"{k} {v:.1f}" for k, v in second.items() if k != fewest)])
        if "hinge" in acc and "psi_g" in acc:
            gaps = [(label, by["hinge"].get(key)) for label, key in (
                ("psi_G's solution", "gap_to_psi_g"), ("the sweep's lowest", "gap_to_best_psi_g"))]
            rows.append(["TRON beats the first-order Pegasos", name,
                         f"psi_G - Pegasos {acc['psi_g'] - acc['hinge']:+.2f} points"
                         + "".join(f"; Pegasos's objective gap to {label} {gap['mean']:+.4f}"
                                   for label, gap in gaps if gap is not None)])
        for loss in ("psi_g", "psi_m"):
            cold = _cold(r, loss)
            if not cold:
                continue
            top = max(cold, key=lambda k: (cold[k]["test_accuracy"]["mean"], k))
            lo, hi = min(cold), max(cold)
            t = {k: 100 * v["test_accuracy"]["mean"] for k, v in cold.items()}
            rows.append([f"too large a sigma spoils {loss}", name,
                         f"2^{hi:g}: {t[hi]:.2f} against {t[top]:.2f} at 2^{top:g}"])
            near = (f"; Pegasos {acc['hinge']:.2f}" if "hinge" in acc else "")
            rows.append([f"too small a sigma makes {loss} the L1-SVM", name,
                         f"2^{lo:g}: {t[lo]:.2f}{near}; rule met in "
                         f"{cold[lo]['n_converged']}/{cold[lo]['n_runs']} runs"])
        orders = {}
        for run in r.get("convergence", {}).get("runs", []):
            if run["fitted_order_distance"] is not None:
                orders.setdefault(run["forcing"], []).append(run["fitted_order_distance"])
        if orders:
            rows.append(["xi_t = kappa ‖grad‖ converges quadratically, xi_t = 0.1 linearly",
                         name, "; ".join(f"{k}: order of ‖w - w*‖ "
                                         f"{min(v):.2f} to {max(v):.2f}"
                                         for k, v in orders.items())])
    return _table(["the paper", "data set", "ours"], rows)


PAGE_BLOCKS = {
    "datasets": datasets_table,
    "tables": lambda rs: ("### Test accuracy (%), mean ± std over the runs\n\n"
                          + comparison_tables(rs)[0]
                          + "\n\n### Training time (s per run), mean ± std\n\n"
                          + comparison_tables(rs)[1]),
    "sweep": sweep_summary_table,
    "pegasos": pegasos_table,
    "convergence": convergence_summary_table,
    "claims": claims_table,
}


def figures_grid(results_list, part, folder):
    """The figures of one part (``"sweep"`` or ``"convergence"``) of the data sets that ran
    it, two to a row, linked as ``folder/NAME-part.png``."""
    cells = [f"![{r['dataset']['name']}]({folder}/{r['dataset']['name']}-{part}.png)"
             for r in results_list if part in r]
    if len(cells) % 2:
        cells.append("")
    return _table(["", ""], [cells[i:i + 2] for i in range(0, len(cells), 2)])


def render_page(text, results_list, run=None, folder="results"):
    """``text`` (docs/RESULTS.md) with each block between ``<!-- BEGIN name -->`` and
    ``<!-- END name -->`` (``name`` in :data:`PAGE_BLOCKS`, ``sweep-figures`` or
    ``convergence-figures``) rendered again from the results (and ``run``, for
    :func:`datasets_table`; figures linked from ``folder``, relative to the page); the
    prose around the blocks is kept as it is."""
    blocks = dict(PAGE_BLOCKS, datasets=lambda rs: datasets_table(rs, run),
                  **{f"{part}-figures": functools.partial(figures_grid, part=part,
                                                          folder=folder)
                     for part in ("sweep", "convergence")})
    for name, render in blocks.items():
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
        if begin not in text:
            continue
        head, rest = text.split(begin, 1)
        if end not in rest:
            raise ValueError(f"{begin} has no {end}")
        text = head + begin + "\n" + render(results_list) + "\n" + end + rest.split(end, 1)[1]
    return text


def plot_sweep(results, path):
    """Figure 1: mean training and test accuracy (± std) against log2 sigma, psi_G red and
    psi_M green as in the paper; every sigma from w = 0 (solid, circles) and warm-started
    from the previous sigma (dashed, crosses). Needs matplotlib (the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"psi_g": "tab:red", "psi_m": "tab:green"}
    styles = {"cold": ("-", "o"), "warm": ("--", "x")}
    summary = results["sweep"]["summary"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, f in zip(axes, ACCURACY_FIELDS):
        for loss in dict.fromkeys(r["loss"] for r in summary):
            for start in sweep_starts(results):
                rows = sorted((r for r in summary if r["loss"] == loss and r["start"] == start),
                              key=lambda r: r["log2_sigma"])
                x = [r["log2_sigma"] for r in rows]
                mean = np.array([r[f]["mean"] for r in rows]) * 100
                std = np.array([r[f]["std"] or 0.0 for r in rows]) * 100
                line, marker = styles.get(start, (":", "."))
                ax.errorbar(x, mean, yerr=std, linestyle=line, marker=marker, ms=3,
                            capsize=2, color=colors.get(loss), label=f"{loss}, {start}")
        ax.set_xlabel("log2 sigma")
        ax.set_title(f"{results['dataset']['name']}: {f.replace('_', ' ')}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].legend(fontsize=7)
    _save(fig, path)


def plot_convergence(results, path):
    """||w_k - w*|| and ||grad L(w_k)|| against TRON's iteration k, log scale, each loss
    with xi_t = 0.1 (dashed) and xi_t = min(0.1, kappa ||grad||) (solid)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {}
    for run in results["convergence"]["runs"]:
        color = colors.setdefault(run["loss"], f"C{len(colors)}")
        line = "-" if run["forcing"] == "quadratic" else "--"
        for ax, key in zip(axes, ("distance", "grad_norm")):
            v = np.array([h[key] for h in run["history"]])
            ax.semilogy(np.flatnonzero(v > 0), v[v > 0], line, marker="o", ms=3, color=color,
                        label=f"{run['loss']}, {run['forcing']}")
    for ax, label in zip(axes, ("||w - w*||", "||grad L(w)||")):
        ax.set_xlabel("TRON iteration")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_title(f"{results['dataset']['name']}: xi_t = 0.1 (dashed) vs "
                      "min(0.1, kappa ||grad||) (solid)", fontsize=9)
    axes[1].legend(fontsize=7)
    _save(fig, path)


def _save(fig, path):
    import matplotlib.pyplot as plt

    with atomic_output(path, overwrite=True) as tmp:
        fig.tight_layout()
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
