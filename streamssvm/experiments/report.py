"""Results of a reproduction: summaries, Markdown tables and figures, all from the JSON.

A results dict (``format`` :data:`RESULTS_FORMAT`) holds the raw runs of
:mod:`~streamssvm.experiments.runner`; :func:`summarize_results` adds their means and
standard deviations; every table and figure here reads only that dict, so what the tables
say is what the JSON says.
"""

import json
import math

import numpy as np

from .._atomic import atomic_output

RESULTS_FORMAT = "streamssvm.reproduction"
RESULTS_VERSION = 1

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
        order) and ``{"mean", "std"}`` of each of :data:`SUMMARY_FIELDS`.
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


def summarize_results(results):
    """Add ``summary`` entries to a results dict (in place) and return it."""
    if "methods" in results:
        results["methods"]["summary"] = summarize(
            results["methods"]["runs"], ("method", "losses", "loss", "sigma", "solver"))
    if "sweep" in results:
        results["sweep"]["summary"] = summarize(results["sweep"]["runs"], ("loss", "log2_sigma"))
    for run in results.get("convergence", {}).get("runs", []):
        run["observed_orders"] = observed_orders([h["grad_norm"] for h in run["history"]])
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
    if results.get("version", 0) > RESULTS_VERSION:
        raise ValueError(f"{path}: results version {results['version']} is newer than "
                         f"this library reads ({RESULTS_VERSION})")
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


def methods_table(results):
    """Tables 2 and 3 for one data set: test and training accuracy (%), seconds per
    training run, iterations (epochs for stochastic solvers), converged runs."""
    rows = []
    for r in results["methods"]["summary"]:
        rows.append([r["method"], r["losses"], _width(r), r["solver"],
                     pm(r["test_accuracy"], 100), pm(r["train_accuracy"], 100),
                     pm(r["seconds"], digits=3), pm(r["n_iter"], digits=1),
                     f"{r['n_converged']}/{r['n_runs']}"])
    return _table(["method", "loss", "width", "our solver", "test accuracy %",
                   "train accuracy %", "seconds", "iterations", "converged"], rows)


def sweep_table(results):
    """Figure 1 as a table: accuracy (%) at each log2 sigma, one column pair per loss."""
    summary = results["sweep"]["summary"]
    losses = list(dict.fromkeys(r["loss"] for r in summary))
    by = {(r["loss"], r["log2_sigma"]): r for r in summary}
    header = ["log2 sigma"]
    for loss in losses:
        header += [f"{loss} train %", f"{loss} test %", f"{loss} iterations"]
    rows = []
    for s in sorted({r["log2_sigma"] for r in summary}):
        row = [s]
        for loss in losses:
            r = by.get((loss, s))
            row += ["" if r is None else pm(r[f], 100) for f in ACCURACY_FIELDS]
            row.append("" if r is None else pm(r["n_iter"], digits=1))
        rows.append(row)
    return _table(header, rows)


def convergence_table(results, last=4):
    """Per TRON run: iterations, CG steps, passes, seconds, final ||grad||, and over the
    last ``last`` steps the contraction factors g_k+1 / g_k and the observed orders."""
    rows = []
    for run in results["convergence"]["runs"]:
        h = run["history"]
        g = [e["grad_norm"] for e in h]
        width = "" if run["sigma"] is None else f"2^{math.log2(run['sigma']):g}"
        ratios = ", ".join(f"{b / a:.1e}" for a, b in list(zip(g, g[1:]))[-last:])
        orders = ", ".join("–" if q is None else f"{q:.2f}"
                           for q in run["observed_orders"][-last:])
        rows.append([run["loss"], width, run["forcing"], len(h) - 1,
                     sum(e["cg_steps"] for e in h), h[-1]["passes"], f"{run['seconds']:.2f}",
                     f"{g[0]:.2e}", f"{g[-1]:.2e}", ratios, orders])
    return _table(["loss", "sigma", "forcing", "iterations", "CG steps", "passes", "seconds",
                   "||grad|| at 0", "final ||grad||", f"last {last} g_k+1 / g_k",
                   f"last {last} observed orders"], rows)


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
    if "methods" in results:
        out += ["", "### Methods (Tables 2 and 3)", "",
                f"Runs: {results['methods']['summary'][0]['n_runs']}.", "",
                methods_table(results)]
    if "sweep" in results:
        out += ["", "### Sigma sweep (Figure 1)", "",
                f"Runs: {results['sweep']['summary'][0]['n_runs']}. {results['sweep']['note']}",
                "", sweep_table(results)]
        if "sweep" in figures:
            out += ["", f"![sigma sweep, {d['name']}]({figures['sweep']})"]
    if "convergence" in results:
        out += ["", "### Convergence of TRON", "", results["convergence"]["note"], "",
                convergence_table(results)]
        if "convergence" in figures:
            out += ["", f"![TRON convergence, {d['name']}]({figures['convergence']})"]
    if "timings" in results:
        out += ["", "Wall time of each part (s): " + ", ".join(
            f"{k} {v:.1f}" for k, v in results["timings"].items()) + "."]
    return "\n".join(out) + "\n"


