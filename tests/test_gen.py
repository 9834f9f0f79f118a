"""Generator tests that hold for every unit: determinism, refusals, records, flags, lint.

Each unit appears once in :data:`UNITS`; unit-specific checks live in
``tests/test_gen_<unit>.py``.
"""

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from lockstep.gen import bfp as gbfp
from lockstep.gen.common import check_name
from lockstep.models import bfp
from lockstep.models.bfp import mx
from lockstep.models.bfp.params import BfpFormat, MxParams
from lockstep.models.record import ParamError
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import check_rtl_ports, generate_rtl, rtl_dir


@dataclass(frozen=True)
class Unit:
    """A generator under test: how to call it, a small config, its flag names."""

    emit: Callable[..., Any]
    module: str
    params: Any
    flags: tuple[str, ...]
    model_flags: dict[str, int]


UNITS = {
    "quantizer": Unit(gbfp.emit_quantizer, "bfp_quantize", BfpFormat(w=8, e=5, n=4, rounding="rne"),
                      gbfp.QUANT_FLAGS, bfp.FLAG_NAMES),
    "dot": Unit(gbfp.emit_dot, "bfp_dot", BfpFormat(w=8, e=5, n=4, rounding="rne", acc=24),
                gbfp.DOT_FLAGS, bfp.FLAG_NAMES),
    "renorm": Unit(gbfp.emit_renorm, "bfp_renorm", BfpFormat(w=8, e=5, n=4, rounding="rne"),
                   gbfp.RENORM_FLAGS, bfp.FLAG_NAMES),
    "stats": Unit(gbfp.emit_stats, "bfp_stats", BfpFormat(w=8, e=5, n=4, stat_log2_win=4),
                  gbfp.RENORM_FLAGS, bfp.FLAG_NAMES),
    "mx": Unit(gbfp.emit_mx_quantizer, "bfp_mx_quantize", MxParams("fp4_e2m1", 4), gbfp.MX_FLAGS,
               mx.MX_FLAG_NAMES),
    "to_float": Unit(gbfp.emit_to_float, "bfp_to_float", BfpFormat(w=8, e=8, n=4),
                     gbfp.TO_FLOAT_FLAGS, bfp.FFLAG_NAMES),
}


@pytest.mark.parametrize("unit", UNITS)
def test_deterministic(unit, tmp_path):
    """Same parameters, byte-identical Verilog and record (make gen relies on it)."""
    u = UNITS[unit]
    a, b = u.emit(u.params, tmp_path / "a"), u.emit(u.params, tmp_path / "b")
    assert a.verilog.read_bytes() == b.verilog.read_bytes()
    assert a.sidecar.read_bytes() == b.sidecar.read_bytes()
    assert "Date" not in a.verilog.read_text()


def test_deterministic_across_processes(tmp_path):
    """Byte-identical output from processes with different string-hash seeds.

    MyHDL iterates sets of signal names; Python randomises their order per process, so
    gen/common.py converts under a fixed hash seed.
    """
    code = (
        "import sys; from lockstep.gen.bfp import emit_quantizer; "
        "from lockstep.models.bfp import BfpFormat; "
        "emit_quantizer(BfpFormat(w=8, e=5, n=8), sys.argv[1])"
    )
    outs = []
    for hs in ("1", "2", "3"):
        out = tmp_path / hs
        subprocess.run([sys.executable, "-c", code, str(out)], check=True,
                       env={**os.environ, "PYTHONHASHSEED": hs})
        outs.append((out / "bfp_quantize.v").read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_fast_callinfo_matches_stock_myhdl(tmp_path):
    """gen/common.py replaces MyHDL's inspect.stack()-based caller lookup with a direct
    frame walk, reads each generator's source once per process and skips convert()'s
    second elaboration; every unit's Verilog must be byte-identical to stock MyHDL's."""
    code = (
        "import sys, json; from tests.test_gen import UNITS; "
        "[UNITS[u].emit(UNITS[u].params, sys.argv[1] + '/' + u) for u in UNITS]"
    )
    root = Path(__file__).resolve().parent.parent
    for flavour, stock in (("fast", "0"), ("stock", "1")):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / flavour)], check=True, cwd=root,
                       env={**os.environ, "LOCKSTEP_MYHDL_STOCK_CALLINFO": stock, "PYTHONHASHSEED": "0"})
    for unit, u in UNITS.items():
        fast = (tmp_path / "fast" / unit / f"{u.module}.v").read_bytes()
        stock = (tmp_path / "stock" / unit / f"{u.module}.v").read_bytes()
        assert fast == stock, unit


@pytest.mark.parametrize("unit", UNITS)
def test_record_matches_the_verilog(unit, tmp_path):
    """The JSON record's ports are the module's ports (directions and widths, parsed from
    the Verilog), and it carries the parameters and a latency."""
    u = UNITS[unit]
    em = u.emit(u.params, tmp_path)
    rec = json.loads(em.sidecar.read_text())
    assert type(u.params).from_dict(rec["params"]) == u.params
    assert rec["module"] == u.module and em.verilog.name == f"{u.module}.v"
    assert rec["timing"]["latency"] >= 1
    check_rtl_ports(em.verilog, u.module, rec)


