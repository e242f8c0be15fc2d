"""The ``streamssvm`` command: one subcommand per function below.

To add a subcommand, write ``_add_NAME(subparsers)`` (its arguments, and
``set_defaults(func=cmd_NAME)``) and ``cmd_NAME(args) -> int``, and list the adder in
``SUBCOMMANDS``. Errors of the types in ``USER_ERRORS`` (bad arguments, files that cannot be read or
written: see :mod:`streamssvm.errors`) are printed as one line ``streamssvm: error: ...``
with exit status 1; anything else is a bug and keeps its traceback.
A bad value of an option is argparse's error naming it (status 2), found by the library's own
check of the parameter it sets (``_checked``); errors the library finds later in a combination
of parameters name train's options (``TRAIN_OPTIONS``).
Warnings are one line ``streamssvm: warning: ...``.
A command that has to compile kernels missing from numba's cache (a first run) says so on a
terminal, in one line ``streamssvm: compiling kernels for the first run (~N s)`` when the
compile starts.
Output into a closed pipe ends the command quietly, with status 1. Ctrl-C ends it with
``streamssvm: interrupted`` and status 130 (while numba compiles, when the compile ends).
"""

import argparse
import contextlib
import errno
import functools
import os
import sys
import warnings
import zipfile

import numpy as np

from ._version import __version__
from ._ahead import helps
from ._atomic import check_output, clean_stale, is_stdout, open_output
from ._interrupt import interrupts_after_compiling
from ._jit_cache import watching_compiles
from ._names import options_named
from ._runtime import load_plugins, prepare
from .calibration import check_n_folds
from .data.store import COMPRESSIONS, INT32_MAX, LEVELLED, Store
from .data.storeset import open_stores
from .data.svmlight import check_block_size, check_n_features
from .data.textcache import CACHE_DIR_ENV, store_paths
from .losses.registry import check_width, parse_number
from .multiclass import check_class_weights
from .objective.smooth_svm import check_lam, check_threads
from .solvers import registry
from .solvers.auto import auto_option
from .solvers.checkpoint import check_every
from .solvers.common import check_seed, check_tol
from .solvers.sgd import check_rate_options
from .warmup import DEFAULT_SOLVERS, check_solvers, run_warmup

# ValueError: what the library raises on bad arguments or inputs (its messages say which),
# FileFormatError among them; FloatingPointError: a run that diverged (its message says
# which step to lower); OSError: a file that cannot be opened, read or written
USER_ERRORS = (ValueError, FloatingPointError, OSError)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _checked(check, expected, convert=float):
    """An argparse type: the text as ``convert`` reads it, which ``check`` (the library's
    check of the parameter the option sets) must take; else 'must be EXPECTED, got TEXT'."""
    def parse(text):
        try:
            value = convert(text)
            check(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}") from None
        return value
    return parse


def _class_weight(text):
    """'balanced', or 'LABEL:WEIGHT,...' as a dict of floats."""
    if text == "balanced":
        return text
    try:
        weights = {float(label): float(weight)
                   for label, weight in (item.rsplit(":", 1) for item in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"not 'balanced' nor LABEL:WEIGHT,...: {text!r}") from None
    try:
        check_class_weights(np.array(list(weights.values())))
    except ValueError:
        raise argparse.ArgumentTypeError(f"weights must be finite and >= 0, got {text!r}") from None
    return weights


_width = _checked(lambda value: check_width("sigma", value),
                  "a positive finite number or 2^K (K an integer)", parse_number)


def _width_list(text):
    return tuple(_width(t) for t in text.split(","))


_lam = _checked(check_lam, "a positive finite number")


def _lam_or_auto(text):
    return text if text == "auto" else _lam(text)


def _lam_list(text):
    return tuple(_lam(t) for t in text.split(","))


# --- convert ----------------------------------------------------------------------------------
def _add_convert(subparsers):
    p = subparsers.add_parser(
        "convert", help="convert svmlight/libsvm text (plain, .gz, .bz2, .xz) into a store",
        description="Convert svmlight/libsvm text into an HDF5 store of CSR blocks, streaming "
                    "(memory does not grow with the file). OUT appears only if the conversion "
                    "succeeds.")
    p.add_argument("input", metavar="IN", help="svmlight/libsvm text file, or - for the "
                                               "standard input")
    p.add_argument("output", metavar="OUT", help="store to write (HDF5; a regular file)")
    width = p.add_mutually_exclusive_group()
    width.add_argument("--n-features", metavar="N",
                       type=_checked(check_n_features, f"an integer in 0..{INT32_MAX}", int),
                       help="width of the matrix; an index beyond it is an error "
                            "(default: largest index + 1)")
    width.add_argument("--like", metavar="STORE",
                       help="take the width, the label map and the index base from this store "
                            "(e.g. convert a test file like its training file)")
    p.add_argument("--zero-based", choices=("auto", "yes", "no"), default="auto",
                   help="index base; auto: one-based unless an index 0 occurs (as scikit-learn)")
    p.add_argument("--float64", action="store_true",
                   help="store values as float64 (default float32)")
    p.add_argument("--multiclass", action="store_true",
                   help="accept any number of labels (a store of class indices if more than "
                        "two; train then fits one class against the rest for each)")
    blocks = p.add_mutually_exclusive_group()
    block_size = _checked(lambda value: check_block_size(value, "block size"),
                          f"an integer in 1..{INT32_MAX}", int)
    blocks.add_argument("--block-rows", type=block_size, metavar="N", help="rows per block")
    blocks.add_argument("--block-nnz", type=block_size, metavar="N", default=1 << 19,
                        help="end a block at the row reaching N nonzeros (default %(default)s)")
    p.add_argument("--compression", choices=("none", *COMPRESSIONS[1:]), default="none",
                   help="HDF5 compression of the blocks (default none: on a fast disk a pass "
                        "is faster without); the blosc codecs, for slow disks, need "
                        "hdf5plugin (pip install 'streamssvm[blosc]') to write and to read")
    p.add_argument("--compression-level", type=int, choices=range(1, 10), metavar="N",
                   help="gzip or blosc level, 1..9 (default 4 for gzip, 5 for blosc)")
    p.add_argument("--fletcher32", action="store_true",
                   help="also store HDF5's Fletcher-32 checksums, for other HDF5 readers (our "
                        "own, verified on every read, are always written)")
    p.add_argument("--encoding", choices=("auto", "plain", "lean"), default="auto",
                   help="lean: column indices as 16-bit gaps, one value per row where a "
                        "block's rows each hold one value (lossless, smaller; format version "
                        "3); auto (default): lean only the blocks of one value per row")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args):
    from .data.convert import convert_svmlight

    zero_based = {"auto": "auto", "yes": True, "no": False}[args.zero_based]
    if args.compression_level is not None and args.compression not in LEVELLED:
        raise ValueError(f"--compression-level is for gzip and blosc compression, not "
                         f"--compression {args.compression}")
    summary = convert_svmlight(
        args.input, args.output, n_features=args.n_features, zero_based=zero_based,
        like=args.like, multiclass=args.multiclass,
        value_dtype="float64" if args.float64 else "float32",
        block_rows=args.block_rows, block_nnz=args.block_nnz,
        compression=None if args.compression == "none" else args.compression,
        compression_level=args.compression_level,
        fletcher32=args.fletcher32, encoding=args.encoding, overwrite=args.overwrite,
        progress=not args.quiet)
    if not args.quiet:
        print(f"wrote {summary['dst']}: {summary['n_samples']:,} rows, "
              f"{summary['n_features']:,} features, {summary['nnz']:,} nonzeros, "
              f"{summary['n_blocks']} blocks, indices "
              f"{_index_base(summary['zero_based'], summary['zero_based_option'])}, "
              f"{_size(summary['store_bytes'])}")
    return 0


