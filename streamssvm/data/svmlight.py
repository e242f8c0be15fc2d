"""Parse svmlight / libsvm text into CSR row blocks with Numba, over raw byte buffers.

The grammar accepted, one sample per line (``\\n`` ends a line; tabs and other ASCII blanks
separate tokens; ``\\r`` is a blank when only blanks follow it on its line, as in CRLF)::

    line    := blank* [label (blank+ [qid] pair*)] blank* ["#" comment]
    label   := number                  (a list "1,2" is refused: multilabel)
    qid     := "qid:" [+-]digits       (only as the first token after the label; ignored)
    pair    := index ":" number        (index: [+]digits)
    number  := [+-] (digits ["." digits*] | "." digits) [(e|E) [+-] digits]

Blank lines and comment-only lines are skipped. ``nan`` and ``inf`` are refused, and so is
a ``\\r`` with more text after it on its line (comments included): lines ended by ``\\r``
alone (old Mac style) would be read as one line.

Numbers are parsed by hand: a mantissa below 2**53 scaled by 10**e with |e| <= 22 is one
correctly rounded IEEE multiplication or division of exact operands, so it equals
``float(token)``; the rare tokens outside that range (more than 17 significant digits,
large exponents) are recorded and re-parsed by Python's ``float``, so every value is
bit-identical to ``strtod`` and to scikit-learn's ``load_svmlight_file``.

Rows with unsorted indices are sorted (repaired); a repeated index in a row is refused.

Where the result differs from scikit-learn's ``load_svmlight_file`` on purpose (checked by
tools/fuzz_svmlight.py): it reads rows with unsorted indices (sorted here); it accepts and
we refuse NaN and infinite values and labels, a label set other than two values (unless
multiclass), a single label other than -1/+1, an input without data lines, a ``qid`` that is
not ``qid:<integer>`` (it ignores the value), digits grouped with ``_`` (Python's syntax,
not strtod's), indices beyond the int32 range and a ``\\r`` with text after it on its line
(a blank there: lines ended by ``\\r`` alone after a comment vanish into it); a file in
which no index occurs is 0 columns wide here, 1 there.

The parser never reads outside ``buf[:end]``: every access is guarded by ``pos < end``.
"""

import math
import numbers
import threading
import time

import numpy as np
from numba import njit

from .._runtime import cores
from ..errors import FileFormatError
from .store import INT32_MAX

__all__ = ["BlockParser", "SvmlightFormatError", "parse_svmlight_bytes"]


class SvmlightFormatError(FileFormatError):
    """Text that is not valid svmlight / libsvm input (the message says where and why)."""


def check_block_size(value, option):
    """Refuse a block's row or nonzero limit (``option``: block_rows, block_nnz) that is not
    an integer in 1..INT32_MAX."""
    if not (isinstance(value, numbers.Integral) and 1 <= value <= INT32_MAX):
        raise ValueError(f"{option} must be an integer in 1..{INT32_MAX} (a block's index "
                         f"pointers are int32), got {value!r}")


def check_n_features(n_features):
    """Refuse a width (``n_features``) that is not an integer in 0..INT32_MAX."""
    if not (isinstance(n_features, numbers.Integral) and 0 <= n_features <= INT32_MAX):
        raise ValueError(f"n_features must be an integer in 0..{INT32_MAX}, got "
                         f"{n_features!r}")


# --- parser return codes --------------------------------------------------------------------
DONE = 0          # consumed buf[pos:end]
BLOCK_FULL = 1    # the current block reached its row or nonzero limit, or int32's
NEED_SPACE = 2    # an output array is full; the current line was rolled back
REBASE = 3        # auto mode met index 0 while one-based: line rolled back, switch to zero-based
NEED_LABEL = 4    # a label needs Python's float(); line rolled back
E_LABEL = 10
E_MULTILABEL = 11
E_LABEL_NANINF = 12
E_INDEX = 13
E_COLON = 14
E_VALUE = 15
E_NANINF = 16
E_INDEX_LOW = 17
E_INDEX_HIGH = 18
E_INDEX_OVERFLOW = 19
E_DUPLICATE = 20
E_DUPLICATE_UNSORTED = 21
E_QID = 22
E_QID_PLACE = 23
E_MULTICLASS = 24
E_LABEL_CLASS = 25
E_FLOAT32 = 26
E_CR = 27          # a carriage return with more text after it on its line

# --- slots of the int64 state array shared with the parser ----------------------------------
S_POS = 0          # in/out: byte position in buf
S_ROWS = 1         # in/out: rows in the current block
S_NNZ = 2          # in/out: nonzeros in the current block
S_LINE = 3         # in/out: lines consumed before the current one (0-based line number)
S_LINE_START = 4   # out: byte position where the current line starts
S_NSLOW = 5        # in/out: tokens recorded for Python's float()
S_ERR_POS = 6      # out: byte position of the offending token
S_ERR_ARG = 7      # out: an integer detail (index, ...)
S_MAX_RAW = 8      # in/out: largest index seen, as written in the file
S_MAX_LINE = 9     # in/out: its 0-based line
S_MAX_COL = 10     # in/out: its 1-based column
S_BASE = 11        # in: 1 (one-based) or 0
S_AUTO = 12        # in: 1 if index 0 may switch a one-based parse to zero-based
S_LIMIT = 13       # in: n_features, or -1 when not fixed
S_ROW_LIMIT = 14   # in: a block ends when it has this many rows
S_NNZ_LIMIT = 15   # in: ... or when a row brings it to this many nonzeros
S_N_CLASSES = 16   # in/out: distinct labels seen (0, 1, 2)
S_FIXED = 17       # in: 1 if the classes are given
S_OVERRIDE_POS = 18  # in: the label token at this position takes F_OVERRIDE as its value
S_REPAIRED = 19    # in/out: rows whose indices were sorted
S_SPACE = 20       # out: which array is full (NEED_SPACE)
S_MULTICLASS = 21  # in: 1 if any number of labels is allowed: y holds class indices
S_FLOAT32 = 22     # in: 1 if values are to be stored as float32: refuse those beyond it
N_STATE = 23

F_C0 = 0           # in/out: label value coded -1 (first label seen, until the end)
F_C1 = 1           # in/out: label value coded +1
F_OVERRIDE = 2     # in: value of the label at S_OVERRIDE_POS
N_FSTATE = 3       # multiclass: fstate[N_FSTATE + j] is the label of class j (seen j-th)

SPACE_ROWS, SPACE_NNZ, SPACE_SLOW, SPACE_CLASSES = 1, 2, 3, 4

# A feed of at least this many bytes is parsed in two halves at once when the parser runs
# in parallel (see BlockParser.feed): each half then takes far longer than a thread's start.
SPLIT_BYTES = 1 << 20

# Without block_rows, a block also ends after max(block_nnz, MIN_ROW_CAP) rows, so that
# memory stays bounded on inputs made of (nearly) empty rows.
MIN_ROW_CAP = 1 << 16

