"""Tests of the data tools: make_synthetic, make_news20, bench_convert, bench_checksums,
bench_auto and corrupt_store (in tools/), and of every tool's refusal of a missing input."""

import gzip
import importlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from streamssvm import convert_svmlight

sklearn_datasets = pytest.importorskip("sklearn.datasets")

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
sys.path.insert(0, TOOLS)
make_synthetic = importlib.import_module("make_synthetic")
make_news20 = importlib.import_module("make_news20")
bench_convert = importlib.import_module("bench_convert")
bench_checksums = importlib.import_module("bench_checksums")
bench_auto = importlib.import_module("bench_auto")
corrupt_store = importlib.import_module("corrupt_store")

NEWS20_TAR = make_news20.DEFAULT_TAR
# the lowest six post ids of every group and split of 20news-bydate.tar.gz (tests/data/README.md)
TINY_TAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "20news-bydate-tiny.tar.gz")
SMALL = dict(n_features=5000, min_nnz=50, max_nnz=200)


def _load(path, n_features=None):
    return sklearn_datasets.load_svmlight_file(os.fspath(path), n_features=n_features)


def _rows_of(text):
    """(label, indices, values) per line of svmlight text, parsed in plain Python."""
    for line in text.decode("ascii").splitlines():
        label, *pairs = line.split(" ")
        idx = [int(p.split(":")[0]) for p in pairs]
        val = [float(p.split(":")[1]) for p in pairs]
        yield label, idx, val


# ----------------------------------------------------------------------------------------
# make_synthetic
# ----------------------------------------------------------------------------------------

def test_synthetic_is_reproducible_whatever_chunks_and_threads(tmp_path):
    a, b, c, d = (tmp_path / f"{x}.svm" for x in "abcd")
    make_synthetic.generate(a, n_rows=1500, seed=3, model_seed=4, **SMALL)
    make_synthetic.generate(b, n_rows=1500, seed=3, model_seed=4, chunk_rows=97, n_threads=1,
                            **SMALL)
    make_synthetic.generate(c, n_rows=1500, seed=5, model_seed=4, **SMALL)
    make_synthetic.generate(d, n_rows=1500, seed=3, model_seed=6, **SMALL)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert a.read_bytes() != d.read_bytes()


def test_synthetic_parses_with_the_requested_properties(tmp_path):
    path = tmp_path / "s.svm"
    stats = make_synthetic.generate(path, n_rows=3000, seed=1, model_seed=2, flip=0.05,
                                    **SMALL)
    X, y = _load(path, n_features=SMALL["n_features"])
    assert X.shape == (3000, SMALL["n_features"])
    assert stats["n_rows"] == 3000 and stats["nnz"] == X.nnz
    assert stats["text_bytes"] == stats["file_bytes"] == os.path.getsize(path)
    row_nnz = np.diff(X.indptr)
    assert row_nnz.min() >= 50 and row_nnz.max() <= 200
    assert 110 <= row_nnz.mean() <= 140  # uniform in 50..200
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, atol=1e-6)
    assert (X.data > 0).all() and (X.data <= 1).all()
    for r in range(X.shape[0]):  # strictly increasing indices within each row
        assert (np.diff(X.indices[X.indptr[r]:X.indptr[r + 1]]) > 0).all()
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert 0.4 < (y > 0).mean() < 0.6
    assert stats["n_positive"] == int((y > 0).sum())
    # Zipf-like: the most frequent feature is in many more rows than the median one
    df = np.bincount(X.indices, minlength=X.shape[1])
    assert df.max() > 20 * max(np.median(df), 1)
    # labels and row lengths are written the svmlight way, one-based
    first = path.read_bytes().split(b"\n", 1)[0]
    assert first[:2] in (b"+1", b"-1") and b" 0:" not in first


def test_synthetic_flip_changes_only_labels_at_the_requested_rate(tmp_path):
    clean, noisy = tmp_path / "clean.svm", tmp_path / "noisy.svm"
    make_synthetic.generate(clean, n_rows=4000, seed=7, flip=0.0, **SMALL)
    stats = make_synthetic.generate(noisy, n_rows=4000, seed=7, flip=0.2, **SMALL)
    Xc, yc = _load(clean, SMALL["n_features"])
    Xn, yn = _load(noisy, SMALL["n_features"])
    assert (Xc != Xn).nnz == 0
    changed = (yc != yn).mean()
    assert stats["n_flipped"] == int((yc != yn).sum())
    assert abs(changed - 0.2) < 0.03
    assert abs((yc > 0).mean() - 0.5) < 0.1  # pos_fraction 0.5 before flips


