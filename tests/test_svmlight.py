"""The Numba svmlight parser on byte strings: grammar, exact floats, errors, blocks, bounds.

References: Python's ``float`` (correctly rounded, like strtod) for every number, and
scikit-learn's ``load_svmlight_file`` for whole inputs.
"""

import io
import math
import random
import struct
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamssvm.data.memory import block_offsets_by_nnz
from streamssvm.data.svmlight import (MIN_ROW_CAP, BlockParser, SvmlightFormatError,
                                       parse_svmlight_bytes)


def parse(text, **kwargs):
    if isinstance(text, str):
        text = text.encode()
    return parse_svmlight_bytes(text, **kwargs)


def dense(text, **kwargs):
    X, y, classes = parse(text, **kwargs)
    return X.toarray(), y, classes


def sklearn_parse(text, **kwargs):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(io.BytesIO(text), **kwargs)
    return X, y


def assert_same_as_sklearn(text, **kwargs):
    X, y, classes = parse(text, **kwargs)
    Xs, ys = sklearn_parse(text, **kwargs)
    assert X.shape == Xs.shape
    assert np.array_equal(X.indptr, Xs.indptr)
    assert np.array_equal(X.indices, Xs.indices.astype(np.int32))
    assert np.array_equal(X.data.view(np.int64), Xs.data.view(np.int64))  # bit for bit
    assert np.array_equal(y, np.where(ys == classes[1], 1, -1))
    assert set(np.unique(ys)) <= set(classes)


def values_of(tokens):
    text = "".join(f"1 {j + 1}:{t}\n" for j, t in enumerate(tokens)).encode()
    X, _, _ = parse(text, zero_based=False)
    out = np.zeros(len(tokens))
    coo = X.tocoo()
    out[coo.col] = coo.data
    return out


# --- numbers ----------------------------------------------------------------------------------
def random_tokens(n, seed):
    rng = random.Random(seed)
    digits = "0123456789"
    out = []
    while len(out) < n:
        k = rng.randrange(10)
        if k == 0:
            t = repr(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        elif k == 1:
            t = "%.17g" % (rng.random() * 10 ** rng.randint(-30, 30))
        elif k == 2:
            t = "%.*f" % (rng.randint(0, 25), rng.random() * 10 ** rng.randint(-5, 10))
        elif k == 3:
            t = "".join(rng.choice(digits) for _ in range(rng.randint(1, 25)))
        elif k == 4:
            t = ("".join(rng.choice(digits) for _ in range(rng.randint(1, 12))) + "."
                 + "".join(rng.choice(digits) for _ in range(rng.randint(0, 12)))
                 + rng.choice(["", f"e{rng.randint(-40, 40)}", f"E+{rng.randint(0, 30)}"]))
        elif k == 5:
            t = "%.*e" % (rng.randint(0, 20), rng.random() * 10 ** rng.randint(-300, 300))
        elif k == 6:
            t = "." + "".join(rng.choice(digits) for _ in range(rng.randint(1, 30)))
        elif k == 7:
            t = rng.choice(["+", "-", ""]) + "%.*g" % (rng.randint(1, 17), rng.random())
        elif k == 8:  # near the midpoint of two doubles: rounding-to-even decisions
            x = rng.random() * 10 ** rng.randint(-20, 20)
            midpoint = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
            t = format(midpoint, f".{rng.randint(14, 18)}e")
        else:  # 17-digit mantissas over the whole exponent range (Eisel-Lemire)
            t = f"{rng.randint(1, 10 ** 17)}e{rng.randint(-345, 300)}"
        if "inf" in t or "nan" in t or not np.isfinite(float(t)):
            continue
        out.append(t)
    return out


def test_numbers_bit_identical_to_python_float():
    tokens = random_tokens(60_000, seed=7) + [
        "0", "-0", "-0.0", "+0.0", "0e0", "1", "+1", "-1", "1.", ".5", "-.5", "5e-324",
        "2.2250738585072014e-308", "1.7976931348623157e308", "9007199254740993",
        "9007199254740992.0", "0.1", "0.30000000000000004", "123456789012345678901234567890",
        "1e22", "1e23", "1e-22", "1e-23", "4.35679e-10", "00000000000000000000000001.5",
        "0.00000000000000000000000000012345678901234567890", "1E5", "1e+05", "-1.5E-3",
        "9007199254740993e-20", "2.2250738585072011e-308", "4.9406564584124654e-324",
        "1.7976931348623158e308", "0.1e-342", "12345678901234567e-360", "1e-400"]
    got = values_of(tokens)
    ref = np.array([float(t) for t in tokens])
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))


