"""The host family's command front end generator (gen/host/front*.py): lint of several
configurations (defaults, two kernels, the smallest and largest queues, the widest
memory and dimensions), the port list against the record and the Verilog, widths from
HostParams, refusals, determinism. The behaviour is checked by the pyuvm testbenches
(verif/host, ``host_front_*``) against the golden models of models/host*.py."""

from __future__ import annotations

import functools
import json

import pytest

from lockstep.gen.host import emit_front, front_ports
from lockstep.models.gemm.params import GemmParams
from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError
from lockstep.verif.runner import check_rtl_ports

#: Configurations the front end must lint clean for.
LINT_SETS = {
    "defaults": HostParams(),
    "two_kernels": HostParams(n_kernels=2),
    "depth2": HostParams(depth=2),
    "depth32_two": HostParams(depth=32, n_kernels=2),
    "widest": HostParams(mem_aw=24, m_max=256, k_max=256, n_max=64),
    "narrow_counters_two": HostParams(n_kernels=2, depth=4, cnt_bits=8),
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``generated(key)``: the front end for a LINT_SETS key, emitted on first use."""
    root = tmp_path_factory.mktemp("host_front")

    @functools.cache
    def get(key: str):
        return emit_front(LINT_SETS[key], root / key)

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_lint_clean(key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    assert lint(generated(key).verilog) == [], key


@pytest.mark.parametrize("key", LINT_SETS)
def test_record_matches_the_verilog(key, generated):
    fmt, em = LINT_SETS[key], generated(key)
    rec = json.loads(em.sidecar.read_text())
    assert rec["module"] == "host_front" and rec["family"] == "host" and rec["params_type"] == "HostParams"
    assert rec["ports"] == front_ports(fmt)
    check_rtl_ports(em.verilog, "host_front", rec)
    assert HostParams.from_dict(rec["params"]) == fmt


@pytest.mark.parametrize("key", LINT_SETS)
def test_widths_come_from_host_params(key):
    p = LINT_SETS[key]
    ports = front_ports(p)
    k = p.n_kernels
    for name in ("cmd_valid", "cmd_ready", "k_busy", "cpl_valid", "cpl_ready", "k_stall"):
        assert ports[name]["width"] == k, name
    assert ports["cpl_status"]["width"] == 4 * k and ports["cpl_cycles"]["width"] == p.cnt_bits * k
    for name in ("cmd_act", "cmd_wgt", "cmd_out"):
        assert ports[name]["width"] == p.aww == p.mem_aw - 2, name
    for name in ("cmd_m", "cmd_n", "cmd_k", "cmd_mult"):
        assert ports[name]["width"] == 16, name
    assert ports["cmd_shift"]["width"] == 5
    assert ports["csr_addr"]["width"] == ports["csr_raddr"]["width"] == 12
    assert ports["csr_wdata"]["width"] == ports["csr_rdata"]["width"] == 32
    assert {n for n, q in ports.items() if q["dir"] == "out"} == {
        "csr_rdata", "cmd_valid", "cmd_m", "cmd_n", "cmd_k", "cmd_act", "cmd_wgt", "cmd_out", "cmd_es16", "cmd_relu",
        "cmd_pool", "cmd_mult", "cmd_shift", "k_abort", "cpl_ready", "irq", "busy", "cq_nonempty", "sq_full"}


def test_refuses_other_records(tmp_path):
    with pytest.raises(ParamError, match="HostParams"):
        emit_front(GemmParams(), tmp_path)
    with pytest.raises(ParamError, match="HostParams"):
        front_ports(GemmParams())
    with pytest.raises(ParamError, match="HostParams"):
        emit_front(HostParams().to_dict(), tmp_path)


def test_refuses_keyword_names(tmp_path):
    with pytest.raises(ParamError, match="keyword"):
        emit_front(HostParams(), tmp_path, name="module")


def test_deterministic(tmp_path, generated):
    again = emit_front(LINT_SETS["two_kernels"], tmp_path)
    assert again.verilog.read_bytes() == generated("two_kernels").verilog.read_bytes()
