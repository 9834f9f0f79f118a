"""``host_kernel``: one MATMUL kernel of the host family (docs/host.md sections 2, 3, 8, 11).

Phase-sequential (the patent's Fig. 10 datapath, one phase at a time). Cycle 0 is the
cycle the kernel takes a command (``cmd_valid`` and ``cmd_ready``); then

* SETUP, 1 cycle;
* W: a read burst of ``K N es / 4`` words from ``cmd_wgt`` into ``n_max`` lane memories of
  ``k_max`` 16-bit entries (word ``j`` holds elements ``j*epw .. j*epw + epw - 1`` of one
  row ``k`` of W, ``epw = 4 / es``; lane ``n`` keeps ``W[k][n]``, int8 sign-extended);
* for each row ``i``: A, a read burst of ``K es / 4`` words (row ``i`` of A, from
  ``cmd_act`` on, rows contiguous) into the row buffer; MAC, ``K`` cycles, step ``k`` does
  ``acc[n] += a[k] * W[k][n]`` on every lane in ``acc_bits`` (the first step of a row
  starts from 0 and copies the previous row's accumulators into ``save``); and, when row
  ``i`` is a result row (every row, or with ``cmd_pool`` the odd rows), O: a write burst of
  ``N es / 4`` words (result rows contiguous from ``cmd_out``). Word ``j`` of a result row
  packs lanes ``j*epw ..`` of ``relu(scale(acc))`` (with pool: the larger of that and
  ``relu(scale(save))``, the even row's values), ``scale(x) = sat((x*mult + r) >>> shift)``,
  ``r = 2**(shift-1)`` when ``shift > 0``, saturation to int8 or int16. The scaler works
  on the ``epw`` lanes of the word being issued (so each write is computed when issued).

A burst issues one request per cycle while ``req_ready`` (and while the kernel has fewer
than ``mem_q`` requests outstanding, counting a response arriving in the cycle as gone:
never tighter than ``dev_mem``'s own rule); its phase ends in the cycle its last response
arrives, and the next phase starts in the next cycle. With a memory that never refuses and
answers in exactly ``mem_lat`` cycles the busy cycles are ``models.host.exec_cycles``.

``busy`` is high from cycle 1 to the last cycle of the task (E); the completion
(``cpl_valid``, ``cpl_status``, ``cpl_cycles`` = the busy cycles modulo ``2**cnt_bits``: the
exec-cycles counter is ``HostParams.cnt_bits`` wide and wraps) is offered from E + 1 and
held until ``cpl_ready``; ``cmd_ready`` (idle) from the cycle after.

An error response (``rsp_valid`` and ``rsp_err``) or ``k_abort`` (docs/host.md section 11's
``abort``, renamed because ``verilator -Wall`` flags ``abort`` as a C++ reserved word,
SYMRSVDWORD) in a busy cycle ends the task:
from the next cycle no request is issued, the kernel waits for its outstanding responses
(the task ends in the cycle the last arrives, or at once when none is outstanding) and
completes MEM_ERR, or ABORTED (MEM_ERR when both come in the same cycle; the first cause
is kept). A request may still be issued in the cycle of the error or the flush (it is
waited for). Every write of a task lies in its output range, so a MEM_ERR or ABORTED task
writes nowhere else. ``k_abort`` outside a busy cycle is ignored (a held completion stays OK).

Ports: :func:`kernel_ports` (docs/host.md section 11's table).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import always, always_comb, always_seq, block, concat, intbv

from lockstep.models.host.params import HostParams
from lockstep.models.record import clog2

from ..common import (
    Emitted, check_record, emit_stream_unit, generate_if, mem_read, new_bool, new_vec, port, resize, split_low,
)

__all__ = ["KernelWidths", "check_host", "emit_kernel", "host_kernel", "kernel_ports", "kernel_widths"]

#: Kernel states.
S_IDLE, S_SETUP, S_WGT, S_ACT, S_MAC, S_OUT, S_DRAIN, S_DONE = range(8)
#: Completion codes the kernel gives (HostParams.STATUS order).
ST_OK, ST_MEM_ERR, ST_ABORTED = (HostParams.STATUS.index(n) for n in ("OK", "MEM_ERR", "ABORTED"))
#: Width of the command's dimension fields (docs/host.md section 11; ``cpl_cycles`` is
#: ``HostParams.cnt_bits`` wide).
DIM_BITS = 16


def _bits(v: int) -> int:
    """Bits of an unsigned counter holding ``0 .. v``."""
    return max(1, int(v).bit_length())


def check_host(fmt: object, who: str) -> HostParams:
    """Refuse anything but a :class:`HostParams` (the message names the type); every
    host generator calls this one."""
    return check_record(fmt, HostParams, who)


@dataclass(frozen=True)
class KernelWidths:
    """Internal widths of the kernel, all from :class:`HostParams`.

    Attributes:
        mb, nb, kb: counters of 0..m_max, 0..n_max, 0..k_max.
        lb: a lane index (``clog2(n_max)``).
        eb: an element index of a row of A / an entry of a lane memory (``clog2(k_max)``).
        rwb: a row-buffer word index (``k_max / 2`` words: an int16 row).
        bw: a burst's word count (the weight burst is the longest, ``k_max n_max / 2``).
        ob: outstanding requests, 0..mem_q.
        pw: the scaler's product width (``acc_bits + 17``: ``acc * mult + r`` exact, signed).
    """

    mb: int
    nb: int
    kb: int
    lb: int
    eb: int
    rwb: int
    bw: int
    ob: int
    pw: int


def kernel_widths(p: HostParams) -> KernelWidths:
    """The kernel's internal widths for ``p``."""
    return KernelWidths(mb=_bits(p.m_max), nb=_bits(p.n_max), kb=_bits(p.k_max), lb=clog2(p.n_max),
                        eb=clog2(p.k_max), rwb=clog2(p.k_max // 2), bw=_bits(p.k_max * p.n_max // 2),
                        ob=_bits(p.mem_q), pw=p.acc_bits + 17)


def kernel_ports(fmt: HostParams) -> dict[str, dict]:
    """Port list of :func:`host_kernel` (docs/host.md section 11)."""
    aww = fmt.aww
    return {
        "clk": port("in", 1, "clock"),
        "rst": port("in", 1, "synchronous active-high reset: idle, no completion"),
        "cmd_valid": port("in", 1, "the front end offers an OK MATMUL"),
        "cmd_ready": port("out", 1, "the kernel is idle; take = cmd_valid and cmd_ready (cycle 0)"),
        "cmd_m": port("in", DIM_BITS, "M (checked: 1..m_max, even with pool)"),
        "cmd_n": port("in", DIM_BITS, "N (checked: 4/es..n_max, a multiple of 4/es)"),
        "cmd_k": port("in", DIM_BITS, "K (checked: 4/es..k_max, a multiple of 4/es)"),
        "cmd_act": port("in", aww, "word address of A"),
        "cmd_wgt": port("in", aww, "word address of W ((WGT_BASE + wgt_off) >> 2)"),
        "cmd_out": port("in", aww, "word address of the result"),
        "cmd_es16": port("in", 1, "dtype int16 (else int8)"),
        "cmd_relu": port("in", 1, "ReLU after the scaler"),
        "cmd_pool": port("in", 1, "2x1 max-pool of row pairs"),
        "cmd_mult": port("in", 16, "scale_mult (unsigned)"),
        "cmd_shift": port("in", 5, "scale_shift"),
        "k_abort": port("in", 1, "flush in progress: abandon the task (wait for outstanding responses, complete ABORTED)"),
        "busy": port("out", 1, "cycles 1 .. E of a task"),
        "cpl_valid": port("out", 1, "completion offered (from E + 1, held until cpl_ready)"),
        "cpl_ready": port("in", 1, "the CQ takes the completion"),
        "cpl_status": port("out", 4, f"OK ({ST_OK}), MEM_ERR ({ST_MEM_ERR}) or ABORTED ({ST_ABORTED})"),
        "cpl_cycles": port("out", fmt.cnt_bits, f"busy cycles of the task (exec_cycles) modulo 2**{fmt.cnt_bits}"),
        "req_valid": port("out", 1, "memory request"),
        "req_ready": port("in", 1, "the memory takes the request"),
        "req_we": port("out", 1, "write (all 4 bytes), else read"),
        "req_addr": port("out", aww, "word address"),
        "req_wdata": port("out", 32, "write data"),
        "rsp_valid": port("in", 1, "a response (in request order, one per request, no ready)"),
        "rsp_rdata": port("in", 32, "read data"),
        "rsp_err": port("in", 1, "error response: ends the task (MEM_ERR)"),
    }


# ---------------------------------------------------------------------------------------
# small blocks


@block
def _sext(src, dst):
    """``dst = src`` sign-extended to ``len(dst)``."""
    ws, wd = len(src), len(dst)
    if wd == ws:
        return resize(src, dst)
    k = wd - ws
    ones = (1 << k) - 1
    msb = ws - 1

    @always_comb
    def sx():
        if src[msb]:
            dst.next = concat(intbv(ones)[k:], src)
        else:
            dst.next = concat(intbv(0)[k:], src)

    return sx


@block
def _wlane(clk, we, es16, rn, rk, kc, rdata, q, lane_i: int, fmt: HostParams):
    """Lane memory ``lane_i`` of the weight buffer: ``k_max`` 16-bit entries. A weight
    response (``we``) whose word holds this lane's column (int8: ``rn >> 2 == lane >> 2``,
    int16: ``rn >> 1 == lane >> 1``; ``rn`` the word's first column) writes its element
    (int8 sign-extended) at entry ``rk``; ``q`` = entry ``kc`` (combinational)."""
    nb = len(rn)
    g8, g16 = lane_i >> 2, lane_i >> 1
    b8, h16 = 8 * (lane_i % 4), 16 * (lane_i % 2)
    mem = [new_vec(16) for _ in range(fmt.k_max)]
    sel, d = new_bool(), new_vec(16)

    @always_comb
    def dec():
        if es16:
            sel.next = we and rn[nb:1] == g16
            d.next = rdata[h16 + 16:h16]
        else:
            sel.next = we and rn[nb:2] == g8
            if rdata[b8 + 7]:
                d.next = concat(intbv(0xFF)[8:], rdata[b8 + 8:b8])
            else:
                d.next = concat(intbv(0)[8:], rdata[b8 + 8:b8])

    @always(clk.posedge)
    def wr():
        if sel:
            mem[rk].next = d

    @always_comb
    def rd():
        q.next = mem[kc]

    return dec, wr, rd


@block
def _mac_lane(clk, rst, a32, wq, en, first, acc, save, fmt: HostParams):
    """One MAC lane: when ``en``, ``acc <= (first ? 0 : acc) + a32 * sext(wq)`` (the
    product is exact in 32 bits, the sum in ``acc_bits``), and on ``first`` also
    ``save <= acc`` (the previous row's sums)."""
    ab = fmt.acc_bits
    w32, prod, px = new_vec(32), new_vec(32), new_vec(ab)

    @always_comb
    def mul():
        prod.next = a32 * w32

    @always_seq(clk.posedge, reset=rst)
    def acc_reg():
        if en:
            if first:
                acc.next = px
                save.next = acc
            else:
                acc.next = acc + px

    return _sext(wq, w32), mul, _sext(prod, px), acc_reg


@block
def _scaler(acc, mult, shift, es16, y, fmt: HostParams, wide: bool = True):
    """``y = sat((acc * mult + r) >>> shift)`` (16 bits; int8 results sign-extended):
    ``acc`` signed ``acc_bits``, ``mult`` unsigned 16 bits, ``r = 2**(shift-1)`` when
    ``shift > 0``; exact in ``pw = acc_bits + 17`` bits. Without ``wide`` (elements 2 and
    3 of a result word, which an int16 word does not carry) only the int8 saturation is
    built: ``es16`` is not read."""
    pw = fmt.acc_bits + 17
    ones = (1 << pw) - 1
    h16, h8 = (1 << (pw - 15)) - 1, (1 << (pw - 7)) - 1
    msb = pw - 1
    ax, mx = new_vec(pw), new_vec(pw)

    @always_comb
    @generate_if("wide")
    def sc():
        t = intbv(0)[pw:]
        h = intbv(0)[pw:]
        s = intbv(0)[pw:]
        t[:] = ax * mx
        h[:] = intbv(1)[pw:] << shift
        h[:] = h >> 1
        t[:] = t + h
        s[:] = t >> shift
        if t[msb]:
            s[:] = s | ~(intbv(ones)[pw:] >> shift)
        if wide and es16:
            if s[pw:15] == 0 or s[pw:15] == intbv(h16)[pw - 15:]:
                y.next = s[16:]
            elif s[msb]:
                y.next = 0x8000
            else:
                y.next = 0x7FFF
        else:
            if s[pw:7] == 0 or s[pw:7] == intbv(h8)[pw - 7:]:
                y.next = s[16:]
            elif s[msb]:
                y.next = 0xFF80
            else:
                y.next = 0x007F

    return _sext(acc, ax), resize(mult, mx), sc


@block
def _post(ya, yb, relu, pool, o):
    """``o = relu(ya)``, or with ``pool`` the larger of ``relu(ya)`` and ``relu(yb)``
    (16-bit two's complement)."""

    @always_comb
    def pp():
        va = intbv(0)[16:]
        vb = intbv(0)[16:]
        va[:] = ya
        vb[:] = yb
        if relu and ya[15]:
            va[:] = 0
        if relu and yb[15]:
            vb[:] = 0
        if pool and concat(not vb[15], vb[15:]) > concat(not va[15], va[15:]):
            o.next = vb
        else:
            o.next = va

    return pp


@block
def _out_index(iss, es16, idx, e: int):
    """``idx = (iss << (es16 ? 1 : 2)) + e`` modulo ``2**len(idx)``: the lane of element
    ``e`` of result word ``iss``; elements 2 and 3 only in int8 words (an int16 word
    carries two elements: their index ignores ``es16``)."""
    lb = len(idx)
    ec = e
    wide = e < 2
    if lb == 2:  # n_max = 4: one int8 word (lanes 0..3), two int16 words
        # (not folded: without es16 this index reads no signal, a block MyHDL refuses)

        @always_comb
        def ix2():
            if es16:
                idx.next = concat(iss[0], bool(0)) + ec
            else:
                idx.next = ec

        return ix2

    @always_comb
    @generate_if("wide")
    def ix():
        b = intbv(0)[lb:]
        if wide and es16:
            b[:] = concat(iss[lb - 1:], bool(0))
        else:
            b[:] = concat(iss[lb - 2:], intbv(0)[2:])
        idx.next = b + ec

    return ix


# ---------------------------------------------------------------------------------------
# the kernel


@block
def host_kernel(clk, rst, cmd_valid, cmd_ready, cmd_m, cmd_n, cmd_k, cmd_act, cmd_wgt, cmd_out, cmd_es16, cmd_relu,
                cmd_pool, cmd_mult, cmd_shift, k_abort, busy, cpl_valid, cpl_ready, cpl_status, cpl_cycles, req_valid,
                req_ready, req_we, req_addr, req_wdata, rsp_valid, rsp_rdata, rsp_err, fmt: HostParams):
    """The kernel. Ports: :func:`kernel_ports`; behaviour: the module docstring."""
    p = check_host(fmt, "host_kernel")
    w = kernel_widths(p)
    aww, nmax, q = p.aww, p.n_max, p.mem_q
    mb, nb, kb, lb, eb, rwb, bw, ob = w.mb, w.nb, w.kb, w.lb, w.eb, w.rwb, w.bw, w.ob
    insts = []

    # ---- the command's fields at their internal widths (the front end checked them)
    m_in, n_in, k_in = new_vec(mb), new_vec(nb), new_vec(kb)
    m_unused, n_unused, k_unused = new_vec(DIM_BITS - mb), new_vec(DIM_BITS - nb), new_vec(DIM_BITS - kb)
    insts += [split_low(cmd_m, m_in, m_unused), split_low(cmd_n, n_in, n_unused), split_low(cmd_k, k_in, k_unused)]

    # ---- registers
    st = new_vec(3)
    r_m, r_n, r_k = new_vec(mb), new_vec(nb), new_vec(kb)
    es16, relu, pool = new_bool(), new_bool(), new_bool()
    mult, shift = new_vec(16), new_vec(5)
    wptr, aptr, optr = new_vec(aww), new_vec(aww), new_vec(aww)
    blen, iss, rcv = new_vec(bw), new_vec(bw), new_vec(bw)
    rk, kc = new_vec(eb), new_vec(eb)
    rn = new_vec(nb)
    row = new_vec(mb)
    outs = new_vec(ob)
    status = new_vec(4)
    cyc = new_vec(p.cnt_bits)  # the exec-cycles counter: wraps modulo 2**cnt_bits

    # ---- combinational control
    ww, wa, wo = new_vec(bw), new_vec(bw), new_vec(bw)
    kn = new_vec(bw + 2)  # k_max n_max < 2**(bw + 1), and bw + 2 >= kb + nb
    kx, nx = new_vec(bw + 2), new_vec(bw + 2)
    fire, last_rsp, stop, err_now = (new_bool() for _ in range(4))
    outs_nx = new_vec(ob)
    kc1, row1 = new_vec(kb), new_vec(mb)
    kcx, rowx = new_vec(kb), new_vec(mb)
    res_row = new_bool()
    insts += [resize(r_k, kx), resize(r_n, nx), resize(kc, kcx), resize(row, rowx)]
    s_idle, s_setup, s_wgt, s_act, s_mac, s_out, s_drain, s_done = (S_IDLE, S_SETUP, S_WGT, S_ACT, S_MAC, S_OUT,
                                                                     S_DRAIN, S_DONE)
    st_ok, st_err, st_abt = ST_OK, ST_MEM_ERR, ST_ABORTED

    @always_comb
    def words():
        kn.next = kx * nx
        if es16:
            ww.next = kn[bw + 1:1]
            wa.next = concat(intbv(0)[bw - kb + 1:], r_k[kb:1])
            wo.next = concat(intbv(0)[bw - nb + 1:], r_n[nb:1])
        else:
            ww.next = kn[bw + 2:2]
            wa.next = concat(intbv(0)[bw - kb + 2:], r_k[kb:2])
            wo.next = concat(intbv(0)[bw - nb + 2:], r_n[nb:2])

    @always_comb
    def control():
        busy.next = st != s_idle and st != s_done
        cmd_ready.next = st == s_idle
        cpl_valid.next = st == s_done
        cpl_status.next = status
        cpl_cycles.next = cyc
        kc1.next = kcx + 1
        row1.next = rowx + 1
        res_row.next = not pool or row[0]

    rv = new_bool()

    @always_comb
    def request():
        rv.next = (st == s_wgt or st == s_act or st == s_out) and iss != blen and (outs < q or rsp_valid)
        req_valid.next = (st == s_wgt or st == s_act or st == s_out) and iss != blen and (outs < q or rsp_valid)
        req_we.next = st == s_out
        if st == s_wgt:
            req_addr.next = wptr
        elif st == s_act:
            req_addr.next = aptr
        else:
            req_addr.next = optr

    @always_comb
    def fires():
        fire.next = rv and req_ready

    @always_comb
    def responses():
        o = intbv(0)[ob:]
        o[:] = outs
        if fire:
            o[:] = o + 1
        if rsp_valid:
            o[:] = o - 1
        outs_nx.next = o
        last_rsp.next = rsp_valid and rcv + 1 == blen
        err_now.next = rsp_valid and rsp_err
        stop.next = (st == s_setup or st == s_wgt or st == s_act or st == s_mac or st == s_out) and (
            (rsp_valid and rsp_err) or k_abort)

    @always_seq(clk.posedge, reset=rst)
    def fsm():
        outs.next = outs_nx
        if st != s_idle and st != s_done:
            cyc.next = cyc + 1
        if st == s_idle:
            if cmd_valid:
                r_m.next = m_in
                r_n.next = n_in
                r_k.next = k_in
                es16.next = cmd_es16
                relu.next = cmd_relu
                pool.next = cmd_pool
                mult.next = cmd_mult
                shift.next = cmd_shift
                wptr.next = cmd_wgt
                aptr.next = cmd_act
                optr.next = cmd_out
                row.next = 0
                cyc.next = 0
                status.next = st_ok
                st.next = s_setup
        elif st == s_done:
            if cpl_ready:
                st.next = s_idle
        elif st == s_drain:
            if outs_nx == 0:
                st.next = s_done
        elif stop:
            if err_now:
                status.next = st_err
            else:
                status.next = st_abt
            if outs_nx == 0:
                st.next = s_done
            else:
                st.next = s_drain
        elif st == s_setup:
            blen.next = ww
            iss.next = 0
            rcv.next = 0
            rk.next = 0
            rn.next = 0
            st.next = s_wgt
        elif st == s_mac:  # iss and rcv are 0 here: the A burst's last response cleared them
            kc.next = kc + 1
            if kc1 == r_k:
                if res_row:
                    blen.next = wo
                    st.next = s_out
                else:
                    blen.next = wa
                    row.next = row + 1
                    st.next = s_act
        else:  # a burst: W, A or O
            if fire:
                iss.next = iss + 1
                if st == s_wgt:
                    wptr.next = wptr + 1
                elif st == s_act:
                    aptr.next = aptr + 1
                else:
                    optr.next = optr + 1
            if rsp_valid:
                rcv.next = rcv + 1
                if st == s_wgt:
                    if es16:
                        if rn + 2 == r_n:
                            rn.next = 0
                            rk.next = rk + 1
                        else:
                            rn.next = rn + 2
                    else:
                        if rn + 4 == r_n:
                            rn.next = 0
                            rk.next = rk + 1
                        else:
                            rn.next = rn + 4
            if last_rsp:
                iss.next = 0
                rcv.next = 0
                if st == s_wgt:
                    blen.next = wa
                    st.next = s_act
                elif st == s_act:
                    kc.next = 0
                    st.next = s_mac
                elif row1 == r_m:
                    st.next = s_done
                else:
                    blen.next = wa
                    row.next = row + 1
                    st.next = s_act

    insts += [words, control, request, fires, responses, fsm]

    # ---- the activation row buffer: k_max / 2 words (an int16 row), word j at index j
    rowbuf = [new_vec(32) for _ in range(p.k_max // 2)]
    rb_w = new_vec(rwb)
    rb_unused = new_vec(bw - rwb)
    insts.append(split_low(rcv, rb_w, rb_unused))
    rb_we = new_bool()

    @always_comb
    def rb_strobe():
        rb_we.next = st == s_act and rsp_valid

    @always(clk.posedge)
    def rb_write():
        if rb_we:
            rowbuf[rb_w].next = rsp_rdata

    insts += [rb_strobe, rb_write]
    rb_r, rb_q = new_vec(rwb), new_vec(32)
    a16, a32 = new_vec(16), new_vec(32)
    if eb - 2 > 0:

        @always_comb
        def rb_index():
            if es16:
                rb_r.next = kc[eb:1]
            else:
                rb_r.next = concat(bool(0), kc[eb:2])

    else:  # k_max = 4: one int8 word

        @always_comb
        def rb_index():
            if es16:
                rb_r.next = kc[eb:1]
            else:
                rb_r.next = 0

    @always_comb
    def rb_elem():
        bsel = intbv(0)[8:]
        if es16:
            if kc[0]:
                a16.next = rb_q[32:16]
            else:
                a16.next = rb_q[16:0]
        else:
            bsel[:] = 0
            if kc[2:0] == 0:
                bsel[:] = rb_q[8:0]
            elif kc[2:0] == 1:
                bsel[:] = rb_q[16:8]
            elif kc[2:0] == 2:
                bsel[:] = rb_q[24:16]
            else:
                bsel[:] = rb_q[32:24]
            if bsel[7]:
                a16.next = concat(intbv(0xFF)[8:], bsel)
            else:
                a16.next = concat(intbv(0)[8:], bsel)

    insts += [rb_index, mem_read(rowbuf, rb_r, rb_q), rb_elem, _sext(a16, a32)]

    # ---- weight lanes and MAC lanes
    w_we, mac_en, first = new_bool(), new_bool(), new_bool()

    @always_comb
    def lane_ctl():
        w_we.next = st == s_wgt and rsp_valid
        mac_en.next = st == s_mac
        first.next = kc == 0

    insts.append(lane_ctl)
    accs = [new_vec(p.acc_bits) for _ in range(nmax)]
    saves = [new_vec(p.acc_bits) for _ in range(nmax)]
    for n in range(nmax):
        wq = new_vec(16)
        insts += [_wlane(clk, w_we, es16, rn, rk, kc, rsp_rdata, wq, n, p),
                  _mac_lane(clk, rst, a32, wq, mac_en, first, accs[n], saves[n], p)]

    # ---- the result word being issued: lanes iss*epw + e, scaled, ReLU, pooled, packed
    ys = []
    for e in range(4):
        idx = new_vec(lb)
        asel, ssel = new_vec(p.acc_bits), new_vec(p.acc_bits)
        ya, yb, o = new_vec(16), new_vec(16), new_vec(16)
        insts += [_out_index(iss, es16, idx, e), mem_read(accs, idx, asel), mem_read(saves, idx, ssel),
                  _scaler(asel, mult, shift, es16, ya, p, e < 2), _scaler(ssel, mult, shift, es16, yb, p, e < 2),
                  _post(ya, yb, relu, pool, o)]
        ys.append(o)
    o0, o1, o2, o3 = ys

    @always_comb
    def pack():
        if es16:
            req_wdata.next = concat(o1, o0)
        else:
            req_wdata.next = concat(o3[8:], o2[8:], o1[8:], o0[8:])

    insts.append(pack)
    return insts


def kernel_timing(fmt: HostParams) -> dict:
    """Timing facts of the kernel (recorded in the JSON sidecar)."""
    return {
        "take": "cycle 0: cmd_valid and cmd_ready",
        "busy": "cycles 1 .. E, E = models.host.exec_cycles without stalls",
        "exec_cycles": "1 + (wW + L) + M (wA + L + K) + M' (wO + L)",
        "completion": "offered from E + 1 until cpl_ready; idle the cycle after",
        "mem_lat": fmt.mem_lat,
        "max_outstanding": fmt.mem_q,
        "counter_bits": fmt.cnt_bits,
    }


def emit_kernel(fmt: HostParams, outdir: Path | str, name: str = "host_kernel") -> Emitted:
    """Write the kernel for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a HostParams, or ``name`` is a keyword.
    """
    check_host(fmt, name)
    return emit_stream_unit(host_kernel, fmt, HostParams, kernel_ports, outdir, name, family="host",
                            timing=kernel_timing(fmt),
                            doc="host kernel (spec 002): phase-sequential MATMUL, n_max MAC lanes, scaler, ReLU, "
                                "2x1 max-pool, one memory port")
