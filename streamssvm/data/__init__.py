"""Data sources: the HDF5 store of CSR blocks, an in-memory twin, the svmlight converter."""

from .memory import InMemorySource
from .source import Block, BlockSource
from .store import Store, StoreError, StoreWriter

__all__ = ["Block", "BlockSource", "InMemorySource", "Store", "StoreError", "StoreWriter"]
