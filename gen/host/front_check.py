"""The front end's validator (docs/host.md section 5): the status of the SQ head slot,
combinational, in the contract's check order.

The eight descriptor words come from :func:`~.front_sq.sq_store`'s head read ports; the
limits are the CSRs (``EXP_SEQ``, ``WGT_BASE``, ``WGT_SIZE``, ``MEM_LIMIT`` as stored).
Range sums are computed in :data:`CHK_W` bits, so they are exact (no 32-bit wrap).
"""

from __future__ import annotations

from myhdl import always_comb, block, concat, intbv

from lockstep.models.host.params import HostParams
from lockstep.models.host import MAGIC, MATMUL, NOP, ST

from ..common import new_bool, new_vec, resize

__all__ = ["CHK_W", "front_check"]

#: Bits of the exact range arithmetic: a 32-bit address plus ``M K es`` (at most
#: ``2 * 0xFFFF**2 < 2**33``) stays below ``2**34``.
CHK_W = 34


@block
def _flags(w0, w2, w6, w7, exp_seq, bad_magic, bad_chk, bad_seq, bad_op, bad_dt, rsvd, is_nop, is_mm, chk_x,
           fmt: HostParams):
    """The checks on single fields (BAD_MAGIC .. RSVD_NONZERO) and the opcode class.

    Ports:
        w0, w2, w6, w7: descriptor words; ``chk_x``: XOR of the checksum bytes of
            W0..W6 (from :func:`_xor_words`).
        exp_seq: the expected sequence number.
        bad_*, rsvd: a failing check each; is_nop / is_mm: opcode 0 / 1.
    """
    magic, nop, mm = MAGIC, NOP, MATMUL

    @always_comb
    def fields():
        x = intbv(0)[8:]
        x[:] = chk_x ^ w7[24:16] ^ w7[32:24]
        bad_magic.next = w7[8:0] != magic
        bad_chk.next = w7[16:8] != x
        bad_seq.next = w7[32:16] != exp_seq
        bad_op.next = w0[4:0] > mm
        bad_dt.next = w0[10:8] > 1
        rsvd.next = w0[7] or w0[16:10] != 0 or w2[32:21] != 0 or w6[32:16] != 0
        is_nop.next = w0[4:0] == nop
        is_mm.next = w0[4:0] == mm

    return fields


@block
def _xor_words(w0, w1, w2, w3, w4, w5, w6, chk_x):
    """``chk_x``: XOR of the 28 bytes of W0..W6 (the checksum without W7's bytes)."""

    @always_comb
    def fold():
        x = intbv(0)[32:]
        x[:] = w0 ^ w1 ^ w2 ^ w3 ^ w4 ^ w5 ^ w6
        chk_x.next = x[8:0] ^ x[16:8] ^ x[24:16] ^ x[32:24]

    return fold


@block
def _dims(w0, w1, w2, bad_dims, fmt: HostParams):
    """BAD_DIMS: M, N or K zero or above its maximum, K or N not a multiple of ``4/es``,
    pool with odd M (meaningful when the dtype passed: ``es16 = W0[8]``)."""
    m_max, n_max, k_max = fmt.m_max, fmt.n_max, fmt.k_max

    @always_comb
    def dims():
        m = intbv(0)[16:]
        n = intbv(0)[16:]
        k = intbv(0)[16:]
        odd = bool(0)
        m[:] = w1[16:0]
        n[:] = w1[32:16]
        k[:] = w2[16:0]
        if w0[8]:
            odd = k[0] or n[0]
        else:
            odd = k[2:0] != 0 or n[2:0] != 0
        bad_dims.next = (m == 0 or m > m_max or n == 0 or n > n_max or k == 0 or k > k_max or odd
                         or (w0[5] and m[0]))

    return dims


