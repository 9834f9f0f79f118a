"""``host_engine``: everything behind the host front end (docs/host.md sections 8, 9, 11):
``n_kernels`` :func:`~.kernel.host_kernel` instances, :func:`~.mem.mem_arb` when there are
two, and the device memory :func:`~.mem.dev_mem` with its DMA and test ports.

Ports are flat (``K = n_kernels``), the front end's view:

* the command fields ``cmd_m`` .. ``cmd_shift`` are shared by the kernels; ``cmd_valid``
  (K bits, one-hot) offers the command to kernel ``i``, ``cmd_ready[i]`` is its idle bit;
  ``k_abort`` (not ``abort``, a C++ reserved word for ``verilator -Wall``) goes to every
  kernel: each busy kernel abandons its task (ABORTED);
* ``k_busy[i]``, ``cpl_valid[i]``, ``cpl_ready[i]``, ``cpl_status[4i+3:4i]``,
  ``cpl_cycles[c*i+c-1:c*i]`` (``c = HostParams.cnt_bits``: its busy cycles modulo
  ``2**c``): kernel ``i``'s busy bit and completion;
* counter strobes: ``rd_beat`` / ``wr_beat`` (a read / write request accepted by the
  device memory in this cycle), ``k_stall[i]`` (kernel ``i``'s ``req_valid`` and not
  ``req_ready``);
* the device memory's DMA port (``dma_we``, ``dma_addr``, ``dma_wdata``, ``dma_re``,
  ``dma_raddr``, ``dma_rdata``) and test port (``tp_*``), as :mod:`.mem` describes.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import always_comb, block

from lockstep.models.host.params import HostParams

from ..common import Emitted, bit_of, cat_lanes, emit_stream_unit, new_bool, new_vec, port, wire
from .kernel import DIM_BITS, check_host, host_kernel, kernel_timing
from .mem import dev_mem, dma_tp_ports, mem_arb

__all__ = ["emit_engine", "engine_ports", "host_engine"]

#: The kernel's memory-port signals (its own names).
_KMEM = ("req_valid", "req_ready", "req_we", "req_addr", "req_wdata", "rsp_valid", "rsp_rdata", "rsp_err")


def engine_ports(fmt: HostParams) -> dict[str, dict]:
    """Port list of :func:`host_engine` (the module docstring)."""
    k, aww, c = fmt.n_kernels, fmt.aww, fmt.cnt_bits
    return {
        "clk": port("in", 1, "clock"),
        "rst": port("in", 1, "synchronous reset: kernels idle, memory, queue and test registers cleared"),
        "cmd_m": port("in", DIM_BITS, "command: M"),
        "cmd_n": port("in", DIM_BITS, "command: N"),
        "cmd_k": port("in", DIM_BITS, "command: K"),
        "cmd_act": port("in", aww, "command: word address of A"),
        "cmd_wgt": port("in", aww, "command: word address of W"),
        "cmd_out": port("in", aww, "command: word address of the result"),
        "cmd_es16": port("in", 1, "command: int16"),
        "cmd_relu": port("in", 1, "command: ReLU"),
        "cmd_pool": port("in", 1, "command: 2x1 max-pool"),
        "cmd_mult": port("in", 16, "command: scale_mult"),
        "cmd_shift": port("in", 5, "command: scale_shift"),
        "cmd_valid": port("in", k, "command offered to kernel i (one-hot)"),
        "cmd_ready": port("out", k, "kernel i idle"),
        "k_abort": port("in", 1, "k_abort: every busy kernel abandons its task (ABORTED)"),
        "k_busy": port("out", k, "kernel i busy"),
        "cpl_valid": port("out", k, "kernel i offers its completion"),
        "cpl_ready": port("in", k, "kernel i's completion taken"),
        "cpl_status": port("out", 4 * k, "kernel i's status at [4i+3:4i]"),
        "cpl_cycles": port("out", c * k, f"kernel i's busy cycles modulo 2**{c} at [{c}i+{c - 1}:{c}i]"),
        "rd_beat": port("out", 1, "a read request accepted by the device memory this cycle"),
        "wr_beat": port("out", 1, "a write request accepted by the device memory this cycle"),
        "k_stall": port("out", k, "kernel i's request waits (req_valid and not req_ready)"),
        **dma_tp_ports(fmt),
    }


@block
def _beats(valid, ready, we, rd_beat, wr_beat):
    """``rd_beat``/``wr_beat``: a read/write request accepted in this cycle."""

    @always_comb
    def b():
        rd_beat.next = valid and ready and not we
        wr_beat.next = valid and ready and we

    return b


@block
def _stall(valid, ready, stall):
    """``stall = valid and not ready``."""

    @always_comb
    def s():
        stall.next = valid and not ready

    return s


@block
def host_engine(clk, rst, cmd_m, cmd_n, cmd_k, cmd_act, cmd_wgt, cmd_out, cmd_es16, cmd_relu, cmd_pool, cmd_mult,
                cmd_shift, cmd_valid, cmd_ready, k_abort, k_busy, cpl_valid, cpl_ready, cpl_status, cpl_cycles, rd_beat,
                wr_beat, k_stall, dma_we, dma_addr, dma_wdata, dma_re, dma_raddr, dma_rdata, tp_we, tp_addr, tp_wdata,
                tp_raddr, tp_rdata, fmt: HostParams):
    """The kernels, the arbiter and the device memory. Ports: :func:`engine_ports`."""
    p = check_host(fmt, "host_engine")
    nk, aww = p.n_kernels, p.aww
    insts = []
    widths = {"req_addr": aww, "req_wdata": 32, "rsp_rdata": 32}

    def sig(n: str):
        return new_vec(widths[n]) if n in widths else new_bool()

    ks = [{n: sig(n) for n in _KMEM} for _ in range(nk)]
    mem = {n: sig(n) for n in _KMEM}
    cv, cr, bz, cplv, cplr, stl = ([new_bool() for _ in range(nk)] for _ in range(6))
    cst = [new_vec(4) for _ in range(nk)]
    ccy = [new_vec(p.cnt_bits) for _ in range(nk)]
    if nk == 1:
        insts += [wire(cmd_valid, cv[0]), wire(cpl_ready, cplr[0]), wire(cr[0], cmd_ready), wire(bz[0], k_busy),
                  wire(cplv[0], cpl_valid), wire(stl[0], k_stall), wire(cst[0], cpl_status),
                  wire(ccy[0], cpl_cycles)]
    else:
        insts += [bit_of(cmd_valid, i, cv[i]) for i in range(nk)] + [bit_of(cpl_ready, i, cplr[i]) for i in range(nk)]
        insts += [cat_lanes(cr, cmd_ready), cat_lanes(bz, k_busy), cat_lanes(cplv, cpl_valid),
                  cat_lanes(stl, k_stall), cat_lanes(cst, cpl_status), cat_lanes(ccy, cpl_cycles)]
    for i in range(nk):
        insts.append(host_kernel(clk, rst, cv[i], cr[i], cmd_m, cmd_n, cmd_k, cmd_act, cmd_wgt, cmd_out, cmd_es16,
                                 cmd_relu, cmd_pool, cmd_mult, cmd_shift, k_abort, bz[i], cplv[i], cplr[i], cst[i],
                                 ccy[i], fmt=p, **ks[i]))
        insts.append(_stall(ks[i]["req_valid"], ks[i]["req_ready"], stl[i]))
    if nk == 1:
        # one kernel: its port is the memory's
        mem = ks[0]
    else:
        arb = {f"k{i}_{n}": ks[i][n] for i in range(nk) for n in _KMEM}
        arb.update({f"m_{n}": mem[n] for n in _KMEM})
        insts.append(mem_arb(clk, rst, fmt=p, **arb))
    insts.append(dev_mem(clk, rst, fmt=p, dma_we=dma_we, dma_addr=dma_addr, dma_wdata=dma_wdata, dma_re=dma_re,
                         dma_raddr=dma_raddr, dma_rdata=dma_rdata, tp_we=tp_we, tp_addr=tp_addr, tp_wdata=tp_wdata,
                         tp_raddr=tp_raddr, tp_rdata=tp_rdata, **mem))
    insts.append(_beats(mem["req_valid"], mem["req_ready"], mem["req_we"], rd_beat, wr_beat))
    return insts


def engine_timing(fmt: HostParams) -> dict:
    """Timing facts of the engine (recorded in the JSON sidecar)."""
    return {**kernel_timing(fmt), "n_kernels": fmt.n_kernels, "mem_q": fmt.mem_q, "dma_read_latency": 0,
            "tp_read_latency": 0}


def emit_engine(fmt: HostParams, outdir: Path | str, name: str = "host_engine") -> Emitted:
    """Write the engine for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a HostParams, or ``name`` is a keyword.
    """
    check_host(fmt, name)
    return emit_stream_unit(host_engine, fmt, HostParams, engine_ports, outdir, name, family="host",
                            timing=engine_timing(fmt),
                            doc="host engine (spec 002): n_kernels MATMUL kernels, the memory arbiter, the device "
                                "memory model with DMA and test ports")
