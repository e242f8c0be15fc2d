"""Fuzzing the svmlight parser and converter against scikit-learn's ``load_svmlight_file``.

The generators and the judge are in tools/fuzz_svmlight.py (its docstring lists the allowed
outcomes); here they run on a fixed, derandomised set of documents so that CI is
reproducible. Longer runs: ``python tools/fuzz_svmlight.py --examples 100000``.
"""

import collections
import faulthandler
import importlib
import io
import os
import random
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from streamssvm.data.convert import convert_svmlight
from streamssvm.data.svmlight import SvmlightFormatError, parse_svmlight_bytes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
fuzz = importlib.import_module("fuzz_svmlight")

# A test taking this long has hung (numba's first compilation included): the process ends
# with a traceback.
WATCHDOG_SECONDS = 600


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True, file=sys.__stderr__)
    yield
    faulthandler.cancel_dump_traceback_later()


@settings(max_examples=300, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fuzz.token_documents())
def test_token_documents_parse_like_sklearn_or_fail_where_they_should(document):
    text, kwargs = document
    assert fuzz.check(text, kwargs)


def test_random_documents_parse_and_convert_like_sklearn(tmp_path):
    """Cases 0..599 of the tool's seed 0, every tenth also converted, as binary and as
    multiclass (rerun one: tools/fuzz_svmlight.py --case I)."""
    outcomes = collections.Counter()
    for i in range(600):
        try:
            outcomes.update(fuzz.check_case(random.Random(f"0-{i}"), tmp_path,
                                            convert=i % 10 == 0)[2])
        except AssertionError as exc:
            raise AssertionError(f"case {i}: {exc}") from exc
    # the generator reaches every kind of outcome, not only refusals
    assert outcomes["agree"] > 100 and outcomes["both refuse"] > 100, outcomes
    assert outcomes["repaired: unsorted"] > 5, outcomes
    assert sum(n for k, n in outcomes.items() if k.startswith("refused")) > 50, outcomes
    assert outcomes["multiclass: agree"] > 5 and outcomes["multiclass: both refuse"] > 5


