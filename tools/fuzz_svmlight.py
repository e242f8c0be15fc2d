"""Fuzz the svmlight parser and the streaming converter against scikit-learn's loader.

Hypothesis builds svmlight documents from the grammar (labels, ``qid``, ``index:value``
pairs, comments, blank lines, CRLF, tabs and the other ASCII blanks, long lines) with
mutated tokens (bad numbers, missing colons, huge, zero and negative indices, unsorted and
repeated indices, NaN/inf, underscores) and then mutates the bytes (stray bytes including
NUL and non-ASCII, deletions, duplicated spans, truncation). Each document is judged by
:func:`check`: the outcome must be one of

``agree``
    both parsers accept and give the same matrix (bit for bit) and labels;
``both refuse``
    scikit-learn raises and so do we, with a SvmlightFormatError naming the line and
    column of a token on that line (the lines before it parse without a located error);
``refused: <reason>``
    scikit-learn accepts but we refuse on purpose (:data:`REFUSALS`), and the input really
    has that property;
``repaired: unsorted``
    scikit-learn refuses a row whose indices are out of order, we sort it: the result must
    equal scikit-learn's on the same text with each row's pairs sorted;
``differs: no feature``
    no index occurs at all: scikit-learn's matrix has one (empty) column, ours none.

Anything else (another exception, a different value, an error pointing elsewhere) is a
failure. :func:`check_convert` runs a document through :func:`convert_svmlight` with tiny
read chunks and blocks and asserts the same outcome as the in-memory parse, and that a
failed conversion leaves nothing behind; :func:`check_multiclass` judges the store that
``convert_svmlight(multiclass=True)`` makes of it against scikit-learn the same way
(outcomes prefixed ``multiclass:``). A watchdog (``faulthandler``) ends the process
with a traceback if one document takes longer than ``--timeout`` seconds (a hang).

The test suite runs the same checks on a fixed, derandomised set of examples
(tests/test_fuzz_svmlight.py); run more here::

    python tools/fuzz_svmlight.py --examples 100000 --seed 1 --save-failures /tmp/fuzz

It prints the number of documents run, the count of each outcome and the failures.
"""

import argparse
import collections
import faulthandler
import io
import math
import os
import random
import re
import shutil
import struct
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from streamssvm.data.convert import DEFAULT_CHUNK_BYTES as DEFAULT_CHUNK  # noqa: E402
from streamssvm.data.convert import convert_svmlight  # noqa: E402  (this checkout's package)
from streamssvm.data.store import Store  # noqa: E402
from streamssvm.data.svmlight import SvmlightFormatError, parse_svmlight_bytes  # noqa: E402

NAME = "fuzz.svm"
DEFAULT_BLOCK_NNZ = 1 << 19
BLANK_BYTES = b" \t\r\x0b\x0c"

# Inputs scikit-learn accepts and we refuse on purpose: message fragment -> the reason,
# checked on the input by _refusal_holds.
REFUSALS = {
    "NaN or infinite": "NaN or infinite value or label",
    "appears twice": "index repeated within a row",
    "third distinct label": "more than two label values (multiclass)",
    "every label is": "a single label value (binary: other than -1/+1, no classes given)",
    "is neither of the classes": "label outside the classes given",
    "no data lines": "no data line (empty, blank or comment-only input)",
    "cannot parse qid": "qid that is not qid:<integer> (scikit-learn ignores its value)",
    "does not fit in 32 bits": "index beyond the int32 range",
    "underscore": "digits grouped with '_' (Python's float()/int() syntax, not strtod's)",
    "carriage return with more text": "text after a carriage return on its line (lines ended "
                                      "by CR alone)",
}

# --- strategies -------------------------------------------------------------------------------
SEPARATORS = [b" ", b" ", b" ", b"\t", b"  ", b" \t ", b"\x0b", b"\x0c"]
LINE_ENDS = [b"\n", b"\n", b"\n", b"\r\n", b" \n", b"\t\r\n"]
LABELS = [b"1", b"-1", b"+1", b"0", b"1.0", b"-1.0", b"+1.0", b"1e0", b"2", b"-0", b"0.5",
          b"-1e0", b"3"]
LABEL_SETS = [(b"1", b"-1"), (b"+1", b"-1"), (b"0", b"1"), (b"1", b"2"), (b"1.0", b"-1.0"),
              (b"-1", b"+1.0"), (b"1", b"1"), (b"2", b"2"), (b"0", b"1", b"2"),
              (b"-1", b"1", b"3.5", b"1e1")]
