"""``gemm_agu``: the GEMM tile's address generator (docs/gemm.md sections 4 and 6).

A counter-driven loop nest that walks the request trace of section 4 one request at a
time, in trace order, and drives the cache's lookup port for each line the request
touches. Loop registers ``m0, n0, k0`` (elements), ``kk`` (column inside the K-block),
``j`` (output vector), ``r`` (kernel row) and ``bk = (k0/V) * (m - keep)`` (the buffer's
slot row of this K-block), plus a phase: COPY_RD, COPY_WR, B (``B_LD``), A (``A_LD`` for
``r < kp``, ``BUF_LD`` from ``kp``), C (``C_WR``). The tails ``mb``, ``kp``, ``zb``, ``kb``
and ``nb_j`` are combinational on the loop registers and the job's configuration.

Timing (section 6): each lookup takes one cycle, plus ``miss_pen`` cycles when the cache
reports a miss (``lk_hit`` is combinational in the lookup's first cycle, the only cycle
with ``lk_valid``). A request's last cycle is the last cycle of its last lookup
(``rq_done``); the next request starts in the following cycle. ``go`` in cycle ``c``
gives the first request's first lookup in cycle ``c + 1``; ``fin`` pulses in the last
request's last cycle (in the ``go`` cycle itself when ``M = 0`` or ``N = 0``).

Addresses: element index ``base + row * ld + col`` in ``ea = aw - log2(eb)`` bits (one
shared multiplier), the byte address is that times ``eb``:

* A_LD ``(m0+r, k0+kk)`` and COPY_RD ``(m0+r, k0)`` of A with ``lda``; B_LD ``(k0+kk,
  n0+j*V)`` of B with ``ldb``; C_WR ``(m0+r, n0+j*V)`` of C with ``ldc``;
* BUF_LD ``base_buf + (bk + r - keep)*V + kk`` and COPY_WR ``base_buf + (bk + r - keep)*V``.

The configuration inputs must hold from ``go`` until ``fin`` (the tile ignores CSR
writes while busy and latches the kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import always_comb, always_seq, block, concat, intbv

from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..common import Emitted, emit_stream_unit, new_bool, new_vec, port, resize, split_low, wire
from .detect import check_gemm

__all__ = [
    "GemmWidths",
    "KIND",
    "agu_ports",
    "agu_timing",
    "emit_agu",
    "gemm_agu",
    "gemm_widths",
]

#: Request kind codes (``GemmParams.KINDS``).
KIND = {k: i for i, k in enumerate(GemmParams.KINDS)}
#: AGU phases (internal): copy read, copy write, B vectors, A rows (A_LD / BUF_LD), C writes.
PH_CRD, PH_CWR, PH_B, PH_A, PH_C = range(5)


@dataclass(frozen=True)
class GemmWidths:
    """Widths of the tile's blocks (derived from :class:`GemmParams` only).

    Attributes:
        lg_eb, lg_v, lg_l: ``log2`` of ``eb``, ``v`` and ``line``.
        ea: element-address bits, ``aw - log2(eb)``.
        rw, jw, kkw: a kernel row ``r < m_max``, an output vector ``j < z_max``, a
            column ``kk < v`` (at least one bit each).
        mw, zw: a kernel size ``m <= m_max`` and ``z <= z_max``.
        nw: a lane count ``0..v``; bw: a request's bytes ``0..v*eb``.
        lw: a request's line offset (at most ``ceil(v*eb/line) + 1`` lines).
        pw: the miss-penalty down-counter (at least one bit).
        shw: the accumulator shift ``0..accw-1``.
        xw: the loop arithmetic (dimensions, ``z*v``, ``m``), with a sign bit to spare.
        row: one accumulator row, ``z_max * v * accw`` bits.
    """

    lg_eb: int
    lg_v: int
    lg_l: int
    ea: int
    rw: int
    jw: int
    kkw: int
    mw: int
    zw: int
    nw: int
    bw: int
    lw: int
    pw: int
    shw: int
    xw: int
    row: int


def gemm_widths(p: GemmParams) -> GemmWidths:
    """The widths of the gemm blocks for ``p``."""
    lines = -(-(p.v * p.eb) // p.line) + 1
    return GemmWidths(
        lg_eb=clog2(p.eb), lg_v=clog2(p.v), lg_l=clog2(p.line), ea=p.aw - clog2(p.eb),
        rw=max(1, clog2(p.m_max)), jw=max(1, clog2(p.z_max)), kkw=max(1, clog2(p.v)),
        mw=p.m_max.bit_length(), zw=p.z_max.bit_length(), nw=p.v.bit_length(), bw=(p.v * p.eb).bit_length(),
        lw=max(1, (lines - 1).bit_length()), pw=max(1, p.miss_pen.bit_length()), shw=max(1, clog2(p.accw)),
        xw=max(p.dimw, (p.z_max * p.v).bit_length(), p.m_max.bit_length()) + 2,
        row=p.z_max * p.v * p.accw,
    )


# ---------------------------------------------------------------------------------------
# the loop nest's combinational parts


@block
def _tails(dim_m, dim_n, dim_k, m0, n0, k0, kk, j, r, blk_m, blk_z, blk_keep, copy_en, kp, zb, kb, nbj,
           r_last, j_last, kk_last, k0_last, n0_last, m0_last, cp_k, cp_go, cp_next, empty, p: GemmParams):
    """The block's tails and the loops' last-iteration flags (section 4).

    Ports:
        kp, zb, kb, nbj: rows in place (all ``mb = min(m, M - m0)`` rows without copy), vectors, K columns, lanes
            of vector ``j``.
        r_last .. m0_last: this is the last ``r`` / ``j`` / ``kk`` / ``k0`` / ``n0`` / ``m0``.
        cp_k: the K-block starts with copy rows (copy on, ``n0 = 0``, ``kp < mb``).
        cp_go, cp_next: the same for the job's first block / the next M-block.
        empty: ``M = 0`` or ``N = 0`` (no request).
    """
    wd = gemm_widths(p)
    xw, v, lg_v = wd.xw, p.v, wd.lg_v
    vm1 = v - 1
    mx, nx, kx = new_vec(xw), new_vec(xw), new_vec(xw)
    m0x, n0x, k0x = new_vec(xw), new_vec(xw), new_vec(xw)
    kkx, jx, rx = new_vec(xw), new_vec(xw), new_vec(xw)
    bmx, bzx, bkx = new_vec(xw), new_vec(xw), new_vec(xw)
    kpx, zbx, kbx, nbx = new_vec(xw), new_vec(xw), new_vec(xw), new_vec(xw)
    kp_unused = new_vec(xw - wd.mw)  # kp <= m <= m_max
    zb_unused = new_vec(xw - wd.zw)  # zb <= z <= z_max
    kb_unused, nb_unused = new_vec(xw - wd.nw), new_vec(xw - wd.nw)  # kb, nb_j <= v

    @always_comb
    def calc():
        rm = intbv(0)[xw:]
        rn = intbv(0)[xw:]
        rk = intbv(0)[xw:]
        zv = intbv(0)[xw:]
        t = intbv(0)[xw:]
        u = intbv(0)[xw:]
        rm[:] = mx - m0x
        rn[:] = nx - n0x
        rk[:] = kx - k0x
        zv[:] = bzx << lg_v
        # mb = min(m, M - m0), kp = min(keep, mb) with copy (else mb)
        if rm < bmx:
            t[:] = rm
        else:
            t[:] = bmx
        if copy_en and bkx < t:
            kpx.next = bkx
            cp_k.next = n0x == 0
        else:
            kpx.next = t
            cp_k.next = 0
        r_last.next = rx + 1 >= t
        m0_last.next = rm <= bmx
        # zb = ceil(min(z*V, N - n0) / V), nb_j = min(V, N - n0 - j*V)
        if rn < zv:
            u[:] = rn
        else:
            u[:] = zv
        u[:] = u + vm1
        u[:] = u >> lg_v
        zbx.next = u
        j_last.next = jx + 1 >= u
        n0_last.next = rn <= zv
        u[:] = rn - (jx << lg_v)
        if u < v:
            nbx.next = u
        else:
            nbx.next = v
        # kb = min(V, K - k0)
        if rk < v:
            t[:] = rk
        else:
            t[:] = v
        kbx.next = t
        kk_last.next = kkx + 1 >= t
        k0_last.next = rk <= v
        # copy rows of the next M-block (m0 + m) and of the first one
        t[:] = rm - bmx
        if t > bmx:
            t[:] = bmx
        cp_next.next = copy_en and bkx < t
        if mx < bmx:
            u[:] = mx
        else:
            u[:] = bmx
        cp_go.next = copy_en and bkx < u
        empty.next = mx == 0 or nx == 0

    @always_comb
    def outs():
        kp.next = kpx[wd.mw:]
        zb.next = zbx[wd.zw:]
        kb.next = kbx[wd.nw:]
        nbj.next = nbx[wd.nw:]
        kp_unused.next = kpx[xw:wd.mw]
        zb_unused.next = zbx[xw:wd.zw]
        kb_unused.next = kbx[xw:wd.nw]
        nb_unused.next = nbx[xw:wd.nw]

    return (resize(dim_m, mx), resize(dim_n, nx), resize(dim_k, kx), resize(m0, m0x), resize(n0, n0x),
            resize(k0, k0x), resize(kk, kkx), resize(j, jx), resize(r, rx), resize(blk_m, bmx), resize(blk_z, bzx),
            resize(blk_keep, bkx), calc, outs)


@block
def _request(ph, m0, n0, k0, kk, j, r, bk, kp, kb, nbj, blk_keep, lda, ldb, ldc, ea_a, ea_b, ea_c, ea_buf,
             kind, eaddr, baddr, nbytes, lanes, p: GemmParams):
    """The current request: kind, element and byte address, bytes, lanes (section 4)."""
    wd = gemm_widths(p)
    ea, lg_v, lg_eb = wd.ea, wd.lg_v, wd.lg_eb
    qw = max(ea, wd.xw)  # the address arithmetic (its low ea bits are the element index)
    m0x, n0x, k0x, kkx, jx, rx = (new_vec(qw) for _ in range(6))
    bkx, kpx, keepx = new_vec(qw), new_vec(qw), new_vec(qw)
    ldax, ldbx, ldcx = new_vec(qw), new_vec(qw), new_vec(qw)
    bax, bbx, bcx, bbufx = new_vec(qw), new_vec(qw), new_vec(qw), new_vec(qw)
    rowx, ldx, colx, basex, prod, e = (new_vec(qw) for _ in range(6))
    e_unused = new_vec(qw - ea) if qw > ea else None  # addresses wrap modulo 2**ea
    a_ld, b_ld, buf_ld, c_rd, c_wr, c_out = (KIND[k] for k in GemmParams.KINDS)
    ph_crd, ph_cwr, ph_b, ph_a = PH_CRD, PH_CWR, PH_B, PH_A
    bw = wd.bw

    @always_comb
    def sel():
        # the shared multiplier's operands: (row, ld, col, base)
        if ph == ph_b:
            rowx.next = k0x + kkx
            ldx.next = ldbx
            colx.next = n0x + (jx << lg_v)
            basex.next = bbx
        elif ph == ph_crd or (ph == ph_a and rx < kpx):
            rowx.next = m0x + rx
            ldx.next = ldax
            if ph == ph_crd:
                colx.next = k0x
            else:
                colx.next = k0x + kkx
            basex.next = bax
        elif ph == ph_a or ph == ph_cwr:
            rowx.next = bkx + rx - keepx
            ldx.next = 1 << lg_v
            if ph == ph_a:
                colx.next = kkx
            else:
                colx.next = 0
            basex.next = bbufx
        else:
            rowx.next = m0x + rx
            ldx.next = ldcx
            colx.next = n0x + (jx << lg_v)
            basex.next = bcx

    @always_comb
    def mul():
        prod.next = rowx * ldx

    @always_comb
    def add():
        e.next = basex + prod + colx

    @always_comb
    def what():
        if ph == ph_crd:
            kind.next = c_rd
            lanes.next = kb
        elif ph == ph_cwr:
            kind.next = c_wr
            lanes.next = kb
        elif ph == ph_b:
            kind.next = b_ld
            lanes.next = nbj
        elif ph == ph_a:
            if rx < kpx:
                kind.next = a_ld
            else:
                kind.next = buf_ld
            lanes.next = 1
        else:
            kind.next = c_out
            lanes.next = nbj

    ln = new_vec(bw)
    if lg_eb:

        @always_comb
        def size():
            nbytes.next = ln << lg_eb

    else:

        @always_comb
        def size():
            nbytes.next = ln

    insts = [resize(m0, m0x), resize(n0, n0x), resize(k0, k0x), resize(kk, kkx), resize(j, jx), resize(r, rx),
             resize(bk, bkx), resize(kp, kpx), resize(blk_keep, keepx), resize(lda, ldax), resize(ldb, ldbx),
             resize(ldc, ldcx), resize(ea_a, bax), resize(ea_b, bbx), resize(ea_c, bcx), resize(ea_buf, bbufx),
             sel, mul, add, what, resize(lanes, ln), size]
    if e_unused is None:
        insts.append(wire(e, eaddr))
    else:
        insts.append(split_low(e, eaddr, e_unused))
    if lg_eb:
        @always_comb
        def bytes_of():
            baddr.next = concat(eaddr, intbv(0)[lg_eb:])

        insts.append(bytes_of)
    else:
        insts.append(wire(eaddr, baddr))
    return insts


@block
def _lines(baddr, nbytes, loff, line_cur, line_last, p: GemmParams):
    """The request's lines: ``line_cur = baddr // L + loff`` (this lookup's line) and
    ``line_last``: it is the request's last line, ``(baddr + bytes - 1) // L``."""
    wd = gemm_widths(p)
    aw, lg_l = p.aw, wd.lg_l
    nl = aw - lg_l
    bx, ax = new_vec(aw), new_vec(aw)
    ox = new_vec(nl)
    cur = new_vec(nl)
    lo_unused, tl_unused = new_vec(lg_l), new_vec(lg_l)  # the byte inside the line (line >= 4)

    @always_comb
    def calc():
        t = intbv(0)[aw:]
        t[:] = ax + bx - 1
        line_last.next = cur == t[aw:lg_l]
        tl_unused.next = t[lg_l:]

    @always_comb
    def cur_of():
        cur.next = ax[aw:lg_l] + ox
        lo_unused.next = ax[lg_l:]

    return resize(baddr, ax), resize(nbytes, bx), resize(loff, ox), calc, cur_of, wire(cur, line_cur)


