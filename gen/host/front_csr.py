"""The front end's CSR port (docs/host.md section 4): the write decoder, the CTRL and
configuration registers, and the combinational read multiplexer.

Addresses are byte addresses (``models.host.CSR``, ``SQ_BASE``, ``CQ_BASE``); an access
whose address is not a multiple of 4 is unmapped (reads 0, writes ignored), as is every
address of the windows beyond ``depth`` slots.
"""

from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from lockstep.models.host.params import HostParams
from lockstep.models.host import CQ_BASE, CSR, ID_VALUE, SQ_BASE, hw_cfg


__all__ = ["CTRL_BITS", "CQ_SLOT_BYTES", "IRQ_BITS", "SQ_SLOT_BYTES", "STATUS_BITS", "csr_decode", "csr_read",
           "cfg_regs", "ctrl_regs"]

#: CTRL bits (soft_reset and resume are self-clearing pulses: they read 0).
CTRL_BITS = {"enable": 0, "soft_reset": 1, "irq_en": 2, "halt_on_error": 3, "resume": 4}
#: STATUS bits (``kbusy`` is bit 8 + kernel).
STATUS_BITS = {"busy": 0, "sq_full": 1, "sq_empty": 2, "cq_full": 3, "cq_empty": 4, "err_sticky": 5, "halted": 6,
               "flushing": 7, "kbusy": 8}
#: IRQ_STATUS bits.
IRQ_BITS = {"cpl": 0, "err": 1, "doorbell_overflow": 2, "write_to_owned_slot": 3, "cq_head_overflow": 4}
#: Bytes per SQ slot (8 descriptor words) and per CQ entry (2 words) in the CSR windows.
SQ_SLOT_BYTES, CQ_SLOT_BYTES = 32, 8


@block
def csr_decode(csr_we, csr_addr, we_ctrl, we_tail, we_cqh, we_irq, we_perf, we_wbase, we_wsize, we_mlim, we_slot,
               fmt: HostParams):
    """Write strobes, one per writable register; ``we_slot``: a write into the SQ window
    (slot below ``depth``). RO registers, the CQ window and unmapped addresses strobe
    nothing."""
    a_ctrl, a_tail, a_cqh, a_irq, a_perf = (CSR[n] for n in ("CTRL", "SQ_TAIL", "CQ_HEAD", "IRQ_STATUS", "PERF_CTRL"))
    a_wb, a_ws, a_ml = CSR["WGT_BASE"], CSR["WGT_SIZE"], CSR["MEM_LIMIT"]
    sq_lo, sq_hi = SQ_BASE, SQ_BASE + SQ_SLOT_BYTES * fmt.depth

    @always_comb
    def dec():
        hit = bool(0)
        hit = csr_we and csr_addr[2:0] == 0
        we_ctrl.next = hit and csr_addr == a_ctrl
        we_tail.next = hit and csr_addr == a_tail
        we_cqh.next = hit and csr_addr == a_cqh
        we_irq.next = hit and csr_addr == a_irq
        we_perf.next = hit and csr_addr == a_perf
        we_wbase.next = hit and csr_addr == a_wb
        we_wsize.next = hit and csr_addr == a_ws
        we_mlim.next = hit and csr_addr == a_ml
        we_slot.next = hit and csr_addr >= sq_lo and csr_addr < sq_hi

    return dec


@block
def ctrl_regs(clk, rst, we_ctrl, csr_wdata, en, irq_en, hoe, flush_go, resume):
    """CTRL: ``en``, ``irq_en``, ``hoe`` (halt_on_error) registers (reset 0); the pulses
    ``flush_go`` (soft_reset written 1) and ``resume`` (resume written 1), combinational
    in the write's cycle."""
    b_en, b_sr, b_irq, b_hoe, b_res = (CTRL_BITS[n] for n in ("enable", "soft_reset", "irq_en", "halt_on_error",
                                                                "resume"))

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if we_ctrl:
            en.next = csr_wdata[b_en]
            irq_en.next = csr_wdata[b_irq]
            hoe.next = csr_wdata[b_hoe]

    @always_comb
    def pulses():
        flush_go.next = we_ctrl and csr_wdata[b_sr]
        resume.next = we_ctrl and csr_wdata[b_res]

    return regs, pulses


@block
def cfg_regs(clk, rst, we_wbase, we_wsize, we_mlim, csr_wdata, wgt_base, wgt_size, mem_limit, fmt: HostParams):
    """WGT_BASE (bits [1:0] stored 0), WGT_SIZE (reset 0) and MEM_LIMIT (``mem_aw + 1``
    bits, reset ``mem_bytes``; a write above ``mem_bytes`` stores ``mem_bytes``)."""
    mb = fmt.mem_bytes
    mlw = len(mem_limit)

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if we_wbase:
            wgt_base.next = concat(csr_wdata[32:2], intbv(0)[2:])
        if we_wsize:
            wgt_size.next = csr_wdata
        if we_mlim:
            if csr_wdata > mb:
                mem_limit.next = mb
            else:
                mem_limit.next = csr_wdata[mlw:]

    return regs