# --- info -------------------------------------------------------------------------------------
def _add_info(subparsers):
    p = subparsers.add_parser(
        "info", help="summarise a store or a model",
        description="Print the shape, labels, blocks, options and source of a store; or what "
                    "a model was trained with and on, how the training ended, and with --top "
                    "its largest weights.")
    p.add_argument("store", metavar="STORE|MODEL")
    p.add_argument("--top", type=_positive_int, metavar="K",
                   help="a model's K largest positive and negative weights")
    p.add_argument("--names", metavar="FILE",
                   help="feature names for --top, one per line: line k names column k (the "
                        "index k + 1 of a one-based svmlight file)")
    p.set_defaults(func=cmd_info)


def cmd_info(args):
    if zipfile.is_zipfile(args.store):  # a model (.npz); a store is HDF5
        return _model_info(args)
    if args.top or args.names:
        raise ValueError(f"--top and --names are for a model; {args.store} is not one")
    with Store(args.store) as store:
        meta = store.metadata
        counts = store.class_counts()
        rows = np.diff(store.row_offsets) if store.n_blocks else np.zeros(1, np.int64)
        cells = store.n_samples * store.n_features
        density = f"{100 * store.nnz / cells:.4g}%" if cells else "n/a"
        options = meta["options"]
        compression = options.get("compression") or "none"
        if options.get("compression_level"):
            compression += f" (level {options['compression_level']})"
        created = meta.get("created", "")
        lines = [
            ("store", store.path),
            ("rows", f"{store.n_samples:,}"),
            ("features", f"{store.n_features:,}"),
            ("nonzeros", f"{store.nnz:,}"),
            ("density", density),
            ("classes", f"{len(counts)}: " + ", ".join(
                f"{_label(c)} ({n:,} rows)" for c, n in zip(store.classes, counts)))
             if store.multiclass else
             ("labels", f"-1 is {_label(store.classes[0])} ({counts[0]:,} rows), "
                        f"+1 is {_label(store.classes[1])} ({counts[1]:,} rows)"),
            ("blocks", f"{store.n_blocks:,} (rows per block: min {rows.min():,}, "
                       f"mean {rows.mean():,.1f}, max {rows.max():,})"),
            ("size on disk", _size(os.path.getsize(store.path))),
            ("values", str(store.value_dtype)),
            ("compression", compression),
            ("encoding", f"{options['encoding']} ({options['lean_blocks']:,} of "
                         f"{store.n_blocks:,} blocks lean)" if "lean_blocks" in options
             else "plain"),
            ("checksums", ", ".join(name for name, on in (
                (f"{meta.get('checksum')} (verified on every read)", meta.get("checksum")),
                ("HDF5 fletcher32", options.get("fletcher32"))) if on) or "none"),
            ("source", f"{meta.get('source_name') or 'unknown'}, "
                       f"{_size(meta.get('source_size', -1))}"),
            ("source sha256", meta.get("source_sha256") or "unknown"),
            ("index base", _index_base(options.get("zero_based"),
                                       options.get("zero_based_option"))),
            ("created", created),
            ("format", f"{meta.get('format')} version {meta.get('version')}"),
        ]
    _print_fields(lines)
    return 0


