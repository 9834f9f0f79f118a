"""The host family's kernel, memory arbiter, device memory and engine generators
(gen/host/kernel.py, mem.py, engine.py): lint of the engine for the brief's
configurations (defaults, two kernels, the shortest memory, the largest sizes) and of each
block alone, the port lists against the records and the Verilog (docs/host.md section 11),
widths from HostParams, refusals, determinism. The behaviour is checked by the pyuvm
testbenches (verif/host, ``host_engine_*``) against the golden models of models/host*.py."""

from __future__ import annotations

import functools
import json

import pytest

from lockstep.gen.host import (
    arb_ports,
    dev_mem_ports,
    emit_dev_mem,
    emit_engine,
    emit_kernel,
    emit_mem_arb,
    engine_ports,
    kernel_ports,
)
from lockstep.models.gemm.params import GemmParams
from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError
from lockstep.verif.runner import check_rtl_ports

#: Configurations the engine must lint clean for.
LINT_SETS = {
    "defaults": HostParams(),
    "two_kernels": HostParams(n_kernels=2),
    "lat1_q2": HostParams(mem_lat=1, mem_q=2),
    "largest": HostParams(mem_aw=24, m_max=256, k_max=256, n_max=64, mem_q=32, mem_lat=8),
    "smallest": HostParams(depth=2, m_max=1, k_max=4, n_max=4, mem_aw=8, mem_lat=3, mem_q=3),
    "odd_sizes": HostParams(n_kernels=2, m_max=7, k_max=12, n_max=20, mem_aw=10, mem_lat=5, mem_q=5),
    "narrow_counters_two": HostParams(n_kernels=2, m_max=8, k_max=16, n_max=8, mem_aw=12, cnt_bits=9),
}
#: The blocks alone (each lints on its own too).
BLOCKS = {"host_kernel": (emit_kernel, kernel_ports), "dev_mem": (emit_dev_mem, dev_mem_ports),
          "mem_arb": (emit_mem_arb, arb_ports), "host_engine": (emit_engine, engine_ports)}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``generated(block, key)``: the block for a LINT_SETS key, emitted on first use."""
    root = tmp_path_factory.mktemp("host_engine")

    @functools.cache
    def get(blk: str, key: str):
        return BLOCKS[blk][0](LINT_SETS[key], root / key)

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_engine_lint_clean(key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    assert lint(generated("host_engine", key).verilog) == [], key


@pytest.mark.parametrize("key", ["defaults", "smallest"])
@pytest.mark.parametrize("blk", ["host_kernel", "dev_mem", "mem_arb"])
def test_block_lint_clean(blk, key, generated, lint):
    assert lint(generated(blk, key).verilog) == [], (blk, key)


@pytest.mark.parametrize("key", ["defaults", "two_kernels", "smallest"])
@pytest.mark.parametrize("blk", BLOCKS)
def test_record_matches_the_verilog(blk, key, generated):
    p, em = LINT_SETS[key], generated(blk, key)
    rec = json.loads(em.sidecar.read_text())
    assert rec["module"] == blk and rec["family"] == "host" and rec["params_type"] == "HostParams"
    assert rec["ports"] == BLOCKS[blk][1](p)
    check_rtl_ports(em.verilog, blk, rec)
    assert HostParams.from_dict(rec["params"]) == p


def test_kernel_ports_are_section_11s_table():
    """docs/host.md section 11, front end <-> kernel (``abort`` is named ``flush``: a C++
    reserved word for verilator -Wall)."""
    p = HostParams()
    kp = kernel_ports(p)
    want = {"cmd_valid": ("in", 1), "cmd_ready": ("out", 1), "cmd_m": ("in", 16), "cmd_n": ("in", 16),
            "cmd_k": ("in", 16), "cmd_act": ("in", p.aww), "cmd_wgt": ("in", p.aww), "cmd_out": ("in", p.aww),
            "cmd_es16": ("in", 1), "cmd_relu": ("in", 1), "cmd_pool": ("in", 1), "cmd_mult": ("in", 16),
            "cmd_shift": ("in", 5), "k_abort": ("in", 1), "busy": ("out", 1), "cpl_valid": ("out", 1),
            "cpl_ready": ("in", 1), "cpl_status": ("out", 4), "cpl_cycles": ("out", 32), "req_valid": ("out", 1),
            "req_ready": ("in", 1), "req_we": ("out", 1), "req_addr": ("out", p.aww), "req_wdata": ("out", 32),
            "rsp_valid": ("in", 1), "rsp_rdata": ("in", 32), "rsp_err": ("in", 1), "clk": ("in", 1),
            "rst": ("in", 1)}
    assert {n: (r["dir"], r["width"]) for n, r in kp.items()} == want
    assert kernel_ports(HostParams(cnt_bits=8))["cpl_cycles"]["width"] == 8   # cnt_bits: 32 by default


@pytest.mark.parametrize("nk, cb", [(1, 32), (2, 32), (2, 8)])
def test_engine_ports_are_flat_per_kernel(nk, cb):
    p = HostParams(n_kernels=nk, mem_aw=20, cnt_bits=cb)
    ep = engine_ports(p)
    for n in ("cmd_valid", "cmd_ready", "k_busy", "cpl_valid", "cpl_ready", "k_stall"):
        assert ep[n]["width"] == nk, n
    assert ep["cpl_status"]["width"] == 4 * nk and ep["cpl_cycles"]["width"] == cb * nk
    for n in ("cmd_act", "cmd_wgt", "cmd_out", "dma_addr", "dma_raddr"):
        assert ep[n]["width"] == p.aww == 18, n
    assert ep["tp_addr"]["width"] == ep["tp_raddr"]["width"] == 3
    assert {n for n, r in ep.items() if r["dir"] == "out"} == {
        "cmd_ready", "k_busy", "cpl_valid", "cpl_status", "cpl_cycles", "rd_beat", "wr_beat", "k_stall", "dma_rdata",
        "tp_rdata"}
    assert set(dev_mem_ports(p)) - {"req_valid", "req_ready", "req_we", "req_addr", "req_wdata", "rsp_valid",
                                    "rsp_rdata", "rsp_err"} <= set(ep)


def test_arbiter_ports_mirror_the_memory_port():
    p = HostParams(n_kernels=2)
    ap, mp = arb_ports(p), dev_mem_ports(p)
    for n in ("req_valid", "req_we", "req_addr", "req_wdata", "rsp_valid", "rsp_rdata", "rsp_err", "req_ready"):
        flip = {"in": "out", "out": "in"}[mp[n]["dir"]]
        assert ap[f"k0_{n}"]["dir"] == ap[f"k1_{n}"]["dir"] == mp[n]["dir"]  # the memory, to a kernel
        assert ap[f"m_{n}"]["dir"] == flip  # a kernel, to the memory
        assert ap[f"k0_{n}"]["width"] == ap[f"m_{n}"]["width"] == mp[n]["width"]


@pytest.mark.parametrize("blk", BLOCKS)
def test_refuses_other_records(blk, tmp_path):
    with pytest.raises(ParamError, match="HostParams"):
        BLOCKS[blk][0](GemmParams(), tmp_path)


@pytest.mark.parametrize("blk", BLOCKS)
def test_refuses_keyword_names(blk, tmp_path):
    with pytest.raises(ParamError, match="keyword"):
        BLOCKS[blk][0](HostParams(), tmp_path, name="module")


def test_deterministic(tmp_path, generated):
    again = emit_engine(LINT_SETS["odd_sizes"], tmp_path)
    assert again.verilog.read_bytes() == generated("host_engine", "odd_sizes").verilog.read_bytes()