BAD_LABELS = [b"nan", b"inf", b"-inf", b"1e999", b"1,2", b"a", b"1:", b"1_0", b"--1", b".",
              b"\x00", b"\xff1", b"+", b"1e", b"0x1"]
BAD_VALUES = [b"nan", b"NaN", b"inf", b"-Infinity", b"1e999", b"-1e400000", b"1_0", b"0x1f",
              b"1e", b"--1", b".", b"", b"1.2.3", b"e5", b"1d5", b"1,5", b"1:2", b"\xd9\xa1",
              b"1\x00", b"+-1", b"1e+", b".e1", b"1" + b"0" * 320, b"0." + b"0" * 400 + b"1"]
SPECIAL_VALUES = [b"0", b"-0", b"+0.0", b"1e-400", b"5e-324", b"4.9406564584124654e-324",
                  b"2.2250738585072011e-308", b"1.7976931348623157e308", b"1.7976931348623159e308",
                  b"9007199254740993", b"0.1", b"1.", b".5", b"-.5", b"1E5", b"1e+05",
                  b"00000000000000000000001.5", b"123456789012345678901234567890",
                  b"0." + b"3" * 60, b"1" * 25 + b"e-300"]
BAD_INDICES = [b"0", b"-1", b"-0", b"+3", b"007", b"2147483646", b"2147483647", b"2147483648",
               b"4294967297", b"99999999999999999999", b"1_0", b"a", b"", b"1.5", b"1e2",
               b"\x00", b"0x1", b"--2", b" "]
QIDS = [b"qid:3", b"qid:-4", b"qid:+1", b"qid:0", b"qid:", b"qid:x", b"qidx:3", b"qid",
        b"qid:1.5", b"qid:1_0", b"quid:3", b"QID:3"]
STRAY_BYTES = [b"\x00", b"\xff", b"\x80", b":", b"#", b" ", b"\n", b"\r", b",", b".", b"e",
               b"-", b"+", b"_", b"1", b"0", b"\t", b"\x0b", b"\x1c", b"q", b"\xc3\xa9"]


def number_token(rnd):
    """A number in one of the spellings strtod accepts (sometimes huge, tiny or long)."""
    kind = rnd.randrange(6)
    if kind == 0:
        return repr(struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0]).encode()
    if kind == 1:
        return str(rnd.randint(-10 ** 6, 10 ** 6)).encode()
    if kind == 2:
        return rnd.choice(SPECIAL_VALUES)
    whole = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(23)))
    frac = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(23)))
    text = rnd.choice(["", "+", "-"]) + (whole or ("" if frac else "0"))
    if frac or rnd.random() < 0.5:
        text += "." + frac
    if rnd.random() < 0.5:
        text += rnd.choice("eE") + rnd.choice(["", "+", "-"])
        text += str(rnd.randrange(31) if rnd.random() < 0.9 else rnd.randrange(401))
    return text.encode()


def _maybe(rnd, percent, rare, usual):
    """``rare(rnd)`` with probability ``percent`` %, otherwise ``usual``."""
    return rare(rnd) if rnd.random() * 100 < percent else usual


def _pick(choices):
    return lambda rnd: rnd.choice(choices)


def data_line(rnd, labels, noise):
    """One data line; ``noise`` (0-100) is the percentage of mutated tokens."""
    parts = [rnd.choice([b"", b"", b" ", b"\t"])]
    parts.append(_maybe(rnd, noise, _pick(BAD_LABELS + LABELS), rnd.choice(labels)))
    if rnd.random() < 0.05:
        parts += [rnd.choice(SEPARATORS), rnd.choice(QIDS)]
    if rnd.random() < 0.01:  # an overlong line
        n = rnd.randint(500, 5000)
        parts += [b" %d:%d.%d" % (1 + 2 * j, j % 13, j % 7) for j in range(n)]
        return b"".join(parts)
    n_pairs = rnd.randrange(9)
    indices = [0 if rnd.random() < 0.05 else rnd.randint(1, 3)]
    for _ in range(n_pairs - 1):
        indices.append(indices[-1] + rnd.randint(1, 9))
    indices = indices[:n_pairs]
    order = rnd.random() * 100
    if order < 5 and n_pairs > 1:  # unsorted
        rnd.shuffle(indices)
    elif order < 5 + noise and n_pairs > 1:  # repeated index
        k = rnd.randrange(1, n_pairs)
        indices[k] = indices[k - 1]
    for index in indices:
        parts += [rnd.choice(SEPARATORS),
                  _maybe(rnd, noise, _pick(BAD_INDICES), str(index).encode()),
                  _maybe(rnd, noise / 2, _pick([b"", b"::", b" :", b": ", b";"]), b":"),
                  _maybe(rnd, noise, _pick(BAD_VALUES), None) or number_token(rnd)]
    if rnd.random() < 0.15:
        parts.append(rnd.choice(SEPARATORS))
    if rnd.random() < 0.1:
        comment = bytes(rnd.randrange(256) for _ in range(rnd.randrange(13)))
        parts += [rnd.choice([b"", b" "]), b"#", comment.replace(b"\n", b" ")]
    return b"".join(parts)


