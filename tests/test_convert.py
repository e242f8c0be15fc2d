"""The converter and the command line, on real files: text -> store -> same matrix as sklearn."""

import hashlib
import io
import lzma
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import SHARED_FILES, compress
from streamssvm import Store, convert_svmlight
from streamssvm.cli import main
from streamssvm.data.convert import DEFAULT_CHUNK_BYTES, _stream
from streamssvm.data.svmlight import BlockParser, SvmlightFormatError, parse_svmlight_bytes


def load_store(path):
    with Store(path) as store:
        X, y = store.read_rows(0, store.n_samples)
        return X, y, store.classes, store.metadata, store.row_offsets.copy()


def assert_matches(path, Xs, ys, dtype=np.float64):
    X, y, classes, meta, _ = load_store(path)
    assert X.shape == Xs.shape
    assert np.array_equal(X.indptr, Xs.indptr)
    assert np.array_equal(X.indices, Xs.indices)
    assert X.dtype == dtype
    assert np.array_equal(X.data.view(np.uint8), Xs.data.astype(dtype).view(np.uint8))
    assert np.array_equal(y, np.where(ys == classes[1], 1, -1).astype(np.int8))
    assert set(np.unique(ys)) <= set(classes)
    assert meta["n_positive"] == int(np.count_nonzero(ys == classes[1]))
    return meta


def same_store(a, b):
    Xa, ya, ca, ma, oa = load_store(a)
    Xb, yb, cb, mb, ob = load_store(b)
    assert (Xa != Xb).nnz == 0 and np.array_equal(Xa.indices, Xb.indices)
    assert np.array_equal(Xa.data.view(np.uint8), Xb.data.view(np.uint8))
    assert np.array_equal(ya, yb) and ca == cb and np.array_equal(oa, ob)
    for key in ("n_samples", "n_features", "nnz", "n_blocks", "n_positive", "value_dtype"):
        assert ma[key] == mb[key], key


# --- against scikit-learn -----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SHARED_FILES))
def test_shared_data_round_trip(shared_data, sklearn_load, tmp_path, name):
    src = shared_data / name
    width = SHARED_FILES[name]
    Xs, ys = sklearn_load(src, n_features=width)
    out64, out32 = tmp_path / "x64.h5", tmp_path / "x32.h5"
    summary = convert_svmlight(src, out64, n_features=width, value_dtype="float64",
                               progress=False, block_nnz=1 << 17)
    meta = assert_matches(out64, Xs, ys)
    assert summary["n_blocks"] == meta["n_blocks"] > 1
    assert (meta["source_sha256"] == summary["source_sha256"]
            == hashlib.sha256(src.read_bytes()).hexdigest())
    assert meta["source_size"] == src.stat().st_size == summary["source_bytes"]
    assert meta["source_name"] == name
    convert_svmlight(src, out32, n_features=width, progress=False)
    assert_matches(out32, Xs, ys, np.float32)


def test_generated_round_trip(tmp_path, rng, make_svmlight, sklearn_load, write_text):
    text = make_svmlight(rng, 2000, 300, density=0.03, labels=(0, 1), one_based=False,
                         formats=("%r", "%.7g", "%.17g", "%d", "%.2e"))
    src = write_text(text)
    Xs, ys = sklearn_load(src)
    summary = convert_svmlight(src, tmp_path / "a.h5", value_dtype="float64", block_nnz=1000,
                               progress=False, _chunk_bytes=4096)
    assert summary["zero_based"] and summary["classes"] == (0.0, 1.0)
    assert summary["n_blocks"] > 10
    assert_matches(tmp_path / "a.h5", Xs, ys)
    convert_svmlight(src, tmp_path / "b.h5", block_nnz=1000, progress=False)
    assert_matches(tmp_path / "b.h5", Xs, ys, np.float32)


def test_summary(tmp_path, write_text):
    text = b"1 1:1 2:2\n-1 3:1\n# c\n-1 5:1 4:1\n"
    src = write_text(text, kind="gz")
    s = convert_svmlight(src, tmp_path / "o.h5", progress=False)
    assert s["n_samples"] == 3 and s["n_features"] == 5 and s["nnz"] == 5
    assert s["n_blocks"] == 1 and s["classes"] == (-1.0, 1.0)
    assert s["label_counts"] == (2, 1) and s["repaired_rows"] == 1
    assert s["text_bytes"] == len(text) and s["source_bytes"] == src.stat().st_size
    assert s["store_bytes"] == (tmp_path / "o.h5").stat().st_size
    assert s["seconds"] > 0 and s["mb_per_s"] == pytest.approx(len(text) / 1e6 / s["seconds"])
    with Store(tmp_path / "o.h5") as store:
        options = store.metadata["options"]
    assert options["repaired_rows"] == 1 and options["input_compression"] == "gzip"
    assert options["zero_based"] is False and options["zero_based_option"] == "auto"


