"""The front end's dispatcher, completion writer and state (docs/host.md sections 5-7).

* :func:`kernel_link` (one per kernel, chained from kernel 0): the lowest idle kernel
  takes an OK MATMUL; the lowest kernel offering a completion is the one the CQ takes;
  every kernel idle. The kernel's task tag and irq_en are kept here (kernels do not
  carry them).
* :func:`dispatch`: what the head slot does this cycle (dispatch, a front-end
  completion, a flushed entry) and the sequence-number rule.
* :func:`cq_writer`: the CQ entries and pointers, the CQ_HEAD rule.
* :func:`front_state`: flushing, halted, err_sticky, IRQ_STATUS, EXP_SEQ and ``irq``.

A completion is a packed :func:`cpl_bits`-bit word ``{irq_en, cycles[c-1:0], kernel[3:0],
status[3:0], tag[15:0]}`` (``c = HostParams.cnt_bits``; CQ word 0 is its low 24 bits, word
1 the cycles, which the CSR read zero-extends to 32 bits).
"""

from __future__ import annotations

from myhdl import always, always_comb, always_seq, block, concat, intbv

from lockstep.models.host.params import HostParams
from lockstep.models.host import FE_KERNEL, ST

from ..common import mem_read, new_vec

__all__ = ["cpl_bits", "cpl_pick", "cq_writer", "dispatch", "front_state", "kernel_link"]

_W0 = 24  # CQ word 0: tag, status, kernel


def cpl_bits(fmt: HostParams) -> int:
    """Bits of a packed completion: tag 16, status 4, kernel 4, cycles ``cnt_bits``, irq_en 1."""
    return _W0 + fmt.cnt_bits + 1


@block
def kernel_link(clk, rst, fetch_mm, cq_full, cr, cv, cs, cc, kb, tag_in, irq_in, pick_in, pick_out, cmd_v, cpl_in,
                cpl_out, cpl_r, idle_in, idle_out, cpl, kid: int):
    """Kernel ``kid``'s link in the chains.

    Ports:
        fetch_mm: the head is an OK MATMUL the front end may dispatch.
        cr, cv, kb: the kernel's cmd_ready, cpl_valid, busy; cs (4), cc (``cnt_bits``):
            its completion's status and cycles.
        pick_in / pick_out: no kernel below / up to this one is ready. ``cmd_v`` (this
            kernel's cmd_valid) = ``fetch_mm and cr and pick_in``.
        cpl_in / cpl_out: no kernel below / up to this one offers a completion.
            ``cpl_r`` (cpl_ready) = ``cpl_in and not cq_full``.
        idle_in / idle_out: every kernel below / up to this one is idle (ready, no
            completion offered, not busy).
        tag_in (16), irq_in: the head descriptor's tag and irq_en, kept at the take.
        cpl: this kernel's packed completion (valid with ``cv``).
    """
    tag = new_vec(16)
    irq = new_vec(1)
    kc = kid

    @always_comb
    def chains():
        cmd_v.next = fetch_mm and cr and pick_in
        pick_out.next = pick_in and not cr
        cpl_r.next = cpl_in and not cq_full
        cpl_out.next = cpl_in and not cv
        idle_out.next = idle_in and cr and not cv and not kb

    @always_seq(clk.posedge, reset=rst)
    def task():
        if fetch_mm and cr and pick_in:
            tag.next = tag_in
            irq.next = irq_in

    @always_comb
    def pack():
        cpl.next = concat(irq, cc, intbv(kc)[4:], cs, tag)

    return chains, task, pack


@block
def cpl_pick(hi_v, hi_d, lo_v, lo_d, v, d):
    """Priority: ``(v, d) = (hi_v, hi_d)`` when ``hi_v``, else ``(lo_v, lo_d)``."""

    @always_comb
    def pick():
        v.next = hi_v or lo_v
        if hi_v:
            d.next = hi_d
        else:
            d.next = lo_d

    return pick


@block
def dispatch(en, halted, flushing, sq_empty, st, trusted, is_mm, any_ready, all_idle, cq_full, w0, w7, exp_seq,
             fetch_mm, pop, fe_req, fe_cpl, seq_next):
    """The head slot's fate this cycle.

    Ports:
        en, halted, flushing, sq_empty: fetching happens with ``en``, not halted, not
            flushing and a non-empty SQ.
        st, trusted, is_mm: the validator's verdict on the head.
        any_ready, all_idle: some kernel ready; every kernel idle (no completion offered).
        w0, w7: head words (tag, irq_en; seq).
        fetch_mm: an OK MATMUL to dispatch (to the lowest ready kernel, if any).
        fe_req, fe_cpl: the front end wants to write the head's completion (an error or a
            NOP, or ABORTED while flushing; every kernel idle) and its packed completion.
        pop: the head leaves (dispatched, or ``fe_req`` and the CQ has room).
        seq_next: EXP_SEQ after the head leaves (``seq + 1`` when magic and checksum
            passed and not flushing, else ``EXP_SEQ + 1``).
    """
    s_ok, s_abort, fe_k = ST["OK"], ST["ABORTED"], FE_KERNEL
    cb = len(fe_cpl) - _W0 - 1  # the cycles field (0 in a front-end completion)

    @always_comb
    def head():
        fetch = bool(0)
        ok_mm = bool(0)
        fe = bool(0)
        fetch = en and not halted and not flushing and not sq_empty
        ok_mm = st == s_ok and is_mm
        fetch_mm.next = fetch and ok_mm
        fe = not sq_empty and all_idle and (flushing or (fetch and not ok_mm))
        fe_req.next = fe
        pop.next = (fetch and ok_mm and any_ready) or (fe and not cq_full)

    @always_comb
    def cpl():
        if flushing:
            fe_cpl.next = concat(w0[6], intbv(0)[cb:], intbv(fe_k)[4:], intbv(s_abort)[4:], w0[32:16])
        else:
            fe_cpl.next = concat(w0[6], intbv(0)[cb:], intbv(fe_k)[4:], st, w0[32:16])

    @always_comb
    def seq():
        if flushing or not trusted:
            seq_next.next = exp_seq + 1
        else:
            seq_next.next = w7[32:16] + 1

    return head, cpl, seq