def make_document(rnd):
    """``(text, kwargs)``: svmlight bytes (then byte-level mutations) and parser options,
    drawn with ``rnd`` (a ``random.Random``, or Hypothesis's shrinkable one)."""
    labels = rnd.choice(LABEL_SETS)
    # Half the documents are clean; the rest have mutated tokens, rarely or often.
    noise = rnd.choice([0, 0, 0, 0, 0, 1, 5, 20])
    lines = []
    for _ in range(rnd.randrange(11) if rnd.random() < 0.05 else rnd.randint(1, 10)):
        kind = rnd.random()
        if kind < 0.8:
            lines.append(data_line(rnd, labels, noise))
        elif kind < 0.9:
            lines.append(rnd.choice([b"", b" ", b"\t", b"  \t ", b"\r", b"\x0b"]))
        else:
            lines.append(rnd.choice([b"#", b"# header", b"  # c", b"#\x00\xff"]))
    text = b"".join(line + rnd.choice(LINE_ENDS) for line in lines)
    if text and rnd.random() < 0.5:
        text = text.rstrip(b"\r\n")  # no newline after the last line
    for _ in range(rnd.randint(1, 3) if rnd.random() < 0.2 else 0):
        text = _mutate(rnd, text)
    kwargs = {"zero_based": rnd.choice(["auto", "auto", True, False])}
    if rnd.random() < 0.1:
        kwargs["n_features"] = rnd.randint(1, 80)
    if rnd.random() < 0.05:
        kwargs["classes"] = rnd.choice([(-1.0, 1.0), (0.0, 1.0), (1.0, -1.0)])
    return text, kwargs


def _mutate(rnd, text):
    pos = rnd.randint(0, len(text))
    what = rnd.randrange(5)
    if what == 0:
        return text[:pos] + rnd.choice(STRAY_BYTES) + text[pos:]
    if what == 1:
        return text[:pos] + bytes([rnd.randrange(256)]) + text[pos:]
    if what == 2:
        return text[:pos] + text[pos + rnd.randint(1, 4):]
    if what == 3:
        span = text[pos:pos + rnd.randint(1, 20)]
        return text[:pos] + span + span + text[pos + len(span):]
    return text[:pos]