def _model_info(args):
    from .model import Model

    model = Model.load(args.store)
    names = None
    if args.names:
        with open(args.names, encoding="utf-8") as fh:
            names = fh.read().splitlines()
        if len(names) != model.n_features_in_:
            raise ValueError(f"{args.names}: {len(names):,} names for the model's "
                             f"{model.n_features_in_:,} features")
    info = model.summary(top=args.top or 0, names=names)
    data = info["data"] or {}
    lines = [("model", args.store),
             ("classes", ", ".join(_label(c) for c in info["classes"])
              + (" (one vs rest)" if model.multiclass
                 else f" (+1 is {_label(info['classes'][1])})")),
             ("features", f"{info['n_features']:,} ({info['nonzero_weights']:,} nonzero weights)"),
             ("intercept", " ".join(f"{v:.6g}" for v in np.atleast_1d(info["intercept"])))]
    lines += [(key.replace("_", " "), _value(value))
              for key, value in info["training"].items()]
    if data:
        lines += [("data", data["source"]),
                  ("rows", f"{data['n_samples']:,} ("
                           + ", ".join(f"{_label(c)}: {n:,}" for c, n in
                                       zip(info["classes"], data["class_counts"])) + ")"
                   if len(data["class_counts"]) == len(info["classes"])
                   else f"{data['n_samples']:,}"),
                  ("nonzeros", f"{data['nnz']:,}")]
    results = info["result"] if model.multiclass else [dict(info["result"], label=None)]
    for r in results:
        prefix = "" if r.get("label") is None else f"class {_label(r['label'])}: "
        ended = "converged" if r["converged"] else f"stopped: {r['message']}"
        lines.append(("training" if not prefix else prefix.rstrip(": "),
                      f"{ended} in {r['n_iter']} iterations, {r['passes']} passes, "
                      f"{r['seconds']:.3g} s; objective {r['objective']:.10g}, ||grad|| "
                      f"{r['grad_norm']:.3g}"))
    _print_fields(lines)
    for row in info.get("top_weights", []):
        rest = "the rest" if model.multiclass else _label(info["classes"][0])
        for sign, toward in (("positive", _label(row["label"])), ("negative", rest)):
            prefix = f"class {_label(row['label'])}: " if model.multiclass else ""
            print(f"\n{prefix}largest {sign} weights (toward {toward}):")
            for j, name, weight in row[sign] or [(None, None, None)]:
                print("  none" if j is None else
                      f"  {weight:+.6g}  feature {j}" + (f"  {name}" if name is not None else ""))
    return 0


def _print_fields(lines):
    """``(key, value)`` pairs as two aligned columns."""
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        print(f"{key:<{width}}  {value}")


def _value(value):
    """A training parameter as info prints it."""
    if isinstance(value, float):
        return f"{value:g}"
    return "none" if value is None else str(value)


# --- verify -----------------------------------------------------------------------------------
def _add_verify(subparsers):
    p = subparsers.add_parser(
        "verify", help="check every block of a store (checksums, structure, metadata)",
        description="Read every block of each STORE and check its checksum, its structure "
                    "(row pointers, column indices, labels, values) and the metadata. Prints "
                    "one line per problem and exits with 1 if there is any.")
    p.add_argument("stores", nargs="+", metavar="STORE",
                   help="a store; with --clean, also a folder (cleaned, not verified)")
    p.add_argument("--clean", action="store_true",
                   help="first remove the temporary files that killed runs of this host left "
                        "in each STORE's folder (hidden .NAME.tmp-PID-HOST and "
                        ".NAME.probe-PID-HOST files whose process is gone)")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args):
    from .data.verify import verify_store

    status = 0
    for path in args.stores:
        if args.clean:
            folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
            for removed in clean_stale(folder):
                print(f"removed {removed} (left by a killed run)")
            if os.path.isdir(path):
                continue
        problems, summary = verify_store(path)  # a missing store is a problem like the others
        for line in problems:
            print(line)
        if problems:
            print(f"{path}: {len(problems)} problem{'s' if len(problems) > 1 else ''}")
            status = 1
            continue
        print(f"{path}: ok, {summary['n_blocks']:,} blocks, {summary['n_samples']:,} rows, "
              f"{summary['nnz']:,} nonzeros; "
              + ("checksums verified" if summary["checksums"] else
                 "no checksums (an older store, or written without them): structure "
                 "checked, changed values cannot be detected"))
    return status


# --- train ------------------------------------------------------------------------------------
def _add_cache_dir(p):
    """--cache-dir, of the commands that take svmlight text for a store."""
    p.add_argument("--cache-dir", metavar="DIR",
                   help="keep the stores converted from svmlight text here (default: "
                        f"${CACHE_DIR_ENV} if set, else beside the text under a hidden name, "
                        "else ~/.cache/streamssvm when its folder is not writable)")