def test_synthetic_target_bytes_reaches_the_size_and_is_a_prefix(tmp_path):
    target = 300_000
    small, big = tmp_path / "t.svm", tmp_path / "big.svm"
    stats = make_synthetic.generate(small, target_bytes=target, chunk_rows=50, **SMALL)
    size = os.path.getsize(small)
    assert target <= size < target + 4000  # stops at the first row reaching the size
    make_synthetic.generate(big, n_rows=stats["n_rows"] + 10, **SMALL)
    assert big.read_bytes().startswith(small.read_bytes())
    assert make_synthetic.parse_size("4G") == 4 << 30
    assert make_synthetic.parse_size("200M") == 200 << 20
    assert make_synthetic.parse_size("1.5GB") == int(1.5 * (1 << 30))


def test_synthetic_test_file_shares_the_model_and_compressed_output(tmp_path):
    path = tmp_path / "s.svm.gz"
    stats = make_synthetic.generate(path, n_rows=800, test_fraction=0.25, flip=0.0,
                                    noise=0.0, **SMALL)
    test_path = tmp_path / "s.t.svm.gz"
    assert stats["test"]["path"] == os.fspath(test_path) and stats["test"]["n_rows"] == 200
    train_text = gzip.decompress(path.read_bytes())
    test_text = gzip.decompress(test_path.read_bytes())
    assert len(train_text) == stats["text_bytes"]
    plain = tmp_path / "s.svm"
    make_synthetic.generate(plain, n_rows=800, flip=0.0, noise=0.0, **SMALL)
    assert plain.read_bytes() == train_text
    assert test_text.split(b"\n")[0] != train_text.split(b"\n")[0]
    # same hidden w*: a least-squares fit on the training rows predicts the test labels
    Xtr, ytr = sklearn_datasets.load_svmlight_file(io.BytesIO(train_text), n_features=5000)
    Xte, yte = sklearn_datasets.load_svmlight_file(io.BytesIO(test_text), n_features=5000)
    from scipy.sparse.linalg import lsqr
    w = lsqr(Xtr, ytr, damp=0.3)[0]
    assert (np.sign(Xte @ w) == yte).mean() > 0.6


def test_synthetic_float_format_matches_python_g_format():
    rng = np.random.default_rng(0)
    vals = np.concatenate([10 ** rng.uniform(-12, 12, 3000), rng.uniform(0, 1, 3000) + 1e-9,
                           [1.0, 0.1, 1e-5, 9.9999996e-6, 0.99999999, 123456.7, 9999999.6]])
    pow10 = 10 ** np.arange(19, dtype=np.int64)
    pow10f = 10.0 ** np.arange(-40, 41)
    for digits in (3, 7, 9):
        buf = np.zeros(40, np.uint8)
        for v in vals:
            end = make_synthetic._write_float(buf, 0, v, digits, pow10, pow10f)
            assert float(bytes(buf[:end])) == float(f"{v:.{digits}g}")


def test_synthetic_cli(tmp_path, capsys):
    out = tmp_path / "cli.svm"
    make_synthetic.main([str(out), "--rows", "200", "--features", "3000", "--row-length",
                         "lognormal", "--test-rows", "50", "--seed", "9"])
    text = capsys.readouterr().out
    assert "200 rows x 3,000 features" in text and "50 rows" in text
    X, _ = _load(out, 3000)
    assert X.shape == (200, 3000) and np.diff(X.indptr).min() >= 50
    assert (tmp_path / "cli.t.svm").exists()
    make_synthetic.main([str(out), "--rows", "0", "--features", "3000"])
    assert "0 rows x 3,000 features, nnz 0 (0.0/row), +1" in capsys.readouterr().out
    make_synthetic.main([str(out), "--rows", "20", "--features", "3000", "--quiet"])
    assert capsys.readouterr() == ("", "")


def test_synthetic_help_shows_each_default_once(capsys):
    with pytest.raises(SystemExit):
        make_synthetic.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text and "(default: all cores)" in text
    assert "--quiet print no progress nor summary" in text


