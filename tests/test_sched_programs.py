"""Every sched ring testbench can build its program for any seed (no simulator): the
directed ones lint clean, the random ones are legal, the illegal ones come with a
prediction the golden run confirms. A seed that cannot produce a program would make a
regression fail for a reason unrelated to the hardware."""

import dataclasses

import pytest

from lockstep.models import sched
from lockstep.verif.registry import TESTBENCHES
import numpy as np

from lockstep.models.sched import programs as sched_gen
from lockstep.models.sched.params import FabricParams
from lockstep.verif.sched.env import CommStimulus, Compiled, comm_effects, dont_care_ports, make_program

RING = sorted(n for n, tb in TESTBENCHES.items()
              if tb.family == "sched" and tb.toplevel in ("sched_ring", "sched_mesh"))


@pytest.mark.parametrize("name", RING)
def test_program_for_every_seed(name, seed):
    tb = TESTBENCHES[name]
    params = tb.tb_params or tb.params
    # five seeds each (two of the MAC-array programs, which compile a layer): the fuzzed
    # seeds of tests/test_fuzz_sched.py go wider
    for k in range(5 if "gemm" not in name and "layer" not in name else 2):
        program, expected = make_program(tb.opts["program"], params, seed + 7919 * k)
        run = sched.execute(program, ext=(program.meta or {}).get("ext"))
        if isinstance(expected, CommStimulus):  # legal program; the stimulus does what it says
            assert sched.lint(program) == [] and comm_effects(run, expected, params) == [], name
        elif expected is None or isinstance(expected, Compiled):
            assert sched.lint(program) == [] and run.ok, name
            if expected is not None:  # the executor computes what numpy does
                assert np.array_equal(expected.layout.result(run), expected.reference), name
            if "original_mems" in (program.meta or {}):  # jitter within the slack keeps the data
                assert all(np.array_equal(a, b) for a, b in zip(run.mems, program.meta["original_mems"])), name
        else:
            first = next(e for e in run.trace if e[1] == "err")
            assert (first[0], first[2], first[3]) == (expected.cycle, expected.tile, expected.bits), name
            assert expected.rule in {v.rule for v in sched.lint(program)}, name  # the linter rejects it



# ---- jitter: one ring SEND delayed within / beyond its receiver's slack ----------------
JITTER_PARAMS = [
    FabricParams(),
    FabricParams(nt=4, hop_lat=2, buf_d=4),
    FabricParams(cw=8, nt=2, buf_d=2, hop_lat=2, l_alu=1),
    FabricParams(nt=5, aw=4, sd=16, buf_d=3, l_alu=4, hop_lat=3),
    FabricParams(bus=False, aw=6, dw=8, l_alu=3),
    FabricParams(k=4),
    FabricParams(nt=2, hop_lat=8, buf_d=1, l_alu=4),
]


def _jittered(seed, within, draws=50):
    """(original, variant) for up to ``draws`` random programs that offer a place; every
    other draw asks for the edge of the slack (j = s within, j = s + 1 beyond)."""
    for i in range(draws):
        p = JITTER_PARAMS[i % len(JITTER_PARAMS)]
        original = sched.random_program(seed + i, p, wrap=p.cw == 8 and i % 3 == 0)
        edge = i % 2 == 1
        try:
            variant, expected = sched.jitter_variant(seed + 7 * i, original, within, edge=edge)
        except ValueError as exc:
            assert "offers no place" in str(exc)
            continue
        m = variant.meta["moved"]
        if edge:
            assert m["j"] == m["slack"] + (0 if within else 1), m
        yield original, variant, expected


def _sender_words(run, m, shift=0):
    """The word events of the moved SEND (from its original issue cycle), shifted."""
    return [(c + shift, *e) for c, *e in run.trace
            if e[0] == "word" and e[1] == m["tile"] and e[2] == m["port"] and m["t_from"] < c <= m["t_from"] + m["n"]]


def test_jitter_within_slack_is_legal_and_keeps_the_data(seed):
    done = 0
    for original, variant, expected in _jittered(seed, True):
        m = variant.meta["moved"]
        assert expected is None and 1 <= m["j"] <= m["slack"], m
        assert sched.lint(variant) == [], m
        base, run = sched.execute(original), sched.execute(variant)
        assert run.ok, m
        assert all(np.array_equal(a, b) for a, b in zip(run.mems, base.mems)), m
        # the receiver's executor-measured slack shrinks by exactly j
        assert (m["recv_tile"], m["recv_u"], m["slack"]) in {(t, u, s) for t, _, u, s in base.recv_slack}, m
        assert (m["recv_tile"], m["recv_u"], m["slack"] - m["j"]) in {(t, u, s) for t, _, u, s in run.recv_slack}, m
        # the SEND's words moved by exactly j (and only they: the same number of events)
        words = _sender_words(base, m)
        assert len(words) == m["n"] and words[0] not in set(run.trace), m
        assert set(_sender_words(base, m, m["j"])) <= set(run.trace), m
        assert len(run.trace) == len(base.trace), m
        done += 1
    assert done >= 20, done


