"""Tamper with the metadata of small stores and count how training and prediction take it.

The stores are made from the first rows of the shipped a9a (streamssvm/datasets): float32
and float64 plain blocks, lean blocks, three classes, and gzip-compressed (chunked)
datasets. Each case copies one, makes one edit of what the reader relies on to place and
type the bytes it reads (a root attribute: value type, counts, version, classes, options;
/row_offsets, /nnz_offsets; /layout's offsets, lengths and lean flags; the shape of
/layout or /checksums; the type of a block's dataset; a block cut off with every count
made to agree; a block's group or dataset that HDF5 no longer finds), then does one of
these to the checksums:

``deleted``
    the root attributes ``checksum`` and ``attributes_checksum`` removed;
``stripped``
    every checksum removed: those two, /checksums and the root datasets' own (as a store
    written without checksums);
``stale``
    left as they were;
``recomputed``
    made to match the edit: /checksums over what a read at the edited place and of the
    edited type takes, each root dataset's own, and ``attributes_checksum``.

It then trains on the copy (a few iterations, ``liblinear_tol`` so that the rows per
class count) and predicts and scores the copy, and compares with the intact store:

``clear error``
    a StoreError or ValueError whose message names the copy's path;
``correct result``
    the same decision values and accuracy, bit for bit: a harmless edit;
``SILENT``
    no error but other results: a wrong number reached the user (a failure);
``OTHER``
    any other exception, or an error naming no file (a failure).

Left out: edits that make another valid store, which a writer could have written and no
reader can tell from the original without the source text (other label values in
``classes``, in the order they are sorted; another ``n_features`` above the largest
index; blocks' bytes rewritten with every checksum recomputed).

    python tools/tamper_store.py --out /tmp/tamper.json
"""

import argparse
import collections
import json
import lzma
import os
import shutil
import sys
import tempfile
import warnings

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from streamssvm import train_one_vs_rest  # noqa: E402
from streamssvm._atomic import check_output  # noqa: E402
from streamssvm.data.checksum import attributes_checksum, checksum  # noqa: E402
from streamssvm.data.convert import convert_svmlight  # noqa: E402
from streamssvm.data.store import BLOCK_DATASETS, StoreError, layout_table  # noqa: E402
from streamssvm.datasets import a9a_paths  # noqa: E402
from streamssvm.experiments.report import write_json  # noqa: E402

BLOCK_ROWS = 250  # blocks of equal rows: indptr and y of every block have the same length
# kind: (convert options, values scaled by column (so that bytes read from elsewhere show),
# three classes)
STORES = {
    "float32": (dict(encoding="plain"), True, False),
    "float64": (dict(encoding="plain", value_dtype="float64"), True, False),
    "lean": (dict(encoding="lean"), False, False),  # a9a's ones: gaps and row_data
    "multiclass": (dict(encoding="plain", multiclass=True), True, True),
    "gzip": (dict(encoding="lean", compression="gzip"), True, False),
}
MODES = ("deleted", "stripped", "stale", "recomputed")
ROOT_DATASETS = ("row_offsets", "nnz_offsets", "checksums", "layout")
OUTCOMES = ("clear error", "correct result", "SILENT", "OTHER")


def shipped_text(rows, scaled, multiclass):
    """The first ``rows`` lines of the shipped a9a, values scaled by 1 + (column mod 7) / 8
    if ``scaled``; with ``multiclass`` the labels 0, 1, 2 (+1, then -1 by odd or even
    line)."""
    lines = []
    with lzma.open(a9a_paths()[0], "rt") as fh:
        for i, line in zip(range(rows), fh):
            label, *pairs = line.split()
            if multiclass:
                label = "2" if float(label) > 0 else str(i % 2)
            if scaled:
                pairs = [f"{j}:{float(v) * (1 + int(j) % 7 / 8):g}"
                         for j, v in (p.split(":") for p in pairs)]
            lines.append(" ".join([label, *pairs]))
    return "\n".join(lines) + "\n"


