"""Data sources: the HDF5 store of CSR blocks, an in-memory twin, the svmlight converter."""

from .convert import convert_svmlight
from .memory import InMemorySource
from .source import Block, BlockSource, OneVsRestView
from .store import Store, StoreError, StoreWriter, write_store
from .storeset import StoreSet
from .subset import RowSubset
from .svmlight import SvmlightFormatError

__all__ = ["Block", "BlockSource", "InMemorySource", "OneVsRestView", "RowSubset", "Store",
           "StoreError", "StoreSet", "StoreWriter", "SvmlightFormatError", "convert_svmlight",
           "write_store"]
