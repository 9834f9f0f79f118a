"""The gemm family's ld_detect, kernel_select and sa_cache generators (gen/gemm/detect.py,
select.py, cache.py): lint of several configurations (defaults, direct-mapped, one set,
eb = 1, multi-line segments), the port lists against the records and the Verilog, widths
from GemmParams, refusals, determinism; and quick Icarus runs of each block against
hand-worked cases of docs/gemm.md sections 2, 3 and 5 plus this file's own short
restatement of the walk, the selection and a true-LRU cache (a self-check of the
generators, not the golden models of models/gemm*.py, which the pyuvm testbenches use).
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import subprocess
from pathlib import Path

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
from lockstep.gen.gemm.cache import CNT_BITS
from lockstep.gen.lint import lint_file
from lockstep.models.formats import GemmParams, ParamError, SparseParams
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
def test_lint_clean(blk, key, generated):
    """verilator --lint-only -Wall and iverilog -g2012, no waivers."""
    assert lint_file(generated(blk, key).verilog) == [], (blk, key)


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
        assert cp[name]["width"] == len(GemmParams.KINDS) * CNT_BITS
    assert cp["n_evict"]["width"] == CNT_BITS == 32
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


# ---- the test's own restatement of docs/gemm.md sections 2, 3 and 5 ----------------------
def walk(f: GemmParams, base: int, ld: int, m: int) -> tuple[int, int, int]:
    """``(worst, keep, visits)`` of the exact detector (section 2)."""
    s, cnt, last, keep, visits = ld * f.eb, {}, -1, m, 0
    for r in range(m):
        a = base + r * s
        for x in range(a // f.line, (a + f.v * f.eb - 1) // f.line + 1):
            visits += 1
            if x > last:
                last = x
                cnt[x % f.sets] = cnt.get(x % f.sets, 0) + 1
                if cnt[x % f.sets] > f.budget and keep == m:
                    keep = r
    return max(cnt.values()), keep, visits


def select(f: GemmParams, n: int, lda: int, base: int, limit_m: bool) -> tuple[int, int, int, int]:
    """``(prog, m, z, keep)`` of the selection (section 3)."""
    keep_all = walk(f, base, lda, f.m_max)[1]

    def pick(cap):
        bal, most = None, None
        for m0, z in f.candidates:
            m = min(m0, cap)
            if m < 1 or m * z <= f.l_hw:
                continue
            nb = -(-n // (z * f.v))
            if nb >= f.ncores and (bal is None or m * z * (bal[0] + bal[1]) > bal[0] * bal[1] * (m + z)):
                bal = (m, z)
            if most is None or nb > most[2]:
                most = (m, z, nb)
        return bal or (most and most[:2])

    m, z = pick(f.m_max)
    s, way = lda * f.eb, f.sets * f.line
    if keep_all >= m:
        return (1 if s % way == 0 or way % s == 0 else 0), m, z, m
    alt = pick(keep_all)
    if limit_m and alt:
        return 1, alt[0], alt[1], alt[0]
    return 2, m, z, keep_all


class Lru:
    """Tag-only true-LRU cache with per-kind counters (section 5)."""

    def __init__(self, f: GemmParams):
        self.f, self.sets = f, [[] for _ in range(f.sets)]  # most recent last
        self.clear()

    def clear(self):
        self.lookups, self.hits, self.misses, self.evict = [0] * 6, [0] * 6, [0] * 6, 0

    def access(self, addr: int, kind: int) -> tuple[bool, bool]:
        line = addr // self.f.line
        ways = self.sets[line % self.f.sets]
        hit, ev = line in ways, False
        if hit:
            ways.remove(line)
        elif len(ways) == self.f.ways:
            ways.pop(0)
            ev = True
        ways.append(line)
        self.evict += ev
        if kind < 6:
            self.lookups[kind] += 1
            self.hits[kind] += hit
            self.misses[kind] += not hit
        return hit, ev


def test_restatement_hand_worked():
    """The brief's and section 2's hand-worked numbers hold for the test's restatement."""
    f = GemmParams()
    assert f.budget == 6
    assert walk(f, 0, 1024, 30) == (30, 6, 30)  # 64 sets x 64 B, lda 1024 fp32: worst = m, keep = budget
    assert walk(f, 0, 512, 30) == (15, 12, 30)  # period 2: keep = budget * period
    assert walk(f, 0, 16, 30) == (1, 30, 30)  # contiguous rows
    assert walk(f, 32, 1024, 30) == (30, 6, 60)  # two lines a row, sets 0 and 1
    assert select(f, 1024, 1024, 0, False) == (1, 6, 4, 6)  # NO_COPY (6, 4): the patent's initial kernel
    assert select(GemmParams(ways=4), 1024, 1024, 0, False) == (2, 6, 4, 3)  # budget 3: OVERFLOW_COPY
    assert select(GemmParams(ways=4), 1024, 1024, 0, True) == (1, 2, 8, 2)  # limit_m: (min(2, 3), 8)