def make_store(kind, folder, rows):
    """The intact store of ``kind`` (see :data:`STORES`) in ``folder``; returns its path."""
    options, scaled, multiclass = STORES[kind]
    text = os.path.join(folder, f"{kind}.svm")
    with open(text, "w") as fh:
        fh.write(shipped_text(rows, scaled, multiclass))
    path = os.path.join(folder, f"{kind}.h5")
    convert_svmlight(text, path, block_rows=BLOCK_ROWS, progress=False, **options)
    return path


# ---- edits: each changes the open h5py file f and returns False where it does not apply

def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _set_text(f, name, text):
    f.attrs[name] = np.bytes_(text.encode())  # fixed length, as the writer keeps strings


def _options(f):
    return json.loads(_text(f.attrs["options"]))


def _set_options(f, options):
    _set_text(f, "options", json.dumps(options, sort_keys=True))


def _other_float(name):
    return "float64" if name == "float32" else "float32"


def _replace(f, name, values):
    """Dataset ``name`` rewritten as ``values`` (another type or shape), its attributes
    kept (a stale checksum stays stale)."""
    attrs = dict(f[name].attrs)
    del f[name]
    f[name] = values
    f[name].attrs.update(attrs)


def value_dtype(f):
    _set_text(f, "value_dtype", _other_float(_text(f.attrs["value_dtype"])))


def value_dtype_and_options(f):
    value_dtype(f)
    _set_options(f, dict(_options(f), value_dtype=_text(f.attrs["value_dtype"])))


def options_value_dtype(f):
    options = _options(f)
    _set_options(f, dict(options, value_dtype=_other_float(options["value_dtype"])))


def options_compression(f):
    options = _options(f)
    _set_options(f, dict(options, compression=None if options["compression"] else "lzf"))


def options_encoding(f):
    options = _options(f)
    lean = "encoding" in options
    _set_options(f, {k: v for k, v in options.items() if k not in ("encoding", "lean_blocks")}
                 if lean else dict(options, encoding="lean", lean_blocks=0))


def version(number):
    def edit(f):
        if int(f.attrs["version"]) == number:
            return False
        f.attrs["version"] = number
    edit.__name__ = f"version={number}"
    return edit


def count(name, change):
    def edit(f):
        if name not in f.attrs:
            return False
        f.attrs[name] = change(int(f.attrs[name]))
    edit.__name__ = f"{name} {change.__doc__}"
    return edit


def _plus1(n):
    """+1"""
    return n + 1


def _minus1(n):
    """-1"""
    return n - 1


def _one(n):
    """=1"""
    return 1


def class_counts_moved(f):
    if "class_counts" not in f.attrs:
        return False
    counts = f.attrs["class_counts"].copy()
    counts[0], counts[1] = counts[0] + 1, counts[1] - 1
    f.attrs["class_counts"] = counts


def class_counts_short(f):
    if "class_counts" not in f.attrs:
        return False
    f.attrs["class_counts"] = f.attrs["class_counts"][:-1]


def classes_extra(f):
    f.attrs["classes"] = np.append(f.attrs["classes"], f.attrs["classes"].max() + 1)


def classes_duplicate(f):
    classes = f.attrs["classes"].copy()
    classes[1] = classes[0]
    f.attrs["classes"] = classes


def classes_nan(f):
    classes = f.attrs["classes"].copy()
    classes[-1] = np.nan
    f.attrs["classes"] = classes


def offsets(name, delta):
    def edit(f):
        values = f[name][...]
        values[1] += delta  # the boundary of blocks 0 and 1
        f[name][...] = values
    edit.__name__ = f"{name}[1] {delta:+d}"
    return edit


def offsets_int32(name):
    def edit(f):
        _replace(f, name, f[name][...].astype(np.int32))
    edit.__name__ = f"{name} as int32"
    return edit


def _layout_edit(name, change):
    """An edit of block 1's row of /layout: ``change(table)`` returns False where it does
    not apply."""
    def edit(f):
        table = f["layout"][...]
        if change(table) is False:
            return False
        f["layout"][...] = table
    edit.__name__ = name
    return edit


def _slot_name(table, k, slot):
    return ("gaps", "row_data")[slot - 1] if table[k, slot, 2] else BLOCK_DATASETS[slot]


def layout_to_next_block(slot):
    def change(table):
        if table[1, slot, 0] < 0:
            return False
        table[1, slot, 0] = table[2, slot, 0]
    return _layout_edit(f"layout: block 1 {BLOCK_DATASETS[slot]} at block 2's", change)


