"""The streaming shell every unit shares: port list and one-deep output register.

Every streaming unit has ``clk``, ``rst``, an input stream ``in_valid/in_ready/in_*``, an
output stream ``out_valid/out_ready/out_*``, and (when it reports flags) ``out_flags``
and the sticky ``err``. The handshake is the same everywhere: a block is accepted when
``in_valid`` and the output register is empty or being emptied
(``in_ready = !out_valid || out_ready``), so one block per clock flows with a latency of
one cycle, and back-pressure stalls the input without losing anything.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block

__all__ = ["STREAM_LATENCY", "stream_ports", "stream_register"]

#: Cycles from acceptance to output of :func:`stream_register` (one register stage).
STREAM_LATENCY = 1


def stream_ports(
    inputs: dict[str, tuple[int, str]],
    outputs: dict[str, tuple[int, str]],
    flags: tuple[str, ...] = (),
) -> dict[str, dict]:
    """Port list of a streaming unit (name -> direction, width, doc).

    Args:
        inputs: input payload field -> (width, doc); becomes ``in_<field>``.
        outputs: output payload field -> (width, doc); becomes ``out_<field>``.
        flags: flag names, bit 0 first; adds ``out_flags`` and ``err`` when not empty.

    Returns:
        The ordered port dictionary recorded in the JSON sidecar.
    """
    ports: dict[str, dict] = {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "in_valid": {"dir": "in", "width": 1, "doc": "input valid"},
        "in_ready": {"dir": "out", "width": 1, "doc": "input accepted when valid"},
    }
    for name, (width, doc) in inputs.items():
        ports[f"in_{name}"] = {"dir": "in", "width": width, "doc": doc}
    ports["out_valid"] = {"dir": "out", "width": 1, "doc": "output valid"}
    ports["out_ready"] = {"dir": "in", "width": 1, "doc": "output taken when valid"}
    for name, (width, doc) in outputs.items():
        ports[f"out_{name}"] = {"dir": "out", "width": width, "doc": doc}
    if flags:
        ports["out_flags"] = {"dir": "out", "width": len(flags), "doc": "flags " + ",".join(flags)}
        ports["err"] = {"dir": "out", "width": len(flags), "doc": "sticky OR of accepted flags"}
    return ports


@block
def _capture(clk, rst, load, dst, src):
    """``dst <= src`` on every accepted block.

    Ports:
        clk, rst: clock and synchronous reset (``dst`` resets to 0).
        load: a block is accepted this cycle.
        dst: registered output field.
        src: combinational value of the field (same width as ``dst``).
    """

    @always_seq(clk.posedge, reset=rst)
    def cap():
        if load:
            dst.next = src

    return cap


@block
def _sticky(clk, rst, load, flags, err):
    """``err |= flags`` on every accepted block.

    Ports:
        clk, rst: clock and synchronous reset (``err`` resets to 0).
        load: a block is accepted this cycle.
        flags: the block's flags (combinational).
        err: sticky OR of all accepted blocks' flags.
    """

    @always_seq(clk.posedge, reset=rst)
    def stick():
        if load:
            err.next = err | flags

    return stick


@block
def stream_register(
    clk, rst, in_valid, in_ready, out_valid, out_ready, fields, flags=None, err=None, stall=None, load=None
):
    """One-deep valid/ready output register for a combinational datapath.

    Ports:
        clk, rst: clock and synchronous active-high reset.
        in_valid, in_ready: input handshake (``in_ready = (!out_valid || out_ready) && !stall``).
        out_valid, out_ready: output handshake.
        fields: list of ``(out_port, combinational_value)`` pairs of equal widths.
        flags: combinational flags of the current block (also one of ``fields``), or None.
        err: sticky OR of accepted ``flags``, or None.
        stall: optional; while high no block is accepted (a unit busy for a cycle).
        load: optional output; high on the cycles a block is accepted, for a unit whose
            own state advances with each accepted block.
    """
    load = load if load is not None else Signal(bool(0))
    out_v = Signal(bool(0))

    if stall is None:

        @always_comb
        def handshake():
            in_ready.next = not out_v or out_ready
            load.next = in_valid and (not out_v or out_ready)
            out_valid.next = out_v

    else:

        @always_comb
        def handshake():
            in_ready.next = (not out_v or out_ready) and not stall
            load.next = in_valid and (not out_v or out_ready) and not stall
            out_valid.next = out_v

    @always_seq(clk.posedge, reset=rst)
    def valid_reg():
        if load:
            out_v.next = 1
        elif out_ready:
            out_v.next = 0

    insts = [handshake, valid_reg] + [_capture(clk, rst, load, dst, src) for dst, src in fields]
    if err is not None:
        insts.append(_sticky(clk, rst, load, flags, err))
    return insts
