"""The communication interface of a ``sched`` fabric (docs/sched.md section 11; only
built with ``FabricParams.comm``): the time base every tile issues against, and, on tile
``COMM_TILE``, the external FIFO with its RECV unit (PORT 3) and CHECK.

Timing, exactly as the contract:

* Every tile keeps ``tbase`` (``cw`` bits, reset 0); ``t_eff = count - tbase`` (mod
  ``2**cw``) is what the sequencer compares entry times with. ``tbase`` increments at the
  end of every run cycle in which the broadcast ``hold`` is high.
* ``ext_valid``/``ext_data`` push into the FIFO at the end of the cycle, after that
  cycle's pop; a push into a full FIFO is dropped and raises FIFO_OVF.
* RECV PORT 3 pops one word per cycle (write source ``4 + k``, at the end of the cycle):
  the FIFO head; else, with pad credits, the last popped word (0 before any pop: the
  register resets to 0) and the ``pad`` tap; else UNDERFLOW, no write.
* CHECK (issue cycle ``n``) compares the registered occupancy with ``N = LEN + 1``. Short
  and mode 0 with ``D = A > 0``: ``susp`` and ``hold`` in cycle ``n``, then ``hold`` for
  ``D - 1`` more cycles (``tbase`` increments at the ends of ``n .. n+D-1``). Short and
  mode 1: ``N`` pad credits (a pad pop in cycle ``n`` already uses them).
"""

from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from lockstep.models.record import clog2
from lockstep.models.sched.params import FabricParams

from ..common import new_bool, new_vec, ring_fifo


__all__ = ["comm_classify", "comm_port", "time_base"]

O_CHECK = FabricParams.COMM_OPCODES["CHECK"]
O_RECV = FabricParams.OPCODES["RECV"]


@block
def time_base(clk, rst, run, hold, count, teff, fmt: FabricParams):
    """``teff = count - tbase``; ``tbase`` increments at the end of a run cycle with ``hold``."""
    cw = fmt.cw
    tbase = new_vec(cw)

    @always_comb
    def eff():
        teff.next = count - tbase

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if run and hold:
            tbase.next = tbase + 1

    return eff, regs


@block
def comm_classify(h_op, h_port, h_unit, h_b, il_base, hit_base, bfifo, illegal, hit, fmt: FabricParams):
    """OPCODE and BUSY of the head entry on the communication interface's tile: RECV on
    PORT 3 is legal (busy while the FIFO's RECV unit is) and CHECK is legal with PORT 3
    and mode 0 or 1; everything else as :func:`~.tile._classify` decided."""
    aw = fmt.aw
    b_unused = new_vec(aw - 1)  # only B == 0 / B == 1 matter

    @always_comb
    def cls():
        rf = bool(0)
        chk = bool(0)
        rf = h_op == O_RECV and h_port == 3
        chk = h_op == O_CHECK
        b_unused.next = h_b[aw:1]
        if rf:
            illegal.next = h_unit != 0
            hit.next = bfifo
        elif chk:
            illegal.next = h_port != 3 or h_b > 1 or h_unit != 0
            hit.next = 0
        else:
            illegal.next = il_base
            hit.next = hit_base

    return cls


@block
def comm_port(clk, rst, run, go, h_op, h_port, h_a, h_b, h_d, h_len, ext_valid, ext_data,
              busy, we, wa, wd, e_under, e_ovf, hold, susp, pad, fmt: FabricParams):
    """The external FIFO, its RECV unit and CHECK (module docstring).

    Ports:
        run, go, h_*: the run input, the sequencer's start and the head fields.
        ext_valid, ext_data: the external input (no ready).
        busy: the RECV unit is busy (element counter non-zero).
        we, wa, wd: write source ``4 + k`` (end of this cycle; 0 when idle).
        e_under, e_ovf: UNDERFLOW (an empty pop without pad credit), FIFO_OVF.
        hold: the time base increments at the end of this cycle (to every tile).
        susp: a CHECK suspends in this cycle; pad: a pop returns the pad word.
    """
    aw, dw, depth = fmt.aw, fmt.dw, fmt.fifo_d
    nw = max(clog2(depth + 1), 9)   # occupancy and N = LEN + 1, compared in nw bits
    b_unused = new_vec(aw - 1)
    cnt, dd = new_vec(8), new_vec(aw)
    start, pop, push = new_bool(), new_bool(), new_bool()
    occ, fhead, last = new_vec(nw), new_vec(dw), new_vec(dw)
    buf = ring_fifo(clk, rst, push, pop, ext_data, fhead, occ, depth)
    sus_left = new_vec(aw)
    pad_left, pad_next = new_vec(9), new_vec(9)
    sus_go = new_bool()

    @always_comb
    def cur():
        st = bool(0)
        act = bool(0)
        chk = bool(0)
        short = bool(0)
        arm = bool(0)
        s = bool(0)
        full = bool(0)
        nv = intbv(0)[nw:]
        credits = intbv(0)[9:]
        nv[:] = concat(intbv(0)[nw - 8 :], h_len) + 1
        b_unused.next = h_b[aw:1]
        chk = go and h_op == O_CHECK
        short = occ < nv
        s = chk and short and h_b[0] == 0 and h_a != 0
        sus_go.next = s
        susp.next = s
        hold.next = s or sus_left != 0
        arm = chk and short and h_b[0] == 1
        if arm:
            credits[:] = nv[9:]
        else:
            credits[:] = pad_left
        st = go and h_op == O_RECV and h_port == 3
        start.next = st
        act = st or cnt != 0
        pop.next = 0
        pad.next = 0
        e_under.next = 0
        we.next = 0
        wa.next = 0
        wd.next = 0
        pad_next.next = credits
        if act:
            if st:
                wa.next = h_d
            else:
                wa.next = dd
            if occ != 0:
                pop.next = 1
                we.next = 1
                wd.next = fhead
            elif credits != 0:
                pad.next = 1
                we.next = 1
                wd.next = last
                pad_next.next = credits - 1
            else:
                wa.next = 0
                e_under.next = 1
        full = occ == depth and not (act and occ != 0)
        e_ovf.next = ext_valid and full
        push.next = ext_valid and not full
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if start:
            cnt.next = h_len
            dd.next = h_d + 1
        elif cnt != 0:
            cnt.next = cnt - 1
            dd.next = dd + 1
        if pop:
            last.next = fhead
        pad_left.next = pad_next
        if run:
            if sus_go:
                sus_left.next = h_a - 1
            elif sus_left != 0:
                sus_left.next = sus_left - 1

    return buf, cur, regs
