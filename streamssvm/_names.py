"""The names errors give the parameters: the Python API's, or, inside the command line's
calls, the options that set them."""

import contextlib
import contextvars
import types

# read-only: a default is shared by every context, none may change it
_OPTIONS = contextvars.ContextVar("options", default=types.MappingProxyType({}))


def named(parameter):
    """``parameter`` as the caller typed it: its option inside :func:`options_named`, else
    its Python name."""
    return _OPTIONS.get().get(parameter, parameter)


@contextlib.contextmanager
def options_named(options):
    """Within, :func:`named` gives the ``options`` ({parameter: option}) for the parameters."""
    token = _OPTIONS.set(options)
    try:
        yield
    finally:
        _OPTIONS.reset(token)
