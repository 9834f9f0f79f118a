"""``gemm_tile``: the GEMM tile of the gemm family (docs/gemm.md sections 4 to 10).

One job: a CSR write of ``CTRL`` with bit 0 (START) while idle. Cycle 0 is that write's
cycle; the tile then

* explicit mode: evaluates every check of section 7 in cycle 0 on the CSR registers and
  the written COPY bit, and either refuses (``done`` in cycle 1) or starts the AGU
  (first request in cycle 1);
* auto mode: refuses at once on BAD_DIM, BAD_LD or MISALIGNED (``done`` in cycle 1, only
  those bits), else starts ``kernel_select`` in cycle 0 (cycles ``1 .. sel_cycles``);
  in the selector's ``done`` cycle every check is evaluated on its kernel, and the tile
  refuses (``done`` in cycle ``sel_cycles + 1``) or starts the AGU (first request in
  cycle ``sel_cycles + 1``);
* ``done`` pulses in the cycle after the last request's last cycle (section 6).

Datapath (every action in a request's last cycle, the ``rq_done`` cycle of
:func:`~.agu.gemm_agu`): the memory port reads ``V`` elements at the request's element
index (combinational); B_LD loads B register ``j``; A_LD / BUF_LD take lane 0 as ``a`` and
do ``zb`` vector FMAs on accumulator row ``r`` (read, multiply-add in ``accw`` bits, write
back at the clock edge; the first FMA of a block writes ``a*b``); COPY_RD loads the copy
register, COPY_WR writes it (lanes ``< kb``); C_WR writes ``sat(acc[r][j] >> shift)``
(lanes ``< nb_j``; zeros when ``K = 0``).

The accumulator is a memory of ``m_max`` rows of ``z_max * V`` lanes of ``accw`` bits
(lane ``(j, l)`` at bit ``(j*V + l) * accw``), one row read and written per cycle.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..common import (
    Emitted, bit_of, cat_lanes, const0, emit_stream_unit, lane, mem_read, new_bool, new_vec, port, resize,
    split_low, wire,
)
from .agu import KIND, agu_ports, gemm_agu, gemm_widths
from .cache import sa_cache
from .detect import check_gemm, detect_widths
from .select import kernel_select, select_widths

__all__ = [
    "CNT_BASE",
    "CNT_BITS",
    "CSR_READ",
    "CSR_WRITE",
    "CTRL_BITS",
    "emit_tile",
    "gemm_tile",
    "tile_ports",
    "tile_timing",
]

#: CSR write map (docs/gemm.md section 9): name -> address; each reads back at its address.
CSR_WRITE = {n: i for i, n in enumerate(("CTRL", "M", "N", "K", "LDA", "LDB", "LDC", "BASE_A", "BASE_B", "BASE_C",
                                         "BASE_BUF", "BUF_LEN", "MBLK", "ZBLK", "KEEP", "SHIFT"))}
#: Read-only CSRs.
CSR_READ = {n: 16 + i for i, n in enumerate(("STATUS", "ERR", "SEL_M", "SEL_Z", "SEL_KEEP", "SEL_PROG", "DET_WORST",
                                             "DET_KEEP", "DET_FLAGS"))}
#: ``CTRL`` bits.
CTRL_BITS = {"START": 0, "AUTO": 1, "COPY": 2, "LIMIT_M": 3}
#: ``DET_FLAGS`` bits.
DET_FLAG_BITS = {"conflict": 0, "aligned": 1, "way_multiple": 2, "way_fraction": 3}
#: Address of the first counter (``GemmParams.COUNTERS`` order).
CNT_BASE = 32
#: CSR data width (a counter, ``GemmParams.cnt_bits`` wide, reads zero-extended).
CNT_BITS = 32
#: CSR address bits.
CSR_AW = 6
#: Width of the checks' signed arithmetic: extents reach ``2**73`` bytes (a 32-bit
#: ``ceil(K/V)`` times a 32-bit ``m - keep`` times ``V*eb <= 256``, plus a base).
CHK_W = 76
#: Tile states.
S_IDLE, S_SEL, S_RUN = range(3)
#: The errors a start in auto mode checks before the selection.
PRE_CHECKS = ("BAD_DIM", "BAD_LD", "MISALIGNED")


def _err(name: str) -> int:
    return GemmParams.ERR_NAMES.index(name)


# ---------------------------------------------------------------------------------------
# configuration checks (section 7)


@block
def _sx(src, dst, signed: bool):
    """``dst = src`` sign- (``signed``) or zero-extended to ``len(dst)``."""
    ws, wd = len(src), len(dst)
    if not signed:
        return resize(src, dst)
    k = wd - ws
    ones = (1 << k) - 1
    msb = ws - 1

    @always_comb
    def sext():
        if src[msb]:
            dst.next = concat(intbv(ones)[k:], src)
        else:
            dst.next = concat(intbv(0)[k:], src)

    return sext


@block
def _checks(dim_m, dim_n, dim_k, lda, ldb, ldc, base_a, base_b, base_c, base_buf, buf_len, km, kz, kkeep, kcopy,
            shift, bits, fmt: GemmParams):
    """``bits``: the failing checks of section 7 (bit ``i`` = ``ERR_NAMES[i]``, START_BUSY
    excluded), combinational, in ``CHK_W``-bit two's complement (every value exact).

    Extents are half-open; A, B and C are empty when a dimension is 0 (or, with a refused
    leading dimension, when the formula's length is not positive); the buffer is empty
    without copy or when ``keep >= m``."""
    p = fmt
    wd = gemm_widths(p)
    w = CHK_W
    lg_eb, lg_v, lg_veb = wd.lg_eb, wd.lg_v, wd.lg_v + wd.lg_eb
    vm1 = p.v - 1
    mem_bytes = p.mem_elems * p.eb  # <= 2**aw (GemmParams), so "beyond 2**aw" is included
    dim_lim = 1 << p.dimw
    aw = p.aw
    m_max, z_max, r_hw, accw = p.m_max, p.z_max, p.r_hw, p.accw
    msb = w - 1
    b_dim, b_ld, b_mis, b_blk, b_buf, b_oob, b_ovl = (_err(n) for n in (
        "BAD_DIM", "BAD_LD", "MISALIGNED", "BAD_BLOCK", "BUF_OVF", "OOB", "OVERLAP"))
    nb = len(bits)
    mx, nx, kx = new_vec(w), new_vec(w), new_vec(w)
    lax, lbx, lcx = new_vec(w), new_vec(w), new_vec(w)
    bax, bbx, bcx, bfx, blx = new_vec(w), new_vec(w), new_vec(w), new_vec(w), new_vec(w)
    kmx, kzx, kkx, shx = new_vec(w), new_vec(w), new_vec(w), new_vec(w)
    a_hi, b_hi, c_hi, f_hi = new_vec(w), new_vec(w), new_vec(w), new_vec(w)
    a_ne, b_ne, c_ne, f_ne = new_bool(), new_bool(), new_bool(), new_bool()
    f_len = new_vec(w)
    mis = new_bool()
    insts = [_sx(dim_m, mx, False), _sx(dim_n, nx, False), _sx(dim_k, kx, False), _sx(lda, lax, True),
             _sx(ldb, lbx, True), _sx(ldc, lcx, True), _sx(base_a, bax, False), _sx(base_b, bbx, False),
             _sx(base_c, bcx, False), _sx(base_buf, bfx, False), _sx(buf_len, blx, False), _sx(km, kmx, False),
             _sx(kz, kzx, False), _sx(kkeep, kkx, False), _sx(shift, shx, False)]

    @always_comb
    def extents():
        t = intbv(0)[w:]
        d = intbv(0)[w:]
        # A: [base_a, base_a + ((M-1)*lda + K)*eb)
        t[:] = mx - 1
        t[:] = t * lax
        t[:] = t + kx
        t[:] = t << lg_eb
        a_hi.next = bax + t
        a_ne.next = mx != 0 and kx != 0 and t != 0 and not t[msb]
        # B: [base_b, base_b + ((K-1)*ldb + N)*eb)
        t[:] = kx - 1
        t[:] = t * lbx
        t[:] = t + nx
        t[:] = t << lg_eb
        b_hi.next = bbx + t
        b_ne.next = kx != 0 and nx != 0 and t != 0 and not t[msb]
        # C: [base_c, base_c + ((M-1)*ldc + N)*eb)
        t[:] = mx - 1
        t[:] = t * lcx
        t[:] = t + nx
        t[:] = t << lg_eb
        c_hi.next = bcx + t
        c_ne.next = mx != 0 and nx != 0 and t != 0 and not t[msb]
        # buffer: [base_buf, base_buf + ceil(K/V) * (m - keep) * V * eb), copy on and keep < m
        d[:] = kx + vm1
        d[:] = d >> lg_v
        if kkx < kmx:
            t[:] = kmx - kkx
        else:
            t[:] = 0
        t[:] = d * t
        t[:] = t << lg_veb
        f_len.next = t
        f_hi.next = bfx + t
        f_ne.next = kcopy and t != 0

    if lg_eb:

        @always_comb
        def align():
            mis.next = (base_a[lg_eb:] != 0 or base_b[lg_eb:] != 0 or base_c[lg_eb:] != 0
                        or base_buf[lg_eb:] != 0)

        insts.append(align)
    else:
        mis = const0(1)  # eb = 1: every base is aligned

    @always_comb
    def judge():
        e = intbv(0)[nb:]
        d = intbv(0)[w:]
        t = intbv(0)[w:]
        o = bool(0)
        q = bool(0)
        # BAD_DIM
        e[b_dim] = mx >= dim_lim or nx >= dim_lim or kx >= dim_lim
        # BAD_LD: ld < max(dim, 1) (signed), or the byte stride ld*eb >= 2**aw
        o = False
        t[:] = kx
        if kx == 0:
            t[:] = 1
        d[:] = lax - t
        o = o or d[msb]
        t[:] = nx
        if nx == 0:
            t[:] = 1
        d[:] = lbx - t
        o = o or d[msb]
        d[:] = lcx - t
        o = o or d[msb]
        d[:] = lax << lg_eb
        d[:] = d >> aw
        o = o or d != 0
        d[:] = lbx << lg_eb
        d[:] = d >> aw
        o = o or d != 0
        d[:] = lcx << lg_eb
        d[:] = d >> aw
        o = o or d != 0
        e[b_ld] = o
        e[b_mis] = mis
        # BAD_BLOCK
        o = kmx == 0 or kmx > m_max or kzx == 0 or kzx > z_max or kkx > kmx or shx >= accw
        d[:] = kzx - 1
        d[:] = d & kzx
        o = o or d != 0
        d[:] = kmx + 1
        d[:] = d * kzx
        o = o or d >= r_hw
        e[b_blk] = o
        # BUF_OVF
        e[b_buf] = kcopy and f_len > blx
        # OOB: a non-empty extent ends beyond the memory
        o = a_ne and a_hi > mem_bytes
        o = o or (b_ne and b_hi > mem_bytes)
        o = o or (c_ne and c_hi > mem_bytes)
        o = o or (f_ne and f_hi > mem_bytes)
        # OOB and OVERLAP only when BAD_DIM and BAD_LD are clear (extents undefined otherwise)
        q = e[b_dim] or e[b_ld]
        e[b_oob] = o and not q
        # OVERLAP: [x0, x1) meets [y0, y1) when both are non-empty, x0 < y1 and y0 < x1
        o = False
        d[:] = bcx - a_hi
        t[:] = bax - c_hi
        o = o or (c_ne and a_ne and d[msb] and t[msb])
        d[:] = bcx - b_hi
        t[:] = bbx - c_hi
        o = o or (c_ne and b_ne and d[msb] and t[msb])
        d[:] = bfx - a_hi
        t[:] = bax - f_hi
        q = f_ne and a_ne and d[msb] and t[msb]
        o = o or q
        d[:] = bfx - b_hi
        t[:] = bbx - f_hi
        q = f_ne and b_ne and d[msb] and t[msb]
        o = o or q
        d[:] = bfx - c_hi
        t[:] = bcx - f_hi
        q = f_ne and c_ne and d[msb] and t[msb]
        o = o or q
        q = e[b_dim] or e[b_ld]
        e[b_ovl] = o and not q
        bits.next = e

    return insts, extents, judge


# ---------------------------------------------------------------------------------------
# CSR block, control, counters


@block
def _csr_reg(clk, rst, csr_we, csr_addr, csr_wdata, idle, addr: int, q, lo: int = 0):
    """CSR register ``q`` at ``addr``: ``q <= csr_wdata[lo +: len(q)]`` on a write while idle
    (a job's configuration holds until ``done``)."""
    ac, hi = addr, lo + len(q)

    @always_seq(clk.posedge, reset=rst)
    def wr():
        if csr_we and idle and csr_addr == ac:
            q.next = csr_wdata[hi:lo]

    return wr


@block
def _ctl(clk, rst, st, auto_w, copy_w, mblk, zblk, keep_r, chk, sel_done, sel_prog, sel_m, sel_z, sel_keep,
         sel_worst, sel_keep_all, sel_conflict, sel_aligned, sel_wm, sel_wf, agu_fin, state, go, sel_start, done,
         err, ek_m, ek_z, ek_keep, ek_copy, jm, jz, jkeep, jcopy, r_selm, r_selz, r_selkeep, r_selprog, r_worst,
         r_detkeep, r_flags, fmt: GemmParams):
    """The job's control: states IDLE -> (SEL) -> RUN -> IDLE, refusals, ``err``, the
    kernel (``ek_*`` to the checks, ``j*`` latched for the AGU) and the SEL_*/DET_* CSRs."""
    s_idle, s_sel, s_run = S_IDLE, S_SEL, S_RUN
    b_busy = _err("START_BUSY")
    pre = sum(1 << _err(n) for n in PRE_CHECKS)
    p_copy, p_norm = GemmParams.PROGS.index("OVERFLOW_COPY"), GemmParams.PROGS.index("NORMAL")
    nerr = len(err)
    nchk = len(chk)
    mw, zw = len(jm), len(jz)
    assert tuple(DET_FLAG_BITS) == ("conflict", "aligned", "way_multiple", "way_fraction")  # r_flags' concat
    mx, zx, kx = new_vec(CNT_BITS), new_vec(CNT_BITS), new_vec(CNT_BITS)
    selc = new_bool()
    bad, prebad = new_bool(), new_bool()
    mlo, zlo, klo = new_vec(mw), new_vec(zw), new_vec(mw)
    mhi_unused, zhi_unused, khi_unused = new_vec(CNT_BITS - mw), new_vec(CNT_BITS - zw), new_vec(CNT_BITS - mw)

    @always_comb
    def eff():
        if state == s_sel:
            ek_m.next = mx
            ek_z.next = zx
            ek_keep.next = kx
            ek_copy.next = selc
        else:
            ek_m.next = mblk
            ek_z.next = zblk
            ek_keep.next = keep_r
            ek_copy.next = copy_w

    @always_comb
    def decide():
        bad.next = chk != 0
        prebad.next = (chk & pre) != 0
        sel_start.next = st and state == s_idle and auto_w and (chk & pre) == 0
        go.next = (st and state == s_idle and not auto_w and chk == 0) or (state == s_sel and sel_done and chk == 0)

    @always_comb
    def lows():
        mlo.next = mblk[mw:]
        zlo.next = zblk[zw:]
        klo.next = keep_r[mw:]
        mhi_unused.next = mblk[CNT_BITS:mw]
        zhi_unused.next = zblk[CNT_BITS:zw]
        khi_unused.next = keep_r[CNT_BITS:mw]

    @always_seq(clk.posedge, reset=rst)
    def regs():
        e = intbv(0)[nerr:]
        c = intbv(0)[nerr:]
        e[:] = err
        c[:] = 0
        c[nchk:] = chk
        done.next = 0
        if st and state != s_idle:
            e[b_busy] = 1
        if st and state == s_idle:
            if auto_w:
                if prebad:
                    e[:] = e | (c & pre)
                    done.next = 1
                else:
                    state.next = s_sel
            elif bad:
                e[:] = e | c
                done.next = 1
        elif state == s_sel and sel_done and bad:
            e[:] = e | c
            done.next = 1
            state.next = s_idle
        if go:
            state.next = s_run
            if state == s_sel:
                jm.next = sel_m
                jz.next = sel_z
                jkeep.next = sel_keep
                jcopy.next = sel_prog == p_copy
                r_selm.next = sel_m
                r_selz.next = sel_z
                r_selkeep.next = sel_keep
                r_selprog.next = sel_prog
                r_worst.next = sel_worst
                r_detkeep.next = sel_keep_all
                r_flags.next = concat(sel_wf, sel_wm, sel_aligned, sel_conflict)
            else:
                jm.next = mlo
                jz.next = zlo
                jkeep.next = klo
                jcopy.next = copy_w
                r_selm.next = mlo
                r_selz.next = zlo
                r_selkeep.next = klo
                if copy_w:
                    r_selprog.next = p_copy
                else:
                    r_selprog.next = p_norm
                r_worst.next = 0
                r_detkeep.next = 0
                r_flags.next = 0
        if agu_fin:
            done.next = 1
            state.next = s_idle
        err.next = e

    @always_comb
    def selcopy():
        selc.next = sel_prog == p_copy

    return resize(sel_m, mx), resize(sel_z, zx), resize(sel_keep, kx), eff, decide, lows, regs, selcopy


#: The tile's own counters (the cache counts lookups, hits, misses and evictions), in
#: the order of ``cnt`` in :func:`_counters`.
OWN_COUNTERS = ("cycles", "sel_cycles", "n_fma", "n_mem_wr") + tuple(f"{k}_req" for k in GemmParams.KINDS)


@block
def _counter(clk, rst, clr, init: int, en, q, inc=None):
    """``q``: 0 after ``rst``, ``init`` after ``clr`` (a start in idle), else ``q + inc``
    (``inc`` None: 1) in every cycle with ``en`` (``len(q)`` bits, wrapping)."""
    ini = init
    if inc is None:

        @always_seq(clk.posedge, reset=rst)
        def c1():
            if clr:
                q.next = ini
            elif en:
                q.next = q + 1

        return c1

    @always_seq(clk.posedge, reset=rst)
    def c():
        if clr:
            q.next = ini
        elif en:
            q.next = q + inc

    return c


@block
def _count_events(busy, in_sel, tr_valid, rq_done, kind, fma_zb, en, inc_fma):
    """Increment enables of :data:`OWN_COUNTERS` (bit ``i`` for counter ``i``): busy
    cycles, selection cycles, A_LD/BUF_LD (``inc_fma = zb``), COPY_WR/C_WR, and the first
    cycle of a request of each kind."""
    i_cyc, i_sel, i_fma, i_wr = (OWN_COUNTERS.index(n) for n in ("cycles", "sel_cycles", "n_fma", "n_mem_wr"))
    i_req = [OWN_COUNTERS.index(f"{k}_req") for k in GemmParams.KINDS]
    k_a, k_buf, k_cwr, k_c = KIND["A_LD"], KIND["BUF_LD"], KIND["COPY_WR"], KIND["C_WR"]
    n = len(en)
    nk = len(GemmParams.KINDS)
    assert i_req == list(range(4, 4 + nk)) and (i_cyc, i_sel, i_fma, i_wr) == (0, 1, 2, 3)

    @always_comb
    def ev():
        e = intbv(0)[n:]
        e[0] = busy
        e[1] = in_sel
        e[2] = rq_done and (kind == k_a or kind == k_buf)
        e[3] = rq_done and (kind == k_cwr or kind == k_c)
        e[4] = tr_valid and kind == 0
        e[5] = tr_valid and kind == 1
        e[6] = tr_valid and kind == 2
        e[7] = tr_valid and kind == 3
        e[8] = tr_valid and kind == 4
        e[9] = tr_valid and kind == 5
        en.next = e

    assert nk == 6 and n == 10
    return ev, resize(fma_zb, inc_fma)


@block
def _csr_read(csr_raddr, lo_tab, hi_tab, hi_base: int, csr_rdata):
    """``csr_rdata``: ``lo_tab[a]`` for ``a < len(lo_tab)``, ``hi_tab[a - hi_base]`` for
    ``hi_base <= a < hi_base + len(hi_tab)``, else 0."""
    nlo, nhi, hb = len(lo_tab), len(hi_tab), hi_base
    aw = len(csr_raddr)
    lb, hbits = max(1, clog2(nlo)), max(1, clog2(nhi))
    hidx = new_vec(aw)
    li, hi = new_vec(lb), new_vec(hbits)
    hi_unused = new_vec(aw - hbits) if aw > hbits else None
    lo_unused = new_vec(aw - lb) if aw > lb else None

    @always_comb
    def idx():
        hidx.next = csr_raddr - hb

    @always_comb
    def rd():
        if csr_raddr < nlo:
            csr_rdata.next = lo_tab[li]
        elif csr_raddr >= hb and hidx < nhi:
            csr_rdata.next = hi_tab[hi]
        else:
            csr_rdata.next = 0

    insts = [idx, rd]
    insts.append(split_low(hidx, hi, hi_unused) if hi_unused is not None else wire(hidx, hi))
    insts.append(split_low(csr_raddr, li, lo_unused) if lo_unused is not None else wire(csr_raddr, li))
    return insts


# ---------------------------------------------------------------------------------------
# microkernel, B registers, copy register, memory port


@block
def _acc_mem(clk, we, addr, din, dout, acc):
    """The accumulator rows: ``dout = acc[addr]`` (combinational); ``acc[addr] <= din``
    when ``we``. No reset: the first FMA of a block writes."""

    @always(clk.posedge)
    def write():
        if we:
            acc[addr].next = din

    @always_comb
    def read():
        dout.next = acc[addr]

    return write, read


@block
def _fma_lane(old, ax, b, en, first, new, fmt: GemmParams):
    """One accumulator lane: ``new = (first ? 0 : old) + ax * b`` when ``en`` (``b`` a signed
    ``8*eb``-bit element, ``ax`` already sign-extended; ``accw`` bits, wrapping), else
    ``old``."""
    accw, ew = fmt.accw, fmt.ew
    bx = new_vec(accw)

    @always_comb
    def fma():
        if en:
            if first:
                new.next = ax * bx
            else:
                new.next = old + ax * bx
        else:
            new.next = old

    return _sx(b, bx, True) if accw > ew else wire(b, bx), fma


@block
def _breg(clk, rst, ld, din, q):
    """``q <= din`` when ``ld``."""

    @always_seq(clk.posedge, reset=rst)
    def r():
        if ld:
            q.next = din

    return r


@block
def _c_lane(acc, shift, kz, out, fmt: GemmParams):
    """One C_WR lane: ``out = sat(acc >> shift)`` (arithmetic shift, saturation to signed
    ``8*eb`` bits); 0 when ``K = 0`` (``kz``: no FMA reached the block)."""
    accw, ew = fmt.accw, fmt.ew
    ones = (1 << accw) - 1
    smax, smin = (1 << (ew - 1)) - 1, 1 << (ew - 1)
    hones = (1 << (accw - ew + 1)) - 1
    msb = accw - 1
    if accw == ew:

        @always_comb
        def shr():
            sh = intbv(0)[accw:]
            sh[:] = acc >> shift
            if acc[msb]:
                sh[:] = sh | ~(intbv(ones)[accw:] >> shift)
            if kz:
                out.next = 0
            else:
                out.next = sh

        return shr

    @always_comb
    def shr_sat():
        sh = intbv(0)[accw:]
        hi = intbv(0)[accw - ew + 1:]
        sh[:] = acc >> shift
        if acc[msb]:
            sh[:] = sh | ~(intbv(ones)[accw:] >> shift)
        hi[:] = sh[accw:ew - 1]
        if kz:
            out.next = 0
        elif hi == 0 or hi == hones:
            out.next = sh[ew:]
        elif sh[msb]:
            out.next = smin
        else:
            out.next = smax

    return shr_sat


@block
def _mem_ctl(rq_done, rq_kind, fma_we, cld, mem_we, c_sel, is_b):
    """Strobes of the request's last cycle: FMA (A_LD/BUF_LD), copy register load (``cld``),
    memory write (COPY_WR/C_WR); ``c_sel``: the write carries C (else the copy register);
    ``is_b``: a B_LD ends (its register ``j`` loads)."""
    k_a, k_b, k_buf, k_crd, k_cwr, k_c = (KIND[k] for k in ("A_LD", "B_LD", "BUF_LD", "COPY_RD", "COPY_WR", "C_WR"))

    @always_comb
    def strobes():
        fma_we.next = rq_done and (rq_kind == k_a or rq_kind == k_buf)
        cld.next = rq_done and rq_kind == k_crd
        mem_we.next = rq_done and (rq_kind == k_cwr or rq_kind == k_c)
        c_sel.next = rq_kind == k_c
        is_b.next = rq_done and rq_kind == k_b

    return strobes


@block
def _gt_const(x, i: int, out):
    """``out = x > i``."""
    ic = i

    @always_comb
    def c():
        out.next = x > ic

    return c


@block
def _sel_eq(en, x, i: int, out):
    """``out = en and x == i``."""
    ic = i

    @always_comb
    def c():
        out.next = en and x == ic

    return c


@block
def _wsel(c_sel, cdata, creg, wdata):
    """``wdata = cdata`` for C_WR, else the copy register."""

    @always_comb
    def s():
        if c_sel:
            wdata.next = cdata
        else:
            wdata.next = creg

    return s


# ---------------------------------------------------------------------------------------
# the tile


@block
def gemm_tile(clk, rst, csr_we, csr_addr, csr_wdata, csr_raddr, csr_rdata, mem_raddr, mem_rdata, mem_we, mem_waddr,
              mem_wdata, mem_wmask, tr_valid, tr_kind, tr_addr, tr_bytes, done, busy, fmt: GemmParams):
    """The GEMM tile. Ports: :func:`tile_ports`; behaviour: the module docstring."""
    p = check_gemm(fmt, "gemm_tile")
    wd = gemm_widths(p)
    dwd, swd = detect_widths(p), select_widths(p)
    v, ew, accw, zmax, dimw, aw, ea = p.v, p.ew, p.accw, p.z_max, p.dimw, p.aw, wd.ea
    insts = []

    # ---- CSRs
    names = list(CSR_WRITE)
    widths = {n: CNT_BITS for n in names}
    for n in ("BASE_A", "BASE_B", "BASE_C", "BASE_BUF"):
        widths[n] = aw
    R = {n: new_vec(widths[n]) for n in names[1:]}
    ctrl = new_vec(3)
    state = new_vec(2)
    idle = new_bool()
    st, st0 = new_bool(), new_bool()
    auto_w, copy_w, limit_w = new_bool(), new_bool(), new_bool()
    s_idle, s_sel = S_IDLE, S_SEL
    b_start, b_auto, b_copy, b_lim = (CTRL_BITS[k] for k in ("START", "AUTO", "COPY", "LIMIT_M"))
    in_sel = new_bool()

    @always_comb
    def start_of():
        st.next = csr_we and csr_addr == 0 and csr_wdata[b_start]
        st0.next = csr_we and csr_addr == 0 and csr_wdata[b_start] and state == s_idle
        idle.next = state == s_idle
        in_sel.next = state == s_sel
        busy.next = state != s_idle
        auto_w.next = csr_wdata[b_auto]
        copy_w.next = csr_wdata[b_copy]
        limit_w.next = csr_wdata[b_lim]

    insts.append(start_of)
    insts += [_csr_reg(clk, rst, csr_we, csr_addr, csr_wdata, idle, CSR_WRITE[n], q) for n, q in R.items()]
    insts.append(_csr_reg(clk, rst, csr_we, csr_addr, csr_wdata, idle, CSR_WRITE["CTRL"], ctrl, lo=b_auto))
    assert (b_auto, b_copy, b_lim) == (1, 2, 3)  # CTRL's stored bits 1..3, in that order

    # ---- selector
    sel_done, sel_busy, sel_err = new_bool(), new_bool(), new_bool()
    sel_prog, sel_m, sel_z, sel_keep = new_vec(swd.pgb), new_vec(swd.kb), new_vec(swd.zb), new_vec(swd.kb)
    sel_worst, sel_keep_all = new_vec(dwd.cb), new_vec(dwd.kb)
    sel_conflict, sel_aligned, sel_wm, sel_wf = new_bool(), new_bool(), new_bool(), new_bool()
    sel_cyc = new_vec(swd.sb)
    sel_start = new_bool()
    sel_n, sel_lda = new_vec(dimw), new_vec(dwd.lb)
    # lda = 0 never reaches the selector (BAD_LD is checked first), so its err is not needed
    insts += [resize(R["N"], sel_n), resize(R["LDA"], sel_lda),
              kernel_select(clk, rst, sel_start, sel_n, sel_lda, R["BASE_A"], limit_w, sel_done, sel_busy,
                            sel_err, sel_prog, sel_m, sel_z, sel_keep, sel_worst, sel_keep_all, sel_conflict,
                            sel_aligned, sel_wm, sel_wf, sel_cyc, fmt=p)]
    # not needed: busy (the tile's state says it), err (lda = 0 is refused by BAD_LD before the
    # selection), sel_cycles (the tile counts its SEL cycles itself)
    insts.append(_sink([sel_busy, sel_err, sel_cyc]))

    # ---- checks and control
    nchk = len(GemmParams.ERR_NAMES) - 1
    assert GemmParams.ERR_NAMES[-1] == "START_BUSY"
    chk = new_vec(nchk)
    err = new_vec(len(GemmParams.ERR_NAMES))
    ek_m, ek_z, ek_keep, ek_copy = new_vec(CNT_BITS), new_vec(CNT_BITS), new_vec(CNT_BITS), new_bool()
    insts.append(_checks(R["M"], R["N"], R["K"], R["LDA"], R["LDB"], R["LDC"], R["BASE_A"], R["BASE_B"], R["BASE_C"],
                         R["BASE_BUF"], R["BUF_LEN"], ek_m, ek_z, ek_keep, ek_copy, R["SHIFT"], chk, p))
    go, agu_fin = new_bool(), new_bool()
    jm, jz, jkeep, jcopy = new_vec(wd.mw), new_vec(wd.zw), new_vec(wd.mw), new_bool()
    r_selm, r_selz, r_selkeep, r_selprog = new_vec(wd.mw), new_vec(wd.zw), new_vec(wd.mw), new_vec(swd.pgb)
    r_worst, r_detkeep, r_flags = new_vec(dwd.cb), new_vec(dwd.kb), new_vec(len(DET_FLAG_BITS))
    insts.append(_ctl(clk, rst, st, auto_w, copy_w, R["MBLK"], R["ZBLK"], R["KEEP"], chk, sel_done, sel_prog, sel_m,
                      sel_z, sel_keep, sel_worst, sel_keep_all, sel_conflict, sel_aligned, sel_wm, sel_wf, agu_fin,
                      state, go, sel_start, done, err, ek_m, ek_z, ek_keep, ek_copy, jm, jz, jkeep, jcopy, r_selm,
                      r_selz, r_selkeep, r_selprog, r_worst, r_detkeep, r_flags, p))

    # ---- AGU and cache
    ap = agu_ports(p)
    A = {n: (new_bool() if ap[n]["width"] == 1 else new_vec(ap[n]["width"])) for n in ap if n not in ("clk", "rst")}
    dims = {"dim_m": "M", "dim_n": "N", "dim_k": "K", "lda": "LDA", "ldb": "LDB", "ldc": "LDC"}
    for an, rn in dims.items():
        insts.append(resize(R[rn], A[an]))
    for an, rn in (("ea_a", "BASE_A"), ("ea_b", "BASE_B"), ("ea_c", "BASE_C"), ("ea_buf", "BASE_BUF")):
        insts.append(_elem_index(R[rn], A[an], wd.lg_eb))
    A["go"], A["fin"] = go, agu_fin
    # the kernel the AGU walks: the one being accepted in the go cycle, then the latched one
    insts.append(_kernel_mux(go, ek_m, ek_z, ek_keep, ek_copy, jm, jz, jkeep, jcopy, A["blk_m"], A["blk_z"],
                             A["blk_keep"], A["copy_en"]))
    A["tr_valid"], A["tr_kind"], A["tr_addr"], A["tr_bytes"] = tr_valid, tr_kind, tr_addr, tr_bytes
    A["rq_eaddr"] = mem_raddr
    insts.append(gemm_agu(clk, rst, fmt=p, **A))
    nk = len(GemmParams.KINDS)
    lk_evict = new_bool()
    cb = p.cnt_bits  # the counters' width; they read zero-extended to CNT_BITS
    c_look, c_hit, c_miss, c_evict = new_vec(nk * cb), new_vec(nk * cb), new_vec(nk * cb), new_vec(cb)
    insts.append(sa_cache(clk, rst, st0, A["lk_valid"], A["lk_addr"], A["lk_kind"], A["lk_hit"], lk_evict,
                          c_look, c_hit, c_miss, c_evict, fmt=p))

    # not needed: the cache's lk_evict (it counts evictions itself), the AGU's busy (the
    # tile's state says it)
    insts.append(_sink([lk_evict, A["busy"]]))

    # ---- counters
    cnt = [new_vec(cb) for _ in OWN_COUNTERS]
    cnt_en, inc_fma = new_vec(len(OWN_COUNTERS)), new_vec(cb)
    insts.append(_count_events(busy, in_sel, tr_valid, A["rq_done"], A["rq_kind"], A["fma_zb"], cnt_en, inc_fma))
    for i, cname in enumerate(OWN_COUNTERS):
        eb_ = new_bool()
        insts += [bit_of(cnt_en, i, eb_),
                  _counter(clk, rst, st0, 1 if cname == "cycles" else 0, eb_, cnt[i],
                           inc=inc_fma if cname == "n_fma" else None)]

    # ---- CSR read table
    nlo = max(CSR_READ.values()) + 1
    assert nlo <= CNT_BASE
    srcs: dict[int, Signal] = {}
    for n, i in CSR_WRITE.items():
        if i:
            srcs[i] = R[n]
    ctrl_q = new_vec(4)
    srcs[CSR_WRITE["CTRL"]] = ctrl_q
    st_rb = new_vec(1)
    insts.append(_status(busy, st_rb))
    for n, s in (("STATUS", st_rb), ("ERR", err), ("SEL_M", r_selm), ("SEL_Z", r_selz), ("SEL_KEEP", r_selkeep),
                 ("SEL_PROG", r_selprog), ("DET_WORST", r_worst), ("DET_KEEP", r_detkeep), ("DET_FLAGS", r_flags)):
        srcs[CSR_READ[n]] = s
    lanes_of = {"lookups": c_look, "hits": c_hit, "misses": c_miss}
    for i, cname in enumerate(GemmParams.COUNTERS):
        if cname in OWN_COUNTERS:
            srcs[CNT_BASE + i] = cnt[OWN_COUNTERS.index(cname)]
        elif cname == "n_evict":
            srcs[CNT_BASE + i] = c_evict
        else:
            kname, q = cname.rsplit("_", 1)
            kk = GemmParams.KINDS.index(kname)
            lsig = new_vec(cb)
            insts.append(lane(lanes_of[q], kk * cb, cb, lsig))
            srcs[CNT_BASE + i] = lsig
    lo_tab = [new_vec(CNT_BITS) for _ in range(nlo)]
    hi_tab = [new_vec(CNT_BITS) for _ in GemmParams.COUNTERS]
    insts += [resize(srcs[i], lo_tab[i]) for i in range(nlo)]
    insts += [resize(srcs[CNT_BASE + i], hi_tab[i]) for i in range(len(hi_tab))]

    @always_comb
    def ctrl_rb():
        ctrl_q.next = concat(ctrl, False)

    insts += [ctrl_rb, _csr_read(csr_raddr, lo_tab, hi_tab, CNT_BASE, csr_rdata)]

    # ---- microkernel, B registers, copy register, memory port
    kindv, lanes, row, vec = A["rq_kind"], A["rq_lanes"], A["rq_row"], A["rq_vec"]
    fma_we, cld, c_sel, is_b = new_bool(), new_bool(), new_bool(), new_bool()
    insts.append(_mem_ctl(A["rq_done"], kindv, fma_we, cld, mem_we, c_sel, is_b))
    insts.append(wire(mem_raddr, mem_waddr))
    mbits = [new_bool() for _ in range(v)]
    insts += [_gt_const(lanes, i, mbits[i]) for i in range(v)]
    insts.append(cat_lanes(mbits, mem_wmask))
    # B registers
    bregs = [new_vec(v * ew) for _ in range(zmax)]
    bld_b, en_b = [new_bool() for _ in range(zmax)], [new_bool() for _ in range(zmax)]
    for jj in range(zmax):
        insts += [_sel_eq(is_b, vec, jj, bld_b[jj]), _gt_const(A["fma_zb"], jj, en_b[jj]),
                  _breg(clk, rst, bld_b[jj], mem_rdata, bregs[jj])]
    # copy register
    creg = new_vec(v * ew)
    insts.append(_breg(clk, rst, cld, mem_rdata, creg))
    # a: lane 0 of the read, sign-extended
    a_el, ax = new_vec(ew), new_vec(accw)
    insts += [lane(mem_rdata, 0, ew, a_el) if v > 1 else wire(mem_rdata, a_el),
              _sx(a_el, ax, True) if accw > ew else wire(a_el, ax)]
    # accumulator rows
    acc = [new_vec(wd.row) for _ in range(p.m_max)]
    row_q = new_vec(wd.row)
    olds = [new_vec(accw) for _ in range(zmax * v)]
    news = [new_vec(accw) for _ in range(zmax * v)]
    for jj in range(zmax):
        for ll in range(v):
            i = jj * v + ll
            bl = new_vec(ew)
            insts += [lane(row_q, i * accw, accw, olds[i]),
                      lane(bregs[jj], ll * ew, ew, bl) if v > 1 else wire(bregs[jj], bl),
                      _fma_lane(olds[i], ax, bl, en_b[jj], A["fma_first"], news[i], p)]
    row_d = new_vec(wd.row)
    insts.append(cat_lanes(news, row_d))
    insts.append(_acc_mem(clk, fma_we, row, row_d, row_q, acc))
    # C_WR: vector j, shifted and saturated
    cvec = new_vec(v * accw)
    if zmax > 1:
        vecs = [new_vec(v * accw) for _ in range(zmax)]
        insts += [lane(row_q, jj * v * accw, v * accw, vecs[jj]) for jj in range(zmax)]
        insts.append(mem_read(vecs, vec, cvec))
    else:
        insts.append(wire(row_q, cvec))
    shv = new_vec(wd.shw)
    kz = new_bool()
    insts += [resize(R["SHIFT"], shv), _is_zero(R["K"], kz)]
    couts = [new_vec(ew) for _ in range(v)]
    for ll in range(v):
        al = new_vec(accw)
        insts += [lane(cvec, ll * accw, accw, al) if v > 1 else wire(cvec, al), _c_lane(al, shv, kz, couts[ll], p)]
    cdata = new_vec(v * ew)
    insts += [cat_lanes(couts, cdata), _wsel(c_sel, cdata, creg, mem_wdata)]
    return insts


@block
def _kernel_mux(go, ek_m, ek_z, ek_keep, ek_copy, jm, jz, jkeep, jcopy, am, az, akeep, acopy):
    """The AGU's kernel: ``ek_*`` (the checked one, low bits: an accepted kernel fits) in
    the ``go`` cycle, else the latched ``j*``."""
    mw, zw = len(am), len(az)
    n = len(ek_m)
    hi_unused = new_vec(3 * n - 2 * mw - zw)

    @always_comb
    def m():
        if go:
            am.next = ek_m[mw:]
            az.next = ek_z[zw:]
            akeep.next = ek_keep[mw:]
            acopy.next = ek_copy
        else:
            am.next = jm
            az.next = jz
            akeep.next = jkeep
            acopy.next = jcopy
        hi_unused.next = concat(ek_m[n:mw], ek_z[n:zw], ek_keep[n:mw])

    return m


@block
def _status(busy, out):
    """STATUS: bit 0 busy."""

    @always_comb
    def s():
        out.next = busy

    return s


@block
def _is_zero(x, z):
    """``z = (x == 0)``."""

    @always_comb
    def c():
        z.next = x == 0

    return c


@block
def _elem_index(base, ea_out, lg_eb: int):
    """``ea_out = base >> lg_eb`` (a base that is not a multiple of ``eb`` is refused)."""
    if lg_eb == 0:
        return resize(base, ea_out)
    lo_unused = new_vec(lg_eb)
    n = len(base)

    @always_comb
    def e():
        ea_out.next = base[n:lg_eb]
        lo_unused.next = base[lg_eb:]

    return e


@block
def _sink(sigs):
    """Outputs of sub-blocks the tile does not need (the caller says why): read into one
    ``*unused*`` signal."""
    n = sum(len(x) for x in sigs)
    sink_unused = new_vec(n)
    cat = ConcatSignal(*sigs) if len(sigs) > 1 else sigs[0]

    @always_comb
    def s():
        sink_unused.next = cat

    return s


# ---------------------------------------------------------------------------------------
# ports, timing, emit


def tile_ports(fmt: GemmParams) -> dict[str, dict]:
    """Port list of :func:`gemm_tile` (name -> dir, width, doc); docs/gemm.md section 9."""
    wd = gemm_widths(fmt)
    v, ew = fmt.v, fmt.ew
    kinds = ", ".join(f"{i} {k}" for i, k in enumerate(GemmParams.KINDS))

    return {
        "clk": port("in", 1, "clock"),
        "rst": port("in", 1, "synchronous active-high reset: idle, cache invalid, counters, err and CSRs 0"),
        "csr_we": port("in", 1, "CSR write (taken while idle; a START while busy sets START_BUSY)"),
        "csr_addr": port("in", CSR_AW, "CSR write address (0 CTRL .. 15 SHIFT)"),
        "csr_wdata": port("in", CNT_BITS, "CSR write data"),
        "csr_raddr": port("in", CSR_AW, "CSR read address"),
        "csr_rdata": port("out", CNT_BITS, "CSR read data (combinational)"),
        "mem_raddr": port("out", wd.ea, "memory read: element index (the current request's)"),
        "mem_rdata": port("in", v * ew, f"memory read: lane i = element mem_raddr + i at [i*{ew} +: {ew}]"),
        "mem_we": port("out", 1, "memory write (a COPY_WR's or C_WR's last cycle)"),
        "mem_waddr": port("out", wd.ea, "memory write: element index of lane 0"),
        "mem_wdata": port("out", v * ew, f"memory write: lane i at [i*{ew} +: {ew}]"),
        "mem_wmask": port("out", v, "memory write: bit i writes lane i"),
        "tr_valid": port("out", 1, "trace: the first cycle of a request"),
        "tr_kind": port("out", 3, f"trace: kind ({kinds})"),
        "tr_addr": port("out", fmt.aw, "trace: byte address"),
        "tr_bytes": port("out", wd.bw, "trace: bytes"),
        "done": port("out", 1, "one-cycle pulse: the job (or a refused start) is over"),
        "busy": port("out", 1, "a job (or its selection) runs"),
    }


def tile_timing(fmt: GemmParams) -> dict:
    """Timing facts of the tile (recorded in the JSON sidecar)."""
    return {
        "start": "cycle 0: the CSR write of CTRL with bit 0 while idle",
        "explicit_first_request": 1,
        "auto_first_request": "sel_cycles + 1",
        "done": "1 + sel + sum over lookups (1 + miss_pen * miss)",
        "refused_done": "1 + sel (sel = 0 when refused before the selection)",
        "miss_pen": fmt.miss_pen,
        "csr_read_latency": 0,
        "mem_read_latency": 0,
    }


def emit_tile(fmt: GemmParams, outdir: Path | str, name: str = "gemm_tile") -> Emitted:
    """Write the tile for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a GemmParams, or ``name`` is a keyword.
    """
    check_gemm(fmt, name)
    return emit_stream_unit(gemm_tile, fmt, GemmParams, tile_ports, outdir, name, family="gemm",
                            timing=tile_timing(fmt),
                            doc="GEMM tile (spec 003): CSRs, checks, kernel selector, AGU, tag-only cache, inline "
                                "copy and an m x z vector microkernel")

