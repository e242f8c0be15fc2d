"""Synthetic text-like sparse binary classification data in svmlight format, of any size.

The rows are written in chunks as they are generated, so memory stays bounded (three chunks
of text, about 50 MB with the defaults) whatever the size of the output. The text bytes are
produced by a Numba kernel (which releases the GIL) in one thread per core; the file is
written, and compressed (``.gz``, ``.bz2``, ``.xz`` by extension; gzip level 1, bzip2 9, xz
preset 1 unless ``--compress-level``: fast settings, as compression sets the pace; another
compressed extension such as ``.zst`` is refused, not written plain), by
a writer thread that overlaps with generation, under a temporary name renamed once the
file is whole (an interrupted or failed run leaves no output, and an earlier one as it
was). Plain output runs at about 90-100 MB of text per CPU second, so over 100 MB/s with
two free cores; gzip -1 manages about 40, gzip -6 about 12, bzip2 about 10 and xz -1 about
4 (MB of text per CPU second, measured here).

Model
-----
Features are ranked by frequency; rank ``r = 1..n_features`` is drawn with probability
about ``1 / (r + b)^a`` (Zipf-Mandelbrot, ``a = zipf_exponent``, ``b = 2.7``; exactly, the
floor of a draw from the density proportional to ``(x + b)^-a`` on ``[1, n_features + 1)``,
sampled by its closed-form inverse CDF so that a draw touches no table), and
ranks are mapped to feature indices by a random permutation, so frequent features are spread
over the whole index range as in a real vocabulary. Each row has a target length ``k`` drawn
uniformly from ``[min_nnz, max_nnz]`` (or from a lognormal with median ``sqrt(min_nnz *
max_nnz)`` and the range as +-2 standard deviations of its log, redrawn until inside);
tokens are drawn until ``k`` distinct features are seen, and the number of draws of each
is its term frequency ``tf``. Values are tf-idf-like,
``(1 + log tf) * idf_j`` with ``idf_j = 1 + log(1 / df_j)`` and ``df_j`` about the expected
fraction of rows that contain feature ``j``; each row is scaled to unit L2 norm and written with
``digits`` (default 7) significant digits, indices one-based, sorted and unique.

Labels come from a hidden sparse weight vector ``w*`` (``density`` of the features nonzero,
standard Gaussian values): ``y = sign(w* . x - t + noise * sd * g)`` with ``g`` standard
Gaussian, ``sd`` the standard deviation of ``w* . x`` and ``t`` its ``1 - pos_fraction``
quantile (both measured on 20,000 pilot rows), then a fraction ``flip`` of the labels chosen at
random is flipped. Labels are written ``+1`` / ``-1``. With the defaults (50,000 features,
2,500 of them in ``w*``) the problem needs many rows: a linear SVM reaches about 67% test
accuracy from 20,000 rows and 80% from 180,000 (the ceiling is 95% with 5% flips).

Size
----
``target_bytes`` counts uncompressed text (the file size for plain output): generation stops
at the first row that brings the text to that size, so a ``4G`` file is 4 GiB plus less than
one row.

Reproducibility
---------------
``w*``, the permutation, the threshold ``t`` and ``sd`` depend only on ``model_seed`` and the
distribution options; every row is drawn from a counter-based random stream keyed by
``(seed, stream, row number)``, so the output does not depend on chunk size or thread count,
and a ``target_bytes`` file is a prefix of a longer file with the same seeds. A test set from
the same ``w*`` is a different ``seed`` with the same ``model_seed``, or ``test_rows`` /
``test_fraction`` (written next to the training file, stream 1 of the same seed).

Examples
--------
::

    python tools/make_synthetic.py bench-data/synth.svm --rows 200000
    python tools/make_synthetic.py bench-data/big.svm --target-bytes 4G
    python tools/make_synthetic.py bench-data/s.svm.gz --rows 100000 --test-fraction 0.2
"""

import argparse
import bz2
import gzip
import lzma
import math
import os
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from streamssvm._atomic import atomic_output, check_output  # noqa: E402

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53
_ZIPF_OFFSET = 2.7
_PILOT_ROWS = 20000
_MAX_DRAWS_PER_NNZ = 100  # stop drawing a row after 100 * k tokens (never hit in practice)

LEN_UNIFORM, LEN_LOGNORMAL = 0, 1
_LEN_CODES = {"uniform": LEN_UNIFORM, "lognormal": LEN_LOGNORMAL}


# --------------------------------------------------------------------------------------
# Numba kernels
# --------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _mix64(z):
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _uniform(state):
    """Next splitmix64 step: returns (new state, uniform in [0, 1))."""
    state = state + _GOLDEN
    return state, (_mix64(state) >> np.uint64(11)) * _TO_UNIT


@njit(cache=True, inline="always")
def _gaussian(state):
    state, u1 = _uniform(state)
    state, u2 = _uniform(state)
    return state, math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True, inline="always")