def comparison_tables(results_list):
    """Tables 2 and 3 across data sets, beside the paper's: rows are the six methods,
    columns our data sets then the paper's (test accuracy %, seconds)."""
    results_list = [r for r in results_list if "methods" in r]
    by = [{f"{m['method']} {m['losses']}": m for m in r["methods"]["summary"]}
          for r in results_list]
    names = [f"{r['dataset']['name']} ({r['methods']['summary'][0]['n_runs']} runs)"
             for r in results_list]
    keys = list(PAPER_ACCURACY)
    accuracy, seconds = [], []
    for key in keys:
        ours = [pm(b[key]["test_accuracy"], 100) if key in b else "" for b in by]
        accuracy.append([key] + ours + [f"{m:.2f} ± {s:.2f}" for m, s in PAPER_ACCURACY[key]])
        ours = [pm(b[key]["seconds"], digits=3) if key in b else "" for b in by]
        seconds.append([key] + ours + [f"{s:.2f}" for s in PAPER_SECONDS[key]])
    header = ["method / loss"] + names + [f"paper {n}" for n in PAPER_DATASETS]
    return (_table(header, accuracy), _table(header, seconds))


def plot_sweep(results, path):
    """Figure 1: mean training and test accuracy (± std) against log2 sigma, psi_G red and
    psi_M green as in the paper. Needs matplotlib (the ``plot`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"psi_g": "tab:red", "psi_m": "tab:green"}
    summary = results["sweep"]["summary"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, f in zip(axes, ACCURACY_FIELDS):
        for loss in dict.fromkeys(r["loss"] for r in summary):
            rows = sorted((r for r in summary if r["loss"] == loss), key=lambda r: r["log2_sigma"])
            x = [r["log2_sigma"] for r in rows]
            mean = np.array([r[f]["mean"] for r in rows]) * 100
            std = np.array([r[f]["std"] or 0.0 for r in rows]) * 100
            ax.errorbar(x, mean, yerr=std, marker="o", ms=3, capsize=2,
                        color=colors.get(loss), label=loss)
        ax.set_xlabel("log2 sigma")
        ax.set_title(f"{results['dataset']['name']}: {f.replace('_', ' ')}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].legend()
    _save(fig, path)


def plot_convergence(results, path):
    """||grad L(w_k)|| against the iteration k of TRON, log scale, each loss with
    xi_t = 0.1 (dashed) and xi_t = min(0.1, kappa ||grad||) (solid)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = {}
    for run in results["convergence"]["runs"]:
        color = colors.setdefault(run["loss"], f"C{len(colors)}")
        g = [h["grad_norm"] for h in run["history"]]
        ax.semilogy(range(len(g)), g, "-" if run["forcing"] == "quadratic" else "--",
                    marker="o", ms=3, color=color, label=f"{run['loss']}, {run['forcing']}")
    ax.set_xlabel("TRON iteration")
    ax.set_ylabel("||grad L(w)||")
    ax.set_title(f"{results['dataset']['name']}: TRON, forcing xi_t constant vs quadratic")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    _save(fig, path)


def _save(fig, path):
    import matplotlib.pyplot as plt

    with atomic_output(path, overwrite=True) as tmp:
        fig.tight_layout()
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