# slow-token record columns: token start, token end, output slot, 0-based line, line start
N_SLOW_FIELDS = 5

_FLOAT32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103  # the smallest magnitude that float32 rounds to inf
_POW10 = np.array([float(10 ** k) for k in range(23)])  # 1e0 .. 1e22, all exact doubles
_TWO53 = 1 << 53
_MAX_DIGITS = 17   # significant digits accumulated exactly (10**17 < 2**63)

ST_FAST, ST_SLOW, ST_BAD, ST_NANINF = 0, 1, 2, 3


def _powers_of_five_128():
    """5**q for q in -342..308, normalised to 128 bits (high, low words), as used by the
    Eisel-Lemire algorithm (table of fast_float / Lemire 2021; truncated for q >= 0,
    rounded up for q < 0)."""
    words = []
    for q in range(-342, 309):
        if q < 0:
            power5 = 5 ** -q
            z = power5.bit_length() - (1 if power5 & (power5 - 1) == 0 else 0)  # ceil(log2)
            if q >= -27:
                c = 2 ** (z + 127) // power5 + 1
            else:
                c = 2 ** (2 * z + 128) // power5 + 1
                while c >= 1 << 128:
                    c //= 2
        else:
            c = 5 ** q
            while c < 1 << 127:
                c *= 2
            while c >= 1 << 128:
                c //= 2
        words += [c >> 64, c & ((1 << 64) - 1)]
    return np.array(words, np.uint64)


_POW5_128 = _powers_of_five_128()
_U0, _U1, _U2, _U4, _U8 = (np.uint64(k) for k in (0, 1, 2, 4, 8))
_U16, _U32, _U63 = np.uint64(16), np.uint64(32), np.uint64(63)
_LOW32 = np.uint64(0xFFFFFFFF)
_ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW9 = np.uint64(0x1FF)
_BIT52, _BIT53 = np.uint64(1 << 52), np.uint64(1 << 53)
_BELOW = tuple(np.uint64(1 << k) for k in (32, 48, 56, 60, 62, 63))


@njit(cache=True, nogil=True, inline="always")
def _accumulate_digits(buf, pos, end, value):
    """Append the decimal digits at ``buf[pos:end]`` to ``value``: (value, end of digits)."""
    while pos < end:
        d = buf[pos] - 48
        if d < 0 or d > 9:
            break
        value = value * 10 + d
        pos += 1
    return value, pos


