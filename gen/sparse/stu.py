"""The sparse tensor compute unit ``stu`` (STU 1300, and STU 1400 with ``u = 2``;
docs/sparse.md sections 4, 5, 7, 8 and 9).

One job: ``start`` (while ``busy`` is low) samples the ``cfg_*`` inputs; the job computes
its rounds into the accumulator, then (``cfg_emit = 1``) drains it through ReLU, pooling,
shift and saturation onto the output stream, and ``done`` pulses once. Timing, with
``cc`` compute rounds and ``N`` output positions (cycle 0 is the ``start`` cycle):

* cycles ``1 .. cc``: one round per cycle (COMPUTE);
* ``cc + 1``: the last round's read-modify-write of the accumulator;
* ``cc + 2``: the drain's read register takes position 0 (``STU_PIPE = 2`` cycles);
* ``cc + 3 .. cc + 2 + N``: one output position per cycle (DRAIN; ``N = 0`` without emit);
* ``cc + 3 + N``: FLUSH, the held last word goes out with LAST;
* ``cc + 4 + N``: ``done`` (``1 + cc + STU_PIPE + N + 1`` after ``start``).

Every cycle in which ``o_valid`` is high and ``o_ready`` low adds one cycle. A ``start``
refused by CFG pulses ``done`` in cycle 1.

Memory read ports (combinational memories, as ``fm_mem_unit`` and ``w_mem``): the STU
presents the *next* round's read addresses and registers the returned words at the end
of the cycle, so round ``k`` (cycle ``k + 1``) computes on words addressed in cycle ``k``
(in idle, the addresses of round 0: group 0, weights 0 and 1).

* Data: ``rd_group = g`` returns entries ``g*p + l`` on lanes ``l`` with
  ``rd_lane_valid``; an invalid lane is idle.
* Weights: ``w_rd_idx`` lane ``i`` (``u`` lanes) returns entry ``j`` with
  ``w_rd_valid``; an invalid weight makes its lanes idle.
* FC gather: in the round's cycle, ``fc_rd_row = o`` and ``fc_rd_idx`` lane ``l`` = the
  lane's data column return ``fc_rd_w`` lane ``l = W[o][col_l]`` in the same cycle.

Micro-architecture:

* u = 1 (and FC mode for every u): a group walker, weight- (or output-) major: round
  ``(j, g)`` feeds lane ``l`` with data entry ``g*p + l`` (``< q``). CONV: each lane
  multiplies by weight ``j`` and targets ``(r + K-1-a, c + K-1-b)``; FC: each lane
  multiplies by ``W[o][col]`` and an adder tree sums the ``p`` products into one add of
  ``y[o]`` (the special accumulator is accumulator address ``o``).
* u = 2 (sparse CONV; dense mode uses the same scheduler capped at one weight): the
  golden ``stu_schedule`` in one cycle per round. The data entries are kept in a local
  buffer filled one group per cycle from ``start`` (group ``k`` arrives in round ``k``'s
  cycle and is bypassed; a round never needs a later group), the two weights ``j`` and
  ``j + 1`` come from the two weight read lanes. Slots: the FIFO items first, then new
  items ``(j, i), (j, i+1), ..`` then ``(j+1, 0), ..``; a ``p x p`` comparator arbiter
  lets the first claimant of each address through and compacts the later ones, as
  ``{address, product}``, into the next round's FIFO (at most ``p - 1`` items).
* The round's ``p`` products (with their accumulator addresses) are registered; the next
  cycle reads, adds (in ``accw`` bits, flagging signed overflow: ACC_OVF) and writes the
  accumulator register array in one cycle, so back-to-back rounds on one address need
  no forwarding. Addresses are ``R * fw_max + C``; FC output ``o`` is address ``o``.
* Drain: a read register (the four words of a 2x2 window) and an evaluation stage:
  ReLU, pool (max / sum / avg = sum >> 2 in ``accw + 2`` bits), arithmetic shift,
  saturation to ``ow`` bits. A non-zero result is held until the next non-zero (or the
  end) shows whether it is the last; the held word goes out when the next one is found,
  and the drain stalls while it is not taken. The accumulator is cleared when FLUSH ends.

Counters (cleared by a ``start`` in idle, final at ``done``): ``cyc_compute`` and
``n_rounds`` (rounds), ``n_mults`` (products of two non-zero operands), ``n_deferred``
(FIFO pushes), ``cyc_drain`` (DRAIN cycles plus FLUSH cycles with the word not taken),
``nnz_out`` (output words). ``err`` is sticky (``SparseParams.STU_ERR_NAMES``).
Taps for the monitors: ``acc_we``/``acc_addr`` (the read-modify-write lanes of this
cycle) and ``fifo_occ`` (collision-FIFO items taken by this cycle's round).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.record import ParamError, clog2
from lockstep.models.sparse.params import SparseParams

from ..common import (
    Emitted, bit_of, cat_lanes, const0, emit_stream_unit, lane, mem_read, new_bool, new_vec, port, resize,
    split_low, wire,
)
from .memory import count_bits, fc_bits, group_bits, k_bits, widx_bits
from .stream import check_sparse, size_bits

__all__ = ["StuWidths", "emit_stu", "stu", "stu_check", "stu_ports", "stu_timing", "stu_widths"]

#: FSM states.
S_IDLE, S_COMP, S_PIPE, S_DRAIN, S_FLUSH = range(5)
#: Pool-mode codes (``cfg_pool``), the index in ``SparseParams.POOL_MODES``.
P_NONE, P_MAX, P_SUM, P_AVG = (SparseParams.POOL_MODES.index(n) for n in ("none", "max", "sum", "avg"))


@dataclass(frozen=True)
class StuWidths:
    """Port and register widths of one STU (derived from :class:`SparseParams` only).

    Attributes:
        kb_cfg, hb, wb, qb, zb, nb, sb: ``cfg_k``, ``cfg_h``, ``cfg_w``, ``cfg_nnz``,
            ``cfg_wnz``, ``cfg_n_out``, ``cfg_shift``.
        gb: ``rd_group``; jb: a ``w_rd_idx`` lane; ob, ib: ``fc_rd_row``, a ``fc_rd_idx`` lane.
        nacc: accumulator words, ``max(fh_max * fw_max, nmax_out)``; ab: their address.
        fd: collision-FIFO depth; fob: ``fifo_occ``.
        eb: a data entry index plus ``p``; j1: the group walker's weight / output index;
            j2: the u = 2 scheduler's weight index (up to ``kmax**2 + 1``).
    """

    kb_cfg: int
    hb: int
    wb: int
    qb: int
    zb: int
    nb: int
    sb: int
    gb: int
    jb: int
    ob: int
    ib: int
    nacc: int
    ab: int
    fd: int
    fob: int
    eb: int
    j1: int
    j2: int


def stu_widths(fmt: SparseParams) -> StuWidths:
    """The widths of :func:`stu` for ``fmt`` (the memories' where they meet them)."""
    hb, wb = size_bits(fmt)
    ob, ib = fc_bits(fmt)
    nacc = max(fmt.fh_max * fmt.fw_max, fmt.nmax_out)
    zb = count_bits(fmt.kmax * fmt.kmax)
    nb = count_bits(fmt.nmax_out + 1)
    qb = count_bits(fmt.depth)
    return StuWidths(
        kb_cfg=k_bits(fmt), hb=hb, wb=wb, qb=qb, zb=zb, nb=nb, sb=count_bits(fmt.accw + 1),
        gb=group_bits(fmt), jb=widx_bits(fmt), ob=ob, ib=ib, nacc=nacc, ab=max(1, clog2(nacc)),
        fd=fmt.fifo_d, fob=count_bits(fmt.fifo_d), eb=count_bits((1 << qb) + fmt.p), j1=max(zb, nb),
        j2=count_bits(fmt.kmax * fmt.kmax + 1),
    )


def stu_check(fmt: object, who: str) -> SparseParams:
    """Refuse parameters the STU cannot be built for, naming the field.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, or an FC output index ``nmax_out - 1``
            does not fit the output word's COL field (``cb`` bits).
    """
    fmt = check_sparse(fmt, who)
    if fmt.nmax_out > 1 << fmt.cb:
        raise ParamError(f"{who}: SparseParams.nmax_out={fmt.nmax_out}: an FC output index must fit the output "
                         f"word's COL field ({fmt.cb} bits, at most {1 << fmt.cb} outputs)")
    return fmt


# ---------------------------------------------------------------------------------------
# configuration


@block
def _cfg_check(cfg_k, cfg_h, cfg_w, cfg_wnz, cfg_mode, cfg_n_out, cfg_pool, bad, fmt: SparseParams):
    """``bad``: the configuration raises CFG (docs/sparse.md section 7; FC also needs
    ``H = 1``; K and WNZ are not looked at in FC mode)."""
    wd = stu_widths(fmt)
    xw = max(2 * wd.kb_cfg, wd.zb)
    kx, zx = new_vec(xw), new_vec(xw)
    kmax, hmax, wmax, nmax = fmt.kmax, fmt.hmax, fmt.wmax, fmt.nmax_out

    @always_comb
    def check():
        b = bool(0)
        b = cfg_w == 0 or cfg_w > wmax
        if cfg_mode:
            b = b or cfg_h != 1 or cfg_n_out == 0 or cfg_n_out > nmax or cfg_pool != 0
        else:
            b = b or cfg_k == 0 or cfg_k > kmax or cfg_h == 0 or cfg_h > hmax or zx > kx * kx
        bad.next = b

    return resize(cfg_k, kx), resize(cfg_wnz, zx), check


@block
def _cfg_regs(clk, rst, go, cfg_k, cfg_h, cfg_w, cfg_nnz, cfg_wnz, cfg_mode, cfg_n_out, cfg_emit, cfg_relu,
              cfg_pool, cfg_shift, cfg_dense, cc0, km1, q_r, wnz_r, jlim, fc_r, emit_r, relu_r, pool_r, shift_r,
              dense_r, hom1, wom1, dempty, fmt: SparseParams):
    """The job's configuration, registered at an accepted ``start`` (``go``), and what
    follows from it.

    Ports:
        cc0: (combinational) the job has no compute round (``q = 0``, or ``WNZ = 0`` in CONV).
        km1: ``K - 1``; q_r: ``q``; jlim: rounds' outer count (``WNZ``, or ``n_out`` in FC mode).
        wnz_r, dense_r: ``WNZ`` and ``dense`` (u = 2 only).
        hom1, wom1, dempty: the drained map's last row and column, and "it is empty"
            (an odd 1-wide map pooled).
    """
    wd = stu_widths(fmt)
    kb, rb, cb = fmt.kb, fmt.rb, fmt.cb
    xw = max(wd.hb, wd.wb, wd.kb_cfg, wd.nb) + 1
    kx, hx, wx, nx = new_vec(xw), new_vec(xw), new_vec(xw), new_vec(xw)
    zj, nj = new_vec(wd.j1), new_vec(wd.j1)
    ho_unused, wo_unused = new_vec(xw - rb), new_vec(xw - cb)  # an accepted map's sizes fit rb / cb bits
    km1_unused = new_vec(xw - kb)

    @always_comb
    def empty():
        cc0.next = cfg_nnz == 0 or (not cfg_mode and cfg_wnz == 0)

    @always_seq(clk.posedge, reset=rst)
    def regs():
        ho = intbv(0)[xw:]
        wo = intbv(0)[xw:]
        k1 = intbv(0)[xw:]
        if go:
            k1[:] = kx - 1
            km1.next = k1[kb:]
            km1_unused.next = k1[xw:kb]
            q_r.next = cfg_nnz
            fc_r.next = cfg_mode
            emit_r.next = cfg_emit
            relu_r.next = cfg_relu
            pool_r.next = cfg_pool
            shift_r.next = cfg_shift
            if cfg_mode:
                jlim.next = nj
                ho[:] = 1
                wo[:] = nx
            else:
                jlim.next = zj
                ho[:] = hx + k1
                wo[:] = wx + k1
            if cfg_pool != 0:
                ho[:] = ho >> 1
                wo[:] = wo >> 1
            dempty.next = ho == 0 or wo == 0
            ho[:] = ho - 1
            wo[:] = wo - 1
            hom1.next = ho[rb:]
            wom1.next = wo[cb:]
            ho_unused.next = ho[xw:rb]
            wo_unused.next = wo[xw:cb]

    insts = [resize(cfg_k, kx), resize(cfg_h, hx), resize(cfg_w, wx), resize(cfg_n_out, nx), resize(cfg_wnz, zj),
             resize(cfg_n_out, nj), empty, regs]
    if fmt.u == 1:  # dense mode changes nothing in the group walker
        dense_unused = new_bool()

        @always_comb
        def no_dense():
            dense_unused.next = cfg_dense

        insts.append(no_dense)
    else:  # the scheduler's weight count and the dense cap

        @always_seq(clk.posedge, reset=rst)
        def u2regs():
            if go:
                wnz_r.next = cfg_wnz
                dense_r.next = cfg_dense

        insts.append(u2regs)
    return insts


# ---------------------------------------------------------------------------------------
# compute: operand capture, the group walker (u = 1, FC), the u = 2 scheduler


@block
def _capture(clk, rst, bus, outs, width: int):
    """``outs[l] <=`` lane ``l`` of ``bus`` every cycle (the read data of the addresses
    presented in this cycle)."""
    n = len(outs)
    tmp = [Signal(bool(0)) if width == 1 else new_vec(width) for _ in range(n)]
    if width == 1:
        splits = [bit_of(bus, l, tmp[l]) if n > 1 else wire(bus, tmp[l]) for l in range(n)]
    else:
        splits = [lane(bus, l * width, width, tmp[l]) if n > 1 else wire(bus, tmp[l]) for l in range(n)]
    regs = [_reg(clk, rst, tmp[l], outs[l]) for l in range(n)]
    return splits, regs


@block
def _reg(clk, rst, d, q):
    """``q <= d``."""

    @always_seq(clk.posedge, reset=rst)
    def r():
        q.next = d

    return r


@block
def _walker(clk, rst, go, round1, q_r, jlim, j1, eb1, g_next, j_next, last_g, rlast, fmt: SparseParams):
    """The group walker: round ``(j, g)`` with ``g`` the inner index, ``eb1 = g * p``.

    Ports:
        go: an accepted start (round 0 next).
        round1: this cycle is a walker round.
        q_r, jlim: ``q`` and the outer count (WNZ or n_out).
        j1, eb1: the current round (registers).
        g_next, j_next: the next round's group and weight (the read addresses).
        last_g, rlast: the round is its weight's last group / the job's last round.
    """
    wd = stu_widths(fmt)
    p = fmt.p
    g1 = new_vec(wd.gb)
    qx = new_vec(wd.eb)
    jn = new_vec(wd.j1)
    jnx_unused = new_vec(wd.j1 - wd.jb) if wd.j1 > wd.jb else None

    @always_comb
    def nxt():
        lg = bool(0)
        lg = eb1 + p >= qx
        last_g.next = lg
        rlast.next = lg and j1 + 1 == jlim
        if round1 and not lg:
            g_next.next = g1 + 1
            jn.next = j1
        elif round1:
            g_next.next = 0
            jn.next = j1 + 1
        else:
            g_next.next = 0
            jn.next = 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if go:
            j1.next = 0
            g1.next = 0
            eb1.next = 0
        elif round1:
            if last_g:
                j1.next = j1 + 1
                g1.next = 0
                eb1.next = 0
            else:
                g1.next = g1 + 1
                eb1.next = eb1 + p

    insts = [resize(q_r, qx), nxt, regs]
    if jnx_unused is None:
        insts.append(resize(jn, j_next))
    else:
        insts.append(split_low(jn, j_next, jnx_unused))
    return insts


@block
def _lane_addr(row, col, a, b, km1, addr, ok, fmt: SparseParams):
    """The accumulator address of ``x[row][col] * w[a][b]``: ``R = row + K-1-a``,
    ``C = col + K-1-b``, ``addr = R * fw_max + C``; ``ok`` when ``R < fh_max`` and
    ``C < fw_max`` (false for a weight index beyond K)."""
    wd = stu_widths(fmt)
    rb, cb, kb = fmt.rb, fmt.cb, fmt.kb
    fh, fw = fmt.fh_max, fmt.fw_max
    xw = max(rb, cb, kb) + 2
    mw = xw + fw.bit_length() + 1  # R * fw_max + C without wrapping
    rx, cx, ax, bx, kx = new_vec(xw), new_vec(xw), new_vec(xw), new_vec(xw), new_vec(xw)
    hi_unused = new_vec(mw - wd.ab)

    @always_comb
    def calc():
        r = intbv(0)[xw:]
        c = intbv(0)[xw:]
        f = intbv(0)[mw:]
        rr = intbv(0)[mw:]
        cc = intbv(0)[mw:]
        r[:] = rx + kx - ax
        c[:] = cx + kx - bx
        rr[:] = concat(intbv(0)[mw - xw:], r)
        cc[:] = concat(intbv(0)[mw - xw:], c)
        f[:] = rr * fw + cc
        ok.next = r < fh and c < fw
        addr.next = f[wd.ab:]
        hi_unused.next = f[mw:wd.ab]

    return resize(row, rx), resize(col, cx), resize(a, ax), resize(b, bx), resize(km1, kx), calc


@block
def _mul(x, w, prod, fmt: SparseParams):
    """``prod = x * w`` (signed ``dw`` x ``ww`` bits), sign-extended to ``accw`` bits."""
    dw, ww, accw = fmt.dw, fmt.ww, fmt.accw
    xo, wo = (1 << (accw - dw)) - 1, (1 << (accw - ww)) - 1

    @always_comb
    def mul():
        xe = intbv(0)[accw:]
        fe = intbv(0)[accw:]
        if x[dw - 1]:
            xe[:] = concat(intbv(xo)[accw - dw:], x)
        else:
            xe[:] = concat(intbv(0)[accw - dw:], x)
        if w[ww - 1]:
            fe[:] = concat(intbv(wo)[accw - ww:], w)
        else:
            fe[:] = concat(intbv(0)[accw - ww:], w)
        prod.next = xe * fe

    return mul


@block
def _walk_lane(round1, fc_r, lv, wv, x, w_conv, w_fc, v_conv, v_fc, nzm, w_sel, ok=None):
    """Group-walker lane ``l``: active when its entry ``g * p + l`` is stored, which is
    what the memory's lane valid ``lv`` says (``g * p + l < q``: the STU compares no
    second time); CONV needs a stored weight and an address in range (``ok``) too
    (``v_conv``; ``None`` in a u = 2 unit, whose scheduler does CONV).
    ``nzm``: it multiplies two non-zero operands into the accumulator (CONV: ``ok`` too;
    a u = 2 unit's slots count its CONV products, so there only the FC half is read);
    ``w_sel``: the weight it multiplies by (broadcast in CONV, gathered in FC)."""
    on = new_bool()
    okc = wv if ok is None else ok  # u = 2: the CONV half of nzm is not read (see above)

    @always_comb
    def act():
        on.next = round1 and lv

    @always_comb
    def sel():
        v_fc.next = on and fc_r
        if fc_r:
            w_sel.next = w_fc
            nzm.next = on and x != 0 and w_fc != 0
        else:
            w_sel.next = w_conv
            nzm.next = on and wv and okc and x != 0 and w_conv != 0

    insts = [act, sel]
    if v_conv is not None:

        @always_comb
        def conv():
            v_conv.next = on and not fc_r and wv and ok

        insts.append(conv)
    return insts


@block
def _tree(v_fc, prods, tsum, fmt: SparseParams):
    """The FC adder tree: ``tsum = sum of the active lanes' products`` (``accw`` bits)."""
    p, accw = fmt.p, fmt.accw

    @always_comb
    def add():
        s = intbv(0)[accw:]
        s[:] = 0
        for l in range(p):
            if v_fc[l]:
                s[:] = s + prods[l]
        tsum.next = s

    return add


@block
def _s2_ctl(clk, rst, go, round2, cap2, q_r, wnz_r, focc, pj, pi, n1, n2, w_next, rlast, ndef, fmt: SparseParams):
    """The u = 2 scheduler's position: new items of round ``(pj, pi)`` are ``n1`` of weight
    ``pj`` (entries ``pi ..``) and ``n2`` of weight ``pj + 1`` (entries ``0 ..``; only with
    ``cap2``), in the ``p - focc`` slots the FIFO leaves.

    Ports:
        go, round2: an accepted start (round 0 next); this cycle is a scheduler round.
        cap2: two weights per round allowed (sparse mode; dense mode takes one).
        focc: FIFO items of this round (they take the first slots).
        pj, pi: the next new item's weight and data entry (registers).
        n1, n2: new items of weights ``pj`` and ``pj + 1`` this round.
        w_next: the next round's first weight (its read index).
        rlast: this round is the job's last (no new item left, no deferral).
        ndef: items deferred by this round's arbiter.
    """
    wd = stu_widths(fmt)
    p = fmt.p
    cw = max(wd.qb, count_bits(p)) + 1
    qx, pix, fx, nx1, nx2 = new_vec(cw), new_vec(cw), new_vec(cw), new_vec(cw), new_vec(cw)
    jw = max(wd.j2, wd.zb)
    pjx, zx = new_vec(jw), new_vec(jw)
    pin = new_vec(wd.qb)
    pin_unused = new_vec(cw - wd.qb)  # a next entry index is below q
    pjn = new_vec(wd.j2)
    jn_unused = new_vec(wd.j2 - wd.jb) if wd.j2 > wd.jb else None
    n1_unused, n2_unused = new_vec(cw - len(n1)), new_vec(cw - len(n2))
    jnq = new_vec(wd.jb)

    @always_comb
    def count():
        ncap = intbv(0)[cw:]
        rem = intbv(0)[cw:]
        a = intbv(0)[cw:]
        b = intbv(0)[cw:]
        ok = bool(0)
        ncap[:] = p - fx
        rem[:] = qx - pix
        a[:] = 0
        b[:] = 0
        ok = pjx < zx
        if ok:
            if rem < ncap:
                a[:] = rem
                if cap2 and pjx + 1 < zx:
                    if qx < ncap - rem:
                        b[:] = qx
                    else:
                        b[:] = ncap - rem
            else:
                a[:] = ncap
        nx1.next = a
        nx2.next = b

    @always_comb
    def nxt():
        jj = intbv(0)[wd.j2:]
        ii = intbv(0)[cw:]
        jj[:] = pj
        ii[:] = pix
        if nx2 != 0:
            if nx2 == qx:
                jj[:] = pj + 2
                ii[:] = 0
            else:
                jj[:] = pj + 1
                ii[:] = nx2
        elif nx1 != 0:
            if nx1 == qx - pix:
                jj[:] = pj + 1
                ii[:] = 0
            else:
                ii[:] = pix + nx1
        if not round2:
            jj[:] = 0
            ii[:] = 0
        pjn.next = jj
        pin.next = ii[wd.qb:]
        pin_unused.next = ii[cw:wd.qb]

    @always_comb
    def fin():
        rlast.next = pjn >= zx and ndef == 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if go:
            pj.next = 0
            pi.next = 0
        elif round2:
            pj.next = pjn
            pi.next = pin

    @always_comb
    def outs():
        n1.next = nx1[len(n1):]
        n2.next = nx2[len(n2):]
        n1_unused.next = nx1[cw:len(n1)]
        n2_unused.next = nx2[cw:len(n2)]

    insts = [resize(q_r, qx), resize(pi, pix), resize(focc, fx), resize(pj, pjx), resize(wnz_r, zx), count, nxt, fin, regs, outs]
    if jn_unused is None:
        insts.append(resize(pjn, jnq))
    else:
        insts.append(split_low(pjn, jnq, jn_unused))
    insts.append(wire(jnq, w_next))
    return insts


@block
def _s2_slot(focc, pi, n1, n2, s: int, is_fifo, is_new, ent, wsel, fmt: SparseParams):
    """Slot ``s`` of a u = 2 round: a FIFO item (``s < focc``), new item ``m = s - focc`` of
    weight ``pj`` (entry ``pi + m``, ``m < n1``) or of weight ``pj + 1`` (entry ``m - n1``),
    or idle."""
    wd = stu_widths(fmt)
    cw = max(wd.qb, count_bits(fmt.p)) + 1
    fx, pix, nx1, nx2 = new_vec(cw), new_vec(cw), new_vec(cw), new_vec(cw)
    e_unused = new_vec(cw - wd.qb)  # an entry index is below q
    sc = s

    @always_comb
    def sel():
        m = intbv(0)[cw:]
        e = intbv(0)[cw:]
        m[:] = sc - fx
        e[:] = 0
        is_fifo.next = fx > sc
        is_new.next = 0
        wsel.next = 0
        if fx <= sc:
            if m < nx1:
                is_new.next = 1
                e[:] = pix + m
            elif m < nx1 + nx2:
                is_new.next = 1
                wsel.next = 1
                e[:] = m - nx1
        ent.next = e[wd.qb:]
        e_unused.next = e[cw:wd.qb]

    return resize(focc, fx), resize(pi, pix), resize(n1, nx1), resize(n2, nx2), sel


@block
def _s2_fetch(ent, gab, lrow, lcol, lval, lvld, brow, bcol, bval, bvld, row, col, val, vld, fmt: SparseParams):
    """Data entry ``ent`` for a slot: from the group captured this cycle (entries
    ``gab .. gab+p-1``, lanes ``lrow``...) or from the local buffer (earlier groups)."""
    wd = stu_widths(fmt)
    p, depth = fmt.p, fmt.depth
    ex, d = new_vec(wd.eb), new_vec(wd.eb)
    lw_ = max(1, clog2(p))
    dl = new_vec(lw_)
    bi = new_vec(max(1, clog2(depth)))  # the buffer index (ent < depth is checked on all of ent)

    @always_comb
    def off():
        d.next = ex - gab

    @always_comb
    def get():
        if ex >= gab:
            if d < p:
                row.next = lrow[dl]
                col.next = lcol[dl]
                val.next = lval[dl]
                vld.next = lvld[dl]
            else:
                row.next = 0
                col.next = 0
                val.next = 0
                vld.next = 0
        elif ent < depth:
            row.next = brow[bi]
            col.next = bcol[bi]
            val.next = bval[bi]
            vld.next = bvld[bi]
        else:
            row.next = 0
            col.next = 0
            val.next = 0
            vld.next = 0

    return resize(ent, ex), off, get, resize(d, dl), resize(ent, bi)  # d < p is checked on all of d


@block
def _s2_weight(wsel, wa, wb, ww, wv, a, b, w, v):
    """The slot's weight: read lane ``wsel`` (``pj`` or ``pj + 1``)."""

    @always_comb
    def pick():
        if wsel:
            a.next = wa[1]
            b.next = wb[1]
            w.next = ww[1]
            v.next = wv[1]
        else:
            a.next = wa[0]
            b.next = wb[0]
            w.next = ww[0]
            v.next = wv[0]

    return pick


@block
def _s2_item(is_fifo, is_new, fa, fd_, vld, wv, ok, x, w, addr, prod, sv, sa, sd, fc_r, nzm_fc, nzm):
    """The slot's item: the FIFO's ``{address, product}``, or the new product when its
    entry and weight are stored and its address is in range. ``nzm``: the lane multiplies
    two non-zero operands (the walker's ``nzm_fc`` in FC mode)."""

    @always_comb
    def item():
        if is_fifo:
            sv.next = 1
            sa.next = fa
            sd.next = fd_
        else:
            sv.next = is_new and vld and wv and ok
            sa.next = addr
            sd.next = prod
        if fc_r:
            nzm.next = nzm_fc
        else:
            nzm.next = is_new and vld and wv and ok and x != 0 and w != 0

    return item


@block
def _arbiter(sv, sa, s: int, emit, dfr):
    """Slot ``s``: ``dfr`` when an earlier slot claims the same address (the first claimant
    wins), else ``emit``."""
    sc = s

    if s == 0:

        @always_comb
        def first():  # an always block like the other slots' (the list is one memory)
            if sv[sc]:
                emit.next = 1
            else:
                emit.next = 0
            dfr.next = 0

        return first

    @always_comb
    def arb():
        d = bool(0)
        d = False
        for t in range(sc):
            if sv[t] and sa[t] == sa[sc]:
                d = True
        emit.next = sv[sc] and not d
        dfr.next = sv[sc] and d

    return arb


@block
def _prefix(dfr, s: int, pre):
    """``pre = number of deferred slots before s``."""
    sc = s

    if s == 0:
        return _zero(dfr[0], pre)

    @always_comb
    def cnt():
        c = intbv(0)[len(pre):]
        c[:] = 0
        for t in range(sc):
            if dfr[t]:
                c[:] = c + 1
        pre.next = c

    return cnt


@block
def _compact(dfr, pre, sa, sd, k: int, na, nd):
    """FIFO position ``k`` of the next round: the ``k``-th deferred slot's item."""
    p = len(dfr)
    kc = k

    @always_comb
    def pick():
        na.next = 0
        nd.next = 0
        for s in range(p):
            if dfr[s] and pre[s] == kc:
                na.next = sa[s]
                nd.next = sd[s]

    return pick


@block
def _s2_fifo(clk, rst, go, round2, dfr, nfa, nfd, fa, fd_, focc, ndef, fifo_ovf, fmt: SparseParams):
    """The collision FIFO: the round's deferred items (compacted, in slot order) replace
    the FIFO's, which the round took; ``fifo_ovf`` if more than ``fifo_d`` defer. ``ndef``
    counts the deferred items of a scheduler round only: in FC mode the slots still see
    the stored CONV weights (``cfg_wnz`` is the weight memory's count), and their
    collisions are no pushes."""
    p, fd = fmt.p, fmt.fifo_d
    nb_ = len(ndef)
    nf = new_vec(len(focc))  # a legal round defers at most fifo_d items

    if p == 1:  # one slot: nothing is ever deferred

        @always_comb
        def cnt():
            ndef.next = dfr[0] and round2
            fifo_ovf.next = 0

    else:

        @always_comb
        def cnt():
            c = intbv(0)[nb_:]
            c[:] = 0
            if round2:
                for s in range(p):
                    if dfr[s]:
                        c[:] = c + 1
            ndef.next = c
            fifo_ovf.next = c > fd

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if go:
            focc.next = 0
        elif round2:
            focc.next = nf
            for k in range(fd):
                fa[k].next = nfa[k]
                fd_[k].next = nfd[k]

    return cnt, regs, resize(ndef, nf)


@block
def _s2_buffer(clk, rst, go, round2, lrow, lcol, lval, lvld, brow, bcol, bval, bvld, gab, gnext, fmt: SparseParams):
    """The u = 2 data buffer: from ``start``, group ``k`` is read in cycle ``k`` and written
    at entries ``gab .. gab+p-1`` at the end of cycle ``k + 1`` (``gnext``: the group read
    in this cycle of a round)."""
    wd = stu_widths(fmt)
    p, depth = fmt.p, fmt.depth
    bwe = [new_bool() for _ in range(p)]
    bwa = [new_vec(max(1, clog2(depth))) for _ in range(p)]

    @always_seq(clk.posedge, reset=rst)
    def ptr():
        if go:
            gab.next = 0
            gnext.next = 1
        elif round2 and gab < depth:
            gab.next = gab + p
            gnext.next = gnext + 1

    @always(clk.posedge)
    def write():
        for l in range(p):
            if bwe[l]:
                brow[bwa[l]].next = lrow[l]
                bcol[bwa[l]].next = lcol[l]
                bval[bwa[l]].next = lval[l]
                bvld[bwa[l]].next = lvld[l]

    return ptr, write, [_buf_lane(round2, gab, l, bwe[l], bwa[l], depth) for l in range(p)]


@block
def _buf_lane(round2, gab, l: int, we, wa, depth: int):
    """Buffer write of captured lane ``l``: entry ``gab + l`` while it is below ``depth``."""
    lc = l
    a = new_vec(len(gab))

    @always_comb
    def lw():
        a.next = gab + lc

    @always_comb
    def le():
        we.next = round2 and a < depth

    return lw, le, resize(a, wa)  # the write index is below depth when we is set


# ---------------------------------------------------------------------------------------
# accumulate


@block
def _lane_sel(fc_r, x_a, w_a, x_b, w_b, x, w):
    """Multiplier operands: ``(x_b, w_b)`` in FC mode, else ``(x_a, w_a)``."""

    @always_comb
    def sel():
        if fc_r:
            x.next = x_b
            w.next = w_b
        else:
            x.next = x_a
            w.next = w_a

    return sel


@block
def _stage_p(clk, rst, fc_r, fc_on, oaddr, tsum, cv, ca, cd, pv, pa, pd):
    """Lane 0's round register: in FC mode it carries the adder tree's sum to output
    ``o`` (``fc_on``: a walker round), else the lane's own product and address."""

    @always_seq(clk.posedge, reset=rst)
    def reg():
        if fc_r:
            pv.next = fc_on
            pa.next = oaddr
            pd.next = tsum
        else:
            pv.next = cv
            pa.next = ca
            pd.next = cd

    return reg


@block
def _stage_p_conv(clk, rst, fc_r, cv, ca, cd, pv, pa, pd):
    """The round's register of a lane other than 0: its own product and address, valid
    in CONV mode only (in FC mode lane 0 alone carries the adder tree's sum). An invalid
    lane's address and value are read by nothing, so they are not switched to the tree's
    (a multiplexer per bit saved, and no data that no reader may read)."""

    @always_seq(clk.posedge, reset=rst)
    def reg():
        pv.next = cv and not fc_r
        pa.next = ca
        pd.next = cd

    return reg


@block
def _rmw(clk, rst, clr, pv, pa, pd, acc, acc_ovf, fmt: SparseParams):
    """Read-modify-write of the accumulator: every valid lane adds its value to its
    (distinct) address in ``accw`` bits, in one cycle; ``acc_ovf`` when a signed sum
    overflows. ``clr`` (and ``rst``) zero every word."""
    p, accw = fmt.p, fmt.accw
    nacc = stu_widths(fmt).nacc
    msb = accw - 1
    sums = [new_vec(accw) for _ in range(p)]
    olds = [new_vec(accw) for _ in range(p)]
    inr = [new_bool() for _ in range(p)]  # the lane's address exists

    @always_comb
    def add():
        sm = intbv(0)[accw:]
        ov = bool(0)
        ov = False
        for l in range(p):
            sm[:] = olds[l] + pd[l]
            sums[l].next = sm
            if pv[l] and olds[l][msb] == pd[l][msb] and sm[msb] != olds[l][msb]:
                ov = True
        acc_ovf.next = ov

    @always(clk.posedge)
    def write():
        if rst or clr:
            for i in range(nacc):
                acc[i].next = 0
        else:
            for l in range(p):
                if pv[l] and inr[l]:
                    acc[pa[l]].next = sums[l]

    return add, write, [_acc_read(acc, pa[l], olds[l], nacc, inr[l]) for l in range(p)]


# ---------------------------------------------------------------------------------------
# drain


@block
def _drain_addr(rr, rc, pool_r, a00, a01, a10, a11, fmt: SparseParams):
    """The accumulator words of drain position ``(rr, rc)``: ``(rr, rc)`` itself, or its 2x2
    window ``(2rr .. 2rr+1, 2rc .. 2rc+1)`` when pooling (``a00`` is the top-left)."""
    wd = stu_widths(fmt)
    fw = fmt.fw_max
    xw = max(fmt.rb, fmt.cb) + 2
    mw = xw + fw.bit_length() + 2
    rx, cx = new_vec(xw), new_vec(xw)
    hi_unused = [new_vec(mw - wd.ab) for _ in range(4)]
    outs = [a00, a01, a10, a11]
    offs = [0, 1, fw, fw + 1]

    @block
    def one(base, off: int, out, hi_unused):
        oc = off

        @always_comb
        def a():
            t = intbv(0)[mw:]
            t[:] = base + oc
            out.next = t[wd.ab:]
            hi_unused.next = t[mw:wd.ab]

        return a

    base = new_vec(mw)

    @always_comb
    def b():
        r = intbv(0)[mw:]
        c = intbv(0)[mw:]
        r[:] = concat(intbv(0)[mw - xw:], rx)
        c[:] = concat(intbv(0)[mw - xw:], cx)
        if pool_r != 0:
            r[:] = r + r
            c[:] = c + c
        base.next = r * fw + c

    return resize(rr, rx), resize(rc, cx), b, [one(base, offs[i], outs[i], hi_unused[i]) for i in range(4)]


@block
def _acc_read(acc, addr, q, nacc: int, inr=None):
    """``q = acc[addr]`` (0 beyond the array; ``inr``: the address exists)."""
    if nacc == 1 << len(addr):
        insts = [mem_read(acc, addr, q)]
        if inr is not None:
            insts.append(_is_set(addr, inr))
        return insts

    @always_comb
    def rd():
        if addr < nacc:
            q.next = acc[addr]
        else:
            q.next = 0

    insts = [rd]
    if inr is not None:

        @always_comb
        def rng():
            inr.next = addr < nacc

        insts.append(rng)
    return insts


@block
def _is_set(x, y):
    """``y = 1`` (``x`` only gives the process an input)."""

    @always_comb
    def one():
        if x == 0:
            y.next = 1
        else:
            y.next = 1

    return one


@block
def _drain_eval(r00, r01, r10, r11, relu_r, pool_r, shift_r, vout, nz, fmt: SparseParams):
    """One output position (docs/sparse.md section 5): ReLU on each word, pool (none:
    ``r00``; max; sum in ``accw + 2`` bits; avg = sum >> 2), ``>> shift`` (arithmetic),
    saturation to ``ow`` bits; ``nz`` when the result is not 0."""
    accw, ow = fmt.accw, fmt.ow
    ew = accw + 2
    ones = (1 << ew) - 1
    hn = ew - ow + 1  # bits that must all equal the sign for the value to fit ow bits
    smax, smin = (1 << (ow - 1)) - 1, 0
    p_none, p_max, p_avg = P_NONE, P_MAX, P_AVG
    x = [new_vec(ew) for _ in range(4)]
    pooled = new_vec(ew)
    low_unused = new_vec(2)  # avg drops the sum's two low bits

    @block
    def ext(r, xo):
        @always_comb
        def e():
            if relu_r and r[accw - 1]:
                xo.next = 0
            else:
                xo.next = concat(r[accw - 1], r[accw - 1], r)

        return e

    @always_comb
    def pool():
        v = intbv(0)[ew:]
        s = intbv(0)[ew:]
        t = bool(0)
        v[:] = x[0]
        if pool_r == p_max:
            for i in range(1, 4):
                if x[i][ew - 1] != v[ew - 1]:
                    t = bool(v[ew - 1])
                else:
                    t = x[i] > v
                if t:
                    v[:] = x[i]
        elif pool_r != p_none:
            s[:] = x[0] + x[1] + x[2] + x[3]
            v[:] = s
            if pool_r == p_avg:
                v[:] = concat(s[ew - 1], s[ew - 1], s[ew:2])
        low_unused.next = s[2:]
        pooled.next = v

    if ow == ew:  # ow = accw + 2: every value fits

        @always_comb
        def out():
            sh = intbv(0)[ew:]
            sh[:] = pooled >> shift_r
            if pooled[ew - 1]:
                sh[:] = sh | ~(intbv(ones)[ew:] >> shift_r)
            vout.next = sh
            nz.next = sh != 0

    else:

        @always_comb
        def out():
            sh = intbv(0)[ew:]
            hi = intbv(0)[hn:]
            hv = intbv(0)[hn:]
            o = intbv(0)[ow:]
            sh[:] = pooled >> shift_r
            if pooled[ew - 1]:
                sh[:] = sh | ~(intbv(ones)[ew:] >> shift_r)
            hi[:] = sh[ew:ow - 1]
            hv[:] = ~hi
            if hi == 0 or hv == 0:
                o[:] = sh[ow:]
            elif sh[ew - 1]:
                o[:] = concat(True, intbv(smin)[ow - 1:])
            else:
                o[:] = concat(False, intbv(smax)[ow - 1:])
            vout.next = o
            nz.next = o != 0

    return [ext(r, xo) for r, xo in zip((r00, r01, r10, r11), x)], pool, out


@block
def _drain_ctl(clk, rst, go, state, pstep, emit_r, hom1, wom1, rd, nz, vout, o_ready, o_valid, o_data,
               rr, rc, rq, adv, lastpos, flush_done, fmt: SparseParams):
    """The drain's read register (position ``(er, ec)``, words ``rq``), the read pointer
    ``(rr, rc)`` one position ahead, and the held output word.

    Ports:
        rd: the four words at the read pointer (combinational).
        nz, vout: the evaluation of the read register.
        rq: the read register's four words (to the evaluation).
        adv: the evaluated position is done this cycle (no held word waits on it).
        lastpos: the evaluated position is the last one.
        flush_done: FLUSH ends this cycle (no held word, or it is taken).
    """
    rb, cb, ow = fmt.rb, fmt.cb, fmt.ow
    er, ec = new_vec(rb), new_vec(cb)
    hv = new_bool()
    hrow, hcol, hval = new_vec(rb), new_vec(cb), new_vec(ow)
    s_pipe, s_drain, s_flush = S_PIPE, S_DRAIN, S_FLUSH

    @always_comb
    def comb():
        in_d = bool(0)
        in_f = bool(0)
        in_d = state == s_drain
        in_f = state == s_flush
        ov = bool(0)
        ov = (in_d and nz and hv) or (in_f and hv)
        o_valid.next = ov
        if ov:
            o_data.next = concat(in_f, hrow, hcol, hval)
        else:
            o_data.next = 0
        adv.next = in_d and (not (nz and hv) or o_ready)
        flush_done.next = in_f and (not hv or o_ready)
        lastpos.next = er == hom1 and ec == wom1

    @always_seq(clk.posedge, reset=rst)
    def regs():
        ld = bool(0)
        ld = (state == s_pipe and pstep and emit_r) or adv
        if go:
            rr.next = 0
            rc.next = 0
            hv.next = 0
        else:
            if ld:
                for i in range(4):
                    rq[i].next = rd[i]
                er.next = rr
                ec.next = rc
                if rc == wom1:
                    rr.next = rr + 1
                    rc.next = 0
                else:
                    rc.next = rc + 1
            if adv and nz:
                hv.next = 1
                hrow.next = er
                hcol.next = ec
                hval.next = vout
            if flush_done:
                hv.next = 0

    return comb, regs


# ---------------------------------------------------------------------------------------
# control


@block
def _fsm(clk, rst, start, bad, cc0, rlast, emit_r, dempty, adv, lastpos, flush_done, acc_ovf, fifo_ovf,
         go, state, pstep, busy, done, err, clr):
    """The job: IDLE -> COMP (rounds) -> PIPE (two cycles) -> DRAIN (``emit``) -> FLUSH ->
    IDLE with ``done``; a start refused by CFG pulses ``done`` in the next cycle."""
    s_idle, s_comp, s_pipe, s_drain, s_flush = S_IDLE, S_COMP, S_PIPE, S_DRAIN, S_FLUSH
    b_cfg, b_busy, b_ovf, b_fifo = (SparseParams.STU_ERR_NAMES.index(n)
                                    for n in ("CFG", "START_BUSY", "ACC_OVF", "FIFO_OVF"))
    nerr = len(err)

    @always_comb
    def comb():
        go.next = start and state == s_idle and not bad
        busy.next = state != s_idle
        clr.next = flush_done and emit_r

    @always_seq(clk.posedge, reset=rst)
    def regs():
        e = intbv(0)[nerr:]
        e[:] = err
        done.next = 0
        if start and state == s_idle and bad:
            e[b_cfg] = 1
            done.next = 1
        if start and state != s_idle:
            e[b_busy] = 1
        if acc_ovf:
            e[b_ovf] = 1
        if fifo_ovf:
            e[b_fifo] = 1
        err.next = e
        if state == s_idle:
            if start and not bad:
                pstep.next = 0
                if cc0:
                    state.next = s_pipe
                else:
                    state.next = s_comp
        elif state == s_comp:
            if rlast:
                state.next = s_pipe
                pstep.next = 0
        elif state == s_pipe:
            if not pstep:
                pstep.next = 1
            elif emit_r and not dempty:
                state.next = s_drain
            else:
                state.next = s_flush
        elif state == s_drain:
            if adv and lastpos:
                state.next = s_flush
        elif flush_done:
            state.next = s_idle
            done.next = 1

    return comb, regs


@block
def _counters(clk, rst, start, state, nzm, ndef, o_valid, o_ready, cyc_compute, cyc_drain, n_rounds, n_mults,
              n_deferred, nnz_out, fmt: SparseParams):
    """The job's counters, cleared by a start in idle (also one refused by CFG: its job
    has no round and no drain); ``n_deferred`` stays 0 for u = 1."""
    p = fmt.p
    s_idle, s_comp, s_drain, s_flush = S_IDLE, S_COMP, S_DRAIN, S_FLUSH
    cw = fmt.cnt_bits
    nm, dx = new_vec(cw), new_vec(cw)
    go = new_bool()
    insts = []

    @always_comb
    def clear():
        go.next = start and state == s_idle

    @always_comb
    def pop():
        c = intbv(0)[cw:]
        c[:] = 0
        for l in range(p):
            if nzm[l]:
                c[:] = c + 1
        nm.next = c

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if go:
            cyc_compute.next = 0
            n_rounds.next = 0
            n_mults.next = 0
            cyc_drain.next = 0
            nnz_out.next = 0
        else:
            if state == s_comp:
                cyc_compute.next = cyc_compute + 1
                n_rounds.next = n_rounds + 1
                n_mults.next = n_mults + nm
            if state == s_drain or (state == s_flush and o_valid and not o_ready):
                cyc_drain.next = cyc_drain + 1
            if o_valid and o_ready:
                nnz_out.next = nnz_out + 1

    if fmt.u == 2:

        @always_seq(clk.posedge, reset=rst)
        def deferred():
            if go:
                n_deferred.next = 0
            elif state == s_comp:
                n_deferred.next = n_deferred + dx

        insts += [resize(ndef, dx), deferred]
    else:
        insts.append(_zero(state, n_deferred))
    return clear, pop, regs, insts


@block
def _zero(x, y):
    """``y = 0`` (``x`` only gives the process an input)."""

    @always_comb
    def z():
        if x == 0:
            y.next = 0
        else:
            y.next = 0

    return z


# ---------------------------------------------------------------------------------------
# the unit


@block
def stu(clk, rst, start, cfg_k, cfg_h, cfg_w, cfg_nnz, cfg_wnz, cfg_mode, cfg_n_out, cfg_emit, cfg_relu,
        cfg_pool, cfg_shift, cfg_dense, busy, done, err, rd_group, rd_row, rd_col, rd_val, rd_lane_valid,
        w_rd_idx, w_rd_a, w_rd_b, w_rd_w, w_rd_valid, fc_rd_row, fc_rd_idx, fc_rd_w, o_valid, o_ready, o_data,
        cyc_compute, cyc_drain, n_rounds, n_mults, n_deferred, nnz_out, acc_we, acc_addr, fmt: SparseParams,
        fifo_occ=None):
    """The sparse tensor compute unit. Ports: :func:`stu_ports`; behaviour: the module
    docstring."""
    fmt = stu_check(fmt, "stu")
    wd = stu_widths(fmt)
    p, u, accw = fmt.p, fmt.u, fmt.accw
    rb, cb, dw, kb, ww = fmt.rb, fmt.cb, fmt.dw, fmt.kb, fmt.ww
    insts = []

    # configuration and control
    bad, cc0, go, clr = new_bool(), new_bool(), new_bool(), new_bool()
    km1, q_r, wnz_r, jlim = new_vec(kb), new_vec(wd.qb), new_vec(wd.zb), new_vec(wd.j1)
    fc_r, emit_r, relu_r = new_bool(), new_bool(), new_bool()
    dense_r = new_bool() if u == 2 else None  # u = 1: cfg_dense is not needed
    pool_r, shift_r = new_vec(2), new_vec(wd.sb)
    hom1, wom1, dempty = new_vec(rb), new_vec(cb), new_bool()
    state, pstep = new_vec(3), new_bool()
    rlast, acc_ovf = new_bool(), new_bool()
    # the collision FIFO's signals (constant 0 without one)
    fifo_ovf = new_bool() if u == 2 else const0(1)
    ndef = new_vec(count_bits(p)) if u == 2 else const0(count_bits(p))
    focc = new_vec(wd.fob) if u == 2 else const0(wd.fob)
    adv, lastpos, flush_done = new_bool(), new_bool(), new_bool()
    insts.append(_cfg_check(cfg_k, cfg_h, cfg_w, cfg_wnz, cfg_mode, cfg_n_out, cfg_pool, bad, fmt))
    insts.append(_cfg_regs(clk, rst, go, cfg_k, cfg_h, cfg_w, cfg_nnz, cfg_wnz, cfg_mode, cfg_n_out, cfg_emit,
                           cfg_relu, cfg_pool, cfg_shift, cfg_dense, cc0, km1, q_r, wnz_r, jlim, fc_r, emit_r,
                           relu_r, pool_r, shift_r, dense_r, hom1, wom1, dempty, fmt))
    insts.append(_fsm(clk, rst, start, bad, cc0, rlast, emit_r, dempty, adv, lastpos, flush_done, acc_ovf,
                      fifo_ovf, go, state, pstep, busy, done, err, clr))

    # read data, registered (round k computes on the words addressed in the cycle before)
    lrow, lcol, lval = [new_vec(rb) for _ in range(p)], [new_vec(cb) for _ in range(p)], [new_vec(dw) for _ in range(p)]
    lvld = [new_bool() for _ in range(p)]
    wa, wb, wwv, wv = [new_vec(kb) for _ in range(u)], [new_vec(kb) for _ in range(u)], \
        [new_vec(ww) for _ in range(u)], [new_bool() for _ in range(u)]
    insts += [_capture(clk, rst, rd_row, lrow, rb), _capture(clk, rst, rd_col, lcol, cb),
              _capture(clk, rst, rd_val, lval, dw), _capture(clk, rst, rd_lane_valid, lvld, 1),
              _capture(clk, rst, w_rd_a, wa, kb), _capture(clk, rst, w_rd_b, wb, kb),
              _capture(clk, rst, w_rd_w, wwv, ww), _capture(clk, rst, w_rd_valid, wv, 1)]
    fcw = [new_vec(ww) for _ in range(p)]
    insts += [lane(fc_rd_w, l * ww, ww, fcw[l]) if p > 1 else wire(fc_rd_w, fcw[l]) for l in range(p)]

    # the group walker (u = 1 CONV, and FC mode)
    round1 = new_bool()
    j1, eb1, g_next, j_next = new_vec(wd.j1), new_vec(wd.eb), new_vec(wd.gb), new_vec(wd.jb)
    last_g, rlast1 = new_bool(), new_bool()
    insts.append(_walker(clk, rst, go, round1, q_r, jlim, j1, eb1, g_next, j_next, last_g, rlast1, fmt))
    v_conv = [new_bool() for _ in range(p)] if u == 1 else [None] * p
    v_fc, nzm1 = [new_bool() for _ in range(p)], [new_bool() for _ in range(p)]
    w1 = [new_vec(ww) for _ in range(p)]
    lok = [new_bool() for _ in range(p)]
    insts += [_walk_lane(round1, fc_r, lvld[l], wv[0], lval[l], wwv[0], fcw[l], v_conv[l], v_fc[l], nzm1[l], w1[l],
                         ok=lok[l] if u == 1 else None) for l in range(p)]

    # operands, products, addresses of each lane
    mx, mw_ = [new_vec(dw) for _ in range(p)], [new_vec(ww) for _ in range(p)]
    prod = [new_vec(accw) for _ in range(p)]
    laddr = [new_vec(wd.ab) for _ in range(p)]
    cv, ca, cd = [new_bool() for _ in range(p)], [new_vec(wd.ab) for _ in range(p)], [new_vec(accw) for _ in range(p)]
    nzm = [new_bool() for _ in range(p)]
    fa = [new_vec(wd.ab) for _ in range(wd.fd)]
    fdv = [new_vec(accw) for _ in range(wd.fd)]
    if u == 1:
        s_comp = S_COMP

        @always_comb
        def rounds_u1():
            round1.next = state == s_comp

        insts.append(rounds_u1)
        insts.append(wire(rlast1, rlast))
        for l in range(p):
            insts += [wire(lval[l], mx[l]), wire(w1[l], mw_[l]),
                      _lane_addr(lrow[l], lcol[l], wa[0], wb[0], km1, laddr[l], lok[l], fmt),
                      wire(v_conv[l], cv[l]), wire(laddr[l], ca[l]), wire(prod[l], cd[l]),
                      wire(nzm1[l], nzm[l])]
        insts += [wire(g_next, rd_group), resize(j_next, w_rd_idx)]
    else:
        insts.append(_u2(clk, rst, go, state, round1, fc_r, dense_r, q_r, wnz_r, km1, rlast1, rlast,
                     lrow, lcol, lval, lvld, wa, wb, wwv, wv, w1, nzm1, mx, mw_, prod, cv, ca, cd, nzm, ndef, fa,
                     fdv, focc, fifo_ovf, g_next, j_next, rd_group, w_rd_idx, fmt))
    insts += [_mul(mx[l], mw_[l], prod[l], fmt) for l in range(p)]

    # FC: gather by the lane's column, adder tree, output o at address o
    tsum, oaddr = new_vec(accw), new_vec(wd.ab)
    insts += [_tree(v_fc, prod, tsum, fmt), resize(j1, oaddr), resize(j1, fc_rd_row)]
    fcidx = [new_vec(wd.ib) for _ in range(p)]
    insts += [resize(lcol[l], fcidx[l]) for l in range(p)]
    insts.append(cat_lanes(fcidx, fc_rd_idx))

    # the lane registers and the accumulator
    pv, pa, pd = [new_bool() for _ in range(p)], [new_vec(wd.ab) for _ in range(p)], [new_vec(accw) for _ in range(p)]
    insts.append(_stage_p(clk, rst, fc_r, round1, oaddr, tsum, cv[0], ca[0], cd[0], pv[0], pa[0], pd[0]))
    insts += [_stage_p_conv(clk, rst, fc_r, cv[l], ca[l], cd[l], pv[l], pa[l], pd[l]) for l in range(1, p)]
    acc = [new_vec(accw) for _ in range(wd.nacc)]
    insts.append(_rmw(clk, rst, clr, pv, pa, pd, acc, acc_ovf, fmt))
    insts += [cat_lanes(pv, acc_we), cat_lanes(pa, acc_addr)]
    if u == 2:
        insts.append(resize(focc, fifo_occ))

    # drain
    rr, rc = new_vec(rb), new_vec(cb)
    ra = [new_vec(wd.ab) for _ in range(4)]
    rd = [new_vec(accw) for _ in range(4)]
    rq = [new_vec(accw) for _ in range(4)]
    vout, nz = new_vec(fmt.ow), new_bool()
    insts.append(_drain_addr(rr, rc, pool_r, *ra, fmt))
    insts += [_acc_read(acc, ra[i], rd[i], wd.nacc) for i in range(4)]
    q00, q01, q10, q11 = (new_vec(accw) for _ in range(4))
    insts += [wire(rq[i], q) for i, q in enumerate((q00, q01, q10, q11))]
    insts.append(_drain_eval(q00, q01, q10, q11, relu_r, pool_r, shift_r, vout, nz, fmt))
    insts.append(_drain_ctl(clk, rst, go, state, pstep, emit_r, hom1, wom1, rd, nz, vout, o_ready, o_valid, o_data,
                            rr, rc, rq, adv, lastpos, flush_done, fmt))
    insts.append(_counters(clk, rst, start, state, nzm, ndef, o_valid, o_ready, cyc_compute, cyc_drain, n_rounds,
                           n_mults, n_deferred, nnz_out, fmt))
    return insts


@block
def _u2(clk, rst, go, state, round1, fc_r, dense_r, q_r, wnz_r, km1, rlast1, rlast, lrow, lcol,
        lval, lvld, wa, wb, wwv, wv, w1, nzm1, mx, mw_, prod, cv, ca, cd, nzm, ndef, fa, fdv, focc, fifo_ovf,
        g_next, j_next, rd_group, w_rd_idx, fmt: SparseParams):
    """The u = 2 (STU 1400) compute path: the scheduler's slots in CONV mode, the group
    walker's lanes in FC mode (instances of :func:`stu`)."""
    wd = stu_widths(fmt)
    p, accw, rb, cb, dw, kb, ww = fmt.p, fmt.accw, fmt.rb, fmt.cb, fmt.dw, fmt.kb, fmt.ww
    insts = []
    round2 = new_bool()
    cap2, rlast2 = new_bool(), new_bool()
    pj, pi = new_vec(wd.j2), new_vec(wd.qb)
    n1, n2 = new_vec(count_bits(p)), new_vec(count_bits(p))
    w_next = new_vec(wd.jb)
    gab, gnext = new_vec(wd.eb), new_vec(wd.eb)
    insts.append(_u2_ctl(state, fc_r, dense_r, rlast1, rlast2, round1, round2, cap2, rlast))
    insts.append(_s2_ctl(clk, rst, go, round2, cap2, q_r, wnz_r, focc, pj, pi, n1, n2, w_next, rlast2, ndef, fmt))
    brow, bcol = [new_vec(rb) for _ in range(fmt.depth)], [new_vec(cb) for _ in range(fmt.depth)]
    bval, bvld = [new_vec(dw) for _ in range(fmt.depth)], [new_bool() for _ in range(fmt.depth)]
    insts.append(_s2_buffer(clk, rst, go, round2, lrow, lcol, lval, lvld, brow, bcol, bval, bvld, gab, gnext, fmt))
    sv, sa, sd = [new_bool() for _ in range(p)], [new_vec(wd.ab) for _ in range(p)], [new_vec(accw) for _ in range(p)]
    emit, dfr, pre = [new_bool() for _ in range(p)], [new_bool() for _ in range(p)], \
        [new_vec(count_bits(p)) for _ in range(p)]
    for s in range(p):
        is_fifo, is_new, wsel = new_bool(), new_bool(), new_bool()
        ent = new_vec(wd.qb)
        row, col, val, vld = new_vec(rb), new_vec(cb), new_vec(dw), new_bool()
        a, b, w, v = new_vec(kb), new_vec(kb), new_vec(ww), new_bool()
        addr, ok = new_vec(wd.ab), new_bool()
        fa_s = fa[s] if s < wd.fd else const0(wd.ab)
        fd_s = fdv[s] if s < wd.fd else const0(accw)
        insts += [
            _s2_slot(focc, pi, n1, n2, s, is_fifo, is_new, ent, wsel, fmt),
            _s2_fetch(ent, gab, lrow, lcol, lval, lvld, brow, bcol, bval, bvld, row, col, val, vld, fmt),
            _s2_weight(wsel, wa, wb, wwv, wv, a, b, w, v),
            _lane_addr(row, col, a, b, km1, addr, ok, fmt),
            _lane_sel(fc_r, val, w, lval[s], w1[s], mx[s], mw_[s]),
            _s2_item(is_fifo, is_new, fa_s, fd_s, vld, v, ok, val, w, addr, prod[s], sv[s], sa[s], sd[s], fc_r,
                     nzm1[s], nzm[s]),
            _arbiter(sv, sa, s, emit[s], dfr[s]),
            _prefix(dfr, s, pre[s]),
            wire(emit[s], cv[s]), wire(sa[s], ca[s]), wire(sd[s], cd[s]),
        ]
    nfa, nfd = [new_vec(wd.ab) for _ in range(wd.fd)], [new_vec(accw) for _ in range(wd.fd)]
    insts += [_compact(dfr, pre, sa, sd, k, nfa[k], nfd[k]) for k in range(wd.fd)]
    insts.append(_s2_fifo(clk, rst, go, round2, dfr, nfa, nfd, fa, fdv, focc, ndef, fifo_ovf, fmt))
    # read addresses: the scheduler's in CONV rounds, else the walker's (0 and 1 in idle)
    gq = new_vec(wd.gb)
    insts.append(resize(gnext, gq))
    insts.append(_read_addr(round2, gq, g_next, w_next, j_next, rd_group, w_rd_idx, fmt))
    return insts


@block
def _u2_ctl(state, fc_r, dense_r, rlast1, rlast2, round1, round2, cap2, rlast):
    """Which compute path runs the rounds of a u = 2 unit: the walker in FC mode, the
    scheduler in CONV mode (two weights per round unless dense)."""
    s_comp = S_COMP

    @always_comb
    def ctl():
        c = bool(0)
        c = state == s_comp
        round1.next = c and fc_r
        round2.next = c and not fc_r
        cap2.next = not dense_r
        if fc_r:
            rlast.next = rlast1
        else:
            rlast.next = rlast2

    return ctl


@block
def _read_addr(round2, gq, g_next, w_next, j_next, rd_group, w_rd_idx, fmt: SparseParams):
    """u = 2 read addresses: group and weights ``(j, j + 1)`` of the next round."""
    jb = widx_bits(fmt)

    @always_comb
    def ra():
        j = intbv(0)[jb:]
        k = intbv(0)[jb:]
        if round2:
            rd_group.next = gq
            j[:] = w_next
        else:
            rd_group.next = g_next
            j[:] = j_next
        k[:] = j + 1
        w_rd_idx.next = concat(k, j)

    return ra


def stu_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`stu` (name -> dir, width, doc); docs/sparse.md section 9."""
    wd = stu_widths(fmt)
    p, u = fmt.p, fmt.u
    pools = ", ".join(f"{i} {n}" for i, n in enumerate(SparseParams.POOL_MODES))

    return {
        "clk": port("in", 1, "clock"),
        "rst": port("in", 1, "synchronous active-high reset (idle, accumulator 0, counters and err 0)"),
        "start": port("in", 1, "start a job (sampled with cfg_* while busy is low)"),
        "cfg_k": port("in", wd.kb_cfg, "kernel size K (CONV)"),
        "cfg_h": port("in", wd.hb, "sub-FM height H (1 in FC mode)"),
        "cfg_w": port("in", wd.wb, "sub-FM width W (the input vector length in FC mode)"),
        "cfg_nnz": port("in", wd.qb, "q: data entries 0..q-1 the job reads"),
        "cfg_wnz": port("in", wd.zb, "WNZ: weights 0..WNZ-1 the job reads (CONV)"),
        "cfg_mode": port("in", 1, "0 CONV, 1 FC"),
        "cfg_n_out": port("in", wd.nb, "output neurons (FC)"),
        "cfg_emit": port("in", 1, "1 drains (and clears) the accumulator; 0 keeps it for the next channel"),
        "cfg_relu": port("in", 1, "ReLU in the drain"),
        "cfg_pool": port("in", 2, f"2x2 pool: {pools}"),
        "cfg_shift": port("in", wd.sb, "arithmetic right shift in the drain"),
        "cfg_dense": port("in", 1, "dense mode (zeros included; one weight per round)"),
        "busy": port("out", 1, "a job runs (start is refused with START_BUSY)"),
        "done": port("out", 1, "one-cycle pulse at the end of a job (or after a start refused by CFG)"),
        "err": port("out", len(SparseParams.STU_ERR_NAMES),
                    "sticky " + ",".join(SparseParams.STU_ERR_NAMES) + " (bit 0 first)"),
        "rd_group": port("out", wd.gb, "data read: group g (entries g*p .. g*p+p-1) of the next round"),
        "rd_row": port("in", p * fmt.rb, f"data read: lane l's ROW at [l*{fmt.rb} +: {fmt.rb}]"),
        "rd_col": port("in", p * fmt.cb, f"data read: lane l's COL at [l*{fmt.cb} +: {fmt.cb}]"),
        "rd_val": port("in", p * fmt.dw, f"data read: lane l's VAL at [l*{fmt.dw} +: {fmt.dw}] (signed)"),
        "rd_lane_valid": port("in", p, "data read: bit l, entry g*p+l is stored"),
        "w_rd_idx": port("out", u * wd.jb, f"weight read: u lanes, entry j (lane i at [i*{wd.jb} +: {wd.jb}])"),
        "w_rd_a": port("in", u * fmt.kb, "weight read: lane i's A"),
        "w_rd_b": port("in", u * fmt.kb, "weight read: lane i's B"),
        "w_rd_w": port("in", u * fmt.ww, "weight read: lane i's W (signed)"),
        "w_rd_valid": port("in", u, "weight read: bit i, entry j is stored"),
        "fc_rd_row": port("out", wd.ob, "FC gather: output neuron o of this round"),
        "fc_rd_idx": port("out", p * wd.ib, f"FC gather: lane l's data column at [l*{wd.ib} +: {wd.ib}]"),
        "fc_rd_w": port("in", p * fmt.ww, "FC gather: lane l's W[o][col_l] (signed, same cycle)"),
        "o_valid": port("out", 1, "output stream: valid"),
        "o_ready": port("in", 1, "output stream: ready"),
        "o_data": port("out", fmt.out_bits, "output stream {LAST, ROW, COL, VAL} (0 when not valid)"),
        "cyc_compute": port("out", fmt.cnt_bits, "compute cycles of the last job"),
        "cyc_drain": port("out", fmt.cnt_bits, "drain cycles of the last job (stalls included)"),
        "n_rounds": port("out", fmt.cnt_bits, "compute rounds of the last job"),
        "n_mults": port("out", fmt.cnt_bits, "products of two non-zero operands in the last job"),
        "n_deferred": port("out", fmt.cnt_bits, "collision-FIFO pushes in the last job (u = 2)"),
        "nnz_out": port("out", fmt.cnt_bits, "output words of the last job"),
        "acc_we": port("out", p, "tap: bit l, lane l adds to the accumulator this cycle"),
        "acc_addr": port("out", p * wd.ab, f"tap: lane l's accumulator address at [l*{wd.ab} +: {wd.ab}]"),
    } | ({"fifo_occ": port("out", wd.fob, "tap: collision-FIFO items this round takes (u = 2 only)")} if u == 2
         else {})


def stu_timing(fmt: SparseParams) -> dict:
    """Timing facts of the STU (recorded in the JSON sidecar)."""
    return {
        "stu_pipe": SparseParams.STU_PIPE,
        "start_to_done": "1 + cyc_compute + STU_PIPE + cyc_drain + 1, plus one per cycle with o_valid and not o_ready",
        "refused_start_to_done": 1,
        "read_latency_assumed": 0,
        "read_addresses": "the next round's, presented one cycle ahead (round 0's while idle)",
        "acc_words": stu_widths(fmt).nacc,
    }


def emit_stu(fmt: SparseParams, outdir: Path | str, name: str = "stu") -> Emitted:
    """Write the STU for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, ``nmax_out`` does not fit the output
            word's COL field, or ``name`` is a keyword.
    """
    stu_check(fmt, name)
    return emit_stream_unit(stu, fmt, SparseParams, stu_ports, outdir, name, family="sparse",
                            timing=stu_timing(fmt),
                            doc=f"sparse tensor compute unit (STU {'1400, u = 2' if fmt.u == 2 else '1300, u = 1'}): "
                                "zero-skipping rounds, accumulator, ReLU/pool/shift drain")