def _add_train(subparsers):
    from .losses import LOSS_NAMES

    p = subparsers.add_parser(
        "train", help="train a linear classifier on a store",
        description="Minimise lambda/2 ||w||^2 + (1/n) sum psi(y_i w.x_i), streaming the store. "
                    "svmlight/libsvm text given for a store is converted once into a store "
                    "kept for the next runs (any number of classes; reused while the text is "
                    "unchanged).")
    p.add_argument("store", metavar="STORE", nargs="+",
                   help="a store or svmlight text; several (same width and labels) are read "
                        "as one")
    p.add_argument("-o", "--output", required=True, metavar="MODEL",
                   help="model file (.npz), or - for the standard output")
    p.add_argument("--loss", default="psi_g",
                   help=f"{', '.join(LOSS_NAMES)}, or NAME:key=value,... (a value may be 2^K; "
                        "default %(default)s)")
    p.add_argument("--sigma", type=_width,
                   help="smoothing width of psi_g / psi_m, a number, 2^K or 2**K (default 2^-3)")
    p.add_argument("--sigma-path", type=_width_list, default=(), metavar="S1,S2,...",
                   help="continuation: solve at these sigmas first (decreasing, all larger "
                        "than --sigma), warm-starting")
    p.add_argument("--lam", type=_lam_or_auto, default=1e-5,
                   help="lambda, or auto: chosen by cross-validation (as 'streamssvm cv' "
                        "with its default grid; sigma too for psi_g / psi_m without --sigma), "
                        "then the model trained at it (default %(default)s)")
    p.add_argument("--cv", type=_checked(check_n_folds, "an integer >= 2", int), metavar="K",
                   help="folds of --lam auto (implies it; default 5)")
    p.add_argument("--solver", choices=("auto", *registry.names()), default="auto",
                   help="auto: sdca on wide data (the sharper the loss, the less wide), "
                        "else newton; a solver's own option (--backtrack, --hessian-sample) "
                        "picks a solver that takes it (default %(default)s)")
    tolerance = _checked(check_tol, "a number >= 0")
    p.add_argument("--tol", type=tolerance, default=1e-4,
                   help="stop at ||grad|| <= tol ||grad at 0|| (default %(default)s)")
    p.add_argument("--abs-tol", type=tolerance, help="also stop at ||grad|| <= this")
    p.add_argument("--liblinear-tol", action="store_true",
                   help="scale tol by max(min(#pos, #neg), 1)/n as LIBLINEAR does")
    p.add_argument("--max-iter", type=_positive_int,
                   help="iterations, epochs for the stochastic solvers (default: the solver's)")
    p.add_argument("--intercept", action="store_true", help="fit an unregularised intercept")
    p.add_argument("--class-weight", type=_class_weight, metavar="balanced|LABEL:W,...",
                   help="weights of the classes' rows: 'balanced' (n / (k n_class)) or a list "
                        "such as 1:5,-1:0.5 (others 1)")
    _add_solver_flags(p)
    p.add_argument("--checkpoint", metavar="FILE",
                   help="write the solver's state here as it runs (atomically; binary stores)")
    p.add_argument("--checkpoint-every", type=_checked(check_every, "a number of seconds >= 0"),
                   metavar="SECONDS",
                   help="seconds between checkpoints (default 60; 0: every iteration)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the --checkpoint file (ends at the model an "
                        "uninterrupted run would give)")
    p.add_argument("--threads", type=_checked(check_threads, "an integer >= 1", int),
                   help="kernel threads (default: all cores)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="train on the workers of this Dask scheduler (e.g. tcp://host:8786): "
                        "each opens its blocks of the stores by the same paths (a shared "
                        "filesystem; docs/DISTRIBUTED.md); needs streamssvm[dask]")
    calibration = p.add_mutually_exclusive_group()
    calibration.add_argument("--calibrate", type=_checked(check_n_folds, "an integer >= 2", int),
                             metavar="K",
                             help="fit Platt's sigmoid for 'predict --probability' on decision "
                                  "values cross-fitted over K stratified folds of the rows "
                                  "(K + 1 trainings; not with --checkpoint, --scheduler)")
    calibration.add_argument("--calibration-data", metavar="STORE",
                             help="fit Platt's sigmoid for 'predict --probability' on this "
                                  "held-out store (converted --like the training store)")
    p.add_argument("--calibration-seed", type=_checked(check_seed, "an integer >= 0", int),
                   metavar="N", help="seed of --calibrate's folds (default 0)")
    _add_cache_dir(p)
    p.add_argument("--overwrite", action="store_true", help="replace MODEL if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bars, no summary")
    p.add_argument("--verbose", action="store_true",
                   help="one line per iteration on the standard error: f, ||grad||, CG steps, "
                        "trust radius or step, passes, seconds")
    p.set_defaults(func=cmd_train)


def _checkpoint_options(args):
    """``checkpoint`` / ``checkpoint_every`` for train_stream; --resume and --checkpoint-every
    without --checkpoint are refused."""
    if not args.checkpoint:
        for flag, given in (("--resume", args.resume),
                            ("--checkpoint-every", args.checkpoint_every is not None)):
            if given:
                raise ValueError(f"{flag} needs --checkpoint FILE")
        return {}
    exists = os.path.exists(args.checkpoint)
    if args.resume and not exists:
        raise FileNotFoundError(errno.ENOENT, "no checkpoint to resume from", args.checkpoint)
    if exists and not args.resume:
        raise FileExistsError(errno.EEXIST, "checkpoint exists (pass --resume to continue "
                              "it, or remove it)", args.checkpoint)
    options = dict(checkpoint=args.checkpoint)
    if args.checkpoint_every is not None:
        options["checkpoint_every"] = args.checkpoint_every
    return options


# the options that set the parameters the library's errors name when it finds a combination
# of them wrong (--loss psi_g:sigma=0.01 with --sigma-path 0.5, --step beyond 1 / --lam,
# --hogwild with --intercept)
TRAIN_OPTIONS = {"loss": "--loss", "sigma": "--sigma", "sigma_path": "--sigma-path",
                 "lam": "--lam", "step": "--step", "class_weight": "--class-weight",
                 "fit_intercept": "--intercept", "delay": "--delay", "hogwild": "--hogwild",
                 "cv": "--calibrate", "calibration_data": "--calibration-data",
                 "checkpoint": "--checkpoint", "client": "--scheduler"}

def _solver_flags():
    """``{flag: option}``: the solvers' command-line flags (:mod:`streamssvm.solvers.registry`),
    each with the option whose help it shows (the one named as the flag, else the first)."""
    flags = {}
    for option in registry.all_options():
        if option.flag and (option.flag not in flags
                            or option.name == _dest(option.flag) != flags[option.flag].name):
            flags[option.flag] = option
    return flags


def _dest(flag):
    return flag.lstrip("-").replace("-", "_")


def _add_solver_flags(p):
    """train's flags for the solvers' options; left out, they are None."""
    for flag, option in _solver_flags().items():
        kwargs = dict(help=option.help, metavar=option.metavar)
        if option.type is bool:
            kwargs = dict(help=option.help, action="store_true", default=None)
        elif option.choices:
            kwargs["choices"] = option.choices
            del kwargs["metavar"]
        else:
            kwargs["type"] = _checked(option.check or (lambda value: None), option.expected,
                                      option.type)
        p.add_argument(flag, **kwargs)


def _solver_options(args):
    """The solver options given on the command line, as train_stream names them. With auto,
    they narrow train_stream's choice to a solver that takes them; else one that the solver
    does not take is refused, and those left out are the solver's defaults."""
    given = {flag: getattr(args, _dest(flag)) for flag in _solver_flags()
             if getattr(args, _dest(flag)) is not None}
    solver = None if args.solver == "auto" else registry.record(args.solver)
    taken = ({o.flag: o.name for o in solver.options if o.flag} if solver is not None
             else {flag: auto_option(flag) or _dest(flag) for flag in given})
    options = {taken.get(flag, _dest(flag)): value for flag, value in given.items()}
    if "eta0" in options:  # before the data is read: the schedule it is given with
        check_rate_options(options.get("learning_rate", "optimal"), options["eta0"])
    if solver is None:
        return options
    untaken = [flag for flag in given if flag not in taken]
    if untaken:
        raise ValueError(f"--solver {args.solver} takes no " + ", ".join(
            f"{flag} ({', '.join(_takers(flag))})" for flag in untaken)
            + ": leave it out, or choose a solver that takes it")
    return dict({o.name: o.default for o in solver.options if o.flag}, **options)


def _takers(flag):
    """The solvers that take the option ``flag`` sets (--step: saga's and svrg's step, sgd's
    eta0)."""
    return [r.name for r in registry.records() if any(o.flag == flag for o in r.options)]


@contextlib.contextmanager
def _dask_client(address):
    """A client of the Dask scheduler at ``address``, or None without one."""
    if address is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("--scheduler needs dask[distributed]: "
                         "pip install 'streamssvm[dask]'") from None
    try:
        client = Client(address)
    except OSError as exc:
        raise ValueError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    with client:
        yield client


def _calibrated_training(args):
    """``calibrated`` with the folds or the held-out store that --calibrate or
    --calibration-data give, or None without either."""
    from .calibration import calibrated

    if not (args.calibrate or args.calibration_data):
        if args.calibration_seed is not None:
            raise ValueError("--calibration-seed needs --calibrate K")
        return None
    if args.calibration_data:
        if args.calibration_seed is not None:
            raise ValueError("--calibration-seed is for --calibrate K, not --calibration-data")
        check_output(args.output, args.overwrite, [args.calibration_data])
        return functools.partial(calibrated, calibration_data=args.calibration_data)
    return functools.partial(calibrated, cv=args.calibrate,
                             seed=0 if args.calibration_seed is None else args.calibration_seed)


def _calibration_summary(platt):
    """One line: how the model's Platt sigmoids were fitted, and their A, B."""
    fitted = platt.fitted
    how = (f"{fitted['folds']}-fold cross-fitted decision values (seed {fitted['seed']})"
           if fitted.get("method") == "cross_fit" else f"held-out {fitted.get('data')}")
    pairs = ", ".join(f"A {a:.6g} B {b:.6g}" for a, b in zip(platt.a, platt.b))
    return f"Platt's sigmoid on {how}, {fitted.get('n_samples'):,} rows: {pairs}"


def cmd_train(args):
    from .multiclass import train_one_vs_rest

    check_output(args.output, args.overwrite, args.store)  # before the training, not after
    args.store = store_paths(args.store, cache_dir=args.cache_dir, progress=not args.quiet)
    if len(args.store) == 1:
        args.store = args.store[0]
    if args.checkpoint and os.path.realpath(args.checkpoint) == os.path.realpath(args.output):
        raise ValueError(f"--checkpoint {args.checkpoint} is the model file -o {args.output}: "
                         f"give it another name")
    options = dict(_solver_options(args), **_checkpoint_options(args))
    if args.lam == "auto" or args.cv is not None:
        _choose_lam(args, options)
    train = _calibrated_training(args) or train_one_vs_rest
    with _dask_client(args.scheduler) as client, options_named(TRAIN_OPTIONS):
        model = train(args.store, class_weight=args.class_weight, loss=args.loss,
                                  sigma=args.sigma, sigma_path=args.sigma_path, lam=args.lam,
                                  solver=args.solver, tol=args.tol, abs_tol=args.abs_tol,
                                  liblinear_tol=args.liblinear_tol, max_iter=args.max_iter,
                                  fit_intercept=args.intercept, n_threads=args.threads,
                                  progress=not (args.quiet or args.verbose), client=client,
                                  verbose=args.verbose, **options)
    model.save(args.output, overwrite=args.overwrite)
    if not args.quiet:
        p = model.params
        report = sys.stderr if is_stdout(args.output) else sys.stdout
        if model.multiclass:
            stopped = [c["label"] for c in p["per_class"] if not c["converged"]]
            print(f"one-vs-rest over {len(model.classes_)} classes: {p['solver']} "
                  f"{'converged' if p['converged'] else 'stopped early for ' + str(stopped)}, "
                  f"at most {p['n_iter']} iterations, {p['passes']} passes, "
                  f"{p['seconds']:.2f} s; wrote {args.output}", file=report)
        else:
            print(f"{p['solver']} {'converged' if p['converged'] else 'stopped: ' + p['message']}"
                  f" in {p['n_iter']} iterations, {p['passes']} passes, {p['seconds']:.2f} s; "
                  f"objective {p['objective']:.8g}, ||grad|| {p['grad_norm']:.3g}; wrote "
                  f"{args.output}", file=report)
        if model.calibration is not None:
            print(_calibration_summary(model.calibration), file=report)
    return 0


def _choose_lam(args, options):
    """--lam auto: set args.lam (and args.sigma, with its continuation, for psi_g / psi_m
    without --sigma) to the best point of a K-fold cross-validation on the store, printing
    it; the solver options but not the checkpoint or the scheduler serve the folds."""
    from .selection import cross_validate

    # the folds' own seed is cross_validate's seed (0); the stochastic solvers take theirs
    given = {k: v for k, v in options.items()
             if k not in ("checkpoint", "checkpoint_every", "seed")}
    with options_named(dict(TRAIN_OPTIONS, lam="--lam", cv="--cv", folds="--cv")):
        result = cross_validate(args.store, loss=args.loss,
                                sigmas=None if args.sigma is None else (args.sigma,),
                                folds=args.cv or 5, solver=args.solver, tol=args.tol,
                                fit_intercept=args.intercept, refit=False,
                                progress=not (args.quiet or args.verbose),
                                class_weight=args.class_weight, abs_tol=args.abs_tol,
                                liblinear_tol=args.liblinear_tol, n_threads=args.threads,
                                **({} if args.max_iter is None else {"max_iter": args.max_iter}),
                                **given)
    args.lam = result.best_lam
    if result.best_sigma is not None and args.sigma is None:
        args.sigma = result.best_sigma
        if not args.sigma_path:
            args.sigma_path = tuple(s for s in result.sigmas if s > result.best_sigma)
    if not args.quiet:
        print(result.summary(), file=sys.stderr if is_stdout(args.output) else sys.stdout)


# --- cv ---------------------------------------------------------------------------------------
# the options that set the parameters cross_validate's errors name
CV_OPTIONS = {"loss": "--loss", "lams": "--lams", "sigmas": "--sigmas", "folds": "--folds",
              "cv": "--folds", "lam_ratio": "--lam-ratio", "patience": "--patience",
              "max_lams": "--max-lams", "fit_intercept": "--intercept"}


def _add_cv(subparsers):
    from .losses import LOSS_NAMES

    p = subparsers.add_parser(
        "cv", help="choose lambda (and sigma) by k-fold cross-validation",
        description="K-fold cross-validation along warm-started paths: each fold's model "
                    "trained from the largest lambda down (and from the widest sigma down "
                    "for psi_g / psi_m), scored on the fold's rows; prints the accuracy and "
                    "mean loss of every point and the best one. Folds are row subsets of "
                    "the store, read through it.")
    p.add_argument("store", metavar="STORE", nargs="+",
                   help="a store or svmlight text; several (same width and labels) are read "
                        "as one")
    p.add_argument("--loss", default="psi_g",
                   help=f"{', '.join(LOSS_NAMES)}, or NAME:key=value,... (default %(default)s)")
    p.add_argument("--lams", type=_lam_list, metavar="L1,L2,...",
                   help="the lambdas, decreasing (default: from where the model is trivial "
                        "down by --lam-ratio, until the accuracy stops improving)")
    p.add_argument("--sigmas", type=_width_list, metavar="S1,S2,...",
                   help="the widths of psi_g / psi_m, decreasing (default 2^1,2^-1,2^-3,2^-5)")
    p.add_argument("--folds", type=_checked(check_n_folds, "an integer >= 2", int), default=5,
                   metavar="K", help="stratified folds (default %(default)s)")
    p.add_argument("--seed", type=_checked(check_seed, "an integer >= 0", int), default=0,
                   help="seed of the folds (default %(default)s)")
    p.add_argument("--lam-ratio", type=float, default=2.0, metavar="R",
                   help="factor between the default grid's lambdas (default %(default)s)")
    p.add_argument("--patience", type=_positive_int, default=5, metavar="N",
                   help="the default grid stops after N points without a higher accuracy "
                        "(default %(default)s)")
    p.add_argument("--max-lams", type=_positive_int, default=30, metavar="N",
                   help="most points of the default grid at each sigma (default %(default)s)")
    p.add_argument("--solver", choices=("auto", *registry.names()), default="auto",
                   help="the solver at every point (default %(default)s)")
    p.add_argument("--tol", type=_checked(check_tol, "a number >= 0"), default=1e-4,
                   help="stop at ||grad|| <= tol ||grad at 0|| (default %(default)s)")
    p.add_argument("--liblinear-tol", action="store_true",
                   help="scale tol by max(min(#pos, #neg), 1)/n as LIBLINEAR does (with "
                        "--tol 0.01: the rule LIBLINEAR's -C stops at)")
    p.add_argument("--max-iter", type=_positive_int,
                   help="iterations at each point (default: the solver's)")
    p.add_argument("--intercept", action="store_true", help="fit an unregularised intercept")
    p.add_argument("--threads", type=_checked(check_threads, "an integer >= 1", int),
                   help="kernel threads (default: all cores)")
    p.add_argument("-o", "--output", metavar="MODEL",
                   help="also train on all rows at the best point and write the model here")
    p.add_argument("--json", metavar="FILE", help="write the whole table as JSON here")
    p.add_argument("--plot", metavar="FILE.png",
                   help="plot accuracy against lambda, one curve per sigma (needs "
                        "matplotlib: pip install 'streamssvm[plot]')")
    _add_cache_dir(p)
    p.add_argument("--overwrite", action="store_true", help="replace the outputs if they exist")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_cv)


