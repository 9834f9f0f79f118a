"""The GEMM tile generators (gen/gemm/agu.py, tile.py, top.py): refusals, port lists
against the records and the Verilog, widths from GemmParams, the CSR map, lint of several
configurations and determinism. The behaviour is checked by the pyuvm testbenches
(verif/gemm, ``gemm_tile_*``) against the golden models of models/gemm*.py."""

from __future__ import annotations

import functools
import json

import pytest

from lockstep.gen.gemm.agu import agu_ports, emit_agu
from lockstep.gen.gemm.tile import CNT_BASE, CSR_READ, CSR_WRITE, emit_tile, tile_ports
from lockstep.gen.gemm.top import emit_top, top_ports
from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import ParamError
from lockstep.models.sparse.params import SparseParams
from lockstep.verif.runner import check_rtl_ports

#: Configurations every block must lint clean for (the brief's list): the default tile
#: with a small memory, direct-mapped, 1- and 2-byte elements, and a tiny one.
TINY = GemmParams(sets=2, line=16, eb=2, v=8, m_max=4, z_max=2, r_hw=8, l_hw=0, mem_aw=10)
LINT_SETS = {
    "defaults": GemmParams(mem_aw=12),
    "ways1": GemmParams(ways=1, mem_aw=12),
    "eb1": GemmParams(eb=1, accw=16, mem_aw=12),
    "eb2": GemmParams(eb=2, mem_aw=12),
    "tiny": TINY,
    "tiny_v1_mp0": GemmParams(sets=2, line=8, eb=4, v=1, m_max=3, z_max=2, r_hw=7, l_hw=0, miss_pen=0, aw=12,
                              dimw=4, mem_aw=10),
}
EMITS = {"gemm_agu": (emit_agu, agu_ports), "gemm_tile": (emit_tile, tile_ports), "gemm_top": (emit_top, top_ports)}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``generated(key)``: the three blocks for a LINT_SETS key, emitted on first use."""
    root = tmp_path_factory.mktemp("gemm_tile")

    @functools.cache
    def get(key: str) -> dict:
        return {name: emit(LINT_SETS[key], root / key) for name, (emit, _) in EMITS.items()}

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_lint_clean(key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    for name, em in generated(key).items():
        assert lint(em.verilog) == [], (key, name)


@pytest.mark.parametrize("key", ["tiny", "eb1"])
def test_records_match_the_verilog(key, generated):
    fmt = LINT_SETS[key]
    for name, em in generated(key).items():
        rec = json.loads(em.sidecar.read_text())
        assert rec["module"] == name and rec["family"] == "gemm"
        assert rec["ports"] == EMITS[name][1](fmt)
        check_rtl_ports(em.verilog, name, rec)
        assert GemmParams.from_dict(rec["params"]) == fmt


def test_port_widths_come_from_gemm_params():
    for fmt in (GemmParams(), TINY, LINT_SETS["eb1"]):
        tp = {n: p["width"] for n, p in tile_ports(fmt).items()}
        ea = fmt.aw - (fmt.eb - 1).bit_length()
        assert tp["mem_rdata"] == tp["mem_wdata"] == fmt.v * fmt.ew and tp["mem_wmask"] == fmt.v
        assert tp["mem_raddr"] == tp["mem_waddr"] == ea and tp["tr_addr"] == fmt.aw
        assert tp["tr_bytes"] == (fmt.v * fmt.eb).bit_length() and tp["tr_kind"] == 3
        assert tp["csr_wdata"] == tp["csr_rdata"] == 32 and tp["csr_addr"] == tp["csr_raddr"] == 6
        top = top_ports(fmt)
        assert top["ld_addr"]["width"] == top["rb_addr"]["width"] == fmt.mem_aw
        assert top["ld_data"]["width"] == top["rb_data"]["width"] == fmt.ew
        assert not {n for n in top if n.startswith("mem_")}


def test_csr_map_is_the_contract():
    """docs/gemm.md section 9: write map 0..15, read-only 16..24, counters from 32."""
    assert list(CSR_WRITE.values()) == list(range(16)) and CSR_WRITE["SHIFT"] == 15
    assert CSR_READ["STATUS"] == 16 and CSR_READ["DET_FLAGS"] == 24
    assert CNT_BASE + len(GemmParams.COUNTERS) - 1 == 60


@pytest.mark.parametrize("emit", [emit_agu, emit_tile, emit_top])
def test_refuses_other_records(emit, tmp_path):
    with pytest.raises(ParamError, match="GemmParams"):
        emit(SparseParams(), tmp_path)


def test_top_refuses_a_memory_smaller_than_a_vector(tmp_path):
    with pytest.raises(ParamError, match="mem_aw"):
        emit_top(GemmParams(sets=2, line=16, v=32, mem_aw=4, aw=12, dimw=4), tmp_path)


def test_deterministic(tmp_path):
    a, b = emit_tile(TINY, tmp_path / "a"), emit_tile(TINY, tmp_path / "b")
    assert a.verilog.read_bytes() == b.verilog.read_bytes()
