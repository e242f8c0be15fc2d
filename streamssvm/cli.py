"""The ``streamssvm`` command: one subcommand per function below.

To add a subcommand, write ``_add_NAME(subparsers)`` (its arguments, and
``set_defaults(func=cmd_NAME)``) and ``cmd_NAME(args) -> int``, and list the adder in
``SUBCOMMANDS``. Errors of the types in ``USER_ERRORS`` are printed as one line
``streamssvm: error: ...`` with exit status 1; anything else is a bug and keeps its traceback.
"""

import argparse
import errno
import os
import sys

import numpy as np

from . import __version__
from .data.store import Store, StoreError
from .data.svmlight import SvmlightFormatError

USER_ERRORS = (SvmlightFormatError, StoreError, FileNotFoundError, FileExistsError,
               IsADirectoryError, NotADirectoryError, PermissionError)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


# --- convert ----------------------------------------------------------------------------------
def _add_convert(subparsers):
    p = subparsers.add_parser(
        "convert", help="convert svmlight/libsvm text (plain, .gz, .bz2, .xz) into a store",
        description="Convert svmlight/libsvm text into an HDF5 store of CSR blocks, streaming "
                    "(memory does not grow with the file). OUT appears only if the conversion "
                    "succeeds.")
    p.add_argument("input", metavar="IN", help="svmlight/libsvm text file")
    p.add_argument("output", metavar="OUT", help="store to write (HDF5)")
    width = p.add_mutually_exclusive_group()
    width.add_argument("--n-features", type=_positive_int, metavar="N",
                       help="width of the matrix; an index beyond it is an error "
                            "(default: largest index + 1)")
    width.add_argument("--like", metavar="STORE",
                       help="take the width and the label map from this store (e.g. convert a "
                            "test file like its training file)")
    p.add_argument("--zero-based", choices=("auto", "yes", "no"), default="auto",
                   help="index base; auto: one-based unless an index 0 occurs (as scikit-learn)")
    p.add_argument("--float64", action="store_true",
                   help="store values as float64 (default float32)")
    blocks = p.add_mutually_exclusive_group()
    blocks.add_argument("--block-rows", type=_positive_int, metavar="N", help="rows per block")
    blocks.add_argument("--block-nnz", type=_positive_int, metavar="N", default=1 << 19,
                        help="end a block at the row reaching N nonzeros (default %(default)s)")
    p.add_argument("--compression", choices=("none", "gzip", "lzf"), default="none",
                   help="HDF5 compression of the blocks (default none)")
    p.add_argument("--fletcher32", action="store_true", help="store HDF5 checksums with each block")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args):
    from .data.convert import convert_svmlight

    zero_based = {"auto": "auto", "yes": True, "no": False}[args.zero_based]
    summary = convert_svmlight(
        args.input, args.output, n_features=args.n_features, zero_based=zero_based,
        like=args.like, value_dtype="float64" if args.float64 else "float32",
        block_rows=args.block_rows, block_nnz=args.block_nnz,
        compression=None if args.compression == "none" else args.compression,
        fletcher32=args.fletcher32, overwrite=args.overwrite, progress=not args.quiet)
    if not args.quiet:
        print(f"wrote {summary['dst']}: {summary['n_samples']:,} rows, "
              f"{summary['n_features']:,} features, {summary['nnz']:,} nonzeros, "
              f"{summary['n_blocks']} blocks, {_size(summary['store_bytes'])}")
    return 0


# --- info -------------------------------------------------------------------------------------
def _add_info(subparsers):
    p = subparsers.add_parser("info", help="summarise a store",
                              description="Print the shape, labels, blocks, options and source "
                                          "of a store.")
    p.add_argument("store", metavar="STORE")
    p.set_defaults(func=cmd_info)


def cmd_info(args):
    if not os.path.exists(args.store):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), args.store)
    with Store(args.store) as store:
        meta = store.metadata
        n_neg, n_pos = store.label_counts()
        rows = np.diff(store.row_offsets) if store.n_blocks else np.zeros(1, np.int64)
        cells = store.n_samples * store.n_features
        density = f"{100 * store.nnz / cells:.4g}%" if cells else "n/a"
        options = meta["options"]
        compression = options.get("compression") or "none"
        if compression == "gzip" and options.get("compression_level"):
            compression += f" (level {options['compression_level']})"
        created = meta.get("created", "")
        lines = [
            ("store", store.path),
            ("rows", f"{store.n_samples:,}"),
            ("features", f"{store.n_features:,}"),
            ("nonzeros", f"{store.nnz:,}"),
            ("density", density),
            ("labels", f"-1 is {store.classes[0]:g} ({n_neg:,} rows), "
                       f"+1 is {store.classes[1]:g} ({n_pos:,} rows)"),
            ("blocks", f"{store.n_blocks:,} (rows per block: min {rows.min():,}, "
                       f"mean {rows.mean():,.1f}, max {rows.max():,})"),
            ("size on disk", _size(os.path.getsize(store.path))),
            ("values", str(store.value_dtype)),
            ("compression", compression),
            ("checksums", "fletcher32" if options.get("fletcher32") else "none"),
            ("source", f"{meta.get('source_name') or 'unknown'}, "
                       f"{_size(meta.get('source_size', -1))}"),
            ("source sha256", meta.get("source_sha256") or "unknown"),
            ("created", created),
            ("format", f"{meta.get('format')} version {meta.get('version')}"),
        ]
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        print(f"{key:<{width}}  {value}")
    return 0


def _size(n):
    if n is None or n < 0:
        return "unknown size"
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024:
            break
        value /= 1024
    else:
        unit = "TiB"
    return f"{n:,} bytes" if unit == "bytes" else f"{value:.1f} {unit} ({n:,} bytes)"


SUBCOMMANDS = [_add_convert, _add_info]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="streamssvm", description="Out-of-core smooth-hinge SVMs on HDF5 stores.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv=None):
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except USER_ERRORS as exc:
        print(f"streamssvm: error: {_message(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("streamssvm: interrupted", file=sys.stderr)
        return 130


def _message(exc):
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
