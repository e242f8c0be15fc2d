"""The exceptions of the library, for files it cannot read or write.

Every failure to read or write a file is one of these, its message naming the file and
what is wrong (the command line prints it as one line):

- ``OSError`` (and its subclasses: FileNotFoundError, PermissionError, ...): the file
  cannot be opened, read or written (missing, a folder, no permission, a read-only file
  system, a full disk); ``filename`` is the path.
- :class:`FileFormatError` (a ValueError): the file opens but is not of the kind expected,
  or is damaged. Its subclasses say which kind: :class:`ModelFileError` (a model or a
  saved online trainer), :class:`CheckpointError`, ``StoreError`` (an HDF5 store) and
  ``SvmlightFormatError`` (svmlight text, naming the line).
"""


class FileFormatError(ValueError):
    """A file that is not of the kind expected, or is damaged (the message names it)."""


class ModelFileError(FileFormatError):
    """A model file (``Model.save``) or online trainer state (``OnlineTrainer.save``) that
    cannot be read: not one, or damaged."""


class CheckpointError(FileFormatError):
    """A checkpoint that cannot be resumed: not one, damaged, or of another training."""


__all__ = ["CheckpointError", "FileFormatError", "ModelFileError"]
