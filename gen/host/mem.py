"""The host family's memory side (docs/host.md sections 2, 9, 11): the device memory
model ``dev_mem`` and the two-kernel arbiter ``mem_arb``.

``dev_mem``: ``mem_words`` 32-bit words (word address ``AWW = mem_aw - 2`` bits).

* Kernel port (``req_*`` / ``rsp_*``, docs/host.md section 9). A request is accepted
  (``req_valid`` and ``req_ready``) when fewer than ``mem_q`` requests are in flight
  (accepted and not yet answered; a response given in the same cycle counts as answered)
  and the back-pressure draw does not refuse: ``req_ready`` is low in the cycles where
  LFSR bits [3:0] < ``bp_rate`` (so ``bp_rate``/16 of cycles; 0 never refuses). The
  request is performed when accepted: a read captures the word, a write stores it at the
  clock edge. Accesses inside the error window ``err_lo <= addr < err_hi`` (words) answer
  ``rsp_err`` (read data 0) and a write there is dropped. Responses come in request
  order, one per request, each no earlier than ``mem_lat`` cycles after its acceptance
  (accepted in cycle t: answered in cycle t + ``mem_lat`` at the earliest); a due head
  response is held in the cycles where LFSR bits [19:16] < ``lat_rate``. ``req_ready``
  and ``rsp_*`` depend on registers only (not on ``req_valid``).
* The LFSR is 32-bit Galois (x^32 + x^22 + x^2 + x + 1, mask 0x80200003), stepping every
  cycle; writing the seed register loads it with the seed (1 when the seed is 0); reset
  leaves it at 1.
* DMA port (the host's): ``dma_we`` writes ``dma_wdata`` to word ``dma_addr`` at the clock
  edge (a word per cycle; with a kernel write to the same word in the same cycle the DMA
  write wins); ``dma_rdata`` = word ``dma_raddr`` (combinational). ``dma_re`` = 1 says
  this cycle's ``dma_raddr`` is a counted read (the testbench's read strobe; the read
  itself needs no strobe).
* Test port: ``tp_we`` writes ``tp_wdata`` to register ``tp_addr`` at the clock edge;
  ``tp_rdata`` = register ``tp_raddr`` (combinational). Registers: 0 LFSR seed (32 bits),
  1 ``bp_rate`` ([4:0]; 16 and above refuse always), 2 ``lat_rate`` ([4:0]), 3 ``err_lo``,
  4 ``err_hi`` (``AWW + 1`` bits, so ``err_hi`` may be ``mem_words``), 5 DMA bytes written
  (RO: 4 per ``dma_we`` cycle), 6 DMA bytes read (RO: 4 per ``dma_re`` cycle), 7 reads 0.
  Counters are 32-bit and wrap; writes to 5, 6 and 7 are ignored.
* ``rst`` clears the memory, the queue, the LFSR (to 1) and the test registers.

``mem_arb``: two kernel request channels (``k0_*``, ``k1_*``) onto one (``m_*``). When
both are valid the one not granted last wins (round robin over accepted requests: the
last granted kernel is recorded at each acceptance); ``m_req_valid`` is the OR (gated
while the order FIFO holds ``mem_q`` entries and no response leaves); the granted
kernel's ``req_ready`` is ``m_req_ready``. Each accepted request pushes its kernel's
number on an order FIFO of ``mem_q`` entries; ``m_rsp_valid`` goes to the FIFO head's
kernel (and pops it). Read data and the error bit go to both kernels. Combinational
from request to request and from response to response.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.host.params import HostParams

from ..common import Emitted, emit_stream_unit, new_bool, new_vec, port, ring_fifo
from .kernel import _bits, check_host

__all__ = ["LFSR_MASK", "TP_REGS", "arb_ports", "dev_mem", "dev_mem_ports", "emit_dev_mem", "emit_mem_arb",
           "lfsr_after", "lfsr_step", "mem_arb"]

#: Test-port register numbers.
TP_REGS = {"seed": 0, "bp_rate": 1, "lat_rate": 2, "err_lo": 3, "err_hi": 4, "dma_wr_bytes": 5, "dma_rd_bytes": 6,
           "lfsr": 7}
#: Galois mask of the back-pressure LFSR (x^32 + x^22 + x^2 + x + 1).
LFSR_MASK = 0x80200003
#: LFSR bits of the back-pressure draw and of the latency draw.
BP_LSB, LAT_LSB = 0, 16


def lfsr_step(s: int) -> int:
    """The LFSR's next state (for models of the draws)."""
    return (s >> 1) ^ (LFSR_MASK if s & 1 else 0)


