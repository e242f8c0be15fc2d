"""A feed parsed in two halves at once (``BlockParser(parallel=True)``) gives the blocks,
counts, classes and errors of one parse of it (``parallel=False``): labels first seen in
either half, a switch to zero-based in either half, Python-parsed values, unsorted rows,
block limits met inside the second half, errors in either half."""

import random

import numpy as np
import pytest

from streamssvm.data.svmlight import SPLIT_BYTES, BlockParser, SvmlightFormatError


def lines(n, seed, labels=("-1", "+1"), first_index=1, n_features=5000):
    """n svmlight lines, about 40 bytes each: ``labels`` in order, then random ones from
    them (so that each half sees them first in that order), sorted indices from
    ``first_index``, short values, a comment or a blank line now and then."""
    rng = random.Random(seed)
    out = [f"{label} {first_index}:1" for label in labels]
    for _ in range(n - len(labels)):
        cols = sorted(rng.sample(range(first_index, n_features), rng.randint(0, 8)))
        pairs = " ".join(f"{j}:{rng.choice(('1', '0.5', '-2.25', '3e-2'))}" for j in cols)
        out.append(f"{rng.choice(labels)} {pairs}".rstrip())
        if rng.random() < 0.01:
            out.append(rng.choice(("", "# a comment", "   ")))
    return out


def text_of(first, second):
    """The lines ``first`` then ``second`` as bytes, checked to straddle the split: the
    feed is long enough to be split, and the split lies inside ``second``'s lines or at
    their start (its middle is about ``second[len(second) // 2]``)."""
    data = ("\n".join(first + second) + "\n").encode()
    head = len(("\n".join(first) + "\n").encode())
    assert len(data) >= SPLIT_BYTES and head <= len(data) // 2
    return data


def line_of(data, line):
    """The 1-based number of ``line``'s first occurrence in ``data``."""
    return data[:data.index(line.encode())].count(b"\n") + 1