@block
def csr_read(csr_raddr, csr_rdata, en, irq_en, hoe, busy, kb0, kb1, flushing, halted, err_sticky, sq_full, sq_empty,
             cq_full, cq_empty, sq_tail, sq_head, cq_head, cq_tail, irq_status, cnt, wgt_base, wgt_size, mem_limit,
             exp_seq, cq_rd0, cq_rd1, fmt: HostParams):
    """``csr_rdata``: the register at ``csr_raddr`` (combinational, no side effects).

    Ports:
        en .. cq_empty: CTRL and STATUS bits (``busy``: some kernel busy; ``kb0``, ``kb1``:
            the kernels' busy bits, ``kb1`` a constant 0 with one kernel).
        sq_tail .. cq_tail (``ptr_bits``), irq_status (5), wgt_base, wgt_size (32),
            mem_limit (``mem_aw + 1``), exp_seq (16): the registers.
        cnt: the 9 counters in ``front_perf.COUNTERS`` order, each zero-extended to 32
            bits (a counter is ``cnt_bits`` wide: the caller's ``{N'h0, count}``).
        cq_rd0 (24), cq_rd1 (32): CQ entry ``csr_raddr[idx_bits+2:3]``, words 0 and 1
            (word 1, the cycles, zero-extended from ``cnt_bits`` by the caller).
    """
    p = fmt
    a = {n: CSR[n] for n in CSR}
    a_id, a_ctrl, a_stat, a_tail, a_head, a_cqh, a_cqt, a_irq = (a[n] for n in (
        "ID", "CTRL", "STATUS", "SQ_TAIL", "SQ_HEAD", "CQ_HEAD", "CQ_TAIL", "IRQ_STATUS"))
    a_busy, a_tot, a_done, a_err, a_rd, a_wr, a_cqs, a_busy1, a_mst = (a[n] for n in (
        "PERF_BUSY", "PERF_TOTAL", "PERF_DONE", "PERF_ERR", "PERF_RD_BEATS", "PERF_WR_BEATS", "PERF_CQ_STALL",
        "PERF_BUSY1", "PERF_MEM_STALL"))
    a_wb, a_ws, a_ml, a_cfg, a_seq = (a[n] for n in ("WGT_BASE", "WGT_SIZE", "MEM_LIMIT", "HW_CFG", "EXP_SEQ"))
    c_busy, c_tot, c_done, c_err, c_rd, c_wr, c_cqs, c_busy1, c_mst = cnt
    id_v, cfg_v = ID_VALUE, hw_cfg(p)
    cq_lo, cq_hi = CQ_BASE, CQ_BASE + CQ_SLOT_BYTES * p.depth
    zp = 32 - p.ptr_bits
    zm = 32 - len(mem_limit)
    zi = 32 - len(irq_status)
    zq = 32 - len(cq_rd0)
    @always_comb
    def rd():
        if csr_raddr[2:0] != 0:
            csr_rdata.next = 0
        elif csr_raddr == a_id:
            csr_rdata.next = intbv(id_v)[32:]
        elif csr_raddr == a_ctrl:
            csr_rdata.next = concat(intbv(0)[28:], hoe, irq_en, intbv(0)[1:], en)
        elif csr_raddr == a_stat:
            csr_rdata.next = concat(intbv(0)[22:], kb1, kb0, flushing, halted, err_sticky, cq_empty, cq_full,
                                    sq_empty, sq_full, busy)
        elif csr_raddr == a_tail:
            csr_rdata.next = concat(intbv(0)[zp:], sq_tail)
        elif csr_raddr == a_head:
            csr_rdata.next = concat(intbv(0)[zp:], sq_head)
        elif csr_raddr == a_cqh:
            csr_rdata.next = concat(intbv(0)[zp:], cq_head)
        elif csr_raddr == a_cqt:
            csr_rdata.next = concat(intbv(0)[zp:], cq_tail)
        elif csr_raddr == a_irq:
            csr_rdata.next = concat(intbv(0)[zi:], irq_status)
        elif csr_raddr == a_busy:
            csr_rdata.next = c_busy
        elif csr_raddr == a_tot:
            csr_rdata.next = c_tot
        elif csr_raddr == a_done:
            csr_rdata.next = c_done
        elif csr_raddr == a_err:
            csr_rdata.next = c_err
        elif csr_raddr == a_rd:
            csr_rdata.next = c_rd
        elif csr_raddr == a_wr:
            csr_rdata.next = c_wr
        elif csr_raddr == a_cqs:
            csr_rdata.next = c_cqs
        elif csr_raddr == a_wb:
            csr_rdata.next = wgt_base
        elif csr_raddr == a_ws:
            csr_rdata.next = wgt_size
        elif csr_raddr == a_ml:
            csr_rdata.next = concat(intbv(0)[zm:], mem_limit)
        elif csr_raddr == a_cfg:
            csr_rdata.next = intbv(cfg_v)[32:]
        elif csr_raddr == a_seq:
            csr_rdata.next = concat(intbv(0)[16:], exp_seq)
        elif csr_raddr == a_busy1:
            csr_rdata.next = c_busy1
        elif csr_raddr == a_mst:
            csr_rdata.next = c_mst
        elif csr_raddr >= cq_lo and csr_raddr < cq_hi:
            if csr_raddr[2]:
                csr_rdata.next = cq_rd1
            else:
                csr_rdata.next = concat(intbv(0)[zq:], cq_rd0)
        else:
            csr_rdata.next = 0

    return rd
