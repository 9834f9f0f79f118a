"""cocotb test module for the chip counter ``sched_counter``: +1 per cycle while ``run``,
wrap modulo 2**cw, hold while ``run`` is low; ``wrap`` is a registered one-cycle pulse,
high in the first cycle of count 0 after a wrap (not after reset)."""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from lockstep.models.sched.params import FabricParams
from lockstep.verif.context import TbContext, start


@cocotb.test()
async def counter_wraps_and_holds(dut):
    """Random run/hold pattern over three wraps; every cycle checked against the reference."""
    ctx = TbContext.from_env()
    p = FabricParams.from_dict(ctx.params)
    rng = random.Random(ctx.seed)
    dut.run.value = 0
    await start(dut)
    ref, wraps, errors, wrapped = 0, 0, [], 0
    cycles = 3 * (1 << p.cw) + 50 if p.cw <= 12 else 2000
    for k in range(cycles):
        run = int(rng.random() < 0.9)
        dut.run.value = run
        await ReadOnly()
        got, wrap = int(dut.count.value), int(dut.wrap.value)
        if got != ref:
            errors.append(f"cycle {k}: count {got}, expected {ref}")
        if wrap != wrapped:
            errors.append(f"cycle {k}: wrap {wrap}, expected {wrapped} (count {ref})")
        wraps += wrapped
        await RisingEdge(dut.clk)
        wrapped = int(run and ref == (1 << p.cw) - 1)
        if run:
            ref = (ref + 1) & ((1 << p.cw) - 1)
    ctx.summary.update(cycles=cycles, blocks=cycles, wraps=wraps, mismatches=len(errors), errors=errors[:20])
    ctx.write_summary()
    assert not errors, f"{len(errors)} counter error(s); first: {errors[0]}"