def token_documents():
    """A Hypothesis strategy of ``(text, kwargs)``: valid lines, then a few tokens replaced
    by bad ones (or pairs swapped or repeated), then a few stray bytes; a failure shrinks to
    a small document."""
    from hypothesis import strategies as st

    good_value = st.one_of(
        st.floats(allow_nan=False, allow_infinity=False).map(lambda x: repr(x).encode()),
        st.sampled_from(SPECIAL_VALUES), st.randoms(use_true_random=True).map(number_token))

    @st.composite
    def line(draw, labels):
        tokens = [draw(st.sampled_from(labels))]
        if draw(st.integers(0, 9)) == 0:
            tokens.append(draw(st.sampled_from(QIDS[:4])))
        for index in sorted(draw(st.sets(st.integers(0, 60), max_size=7))):
            tokens.append(b"%d:%s" % (index, draw(good_value)))
        return tokens

    def corrupt(draw, tokens):
        first = 2 if len(tokens) > 1 and tokens[1].startswith(b"qid") else 1
        kind = draw(st.sampled_from(["label", "index", "value", "colon", "swap", "repeat", "qid"]))
        k = draw(st.integers(first, max(first, len(tokens) - 1)))
        if kind == "label" or k >= len(tokens):
            tokens[0] = draw(st.sampled_from(BAD_LABELS + LABELS))
        elif kind == "index":
            tokens[k] = draw(st.sampled_from(BAD_INDICES)) + b":" + tokens[k].split(b":", 1)[1]
        elif kind == "value":
            tokens[k] = tokens[k].split(b":", 1)[0] + b":" + draw(st.sampled_from(BAD_VALUES))
        elif kind == "colon":
            tokens[k] = tokens[k].replace(b":", draw(st.sampled_from([b"", b"::", b" :", b";"])), 1)
        elif kind == "swap" and k > first:
            tokens[k - 1], tokens[k] = tokens[k], tokens[k - 1]
        elif kind == "repeat":
            tokens.insert(k, tokens[k])
        else:
            tokens.insert(draw(st.integers(1, len(tokens))), draw(st.sampled_from(QIDS)))

    @st.composite
    def doc(draw):
        labels = draw(st.sampled_from(LABEL_SETS))
        lines = draw(st.lists(st.one_of(line(labels), st.sampled_from(
            [[], [b"#"], [b"# header"], [b"\t# x"]])), min_size=1, max_size=8))
        for _ in range(draw(st.integers(0, 2))):
            tokens = draw(st.sampled_from(lines))
            if tokens and not tokens[0].startswith(b"#"):
                corrupt(draw, tokens)
        text = b""
        for tokens in lines:
            sep = draw(st.sampled_from(SEPARATORS))
            text += draw(st.sampled_from([b"", b"", b" ", b"\t"])) + sep.join(tokens)
            text += draw(st.sampled_from([b"", b"", b"", b" ", b" # c", b"#\x00:\xff"]))
            text += draw(st.sampled_from(LINE_ENDS))
        if draw(st.booleans()):
            text = text.rstrip(b"\r\n")
        for _ in range(draw(st.integers(0, 1))):
            pos = draw(st.integers(0, len(text)))
            text = text[:pos] + draw(st.sampled_from(STRAY_BYTES)) + text[pos:]
        kwargs = {"zero_based": draw(st.sampled_from(["auto", True, False]))}
        if draw(st.integers(0, 9)) == 0:
            kwargs["n_features"] = draw(st.integers(1, 70))
        return text, kwargs

    return doc()


# --- references -------------------------------------------------------------------------------
def sklearn_load(text, zero_based="auto", n_features=None):
    """scikit-learn's loader on ``text``: ``(X, y)`` with int32 indices, or the exception."""
    from sklearn.datasets import load_svmlight_file

    try:
        X, y = load_svmlight_file(io.BytesIO(text), zero_based=zero_based, n_features=n_features)
    except Exception as exc:  # any refusal, whatever its type
        return exc
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y


def ours(text, **kwargs):
    """Our parser on ``text``: ``(X, y, classes)`` or the SvmlightFormatError (any other
    exception propagates: it is a failure)."""
    try:
        return parse_svmlight_bytes(text, name=NAME, **kwargs)
    except SvmlightFormatError as exc:
        return exc


def sort_rows(text):
    """``text`` with each data line's ``index:value`` pairs sorted by index, parsed in plain
    Python the way scikit-learn tokenises (None if a pair cannot be read)."""
    out = []
    for line in text.split(b"\n"):
        body = line.split(b"#", 1)[0]
        tokens = body.split()
        if not tokens:
            out.append(line)
            continue
        head, pairs = tokens[:1], tokens[1:]
        if pairs and pairs[0].startswith(b"qid"):
            head.append(pairs.pop(0))
        try:
            pairs.sort(key=lambda p: int(p.split(b":", 1)[0]))
        except ValueError:
            return None
        out.append(b" ".join(head + pairs))
    return b"\n".join(out)


# --- the judge --------------------------------------------------------------------------------
class Mismatch(AssertionError):
    """The parser's outcome is not an allowed one."""


def _assert_valid_matrix(X, y, classes):
    """Invariants of every accepted parse, whatever the reference says."""
    n, d = X.shape
    codes = (np.int32, range(len(classes))) if len(classes) > 2 else (np.int8, (-1, 1))
    if X.indices.dtype != np.int32 or y.dtype != codes[0] or y.shape != (n,):
        raise Mismatch(f"types/shapes: indices {X.indices.dtype}, y {y.dtype} {y.shape}")
    if X.nnz and (X.indices.min() < 0 or X.indices.max() >= d):
        raise Mismatch("column index outside the width")
    for r in range(n):
        if np.any(np.diff(X.indices[X.indptr[r]:X.indptr[r + 1]]) <= 0):
            raise Mismatch(f"row {r}: indices not strictly increasing")
    if not np.all(np.isfinite(X.data)) or not np.all(np.isin(y, codes[1])):
        raise Mismatch(f"non-finite value or label code outside {codes[1]}")
    if len(classes) < 2 or len(set(classes)) != len(classes):
        raise Mismatch(f"classes {classes}")


