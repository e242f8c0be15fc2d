"""The package's version, in one place: pyproject.toml reads it (``dynamic``), as do
``streamssvm.__version__`` and ``streamssvm --version``."""

__version__ = "0.2.0"
