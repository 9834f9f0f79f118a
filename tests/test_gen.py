"""Generator unit tests: determinism, refusals, records, and lint of every configuration."""

import json

import pytest

from lockstep.gen.bfp import QUANT_FLAGS, emit_quantizer
from lockstep.gen.common import check_name
from lockstep.gen.lint import lint_file
from lockstep.models import bfp
from lockstep.models.formats import BfpFormat, ParamError
from lockstep.verif.registry import TESTBENCHES


def test_deterministic(tmp_path):
    """Same parameters, byte-identical Verilog and record (make gen relies on it)."""
    fmt = BfpFormat(w=8, e=5, n=4, rounding="rne")
    a = emit_quantizer(fmt, tmp_path / "a")
    b = emit_quantizer(fmt, tmp_path / "b")
    assert a.verilog.read_bytes() == b.verilog.read_bytes()
    assert a.sidecar.read_bytes() == b.sidecar.read_bytes()
    assert "Date" not in a.verilog.read_text()


def test_deterministic_across_processes(tmp_path):
    """Byte-identical output from processes with different string-hash seeds.

    MyHDL iterates sets of signal names; Python randomises their order per process.
    """
    import os
    import subprocess
    import sys

    code = (
        "import sys; from lockstep.gen.bfp import emit_quantizer; "
        "from lockstep.models.formats import BfpFormat; "
        "emit_quantizer(BfpFormat(w=8, e=5, n=8), sys.argv[1])"
    )
    outs = []
    for hs in ("1", "2", "3"):
        out = tmp_path / hs
        subprocess.run([sys.executable, "-c", code, str(out)], check=True,
                       env={**os.environ, "PYTHONHASHSEED": hs})
        outs.append((out / "bfp_quantize.v").read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_record_describes_the_module(tmp_path):
    """The JSON record carries the parameters, the port widths and the timing."""
    fmt = BfpFormat(w=6, e=4, n=8)
    em = emit_quantizer(fmt, tmp_path)
    rec = json.loads(em.sidecar.read_text())
    assert BfpFormat.from_dict(rec["params"]) == fmt
    assert rec["ports"]["in_data"]["width"] == 32 * 8
    assert rec["ports"]["out_data"]["width"] == 6 * 8
    assert rec["ports"]["out_exp"]["width"] == 4
    assert rec["timing"]["latency"] >= 1
    text = em.verilog.read_text()
    assert "input [255:0] in_data;" in text and "output [47:0] out_data;" in text


def test_flag_order_matches_model():
    """The RTL's flag bits are the golden model's flag bits."""
    assert list(QUANT_FLAGS) == list(bfp.FLAG_NAMES)
    assert [bfp.FLAG_NAMES[n] for n in QUANT_FLAGS] == [1 << i for i in range(len(QUANT_FLAGS))]


@pytest.mark.parametrize("name", ["logic", "bit", "int", "module", "always_ff", "Wire"])
def test_keyword_names_refused(name, tmp_path):
    """(System)Verilog keywords are refused as names (MyHDL checks only VHDL's)."""
    with pytest.raises(ParamError, match="keyword"):
        check_name(name)
    with pytest.raises(ParamError, match="keyword"):
        emit_quantizer(BfpFormat(n=2), tmp_path, name=name)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"w": 2}, "w"),
        ({"w": 25}, "w"),
        ({"e": 1}, "e"),
        ({"n": 0}, "n"),
        ({"rounding": "floor"}, "rounding"),
        ({"overflow": "clip"}, "overflow"),
        ({"w": 16, "n": 16, "acc": 35}, "acc"),
        ({"stat_policy": "ignore"}, "stat_policy"),
    ],
)
def test_bad_params_name_the_field(kwargs, field):
    """A parameter that cannot work is refused with a message naming it."""
    with pytest.raises(ParamError, match=rf"BfpFormat\.{field}="):
        BfpFormat(**kwargs)


def test_generator_rejects_wrong_type(tmp_path):
    with pytest.raises(ParamError, match="BfpFormat"):
        emit_quantizer({"w": 8}, tmp_path)


@pytest.mark.parametrize("name", sorted({tb.name for tb in TESTBENCHES.values()}))
def test_registered_configs_lint_clean(name, tmp_path):
    """verilator -Wall and iverilog -g2012 accept every registered DUT, no waivers."""
    import importlib

    tb = TESTBENCHES[name]
    mod, func = tb.generator.split(":")
    em = getattr(importlib.import_module(mod), func)(tb.params, tmp_path, name=tb.toplevel)
    assert lint_file(em.verilog) == []