def _assert_same(X, y, classes, Xs, ys, what):
    if X.shape != Xs.shape:
        raise Mismatch(f"{what}: shape {X.shape}, scikit-learn {Xs.shape}")
    if not (np.array_equal(X.indptr, Xs.indptr) and np.array_equal(X.indices, Xs.indices)):
        raise Mismatch(f"{what}: different sparsity pattern")
    if not np.array_equal(X.data.view(np.int64), Xs.data.astype(np.float64).view(np.int64)):
        raise Mismatch(f"{what}: different values")
    labels = np.asarray(classes)[y if len(classes) > 2 else (y > 0).astype(np.intp)]
    if not np.array_equal(labels, ys):
        raise Mismatch(f"{what}: labels {ys[:5]} vs codes {y[:5]} with classes {classes}")


LOCATED = re.compile(re.escape(NAME) + r": line (\d+), column (\d+): (.*)", re.DOTALL)


def _assert_located(text, kwargs, message, parse):
    """The error names a line and column of ``text``; the lines before it parse without a
    located error, and the text up to that line gives the same error."""
    m = LOCATED.fullmatch(message)
    if m is None:
        if not any(f in message for f in ("no data lines", "every label is")):
            raise Mismatch(f"error without line and column: {message!r}")
        return
    line, column = int(m.group(1)), int(m.group(2))
    lines = text.split(b"\n")
    if not 1 <= line <= len(lines):
        raise Mismatch(f"line {line} of {len(lines)}")
    body = lines[line - 1]
    if not 1 <= column <= len(body) + 1:
        raise Mismatch(f"column {column} beyond line {line} ({len(body)} bytes)")
    if column > 1 and body[column - 2] not in BLANK_BYTES + b":" and body[column - 1] != 13:
        raise Mismatch(f"column {column} is inside a token of {body!r}")
    rebase = re.search(r"index 0 appears at line (\d+)\)$", message)
    stop = int(rebase.group(1)) if rebase else line  # a width error found at the rebase
    before = parse(b"".join(s + b"\n" for s in lines[:stop - 1]), **kwargs)
    if isinstance(before, SvmlightFormatError) and LOCATED.fullmatch(str(before)):
        raise Mismatch(f"the lines before line {stop} already fail: {before}")
    through = parse(b"\n".join(lines[:stop]), **kwargs)
    if str(through) != message:
        raise Mismatch(f"the text through line {stop} gives {through!r}")


def _token_at(text, message):
    """The whole token at the line and column that ``message`` names ("" if none)."""
    m = LOCATED.fullmatch(message)
    if m is None:
        return ""
    body = text.split(b"\n")[int(m.group(1)) - 1]
    token = re.match(rb"[^ \t\r\x0b\x0c#]*", body[int(m.group(2)) - 1:]).group(0)
    return token.decode("utf-8", "replace")


def _refusal_holds(reason, message, text, reference, kwargs):
    """Whether the input really has the property our refusal ``reason`` names."""
    _, ys = reference
    token = _token_at(text, message)
    if reason == "NaN or infinite":
        try:
            return not math.isfinite(float(token))
        except ValueError:
            return False
    if reason == "third distinct label":
        return len(np.unique(ys)) > 2
    if reason == "every label is":  # binary: -1 or +1 alone is read as {-1, +1}
        return len(np.unique(ys)) == 1 and ("multiclass" in message or ys[0] not in (-1, 1))
    if reason == "is neither of the classes":
        return not set(np.unique(ys)) <= set(kwargs.get("classes", ()))
    if reason == "no data lines":
        return len(ys) == 0
    if reason == "cannot parse qid":
        return token.startswith("qid")
    if reason == "does not fit in 32 bits":
        return int(re.search(r"index (\d+)", message).group(1)) >= 2 ** 31 - 1
    if reason == "underscore":
        return "_" in token
    if reason == "carriage return with more text":
        line, column = map(int, LOCATED.fullmatch(message).group(1, 2))
        after = text.split(b"\n")[line - 1][column - 1:]
        return re.match(rb"\r[ \t\r\x0b\x0c]*[^ \t\r\x0b\x0c]", after) is not None
    return reason == "appears twice"


