"""The MAC array of a ``sched`` tile (docs/sched.md section 11; only built when
``FabricParams.k > 0``): ``k x k`` back and front weight registers, the LDW row loader
(unit ``wload``), SWPW, and the two-stage MATVEC pipeline (unit ``mac``) with its
partial-sum input and output.

Timing (``n`` = issue cycle), exactly as the contract:

* LDW reads row ``r`` (``mem[A + r*k + c]``, ``c < k``: ``k`` read ports) in ``n+r`` and
  writes back row ``r`` at the end of ``n+r``; ``wload`` busy ``[n, n+k-1]``.
* SWPW copies back -> front at the end of ``n`` (every cell in parallel).
* MATVEC stage 1 (cycle ``n+i``): reads ``x_i[r] = mem[B + i*k + r]`` (``k`` more read
  ports) and forms, per column ``c``, ``sum_r x_i[r] * front[r][c]`` with signed
  ``dw``-bit operands sign-extended to ``accw`` bits (so the ``accw``-bit product and sum
  are the signed values mod ``2**accw``), registered at the end of ``n+i``. Stage 2
  (cycle ``n+i+L_MM-1``): adds ``psum_in[c]`` when ``PORT[0]`` (0 when ``psum_in_valid``
  is low, which raises TAP_IDLE), then writes the low ``dw`` bits to
  ``mem[D + i*k + c]`` (write source ``4 + c``, combinational tap in that cycle) when
  ``PORT[1] = 0``, or loads the ``psum_out`` register (valid during ``n+i+L_MM``) when
  ``PORT[1] = 1``. ``mac`` busy ``[n, n+N-1]``.
* MATVR is MATVEC whose stage-2 write goes through the VPU segment: ``y`` (signed
  ``accw`` bits) plus the bias ``mem[A + c]`` (signed ``dw`` bits, read in stage 2: ``k``
  more read ports), exact in ``accw + 1`` bits, then ReLU, ``>> vpu_shift``, low ``dw``
  bits. (MATVR with ``PORT[1]`` raises OPCODE and never starts.)

The products use the front registers of the read cycle (stage 1), so a SWPW issued at
``n+N`` (the first cycle ``mac`` is free) cannot disturb the last vector's stage 2.
"""

from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from lockstep.models.record import clog2
from lockstep.models.sched.params import FabricParams

from ..common import new_bool, new_vec


__all__ = ["add_const", "ldw_unit", "mv_col", "mv_ctl", "wcell"]

O_LDW, O_MATVEC, O_MATVR = (FabricParams.MAC_OPCODES[n] for n in ("LDW", "MATVEC", "MATVR"))


@block
def wcell(clk, rst, ld, q, swp, back, front):
    """One weight cell: ``back <= q`` when its row loads, ``front <= back`` on SWPW."""

    @always_seq(clk.posedge, reset=rst)
    def cell():
        if ld:
            back.next = q
        if swp:
            front.next = back

    return cell


@block
def add_const(base, c: int, out):
    """``out = base + c`` (mod ``2**len(out)``)."""

    @always_comb
    def addc():
        out.next = base + c

    return addc


@block
def _row_en(act, cur_row, j: int, en):
    """``en = act and cur_row == j``."""

    @always_comb
    def rowen():
        en.next = act and cur_row == j

    return rowen


@block
def ldw_unit(clk, rst, go, h_op, h_a, busy, raddr, row_en, fmt: FabricParams):
    """LDW: one weight row per cycle for ``k`` cycles.

    Ports:
        go, h_op, h_a: the sequencer's start and the head fields.
        busy: rows left after this cycle's (``wload`` busy while non-zero).
        raddr: address of this cycle's row (``k`` consecutive read ports from it).
        row_en: per row ``j``, the back row ``j`` loads at the end of this cycle.
    """
    k, aw = fmt.k, fmt.aw
    rw = max(1, clog2(k))
    cnt, row, base = new_vec(rw), new_vec(rw), new_vec(aw)
    st, act, cur_row = new_bool(), new_bool(), new_vec(rw)
    o_ldw, klast = O_LDW, k - 1

    @always_comb
    def cur():
        s = bool(0)
        s = go and h_op == o_ldw
        st.next = s
        act.next = s or cnt != 0
        if s:
            raddr.next = h_a
            cur_row.next = 0
        else:
            raddr.next = base
            cur_row.next = row
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if st:
            cnt.next = klast
            row.next = 1
            base.next = h_a + k
        elif cnt != 0:
            cnt.next = cnt - 1
            row.next = row + 1
            base.next = base + k

    return cur, regs, [_row_en(act, cur_row, j, row_en[j]) for j in range(k)]


