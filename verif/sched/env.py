"""pyuvm environment of the counter-timed ring (``sched_ring``) and mesh (``sched_mesh``,
the same ports): the whole event trace, cycle by cycle, against the golden executor.

The contract is docs/sched.md. A test picks a program (``program`` option):

* ``fig2a``, ``schedule_c``, ``periodic6``: the patent's examples (directed);
* ``random``: a random legal program (the linter must accept it);
* ``illegal:<RULE>``: a random legal program broken in one rule class; the executor
  predicts the error bit, tile and cycle, and the RTL must raise exactly that;
* ``jitter:within``, ``jitter:beyond``: a random legal program with one ring SEND
  delayed within its receiver's slack (legal: the final memories must equal the
  unjittered program's) or beyond it (the predicted UNDERFLOW, as for ``illegal:``);
* ``asm:<path>``: an assembly file (docs/sched.md section 10), e.g. the example a user
  edits and runs with ``make sim TEST=sched_example``.

Flow: :class:`ProgramLoader` (the driver) writes every tile's whole schedule and data
image through the load port (memories are not reset: ``--x-initial unique``), then
raises ``run``. :class:`TraceMonitor` samples the taps of every cycle and rebuilds the
event list of section 8 (issue, link word, bus word, memory write, error) with the cycle
each happened in, checking on the way that every tile's local counter equals the chip
counter and that the chip counter advances by exactly one per cycle.
:class:`TraceScoreboard` compares the whole trace, the final memories (read back through
the debug port), the sticky error vectors with the cycle of the first error, the halted
flags and the bus error with the executor's :class:`~lockstep.models.sched.Run`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge, Timer
from pyuvm import ConfigDB, uvm_component, uvm_env, uvm_test

from lockstep.gen.sched.harness import QUIET, quiet_shape
from lockstep.models import sched
from lockstep.models.sched.params import FabricParams

from ..agents.timed import LoadPort, TapSampler
from ..context import TbContext, start
from ..coverage import Covergroup

__all__ = ["SchedTest", "dont_care_ports", "make_program", "random_max_len", "PROGRAMS"]

#: Directed programs by option name.
PROGRAMS = {
    "fig2a": lambda p, rng: sched.fig2a_program(p),
    "schedule_c": lambda p, rng: sched.schedule_c_program(p),
    "periodic6": lambda p, rng: sched.periodic6_program(p)[0],
    "periodic6_expanded": lambda p, rng: sched.periodic6_program(p)[1],
}


#: Opcodes whose PORT field nothing reads (docs/sched.md section 3: only SEND, RECV, TAP,
#: FWD, CHECK and the MAC opcodes' psum bits read it): a legal program may hold any value
#: there.
_NO_PORT = frozenset({sched.OPS["NOP"], sched.OPS["HALT"], *sched.ALU_OPS})


def dont_care_ports(rng: np.random.Generator, program: sched.Program) -> sched.Program:
    """``program`` with the PORT field of about half of its portless entries (NOP, HALT,
    VADD, VMUL, DOT) set to 1..3: a decoder that reads it there (a port op's check
    applied to every opcode: sched_ring@3aa5 m055, PORT 3 illegal on any opcode but
    RECV) raises OPCODE where the executor runs the entry. The program is kept only if
    the linter accepts it and the executor runs it event for event as the original (the
    issued words aside); else the original comes back."""
    p = program.params
    scheds = []
    for words in program.schedules:
        out = []
        for w in words:
            e = sched.decode(w, p)
            if e.op in _NO_PORT and rng.random() < 0.5:
                e = e.replace(port=int(rng.integers(1, 4)))
            out.append(sched.encode(e, p))
        scheds.append(out)
    new = dataclasses.replace(program, schedules=scheds)

    def events(prog: sched.Program) -> list:
        return [e[:3] if e[1] == "issue" else e for e in sched.execute(prog).trace]

    if sched.lint(new) or events(new) != events(program):
        return program
    return new


def _shows(program: sched.Program, dut: FabricParams) -> bool:
    """Does the golden model run ``program`` differently on a fabric built with ``dut``
    (a negative testbench's DUT parameters)? A program it cannot run there shows it too."""
    try:
        other = sched.execute(dataclasses.replace(program, params=dut))
    except ValueError:
        return True
    return other.trace != sched.execute(program).trace


def make_program(name: str, params: FabricParams, seed: int,
                 dut: FabricParams | None = None) -> tuple[sched.Program, Any]:
    """The program a test runs, and what it expects of the errors (``None`` for a legal
    program; for ``illegal:<RULE>`` the expectation of :func:`sched.illegal_variant`;
    ``illegal:*`` takes pair ``i = seed % R`` of :func:`sched.illegal_round` (every rule
    the fabric can break, once per kind of place: ``R`` pairs), so consecutive seeds take
    every rule in every kind in turn; the seed, or for ``illegal:*`` (round ``k = seed //
    R``) tile ``(i + k) % nt`` at the pair's kind, is the stratum of
    :func:`sched.illegal_variant`: consecutive seeds sweep every tile and kind of change);
    ``random`` takes transfers of up to 12 elements, or of up to a whole memory region
    when ``seed % 3 == 2``; with ``dut`` (a negative testbench: the DUT is built with other
    parameters than ``params``), the next random program of the seed that the golden model
    runs differently on ``dut``, so the negative run cannot pass by a program's luck (a ring
    with 2-cycle hops under a program whose every RECV has slack).

    Raises:
        ValueError: an unknown program name, or a legal program the linter rejects.
    """
    rng = np.random.default_rng(seed)
    expected = None
    if name in PROGRAMS:
        program = PROGRAMS[name](params, rng)
    elif name == "random":
        for _ in range(64):
            program = sched.random_program(rng, params, max_len=random_max_len(params, seed))
            if dut is None or dut == params or _shows(program, dut):
                break
        else:
            raise ValueError(f"no random program in 64 draws shows the DUT's parameters {dut} apart from {params}")
        program = dont_care_ports(rng, program)
    elif name == "random_wrap":
        # about half of the wrap-crowded programs have a transfer in flight across the
        # wrap; draw until one does (deterministic for a seed), so every run covers it
        for _ in range(64):
            program = sched.random_program(rng, params, wrap=True)
            if _crosses_wrap(sched.execute(program).trace, params):
                break
        else:
            raise ValueError("no random program with a transfer across the wrap in 64 draws")
    elif name.startswith("illegal:"):
        rule = name.split(":", 1)[1]
        # consecutive seeds (a throughput run's episodes: seed s + e) sweep the places to
        # break the rule (every tile, every kind of change); illegal:* takes every rule in turn,
        # each once per kind of place (illegal_round: OPCODE's 8 kinds, BUSY's 14, ...), the
        # k-th round one tile further on (pair i of round k in tile (i + k) mod nt): every
        # round spreads the rules over the tiles, and nt rounds put every rule in every tile
        # in every kind (with the round's tile and kind, one round of 11 on Icarus broke every
        # rule in one tile the same way, and tile 2's fetch with its checks of a PERIODIC body
        # dropped survived: sched_ring@3aa5 m024; with kind k = the round, a 2 x 2 mesh saw
        # OPCODE's and BUSY's first four kinds only, and tile 1's check of RECV on the bus and
        # FWD source 3, and tile 2's BUSY on VMUL and DOT, survived: sched_mesh@675a m050, m070)
        stratum = seed
        if rule == "*":  # every rule the fabric can break, each once per kind of place
            rule, stratum = sched.illegal_step(params, seed)
        try:
            program, expected = _draw(rng, params, lambda prog: sched.illegal_variant(rng, prog, rule, stratum),
                                      f"to break {rule}")
        except ValueError as exc:   # a stratum no program offers (RECV on the bus in a tile that never reads it)
            if "offered a place" not in str(exc):
                raise
            program, expected = _draw(rng, params, lambda prog: sched.illegal_variant(rng, prog, rule),
                                      f"to break {rule}")
    elif name.startswith("jitter:"):
        mode = name.split(":", 1)[1]
        if mode not in ("within", "beyond"):
            raise ValueError(f"unknown program {name!r}: use jitter:within or jitter:beyond")
        program, expected = _draw(rng, params, lambda prog: _jitter(rng, prog, mode == "within"),
                                  f"to delay a SEND {mode} its slack")
    elif name.split(":")[0] in ("gemm", "layer"):
        program, expected = _compiled(name, params, rng)
        return program, expected
    elif name.startswith("comm:"):
        scenario = name.split(":", 1)[1]
        if scenario not in sched.COMM_SCENARIOS:
            raise ValueError(f"unknown program {name!r}: use comm:<{'|'.join(sched.COMM_SCENARIOS)}>")
        program = sched.comm_program(params, mode="pad" if scenario == "pad" else "suspend")
        ext = sched.ext_schedule(int(rng.integers(1 << 31)), program, scenario)
        program.meta["ext"] = ext
        expected = CommStimulus(scenario, ext)
        problems = sched.lint(program)
        if problems:
            raise ValueError(f"program {name!r} is not legal:\n  " + "\n  ".join(map(str, problems[:10])))
        return program, expected
    elif name.startswith("asm:"):
        path = Path(name.split(":", 1)[1])
        if not path.is_absolute():
            path = Path(__file__).resolve().parents[2] / path
        program = sched.assemble(path.read_text(), params)
    else:
        raise ValueError(f"unknown program {name!r}: use {sorted(PROGRAMS)}, random, illegal:<RULE>|*, "
                         f"jitter:within|beyond or asm:<path>")
    if expected is None:
        problems = sched.lint(program)
        if problems:
            raise ValueError(f"program {name!r} is not legal:\n  " + "\n  ".join(map(str, problems[:10])))
    return program, expected


def random_max_len(params: FabricParams, seed: int) -> int:
    """The longest transfer of seed ``seed``'s random program: 12 elements, or every third
    seed (a third of a throughput run's programs) a whole memory region (the planner's
    limit: 64 words at aw = 8); with 12 at most, the LEN field's upper bits never left 0."""
    return params.words if seed % 3 == 2 else 12


def _draw(rng: np.random.Generator, params: FabricParams, vary: Any, what: str) -> tuple[sched.Program, Any]:
    """``vary(random_program)`` for the first random program that offers a place for it
    (OVERFLOW needs a RECV to delay, a jitter a SEND with room, ...): draw until one
    does (deterministic for a seed)."""
    for _ in range(64):
        try:
            return vary(sched.random_program(rng, params))
        except ValueError as exc:
            if "offers no place" not in str(exc):
                raise
    raise ValueError(f"no random program offered a place {what} in 64 draws")


def _jitter(rng: np.random.Generator, original: sched.Program, within: bool) -> tuple[sched.Program, Any]:
    """:func:`sched.jitter_variant` at the edge of the slack (``j = s``, the largest delay
    that must pass, or ``j = s + 1``, the smallest that must fail; other delays are the
    model tests' job); within the slack, the variant's ``meta`` also keeps
    the unjittered program's final memories (``original_mems``, from the executor), which
    the scoreboard holds the DUT's memories to."""
    program, expected = sched.jitter_variant(rng, original, within, edge=True)
    if within:
        program.meta["original_mems"] = sched.execute(original).mems
    return program, expected


async def _drive_ext(dut: Any, ext: dict[int, int]) -> None:
    """Drive the external input from the first run cycle (cycle 0 starts now): the word
    of cycle ``c`` is on ``ext_valid``/``ext_data`` from the edge that starts ``c``."""
    for c in range(max(ext) + 1):
        v = ext.get(c)
        dut.ext_valid.value = int(v is not None)
        dut.ext_data.value = v or 0
        await RisingEdge(dut.clk)
    dut.ext_valid.value = 0
    dut.ext_data.value = 0


def _crosses_wrap(trace: list[tuple], params: FabricParams) -> bool:
    """Does a link carry consecutive words across count ``2**cw - 1 -> 0``?"""
    words = {(e[0], e[2], e[3]) for e in trace if e[1] == "word"}
    return any(c % (1 << params.cw) == 0 and (c - 1, t, q) in words for c, t, q in words)


class CommStimulus(NamedTuple):
    """A legal communication-interface program (``comm:<scenario>``) and its external
    words; the scenario says what the golden run must show (suspend, pad, UNDERFLOW
    beyond the delay, FIFO_OVF), and the RTL is held to the golden run."""

    scenario: str
    ext: list


def comm_effects(golden: Any, stim: CommStimulus, p: FabricParams) -> list[str]:
    """The golden run did what the scenario is for (the stimulus builder's promise)."""
    sc = stim.scenario
    first = golden.first_error()
    want_err = {"late": sched.ERR_UNDERFLOW, "overflow": sched.ERR_FIFO_OVF}.get(sc)
    problems = []
    if want_err is None and not golden.ok:
        problems.append(f"comm:{sc}: the golden run raised errors {golden.err}")
    if want_err is not None and (first is None or first[2:] != (sched.COMM_TILE, want_err)):
        problems.append(f"comm:{sc}: the first golden error is {first}, expected {_bits(want_err)} on tile 0")
    if bool(golden.events("suspend")) != (sc in ("suspend", "late")):
        problems.append(f"comm:{sc}: {len(golden.events('suspend'))} suspension(s) in the golden run")
    if bool(golden.events("pad")) != (sc == "pad"):
        problems.append(f"comm:{sc}: {len(golden.events('pad'))} pad word(s) in the golden run")
    return problems


class Compiled(NamedTuple):
    """A compiled GEMM or layer: where its results are, and what they must be (the
    independent numpy reference, not the executor)."""

    layout: Any
    reference: np.ndarray


def _compiled(name: str, params: FabricParams, rng: np.random.Generator) -> tuple[sched.Program, Compiled]:
    """``gemm:<N>`` (C = A @ B, B stationary over every tile) or ``layer:<N>``
    (y = ReLU(W x + b) >> vpu_shift) with random signed operands small enough that the
    test also means something in floating point terms."""
    kind, _, n = name.partition(":")
    k, tiles = params.k, params.nt
    n = int(n or 64)
    lim = 1 << min(params.dw - 2, 6)
    if kind == "gemm":
        a = rng.integers(-lim, lim, (n, k * tiles))
        b = rng.integers(-lim, lim, (k * tiles, k))
        program, layout = sched.compile_gemm(a, b, params)
        return program, Compiled(layout, sched.reference_gemm(a, b, params))
    w = rng.integers(-lim, lim, (k, k * tiles))
    x = rng.integers(-lim, lim, (k * tiles, n))
    bias = rng.integers(-lim * lim, lim * lim, k)
    program, layout = sched.compile_layer(w, x, bias, params)
    return program, Compiled(layout, sched.reference_layer(w, x, bias, params))


def _lanes_mask(valid: int, n: int, width: int) -> int:
    """The bits of the lanes ``j < n`` of ``width`` bits each whose ``valid`` bit is set."""
    lane = (1 << width) - 1
    return sum(lane << (j * width) for j in range(n) if valid >> j & 1)


def quiet_messages(k: int, p: FabricParams, what: int, idle: int) -> list[str]:
    """The violations in cycle ``k`` of quiet output ``QUIET[what]``: ``idle`` is its data
    tap with every valid lane's bits cleared (nonzero where an idle lane holds a value)."""
    lanes, per, w = quiet_shape(p, what)
    out = []
    for j in range(lanes):
        value = (idle >> (j * w)) & ((1 << w) - 1)
        if value:
            where = "the bus" if what == 3 else f"tile {j // per} {QUIET[what][0]} {j % per}"
            out.append(f"cycle {k}: {where} holds {value:#x} while idle (an idle output carries 0)")
    return out


def quiet_problems(k: int, p: FabricParams, v: dict[str, int]) -> list[str]:
    """The quiet-output contract (docs/sched.md section 9) in cycle ``k``: a link's,
    the bus's and a write port's data (and a write port's address) are 0 in every cycle
    their valid is low. ``v``: the taps' values in the cycle."""
    out = []
    for what, (_, data, valid) in enumerate(QUIET):
        lanes, _, w = quiet_shape(p, what)
        out += quiet_messages(k, p, what, v[data] & ~_lanes_mask(v[valid], lanes, w))
    return out


#: Quiet-output violations a run reports one by one; the rest are not listed.
QUIET_SHOWN = 5


class TraceMonitor(uvm_component):
    """Rebuilds the event trace from the taps, cycle by cycle (see the module docstring)."""

    def build_phase(self) -> None:
        self.events: list[tuple] = []
        self.problems: list[str] = []
        self.quiet = 0   # quiet-output violations seen (the first QUIET_SHOWN are problems)

    def start_sampling(self, params: FabricParams) -> TapSampler:
        dut = cocotb.top
        self.p = params
        self.prev_err = [0] * params.nt
        self.prev_bus_err = 0
        names = ["count", "tile_count", "issue", "issue_entry", "out_valid", "out_data", "wr_en", "wr_addr",
                 "wr_data", "err", "bus_valid", "bus_data", "bus_err"]
        if params.k:
            names += ["psum_valid", "psum_data"]
        if params.comm:
            names += ["susp", "pad"]
        self.sources = params.sources  # write sources: ports 0..2, ALU, MAC lanes, FIFO RECV
        return TapSampler(dut.clk, {n: getattr(dut, n) for n in names}, self._cycle)

    def _cycle(self, k: int, v: dict[str, int]) -> None:
        p = self.p
        mask = (1 << p.cw) - 1
        if v["count"] != k & mask:
            self.problems.append(f"cycle {k}: chip count is {v['count']}, expected {k & mask} (+1 per cycle, no stall)")
        for t in range(p.nt):
            local = (v["tile_count"] >> (t * p.cw)) & mask
            if local != v["count"]:
                self.problems.append(f"cycle {k}: tile {t} local count {local} != chip count {v['count']}")
        for q in quiet_problems(k, p, v):
            self.quiet += 1
            if self.quiet <= QUIET_SHOWN:
                self.problems.append(q)
        ev = self.events
        if v["issue"]:
            for t in range(p.nt):
                if v["issue"] >> t & 1:
                    ev.append((k, "issue", t, (v["issue_entry"] >> (t * p.ew)) & ((1 << p.ew) - 1)))
        if v["out_valid"]:
            dmask = (1 << p.dw) - 1
            for t in range(p.nt):
                for port in range(p.PORTS):
                    j = t * p.PORTS + port
                    if v["out_valid"] >> j & 1:
                        ev.append((k, "word", t, port, (v["out_data"] >> (j * p.dw)) & dmask))
        if v["bus_valid"]:
            ev.append((k, "bus", -1, v["bus_data"]))
        if p.k and v["psum_valid"]:
            amask, lanes = (1 << p.accw) - 1, p.k * p.accw
            for t in range(p.nt):
                if v["psum_valid"] >> t & 1:
                    word = v["psum_data"] >> (t * lanes)
                    ev.append((k, "psum", t, tuple((word >> (c * p.accw)) & amask for c in range(p.k))))
        if p.comm and (v["susp"] or v["pad"]):
            t0 = sched.COMM_TILE
            if v["susp"]:   # D is the A field of the CHECK tile 0 issues in this cycle
                ent = sched.decode((v["issue_entry"] >> (t0 * p.ew)) & ((1 << p.ew) - 1), p)
                ev.append((k, "suspend", -1, ent.a))
            if v["pad"]:    # the pad word is what the FIFO's write source writes
                j = t0 * self.sources + 4 + p.k
                ev.append((k, "pad", t0, (v["wr_data"] >> (j * p.dw)) & ((1 << p.dw) - 1)))
        if v["wr_en"]:
            ns = self.sources
            for t in range(p.nt):
                for src in range(ns):
                    j = t * ns + src
                    if v["wr_en"] >> j & 1:
                        ev.append((k, "write", t, src, (v["wr_addr"] >> (j * p.aw)) & ((1 << p.aw) - 1),
                                   (v["wr_data"] >> (j * p.dw)) & ((1 << p.dw) - 1)))
        # a bit raised in cycle c is registered at the end of c: it shows in cycle c+1
        emask = (1 << p.err_bits) - 1
        for t in range(p.nt):
            e = (v["err"] >> (t * p.err_bits)) & emask
            new = e & ~self.prev_err[t]
            if new:
                ev.append((k - 1, "err", t, new))
            self.prev_err[t] = e
        new = v["bus_err"] & ~self.prev_bus_err
        if new:
            ev.append((k - 1, "err", -1, new))
        self.prev_bus_err = v["bus_err"]


class ProgramLoader(uvm_component):
    """Loads the program through the load port, then raises ``run`` (the driver)."""

    async def load(self, program: sched.Program) -> int:
        """Write every tile's schedule and data image; returns the cycles it took."""
        port = LoadPort(cocotb.top)
        port.idle()
        p = program.params
        for t in range(p.nt):
            await port.write(0, program.schedule_image(t), tile=t)
            await port.write(1, [int(x) for x in program.data_image(t)], tile=t)
        return port.words


class TraceScoreboard(uvm_component):
    """Compares the DUT's trace and final state with the executor's (check phase)."""

    def check(self, ctx: TbContext, program: sched.Program, golden: Any, got: list[tuple],
              final: dict[str, Any], monitor_problems: list[str], expected: Any) -> list[str]:
        errors = list(monitor_problems[:10])
        want = sorted(golden.trace)
        have = sorted(got)
        if want != have:
            errors += _diff(want, have)
        p = program.params
        original = (program.meta or {}).get("original_mems")
        for t in range(p.nt):
            errors += _mem_diff(f"tile {t}: final memory differs", final["mems"][t], golden.mems[t], "golden", p)
            if original is not None:   # jitter within the slack moves words, never data
                errors += _mem_diff(f"jitter within the slack ({program.meta['detail']}): tile {t}: final memory "
                                    f"differs from the unjittered program's", final["mems"][t], original[t],
                                    "unjittered", p)
            if final["err"][t] != golden.err[t]:
                errors.append(f"tile {t}: err = {_bits(final['err'][t])}, golden {_bits(golden.err[t])}")
            elif final["err_cnt"][t] != (golden.err_cnt[t] if golden.err[t] else 0):
                errors.append(f"tile {t}: first error at count {final['err_cnt'][t]}, golden {golden.err_cnt[t]}"
                              if golden.err[t] else f"tile {t}: err_cnt = {final['err_cnt'][t]} without an error "
                                                    f"(rst clears it: 0)")
            if final["halted"][t] != bool(golden.halted[t]):
                errors.append(f"tile {t}: halted = {final['halted'][t]}, golden {bool(golden.halted[t])}")
        if final["bus_err"] != golden.bus_err:
            errors.append(f"bus_err = {_bits(final['bus_err'])}, golden {_bits(golden.bus_err)}")
        elif final["bus_err_cnt"] != (golden.bus_err_cnt if golden.bus_err else 0):
            errors.append(f"bus collision at count {final['bus_err_cnt']}, golden {golden.bus_err_cnt}" if golden.bus_err
                          else f"bus_err_cnt = {final['bus_err_cnt']} without a collision (rst clears it: 0)")
        legal = expected is None or isinstance(expected, Compiled)
        if isinstance(expected, CommStimulus):
            errors += comm_effects(golden, expected, p)
        elif legal and (any(golden.err) or golden.bus_err):
            errors.append(f"the golden run of a legal program raised errors {golden.err}: model or linter bug")
        if isinstance(expected, Compiled):
            got_res = expected.layout.result(final["mems"])
            if not np.array_equal(got_res, expected.reference):
                bad = np.argwhere(got_res != expected.reference)
                errors.append(f"{expected.layout.kind}: {len(bad)} result(s) differ from the numpy reference; "
                              f"first at {tuple(bad[0])}: {int(got_res[tuple(bad[0])])} vs "
                              f"{int(expected.reference[tuple(bad[0])])}")
        elif expected is not None and not isinstance(expected, CommStimulus):
            errors += _expected_errors(golden, expected)
        return errors


def _mem_diff(what: str, got: np.ndarray, want: Any, name: str, p: FabricParams) -> list[str]:
    """A failure message when the memory image ``got`` differs from ``want``."""
    want = np.asarray(want) & ((1 << p.dw) - 1)
    bad = np.nonzero(got != want)[0]
    if not len(bad):
        return []
    a = int(bad[0])
    return [f"{what} at {len(bad)} address(es); first mem[{a}] = {int(got[a])}, {name} {int(want[a])}"]


def _bits(err: int) -> str:
    names = [n for i, n in enumerate(FabricParams.ERR_NAMES) if err >> i & 1]
    return f"{err:#x} ({', '.join(names) or 'none'})"


def _diff(want: list[tuple], have: list[tuple]) -> list[str]:
    """Readable description of two differing traces: counts per kind, first divergence."""
    out = []
    kinds = sorted({e[1] for e in want} | {e[1] for e in have})
    for kind in kinds:
        w = [e for e in want if e[1] == kind]
        h = [e for e in have if e[1] == kind]
        if w != h:
            missing = sorted(set(w) - set(h))
            extra = sorted(set(h) - set(w))
            out.append(f"{kind} events: {len(h)} seen, {len(w)} expected; "
                       f"first missing {missing[:3]}; first unexpected {extra[:3]}")
    return out


def _expected_errors(golden: Any, expected: Any) -> list[str]:
    """The golden run of an illegal program must raise exactly what the variant predicted
    (from the program's structure, not from running it): bits, tile and cycle of the
    first error event. The RTL is then held to the golden run by the trace comparison."""
    first = next((e for e in sorted(golden.trace) if e[1] == "err"), None)
    if first is None:
        return [f"illegal program ({expected.rule}: {expected.detail}): the golden run raised no error"]
    if (first[0], first[2], first[3]) != (expected.cycle, expected.tile, expected.bits):
        return [f"illegal program ({expected.rule}): first golden error {_bits(first[3])} on tile {first[2]} "
                f"at cycle {first[0]}; predicted {_bits(expected.bits)} on tile {expected.tile} "
                f"at cycle {expected.cycle}"]
    return []


def _slack_bin(slack: int) -> str:
    return str(slack) if slack <= 1 else ("2..3" if slack <= 3 else ">=4")


def _jitter_bin(j: int, slack: int) -> str:
    return {slack: "j=s", slack + 1: "j=s+1"}.get(j, "other")


def _period_bin(period: int) -> str:
    return {1: "1", 255: "255"}.get(period, "2..6" if period <= 6 else "7..254")


def fwd_routes(p: FabricParams) -> list[str]:
    """The ``fwd_route`` bins: ``t<tile>:<source>-><output>`` for every tile and every
    pair of ports (bus to bus included: a relay that re-broadcasts)."""
    ports = sched.PORT_NAMES[:3] if p.bus else sched.PORT_NAMES[:2]
    return [f"t{t}:{s}->{q}" for t in range(p.nt) for s in ports for q in ports]


def fwd_route(tile: int, ent: Any) -> str:
    """An issued entry's ``fwd_route`` bin (``-`` unless it is a FWD)."""
    if ent.op != sched.OPS["FWD"]:
        return "-"
    return f"t{tile}:{sched.PORT_NAMES[ent.b & 3]}->{sched.PORT_NAMES[ent.port]}"


class SchedCoverage(uvm_component):
    """Cover points of a run (issue 4's list). Issues, words and errors are sampled from
    the DUT's observed trace; buffer slack and occupancy from the golden run, which the
    scoreboard has proven identical event by event."""

    def build_phase(self) -> None:
        self.issues = Covergroup("sched.issue")
        p = FabricParams.from_dict(ConfigDB().get(None, "", "PARAMS"))
        ops = ([n for n in sched.OPS if n != "PERIODIC"] + (list(FabricParams.MAC_OPCODES) if p.k else [])
               + (list(FabricParams.COMM_OPCODES) if p.comm else []))
        self.issues.point("op", lambda s: s["op"], ops)
        self.issues.point("op_port", lambda s: s["op_port"],
                          [f"{o}@{p}" for o in ("SEND", "TAP", "FWD") for p in sched.PORT_NAMES[:3]]
                          + ["RECV@prev", "RECV@next", "-"] + (["RECV@fifo"] if p.comm else []))
        self.issues.point("back_to_back", lambda s: s["b2b"], [False, True])
        # every tile's every FWD route (source port -> output port): each tile has its own
        # output units, each with its own source multiplexer
        self.issues.point("fwd_route", lambda s: s["fwd"], fwd_routes(p) + ["-"])
        self.transfer = Covergroup("sched.transfer")
        self.transfer.point("recv_slack", lambda s: s, ["0", "1", "2..3", ">=4"])
        self.run_cg = Covergroup("sched.run")
        self.run_cg.point("buffer_full", lambda s: s["full"], [False, True])
        self.run_cg.point("wrap_in_transfer", lambda s: s["wrap"], [False, True])
        self.periodic = Covergroup("sched.periodic")
        self.periodic.point("period", lambda s: s, ["1", "2..6", "7..254", "255"])
        self.errors = Covergroup("sched.error")
        never = ("LATE_SCHED", "DESYNC") + (() if p.comm else ("FIFO_OVF",))
        self.errors.point("bit", lambda s: s, ["none", *(n for n in FabricParams.ERR_NAMES if n not in never)])
        self.groups = [self.issues, self.transfer, self.run_cg, self.periodic, self.errors]
        self.jitter: Covergroup | None = None
        if p.comm:
            self.comm = Covergroup("sched.comm")
            self.comm.point("suspended", lambda s: s["susp"], [False, True])
            self.comm.point("pad", lambda s: s["pad"], ["start-up zero", "hold-last"])
            self.comm.point("fifo_full", lambda s: s["full"], [False, True])
            self.groups.append(self.comm)

    def sample(self, program: sched.Program, trace: list[tuple], golden: Any, err: list[int], bus_err: int) -> None:
        p = program.params
        last: dict[int, int] = {}
        for e in sorted(trace):
            if e[1] != "issue":
                continue
            ent = sched.decode(e[3], p)
            name = sched.OP_NAMES.get(ent.op, f"OP{ent.op}")
            port = sched.PORT_NAMES[ent.port] if ent.port < len(sched.PORT_NAMES) else str(ent.port)
            self.issues.sample({"op": name, "op_port": f"{name}@{port}" if ent.op in sched.PORT_OPS else "-",
                                "b2b": last.get(e[2]) == e[0] - 1, "fwd": fwd_route(e[2], ent)})
            last[e[2]] = e[0]
        for *_, slack in golden.recv_slack:
            self.transfer.sample(_slack_bin(slack))
        full = any(occ >= p.buf_d for row in golden.max_occupancy for occ in row[:2])
        self.run_cg.sample({"full": full, "wrap": _crosses_wrap(trace, p)})
        for t in range(p.nt):
            for x in program.expanded(t):
                if x.first_in_block and not x.poison and x.header is not None:
                    self.periodic.sample(_period_bin(sched.decode(program.schedules[t][x.header], p).a))
        if p.comm:
            run = {"susp": any(e[1] == "suspend" for e in trace), "full": golden.fifo_max >= p.fifo_d, "pad": None}
            self.comm.sample(run)
            src = 4 + p.k
            pads = {e[0] for e in trace if e[1] == "pad"}
            popped = False   # a real word popped before (else a pad is the start-up zero)
            for e in sorted(trace):
                if e[1] == "write" and e[2] == sched.COMM_TILE and e[3] == src:
                    if e[0] in pads:
                        self.comm.sample({**run, "pad": "hold-last" if popped else "start-up zero"})
                    else:
                        popped = True
        moved = (program.meta or {}).get("moved")
        if moved is not None:   # a jitter program: the delay j against the receiver's slack s
            if self.jitter is None:
                self.jitter = Covergroup("sched.jitter")
                self.jitter.point("delay_vs_slack", lambda s: s, ["j=s", "j=s+1"])
                self.groups.append(self.jitter)
            self.jitter.sample(_jitter_bin(moved["j"], moved["slack"]))
        raised = [n for i, n in enumerate(FabricParams.ERR_NAMES) if any(b >> i & 1 for b in err + [bus_err])]
        for n in raised or ["none"]:
            self.errors.sample(n)


class SchedEnv(uvm_env):
    def build_phase(self) -> None:
        self.loader = ProgramLoader("loader", self)
        self.monitor = TraceMonitor("monitor", self)
        self.scoreboard = TraceScoreboard("scoreboard", self)
        self.coverage = SchedCoverage("coverage", self)


class SchedTest(uvm_test):
    """Load a program, run it, compare everything with the executor."""

    def build_phase(self) -> None:
        self.ctx = TbContext.from_env()
        self.params = FabricParams.from_dict(self.ctx.params)
        ConfigDB().set(None, "*", "PARAMS", self.ctx.params)
        self.env = SchedEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        ctx, p, dut = self.ctx, self.params, cocotb.top
        name = str(ctx.opt("program", "random"))
        self.program, self.expected = make_program(name, p, ctx.seed, FabricParams.from_dict(ctx.record["params"]))
        dut.run.value = 0
        dut.dbg_tile.value = 0
        dut.dbg_addr.value = 0
        ext = (self.program.meta or {}).get("ext")
        if p.comm:
            dut.ext_valid.value = 0
            dut.ext_data.value = 0
        await start(dut)
        load_cycles = await self.env.loader.load(self.program)
        # the golden run (until nothing more can happen) decides how long to simulate,
        # plus a margin in which nothing may happen on the DUT either
        self.golden = sched.execute(self.program, ext=ext)
        self.cycles = self.golden.cycles + 8
        sampler = self.env.monitor.start_sampling(p)
        dut.run.value = 1
        if ext:
            cocotb.start_soon(_drive_ext(dut, dict(ext)))
        await sampler.run(self.cycles)
        await RisingEdge(dut.clk)
        dut.run.value = 0
        self.final = await self._read_back()
        ctx.summary.update(program=name, cycles=self.cycles + load_cycles, run_cycles=self.cycles,
                           load_cycles=load_cycles, events=len(self.env.monitor.events))
        if isinstance(self.expected, Compiled):
            # measured on the DUT's own trace, next to the closed-form cycle model
            dut_run = SimpleNamespace(trace=sorted(self.env.monitor.events), params=p)
            ctx.summary.update(utilisation=sched.utilisation(dut_run),
                               utilisation_predicted=sched.predicted_utilisation(self.expected.layout),
                               batch=self.expected.layout.n, mac_tiles=self.expected.layout.tiles)
        self.drop_objection()

    async def _read_back(self) -> dict[str, Any]:
        dut, p = cocotb.top, self.params
        mems = []
        for t in range(p.nt):
            words = np.zeros(p.words, dtype=np.int64)
            dut.dbg_tile.value = t
            for a in range(p.words):
                dut.dbg_addr.value = a
                await Timer(1, "ns")
                words[a] = int(dut.dbg_rdata.value)
            mems.append(words)
        emask, cmask = (1 << p.err_bits) - 1, (1 << p.cw) - 1
        err, cnt, halted = int(dut.err.value), int(dut.err_cnt.value), int(dut.halted.value)
        return {
            "mems": mems,
            "err": [(err >> (t * p.err_bits)) & emask for t in range(p.nt)],
            "err_cnt": [(cnt >> (t * p.cw)) & cmask for t in range(p.nt)],
            "halted": [bool(halted >> t & 1) for t in range(p.nt)],
            "bus_err": int(dut.bus_err.value),
            "bus_err_cnt": int(dut.bus_err_cnt.value),
        }

    def check_phase(self) -> None:
        errors = self.env.scoreboard.check(self.ctx, self.program, self.golden, self.env.monitor.events,
                                           self.final, self.env.monitor.problems, self.expected)
        util, want = self.ctx.summary.get("utilisation"), self.ctx.summary.get("utilisation_predicted")
        if util is not None and abs(util - want) > 1e-12:
            errors.append(f"MAC utilisation {util:.4f} measured on the DUT trace, cycle model predicts {want:.4f}")
        self.ctx.summary.update(blocks=sum(e[1] == "issue" for e in self.golden.trace),
                                mismatches=len(errors), errors=errors[:20])
        self.ctx.write_summary()
        for e in errors:
            self.logger.error(e)
        assert not errors, f"{len(errors)} scoreboard error(s); first: {errors[0]}"

    def report_phase(self) -> None:
        cov = self.env.coverage
        cov.sample(self.program, self.env.monitor.events, self.golden, self.final["err"], self.final["bus_err"])
        sums = [g.summary() for g in cov.groups]
        hit = sum(len(s["cover_points"][n]) - sum(1 for h in s["cover_points"][n].values() if h == 0)
                  for s in sums for n in s["cover_points"])
        total = sum(len(b) for s in sums for b in s["cover_points"].values())
        self.ctx.summary.update(functional_coverage=round(100.0 * hit / total, 2) if total else None,
                                holes=[h for s in sums for h in s["holes"]])
        self.ctx.summary["coverage_file"] = str(cov.groups[0].export(self.ctx.results))
        self.ctx.write_summary()
