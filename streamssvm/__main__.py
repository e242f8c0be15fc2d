"""``python -m streamssvm``: the command line (see :mod:`streamssvm.cli`)."""

import sys

from .cli import main

sys.exit(main())