def lfsr_after(seed: int, steps: int) -> int:
    """The LFSR's state ``steps`` clock edges after the test port wrote ``seed`` (0 seeds 1)."""
    s = seed & 0xFFFF_FFFF or 1
    for _ in range(steps):
        s = lfsr_step(s)
    return s


def _mem_side(fmt: HostParams) -> dict[str, dict]:
    aww = fmt.aww
    return {
        "req_valid": port("in", 1, "kernel port: request"),
        "req_ready": port("out", 1, "kernel port: accepted (fewer than mem_q in flight, not refused)"),
        "req_we": port("in", 1, "kernel port: write"),
        "req_addr": port("in", aww, "kernel port: word address"),
        "req_wdata": port("in", 32, "kernel port: write data"),
        "rsp_valid": port("out", 1, "kernel port: response (in order, mem_lat cycles after acceptance or later)"),
        "rsp_rdata": port("out", 32, "kernel port: read data (0 on an error)"),
        "rsp_err": port("out", 1, "kernel port: the access was inside the error window"),
    }


def dma_tp_ports(fmt: HostParams) -> dict[str, dict]:
    """The DMA and test ports (``dev_mem``'s and ``host_engine``'s)."""
    aww = fmt.aww
    return {
        "dma_we": port("in", 1, "DMA: write dma_wdata to word dma_addr (a word per cycle)"),
        "dma_addr": port("in", aww, "DMA: write word address"),
        "dma_wdata": port("in", 32, "DMA: write data"),
        "dma_re": port("in", 1, "DMA: this cycle's dma_raddr is a counted read (4 bytes)"),
        "dma_raddr": port("in", aww, "DMA: read word address"),
        "dma_rdata": port("out", 32, "DMA: word dma_raddr (combinational)"),
        "tp_we": port("in", 1, "test port: write tp_wdata to register tp_addr"),
        "tp_addr": port("in", 3, "test port: 0 seed, 1 bp_rate, 2 lat_rate, 3 err_lo, 4 err_hi"),
        "tp_wdata": port("in", 32, "test port: write data"),
        "tp_raddr": port("in", 3, "test port: read register (5 DMA bytes written, 6 DMA bytes read)"),
        "tp_rdata": port("out", 32, "test port: register tp_raddr (combinational)"),
    }


def dev_mem_ports(fmt: HostParams) -> dict[str, dict]:
    """Port list of :func:`dev_mem`."""
    return {"clk": port("in", 1, "clock"),
            "rst": port("in", 1, "synchronous reset: clears the memory, the queue and the test registers"),
            **_mem_side(fmt), **dma_tp_ports(fmt)}


def arb_ports(fmt: HostParams) -> dict[str, dict]:
    """Port list of :func:`mem_arb`: ``k0_*`` and ``k1_*`` (kernel side), ``m_*`` (memory)."""
    out = {"clk": port("in", 1, "clock"), "rst": port("in", 1, "synchronous reset: order FIFO empty")}
    side = _mem_side(fmt)
    flip = {"in": "out", "out": "in"}
    for k in ("k0", "k1"):  # the arbiter is the memory to each kernel
        for n, r in side.items():
            out[f"{k}_{n}"] = port(r["dir"], r["width"], f"kernel {k[1]}: {r['doc'].split(': ', 1)[1]}")
    for n, r in side.items():  # and a kernel to the memory
        out[f"m_{n}"] = port(flip[r["dir"]], r["width"], f"memory: {r['doc'].split(': ', 1)[1]}")
    return out