# ---- simulation ---------------------------------------------------------------------------
def _decls(ports: dict, drive: set[str]) -> str:
    out = []
    for n, p in ports.items():
        w = f"[{p['width'] - 1}:0] " if p["width"] > 1 else ""
        out.append(f"  {'reg' if p['dir'] == 'in' else 'wire'} {w}{n};")
    return "\n".join(out)


def _tb(top: str, ports: dict, body: str) -> str:
    conn = ", ".join(f".{n}({n})" for n in ports)
    init = "\n".join(f"  {n} = 0;" for n, p in ports.items() if p["dir"] == "in" and n != "clk")
    return f"""`timescale 1ns/1ps
module tb;
{_decls(ports, set())}
  integer c, bad;
  {top} dut({conn});
  always #5 clk = ~clk;
  initial begin
  clk = 0;
{init}
  rst = 1;
  @(posedge clk); @(posedge clk); #1 rst = 0;
{body}
  $finish;
  end
endmodule
"""


def _run(tmp: Path, rtl: Path, text: str) -> list[list[int]]:
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog not on PATH")
    (tmp / "tb.v").write_text(text)
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp / "sim.vvp"), "-s", "tb", str(tmp / "tb.v"), str(rtl)],
                   check=True, capture_output=True, text=True)
    out = subprocess.run(["vvp", "-n", str(tmp / "sim.vvp")], check=True, capture_output=True, text=True).stdout
    return [[int(v) for v in ln.split()[1:]] for ln in out.splitlines() if ln.startswith("R ")]


def _job(sets: dict[str, int], show: list[str], pre: list[str] = ()) -> str:
    """One start: apply ``sets``, print ``pre`` (combinational outputs) in cycle 0, pulse
    start, count the cycles to done (checking busy), print ``show``."""
    a = "\n".join(f"  {k} = {v};" for k, v in sets.items())
    pre_s = " ".join("%0d" for _ in pre)
    fmt = " ".join("%0d" for _ in show)
    pre_args = ", ".join(pre)
    return f"""{a}
  #1 $display("R {pre_s}"{', ' if pre else ''}{pre_args});
  start = 1; @(posedge clk); #1 start = 0; c = 1; bad = 0;
  while (!done) begin
    if (!busy) bad = 1;
    @(posedge clk); #1 c = c + 1;
    if (c > 5000) begin $display("R -1"); $finish; end
  end
  if (busy) bad = 1;
  $display("R %0d %0d {fmt}", c, bad, {", ".join(show)});
  @(posedge clk); #1;
"""


DET_OUT = ["err", "worst", "keep", "conflict", "visits"]
DET_CF = ["way_multiple", "way_fraction", "aligned", "period", "worst_cf"]


