"""Write-side checks of the memory unit and the weight memory (docs/sparse.md section 7).

Every expectation (entries stored, bits raised) is worked out by hand from the table of
section 7 and the check priority the contract fixes there."""

from __future__ import annotations

import pytest

from lockstep.models import sparse as S
from lockstep.models.sparse.params import SparseParams
from lockstep.models.sparse import MEM_ERR, W_ERR

P = SparseParams()  # hmax = wmax = 8, depth = 64, kmax = 3


def bits(*names: str, table=MEM_ERR) -> int:
    out = 0
    for n in names:
        out |= table[n]
    return out


def test_bit_numbering():
    assert [MEM_ERR[n] for n in ("DESC", "IDX_OOB", "ORDER", "ZERO", "NNZ", "OVERFLOW")] == [1, 2, 4, 8, 16, 32]
    assert [W_ERR[n] for n in ("W_IDX_OOB", "W_DUP", "W_ZERO", "W_OVERFLOW")] == [1, 2, 4, 8]
    assert S.err_names(0b101, SparseParams.MEM_ERR_NAMES) == ["DESC", "ORDER"]


def test_clean_load_and_words_agree():
    sf = S.encode([[0, 5, 0], [-2, 0, 7]])
    ld = S.load_data(sf, sf.entries, P)
    assert (ld.entries, ld.err, ld.consumed, ld.ended, ld.dropped) == (sf.entries, 0, 3, True, [])
    ldw = S.load_data(S.pack_desc(sf), S.pack_data(sf.entries, P), P)
    assert (ldw.entries, ldw.err) == (sf.entries, 0)


@pytest.mark.parametrize("desc", [S.Desc(0, 0, 0, 4, 2), S.Desc(0, 0, 4, 0, 2), S.Desc(0, 0, 9, 4, 2),
                                  S.Desc(0, 0, 4, 9, 2), S.Desc(0, 0, 4, 4, 2, rsvd=1)])
def test_desc_refuses_the_job(desc):
    ld = S.load_data(desc, [(0, 0, 1), (0, 1, 0)], P)  # would also be ZERO if accepted
    assert (ld.entries, ld.err, ld.consumed, ld.ended, ld.dropped) == ([], bits("DESC"), 2, True, [0, 1])


def test_nnz_zero_is_a_descriptor_only():
    assert (S.load_data(S.Desc(0, 0, 2, 2, 0), [], P).err, S.load_data(S.Desc(0, 0, 2, 2, 0), [], P).ended) == (0, True)
    ld = S.load_data(S.Desc(0, 0, 2, 2, 0), [(0, 0, 1)], P)
    assert (ld.entries, ld.consumed, ld.err) == ([], 0, 0)
    assert S.load_data(S.Desc(0, 0, 0, 2, 0), [], P).err == bits("DESC")


def test_idx_oob_drops():
    ld = S.load_data(S.Desc(0, 0, 2, 3, 3), [(0, 1, 5), (2, 0, 4), (1, 2, -1)], P)
    assert (ld.entries, ld.err, ld.dropped) == ([(0, 1, 5), (1, 2, -1)], bits("IDX_OOB"), [1])
    ld = S.load_data(S.Desc(0, 0, 2, 3, 2), [(0, 3, 4), (1, 0, 1)], P)  # col == W
    assert (ld.entries, ld.err) == ([(1, 0, 1)], bits("IDX_OOB"))


def test_order_drops_against_the_last_stored_entry():
    # linear indices 2, 1 (back), 2 (repeat), 3
    ld = S.load_data(S.Desc(0, 0, 2, 3, 4), [(0, 2, 1), (0, 1, 2), (0, 2, 3), (1, 0, 4)], P)
    assert (ld.entries, ld.err, ld.dropped) == ([(0, 2, 1), (1, 0, 4)], bits("ORDER"), [1, 2])
    # a dropped (out-of-range) entry does not move the order reference
    ld = S.load_data(S.Desc(0, 0, 2, 3, 3), [(0, 1, 1), (3, 0, 2), (0, 2, 3)], P)
    assert (ld.entries, ld.err) == ([(0, 1, 1), (0, 2, 3)], bits("IDX_OOB"))


def test_zero_is_stored():
    ld = S.load_data(S.Desc(0, 0, 1, 3, 2), [(0, 0, 0), (0, 2, 4)], P)
    assert (ld.entries, ld.err) == ([(0, 0, 0), (0, 2, 4)], bits("ZERO"))
    ld = S.load_data(S.Desc(0, 0, 1, 3, 3), [(0, 0, 0), (0, 1, 0), (0, 2, 4)], P, dense=True)
    assert (ld.entries, ld.err) == ([(0, 0, 0), (0, 1, 0), (0, 2, 4)], 0)