@block
def _lt(a, b, out):
    """``out = a < b`` (unsigned, equal widths)."""

    @always_comb
    def c():
        out.next = a < b

    return c


@block
def dev_mem(clk, rst, req_valid, req_ready, req_we, req_addr, req_wdata, rsp_valid, rsp_rdata, rsp_err, dma_we,
            dma_addr, dma_wdata, dma_re, dma_raddr, dma_rdata, tp_we, tp_addr, tp_wdata, tp_raddr, tp_rdata,
            fmt: HostParams):
    """The device memory model. Ports: :func:`dev_mem_ports`; behaviour: the module
    docstring."""
    p = check_host(fmt, "dev_mem")
    aww, q, lat = p.aww, p.mem_q, p.mem_lat
    ob = _bits(q)
    nw = p.mem_words
    insts = []

    # ---- test registers and the LFSR
    seed, lfsr = new_vec(32), Signal(intbv(1)[32:])
    bp, lr = new_vec(5), new_vec(5)
    elo, ehi = new_vec(aww + 1), new_vec(aww + 1)
    dwr, drd = new_vec(32), new_vec(32)
    r_seed, r_bp, r_lat, r_lo, r_hi, r_dw, r_dr, r_lf = (TP_REGS[n] for n in (
        "seed", "bp_rate", "lat_rate", "err_lo", "err_hi", "dma_wr_bytes", "dma_rd_bytes", "lfsr"))

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if lfsr[0]:
            lfsr.next = (lfsr >> 1) ^ intbv(LFSR_MASK)[32:]
        else:
            lfsr.next = lfsr >> 1
        if dma_we:
            dwr.next = dwr + 4
        if dma_re:
            drd.next = drd + 4
        if tp_we:
            if tp_addr == r_seed:
                seed.next = tp_wdata
                if tp_wdata == 0:
                    lfsr.next = 1
                else:
                    lfsr.next = tp_wdata
            elif tp_addr == r_bp:
                bp.next = tp_wdata[5:]
            elif tp_addr == r_lat:
                lr.next = tp_wdata[5:]
            elif tp_addr == r_lo:
                elo.next = tp_wdata[aww + 1:]
            elif tp_addr == r_hi:
                ehi.next = tp_wdata[aww + 1:]

    @always_comb
    def tp_read():
        if tp_raddr == r_seed:
            tp_rdata.next = seed
        elif tp_raddr == r_bp:
            tp_rdata.next = concat(intbv(0)[27:], bp)
        elif tp_raddr == r_lat:
            tp_rdata.next = concat(intbv(0)[27:], lr)
        elif tp_raddr == r_lo:
            tp_rdata.next = concat(intbv(0)[31 - aww:], elo)
        elif tp_raddr == r_hi:
            tp_rdata.next = concat(intbv(0)[31 - aww:], ehi)
        elif tp_raddr == r_dw:
            tp_rdata.next = dwr
        elif tp_raddr == r_dr:
            tp_rdata.next = drd
        elif tp_raddr == r_lf:
            tp_rdata.next = lfsr
        else:
            tp_rdata.next = 0

    insts += [regs, tp_read]

    # ---- the queue: (err, data) entries in request order; ``ripe`` of them are due
    push, pop = new_bool(), new_bool()
    din, head = new_vec(33), new_vec(33)
    occ, ripe = new_vec(ob), new_vec(ob)
    insts.append(ring_fifo(clk, rst, push, pop, din, head, occ, q))
    refuse, hold = new_bool(), new_bool()
    draw_bp, draw_lat = new_vec(5), new_vec(5)
    in_err, acc, matured = new_bool(), new_bool(), new_bool()
    ax = new_vec(aww + 1)
    rq = new_vec(32)

    @always_comb
    def draws():
        draw_bp.next = concat(bool(0), lfsr[BP_LSB + 4:BP_LSB])
        draw_lat.next = concat(bool(0), lfsr[LAT_LSB + 4:LAT_LSB])
        ax.next = concat(bool(0), req_addr)

    insts += [draws, _lt(draw_bp, bp, refuse), _lt(draw_lat, lr, hold)]

    rsp_v, rdy = new_bool(), new_bool()

    @always_comb
    def respond():
        rsp_v.next = ripe != 0 and not hold
        rsp_valid.next = ripe != 0 and not hold
        pop.next = ripe != 0 and not hold
        rsp_err.next = head[32]
        rsp_rdata.next = head[32:]

    @always_comb
    def ready():
        rdy.next = (occ < q or rsp_v) and not refuse
        req_ready.next = (occ < q or rsp_v) and not refuse

    @always_comb
    def accept():
        acc.next = req_valid and rdy
        push.next = req_valid and rdy
        in_err.next = elo <= ax and ax < ehi

    @always_comb
    def entry():
        if in_err:
            din.next = concat(bool(1), intbv(0)[32:])
        elif req_we:
            din.next = 0
        else:
            din.next = concat(bool(0), rq)

    insts += [respond, ready, accept, entry]

    # a response is due mem_lat cycles after its acceptance: a delay line of mem_lat - 1
    # acceptance bits feeds the count of due entries
    if lat == 1:

        @always_comb
        def mat1():
            matured.next = acc

        insts.append(mat1)
    else:
        sr = new_vec(lat - 1)
        top = lat - 2
        if lat == 2:

            @always_seq(clk.posedge, reset=rst)
            def delay():
                sr.next = acc

        else:

            @always_seq(clk.posedge, reset=rst)
            def delay():
                sr.next = concat(sr[top:], acc)

        @always_comb
        def mat():
            matured.next = sr[top]

        insts += [delay, mat]

    @always_seq(clk.posedge, reset=rst)
    def ripe_count():
        if matured and not pop:
            ripe.next = ripe + 1
        elif pop and not matured:
            ripe.next = ripe - 1

    insts.append(ripe_count)

    # ---- the memory array: kernel writes at acceptance, DMA writes, reset clears
    kw = new_bool()

    @always_comb
    def kwrite():
        kw.next = acc and req_we and not in_err

    insts += [kwrite, _mem_array(clk, rst, kw, req_addr, req_wdata, rq, dma_we, dma_addr, dma_wdata, dma_raddr,
                                 dma_rdata, nw)]
    return insts


