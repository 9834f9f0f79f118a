"""The chip / local counter of the ``sched`` family (docs/sched.md section 6).

``rst`` sets ``count = 0``; ``count`` increments modulo ``2**cw`` at the end of every cycle
with ``run = 1``. ``wrap`` is a registered one-cycle pulse: it is high in the cycle right
after an increment from ``2**cw - 1`` to 0, i.e. in the first cycle with ``count == 0``
after a wrap (decision: registered, so it is glitch-free and lines up with ``count``).
"""

from __future__ import annotations

from pathlib import Path

from myhdl import always_seq, block, intbv

from lockstep.models.sched.params import FabricParams

from ..common import Emitted, emit_stream_unit
from .parts import check_fabric

__all__ = ["counter_core", "counter_ports", "emit_counter", "sched_counter"]


@block
def counter_core(clk, rst, run, count, wrap, fmt: FabricParams):
    """``count`` (cw bits) and its ``wrap`` pulse.

    Ports:
        clk, rst: clock and synchronous active-high reset (count = 0).
        run: count this cycle.
        count: the counter.
        wrap: high for one cycle after ``count`` went ``2**cw - 1 -> 0``.
    """
    cw = fmt.cw

    @always_seq(clk.posedge, reset=rst)
    def tick():
        nxt = intbv(0)[cw:]
        nxt[:] = count + 1
        wrap.next = 0
        if run:
            count.next = nxt
            if nxt == 0:
                wrap.next = 1

    return tick


@block
def sched_counter(clk, rst, run, count, wrap, fmt: FabricParams):
    """Standalone chip counter (the CW = 8 wrap test's DUT). Ports: see :func:`counter_core`."""
    check_fabric(fmt, "sched_counter")
    return counter_core(clk, rst, run, count, wrap, fmt)


def counter_ports(fmt: FabricParams) -> dict[str, dict]:
    """Port list of :func:`sched_counter` (name -> dir, width, doc)."""
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset (count = 0)"},
        "run": {"dir": "in", "width": 1, "doc": "count increments at the end of a cycle with run = 1"},
        "count": {"dir": "out", "width": fmt.cw, "doc": "the counter, modulo 2**cw"},
        "wrap": {"dir": "out", "width": 1, "doc": "high in the cycle after count went 2**cw-1 -> 0"},
    }


def emit_counter(fmt: FabricParams, outdir: Path | str, name: str = "sched_counter") -> Emitted:
    """Write the chip counter as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a :class:`FabricParams`, or ``name`` is a keyword.
    """
    check_fabric(fmt, name)
    return emit_stream_unit(
        sched_counter,
        fmt,
        FabricParams,
        counter_ports,
        outdir,
        name,
        family="sched",
        timing={"latency": 1, "wrap_period": 1 << fmt.cw, "wrap": "registered: high while count == 0 after a wrap"},
        doc="chip counter: count = count + 1 mod 2**cw while run, registered wrap pulse",
    )