def test_nnz_early_last_ends_the_stream():
    stream = [(0, 0, 1, False), (0, 1, 2, True), (0, 2, 3, True)]
    ld = S.load_data(S.Desc(0, 0, 1, 3, 3), stream, P)
    assert (ld.entries, ld.err, ld.consumed, ld.ended) == ([(0, 0, 1), (0, 1, 2)], bits("NNZ"), 2, True)
    ld = S.load_data(S.Desc(0, 0, 1, 3, 2), [(0, 0, 1, True), (0, 1, 2, True)], P)
    assert (ld.entries, ld.err, ld.consumed) == ([(0, 0, 1)], bits("NNZ"), 1)


def test_nnz_missing_last_runs_on_to_last():
    stream = [(0, 0, 1, False), (0, 1, 2, False), (0, 2, 3, True)]
    ld = S.load_data(S.Desc(0, 0, 1, 3, 2), stream, P)  # entry 1 is NNZ-1 without LAST
    assert (ld.entries, ld.err, ld.consumed, ld.ended) == ([(0, 0, 1), (0, 1, 2), (0, 2, 3)], bits("NNZ"), 3, True)
    ld = S.load_data(S.Desc(0, 0, 1, 3, 2), [(0, 0, 1, False), (0, 1, 2, False)], P)
    assert (ld.err, ld.ended, ld.consumed) == (bits("NNZ"), False, 2)


def test_overflow_drops_and_takes_priority():
    p2 = SparseParams(depth=2)
    ld = S.load_data(S.Desc(0, 0, 1, 3, 3), [(0, 0, 1), (0, 1, 2), (0, 2, 3)], p2)
    assert (ld.entries, ld.err, ld.dropped) == ([(0, 0, 1), (0, 1, 2)], bits("OVERFLOW"), [2])
    # entry 2 is also out of range and out of order: OVERFLOW is checked first
    ld = S.load_data(S.Desc(0, 0, 1, 3, 3), [(0, 1, 1), (0, 2, 2), (5, 0, 3)], p2)
    assert ld.err == bits("OVERFLOW")
    # the count is over received entries: a dropped entry still uses a number
    ld = S.load_data(S.Desc(0, 0, 1, 3, 3), [(0, 5, 1), (0, 1, 2), (0, 2, 3)], p2)
    assert (ld.entries, ld.err, ld.dropped) == ([(0, 1, 2)], bits("IDX_OOB", "OVERFLOW"), [0, 2])


def test_several_bits_at_once():
    stream = [(0, 1, 0), (0, 0, 5), (4, 4, 1), (1, 1, 2, False)]
    ld = S.load_data(S.Desc(0, 0, 2, 2, 3), stream + [(1, 0, 3, True)], P)
    # (0,1,0) stored + ZERO; (0,0) ORDER; (4,4) IDX_OOB; entry 2 = NNZ-1 without LAST;
    # (1,1,2) stored; (1,0) ORDER and LAST on entry 4 != NNZ-1
    assert ld.entries == [(0, 1, 0), (1, 1, 2)]
    assert ld.err == bits("ZERO", "ORDER", "IDX_OOB", "NNZ")
    assert ld.dropped == [1, 2, 4]


def test_weight_memory_errors():
    ld = S.load_weights([(0, 0, 1), (2, 0, 5), (0, 0, 3), (1, 1, 0)], 2, P)
    assert ld.entries == [(0, 0, 1), (1, 1, 0)]
    assert ld.err == bits("W_IDX_OOB", "W_DUP", "W_ZERO", table=W_ERR)
    assert ld.dropped == [1, 2]
    assert S.load_weights([(0, 0, 0), (1, 1, 0)], 2, P, dense=True).err == 0
    # the weight order is kept (it is the schedule order)
    ld = S.load_weights(S.pack_weights([(1, 1, 4), (0, 0, 3)], P), 2, P)
    assert (ld.entries, ld.err, ld.ended) == ([(1, 1, 4), (0, 0, 3)], 0, True)


def test_weight_overflow():
    p1 = SparseParams(kmax=1)  # kmax**2 = 1 weight
    ld = S.load_weights([(0, 0, 1), (0, 0, 2)], 1, p1)  # a duplicate too: W_OVERFLOW comes first
    assert (ld.entries, ld.err, ld.dropped) == ([(0, 0, 1)], W_ERR["W_OVERFLOW"], [1])
    ld = S.load_weights([(0, 0, 1, True), (0, 0, 2, True)], 1, p1)
    assert (ld.consumed, ld.err) == (1, 0)


def test_values_must_fit():
    with pytest.raises(ValueError):
        S.load_data(S.Desc(0, 0, 1, 1, 1), [(0, 0, 300)], P)
    with pytest.raises(ValueError):
        S.load_weights([(0, 0, -129)], 1, P)