def test_jitter_beyond_slack_underflows_where_predicted(seed):
    done = 0
    for original, variant, expected in _jittered(seed, False):
        m = variant.meta["moved"]
        assert m["slack"] < m["j"] <= m["slack"] + 1 + sched_gen.JITTER_EXTRA, m
        assert sched.lint(original) == [], m
        run = sched.execute(variant)
        first = run.first_error()
        assert first is not None, m
        assert (first[0], first[2], first[3]) == (expected.cycle, expected.tile, expected.bits), (first, expected)
        assert expected.bits == sched.ERR_UNDERFLOW and expected.tile == m["recv_tile"], expected
        assert run.err_cnt[expected.tile] == expected.count == m["recv_u"] % (1 << variant.params.cw)
        assert "RECV_EARLY" in {v.rule for v in sched.lint(variant)}, m
        done += 1
    assert done >= 30, done


def test_jitter_variant_errors():
    with pytest.raises(ValueError, match="plan"):
        sched.jitter_variant(1, sched.schedule_c_program(FabricParams()), True)
    no_ring = sched.random_program(1, FabricParams(), kinds={"alu": 1, "bus": 1})
    for within in (True, False):
        with pytest.raises(ValueError, match="offers no place"):
            sched.jitter_variant(1, no_ring, within)


def test_random_programs_carry_ports_on_portless_entries():
    """A random program's portless entries (NOP, HALT, VADD, VMUL, DOT) carry PORT values
    1..3 that change nothing: the program stays legal and runs as without them; an
    entry whose PORT the executor reads (a SEND) is never touched."""
    p = TESTBENCHES["sched_random_comm_tp"].params
    portless = {sched.OPS["NOP"], sched.OPS["HALT"], *sched.ALU_OPS}
    filled = 0
    for seed in range(12):
        plain = sched.random_program(np.random.default_rng(seed), p)
        prog = dont_care_ports(np.random.default_rng(seed), plain)
        assert sched.lint(prog) == []
        for a, b in zip(plain.schedules, prog.schedules):
            for wa, wb in zip(a, b):
                ea, eb = sched.decode(wa, p), sched.decode(wb, p)
                assert ea.replace(port=eb.port) == eb and (ea.port == eb.port or ea.op in portless)
                filled += ea.port != eb.port
        assert [e for e in sched.execute(prog).trace if e[1] != "issue"] == \
               [e for e in sched.execute(plain).trace if e[1] != "issue"]
    assert filled >= 20
    # a program whose PORT change would show is given back unchanged
    wrong = dataclasses.replace(plain, schedules=[[sched.encode(sched.decode(w, p).replace(unit=1), p)
                                                   for w in s] for s in plain.schedules])
    assert dont_care_ports(np.random.default_rng(0), wrong) is wrong


def test_a_negative_run_draws_a_program_that_shows_the_dut_apart():
    """Seed 1902810587's first random program has slack on every RECV: the golden model
    runs it identically with 1- and 2-cycle hops, so sched_mutant (a 2-cycle ring checked
    as a 1-cycle one) passed with it. Given the DUT's parameters, make_program draws on
    until the model tells them apart; without them (or with equal ones) the program is the
    seed's first."""
    p, dut, seed = FabricParams(), FabricParams(hop_lat=2), 1902810587
    first, _ = make_program("random", p, seed)
    same, _ = make_program("random", p, seed, p)
    shown, _ = make_program("random", p, seed, dut)
    assert sched.execute(first).trace == sched.execute(dataclasses.replace(first, params=dut)).trace
    assert same.schedules == first.schedules
    assert sched.execute(shown).trace != sched.execute(dataclasses.replace(shown, params=dut)).trace


def test_an_opcode_variant_is_no_legal_entry_of_the_interface_tile():
    """On a fabric with the communication interface, PORT 3 on tile 0's RECV is its FIFO
    (legal), so illegal_variant must not offer it as an OPCODE change: seed 631196381 of
    sched_illegal_all_comm_tp predicted OPCODE where the golden model (rightly) ran the
    RECV and underflowed the empty FIFO. Every OPCODE variant of the comm fabric's seeds
    raises OPCODE first, where predicted."""
    tb = TESTBENCHES["sched_illegal_all_comm_tp"]
    seen = 0
    for seed in (631196381, *range(1, 120)):
        program, expected = make_program(tb.opts["program"], tb.params, seed)
        if expected.rule != "OPCODE":
            continue
        seen += 1
        errors = sched.execute(program).errors
        first = min(errors, key=lambda e: e.cycle)
        assert (first.cycle, first.tile, first.bit) == (expected.cycle, expected.tile, expected.bits), (seed, expected)
    assert seen >= 10


@pytest.mark.parametrize("params", [FabricParams(), FabricParams(nt=4, rows=2), FabricParams(bus=False),
                                    FabricParams(k=2, nt=4, rows=2)], ids=["ring", "mesh", "nobus", "mesh_k2"])
def test_an_illegal_sweep_breaks_every_rule_in_every_tile_in_every_kind(params):
    """nt rounds of illegal_round, from any first program, put every rule the fabric can
    break in every tile in every kind of place (the strata of illegal_variant): a
    classifier term of one tile (BUSY on a DOT, OPCODE's FWD source 3) is tried."""
    n = len(sched.illegal_round(params)) * params.nt
    for first in (0, 17):
        seen = set()
        for s in range(first, first + n):
            rule, stratum = sched.illegal_step(params, s)
            seen.add((rule, stratum % params.nt, stratum // params.nt))
        want = {(rule, t, j) for rule in sched.ILLEGAL_RULES if params.bus or rule != "COLLISION"
                for t in range(params.nt) for j in range(len(sched.illegal_kinds(rule, params)))}
        assert seen == want
