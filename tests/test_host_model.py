"""The golden models of the host family's hardware (models/host/desc.py, kernel.py,
front.py) against hand-worked cases of docs/host.md sections 3, 5, 6 and 8."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.models import host as h
from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError

P = HostParams()
LIM = h.Limits(exp_seq=0, wgt_base=0x8000, wgt_size=0x1000, mem_limit=P.mem_bytes)
GOOD = h.Descriptor(opcode=1, relu=1, pool=1, tag=7, m=4, n=4, k=8, shift=2, act_addr=0x100, wgt_off=0,
                    out_addr=0x200, mult=3)


def test_params_refuse_bad_values():
    for kw in ({"depth": 6}, {"depth": 64}, {"n_kernels": 3}, {"k_max": 6}, {"n_max": 2}, {"mem_lat": 0},
               {"mem_q": True}):
        with pytest.raises(ParamError, match=list(kw)[0]):
            HostParams(**kw)
    assert (P.idx_bits, P.ptr_bits, P.acc_bits, P.aww) == (3, 4, 38, 14)
    assert (P.cnt_bits, P.cnt_mask) == (32, 0xFFFF_FFFF) and HostParams(cnt_bits=8).cnt_mask == 0xFF
    for bad in (7, 33, 0, "8", 8.0, True):
        with pytest.raises(ParamError, match=r"HostParams\.cnt_bits="):
            HostParams(cnt_bits=bad)


def test_descriptor_layout_by_hand():
    # W0 = tag 7 << 16 | pool (bit 5) | relu (bit 4) | MATMUL; chk = XOR of the bytes
    # 31 07 | 04 04 | 08 02 | 01 (0x100) | 02 (0x200) | 03 = 0x3C
    assert GOOD.words() == [0x00070031, 0x00040004, 0x00020008, 0x100, 0, 0x200, 3, 0x00003CA5]
    back = h.Descriptor.unpack(GOOD.words())
    assert back == GOOD.with_(chk=0x3C)
    assert h.Completion.unpack(h.Completion(0xBEEF, 10, 1, 99).words()) == h.Completion(0xBEEF, 10, 1, 99)
    assert h.Completion(1, 10, 0).words()[0] == 0x000A0001
    with pytest.raises(ValueError):
        h.Completion.unpack([1 << 24, 0])


@pytest.mark.parametrize("change, status", [
    ({"magic": 0x5A}, "BAD_MAGIC"),
    ({"chk": 0x00}, "BAD_CHECKSUM"),
    ({"seq": 1}, "BAD_SEQ"),
    ({"opcode": 2}, "BAD_OPCODE"),
    ({"dtype": 2}, "BAD_DTYPE"),
    ({"rsvd0_7": 1}, "RSVD_NONZERO"),
    ({"rsvd6": 0x8000}, "RSVD_NONZERO"),
    ({"m": 0}, "BAD_DIMS"),
    ({"m": 33}, "BAD_DIMS"),
    ({"k": 6}, "BAD_DIMS"),  # int8 rows are whole words: K % 4
    ({"m": 5}, "BAD_DIMS"),  # pool with odd M
    ({"act_addr": 0x102}, "ADDR_RANGE"),
    ({"out_addr": P.mem_bytes - 4}, "ADDR_RANGE"),  # 8 bytes of result past MEM_LIMIT
    ({"out_addr": 0x110}, "ADDR_RANGE"),  # overlaps A [0x100, 0x120)
    ({"out_addr": 0x8FFC}, "ADDR_RANGE"),  # overlaps the weight region
    ({"wgt_off": 2}, "WGT_RANGE"),
    ({"wgt_off": 0x1000 - 28}, "WGT_RANGE"),  # aligned, 4 bytes past the region
    ({"opcode": 0, "m": 0, "act_addr": 3}, "OK"),  # NOP: no dims or address checks
    ({"out_addr": 0x120}, "OK"),  # adjacent to A: half-open ranges do not overlap
    ({"wgt_off": 0x1000 - 32}, "OK"),  # the last 32 bytes of the region
])
def test_check_each_status(change, status):
    d = GOOD.with_(**change)
    assert h.check(d.words(), LIM, P) == h.ST[status]


def test_check_order_first_failure_wins():
    # bad checksum and bad dims: checksum first; bad seq and bad opcode: seq first
    assert h.check(GOOD.with_(chk=0, m=0).words(), LIM, P) == h.ST["BAD_CHECKSUM"]
    assert h.check(GOOD.with_(seq=9, opcode=7).words(), LIM, P) == h.ST["BAD_SEQ"]
    assert h.check(GOOD.with_(dtype=3, rsvd2=1).words(), LIM, P) == h.ST["BAD_DTYPE"]
    assert h.check(GOOD.with_(m=0, act_addr=1).words(), LIM, P) == h.ST["BAD_DIMS"]
    # the weight region past MEM_LIMIT: WGT_RANGE, but an address error comes first
    lim = h.Limits(0, 0xF000, 0x2000, 0x10000)
    assert h.check(GOOD.words(), lim, P) == h.ST["WGT_RANGE"]
    assert h.check(GOOD.with_(act_addr=2).words(), lim, P) == h.ST["ADDR_RANGE"]


def test_scaler_rounds_half_up_and_saturates():
    acc = np.array([5, -5, 6, -6, 1000, -1000, 3])
    assert h.scale(acc, 1, 1, 0).tolist() == [3, -2, 3, -3, 127, -128, 2]
    assert h.scale(acc, 1, 0, 1).tolist() == [5, -5, 6, -6, 1000, -1000, 3]
    assert h.scale(np.array([1 << 37]), 0xFFFF, 0, 1).tolist() == [32767]
    assert h.scale(np.array([-(1 << 37)]), 0xFFFF, 31, 0).tolist() == [-128]  # (-2^37 * 65535 + 2^30) >> 31


def test_kernel_ref_by_hand():
    a = np.array([[1, 2, 0, 0], [-3, 0, 1, 0], [2, 2, 2, 2], [0, 0, 0, -1]])
    w = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 5]])
    d = h.Descriptor(m=4, k=4, n=4, mult=1, shift=0)
    # rows of A @ W: [1,2,0,0], [-2,1,1,1], [4,4,2,12], [0,0,0,-5]
    assert h.kernel_ref(a, w, d).tolist() == [[1, 2, 0, 0], [-2, 1, 1, 1], [4, 4, 2, 12], [0, 0, 0, -5]]
    assert h.kernel_ref(a, w, d.with_(relu=1)).tolist() == [[1, 2, 0, 0], [0, 1, 1, 1], [4, 4, 2, 12], [0, 0, 0, 0]]
    assert h.kernel_ref(a, w, d.with_(pool=1)).tolist() == [[1, 2, 1, 1], [4, 4, 2, 12]]
    with pytest.raises(ValueError):
        h.kernel_ref(a[:3], w, d)


def test_memory_layout_little_endian():
    mem = np.zeros(64, np.uint8)
    h.write_mat(mem, 8, np.array([[1, -2], [300, -32768]]), 1)
    assert mem[8:16].tolist() == [1, 0, 0xFE, 0xFF, 0x2C, 0x01, 0x00, 0x80]
    assert h.read_mat(mem, 8, 2, 2, 1).tolist() == [[1, -2], [300, -32768]]
    assert h.read_mat(mem, 8, 1, 4, 0).tolist() == [[1, 0, -2, -1]]
    with pytest.raises(ValueError):
        h.read_mat(mem, 60, 1, 8, 0)


def test_exec_cycles_by_hand():
    # int8 M=4 N=4 K=8 pool, L=2: 1 + (8+2) + 4 (2+2+8) + 2 (1+2) = 65
    assert h.exec_cycles(GOOD, P) == 65
    # int16 M=1 N=2 K=2 no pool, L=5: 1 + (2+5) + (1+5+2) + (1+5) = 22
    assert h.exec_cycles(h.Descriptor(dtype=1, m=1, n=2, k=2), HostParams(mem_lat=5)) == 22


def _mem(seed=1):
    return np.random.default_rng(seed).integers(0, 256, P.mem_bytes).astype(np.uint8)


def test_front_model_sequence_rule_and_results():
    mem = _mem()
    fm = h.FrontModel(P, mem.copy(), wgt_base=0x8000, wgt_size=0x1000)
    o = fm.submit(GOOD.words())
    assert (o.status, o.on_kernel, o.cycles, fm.exp_seq) == (0, True, 65, 1)
    a = h.read_mat(mem, 0x100, 4, 8, 0)
    w = h.read_mat(mem, 0x8000, 8, 4, 0)
    assert np.array_equal(h.read_mat(fm.mem, 0x200, 2, 4, 0), h.kernel_ref(a, w, GOOD))
    assert (o.rd_words, o.wr_words) == (8 + 4 * 2, 2)
    # a corrupted descriptor costs one sequence number and nothing else
    assert fm.submit(GOOD.with_(seq=1, magic=0).words()).status == h.ST["BAD_MAGIC"]
    assert fm.exp_seq == 2
    assert fm.submit(GOOD.with_(seq=2, tag=9).words()).status == 0
    # a skipped number: BAD_SEQ, then resynchronised on the descriptor's own seq
    assert fm.submit(GOOD.with_(seq=7).words()).status == h.ST["BAD_SEQ"]
    assert fm.exp_seq == 8
    assert fm.flush(GOOD.words()).status == h.ST["ABORTED"] and fm.exp_seq == 9


def test_narrow_counters_wrap_and_the_duration_does_not():
    """cnt_bits = 8: a task of more than 255 cycles completes with its exec_cycles modulo
    2**8 (what the CQ's word 1 reads), while the outcome's cycles stay the whole duration;
    the results, beats and sequence numbers do not depend on the counter's width."""
    mem = _mem(3)
    big = h.Descriptor(opcode=1, dtype=1, tag=5, m=8, n=16, k=32, act_addr=0x100, wgt_off=0, out_addr=0x1000, mult=1)
    p8 = HostParams(cnt_bits=8)
    wide, narrow = (h.FrontModel(q, mem.copy(), wgt_base=0x8000, wgt_size=0x1000) for q in (P, p8))
    ow, on = wide.submit(big.words()), narrow.submit(big.words())
    assert ow.status == on.status == 0 and ow.cycles > 255
    assert on.cycles == ow.cycles == h.exec_cycles(big, P)        # the duration is whole
    assert on.cq_cycles == ow.cycles % 256 != ow.cycles            # the counter wraps
    assert ow.cq_cycles == ow.cycles                               # 32 bits: no wrap in a task
    assert (on.rd_words, on.wr_words) == (ow.rd_words, ow.wr_words) and np.array_equal(narrow.mem, wide.mem)
    cpl = h.Completion(on.tag, on.status, 0, on.cq_cycles)
    assert cpl.words()[1] == ow.cycles & p8.cnt_mask and h.Completion.unpack(cpl.words()) == cpl
    # no duration, nothing to wrap: a front-end completion
    nop = narrow.submit(GOOD.with_(opcode=0, seq=1).words())
    assert (nop.on_kernel, nop.cycles, nop.cq_cycles) == (False, None, None)


def test_front_model_error_window():
    fm = h.FrontModel(P, _mem(), wgt_base=0x8000, wgt_size=0x1000, err_window=(0x200 // 4 + 1, 0x200 // 4 + 2))
    o = fm.submit(GOOD.words())
    assert (o.status, o.on_kernel, o.out) == (h.ST["MEM_ERR"], True, (0x200, 0x208))
    fm2 = h.FrontModel(P, _mem(), wgt_base=0x8000, wgt_size=0x1000, err_window=(0x208 // 4, 0x300 // 4))
    assert fm2.submit(GOOD.words()).status == 0  # the window starts right after the output


def test_order_rules():
    c = h.Completion
    fe = h.FE_KERNEL
    assert h.order_problems([1, 2, 3], [c(1, 0, 0), c(2, 0, 0), c(3, 1, fe)], 1) == []
    # two kernels may interleave; each kernel's own order is SQ order
    assert h.order_problems([1, 2, 3, 4], [c(2, 0, 1), c(1, 0, 0), c(3, 0, 0), c(4, 0, 1)], 2) == []
    assert "after submission" in h.order_problems([1, 2], [c(2, 0, 0), c(1, 0, 0)], 1)[0]
    assert "front end" in h.order_problems([1, 2], [c(2, 4, fe), c(1, 0, 0)], 1)[0]
    assert "never completed" in h.order_problems([1, 2], [c(1, 0, 0)], 1)[0]
    assert "not submitted" in h.order_problems([1], [c(1, 0, 0), c(1, 0, 0)], 1)[0]
    assert "does not exist" in h.order_problems([1], [c(1, 0, 1)], 1)[0]
    # repeated tags match the oldest unmatched submission
    assert h.order_problems([5, 5], [c(5, 0, 0), c(5, 0, 0)], 1) == []


def test_burst_pacing_by_a_short_memory_queue():
    # mem_q = 2, mem_lat = 4, 5 words: issues at 0, 1, 4 (slot of 0 frees), 5, 8; the last
    # response arrives in cycle 12, so the phase lasts 13 cycles (9 with a long enough queue)
    assert h.burst_cycles(5, HostParams(mem_q=2, mem_lat=4)) == 13
    assert h.burst_cycles(5, HostParams(mem_q=4, mem_lat=4)) == 9
    assert h.burst_cycles(1, HostParams(mem_q=2, mem_lat=8)) == 9
