"""Formats of the sparse family (docs/sparse.md section 2): encode/decode, stream words,
descriptor. Field positions are worked out by hand from the contract's layouts."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.models import sparse as S
from lockstep.models.sparse.params import SparseParams

P = SparseParams()  # rb = cb = 4, kb = 2, dw = ww = ow = 8


def test_encode_decode_round_trip(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        h, w = rng.integers(1, 9, 2)
        X = rng.integers(-128, 128, (h, w)) * (rng.random((h, w)) < rng.random())
        sf = S.encode(X, org=(3, 5))
        assert (sf.org_row, sf.org_col, sf.h, sf.w) == (3, 5, h, w)
        assert sf.nnz == np.count_nonzero(X)
        assert all(v != 0 for _, _, v in sf.entries)
        lin = [r * w + c for r, c, _ in sf.entries]
        assert lin == sorted(set(lin))  # strict raster order
        assert np.array_equal(S.decode(sf), X)
        dense = S.encode(X, dense=True)
        assert [(r, c) for r, c, _ in dense.entries] == [(r, c) for r in range(h) for c in range(w)]
        assert np.array_equal(S.decode(dense), X)


def test_encode_by_hand():
    X = np.array([[0, 5, 0], [-2, 0, 7]])
    sf = S.encode(X)
    assert sf.entries == [(0, 1, 5), (1, 0, -2), (1, 2, 7)]
    assert sf.desc == S.Desc(0, 0, 2, 3, 3, 0)
    empty = S.encode(np.zeros((2, 2), dtype=int))
    assert empty.entries == [] and empty.nnz == 0
    assert np.array_equal(S.decode(empty), np.zeros((2, 2)))


def test_decode_rejects_bad_entries():
    with pytest.raises(ValueError):
        S.decode(S.SubFM(0, 0, 2, 2, [(2, 0, 1)]))
    with pytest.raises(ValueError):
        S.decode(S.SubFM(0, 0, 2, 2, [(0, 1, 1), (0, 1, 2)]))
    with pytest.raises(ValueError):
        S.encode(np.ones(3))
    with pytest.raises(ValueError):
        S.encode(np.ones((2, 2)) * 0.5)


def test_data_word_fields_by_hand():
    # {LAST[16], ROW[15:12], COL[11:8], VAL[7:0]}
    assert S.pack_data([(3, 5, -2)], P) == [0x10000 | 0x3000 | 0x500 | 0xFE]
    assert S.pack_data([(3, 5, -2, False)], P) == [0x035FE]
    assert S.pack_data([(15, 15, 127), (0, 0, -128)], P) == [0x0FF7F, 0x10080]
    assert S.unpack_data([0x135FE], P) == [(3, 5, -2, True)]


def test_weight_and_out_word_fields_by_hand():
    # weights {LAST[12], A[11:10], B[9:8], W[7:0]}
    assert S.pack_weights([(2, 1, -128, False)], P) == [0x980]
    assert S.pack_weights([(1, 2, 1)], P) == [0x1000 | 0x400 | 0x200 | 0x01]
    assert S.unpack_weights([0x1601], P) == [(1, 2, 1, True)]
    # out with ow = 12: {LAST[20], ROW[19:16], COL[15:12], VAL[11:0]}
    p12 = SparseParams(ow=12)
    assert S.pack_out([(9, 1, -1)], p12) == [0x100000 | 0x90000 | 0x1000 | 0xFFF]
    assert S.unpack_out([0x191FFF], p12) == [(9, 1, -1, True)]


def test_desc_fields_by_hand():
    d = S.Desc(0x123, 0x456, 8, 7, 0x1234, 0)
    assert S.pack_desc(d) == 0x1234560807123400
    assert S.unpack_desc(0x1234560807123400) == d
    assert S.unpack_desc(0xFF) == S.Desc(0, 0, 0, 0, 0, 0xFF)
    sf = S.SubFM(1, 2, 3, 4, [(0, 0, 1), (2, 3, -1)])
    assert S.unpack_desc(S.pack_desc(sf)) == S.Desc(1, 2, 3, 4, 2, 0)
    with pytest.raises(ValueError):
        S.pack_desc(S.Desc(4096, 0, 1, 1, 0))
    with pytest.raises(ValueError):
        S.unpack_desc(1 << 64)


def test_last_rules():
    words = S.pack_data([(0, 0, 1), (0, 1, 2), (1, 0, 3)], P)
    assert [w >> 16 for w in words] == [0, 0, 1]  # LAST on entry NNZ-1 only
    assert S.pack_data([], P) == []
    assert [w >> 12 for w in S.pack_weights([(0, 0, 1), (1, 1, 2)], P)] == [0, 1]


@pytest.mark.parametrize("kind", ["data", "weights", "out"])
def test_word_round_trip(kind, seed):
    params = SparseParams(kmax=5, hmax=13, wmax=6, dw=5, ww=11, ow=9, accw=32)
    rng = np.random.default_rng(seed)
    pack, unpack = getattr(S, f"pack_{kind}"), getattr(S, f"unpack_{kind}")
    ib = {"data": (params.rb, params.cb, params.dw), "weights": (params.kb, params.kb, params.ww),
          "out": (params.rb, params.cb, params.ow)}[kind]
    entries = [(int(rng.integers(0, 1 << ib[0])), int(rng.integers(0, 1 << ib[1])),
                int(rng.integers(-(1 << (ib[2] - 1)), 1 << (ib[2] - 1))), bool(rng.integers(0, 2)))
               for _ in range(300)]
    words = pack(entries, params)
    assert all(0 <= w < 1 << getattr(params, {"data": "data_bits", "weights": "weight_bits", "out": "out_bits"}[kind])
               for w in words)
    assert unpack(words, params) == entries
    assert pack(unpack(words, params), params) == words


def test_pack_rejects_values_that_do_not_fit():
    with pytest.raises(ValueError):
        S.pack_data([(16, 0, 1)], P)  # rb = 4
    with pytest.raises(ValueError):
        S.pack_data([(0, 0, 128)], P)
    with pytest.raises(ValueError):
        S.pack_weights([(4, 0, 1)], P)  # kb = 2
    with pytest.raises(ValueError):
        S.unpack_data([1 << P.data_bits], P)


def test_encode_weights_orders():
    Wk = np.array([[1, 2, 3], [4, 0, 6], [7, 8, 9]])
    assert [(a, b) for a, b, _ in S.encode_weights(Wk)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2),
                                                           (2, 0), (2, 1), (2, 2)]
    assert [(a, b) for a, b, _ in S.encode_weights(Wk, "snake")] == [(0, 0), (0, 1), (0, 2), (1, 2), (1, 0),
                                                                    (2, 0), (2, 1), (2, 2)]
    assert S.encode_weights(np.array([[-6, 6], [3, -9]]), "snake") == [(0, 0, -6), (0, 1, 6), (1, 1, -9),
                                                                       (1, 0, 3)]
    assert len(S.encode_weights(Wk, dense=True)) == 9
    with pytest.raises(ValueError):
        S.encode_weights(np.ones((2, 3), dtype=int))
    with pytest.raises(ValueError):
        S.encode_weights(Wk, "zigzag")