@pytest.mark.parametrize("name, options, message", [
    ("s.svm", ["--chunk-rows", "0"], "argument --chunk-rows: must be >= 1, got 0"),
    ("s.svm", ["--features", "0"], "argument --features: must be >= 1, got 0"),
    ("s.svm.zst", [], "argument out: {dir}/s.svm.zst: .zst output is not written (only .gz, "
                      ".bz2 and .xz compress)"),
    ("s.svm", ["--test-rows", "5", "--test-out", "{dir}/t.svm.lz4"],
     "argument --test-out: {dir}/t.svm.lz4: .lz4 output is not written"),
    ("s.svm", ["--test-rows", "-5"], "argument --test-rows: must be >= 0, got -5"),
    ("s.svm", ["--test-fraction", "-0.5"], "argument --test-fraction: must be >= 0, got -0.5"),
    ("s.svm", ["--density", "2"], "argument --density: must be in (0, 1], got 2.0"),
    ("s.svm", ["--test-rows", "5", "--test-out", "{dir}/./s.svm"],
     "argument --test-out: is the training output"),
    ("s.svm", ["--test-out", "{dir}/t.svm"], "argument --test-out: is given, but no test rows"),
    ("s.svm", ["--compress-level", "5"],
     "argument --compress-level: applies to .gz, .bz2 and .xz outputs only"),
    ("s.svm.gz", ["--compress-level", "12"],
     "argument --compress-level: must be in 0..9 for .gz output, got 12"),
])
def test_synthetic_cli_refuses_bad_options_before_any_work(tmp_path, capsys, name, options,
                                                           message):
    out = tmp_path / name
    out.write_bytes(b"+1 1:1\n")  # an earlier output
    with pytest.raises(SystemExit) as exc:
        make_synthetic.main([str(out), "--rows", "100", "--features", "3000", "--quiet",
                             *(o.format(dir=tmp_path) for o in options)])
    assert exc.value.code == 2 and message.format(dir=tmp_path) in capsys.readouterr().err
    assert os.listdir(tmp_path) == [name] and out.read_bytes() == b"+1 1:1\n"


def test_synthetic_generate_names_a_bad_argument(tmp_path):
    with pytest.raises(ValueError, match=r"density must be in \(0, 1\], got -1"):
        make_synthetic.generate(tmp_path / "s.svm", n_rows=10, density=-1)
    assert not os.listdir(tmp_path)


# Writes argv[2] (OUT, OUT.gz) under a file size limit (RLIMIT_FSIZE: a write past it fails
# with EFBIG) and prints, per output, the error and the files left in OUT's folder.
SIZE_LIMIT_CHILD = r"""
import json, os, resource, signal, sys
sys.path.insert(0, sys.argv[1])
import make_synthetic
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
out = sys.argv[2]
small = dict(n_features=2000, min_nnz=20, max_nnz=40)
make_synthetic.generate(out + ".warm", n_rows=10, **small)  # numba's cache files are writes
os.unlink(out + ".warm")
resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, resource.RLIM_INFINITY))
for path in (out, out + ".gz"):
    try:
        make_synthetic.generate(path, n_rows=3000, **small)
        error = None
    except OSError as exc:
        error = str(exc)
    print(json.dumps({"path": path, "error": error,
                      "files": sorted(os.listdir(os.path.dirname(out)))}))
"""


def test_synthetic_outputs_appear_whole_or_not_at_all(tmp_path, python_env):
    out = tmp_path / "s.svm"
    out.write_bytes(b"+1 1:1\n")  # an earlier output, kept when its replacement fails
    run = subprocess.run([sys.executable, "-c", SIZE_LIMIT_CHILD, TOOLS, str(out)],
                         env=python_env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["path"] for r in results] == [str(out), f"{out}.gz"]
    for r in results:
        assert r["error"] == (f"[Errno 27] file too large (the file system's or the "
                              f"process's size limit) while writing; nothing was written: "
                              f"{r['path']!r}")
        assert r["files"] == ["s.svm"]
    assert out.read_bytes() == b"+1 1:1\n"


# ----------------------------------------------------------------------------------------
# make_news20
# ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_news20(tmp_path_factory):
    out = tmp_path_factory.mktemp("news20")
    summary = make_news20.build(TINY_TAR, out, max_per_group=4, verbose=False)
    return out, summary


