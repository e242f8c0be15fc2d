"""Build a news20.binary-like svmlight data set from the raw 20 Newsgroups posts.

LIBSVM's ``news20.binary`` (19,996 rows x 1,355,191 features, from Keerthi & DeCoste 2005) is
the 20 Newsgroups collection with binary features of words and word pairs, each row scaled to
unit length, and two classes made of groups of newsgroups. The original set is not available
here; this tool rebuilds one like it from ``20news-bydate.tar.gz`` (the "bydate" version:
11,314 training and 7,532 test posts, duplicates and the newsgroup-identifying headers
removed), reading the tar file directly.

Choices, written down
---------------------
Text
    The whole post as stored in the archive (the remaining headers such as From, Subject,
    Organization included, as news20.binary kept them), unless ``--strip-headers``, which drops
    everything up to the first blank line. Bytes are lowercased (ASCII) and tokens are the
    maximal runs of ``[a-z0-9]``; no stop words are removed, no stemming.
Features
    Binary: a unigram or a bigram (two adjacent tokens of the post, across line and sentence
    ends) is present or not. Minimum document frequency 1: every term of the vocabulary's
    posts is kept. Rows are scaled to unit L2 norm: every value of a row with ``k`` features
    is ``1 / sqrt(k)``, written with 7 significant digits.
Vocabulary and indices
    ``news20.train.svm`` and ``news20.test.svm`` use the vocabulary of the training posts only
    (a test term never seen in training is dropped; a test row can become empty and is kept as
    a label alone). Terms are numbered in byte order of the term text, one-based, so the
    training file's largest index is its width and the test file shares it (its largest
    index can be smaller: read it with ``n_features`` = the training width, recorded in
    ``news20.meta.json``). ``news20.svm`` is all posts (training then test) for
    cross-validation; by default (``--combined-vocab all``) its vocabulary is that of all
    posts, as news20.binary's is; ``--combined-vocab train`` makes it the concatenation of the
    two other files instead.
Classes
    +1 = ``comp.*`` (5 groups), ``rec.*`` (4) and ``misc.forsale``: computers, recreation and
    sales; -1 = ``alt.atheism``, ``sci.*`` (4), ``soc.religion.christian`` and ``talk.*`` (4):
    science, religion and politics. Ten groups each, as news20.binary's 9,999 / 9,997 split
    suggests; here 5,910 / 5,404 training and 3,935 / 3,597 test posts (52% / 48%).

Outputs go to ``--out-dir`` (default ``bench-data/`` at the repository root, which git
ignores): ``news20.train.svm``, ``news20.test.svm``, ``news20.svm`` and ``news20.meta.json``
(widths, counts, choices). Each file is written under a temporary name, then renamed.

Example::

    python tools/make_news20.py                      # full set, about a minute
    python tools/make_news20.py --max-per-group 20 --out-dir /tmp/n20   # tiny, for tests
"""

import argparse
import json
import math
import os
import re
import sys
import tarfile
import time

import numpy as np

from tool_args import existing_file

DEFAULT_TAR = "/work/shared/data/20news-bydate.tar.gz"
SOURCE_URL = "http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT_DIR = os.path.join(REPO_ROOT, "bench-data")

POSITIVE_PREFIXES = ("comp.", "rec.", "misc.")
NEGATIVE_PREFIXES = ("alt.", "sci.", "soc.", "talk.")
SPLITS = {"20news-bydate-train": "train", "20news-bydate-test": "test"}

_TOKEN = re.compile(rb"[a-z0-9]+")


def group_label(group):
    """+1 for comp.*, rec.*, misc.*; -1 for alt.*, sci.*, soc.*, talk.*."""
    if group.startswith(POSITIVE_PREFIXES):
        return 1
    if group.startswith(NEGATIVE_PREFIXES):
        return -1
    raise ValueError(f"newsgroup {group!r} is in neither class")


