"""Runner and registry behaviour that needs no simulation."""

import json

import pytest

from lockstep.gen.bfp import emit_quantizer
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.registry import TESTBENCHES, UnknownTestbench, get
from lockstep.verif.runner import check_rtl_ports, main


def test_unknown_testbench_lists_known_ones():
    with pytest.raises(UnknownTestbench) as exc:
        get("no_such_tb")
    for name in TESTBENCHES:
        assert name in str(exc.value)


def test_cli_unknown_test_exits_2(capsys):
    assert main(["no_such_tb"]) == 2
    assert "known testbenches" in capsys.readouterr().err


def test_rtl_port_check(tmp_path):
    """RTL= must match the block's module name, port directions and widths."""
    small = emit_quantizer(BfpFormat(w=8, e=5, n=4), tmp_path / "small")
    big = emit_quantizer(BfpFormat(w=8, e=5, n=8), tmp_path / "big")
    record = json.loads(small.sidecar.read_text())
    check_rtl_ports(small.verilog, "bfp_quantize", record)  # itself: fine
    with pytest.raises(ValueError, match=r"in_data: expected input \[128\], found input \[256\]"):
        check_rtl_ports(big.verilog, "bfp_quantize", record)
    other = tmp_path / "other.v"
    other.write_text("module something(input clk); endmodule\n")
    with pytest.raises(ValueError, match="no module named 'bfp_quantize'"):
        check_rtl_ports(other, "bfp_quantize", record)


def _row(tb, sim, seed, ok, cycles):
    return {"testbench": tb, "sim": sim, "seed": seed, "ok": ok, "cycles": cycles, "wall": 1.0,
            "coverage": 100.0, "results": "/tmp/x", "repro": f"make sim TEST={tb} SIM={sim} SEED={seed}"}


def test_parity_flags_disagreeing_simulators():
    """Same testbench and seed: a different verdict or cycle count is a parity failure."""
    from lockstep.verif.regress import parity_problems

    agree = [_row("a", "icarus", 1, True, 100), _row("a", "verilator", 1, True, 100)]
    assert parity_problems(agree) == []
    cycles = [_row("a", "icarus", 1, True, 100), _row("a", "verilator", 1, True, 101)]
    assert len(parity_problems(cycles)) == 1 and "seed=1" in parity_problems(cycles)[0]
    verdict = [_row("b", "icarus", 2, True, 50), _row("b", "verilator", 2, False, 50)]
    assert "b seed=2" in parity_problems(verdict)[0]
    assert parity_problems([_row("c", "icarus", 3, False, 9)]) == []  # one simulator: nothing to compare
    # a throughput testbench runs longer on Verilator (its by_sim options): only verdicts compare
    assert TESTBENCHES["gemm_tile_random_tp"].opts["by_sim"]
    tp = [_row("gemm_tile_random_tp", "icarus", 4, True, 29_671), _row("gemm_tile_random_tp", "verilator", 4, True, 178_935)]
    assert parity_problems(tp) == []
    tp[1]["ok"] = False
    assert "gemm_tile_random_tp seed=4" in parity_problems(tp)[0]


def test_regress_html_lists_every_run_and_parity():
    from lockstep.verif.report import render_html

    rows = [_row("a", "icarus", 1, True, 100), _row("a", "verilator", 1, False, 100)]
    page = render_html(rows, ["parity: a seed=1 differs"], "t", 3.0)
    assert page.count("<tr class=") == 2 and "FAIL" in page and "parity: a seed=1 differs" in page
    assert "make sim TEST=a SIM=verilator SEED=1" in page


def test_simulator_subsets_are_full_tier_only():
    """A quick-tier testbench runs on every simulator; a Verilator-only one is refused by
    the runner on Icarus with the reason, and only full-tier measurements may be one."""
    import dataclasses

    from lockstep.verif.registry import SIMULATORS, _register
    from lockstep.verif.runner import run

    only = [tb for tb in TESTBENCHES.values() if tuple(tb.sims) != SIMULATORS]
    assert only and all(tb.tier == "full" for tb in only)
    with pytest.raises(ValueError, match="runs on verilator only"):
        run(only[0].name, "icarus")
    quick = next(tb for tb in TESTBENCHES.values() if tb.tier == "quick")
    with pytest.raises(ValueError, match="runs on every simulator"):
        _register(dataclasses.replace(quick, name="x_quick_one_sim", sims=("verilator",)))
    with pytest.raises(ValueError, match="non-empty subset"):
        _register(dataclasses.replace(quick, name="x_bad_sim", tier="full", sims=("modelsim",)))


def test_runner_options_take_json_or_the_plain_string():
    from lockstep.verif.runner import parse_opts
    assert parse_opts(["jobs=3", "program=fig2a", "scenario=tasks", 'tag="x"', "x=[1, 2]", "on=true"]) == {
        "jobs": 3, "program": "fig2a", "scenario": "tasks", "tag": "x", "x": [1, 2], "on": True}
    for bad in ("jobs", "=3"):
        with pytest.raises(ValueError, match="expected KEY=VALUE"):
            parse_opts([bad])
