"""``host_top``: the host family's test top (docs/host.md sections 9 and 11): the command
front end (:mod:`.front`) and everything behind it (:mod:`.engine`: the kernels, the
memory arbiter and the device memory with its DMA and test ports), wired by port name.

Ports: the front end's CSR port and status pins, ``k_busy``, and the engine's DMA and test
ports. The kernel-facing signals of the two blocks (the command bus, completions,
``abort``, ``k_busy``, the counter events) are internal.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import block

from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError

from ..common import Emitted, emit_stream_unit, new_bool, new_vec, port
from .engine import engine_ports, host_engine
from .front import front_ports, host_front
from .kernel import check_host

__all__ = ["emit_top", "host_top", "top_ports"]

#: Internal signals the top also brings out (so the testbench can wait on them).
_SHOWN = ("k_busy",)


def _shared(p: HostParams) -> dict[str, dict]:
    """Ports the front end and the engine both have: the wires between them."""
    fp, ep = front_ports(p), engine_ports(p)
    out = {}
    for n in sorted(set(fp) & set(ep) - {"clk", "rst"}):
        if fp[n]["width"] != ep[n]["width"] or fp[n]["dir"] == ep[n]["dir"]:
            raise ParamError(f"host_top: port {n} of host_front ({fp[n]['dir']} {fp[n]['width']}) and host_engine "
                             f"({ep[n]['dir']} {ep[n]['width']}) do not connect")
        out[n] = fp[n]
    return out


def top_ports(fmt: HostParams) -> dict[str, dict]:
    """Port list of :func:`host_top`: the front end's and the engine's ports but the
    wires between them (``k_busy`` is also an output)."""
    p = check_host(fmt, "host_top")
    sh = _shared(p)
    out = {}
    for ports in (front_ports(p), engine_ports(p)):
        for n, d in ports.items():
            if n in ("clk", "rst"):
                continue
            if n not in sh:
                out[n] = d
            elif n in _SHOWN:
                out[n] = {**d, "dir": "out"}
    return out


@block
def host_top(clk, rst, csr_we, csr_addr, csr_wdata, csr_raddr, csr_rdata, k_busy, irq, busy, cq_nonempty, sq_full,
             dma_we, dma_addr, dma_wdata, dma_re, dma_raddr, dma_rdata, tp_we, tp_addr, tp_wdata, tp_raddr, tp_rdata,
             fmt: HostParams):
    """The front end and the engine, joined by name (module docstring). Ports:
    :func:`top_ports` (MyHDL names a top's ports by its arguments, so they are listed)."""
    ports = dict(locals())
    p = check_host(ports.pop("fmt"), "host_top")
    if set(ports) != set(_top_ports_with_clock(p)):
        raise ParamError(f"host_top: the argument list {sorted(ports)} is not top_ports {sorted(top_ports(p))}")
    wires = {n: (new_bool() if d["width"] == 1 else new_vec(d["width"])) for n, d in _shared(p).items()
             if n not in _SHOWN}
    sig = {**wires, **ports}
    fp, ep = front_ports(p), engine_ports(p)
    return [
        host_front(fmt=p, **{n: sig[n] for n in fp}),
        host_engine(fmt=p, **{n: sig[n] for n in ep}),
    ]


def emit_top(fmt: HostParams, outdir: Path | str, name: str = "host_top") -> Emitted:
    """Write ``host_top`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a HostParams, the two blocks' ports do not connect, or
            ``name`` is a keyword.
    """
    p = check_host(fmt, name)
    return emit_stream_unit(host_top, p, HostParams, _top_ports_with_clock, outdir, name, family="host",
                            timing={"mem_lat": p.mem_lat, "dma_latency": 1, "csr_read": "combinational"},
                            doc="host task pipeline test top: command front end, kernels, arbiter, device memory")


def _top_ports_with_clock(fmt: HostParams) -> dict[str, dict]:
    return {"clk": port("in", 1, "clock"), "rst": port("in", 1, "reset"), **top_ports(fmt)}