def test_progress_prints_throughput(tmp_path, write_text, capsys):
    convert_svmlight(write_text(b"1 1:1\n-1 2:1\n"), tmp_path / "o.h5")
    err = capsys.readouterr().err
    assert "2 rows x 2 features" in err and "MB/s of text" in err


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal: the converter draws its bar there."""

    def isatty(self):
        return True


def test_progress_bar_and_summary_count_megabytes_of_1e6_bytes(tmp_path, write_text,
                                                               monkeypatch):
    """The bar's sizes and rates and the summary's MB/s are in the same decimal units
    (the bar counted 2^20-byte units and labelled them M too)."""
    line = b"+1 1:1 2:0.5\n"
    text = line * (3_000_000 // len(line)) + b"#a\n"
    assert len(text) == 3_000_000
    monkeypatch.setattr("sys.stderr", _Terminal())
    s = convert_svmlight(write_text(text), tmp_path / "o.h5")
    err = sys.stderr.getvalue()
    assert "/3.00M [" in err and "B/s]" in err  # the bar's total, 3.00 MB
    assert f"in {s['seconds']:.2f} s ({s['mb_per_s']:.1f} MB/s of text)" in err


# --- inputs -------------------------------------------------------------------------------------
def test_compressions_give_identical_stores(tmp_path, rng, make_svmlight, write_text):
    text = make_svmlight(rng, 500, 100)
    outs = []
    for kind in (None, "gz", "bz2", "xz"):
        src = write_text(text, name=f"in-{kind}.svm", kind=kind)
        outs.append(tmp_path / f"{kind}.h5")
        summary = convert_svmlight(src, outs[-1], block_nnz=500, progress=False)
        assert summary["text_bytes"] == len(text)
    for out in outs[1:]:
        same_store(outs[0], out)


def test_compression_detected_by_content(tmp_path, write_text):
    src = write_text(b"1 1:1\n-1 2:1\n", name="no-extension", kind="gz")
    os.rename(src, tmp_path / "plainname")
    s = convert_svmlight(tmp_path / "plainname", tmp_path / "o.h5", progress=False)
    assert s["n_samples"] == 2 and s["text_bytes"] == 13


@pytest.mark.parametrize("zero_based, width, first_row", [
    ("auto", 4, [2.0, 0, 0, 0]), (True, 4, [2.0, 0, 0, 0]), (False, None, None)])
def test_zero_based_file(tmp_path, write_text, zero_based, width, first_row):
    src = write_text(b"1 0:2\n-1 3:1\n")
    if first_row is None:
        with pytest.raises(SvmlightFormatError, match="line 1, column 3: index 0 < 1"):
            convert_svmlight(src, tmp_path / "o.h5", zero_based=zero_based, progress=False)
        return
    convert_svmlight(src, tmp_path / "o.h5", zero_based=zero_based, progress=False)
    X, _, _, meta, _ = load_store(tmp_path / "o.h5")
    assert X.shape == (2, width) and X.toarray()[0].tolist() == first_row
    assert meta["options"]["zero_based"] is True


@pytest.mark.parametrize("zero_based, shape", [("auto", (2, 3)), (False, (2, 3)), (True, (2, 4))])
def test_one_based_file(tmp_path, write_text, zero_based, shape):
    convert_svmlight(write_text(b"1 1:2\n-1 3:1\n"), tmp_path / "o.h5", zero_based=zero_based,
                     progress=False)
    assert load_store(tmp_path / "o.h5")[0].shape == shape


def test_auto_rewrites_blocks_written_before_a_late_zero(tmp_path, rng, make_svmlight,
                                                         sklearn_load, write_text):
    text = make_svmlight(rng, 3000, 200, empty_rows=False)  # one-based-looking
    text += b"-1 0:0.5 7:1\n1 2:1\n"                           # ... until the end
    src = write_text(text, kind="xz")
    Xs, ys = sklearn_load(src)
    out = tmp_path / "o.h5"
    s = convert_svmlight(src, out, block_nnz=2000, value_dtype="float64", progress=False,
                         _chunk_bytes=8192, compression="gzip", fletcher32=True)
    assert s["zero_based"] and s["n_blocks"] > 5
    assert_matches(out, Xs, ys)
    # the same width rule as sklearn: index 0 makes every index one larger
    assert s["n_features"] == Xs.shape[1]


@pytest.mark.parametrize("text, classes, counts", [
    (b"0 1:1\n1 2:1\n1 1:1\n", (0.0, 1.0), (1, 2)),
    (b"2 1:1\n1 2:1\n2 1:1\n", (1.0, 2.0), (1, 2)),
    (b"1 1:1\n-1 2:1\n-1 1:1\n", (-1.0, 1.0), (2, 1)),
    (b"+1.0 1:1\n-1.0 2:1\n+1.0 1:1\n", (-1.0, 1.0), (1, 2)),
    (b"1 1:1\n1 2:1\n", (-1.0, 1.0), (0, 2)),
])
def test_label_maps(tmp_path, write_text, sklearn_load, text, classes, counts):
    src = write_text(text)
    s = convert_svmlight(src, tmp_path / "o.h5", progress=False, block_rows=1)
    assert s["classes"] == classes and s["label_counts"] == counts
    Xs, ys = sklearn_load(src)
    assert_matches(tmp_path / "o.h5", Xs, ys, np.float32)
    with Store(tmp_path / "o.h5") as store:
        assert store.label_counts() == counts


FEATURES_TEXT = (b"# a comment line\n"
                 b"1 qid:1 1:0.5 3:-2 # trailing comment\r\n"
                 b"-1\n"                          # empty row
                 b"\n"                            # blank line
                 b"1\t7:1e-3\n"                   # one feature, tab
                 b"-1 2:1 3:2 4:3 5:4 6:5\r\n"
                 b"1 qid:2 2:0.25")                 # no trailing newline


@pytest.mark.parametrize("block_rows", [1, 2, 4, None])
def test_rows_blocks_and_grammar(tmp_path, write_text, sklearn_load, block_rows):
    src = write_text(FEATURES_TEXT)
    Xs, ys = sklearn_load(src)
    out = tmp_path / "o.h5"
    convert_svmlight(src, out, block_rows=block_rows, value_dtype="float64", progress=False)
    assert_matches(out, Xs, ys)
    rows = np.diff(load_store(out)[4])
    if block_rows:
        assert rows[:-1].tolist() == [block_rows] * (len(rows) - 1)
        assert rows[-1] == 5 - block_rows * (len(rows) - 1)  # uneven last block


def test_every_chunk_size(tmp_path, write_text, sklearn_load):
    """Chunks that cut the lines at every position, down to 1 byte (shorter than any line)."""
    src = write_text(FEATURES_TEXT)
    Xs, ys = sklearn_load(src)
    for chunk in range(1, len(FEATURES_TEXT) + 2):
        parts = []
        parser = BlockParser("t", lambda *a, parts=parts: parts.append([x.copy() for x in a]),
                             block_rows=2)
        prefetch = chunk % 2 == 0  # the reader thread, and reading in line
        assert _stream(io.BytesIO(FEATURES_TEXT), parser, chunk, prefetch) == len(FEATURES_TEXT)
        parser.finish()
        X = sp.vstack([sp.csr_matrix((v, i, p), shape=(len(y), parser.n_features))
                       for p, i, v, y in parts], format="csr")
        assert (X != Xs).nnz == 0 and np.array_equal(X.indices, Xs.indices), chunk
        classes, flip = parser.classes()
        y = np.concatenate([p[3] for p in parts]) * (-1 if flip else 1)
        assert classes == (-1.0, 1.0) and np.array_equal(y, np.where(ys > 0, 1, -1))
    for chunk in (1, 5, 64):  # and the whole converter
        out = tmp_path / f"o{chunk}.h5"
        convert_svmlight(src, out, value_dtype="float64", progress=False, _chunk_bytes=chunk,
                         block_rows=2)
        assert_matches(out, Xs, ys)


def test_line_longer_than_chunk(tmp_path, write_text, sklearn_load):
    long_row = " ".join(f"{j}:{j}.5" for j in range(1, 3001))
    text = f"1 1:1\n-1 {long_row}\n1 {long_row} # c\n-1 2:2\n".encode()
    src = write_text(text, kind="bz2")
    Xs, ys = sklearn_load(src)
    convert_svmlight(src, tmp_path / "o.h5", value_dtype="float64", progress=False,
                     _chunk_bytes=1000, block_nnz=100)
    assert_matches(tmp_path / "o.h5", Xs, ys)


def test_like_takes_width_and_classes(tmp_path, write_text):
    train = write_text(b"0 1:1 5:1\n1 2:1\n", name="train.svm")
    test = write_text(b"1 1:1\n1 2:1\n", name="test.svm")
    convert_svmlight(train, tmp_path / "train.h5", progress=False)
    s = convert_svmlight(test, tmp_path / "test.h5", like=tmp_path / "train.h5", progress=False)
    assert s["n_features"] == 5 and s["classes"] == (0.0, 1.0) and s["label_counts"] == (0, 2)
    # the errors name the store the width and the classes came from (they spoke of an
    # n_features the user had not given; found by a probe), and what to do
    bad = write_text(b"1 6:1\n", name="wide.svm")
    with pytest.raises(SvmlightFormatError, match=r"wide.svm: line 1, column 3: index 6 is beyond "
                       r"n_features=5 \(indices 1..5, one-based\), the width of .*train.h5 "
                       r"\(like= / --like\): convert the training file with a larger "
                       r"n_features \(--n-features\)$"):
        convert_svmlight(bad, tmp_path / "wide.h5", like=tmp_path / "train.h5", progress=False)
    with pytest.raises(SvmlightFormatError, match=r"label '2' is neither of the classes \(0, 1\) "
                                                  r"of .*train.h5 \(like= / --like\)$"):
        convert_svmlight(write_text(b"2 1:1\n", name="c.svm"), tmp_path / "c.h5",
                         like=tmp_path / "train.h5", progress=False)
    with pytest.raises(ValueError, match="contradicts"):
        convert_svmlight(test, tmp_path / "x.h5", like=tmp_path / "train.h5", n_features=7)


def test_options_recorded(tmp_path, write_text):
    src = write_text(b"1 1:1\n-1 2:1\n")
    convert_svmlight(src, tmp_path / "o.h5", compression="gzip", compression_level=6,
                     fletcher32=True, value_dtype="float64", block_rows=1, progress=False)
    with Store(tmp_path / "o.h5") as store:
        options = store.metadata["options"]
        assert store.value_dtype == np.float64
    assert options["compression"] == "gzip" and options["compression_level"] == 6
    assert options["fletcher32"] is True and options["block_rows"] == 1


# --- bad input, no partial output ---------------------------------------------------------------
BAD_FILES = [
    (b"1 1:0.5\n-1 2:abc\n", 2, 6, "not a number"),
    (b"1 1:1\n-1 3 4:1\n", 2, 4, "missing colon"),
    (b"1 0:1\n", 1, 3, "index 0 < 1"),             # with zero_based=False below
    (b"1 1:1\n1 2:1\n1 5:1\n", 3, 3, "beyond n_features=4"),  # with n_features=4
    (b"1 1:inf\n", 1, 5, "NaN or infinite"),
    (b"1 2:1 2:1\n", 1, 7, "appears twice"),
    (b"1 qid:x 1:1\n", 1, 3, "qid"),
    (b"1 1:1\n1,2 1:1\n", 2, 1, "multilabel"),
    (b"1 1:1\n2 1:1\n3 1:1\n", 3, 1, "multiclass"),
]


@pytest.mark.parametrize("text, line, column, fragment", BAD_FILES)
@pytest.mark.parametrize("kind", [None, "gz"])
def test_bad_input(tmp_path, write_text, text, line, column, fragment, kind):
    src = write_text(text, name="bad.svm", kind=kind)
    dst = tmp_path / "out.h5"
    kwargs = {"zero_based": False, "n_features": 4}
    with pytest.raises(SvmlightFormatError) as info:
        convert_svmlight(src, dst, progress=False, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{src}: line {line}, column {column}: "), message
    assert fragment in message
    assert not dst.exists()
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".h5"] == []


def test_error_after_blocks_were_written(tmp_path, rng, make_svmlight, write_text):
    text = make_svmlight(rng, 3000, 50) + b"1 1:1 2:x\n"
    src = write_text(text)
    dst = tmp_path / "out.h5"
    dst.write_bytes(b"previous content")
    with pytest.raises(SvmlightFormatError, match="line 3001, column 9"):
        convert_svmlight(src, dst, block_nnz=100, overwrite=True, progress=False,
                         _chunk_bytes=4096)
    assert dst.read_bytes() == b"previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.svm", "out.h5"]


CR_TEXT = ("carriage return with more text after it on the line: if lines end in CR alone "
           "(old Mac style), make them newlines first, e.g. tr '\\r' '\\n' < IN > OUT")


def test_lines_ended_by_cr_alone_fail_at_the_first_chunk(tmp_path, write_text):
    """Lines ended by CR alone make one line: the whole file was read (19 MB here) before
    the error; now the first 8 MiB chunk fails, also after lines ended by newlines (two
    files concatenated: only the first line was checked). Compressed with a damaged tail,
    reading to the end would fail otherwise ("cannot decompress")."""
    mac = b"1 1:1 2:0.5\r-1 3:1\r" * 1_000_000
    for head, line in ((b"", 1), (b"1 1:1\n-1 2:1\n" * 1500, 3001)):
        for kind in (None, "gz"):
            src = write_text(head + mac, kind=kind)
            if kind:
                src.write_bytes(src.read_bytes()[:-30])
            with pytest.raises(SvmlightFormatError) as info:
                convert_svmlight(src, tmp_path / "o.h5", progress=False)
            assert str(info.value) == f"{src}: line {line}, column 12: {CR_TEXT}"
    assert not (tmp_path / "o.h5").exists()
    # a CRLF file whose long first line is cut between its CR and its newline converts
    line = b"1 " + b" ".join(b"%d:1" % i for i in range(1, 20_000)) + b"\r\n"
    src = write_text(line + b"-1 1:2\r\n")
    s = convert_svmlight(src, tmp_path / "o.h5", progress=False, _chunk_bytes=len(line) - 1)
    assert s["n_samples"] == 2 and s["nnz"] == 20_000


def test_lines_ended_by_cr_alone_after_others_refused_at_their_line(tmp_path, rng, make_svmlight,
                                                                   write_text, capsys):
    """A file of lines ended by newlines, then by CR alone (two files concatenated, one from
    an old Mac editor): the CR was read as a blank, so that an error further on said
    "missing colon in '-1'", or the rows after a comment were dropped without a word. The
    first CR with text after it on its line is refused, at its line and column, whatever
    the chunks; the same lines ended by CRLF convert as by newlines."""
    text = make_svmlight(rng, 3000, 50)
    mac = b"1 1:1 2:0.5\r-1 3:1\r" * 5000  # 95 kB: longer than a small chunk
    for tail, column in ((mac, 12), (b"1 4:1 # from a Mac\r" + mac, 19)):
        src = write_text(text + tail, name="mixed.svm")
        for chunk in (4096, DEFAULT_CHUNK_BYTES):
            with pytest.raises(SvmlightFormatError) as info:
                convert_svmlight(src, tmp_path / "o.h5", block_nnz=100, progress=False,
                                 _chunk_bytes=chunk)
            assert str(info.value) == f"{src}: line 3001, column {column}: {CR_TEXT}"
        assert main(["convert", str(src), str(tmp_path / "o.h5"), "--quiet"]) == 1
        assert capsys.readouterr().err == (f"streamssvm: error: {src}: line 3001, column "
                                           f"{column}: {CR_TEXT}\n")
    assert not (tmp_path / "o.h5").exists()
    lf = write_text(text + mac.replace(b"\r", b"\n"), name="lf.svm")
    crlf = write_text(text.replace(b"\n", b"\r\n") + mac.replace(b"\r", b"\r\n"), name="crlf.svm")
    for src in (lf, crlf):
        convert_svmlight(src, src.with_suffix(".h5"), block_nnz=100, progress=False,
                         _chunk_bytes=4096)
    same_store(lf.with_suffix(".h5"), crlf.with_suffix(".h5"))


@pytest.mark.parametrize("cr_at", [60_000, 300_000])
def test_a_long_line_with_a_cr_fails_at_its_first_error_as_in_memory(tmp_path, write_text,
                                                                     cr_at):
    """A line of 64 KiB or more without newline was checked for a CR with text after it
    once: a CR found was reported before an earlier error of the line (a bad value here),
    which the in-memory parser reports first; a CR further on was found only once the whole
    line was read (here into a damaged compressed tail, which failed first). The line is
    checked again each time it doubles, and the error is the line's first, as in memory,
    before the rest is read."""
    pairs = b" ".join(b"%d:1" % i for i in range(3, 60_000))[:cr_at]
    text = b"1 1:1\n-1 2:x " + pairs + b"\r-1 3:1\r" * 2_200_000  # 18 MB: two chunks and more
    src = write_text(text, kind="gz")
    src.write_bytes(src.read_bytes()[:-30])
    with pytest.raises(SvmlightFormatError) as in_memory:
        parse_svmlight_bytes(text, name=str(src))
    assert str(in_memory.value) == f"{src}: line 2, column 6: value 'x' is not a number"
    for chunk in (4096, DEFAULT_CHUNK_BYTES):
        with pytest.raises(SvmlightFormatError) as info:
            convert_svmlight(src, tmp_path / "o.h5", progress=False, _chunk_bytes=chunk)
        assert str(info.value) == str(in_memory.value)
    assert not (tmp_path / "o.h5").exists()


def test_existing_output_kept_without_overwrite(tmp_path, write_text):
    src = write_text(b"1 1:1\n-1 2:1\n")
    dst = tmp_path / "out.h5"
    dst.write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="overwrite"):
        convert_svmlight(src, dst, progress=False)
    assert dst.read_bytes() == b"keep me"
    convert_svmlight(src, dst, overwrite=True, progress=False)
    assert load_store(dst)[0].shape == (2, 2)


def test_single_unknown_label_and_empty_input(tmp_path, write_text):
    with pytest.raises(SvmlightFormatError, match="every label is 3"):
        convert_svmlight(write_text(b"3 1:1\n3 2:1\n"), tmp_path / "a.h5", progress=False)
    s = convert_svmlight(write_text(b"3 1:1\n3 2:1\n", name="b.svm"), tmp_path / "b.h5",
                         classes=(3, 4), progress=False)
    assert s["label_counts"] == (2, 0)
    with pytest.raises(SvmlightFormatError, match="no data lines"):
        convert_svmlight(write_text(b"", name="e.svm"), tmp_path / "e.h5", progress=False)
    assert not (tmp_path / "a.h5").exists() and not (tmp_path / "e.h5").exists()


def test_corrupt_and_misnamed_compressed_input(tmp_path, write_text):
    src = write_text(b"1 1:1\n-1 2:1\n" * 1000, kind="gz")
    src.write_bytes(src.read_bytes()[:-30])
    with pytest.raises(SvmlightFormatError, match="cannot decompress gzip"):
        convert_svmlight(src, tmp_path / "o.h5", progress=False)
    misnamed = write_text(b"1 1:1\n", name="plain.svm.xz")
    with pytest.raises(SvmlightFormatError, match="does not start with the xz signature"):
        convert_svmlight(misnamed, tmp_path / "o.h5", progress=False)
    assert not (tmp_path / "o.h5").exists()


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz"])
def test_damaged_later_stream_or_junk_after_the_last_is_an_error(tmp_path, kind):
    """A file of several streams: BZ2File and LZMAFile took a next stream that fails to
    start, or junk after the last, for trailing data and stopped quietly (rows lost)."""
    text = [b"".join(b"%d %d:1\n" % (i % 2 * 2 - 1, i + 1) for i in range(k, k + 100))
            for k in (0, 100, 200)]
    streams = [bytearray(compress(part, kind)) for part in text]
    src, dst = tmp_path / f"m.svm.{kind}", tmp_path / "m.h5"
    src.write_bytes(b"".join(streams))
    assert convert_svmlight(src, dst, progress=False)["n_samples"] == 300
    os.unlink(dst)
    streams[1][10] ^= 0x55
    for data in (b"".join(streams), b"".join(streams[::2]) + b"junk"):
        src.write_bytes(data)
        with pytest.raises(SvmlightFormatError, match=f"{src}: cannot decompress"):
            convert_svmlight(src, dst, progress=False)
        assert not dst.exists()
    if kind == "xz":  # stream padding: zero bytes, a multiple of 4
        padded = bytes(streams[0]) + b"\0" * 4 + bytes(streams[2]) + b"\0" * 8
        src.write_bytes(padded)
        assert convert_svmlight(src, dst, progress=False)["n_samples"] == 200
        src.write_bytes(padded[:-1])
        with pytest.raises(SvmlightFormatError, match="padding of 7 zero bytes"):
            convert_svmlight(src, dst, progress=False, overwrite=True)


def test_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError):
        convert_svmlight(tmp_path / "nope.svm", tmp_path / "o.h5", progress=False)
    assert not (tmp_path / "o.h5").exists()


KILL_SCRIPT = """
import sys
from streamssvm import convert_svmlight
convert_svmlight("/dev/stdin", sys.argv[1], block_nnz=2000, progress=False, _chunk_bytes=4096)
"""


def test_killed_conversion_leaves_no_output(tmp_path, rng, make_svmlight, python, python_env):
    """The text comes through a pipe that stays open, so the conversion is still running
    when it is killed, however fast the machine (a file it could finish before the kill)."""
    text = make_svmlight(rng, 2000, 2000, density=0.02)
    dst = tmp_path / "out.h5"
    proc = subprocess.Popen([python, "-c", KILL_SCRIPT, str(dst)], env=python_env,
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(text)
    proc.stdin.flush()  # the first rows; the pipe stays open
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".out.h5.tmp") for p in tmp_path.iterdir()):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    assert proc.returncode == -signal.SIGKILL, "finished before it could be killed"
    assert not dst.exists()
    leftovers = [p.name for p in tmp_path.iterdir()]
    assert all(name.startswith(".out.h5.tmp") for name in leftovers), leftovers


# --- command line -------------------------------------------------------------------------------
def run_cli(python, env, *args):
    return subprocess.run([python, "-m", "streamssvm", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_convert_and_info(tmp_path, write_text, python, python_env, capsys):
    src = write_text(b"0 1:1 3:2\n1 2:1\n1 4:0.5\n", kind="xz")
    out = tmp_path / "o.h5"
    r = run_cli(python, python_env, "convert", src, out, "--float64", "--block-rows", "2",
                "--compression", "gzip", "--fletcher32", "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    r = run_cli(python, python_env, "info", out)
    assert r.returncode == 0, r.stderr
    info = dict(line.split(None, 1) if not line.startswith(("size", "source"))
                else (line[:14].strip(), line[14:].strip()) for line in r.stdout.splitlines())
    assert info["rows"] == "3" and info["features"] == "4" and info["nonzeros"] == "4"
    assert info["density"] == "33.33%"
    assert info["labels"] == "-1 is 0 (1 rows), +1 is 1 (2 rows)"
    assert info["blocks"] == "2 (rows per block: min 1, mean 1.5, max 2)"
    # h5py's default level, recorded
    assert info["values"] == "float64" and info["compression"] == "gzip (level 4)"
    assert info["checksums"] == "fletcher64 (verified on every read), HDF5 fletcher32"
    assert info["source"].startswith(src.name)
    assert info["source sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert "created" in info and info["size on disk"].endswith(f"({out.stat().st_size:,} bytes)")

    r = run_cli(python, python_env, "convert", src, out, "--compression", "blosc-zstd",
                "--compression-level", "7", "--overwrite", "--quiet")
    assert r.returncode == 0, r.stderr
    r = run_cli(python, python_env, "info", out)
    assert "\ncompression    blosc-zstd (level 7)\n" in r.stdout
    r = run_cli(python, python_env, "convert", src, out, "--compression", "lzf",
                "--compression-level", "3", "--overwrite", "--quiet")
    assert r.returncode == 1 and r.stderr == ("streamssvm: error: --compression-level is for "
                                              "gzip and blosc compression, not --compression "
                                              "lzf\n")

    # again, in process: refused without --overwrite, with one line on stderr
    assert main(["convert", str(src), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("streamssvm: error: ") and "overwrite" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["convert", str(src), str(out), "--overwrite", "--like", str(out),
                 "--zero-based", "no"]) == 0
    captured = capsys.readouterr()
    assert "MB/s of text" in captured.err and captured.out.startswith(f"wrote {out}: 3 rows")


def test_cli_convert_and_info_show_the_index_base_and_how_it_was_chosen(
        tmp_path, shared_data, write_text, capsys):
    """a9a's first 300 lines with every index one lower: "auto" reads them zero-based, and
    both the convert summary and info say so."""
    lines = lzma.decompress((shared_data / "a9a.svm.xz").read_bytes()).splitlines()[:300]
    text = b"".join(re.sub(rb" (\d+):", lambda m: b" %d:" % (int(m[1]) - 1), line) + b"\n"
                    for line in lines)
    assert b" 0:" in text
    src, out = write_text(text), tmp_path / "o.h5"
    for options, base in (([], "zero-based (detected: an index 0 in the file)"),
                          (["--zero-based", "yes"], "zero-based (set, not detected)")):
        assert main(["convert", str(src), str(out), "--overwrite", *options]) == 0
        assert f" nonzeros, 1 blocks, indices {base}, " in capsys.readouterr().out
        assert main(["info", str(out)]) == 0
        assert f"\nindex base     {base}\n" in capsys.readouterr().out
    assert main(["convert", str(src), str(out), "--overwrite", "--like", str(out)]) == 0
    assert "indices zero-based (set, not detected)" in capsys.readouterr().out
    write_text(b"".join(line + b"\n" for line in lines))  # a9a as it is
    assert main(["convert", str(src), str(out), "--overwrite"]) == 0
    assert "indices one-based (detected: no index 0 in the file)" in capsys.readouterr().out


def test_cli_convert_refuses_an_hdf5_file(tmp_path, shared_data, capsys):
    """A store given as the text to convert failed with "label '\\x89HDF' is not a number":
    HDF5's signature is recognised, and a store is told apart from another HDF5 file."""
    import h5py

    text = tmp_path / "a9a.svm"
    text.write_bytes(b"".join(lzma.decompress((shared_data / "a9a.svm.xz").read_bytes())
                              .splitlines(keepends=True)[:200]))
    store, other, out = tmp_path / "a9a.h5", tmp_path / "other.h5", tmp_path / "o.h5"
    assert main(["convert", str(text), str(store), "--quiet"]) == 0
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(3)
    for src, advice in ((store, "it is a store already, which needs no conversion"),
                        (other, "give the svmlight/libsvm text file to convert")):
        assert main(["convert", str(src), str(out)]) == 1
        assert capsys.readouterr().err == (f"streamssvm: error: {src}: an HDF5 file, not "
                                           f"svmlight text: {advice}\n")
        assert not out.exists()


