"""The mesh wiring of the sched tiles (docs/sched.md section 4.1): the ``rows`` parameter,
the routing functions, a directed program whose cycles are worked out by hand from the
contract (not copied from the executor), random mesh programs and their illegal and
jittered variants, and ``rows == 1`` staying the ring bit for bit."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from lockstep.models import sched as S
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams

#: A 3 x 3 torus with 2-cycle hops: tile t = 3*r + c.
M33 = FabricParams(nt=9, rows=3, hop_lat=2)

#: Mesh parameter sets of the random tests (MAC arrays, no bus, counter wrap, 4 x 4).
MESHES = [
    FabricParams(nt=4, rows=2),
    M33,
    FabricParams(nt=4, rows=2, k=2),
    FabricParams(nt=6, rows=2, k=2, hop_lat=2, buf_d=4),
    FabricParams(nt=6, rows=3, cw=8, l_alu=1),
    FabricParams(nt=16, rows=4, bus=False, aw=6, dw=8),
]


# ---- the parameter and the routing -----------------------------------------------------
@pytest.mark.parametrize("kw", [dict(rows=0), dict(rows=-1), dict(rows=2), dict(nt=4, rows=4), dict(nt=6, rows=4),
                                dict(nt=8, rows=8), dict(nt=4, rows=True), dict(nt=4, rows=2.0)])
def test_bad_rows_raise_param_error(kw):
    """rows must be 1 or divide nt into at least 2 rows of at least 2 columns."""
    with pytest.raises(ParamError, match=r"FabricParams\.rows="):
        FabricParams(**kw)


def test_rows_and_cols():
    assert FabricParams().rows == 1 and FabricParams().cols == 3
    assert FabricParams(nt=6, rows=2).cols == 3 and FabricParams(nt=6, rows=3).cols == 2
    assert FabricParams(nt=16, rows=4).cols == 4
    assert FabricParams.from_dict(FabricParams(nt=6, rows=2).to_dict()) == FabricParams(nt=6, rows=2)


def test_mesh_routing_by_hand():
    """3 x 3: out[1] east to in[0], out[0] south to in[1], psum east; both wrap."""
    m = M33
    assert m.link_dest(4, 1) == (5, 0) and m.link_dest(4, 0) == (7, 1)     # (1,1) -> (1,2), (2,1)
    assert m.link_dest(5, 1) == (3, 0) and m.link_dest(7, 0) == (1, 1)     # row and column wrap
    assert m.link_dest(8, 1) == (6, 0) and m.link_dest(8, 0) == (2, 1)
    assert m.link_src(0, 0) == (2, 1) and m.link_src(0, 1) == (6, 0)       # west (0,2), north (2,0)
    assert m.link_src(4, 0) == (3, 1) and m.link_src(4, 1) == (1, 0)
    assert [m.psum_dest(t) for t in range(9)] == [1, 2, 0, 4, 5, 3, 7, 8, 6]
    assert [m.psum_src(t) for t in range(9)] == [2, 0, 1, 5, 3, 4, 8, 6, 7]
    m24 = FabricParams(nt=8, rows=2)   # 2 rows of 4: south and north are the same tile
    assert m24.link_dest(1, 0) == (5, 1) and m24.link_dest(5, 0) == (1, 1) and m24.link_dest(3, 1) == (0, 0)


@pytest.mark.parametrize("nt", range(2, 17))
def test_ring_routing_is_unchanged(nt):
    """rows == 1: in[0] from (t-1)'s out[1], in[1] from (t+1)'s out[0], psum from t-1."""
    p = FabricParams(nt=nt)
    assert p == FabricParams(nt=nt, rows=1)
    for t in range(nt):
        assert p.link_src(t, 0) == ((t - 1) % nt, 1) and p.link_src(t, 1) == ((t + 1) % nt, 0)
        assert p.link_dest(t, 1) == ((t + 1) % nt, 0) and p.link_dest(t, 0) == ((t - 1) % nt, 1)
        assert p.psum_src(t) == (t - 1) % nt and p.psum_dest(t) == (t + 1) % nt


@pytest.mark.parametrize("p", MESHES + [FabricParams(nt=5)], ids=repr)
def test_links_are_one_to_one(p):
    """Every in[0..1] has exactly one driver; link_src inverts link_dest; out[p] -> in[1-p]."""
    dests = [p.link_dest(t, q) for t in range(p.nt) for q in (0, 1)]
    assert sorted(dests) == [(t, q) for t in range(p.nt) for q in (0, 1)]
    for t in range(p.nt):
        for q in (0, 1):
            d, dq = p.link_dest(t, q)
            assert dq == 1 - q and p.link_src(d, dq) == (t, q)
        assert p.psum_src(p.psum_dest(t)) == t


# ---- a directed program: words east, south, around both wraps, a turning FWD, the bus ---
def _data(t: int, a: int) -> int:
    return 1000 * t + a


DIRECTED = """
.tile 0
.data 0x10: {d0_10} {d0_11}
@2  SEND port=next a=0x10 len=2        # east to tile 1
@7  RECV port=next d=0x20              # from tile 6, south across the column wrap
@8  RECV port=prev d=0x28              # from tile 2, east across the row wrap
@12 HALT
.tile 1
@5  FWD  port=prev src=prev len=2      # in[0] (from the west) out on out[0]: turns south
@12 HALT
.tile 2
.data 1: {d2_1}
@4  SEND port=next a=1                 # east: wraps to tile 0
@12 HALT
.tile 3
@5  TAP  port=bus d=0x08
@10 TAP  port=prev d=0x05              # from tile 5 across the row wrap
@12 HALT
.tile 4
.data 0x10: {d4_10} {d4_11} {d4_12}
.data 0x18: {d4_18} {d4_19}
@2  SEND port=next a=0x10 len=3        # east to tile 5
@3  SEND port=prev a=0x18 len=2        # south to tile 7
@9  RECV port=next d=0x20 len=2        # tile 0's words, relayed south by tile 1
@12 HALT
.tile 5
.data 0x30: {d5_30}
@6  RECV port=prev d=0 len=3
@7  SEND port=next a=0x30              # east: wraps to tile 3
@12 HALT
.tile 6
.data 0: {d6_0}
@2  SEND port=prev a=0                 # south: wraps to tile 0
@12 HALT
.tile 7
@6  TAP  port=next d=0x10 len=2
@12 HALT
.tile 8
.data 3: {d8_3}
@3  SEND port=bus a=3
@12 HALT
"""


def _directed(p: FabricParams) -> S.Program:
    vals = {f"d{t}_{a}": _data(t, int(a, 16)) for t, a in
            ((0, "10"), (0, "11"), (2, "1"), (4, "10"), (4, "11"), (4, "12"), (4, "18"), (4, "19"), (5, "30"),
             (6, "0"), (8, "3"))}
    return S.assemble(DIRECTED.format(**vals), p)


def test_directed_mesh_program_east_and_south():
    """On the 3 x 3 mesh with hop_lat = 2, a word on out in cycle c is on the receiver's
    in in c + 2; a SEND at n puts word i on out in n+1+i; a RECV pops from the cycle
    after the push; a TAP writes in the cycle it samples; the bus register adds a cycle.
    Every link word, bus word and write below is worked out from those rules."""
    run = S.execute(_directed(M33))
    assert run.ok and S.lint(_directed(M33)) == []
    d = _data
    words = {
        (3, 0, 1, d(0, 0x10)), (4, 0, 1, d(0, 0x11)),                      # 0 -> east, at 1's in[0] in 5, 6
        (6, 1, 0, d(0, 0x10)), (7, 1, 0, d(0, 0x11)),                      # FWD at 5: out[0] in 6, 7 -> 4 in 8, 9
        (5, 2, 1, d(2, 1)),                                                # SEND at 4 -> 0's in[0] in 7
        (3, 4, 1, d(4, 0x10)), (4, 4, 1, d(4, 0x11)), (5, 4, 1, d(4, 0x12)),  # -> 5's in[0] in 5, 6, 7
        (4, 4, 0, d(4, 0x18)), (5, 4, 0, d(4, 0x19)),                      # -> 7's in[1] in 6, 7
        (8, 5, 1, d(5, 0x30)),                                             # SEND at 7 -> 3's in[0] in 10
        (3, 6, 0, d(6, 0)),                                                # -> 0's in[1] in 5
        (4, 8, 2, d(8, 3)),                                                # bus driver
    }
    assert {e[:1] + e[2:] for e in run.events("word")} == words
    assert run.events("bus") == [(5, "bus", -1, d(8, 3))]
    writes = {
        (7, 0, 1, 0x20, d(6, 0)),              # pushed at the end of 5, popped at 7 (slack 1)
        (8, 0, 0, 0x28, d(2, 1)),              # pushed at the end of 7, popped at 8
        (5, 3, 2, 0x08, d(8, 3)),              # TAP at 3 + l_bus - 1
        (10, 3, 0, 0x05, d(5, 0x30)),
        (9, 4, 1, 0x20, d(0, 0x10)), (10, 4, 1, 0x21, d(0, 0x11)),
        (6, 5, 0, 0, d(4, 0x10)), (7, 5, 0, 1, d(4, 0x11)), (8, 5, 0, 2, d(4, 0x12)),
        (6, 7, 1, 0x10, d(4, 0x18)), (7, 7, 1, 0x11, d(4, 0x19)),
    }
    assert {e[:1] + e[2:] for e in run.events("write")} == writes
    assert sorted(run.recv_slack) == [(0, 0, 8, 0), (0, 1, 7, 1), (4, 1, 9, 0), (5, 0, 6, 0)]
    assert all(h == 12 for h in run.halt_cnt)
    # the same schedules on a 9-tile ring: the words reach other tiles, and RECVs underflow
    ring = S.execute(_directed(FabricParams(nt=9, hop_lat=2)))
    assert not ring.ok and ring.err[4] & S.ERR_UNDERFLOW


# ---- random mesh programs ------------------------------------------------------------------
@pytest.mark.parametrize("p", MESHES, ids=repr)
def test_random_mesh_programs_are_legal(p, seed):
    """Lint clean, no error, no LEN finding."""
    for k in range(8):
        prog = S.random_program(seed + k, p, wrap=p.cw == 8 and k % 2 == 0)
        assert S.lint(prog) == [], (p, seed + k)
        run = S.execute(prog, checks=True)
        assert run.ok and run.len_issues == [], (p, seed + k)


@pytest.mark.parametrize("p", [M33, FabricParams(nt=9, hop_lat=2)], ids=["mesh", "ring"])
def test_fwd_paths_turn_on_the_mesh_and_the_ring(p, seed):
    """A relay path may turn: on a mesh east then south, on a ring back where it came from
    (so every FWD source port meets every output port); straight paths stay."""
    kinds = [x for k in range(4) for x in S.random_program(seed + k, p, kinds={"fwd": 1}).meta["kinds"]]
    turns = [x for x in kinds if "prev-next" in x or "next-prev" in x]
    straight = [x for x in kinds if x in ("transfer:next-next", "transfer:prev-prev")]
    assert len(kinds) >= 8 and turns and straight


def test_random_mesh_words_follow_the_mesh(seed):
    """Each plain SEND -> RECV/TAP of the plan lands on the neighbour that the hand-written
    3 x 3 table gives (east (r, c+1), south (r+1, c), wrapping)."""
    east = {t: 3 * (t // 3) + (t % 3 + 1) % 3 for t in range(9)}
    south = {t: (t + 3) % 9 for t in range(9)}
    seen = 0
    for k in range(10):
        prog = S.random_program(seed + k, M33, kinds={"ring": 1})
        run = S.execute(prog)
        sends = {(e[0], e[2], S.decode(e[3], M33)) for e in run.events("issue")
                 if S.decode(e[3], M33).op == S.OPS["SEND"]}
        for c in prog.meta["consumers"]:
            src = [(n, t, e) for n, t, e in sends
                   if n + 1 + M33.hop_lat == c["a"] and e.port == 1 - c["port"] and e.n == c["n"]]
            assert src, c
            want = {(east if e.port == 1 else south)[t] for _, t, e in src}
            assert c["tile"] in want
            seen += 1
    assert seen >= 10


@pytest.mark.parametrize("rule", S.ILLEGAL_RULES)
def test_illegal_variants_on_the_mesh(rule, seed):
    """illegal_variant keeps predicting the first error (bit, tile, cycle) on mesh programs,
    and the linter names the broken rule."""
    done = 0
    for k in range(30):
        p = MESHES[k % len(MESHES)]
        prog = S.random_program(seed + k, p)
        try:
            var, exp = S.illegal_variant(seed + 31 * k, prog, rule)
        except ValueError as exc:
            assert "offers no place" in str(exc)
            continue
        first = S.execute(var).first_error()
        assert (first[0], first[2], first[3]) == (exp.cycle, exp.tile, exp.bits), (rule, p, seed + k)
        assert exp.rule in {v.rule for v in S.lint(var)}
        done += 1
    assert done >= 3, rule


@pytest.mark.parametrize("within", [True, False])
def test_jitter_on_the_mesh(within, seed):
    """A mesh SEND delayed within its receiver's slack keeps the memories; beyond it, the
    predicted UNDERFLOW."""
    done = 0
    for k in range(30):
        p = MESHES[k % len(MESHES)]
        prog = S.random_program(seed + k, p)
        try:
            var, exp = S.jitter_variant(seed + k, prog, within)
        except ValueError:
            continue
        run = S.execute(var)
        if within:
            assert run.ok and all(np.array_equal(a, b) for a, b in zip(run.mems, S.execute(prog).mems))
        else:
            first = run.first_error()
            assert (first[0], first[2], first[3]) == (exp.cycle, exp.tile, exp.bits)
        done += 1
    assert done >= 5


def test_compiled_gemm_uses_one_mesh_row():
    """The psum chain of a compiled GEMM runs along row 0: as many tiles as columns."""
    p = FabricParams(k=2, nt=6, rows=2, aw=9)
    rng = np.random.default_rng(5)
    a, b = rng.integers(-8, 8, (20, 6)), rng.integers(-8, 8, (6, 2))
    prog, lay = S.compile_gemm(a, b, p)
    run = S.execute(prog)
    assert run.ok and np.array_equal(lay.result(run), S.reference_gemm(a, b, p))
    with pytest.raises(ParamError, match="one psum chain"):
        S.compile_gemm(rng.integers(-8, 8, (20, 8)), rng.integers(-8, 8, (8, 2)), p)


# ---- rows == 1 is the ring, bit for bit --------------------------------------------------
#: Digests of (schedules, data, trace) of random programs. Taken before ``rows`` existed
#: (the ring bit for bit through the mesh rewrite), then again when a ring's FWD paths were
#: allowed to turn back (every FWD source meets every output port): that changed every
#: program with a relayed transfer; and again when bus_fwd transfers could also relay bus
#: to bus (with weight 2): that changed every program's draws.
RING_DIGESTS = {
    (FabricParams(), 0): "a471caaf539c9d68",
    (FabricParams(), 1): "78ebd1f30da2e738",
    (FabricParams(), 2): "2782797a7025902b",
    (FabricParams(nt=4, hop_lat=2, buf_d=4, l_alu=1), 0): "d6252df5c8423f97",
    (FabricParams(nt=4, hop_lat=2, buf_d=4, l_alu=1), 1): "87cb490c33af8e70",
    (FabricParams(nt=4, hop_lat=2, buf_d=4, l_alu=1), 2): "51448e85493db6b5",
    (FabricParams(k=2, nt=4), 0): "78a8848fd2d7624d",
    (FabricParams(k=2, nt=4), 1): "33b7bea6f5e31a82",
    (FabricParams(k=2, nt=4), 2): "044528b7aa1e7cce",
}


@pytest.mark.parametrize("key", RING_DIGESTS, ids=lambda k: f"nt{k[0].nt}_k{k[0].k}_seed{k[1]}")
def test_ring_programs_and_traces_unchanged(key):
    """random_program and execute on the ring give exactly the recorded programs and traces."""
    p, s = key
    prog = S.random_program(s, p)
    run = S.execute(prog)
    digest = hashlib.sha256(repr((prog.schedules, prog.data, run.trace)).encode()).hexdigest()[:16]
    assert digest == RING_DIGESTS[key]
