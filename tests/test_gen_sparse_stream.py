"""Generators of the sparse family's stream blocks and memories (gen/sparse/stream.py,
gen/sparse/memory.py): refusals, port lists against the records and the Verilog, widths
from SparseParams, lint of several configurations, determinism."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lockstep.gen.sparse import (
    decoder_ports,
    emit_decoder,
    emit_encoder,
    emit_fm_mem,
    emit_profiler,
    emit_w_mem,
    encoder_ports,
    fm_mem_ports,
    profiler_ports,
    w_mem_ports,
)
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams
from lockstep.models.sparse.params import SparseParams

BLOCKS = {
    "sp_encoder": (emit_encoder, encoder_ports),
    "sp_decoder": (emit_decoder, decoder_ports),
    "nnz_profiler": (emit_profiler, profiler_ports),
    "fm_mem_unit": (emit_fm_mem, fm_mem_ports),
    "w_mem": (emit_w_mem, w_mem_ports),
}

#: Configurations every block must lint clean for: the defaults, the smallest (1 x 1
#: maps, one lane, one entry, kmax = 1, bool-wide ports) and widest corners, and odd
#: non-power-of-two sizes with rb != cb and u = 2.
LINT_SETS = {
    "defaults": SparseParams(),
    "smallest": SparseParams(p=1, kmax=1, hmax=1, wmax=1, depth=1, nmax_out=1, dw=2, ww=2, accw=8, ow=2, cmax=1),
    "widest": SparseParams(p=16, kmax=7, hmax=64, wmax=64, dw=16, ww=16, accw=48, u=2, depth=4096, nmax_out=256),
    "odd": SparseParams(p=3, kmax=2, hmax=5, wmax=7, dw=4, u=2, depth=10, nmax_out=5),
}


def module_ports(verilog: Path, module: str) -> list[str]:
    m = re.search(rf"module {module} \(([^)]*)\);", verilog.read_text())
    assert m, module
    return [p.strip() for p in m.group(1).split(",")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Every block for a LINT_SETS key (emitted once per module)."""
    cache: dict[str, dict] = {}
    root = tmp_path_factory.mktemp("sparse_stream")

    def get(key: str) -> dict:
        if key not in cache:
            cache[key] = {name: emit(LINT_SETS[key], root / key) for name, (emit, _) in BLOCKS.items()}
        return cache[key]

    return get


@pytest.mark.parametrize("key", LINT_SETS)
def test_lint_clean(key, generated, lint):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    for name, em in generated(key).items():
        assert lint(em.verilog) == [], (key, name)


@pytest.mark.parametrize("key", ["defaults", "odd"])
def test_records_match_the_verilog(key, generated):
    fmt = LINT_SETS[key]
    for name, em in generated(key).items():
        rec = json.loads(em.sidecar.read_text())
        ports = BLOCKS[name][1](fmt)
        assert rec["module"] == name and rec["family"] == "sparse"
        assert SparseParams.from_dict(rec["params"]) == fmt
        assert rec["ports"] == ports
        assert module_ports(em.verilog, name) == list(ports)
        for p, d in ports.items():  # declared widths in the Verilog
            m = re.search(rf"\b(input|output)\s+(?:\[(\d+):0\]\s+)?{p};", em.verilog.read_text())
            assert m, (name, p)
            assert (int(m.group(2)) + 1 if m.group(2) else 1) == d["width"], (name, p)
            assert {"in": "input", "out": "output"}[d["dir"]] == m.group(1), (name, p)