# ---------------------------------------------------------------------------------------
# the AGU


@block
def gemm_agu(clk, rst, go, dim_m, dim_n, dim_k, lda, ldb, ldc, ea_a, ea_b, ea_c, ea_buf, blk_m, blk_z, blk_keep,
             copy_en, lk_hit, lk_valid, lk_addr, lk_kind, tr_valid, tr_kind, tr_addr, tr_bytes, rq_kind, rq_eaddr,
             rq_lanes, rq_row, rq_vec, rq_done, fma_first, fma_zb, busy, fin, fmt: GemmParams):
    """The loop nest of section 4 with the lookup timing of section 6. Ports: :func:`agu_ports`."""
    p = check_gemm(fmt, "gemm_agu")
    wd = gemm_widths(p)
    dimw, ea, v, mp = p.dimw, wd.ea, p.v, p.miss_pen
    lg_v, lg_l = wd.lg_v, wd.lg_l
    nl = p.aw - lg_l
    ph = new_vec(3)
    m0, n0, k0 = new_vec(dimw), new_vec(dimw), new_vec(dimw)
    kk, j, r = new_vec(wd.kkw), new_vec(wd.jw), new_vec(wd.rw)
    bk = new_vec(ea)
    loff, pen = new_vec(wd.lw), new_vec(wd.pw)
    act = new_bool()
    kp, zb = new_vec(wd.mw), new_vec(wd.zw)
    kb, nbj = new_vec(wd.nw), new_vec(wd.nw)
    r_last, j_last, kk_last, k0_last, n0_last, m0_last = (new_bool() for _ in range(6))
    cp_k, cp_go, cp_next, empty = new_bool(), new_bool(), new_bool(), new_bool()
    kind, baddr, nbytes = new_vec(3), new_vec(p.aw), new_vec(wd.bw)
    line_cur, line_last = new_vec(nl), new_bool()
    ldone, adv = new_bool(), new_bool()
    # the loop steps, in the registers' widths (z*V and m - keep: see the guards below)
    stepn, stepm, stepb = new_vec(dimw), new_vec(dimw), new_vec(ea)
    ph_crd, ph_cwr, ph_b, ph_a, ph_c = PH_CRD, PH_CWR, PH_B, PH_A, PH_C

    insts = [
        _tails(dim_m, dim_n, dim_k, m0, n0, k0, kk, j, r, blk_m, blk_z, blk_keep, copy_en, kp, zb, kb, nbj,
               r_last, j_last, kk_last, k0_last, n0_last, m0_last, cp_k, cp_go, cp_next, empty, p),
        _request(ph, m0, n0, k0, kk, j, r, bk, kp, kb, nbj, blk_keep, lda, ldb, ldc, ea_a, ea_b, ea_c, ea_buf,
                 kind, rq_eaddr, baddr, nbytes, rq_lanes, p),
        _lines(baddr, nbytes, loff, line_cur, line_last, p),
        _steps(blk_m, blk_z, blk_keep, stepn, stepm, stepb, p),
    ]

    if mp == 0:

        @always_comb
        def lookup():
            ldone.next = act
            adv.next = act and line_last

        insts.append(lookup)
    else:

        @always_comb
        def lookup():
            ldone.next = act and ((pen == 0 and lk_hit) or pen == 1)
            adv.next = act and ((pen == 0 and lk_hit) or pen == 1) and line_last

        insts.append(lookup)

    @always_comb
    def taps():
        lk_valid.next = act and pen == 0
        tr_valid.next = act and pen == 0 and loff == 0
        rq_done.next = adv
        fma_first.next = k0 == 0 and kk == 0
        fin.next = (go and empty) or (adv and ph == ph_c and j_last and r_last and n0_last and m0_last)

    @always_comb
    def lkaddr():
        lk_addr.next = concat(line_cur, intbv(0)[lg_l:])  # line >= 4

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if go:
            m0.next = 0
            n0.next = 0
            k0.next = 0
            kk.next = 0
            j.next = 0
            bk.next = 0
            loff.next = 0
            pen.next = 0
            act.next = not empty
            if dim_k == 0:
                ph.next = ph_c
                r.next = 0
            elif cp_go:
                ph.next = ph_crd
                r.next = blk_keep[wd.rw:]
            else:
                ph.next = ph_b
                r.next = 0
        elif act:
            if pen != 0:
                pen.next = pen - 1
            elif not lk_hit:
                pen.next = mp
            if ldone and not line_last:
                loff.next = loff + 1
            if adv:
                loff.next = 0
                if ph == ph_crd:
                    ph.next = ph_cwr
                elif ph == ph_cwr:
                    if r_last:
                        ph.next = ph_b
                        r.next = 0
                    else:
                        ph.next = ph_crd
                        r.next = r + 1
                elif ph == ph_b:
                    if j_last:
                        ph.next = ph_a
                        j.next = 0
                        r.next = 0
                    else:
                        j.next = j + 1
                elif ph == ph_a:
                    if not r_last:
                        r.next = r + 1
                    elif not kk_last:
                        kk.next = kk + 1
                        ph.next = ph_b
                        r.next = 0
                    elif not k0_last:
                        k0.next = k0 + v
                        kk.next = 0
                        bk.next = bk + stepb
                        if cp_k:
                            ph.next = ph_crd
                            r.next = kp[wd.rw:]
                        else:
                            ph.next = ph_b
                            r.next = 0
                    else:
                        ph.next = ph_c
                        kk.next = 0
                        r.next = 0
                        j.next = 0
                else:
                    if not j_last:
                        j.next = j + 1
                    elif not r_last:
                        r.next = r + 1
                        j.next = 0
                    else:
                        j.next = 0
                        r.next = 0
                        k0.next = 0
                        kk.next = 0
                        bk.next = 0
                        if not n0_last:
                            n0.next = n0 + stepn
                            if dim_k == 0:
                                ph.next = ph_c
                            else:
                                ph.next = ph_b
                        elif not m0_last:
                            m0.next = m0 + stepm
                            n0.next = 0
                            if dim_k == 0:
                                ph.next = ph_c
                            elif cp_next:
                                ph.next = ph_crd
                                r.next = blk_keep[wd.rw:]
                            else:
                                ph.next = ph_b
                        else:
                            act.next = 0

    insts += [taps, lkaddr, regs, wire(act, busy), wire(kind, rq_kind), wire(kind, tr_kind), wire(kind, lk_kind),
              wire(baddr, tr_addr), wire(nbytes, tr_bytes), resize(r, rq_row), resize(j, rq_vec),
              resize(zb, fma_zb)]
    return insts


