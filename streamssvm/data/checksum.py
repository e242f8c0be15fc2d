"""The checksum a store keeps of each dataset, verified on every read.

Two 64-bit Fletcher sums over the dataset's bytes read as little-endian uint64 words, the
last word padded with zero bytes: for words w_0 .. w_{m-1},

    A = sum_i w_i  (mod 2^64),     B = sum_i (m - i) w_i  (mod 2^64).

Any single flipped bit changes A. Two flipped bits can leave both sums unchanged only if
they are the same bit k of words i and j with 2^(64 - k) dividing j - i (the top bits of
two words an even number of words apart, say); larger damage (a garbled sector) goes
unnoticed only if it happens to leave both sums as they were. Numba computes both sums in
one pass, two additions a 64-bit word with the modulus the integers' own wrap-around, so
it runs at memory speed; HDF5's Fletcher-32 filter takes 16-bit words and reduces modulo
65535, four times the steps for the same bytes (tools/bench_checksums.py measures both).
Plain numpy gives the same numbers (``w.sum()`` and ``(w * arange(m, 0, -1)).sum()`` in
uint64), so any reader can verify a store.
"""

import sys

import numpy as np
from numba import njit

ALGORITHM = "fletcher64"  # the store's ``checksum`` attribute names it
SELF = "attributes_checksum"  # the attribute holding the checksum of the others


@njit(cache=True, nogil=True)
def _fletcher64(words, tail):
    a = np.uint64(0)
    b = np.uint64(0)
    for i in range(words.shape[0]):
        a += words[i]
        b += a
    if tail.shape[0]:
        last = np.uint64(0)
        for j in range(tail.shape[0]):
            last |= np.uint64(tail[j]) << np.uint64(8 * j)
        a += last
        b += a
    return a, b


def checksum(array):
    """The ``(A, B)`` sums above of a C-contiguous array's bytes, as uint64 array of shape (2,)."""
    raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    whole = raw.shape[0] - raw.shape[0] % 8
    words = raw[:whole].view(np.uint64)
    if sys.byteorder == "big":
        words = words.byteswap()
    elif not words.flags.aligned:  # a view into a buffer at an odd offset
        words = words.copy()
    # read-only views whatever the array: numba compiles one specialization, not two
    words, tail = words.view(), raw[whole:]
    words.flags.writeable = tail.flags.writeable = False
    return np.array(_fletcher64(words, tail), np.uint64)


def digest(arrays):
    """A hex string naming the contents of ``arrays`` (any iterable, taken in order, each
    array checksummed when it comes): the checksum of their checksums."""
    return checksum(np.concatenate([checksum(a) for a in arrays])).tobytes().hex()


def attributes_checksum(attributes):
    """The checksum of a file's attributes (a mapping of names to values), that of
    ``SELF`` left out: names in sorted order, each followed by a NUL byte, its value's
    bytes (UTF-8 for a string, variable or fixed length; the array's bytes for numbers)
    and a NUL byte.

    HDF5 checksums an object header but not the heap where a group with many attributes
    keeps their values: without this, a flipped bit in ``n_features`` or ``classes`` would
    go unnoticed.
    """
    parts = []
    for name in sorted(attributes):
        if name != SELF:
            value = attributes[name]
            raw = (value.encode() if isinstance(value, str) else bytes(value)
                   if isinstance(value, bytes) else np.asarray(value).tobytes())
            parts += [name.encode(), b"\0", raw, b"\0"]
    return checksum(np.frombuffer(b"".join(parts), np.uint8))