def test_the_record_names_every_register_rst_resets_and_its_value():
    """The record's ``resets`` come from the MyHDL design (the always_seq blocks reset by
    the rst port), by Verilog name: every one is a ``reg`` of the module (a memory's words
    as ``name[i]``)."""
    for tb in ("sched_counter_cw8", "sched_random", "gemm_tile_random", "host_top_stream"):
        path = generate_rtl(TESTBENCHES[tb])
        rec = json.loads(path.with_suffix(".json").read_text())
        text = path.with_suffix(".v").read_text()
        regs = set(re.findall(r"^reg\s+(?:signed\s+)?(?:\[[^\]]+\]\s*)?(\w+)\s*(?:\[[^\]]+\]\s*)?;", text, re.M))
        assert rec["resets"] and {n.split("[")[0] for n in rec["resets"]} <= regs, tb
    rec = json.loads(generate_rtl(TESTBENCHES["sched_counter_cw8"]).with_suffix(".json").read_text())
    assert rec["resets"] == {"count": 0, "wrap": 0}
    rec = json.loads(generate_rtl(TESTBENCHES["sparse_stu_random"]).with_suffix(".json").read_text())
    assert {"stu0__rmw0_pv[0]", "stu0__rmw0_pv[1]"} <= set(rec["resets"])   # words of a memory reset in a loop


@pytest.mark.sim
def test_a_register_rst_leaves_alone_fails_the_test(tmp_path):
    """A reset assignment dropped from the RTL (the register keeps X on Icarus) fails a
    testbench at its first rst edge, naming the register."""
    from lockstep.verif.runner import run
    path = generate_rtl(TESTBENCHES["sched_counter_cw8"]).with_suffix(".v")
    text = path.read_text()
    assert text.count("        wrap <= 0;\n") >= 1
    bad = tmp_path / "sched_counter.v"
    bad.write_text(text.replace("        wrap <= 0;\n", "        // wrap <= 0;\n", 1))
    res = run("sched_counter_cw8", "icarus", seed=1, rtl=bad)
    assert not res.ok
    assert "wrap = " in (res.results / "sim.log").read_text() and "reset value 0" in (res.results / "sim.log").read_text()


@pytest.mark.parametrize("unit", UNITS)
def test_flag_order_matches_model(unit):
    """The RTL's flag bits are the golden model's flag bits."""
    u = UNITS[unit]
    for i, name in enumerate(u.flags):
        if name in u.model_flags:
            assert u.model_flags[name] == 1 << i, (name, i)
        else:
            assert name.startswith("unused"), f"RTL flag {name!r} at bit {i} is not a model flag"
    assert set(u.model_flags) <= set(u.flags)


@pytest.mark.parametrize("name", ["logic", "bit", "int", "module", "always_ff", "Wire"])
def test_keyword_names_refused(name, tmp_path):
    """(System)Verilog keywords are refused as names (MyHDL checks only VHDL's)."""
    with pytest.raises(ParamError, match="keyword"):
        check_name(name)
    for u in UNITS.values():
        with pytest.raises(ParamError, match="keyword"):
            u.emit(u.params, tmp_path, name=name)


@pytest.mark.parametrize("unit", UNITS)
def test_generator_rejects_wrong_type(unit, tmp_path):
    """A generator given anything but its parameter record refuses, naming the type."""
    u = UNITS[unit]
    with pytest.raises(ParamError, match=type(u.params).__name__):
        u.emit(u.params.to_dict(), tmp_path)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"w": 2}, "w"),
        ({"w": 25}, "w"),
        ({"e": 1}, "e"),
        ({"e": 11}, "e"),
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


def _one_per_design() -> list[str]:
    """The first testbench (by name) of each distinct generated design: testbenches of the
    same module and parameters share one RTL file, linted once. The designs of the quick
    tier (those `make test` simulates), all of them with ``TIER=full``; `make lint` lints
    every registered design (the full tier's alone took 166 of the 266 s this test spent
    in `make test`, generating designs no quick testbench runs)."""
    full = os.environ.get("TIER") == "full"
    first: dict[Path, str] = {}
    for name in sorted(TESTBENCHES):
        if full or TESTBENCHES[name].tier == "quick":
            first.setdefault(rtl_dir(TESTBENCHES[name]), name)
    return sorted(first.values())


@pytest.mark.parametrize("name", _one_per_design())
def test_registered_configs_lint_clean(name, lint):
    """verilator -Wall and iverilog -g2012 accept every registered DUT, no waivers.

    Lints the runner's cached RTL (generated once, shared with the simulation tests).
    """
    tb = TESTBENCHES[name]
    rtl = rtl_dir(tb)
    generate_rtl(tb, rtl)
    assert lint(rtl / f"{tb.toplevel}.v") == []


HDL = sorted((Path(__file__).resolve().parent.parent / "hdl").rglob("*.v"))


@pytest.mark.parametrize("path", HDL, ids=[p.name for p in HDL])
def test_committed_hdl_lints_clean(path, lint):
    """The committed default designs pass both linters too."""
    assert lint(path) == []


def test_shared_lint_reports_problems(tmp_path, lint):
    """The session's shared lint (tests/conftest.py) fails a bad file, and a file with the
    same bytes at another path gets the problems under its own path."""
    bad = "module bad(input a, output y);\n  wire unused_not;\n  assign y = b;\nendmodule\n"
    for sub in ("one", "two"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "bad.v").write_text(bad)
    first, second = lint(tmp_path / "one" / "bad.v"), lint(tmp_path / "two" / "bad.v")
    assert first and any(ln.startswith("verilator:") for ln in first) and any(ln.startswith("iverilog:") for ln in first)
    assert second == [ln.replace(str(tmp_path / "one"), str(tmp_path / "two")) for ln in first]
    assert all(str(tmp_path / "one") not in ln for ln in second)