@st.composite
def number_text(draw):
    digits = st.text(alphabet="0123456789", max_size=24)
    whole, frac = draw(digits), draw(digits)
    if not whole and not frac:
        whole = "0"
    text = draw(st.sampled_from(["", "+", "-"])) + whole
    if frac or draw(st.booleans()):
        text += "." + frac
    if draw(st.booleans()):
        text += draw(st.sampled_from(["e", "E"])) + draw(st.sampled_from(["", "+", "-"]))
        text += str(draw(st.integers(0, 400)))
    return text


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.one_of(number_text(),
                          st.floats(allow_nan=False, allow_infinity=False).map(repr)),
                min_size=1, max_size=10))
def test_numbers_hypothesis(tokens):
    tokens = [t for t in tokens if np.isfinite(float(t))]
    if not tokens:
        return
    got = values_of(tokens)
    ref = np.array([float(t) for t in tokens])
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))


def test_labels_need_python_float_when_long():
    X, y, classes = parse(b"1.00000000000000000000001 1:1\n-1.000000000000000000000001 1:2\n")
    assert classes == (-1.0, 1.0)
    assert list(y) == [1, -1]


# --- grammar ----------------------------------------------------------------------------------
GRAMMAR_CASES = {
    "plain": b"1 1:0.5 3:2\n-1 2:1\n",
    "comments": b"# header\n1 1:0.5 3:2 # trailing\n#\n-1 2:1#glued\n   # indented\n",
    "qid": b"1 qid:3 1:0.5 3:2\n-1 qid:-4 2:1\n1 qid:+12 4:1\n",
    "crlf": b"1 1:0.5 3:2\r\n-1 2:1\r\n",
    "tabs_and_blanks": b"1\t1:0.5\t 3:2 \t\n\n   \n\t\n-1  2:1   \n\n",
    "no_trailing_newline": b"1 1:0.5 3:2\n-1 2:1",
    "no_trailing_newline_after_label": b"1 1:0.5 3:2\n-1",
    "empty_rows": b"1\n-1 2:1\n1 \n-1\n",
    "one_feature": b"1 7:3.25\n",
    "leading_whitespace": b"   1 1:0.5\n\t-1 2:1\n",
    "explicit_zeros": b"1 1:0 2:0.0 3:-0.0\n-1 2:1e-400\n",
    "labels_as_floats": b"+1.0 1:1\n-1.0 2:1\n1e0 3:1\n",
    "labels_01": b"0 1:1\n1 2:1\n0 3:1\n",
    "labels_12": b"2 1:1\n1 2:1\n",
    "blank_line_then_eof_blanks": b"1 1:1\n  \t",
    # a carriage return that only blanks follow on its line is a blank
    "cr_then_blanks_before_newline": b"1 1:0.5\r\r\n-1 2:1 \r\t\n# c\r\n\r\n1 3:2 # d\r \r",
}


@pytest.mark.parametrize("name", sorted(GRAMMAR_CASES))
def test_grammar_same_as_sklearn(name):
    assert_same_as_sklearn(GRAMMAR_CASES[name])
    assert_same_as_sklearn(GRAMMAR_CASES[name], zero_based=False)
    assert_same_as_sklearn(GRAMMAR_CASES[name], zero_based=True)


def test_generated_same_as_sklearn(make_svmlight):
    rng = np.random.default_rng(3)
    for labels, one_based in (((-1, 1), True), ((0, 1), False), (("+1.0", "-1.0"), True)):
        text = make_svmlight(rng, 300, 40, labels=labels, one_based=one_based)
        assert_same_as_sklearn(text)


def test_unsorted_rows_are_sorted():
    parts = []
    parser = BlockParser("<t>", lambda *a: parts.append([x.copy() for x in a]))
    text = b"1 5:5 1:1 3:3\n-1 2:2 1:1\n1 1:1 2:2\n"
    buf = np.frombuffer(text, np.uint8)
    parser.feed(buf, len(buf))
    parser.finish()
    assert parser.repaired_rows == 2
    X, _, _ = parse(text)
    Xs, _, _ = parse(b"1 1:1 3:3 5:5\n-1 1:1 2:2\n1 1:1 2:2\n")
    assert X.has_sorted_indices
    assert (X != Xs).nnz == 0
    assert np.array_equal(X.indices, Xs.indices)


