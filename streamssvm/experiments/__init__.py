"""The paper's experiments (section 5): protocol, runs on one store, reports.

``tools/reproduce.py`` is the command line; docs/RESULTS.md shows what it produced.
"""

from .protocol import Fold, make_folds, partition_labels
from .report import (comparison_tables, observed_orders, read_json, render_markdown,
                     summarize_results, write_json)
from .runner import (Method, Settings, paper_methods, run_convergence, run_methods,
                     run_sigma_sweep, train_and_score)

__all__ = ["Fold", "Method", "Settings", "comparison_tables", "make_folds", "observed_orders",
           "paper_methods", "partition_labels", "read_json", "render_markdown",
           "run_convergence", "run_methods", "run_sigma_sweep", "summarize_results",
           "train_and_score", "write_json"]