def test_cli_errors(tmp_path, write_text, python, python_env, capsys):
    bad = write_text(b"1 1:1\n-1 2:oops\n", name="bad.svm")
    r = run_cli(python, python_env, "convert", bad, tmp_path / "o.h5", "--quiet")
    assert r.returncode == 1 and not (tmp_path / "o.h5").exists()
    assert r.stderr == f"streamssvm: error: {bad}: line 2, column 6: value 'oops' is not a number\n"

    # the same entry point, in process
    assert main(["info", str(tmp_path / "missing.h5")]) == 1
    assert capsys.readouterr().err == (f"streamssvm: error: {tmp_path / 'missing.h5'}: "
                                       f"No such file or directory\n")
    assert main(["info", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "not a readable HDF5 store" in err and len(err.strip().splitlines()) == 1
    assert main(["convert", str(tmp_path / "missing.svm"), str(tmp_path / "o.h5")]) == 1
    assert "No such file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2 and "usage" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", "a", "b", "--like", "x", "--n-features", "3"])
    assert exit_info.value.code == 2 and "not allowed with" in capsys.readouterr().err


@pytest.mark.parametrize("option, value, expected", [
    ("--n-features", "-1", "an integer in 0..2147483647"),
    ("--n-features", "3000000000", "an integer in 0..2147483647"),
    ("--block-rows", "0", "an integer in 1..2147483647"),
    ("--block-nnz", "2147483648", "an integer in 1..2147483647"),
])
def test_cli_refuses_a_bad_number_naming_the_option(tmp_path, write_text, python, python_env,
                                                    option, value, expected):
    """A width or block size beyond int32 was refused by the library naming its Python
    parameter (block_rows ...), status 1: an argparse error naming the option, by the
    library's check."""
    src = write_text(b"1 1:1\n-1 2:1\n")
    r = run_cli(python, python_env, "convert", src, tmp_path / "o.h5", option, value)
    assert r.returncode == 2 and not (tmp_path / "o.h5").exists()
    assert r.stderr.splitlines()[-1] == (f"streamssvm convert: error: argument {option}: must "
                                         f"be {expected}, got {value!r}")