def test_unsorted_row_with_slow_values_keeps_them_in_place():
    X, _, _ = parse(b"1 3:0.12345678901234567890 1:7 2:1e-30\n", zero_based=False)
    assert list(X.indices) == [0, 1, 2]
    assert X.data.tolist() == [7.0, 1e-30, float("0.12345678901234567890")]


# --- labels and index base --------------------------------------------------------------------
@pytest.mark.parametrize("text, classes, y", [
    (b"-1 1:1\n1 1:1\n", (-1.0, 1.0), [-1, 1]),
    (b"1 1:1\n-1 1:1\n", (-1.0, 1.0), [1, -1]),
    (b"0 1:1\n1 1:1\n", (0.0, 1.0), [-1, 1]),
    (b"1 1:1\n0 1:1\n", (0.0, 1.0), [1, -1]),
    (b"2 1:1\n1 1:1\n2 1:1\n", (1.0, 2.0), [1, -1, 1]),
    (b"+1.0 1:1\n-1.0 1:1\n", (-1.0, 1.0), [1, -1]),
    (b"1 1:1\n1 1:1\n", (-1.0, 1.0), [1, 1]),
    (b"-1 1:1\n", (-1.0, 1.0), [-1]),
    (b"-0.0 1:1\n0 1:1\n3 1:1\n", (0.0, 3.0), [-1, -1, 1]),
])
def test_label_map(text, classes, y):
    _, got_y, got_classes = parse(text)
    assert got_classes == classes
    assert list(got_y) == y


def test_fixed_classes():
    _, y, classes = parse(b"5 1:1\n5 2:1\n", classes=(3, 5))
    assert classes == (3.0, 5.0) and list(y) == [1, 1]
    _, y, classes = parse(b"-1 1:1\n1 2:1\n", classes=(1, -1))
    assert classes == (1.0, -1.0) and list(y) == [1, -1]


def test_single_label_other_than_pm1_needs_classes():
    with pytest.raises(SvmlightFormatError, match="every label is 2.*like= / --like .*classes="):
        parse(b"2 1:1\n2 2:1\n")


def test_no_data_lines():
    with pytest.raises(SvmlightFormatError, match="no data lines"):
        parse(b"# only a comment\n\n  \n")


@pytest.mark.parametrize("zero_based, shape, first", [
    ("auto", (2, 3), [1.0, 0.0, 2.0]), (False, (2, 3), [1.0, 0.0, 2.0]),
    (True, (2, 4), [0.0, 1.0, 0.0, 2.0])])
def test_index_base(zero_based, shape, first):
    X, _, _ = dense(b"1 1:1 3:2\n-1 2:5\n", zero_based=zero_based)
    assert X.shape == shape
    assert X[0].tolist() == first


def test_auto_switches_to_zero_based_and_shifts_emitted_blocks(make_svmlight):
    rng = np.random.default_rng(5)
    text = make_svmlight(rng, 400, 30, one_based=True, empty_rows=False)
    text += b"1 0:2.5 4:1\n"  # the only 0, in the last line
    parts, rebased = [], []

    def shift():
        rebased.append(len(parts))
        for part in parts:
            part[1] += 1

    parser = BlockParser("<t>", lambda *a: parts.append([x.copy() for x in a]), shift,
                         block_nnz=50)
    buf = np.frombuffer(text, np.uint8)
    parser.feed(buf, len(buf))
    parser.finish()
    assert parser.zero_based and rebased and rebased[0] > 3
    X = np.vstack([_block_dense(p, parser.n_features) for p in parts])
    Xs, _ = sklearn_parse(text)
    assert np.array_equal(X, Xs.toarray())


def _block_dense(part, width):
    import scipy.sparse as sp

    indptr, indices, values, y = part
    return sp.csr_matrix((values, indices, indptr), shape=(len(y), width)).toarray()


def test_auto_rebase_checks_width():
    message = (r"line 1, column 3: index 3 >= n_features=3 "
               r"\(the file is zero-based: index 0 appears at line 2\)")
    with pytest.raises(SvmlightFormatError, match=message):
        parse(b"1 3:1\n-1 0:1\n", n_features=3)
    X, _, _ = parse(b"1 2:1\n-1 0:1\n", n_features=3)
    assert X.shape == (2, 3)


# --- errors -----------------------------------------------------------------------------------
CR_TEXT = ("carriage return with more text after it on the line: if lines end in CR alone "
           "(old Mac style), make them newlines first, e.g. tr '\\r' '\\n' < IN > OUT")