def cmd_cv(args):
    import json

    from ._json import json_default
    from .selection import cross_validate

    outputs = [path for path in (args.output, args.json, args.plot) if path]
    for path in outputs:  # before the path, not after
        check_output(path, args.overwrite, args.store)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plot needs matplotlib: pip install 'streamssvm[plot]'") from None
    stores = store_paths(args.store, cache_dir=args.cache_dir, progress=not args.quiet)
    with options_named(CV_OPTIONS):
        result = cross_validate(stores[0] if len(stores) == 1 else stores, loss=args.loss,
                                lams=args.lams, sigmas=args.sigmas, folds=args.folds,
                                seed=args.seed, fit_intercept=args.intercept,
                                solver=args.solver, tol=args.tol,
                                liblinear_tol=args.liblinear_tol, refit=bool(args.output),
                                progress=not args.quiet, lam_ratio=args.lam_ratio,
                                patience=args.patience, max_lams=args.max_lams,
                                n_threads=args.threads,
                                **({} if args.max_iter is None else {"max_iter": args.max_iter}))
    print(result.table())
    if args.json:
        with open_output(args.json, "w", overwrite=args.overwrite) as fh:
            json.dump(result.to_json(), fh, default=json_default)
    if args.plot:
        result.plot(args.plot, overwrite=args.overwrite)
    if args.output:
        result.model.save(args.output, overwrite=args.overwrite)
    return 0