@block
def _steps(blk_m, blk_z, blk_keep, stepn, stepm, stepb, p: GemmParams):
    """The loop steps: ``stepn = z * V`` and ``stepm = m`` modulo ``2**dimw`` (``n0`` and
    ``m0`` only take a step that stays below ``N`` or ``M``), ``stepb = m - keep`` (``bk``'s
    step; ``keep <= m`` in an accepted job)."""
    wd = gemm_widths(p)
    xw, lg_v = max(p.dimw, wd.ea, wd.zw + wd.lg_v, wd.mw) + 1, wd.lg_v
    mx, zx, kx = new_vec(xw), new_vec(xw), new_vec(xw)
    a, b, c = new_vec(xw), new_vec(xw), new_vec(xw)
    a_unused, b_unused, c_unused = new_vec(xw - len(stepn)), new_vec(xw - len(stepm)), new_vec(xw - len(stepb))
    na, nb, nc = len(stepn), len(stepm), len(stepb)

    @always_comb
    def calc():
        a.next = zx << lg_v
        b.next = mx
        c.next = mx - kx

    @always_comb
    def outs():
        stepn.next = a[na:]
        stepm.next = b[nb:]
        stepb.next = c[nc:]
        a_unused.next = a[xw:na]
        b_unused.next = b[xw:nb]
        c_unused.next = c[xw:nc]

    return resize(blk_m, mx), resize(blk_z, zx), resize(blk_keep, kx), calc, outs