def test_news20_tiny_subset_is_valid_svmlight_with_matching_widths(tiny_news20):
    out, summary = tiny_news20
    width = summary["train"]["n_features"]
    Xtr, ytr = _load(out / "news20.train.svm")
    assert Xtr.shape == (80, width)  # 4 posts x 20 groups; every term occurs in training
    Xte, yte = _load(out / "news20.test.svm", n_features=width)
    assert Xte.shape == (80, width)
    assert summary["test"]["n_features"] == width
    with open(out / "news20.meta.json") as f:
        meta = json.load(f)
    assert meta["train"]["n_features"] == meta["test"]["n_features"] == width
    for X, y in ((Xtr, ytr), (Xte, yte)):
        assert set(np.unique(y)) == {-1.0, 1.0}
        assert (y > 0).sum() == 40  # 10 groups per class
        nnz = np.diff(X.indptr)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        np.testing.assert_allclose(norms[nnz > 0], 1.0, atol=1e-6)
        assert np.allclose(X.data, np.repeat(1 / np.sqrt(np.maximum(nnz, 1)), nnz), rtol=1e-6)
    assert Xtr.nnz == summary["train"]["nnz"] and Xte.nnz == summary["test"]["nnz"]
    Xall, yall = _load(out / "news20.svm")
    assert Xall.shape[0] == 160 and summary["combined"]["n_features"] == Xall.shape[1]
    assert Xall.shape[1] >= width
    np.testing.assert_array_equal(yall, np.concatenate([ytr, yte]))


def test_news20_terms_and_labels():
    terms = make_news20.post_terms(b"Subject: Hello\n\nHello, World 42!")
    assert terms == {b"subject", b"hello", b"world", b"42", b"subject hello",
                     b"hello hello", b"hello world", b"world 42"}
    assert make_news20.post_terms(b"Subject: x\n\nab cd", strip_headers=True) == {
        b"ab", b"cd", b"ab cd"}
    assert make_news20.group_label("comp.graphics") == 1
    assert make_news20.group_label("rec.autos") == 1
    assert make_news20.group_label("misc.forsale") == 1
    assert make_news20.group_label("sci.med") == -1
    assert make_news20.group_label("talk.politics.guns") == -1
    assert make_news20.group_label("alt.atheism") == -1
    assert make_news20.group_label("soc.religion.christian") == -1


def test_news20_empty_test_rows_are_kept(tmp_path):
    tar_path = tmp_path / "mini.tar.gz"
    posts = {"20news-bydate-train/comp.graphics/1": b"alpha beta",
             "20news-bydate-train/sci.med/2": b"gamma delta",
             "20news-bydate-test/comp.graphics/3": b"zzz yyy",
             "20news-bydate-test/sci.med/4": b"gamma"}
    with tarfile.open(tar_path, "w:gz") as tar:
        for name, data in posts.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    summary = make_news20.build(tar_path, tmp_path, verbose=False, combined_vocab="train")
    assert (tmp_path / "news20.test.svm").read_bytes() == b"+1\n-1 5:1\n"
    assert summary["test"]["empty_rows"] == 1
    assert (tmp_path / "news20.train.svm").read_bytes().startswith(b"+1 1:0.5773503 2:0.5773503")
    X, y = _load(tmp_path / "news20.test.svm", n_features=summary["train"]["n_features"])
    assert X.shape == (2, 6) and X.nnz == 1


@pytest.mark.parametrize("options, message", [
    (["--max-per-group", "0"], "argument --max-per-group: must be >= 1, got 0"),
    (["--max-per-group", "-3"], "argument --max-per-group: must be >= 1, got -3"),
    (["--tar", "{dir}/missing.tar.gz"], "argument --tar: no such file"),
    (["--out-dir", "{dir}/afile"], "argument --out-dir: '{dir}/afile' exists and is not a folder"),
])
def test_news20_cli_refuses_bad_options_before_any_work(tmp_path, capsys, options, message):
    """(An archive that exists is given first: the default's place is the machine's.)"""
    (tmp_path / "afile").write_bytes(b"x")
    with pytest.raises(SystemExit) as exc:
        make_news20.main(["--quiet", "--tar", TINY_TAR, "--out-dir", str(tmp_path / "out"),
                          *(o.format(dir=tmp_path) for o in options)])
    assert exc.value.code == 2 and message.format(dir=tmp_path) in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["afile"]


