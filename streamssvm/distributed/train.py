"""``train_distributed``: :func:`~streamssvm.train_stream` with the oracle on Dask workers."""

def train_distributed(paths, client, **options):
    """Train on stores read by the workers of ``client``; the same result as
    ``train_stream`` on the same rows in the same order, up to rounding.

    Parameters
    ----------
    paths : str, path-like, or sequence of them
        Stores (same width and labels), at paths that every worker can open.
    client : distributed.Client
    **options
        As for :func:`~streamssvm.train_stream` (loss, lam, solver, tol, ...).

    Returns
    -------
    Model
    """
    # imported here: the API opens the stores on the workers (this package), so that
    # neither module imports the other when it is loaded
    from ..api import train_stream

    return train_stream(paths, client=client, **options)