# --- predict ----------------------------------------------------------------------------------
def _add_predict(subparsers):
    p = subparsers.add_parser(
        "predict", help="apply a model to a store: accuracy, and predictions on request",
        description="Stream STORE through MODEL and print the accuracy against the store's "
                    "labels; with -o, write one prediction per line (the original labels, or "
                    "with --decision the decision values).")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("store", metavar="STORE",
                   help="a store, or svmlight text (converted like the model's training data: "
                        "its width, labels and index base; kept for the next runs)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write predictions here: a file (whole or not at all), - for the "
                        "standard output (the accuracy then goes to the standard error), or "
                        "a pipe or device, written in place")
    written = p.add_mutually_exclusive_group()
    written.add_argument("--decision", action="store_true",
                         help="write decision values instead of labels: two classes, one "
                              "column (> 0: the training store's +1 label); more, one column "
                              "per class in the model's class order, the training store's as "
                              "'streamssvm info STORE' lists them (increasing label values "
                              "for a converted file)")
    written.add_argument("--probability", action="store_true",
                         help="write class probabilities instead of labels: one column per "
                              "class, after a first line '# LABEL LABEL ...' naming them (the "
                              "model's class order, as for --decision); the logistic loss's "
                              "own, or Platt's for a model trained with --calibrate or "
                              "--calibration-data")
    _add_cache_dir(p)
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.set_defaults(func=cmd_predict)