def parse_all(data, feeds, parallel, **kwargs):
    """(blocks, figures, parser) of ``data`` fed in ``feeds`` parts cut at newlines."""
    blocks = []

    def shift():
        for block in blocks:
            block[1] += 1

    parser = BlockParser("f.svm", lambda *a: blocks.append([x.copy() for x in a]), shift,
                         parallel=parallel, **kwargs)
    buf = np.frombuffer(bytearray(data), np.uint8)
    cuts = [0] + [data.rindex(b"\n", 0, len(data) * k // feeds) + 1
                  for k in range(1, feeds)] + [len(data)]
    try:
        for lo, hi in zip(cuts, cuts[1:]):
            parser.feed(buf[lo:hi].copy(), hi - lo)
        parser.finish()
        classes, codes = parser.classes()  # multiclass: codes are an array
        got = ((classes, np.asarray(codes).tolist()), parser.n_features, parser.repaired_rows,
               parser.lines, parser.n_samples, parser.zero_based, None)
    except SvmlightFormatError as exc:
        got = (None,) * 6 + (str(exc),)
    return blocks, got, parser


def outcome(data, feeds=1, **kwargs):
    """Blocks (copied), classes, width, counts and the error's message, of ``data`` fed
    in ``feeds`` parts, without the split and with it."""
    return [parse_all(data, feeds, parallel, **kwargs) for parallel in (False, True)]


def assert_same(data, split=True, **kwargs):
    (seq_blocks, seq, _), (par_blocks, par, parser) = outcome(data, **kwargs)
    assert par == seq
    assert len(par_blocks) == len(seq_blocks)
    for a, b in zip(seq_blocks, par_blocks):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and np.array_equal(x, y)
    # the second half's parse was taken (split), or every feed's was parsed again
    assert (parser.split_feeds > 0) is split
    return seq


@pytest.mark.parametrize("kwargs", [{}, {"block_rows": 997}, {"block_nnz": 3001},
                                    {"block_nnz": 1 << 19, "n_features": 5000}])
def test_blocks_counts_and_classes_as_one_parse(kwargs):
    data = text_of(lines(200, 1), lines(30000, 2))
    got = assert_same(data, **kwargs)
    assert got[-1] is None and got[4] > 30000


def test_python_parsed_values_and_unsorted_rows_in_the_second_half():
    tail = lines(30000, 3)
    tail[20000] = "-1 7:0.1000000000000000055511151231257827 3:1e-400 9:1.5"
    tail[22000] = "+1 9:2 4:1"
    data = text_of(lines(100, 4), tail)
    got = assert_same(data)
    assert got[2] == 2  # both rows were sorted


def labelled(label, n, seed):
    """``lines`` of one label."""
    return lines(n, seed, labels=(label,))


@pytest.mark.parametrize("first, second, classes", [
    # the first half sees -1 first, the second +1 first (its codes swapped)
    (["-1 1:1"] * 10 + ["+1 2:1"], labelled("+1", 30000, 5) + ["-1 3:1"], (-1.0, 1.0)),
    # one label in the first half, the other only in the second (its codes swapped)
    (["-1 1:1"] * 10, labelled("+1", 30000, 6), (-1.0, 1.0)),
    (["+1 1:1"] * 10, labelled("-1", 30000, 6), (-1.0, 1.0)),
    (["0 1:1"] * 10, labelled("2", 30000, 7), (0.0, 2.0)),
    # one label in both halves, the other last in the second
    (["-1 1:1"] * 10, labelled("-1", 30000, 8) + ["+1 2:1"], (-1.0, 1.0)),
])
def test_labels_first_seen_in_either_half_in_any_order(first, second, classes):
    assert assert_same(text_of(first, second))[0][0] == classes


@pytest.mark.parametrize("labels", [("-1", "+1"), ("-1",)])
def test_a_third_label_in_the_second_half_is_refused_with_its_line(labels):
    # met by the second half's parse, or only by the two halves' labels together
    tail = lines(30000, 9, labels=labels)
    tail[25000] = "3 1:1"
    data = text_of(lines(100, 9), tail)
    got = assert_same(data, split=False)
    assert f"line {line_of(data, '3 1:1')}," in got[-1] and "third distinct label" in got[-1]


def test_a_block_filled_by_the_second_halfs_last_row():
    # two feeds of 30,000 rows each, blocks of 1,000 rows: the first feed's last row fills
    # a block, which is handed on before the second feed
    data = ("".join(f"{'-1' if i % 2 else '+1'} 1:1 2:0.5 3:0.25 4:2 5:3 6:4 7:5 8:6\n"
                    for i in range(60000))).encode()
    assert data.rindex(b"\n", 0, len(data) // 2) + 1 == len(data) // 2
    assert assert_same(data, feeds=2, block_rows=1000)[4] == 60000


def test_multiclass_labels_new_in_the_second_half_in_another_order():
    data = text_of(lines(50, 10, labels=("1", "2", "3")),
                   lines(30000, 11, labels=("5", "3", "4", "1")))
    assert assert_same(data, multiclass=True)[0][0] == (1.0, 2.0, 3.0, 4.0, 5.0)


@pytest.mark.parametrize("where", ["first", "second"])
def test_a_switch_to_zero_based_in_either_half(where):
    first, second = lines(200, 14), lines(30000, 15)
    (first if where == "first" else second)[-1] = "+1 0:1 5:2"
    got = assert_same(text_of(first, second), split=False)
    assert got[5] is True


def test_a_switch_to_zero_based_in_a_later_feed_shifts_the_rows_before_it():
    # the first feed's second half is taken, its rows appended at the second feed's
    # start: before the switch there, which shifts them with every block handed on
    first, second = lines(30000, 23), lines(30000, 24)
    second[10] = "+1 0:1 5:2"
    got = assert_same(text_of(first[:100], first[100:] + second), feeds=2)
    assert got[5] is True


def test_the_widest_index_of_an_earlier_second_half_named_on_a_switch():
    # the largest index sits in the first feed's second half; index 0 comes in the second
    # feed: the switch to zero-based makes it too wide, and its line is named
    second = lines(30000, 16)
    second[20000] = "+1 5000:1"
    rest = lines(30000, 17) + ["-1 0:1"]
    data = text_of(lines(100, 18), second + rest)
    (_, seq, _), (_, par, _) = outcome(data, feeds=2, n_features=5000)
    assert par == seq and f"line {line_of(data, '+1 5000:1')}," in seq[-1]
    assert "index 5000" in seq[-1]


@pytest.mark.parametrize("bad, fragment", [
    ("+1 3:x", "value"), ("+1 4:1 4:2", "appears twice"), ("+1 2:1e39", "float32"),
    ("+1 5:1e400", "nan or infinite")])
def test_errors_in_the_second_half_name_their_line(bad, fragment):
    tail = lines(30000, 19)
    tail[25000] = bad
    data = text_of(lines(100, 20), tail)
    got = assert_same(data, split=False, value_dtype="float32")
    assert f"line {line_of(data, bad)}," in got[-1] and fragment in got[-1].lower()


def test_an_error_in_each_half_the_first_is_raised():
    head, tail = lines(100, 21), lines(30000, 22)
    head[50], tail[25000] = "+1 3:x", "+1 4:y"
    data = text_of(head, tail)
    (_, seq, _), (_, par, _) = outcome(data)
    assert par == seq and f"line {line_of(data, '+1 3:x')}," in seq[-1]
