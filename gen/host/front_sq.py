"""The front end's submission queue (docs/host.md section 4): the pointers with the
doorbell and owned-slot rules, and the slot store with the head slot's eight read ports.
"""

from __future__ import annotations

from myhdl import always, always_comb, always_seq, block, concat, intbv

from lockstep.models.host.params import HostParams

from ..common import mem_read, new_vec, resize

__all__ = ["sq_ptrs", "sq_store"]

#: Descriptor words per slot.
WORDS = 8


@block
def sq_ptrs(clk, rst, we_tail, wptr, we_slot, wslot, pop, sq_head, sq_tail, sq_empty, sq_full, slot_wr, ev_dbo,
            ev_own, fmt: HostParams):
    """SQ_HEAD / SQ_TAIL (``ptr_bits``: index and wrap bit, reset 0) and the host's rules.

    Ports:
        we_tail, wptr: a doorbell write and its value (``ptr_bits`` bits of the data).
            Taken when the new occupancy ``(wptr - head) mod 2 depth`` is at least the old
            one and at most ``depth``; otherwise ``ev_dbo`` (doorbell_overflow).
        we_slot, wslot: a write into SQ slot ``wslot`` (``idx_bits``); ``slot_wr`` when the
            slot is free, ``ev_own`` (write_to_owned_slot) when it is in ``[head, tail)``.
        pop: the head slot leaves (dispatched, completed by the front end or flushed).
        sq_empty, sq_full: ``head == tail``; ``head ^ tail == depth``.
    """
    d = fmt.depth
    pb, ib = fmt.ptr_bits, fmt.idx_bits
    occ, nocc, relx = new_vec(pb), new_vec(pb), new_vec(pb)
    hidx, rel = new_vec(ib), new_vec(ib)

    @always_comb
    def occupancy():
        occ.next = sq_tail - sq_head
        nocc.next = wptr - sq_head
        hidx.next = sq_head[ib:0]

    @always_comb
    def relative():
        rel.next = wslot - hidx

    @always_comb
    def rules():
        ok = bool(0)
        ok = nocc >= occ and nocc <= d
        ev_dbo.next = we_tail and not ok
        slot_wr.next = we_slot and relx >= occ
        ev_own.next = we_slot and relx < occ
        sq_empty.next = occ == 0
        sq_full.next = occ == d

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if we_tail and nocc >= occ and nocc <= d:
            sq_tail.next = wptr
        if pop:
            sq_head.next = sq_head + 1

    return occupancy, relative, resize(rel, relx), rules, regs


@block
def sq_store(clk, rst, we, waddr, wdata, head_idx, words, fmt: HostParams):
    """``depth`` slots of 8 words (cleared by ``rst``): ``we`` writes ``wdata`` to word
    ``waddr`` (``slot * 8 + word``, ``idx_bits + 3`` bits); ``words[j]`` is word ``j`` of
    slot ``head_idx`` (combinational)."""
    n = WORDS * fmt.depth
    mem = [new_vec(32) for _ in range(n)]
    ra = [new_vec(len(waddr)) for _ in range(WORDS)]

    @always(clk.posedge)
    def write():
        if rst:
            for i in range(n):
                mem[i].next = 0
        elif we:
            mem[waddr].next = wdata

    insts = [write]
    for j in range(WORDS):
        insts += [_word_addr(head_idx, j, ra[j]), mem_read(mem, ra[j], words[j])]
    return insts


@block
def _word_addr(head_idx, j: int, ra):
    """``ra = {head_idx, j[2:0]}``."""
    jc = j

    @always_comb
    def cat():
        ra.next = concat(head_idx, intbv(jc)[3:])

    return cat
