"""``host_front``: the command front end of the host family (docs/host.md sections 4-7
and 11).

The host writes descriptors into SQ slots and rings the SQ_TAIL doorbell through the CSR
port; the front end validates the head slot combinationally (:mod:`.front_check`),
dispatches an OK MATMUL to the lowest-numbered idle kernel on the shared command bus, and
writes every completion into the CQ (:mod:`.front_cq`): the kernels' (kernel 0 first) and
its own (errors, NOP, flushed entries; kernel id 15; only when every kernel is idle). A
soft reset flushes (section 7). Blocks:

* :mod:`.front_csr`: write decoder, CTRL and configuration registers, read multiplexer;
* :mod:`.front_sq`: SQ pointers (doorbell and owned-slot rules) and the slot store;
* :mod:`.front_check`: the validator;
* :mod:`.front_cq`: kernel links (dispatch choice, completion priority, tag and irq_en
  per kernel), the head slot's fate, the CQ, flush / halt / IRQ / EXP_SEQ state;
* :mod:`.front_perf`: the counters.

Ports: :func:`front_ports`. Kernel ``i`` is bit ``i`` of the ``K = n_kernels``-bit buses
(``cpl_status`` bits ``[4i+3:4i]``, ``cpl_cycles`` bits ``[c*i+c-1:c*i]``, ``c =
HostParams.cnt_bits``); the command
fields are the head slot's (meaningful with a ``cmd_valid`` bit set). The contract's
``abort`` is the port ``k_abort``: ``verilator -Wall`` refuses ``abort`` (SYMRSVDWORD, a C++
library name) and no warning is waived.

Decisions the contract leaves open: an access whose address is not a multiple of 4 is
unmapped; CTRL.soft_reset and CTRL.resume read 0; a CSR write and a hardware event in the
same cycle: IRQ_STATUS bits set by the event stay set, a counter clear wins over the
cycle's count, an error completion's halt wins over a resume; completions written while
flushing (ABORTED) leave ``halted`` and ``err_sticky`` clear but set IRQ_STATUS.err (and
cpl for a descriptor with irq_en); PERF_MEM_STALL adds one per waiting kernel per cycle.
The counters and each completion's cycles (the CQ's word 1) are ``cnt_bits`` wide and
wrap; the CSR read zero-extends them to 32 bits.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import Signal, always_comb, block, intbv
from myhdl._Signal import Constant

from lockstep.models.host.params import HostParams

from ..common import (
    Emitted, bit_of, cat_lanes, const0, emit_stream_unit, lane, new_bool, new_vec, port, resize, wire,
)
from .front_check import front_check
from .front_cq import cpl_bits, cpl_pick, cq_writer, dispatch, front_state, kernel_link
from .front_csr import cfg_regs, csr_decode, csr_read, ctrl_regs
from .front_perf import COUNTERS, front_perf
from .front_sq import sq_ptrs, sq_store
from .kernel import check_host

__all__ = ["check_host", "emit_front", "front_ports", "host_front"]

#: CSR address bits.
CSR_AW = 12


def front_ports(fmt: HostParams) -> dict[str, dict]:
    """Port list of :func:`host_front` (docs/host.md section 11; ``K = n_kernels``)."""
    p = check_host(fmt, "front_ports")
    k, aww, c = p.n_kernels, p.aww, p.cnt_bits

    return {
        "clk": port("in", 1, "clock"),
        "rst": port("in", 1, "synchronous active-high reset: every register and both queues"),
        "csr_we": port("in", 1, "CSR write strobe (takes effect at the clock edge)"),
        "csr_addr": port("in", CSR_AW, "CSR write byte address"),
        "csr_wdata": port("in", 32, "CSR write data"),
        "csr_raddr": port("in", CSR_AW, "CSR read byte address"),
        "csr_rdata": port("out", 32, "CSR read data (combinational, no side effects)"),
        "cmd_valid": port("out", k, "one-hot: the chosen (lowest idle) kernel takes the head OK MATMUL"),
        "cmd_ready": port("in", k, "kernel i idle (may take a command)"),
        "cmd_m": port("out", 16, "command: M"),
        "cmd_n": port("out", 16, "command: N"),
        "cmd_k": port("out", 16, "command: K"),
        "cmd_act": port("out", aww, "command: word address of A"),
        "cmd_wgt": port("out", aww, "command: word address of W, (WGT_BASE + wgt_off) >> 2"),
        "cmd_out": port("out", aww, "command: word address of the result"),
        "cmd_es16": port("out", 1, "command: int16 elements"),
        "cmd_relu": port("out", 1, "command: relu_en"),
        "cmd_pool": port("out", 1, "command: pool_en"),
        "cmd_mult": port("out", 16, "command: scale_mult"),
        "cmd_shift": port("out", 5, "command: scale_shift"),
        "k_abort": port("out", 1, "flush in progress: busy kernels abandon their task (ABORTED)"),
        "k_busy": port("in", k, "kernel i busy"),
        "cpl_valid": port("in", k, "kernel i offers a completion (held until taken)"),
        "cpl_ready": port("out", k, "the CQ takes kernel i's completion (kernel 0 first)"),
        "cpl_status": port("in", 4 * k, "kernel i's completion status at bits [4i+3:4i]"),
        "cpl_cycles": port("in", c * k, f"kernel i's exec_cycles modulo 2**{c} at bits [{c}i+{c - 1}:{c}i]"),
        "rd_beat": port("in", 1, "the shared memory port accepted a read request this cycle"),
        "wr_beat": port("in", 1, "the shared memory port accepted a write request this cycle"),
        "k_stall": port("in", k, "kernel i's memory request waits (valid and not ready)"),
        "irq": port("out", 1, "CTRL.irq_en and IRQ_STATUS != 0"),
        "busy": port("out", 1, "some kernel busy"),
        "cq_nonempty": port("out", 1, "CQ_HEAD != CQ_TAIL"),
        "sq_full": port("out", 1, "STATUS.sq_full (a submitter sleeps on it instead of polling)"),
    }


@block
def _split_bits(bus, bits):
    """``bits[i] = bus[i]`` (bool signals); one bit: ``bits[0] = bus``."""
    if len(bits) == 1:
        return wire(bus, bits[0])
    return [bit_of(bus, i, bits[i]) for i in range(len(bits))]


@block
def _join_bits(bits, bus):
    """``bus[i] = bits[i]``; one bit: ``bus = bits[0]``."""
    if len(bits) == 1:
        return wire(bits[0], bus)
    return cat_lanes(bits, bus)


@block
def _cmd_bus(w0, w1, w2, w3, w4, w5, w6, wgt_base, cmd_m, cmd_n, cmd_k, cmd_act, cmd_wgt, cmd_out, cmd_es16,
             cmd_relu, cmd_pool, cmd_mult, cmd_shift, fmt: HostParams):
    """The command fields of the head descriptor; ``cmd_wgt = (WGT_BASE + wgt_off) >> 2``
    modulo the memory, as ``WGT_BASE[mem_aw-1:2] + wgt_off[mem_aw-1:2]`` (WGT_BASE[1:0] is
    0; exact for a task that passed WGT_RANGE)."""
    ma = fmt.mem_aw

    @always_comb
    def fields():
        cmd_m.next = w1[16:0]
        cmd_n.next = w1[32:16]
        cmd_k.next = w2[16:0]
        cmd_shift.next = w2[21:16]
        cmd_mult.next = w6[16:0]
        cmd_es16.next = w0[8]
        cmd_relu.next = w0[4]
        cmd_pool.next = w0[5]
        cmd_act.next = w3[ma:2]
        cmd_out.next = w5[ma:2]
        cmd_wgt.next = wgt_base[ma:2] + w4[ma:2]

    return fields


@block
def _outputs(flushing, kb0, kb1, cq_empty, sq_full, k_abort, busy, cq_nonempty, sq_full_o):
    """``k_abort = flushing``, ``busy`` = some kernel busy (``kb1``: a constant 0 with one
    kernel), ``cq_nonempty``, ``sq_full``."""

    @always_comb
    def out():
        k_abort.next = flushing
        sq_full_o.next = sq_full
        busy.next = kb0 or kb1
        cq_nonempty.next = not cq_empty

    return out


@block
def host_front(clk, rst, csr_we, csr_addr, csr_wdata, csr_raddr, csr_rdata, cmd_valid, cmd_ready, cmd_m, cmd_n, cmd_k,
               cmd_act, cmd_wgt, cmd_out, cmd_es16, cmd_relu, cmd_pool, cmd_mult, cmd_shift, k_abort, k_busy, cpl_valid,
               cpl_ready, cpl_status, cpl_cycles, rd_beat, wr_beat, k_stall, irq, busy, cq_nonempty, sq_full,
               fmt: HostParams):
    """The front end (module docstring). Ports: :func:`front_ports`."""
    p = check_host(fmt, "host_front")
    nk, ib, pb, cb, cpb = p.n_kernels, p.idx_bits, p.ptr_bits, p.cnt_bits, cpl_bits(p)
    insts: list = []

    # ---- the kernels' buses, bit by bit
    cr, cv, kb, ks = ([new_bool() for _ in range(nk)] for _ in range(4))
    insts += [_split_bits(cmd_ready, cr), _split_bits(cpl_valid, cv), _split_bits(k_busy, kb),
              _split_bits(k_stall, ks)]
    cs = [new_vec(4) for _ in range(nk)]
    cc = [new_vec(cb) for _ in range(nk)]
    insts += [lane(cpl_status, 4 * i, 4, cs[i]) for i in range(nk)]
    insts += [lane(cpl_cycles, cb * i, cb, cc[i]) for i in range(nk)]

    # ---- CSR writes, CTRL and configuration
    we_ctrl, we_tail, we_cqh, we_irq, we_perf, we_wbase, we_wsize, we_mlim, we_slot = (new_bool() for _ in range(9))
    insts.append(csr_decode(csr_we, csr_addr, we_ctrl, we_tail, we_cqh, we_irq, we_perf, we_wbase, we_wsize, we_mlim,
                            we_slot, p))
    en, irq_en, hoe, flush_go, resume = (new_bool() for _ in range(5))
    insts.append(ctrl_regs(clk, rst, we_ctrl, csr_wdata, en, irq_en, hoe, flush_go, resume))
    wgt_base, wgt_size = new_vec(32), new_vec(32)
    mem_limit = Signal(intbv(p.mem_bytes)[p.mem_aw + 1:])  # reset value mem_bytes
    insts.append(cfg_regs(clk, rst, we_wbase, we_wsize, we_mlim, csr_wdata, wgt_base, wgt_size, mem_limit, p))

    # ---- the SQ: pointers and slots
    sq_head, sq_tail = new_vec(pb), new_vec(pb)
    sq_full_o = sq_full  # the port; the internal flag below drives it
    sq_empty, sq_full, slot_wr, ev_dbo, ev_own, pop = (new_bool() for _ in range(6))
    wptr, hptr = new_vec(pb), new_vec(pb)
    wslot, waddr, head_idx = new_vec(ib), new_vec(ib + 3), new_vec(ib)
    insts += [lane(csr_wdata, 0, pb, wptr), lane(csr_wdata, 0, pb, hptr), lane(csr_addr, 5, ib, wslot),
              lane(csr_addr, 2, ib + 3, waddr), lane(sq_head, 0, ib, head_idx)]
    insts.append(sq_ptrs(clk, rst, we_tail, wptr, we_slot, wslot, pop, sq_head, sq_tail, sq_empty, sq_full, slot_wr,
                         ev_dbo, ev_own, p))
    words = [new_vec(32) for _ in range(8)]
    insts.append(sq_store(clk, rst, slot_wr, waddr, csr_wdata, head_idx, words, p))
    w0, w1, w2, w3, w4, w5, w6, w7 = words

    # ---- the validator and the command bus
    exp_seq = new_vec(16)
    st = new_vec(4)
    trusted, is_mm = new_bool(), new_bool()
    insts.append(front_check(words, exp_seq, wgt_base, wgt_size, mem_limit, st, trusted, is_mm, p))
    insts.append(_cmd_bus(w0, w1, w2, w3, w4, w5, w6, wgt_base, cmd_m, cmd_n, cmd_k, cmd_act, cmd_wgt, cmd_out,
                          cmd_es16, cmd_relu, cmd_pool, cmd_mult, cmd_shift, p))

    # ---- kernel links: dispatch choice, completion priority, idle
    head_tag, head_irq = new_vec(16), new_bool()
    insts += [lane(w0, 16, 16, head_tag), bit_of(w0, 6, head_irq)]
    fetch_mm, cq_full = new_bool(), new_bool()
    true = Constant(bool(1))
    pick = [true] + [new_bool() for _ in range(nk)]
    cpl_free = [true] + [new_bool() for _ in range(nk)]
    idle = [true] + [new_bool() for _ in range(nk)]
    cmd_v, cpl_r = [new_bool() for _ in range(nk)], [new_bool() for _ in range(nk)]
    kcpl = [new_vec(cpb) for _ in range(nk)]
    for i in range(nk):
        insts.append(kernel_link(clk, rst, fetch_mm, cq_full, cr[i], cv[i], cs[i], cc[i], kb[i], head_tag, head_irq,
                                 pick[i], pick[i + 1], cmd_v[i], cpl_free[i], cpl_free[i + 1], cpl_r[i], idle[i],
                                 idle[i + 1], kcpl[i], kid=i))
    insts += [_join_bits(cmd_v, cmd_valid), _join_bits(cpl_r, cpl_ready)]
    any_ready, any_cpl = new_bool(), new_bool()
    insts.append(_not2(pick[nk], cpl_free[nk], any_ready, any_cpl))
    all_idle = idle[nk]

    # ---- the head slot's fate, the completion choice (kernels in order, then the front end)
    flushing, halted, err_sticky = new_bool(), new_bool(), new_bool()
    fe_req = new_bool()
    fe_cpl, seq_next = new_vec(cpb), new_vec(16)
    insts.append(dispatch(en, halted, flushing, sq_empty, st, trusted, is_mm, any_ready, all_idle, cq_full, w0, w7,
                          exp_seq, fetch_mm, pop, fe_req, fe_cpl, seq_next))
    sel_v, sel_d = fe_req, fe_cpl
    for i in reversed(range(nk)):
        v, d = new_bool(), new_vec(cpb)
        insts.append(cpl_pick(cv[i], kcpl[i], sel_v, sel_d, v, d))
        sel_v, sel_d = v, d

    # ---- the CQ
    cq_head, cq_tail = new_vec(pb), new_vec(pb)
    cq_empty, wr, ev_cqh = new_bool(), new_bool(), new_bool()
    cq_ridx, cq_rd0, cq_rd1 = new_vec(ib), new_vec(24), new_vec(cb)
    insts.append(lane(csr_raddr, 3, ib, cq_ridx))
    insts.append(cq_writer(clk, rst, sel_v, sel_d, we_cqh, hptr, cq_head, cq_tail, cq_full, cq_empty, wr, ev_cqh,
                           cq_ridx, cq_rd0, cq_rd1, p))
    cq_rd1x = cq_rd1  # word 1 zero-extended (cnt_bits < 32): {(32 - cnt_bits)'h0, cycles}
    if cb < 32:
        cq_rd1x = new_vec(32)
        insts.append(resize(cq_rd1, cq_rd1x))

    # ---- state, counters, outputs, reads
    irq_status = new_vec(5)
    insts.append(front_state(clk, rst, flush_go, resume, hoe, irq_en, we_irq, csr_wdata, sq_empty, all_idle, wr,
                             sel_d, ev_dbo, ev_own, ev_cqh, pop, seq_next, flushing, halted, err_sticky, irq_status,
                             exp_seq, irq))
    cnt = [new_vec(cb) for _ in COUNTERS]
    if nk == 1:
        cnt[COUNTERS.index("PERF_BUSY1")] = const0(cb)
    perf_clr = new_bool()
    insts.append(_perf_clear(we_perf, csr_wdata, perf_clr))
    insts.append(front_perf(clk, rst, perf_clr, en, kb, wr, sel_d, rd_beat, wr_beat, cq_full, any_cpl, fe_req, ks,
                            cnt))
    # the CSR read takes each counter zero-extended, {(32 - cnt_bits)'h0, count}
    cnt32 = list(cnt)
    for i, c in enumerate(cnt):
        if nk == 1 and COUNTERS[i] == "PERF_BUSY1":
            cnt32[i] = const0(32)
        elif cb < 32:
            cnt32[i] = new_vec(32)
            insts.append(resize(c, cnt32[i]))
    kb1 = kb[1] if nk > 1 else const0(1)
    insts.append(_outputs(flushing, kb[0], kb1, cq_empty, sq_full, k_abort, busy, cq_nonempty, sq_full_o))
    insts.append(csr_read(csr_raddr, csr_rdata, en, irq_en, hoe, busy, kb[0], kb1, flushing, halted, err_sticky,
                          sq_full, sq_empty, cq_full, cq_empty, sq_tail, sq_head, cq_head, cq_tail, irq_status, cnt32,
                          wgt_base, wgt_size, mem_limit, exp_seq, cq_rd0, cq_rd1x, p))
    return insts


@block
def _not2(a, b, na, nb):
    """``na = not a``, ``nb = not b``."""

    @always_comb
    def inv():
        na.next = not a
        nb.next = not b

    return inv


@block
def _perf_clear(we_perf, csr_wdata, clr):
    """``clr``: PERF_CTRL written with bit 0 set."""

    @always_comb
    def c():
        clr.next = we_perf and csr_wdata[0]

    return c


def emit_front(fmt: HostParams, outdir: Path | str, name: str = "host_front") -> Emitted:
    """Write :func:`host_front` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a HostParams, or ``name`` is a keyword.
    """
    check_host(fmt, name)
    return emit_stream_unit(host_front, fmt, HostParams, front_ports, outdir, name, family="host",
                            timing={"csr_read_latency": 0, "csr_write_latency": 1, "depth": fmt.depth,
                                    "n_kernels": fmt.n_kernels, "counter_bits": fmt.cnt_bits},
                            doc="host command front end: CSRs, SQ/CQ, descriptor checks, dispatch to the kernels, "
                                "completions, flush, counters")