@block
def _mem_array(clk, rst, kw, req_addr, req_wdata, rq, dma_we, dma_addr, dma_wdata, dma_raddr, dma_rdata, nw: int):
    """The ``nw``-word array: ``kw`` writes ``req_wdata`` at ``req_addr``, ``dma_we`` writes
    ``dma_wdata`` at ``dma_addr`` (after the kernel's, so it wins on the same word); ``rst``
    clears every word; ``rq`` = word ``req_addr``, ``dma_rdata`` = word ``dma_raddr``
    (combinational).

    Written as MyHDL user Verilog (``_mem_array.verilog_code``): a MyHDL memory is a list of
    one Signal per word, and at ``mem_aw = 24`` (4 Mi words) building and converting that
    list takes minutes. The MyHDL generator below is only a placeholder (the design is
    simulated as Verilog, never in MyHDL)."""
    last = nw - 1
    rq.driven = "wire"
    dma_rdata.driven = "wire"
    for s in (rst, kw, req_addr, req_wdata, dma_we, dma_addr, dma_wdata, dma_raddr):
        s.read = True

    @always(clk.posedge)
    def placeholder():
        rq.next = 0
        dma_rdata.next = 0

    return placeholder


_mem_array.verilog_code = """
reg [31:0] dm_words [0:$last];

always @(posedge $clk) begin: dm_write
    integer dm_i;
    if ($rst) begin
        for (dm_i = 0; dm_i < $nw; dm_i = dm_i + 1) begin
            dm_words[dm_i] <= 0;
        end
    end
    else begin
        if ($kw) begin
            dm_words[$req_addr] <= $req_wdata;
        end
        if ($dma_we) begin
            dm_words[$dma_addr] <= $dma_wdata;
        end
    end
end

assign $rq = dm_words[$req_addr];
assign $dma_rdata = dm_words[$dma_raddr];
"""


