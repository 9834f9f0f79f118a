"""Streamed throughput runs of the episode families (fabric, GEMM tile, STU, host top):
a ``cycles`` option makes the run build its programs, jobs or episodes as the harness
takes them, repeat the scenario past its count, stop once the harness has run that many
cycles, and still check every episode (``lockstep.verif.episodes``)."""

from __future__ import annotations

import re

import pytest

from lockstep.verif.episodes import STREAM_MAX, stream_cycles
from lockstep.verif.registry import TESTBENCHES, TP_FULL_CYCLES
from lockstep.verif.runner import run, run_opts

#: (throughput testbench, the summary's episode count, options: one small repetition,
#: a target a few repetitions long). The STU runs the mixed scenario, whose jobs keep
#: the accumulator (emit = 0) across the repetitions' seams.
STREAMED = [
    ("sched_random_tp", "programs", {"programs": 2, "txns": 30, "cycles": 30_000}),
    ("gemm_tile_random_tp", "jobs", {"jobs": 3, "cycles": 60_000}),
    ("sparse_stu_random_tp", "jobs", {"scenario": "mixed", "jobs": 40, "cycles": 30_000}),
    ("host_top_stream_tp", "episodes", {"tasks": 12, "episodes": 1, "cycles": 100_000}),
]


def test_stream_cycles_option():
    """No option or 0: a fixed-count run; a number: the target; negative: refused."""
    assert stream_cycles({}) == stream_cycles({"cycles": 0}) == 0
    assert stream_cycles({"cycles": "2000"}) == 2000
    with pytest.raises(ValueError, match="cycles=-1"):
        stream_cycles({"cycles": -1})
    assert STREAM_MAX < 1 << 31   # the harnesses' episode counters are 32 bits


def test_full_tier_streams_on_verilator_only():
    """Every full-tier throughput twin of an episode family (but a negative one or a
    directed program) streams 10 M cycles on Verilator and keeps its fixed count on
    Icarus; no quick-tier testbench streams."""
    streamed = 0
    for tb in TESTBENCHES.values():
        if tb.mode != "throughput" or tb.family == "bfp":
            continue
        v, i = (stream_cycles(run_opts(tb, sim)) for sim in ("verilator", "icarus"))
        assert i == 0, tb.name
        if tb.tier == "quick" or tb.expect_fail:
            assert v == 0, tb.name
        elif v:
            assert v == TP_FULL_CYCLES, tb.name
            streamed += 1
        else:   # a directed sched program: the same every seed
            assert tb.family == "sched" and tb.opts.get("programs") == 1, tb.name
    assert streamed >= 40


@pytest.mark.sim
@pytest.mark.parametrize("name,noun,opts", STREAMED, ids=[s[0] for s in STREAMED])
def test_streamed_run_checks_past_its_count_and_stops_at_its_cycles(name, noun, opts):
    """The run passes, checked more episodes than one repetition holds (so the
    scenario repeated, its state chained), ran at least ``cycles`` harness cycles and
    stopped soon after (at most two episodes past the target, whose files were written
    ahead; the targets span at least ten episodes), logging its progress."""
    res = run(name, "verilator", seed=101, opts=opts)   # a seed no other test runs (its own results folder)
    s = res.summary
    assert res.ok, (res.line(), s.get("errors"))
    count = s[noun]
    rep = opts[noun]
    assert count > 2 * rep, f"{count} {noun}: the scenario did not repeat"
    assert s["harness_cycles"] >= opts["cycles"]
    assert count >= 10 and s["harness_cycles"] < 1.5 * opts["cycles"], (count, s["harness_cycles"])
    log = (res.results / "sim.log").read_text()
    done = re.findall(r"streamed run: ([\d,]+) of ([\d,]+) harness cycles, (\d+) \w+ finished", log)
    assert done and done[-1][1] == f"{opts['cycles']:,}" and int(done[-1][0].replace(",", "")) >= opts["cycles"]