def check(text, kwargs, parse=ours):
    """Judge one document (see the module docstring) read by ``parse`` (:func:`ours`, or
    :func:`converted` with ``multiclass``); return the outcome's name."""
    got = parse(text, **kwargs)
    options = {k: v for k, v in kwargs.items() if k != "classes"}
    reference = sklearn_load(text, **options)
    if isinstance(got, SvmlightFormatError):
        message = str(got)
        _assert_located(text, kwargs, message, parse)
        if isinstance(reference, Exception):
            return "both refuse"
        for reason in REFUSALS:
            if reason in message or (reason == "underscore" and "not a" in message):
                if _refusal_holds(reason, message, text, reference, kwargs):
                    return f"refused: {REFUSALS[reason]}"
        raise Mismatch(f"we refuse what scikit-learn reads: {message}")
    X, y, classes = got
    _assert_valid_matrix(X, y, classes)
    if "classes" in kwargs and tuple(kwargs["classes"]) != classes:
        raise Mismatch(f"classes {classes} instead of {kwargs['classes']}")
    if not isinstance(reference, Exception):
        Xs, ys = reference
        if X.shape[1] == 0 and Xs.shape[1] == 1 and Xs.nnz == 0:
            _assert_same(X, y, classes, Xs[:, :0], ys, "no feature")
            return "differs: no feature"
        _assert_same(X, y, classes, *reference, "accepted by both")
        return "agree"
    if "sorted and unique" in str(reference):
        ordered = sort_rows(text)
        sorted_reference = None if ordered is None else sklearn_load(ordered, **options)
        if sorted_reference is not None and not isinstance(sorted_reference, Exception):
            _assert_same(X, y, classes, *sorted_reference, "rows sorted")
            return "repaired: unsorted"
    raise Mismatch(f"we accept what scikit-learn refuses ({reference!r})")


def converted(text, folder, chunk_bytes=DEFAULT_CHUNK, block_nnz=DEFAULT_BLOCK_NNZ,
              compress=False, **kwargs):
    """``text`` converted to a store in ``folder`` and read back: ``(X, y, classes)`` like
    :func:`ours`, or the SvmlightFormatError (its message naming the file ``NAME``). A
    failed conversion must leave nothing behind."""
    import gzip

    src = os.path.join(folder, NAME + (".gz" if compress else ""))
    dst = os.path.join(folder, "fuzz.h5")
    with open(src, "wb") as fh:
        fh.write(gzip.compress(text, 1) if compress else text)
    try:
        convert_svmlight(src, dst, value_dtype="float64", block_nnz=block_nnz, progress=False,
                         overwrite=True, _chunk_bytes=chunk_bytes, **kwargs)
    except SvmlightFormatError as exc:
        left = sorted(set(os.listdir(folder)) - {os.path.basename(src)})
        if left:
            raise Mismatch(f"a failed conversion left {left}") from exc
        return SvmlightFormatError(str(exc).replace(src, NAME, 1))
    finally:
        os.unlink(src)
    with Store(dst) as store:
        X, y = store.read_rows(0, store.n_samples)
        classes = store.classes
    os.unlink(dst)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y, classes


def check_convert(text, kwargs, folder, chunk_bytes, block_nnz, compress=False):
    """Convert ``text`` through files with tiny chunks and blocks; assert the outcome equals
    the in-memory parse."""
    expected = ours(text, **kwargs)
    got = converted(text, folder, chunk_bytes, block_nnz, compress, **kwargs)
    if isinstance(expected, SvmlightFormatError) or isinstance(got, SvmlightFormatError):
        if str(got) != str(expected):
            raise Mismatch(f"convert gives {got!r}, the parser {expected!r}")
        return
    X, y, classes = got
    Xp, yp, classes_p = expected
    if classes != classes_p or X.shape != Xp.shape or not np.array_equal(y, yp):
        raise Mismatch(f"convert: shape {X.shape} classes {classes}, parser {Xp.shape} "
                       f"{classes_p}")
    if not (np.array_equal(X.indptr, Xp.indptr) and np.array_equal(X.indices, Xp.indices)
            and np.array_equal(X.data.view(np.int64), Xp.data.view(np.int64))):
        raise Mismatch("convert: a different matrix")