ERROR_CASES = [
    # text, kwargs, line, column, message fragment
    (b"1 1:0.5\n-1 2:abc\n", {}, 2, 6, "value 'abc' is not a number"),
    (b"1 2:0.5x\n", {}, 1, 5, "value '0.5x' is not a number"),
    (b"1 2:1:3\n", {}, 1, 5, "value '1:3' is not a number"),
    (b"1 1:\n", {}, 1, 5, "missing value"),
    (b"1 2:1e\n", {}, 1, 5, "value '1e' is not a number"),
    (b"1 2:--1\n", {}, 1, 5, "not a number"),
    (b"abc 1:1\n", {}, 1, 1, "label 'abc' is not a number"),
    (b"1:1 2:1\n", {}, 1, 1, "is the label missing"),
    (b"1 3 4:1\n", {}, 1, 3, "missing colon in '3'"),
    (b"1 4:1 abc\n", {}, 1, 7, "missing colon in 'abc'"),
    (b"1 a:1\n", {}, 1, 3, "index in 'a:1' is not"),
    (b"1 1.5:1\n", {}, 1, 3, "index in '1.5:1' is not"),
    (b"1 0:1\n", {"zero_based": False}, 1, 3,
     "index 0 < 1 in one-based mode (use zero_based=True / --zero-based yes"),
    (b"1 -1:1\n", {"zero_based": True}, 1, 3, "index -1 < 0"),
    (b"1 -3:1\n", {}, 1, 3, "index -3 < 0"),
    (b"1 5:1\n", {"n_features": 4, "zero_based": False}, 1, 3, "index 5 is beyond n_features=4"),
    (b"1 4:1\n", {"n_features": 4, "zero_based": True}, 1, 3, "index 4 is beyond n_features=4"),
    (b"1 99999999999:1\n", {}, 1, 3, "does not fit in 32 bits"),
    # indices too long for the parser's integer are shown as written, not as its sentinel
    (b"1 99999999999999999999:1\n", {}, 1, 3, "index 99999999999999999999 does not fit"),
    (b"1 -99999999999999999999:1\n", {}, 1, 3, "index -99999999999999999999 < 0"),
    (b"1 1:nan\n", {}, 1, 5, "value 'nan' is NaN or infinite"),
    (b"1 1:-inf\n", {}, 1, 5, "value '-inf' is NaN or infinite"),
    (b"1 1:Infinity\n", {}, 1, 5, "NaN or infinite"),
    (b"1 1:1 2:1e999\n", {}, 1, 9, "value '1e999' is NaN or infinite"),
    (b"nan 1:1\n", {}, 1, 1, "label 'nan' is NaN or infinite"),
    (b"1e999 1:1\n", {}, 1, 1, "label '1e999' is NaN or infinite"),
    (b"1 1:1 1:2\n", {}, 1, 7, "index 1 appears twice"),
    (b"1 3:1 1:1 3:2\n", {}, 1, 11, "index 3 appears twice"),
    (b"1 qid:abc 1:1\n", {}, 1, 3, "cannot parse qid 'qid:abc'"),
    (b"1 qid: 1:1\n", {}, 1, 3, "cannot parse qid"),
    (b"1 quid:3 1:1\n", {}, 1, 3, "cannot parse qid"),
    (b"1 1:1 qid:3\n", {}, 1, 7, "qid must come right after the label"),
    (b"1,2 1:1\n", {}, 1, 1, "multilabel"),
    (b"1 1:1\n2 1:1\n\n3 1:1\n", {}, 4, 1, "third distinct label '3'"),
    (b"2 1:1\n", {"classes": (0, 1)}, 1, 1, "label '2' is neither of the classes"),
    (b"# header\n\n1 1:1\r\n1 2:x\r\n", {}, 4, 5, "value 'x'"),
    (b"  1 2:x", {}, 1, 7, "value 'x'"),
    (b"1 1:1\n-1 2:1\n1 2:\t", {}, 3, 5, "missing value"),
    # text after a carriage return on its line: lines ended by CR alone (old Mac style) were
    # read as one line, an error further on or, after a comment, rows dropped silently
    (b"1 1:1\r-1 2:1\r", {}, 1, 6, CR_TEXT),
    (b"1 1:1\n-1 2:1\n1 3:1\r-1 4:1\r", {}, 3, 6, CR_TEXT),
    (b"1 1:1\n-1 2:1 # from a Mac\r1 4:1\r-1 5:1\r", {}, 2, 20, CR_TEXT),
    (b"1 1:1\n-1 2:1\n\r \r\t-1 4:1\n", {}, 3, 1, CR_TEXT),
    (b"1 1:1\r\r\n-1 qid:2\r 2:1\n", {}, 2, 9, CR_TEXT),
]