@block
def _ranges(w0, w1, w2, w3, w4, w5, wgt_base, wgt_size, mem_limit, bad_addr, bad_wgt):
    """ADDR_RANGE and WGT_RANGE in :data:`CHK_W`-bit exact arithmetic (meaningful when the
    dimensions passed: every range is then non-empty but the weight region when
    ``WGT_SIZE = 0``).

    Ports:
        w0..w5: descriptor words (flags, M/N, K, act_addr, wgt_off, out_addr).
        wgt_base, wgt_size, mem_limit: the CSRs.
        bad_addr, bad_wgt: the two checks.
    """
    w = CHK_W
    mx, nx, kx, mox = new_vec(w), new_vec(w), new_vec(w), new_vec(w)
    act, wof, out = new_vec(w), new_vec(w), new_vec(w)
    wb, ws, ml = new_vec(w), new_vec(w), new_vec(w)
    m16, n16, k16, mo16 = new_vec(16), new_vec(16), new_vec(16), new_vec(16)
    a_hi, o_hi, w_hi, g_hi = new_vec(w), new_vec(w), new_vec(w), new_vec(w)

    @always_comb
    def fields():
        m16.next = w1[16:0]
        n16.next = w1[32:16]
        k16.next = w2[16:0]
        if w0[5]:
            mo16.next = concat(intbv(0)[1:], w1[16:1])
        else:
            mo16.next = w1[16:0]

    insts = [fields, resize(m16, mx), resize(n16, nx), resize(k16, kx), resize(mo16, mox), resize(w3, act),
             resize(w4, wof), resize(w5, out), resize(wgt_base, wb), resize(wgt_size, ws), resize(mem_limit, ml)]

    @always_comb
    def sums():
        t = intbv(0)[w:]
        # activations: [act, act + M K es)
        t[:] = mx * kx
        if w0[8]:
            t[:] = t << 1
        a_hi.next = act + t
        # result: [out, out + M' N es)
        t[:] = mox * nx
        if w0[8]:
            t[:] = t << 1
        o_hi.next = out + t
        # weights read: wgt_off + K N es; the weight region [WGT_BASE, WGT_BASE + WGT_SIZE)
        t[:] = kx * nx
        if w0[8]:
            t[:] = t << 1
        w_hi.next = wof + t
        g_hi.next = wb + ws

    @always_comb
    def judge():
        bad_addr.next = (w3[2:0] != 0 or w5[2:0] != 0 or a_hi > ml or o_hi > ml or (out < a_hi and act < o_hi)
                         or (ws != 0 and out < g_hi and wb < o_hi))
        bad_wgt.next = w4[2:0] != 0 or w_hi > ws or g_hi > ml

    return insts + [sums, judge]


@block
def _order(bad_magic, bad_chk, bad_seq, bad_op, bad_dt, rsvd, is_nop, bad_dims, bad_addr, bad_wgt, st, trusted):
    """``st``: the first failing check in the contract's order (NOP: OK after RSVD);
    ``trusted``: magic and checksum passed (the sequence-number rule)."""
    s_magic, s_chk, s_seq, s_op, s_dt = ST["BAD_MAGIC"], ST["BAD_CHECKSUM"], ST["BAD_SEQ"], ST["BAD_OPCODE"], \
        ST["BAD_DTYPE"]
    s_rsvd, s_dims, s_addr, s_wgt, s_ok = ST["RSVD_NONZERO"], ST["BAD_DIMS"], ST["ADDR_RANGE"], ST["WGT_RANGE"], \
        ST["OK"]

    @always_comb
    def order():
        trusted.next = not bad_magic and not bad_chk
        if bad_magic:
            st.next = s_magic
        elif bad_chk:
            st.next = s_chk
        elif bad_seq:
            st.next = s_seq
        elif bad_op:
            st.next = s_op
        elif bad_dt:
            st.next = s_dt
        elif rsvd:
            st.next = s_rsvd
        elif is_nop:
            st.next = s_ok
        elif bad_dims:
            st.next = s_dims
        elif bad_addr:
            st.next = s_addr
        elif bad_wgt:
            st.next = s_wgt
        else:
            st.next = s_ok

    return order


@block
def front_check(words, exp_seq, wgt_base, wgt_size, mem_limit, st, trusted, is_mm, fmt: HostParams):
    """The status of the descriptor ``words`` (a Python list of the 8 word signals).

    Ports:
        words: W0..W7 of the SQ head slot.
        exp_seq (16), wgt_base (32), wgt_size (32), mem_limit: the limits the checks read.
        st (4): the status code (``ST``); OK for a NOP and for a MATMUL that passes.
        trusted: magic and checksum passed.
        is_mm: the opcode is MATMUL (dispatch when ``st`` is OK).
    """
    w0, w1, w2, w3, w4, w5, w6, w7 = words
    f = [new_bool() for _ in range(10)]
    bad_magic, bad_chk, bad_seq, bad_op, bad_dt, rsvd, is_nop, bad_dims, bad_addr, bad_wgt = f
    chk_x = new_vec(8)
    return [
        _xor_words(w0, w1, w2, w3, w4, w5, w6, chk_x),
        _flags(w0, w2, w6, w7, exp_seq, bad_magic, bad_chk, bad_seq, bad_op, bad_dt, rsvd, is_nop, is_mm, chk_x,
               fmt),
        _dims(w0, w1, w2, bad_dims, fmt),
        _ranges(w0, w1, w2, w3, w4, w5, wgt_base, wgt_size, mem_limit, bad_addr, bad_wgt),
        _order(bad_magic, bad_chk, bad_seq, bad_op, bad_dt, rsvd, is_nop, bad_dims, bad_addr, bad_wgt, st, trusted),
    ]

