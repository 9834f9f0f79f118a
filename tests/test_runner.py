"""Runner and registry behaviour that needs no simulation."""

import json

import pytest

from lockstep.gen.bfp import emit_quantizer
from lockstep.models.formats import BfpFormat
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