def test_tool_counts_cases_and_failures(capsys):
    assert fuzz.main(["--examples", "30", "--seed", "7", "--convert-every", "15"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("30 documents checked (every 15-th also converted, and judged as the "
                          "multiclass converter reads it: 2)") and ": 0 failures" in out


@pytest.mark.parametrize("options, message", [
    (["--convert-every", "0"], "argument --convert-every: must be >= 1, got 0"),
    (["--examples", "-5"], "argument --examples: must be >= 1, got -5"),
    (["--timeout", "0"], "argument --timeout: must be in (0, 1e6] seconds, got 0"),
    (["--timeout", "nan"], "argument --timeout: must be in (0, 1e6] seconds, got nan"),
])
def test_tool_refuses_bad_options(tmp_path, capsys, options, message):
    with pytest.raises(SystemExit) as exc:
        fuzz.main(["--examples", "3", "--save-failures", str(tmp_path / "f"), *options])
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not os.listdir(tmp_path)

# --- where we differ from scikit-learn on purpose ---------------------------------------------
def _sklearn(text, **kwargs):
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(io.BytesIO(text), **kwargs)


# text, what scikit-learn makes of it, our error
REFUSED = [
    (b"1 1:nan\n-1 2:1\n", "a NaN value", "value 'nan' is NaN or infinite"),
    (b"1 1:1e999\n-1 2:1\n", "an infinite value", "value '1e999' is NaN or infinite"),
    (b"inf 1:1\n-1 2:1\n", "an infinite label", "label 'inf' is NaN or infinite"),
    (b"1 1:1\n-1 2:1\n2 3:1\n", "three classes", "third distinct label '2'"),
    (b"2 1:1\n2 2:1\n", "one class, 2", "every label is 2"),
    (b"1 qid:abc 1:1\n-1 2:1\n", "qid value ignored", "cannot parse qid 'qid:abc'"),
    (b"1 1_0:1\n-1 2:1\n", "index 10", "index in '1_0:1' is not a non-negative integer"),
    (b"1 1:1_0\n-1 2:1\n", "value 10.0", "value '1_0' is not a number"),
    (b"1 2147483647:1\n-1 0:1\n", "column 2147483647 (zero-based)", "does not fit in 32 bits"),
    (b"", "a 0 x 1 matrix", "no data lines"),
    (b"# header only\n\n", "a 0 x 1 matrix", "no data lines"),
    (b"1 1:1\r2:1\n-1 3:1\n", "the CR as a blank", "carriage return with more text after it"),
    (b"1 1:1 # c\r-1 2:1\n", "one row: the comment runs to the newline",
     "carriage return with more text after it"),
]


@pytest.mark.parametrize("text, sklearn_reads, message", REFUSED)
def test_refusals_sklearn_accepts(text, sklearn_reads, message):
    _sklearn(text)  # accepted there
    with pytest.raises(SvmlightFormatError, match=message):
        parse_svmlight_bytes(text)


def test_unsorted_rows_repaired_where_sklearn_refuses():
    text = b"1 3:1 1:2\n-1 2:5 1:1\n"
    with pytest.raises(ValueError, match="sorted and unique"):
        _sklearn(text)
    X, y, _ = parse_svmlight_bytes(text)
    Xs, ys = _sklearn(fuzz.sort_rows(text))
    assert np.array_equal(X.toarray(), Xs.toarray()) and list(y) == [1, -1]


def test_no_feature_width_zero_where_sklearn_says_one():
    X, y, _ = parse_svmlight_bytes(b"1\n-1 # c\n")
    Xs, _ = _sklearn(b"1\n-1 # c\n")
    assert X.shape == (2, 0) and Xs.shape == (2, 1) and Xs.nnz == 0


# --- regressions found by the fuzzer ----------------------------------------------------------
@pytest.mark.parametrize("text", [b"", b"# nothing\n\n  \t\n"])
def test_no_data_lines_refused_also_with_classes(tmp_path, text):
    """Found by the fuzzer: with ``classes`` given, an input without data lines crashed
    (numpy concatenate) in the parser and gave an empty store in the converter."""
    with pytest.raises(SvmlightFormatError, match="no data lines"):
        parse_svmlight_bytes(text, classes=(-1, 1))
    src = tmp_path / "empty.svm"
    src.write_bytes(text)
    with pytest.raises(SvmlightFormatError, match="no data lines"):
        convert_svmlight(src, tmp_path / "empty.h5", classes=(-1, 1), progress=False)
    assert os.listdir(tmp_path) == ["empty.svm"]


def test_auto_base_refuses_an_index_that_overflows_once_zero_based():
    """Found by the fuzzer: read one-based, 2147483647 fits int32 as column 2147483646; an
    index 0 on a later line makes it column 2147483647, which zero_based=True refuses."""
    text = b"1 2147483647:1\n-1 0:1\n"
    message = (r"line 1, column 3: index 2147483647 does not fit in 32 bits \(the file is "
               r"zero-based: index 0 appears at line 2\)")
    with pytest.raises(SvmlightFormatError, match=message):
        parse_svmlight_bytes(text)
    with pytest.raises(SvmlightFormatError, match="does not fit in 32 bits"):
        parse_svmlight_bytes(text, zero_based=True)


def test_a_refusal_is_judged_on_the_whole_token():
    """Found by a long run of the tool: the error quotes 40 characters of a token, and the
    underscore that made it invalid came later."""
    text = b"1 1:0." + b"3" * 60 + b"_3\n-1 2:1\n"
    assert fuzz.check(text, {}).startswith("refused: digits grouped with '_'")


# --- long inputs finish ----------------------------------------------------------------------
def test_overlong_line_and_token_parse_like_sklearn():
    row = b" ".join(b"%d:%d.5" % (j, j % 9) for j in range(1, 200_001))
    digits = b"0." + b"1" * 200_000  # one value of 200,000 digits: Python's float()
    text = b"1 " + row + b"\n-1 1:" + digits + b"\n"
    assert fuzz.check(text, {"zero_based": "auto"}) == "agree"