@pytest.mark.parametrize("kind, what", [
    ("missing", "no such file: {path!r}"),
    ("folder", "a folder, not a file: {path!r}"),
    ("text", "not a tar archive: {path!r}"),
    ("gzip", "not a tar archive: {path!r}"),
])
def test_news20_refuses_a_tar_that_is_missing_or_not_one_saying_where_it_is(tmp_path, python_env,
                                                                          kind, what):
    """A missing --tar lost the hint of where the archive is when its check moved to
    tool_args; a file that is no tar archive ended in tarfile's ReadError traceback."""
    path = {"missing": tmp_path / "missing.tar.gz", "folder": tmp_path / "folder",
            "text": tmp_path / "posts.txt", "gzip": tmp_path / "posts.txt.gz"}[kind]
    if kind == "folder":
        path.mkdir()
    elif kind != "missing":
        text = b"From: a\n\nNot an archive.\n" * 100
        path.write_bytes(gzip.compress(text) if kind == "gzip" else text)
    code, error = _run_tool("make_news20", ["--tar", path, "--out-dir", tmp_path / "out"],
                            python_env)
    assert code == 2
    assert error == (f"make_news20.py: error: argument --tar: {what.format(path=str(path))} "
                     f"(give the path of 20news-bydate.tar.gz, from http://qwone.com/~jason/"
                     f"20Newsgroups/20news-bydate.tar.gz; default {NEWS20_TAR})")
    assert not (tmp_path / "out").exists()


def test_news20_help_shows_the_out_dir_default(capsys):
    with pytest.raises(SystemExit):
        make_news20.main(["--help"])
    assert f"(default: {make_news20.DEFAULT_OUT_DIR})" in " ".join(capsys.readouterr().out.split())


# ----------------------------------------------------------------------------------------
# bench_convert (end to end, if the converter is there)
# ----------------------------------------------------------------------------------------

def test_bench_convert_side_by_side(tmp_path, capsys, another_streamssvm):
    """Its children (this file, run again) imported whichever streamssvm was installed or
    first on PYTHONPATH; they now import the repository's."""
    pytest.importorskip("streamssvm.data.convert")
    src = tmp_path / "b.svm"
    make_synthetic.generate(src, n_rows=300, **SMALL)
    results = bench_convert.main([str(src), "--work-dir", str(tmp_path), "--warm", "--json",
                                  str(tmp_path / "convert.json")])
    out = capsys.readouterr().out
    assert "streamssvm convert_svmlight" in out and "sklearn load_svmlight_file" in out
    sbs = results["side_by_side"]
    assert sbs["ours"]["completed"] and sbs["sklearn"]["completed"]
    if importlib.util.find_spec("vowpalwabbit") is not None:  # VW's text pass beside them
        assert "Vowpal Wabbit 1 pass + cache" in out and sbs["vw"]["completed"]
        assert sbs["vw"]["text_bytes"] > os.path.getsize(src) and sbs["vw_ratio"] > 0
        assert not list(tmp_path.glob("*.vw*"))  # its text and cache were removed
    written = json.loads((tmp_path / "convert.json").read_text())
    assert written["benchmark"] == "convert"
    assert written["figures"]["side_by_side"]["ours"]["nnz"] == sbs["ours"]["nnz"]
    assert written["figures"]["side_by_side"]["ratio"] == pytest.approx(sbs["ratio"])
    assert sbs["ours"]["nnz"] == sbs["sklearn"]["nnz"] == make_synthetic_nnz(src)
    assert not list(tmp_path.glob("*.h5"))  # the store was removed



def test_bench_checksums_creates_its_workdir_and_refuses_no_passes(tmp_path, capsys):
    src = tmp_path / "b.svm"
    make_synthetic.generate(src, n_rows=300, **SMALL)
    with pytest.raises(SystemExit) as exc:
        bench_checksums.main([str(src), "--passes", "0", "--workdir", str(tmp_path / "w0")])
    assert exc.value.code == 2
    assert "argument --passes: must be >= 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "w0").exists()
    assert bench_checksums.main([str(src), "--passes", "1", "--workdir",
                                 str(tmp_path / "new" / "w"),
                                 "--json", str(tmp_path / "checksums.json")]) == 0
    assert "best and median of 1" in capsys.readouterr().out
    figures = json.loads((tmp_path / "checksums.json").read_text())["figures"]
    assert {(r["measured"], r["checksums"]) for r in figures["rows"]} == {
        (what, name) for what in ("read", "evaluate") for name in bench_checksums.VARIANTS}
    assert (tmp_path / "new" / "w" / "converted.h5").exists()