def agu_ports(p: GemmParams) -> dict[str, dict]:
    """Port list of :func:`gemm_agu` (name -> dir, width, doc); docs/gemm.md section 9."""
    wd = gemm_widths(p)
    kinds = ", ".join(f"{i} {k}" for i, k in enumerate(GemmParams.KINDS))

    return {
        "clk": port("in", 1, "clock"),
        "rst": port("in", 1, "synchronous active-high reset (idle)"),
        "go": port("in", 1, "start the walk (first lookup in the next cycle); the configuration holds until fin"),
        "dim_m": port("in", p.dimw, "M"),
        "dim_n": port("in", p.dimw, "N"),
        "dim_k": port("in", p.dimw, "K"),
        "lda": port("in", wd.ea, "lda (elements)"),
        "ldb": port("in", wd.ea, "ldb (elements)"),
        "ldc": port("in", wd.ea, "ldc (elements)"),
        "ea_a": port("in", wd.ea, "base_a / eb (element index)"),
        "ea_b": port("in", wd.ea, "base_b / eb"),
        "ea_c": port("in", wd.ea, "base_c / eb"),
        "ea_buf": port("in", wd.ea, "base_buf / eb"),
        "blk_m": port("in", wd.mw, "kernel rows m (1..m_max)"),
        "blk_z": port("in", wd.zw, "kernel vectors z (1..z_max)"),
        "blk_keep": port("in", wd.mw, "rows kept in place (<= m)"),
        "copy_en": port("in", 1, "inline copy of rows keep..mb-1"),
        "lk_hit": port("in", 1, "cache: the lookup of this cycle hits (combinational)"),
        "lk_valid": port("out", 1, "cache: a lookup's first cycle"),
        "lk_addr": port("out", p.aw, "cache: the looked-up line's byte address (line-aligned)"),
        "lk_kind": port("out", 3, f"cache: the request's kind ({kinds})"),
        "tr_valid": port("out", 1, "trace: the first cycle of a request"),
        "tr_kind": port("out", 3, "trace: kind"),
        "tr_addr": port("out", p.aw, "trace: byte address of the request's first element"),
        "tr_bytes": port("out", wd.bw, "trace: bytes"),
        "rq_kind": port("out", 3, "current request's kind (every cycle of it)"),
        "rq_eaddr": port("out", wd.ea, "current request's element index"),
        "rq_lanes": port("out", wd.nw, "current request's lanes (nb_j for B_LD/C_WR, kb for copies, 1 for A)"),
        "rq_row": port("out", wd.rw, "current request's kernel row r"),
        "rq_vec": port("out", wd.jw, "current request's vector j (B_LD, C_WR)"),
        "rq_done": port("out", 1, "this cycle is the current request's last"),
        "fma_first": port("out", 1, "k0 = 0 and kk = 0: an A_LD/BUF_LD's FMAs write instead of add"),
        "fma_zb": port("out", wd.zw, "vectors zb of the current block (FMAs per A_LD/BUF_LD)"),
        "busy": port("out", 1, "walking (from the cycle after go to the last request's last cycle)"),
        "fin": port("out", 1, "the last request's last cycle (or the go cycle of a job with no request)"),
    }


def agu_timing(p: GemmParams) -> dict:
    """Timing facts of the AGU (recorded in the JSON sidecar)."""
    return {
        "miss_pen": p.miss_pen,
        "lookup_cycles": "1 + miss_pen * miss",
        "first_lookup": "the cycle after go",
        "fin": "the last request's last cycle (the go cycle when M = 0 or N = 0)",
    }


def emit_agu(p: GemmParams, outdir: Path | str, name: str = "gemm_agu") -> Emitted:
    """Write the AGU for ``p`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``p`` is not a GemmParams, or ``name`` is a keyword.
    """
    check_gemm(p, name)
    return emit_stream_unit(gemm_agu, p, GemmParams, agu_ports, outdir, name, family="gemm",
                            timing=agu_timing(p),
                            doc="GEMM address generator: the loop nest of docs/gemm.md section 4, one lookup per "
                                "line, miss_pen cycles per miss")
