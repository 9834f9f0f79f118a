"""What a cocotb test module needs from the runner, read from the environment.

The runner (:mod:`lockstep.verif.runner`) starts the simulator with:

* ``LOCKSTEP_RECORD``: path of the generator's JSON record of the DUT (parameters,
  ports, timing), so the testbench never restates a size;
* ``LOCKSTEP_TB_PARAMS``: JSON of the parameters the *testbench* believes (normally the
  same; a negative test gives a deliberately different DUT);
* ``LOCKSTEP_OPTS``: JSON of testbench options (transaction count, pause rates, ...);
* ``LOCKSTEP_RESULTS``: folder for ``summary.json`` and coverage files;
* ``LOCKSTEP_SEED``: the run's seed (``make sim SEED=``), the stimulus's seed.

Every test also holds the DUT's state after ``rst`` to the generator's reset values
(:func:`check_reset`, the record's ``resets``), on Icarus, which shows internal signals.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.handle import SimHandleBase
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

__all__ = ["TbContext", "CLOCK_NS", "start", "pulse_reset", "reset_values", "check_reset"]

#: Clock period used by every testbench (ns). Cycle counts, not times, are checked.
CLOCK_NS = 10


@dataclass
class TbContext:
    """Runner-provided facts for one simulation.

    Attributes:
        record: the generator's JSON record of the DUT.
        params: parameter dict the testbench checks against.
        opts: testbench options.
        results: folder for summaries and coverage.
        seed: the cocotb random seed of this run.
        summary: values written to ``summary.json`` at the end.
    """

    record: dict[str, Any]
    params: dict[str, Any]
    opts: dict[str, Any]
    results: Path
    seed: int
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "TbContext":
        """Read the runner's environment variables (see the module docstring)."""
        try:
            record = json.loads(Path(os.environ["LOCKSTEP_RECORD"]).read_text())
        except KeyError as exc:
            raise RuntimeError(
                "LOCKSTEP_RECORD is not set: start simulations with `make sim TEST=...` "
                "or lockstep.verif.runner"
            ) from exc
        params = json.loads(os.environ.get("LOCKSTEP_TB_PARAMS") or "null") or record["params"]
        opts = json.loads(os.environ.get("LOCKSTEP_OPTS") or "{}")
        results = Path(os.environ.get("LOCKSTEP_RESULTS", "."))
        results.mkdir(parents=True, exist_ok=True)
        # The runner's seed, not cocotb.RANDOM_SEED (which cocotb 2 mixes with the test's
        # name): the per-edge and throughput tests of one seed then draw one stimulus.
        seed = int(os.environ.get("LOCKSTEP_SEED") or cocotb.RANDOM_SEED)
        return cls(record, params, opts, results, seed)

    def opt(self, name: str, default: Any) -> Any:
        """A testbench option, or ``default``."""
        return self.opts.get(name, default)

    def write_summary(self) -> Path:
        """Write :attr:`summary` as ``summary.json`` in the results folder."""
        path = self.results / "summary.json"
        path.write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        return path

    def finish(self, errors: list[str], logger: Any) -> None:
        """The end of a test's check phase: write the summary, log the first 50 errors
        and fail when there is any (the message names the first)."""
        self.write_summary()
        for e in errors[:50]:
            logger.error(e)
        assert not errors, f"{len(errors)} scoreboard error(s); first: {errors[0]}"

    def report_coverage(self, cg: Any) -> None:
        """The report phase: the cover group's figures into the summary, the coverage
        database next to it."""
        self.summary.update(cg.summary())
        self.summary["coverage_file"] = str(cg.export(self.results))
        self.write_summary()


def reset_values() -> dict[str, int]:
    """The DUT's registers and the values ``rst`` gives them (the generator's record,
    ``resets``: read from the MyHDL design, not from the Verilog), when the simulator
    shows internal signals (Icarus; a Verilator build keeps them private): else ``{}``."""
    path = os.environ.get("LOCKSTEP_RECORD")
    if not path or "icarus" not in cocotb.SIM_NAME.lower():
        return {}
    return dict(json.loads(Path(path).read_text()).get("resets") or {})


async def check_reset(inst: SimHandleBase, clk: SimHandleBase, resets: dict[str, int]) -> None:
    """After the first rising edge of ``clk`` (``rst`` high), every register of ``resets``
    in the DUT instance ``inst`` must hold its reset value: an AssertionError (the test
    fails) names the first that does not, or that is unknown (a reset never written). An
    RTL without all of them (another implementation, ``RTL=``; a mutant keeps every
    declaration) is not checked.
    Run it beside the test (``cocotb.start_soon``): it changes no timing."""
    await RisingEdge(clk)
    await ReadOnly()
    bad, missing = [], 0
    for name, want in resets.items():
        base, _, idx = name.partition("[")
        try:
            v = (inst[base][int(idx[:-1])] if idx else inst[name]).value   # a memory word: name[i]
        except (AttributeError, KeyError, IndexError):
            missing += 1   # another implementation (RTL=) has registers of its own
            continue
        if not v.is_resolvable or int(v) != want:
            bad.append(f"{name} = {v}, reset value {want}")
    if missing:   # a mutant keeps every declaration: this is another implementation
        cocotb.log.info(f"reset check skipped: {missing} of the generator's {len(resets)} registers are not in this "
                        f"RTL (another implementation, whose registers are its own)")
        return
    if bad:
        raise AssertionError(f"{len(bad)} register(s) not at their reset value after rst (the generator's record): "
                             + "; ".join(bad[:8]))


async def start(dut: SimHandleBase, reset_cycles: int = 2) -> None:
    """Start the clock and hold ``rst`` high for ``reset_cycles`` edges (the state after
    the first is checked: :func:`check_reset`).

    Args:
        dut: DUT with ``clk`` and ``rst`` ports.
        reset_cycles: edges with reset asserted.
    """
    Clock(dut.clk, CLOCK_NS, unit="ns").start()
    await pulse_reset(dut, reset_cycles)


async def pulse_reset(dut: SimHandleBase, reset_cycles: int = 1) -> None:
    """Hold ``rst`` high for ``reset_cycles`` edges, then one edge low; the state after
    the first is held to the generator's record (:func:`check_reset`, Icarus). The clock
    runs already: :func:`start` at the beginning, a testbench's own reset mid-run.

    Args:
        dut: DUT with ``clk`` and ``rst`` ports.
        reset_cycles: edges with reset asserted.
    """
    resets = reset_values()
    if resets:
        cocotb.start_soon(check_reset(dut, dut.clk, resets))
    dut.rst.value = 1
    await ClockCycles(dut.clk, reset_cycles)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
