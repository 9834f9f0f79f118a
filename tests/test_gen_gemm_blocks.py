"""The gemm family's ld_detect, kernel_select and sa_cache generators (gen/gemm/detect.py,
select.py, cache.py): lint of several configurations (defaults, direct-mapped, one set,
eb = 1, multi-line segments, a one-entry ROM), the port lists against the records and the
Verilog, widths from GemmParams, refusals, determinism. The behaviour is checked by the
pyuvm testbenches (verif/gemm, ``gemm_detect_*``, ``gemm_select_*``, ``gemm_cache_*``)
against the golden models of models/gemm*.py."""

from __future__ import annotations

import functools
import json

import pytest

from lockstep.gen.gemm import (
    cache_widths,
    detect_widths,
    emit_kernel_select,
    emit_ld_detect,
    emit_sa_cache,
    kernel_select_ports,
    ld_detect_ports,
    sa_cache_ports,
    select_widths,
)
from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import ParamError
from lockstep.models.sparse.params import SparseParams
from lockstep.verif.runner import check_rtl_ports

#: Configurations every block must lint clean for.
LINT_SETS = {
    "defaults": GemmParams(),
    "direct_mapped": GemmParams(ways=1),
    "one_set": GemmParams(sets=1, line=16, eb=2, v=8),
    "one_set_dm": GemmParams(sets=1, ways=1, line=16, eb=2, v=8),
    "eb1": GemmParams(eb=1),
    "multi_line": GemmParams(sets=16, ways=4, line=16, v=64, m_max=31, aw=20, dimw=6, mem_aw=12),
    "one_candidate": GemmParams(z_max=1, m_max=20, r_hw=32, l_hw=13, ways=3, ncores=1),
}
EMIT = {"ld_detect": emit_ld_detect, "kernel_select": emit_kernel_select, "sa_cache": emit_sa_cache}
PORTS = {"ld_detect": ld_detect_ports, "kernel_select": kernel_select_ports, "sa_cache": sa_cache_ports}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``generated(block, key)``: the block for a LINT_SETS key, emitted on first use."""
    root = tmp_path_factory.mktemp("gemm_blocks")

    @functools.cache
    def get(blk: str, key: str):
        return EMIT[blk](LINT_SETS[key], root / key)

    return get


@pytest.mark.parametrize("key", LINT_SETS)
@pytest.mark.parametrize("blk", EMIT)
def test_lint_clean(blk, key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    assert lint(generated(blk, key).verilog) == [], (blk, key)


@pytest.mark.parametrize("key", ["defaults", "one_set_dm", "multi_line"])
@pytest.mark.parametrize("blk", EMIT)
def test_record_matches_the_verilog(blk, key, generated):
    fmt, em = LINT_SETS[key], generated(blk, key)
    rec = json.loads(em.sidecar.read_text())
    assert rec["module"] == blk and rec["family"] == "gemm" and rec["params_type"] == "GemmParams"
    assert rec["ports"] == PORTS[blk](fmt)
    check_rtl_ports(em.verilog, blk, rec)
    assert GemmParams.from_dict(rec["params"]) == fmt


def test_widths_come_from_gemm_params():
    f = GemmParams()
    dp, sp, cp = ld_detect_ports(f), kernel_select_ports(f), sa_cache_ports(f)
    assert dp["base"]["width"] == f.aw and dp["ld"]["width"] == f.aw and dp["m"]["width"] == 5  # m_max = 30
    assert dp["keep"]["width"] == 5 and dp["worst"]["width"] == 6  # 0..30, 0..60 (two lines a row)
    assert dp["period"]["width"] == 7  # 1..64
    assert detect_widths(f).nl == 2
    assert sp["n"]["width"] == f.dimw and sp["lda"] == {**dp["ld"], "doc": sp["lda"]["doc"]}
    assert sp["z"]["width"] == 4 and sp["prog"]["width"] == 2
    assert sp["worst"]["width"] == dp["worst"]["width"] and sp["keep_all"]["width"] == dp["keep"]["width"]
    assert select_widths(f).ncand == len(f.candidates) == 4
    assert 1 << sp["sel_cycles"]["width"] > f.m_max * 2 + 4 + 1
    assert cp["lk_addr"]["width"] == f.aw and cp["lk_kind"]["width"] == 3
    for name in ("cnt_lookups", "cnt_hits", "cnt_misses"):
        assert cp[name]["width"] == len(GemmParams.KINDS) * 32   # cnt_bits: 32 by default
    assert cp["n_evict"]["width"] == f.cnt_bits == 32
    narrow = sa_cache_ports(GemmParams(cnt_bits=9))
    assert narrow["cnt_hits"]["width"] == 6 * 9 and narrow["n_evict"]["width"] == 9
    cw = cache_widths(f)
    assert cw.tb == f.tag_bits == 20 and cw.agb == 3 and cw.eb == 8 * 24
    assert cache_widths(GemmParams(ways=1)).agb == 0


@pytest.mark.parametrize("blk", EMIT)
def test_refuses_other_records(blk, tmp_path):
    with pytest.raises(ParamError, match="GemmParams"):
        EMIT[blk](SparseParams(), tmp_path)


@pytest.mark.parametrize("blk", EMIT)
def test_refuses_keyword_names(blk, tmp_path):
    with pytest.raises(ParamError, match="keyword"):
        EMIT[blk](GemmParams(), tmp_path, name="module")


@pytest.mark.parametrize("blk", EMIT)
def test_deterministic(blk, tmp_path, generated):
    again = EMIT[blk](LINT_SETS["multi_line"], tmp_path)
    assert again.verilog.read_bytes() == generated(blk, "multi_line").verilog.read_bytes()
