"""Warnings that name the user's line: the first caller outside this package (and
contextlib's wrappers, as around every solver), however deep in it the warning arose."""

import contextlib
import os
import sys
import warnings

_INSIDE = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
           os.path.abspath(contextlib.__file__))


def warn(message, category):
    """``warnings.warn(message, category)`` at the first frame outside the package."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_INSIDE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
