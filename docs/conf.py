"""Sphinx configuration: the user guide (Markdown, by myst-parser), the command line's
reference (sphinx-argparse, from streamssvm.cli.build_parser) and the API reference
(autodoc and autosummary, numpydoc docstrings read by napoleon).

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (warnings are errors)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's package, whichever is installed

from streamssvm._version import __version__  # noqa: E402

project = "streamssvm"
author = "the streamssvm developers"
copyright = "the streamssvm developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinxarg.ext",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # links to a page's sections by their titles (FORMAT.md's)
myst_enable_extensions = ["dollarmath"]
# docs/results/*.md are tables that tools/reproduce.py writes, whose headings start below H1
suppress_warnings = ["myst.header"]

autosummary_generate = False  # the API page holds its own autodoc entries: no stubs written
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": False}  # members: listed on the API page
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = f"streamssvm {version}"