def layout_into_dataset(slot):
    def change(table):
        if table[1, slot, 0] < 0 or table[1, slot, 1] < 4:
            return False
        table[1, slot, 0] += 8
    return _layout_edit(f"layout: block 1 {BLOCK_DATASETS[slot]} 8 bytes on", change)


def _swap_offsets(table):
    if (table[1, 1:3, 0] < 0).any():
        return False
    table[1, 1, 0], table[1, 2, 0] = table[1, 2, 0], table[1, 1, 0]


def layout_onto_chunk(f):
    """Block 1's values placed at their compressed chunk's bytes."""
    table = f["layout"][...]
    if table[1, 2, 0] >= 0:
        return False
    info = f[f"blocks/00000001/{_slot_name(table, 1, 2)}"].id.get_chunk_info(0)
    table[1, 2, 0] = info.byte_offset
    f["layout"][...] = table


def _not_contiguous(table):
    if (table[1, :, 0] < 0).all():
        return False
    table[1, :, 0] = -1


def layout_length(slot, delta):
    def change(table):
        table[1, slot, 1] += delta
    return _layout_edit(f"layout: block 1 {BLOCK_DATASETS[slot]} length {delta:+d}", change)


def layout_lean_flag(slot):
    def change(table):
        table[1, slot, 2] = 1 - table[1, slot, 2]
    return _layout_edit(f"layout: block 1 {BLOCK_DATASETS[slot]} lean flag flipped", change)


def layout_short(f):
    _replace(f, "layout", f["layout"][:-1])


def checksums_short(f):
    if "checksums" not in f:
        return False
    _replace(f, "checksums", f["checksums"][:-1])


def retype(slot, dtype_of):
    """Block 1's dataset in ``slot`` rewritten in another type, /layout recorded again."""
    def edit(f):
        table = f["layout"][...]
        name = f"blocks/00000001/{_slot_name(table, 1, slot)}"
        values = f[name][...]
        dtype = dtype_of(values.dtype)
        del f[name]
        f[name] = values.astype(dtype)
        f["layout"][...] = layout_table(f, int(f.attrs["n_blocks"]))
    edit.__name__ = f"block 1 {BLOCK_DATASETS[slot]} retyped"
    return edit


def group_moved(f):
    """Block 1's group moved out of /blocks: HDF5 no longer finds its datasets."""
    f.move("blocks/00000001", "elsewhere")


def group_moved_data_elsewhere(f):
    """Block 1's group moved, and /layout places its values at block 2's."""
    group_moved(f)
    table = f["layout"][...]
    if table[1, 2, 0] < 0:
        return False
    table[1, 2, 0] = table[2, 2, 0]
    f["layout"][...] = table


def dataset_deleted(slot):
    def edit(f):
        del f[f"blocks/00000001/{_slot_name(f['layout'][...], 1, slot)}"]
    edit.__name__ = f"block 1 {BLOCK_DATASETS[slot]} deleted"
    return edit


def drop_last_block(f):
    """The last block cut off by the counts alone, every count made to agree."""
    n = int(f.attrs["n_blocks"])
    rows, nnz = f["row_offsets"][...], f["nnz_offsets"][...]
    y = f[f"blocks/{n - 1:08d}/y"][...]
    _replace(f, "row_offsets", rows[:-1])
    _replace(f, "nnz_offsets", nnz[:-1])
    f.attrs["n_blocks"], f.attrs["n_samples"], f.attrs["nnz"] = n - 1, rows[-2], nnz[-2]
    if "class_counts" in f.attrs:
        counts = f.attrs["class_counts"]
        f.attrs["class_counts"] = counts - np.bincount(y, minlength=len(counts))
    else:
        f.attrs["n_positive"] = int(f.attrs["n_positive"]) - int(np.sum(y > 0))
    for name in ("layout", "checksums"):
        if name in f:
            _replace(f, name, f[name][:-1])


def _float_swap(dtype):
    return np.float64 if dtype == np.float32 else np.float32


def _label_swap(dtype):
    return np.int32 if dtype == np.int8 else np.int8


