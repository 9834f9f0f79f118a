"""The STU generator (gen/sparse/stu.py) and its unit-test top (gen/sparse/stu_top.py):
refusals, port lists against the records and the Verilog, widths from SparseParams and
against the memories the cluster will wire to it, lint of several configurations,
determinism; and the STU testbench's stimulus (verif/sparse/stu_jobs.py): the jobs each
scenario promises, with the hand-worked numbers of the patent's examples equal to the
golden model's."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from lockstep.gen.sparse import emit_stu, emit_stu_top, fm_mem_ports, stu_ports, stu_top_ports, w_mem_ports
from lockstep.gen.sparse.stu import stu_widths
from lockstep.models import sparse
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams
from lockstep.models.sparse.params import SparseParams
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import check_rtl_ports
from lockstep.verif.sparse.stu_jobs import SCENARIOS, make_jobs

#: Configurations both tops must lint clean for: the defaults, u = 2, the smallest
#: (1 x 1 maps, one lane, one entry, bool-wide ports), odd non-power-of-two sizes
#: (p = 3, depth 10, rb != cb), a wide one (16-bit operands, 64-bit accumulator, ow = 64)
#: and many lanes with two weights per round.
LINT_SETS = {
    "defaults": SparseParams(),
    "u2": SparseParams(u=2),
    "smallest": SparseParams(p=1, kmax=1, hmax=1, wmax=1, depth=1, nmax_out=1, dw=2, ww=2, accw=8, ow=2, cmax=1),
    "smallest_u2": SparseParams(p=1, kmax=1, hmax=1, wmax=1, depth=1, nmax_out=1, dw=2, ww=2, accw=8, ow=2, cmax=1,
                                u=2),
    "odd": SparseParams(p=3, kmax=2, hmax=5, wmax=7, dw=4, u=2, depth=10, nmax_out=5),
    "wide": SparseParams(dw=16, ww=16, accw=64, ow=64, cmax=4, kmax=5, nmax_out=8),
    "p16_u2": SparseParams(p=16, u=2, depth=32),
}
TOPS = {"stu": (emit_stu, stu_ports), "stu_top": (emit_stu_top, stu_top_ports)}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``generated(key)``: both tops for a LINT_SETS key, emitted on first use."""
    root = tmp_path_factory.mktemp("sparse_stu")

    @functools.cache
    def get(key: str) -> dict:
        return {name: emit(LINT_SETS[key], root / key) for name, (emit, _) in TOPS.items()}

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_lint_clean(key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    for name, em in generated(key).items():
        assert lint(em.verilog) == [], (key, name)


@pytest.mark.parametrize("key", ["defaults", "u2", "odd"])
def test_records_match_the_verilog(key, generated):
    fmt = LINT_SETS[key]
    for name, em in generated(key).items():
        rec = json.loads(em.sidecar.read_text())
        ports = TOPS[name][1](fmt)
        assert rec["module"] == name and rec["family"] == "sparse"
        assert rec["ports"] == ports
        check_rtl_ports(em.verilog, name, rec)  # every port's direction and width in the Verilog
        assert rec["timing"]["stu_pipe"] == SparseParams.STU_PIPE
        assert SparseParams.from_dict(rec["params"]) == fmt


def test_widths_come_from_sparse_params():
    for fmt in (SparseParams(), SparseParams(p=3, u=2, kmax=5, hmax=12, wmax=6, dw=6, ww=5, ow=12, nmax_out=10,
                                             cnt_bits=9)):
        ports = {n: v["width"] for n, v in stu_ports(fmt).items()}
        wd = stu_widths(fmt)
        assert ports["o_data"] == fmt.out_bits
        assert ports["rd_row"] == fmt.p * fmt.rb and ports["rd_col"] == fmt.p * fmt.cb
        assert ports["rd_val"] == fmt.p * fmt.dw and ports["rd_lane_valid"] == fmt.p
        assert ports["w_rd_a"] == fmt.u * fmt.kb and ports["w_rd_w"] == fmt.u * fmt.ww
        assert ports["err"] == len(SparseParams.STU_ERR_NAMES)
        assert ports["cfg_pool"] == (len(SparseParams.POOL_MODES) - 1).bit_length()
        assert wd.nacc == max(fmt.fh_max * fmt.fw_max, fmt.nmax_out)
        assert ports["acc_addr"] == fmt.p * (wd.nacc - 1).bit_length()
        for n in SparseParams.COUNTERS:
            assert ports[n] == fmt.cnt_bits
        assert ("fifo_occ" in ports) == (fmt.u == 2)
        if fmt.u == 2:
            assert ports["fifo_occ"] == fmt.fifo_d.bit_length()
        # the cfg ports carry the maxima and the first value beyond (CFG must see it)
        assert ports["cfg_h"] >= (fmt.hmax + 1).bit_length() and ports["cfg_w"] >= (fmt.wmax + 1).bit_length()
        assert ports["cfg_k"] >= (fmt.kmax + 1).bit_length()
        assert ports["cfg_n_out"] >= (fmt.nmax_out + 1).bit_length()
        assert ports["cfg_nnz"] >= fmt.depth.bit_length() and ports["cfg_wnz"] >= (fmt.kmax ** 2).bit_length()


@pytest.mark.parametrize("fmt", [SparseParams(), SparseParams(p=3, u=2, kmax=7, wmax=5, nmax_out=6)])
def test_read_ports_wire_to_the_memories(fmt):
    """The STU's read ports are the memories' read ports seen from the other side: same
    widths, opposite directions (the cluster connects them name for name)."""
    sp, fm, wm = stu_ports(fmt), fm_mem_ports(fmt), w_mem_ports(fmt)
    flip = {"in": "out", "out": "in"}
    pairs = [(n, fm, n) for n in ("rd_group", "rd_row", "rd_col", "rd_val", "rd_lane_valid")]
    pairs += [(f"w_{n}", wm, n) for n in ("rd_idx", "rd_a", "rd_b", "rd_w", "rd_valid")]
    pairs += [(n, wm, n) for n in ("fc_rd_row", "fc_rd_idx", "fc_rd_w")]
    for mine, mem, theirs in pairs:
        assert sp[mine]["width"] == mem[theirs]["width"], (mine, theirs)
        assert sp[mine]["dir"] == flip[mem[theirs]["dir"]], (mine, theirs)


def test_top_ports_are_the_stu_ports_without_the_memory_reads():
    for fmt in (SparseParams(), SparseParams(u=2)):
        top, sp = stu_top_ports(fmt), stu_ports(fmt)
        assert {n for n in top if n.startswith("ld_")} == {"ld_we", "ld_sel", "ld_addr", "ld_data"}
        inner = {n for n in sp if n.startswith(("rd_", "w_rd_", "fc_rd_"))}
        assert set(top) == (set(sp) - inner) | {"ld_we", "ld_sel", "ld_addr", "ld_data"}
        assert top["ld_data"]["width"] >= max(fmt.data_bits, fmt.weight_bits)


@pytest.mark.parametrize("emit", [emit_stu, emit_stu_top])
def test_refuses_other_records(emit, tmp_path):
    with pytest.raises(ParamError, match="SparseParams"):
        emit(FabricParams(), tmp_path)


@pytest.mark.parametrize("emit", [emit_stu, emit_stu_top])
def test_refuses_fc_outputs_beyond_the_col_field(emit, tmp_path):
    """An FC output index must fit the output word's COL field (cb bits)."""
    fmt = SparseParams(kmax=1, nmax_out=16)  # fw_max = 8: cb = 3, at most 8 outputs
    with pytest.raises(ParamError, match="nmax_out=16"):
        emit(fmt, tmp_path)
    assert emit(SparseParams(kmax=1, nmax_out=8), tmp_path).verilog.exists()


@pytest.mark.parametrize("emit", [emit_stu, emit_stu_top])
def test_refuses_keyword_names(emit, tmp_path):
    with pytest.raises(ParamError, match="keyword"):
        emit(SparseParams(), tmp_path, name="module")


def test_deterministic(tmp_path, generated):
    for name, (emit, _) in TOPS.items():
        again = emit(LINT_SETS["u2"], tmp_path / "again")
        assert again.verilog.read_bytes() == generated("u2")[name].verilog.read_bytes(), name


# ---------------------------------------------------------------------------------------
# the testbench's stimulus


def _jobs(scenario: str, fmt: SparseParams, seed: int = 1, count: int = 24):
    widths = {n: v["width"] for n, v in stu_top_ports(fmt).items()}
    return make_jobs(scenario, fmt, np.random.default_rng(seed), count, widths), widths


def test_hand_worked_examples_equal_the_golden_model():
    """Fig. 18/19/20 as worked out by hand in stu_jobs agree with stu_job and cycles()."""
    for scenario, fmt in (("fig18", SparseParams(p=3)), ("fig19", SparseParams(p=3, u=2)),
                          ("random", SparseParams(u=2))):
        jobs, _ = _jobs(scenario, fmt)
        directed = [j for j in jobs if j.expect]
        assert directed, scenario
        for j in directed:
            g, e = j.golden, j.expect
            assert e.get("entries", g.out_entries) == g.out_entries, j
            assert e.get("cycles", sparse.cycles(g)) == sparse.cycles(g), j
            assert e.get("rounds", g.cyc_compute) == g.cyc_compute, j
            assert e.get("n_deferred", g.n_deferred) == g.n_deferred, j
            assert e.get("fifo_max", g.fifo_max) == g.fifo_max, j
            if "lanes" in e:  # lane l carries item l of the round (slots compacted by the arbiter)
                assert [(1 << len(r)) - 1 for r in g.rounds] == e["lanes"], j


def test_scenarios_cover_what_they_promise():
    u2, _ = _jobs("random", SparseParams(u=2), count=40)
    assert sum(j.golden.n_deferred > 0 for j in u2) >= 3 and max(j.golden.fifo_max for j in u2) == 2
    wrap, _ = _jobs("wrap", SparseParams(dw=4, ww=4, hmax=4, wmax=4, cmax=1, accw=11, nmax_out=8))
    assert any(j.golden.errors & sparse.STU_ERR["ACC_OVF"] for j in wrap)
    assert all(j.cfg.emit == 0 for j in wrap if j.kind.startswith("channel0"))
    errs, _ = _jobs("errors", SparseParams())
    kinds = {j.kind for j in errs if j.refused}
    assert {"K=0", "K>kmax", "H=0", "H>hmax", "W=0", "W>wmax", "WNZ>K^2", "fc n_out=0", "fc pool",
            "fc H!=1", "fc n_out>nmax"} <= kinds
    assert any(j.poke is not None for j in errs) and any(j.reset_at is not None for j in errs)
    edges, _ = _jobs("edges", SparseParams())
    qs = {j.cfg.nnz for j in edges}
    assert {1, 3, 4, 5, 7, 8, 9} <= qs and any(j.cfg.k == 1 for j in edges)
    assert any(j.cfg.h < j.cfg.k or j.cfg.w < j.cfg.k for j in edges)
    dense, _ = _jobs("dense", SparseParams(), count=8)
    for d, s in zip(dense[::2], dense[1::2]):  # the dense job and its sparse twin agree
        assert d.cfg.dense and not s.cfg.dense and d.golden.out_entries == s.golden.out_entries


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_job_fits_the_ports_and_the_memories(scenario):
    fmt = {"fig18": SparseParams(p=3), "fig19": SparseParams(p=3, u=2)}.get(scenario, SparseParams(u=2))
    if scenario == "wrap":
        fmt = SparseParams(dw=4, ww=4, hmax=4, wmax=4, cmax=1, accw=11, nmax_out=8)
    jobs, widths = _jobs(scenario, fmt)
    for j in jobs:
        c = j.cfg
        assert len(j.data) <= fmt.depth and c.nnz == len(j.data)
        for port, v in (("cfg_k", c.k), ("cfg_h", c.h), ("cfg_w", c.w), ("cfg_nnz", c.nnz), ("cfg_wnz", c.wnz),
                        ("cfg_n_out", c.n_out), ("cfg_shift", c.shift)):
            assert 0 <= v < 1 << widths[port], (j, port, v)


#: Every registered STU testbench: its parameters and scenario (the full tier's sweep too).
STU_SETS = {n: (tb.params, tb.opts["scenario"]) for n, tb in TESTBENCHES.items()
            if tb.toplevel == "stu_top" and not tb.expect_fail}


@pytest.mark.parametrize("name", sorted(STU_SETS))
def test_registered_sets_build_jobs_that_fit(name):
    """Each registered set's scenario builds (the golden model accepts every job: values
    within dw/ww bits, indices within the map), fits the ports and the data memory; the
    patent's Fig. 20 is left out where its numbers do not fit (2-bit data)."""
    fmt, scenario = STU_SETS[name]
    for seed in (1, 2):
        jobs, widths = _jobs(scenario, fmt, seed=seed, count=16)
        for j in jobs:
            c = j.cfg
            assert len(j.data) <= fmt.depth and c.nnz == len(j.data), j
            for port, v in (("cfg_k", c.k), ("cfg_h", c.h), ("cfg_w", c.w), ("cfg_nnz", c.nnz),
                            ("cfg_wnz", c.wnz), ("cfg_n_out", c.n_out), ("cfg_shift", c.shift)):
                assert 0 <= v < 1 << widths[port], (j, port, v)


def test_fc_after_conv_offers_the_idle_scheduler_a_collision():
    """The fc scenario's directed pair: the stored weights (0, 1), (0, 0) with entries 1
    and 0 meet at output column 0, so a u = 2 unit's idle slots see a collision during the
    FC job; the golden FC job (which ignores cfg_wnz = 2) defers nothing."""
    jobs, _ = _jobs("fc", SparseParams(u=2, p=3), count=6)
    kinds = [j.kind for j in jobs]
    conv, after = jobs[kinds.index("conv-before-fc")], jobs[kinds.index("fc-after-conv")]
    assert kinds.index("fc-after-conv") == kinds.index("conv-before-fc") + 1
    assert [w[:2] for w in conv.weights] == [(0, 1), (0, 0)]
    assert after.cfg.mode == sparse.FC and after.cfg.wnz == 2 and after.cfg.nnz == 2
    assert after.golden.n_deferred == 0 and after.golden.out_entries == [(0, 0, 2)]