@block
def cq_writer(clk, rst, sel_v, sel_d, we_cqh, hptr, cq_head, cq_tail, cq_full, cq_empty, wr, ev_cqh, raddr, rd0, rd1,
              fmt: HostParams):
    """The CQ: ``depth`` entries (cleared by ``rst``) and its pointers (``ptr_bits``).

    Ports:
        sel_v, sel_d: the chosen packed completion; ``wr = sel_v and not cq_full`` writes
            it at CQ_TAIL (the tail advances).
        we_cqh, hptr: a CQ_HEAD write; taken when ``(hptr - head) mod 2 depth`` is at most
            the occupancy, else ``ev_cqh`` (cq_head_overflow).
        cq_full, cq_empty: ``head ^ tail == depth``, ``head == tail``.
        raddr (``idx_bits``), rd0 (24), rd1 (``cnt_bits``): the CSR window's read of entry
            ``raddr`` (word 1 is the completion's cycles, ``cnt_bits`` wide).
    """
    d, ib, pb, cb = fmt.depth, fmt.idx_bits, fmt.ptr_bits, fmt.cnt_bits
    m0 = [new_vec(_W0) for _ in range(d)]
    m1 = [new_vec(cb) for _ in range(d)]
    occ, hocc = new_vec(pb), new_vec(pb)
    tidx = new_vec(ib)
    w0 = _W0

    @always_comb
    def occupancy():
        occ.next = cq_tail - cq_head
        hocc.next = hptr - cq_head
        tidx.next = cq_tail[ib:0]

    @always_comb
    def flags():
        cq_full.next = occ == d
        cq_empty.next = occ == 0
        wr.next = sel_v and occ != d
        ev_cqh.next = we_cqh and hocc > occ

    @always_seq(clk.posedge, reset=rst)
    def ptrs():
        if sel_v and occ != d:
            cq_tail.next = cq_tail + 1
        if we_cqh and hocc <= occ:
            cq_head.next = hptr

    @always(clk.posedge)
    def store():
        if rst:
            for i in range(d):
                m0[i].next = 0
                m1[i].next = 0
        elif sel_v and occ != d:
            m0[tidx].next = sel_d[w0:0]
            m1[tidx].next = sel_d[w0 + cb:w0]

    return occupancy, flags, ptrs, store, mem_read(m0, raddr, rd0), mem_read(m1, raddr, rd1)


@block
def front_state(clk, rst, flush_go, resume, hoe, irq_en, we_irq, csr_wdata, sq_empty, all_idle, wr, sel_d, ev_dbo,
                ev_own, ev_cqh, pop, seq_next, flushing, halted, err_sticky, irq_status, exp_seq, irq):
    """Flush, halt, the sticky error, IRQ_STATUS, EXP_SEQ (all reset 0) and ``irq``.

    * ``flushing``: set by ``flush_go`` (CTRL.soft_reset); ends when the SQ is empty and
      every kernel idle (a ``flush_go`` in that cycle keeps it).
    * ``halted``, ``err_sticky``: cleared by ``flush_go`` and while flushing; otherwise an
      error completion written to the CQ sets ``err_sticky``, and ``halted`` when ``hoe``;
      ``resume`` clears ``halted`` (an error completion in the same cycle wins).
    * IRQ_STATUS: bits set by the events of this cycle win over a W1C write of them.
    * EXP_SEQ: ``seq_next`` when the head leaves (``pop``).
    """
    s_ok = ST["OK"]
    ni = len(irq_status)
    st_lo, st_hi = 16, 20  # packed completion: status bits
    b_irq = len(sel_d) - 1

    @always_seq(clk.posedge, reset=rst)
    def regs():
        err = bool(0)
        err = wr and sel_d[st_hi:st_lo] != s_ok
        if flush_go:
            flushing.next = 1
        elif flushing and sq_empty and all_idle:
            flushing.next = 0
        if flush_go or flushing:
            halted.next = 0
            err_sticky.next = 0
        else:
            if err:
                err_sticky.next = 1
            if err and hoe:
                halted.next = 1
            elif resume:
                halted.next = 0
        if pop:
            exp_seq.next = seq_next

    @always_seq(clk.posedge, reset=rst)
    def irq_reg():
        s = intbv(0)[ni:]
        c = intbv(0)[ni:]
        s[:] = concat(ev_cqh, ev_own, ev_dbo, wr and sel_d[st_hi:st_lo] != s_ok, wr and sel_d[b_irq])
        if we_irq:
            c[:] = csr_wdata[ni:0]
        else:
            c[:] = 0
        irq_status.next = (irq_status & ~c) | s

    @always_comb
    def out():
        irq.next = irq_en and irq_status != 0

    return regs, irq_reg, out