EDITS = [
    value_dtype, value_dtype_and_options, options_value_dtype, options_compression,
    options_encoding, version(1), version(2), version(3), version(4),
    *(count(name, change) for name in ("n_samples", "nnz", "n_blocks", "n_positive")
      for change in (_plus1, _minus1)),
    count("n_features", _minus1), count("n_features", _one),
    class_counts_moved, class_counts_short, classes_extra, classes_duplicate, classes_nan,
    *(offsets(name, delta) for name in ("row_offsets", "nnz_offsets") for delta in (1, -1)),
    offsets_int32("row_offsets"),
    *(layout_to_next_block(slot) for slot in range(4)),
    *(layout_into_dataset(slot) for slot in range(4)),
    _layout_edit("layout: block 1 indices and data swapped", _swap_offsets),
    layout_onto_chunk, _layout_edit("layout: block 1 not contiguous", _not_contiguous),
    *(layout_length(slot, delta) for slot in range(4) for delta in (1, 3)),
    *(layout_lean_flag(slot) for slot in (1, 2)),
    layout_short, checksums_short,
    retype(0, lambda dtype: np.int64), retype(1, lambda dtype: np.int64),
    retype(2, _float_swap), retype(3, _label_swap), drop_last_block,
    group_moved, group_moved_data_elsewhere, dataset_deleted(2), dataset_deleted(3),
]


def edit_name(edit):
    return edit.__name__.replace("_", " ")


# ---- the checksums

def forged_block_checksums(f):
    """/checksums over what a read of each block dataset takes when it trusts the root
    attributes and /layout as they now are: the bytes at /layout's offset (or, chunked,
    the dataset's values), as many values as /layout says, of the type the attributes
    give."""
    table = f["checksums"][...]
    layout = f["layout"][...]
    multiclass = len(f.attrs["classes"]) > 2
    value = np.dtype(_text(f.attrs["value_dtype"]))
    f.flush()
    with open(f.filename, "rb") as fh:
        for k in range(min(len(table), len(layout))):
            for slot in range(len(BLOCK_DATASETS)):
                offset, length, lean = (int(v) for v in layout[k, slot])
                dtype = np.dtype([np.int32, np.uint16 if lean else np.int32, value,
                                  np.int32 if multiclass else np.int8][slot])
                if offset >= 0:
                    fh.seek(offset)
                    raw = fh.read(length * dtype.itemsize).ljust(length * dtype.itemsize, b"\0")
                    values = np.frombuffer(raw, dtype)
                else:
                    name = f"blocks/{k:08d}/{_slot_name(layout, k, slot)}"
                    if name not in f:
                        continue
                    values = f[name][...].astype(dtype)[:length]
                table[k, slot] = checksum(values)
    f["checksums"][...] = table


def apply_mode(f, mode):
    """Do ``mode`` (see :data:`MODES`) to the checksums of the edited file ``f``."""
    if mode in ("deleted", "stripped"):
        for name in ("checksum", "attributes_checksum"):
            if name in f.attrs:
                del f.attrs[name]
    if mode == "stripped":
        if "checksums" in f:
            del f["checksums"]
        for name in ROOT_DATASETS:
            if name in f and "checksum" in f[name].attrs:
                del f[name].attrs["checksum"]
    if mode == "recomputed":
        if "checksums" in f and "layout" in f:
            forged_block_checksums(f)
        for name in ROOT_DATASETS:
            if name in f:
                f[name].attrs["checksum"] = checksum(f[name][...])
        f.attrs["attributes_checksum"] = attributes_checksum(f.attrs)


# ---- the outcome

