"""The paper's experiments (section 5): protocol, runs on one store, reports.

``tools/reproduce.py`` is the command line; docs/RESULTS.md shows what it produced.
"""

from .protocol import Fold, make_folds, partition_labels
from .report import (comparison_tables, fitted_order, observed_orders, read_json,
                     render_markdown, render_page, summarize_results, write_json)
from .runner import (FoldData, Method, Plateau, Settings, chosen_sigma, paper_methods,
                     run_convergence, run_methods, run_sigma_sweep, train_and_score,
                     train_to_plateau)

__all__ = ["Fold", "FoldData", "Method", "Plateau", "Settings", "chosen_sigma", "comparison_tables",
           "fitted_order", "make_folds", "observed_orders", "paper_methods",
           "partition_labels", "read_json", "render_markdown", "render_page",
           "run_convergence", "run_methods", "run_sigma_sweep", "summarize_results",
           "train_and_score", "train_to_plateau", "write_json"]