@block
def mem_arb(clk, rst, k0_req_valid, k0_req_ready, k0_req_we, k0_req_addr, k0_req_wdata, k0_rsp_valid, k0_rsp_rdata,
            k0_rsp_err, k1_req_valid, k1_req_ready, k1_req_we, k1_req_addr, k1_req_wdata, k1_rsp_valid, k1_rsp_rdata,
            k1_rsp_err, m_req_valid, m_req_ready, m_req_we, m_req_addr, m_req_wdata, m_rsp_valid, m_rsp_rdata,
            m_rsp_err, fmt: HostParams):
    """The round-robin arbiter. Ports: :func:`arb_ports`; behaviour: the module docstring."""
    p = check_host(fmt, "mem_arb")
    q = p.mem_q
    ob = _bits(q)
    last = new_bool()  # kernel granted at the last acceptance
    g1, acc = new_bool(), new_bool()
    push = new_bool()
    din, head = new_vec(1), new_vec(1)
    occ = new_vec(ob)

    rm, mv = new_bool(), new_bool()

    @always_comb
    def grant():
        g1.next = k1_req_valid and (not k0_req_valid or not last)
        din.next = k1_req_valid and (not k0_req_valid or not last)
        rm.next = occ < q or m_rsp_valid
        if k1_req_valid and (not k0_req_valid or not last):
            m_req_we.next = k1_req_we
            m_req_addr.next = k1_req_addr
            m_req_wdata.next = k1_req_wdata
        else:
            m_req_we.next = k0_req_we
            m_req_addr.next = k0_req_addr
            m_req_wdata.next = k0_req_wdata

    @always_comb
    def valid():
        mv.next = (k0_req_valid or k1_req_valid) and rm
        m_req_valid.next = (k0_req_valid or k1_req_valid) and rm

    @always_comb
    def ready():
        k0_req_ready.next = m_req_ready and rm and not g1
        k1_req_ready.next = m_req_ready and rm and g1
        acc.next = mv and m_req_ready
        push.next = mv and m_req_ready

    @always_comb
    def route():
        k0_rsp_valid.next = m_rsp_valid and not head[0]
        k1_rsp_valid.next = m_rsp_valid and head[0]
        k0_rsp_rdata.next = m_rsp_rdata
        k1_rsp_rdata.next = m_rsp_rdata
        k0_rsp_err.next = m_rsp_err
        k1_rsp_err.next = m_rsp_err

    @always_seq(clk.posedge, reset=rst)
    def rr():
        if acc:
            last.next = g1

    return grant, valid, ready, route, rr, ring_fifo(clk, rst, push, m_rsp_valid, din, head, occ, q)


def emit_dev_mem(fmt: HostParams, outdir: Path | str, name: str = "dev_mem") -> Emitted:
    """Write ``dev_mem`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record."""
    check_host(fmt, name)
    return emit_stream_unit(dev_mem, fmt, HostParams, dev_mem_ports, outdir, name, family="host",
                            timing={"mem_lat": fmt.mem_lat, "mem_q": fmt.mem_q, "dma_read_latency": 0},
                            doc="host device memory model: mem_q in flight, mem_lat latency, LFSR back-pressure and "
                                "latency draws, error window, DMA and test ports")


def emit_mem_arb(fmt: HostParams, outdir: Path | str, name: str = "mem_arb") -> Emitted:
    """Write ``mem_arb`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record."""
    check_host(fmt, name)
    return emit_stream_unit(mem_arb, fmt, HostParams, arb_ports, outdir, name, family="host",
                            timing={"order_fifo": fmt.mem_q},
                            doc="host memory arbiter: two kernel ports, round robin, in-order response routing")
