"""Flip bits in a store and count how the damage is caught.

Each trial copies the store, flips one bit, then reads the copy the way training does
(open, then every block) and runs :func:`streamssvm.data.verify.verify_store` on it. The
outcome is one of

``detected: block``
    a StoreError naming a block (its checksum or structure failed), and ``verify`` reports
    that block;
``detected: file``
    a StoreError naming the file's metadata (the HDF5 structure, the attributes, the
    offsets or the checksum table), and ``verify`` reports a problem;
``harmless``
    everything reads back identical to the original and ``verify`` finds nothing: the bit
    was in unused bytes of the file (free space, padding);
``verify: block structure``
    everything reads back identical, and ``verify`` names a block whose HDF5 group or
    dataset headers are damaged (reads follow /layout, not those headers);
``SILENT``
    no error but different contents: a wrong number would reach the solver (a failure);
``OTHER``
    any other exception, or ``verify`` disagreeing with the read (a failure).

``--where data`` flips a bit inside a block dataset's stored bytes (found with h5py's
``get_offset`` / ``get_chunk_info``) and also requires the error to name that block and
dataset (or the flip to be harmless: compressed bytes can decode to the same values, e.g. an
LZF back-reference moved to equal bytes); ``--where anywhere`` picks a byte of the whole file
uniformly.

    python tools/corrupt_store.py STORE --flips 2000 --where anywhere
"""

import argparse
import collections
import os
import random
import re
import shutil
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from streamssvm.data.store import Store, StoreError  # noqa: E402
from streamssvm.data.verify import verify_store  # noqa: E402
from tool_args import existing_store  # noqa: E402


def read_everything(path):
    """The metadata and every block's arrays, read as training reads them."""
    with Store(path) as store:
        metadata = {k: v.tolist() if isinstance(v, np.ndarray) else v
                    for k, v in store.metadata.items()}
        contents = [metadata, store.row_offsets.copy(), store.nnz_offsets.copy()]
        for k in range(store.n_blocks):
            block = store.read_block(k)
            contents += [block.indptr.copy(), block.indices.copy(), block.data.copy(),
                         block.y.copy()]
    return contents


def same_contents(a, b):
    return len(a) == len(b) and a[0] == b[0] and all(
        x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True) for x, y in zip(a[1:], b[1:]))


def dataset_extents(path):
    """``[(block, dataset name, byte offset, byte length)]`` of every non-empty block dataset."""
    extents = []
    with h5py.File(path, "r") as f:
        for k in range(int(f.attrs["n_blocks"])):
            for name, ds in f[f"blocks/{k:08d}"].items():  # lean blocks: gaps, row_data
                if not ds.shape[0]:
                    continue
                if ds.chunks is None:
                    offset, length = ds.id.get_offset(), ds.id.get_storage_size()
                else:
                    info = ds.id.get_chunk_info(0)
                    offset, length = info.byte_offset, info.size
                extents.append((k, name, offset, length))
    return extents


def flip_bit(path, position, bit):
    with open(path, "r+b") as fh:
        fh.seek(position)
        byte = fh.read(1)[0]
        fh.seek(position)
        fh.write(bytes([byte ^ (1 << bit)]))


def trial(original, reference, work, position, bit, target=None):
    """Flip ``bit`` of the byte at ``position`` in a copy of ``original``; return
    ``(outcome, message)``. ``target`` = (block, dataset) the flip must be blamed on."""
    shutil.copyfile(original, work)
    flip_bit(work, position, bit)
    try:
        contents = read_everything(work)
    except StoreError as exc:
        message = str(exc)
        outcome = "detected: block" if message.startswith(f"{work}: block ") else "detected: file"
    except Exception as exc:  # not one of ours: a failure to report
        return "OTHER", f"{type(exc).__name__}: {exc}"
    else:
        message = ""
        outcome = "harmless" if same_contents(contents, reference) else "SILENT"
    problems, _ = verify_store(work)
    if outcome.startswith("detected") and not problems:
        return "OTHER", f"verify finds nothing where reading failed: {message}"
    if outcome == "harmless" and problems:
        if not all(p.startswith(f"{work}: block ") for p in problems):
            return "OTHER", f"verify reports {problems[0]} where reading succeeded"
        outcome, message = "verify: block structure", problems[0]
    blamed = re.match(r"(block \d+)\b", message[len(work) + 2:]) if message else None
    if blamed and not any(p.startswith(f"{work}: {blamed.group(1)}") for p in problems):
        return "OTHER", f"verify does not name {blamed.group(1)}: {problems}"
    if (target is not None and outcome != "harmless"
            and not message.startswith(f"{work}: block {target[0]}: dataset {target[1]} ")):
        return "OTHER", f"a flip in block {target[0]} {target[1]} gave {message or outcome!r}"
    return outcome, message


def run(path, n_flips, where, seed=0):
    """``n_flips`` trials on the store at ``path``; returns (counts, failures)."""
    rnd = random.Random(seed)
    reference = read_everything(path)
    extents = dataset_extents(path) if where == "data" else None
    size = os.path.getsize(path)
    counts, failures = collections.Counter(), []
    with tempfile.TemporaryDirectory() as folder:
        work = os.path.join(folder, "flipped.h5")
        for _ in range(n_flips):
            target = None
            if extents:
                k, name, offset, length = rnd.choice(extents)
                position, target = offset + rnd.randrange(length), (k, name)
            else:
                position = rnd.randrange(size)
            outcome, message = trial(path, reference, work, position, rnd.randrange(8), target)
            counts[outcome] += 1
            if outcome in ("SILENT", "OTHER"):
                failures.append(f"byte {position}: {outcome} {message}")
    return counts, failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=existing_store)
    parser.add_argument("--flips", type=int, default=1000, help="trials (>= 1)")
    parser.add_argument("--where", choices=("anywhere", "data"), default="anywhere")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.flips < 1:
        parser.error(f"argument --flips: must be >= 1, got {args.flips}")
    try:
        counts, failures = run(args.store, args.flips, args.where, args.seed)
    except StoreError as exc:  # the store given, read before any flip: the trials catch theirs
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    print(f"{args.store}: {sum(counts.values())} single-bit flips ({args.where}), "
          f"{len(failures)} failures")
    for outcome, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d}  {outcome}")
    for line in failures[:20]:
        print(f"FAILURE {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