def test_widths_come_from_sparse_params():
    """Stream words, error vectors and read lanes are sized by SparseParams' properties."""
    p = LINT_SETS["odd"]
    enc = encoder_ports(p)
    assert enc["out_data"]["width"] == p.data_bits and enc["in_data"]["width"] == p.dw
    assert enc["nnz"]["width"] == dict(SparseParams.DESC_FIELDS)["nnz"]
    assert decoder_ports(p)["in_data"]["width"] == p.data_bits
    fm = fm_mem_ports(p)
    assert fm["wr_data"]["width"] == p.data_bits and fm["wr_desc_data"]["width"] == 64
    assert (fm["rd_row"]["width"], fm["rd_col"]["width"], fm["rd_val"]["width"]) == (p.p * p.rb, p.p * p.cb, p.p * p.dw)
    assert fm["rd_lane_valid"]["width"] == p.p and fm["err"]["width"] == len(SparseParams.MEM_ERR_NAMES)
    assert fm["rd_group"]["width"] == 2  # ceil(10 / 3) = 4 groups
    assert fm["rd_q"]["width"] == 4  # 0..10
    w = w_mem_ports(p)
    assert w["wr_data"]["width"] == p.weight_bits and w["err"]["width"] == len(SparseParams.W_ERR_NAMES)
    assert (w["rd_a"]["width"], w["rd_w"]["width"], w["rd_valid"]["width"]) == (p.u * p.kb, p.u * p.ww, p.u)
    assert w["fc_rd_w"]["width"] == p.p * p.ww and w["wnz"]["width"] == 3  # 0..kmax**2 = 4
    prof = profiler_ports(p)
    assert prof["rd_addr"]["width"] == max(p.rb, p.cb) and prof["rd_data"]["width"] == 3  # counts 0..7
    # cfg_h/cfg_w hold hmax and a value beyond it (a refused size is representable)
    assert (1 << enc["cfg_h"]["width"]) - 1 > p.hmax and (1 << enc["cfg_w"]["width"]) - 1 > p.wmax


@pytest.mark.parametrize("name", BLOCKS)
def test_refuses_other_records(name, tmp_path):
    emit = BLOCKS[name][0]
    with pytest.raises(ParamError, match="SparseParams"):
        emit(FabricParams(), tmp_path)


@pytest.mark.parametrize("name", BLOCKS)
def test_refuses_keyword_names(name, tmp_path):
    emit = BLOCKS[name][0]
    with pytest.raises(ParamError, match="keyword"):
        emit(SparseParams(), tmp_path, name="module")


def test_fm_mem_refuses_indices_wider_than_the_descriptor(tmp_path):
    """A record that would need 9-bit indices (beyond SparseParams' own check) is refused
    naming the fields, before any Verilog is written."""
    bad = SparseParams()
    object.__setattr__(bad, "hmax", 300)  # bypass the record's own range check (hmax <= 64)
    with pytest.raises(ParamError, match="hmax"):
        emit_fm_mem(bad, tmp_path)
    assert not list(tmp_path.iterdir())


def test_deterministic(tmp_path, generated):
    """The same parameters give the same bytes."""
    first = generated("odd")
    for name, (emit, _) in BLOCKS.items():
        again = emit(LINT_SETS["odd"], tmp_path)
        assert again.verilog.read_bytes() == first[name].verilog.read_bytes(), name


@pytest.mark.parametrize("params", [SparseParams(), SparseParams(hmax=64, wmax=64), SparseParams(hmax=1, wmax=2)])
def test_decoder_jobs_end_their_streams_one_way_only(params):
    """An encoder's stream ends with LAST on its last word and cfg_nnz words at once, so
    the decoder's count or its LAST test broken changed nothing (two mutants survived).
    The end_count job has no LAST, the end_last job a cfg_nnz beyond its words; both maps
    end in zeros, so the raster needs the end of the stream to go on."""
    import numpy as np

    from lockstep.models import sparse
    from lockstep.verif.sparse.raster_env import DecoderUnit

    unit = DecoderUnit.__new__(DecoderUnit)    # jobs() and cfg() read only the parameters
    unit.params = params
    jobs = {j.kind: j for j in unit.jobs(np.random.default_rng(2), 30)}
    for kind in ("end_count", "end_last"):
        job = jobs[kind]
        words = sparse.unpack_data(job.words, params)
        assert job.X.ravel()[-1] == 0 and 0 < len(words) == np.count_nonzero(job.X)
        assert [w[:3] for w in words] == [e[:3] for e in sparse.encode(job.X).entries]
        lasts = [w[3] for w in words]
        nnz = unit.cfg(job)["cfg_nnz"]
        if kind == "end_count":
            assert not any(lasts) and nnz == len(words)
        else:
            assert lasts == [False] * (len(words) - 1) + [True] and nnz > len(words)