def _write_digits(buf, pos, m, nd):
    """Write the nd lowest decimal digits of m >= 0 at buf[pos:]; return the new position.
    (Unsigned arithmetic: Python's floor semantics for signed // and % cost twice as much.)"""
    m = np.uint64(m)
    for i in range(nd - 1, -1, -1):
        q = m // np.uint64(10)
        buf[pos + i] = np.uint8(48 + (m - q * np.uint64(10)))
        m = q
    return pos + nd


@njit(cache=True, inline="always")
def _write_uint(buf, pos, m):
    """Write the decimal digits of m >= 0 at buf[pos:]; return the new position."""
    nd = 1
    t = 10
    while nd < 18 and m >= t:
        nd += 1
        t *= 10
    if m >= t:
        nd += 1
    return _write_digits(buf, pos, m, nd)


@njit(cache=True)
def _write_float(buf, pos, v, digits, pow10, pow10f):
    """Write v > 0 with `digits` significant digits, trailing zeros dropped; fixed point
    for 1e-5 <= v < 10^digits, otherwise d.ddde[+-]XX. pow10f[k + 40] = 10.0^k."""
    if v >= 1e-30 and v < 1e30:
        e = -1
        while v < pow10f[e + 40]:
            e -= 1
        while v >= pow10f[e + 41]:
            e += 1
    else:
        e = int(math.floor(math.log10(v)))
    k = digits - 1 - e
    if -40 <= k <= 40:
        m = int(v * pow10f[k + 40] + 0.5)
    elif k > 0:  # v below 1e-30: scale in two steps so that 10^k does not overflow
        m = int(v * 1e40 * 10.0 ** (k - 40) + 0.5)
    else:
        m = int(v * 10.0 ** k + 0.5)
    if m >= pow10[digits]:  # rounding carried: v is 10^(e+1) to `digits` digits
        e += 1
        m = pow10[digits - 1]
    nd = digits
    while nd > 1:  # drop trailing zeros
        q = m // 10
        if m != q * 10:
            break
        m = q
        nd -= 1
    if -5 <= e < 0:
        buf[pos] = 48          # '0'
        buf[pos + 1] = 46      # '.'
        pos += 2
        for _ in range(-e - 1):
            buf[pos] = 48
            pos += 1
        return _write_digits(buf, pos, m, nd)
    if 0 <= e < digits:
        # integer part: first e + 1 digits (padded with zeros if m has fewer)
        int_digits = e + 1
        if nd <= int_digits:
            pos = _write_uint(buf, pos, m)
            for _ in range(int_digits - nd):
                buf[pos] = 48
                pos += 1
            return pos
        frac_len = nd - int_digits
        pos = _write_uint(buf, pos, m // pow10[frac_len])
        buf[pos] = 46
        pos += 1
        frac = m % pow10[frac_len]
        start = pos
        for i in range(frac_len - 1, -1, -1):
            buf[start + i] = 48 + frac % 10
            frac //= 10
        return start + frac_len
    # exponent form
    lead = m // pow10[nd - 1]
    buf[pos] = 48 + lead
    pos += 1
    if nd > 1:
        buf[pos] = 46
        pos += 1
        rest = m % pow10[nd - 1]
        start = pos
        for i in range(nd - 2, -1, -1):
            buf[start + i] = 48 + rest % 10
            rest //= 10
        pos = start + nd - 1
    buf[pos] = 101  # 'e'
    buf[pos + 1] = 45 if e < 0 else 43
    pos += 2
    ae = -e if e < 0 else e
    if ae < 10:
        buf[pos] = 48
        pos += 1
    return _write_uint(buf, pos, ae)


@njit(cache=True, inline="always")
def _zipf_rank(u, n_ranks, zipf_a, zipf_lo, zipf_span):
    """Rank 0..n_ranks-1 from u in [0, 1): the inverse of the CDF of the density
    proportional to (x + b)^-a on [1, n_ranks + 1), floored. zipf_lo and zipf_span are
    log(1 + b) and log((n + 1 + b) / (1 + b)) for a = 1, else (1 + b)^(1 - a) and
    (n + 1 + b)^(1 - a) - (1 + b)^(1 - a)."""
    if zipf_a == 1.0:
        x = math.exp(zipf_lo + u * zipf_span)
    else:
        x = (zipf_lo + u * zipf_span) ** (1.0 / (1.0 - zipf_a))
    r = int(x - _ZIPF_OFFSET) - 1
    if r < 0:
        return 0
    if r >= n_ranks:
        return n_ranks - 1
    return r


@njit(cache=True, nogil=True)
def _draw_row(state, n_ranks, zipf_a, zipf_lo, zipf_span, target, max_draws,
              table_keys, table_slot, ranks, tf):
    """Draw Zipf ranks until `target` distinct ones; return (state, k) with the distinct
    ranks in ranks[:k] (in order of first draw) and their counts in tf[:k]."""
    mask = table_keys.shape[0] - 1
    k = 0
    draws = 0
    while k < target and draws < max_draws:
        draws += 1
        state, u = _uniform(state)
        r = _zipf_rank(u, n_ranks, zipf_a, zipf_lo, zipf_span)
        slot = int((np.uint64(r) * _GOLDEN) >> np.uint64(40)) & mask
        while True:
            key = table_keys[slot]
            if key == r:
                tf[table_slot[slot]] += 1
                break
            if key < 0:
                table_keys[slot] = r
                table_slot[slot] = k
                ranks[k] = r
                tf[k] = 1
                k += 1
                break
            slot = (slot + 1) & mask
    for i in range(k):  # reset only the touched slots
        r = ranks[i]
        slot = int((np.uint64(r) * _GOLDEN) >> np.uint64(40)) & mask
        while table_keys[slot] != r:
            slot = (slot + 1) & mask
        table_keys[slot] = -1
    return state, k


@njit(cache=True, inline="always")
def _bucket_sort(keys, k, out, counts, shift):
    """Sort keys[:k] into out[:k]: scatter by keys >> shift into len(counts) buckets (about
    half a key per bucket), then an insertion sort that has almost nothing left to move.
    Five times faster than ndarray.sort on rows of ~100 keys."""
    for b in range(counts.shape[0]):
        counts[b] = 0
    for i in range(k):
        counts[keys[i] >> shift] += 1
    acc = 0
    for b in range(counts.shape[0]):
        c = counts[b]
        counts[b] = acc
        acc += c
    for i in range(k):
        b = keys[i] >> shift
        out[counts[b]] = keys[i]
        counts[b] += 1
    for i in range(1, k):
        x = out[i]
        j = i - 1
        while j >= 0 and out[j] > x:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = x


@njit(cache=True, nogil=True)
def _generate_part(key, row0, lo, hi, zipf_a, zipf_lo, zipf_span, rank_to_feature,
                   idf_by_rank, w, threshold, noise_sd, flip, min_nnz, max_nnz, len_mode,
                   len_mu, len_sigma, digits, write_text, buf, row_bytes, labels, nnzs, flipped,
                   margins):
    """Generate rows row0 + lo .. row0 + hi - 1 of the stream `key`; return the bytes written.

    The text goes to buf[0:]; per row i (lo <= i < hi): bytes written, label (+1/-1), nnz,
    whether the label was flipped, and the raw margin w* . x (before threshold and noise).
    Releases the GIL: parts run in parallel in Python threads.
    """
    table_size = 1
    while table_size < 4 * max_nnz:
        table_size *= 2
    pow10 = np.empty(19, np.int64)
    pow10[0] = 1
    for i in range(1, 19):
        pow10[i] = pow10[i - 1] * 10
    pow10f = np.empty(81, np.float64)
    for i in range(81):
        pow10f[i] = float(10.0 ** (i - 40))
    span = max_nnz - min_nnz + 1
    n_buckets = 1
    while n_buckets < 2 * max_nnz:
        n_buckets *= 2
    n_ranks = rank_to_feature.shape[0]
    shift = 20
    while ((n_ranks - 1) << 20) >> shift >= n_buckets:
        shift += 1
    table_keys = np.full(table_size, -1, np.int64)
    table_slot = np.zeros(table_size, np.int64)
    ranks = np.empty(max_nnz, np.int64)
    tf = np.empty(max_nnz, np.int64)
    packed = np.empty(max_nnz, np.int64)
    ordered = np.empty(max_nnz, np.int64)
    counts = np.empty(n_buckets, np.int64)
    raw = np.empty(max_nnz, np.float64)
    uniq = np.empty(max_nnz, np.int64)
    vals = np.empty(max_nnz, np.float64)
    pos = 0
    for i in range(lo, hi):
        state = _mix64(key ^ (np.uint64(row0 + i) * _GOLDEN))
        target = min_nnz
        if len_mode == LEN_UNIFORM:
            state, u = _uniform(state)
            target = min_nnz + min(int(u * span), span - 1)
        else:
            while True:
                state, g = _gaussian(state)
                t = int(round(math.exp(len_mu + len_sigma * g)))
                if min_nnz <= t <= max_nnz:
                    target = t
                    break
        state, k = _draw_row(state, n_ranks, zipf_a, zipf_lo, zipf_span, target,
                             _MAX_DRAWS_PER_NNZ * target, table_keys, table_slot,
                             ranks, tf)
        sq = 0.0
        for t in range(k):
            v = idf_by_rank[ranks[t]]
            if tf[t] > 1:
                v *= 1.0 + math.log(tf[t])
            raw[t] = v
            sq += v * v
            packed[t] = (rank_to_feature[ranks[t]] << 20) | t
        _bucket_sort(packed, k, ordered, counts, shift)
        for t in range(k):
            uniq[t] = ordered[t] >> 20
            vals[t] = raw[ordered[t] & 0xFFFFF]
        scale = 1.0 / math.sqrt(sq) if sq > 0.0 else 0.0
        margin = 0.0
        for t in range(k):
            vals[t] *= scale
            margin += w[uniq[t]] * vals[t]
        state, g = _gaussian(state)
        state, u = _uniform(state)
        positive = margin - threshold + noise_sd * g > 0.0
        is_flipped = u < flip
        if is_flipped:
            positive = not positive
        labels[i] = 1 if positive else -1
        nnzs[i] = k
        flipped[i] = is_flipped
        margins[i] = margin
        if write_text:
            start = pos
            buf[pos] = 43 if positive else 45  # '+' or '-'
            buf[pos + 1] = 49                  # '1'
            pos += 2
            for t in range(k):
                buf[pos] = 32                  # ' '
                pos = _write_uint(buf, pos + 1, uniq[t] + 1)
                buf[pos] = 58                  # ':'
                pos = _write_float(buf, pos + 1, vals[t], digits, pow10, pow10f)
            buf[pos] = 10                      # '\n'
            pos += 1
            row_bytes[i] = pos - start
    return pos


# --------------------------------------------------------------------------------------
# The model (depends only on model_seed and the distribution options)
# --------------------------------------------------------------------------------------

def _seed_key(*parts):
    """A 64-bit key from non-negative integers (splitmix64 chained)."""
    z = np.uint64(0x243F6A8885A308D3)
    with np.errstate(over="ignore"):
        for p in parts:
            z = np.uint64(z ^ np.uint64(int(p) & 0xFFFFFFFFFFFFFFFF))
            z = np.uint64(z + _GOLDEN)
            z = np.uint64((z ^ (z >> np.uint64(30))) * _MIX1)
            z = np.uint64((z ^ (z >> np.uint64(27))) * _MIX2)
            z = np.uint64(z ^ (z >> np.uint64(31)))
    return z


class _Model:
    def __init__(self, n_features, model_seed, zipf_exponent, density, min_nnz, max_nnz,
                 row_length, noise, pos_fraction, n_threads):
        """Arguments checked by :func:`generate`."""
        rng = np.random.default_rng([int(model_seed), 0x5EED])
        a, b, n = float(zipf_exponent), _ZIPF_OFFSET, n_features
        if a == 1.0:
            lo, span = math.log(1.0 + b), math.log((n + 1.0 + b) / (1.0 + b))
            cdf = np.log((np.arange(1, n + 2) + b) / (1.0 + b)) / span
        else:
            lo = (1.0 + b) ** (1.0 - a)
            span = (n + 1.0 + b) ** (1.0 - a) - lo
            cdf = ((np.arange(1, n + 2) + b) ** (1.0 - a) - lo) / span
        self.zipf = (a, lo, span)
        self.rank_probability = np.diff(cdf)  # of rank r = 0..n-1 (the most frequent first)
        self.rank_to_feature = rng.permutation(n_features).astype(np.int64)
        mean_len = 0.5 * (min_nnz + max_nnz)
        # expected fraction of rows holding each rank (about 1.3 draws per distinct feature)
        df = -np.expm1(-self.rank_probability * mean_len * 1.3)
        self.idf_by_rank = 1.0 + np.log(1.0 / np.maximum(df, 1e-300))
        n_support = max(1, int(round(density * n_features)))
        w = np.zeros(n_features)
        w[rng.choice(n_features, size=n_support, replace=False)] = rng.standard_normal(
            n_support)
        self.w = w
        self.n_features = n_features
        self.min_nnz, self.max_nnz = int(min_nnz), int(max_nnz)
        self.len_mode = _LEN_CODES[row_length]
        self.len_mu = 0.5 * (math.log(min_nnz) + math.log(max_nnz))
        self.len_sigma = max((math.log(max_nnz) - math.log(min_nnz)) / 4.0, 1e-3)
        self.n_threads = n_threads
        self.threshold, self.noise_sd = 0.0, 0.0
        pilot = self.run(_seed_key(model_seed, 0xD1107), 0, _PILOT_ROWS, flip=0.0,
                         write_text=False)
        margins = pilot["margins"]
        self.margin_sd = float(margins.std())
        self.threshold = float(np.quantile(margins, 1.0 - pos_fraction))
        self.noise_sd = float(noise) * self.margin_sd

    def run(self, key, row0, n_rows, flip, digits=7, write_text=True, out=None):
        """Rows row0 .. row0 + n_rows - 1 of stream `key`, cut into contiguous parts that
        run in parallel; part p's text is out[p, :part_used[p]]."""
        n_parts = max(1, min(n_rows, 2 * self.n_threads))
        rows_per_part = (n_rows + n_parts - 1) // n_parts
        n_parts = (n_rows + rows_per_part - 1) // rows_per_part if n_rows else 1
        if out is None or out.shape[0] < n_parts:
            out = np.empty((n_parts, self.part_capacity(n_rows, n_parts, digits)
                            if write_text else 1), np.uint8)
        part_used = np.zeros(n_parts, np.int64)
        row_bytes = np.zeros(n_rows, np.int64)
        labels = np.zeros(n_rows, np.int8)
        nnzs = np.zeros(n_rows, np.int32)
        flipped = np.zeros(n_rows, np.bool_)
        margins = np.zeros(n_rows, np.float64)

        def part(p):
            lo, hi = p * rows_per_part, min(n_rows, (p + 1) * rows_per_part)
            part_used[p] = _generate_part(
                np.uint64(key), row0, lo, hi, *self.zipf, self.rank_to_feature,
                self.idf_by_rank, self.w, self.threshold, self.noise_sd, float(flip),
                self.min_nnz, self.max_nnz, self.len_mode, self.len_mu, self.len_sigma,
                int(digits), bool(write_text), out[p], row_bytes, labels, nnzs, flipped,
                margins)

        if n_parts == 1 or self.n_threads == 1:
            for p in range(n_parts):
                part(p)
        else:
            with ThreadPoolExecutor(self.n_threads) as pool:
                list(pool.map(part, range(n_parts)))
        return {"out": out, "n_parts": n_parts, "part_used": part_used,
                "rows_per_part": rows_per_part, "row_bytes": row_bytes,
                "labels": labels, "nnzs": nnzs, "flipped": flipped, "margins": margins}

    def part_capacity(self, n_rows, n_parts, digits):
        rows_per_part = (n_rows + n_parts - 1) // n_parts
        index_digits = len(str(self.n_features))
        value_bytes = max(digits + 7, 2 + 5 + digits)  # '0.0000ddddddd' or 'd.ddde-XXX'
        row_cap = 3 + self.max_nnz * (2 + index_digits + value_bytes) + 1
        return rows_per_part * row_cap


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------

_LEVELS = {".gz": range(10), ".bz2": range(1, 10), ".xz": range(10)}  # gzip, bzip2, xz -N
# compressed formats not written: an output named so is refused rather than written plain
_UNWRITTEN = (".gzip", ".zst", ".zstd", ".lz4", ".lzma", ".lz", ".Z", ".zip", ".7z", ".br")


def _compression(path):
    """The compressed extension ``path`` ends with, or ""."""
    return next((ext for ext in _LEVELS if os.fspath(path).endswith(ext)), "")


def _open_output(raw, path, compress_level):
    """A writer into the binary file ``raw`` (the temporary file of ``path``), compressing
    as the extension of ``path`` says."""
    path, compression = os.fspath(path), _compression(path)
    if compression == ".gz":  # the header names path, as gzip.open(path) would
        return gzip.GzipFile(path, "wb", 1 if compress_level is None else compress_level, raw)
    if compression == ".bz2":
        return bz2.BZ2File(raw, "wb", compresslevel=9 if compress_level is None
                           else compress_level)
    if compression == ".xz":
        return lzma.LZMAFile(raw, "wb", preset=1 if compress_level is None else compress_level)
    return raw


def parse_size(text):
    """'4G', '200M', '1.5GB', '123456' -> bytes (powers of 1024)."""
    if isinstance(text, (int, np.integer)):
        return int(text)
    s = str(text).strip().upper().rstrip("B").rstrip("I")
    mult = 1
    for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
        if s.endswith(suffix):
            s, mult = s[:-1], m
            break
    return int(float(s) * mult)


def _test_path(path):
    """synth.svm -> synth.t.svm; synth.svm.gz -> synth.t.svm.gz; synth -> synth.t"""
    path = os.fspath(path)
    head, name = os.path.split(path)
    comp = _compression(name)
    stem, ext = os.path.splitext(name[:len(name) - len(comp)])
    return os.path.join(head, f"{stem}.t{ext}{comp}")


def _write_stream(model, path, key, n_rows, target_bytes, flip, digits, chunk_rows,
                  compress_level, progress):
    """Generate and write rows until n_rows rows or target_bytes of text, whichever first."""
    n_parts = max(1, 2 * model.n_threads)
    cap = model.part_capacity(chunk_rows, n_parts, digits)
    free = queue.Queue()
    for _ in range(3):  # one being generated, one being written, one waiting
        free.put(np.empty((n_parts, cap), np.uint8))
    full = queue.Queue(maxsize=2)
    error = []

    def writer(f):
        try:
            while True:
                item = full.get()
                if item is None:
                    return
                out, pieces = item
                for p, nbytes in pieces:
                    if nbytes:
                        f.write(memoryview(out[p, :nbytes]))
                free.put(out)
        except BaseException as exc:  # noqa: BLE001 - reported in the main thread
            error.append(exc)
            while full.get() is not None:
                pass

    stats = {"n_rows": 0, "nnz": 0, "text_bytes": 0, "n_positive": 0, "n_flipped": 0,
             "min_row_nnz": None, "max_row_nnz": None}
    t0, c0 = time.perf_counter(), time.process_time()
    with atomic_output(path, overwrite=True) as tmp, open(tmp, "wb") as raw:
        f = _open_output(raw, path, compress_level)
        try:
            thread = threading.Thread(target=writer, args=(f,), daemon=True)
            thread.start()
            try:
                row0 = 0
                last_report = t0
                while not error:
                    todo = chunk_rows if n_rows is None else min(chunk_rows, n_rows - row0)
                    if todo <= 0:
                        break
                    out = free.get()
                    res = model.run(key, row0, todo, flip, digits, True, out)
                    keep = todo
                    if target_bytes is not None:
                        cum = stats["text_bytes"] + np.cumsum(res["row_bytes"])
                        hit = np.searchsorted(cum, target_bytes, side="left")
                        if hit < todo:
                            keep = int(hit) + 1
                    rpp = res["rows_per_part"]
                    pieces = []
                    for p in range(res["n_parts"]):
                        lo, hi = p * rpp, min(todo, (p + 1) * rpp)
                        if lo >= keep:
                            break
                        if hi <= keep:
                            pieces.append((p, int(res["part_used"][p])))
                        else:
                            pieces.append((p, int(res["row_bytes"][lo:keep].sum())))
                    full.put((out, pieces))
                    nnzs = res["nnzs"][:keep]
                    stats["n_rows"] += keep
                    stats["nnz"] += int(nnzs.sum())
                    stats["text_bytes"] += int(res["row_bytes"][:keep].sum())
                    stats["n_positive"] += int((res["labels"][:keep] > 0).sum())
                    stats["n_flipped"] += int(res["flipped"][:keep].sum())
                    lo_nnz, hi_nnz = int(nnzs.min()), int(nnzs.max())
                    stats["min_row_nnz"] = lo_nnz if stats["min_row_nnz"] is None else min(
                        stats["min_row_nnz"], lo_nnz)
                    stats["max_row_nnz"] = hi_nnz if stats["max_row_nnz"] is None else max(
                        stats["max_row_nnz"], hi_nnz)
                    row0 += keep
                    if keep < todo:
                        break
                    now = time.perf_counter()
                    if progress and now - last_report > 2.0:
                        last_report = now
                        mb = stats["text_bytes"] / 1e6
                        print(f"  {path}: {stats['n_rows']:,} rows, {mb:,.0f} MB, "
                              f"{mb / (now - t0):,.0f} MB/s", file=sys.stderr, flush=True)
            finally:
                full.put(None)
                thread.join()
        finally:
            f.close()
        if error:
            raise error[0]
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    stats.update(path=os.fspath(path), seconds=seconds, cpu_seconds=cpu_seconds,
                 file_bytes=os.path.getsize(path),
                 mb_per_s=stats["text_bytes"] / 1e6 / max(seconds, 1e-9),
                 mb_per_cpu_s=stats["text_bytes"] / 1e6 / max(cpu_seconds, 1e-9))
    return stats


class OptionError(ValueError):
    """A bad argument of :func:`generate`, found before any work: ``param`` names it."""

    def __init__(self, param, problem):
        super().__init__(f"{param} {problem}")
        self.param, self.problem = param, problem


def _require(ok, param, problem):
    if not ok:
        raise OptionError(param, problem)


# main's option of each argument of generate
_OPTIONS = {"path": "out", "n_rows": "--rows", "target_bytes": "--target-bytes",
            "n_features": "--features", "min_nnz": "--min-nnz", "max_nnz": "--max-nnz",
            "row_length": "--row-length",
            "zipf_exponent": "--zipf", "density": "--density", "pos_fraction": "--pos-fraction",
            "flip": "--flip", "digits": "--digits", "test_rows": "--test-rows",
            "test_fraction": "--test-fraction", "chunk_rows": "--chunk-rows",
            "n_threads": "--threads", "test_path": "--test-out",
            "compress_level": "--compress-level"}


def generate(path, n_rows=None, target_bytes=None, n_features=50000, seed=0, model_seed=0,
             flip=0.05, *, density=0.05, zipf_exponent=1.0, min_nnz=50, max_nnz=200,
             row_length="uniform", noise=0.1, pos_fraction=0.5, digits=7,
             test_path=None, test_rows=None, test_fraction=None, chunk_rows=8192,
             compress_level=None, n_threads=None, progress=False, make_dirs=False):
    """Write a synthetic svmlight file (and optionally a test file from the same model).

    Every argument is checked before any work (:class:`OptionError` names a bad one).

    Parameters
    ----------
    path : str or path-like
        Output; ``.gz``, ``.bz2`` or ``.xz`` compresses; another compressed extension
        (``.zst``, ``.lz4``, ...) is refused.
    n_rows : int, optional
        Number of rows.
    target_bytes : int or str, optional
        Instead of (or as well as) ``n_rows``: stop at the first row that brings the text
        (uncompressed bytes, which equals the file size for plain output) to this size;
        ``"4G"`` style strings are accepted.
    n_features : int
        Width; indices are written one-based, 1..n_features.
    seed : int
        Row seed (which rows are drawn).
    model_seed : int
        Seed of the hidden weight vector, feature permutation and label threshold.
    flip : float
        Fraction of labels flipped at random.
    density : float
        Fraction of nonzero entries of the hidden weight vector w*.
    zipf_exponent : float
        Exponent a of the Zipf-Mandelbrot feature frequencies 1 / (rank + 2.7)^a.
    min_nnz, max_nnz : int
        Range of the number of nonzeros per row.
    row_length : {"uniform", "lognormal"}
        Distribution of the row lengths in [min_nnz, max_nnz].
    noise : float
        Label noise, as a multiple of the standard deviation of w* . x.
    pos_fraction : float
        Fraction of positive labels before flipping.
    digits : int
        Significant digits of the values (1..12).
    test_path : str, optional
        Test file (default: ``path`` with ``.t`` before the extension), written if
        ``test_rows`` or ``test_fraction`` is given.
    test_rows : int, optional
        Rows of the test file (same model, row stream 1 of ``seed``).
    test_fraction : float, optional
        ``test_rows = ceil(test_fraction * rows of the training file)``.
    chunk_rows : int
        Rows generated per chunk; memory is about 3 chunks of text.
    compress_level : int, optional
        gzip/bz2 level or xz preset (defaults 1, 9 and 1).
    n_threads : int, optional
        Threads generating in parallel (default: all cores).
    progress : bool
        Print progress on stderr.
    make_dirs : bool
        Create the folders of the outputs (once the arguments are checked).

    Returns
    -------
    dict
        n_rows, nnz, text_bytes, file_bytes, n_positive, n_flipped, min_row_nnz,
        max_row_nnz, seconds, cpu_seconds, mb_per_s, mb_per_cpu_s, path, n_features; and
        ``test`` (the same for the test file) when one was written.
    """
    if n_rows is None and target_bytes is None:
        raise OptionError("n_rows", "or target_bytes must be given")
    if target_bytes is not None:
        try:
            target_bytes = parse_size(target_bytes)
        except ValueError:
            raise OptionError("target_bytes", f"is not a size such as 200M or 4G: "
                                              f"{target_bytes!r}") from None
        _require(target_bytes > 0, "target_bytes", f"must be positive, got {target_bytes}")
    _require(n_rows is None or n_rows >= 0, "n_rows", f"must be >= 0, got {n_rows}")
    _require(n_features >= 1, "n_features", f"must be >= 1, got {n_features}")
    _require(1 <= min_nnz <= max_nnz, "min_nnz", f"must be in 1..{max_nnz} (the maximum), "
                                                 f"got {min_nnz}")
    _require(max_nnz < 1 << 20, "max_nnz", f"must be below 2^20, got {max_nnz}")
    _require(max_nnz <= n_features, "max_nnz", f"({max_nnz}) exceeds the number of features "
                                               f"({n_features})")
    _require(row_length in _LEN_CODES, "row_length", f"must be one of {sorted(_LEN_CODES)}, "
                                                     f"got {row_length!r}")
    _require(zipf_exponent > 0, "zipf_exponent", f"must be positive, got {zipf_exponent}")
    _require(0 < density <= 1, "density", f"must be in (0, 1], got {density}")
    _require(0 < pos_fraction < 1, "pos_fraction", f"must be in (0, 1), got {pos_fraction}")
    _require(0 <= flip <= 1, "flip", f"must be in [0, 1], got {flip}")
    _require(1 <= digits <= 12, "digits", f"must be in 1..12, got {digits}")
    _require(test_rows is None or test_rows >= 0, "test_rows", f"must be >= 0, got {test_rows}")
    _require(test_fraction is None or 0 <= test_fraction < math.inf, "test_fraction",
             f"must be >= 0, got {test_fraction}")
    _require(chunk_rows >= 1, "chunk_rows", f"must be >= 1, got {chunk_rows}")
    _require(n_threads is None or n_threads >= 1, "n_threads", f"must be >= 1, got {n_threads}")
    outputs = {"path": path}
    if test_rows is not None or test_fraction is not None:
        outputs["test_path"] = tpath = _test_path(path) if test_path is None else test_path
        _require(os.path.realpath(tpath) != os.path.realpath(path), "test_path",
                 f"is the training output {path}")
    else:
        _require(test_path is None, "test_path", "is given, but no test rows nor test "
                                                 "fraction")
    for param, output in outputs.items():
        unwritten = next((e for e in _UNWRITTEN if os.fspath(output).endswith(e)), None)
        _require(unwritten is None, param, f"{output}: {unwritten} output is not written "
                 f"(only .gz, .bz2 and .xz compress); use one of those or a plain name")
    if compress_level is not None:
        compressions = {_compression(p) for p in outputs.values()} - {""}
        _require(compressions, "compress_level", "applies to .gz, .bz2 and .xz outputs only")
        for ext in compressions:
            levels = _LEVELS[ext]
            _require(compress_level in levels, "compress_level", f"must be in {levels[0]}.."
                     f"{levels[-1]} for {ext} output, got {compress_level}")
    for param, output in outputs.items():
        try:
            if make_dirs:
                os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
            check_output(output, overwrite=True)
        except OSError as exc:
            raise OptionError(param, f"{output}: {exc.strerror}") from None
    if n_threads is None:
        n_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    model = _Model(int(n_features), model_seed, zipf_exponent, density, min_nnz, max_nnz,
                   row_length, noise, pos_fraction, int(n_threads))
    common = dict(flip=flip, digits=digits, chunk_rows=int(chunk_rows),
                  compress_level=compress_level, progress=progress)
    stats = _write_stream(model, path, _seed_key(seed, 0), n_rows, target_bytes, **common)
    stats["n_features"] = int(n_features)
    if test_fraction is not None and test_rows is None:
        test_rows = int(math.ceil(test_fraction * stats["n_rows"]))
    if test_rows is not None:
        stats["test"] = _write_stream(model, outputs["test_path"], _seed_key(seed, 1),
                                      int(test_rows), None, **common)
        stats["test"]["n_features"] = int(n_features)
    return stats


def _summary(stats):
    n = max(stats["n_rows"], 1)
    lengths = f", {stats['min_row_nnz']}..{stats['max_row_nnz']}" if stats["n_rows"] else ""
    return (f"{stats['path']}: {stats['n_rows']:,} rows x {stats['n_features']:,} features, "
            f"nnz {stats['nnz']:,} ({stats['nnz'] / n:.1f}/row{lengths}), "
            f"+1: {stats['n_positive'] / n:.1%}, flipped {stats['n_flipped'] / n:.2%}; "
            f"text {stats['text_bytes'] / 1e6:,.1f} MB, file {stats['file_bytes'] / 1e6:,.1f}"
            f" MB; {stats['seconds']:.1f} s, {stats['mb_per_s']:,.0f} MB/s of text "
            f"({stats['cpu_seconds']:.1f} CPU s, {stats['mb_per_cpu_s']:,.0f} MB per CPU s)")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except None ones (their help says what they mean)."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Generate synthetic text-like sparse binary data in svmlight format.",
        formatter_class=_HelpFormatter)
    ap.add_argument("out", help="output file (.gz/.bz2/.xz compress; other compressed "
                                "extensions are refused)")
    size = ap.add_argument_group("size (at least one)")
    size.add_argument("--rows", type=int, help="number of rows")
    size.add_argument("--target-bytes", help="stop when the text reaches this size, e.g. 4G")
    ap.add_argument("--features", type=int, default=50000, help="number of features")
    ap.add_argument("--seed", type=int, default=0, help="row seed")
    ap.add_argument("--model-seed", type=int, default=0, help="seed of w* and the vocabulary")
    ap.add_argument("--flip", type=float, default=0.05, help="fraction of labels flipped")
    ap.add_argument("--density", type=float, default=0.05, help="nonzero fraction of w*")
    ap.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent")
    ap.add_argument("--min-nnz", type=int, default=50, help="fewest nonzeros of a row")
    ap.add_argument("--max-nnz", type=int, default=200, help="most nonzeros of a row")
    ap.add_argument("--row-length", choices=sorted(_LEN_CODES), default="uniform")
    ap.add_argument("--noise", type=float, default=0.1,
                    help="label noise, in standard deviations of w*.x")
    ap.add_argument("--pos-fraction", type=float, default=0.5,
                    help="fraction of positive labels before flipping")
    ap.add_argument("--digits", type=int, default=7, help="significant digits of values")
    test = ap.add_mutually_exclusive_group()
    test.add_argument("--test-fraction", type=float,
                      help="also write a test file with this many rows per training row")
    test.add_argument("--test-rows", type=int, help="also write a test file of N rows")
    ap.add_argument("--test-out", help="test file path (default: OUT with .t before the "
                    "extension)")
    ap.add_argument("--chunk-rows", type=int, default=8192, help="rows generated per chunk")
    ap.add_argument("--compress-level", type=int,
                    help="gzip/bzip2 level or xz preset (default: 1, 9 and 1)")
    ap.add_argument("--threads", type=int, help="threads (default: all cores)")
    ap.add_argument("--quiet", action="store_true", help="print no progress nor summary")
    args = ap.parse_args(argv)
    if args.rows is None and args.target_bytes is None:
        ap.error("give --rows or --target-bytes")
    try:
        stats = generate(args.out, n_rows=args.rows, target_bytes=args.target_bytes,
                         n_features=args.features, seed=args.seed, model_seed=args.model_seed,
                         flip=args.flip, density=args.density, zipf_exponent=args.zipf,
                         min_nnz=args.min_nnz, max_nnz=args.max_nnz,
                         row_length=args.row_length, noise=args.noise,
                         pos_fraction=args.pos_fraction, digits=args.digits,
                         test_path=args.test_out, test_rows=args.test_rows,
                         test_fraction=args.test_fraction, chunk_rows=args.chunk_rows,
                         compress_level=args.compress_level, n_threads=args.threads,
                         progress=not args.quiet, make_dirs=True)
    except OptionError as exc:
        ap.error(f"argument {_OPTIONS[exc.param]}: {exc.problem}")
    if not args.quiet:
        print(_summary(stats))
        if "test" in stats:
            print(_summary(stats["test"]))
    return stats


if __name__ == "__main__":
    main()