def test_bench_auto_cuts_the_first_file_unless_cut_from(tmp_path, capsys):
    src = tmp_path / "b.svm"
    make_synthetic.generate(src, n_rows=200, **SMALL)
    bench_auto.main([str(src), "--lams", "1e-2", "--cut", "300",
                     "--json", str(tmp_path / "auto.json")])
    rows = [line.split()[:3] for line in capsys.readouterr().out.splitlines()[1:]]
    assert rows[0] == ["b", "25", "1e-02"] and ["cut", "to", "300"] in rows
    figures = json.loads((tmp_path / "auto.json").read_text())["figures"]
    assert [r["data"] for r in figures] == ["b"] * 4 + ["cut to 300"] * 4  # 4 losses each
    for options, message in ((["--cut-from", str(src)], "argument --cut-from: needs --cut"),
                             (["--cut", "300,0"], "column counts (integers >= 1), got '300,0'")):
        with pytest.raises(SystemExit) as exc:
            bench_auto.main([str(src), *options])
        assert exc.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("lams", ["0", "1e-4,-1e-5", "nan", "inf", "abc", "1e-4,,1e-5", ""])
def test_bench_auto_refuses_bad_lambdas(tmp_path, capsys, lams):
    with pytest.raises(SystemExit) as exc:
        bench_auto.main([str(_unread(tmp_path)), "--lams", lams])
    assert exc.value.code == 2
    assert (f"argument --lams: must be comma-separated positive finite numbers, got {lams!r}"
            in capsys.readouterr().err)


@pytest.mark.parametrize("cut", ["abc", "0", "500,-1", "1.5", "500,,2000", ""])
def test_bench_auto_refuses_bad_column_counts(tmp_path, capsys, cut):
    """A count that was not an integer got argparse's "invalid _column_counts value"."""
    with pytest.raises(SystemExit) as exc:
        bench_auto.main([str(_unread(tmp_path)), "--cut", cut])
    assert exc.value.code == 2
    assert (f"argument --cut: must be comma-separated column counts (integers >= 1), got "
            f"{cut!r}" in capsys.readouterr().err)


# ----------------------------------------------------------------------------------------
# corrupt_store
# ----------------------------------------------------------------------------------------

@pytest.fixture
def small_store(tmp_path):
    src = tmp_path / "s.svm"
    make_synthetic.generate(src, n_rows=300, **SMALL)
    convert_svmlight(src, tmp_path / "s.h5", progress=False)
    return tmp_path / "s.h5"


@pytest.mark.parametrize("flips", ["0", "-3"])
def test_corrupt_store_refuses_no_flips(small_store, capsys, flips):
    with pytest.raises(SystemExit) as exc:
        corrupt_store.main([str(small_store), "--flips", flips])
    assert exc.value.code == 2
    assert f"argument --flips: must be >= 1, got {flips}" in capsys.readouterr().err