def read_posts(tar_path, max_per_group=None):
    """The posts of the archive, as a list of (split, group, post id, raw bytes), sorted by
    split (train first), group and numeric post id; at most ``max_per_group`` posts per group
    and split (the lowest ids)."""
    posts = []
    with tarfile.open(tar_path, "r:*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            parts = member.name.split("/")
            if len(parts) != 3 or parts[0] not in SPLITS:
                continue
            split, group, name = SPLITS[parts[0]], parts[1], parts[2]
            posts.append((split, group, name, tar.extractfile(member).read()))
    order = {"train": 0, "test": 1}
    posts.sort(key=lambda p: (order[p[0]], p[1], int(p[2]) if p[2].isdigit() else 0, p[2]))
    if max_per_group is not None:
        kept, seen = [], {}
        for post in posts:
            key = (post[0], post[1])
            if seen.get(key, 0) < max_per_group:
                seen[key] = seen.get(key, 0) + 1
                kept.append(post)
        posts = kept
    return posts


def post_terms(raw, strip_headers=False, bigrams=True):
    """The set of terms (bytes) of one post: its tokens, and pairs of adjacent tokens joined
    by a space."""
    if strip_headers:
        cut = raw.find(b"\n\n")
        raw = raw[cut + 2:] if cut >= 0 else b""
    tokens = _TOKEN.findall(raw.lower())
    terms = set(tokens)
    if bigrams and len(tokens) > 1:
        terms.update(a + b" " + b for a, b in zip(tokens, tokens[1:]))
    return terms


def build_vocabulary(term_sets):
    """Map every term of the given sets to 0..n-1 in byte order of the term."""
    vocab = set()
    for terms in term_sets:
        vocab.update(terms)
    return {term: i for i, term in enumerate(sorted(vocab))}


def _rows(term_sets, vocab):
    """For each post, the sorted zero-based indices of its terms present in vocab."""
    for terms in term_sets:
        idx = np.fromiter((vocab[t] for t in terms if t in vocab), dtype=np.int64)
        idx.sort()
        yield idx


def write_svmlight(path, labels, index_rows):
    """Write rows with values 1/sqrt(nnz) (unit norm), one-based; an empty row is its
    label alone. Returns (rows, nnz, empty rows)."""
    tmp = f"{path}.tmp{os.getpid()}"
    n = nnz = empty = 0
    try:
        with open(tmp, "w", encoding="ascii", newline="\n") as f:
            for y, idx in zip(labels, index_rows):
                k = idx.shape[0]
                parts = ["+1" if y > 0 else "-1"]
                if k:
                    value = f":{1.0 / math.sqrt(k):.7g}"
                    parts.append(" ".join([f"{j}{value}" for j in (idx + 1).tolist()]))
                else:
                    empty += 1
                f.write(" ".join(parts))
                f.write("\n")
                n += 1
                nnz += k
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return n, nnz, empty


def build(tar_path=DEFAULT_TAR, out_dir=DEFAULT_OUT_DIR, max_per_group=None,
          strip_headers=False, bigrams=True, combined_vocab="all", combined=True,
          verbose=True):
    """Build news20.train.svm, news20.test.svm and (if ``combined``) news20.svm in out_dir.

    Parameters
    ----------
    tar_path : str
        ``20news-bydate.tar.gz``.
    out_dir : str
        Output folder (created).
    max_per_group : int, optional
        Keep at most this many posts per group in each split (for quick tests).
    strip_headers : bool
        Drop each post's header block (up to the first blank line).
    bigrams : bool
        Add word pairs to the words.
    combined_vocab : {"all", "train"}
        Vocabulary of news20.svm: all posts, or the training posts (then news20.svm is the
        training file followed by the test file).
    combined : bool
        Write news20.svm.
    verbose : bool
        Print progress and the summary.

    Returns
    -------
    dict
        Per file (``train``, ``test``, ``combined``): path, n_rows, n_features, nnz,
        empty_rows, n_positive, n_negative; and the choices made.
    """
    if combined_vocab not in ("all", "train"):
        raise ValueError("combined_vocab must be 'all' or 'train'")
    say = (lambda *a: print(*a, file=sys.stderr, flush=True)) if verbose else (lambda *a: None)
    t0 = time.perf_counter()
    posts = read_posts(tar_path, max_per_group)
    os.makedirs(out_dir, exist_ok=True)
    say(f"read {len(posts):,} posts from {tar_path} in {time.perf_counter() - t0:.1f} s")
    terms = [post_terms(p[3], strip_headers, bigrams) for p in posts]
    labels = np.array([group_label(p[1]) for p in posts], dtype=np.int8)
    is_train = np.array([p[0] == "train" for p in posts])
    train_terms = [t for t, tr in zip(terms, is_train) if tr]
    test_terms = [t for t, tr in zip(terms, is_train) if not tr]
    vocab = build_vocabulary(train_terms)
    say(f"training vocabulary: {len(vocab):,} terms ({time.perf_counter() - t0:.1f} s)")

    def record(name, path, y, counts, width):
        n, nnz, empty = counts
        return {"path": path, "n_rows": n, "n_features": width, "nnz": nnz,
                "empty_rows": empty, "n_positive": int((y > 0).sum()),
                "n_negative": int((y < 0).sum())}

    summary = {"source": os.path.basename(tar_path), "max_per_group": max_per_group,
               "strip_headers": strip_headers, "bigrams": bigrams,
               "combined_vocab": combined_vocab if combined else None,
               "positive_groups": sorted({p[1] for p in posts if group_label(p[1]) > 0}),
               "negative_groups": sorted({p[1] for p in posts if group_label(p[1]) < 0}),
               "tokenizer": "ASCII lowercase, [a-z0-9]+ runs, unigrams"
                            + (" + adjacent bigrams" if bigrams else ""),
               "values": "binary, each row scaled to unit L2 norm (1/sqrt(nnz))",
               "index_base": 1}
    y_train, y_test = labels[is_train], labels[~is_train]
    path = os.path.join(out_dir, "news20.train.svm")
    summary["train"] = record("train", path, y_train,
                              write_svmlight(path, y_train, _rows(train_terms, vocab)),
                              len(vocab))
    path = os.path.join(out_dir, "news20.test.svm")
    summary["test"] = record("test", path, y_test,
                             write_svmlight(path, y_test, _rows(test_terms, vocab)),
                             len(vocab))
    if combined:
        path = os.path.join(out_dir, "news20.svm")
        y_all = np.concatenate([y_train, y_test])
        if combined_vocab == "all":
            all_vocab = build_vocabulary(terms)
            say(f"all-posts vocabulary: {len(all_vocab):,} terms")
            rows = _rows(train_terms + test_terms, all_vocab)
        else:
            all_vocab = vocab
            rows = _rows(train_terms + test_terms, vocab)
        summary["combined"] = record("combined", path, y_all,
                                     write_svmlight(path, y_all, rows), len(all_vocab))
    summary["seconds"] = time.perf_counter() - t0
    meta = os.path.join(out_dir, "news20.meta.json")
    with open(meta + ".tmp", "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(meta + ".tmp", meta)
    if verbose:
        for key in ("train", "test", "combined"):
            if key in summary:
                s = summary[key]
                n = max(s["n_rows"], 1)
                print(f"{os.path.basename(s['path']):18s} {s['n_rows']:>7,} x "
                      f"{s['n_features']:>10,}  nnz {s['nnz']:>11,} ({s['nnz'] / n:6.1f}/row)"
                      f"  +1: {s['n_positive']:>6,} ({s['n_positive'] / n:.1%})  -1: "
                      f"{s['n_negative']:>6,}  empty rows: {s['empty_rows']}")
        print(f"({summary['seconds']:.1f} s; choices in {meta})")
    return summary


def _positive_int(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _tar_file(path):
    """``path`` if it is a tar archive (compressed or not); else an error naming it, and
    where the archive is to be had."""
    try:
        if tarfile.is_tarfile(existing_file(path)):
            return path
        problem = f"not a tar archive: {path!r}"
    except argparse.ArgumentTypeError as exc:
        problem = exc
    raise argparse.ArgumentTypeError(f"{problem} (give the path of 20news-bydate.tar.gz, from "
                                     f"{SOURCE_URL}; default {DEFAULT_TAR})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--tar", default=DEFAULT_TAR, type=_tar_file,
                    help=f"20news-bydate.tar.gz (from {SOURCE_URL})")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR,
                    help="output folder, created if missing")
    ap.add_argument("--max-per-group", type=_positive_int,
                    help="at most N posts per group and split (quick subsets)")
    ap.add_argument("--strip-headers", action="store_true",
                    help="drop the header block of each post")
    ap.add_argument("--unigrams-only", action="store_true", help="no word pairs")
    ap.add_argument("--combined-vocab", choices=("all", "train"), default="all",
                    help="vocabulary of news20.svm")
    ap.add_argument("--no-combined", action="store_true", help="do not write news20.svm")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
        ap.error(f"argument --out-dir: {args.out_dir!r} exists and is not a folder")
    return build(args.tar, args.out_dir, max_per_group=args.max_per_group,
                 strip_headers=args.strip_headers, bigrams=not args.unigrams_only,
                 combined_vocab=args.combined_vocab, combined=not args.no_combined,
                 verbose=not args.quiet)


if __name__ == "__main__":
    main()