def results(path, solver, max_iter):
    """Decision values and accuracy on the store at ``path`` of a model trained on it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter is reached: a few iterations on purpose
        model = train_one_vs_rest(path, solver=solver, max_iter=max_iter,
                                  liblinear_tol=True, progress=False)
        return model.decision_function(path), model.score(path)


def judge(path, reference, solver, max_iter):
    """``(outcome, message)`` of training and predicting on the store at ``path``, against
    ``reference`` (:func:`results` on the intact store)."""
    try:
        decision, score = results(path, solver, max_iter)
    except (StoreError, ValueError) as exc:
        message = f"{type(exc).__name__}: {exc}"
        return ("clear error" if str(path) in str(exc) else "OTHER"), message
    except Exception as exc:  # not one of ours: a failure to report
        return "OTHER", f"{type(exc).__name__}: {exc}"
    same = (decision.shape == reference[0].shape and np.array_equal(decision, reference[0])
            and (score == reference[1] or np.isnan(score) and np.isnan(reference[1])))
    return ("correct result", "") if same else (
        "SILENT", f"accuracy {score:.4f} where the intact store gives {reference[1]:.4f}")


def cases(kinds=None, edits=None, modes=None):
    """``(kind, edit, mode)`` of every case, or of the ones named."""
    for kind in kinds or STORES:
        for edit in EDITS:
            if edits is None or edit_name(edit) in edits:
                for mode in modes or MODES:
                    yield kind, edit, mode


def run(folder, selected, rows=2000, solver="tron", max_iter=3):
    """Run the ``selected`` cases (from :func:`cases`) on stores of ``rows`` rows made in
    ``folder``; returns the summary: ``counts`` of each outcome, ``cases`` (kind, edit,
    mode, outcome, message of each case run; an edit that does not apply to a store is
    left out) and the settings."""
    stores, references, outcomes = {}, {}, []
    work = os.path.join(folder, "tampered.h5")
    for kind, edit, mode in selected:
        if kind not in stores:
            stores[kind] = make_store(kind, folder, rows)
            references[kind] = results(stores[kind], solver, max_iter)
        shutil.copyfile(stores[kind], work)
        with h5py.File(work, "r+") as f:
            if edit(f) is False:
                continue
            apply_mode(f, mode)
        outcome, message = judge(work, references[kind], solver, max_iter)
        outcomes.append(dict(store=kind, edit=edit_name(edit), mode=mode, outcome=outcome,
                             message=message.replace(work, "STORE")))
    counts = collections.Counter(case["outcome"] for case in outcomes)
    return {"rows": rows, "block_rows": BLOCK_ROWS, "solver": solver, "max_iter": max_iter,
            "counts": {outcome: counts[outcome] for outcome in OUTCOMES}, "cases": outcomes}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the summary as JSON here")
    parser.add_argument("--rows", type=int, default=2000, help="rows of a9a in each store")
    parser.add_argument("--stores", nargs="+", choices=list(STORES), help="default: all")
    parser.add_argument("--modes", nargs="+", choices=MODES, help="default: all")
    parser.add_argument("--edits", nargs="+", metavar="EDIT",
                        help="default: all (--list names them)")
    parser.add_argument("--solver", default="tron")
    parser.add_argument("--max-iter", type=int, default=3)
    parser.add_argument("--list", action="store_true", help="list the edits and stop")
    args = parser.parse_args(argv)
    names = [edit_name(edit) for edit in EDITS]
    if args.list:
        print("\n".join(names))
        return 0
    unknown = sorted(set(args.edits or ()) - set(names))
    if unknown:
        parser.error(f"argument --edits: unknown {unknown} (--list names them)")
    if not BLOCK_ROWS * 3 <= args.rows <= 32561:
        parser.error(f"argument --rows: must be {BLOCK_ROWS * 3}..32561, got {args.rows}")
    if args.max_iter < 1:
        parser.error(f"argument --max-iter: must be >= 1, got {args.max_iter}")
    if args.out:
        try:
            check_output(args.out, overwrite=True)
        except OSError as exc:
            parser.error(f"argument --out: {exc}")
    with tempfile.TemporaryDirectory() as folder:
        summary = run(folder, cases(args.stores, args.edits, args.modes), args.rows,
                      args.solver, args.max_iter)
    if args.out:
        write_json(summary, args.out)
    print(f"{sum(summary['counts'].values())} tampered stores ({args.rows} rows of a9a, "
          f"{args.solver}, {args.max_iter} iterations):")
    for outcome, n in summary["counts"].items():
        print(f"  {n:5d}  {outcome}")
    failures = [c for c in summary["cases"] if c["outcome"] in ("SILENT", "OTHER")]
    for case in failures[:20]:
        print(f"FAILURE {case['store']}: {case['edit']} ({case['mode']}): {case['outcome']} "
              f"{case['message']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
