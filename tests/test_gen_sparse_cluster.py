"""The cluster generator (gen/sparse/cluster.py): refusals, the port list against the
record and the Verilog, widths from SparseParams (the STU's and the memories' ports,
packed per unit), lint of several configurations (one unit to eight, u = 2, odd sizes),
determinism; and the cluster testbench's stimulus (verif/sparse/cluster_jobs.py): each
scenario has what it promises, every cell fits a memory unit, and the golden units'
results combine to numpy's whole-map reference."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from lockstep.gen.sparse import cluster_ports, emit_cluster, fm_mem_ports, stu_ports, w_mem_ports
from lockstep.gen.sparse.cluster import CL_ERR_NAMES, unit_bits
from lockstep.models import sparse
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams
from lockstep.models.sparse.params import SparseParams
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import check_rtl_ports
from lockstep.verif.sparse.cluster_jobs import make_jobs

#: Configurations the cluster must lint clean for: the defaults (m = 4), one unit (no
#: switch; bool-wide packed ports), two units of STU 1400, three units with p = 3 (a
#: wr_unit that can name a unit beyond the cluster), eight small units.
LINT_SETS = {
    "defaults": SparseParams(),
    "m1_smallest": SparseParams(m=1, p=1, kmax=1, hmax=1, wmax=1, depth=1, nmax_out=1, dw=2, ww=2, accw=8, ow=2,
                                cmax=1),
    "m2_u2": SparseParams(m=2, u=2),
    "m3_odd": SparseParams(m=3, p=3, kmax=2, hmax=5, wmax=7, dw=4, u=2, depth=10, nmax_out=5),
    "m8_small": SparseParams(m=8, p=2, kmax=2, hmax=3, wmax=3, depth=9, nmax_out=4),
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``generated(key)``: the cluster for a LINT_SETS key, emitted on first use."""
    root = tmp_path_factory.mktemp("sparse_cluster")

    @functools.cache
    def get(key: str):
        return emit_cluster(LINT_SETS[key], root / key)

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_lint_clean(key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    assert lint(generated(key).verilog) == [], key


@pytest.mark.parametrize("key", ["defaults", "m1_smallest", "m3_odd"])
def test_record_matches_the_verilog(key, generated):
    fmt, em = LINT_SETS[key], generated(key)
    rec = json.loads(em.sidecar.read_text())
    assert rec["module"] == "stc_cluster" and rec["family"] == "sparse"
    assert rec["ports"] == cluster_ports(fmt)
    check_rtl_ports(em.verilog, "stc_cluster", rec)  # every port's direction and width in the Verilog
    assert rec["timing"]["unit"]["stu_pipe"] == SparseParams.STU_PIPE
    assert SparseParams.from_dict(rec["params"]) == fmt


@pytest.mark.parametrize("fmt", [SparseParams(), SparseParams(m=3, p=3, u=2, kmax=5, hmax=12, wmax=6, ow=12)])
def test_widths_are_the_units_packed(fmt):
    """Per-unit ports are m copies of the STU's (or memory's) port; the write ports are
    the memories' own."""
    cp, sp, fp, wp = cluster_ports(fmt), stu_ports(fmt), fm_mem_ports(fmt), w_mem_ports(fmt)
    m = fmt.m
    for name in ("cyc_compute", "cyc_drain", "n_rounds", "n_mults", "n_deferred", "nnz_out", "o_data"):
        assert cp[name]["width"] == m * sp[name]["width"] and cp[name]["dir"] == "out", name
    assert cp["unit_err"]["width"] == m * sp["err"]["width"]
    assert cp["mem_err"]["width"] == m * fp["err"]["width"]
    assert cp["unit_desc"]["width"] == m * fp["rd_desc"]["width"]
    for name in ("o_valid", "o_ready", "route_sel", "cfg_active", "unit_active", "unit_done", "unit_busy"):
        assert cp[name]["width"] == m, name
    for name in ("wr_desc_data", "wr_data", "wr_bank", "wr_dense"):
        assert cp[name] == fp[name], name
    assert cp["w_data"]["width"] == fmt.weight_bits and cp["w_wnz"] == wp["wnz"] and cp["w_cfg_k"] == wp["cfg_k"]
    for name in ("fc_we", "fc_row", "fc_col", "fc_data"):
        assert cp[name] == wp[name], name
    for name in ("cfg_k", "cfg_mode", "cfg_n_out", "cfg_emit", "cfg_relu", "cfg_pool", "cfg_shift", "cfg_dense"):
        assert cp[name] == sp[name], name
    assert cp["wr_unit"]["width"] == unit_bits(fmt) and (1 << unit_bits(fmt)) >= m
    assert cp["err"]["width"] == len(CL_ERR_NAMES)
    # the cluster drives the STU's cfg_nnz from the memory's rd_q and cfg_wnz from w_mem's wnz
    assert sp["cfg_nnz"]["width"] == fp["rd_q"]["width"] and sp["cfg_wnz"]["width"] == wp["wnz"]["width"]


def test_refuses_other_records(tmp_path):
    with pytest.raises(ParamError, match="SparseParams"):
        emit_cluster(FabricParams(), tmp_path)


def test_refuses_fc_outputs_beyond_the_col_field(tmp_path):
    with pytest.raises(ParamError, match="nmax_out"):
        emit_cluster(SparseParams(nmax_out=17), tmp_path)  # cb = 4 bits: 16 outputs at most


def test_refuses_keyword_names(tmp_path):
    with pytest.raises(ParamError, match="keyword"):
        emit_cluster(SparseParams(m=1), tmp_path, name="module")


def test_deterministic(tmp_path, generated):
    again = emit_cluster(LINT_SETS["m3_odd"], tmp_path)
    assert again.verilog.read_bytes() == generated("m3_odd").verilog.read_bytes()


# ---- the testbench's stimulus ----------------------------------------------------------
def _cluster_sets() -> dict[str, tuple[SparseParams, str]]:
    return {n: (tb.params, tb.opts["scenario"]) for n, tb in TESTBENCHES.items()
            if tb.toplevel == "stc_cluster" and not tb.expect_fail}


def _jobs(name: str, count: int = 24):
    params, scenario = _cluster_sets()[name]
    widths = {n: v["width"] for n, v in cluster_ports(params).items()}
    return params, make_jobs(scenario, params, np.random.default_rng(5), count, widths)


@pytest.mark.parametrize("name", sorted(_cluster_sets()))
def test_every_cell_fits_a_memory_unit(name):
    params, jobs = _jobs(name)
    for job in jobs:
        for i in job.active:
            d = sparse.unpack_desc(job.descs[i])
            assert i in job.bad or (1 <= d.h <= params.hmax and 1 <= d.w <= params.wmax), job
            if i in job.corrupt:  # the defects scenario: a defect the memory unit flags
                assert job.loads[i].err, job
                continue
            assert len(job.words[i]) <= params.depth, job
            assert job.loads[i].err == (sparse.MEM_ERR["DESC"] if i in job.bad else 0), job
        if job.w_words is not None:  # ... and the weight memory (a flag, or a larger kernel's weights)
            load = sparse.load_weights(job.w_words, job.w_k or job.cfg.k, params, dense=bool(job.cfg.dense))
            assert bool(job.w_err) != (job.w_k is not None) and job.weights == load.entries, job
            if job.w_k is not None:
                assert job.w_k > job.cfg.k and any(max(a, b) >= job.cfg.k for a, b, _ in job.weights), job
        assert len(job.route_sel) == params.m


@pytest.mark.parametrize("name", sorted(_cluster_sets()))
def test_golden_units_combine_to_the_whole_map(name):
    """The model's own units, combined, equal numpy's whole-map reference: the stimulus
    is consistent, so a mismatch in simulation is the hardware's."""
    params, jobs = _jobs(name)
    for job in jobs:
        if job.refused or job.bad or job.kind not in ("overlap", "halo"):
            continue
        g = job.golden
        run = [u for u in range(params.m) if g.units[u] is not None]
        cells = [job.cells[g.source[u]] for u in run]
        K = job.Wk.shape[0]
        full = sparse.correlate_full(job.X, job.Wk)
        if job.kind == "overlap":
            got = sparse.combine(cells, [g.units[u] for u in run], job.X.shape, K, "overlap")
            assert np.array_equal(got, full), job
        else:
            got = sparse.combine(cells, [g.units[u] for u in run], job.X.shape, K, "halo")
            assert np.array_equal(got, sparse.drain(sparse.valid(full, K), job.cfg, params)), job


def test_scenarios_have_what_they_promise():
    _, route = _jobs("sparse_cluster_route")
    sels = {tuple(j.route_sel) for j in route}
    assert (0, 0, 0, 0) in sels and (1, 1, 1, 1) in sels
    assert any(j.refused for j in route) and any(j.poke for j in route) and any(j.bad for j in route)
    assert {"fc", "maps", "overlap"} <= {j.kind for j in route}
    assert any(len(j.active) < 4 and not j.refused for j in route)
    for name in ("sparse_cluster_route", "sparse_cluster_halo_route"):
        params, jobs = _jobs(name)
        cfg_bit = sparse.STU_ERR["CFG"]
        fc = [j for j in jobs if j.kind == "fc"]
        # refused FC passes: pooling (every unit), and each unit alone given two rows
        assert any(j.cfg.pool_name != "none" and all(u.errors & cfg_bit for u in j.golden.units) for j in fc)
        alone = [[u for u, g in enumerate(j.golden.units) if g is not None and g.errors & cfg_bit] for j in fc
                 if j.cfg.pool_name == "none"]
        assert sorted(a[0] for a in alone if len(a) == 1) == list(range(params.m)), name
    _, halo_route = _jobs("sparse_cluster_halo_route")
    assert "overlap" not in {j.kind for j in halo_route} and "halo" in {j.kind for j in halo_route}
    _, halo = _jobs("sparse_cluster_halo")
    assert {j.cfg.pool_name for j in halo} == set(SparseParams.POOL_MODES)
    _, bal = _jobs("sparse_cluster_balance")
    assert {j.part for j in bal} & {"balanced", "fallback"} and "equal" in {j.part for j in bal}
    pre = [(a, b) for a, b in zip(bal, bal[1:]) if b.preloaded]
    assert pre and all(a.shadow and a.bank != b.bank for a, b in pre)
    # a pass preloaded during one of the other dense mode is loaded in its own mode (the
    # shadow loads took the running pass's: a zero value flagged in sparse mode was loaded
    # as dense, and the scoreboard expected the flag; sparse_cluster_halo_route's seed)
    for name in ("sparse_cluster_route", "sparse_cluster_halo_route", "sparse_cluster_m3_random"):
        jobs = _jobs(name, 60)[1]
        pre = [(a, b) for a, b in zip(jobs, jobs[1:]) if b.preloaded]
        assert pre and all(a.shadow_dense == b.cfg.dense for a, b in pre), name


def _flows(jobs):
    flows: dict = {}
    for j in jobs:
        if j.flow is not None:
            flows.setdefault((j.flow.kind, j.flow.id), []).append(j)
    return flows


def test_channel_flows_chain_the_accumulator():
    """Each channel flow: one partition, route and set of memory units for every pass,
    emit = 0 but on the last; the golden units of the last pass (cluster_run chained
    through acc) combine to numpy's sum over the channels."""
    params, jobs = _jobs("sparse_cluster_channels", 40)
    flows = [f for (kind, _), f in _flows(jobs).items() if kind == "channels"]
    assert len(flows) >= 4 and {len(f) for f in flows} == {2, 3, 4}
    assert {f[0].flow.mode for f in flows} == {"overlap", "halo"}
    assert {j.part for j in jobs} & {"balanced", "fallback"} and "equal" in {j.part for j in jobs}
    assert any(j.empty and not j.cfg.emit for j in jobs) and any(j.empty and j.cfg.emit for j in jobs)
    assert any(j.preloaded for j in jobs) and any(len(j.active) < params.m for j in jobs)
    for f in flows:
        flow, last = f[0].flow, f[-1]
        assert [j.step for j in f] == list(range(flow.C)) and [j.cfg.emit for j in f] == [0] * (flow.C - 1) + [1]
        assert all(j.cells == f[0].cells and j.route_sel == f[0].route_sel for j in f)
        for j in f:  # an empty cell: q = 0 in this channel, entries in another
            for i in j.empty:
                assert not j.loads[i].entries and any(o.loads[i].entries for o in f)
        g = last.golden
        run = [u for u in range(params.m) if g.units[u] is not None]
        cells = [last.cells[g.source[u]] for u in run]
        K = flow.K
        full = sum(sparse.correlate_full(flow.X[c], flow.Wk[c]) for c in range(flow.C))
        if flow.mode == "overlap":
            got = sparse.overlap_add(cells, [g.units[u].out for u in run], flow.X.shape[1:], K)
            assert np.array_equal(got, full), last
        else:
            got = sparse.combine(cells, [g.units[u] for u in run], flow.X.shape[1:], K, "halo")
            assert np.array_equal(got, sparse.drain(sparse.valid(full, K), last.cfg, params)), last


def test_dwsep_flows_assemble_to_the_model_and_numpy():
    """Each depthwise-separable flow: the golden depthwise units overlap-add to numpy's
    sat(correlate_full >> shift_dw), which fits dw bits; the golden pointwise units,
    placed by their descriptors' ORG, cover every pixel once and assemble to
    depthwise_separable; the FC matrix is loaded by the first pointwise pass only."""
    params, jobs = _jobs("sparse_cluster_dwsep", 40)
    flows = [f for (kind, _), f in _flows(jobs).items() if kind == "dwsep"]
    assert len(flows) >= 2 and {f[0].flow.mode for f in flows} == {"partitioned", "whole"}
    assert any(not j.loads[i].entries for j in jobs if j.kind == "pw" for i in j.active)  # a zero pixel vector
    lo, hi = sparse.signed_range(params.dw)
    for f in flows:
        flow = f[0].flow
        dw, pw = f[:flow.depthwise], f[flow.depthwise:]
        assert [j.kind for j in dw] == ["dw"] * flow.C and all(j.kind == "pw" for j in pw)
        assert all(j.cfg.emit and not j.cfg.relu and j.cfg.shift == flow.shift_dw for j in dw)
        assert flow.mode == "whole" or flow.shift_dw == 0  # no shift on partial sums
        Z = np.stack([np.clip(sparse.correlate_full(flow.X[c], flow.Wk[c]) >> flow.shift_dw, *sparse.signed_range(
            params.ow)) for c in range(flow.C)])
        assert np.array_equal(flow.Z, Z) and lo <= Z.min() and Z.max() <= hi
        assert [j.keep_weights for j in pw] == [False] + [True] * (len(pw) - 1)
        Y, seen = np.zeros_like(flow.Y), np.zeros(flow.Y.shape[1:], dtype=int)
        for j in pw:
            assert j.cfg.mode == sparse.FC and j.cfg.relu and j.cfg.shift == flow.shift_pw
            for u, gu in enumerate(j.golden.units):
                if gu is not None:
                    d = sparse.unpack_desc(j.descs[j.golden.source[u]])
                    Y[:, d.org_row, d.org_col] = gu.out[0]
                    seen[d.org_row, d.org_col] += 1
        assert (seen == 1).all()
        assert np.array_equal(Y, flow.Y)
        assert np.array_equal(Y, sparse.depthwise_separable(flow.X, flow.Wk, flow.Wp, params,
                                                            shift_dw=flow.shift_dw, shift_pw=flow.shift_pw))


@pytest.mark.parametrize("scenario", ["balance", "route", "halo"])
def test_maps_grow_to_fit_every_cell_count(scenario):
    """Eight units on maps of at most 8 x 8: a pass of 7 (prime) or 8 cells still gets a
    map some grid of that many cells fits (the map drawn from half the maximum up can be
    too small), and every pass keeps its cells within a memory unit's limits."""
    params = SparseParams(m=8, p=1, hmax=8, wmax=8, depth=64, ow=20)
    widths = {n: v["width"] for n, v in cluster_ports(params).items()}
    for seed in range(4):
        for job in make_jobs(scenario, params, np.random.default_rng(seed), 24, widths):
            if job.kind in ("overlap", "halo"):
                assert sum(c is not None for c in job.cells) == len(job.active), job
            for i in job.active:
                d = sparse.unpack_desc(job.descs[i])
                assert i in job.bad or (1 <= d.h <= params.hmax and 1 <= d.w <= params.wmax), job


def test_maps_too_small_for_the_cells_are_refused():
    """7 cells on at most 6 x 6 maps: no grid fits; the stimulus says so instead of failing in numpy."""
    params = SparseParams(m=8, p=1, hmax=6, wmax=6, depth=36, nmax_out=8, ow=20)
    widths = {n: v["width"] for n, v in cluster_ports(params).items()}
    with pytest.raises(ValueError, match="no grid of 7 cells fits a 6 x 6 map"):
        for seed in range(8):
            make_jobs("route", params, np.random.default_rng(seed), 24, widths)


def test_overlap_add_on_saturating_outputs_is_refused():
    """The ow = 8 cluster (the halo configuration) saturates its partial sums: an
    overlap-add scenario on it is refused naming ow, not run to a mismatch no RTL could
    avoid (the combined map would not be the whole map's)."""
    params, _ = _cluster_sets()["sparse_cluster_halo"]
    assert params.ow == 8
    widths = {n: v["width"] for n, v in cluster_ports(params).items()}
    with pytest.raises(ValueError, match="overlap-add on ow = 8: a unit's partial sum"):
        make_jobs("balance", params, np.random.default_rng(5), 8, widths)