@pytest.mark.parametrize("text, kwargs, line, column, fragment", ERROR_CASES)
def test_errors_name_file_line_column(text, kwargs, line, column, fragment):
    with pytest.raises(SvmlightFormatError) as info:
        parse(text, name="bad.svm", **kwargs)
    message = str(info.value)
    assert message.startswith(f"bad.svm: line {line}, column {column}: "), message
    assert fragment in message
    assert ("carriage return" in message) == (fragment == CR_TEXT)
    assert isinstance(info.value, ValueError)


# --- blocks and buffer bounds -----------------------------------------------------------------
@pytest.mark.parametrize("block_rows, block_nnz", [(None, 1), (None, 37), (None, 10_000),
                                                    (1, 1), (7, 1 << 19)])
def test_blocks_cut_like_in_memory_source(make_svmlight, block_rows, block_nnz):
    rng = np.random.default_rng(11)
    text = make_svmlight(rng, 500, 50)
    X, _, _ = parse(text)
    sizes = []
    parser = BlockParser("<t>", lambda indptr, *a: sizes.append(len(indptr) - 1),
                         block_rows=block_rows, block_nnz=block_nnz)
    buf = np.frombuffer(text, np.uint8)
    parser.feed(buf, len(buf))
    parser.finish()
    expected = np.diff(block_offsets_by_nnz(X.indptr, block_nnz, block_rows))
    assert sizes == expected.tolist()


def test_nearly_empty_rows_cap_block_rows():
    sizes = []
    parser = BlockParser("<t>", lambda indptr, *a: sizes.append(len(indptr) - 1), block_nnz=10)
    text = b"1\n" * (2 * MIN_ROW_CAP + 5) + b"-1 1:1\n"
    buf = np.frombuffer(text, np.uint8)
    parser.feed(buf, len(buf))
    parser.finish()
    assert sizes == [MIN_ROW_CAP, MIN_ROW_CAP, 6]


def test_long_rows_grow_the_arrays():
    row = " ".join(f"{j}:{j % 7}.25" for j in range(1, 5001))
    text = f"1 {row}\n-1 {row}\n".encode()
    X, y, _ = parse(text)
    assert X.shape == (2, 5000) and X.nnz == 10_000
    assert_same_as_sklearn(text)


def _outcome(fn):
    try:
        X, y, classes = fn()
        return X.shape, X.indptr.tolist(), X.indices.tolist(), X.data.tolist(), y.tolist(), classes
    except SvmlightFormatError as exc:
        return str(exc)


def test_parser_never_reads_past_end():
    """Parsing buf[:k] of a buffer followed by more text equals parsing the k bytes alone."""
    text = (b"1 qid:2 1:0.5 3:-2e3 # c\r\n-1 2:1.25\n\n+1.0 4:7 5:0.1234567890123456789\n"
            b"-1\n1 6:8e-5")
    junk = b"9999:1 777 1e5 qid:1 #\n"
    full = np.frombuffer(text + junk, np.uint8)
    for k in range(len(text) + 1):
        def in_buffer(k=k):
            parts = []
            parser = BlockParser("t", lambda *a: parts.append([x.copy() for x in a]))
            parser.feed(full, k)
            parser.finish()
            return _assemble(parts, parser)

        assert _outcome(in_buffer) == _outcome(lambda k=k: parse(text[:k], name="t")), k


def _assemble(parts, parser):
    import scipy.sparse as sp

    classes, flip = parser.classes()
    y = np.concatenate([p[3] for p in parts])
    X = sp.vstack([sp.csr_matrix((p[2], p[1], p[0]), shape=(len(p[3]), parser.n_features))
                   for p in parts], format="csr")
    return X, (-y if flip else y), classes


def test_feed_rejects_wrong_buffer_type():
    parser = BlockParser("t", lambda *a: None)
    with pytest.raises(TypeError):
        parser.feed(np.zeros(4, np.int32), 4)


@pytest.mark.parametrize("kwargs", [{"zero_based": "yes"}, {"block_nnz": 0}, {"block_rows": 0},
                                    {"classes": (1, 1)}, {"n_features": -1}])
def test_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        BlockParser("t", lambda *a: None, **kwargs)