def cmd_predict(args):
    from .calibration import class_probabilities, no_probabilities
    from .model import Model

    if args.output:
        # before the pass over the store
        check_output(args.output, args.overwrite, (args.model, args.store))
    elif args.decision or args.probability:
        raise ValueError(f"{'--decision' if args.decision else '--probability'} says what to "
                         f"write to -o FILE: give one")
    model = Model.load(args.model)
    if args.probability:  # before the pass over the store
        reason = no_probabilities(model)
        if reason:
            raise ValueError(f"{args.model}: {reason}: train it with --calibrate K (Platt's "
                             f"sigmoid on K-fold cross-fitted decision values) or "
                             f"--calibration-data STORE, or with --loss logistic")
    with open_stores(args.store, like=model.text_options(), cache_dir=args.cache_dir) as store:
        decision, labels = model.decision_and_labels(store)
        accuracy = model.accuracy(decision, labels, store.classes)
        unknown = model.unknown_labels(labels, store.classes, args.store)
    if unknown:
        # this line's: the command's own warning, printed without its place (a command
        # line has no caller's line to name)
        warnings.warn(unknown, UserWarning, stacklevel=1)
    report = sys.stderr if args.output and is_stdout(args.output) else sys.stdout
    print(f"accuracy {accuracy:.4f} on {len(labels):,} rows of {args.store}", file=report)
    if args.output:  # one-vs-rest decision values: one column per class
        with open_output(args.output, "wb", overwrite=args.overwrite) as fh:
            if args.decision:
                np.savetxt(fh, decision, fmt="%.17g")
            elif args.probability:  # '# LABEL ...': np.loadtxt skips it
                np.savetxt(fh, class_probabilities(model, decision), fmt="%.17g",
                           header=" ".join(_label(v) for v in model.classes_.tolist()))
            else:
                np.savetxt(fh, [_label(v) for v in model.labels_of(decision).tolist()],
                           fmt="%s")
    return 0