def test_cli_names_a_missing_store_as_info_does(tmp_path, write_text, capsys):
    """train, predict and convert --like printed h5py's errno text (HDF5's internals) for a
    missing store, which info named in one short line; a folder is named as such."""
    src = write_text(b"1 1:1\n-1 2:1\n")
    store, model, missing = tmp_path / "s.h5", tmp_path / "m.npz", tmp_path / "missing.h5"
    assert main(["convert", str(src), str(store), "--quiet"]) == 0
    assert main(["train", str(store), "-o", str(model), "--quiet"]) == 0
    for argv, path, reason in (
            (["info", missing], missing, "No such file or directory"),
            (["train", missing, "-o", tmp_path / "m2.npz"], missing, "No such file or directory"),
            (["train", store, missing, "-o", tmp_path / "m2.npz"], missing,
             "No such file or directory"),
            (["predict", model, missing], missing, "No such file or directory"),
            (["convert", src, tmp_path / "o.h5", "--like", missing], missing,
             "No such file or directory"),
            (["info", tmp_path], tmp_path, "Is a directory"),
            (["predict", model, tmp_path], tmp_path, "Is a directory")):
        assert main(list(map(str, argv))) == 1
        assert capsys.readouterr().err == f"streamssvm: error: {path}: {reason}\n"
    assert main(["verify", str(tmp_path), str(store)]) == 1  # a problem, the next checked
    assert capsys.readouterr().out.splitlines()[:3] == [
        f"{tmp_path}: Is a directory", f"{tmp_path}: 1 problem", f"{store}: ok, 1 blocks, "
        f"2 rows, 2 nonzeros; checksums verified"]