def closed_form(f: GemmParams, base: int, ld: int, m: int) -> list[int]:
    if ld == 0 or m == 0 or m > f.m_max:
        return [0] * 5
    s, way = ld * f.eb, f.sets * f.line
    al = base % f.line == 0 and s % f.line == 0
    from math import gcd
    per = f.sets // gcd(f.sets, s // f.line) if al else 0
    wcf = -(-m // per) if al and f.v * f.eb <= f.line else 0
    return [int(s % way == 0), int(way % s == 0), int(al), per, wcf]


def _detect_cases(f: GemmParams, rng: random.Random, count: int) -> list[tuple[int, int, int]]:
    cases = [(0, 1024, f.m_max), (0, 512, f.m_max), (0, 16, f.m_max), (32, 1024, f.m_max), (0, 8, f.m_max),
             (4, 1, 3), (0, 1000, f.m_max), (96, 4096, 7), (0, 3 << 10, f.m_max), (0, 1, 1)]
    for _ in range(count):
        ld = rng.choice([rng.randrange(1, 5000), rng.randrange(1, 9) << rng.randrange(4, 12), 1 << rng.randrange(14)])
        cases.append((rng.randrange(0, 1 << 16) * rng.choice([1, f.eb, f.line]), ld, rng.randrange(1, f.m_max + 1)))
    return [(b % (1 << f.aw), ld % (1 << f.aw), m) for b, ld, m in cases]


@pytest.mark.sim
@pytest.mark.parametrize("key", ["defaults", "one_set", "multi_line"])
def test_sim_ld_detect(key, generated, tmp_path):
    """Directed and random walks: done in cycle visits + 1 with busy high in between,
    worst/keep/conflict/visits and the closed form against the restatement; the hand-worked
    defaults (lda 1024 fp32: worst = m, keep = budget = 6); refusals (done in cycle 1, err,
    outputs 0) and a start while busy (ignored)."""
    f = LINT_SETS[key]
    cases = _detect_cases(f, random.Random(3), 25)
    body = "".join(_job({"base": b, "ld": ld, "m": m}, DET_OUT, DET_CF) for b, ld, m in cases)
    refused = [(0, 0, 1), (0, 16, 0), (0, 16, f.m_max + 1)]
    body += "".join(_job({"base": b, "ld": ld, "m": m}, DET_OUT, DET_CF) for b, ld, m in refused)
    # a start while busy is ignored: the first job's results stand
    body += f"""  base = 0; ld = 1024; m = {f.m_max};
  start = 1; @(posedge clk); #1 base = 64; ld = 1; m = 1; @(posedge clk); #1 start = 0; c = 2;
  while (!done) begin @(posedge clk); #1 c = c + 1; end
  $display("R %0d %0d %0d %0d", c, worst, keep, visits);
"""
    rows = _run(tmp_path, generated("ld_detect", key).verilog, _tb("ld_detect", ld_detect_ports(f), body))
    assert len(rows) == 2 * (len(cases) + len(refused)) + 1
    for i, (b, ld, m) in enumerate(cases):
        cf, (cyc, bad, err, worst, keep, conflict, visits) = rows[2 * i], rows[2 * i + 1]
        w, k, v = walk(f, b, ld, m)
        assert (err, worst, keep, conflict, visits) == (0, w, k, int(k < m), v), (b, ld, m)
        assert (cyc, bad) == (v + 1, 0), (b, ld, m)
        assert cf == closed_form(f, b, ld, m), (b, ld, m)
        if cf[2] and f.v * f.eb <= f.line:  # the model property of section 2
            assert (worst, keep) == (cf[4], min(m, f.budget * cf[3]))
    for j, _ in enumerate(refused):
        cf, res = rows[2 * (len(cases) + j)], rows[2 * (len(cases) + j) + 1]
        assert cf == [0] * 5 and res == [1, 0, 1, 0, 0, 0, 0]
    w, k, v = walk(f, 0, 1024, f.m_max)
    assert rows[-1] == [v + 1, w, k, v]
    if key == "defaults":
        assert rows[1][2:] == [0, 30, 6, 1, 30] and rows[0] == [1, 1, 1, 1, 30]


SEL_OUT = ["err", "prog", "m", "z", "keep", "worst", "keep_all", "conflict", "aligned", "way_multiple",
           "way_fraction", "sel_cycles"]


@pytest.mark.sim
@pytest.mark.parametrize("key", ["defaults", "one_set", "multi_line", "one_candidate"])
def test_sim_kernel_select(key, generated, tmp_path):
    """Selections against the restatement (and the hand-worked defaults): prog, m, z, keep,
    the detector's outputs, done in cycle sel_cycles = visits + n_cand + 1; lda = 0 refused."""
    f = LINT_SETS[key]
    rng = random.Random(11)
    ns = [n for n in (0, 1, f.v, 100, 1024) if n < 1 << f.dimw] + [(1 << f.dimw) - 1]
    cases = [(n, lda, 0, lm) for n in ns for lda in (1024, 16, 17) for lm in (0, 1)]
    cases += [(rng.randrange(1 << f.dimw), rng.choice([rng.randrange(1, 3000), 1 << rng.randrange(12)]),
               rng.randrange(1 << 12) * rng.choice([1, f.line]), rng.randrange(2)) for _ in range(20)]
    if key == "defaults":
        cases += [(1024, 1024, 0, 0), (1024, 2048, 0, 1), (16, 17, 0, 0), (100, 17, 0, 0)]
    body = "".join(_job({"n": n, "lda": lda, "base_a": b, "limit_m": lm}, SEL_OUT) for n, lda, b, lm in cases)
    body += _job({"n": 1024, "lda": 0, "base_a": 0, "limit_m": 0}, SEL_OUT)
    rows = _run(tmp_path, generated("kernel_select", key).verilog, _tb("kernel_select", kernel_select_ports(f), body))
    rows = rows[1::2]  # the second line of each job (no combinational prints)
    assert len(rows) == len(cases) + 1
    ncand = len(f.candidates)
    for (n, lda, b, lm), r in zip(cases, rows):
        cyc, bad, err, prog, m, z, keep, worst, keep_all, conflict, al, wm, wf, selc = r
        w, k, v = walk(f, b, lda, f.m_max)
        cf = closed_form(f, b, lda, f.m_max)
        assert (err, worst, keep_all, conflict, wm, wf, al) == (0, w, k, int(k < f.m_max), cf[0], cf[1], cf[2])
        assert (prog, m, z, keep) == select(f, n, lda, b, bool(lm)), (n, lda, b, lm)
        assert (cyc, bad, selc) == (v + ncand + 1, 0, v + ncand + 1)
    assert rows[-1] == [1, 0, 1] + [0] * 10 + [1]
    if key == "defaults":
        # N 1024, lda 1024: no conflict at m = 6 (keep_all = budget = 6), a bad LD: NO_COPY (6, 4)
        assert rows[-5][3:7] == [1, 6, 4, 6] and rows[-5][-1] == 30 + 4 + 1
        assert rows[-4][3:7] == [1, 6, 4, 6]
        assert rows[-3][3:7] == [0, 2, 8, 2]  # N = 16: nothing balanced, one N-block each: the first entry
        assert rows[-2][3:7] == [0, 14, 2, 14]  # N = 100: z <= 2 balanced, (14, 2) scores best


@pytest.mark.sim
@pytest.mark.parametrize("key", ["defaults", "direct_mapped", "one_set", "one_set_dm", "multi_line"])
def test_sim_sa_cache(key, generated, tmp_path):
    """Random lookups over a few conflicting lines (and idle cycles, kind codes 6 and 7, a
    clr mid-way with a lookup in its cycle): lk_hit/lk_evict per lookup and the counters
    against a true-LRU restatement; rst empties the cache."""
    f = LINT_SETS[key]
    rng = random.Random(7)
    way = f.sets * f.line
    lines = [rng.randrange(1 << (f.aw - 1)) // f.line * f.line for _ in range(3)]
    pool = sorted({(a + k * way + rng.randrange(f.line)) % (1 << f.aw) for a in lines for k in range(f.ways + 2)}
                  | {(a + k * f.line) % (1 << f.aw) for a in lines for k in range(3)})
    model = Lru(f)
    steps, expect = [], []
    for i in range(400):
        if i == 250:
            steps.append("clr")  # the counters restart from the next cycle's lookup (or idle cycle)
            model.clear()
        if rng.random() < 0.1:
            steps.append("idle")
            continue
        addr, kind = rng.choice(pool), rng.choice([0, 1, 2, 3, 4, 5, 5, 6, 7])
        expect.append(model.access(addr, kind))
        steps.append((addr, kind))
    body = []
    for s in steps:
        if s == "clr":
            body.append("  clr = 1;")
            continue
        if s == "idle":
            body.append("  lk_valid = 0; lk_addr = 0; #1 if (lk_hit || lk_evict) $display(\"R -1\"); "
                        "@(posedge clk); #1 clr = 0;")
            continue
        body.append(f"  lk_valid = 1; lk_addr = {s[0]}; lk_kind = {s[1]}; #1 $display(\"R %0d %0d\", lk_hit, lk_evict);"
                    " @(posedge clk); #1 clr = 0;")
    body.append("  lk_valid = 0; #1;")
    body.append("  for (c = 0; c < 6; c = c + 1) $display(\"R %0d %0d %0d\", cnt_lookups[c*32 +: 32], "
                "cnt_hits[c*32 +: 32], cnt_misses[c*32 +: 32]);")
    body.append("  $display(\"R %0d\", n_evict);")
    # rst invalidates: the first address misses again
    body.append(f"  rst = 1; @(posedge clk); #1 rst = 0; lk_valid = 1; lk_addr = {steps[-1][0] if steps[-1] not in ('idle', 'clr') else pool[0]};"
                " #1 $display(\"R %0d %0d\", lk_hit, n_evict); @(posedge clk); #1 lk_valid = 0;")
    rows = _run(tmp_path, generated("sa_cache", key).verilog, _tb("sa_cache", sa_cache_ports(f), "\n".join(body)))
    assert [-1] not in rows
    got = [tuple(bool(v) for v in r) for r in rows[: len(expect)]]
    assert got == expect
    cnts = rows[len(expect): len(expect) + 6]
    assert cnts == [[model.lookups[k], model.hits[k], model.misses[k]] for k in range(6)]
    assert rows[len(expect) + 6] == [model.evict]
    assert rows[-1] == [0, 0]
    assert sum(h for h, _ in expect) > 20 and sum(e for _, e in expect) > 5  # the run saw hits and evictions