def test_corrupt_store_refuses_a_store_with_a_damaged_block(small_store, capsys):
    """It ended in a StoreError's traceback (a missing store or one that does not open is
    refused earlier, see test_tools_refuse_*)."""
    k, name, offset, _ = corrupt_store.dataset_extents(small_store)[0]
    corrupt_store.flip_bit(small_store, offset, 0)
    with pytest.raises(SystemExit) as exc:
        corrupt_store.main([str(small_store)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f": error: {small_store}: block {k}: dataset {name} " in err and err.count("\n") == 1


# ----------------------------------------------------------------------------------------
# every tool: a missing input
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("tool, options, argument", [
    ("bench_auto", ["{missing}"], "train"),
    ("bench_auto", ["{file}", "{missing}"], "train"),
    ("bench_auto", ["{file}", "--cut", "10", "--cut-from", "{missing}"], "--cut-from"),
    ("bench_convert", ["{missing}"], "src"),
    ("bench_convert", ["--bound-check", "--bound-file", "{missing}"], "--bound-file"),
    ("bench_convert", ["--bound-check", "--bound-small-file", "{missing}"],
     "--bound-small-file"),
    ("bench_checksums", ["{missing}"], "svmlight"),
    ("corrupt_store", ["{missing}"], "store"),
    ("bench_encodings", ["{missing}"], "train"),
    ("bench_encodings", ["{file}", "--test", "{missing}"], "--test"),
    ("bench_encodings", ["{file}", "--ooc-store", "{missing}"], "--ooc-store"),
    ("bench_distributed", ["--store", "{missing}"], "--store"),
    ("bench_distributed", ["--svm", "{missing}"], "--svm"),
    ("bench_solvers", ["--train", "{missing}"], "--train"),
    ("bench_solvers", ["--train", "{file}", "--ooc", "{missing}"], "--ooc"),
    ("bench_tron", ["--train", "{missing}"], "--train"),
    ("bench_tron", ["--train", "{file}", "--test", "{missing}"], "--test"),
    ("bench_tron", ["--train", "{file}", "--ooc", "--ooc-store", "{missing}"], "--ooc-store"),
    ("reproduce", ["run", "{missing}", "--name", "x", "--sigma-log2", "-3"], "data"),
    ("reproduce", ["render", "{missing}"], "results"),
    ("reproduce", ["report", "{file}", "{missing}", "--out", "{file}.md"], "results"),
    ("kill_convert", ["{missing}"], "input"),
    ("kill_convert", ["{file}", "--old", "{missing}"], "--old"),
    ("kill_train", ["{missing}"], "store"),
    ("bench_vw", ["--train", "{missing}", "--test", "{file}"], "--train"),
    ("bench_vw", ["--train", "{file}", "--test", "{missing}"], "--test"),
    ("profile_convert", ["{missing}"], "src"),
])
def test_tools_refuse_a_missing_input_when_parsing(tmp_path, python_env, tool, options,
                                                   argument):
    """The bench, kill and reproduce tools ended in a traceback (FileNotFoundError,
    StoreError, CalledProcessError; some after minutes of work); a folder is named as one."""
    file = _unread(tmp_path)
    for missing, what in ((tmp_path / "missing.svm", "no such file"),
                          (tmp_path, "a folder, not a file")):
        code, error = _run_tool(tool, [o.format(missing=missing, file=file) for o in options],
                                python_env)
        assert code == 2 and error.startswith(f"{tool}.py")  # "reproduce.py run" for a command
        assert error.endswith(f": error: argument {argument}: {what}: {str(missing)!r}")
    assert os.listdir(tmp_path) == [file.name]


@pytest.mark.parametrize("tool, options, argument", [
    ("corrupt_store", [], "store"),
    ("kill_train", [], "store"),
    ("bench_distributed", ["--store"], "--store"),
    ("bench_encodings", ["{file}", "--ooc-store"], "--ooc-store"),
    ("bench_solvers", ["--train", "{file}", "--ooc"], "--ooc"),
    ("bench_tron", ["--train", "{file}", "--ooc", "--ooc-store"], "--ooc-store"),
])
def test_tools_refuse_a_file_that_is_not_a_store_when_parsing(tmp_path, python_env, tool,
                                                               options, argument):
    """Each opened it later: a StoreError's traceback (kill_train: its child's, then a
    CalledProcessError), corrupt_store's one line but after the parsing (exit 1)."""
    file = _unread(tmp_path)
    code, error = _run_tool(tool, [o.format(file=file) for o in options] + [str(file)],
                            python_env)
    assert code == 2 and error.startswith(f"{tool}.py: error: argument {argument}: {file}: "
                                          f"not a readable HDF5 store (")
    assert os.listdir(tmp_path) == [file.name]


def test_tools_children_import_the_repository_package(another_streamssvm):
    """The bench tools ran their measuring children (``python -c CODE``) on whichever
    streamssvm was installed or first on PYTHONPATH; they run them with ``repo_env()``."""
    import tool_args

    env = tool_args.repo_env()
    assert env["PYTHONPATH"] == tool_args.REPO_ROOT + os.pathsep + str(another_streamssvm)
    run = subprocess.run([sys.executable, "-c", "import streamssvm; print(streamssvm.__file__)"],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout == os.path.join(os.path.dirname(TOOLS), "streamssvm", "__init__.py") + "\n"


def _run_tool(tool, args, python_env):
    """``tools/TOOL.py ARGS`` in a child: its exit code and the last line of its stderr,
    which must hold no traceback."""
    run = subprocess.run([sys.executable, os.path.join(TOOLS, f"{tool}.py"), *map(str, args)],
                         env=python_env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, run.stderr.splitlines()[-1]


def _unread(tmp_path):
    """A file that exists, for the argument that must, in a test that stops before reading
    it."""
    path = tmp_path / "unread.svm"
    path.write_bytes(b"+1 1:1\n")
    return path


def make_synthetic_nnz(path):
    X, _ = _load(path)
    return X.nnz