@block
def mv_ctl(clk, rst, go, h_op, h_port, h_a, h_b, h_d, h_len, busy, xaddr, v2, p0_2, p1_2, d2, r2, a2, pov,
           e_pidle, psum_in_valid, fmt: FabricParams):
    """MATVEC / MATVR control: the vector counter, the stage-1 read address, the stage-2 flags.

    Ports:
        go, h_*: the sequencer's start and the head fields.
        busy: vectors left after this cycle's (``mac`` busy while non-zero).
        xaddr: address of this cycle's vector (``k`` consecutive read ports from it).
        v2, p0_2, p1_2, d2: stage 2 active, its PORT bits and its write base address.
        r2, a2: stage 2 belongs to a MATVR, and its bias base address.
        pov: ``psum_out_valid`` (register).
        e_pidle: stage 2 samples an idle ``psum_in`` (TAP_IDLE).
    """
    k, aw = fmt.k, fmt.aw
    o_mv, o_mvr = O_MATVEC, O_MATVR
    cnt, xb, db, pt, ab, rb = new_vec(8), new_vec(aw), new_vec(aw), new_vec(2), new_vec(aw), new_bool()
    st, cd, cp, ca, cr = new_bool(), new_vec(aw), new_vec(2), new_vec(aw), new_bool()

    @always_comb
    def cur():
        s = bool(0)
        s = go and (h_op == o_mv or h_op == o_mvr)
        st.next = s
        if s:
            xaddr.next = h_b
            cd.next = h_d
            cp.next = h_port
            ca.next = h_a
            cr.next = h_op == o_mvr
        else:
            xaddr.next = xb
            cd.next = db
            cp.next = pt
            ca.next = ab
            cr.next = rb
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if st:
            cnt.next = h_len
            xb.next = h_b + k
            db.next = h_d + k
            pt.next = h_port
            ab.next = h_a
            rb.next = h_op == o_mvr
        elif cnt != 0:
            cnt.next = cnt - 1
            xb.next = xb + k
            db.next = db + k
        v2.next = st or cnt != 0
        d2.next = cd
        a2.next = ca
        r2.next = cr
        p0_2.next = cp[0]
        p1_2.next = cp[1]
        pov.next = v2 and p1_2

    @always_comb
    def idle():
        e_pidle.next = v2 and p0_2 and not psum_in_valid

    return cur, regs, idle


@block
def mv_col(clk, rst, xq, fcol, v2, p0_2, p1_2, d2, r2, bq, piv, pin, we, wa, wd, po, c: int, fmt: FabricParams):
    """MATVEC column ``c``: stage-1 signed dot product, stage-2 psum add, write (through
    the VPU segment for MATVR) or psum_out.

    Ports:
        xq: the ``k`` words of this cycle's vector (list, row order).
        fcol: the front weights of column ``c`` (list, row order).
        v2, p0_2, p1_2, d2, r2: stage-2 control (see :func:`mv_ctl`).
        bq: the bias word ``mem[a2 + c]`` (stage 2, MATVR).
        piv, pin: ``psum_in_valid`` and lane ``c`` of ``psum_in``.
        we, wa, wd: write source ``4 + c`` (end of this cycle; 0 when idle).
        po: lane ``c`` of ``psum_out`` (register, 0 when not valid).
    """
    k, dw, accw, vsh = fmt.k, fmt.dw, fmt.accw, fmt.vpu_shift
    ew_ = accw - dw
    ones = (1 << ew_) - 1
    bones = (1 << (ew_ + 1)) - 1
    sm, s1, ys = new_vec(accw), new_vec(accw), new_vec(accw)
    zs_unused = new_vec(accw + 1 - dw)  # the shifted sum's bits above the written dw

    @always_comb
    def mul():
        acc = intbv(0)[accw:]
        xe = intbv(0)[accw:]
        fe = intbv(0)[accw:]
        acc[:] = 0
        for r in range(k):
            if xq[r][dw - 1]:
                xe[:] = concat(intbv(ones)[ew_:], xq[r])
            else:
                xe[:] = concat(intbv(0)[ew_:], xq[r])
            if fcol[r][dw - 1]:
                fe[:] = concat(intbv(ones)[ew_:], fcol[r])
            else:
                fe[:] = concat(intbv(0)[ew_:], fcol[r])
            acc[:] = acc + xe * fe
        sm.next = acc

    @always_comb
    def add():
        y = intbv(0)[accw:]
        ye = intbv(0)[accw + 1 :]
        be = intbv(0)[accw + 1 :]
        z = intbv(0)[accw + 1 :]
        zs = intbv(0)[accw + 1 :]
        if p0_2 and piv:
            y[:] = s1 + pin
        else:
            y[:] = s1
        ys.next = y
        # VPU segment (MATVR): signed y + signed bias, exact in accw + 1 bits, ReLU, shift
        ye[:] = concat(y[accw - 1], y)
        if bq[dw - 1]:
            be[:] = concat(intbv(bones)[ew_ + 1 :], bq)
        else:
            be[:] = concat(intbv(0)[ew_ + 1 :], bq)
        z[:] = ye + be
        zs[:] = z >> vsh
        zs_unused.next = zs[accw + 1 : dw]
        if v2 and not p1_2:
            we.next = 1
            wa.next = d2 + c
            if not r2:
                wd.next = y[dw:]
            elif z[accw]:
                wd.next = 0
            else:
                wd.next = zs[dw:]
        else:
            we.next = 0
            wa.next = 0
            wd.next = 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        s1.next = sm
        if v2 and p1_2:
            po.next = ys
        else:
            po.next = 0

    return mul, add, regs