@pytest.mark.parametrize("command", [["info"], ["verify"], ["losses"]])
def test_cli_output_into_a_closed_pipe_ends_quietly(write_text, python, python_env, command):
    """Output into a pipe closed by its reader (``| head -1``) ends the command with status 1
    and nothing on stderr (it printed BrokenPipeError's traceback)."""
    store = write_text(b"0 1:1\n1 2:1\n").with_suffix(".h5")
    assert run_cli(python, python_env, "convert", store.with_suffix(".svm"), store,
                   "--quiet").returncode == 0
    proc = subprocess.Popen([python, "-m", "streamssvm", *command,
                             *([str(store)] if command != ["losses"] else [])],
                            env=python_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command writes
    assert (proc.stderr.read(), proc.wait(timeout=120)) == (b"", 1)


def test_a_value_beyond_float32_is_refused_not_stored_as_inf(tmp_path, write_text, capsys):
    """The parser checks values in float64; narrowing 1e300 to the default float32 stored
    inf without a word, and training on the store then hung. It is refused where it is
    written (the store's writer said "big.h5: row 3", not the file, line and column)."""
    text = "# header\n-1 2:1\n1 1:2 2:3.40282356e38\n"  # rounds to float32's largest
    src = write_text(text + "-1 1:1e300\n")
    out = tmp_path / "big.h5"
    with pytest.raises(SvmlightFormatError, match=rf"^{src}: line 4, column 6: value '1e300' "
                                                  r"is beyond float32's range: pass "
                                                  r"value_dtype='float64' \(--float64\)$"):
        convert_svmlight(src, out, progress=False)
    assert not out.exists()
    convert_svmlight(src, out, value_dtype="float64", progress=False)
    with Store(out) as store:
        assert store.read_rows(0, 3)[0].data.max() == 1e300
    slow = write_text(text + "-1 1:1 2:-3.402823570000000000001e38\n", name="slow.svm")
    assert main(["convert", str(slow), str(tmp_path / "slow.h5"), "--quiet"]) == 1
    assert capsys.readouterr().err.startswith(f"streamssvm: error: {slow}: line 4, column 10: "
                                              f"value '-3.402823570000000000001e38' is beyond")
    convert_svmlight(write_text(text, name="max.svm"), out, overwrite=True, progress=False)
    with Store(out) as store:
        assert store.read_rows(0, 2)[0].data.max() == np.finfo(np.float32).max


def test_a_store_of_labels_alone_trains_an_intercept_or_is_refused(tmp_path, write_text):
    """A file of labels converts to a store without columns (documented); training on it
    raised a ZeroDivisionError."""
    import streamssvm

    out = tmp_path / "labels.h5"
    convert_svmlight(write_text("1\n-1\n1\n"), out)
    with pytest.raises(ValueError, match="labels.h5: no features to train on"):
        streamssvm.train_stream(out, progress=False)
    model = streamssvm.train_stream(out, fit_intercept=True, lam=1e-3, progress=False)
    assert model.intercept_ > 0  # two of the three labels are +1


def test_like_takes_the_index_base_of_its_store(tmp_path, write_text):
    """The training file holds index 0 (read zero-based), the test file does not: with
    "auto" the test file was read one-based, every feature one column to the left of the
    training store's."""
    train = tmp_path / "train.h5"
    convert_svmlight(write_text("1 0:1 2:5\n-1 1:1 3:7\n", name="train.svm"), train)
    test = tmp_path / "test.h5"
    convert_svmlight(write_text("1 2:5\n-1 1:1 3:7\n", name="test.svm"), test, like=train)
    with Store(train) as a, Store(test) as b:
        assert b.metadata["options"]["zero_based"] is True
        np.testing.assert_array_equal(a.read_rows(0, 2)[0][:, 1:].toarray(),
                                      b.read_rows(0, 2)[0][:, 1:].toarray())
    with pytest.raises(ValueError,
                       match=r"zero_based=False \(--zero-based\) contradicts .*read zero-based"):
        convert_svmlight(write_text("1 2:5\n", name="other.svm"), tmp_path / "o.h5",
                         like=train, zero_based=False)


@pytest.mark.parametrize("compress", [False, True])
def test_cli_converts_from_a_pipe(tmp_path, write_text, python, python_env, compress):
    """The first bytes were read and sought back: from a pipe, "File or stream is not
    seekable." naming no file. Compressed input is found by its signature there too."""
    text = "1 1:1 3:2\n-1 2:1\n1 3:0.5\n"
    src = write_text(text, kind="gz" if compress else None)
    direct, piped = tmp_path / "direct.h5", tmp_path / "piped.h5"
    convert_svmlight(src, direct, progress=False)
    r = subprocess.run([python, "-m", "streamssvm", "convert", "/dev/stdin", str(piped),
                        "--quiet"], input=src.read_bytes(), env=python_env,
                       capture_output=True)  # input: through a pipe
    assert r.returncode == 0, r.stderr
    with Store(direct) as a, Store(piped) as b:
        assert (a.read_rows(0, 3)[0] != b.read_rows(0, 3)[0]).nnz == 0
        assert a.labels().tolist() == b.labels().tolist()