def check_multiclass(text, kwargs, folder, chunk_bytes, block_nnz):
    """Judge ``text`` as the multiclass converter reads it (any number of labels)."""
    options = {k: v for k, v in kwargs.items() if k != "classes"}

    def parse(data, **opts):
        return converted(data, folder, chunk_bytes, block_nnz, multiclass=True, **opts)

    return "multiclass: " + check(text, options, parse)


# --- the long run -----------------------------------------------------------------------------
def check_case(rnd, folder, convert):
    """Draw one document with ``rnd`` and judge it; with ``convert``, also its conversion
    and its multiclass conversion. Returns ``(text, kwargs, outcomes)``."""
    text, kwargs = make_document(rnd)
    outcomes = [check(text, kwargs)]
    if convert:
        chunk_bytes, block_nnz = rnd.randint(1, 64), rnd.randint(1, 40)
        check_convert(text, kwargs, folder, chunk_bytes, block_nnz, compress=rnd.random() < 0.2)
        outcomes.append(check_multiclass(text, kwargs, folder, chunk_bytes, block_nnz))
    return text, kwargs, outcomes


def run(n_examples, seed, timeout, convert_every, save_failures=None):
    """Check ``n_examples`` documents, case ``i`` drawn by ``random.Random(f"{seed}-{i}")``;
    return ``(counts, failures)``, failures as ``(i, error)``."""
    counts = collections.Counter()
    failures = []
    folder = tempfile.mkdtemp(prefix="fuzz-svmlight-")
    try:
        # compile every kernel first: numba's compilation is not a hang
        check_convert(b"1 1:1\n-1 2:1\n", {}, folder, 4, 1)
        check_multiclass(b"1 1:1\n2 2:1\n3 1:2\n", {}, folder, 4, 1)
        for i in range(n_examples):
            # a hang ends the run, with a traceback
            faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
            try:
                counts.update(check_case(random.Random(f"{seed}-{i}"), folder,
                                         i % convert_every == 0)[2])
            except Exception as exc:  # recorded, and the run goes on
                counts["FAILURE"] += 1
                failures.append((i, "".join(traceback.format_exception_only(exc)).strip()))
                if save_failures:
                    text, _ = make_document(random.Random(f"{seed}-{i}"))
                    os.makedirs(save_failures, exist_ok=True)
                    with open(os.path.join(save_failures, f"case-{seed}-{i}.svm"), "wb") as fh:
                        fh.write(text)
            finally:
                faulthandler.cancel_dump_traceback_later()
    finally:
        shutil.rmtree(folder)
    return counts, failures


def _positive_int(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _seconds(text):
    t = float(text)
    if not 0 < t <= 1e6:  # what faulthandler's watchdog takes (NaN fails too)
        raise argparse.ArgumentTypeError(f"must be in (0, 1e6] seconds, got {text}")
    return t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=_positive_int, default=10_000,
                        help="documents to check")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=_seconds, default=60.0,
                        help="seconds one document may take before the run is ended as hung")
    parser.add_argument("--convert-every", type=_positive_int, default=10,
                        help="also run every N-th document through convert_svmlight")
    parser.add_argument("--case", type=int, help="rerun this one case and show its error")
    parser.add_argument("--save-failures", metavar="DIR", help="write failing inputs here")
    args = parser.parse_args(argv)
    if args.case is not None:
        with tempfile.TemporaryDirectory() as folder:
            text, kwargs, outcomes = check_case(random.Random(f"{args.seed}-{args.case}"),
                                                folder, True)
        print(f"{kwargs} {text!r}: {', '.join(outcomes)}")
        return 0
    t0 = time.perf_counter()
    counts, failures = run(args.examples, args.seed, args.timeout, args.convert_every,
                           args.save_failures)
    multiclass = sum(n for k, n in counts.items() if k.startswith("multiclass"))
    print(f"{args.examples} documents checked (every {args.convert_every}-th also converted, "
          f"and judged as the multiclass converter reads it: {multiclass}) in "
          f"{time.perf_counter() - t0:.0f} s, seed {args.seed}: {len(failures)} failures")
    for outcome, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {n:8d}  {outcome}")
    for i, error in failures[:20]:
        print(f"FAILURE case {i} (rerun: --seed {args.seed} --case {i}): {error}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