# --- losses, demo -----------------------------------------------------------------------------
def _add_losses(subparsers):
    p = subparsers.add_parser("losses", help="list the losses, one line each")
    p.set_defaults(func=cmd_losses)


def cmd_losses(args):
    from .losses import describe_losses

    print("\n".join(describe_losses()))
    return 0


def _add_demo(subparsers):
    p = subparsers.add_parser(
        "demo", help="the main job on the shipped a9a data: convert, train, test",
        description="Convert the shipped a9a train/test files to stores, print the store "
                    "summary, train psi_G (solver auto), print train and test accuracy.")
    p.add_argument("--workdir", help="keep the stores here, a9a.h5 and a9a.t.h5 (created if "
                                      "missing; default: a temporary folder)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the stores in WORKDIR if they exist")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args):
    from .demo import run_demo

    run_demo(args.workdir, progress=not args.quiet, overwrite=args.overwrite)
    return 0


# --- warmup ---------------------------------------------------------------------------------
def _solver_list(text):
    return registry.names() if text == "all" else tuple(text.split(","))


def _add_warmup(subparsers):
    p = subparsers.add_parser(
        "warmup", help="compile the kernels of the common paths into numba's cache",
        description="Run convert, train (each solver of --solvers, and on a scipy matrix) "
                    "and predict once on the shipped a9a data, so that their kernels are "
                    "compiled into numba's disk cache before a first real run; print what "
                    "each path compiled.")
    p.add_argument("--solvers", metavar="LIST", default=DEFAULT_SOLVERS,
                   type=_checked(check_solvers, f"solvers of {', '.join(registry.names())}, "
                                                f"comma-separated, or all", _solver_list),
                   help="solvers to compile, comma-separated, or 'all' (default "
                        f"{','.join(DEFAULT_SOLVERS)}: those solver auto picks, and TRON)")
    p.add_argument("--jobs", type=int, choices=(1, 2), default=2,
                   help="2 (default): the scipy matrix's path in a process of its own, beside "
                        "the others; 1: all in this process")
    p.set_defaults(func=cmd_warmup)


def cmd_warmup(args):
    run_warmup(args.solvers, args.jobs)
    return 0


# Seconds a first run of the command spends compiling on a cold cache, for its notice, with
# the compile helper (streamssvm._ahead) and without: estimates, tools/bench_compile.py's
# cold runs less its warm ones, worst path, rounded up (tests/test_jit_cache.py checks them
# against benchmarks/compile.json)
FIRST_COMPILE_SECONDS = {"convert": (4, 5), "train": (6, 10), "predict": (1, 1),
                         "demo": (7, 12)}


def _compile_notice(args):
    """The line said when a command's first kernel compile starts: on a terminal, as the
    progress bars (None: not a terminal, --quiet, or warmup, which says what it compiles)."""
    isatty = getattr(sys.stderr, "isatty", None)
    if args.command == "warmup" or getattr(args, "quiet", False) or not (isatty and isatty()):
        return None
    helped, alone = FIRST_COMPILE_SECONDS.get(args.command, (1, 1))
    return (f"streamssvm: compiling kernels for the first run "
            f"(~{helped if helps() else alone} s)")


def _label(value):
    """A label as written: an integer without a decimal point, else the shortest text that
    reads back as the same float (%g rounded 1000001 to 1e+06); text as it is."""
    if isinstance(value, str):
        return value
    return str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)


def _index_base(zero_based, option):
    """The index base the text was read with, and whether ``zero_based="auto"`` found it."""
    if zero_based is None:  # not converted from text
        return "unknown"
    base = "zero-based" if zero_based else "one-based"
    if option != "auto":
        return f"{base} (set, not detected)"
    return f"{base} (detected: {'an' if zero_based else 'no'} index 0 in the file)"


def _size(n):
    if n is None or n < 0:
        return "unknown size"
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{n:,} bytes" if unit == "bytes" else f"{value:.1f} {unit} ({n:,} bytes)"


SUBCOMMANDS = [_add_convert, _add_info, _add_verify, _add_train, _add_cv, _add_predict,
               _add_losses, _add_demo, _add_warmup]


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
    try:
        load_plugins()  # before the parser, which lists what they register
    except ValueError as exc:
        print(f"streamssvm: error: {exc}", file=sys.stderr)
        return 1
    args = build_parser().parse_args(argv)
    prepare()
    try:
        # a Ctrl-C while numba compiles is raised when the compile ends (raised inside, ctypes
        # would drop it in llvmlite's callback)
        with (warnings.catch_warnings(), interrupts_after_compiling(),
              watching_compiles(_compile_notice(args))):
            warnings.showwarning = _show_warning
            # numpy's floating-point warnings: a diverged run says so in its error
            warnings.filterwarnings("ignore", r"(overflow|invalid value|divide by zero) "
                                    r"encountered", RuntimeWarning)
            status = args.func(args)  # whose bars train_stream and convert close on any exit
        sys.stdout.flush()  # a closed pipe fails here, not at exit
        return status
    except BrokenPipeError:  # the reader of the output is gone (| head): end quietly, the
        # rest of the output to devnull (Python's idiom: exit's flush fails no more)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except USER_ERRORS as exc:
        print(f"streamssvm: error: {_message(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("streamssvm: interrupted", file=sys.stderr)
        return 130


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as one line, as errors are (not the library's file, line and source)."""
    print(f"streamssvm: warning: {message}", file=sys.stderr)


def _message(exc):
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
