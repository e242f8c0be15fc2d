"""JSON for what the library writes: its options may hold numpy's scalars."""

import numpy as np


def json_default(value):
    """``json.dumps``' fallback: numpy's numbers (options such as np.int64(50)) as Python's."""
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, np.floating):  # float(): longdouble's item() is a longdouble
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
