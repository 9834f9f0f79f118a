"""One counter-timed tile of the ``sched`` family (docs/sched.md; spec 000 section 4).

The tile holds its local counter (:mod:`.counter`), the schedule memory with the fetch
path and periodic decompressor (:mod:`.fetch`), the list-timer sequencer, the units
SEND/FWD (one per output port), RECV/TAP (one per ring input port, with its input
buffer), TAP on the unbuffered bus input, the ALU (VADD/VMUL/DOT), the data memory (a
register array with four write sources and the load port), the monitor taps and the
debug read. Nothing in it waits for anything:
there is no ready/ack/stall/credit/busy/irq/grant port, links carry valid + data only.

Timing (``n`` = issue cycle, ``i = 0..N-1``), exactly as the contract:

* SEND reads ``mem[A+i]`` in ``n+i``; ``out[PORT]`` holds it (valid) in ``n+i+1``.
* FWD samples ``in[B[1:0]]`` in ``n+i``; ``out[PORT]`` holds it (valid included) in ``n+i+1``.
* RECV pops ``in_buf[PORT]`` in ``n+i`` and writes ``mem[D+i]`` at the end of ``n+i``.
* TAP samples ``in[PORT]`` in ``n+i`` and writes ``mem[D+i]`` at the end of ``n+i``.
* VADD/VMUL read in ``n+i`` and write ``mem[D+i]`` at the end of ``n+i+l_alu-1``; DOT
  writes ``mem[D]`` at the end of ``n+N-1+l_alu-1`` (``l_alu - 1`` pipeline registers).
* A unit is busy in ``[n, n+N-1]`` (its element counter is non-zero).

Decisions where docs/sched.md is silent (also see :mod:`.fetch`):

* Memories: ``rst`` clears the schedule memory, the data memory and all state; a load
  in the same cycle as ``rst`` still lands (so loading during or after reset both work).
  Unloaded words therefore read 0, as in the golden model's images.
* No issue on an error (as the golden model, models/sched/__init__.py decision 2): an entry
  that raises OPCODE (reserved opcode; PORT 3, or port 2 without a bus, on
  SEND/RECV/TAP/FWD; RECV on port 2; FWD source 3, or 2 without a bus; UNIT != 0),
  BUSY, or DECOMP (a poison entry) at its cycle is not issued: no ``issue`` tap, no
  effect; the head is dropped and the tile halts. OPCODE and BUSY are checked in
  parallel (the units an entry claims: ``out[PORT]``, ``in[PORT]``, ``in[B[1:0]]``
  or the ALU, a port 3 naming none), so one entry can raise both.
* The bus input ``in[2]`` has no buffer (contract section 4): only TAP and FWD read
  it; a bus word nobody takes is dropped without an error.
* ``out_data`` is 0 whenever ``out_valid`` is 0, also for FWD of an idle input.
* Taps are combinational for the current cycle: ``issue``/``issue_entry`` in the issue
  cycle (``issue_entry`` is 0 otherwise), ``wr_en[s]``/``wr_addr``/``wr_data`` for the
  writes at the end of this cycle (every source's write, including the loser of a
  WCONF; address and data are 0 when ``wr_en[s]`` is 0). ``err``, ``err_cnt`` and
  ``halted`` are registers: an error raised at cycle ``c`` is visible from ``c+1`` with
  ``err_cnt == c``. Tile ``err`` never sets COLLISION (bus), LATE_SCHED or DESYNC.
* ``run`` gates the counter, fetch start and issue only; started units, link registers
  and buffers keep running while ``run = 0``.
* With ``bus = False`` the ``in[2]`` inputs are ignored and ``out[2]`` stays idle.

MAC array and VPU (``k > 0``, docs/sched.md section 11; :mod:`.mac`). With ``k == 0`` the
generated Verilog is byte-identical to the k-less tile and LDW/SWPW/MATVEC/VPU/MATVR
raise OPCODE. Decisions where section 11 is silent:

* PORT is not checked for LDW, SWPW, MATVEC or VPU (MATVEC uses all four values; the
  others ignore it, like VADD). Only LDW has a LEN rule (``k - 1``, else OPCODE). MATVR
  raises OPCODE with ``PORT[1]`` (it writes memory) and otherwise shares MATVEC's unit,
  pipeline and write sources; its bias lanes are ``k`` more read ports.
* SWPW claims ``wload`` and ``mac`` only in its issue cycle, so it raises BUSY during an
  LDW or a MATVEC's read cycles, and a MATVEC may issue during an LDW (different units:
  it uses the old front weights). A MATVEC may issue the cycle after the previous one's
  last read (its stage 2 still running); the products use the front weights of the read
  cycle, so a SWPW then does not disturb it.
* ``psum_out`` (register) is 0 when not valid; ``psum_in`` data is ignored (adds 0) when
  ``psum_in_valid`` is low, and TAP_IDLE is raised in the sample cycle ``n+i+L_MM-1``
  (the write, or the psum_out word, still happens). TAP_IDLE from a MATVEC halts issue
  like every error.
* VPU reads through the ALU's two read ports and writes as ALU source 3 (priority below
  the MAC lanes); the sum is formed in ``dw + 1`` bits, so ``0x7FFF + 0x7FFF`` (dw=16) is
  65534 before the shift, and its low ``dw`` bits are written.
* MAC lanes write as sources ``4 .. 4+k-1``; all sources with equal addresses raise WCONF,
  the highest source number wins. Address arithmetic ``A + r*k + c``, ``B + i*k + r``,
  ``D + i*k + c`` wraps modulo ``2**aw``.
* ``rst`` clears the back and front weights and the psum registers.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.record import clog2
from lockstep.models.sched.params import FabricParams

from ..common import (
    Emitted, bit_of, block_named, const0, emit_stream_unit, generate_if, lane, mem_read, new_bool, new_vec, resize,
    ring_fifo, wire,
)
from .counter import counter_core
from .fetch import fetch_widths, sched_fetch
from .comm import comm_classify, comm_port, time_base
from .mac import add_const, ldw_unit, mv_col, mv_ctl, wcell
from .parts import ALU_OPS, OP, PREFETCH_DEPTH, check_fabric, err_index, field_lsb, ld_addr_width

__all__ = ["emit_tile", "sched_tile", "tile_ports", "tile_timing"]


@block
def _sequencer(run, halted, h_valid, h_word, h_poison, h_ready, count, h_t, h_op, h_port, h_unit, h_src,
               bo0, bo1, bo2, bi0, bi1, bi2, balu,
               issue, issue_entry, pop, go, halt_now, e_missed, e_opcode, e_busy, e_decomp,
               fmt: FabricParams, h_len=None, bwl=None, bmac=None, h_b=None, bfifo=None):
    """The list timer: issue on ``T == count``, MISSED on a past head, BUSY, OPCODE, DECOMP.

    Ports:
        run, halted: issue only with ``run`` and not ``halted``.
        h_valid, h_word, h_poison: the head entry.
        h_ready: the fetch start-up lead has passed (the head may be looked at).
        count: the local counter.
        h_t, h_op, h_port, h_unit, h_src: head fields (h_src = B[1:0]).
        bo0..bo2, bi0..bi2, balu: the units' busy flags (out ports, in ports, ALU).
        issue, issue_entry: the issue tap.
        pop: the head leaves the queue (T == count, whatever the outcome).
        go: the entry issues (no OPCODE, BUSY or DECOMP): the units start.
        halt_now: a HALT issues.
        e_missed, e_opcode, e_busy, e_decomp: errors raised this cycle.
        h_len, bwl, bmac (``k > 0`` only): the LEN field, the ``wload`` and ``mac`` busy flags.
        h_b, bfifo (the communication interface's tile only): the B field and the FIFO
            RECV unit's busy flag (:func:`~.comm.comm_classify`).

    The opcode check (OPCODE) and the unit check (BUSY) are :func:`_classify`'s; this
    block is the timing, the same for every fabric.
    """
    cw = fmt.cw
    o_halt = OP["HALT"]
    msb = cw - 1  # (T - count) mod 2**cw >= half  <=>  its top bit is set
    dlow_unused = new_vec(cw - 1)  # the rest of the difference is not needed
    illegal, hit = new_bool(), new_bool()
    if bfifo is None:
        cls = _classify(h_op, h_port, h_unit, h_src, bo0, bo1, bo2, bi0, bi1, bi2, balu, illegal, hit, fmt,
                        h_len=h_len, bwl=bwl, bmac=bmac)
    else:
        il0, ht0 = new_bool(), new_bool()
        cls = [_classify(h_op, h_port, h_unit, h_src, bo0, bo1, bo2, bi0, bi1, bi2, balu, il0, ht0, fmt,
                         h_len=h_len, bwl=bwl, bmac=bmac),
               comm_classify(h_op, h_port, h_unit, h_b, il0, ht0, bfifo, illegal, hit, fmt)]

    @always_comb
    def seq():
        dlt = intbv(0)[cw:]
        act = bool(0)
        match = bool(0)
        dlt[:] = h_t - count
        dlow_unused.next = dlt[msb:]
        act = run and not halted and h_valid and h_ready
        match = act and h_t == count
        issue.next = 0
        issue_entry.next = 0
        pop.next = 0
        go.next = 0
        halt_now.next = 0
        e_missed.next = 0
        e_opcode.next = 0
        e_busy.next = 0
        e_decomp.next = 0
        if act and not match and dlt[msb]:
            e_missed.next = 1
        if match:
            pop.next = 1
            if h_poison:
                e_decomp.next = 1
            else:
                e_opcode.next = illegal
                e_busy.next = hit
                if not illegal and not hit:
                    issue.next = 1
                    issue_entry.next = h_word
                    go.next = 1
                    if h_op == o_halt:
                        halt_now.next = 1

    return cls, seq


@block
def _port_busy(h_port, h_src, bo0, bo1, bo2, bi0, bi1, bi2, ob, ib, sb):
    """The busy flags of the units an entry's ports name: ``out[PORT]``, ``in[PORT]``,
    ``in[B[1:0]]`` (a port 3 names none)."""

    @always_comb
    def pick():
        ob.next = 0
        ib.next = 0
        sb.next = 0
        if h_port == 0:
            ob.next = bo0
            ib.next = bi0
        elif h_port == 1:
            ob.next = bo1
            ib.next = bi1
        elif h_port == 2:
            ob.next = bo2
            ib.next = bi2
        if h_src == 0:
            sb.next = bi0
        elif h_src == 1:
            sb.next = bi1
        elif h_src == 2:
            sb.next = bi2

    return pick


@block
def _classify(h_op, h_port, h_unit, h_src, bo0, bo1, bo2, bi0, bi1, bi2, balu, illegal, hit, fmt: FabricParams,
              h_len=None, bwl=None, bmac=None):
    """OPCODE (``illegal``) and BUSY (``hit``) of the head entry.

    Legal: the opcodes of section 3; PORT 0..2 (0..1 without a bus) on SEND/RECV/TAP/FWD,
    no RECV on the bus, FWD source likewise, UNIT 0. With ``k > 0`` also LDW (``wload``;
    LEN must be ``k - 1``), SWPW (``wload`` and ``mac``), MATVEC (``mac``) and VPU
    (``alu``); their PORT field is not checked (MATVEC uses all four values).
    """
    plim = 2 if fmt.bus else 1  # highest legal port number
    o_nop, o_send, o_recv, o_tap = OP["NOP"], OP["SEND"], OP["RECV"], OP["TAP"]
    o_vadd, o_vmul, o_dot, o_fwd, o_halt = OP["VADD"], OP["VMUL"], OP["DOT"], OP["FWD"], OP["HALT"]
    ob, ib, sb = new_bool(), new_bool(), new_bool()
    ports = _port_busy(h_port, h_src, bo0, bo1, bo2, bi0, bi1, bi2, ob, ib, sb)
    base_known, base_illegal, base_hit = new_bool(), new_bool(), new_bool()

    @always_comb
    def base():
        uses = bool(0)
        uses = h_op == o_send or h_op == o_recv or h_op == o_tap or h_op == o_fwd
        base_known.next = (h_op == o_nop or h_op == o_send or h_op == o_recv or h_op == o_tap or h_op == o_vadd
                           or h_op == o_vmul or h_op == o_dot or h_op == o_fwd or h_op == o_halt)
        base_illegal.next = ((uses and h_port > plim) or (h_op == o_recv and h_port == 2)
                             or (h_op == o_fwd and h_src > plim) or h_unit != 0)
        base_hit.next = (((h_op == o_send or h_op == o_fwd) and ob) or ((h_op == o_recv or h_op == o_tap) and ib)
                         or (h_op == o_fwd and sb) or ((h_op == o_vadd or h_op == o_vmul or h_op == o_dot) and balu))

    if not fmt.k:

        @always_comb
        def out():
            illegal.next = not base_known or base_illegal
            hit.next = base_hit

        return ports, base, out

    mo = FabricParams.MAC_OPCODES
    o_ldw, o_swpw, o_mv, o_vpu, o_mvr = mo["LDW"], mo["SWPW"], mo["MATVEC"], mo["VPU"], mo["MATVR"]
    klen = fmt.k - 1

    @always_comb
    def out_mac():
        mac_op = bool(0)
        mac_op = h_op == o_ldw or h_op == o_swpw or h_op == o_mv or h_op == o_vpu or h_op == o_mvr
        illegal.next = ((not (base_known or mac_op)) or base_illegal or (h_op == o_ldw and h_len != klen)
                        or (h_op == o_mvr and h_port[1]))
        hit.next = (base_hit or (h_op == o_vpu and balu) or ((h_op == o_ldw or h_op == o_swpw) and bwl)
                    or ((h_op == o_mv or h_op == o_mvr or h_op == o_swpw) and bmac))

    return ports, base, out_mac


@block
def _out_unit(clk, rst, go, h_op, h_port, h_a, h_len, h_src, iv0, iv1, iv2, id0, id1, id2,
              rd_a, rd_q, busy, ov, od, p: int, fmt: FabricParams):
    """SEND / FWD on ``out[p]``: the output register and its element counter.

    Ports:
        go, h_*: the sequencer's start and the head fields.
        iv*, id*: the tile inputs (FWD sources).
        rd_a, rd_q: data-memory read port (address out, word in).
        busy: elements left after this cycle's (the unit is busy while non-zero).
        ov, od: ``out_valid[p]``, ``out_data[p]`` (registers).
    """
    aw, dw = fmt.aw, fmt.dw
    o_send, o_fwd = OP["SEND"], OP["FWD"]
    cnt, aa, src = new_vec(8), new_vec(aw), new_vec(2)
    fwd = new_bool()
    start, cur_fwd = new_bool(), new_bool()
    cur_src = new_vec(2)

    @always_comb
    def cur():
        st = bool(0)
        st = go and (h_op == o_send or h_op == o_fwd) and h_port == p
        start.next = st
        if st:
            rd_a.next = h_a
            cur_fwd.next = h_op == o_fwd
            cur_src.next = h_src
        else:
            rd_a.next = aa
            cur_fwd.next = fwd
            cur_src.next = src
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        v = bool(0)
        d = intbv(0)[dw:]
        if start or cnt != 0:
            if cur_fwd:
                if cur_src == 0:
                    v = bool(iv0)
                    d[:] = id0
                elif cur_src == 1:
                    v = bool(iv1)
                    d[:] = id1
                else:
                    v = bool(iv2)
                    d[:] = id2
                ov.next = v
                if v:
                    od.next = d
                else:
                    od.next = 0
            else:
                ov.next = 1
                od.next = rd_q
        else:
            ov.next = 0
            od.next = 0
        if start:
            cnt.next = h_len
            aa.next = h_a + 1
            fwd.next = cur_fwd
            src.next = h_src
        elif cnt != 0:
            cnt.next = cnt - 1
            aa.next = aa + 1

    return cur, regs


@block
def _in_port(clk, rst, go, h_op, h_port, h_src, h_d, h_len, vin, din,
             busy, we, wa, wd, e_under, e_over, e_idle, p: int, fmt: FabricParams):
    """RECV / TAP on ring input ``in[p]`` (p = 0, 1; and the FWD source claim) with the
    port's input buffer.

    Ports:
        go, h_*: the sequencer's start and the head fields.
        vin, din: ``in_valid[p]``, ``in_data[p]``.
        busy: the unit is busy (element counter non-zero).
        we, wa, wd: write source ``p`` (end of this cycle; 0 when idle).
        e_under, e_over, e_idle: UNDERFLOW, OVERFLOW, TAP_IDLE raised this cycle.
    """
    aw, dw, depth = fmt.aw, fmt.dw, fmt.buf_d
    o_recv, o_tap, o_fwd = OP["RECV"], OP["TAP"], OP["FWD"]
    cnt, dd, mode = new_vec(8), new_vec(aw), new_vec(2)  # mode: 0 RECV, 1 TAP, 2 FWD
    start = new_bool()
    cur_mode, cur_d = new_vec(2), new_vec(aw)
    pop, push = new_bool(), new_bool()
    occ, fhead = new_vec(clog2(depth + 1)), new_vec(dw)
    buf = ring_fifo(clk, rst, push, pop, din, fhead, occ, depth)

    @always_comb
    def cur():
        st = bool(0)
        act = bool(0)
        recv = bool(0)
        tap = bool(0)
        cons = bool(0)
        full = bool(0)
        preq = bool(0)
        m = intbv(0)[2:]
        st = go and (((h_op == o_recv or h_op == o_tap) and h_port == p) or (h_op == o_fwd and h_src == p))
        start.next = st
        if st:
            if h_op == o_recv:
                m[:] = 0
            elif h_op == o_tap:
                m[:] = 1
            else:
                m[:] = 2
            cur_d.next = h_d
        else:
            m[:] = mode
            cur_d.next = dd
        cur_mode.next = m
        act = st or cnt != 0
        recv = act and m == 0
        tap = act and m == 1
        cons = act and m != 0  # TAP and FWD take the input word itself
        pop.next = recv and occ != 0
        e_under.next = recv and occ == 0
        e_idle.next = tap and not vin
        if recv and occ != 0:
            we.next = 1
            wd.next = fhead
            if st:
                wa.next = h_d
            else:
                wa.next = dd
        elif tap and vin:
            we.next = 1
            wd.next = din
            if st:
                wa.next = h_d
            else:
                wa.next = dd
        else:
            we.next = 0
            wd.next = 0
            wa.next = 0
        preq = vin and not cons
        full = occ == depth and not (recv and occ != 0)
        e_over.next = preq and full
        push.next = preq and not full
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if start:
            cnt.next = h_len
            dd.next = cur_d + 1
            mode.next = cur_mode
        elif cnt != 0:
            cnt.next = cnt - 1
            dd.next = dd + 1

    return buf, cur, regs


@block
def _bus_port(clk, rst, go, h_op, h_port, h_src, h_d, h_len, vin, din, busy, we, wa, wd, e_idle,
              fmt: FabricParams):
    """TAP on ``in[2]`` (and the FWD source claim): the bus input has no buffer (section 4;
    RECV on port 2 raises OPCODE), so a bus word that no TAP or FWD takes is not captured.

    Ports:
        go, h_*: the sequencer's start and the head fields.
        vin, din: ``in_valid[2]``, ``in_data[2]``.
        busy: the unit is busy (element counter non-zero).
        we, wa, wd: write source 2 (end of this cycle; 0 when idle).
        e_idle: TAP_IDLE raised this cycle.
    """
    aw = fmt.aw
    o_tap, o_fwd = OP["TAP"], OP["FWD"]
    cnt, dd = new_vec(8), new_vec(aw)
    tap_r = new_bool()  # the running operation is a TAP (else a FWD)
    start, cur_tap = new_bool(), new_bool()
    cur_d = new_vec(aw)

    @always_comb
    def cur():
        st = bool(0)
        tap = bool(0)
        st = go and ((h_op == o_tap and h_port == 2) or (h_op == o_fwd and h_src == 2))
        start.next = st
        if st:
            cur_tap.next = h_op == o_tap
            cur_d.next = h_d
            tap = h_op == o_tap
        else:
            cur_tap.next = tap_r
            cur_d.next = dd
            tap = cnt != 0 and tap_r
        e_idle.next = tap and not vin
        if tap and vin:
            we.next = 1
            wd.next = din
            if st:
                wa.next = h_d
            else:
                wa.next = dd
        else:
            we.next = 0
            wd.next = 0
            wa.next = 0
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if start:
            cnt.next = h_len
            dd.next = cur_d + 1
            tap_r.next = cur_tap
        elif cnt != 0:
            cnt.next = cnt - 1
            dd.next = dd + 1

    return cur, regs


@block
def _alu_stage(clk, rst, vi, ai, di, vo, ao, do_):
    """One ALU pipeline register (write valid, address, data)."""

    @always_seq(clk.posedge, reset=rst)
    def stage():
        vo.next = vi
        ao.next = ai
        do_.next = di

    return stage


@block
def _alu(clk, rst, go, h_op, h_a, h_b, h_d, h_len, ra, rb, qa, qb, busy, we, wa, wd, fmt: FabricParams):
    """VADD / VMUL / DOT (and VPU when ``k > 0``) with ``l_alu - 1`` pipeline registers before the write.

    Ports:
        go, h_*: the sequencer's start and the head fields.
        ra, rb, qa, qb: two data-memory read ports.
        busy: the unit is busy (element counter non-zero).
        we, wa, wd: write source 3 (end of this cycle; 0 when idle).
    """
    aw, dw = fmt.aw, fmt.dw
    o_vadd, o_vmul, o_dot = OP["VADD"], OP["VMUL"], OP["DOT"]
    k_add, k_mul, k_dot = ALU_OPS["VADD"], ALU_OPS["VMUL"], ALU_OPS["DOT"]
    cnt, ra_r, rb_r, rd_r, aop = new_vec(8), new_vec(aw), new_vec(aw), new_vec(aw), new_vec(2)
    acc = new_vec(dw)
    start = new_bool()
    cur_op, res = new_vec(2), new_vec(dw)
    v0, a0, d0 = new_bool(), new_vec(aw), new_vec(dw)

    vpu = bool(fmt.k)  # VPU shares the ALU (unit, read ports, write source 3)
    o_vpu, k_vpu, vsh = FabricParams.MAC_OPCODES["VPU"], ALU_OPS["VPU"], fmt.vpu_shift

    @always_comb
    @generate_if("vpu")
    def cur():
        st = bool(0)
        first = bool(0)
        fin = bool(0)
        act = bool(0)
        m = intbv(0)[2:]
        prod = intbv(0)[dw:]
        r = intbv(0)[dw:]
        if vpu:
            sa = intbv(0)[dw + 1 :]
            sb = intbv(0)[dw + 1 :]
            sm = intbv(0)[dw + 1 :]
            sh = intbv(0)[dw:]
        st = go and (h_op == o_vadd or h_op == o_vmul or h_op == o_dot or (vpu and h_op == o_vpu))
        start.next = st
        if st:
            ra.next = h_a
            rb.next = h_b
            if h_op == o_vadd:
                m[:] = k_add
            elif h_op == o_vmul:
                m[:] = k_mul
            elif vpu and h_op == o_vpu:
                m[:] = k_vpu
            else:
                m[:] = k_dot
            first = True
            fin = h_len == 0
        else:
            ra.next = ra_r
            rb.next = rb_r
            m[:] = aop
            first = False
            fin = cnt == 1
        cur_op.next = m
        act = st or cnt != 0
        prod[:] = qa * qb  # low dw bits of the product
        if vpu:
            sa[:] = concat(qa[dw - 1], qa)  # VPU: signed sum in dw + 1 bits, ReLU, shift
            sb[:] = concat(qb[dw - 1], qb)
            sm[:] = sa + sb
            sh[:] = sm[dw:] >> vsh
        if vpu and m == k_vpu:
            if sm[dw]:
                r[:] = 0
            else:
                r[:] = sh
        elif m == k_dot:
            if first:
                r[:] = prod
            else:
                r[:] = acc + prod
        elif m == k_mul:
            r[:] = prod
        else:
            r[:] = qa + qb
        res.next = r
        if act and (m != k_dot or fin):
            v0.next = 1
            d0.next = r
            if st:
                a0.next = h_d
            else:
                a0.next = rd_r
        else:
            v0.next = 0
            d0.next = 0
            a0.next = 0
        busy.next = cnt != 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if start:
            cnt.next = h_len
            ra_r.next = h_a + 1
            rb_r.next = h_b + 1
            if cur_op == k_dot:
                rd_r.next = h_d
            else:
                rd_r.next = h_d + 1
            aop.next = cur_op
        elif cnt != 0:
            cnt.next = cnt - 1
            ra_r.next = ra_r + 1
            rb_r.next = rb_r + 1
            if aop != k_dot:
                rd_r.next = rd_r + 1
        if start or cnt != 0:
            acc.next = res

    insts = [cur, regs]
    vs, as_, ds = [v0], [a0], [d0]
    for _ in range(fmt.l_alu - 1):
        vs.append(new_bool())
        as_.append(new_vec(aw))
        ds.append(new_vec(dw))
        insts.append(_alu_stage(clk, rst, vs[-2], as_[-2], ds[-2], vs[-1], as_[-1], ds[-1]))
    vl, al, dl = vs[-1], as_[-1], ds[-1]

    @always_comb
    def outp():
        we.next = vl
        wa.next = al
        wd.next = dl

    insts.append(outp)
    return insts


@block
def _dmem(clk, rst, ld_dwe, ld_didx, ld_ddata, wes, was, wds, raddrs, rdatas, e_wconf, fmt: FabricParams):
    """Data memory: ``2**aw`` words, register array.

    Writes at the end of the cycle: the load port, then the sources ``wes``/``was``/``wds``
    (0..2 the ports, 3 the ALU; with ``k > 0`` the MAC lanes ``4 .. 4+k-1``, then the FIFO's
    RECV), lowest priority first (a later non-blocking write to the same word wins).
    ``e_wconf``: two sources write one address this cycle. ``raddrs`` / ``rdatas``:
    combinational read ports (reads see only earlier cycles' writes).

    Four sources are written out one by one; more are copied into wire arrays (the lists
    the generators index) and looped over, in the block :data:`_dmem_n`.
    """
    words, ns = fmt.words, len(wes)
    four = ns == 4
    # the generators close over the names of both forms; MyHDL reads every closure cell
    lwe = lwa = lwd = None
    we0 = we1 = we2 = we3 = wa0 = wa1 = wa2 = wa3 = wd0 = wd1 = wd2 = wd3 = None
    if four:
        # made before the first instance: MyHDL names the array after this block
        dmem = [Signal(intbv(0)[fmt.dw:]) for _ in range(words)]
        (we0, we1, we2, we3), (wa0, wa1, wa2, wa3), (wd0, wd1, wd2, wd3) = wes, was, wds
        copies = []
    else:
        lwe, lwa, lwd = [new_bool() for _ in wes], [new_vec(fmt.aw) for _ in was], [new_vec(fmt.dw) for _ in wds]
        copies = [wire(a, y) for a, y in zip(wes + was + wds, lwe + lwa + lwd)]

    @always(clk.posedge)
    @generate_if("four")
    def write():
        if rst:
            for i in range(words):
                dmem[i].next = 0
        if ld_dwe:
            dmem[ld_didx].next = ld_ddata
        if four:
            if we0:
                dmem[wa0].next = wd0
            if we1:
                dmem[wa1].next = wd1
            if we2:
                dmem[wa2].next = wd2
            if we3:
                dmem[wa3].next = wd3
        else:
            for s in range(ns):
                if lwe[s]:
                    dmem[lwa[s]].next = lwd[s]

    @always_comb
    @generate_if("four")
    def wconf():
        if four:
            e_wconf.next = ((we0 and we1 and wa0 == wa1) or (we0 and we2 and wa0 == wa2)
                            or (we0 and we3 and wa0 == wa3) or (we1 and we2 and wa1 == wa2)
                            or (we1 and we3 and wa1 == wa3) or (we2 and we3 and wa2 == wa3))
        else:
            c = bool(0)
            c = False
            for s in range(ns):
                for u in range(ns):
                    if s < u and lwe[s] and lwe[u] and lwa[s] == lwa[u]:
                        c = True
            e_wconf.next = c

    if not four:  # made after the generators: the array is named after the first read port
        dmem = [Signal(intbv(0)[fmt.dw:]) for _ in range(words)]
    reads = [mem_read(dmem, a, q) for a, q in zip(raddrs, rdatas)]
    return copies, write, wconf, reads


#: :func:`_dmem` with more than four write sources, under the block name it has in the Verilog.
_dmem_n = block_named(_dmem, "_dmem_n")


@block
def _errors(clk, rst, count, e_missed, e_opcode, e_busy, e_under, e_over, e_wconf, e_decomp, e_idle,
            halt_now, err, err_cnt, halted, fmt: FabricParams, e_fifo=None):
    """Sticky ``err`` (``ERR_NAMES`` bit order), ``err_cnt`` of the first error, ``halted``.

    Any error raised at cycle ``c`` halts issue from ``c+1``; so does an issued HALT.
    """
    eb = fmt.err_bits
    i_missed, i_opcode, i_busy = err_index(fmt, "MISSED"), err_index(fmt, "OPCODE"), err_index(fmt, "BUSY")
    i_under, i_over, i_wconf = err_index(fmt, "UNDERFLOW"), err_index(fmt, "OVERFLOW"), err_index(fmt, "WCONF")
    i_decomp, i_idle = err_index(fmt, "DECOMP"), err_index(fmt, "TAP_IDLE")
    new = new_vec(eb)
    i_fifo = err_index(fmt, "FIFO_OVF")
    if e_fifo is None:  # no external FIFO on this tile: never raised
        e_fifo = const0(1)

    @always_comb
    def raised():
        nv = intbv(0)[eb:]
        nv[:] = 0
        nv[i_missed] = e_missed
        nv[i_opcode] = e_opcode
        nv[i_busy] = e_busy
        nv[i_under] = e_under
        nv[i_over] = e_over
        nv[i_wconf] = e_wconf
        nv[i_decomp] = e_decomp
        nv[i_idle] = e_idle
        nv[i_fifo] = e_fifo
        new.next = nv

    @always_seq(clk.posedge, reset=rst)
    def sticky():
        if new != 0:
            err.next = err | new
            if err == 0:
                err_cnt.next = count
            halted.next = 1
        if halt_now:
            halted.next = 1

    return raised, sticky


@block
def _or2(a, b, y):
    """``y = a | b``."""

    @always_comb
    def orr():
        y.next = a or b

    return orr


@block
def _or3(a, b, c, y):
    """``y = a | b | c``."""

    @always_comb
    def orr():
        y.next = a or b or c

    return orr


@block
def _load_decode(ld_we, ld_sel, ld_addr, ld_data, ld_swe, ld_sidx, ld_dwe, ld_didx, ld_ddata, fmt: FabricParams):
    """Route the load port: ``ld_sel = 0`` writes the schedule memory (only addresses
    ``< sd``), ``ld_sel = 1`` the data memory (low ``aw`` address bits, low ``dw`` data bits)."""
    sd = fmt.sd
    law = ld_addr_width(fmt)
    insts = [resize(ld_addr, ld_sidx), resize(ld_addr, ld_didx), resize(ld_data, ld_ddata)]
    if (1 << law) > sd:

        @always_comb
        def sel():
            ld_swe.next = ld_we and not ld_sel and ld_addr < sd
            ld_dwe.next = ld_we and ld_sel

    else:  # every ld_addr value is a schedule address (comparing would be constant)

        @always_comb
        def sel():
            ld_swe.next = ld_we and not ld_sel
            ld_dwe.next = ld_we and ld_sel

    insts.append(sel)
    return insts


@block
def _mac_array(clk, rst, go, h, psum_in_valid, psum_in, psum_out_valid, psum_out, bwl, bmac, e_pidle,
               wes, was, wds, raddrs, rdatas, fmt: FabricParams):
    """The MAC array's instances (:mod:`.mac`); appends its ``3k`` read ports to
    ``raddrs``/``rdatas`` (LDW row lanes, MATVEC vector lanes, MATVR bias lanes)."""
    k, dw, aw, accw = fmt.k, fmt.dw, fmt.aw, fmt.accw
    o_swpw = FabricParams.MAC_OPCODES["SWPW"]
    insts = []
    # LDW: row address, k read lanes, row enables
    w_ra, row_en = new_vec(aw), [new_bool() for _ in range(k)]
    insts.append(ldw_unit(clk, rst, go, h["op"], h["a"], bwl, w_ra, row_en, fmt))
    w_a = [new_vec(aw) for _ in range(k)]
    w_q = [new_vec(dw) for _ in range(k)]
    insts += [add_const(w_ra, c, w_a[c]) for c in range(k)]
    # SWPW: front <- back at the end of the issue cycle
    swp = new_bool()
    insts.append(_is_op(go, h["op"], o_swpw, swp))
    back = [[new_vec(dw) for _ in range(k)] for _ in range(k)]
    fcol = [[new_vec(dw) for _ in range(k)] for _ in range(k)]  # fcol[c][r] = front[r][c]
    front = [[new_vec(dw) for _ in range(k)] for _ in range(k)]
    insts += [wcell(clk, rst, row_en[r], w_q[c], swp, back[r][c], front[r][c]) for r in range(k) for c in range(k)]
    insts += [wire(front[r][c], fcol[c][r]) for r in range(k) for c in range(k)]  # column lists: wire arrays
    # MATVEC: control, k read lanes, k columns
    x_ra, v2, p0_2, p1_2, d2 = new_vec(aw), new_bool(), new_bool(), new_bool(), new_vec(aw)
    r2, a2 = new_bool(), new_vec(aw)
    insts.append(mv_ctl(clk, rst, go, h["op"], h["port"], h["a"], h["b"], h["d"], h["len"], bmac, x_ra, v2,
                        p0_2, p1_2, d2, r2, a2, psum_out_valid, e_pidle, psum_in_valid, fmt))
    x_a = [new_vec(aw) for _ in range(k)]
    x_q = [new_vec(dw) for _ in range(k)]
    insts += [add_const(x_ra, r, x_a[r]) for r in range(k)]
    b_a = [new_vec(aw) for _ in range(k)]   # MATVR bias lanes, read in stage 2
    b_q = [new_vec(dw) for _ in range(k)]
    insts += [add_const(a2, c, b_a[c]) for c in range(k)]
    pin = [new_vec(accw) for _ in range(k)]
    po = [new_vec(accw) for _ in range(k)]
    insts += [lane(psum_in, c * accw, accw, pin[c]) for c in range(k)]
    for c in range(k):
        insts.append(mv_col(clk, rst, x_q, fcol[c], v2, p0_2, p1_2, d2, r2, b_q[c], psum_in_valid, pin[c], wes[c],
                            was[c], wds[c], po[c], c, fmt))
    po_cat = ConcatSignal(*reversed(po))
    insts.append(wire(po_cat, psum_out))
    raddrs += w_a + x_a + b_a
    rdatas += w_q + x_q + b_q
    return insts


@block
def _is_op(go, h_op, op: int, y):
    """``y = go and h_op == op``."""

    @always_comb
    def isop():
        y.next = go and h_op == op

    return isop


@block
def sched_tile(clk, rst, run, ld_we, ld_sel, ld_addr, ld_data, in_valid, in_data, out_valid, out_data,
               count, issue, issue_entry, wr_en, wr_addr, wr_data, err, err_cnt, halted, dbg_addr, dbg_rdata,
               fmt: FabricParams, psum_in_valid=None, psum_in=None, psum_out_valid=None, psum_out=None,
               hold=None, ext_valid=None, ext_data=None, hold_out=None, susp=None, pad=None,
               comm_here: bool = False):
    """One tile. Ports: :func:`tile_ports`; behaviour: docs/sched.md and this module's docstring.

    With ``fmt.comm`` every tile issues against the time base (``hold``) and has the
    communication-interface ports; ``comm_here`` builds the interface itself (tile
    ``COMM_TILE``), elsewhere its outputs are 0 and its inputs unused.
    """
    check_fabric(fmt, "sched_tile")
    cw, dw, aw, ew = fmt.cw, fmt.dw, fmt.aw, fmt.ew
    k = fmt.k
    ns = fmt.sources  # write sources: ports 0..2, ALU, MAC lanes, the FIFO's RECV
    lay = field_lsb(fmt)
    insts = []

    wrap_unused = new_bool()  # the local counter's wrap pulse is not needed in a tile
    insts.append(counter_core(clk, rst, run, count, wrap_unused, fmt))

    # load port
    ld_swe, ld_dwe = new_bool(), new_bool()
    ld_sidx, ld_didx, ld_ddata = new_vec(fetch_widths(fmt)["ix"]), new_vec(aw), new_vec(dw)
    insts.append(_load_decode(ld_we, ld_sel, ld_addr, ld_data, ld_swe, ld_sidx, ld_dwe, ld_didx, ld_ddata, fmt))

    # fetch + prefetch queue
    pop, h_valid, h_poison, h_ready = new_bool(), new_bool(), new_bool(), new_bool()
    h_word = new_vec(ew)
    insts.append(sched_fetch(clk, rst, run, ld_swe, ld_sidx, ld_data, pop, h_valid, h_word, h_poison, h_ready,
                             fmt))

    # head fields
    h = {f: new_vec(w) for f, (_lo, w) in lay.items()}
    insts += [lane(h_word, lo, w, h[f]) for f, (lo, w) in lay.items()]
    h_src = new_vec(2)
    insts.append(lane(h_word, lay["b"][0], 2, h_src))

    # inputs
    iv = [new_bool() for _ in range(3)]
    idt = [new_vec(dw) for _ in range(3)]
    for p in range(2):
        insts += [bit_of(in_valid, p, iv[p]), lane(in_data, p * dw, dw, idt[p])]
    if fmt.bus:
        insts += [bit_of(in_valid, 2, iv[2]), lane(in_data, 2 * dw, dw, idt[2])]
    else:
        in2_unused = new_vec(dw + 1)  # no bus: in[2] is ignored
        iv2, id2 = iv[2], idt[2]

        @always_comb
        def no_bus_in():
            in2_unused.next = concat(in_valid[2], in_data[3 * dw : 2 * dw])
            iv2.next = 0
            id2.next = 0

        insts.append(no_bus_in)

    # sequencer
    bo = [new_bool() for _ in range(3)]
    bi = [new_bool() for _ in range(3)]
    balu = new_bool()
    go, halt_now = new_bool(), new_bool()
    e_missed, e_opcode, e_busy, e_decomp = new_bool(), new_bool(), new_bool(), new_bool()
    mac_kw = {}
    if k:
        bwl, bmac = new_bool(), new_bool()
        mac_kw = {"h_len": h["len"], "bwl": bwl, "bmac": bmac}
    teff = count
    if fmt.comm:  # entries issue against t_eff = count - tbase (section 11)
        teff = new_vec(cw)
        insts.append(time_base(clk, rst, run, hold, count, teff, fmt))
        if comm_here:
            bfifo = new_bool()
            mac_kw.update({"h_b": h["b"], "bfifo": bfifo})
    insts.append(_sequencer(run, halted, h_valid, h_word, h_poison, h_ready, teff, h["t"], h["op"], h["port"], h["unit"],
                            h_src, bo[0], bo[1], bo[2], bi[0], bi[1], bi[2], balu,
                            issue, issue_entry, pop, go, halt_now, e_missed, e_opcode, e_busy, e_decomp, fmt,
                            **mac_kw))

    # output units (SEND/FWD)
    ov = [new_bool() for _ in range(3)]
    od = [new_vec(dw) for _ in range(3)]
    o_ra = [new_vec(aw) for _ in range(3)]
    o_rq = [new_vec(dw) for _ in range(3)]
    for p in range(3):
        insts.append(_out_unit(clk, rst, go, h["op"], h["port"], h["a"], h["len"], h_src, iv[0], iv[1], iv[2],
                               idt[0], idt[1], idt[2], o_ra[p], o_rq[p], bo[p], ov[p], od[p], p, fmt))
    ov_cat = ConcatSignal(ov[2], ov[1], ov[0])
    od_cat = ConcatSignal(od[2], od[1], od[0])

    @always_comb
    def outs():
        out_valid.next = ov_cat
        out_data.next = od_cat

    insts.append(outs)

    # input ports: RECV/TAP with buffers on the ring ports, TAP only on the bus
    we = [new_bool() for _ in range(ns)]
    wa = [new_vec(aw) for _ in range(ns)]
    wdt = [new_vec(dw) for _ in range(ns)]
    e_under = [new_bool() for _ in range(2)]
    e_over = [new_bool() for _ in range(2)]
    e_idle = [new_bool() for _ in range(3)]
    for p in range(2):
        insts.append(_in_port(clk, rst, go, h["op"], h["port"], h_src, h["d"], h["len"], iv[p], idt[p],
                              bi[p], we[p], wa[p], wdt[p], e_under[p], e_over[p], e_idle[p], p, fmt))
    insts.append(_bus_port(clk, rst, go, h["op"], h["port"], h_src, h["d"], h["len"], iv[2], idt[2],
                           bi[2], we[2], wa[2], wdt[2], e_idle[2], fmt))
    eu, eo, ei = new_bool(), new_bool(), new_bool()
    insts.append(_or2(*e_over, eo))
    e_fifo = None
    if fmt.comm and comm_here:  # the external FIFO, its RECV (write source 4 + k) and CHECK
        eu_f, e_fifo = new_bool(), new_bool()
        s_f = 4 + k
        insts.append(comm_port(clk, rst, run, go, h["op"], h["port"], h["a"], h["b"], h["d"], h["len"], ext_valid,
                               ext_data, bfifo, we[s_f], wa[s_f], wdt[s_f], eu_f, e_fifo, hold_out, susp, pad, fmt))
        insts.append(_or3(*e_under, eu_f, eu))
    else:
        insts.append(_or2(*e_under, eu))
        if fmt.comm:  # not the interface's tile: its write source is idle (constant 0 taps)
            s_f = 4 + k
            we[s_f], wa[s_f], wdt[s_f] = bool(0), intbv(0)[aw:], intbv(0)[dw:]
    if k:  # TAP_IDLE also from an idle psum_in sampled by MATVEC
        ei_tap, e_pidle = new_bool(), new_bool()
        insts += [_or3(*e_idle, ei_tap), _or2(ei_tap, e_pidle, ei)]
    else:
        insts.append(_or3(*e_idle, ei))

    # ALU
    a_ra, a_rb, a_qa, a_qb = new_vec(aw), new_vec(aw), new_vec(dw), new_vec(dw)
    insts.append(_alu(clk, rst, go, h["op"], h["a"], h["b"], h["d"], h["len"], a_ra, a_rb, a_qa, a_qb,
                      balu, we[3], wa[3], wdt[3], fmt))

    # MAC array (k > 0): weight cells, LDW, SWPW, MATVEC/MATVR; 3k more read ports
    raddrs = o_ra + [a_ra, a_rb, dbg_addr]
    rdatas = o_rq + [a_qa, a_qb, dbg_rdata]
    if k:
        insts.append(_mac_array(clk, rst, go, h, psum_in_valid, psum_in, psum_out_valid, psum_out, bwl, bmac,
                            e_pidle, we[4:], wa[4:], wdt[4:], raddrs, rdatas, fmt))

    # data memory
    e_wconf = new_bool()
    nm = ns if comm_here or not fmt.comm else ns - 1   # the write sources this tile's memory has
    insts.append((_dmem_n if nm > 4 else _dmem)(clk, rst, ld_dwe, ld_didx, ld_ddata, we[:nm], wa[:nm], wdt[:nm],
                                                raddrs, rdatas, e_wconf, fmt))
    we_cat = ConcatSignal(*reversed(we))
    wa_cat = ConcatSignal(*reversed(wa))
    wd_cat = ConcatSignal(*reversed(wdt))

    @always_comb
    def taps():
        wr_en.next = we_cat
        wr_addr.next = wa_cat
        wr_data.next = wd_cat

    insts.append(taps)

    insts.append(_errors(clk, rst, count, e_missed, e_opcode, e_busy, eu, eo, e_wconf, e_decomp, ei,
                         halt_now, err, err_cnt, halted, fmt, e_fifo=e_fifo))
    return insts


def tile_ports(fmt: FabricParams) -> dict[str, dict]:
    """Port list of :func:`sched_tile` (name -> dir, width, doc); docs/sched.md section 9."""
    cw, dw, aw, ew = fmt.cw, fmt.dw, fmt.aw, fmt.ew
    ns = fmt.sources
    src = ("0..2 = port, 3 = ALU" + (f", 4..{3 + fmt.k} = MAC lanes" if fmt.k else "")
           + (f", {4 + fmt.k} = FIFO RECV" if fmt.comm else ""))
    ports = {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset (clears state and memories)"},
        "run": {"dir": "in", "width": 1, "doc": "count, fetch and issue"},
        "ld_we": {"dir": "in", "width": 1, "doc": "load-port write enable"},
        "ld_sel": {"dir": "in", "width": 1, "doc": "0 = schedule memory, 1 = data memory"},
        "ld_addr": {"dir": "in", "width": ld_addr_width(fmt), "doc": "load address"},
        "ld_data": {"dir": "in", "width": ew, "doc": "load word (data loads use the low dw bits)"},
        "in_valid": {"dir": "in", "width": 3, "doc": "in[p] valid, p = 0 prev, 1 next, 2 bus"},
        "in_data": {"dir": "in", "width": 3 * dw, "doc": "in[p] data at [p*dw +: dw]"},
        "out_valid": {"dir": "out", "width": 3, "doc": "out[p] valid (register)"},
        "out_data": {"dir": "out", "width": 3 * dw, "doc": "out[p] data at [p*dw +: dw] (0 when not valid)"},
        "count": {"dir": "out", "width": cw, "doc": "local counter"},
        "issue": {"dir": "out", "width": 1, "doc": "an entry issues this cycle"},
        "issue_entry": {"dir": "out", "width": ew, "doc": "the issued (expanded) entry word, 0 otherwise"},
        "wr_en": {"dir": "out", "width": ns, "doc": f"write by source s this cycle ({src})"},
        "wr_addr": {"dir": "out", "width": ns * aw, "doc": "source s's write address at [s*aw +: aw]"},
        "wr_data": {"dir": "out", "width": ns * dw, "doc": "source s's write data at [s*dw +: dw]"},
        "err": {"dir": "out", "width": fmt.err_bits, "doc": "sticky errors, bit order FabricParams.ERR_NAMES"},
        "err_cnt": {"dir": "out", "width": cw, "doc": "count at which the first error was raised"},
        "halted": {"dir": "out", "width": 1, "doc": "the tile issues nothing more (HALT or error)"},
        "dbg_addr": {"dir": "in", "width": aw, "doc": "debug read address"},
        "dbg_rdata": {"dir": "out", "width": dw, "doc": "data memory word at dbg_addr (combinational)"},
    }
    if fmt.k:
        kw = fmt.k * fmt.accw
        ports.update({
            "psum_in_valid": {"dir": "in", "width": 1, "doc": "partial sums from the previous tile valid"},
            "psum_in": {"dir": "in", "width": kw, "doc": "partial-sum lane c at [c*accw +: accw]"},
            "psum_out_valid": {"dir": "out", "width": 1, "doc": "MATVEC (PORT[1]) result valid (register)"},
            "psum_out": {"dir": "out", "width": kw,
                         "doc": "MATVEC result lane c at [c*accw +: accw] (register, 0 when not valid)"},
        })
    if fmt.comm:
        ports.update({
            "hold": {"dir": "in", "width": 1, "doc": "time-base increment at the end of this cycle (broadcast)"},
            "ext_valid": {"dir": "in", "width": 1, "doc": "external word valid (communication tile; no ready)"},
            "ext_data": {"dir": "in", "width": dw, "doc": "external word"},
            "hold_out": {"dir": "out", "width": 1, "doc": "this tile's CHECK holds the time base (comb.)"},
            "susp": {"dir": "out", "width": 1, "doc": "a CHECK suspends in this cycle (comb.)"},
            "pad": {"dir": "out", "width": 1, "doc": "the FIFO RECV writes the pad word in this cycle (comb.)"},
        })
    return ports


def tile_timing(fmt: FabricParams) -> dict:
    """Timing facts recorded in the JSON sidecars of the tile and the ring."""
    out = {
        "p_send": fmt.P_SEND,
        "p_recv": fmt.P_RECV,
        "hop_lat": fmt.hop_lat,
        "l_path": fmt.l_path(1),
        "l_bus": fmt.l_bus if fmt.bus else None,
        "l_alu": fmt.l_alu,
        "fetch_lead": fmt.FETCH_LEAD,
        "first_head_cycle": 1,
        "hdr_gap": 2,
        "prefetch_depth": PREFETCH_DEPTH,
        "issue_per_cycle": 1,
        "taps": "issue/issue_entry/wr_* combinational in their cycle; err/err_cnt/halted registered",
    }
    if fmt.k:
        out["l_mm"] = fmt.L_MM
        out["psum"] = "psum_out registered: valid during n+i+l_mm; psum_in sampled in n+i+l_mm-1"
    return out


def emit_tile(fmt: FabricParams, outdir: Path | str, name: str = "sched_tile") -> Emitted:
    """Write one tile as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a :class:`FabricParams`, or ``name`` is a keyword.
    """
    check_fabric(fmt, name)
    return emit_stream_unit(
        sched_tile,
        fmt,
        FabricParams,
        tile_ports,
        outdir,
        name,
        family="sched",
        timing=tile_timing(fmt),
        doc="counter-timed tile: local counter, schedule memory + periodic decompressor, list timer, "
        "SEND/RECV/TAP/FWD/VADD/VMUL/DOT units, input buffers, data memory; no flow control",
    )
