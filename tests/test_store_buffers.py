"""Transient iteration over a store: blocks read into a ring of reused buffers."""

import numpy as np
import scipy.sparse as sp

from streamssvm.data import InMemorySource, Store, write_store


def test_transient_blocks_equal_fresh_blocks_within_their_window(tmp_path):
    rng = np.random.default_rng(3)
    X = sp.random(3000, 40, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    y = rng.choice([-1, 1], 3000)
    source = InMemorySource(X, y, block_rows=97)  # uneven: 31 blocks, the last short
    path = write_store(tmp_path / "s.h5", source)
    with Store(path) as store:
        fresh = list(store.iter_blocks())
        order = list(range(store.n_blocks))[::-1]
        window = []
        for block in store.iter_blocks(order, transient=True):
            window = (window + [block])[-3:]  # a block stays valid for the next two
            for held in window:
                expected = fresh[held.index]
                assert held.row_start == expected.row_start
                assert (held.to_csr(40) != expected.to_csr(40)).nnz == 0
                np.testing.assert_array_equal(held.y, expected.y)
        assert [b.index for b in store.iter_blocks(order, transient=True)] == order
        # When block m + 2 is handed out, blocks m + 3 and m + 4 are being read: into
        # buffers other than those of m, m + 1 and m + 2 (a race the loop above loses
        # only when the reading thread runs ahead of it, as it once did under load).
        blocks = list(store.iter_blocks(order, transient=True))
        for a, b in zip(blocks, blocks[3:]):
            assert not np.shares_memory(a.data, b.data)
        for a, b in zip(blocks, blocks[4:]):
            assert not np.shares_memory(a.data, b.data)