@njit(cache=True, nogil=True)
def _is_blank(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def _skip_blanks(buf, pos, end):
    """``(the first non-blank position from pos, the first carriage return skipped or -1)``."""
    cr = -1
    while pos < end and _is_blank(buf[pos]):
        if buf[pos] == 13 and cr < 0:
            cr = pos
        pos += 1
    return pos, cr


@njit(cache=True, nogil=True)
def _text_end(buf, pos, end):
    """Where the line's text from ``pos`` (a comment's) ends: at its newline (or ``end``), or
    at a carriage return that more text (a non-blank byte) follows on the line."""
    cr = -1
    while pos < end:
        c = buf[pos]
        if c == 10:
            break
        if c == 13:
            if cr < 0:
                cr = pos
        elif cr >= 0 and not _is_blank(c):
            return cr
        pos += 1
    return pos


@njit(cache=True, nogil=True)
def _ends_token(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12 or c == 10 or c == 35


@njit(cache=True, nogil=True)
def _is_digit(c):
    return 48 <= c <= 57


@njit(cache=True, nogil=True)
def _mul_64x64(a, b):
    """The 128-bit product of two uint64, as (high, low) words."""
    a_lo, a_hi = a & _LOW32, a >> _U32
    b_lo, b_hi = b & _LOW32, b >> _U32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    middle = p1 + (p0 >> _U32) + (p2 & _LOW32)
    return p3 + (middle >> _U32) + (p2 >> _U32), (middle << _U32) | (p0 & _LOW32)


@njit(cache=True, nogil=True)
def _eisel_lemire(w, q, pow5):
    """``w * 10**q`` correctly rounded, for an exact integer ``0 < w < 2**63``; NaN when
    the result is subnormal or overflows, or in the rare cases the algorithm leaves
    undecided (the caller then asks Python's float()).

    Lemire, "Number parsing at a gigabyte per second", Software: Practice and Experience
    51(8), 2021 (the algorithm of fast_float, Go and Rust).
    """
    if q < -342 or q > 308:
        return np.nan
    lz = 0
    for k in range(6):  # normalise: the top bit of w set
        if w < _BELOW[k]:
            shift = (32, 16, 8, 4, 2, 1)[k]
            w = w << np.uint64(shift)
            lz += shift
    index = 2 * (q + 342)
    high, low = _mul_64x64(w, pow5[index])
    if (high & _LOW9) == _LOW9:
        high2, _ = _mul_64x64(w, pow5[index + 1])
        low = low + high2
        if high2 > low:
            high = high + _U1
    if low == _ALL64 and (q < -27 or q > 55):
        return np.nan
    upperbit = np.int64(high >> _U63)
    shift = np.uint64(upperbit + 9)
    mantissa = high >> shift
    power2 = ((217706 * q) >> 16) + 63 + upperbit - lz + 1023
    if power2 <= 0:
        return np.nan
    if low <= _U1 and -4 <= q <= 23 and (mantissa & np.uint64(3)) == _U1:
        if (mantissa << shift) == high:
            mantissa = mantissa & ~_U1  # exactly halfway: round to even
    mantissa = (mantissa + (mantissa & _U1)) >> _U1
    if mantissa >= _BIT53:
        mantissa = _BIT52
        power2 += 1
    if power2 >= 0x7FF:
        return np.nan
    return math.ldexp(float(mantissa), power2 - 1075)


@njit(cache=True, nogil=True)
def _parse_number(buf, pos, end, pow10, pow5):
    """Parse a number at ``pos``; return ``(value, new_pos, status)``.

    Status ST_FAST: ``value`` is exact (correctly rounded). ST_SLOW: the syntax is valid
    but the value must come from Python's float() (``value`` is 0). ST_BAD: not a number
    (``new_pos`` is where parsing stopped). ST_NANINF: a nan / inf literal.
    The caller checks that the token ends at ``new_pos``.
    """
    neg = False
    if pos < end and (buf[pos] == 43 or buf[pos] == 45):
        neg = buf[pos] == 45
        pos += 1
    if pos < end:
        c = buf[pos] | 32
        if c == 110 or c == 105:  # n, i
            if pos + 2 < end:
                c1 = buf[pos + 1] | 32
                c2 = buf[pos + 2] | 32
                if (c == 110 and c1 == 97 and c2 == 110) or (c == 105 and c1 == 110 and c2 == 102):
                    return 0.0, pos, ST_NANINF
            return 0.0, pos, ST_BAD
    # Digits accumulate unchecked: beyond _MAX_DIGITS significant digits ``mant`` may
    # wrap, but it is then never used (the token goes to the slow path).
    mant = 0
    exp10 = 0
    int_start = pos
    while pos < end and buf[pos] == 48:
        pos += 1
    sig_start = pos
    mant, pos = _accumulate_digits(buf, pos, end, mant)
    n_sig = pos - sig_start
    n_digits = pos - int_start
    if pos < end and buf[pos] == 46:  # '.'
        pos += 1
        frac_start = pos
        if n_sig == 0:
            while pos < end and buf[pos] == 48:
                pos += 1
        sig_start = pos
        mant, pos = _accumulate_digits(buf, pos, end, mant)
        n_sig += pos - sig_start
        n_digits += pos - frac_start
        exp10 = frac_start - pos
    slow = n_sig > _MAX_DIGITS
    if n_digits == 0:
        return 0.0, pos, ST_BAD
    if pos < end and (buf[pos] | 32) == 101:  # e, E
        pos += 1
        eneg = False
        if pos < end and (buf[pos] == 43 or buf[pos] == 45):
            eneg = buf[pos] == 45
            pos += 1
        e = 0
        n_exp = 0
        while pos < end and _is_digit(buf[pos]):
            if e < 100000:
                e = e * 10 + (buf[pos] - 48)
            n_exp += 1
            pos += 1
        if n_exp == 0:
            return 0.0, pos, ST_BAD
        exp10 += -e if eneg else e
    if mant == 0 and not slow:
        return (-0.0 if neg else 0.0), pos, ST_FAST
    if slow:
        return 0.0, pos, ST_SLOW
    if mant < _TWO53 and -22 <= exp10 <= 22:
        value = float(mant)  # exact, and so is the power: one correctly rounded operation
        if exp10 >= 0:
            value = value * pow10[exp10]
        else:
            value = value / pow10[-exp10]
    else:
        value = _eisel_lemire(np.uint64(mant), exp10, pow5)
        if value != value:
            return 0.0, pos, ST_SLOW
    return (-value if neg else value), pos, ST_FAST


@njit(cache=True, nogil=True)
def _token_end(buf, pos, end):
    while pos < end and not _ends_token(buf[pos]):
        pos += 1
    return pos


@njit(cache=True, nogil=True)
def _sift_down(keys, order, root, stop):
    while True:
        child = 2 * root + 1
        if child >= stop:
            return
        if child + 1 < stop and keys[order[child + 1]] > keys[order[child]]:
            child += 1
        if keys[order[root]] >= keys[order[child]]:
            return
        order[root], order[child] = order[child], order[root]
        root = child


@njit(cache=True, nogil=True)
def _sort_row(indices, values, slow, a, b, slow_from, slow_to):
    """Sort ``indices[a:b]`` (with ``values``); return a repeated index or -1.

    A heap sort of positions (O(k log k), no recursion, quick to compile). Slow-token
    records of the row point at output slots; they follow the permutation.
    """
    n = b - a
    keys = indices[a:b].copy()
    val = values[a:b].copy()
    order = np.arange(n)
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(keys, order, root, n)
    for stop in range(n - 1, 0, -1):
        order[0], order[stop] = order[stop], order[0]
        _sift_down(keys, order, np.int64(0), stop)  # not a literal 0: one specialization
    inverse = np.empty(n, np.int64)
    for j in range(n):
        indices[a + j] = keys[order[j]]
        values[a + j] = val[order[j]]
        inverse[order[j]] = j
    for s in range(slow_from, slow_to):
        slow[s, 2] = a + inverse[slow[s, 2] - a]
    for j in range(a + 1, b):
        if indices[j] == indices[j - 1]:
            return indices[j]
    return -1


@njit(cache=True, nogil=True)
def _find_class(fstate, n_classes, label, hint):
    """Index j of ``label`` in the class table ``fstate[N_FSTATE:]``, or -1; tries ``hint``
    first (labels often come in runs)."""
    if hint < n_classes and fstate[N_FSTATE + hint] == label:
        return hint
    for j in range(n_classes):
        if fstate[N_FSTATE + j] == label:
            return j
    return -1


@njit(cache=True, nogil=True)
def parse_lines(buf, end, state, fstate, y, indptr, indices, values, slow, pow10, pow5):
    """Parse complete lines of ``buf[state[S_POS]:end]`` into the current block.

    ``end`` is the end of a line or of the input. Outputs: ``y`` (int8 codes, -1 for the
    first label value seen and +1 for the other, or fixed by the classes; multiclass:
    int32 indices into the class table, in order of appearance or fixed), ``indptr``
    (``indptr[0] == 0``), ``indices`` (int32, zero-based), ``values`` (float64) and
    ``slow`` (tokens for Python's float()). Returns a code; ``state`` says where it stopped.
    """
    pos = state[S_POS]
    rows = state[S_ROWS]
    nnz = state[S_NNZ]
    line = state[S_LINE]
    nslow = state[S_NSLOW]
    max_raw = state[S_MAX_RAW]
    max_line = state[S_MAX_LINE]
    max_col = state[S_MAX_COL]
    base = state[S_BASE]
    auto = state[S_AUTO]
    limit = state[S_LIMIT]
    row_limit = state[S_ROW_LIMIT]
    nnz_limit = state[S_NNZ_LIMIT]
    n_classes = state[S_N_CLASSES]
    fixed = state[S_FIXED]
    multiclass = state[S_MULTICLASS]
    float32 = state[S_FLOAT32]
    last_class = np.int64(0)  # not a literal 0: one specialization of _find_class
    override_pos = state[S_OVERRIDE_POS]
    repaired = state[S_REPAIRED]
    c0 = fstate[F_C0]
    c1 = fstate[F_C1]
    rows_cap = y.shape[0]
    nnz_cap = indices.shape[0]
    slow_cap = slow.shape[0]

    code = DONE
    err_pos = -1
    err_arg = 0
    space = 0
    line_start = pos
    while True:
        if pos >= end:
            break
        line_start = pos
        pos, cr = _skip_blanks(buf, pos, end)
        if pos >= end:
            break
        c = buf[pos]
        if c == 10:
            pos += 1
            line += 1
            continue
        if cr >= 0:
            code = E_CR
            err_pos = cr
            break
        if c == 35:
            pos = _text_end(buf, pos, end)
            if pos < end and buf[pos] == 13:
                code = E_CR
                err_pos = pos
                break
            if pos < end:
                pos += 1
                line += 1
            continue

        # ---- label
        if rows >= rows_cap:
            code = NEED_SPACE
            space = SPACE_ROWS
            pos = line_start
            break
        label_pos = pos
        if pos == override_pos:
            label = fstate[F_OVERRIDE]
            pos = _token_end(buf, pos, end)
            status = ST_FAST
        else:
            label, pos, status = _parse_number(buf, pos, end, pow10, pow5)
        if status == ST_NANINF:
            code = E_LABEL_NANINF
            err_pos = label_pos
            break
        if status == ST_BAD or (pos < end and not _ends_token(buf[pos])):
            code = E_MULTILABEL if (status != ST_BAD and pos < end and buf[pos] == 44) else E_LABEL
            err_pos = label_pos
            break
        if status == ST_SLOW:
            code = NEED_LABEL
            err_pos = label_pos
            err_arg = pos
            pos = line_start
            break
        if multiclass:
            label_code = _find_class(fstate, n_classes, label, last_class)
            if label_code < 0:
                if fixed:
                    code = E_LABEL_CLASS
                    err_pos = label_pos
                    break
                if N_FSTATE + n_classes >= fstate.shape[0]:
                    code = NEED_SPACE
                    space = SPACE_CLASSES
                    pos = line_start
                    break
                fstate[N_FSTATE + n_classes] = label
                label_code = n_classes
                n_classes += 1
            last_class = label_code
        elif fixed:
            if label == c1:
                label_code = 1
            elif label == c0:
                label_code = -1
            else:
                code = E_LABEL_CLASS
                err_pos = label_pos
                break
        elif n_classes == 0:
            c0 = label
            n_classes = 1
            label_code = -1
        elif label == c0:
            label_code = -1
        elif n_classes == 1:
            c1 = label
            n_classes = 2
            label_code = 1
        elif label == c1:
            label_code = 1
        else:
            code = E_MULTICLASS
            err_pos = label_pos
            break

        # ---- features
        row_start = nnz
        slow_start = nslow
        prev = -1
        unsorted = False
        first = True
        while True:
            pos, cr = _skip_blanks(buf, pos, end)
            if pos >= end or buf[pos] == 10:
                break
            if cr >= 0:
                code = E_CR
                err_pos = cr
                break
            if buf[pos] == 35:
                pos = _text_end(buf, pos, end)
                if pos < end and buf[pos] == 13:
                    code = E_CR
                    err_pos = pos
                break
            tok = pos
            if buf[pos] == 113:  # 'q'
                if not (pos + 3 < end and buf[pos + 1] == 105 and buf[pos + 2] == 100
                        and buf[pos + 3] == 58):
                    code = E_QID
                    err_pos = tok
                    break
                if not first:
                    code = E_QID_PLACE
                    err_pos = tok
                    break
                pos += 4
                if pos < end and (buf[pos] == 43 or buf[pos] == 45):
                    pos += 1
                n_dig = 0
                while pos < end and _is_digit(buf[pos]):
                    pos += 1
                    n_dig += 1
                if n_dig == 0 or (pos < end and not _ends_token(buf[pos])):
                    code = E_QID
                    err_pos = tok
                    break
                first = False
                continue
            first = False

            neg = False
            if buf[pos] == 43 or buf[pos] == 45:
                neg = buf[pos] == 45
                pos += 1
            idx = 0
            idx_start = pos
            while pos < end and buf[pos] == 48:
                pos += 1
            sig_start = pos
            idx, pos = _accumulate_digits(buf, pos, end, idx)
            n_dig = pos - idx_start
            if pos - sig_start > 12:  # idx may have wrapped: report it as too large
                idx = 1 << 40
            if n_dig == 0 or pos >= end or buf[pos] != 58:
                has_colon = False
                q = tok
                while q < end and not _ends_token(buf[q]):
                    if buf[q] == 58:
                        has_colon = True
                        break
                    q += 1
                code = E_INDEX if has_colon else E_COLON
                err_pos = tok
                break
            pos += 1
            if neg and idx > 0:
                code = E_INDEX_LOW
                err_pos = tok
                err_arg = -idx
                break
            if idx < base:
                if auto:
                    code = REBASE
                    err_pos = tok
                    break
                code = E_INDEX_LOW
                err_pos = tok
                err_arg = idx
                break
            if idx - base >= INT32_MAX:
                code = E_INDEX_OVERFLOW
                err_pos = tok
                err_arg = idx
                break
            col = idx - base
            if limit >= 0 and col >= limit:
                code = E_INDEX_HIGH
                err_pos = tok
                err_arg = idx
                break
            value_pos = pos
            value, pos, status = _parse_number(buf, pos, end, pow10, pow5)
            if status == ST_NANINF:
                code = E_NANINF
                err_pos = value_pos
                break
            if status == ST_BAD or (pos < end and not _ends_token(buf[pos])):
                code = E_VALUE
                err_pos = value_pos
                break
            if float32 and abs(value) >= _FLOAT32_OVERFLOW:
                code = E_FLOAT32
                err_pos = value_pos
                break
            if col <= prev:
                if col == prev:
                    code = E_DUPLICATE
                    err_pos = tok
                    err_arg = idx
                    break
                unsorted = True
            prev = col
            if nnz >= nnz_cap:
                code = NEED_SPACE
                space = SPACE_NNZ
                break
            if status == ST_SLOW:
                if nslow >= slow_cap:
                    code = NEED_SPACE
                    space = SPACE_SLOW
                    break
                slow[nslow, 0] = value_pos
                slow[nslow, 1] = pos
                slow[nslow, 2] = nnz
                slow[nslow, 3] = line
                slow[nslow, 4] = line_start
                nslow += 1
                value = 0.0
            indices[nnz] = col
            values[nnz] = value
            nnz += 1
            if idx > max_raw:
                max_raw = idx
                max_line = line
                max_col = tok - line_start + 1

        if code == DONE and nnz > INT32_MAX and rows:
            code = BLOCK_FULL  # the block's int32 row pointers end before this row
        if code == NEED_SPACE or code == REBASE or code == BLOCK_FULL:
            pos = line_start
            nnz = row_start
            nslow = slow_start
            break
        if code != DONE:
            break
        if unsorted:
            repaired += 1
            dup = _sort_row(indices, values, slow, row_start, nnz, slow_start, nslow)
            if dup >= 0:
                code = E_DUPLICATE_UNSORTED
                err_pos = line_start
                err_arg = dup + base
                break
        y[rows] = label_code
        rows += 1
        indptr[rows] = nnz
        if pos < end:  # at the newline
            pos += 1
            line += 1
        if rows >= row_limit or nnz >= nnz_limit:
            code = BLOCK_FULL
            break

    state[S_POS] = pos
    state[S_ROWS] = rows
    state[S_NNZ] = nnz
    state[S_LINE] = line
    state[S_LINE_START] = line_start
    state[S_NSLOW] = nslow
    state[S_ERR_POS] = err_pos
    state[S_ERR_ARG] = err_arg
    state[S_MAX_RAW] = max_raw
    state[S_MAX_LINE] = max_line
    state[S_MAX_COL] = max_col
    state[S_N_CLASSES] = n_classes
    state[S_REPAIRED] = repaired
    state[S_SPACE] = space
    fstate[F_C0] = c0
    fstate[F_C1] = c1
    return code


@njit(cache=True, nogil=True)
def last_newline(buf, lo, hi):
    """Index of the last ``\\n`` in ``buf[lo:hi]``, or -1."""
    for i in range(hi - 1, lo - 1, -1):
        if buf[i] == 10:
            return i
    return -1


_CR_TEXT = ("carriage return with more text after it on the line: if lines end in CR alone (old "
            "Mac style), make them newlines first, e.g. tr '\\r' '\\n' < IN > OUT")
_MESSAGES = {
    E_LABEL: "label {tok!r} is not a number",
    E_MULTILABEL: "label {tok!r} is a list of labels (multilabel input is not supported)",
    E_LABEL_NANINF: "label {tok!r} is NaN or infinite",
    E_INDEX: "index in {tok!r} is not a non-negative integer",
    E_COLON: "missing colon in {tok!r} (expected index:value)",
    E_VALUE: "value {tok!r} is not a number",
    E_NANINF: "value {tok!r} is NaN or infinite",
    E_FLOAT32: "value {tok!r} is beyond float32's range: pass value_dtype='float64' (--float64)",
    E_INDEX_OVERFLOW: "index {index} does not fit in 32 bits",
    E_QID: "cannot parse qid {tok!r} (expected qid:<integer>)",
    E_QID_PLACE: "{tok!r}: qid must come right after the label",
    E_CR: _CR_TEXT,
}


class BlockParser:
    """Turn svmlight byte buffers into CSR blocks, handed to ``on_block`` as they fill.

    Parameters
    ----------
    name : str
        Shown in error messages (usually the file name).
    on_block : callable
        ``on_block(indptr, indices, values, y)``: int64 row pointers from 0, int32 zero-based
        indices, float64 values, int8 provisional label codes. The arrays are reused
        afterwards: copy or write them before returning.
    on_rebase : callable, optional
        Called when ``zero_based="auto"`` meets an index 0 after blocks were emitted with
        one-based indices: it must add 1 to the indices of every block emitted so far.
    zero_based : {"auto", True, False}
    n_features : int, optional
        Refuse indices at or beyond this width.
    classes : pair of floats, optional
        The label values coded -1 and +1 (multiclass: any number, sorted: the classes
        0, 1, ...); other labels are refused.
    multiclass : bool
        Accept any number of distinct labels; ``y`` then holds int32 class indices, in
        order of first appearance unless ``classes`` fixes them (see :meth:`classes`).
    block_rows : int, optional
        Rows per block; otherwise a block ends at the first row bringing it to
        ``block_nnz`` nonzeros (or after ``max(block_nnz, 65536)`` rows, so that memory
        stays bounded when rows are nearly empty). Either way a block ends before a row
        that would take it beyond 2**31 - 1 nonzeros (its row pointers are int32).
    block_nnz : int
    value_dtype : {"float64", "float32"}
        The type the values will be stored in: with float32, a value beyond its range is
        refused (the blocks still hold float64).
    like : str, optional
        The store ``n_features`` and ``classes`` were taken from, named by the errors they
        cause.
    parallel : bool, optional
        Parse a feed of :data:`SPLIT_BYTES` or more in two halves at once (:meth:`feed`);
        default: when the process may run on two cores or more. The blocks are the same
        either way.
    """

    def __init__(self, name, on_block, on_rebase=None, *, zero_based="auto", n_features=None,
                 classes=None, multiclass=False, block_rows=None, block_nnz=1 << 19,
                 value_dtype="float64", like=None, parallel=None):
        if not (zero_based == "auto" if isinstance(zero_based, str)
                else zero_based in (True, False)):
            raise ValueError(f"zero_based must be 'auto', True or False, got {zero_based!r}")
        auto = isinstance(zero_based, str)
        for option, value in (("block_rows", block_rows), ("block_nnz", block_nnz)):
            if value is not None:
                check_block_size(value, option)
        if n_features is not None:
            check_n_features(n_features)
        if classes is not None and not np.all(np.isfinite(np.asarray(classes, np.float64))):
            raise ValueError(f"classes must be finite numbers, got {classes!r}")
        if np.dtype(value_dtype) not in (np.float32, np.float64):
            raise ValueError(f"value_dtype must be float32 or float64, got {value_dtype!r}")
        self.name = str(name)
        self._like = "" if like is None else f" {like} (like= / --like)"
        self._on_block = on_block
        self._on_rebase = on_rebase
        self.zero_based_option = zero_based
        self.n_features_limit = n_features
        self.rebase_line = None
        self.n_blocks = 0
        self.n_samples = 0
        self.nnz = 0
        st = np.zeros(N_STATE, np.int64)
        st[S_MAX_RAW] = -1
        st[S_BASE] = 1 if auto or not zero_based else 0
        st[S_AUTO] = 1 if auto else 0
        st[S_LIMIT] = -1 if n_features is None else int(n_features)
        if block_rows is not None:
            st[S_ROW_LIMIT] = int(block_rows)
            st[S_NNZ_LIMIT] = np.iinfo(np.int64).max
            rows_cap = int(block_rows)
            nnz_cap = min(int(block_rows) * 64, 1 << 22)
        else:
            rows_cap = max(int(block_nnz), MIN_ROW_CAP)
            st[S_ROW_LIMIT] = rows_cap
            st[S_NNZ_LIMIT] = int(block_nnz)
            nnz_cap = int(block_nnz) + 1024
        st[S_OVERRIDE_POS] = -1
        fst = np.zeros(N_FSTATE + (64 if multiclass else 0), np.float64)
        st[S_MULTICLASS] = 1 if multiclass else 0
        st[S_FLOAT32] = 1 if np.dtype(value_dtype) == np.float32 else 0
        if classes is not None and multiclass:
            table = np.unique(np.asarray(classes, np.float64))
            if len(table) != len(classes) or len(table) < 2:
                raise ValueError(f"classes must be two or more distinct values, got {classes!r}")
            fst = np.concatenate([fst[:N_FSTATE], table])
            st[S_FIXED] = 1
            st[S_N_CLASSES] = len(table)
        elif classes is not None:
            if len(classes) != 2 or float(classes[0]) == float(classes[1]):
                raise ValueError(f"classes must be two distinct values, got {classes!r}")
            st[S_FIXED] = 1
            st[S_N_CLASSES] = 2
            fst[F_C0], fst[F_C1] = float(classes[0]), float(classes[1])
        self._state = st
        self._fstate = fst
        # Rows of a block never exceed rows_cap (the row limit); nonzero and slow-token
        # capacities grow when a single line needs more.
        self._y = np.empty(rows_cap, np.int32 if multiclass else np.int8)
        self._indptr = np.zeros(rows_cap + 1, np.int64)
        self._indices = np.empty(nnz_cap, np.int32)
        self._values = np.empty(nnz_cap, np.float64)
        self._slow = np.empty((1024, N_SLOW_FIELDS), np.int64)
        self.parallel = cores() >= 2 if parallel is None else bool(parallel)
        self._lane = None  # the second half's parse (_Lane), its arrays kept between feeds
        self.split_feeds = 0  # feeds whose halves were parsed at once, the second's taken
        self._share = 0.5  # of a split feed, the part parsed here (see feed)

    # -- results ---------------------------------------------------------------------------
    @property
    def zero_based(self):
        """The index base in effect (for "auto": True once an index 0 was seen)."""
        return bool(self._state[S_BASE] == 0)

    @property
    def repaired_rows(self):
        """Rows whose indices were out of order and were sorted."""
        return int(self._state[S_REPAIRED])

    @property
    def lines(self):
        """Lines consumed so far (all of them: blank and comment lines too)."""
        return int(self._state[S_LINE])

    @property
    def n_features(self):
        """The fixed width, or the largest index seen + 1."""
        if self.n_features_limit is not None:
            return int(self.n_features_limit)
        return max(int(self._state[S_MAX_RAW] - self._state[S_BASE]) + 1, 0)

    def classes(self):
        """``(classes, flip)``: the label values standing for -1 and +1, and whether the
        provisional codes of the emitted blocks must be negated to match them.

        Multiclass: ``(classes, new_index)``, the distinct labels sorted and, for each
        provisional class index of the emitted blocks, its index in them.
        """
        st, fst = self._state, self._fstate
        if self.n_samples + st[S_ROWS] == 0:  # also with fixed classes: no empty stores
            raise SvmlightFormatError(f"{self.name}: no data lines (nothing but blank lines "
                                      f"and comments)")
        if st[S_MULTICLASS]:
            table = fst[N_FSTATE:N_FSTATE + st[S_N_CLASSES]] + 0.0  # -0.0 -> 0.0
            if len(table) < 2:
                raise SvmlightFormatError(f"{self.name}: every label is {table[0]:g}: a "
                                          f"multiclass store needs two classes or more")
            order = np.argsort(table, kind="stable")
            new_index = np.empty(len(table), np.int32)
            new_index[order] = np.arange(len(table))
            return tuple(float(c) for c in table[order]), new_index
        if st[S_FIXED]:
            return (float(fst[F_C0]), float(fst[F_C1])), False
        first = float(fst[F_C0]) + 0.0  # -0.0 -> 0.0
        if st[S_N_CLASSES] == 1:
            if first not in (-1.0, 1.0):
                raise SvmlightFormatError(
                    f"{self.name}: every label is {first:g}: cannot tell which class it is "
                    f"(pass like= / --like a store converted from the training file, or "
                    f"classes=)")
            return (-1.0, 1.0), first == 1.0
        second = float(fst[F_C1]) + 0.0
        return ((first, second), False) if first < second else ((second, first), True)

    # -- parsing ---------------------------------------------------------------------------
    def feed(self, buf, end):
        """Parse ``buf[:end]``: whole lines, except that the last line of the input may
        lack its newline. Calls ``on_block`` for every block completed.

        In parallel (``parallel``), a feed of :data:`SPLIT_BYTES` or more is cut in two at
        a newline: a thread parses the second half (a :class:`_Lane`, from the state at
        the feed's start: parse_lines releases the GIL) while this one parses the first
        and hands on its blocks. The second half's rows are then appended to the blocks
        as one parse would have cut them, its labels coded as one parse would have, if
        its parse is the one the state after the first half gives (see :meth:`_merge`);
        otherwise, rarely (a switch to zero-based, a label or value for Python's float(),
        an error and its message), the second half is parsed again here. The first cut is
        at the middle, each next one where the two threads' rates in the last split feed
        would have them end together (this one also writes the blocks)."""
        if buf.dtype != np.uint8 or buf.ndim != 1:
            raise TypeError("buf must be a 1-d uint8 array")
        if not (buf.flags.writeable and buf.flags.c_contiguous):
            buf = np.ascontiguousarray(buf[:end]).copy()  # one compiled signature only
        end = min(int(end), buf.shape[0])
        st = self._state
        st[S_POS] = 0
        st[S_OVERRIDE_POS] = -1
        # (a nonzero takes 2 bytes or more: the block cannot pass int32's nonzeros here)
        split = self.parallel and SPLIT_BYTES <= end < INT32_MAX - st[S_NNZ]
        mid = last_newline(buf, 0, int(end * self._share)) + 1 if split else 0
        if mid:
            if self._lane is None:
                self._lane = _Lane(self._y.dtype)
            self._lane.start(buf, mid, end, st, self._fstate)
            try:
                began = time.perf_counter()
                self._parse(buf, mid)
                ours = time.perf_counter() - began
            finally:
                self._lane.join()
            if self._merge(buf, end, self._lane):
                # the next share: each side's bytes per second so far, so that both end
                # together (this side also hands on the blocks: its rate is the lower)
                rate = mid / max(ours, 1e-9)
                lane_rate = (end - mid) / max(self._lane.seconds, 1e-9)
                self._share = min(max(rate / (rate + lane_rate), 0.25), 0.75)
                return
        self._parse(buf, end)

    def _parse(self, buf, end):
        """Parse ``buf[state's position:end]`` into the blocks."""
        st = self._state
        while True:
            st[S_NSLOW] = 0
            code = parse_lines(buf, end, st, self._fstate, self._y, self._indptr,
                               self._indices, self._values, self._slow, _POW10, _POW5_128)
            self._resolve_slow(buf, end)
            if code == DONE:
                return
            if code == BLOCK_FULL:
                self._emit()
            elif code == NEED_SPACE:
                self._grow(int(st[S_SPACE]))
            elif code == NEED_LABEL:
                start, stop = int(st[S_ERR_POS]), int(st[S_ERR_ARG])
                value = float(buf[start:stop].tobytes())
                if not math.isfinite(value):
                    raise self._error(buf, end, E_LABEL_NANINF)
                st[S_OVERRIDE_POS] = start
                self._fstate[F_OVERRIDE] = value
            elif code == REBASE:
                self._rebase()
            else:
                raise self._error(buf, end, code)

    def _merge(self, buf, end, lane):
        """Take the lane's parse of ``buf[mid:end]`` after the first half's: its rows
        appended to the blocks, its counts to the state, its labels to the class table as
        one parse would have met them (the first half's, then the lane's new ones in its
        order; the lane's codes mapped onto them). False, with nothing changed, when the
        lane's parse is not the one the state after the first half gives: it stopped
        before ``end`` (an error, a label for Python's float(), index 0 while one-based),
        a value for Python's float() is out of range, the first half changed the index
        base, or the two halves together hold a third label of a binary input."""
        st, ls = self._state, lane.state
        if lane.code != DONE or ls[S_BASE] != st[S_BASE]:
            return False
        multiclass = bool(st[S_MULTICLASS])
        start = N_FSTATE if multiclass else F_C0
        table = self._fstate[start:start + st[S_N_CLASSES]].tolist()
        theirs = lane.fstate[start:start + ls[S_N_CLASSES]].tolist()
        table += [label for label in theirs if label not in table]  # by ==, as parse_lines
        if len(table) > 2 and not multiclass:
            return False
        for s in range(int(ls[S_NSLOW])):
            token_start, token_end, slot = (int(v) for v in lane.slow[s, :3])
            value = float(buf[token_start:token_end].tobytes())
            if not math.isfinite(value) or (st[S_FLOAT32] and abs(value) >= _FLOAT32_OVERFLOW):
                return False  # the error is raised, with its line, by the parse again
            lane.values[slot] = value
        codes = [table.index(label) for label in theirs]
        if codes != list(range(len(theirs))):
            y = lane.y[:int(ls[S_ROWS])]
            if multiclass:
                y[:] = np.array(codes, y.dtype)[y]
            else:  # two labels, the lane's first is the table's second: codes swapped
                np.negative(y, out=y)
        while start + len(table) > self._fstate.shape[0]:
            self._grow(SPACE_CLASSES)
        self._fstate[start:start + len(table)] = table
        st[S_N_CLASSES] = len(table)
        if ls[S_MAX_RAW] > st[S_MAX_RAW]:  # ties: the first half's, seen first
            st[S_MAX_RAW] = ls[S_MAX_RAW]
            st[S_MAX_LINE] = st[S_LINE] + ls[S_MAX_LINE]
            st[S_MAX_COL] = ls[S_MAX_COL]
        st[S_LINE] += ls[S_LINE]
        st[S_REPAIRED] += ls[S_REPAIRED]
        st[S_POS] = end
        self._append(lane)
        self.split_feeds += 1
        return True

    def _append(self, lane):
        """Append the lane's rows to the blocks, ending a block where parse_lines would:
        after the row that brings it to the row or nonzero limit. (The feed was split
        only if its nonzeros cannot take the block beyond int32's.)"""
        st, ptr, n = self._state, lane.indptr, int(lane.state[S_ROWS])
        r = 0
        while r < n:
            rows, nnz, base = int(st[S_ROWS]), int(st[S_NNZ]), int(ptr[r])
            ends = ptr[r + 1:n + 1]  # ends[k]: the lane's nonzeros up to row r + k, included
            at_least = int(st[S_NNZ_LIMIT]) - nnz + base  # the block's limit, in the lane
            by_nnz = int(np.searchsorted(ends, at_least)) if at_least <= ends[-1] else n - r
            fills = min(int(st[S_ROW_LIMIT]) - rows - 1, by_nnz)  # the row that fills it
            stop = min(r + fills + 1, n)
            m, last = stop - r, int(ptr[stop])
            while nnz + last - base > self._indices.shape[0]:
                self._grow(SPACE_NNZ)
            self._y[rows:rows + m] = lane.y[r:stop]
            self._indptr[rows + 1:rows + m + 1] = ptr[r + 1:stop + 1] - (base - nnz)
            self._indices[nnz:nnz + last - base] = lane.indices[base:last]
            self._values[nnz:nnz + last - base] = lane.values[base:last]
            st[S_ROWS], st[S_NNZ] = rows + m, nnz + last - base
            if fills < n - r:
                self._emit()
            r = stop

    def refuse_cr(self, buf, end):
        """If ``buf[:end]``, the start of the next line to parse (no newline in it yet),
        holds a carriage return with more text after it, raise the error :meth:`feed` would
        raise once the line is whole: the line's first, the CR's at the latest (if lines end
        in CR alone, the rest of the file may be one line, read into memory first)."""
        if _text_end(buf, 0, end) < end:
            self.feed(buf, end)  # parses to the line's first error, the CR at the latest

    def finish(self):
        """Emit the last, partial block."""
        if self._state[S_ROWS]:
            self._emit()

    def _emit(self):
        st = self._state
        rows, nnz = int(st[S_ROWS]), int(st[S_NNZ])
        self._on_block(self._indptr[:rows + 1], self._indices[:nnz], self._values[:nnz],
                       self._y[:rows])
        self.n_blocks += 1
        self.n_samples += rows
        self.nnz += nnz
        st[S_ROWS] = 0
        st[S_NNZ] = 0

    def _grow(self, what):
        if what == SPACE_NNZ:
            self._indices = _double(self._indices)
            self._values = _double(self._values)
        elif what == SPACE_SLOW:
            self._slow = _double(self._slow)
        elif what == SPACE_CLASSES:
            self._fstate = _double(self._fstate)
        else:  # pragma: no cover - rows never exceed the row limit, which is the capacity
            raise AssertionError("row capacity exceeded")

    def _rebase(self):
        st = self._state
        st[S_BASE] = 0
        st[S_AUTO] = 0
        self.rebase_line = int(st[S_LINE]) + 1
        # the largest index read one-based is now one column further right
        limit, max_raw = int(st[S_LIMIT]), int(st[S_MAX_RAW])
        problem = ("does not fit in 32 bits" if max_raw >= INT32_MAX else
                   f">= n_features={limit}" if 0 <= limit <= max_raw else None)
        if problem:
            raise SvmlightFormatError(
                self._where(int(st[S_MAX_LINE]), int(st[S_MAX_COL])) + f"index {max_raw} "
                f"{problem} (the file is zero-based: index 0 appears at line {self.rebase_line})")
        nnz = int(st[S_NNZ])
        self._indices[:nnz] += 1
        if self.n_blocks and self._on_rebase is not None:
            self._on_rebase()

    def _resolve_slow(self, buf, end):
        """Values outside the exact fast path: Python's float(), correctly rounded."""
        st = self._state
        n = int(st[S_NSLOW])
        for s in range(n):
            start, stop, slot, line, line_start = (int(v) for v in self._slow[s])
            value = float(buf[start:stop].tobytes())
            code = (E_NANINF if not math.isfinite(value) else
                    E_FLOAT32 if st[S_FLOAT32] and abs(value) >= _FLOAT32_OVERFLOW else None)
            if code is not None:
                raise SvmlightFormatError(self._where(line, start - line_start + 1) +
                                          _MESSAGES[code].format(tok=_token(buf, start, end)))
            self._values[slot] = value
        st[S_NSLOW] = 0

    def _where(self, line0, col):
        return f"{self.name}: line {line0 + 1}, column {col}: "

    def _error(self, buf, end, code):
        st = self._state
        pos, arg = int(st[S_ERR_POS]), int(st[S_ERR_ARG])
        line0, line_start = int(st[S_LINE]), int(st[S_LINE_START])
        tok = _token(buf, pos, end)
        base = int(st[S_BASE])
        if code == E_DUPLICATE_UNSORTED:
            pos = _find_duplicate(buf, line_start, end, arg)
            code = E_DUPLICATE
            tok = _token(buf, pos, end)
        if code == E_VALUE and not tok:
            what = "missing value after the colon"
        elif code == E_LABEL and ":" in tok:
            what = f"label {tok!r} is not a number (is the label missing?)"
        elif code in _MESSAGES:  # the index as written: a long one wrapped in ``arg``
            what = _MESSAGES[code].format(tok=tok, arg=arg, index=tok.split(":")[0])
        elif code == E_INDEX_LOW:
            index = tok.split(":")[0]
            what = (f"index {index} < 0" if base == 0 or arg < 0 else
                    f"index {index} < 1 in one-based mode (use zero_based=True / --zero-based "
                    f"yes for zero-based files)")
        elif code == E_INDEX_HIGH:
            limit = int(st[S_LIMIT])
            what = (f"index {arg} is beyond n_features={limit} (indices {base}.."
                    f"{limit - 1 + base}, {'zero' if base == 0 else 'one'}-based)")
            if self._like:
                what += (f", the width of{self._like}: convert the training file with a "
                         f"larger n_features (--n-features)")
        elif code == E_DUPLICATE:
            what = f"index {tok.split(':')[0]} appears twice in the row"
        elif code == E_MULTICLASS:
            c0, c1 = self._fstate[F_C0], self._fstate[F_C1]
            what = (f"third distinct label {tok!r} (seen {c0:g} and {c1:g}): for multiclass "
                    f"input pass multiclass=True (--multiclass)")
        elif code == E_LABEL_CLASS and self._state[S_MULTICLASS]:
            table = self._fstate[N_FSTATE:N_FSTATE + self._state[S_N_CLASSES]]
            shown = ", ".join(f"{c:g}" for c in table[:10]) + (", ..." if len(table) > 10 else "")
            what = f"label {tok!r} is none of the {len(table)} classes ({shown})"
        elif code == E_LABEL_CLASS:
            c0, c1 = self._fstate[F_C0], self._fstate[F_C1]
            what = f"label {tok!r} is neither of the classes ({c0:g}, {c1:g})"
        else:  # pragma: no cover
            what = f"parse error {code}"
        if code == E_LABEL_CLASS and self._like:
            what += f" of{self._like}"
        return SvmlightFormatError(self._where(line0, pos - line_start + 1) + what)


class _Lane:
    """A parse of the second half of a feed (``BlockParser.feed``) on a thread of its
    own, into arrays of its own (kept for the next feed, grown as needed), from a copy of
    the parser's state at the feed's start: one block without row or nonzero limit, its
    lines, largest index and repaired rows counted from 0. ``code`` is parse_lines'
    last: DONE if it reached the end; ``seconds`` the parse's wall time."""

    def __init__(self, label_dtype):
        self.y = np.empty(1 << 16, label_dtype)
        self.indptr = np.zeros((1 << 16) + 1, np.int64)
        self.indices = np.empty(1 << 20, np.int32)
        self.values = np.empty(1 << 20, np.float64)
        self.slow = np.empty((1024, N_SLOW_FIELDS), np.int64)
        self._thread = None

    def start(self, buf, start, end, state, fstate):
        st = state.copy()
        st[S_POS] = start
        for slot in (S_ROWS, S_NNZ, S_LINE, S_NSLOW, S_REPAIRED, S_MAX_LINE, S_MAX_COL):
            st[slot] = 0
        st[S_MAX_RAW] = -1
        st[S_ROW_LIMIT] = st[S_NNZ_LIMIT] = np.iinfo(np.int64).max
        self.state, self.fstate, self.code = st, fstate.copy(), None
        self._thread = threading.Thread(target=self._run, args=(buf, end), daemon=True,
                                        name="streamssvm-parse")
        self._thread.start()

    def _run(self, buf, end):
        began = time.perf_counter()
        self._parse(buf, end)
        self.seconds = time.perf_counter() - began

    def _parse(self, buf, end):
        while True:
            code = parse_lines(buf, end, self.state, self.fstate, self.y, self.indptr,
                               self.indices, self.values, self.slow, _POW10, _POW5_128)
            if code != NEED_SPACE:
                self.code = code
                return
            space = self.state[S_SPACE]
            if space == SPACE_ROWS:
                self.y = _double(self.y)
                self.indptr = _double(self.indptr)
            elif space == SPACE_NNZ:
                self.indices = _double(self.indices)
                self.values = _double(self.values)
            elif space == SPACE_SLOW:
                self.slow = _double(self.slow)
            else:  # SPACE_CLASSES
                self.fstate = _double(self.fstate)

    def join(self):
        self._thread.join()
        self._thread = None


def _double(a):
    """``a`` and as many zeros after it: an output array grown (parse_lines writes an entry
    before it reads it)."""
    return np.concatenate([a, np.zeros_like(a)])


def _token(buf, pos, end):
    """The text of the token at ``pos`` (for messages), at most 40 characters."""
    stop = pos
    limit = min(end, pos + 40)
    while stop < limit and buf[stop] not in b" \t\r\n\x0b\x0c#":
        stop += 1
    return buf[pos:stop].tobytes().decode("utf-8", "replace")


def _find_duplicate(buf, line_start, end, raw_index):
    """Position of the second ``raw_index:`` pair on the line starting at ``line_start``."""
    stop = line_start
    while stop < end and buf[stop] != 10:
        stop += 1
    text = buf[line_start:stop].tobytes().split(b"#", 1)[0]
    text = text.translate(bytes.maketrans(b"\t\r\x0b\x0c", b"    "))  # same length
    seen = False
    pos = 0
    for token in text.split(b" "):
        if b":" in token and not token.startswith(b"qid"):
            try:
                found = int(token.split(b":", 1)[0]) == raw_index
            except ValueError:
                found = False
            if found:
                if seen:
                    return line_start + pos
                seen = True
        pos += len(token) + 1
    return line_start  # pragma: no cover - the parser found the duplicate on this line


def parse_svmlight_bytes(data, *, zero_based="auto", n_features=None, classes=None,
                         name="<bytes>"):
    """Parse svmlight text held in memory (for tests and small inputs).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), float64, int32 indices
    y : array of shape (n_samples,), int8 in {-1, +1}
    classes : tuple of 2 floats
        The label values mapped to -1 and +1.
    """
    import scipy.sparse as sp

    parts = []

    def shift_parts():
        for part in parts:
            part[1] += 1

    parser = BlockParser(name, lambda *arrays: parts.append([a.copy() for a in arrays]),
                         shift_parts, zero_based=zero_based, n_features=n_features,
                         classes=classes)
    buf = np.frombuffer(bytearray(data), np.uint8)
    parser.feed(buf, buf.shape[0])
    parser.finish()
    classes, flip = parser.classes()
    y = np.concatenate([p[3] for p in parts])
    if flip:
        y = -y
    blocks = [sp.csr_matrix((p[2], p[1], p[0]), shape=(len(p[3]), parser.n_features))
              for p in parts]
    X = sp.vstack(blocks, format="csr")
    X.indices = X.indices.astype(np.int32, copy=False)
    X.indptr = X.indptr.astype(np.int32, copy=False)
    return X, y, classes
