"""Tests of the sched golden model and toolchain (lockstep.models.sched).

Expected traces, cycles and data are computed by hand from docs/sched.md (the
contract), never copied from the implementation's output. Random tests check
properties (round trips, legality, agreement with independent predictions).
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from lockstep.models import sched as S
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams
from lockstep.models.sched import (
    ERR_BUSY,
    ERR_COLLISION,
    ERR_DECOMP,
    ERR_MISSED,
    ERR_OPCODE,
    ERR_OVERFLOW,
    ERR_TAP_IDLE,
    ERR_UNDERFLOW,
    ERR_WCONF,
    OPS,
    Entry,
    Program,
    assemble,
    decode,
    disassemble,
    encode,
    execute,
    expand,
    lint,
)

P0 = FabricParams()


def asm(text: str, **kw) -> Program:
    return assemble(text, dataclasses.replace(P0, **kw))


def issues(run: S.Run, tile: int | None = None) -> list[tuple]:
    return run.events("issue", tile)


def rules(prog: Program) -> set[str]:
    return {v.rule for v in lint(prog)}


# ======================================================================================
# encoding
# ======================================================================================
def test_constants():
    assert OPS == {"NOP": 0, "SEND": 1, "RECV": 2, "TAP": 3, "VADD": 4, "VMUL": 5, "DOT": 6, "FWD": 0xB,
                   "HALT": 0xE, "PERIODIC": 0xF}
    assert S.PORT_NAMES == ("prev", "next", "bus", "fifo")
    assert (ERR_MISSED, ERR_OPCODE, ERR_BUSY, ERR_UNDERFLOW, ERR_OVERFLOW, ERR_COLLISION, ERR_WCONF,
            ERR_DECOMP, S.ERR_LATE_SCHED, S.ERR_DESYNC, ERR_TAP_IDLE, S.ERR_FIFO_OVF) == tuple(1 << i for i in range(12))
    assert S.RESERVED_OPS == {7, 8, 9, 10, 12, 13}


def test_encode_field_order_default():
    # cw=24, aw=8: T[63:40] OP[39:36] PORT[35:34] UNIT[33:32] A[31:24] B[23:16] D[15:8] LEN[7:0]
    e = Entry(t=0xABCDEF, op=0x6, port=2, unit=1, a=0x12, b=0x34, d=0x56, len=0x78)
    w = encode(e, P0)
    assert w == ((0xABCDEF << 40) | (6 << 36) | (2 << 34) | (1 << 32) | (0x12 << 24) | (0x34 << 16)
                 | (0x56 << 8) | 0x78)
    assert P0.ew == 64
    assert decode(w, P0) == e
    assert e.n == 0x79


def test_encode_small_widths():
    p = FabricParams(cw=8, aw=4)      # ew = 8 + 16 + 12 = 36
    assert p.ew == 36
    e = Entry(t=0xFF, op=0xF, port=3, unit=3, a=0xF, b=0x1, d=0x2, len=0xFF)
    w = encode(e, p)
    assert w == (0xFF << 28) | (0xF << 24) | (3 << 22) | (3 << 20) | (0xF << 16) | (1 << 12) | (2 << 8) | 0xFF
    assert decode(w, p) == e


def test_encode_decode_random_round_trip():
    rng = random.Random(1)
    for p in (P0, FabricParams(cw=8, aw=4), FabricParams(cw=32, aw=10)):
        for _ in range(300):
            w = rng.getrandbits(p.ew)
            assert encode(decode(w, p), p) == w
            e = Entry(*(rng.randrange(1 << p.field_width(f)) for f in FabricParams.ENTRY_FIELDS))
            assert decode(encode(e, p), p) == e


@pytest.mark.parametrize("field,value", [("t", 1 << 24), ("op", 16), ("port", 4), ("unit", -1), ("a", 256),
                                         ("b", 300), ("d", 1 << 8), ("len", 256)])
def test_encode_out_of_range_names_field(field, value):
    e = dataclasses.replace(Entry(t=0, op=0), **{field: value})
    with pytest.raises(S.EncodeError, match=field):
        encode(e, P0)


def test_decode_rejects_wide_word():
    with pytest.raises(S.EncodeError):
        decode(1 << 64, P0)
    with pytest.raises(S.EncodeError):
        decode(-1, P0)


# ======================================================================================
# periodic expansion and compression
# ======================================================================================
def W(p, t, op, **kw):
    return encode(Entry(t=t, op=OPS[op] if isinstance(op, str) else op, **kw), p)


def hdr(p, base, period, nb, reps, **kw):
    return encode(Entry(t=base, op=0xF, a=period, b=nb, len=reps - 1, **kw), p)


def test_expand_good_block():
    p = P0
    words = [W(p, 50, "NOP"), hdr(p, 100, 6, 2, 3), W(p, 0, "NOP"), W(p, 4, "SEND", port=1, a=3),
             W(p, 200, "HALT")]
    xs = expand(words, p)
    assert [x.entry.t for x in xs] == [50, 100, 104, 106, 110, 112, 116, 200]
    assert [x.src for x in xs] == [0, 2, 3, 2, 3, 2, 3, 4]
    assert [x.rep for x in xs] == [None, 0, 0, 1, 1, 2, 2, None]
    assert [x.first_in_block for x in xs] == [False, True] + [False] * 6
    assert not any(x.poison for x in xs)
    assert xs[2].entry == Entry(t=104, op=1, port=1, a=3)


def test_expand_wraps_modulo_counter():
    p = FabricParams(cw=8)
    xs = expand([hdr(p, 250, 4, 1, 3), W(p, 1, "NOP")], p)
    assert [x.entry.t for x in xs] == [251, 255, 3]


@pytest.mark.parametrize("period,nb", [(0, 1), (5, 0), (5, 17)])
def test_expand_bad_header(period, nb):
    p = P0
    words = [hdr(p, 50, period, nb, 4), W(p, 60, "NOP"), W(p, 70, "HALT")]
    xs = expand(words, p)
    # one poison at T = base, then the following words as ordinary entries
    assert [(x.entry.t, x.poison, x.src) for x in xs] == [(50, True, 0), (60, False, 1), (70, False, 2)]
    assert "bad header" in xs[0].reason


def test_expand_truncated_block_is_bad_header():
    p = P0
    xs = expand([W(p, 10, "NOP"), hdr(p, 20, 4, 3, 2), W(p, 0, "NOP")], p)
    assert [(x.entry.t, x.poison, x.src) for x in xs] == [(10, False, 0), (20, True, 1), (0, False, 2)]


@pytest.mark.parametrize("body,expect", [
    # d >= P: entries before it, then the poison at base + d (r = 0)
    ([(0, "NOP"), (2, "NOP"), (5, "NOP")], [(10, False), (12, False), (15, True)]),
    # d <= d_prev
    ([(0, "NOP"), (3, "NOP"), (3, "NOP")], [(10, False), (13, False), (13, True)]),
    # a PERIODIC header in the body
    ([(0, "NOP"), (1, 0xF)], [(10, False), (11, True)]),
    # bad first body entry: the poison is the block's first entry
    ([(7, "NOP")], [(17, True)]),
])
def test_expand_bad_body(body, expect):
    p = P0
    words = [hdr(p, 10, 5, len(body), 4)] + [W(p, d, op) for d, op in body] + [W(p, 90, "HALT")]
    xs = expand(words, p)
    assert [(x.entry.t, x.poison) for x in xs] == expect + [(90, False)]
    assert xs[-1].src == len(body) + 1          # expansion continues after the block
    assert xs[0].first_in_block


def _random_stream(rng: random.Random, p: FabricParams, n: int) -> list[Entry]:
    """A legal expanded stream: strictly increasing T (mod 2**cw), periodic stretches."""
    out = []
    t = rng.randrange(3, 40)
    while len(out) < n:
        if rng.random() < 0.4:
            nb = rng.randint(1, 4)
            body = [Entry(t=0, op=rng.choice([0, 1, 2, 4]), port=rng.randrange(3), a=rng.randrange(8),
                          len=rng.randrange(3)) for _ in range(nb)]
            ds = sorted(rng.sample(range(12), nb))
            period = ds[-1] + 1 + rng.randrange(3)
            for r in range(rng.randint(1, 6)):
                for d, e in zip(ds, body):
                    out.append(e.replace(t=(t + r * period + d) % (1 << p.cw)))
            t += rng.randint(1, 6) * period + rng.randint(1, 5)
        else:
            out.append(Entry(t=t % (1 << p.cw), op=rng.choice([0, 1, 2, 3, 4, 5, 6, 0xB]), a=rng.randrange(5)))
            t += rng.randint(1, 4)
    return out


def test_compress_expand_property():
    rng = random.Random(7)
    for p in (P0, FabricParams(cw=8, aw=4), FabricParams(aw=4)):
        for _ in range(60):
            s = _random_stream(rng, p, rng.randint(1, 60))
            c = S.compress_periodic(s, p)
            back = [x.entry for x in expand([encode(e, p) for e in c], p)]
            assert back == s
            assert len(c) <= len(s)


def test_compress_finds_the_periodic6_block():
    p = P0
    body = [Entry(t=0, op=2, d=0), Entry(t=2, op=4, a=0, b=1, d=2), Entry(t=5, op=1, port=1, a=2)]
    s = [e.replace(t=100 + 6 * r + e.t) for r in range(100) for e in body]
    c = S.compress_periodic(s, p)
    assert c == [Entry(t=100, op=0xF, a=6, b=3, len=99)] + body


def test_compress_rejects_headers():
    with pytest.raises(ValueError):
        S.compress_periodic([Entry(t=5, op=0xF, a=1, b=1)], P0)


# ======================================================================================
# executor: hand-computed traces (docs/sched.md sections 3, 4, 6, 8)
# ======================================================================================
RING = """
.tile 0
.data 0x10: 11 22 33
@5   SEND port=next a=0x10 len=3
@6   HALT
.tile 1
@{r} RECV port=prev d=0x20 len=3
@{h} HALT
.tile 2
@2   HALT
"""


def test_ring_send_recv_trace():
    # l_path(1) = P_SEND + hop_lat + P_RECV = 3: word i on out at 6+i, on tile 1's in at
    # 7+i, pushed at the end of 7+i, poppable from 8+i; RECV at 8 has zero slack.
    prog = asm(RING.format(r=8, h=9))
    run = execute(prog)
    w = prog.schedules
    expect = sorted([
        (2, "issue", 2, w[2][0]),
        (5, "issue", 0, w[0][0]), (6, "issue", 0, w[0][1]),
        (6, "word", 0, 1, 11), (7, "word", 0, 1, 22), (8, "word", 0, 1, 33),
        (8, "issue", 1, w[1][0]), (9, "issue", 1, w[1][1]),
        (8, "write", 1, 0, 0x20, 11), (9, "write", 1, 0, 0x21, 22), (10, "write", 1, 0, 0x22, 33),
    ])
    assert run.trace == expect
    assert run.cycles == 11
    assert run.err == [0, 0, 0] and run.err_cnt == [None] * 3 and run.bus_err == 0
    assert run.halted == [True] * 3 and run.halt_cnt == [6, 9, 2]
    assert list(run.mems[1][0x20:0x23]) == [11, 22, 33]
    assert run.residual == [[0, 0, 0]] * 3
    assert lint(prog) == []


def test_ring_hop_lat3_path_latency():
    prog = asm(RING.format(r=10, h=11), hop_lat=3)      # l_path(1) = 5
    run = execute(prog)
    assert run.ok
    assert run.events("write", 1) == [(10, "write", 1, 0, 0x20, 11), (11, "write", 1, 0, 0x21, 22),
                                      (12, "write", 1, 0, 0x22, 33)]
    early = execute(asm(RING.format(r=9, h=11), hop_lat=3))
    assert early.first_error() == (9, "err", 1, ERR_UNDERFLOW)


def test_recv_early_underflow_and_completion():
    # RECV at 7: its pop in cycle 7 finds the buffer empty (word 0 is pushed at the end
    # of 7): UNDERFLOW at 7, no write. The tile halts (its HALT at 9 never issues) but the
    # RECV runs to completion: elements 1, 2 pop words 0, 1; word 2 stays in the buffer.
    prog = asm(RING.format(r=7, h=9))
    run = execute(prog)
    assert run.events("err") == [(7, "err", 1, ERR_UNDERFLOW)]
    assert run.err == [0, ERR_UNDERFLOW, 0] and run.err_cnt[1] == 7
    assert run.events("write", 1) == [(8, "write", 1, 0, 0x21, 11), (9, "write", 1, 0, 0x22, 22)]
    assert issues(run, 1) == [(7, "issue", 1, prog.schedules[1][0])]
    assert run.halted[1] and run.halt_cnt[1] is None
    assert run.residual[1] == [1, 0, 0]
    r = rules(prog)
    assert "RECV_EARLY" in r and "LEN" in r


BUS = """
.tile 0
.data 0: 7 8
@4 SEND port=bus a=0 len=2
@6 TAP port=bus d=0x40 len=2
@7 HALT
.tile 1
@{t} {op} port=bus d=0x40 len=2
@8 HALT
.tile 2
@2 HALT
"""


def test_bus_broadcast_trace():
    # word i on out[2] at 5+i, in the bus register (every in[2]) at 6+i; a TAP at
    # T_s + l_bus - 1 = 6 captures it (the sender may TAP its own broadcast). Tile 2
    # takes nothing: the words pass by, no buffer, no error.
    prog = asm(BUS.format(t=6, op="TAP"))
    run = execute(prog)
    assert run.ok
    assert run.events("word") == [(5, "word", 0, 2, 7), (6, "word", 0, 2, 8)]
    assert run.events("bus") == [(6, "bus", -1, 7), (7, "bus", -1, 8)]
    assert run.events("write") == sorted([
        (6, "write", 0, 2, 0x40, 7), (7, "write", 0, 2, 0x41, 8),
        (6, "write", 1, 2, 0x40, 7), (7, "write", 1, 2, 0x41, 8)])
    assert run.residual == [[0, 0, 0]] * 3
    assert lint(prog) == []
    late = execute(asm(BUS.format(t=7, op="TAP")))
    assert late.events("err") == [(8, "err", 1, ERR_TAP_IDLE)]
    assert late.events("write", 1) == [(7, "write", 1, 2, 0x40, 8)]


def test_recv_on_bus_is_opcode():
    prog = asm(BUS.format(t=7, op="RECV"))
    run = execute(prog)
    assert run.events("err") == [(7, "err", 1, ERR_OPCODE)]
    assert issues(run, 1) == [] and run.events("write", 1) == []
    assert "OPCODE" in rules(prog)


def test_bus_word_nobody_takes_is_lost():
    prog = asm("""
.tile 0
@4 SEND port=bus a=0 len=2
@5 HALT
.tile 1
@2 HALT
.tile 2
@2 HALT
""")
    run = execute(prog)
    assert run.ok and run.events("bus") == [(6, "bus", -1, 0), (7, "bus", -1, 0)]
    assert run.residual == [[0, 0, 0]] * 3
    assert rules(prog) == {"LEN"}


def test_fwd_relay_trace():
    # hop_lat = 2. SEND at 3: out[next] 4..6, tile 1 in[prev] 6..8. FWD at 6 samples 6..8,
    # drives out[next] 7..9; tile 2 in[prev] 9..11, poppable 10..12.
    prog = asm("""
.tile 0
.data 0: 5 6 7
@3 SEND port=next a=0 len=3
@4 HALT
.tile 1
@6 FWD port=next src=prev len=3
@7 HALT
.tile 2
@10 RECV port=prev d=8 len=3
@11 HALT
""", hop_lat=2)
    run = execute(prog)
    assert run.ok
    assert run.events("word") == sorted([(4, "word", 0, 1, 5), (5, "word", 0, 1, 6), (6, "word", 0, 1, 7),
                                         (7, "word", 1, 1, 5), (8, "word", 1, 1, 6), (9, "word", 1, 1, 7)])
    assert run.events("write") == [(10, "write", 2, 0, 8, 5), (11, "write", 2, 0, 9, 6),
                                   (12, "write", 2, 0, 10, 7)]
    assert run.residual[1] == [0, 0, 0]          # forwarded words are not buffered
    assert lint(prog) == []


def test_fwd_of_idle_input_is_idle():
    prog = asm("""
.tile 1
@6 FWD port=next src=prev len=3
@7 HALT
.tile 0
@2 HALT
.tile 2
@2 HALT
""")
    run = execute(prog)
    assert run.ok and run.events("word") == []
    assert "LEN" in rules(prog)


def test_alu_timing_and_read_semantics():
    # l_alu = 3: element i of VADD at n is written at the end of n+i+2.
    prog = asm("""
.tile 0
.data 0: 1 2 3
.data 0x10: 10 20 30
.data 0x20: 99
@2  VADD a=0 b=0x10 d=0x20 len=3
@4  SEND port=next a=0x20 len=2
@5  VMUL a=0 b=0x20 d=0x30 len=3
@8  DOT  a=0 b=0x10 d=0x40 len=3
@11 HALT
.tile 1
@7  RECV port=prev d=0 len=2
@8  HALT
.tile 2
@2  HALT
""", l_alu=3)
    run = execute(prog)
    assert run.ok
    alu = [e for e in run.events("write", 0) if e[3] == S.SRC_ALU]
    assert alu == [
        (4, "write", 0, 3, 0x20, 11), (5, "write", 0, 3, 0x21, 22), (6, "write", 0, 3, 0x22, 33),
        (7, "write", 0, 3, 0x30, 11), (8, "write", 0, 3, 0x31, 44), (9, "write", 0, 3, 0x32, 99),
        (12, "write", 0, 3, 0x40, 1 * 10 + 2 * 20 + 3 * 30)]
    # the SEND at 4 reads 0x20 before the VADD's write at the end of 4 lands (99); at 5 it
    # reads 0x21, which is written only at the end of 5 (so still 0)
    assert run.events("word", 0) == [(5, "word", 0, 1, 99), (6, "word", 0, 1, 0)]
    assert list(run.mems[1][0:2]) == [99, 0]


def test_alu_wraps_modulo_dw():
    prog = asm("""
.tile 0
.data 0: 0xFFF 0xABC
.data 8: 2 0x100
@2 VADD a=0 b=8 d=16 len=2
@4 VMUL a=0 b=8 d=18 len=2
@6 DOT a=0 b=8 d=20 len=2
@9 HALT
.tile 1
@2 HALT
""", dw=12, nt=2)
    run = execute(prog)
    m = run.mems[0]
    assert list(m[16:18]) == [(0xFFF + 2) % 4096, (0xABC + 0x100) % 4096]
    assert list(m[18:20]) == [(0xFFF * 2) % 4096, (0xABC * 0x100) % 4096]
    assert m[20] == (0xFFF * 2 + 0xABC * 0x100) % 4096


def test_wconf_alu_wins():
    # nt = 2: tile 1's next is tile 0's prev. SEND at 3 -> poppable at 6 -> RECV at 6
    # writes address 5 at the end of 6; VADD at 5 (l_alu = 2) also writes 5 at the end of 6.
    prog = asm("""
.tile 0
.data 0: 40 2
@5 VADD a=0 b=1 d=5 len=1
@6 RECV port=prev d=5 len=1
@7 HALT
.tile 1
.data 0: 77
@3 SEND port=next a=0 len=1
@4 HALT
""", nt=2)
    run = execute(prog)
    assert run.events("write") == [(6, "write", 0, 0, 5, 77), (6, "write", 0, 3, 5, 42)]
    assert run.events("err") == [(6, "err", 0, ERR_WCONF)]
    assert run.mems[0][5] == 42 and run.err_cnt[0] == 6
    assert issues(run, 0)[-1][0] == 6             # HALT at 7 never issues
    assert "WCONF" in rules(prog)


def test_bus_collision():
    prog = asm("""
.tile 0
.data 0: 1
@4 SEND port=bus a=0 len=1
@5 HALT
.tile 1
.data 0: 2
@4 SEND port=bus a=0 len=1
@5 HALT
""", nt=2)
    run = execute(prog)
    assert run.events("word") == [(5, "word", 0, 2, 1), (5, "word", 1, 2, 2)]
    assert run.events("bus") == [(6, "bus", -1, 1)]             # lowest-numbered driver
    assert run.events("err") == [(5, "err", -1, ERR_COLLISION)]
    assert run.bus_err == ERR_COLLISION and run.bus_err_cnt == 5
    assert run.err == [0, 0]
    assert "COLLISION" in rules(prog)


def test_overflow_cycle():
    # buf_d = 2: words reach tile 1's in[prev] at 5..8; pushed at 5, 6; full at 7.
    prog = asm("""
.tile 0
@3 SEND port=next a=0 len=4
@4 HALT
.tile 1
@2 HALT
.tile 2
@2 HALT
""", buf_d=2)
    run = execute(prog)
    assert run.events("err") == [(7, "err", 1, ERR_OVERFLOW)]
    assert run.err_cnt[1] == 7 and run.residual[1][0] == 2
    assert {"OVERFLOW", "LEN"} <= rules(prog)


def test_overflow_with_pop_in_same_cycle():
    # buf_d = 2, RECV at 7: occupancy 2 at 7, one pop, so the word of 7 fits; legal.
    txt = """
.tile 0
@3 SEND port=next a=0 len=4
@4 HALT
.tile 1
@{r} RECV port=prev d=0 len=4
@20 HALT
.tile 2
@2 HALT
"""
    assert execute(asm(txt.format(r=7), buf_d=2)).ok
    assert lint(asm(txt.format(r=7), buf_d=2)) == []
    late = execute(asm(txt.format(r=8), buf_d=2))
    assert late.first_error() == (7, "err", 1, ERR_OVERFLOW)


def test_tap_idle():
    prog = asm("""
.tile 1
@4 TAP port=prev d=0 len=1
@5 HALT
.tile 0
@2 HALT
.tile 2
@2 HALT
""")
    run = execute(prog)
    assert run.events("err") == [(4, "err", 1, ERR_TAP_IDLE)] and run.events("write") == []
    assert "TAP" in rules(prog)


def test_tap_on_ring_exact_and_not_buffered():
    # SEND at 3 on next: word on tile 1's in[prev] at 3 + P_SEND + hop_lat = 5.
    txt = """
.tile 0
.data 0: 9 8
@3 SEND port=next a=0 len=2
@4 HALT
.tile 1
@{t} TAP port=prev d=0 len=2
@9 HALT
.tile 2
@2 HALT
"""
    run = execute(asm(txt.format(t=5)))
    assert run.ok and run.events("write") == [(5, "write", 1, 0, 0, 9), (6, "write", 1, 0, 1, 8)]
    assert run.residual[1] == [0, 0, 0]
    late = execute(asm(txt.format(t=6)))
    assert late.events("err") == [(7, "err", 1, ERR_TAP_IDLE)]
    assert late.residual[1][0] == 1                # the untapped word 0 was buffered


@pytest.mark.parametrize("line,p", [
    ("@5 OP7 port=0 unit=0 a=0 b=0 d=0 len=1", {}),
    ("@5 NOP unit=1", {}),
    ("@5 SEND port=3 a=0", {}),
    ("@5 SEND port=bus a=0", {"bus": False}),
    ("@5 FWD port=next src=3", {}),
    ("@5 TAP port=bus", {"bus": False}),
    ("@5 RECV port=bus d=3", {}),
])
def test_opcode_error_not_issued(line, p):
    prog = asm(f".tile 0\n@3 NOP\n{line}\n@9 HALT\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n", **p)
    run = execute(prog)
    assert run.events("err") == [(5, "err", 0, ERR_OPCODE)]
    assert [e[0] for e in issues(run, 0)] == [3]             # no issue at 5, nothing after
    assert run.halted[0] and run.err_cnt[0] == 5
    assert run.events("word") == []
    assert "OPCODE" in rules(prog)


def test_busy():
    prog = asm("""
.tile 0
.data 0: 1 2 3
@5 SEND port=next a=0 len=3
@6 SEND port=next a=0 len=1
@9 HALT
.tile 1
@2 HALT
.tile 2
@2 HALT
""")
    run = execute(prog)
    assert run.events("err", 0) == [(6, "err", 0, ERR_BUSY)]
    assert [e[0] for e in issues(run, 0)] == [5]
    # the first SEND runs to completion
    assert run.events("word", 0) == [(6, "word", 0, 1, 1), (7, "word", 0, 1, 2), (8, "word", 0, 1, 3)]
    assert "BUSY" in rules(prog)
    # a different unit is free: no BUSY
    ok = asm(".tile 0\n@5 SEND port=next a=0 len=3\n@6 VADD len=2\n@9 HALT\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n")
    assert "BUSY" not in rules(ok) and execute(ok).err[0] == 0


@pytest.mark.parametrize("body,cycle", [
    ("@5 NOP\n@5 NOP", 6),          # duplicate T: the second is past at 6
    ("@10 NOP\n@7 NOP", 11),        # out of order
    ("@1 NOP", 2),                  # before FETCH_LEAD: head only at 2
    ("@0 NOP", 2),
])
def test_missed(body, cycle):
    prog = asm(f".tile 0\n{body}\n@40 HALT\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n")
    run = execute(prog)
    assert run.first_error() == (cycle, "err", 0, ERR_MISSED)
    assert run.err_cnt[0] == cycle


def test_missed_far_future_first_entry_cw8():
    p = dict(cw=8)
    prog = asm(".tile 0\n@200 NOP\n@201 HALT\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n", **p)
    assert execute(prog).first_error() == (2, "err", 0, ERR_MISSED)       # (200-2) mod 256 >= 128
    assert "FIRST" in rules(prog)
    ok = asm(".tile 0\n@129 NOP\n@130 HALT\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n", **p)
    assert execute(ok).ok and lint(ok) == []


def test_first_block_needs_header_cycle():
    # a block as the first entry: the header read makes its first entry ready at 3
    txt = (".tile 0\n.periodic @{b} period=2 reps=2\n  +0 NOP\n.end\n@20 HALT\n"
           ".tile 1\n@2 HALT\n.tile 2\n@2 HALT\n")
    assert execute(asm(txt.format(b=2))).first_error() == (3, "err", 0, ERR_MISSED)
    assert "HDR_GAP" in rules(asm(txt.format(b=2)))
    ok = execute(asm(txt.format(b=3)))
    assert ok.ok and [e[0] for e in issues(ok, 0)] == [3, 5, 20]


def test_no_halt_zero_words_missed():
    prog = asm(".tile 0\n@5 NOP\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n")
    run = execute(prog)
    assert run.first_error() == (6, "err", 0, ERR_MISSED)       # the zero word is NOP @0
    assert "HALT" in rules(prog)


def test_full_schedule_without_halt_waits():
    prog = asm(".tile 0\n@3 NOP\n@4 NOP\n@5 NOP\n@6 NOP\n.tile 1\n@2 HALT\n.tile 2\n@2 HALT\n", sd=4)
    run = execute(prog, 100)
    assert run.ok and not run.halted[0] and run.issue_counts[0] == 4
    assert "HALT" in rules(prog)


def test_decomp_poison():
    run = execute(asm(".tile 0\n@5 NOP\n@9 OP15 port=0 unit=0 a=0 b=1 d=0 len=1\n@12 NOP\n@20 HALT\n"
                      ".tile 1\n@2 HALT\n.tile 2\n@2 HALT\n"))
    assert run.events("err") == [(9, "err", 0, ERR_DECOMP)]
    assert [e[0] for e in issues(run, 0)] == [5]
    # bad body: d = 7 >= P = 6; NOP @20 issues, the poison at 27 raises DECOMP
    prog = asm(".tile 0\n@20 OP15 port=0 unit=0 a=6 b=2 d=0 len=4\n@0 NOP\n@7 NOP\n@60 HALT\n"
               ".tile 1\n@2 HALT\n.tile 2\n@2 HALT\n")
    run = execute(prog)
    assert [e[0] for e in issues(run, 0)] == [20] and run.events("err") == [(27, "err", 0, ERR_DECOMP)]
    assert "DECOMP" in rules(prog)
    # a poison already in the past raises MISSED instead
    run = execute(asm(".tile 0\n@30 NOP\n@20 OP15 port=0 unit=0 a=0 b=1 d=0 len=1\n@40 HALT\n"
                      ".tile 1\n@2 HALT\n.tile 2\n@2 HALT\n"))
    assert run.events("err") == [(31, "err", 0, ERR_MISSED)]


def test_errors_are_sticky_new_bits_only():
    # two underflows (same bit): one event; err_cnt stays at the first
    prog = asm(".tile 1\n@4 RECV port=prev d=0 len=3\n@9 HALT\n.tile 0\n@2 HALT\n.tile 2\n@2 HALT\n")
    run = execute(prog)
    assert run.events("err") == [(4, "err", 1, ERR_UNDERFLOW)]
    assert [c.cycle for c in run.errors] == [4, 5, 6] and run.err_cnt[1] == 4


def test_counter_wrap_cw8_legal():
    # cw = 8: entries before the wrap, transfer and ALU across 255 -> 0; lint-clean
    # (each tile's span is 128 = half: not exceeding it).
    p = dict(cw=8, nt=2)
    prog = asm("""
.tile 0
.data 0: 1 2 3 4
@129 NOP
@250 SEND port=next a=0 len=4
@251 HALT
.tile 1
.data 0x10: 100 200 300 400
@129 NOP
@253 RECV port=prev d=0x20 len=4
@254 VADD a=0x20 b=0x10 d=0x30 len=4
@1   HALT
""", **p)
    run = execute(prog)
    w = prog.schedules
    expect = sorted(
        [(129, "issue", 0, w[0][0]), (250, "issue", 0, w[0][1]), (251, "issue", 0, w[0][2]),
         (129, "issue", 1, w[1][0]), (253, "issue", 1, w[1][1]), (254, "issue", 1, w[1][2]),
         (257, "issue", 1, w[1][3])]
        + [(251 + i, "word", 0, 1, i + 1) for i in range(4)]
        + [(253 + i, "write", 1, 0, 0x20 + i, i + 1) for i in range(4)]
        + [(255 + i, "write", 1, 3, 0x30 + i, 100 * (i + 1) + i + 1) for i in range(4)])
    assert run.trace == expect
    assert run.ok and run.halt_cnt == [251, 1] and run.cycles == 259
    assert lint(prog) == []


def test_counter_wrap_long_program():
    # a program running through two wraps: fine for the executor, but SPAN is exceeded
    p = dict(cw=8, nt=2)
    prog = asm("""
.tile 0
.data 0: 5
@100 NOP
@200 NOP
@40  SEND port=next a=0 len=1
@140 NOP
@240 NOP
@90  HALT
.tile 1
@100 NOP
@200 NOP
@43  RECV port=prev d=1 len=1
@44  HALT
""", **p)
    run = execute(prog)
    assert run.ok
    assert [e[0] for e in issues(run, 0)] == [100, 200, 296, 396, 496, 602]
    assert run.events("write") == [(299, "write", 1, 0, 1, 5)]
    assert rules(prog) == {"SPAN"}


def test_execute_cycle_limit_and_argument_order():
    prog = asm(RING.format(r=8, h=9))
    full = execute(prog)
    part = execute(prog, 8)
    assert part.trace == [e for e in full.trace if e[0] < 8] and part.cycles == 8
    assert execute(prog, prog.params, 8).trace == part.trace     # the contract's order
    with pytest.raises(ParamError):
        execute(prog, dataclasses.replace(P0, nt=4), 8)
    with pytest.raises(ParamError):
        execute(prog, -1)


def test_execute_rejects_oversized_schedule():
    p = dataclasses.replace(P0, sd=4)
    prog = Program(p, [[0] * 5, [], []])
    with pytest.raises(S.ProgramError, match="tile 0"):
        execute(prog)
    assert "SIZE" in rules(prog)


def test_program_validation():
    with pytest.raises(S.ProgramError, match="tile 1 entry 0"):
        Program(P0, [[], [1 << 64], []])
    with pytest.raises(S.ProgramError, match="tile 2"):
        Program(P0, [[], [], []], [{}, {}, {256: 1}])
    with pytest.raises(S.ProgramError):
        Program(P0, [[], []])
    prog = Program(P0, [[], [], []], [{1: -1}, [0, 3], None])
    assert prog.data == [{1: 0xFFFF}, {1: 3}, {}]
    assert prog.data_image(0)[1] == 0xFFFF and len(prog.data_image(2)) == 256
    assert prog.schedule_image(1) == [0] * 64


# ======================================================================================
# linter: every rule, negative (legal) and positive
# ======================================================================================
BASE = """
.tile 0
.data 0: 1 2 3 4
@3 SEND port=next a=0 len=4
@4 VADD a=0 b=0 d=0x40 len=4
@9 HALT
.tile 1
@6 RECV port=prev d=0 len=4
@10 HALT
.tile 2
@2 HALT
"""


def test_lint_base_is_clean():
    prog = asm(BASE)
    assert lint(prog) == [] and execute(prog).ok


@pytest.mark.parametrize("rule,text,p", [
    ("FIRST", BASE.replace("@3 SEND", "@1 SEND"), {}),
    ("ORDER", BASE.replace("@4 VADD", "@3 VADD"), {}),
    ("HALT", BASE.replace("@9 HALT\n", ""), {}),
    ("HALT", BASE.replace("@9 HALT\n", "@9 HALT\n@11 NOP\n"), {}),
    ("SIZE", BASE.replace("@9 HALT", "@5 NOP\n@6 NOP\n@9 HALT"), {"sd": 4}),
    ("OPCODE", BASE.replace("@4 VADD", "@4 VADD unit=1"), {}),
    ("DECOMP", BASE.replace("@9 HALT", "@7 OP15 port=0 unit=0 a=0 b=1 d=0 len=1\n@9 HALT"), {}),
    ("HDR_GAP", BASE.replace("@9 HALT", ".periodic @5 period=2 reps=2\n +0 NOP\n.end\n@9 HALT"), {}),
    ("BUSY", BASE.replace("@4 VADD a=0 b=0 d=0x40 len=4", "@4 SEND port=next len=1"), {}),
    ("RECV_EARLY", BASE.replace("@6 RECV", "@5 RECV"), {}),
    ("OVERFLOW", BASE.replace("@6 RECV", "@9 RECV"), {"buf_d": 2}),
    ("LEN", BASE.replace("d=0 len=4", "d=0 len=3"), {}),
    ("TAP", BASE.replace("@6 RECV", "@6 TAP"), {}),
    ("COLLISION", BASE.replace("port=next", "port=bus").replace("@2 HALT", "@3 SEND port=bus\n@4 HALT")
     .replace("@6 RECV port=prev", "@5 TAP port=bus"), {}),
    # RECV element 2 writes address 2 at the end of 8; so does a VADD at 7 (l_alu = 2)
    ("WCONF", BASE.replace("@10 HALT", "@7 VADD d=2\n@10 HALT"), {}),
    ("SPAN", BASE.replace("@10 HALT", "@200 NOP\n@300 HALT"), {"cw": 9}),
])
def test_lint_rule_positive(rule, text, p):
    prog = asm(text, **p)
    vs = lint(prog)
    assert rule in {v.rule for v in vs}, vs
    v = next(v for v in vs if v.rule == rule)
    assert rule in v.message and f"tile {v.tile}" in v.message


@pytest.mark.parametrize("rule,text,p", [
    # the legal neighbours of the positive cases (BASE itself is clean: test above)
    ("FIRST", BASE.replace("@3 SEND", "@2 SEND").replace("@6 RECV", "@5 RECV"), {}),
    ("ORDER", BASE.replace("@9 HALT", "@5 NOP\n@9 HALT"), {}),
    ("HALT", BASE.replace("@2 HALT", "@2 NOP\n@3 HALT"), {}),
    ("SIZE", BASE, {"sd": 4}),
    ("OPCODE", BASE.replace("@4 VADD", "@4 VMUL"), {}),
    ("DECOMP", BASE.replace("@9 HALT", ".periodic @6 period=1 reps=3\n +0 NOP\n.end\n@9 HALT"), {}),
    ("BUSY", BASE.replace("@9 HALT", "@7 SEND port=prev a=0 len=1\n@9 HALT"), {}),
    ("RECV_EARLY", BASE.replace("@6 RECV", "@8 RECV"), {}),
    ("LEN", BASE.replace("@4 VADD", "@4 DOT"), {}),
    ("HDR_GAP", BASE.replace("@9 HALT", ".periodic @6 period=2 reps=2\n +0 NOP\n.end\n@9 HALT"), {}),
    ("OVERFLOW", BASE.replace("@6 RECV", "@7 RECV"), {"buf_d": 2}),
    ("TAP", BASE.replace("@6 RECV", "@5 TAP"), {}),
    ("COLLISION", BASE.replace("port=next", "port=bus").replace("@2 HALT", "@7 SEND port=bus\n@8 HALT")
     .replace("@6 RECV port=prev", "@5 TAP port=bus"), {}),
    ("WCONF", BASE.replace("@10 HALT", "@7 VADD d=1\n@10 HALT"), {}),
    ("SPAN", BASE.replace("@10 HALT", "@200 NOP\n@250 HALT"), {"cw": 9}),
])
def test_lint_rule_negative(rule, text, p):
    prog = asm(text, **p)
    assert rule not in rules(prog)


def test_lint_two_broadcasts_fully_consumed():
    # every tile TAPs both broadcasts (the sender's own in[2] included)
    txt = """
.tile 0
@3 SEND port=bus a=0 len=2
@5 TAP port=bus d=0x80 len=2
@9 TAP port=bus d=0x90 len=2
@11 HALT
.tile 1
@5 TAP port=bus d=0x80 len=2
@9 TAP port=bus d=0x90 len=2
@11 HALT
.tile 2
@5 TAP port=bus d=0x80 len=2
@{s} SEND port=bus a=0 len=2
@9 TAP port=bus d=0x90 len=2
@11 HALT
"""
    good = asm(txt.format(s=7))
    assert lint(good) == [] and execute(good).ok
    bad = asm(txt.format(s=6))       # drives 7, 8 -> no overlap with 4, 5 but the TAPs at 9 miss
    assert "TAP" in rules(bad)
    clash = asm(txt.format(s=4).replace("@5 TAP port=bus d=0x80 len=2\n@4 SEND", "@4 SEND").replace(
        "@4 SEND port=bus a=0 len=2\n@9", "@4 SEND port=bus a=0 len=2\n@5 TAP port=bus d=0x80 len=2\n@9"))
    assert execute(clash).first_error() == (5, "err", -1, ERR_COLLISION)


# ======================================================================================
# assembler
# ======================================================================================
DOC_EXAMPLE = """
# comments run from '#' to the end of the line
.tile 0                              # the entries below belong to tile 0 (tiles in any order)
.data 0x10: 1 2 3 -4                 # data words from address 0x10 (wrapped to dw bits)
@1      SEND  port=next a=0x10 len=10
@30     VADD  a=0 b=16 d=32 len=4
@40     FWD   port=next src=prev len=4
.periodic @200 period=6 reps=100     # header: T=200, P=6, n_body from the body, LEN=reps-1
  +0    RECV  port=prev d=0 len=1    # body entries: phase offsets
  +5    SEND  port=next a=2 len=1
.end
@900    HALT
.tile 1
@6      RECV  port=prev d=0 len=10
@950    HALT
"""


def test_assemble_doc_example():
    prog = assemble(DOC_EXAMPLE, P0)
    e0 = prog.entries(0)
    assert e0[0] == Entry(t=1, op=1, port=1, a=0x10, len=9)
    assert e0[1] == Entry(t=30, op=4, a=0, b=16, d=32, len=3)
    assert e0[2] == Entry(t=40, op=0xB, port=1, b=0, len=3)
    assert e0[3] == Entry(t=200, op=0xF, a=6, b=2, len=99)
    assert e0[4] == Entry(t=0, op=2, port=0, d=0, len=0) and e0[5] == Entry(t=5, op=1, port=1, a=2, len=0)
    assert e0[6] == Entry(t=900, op=0xE)
    assert prog.data[0] == {0x10: 1, 0x11: 2, 0x12: 3, 0x13: 0xFFFC}
    assert prog.schedules[2] == []
    assert assemble(disassemble(prog), P0) == prog


def test_assemble_defaults_and_numbers():
    prog = asm(".tile 1\n@006 TAP port=2 d=0b101\n@0x10 FWD port=1 src=bus len=0x2\n@20 NOP\n")
    assert prog.entries(1) == [Entry(t=6, op=3, port=2, d=5), Entry(t=16, op=0xB, port=1, b=2, len=1),
                               Entry(t=20, op=0)]


@pytest.mark.parametrize("text,line,what", [
    ("@5 NOP", 1, "tile"),
    (".tile 0\n@5 JUMP", 2, "unknown opcode"),
    (".tile 0\n\n@5 SEND len=0", 3, "len"),
    (".tile 0\n@5 SEND len=257", 2, "len"),
    (".tile 0\n@5 SEND port=4", 2, "port"),
    (".tile 0\n@5 SEND a=256", 2, "a="),
    (".tile 0\n@16777216 NOP", 2, "T="),
    (".tile 3", 1, "tile"),
    (".tile 0\n.tile 0", 2, "twice"),
    (".tile 0\n.data 0xFF: 1 2", 2, "0x100"),
    (".tile 0\n.periodic @5 period=0 reps=2\n+0 NOP\n.end", 2, "period"),
    (".tile 0\n.periodic @5 period=3 reps=2\n+3 NOP\n.end", 3, "phase"),
    (".tile 0\n.periodic @5 period=3 reps=2\n+1 NOP\n+1 NOP\n.end", 4, "phase"),
    (".tile 0\n.periodic @5 period=3 reps=2\n.end", 3, "no body"),
    (".tile 0\n.periodic @5 period=3 reps=2\n+1 NOP", 2, ".end"),
    (".tile 0\n+1 NOP", 2, "outside"),
    (".tile 0\n@5 SEND a=1 a=2", 2, "twice"),
    (".tile 0\n@5 SEND b=1 src=2", 2, "src"),
    (".tile 0\n@5 FWD src=1 b=2", 2, "not both"),
    (".tile 0\n@5 PERIODIC", 2, "periodic"),
    (".tile 0\n@5 OP16", 2, "OP15"),
    (".tile 0\n@5 NOP x", 2, "field=value"),
    (".tile 0\n.data 0: 1 zz", 2, "zz"),
])
def test_assemble_errors_name_line(text, line, what):
    with pytest.raises(S.AsmError) as ei:
        assemble(text, P0)
    assert ei.value.line == line
    assert str(ei.value).startswith(f"line {line}:")
    assert what.lower() in str(ei.value).lower()


def _random_word_program(rng: random.Random, p: FabricParams) -> Program:
    scheds = []
    for _ in range(p.nt):
        ws = []
        for _ in range(rng.randrange(p.sd + 3)):
            r = rng.random()
            if r < 0.35:
                ws.append(rng.getrandbits(p.ew))
            elif r < 0.5:    # a well-formed or malformed periodic header
                ws.append(encode(Entry(t=rng.randrange(1 << p.cw), op=0xF, a=rng.choice([0, 1, 5]),
                                       b=rng.choice([0, 1, 2, 3, 17 % (1 << p.aw)]), len=rng.randrange(256),
                                       port=rng.choice([0, 0, 0, 1]), d=rng.choice([0, 0, 0, 2])), p))
            else:
                e = Entry(t=rng.randrange(8), op=rng.randrange(16), port=rng.choice([0, 1, 2, 3]),
                          unit=rng.choice([0, 0, 0, 0, 1, 3]), a=rng.randrange(1 << p.aw),
                          b=rng.choice([0, 1, 2, 3, 4, rng.randrange(1 << p.aw)]), d=rng.randrange(1 << p.aw),
                          len=rng.randrange(256))
                ws.append(encode(e, p))
        scheds.append(ws)
    data = [{a: rng.randrange(-5, 1 << p.dw) for a in rng.sample(range(p.words), rng.randrange(12))}
            for _ in range(p.nt)]
    return Program(p, scheds, data)


def test_disassemble_round_trip_any_image():
    rng = random.Random(11)
    ps = (P0, FabricParams(cw=8, aw=4, nt=2, sd=8), FabricParams(cw=32, aw=10, dw=32, nt=4, sd=40, bus=False))
    blocks = 0
    for i in range(250):
        p = ps[i % 3]
        prog = _random_word_program(rng, p)
        txt = disassemble(prog)
        back = assemble(txt, p)
        assert back == prog, i
        assert disassemble(back) == txt                       # canonical form is a fixed point
        blocks += txt.count(".periodic")
    assert blocks > 10                                        # well-formed blocks were exercised


def test_disassemble_forms():
    p = P0
    prog = Program(p, [[encode(Entry(t=5, op=7, port=1, unit=2, a=3, b=4, d=5, len=6), p),
                        encode(Entry(t=6, op=1, port=3), p),
                        encode(Entry(t=7, op=0xB, port=1, b=2, len=3), p),
                        encode(Entry(t=8, op=0xF, a=0, b=1), p)], [], []])
    lines = [ln.split() for ln in disassemble(prog).splitlines() if ln.startswith("@")]
    assert lines[0] == ["@5", "OP7", "port=1", "unit=2", "a=3", "b=4", "d=5", "len=7"]
    assert lines[1][1] == "OP1"
    assert lines[2] == ["@7", "FWD", "port=next", "src=bus", "len=4"]
    assert lines[3][1] == "OP15"


def test_random_program_text_round_trip():
    for seed in range(5):
        prog = S.random_program(seed, P0)
        assert assemble(disassemble(prog), P0) == prog


# ======================================================================================
# random legal programs and illegal variants
# ======================================================================================
PSETS = [
    FabricParams(),
    FabricParams(cw=8, nt=2, buf_d=2, hop_lat=2, l_alu=1),
    FabricParams(nt=5, aw=4, sd=16, buf_d=3, l_alu=4, hop_lat=3),
    FabricParams(nt=4, bus=False, buf_d=4),
    FabricParams(cw=8, nt=3, aw=6, buf_d=4, l_alu=3),
]


def test_random_programs_are_legal(seed):
    kinds = set()
    for i in range(40):
        p = PSETS[i % len(PSETS)]
        prog = S.random_program(seed + i, p, wrap=(p.cw == 8 and i % 3 == 0))
        vs = lint(prog)
        assert vs == [], (i, p, vs[:3])
        run = execute(prog)
        assert run.ok and all(run.halted) and run.residual == [[0, 0, 0]] * p.nt
        kinds.update(prog.meta["kinds"])
    assert {"alu", "nop", "periodic_alu", "periodic_ring", "transfer:bus", "transfer:next",
            "transfer:prev"} <= kinds
    assert any(k.count("-") for k in kinds)                   # FWD relays


def test_random_program_wrap_crosses_counter_wrap(seed):
    p = FabricParams(cw=8, nt=3, aw=6)
    crossed = 0
    for i in range(10):
        prog = S.random_program(seed + i, p, wrap=True, n_txn=20)
        assert lint(prog) == []
        run = execute(prog)
        crossed += any(e[0] >= 256 for e in run.trace if e[1] in ("word", "write"))
    assert crossed >= 5


@pytest.mark.parametrize("rule", S.ILLEGAL_RULES)
def test_illegal_variants_predicted(rule, seed):
    done = 0
    for i in range(60):
        p = PSETS[i % len(PSETS)]
        prog = S.random_program(seed + 1000 + i, p)
        try:
            var, exp = S.illegal_variant(seed + i, prog, rule)
        except ValueError:
            continue
        run = execute(var)
        first = run.first_error()
        assert first is not None and (first[0], first[2], first[3]) == (exp.cycle, exp.tile, exp.bits), (i, exp)
        if exp.tile >= 0:
            assert run.err_cnt[exp.tile] == exp.count and run.err[exp.tile] & exp.bits
        else:
            assert run.bus_err_cnt == exp.count and run.bus_err == ERR_COLLISION
        assert exp.rule in rules(var)
        done += 1
        if done == 6:
            break
    assert done >= 3, rule


def test_every_decomp_kind_is_a_stratum_and_predicted():
    """DECOMP has a stratum per kind of malformation (DECOMP_KINDS): a sweep of the strata
    breaks a block's body in every tile, not only its header (the body checks of tile 2's
    fetch dropped survived a sweep that inserted bad headers: sched_ring@3aa5 m024), and
    each kind raises DECOMP where predicted, at the entry the lint names."""
    p = FabricParams(nt=3, aw=6)
    seen = set()
    for i in range(40):
        prog = S.random_program(500 + i, p)
        for kind, what in enumerate(S.DECOMP_KINDS):
            for t in range(p.nt):
                try:
                    var, exp = S.illegal_variant(i, prog, "DECOMP", stratum=t + p.nt * kind)
                except ValueError:
                    continue
                assert exp.tile == t
                assert ("bad header" in exp.detail) == (kind == 0), (what, exp.detail)
                assert ("phase d" in exp.detail) == (kind == 2), (what, exp.detail)
                first = execute(var).first_error()
                assert (first[0], first[2], first[3]) == (exp.cycle, exp.tile, exp.bits), (i, exp)
                assert "DECOMP" in rules(var)
                seen.add((kind, t))
    assert seen == {(k, t) for k in range(len(S.DECOMP_KINDS)) for t in range(p.nt)}


def test_illegal_variant_errors():
    prog = S.random_program(1, P0)
    with pytest.raises(ValueError, match="unknown rule"):
        S.illegal_variant(1, prog, "NOPE")
    with pytest.raises(ValueError, match="plan"):
        S.illegal_variant(1, S.schedule_c_program(P0), "RECV_EARLY")


# ======================================================================================
# compressed vs expanded
# ======================================================================================
def _expanded_program(prog: Program) -> Program:
    p = prog.params
    scheds = [[encode(x.entry, p) for x in expand(s, p)] for s in prog.schedules]
    pe = dataclasses.replace(p, sd=max(p.sd, max(len(s) for s in scheds)))
    return Program(pe, scheds, prog.data)


def test_compressed_and_expanded_same_trace(seed):
    n = 0
    for i in range(20):
        prog = S.random_program(seed + 50 + i, PSETS[i % 2],
                                kinds={"periodic_ring": 2, "periodic_alu": 2, "ring": 1})
        if not any(e.op == 0xF for t in range(prog.params.nt) for e in prog.entries(t)):
            continue
        a, b = execute(prog), execute(_expanded_program(prog))
        assert a.trace == b.trace and all((x == y).all() for x, y in zip(a.mems, b.mems))
        n += 1
        # and the re-compressed form (compress_periodic) too
        p = prog.params
        rec = Program(p, [[encode(e, p) for e in S.compress_periodic([x.entry for x in expand(s, p)], p)]
                          for s in prog.schedules], prog.data)
        assert execute(rec).trace == a.trace and lint(rec) == []
    assert n >= 5


# ======================================================================================
# directed programs (patent examples)
# ======================================================================================
def test_fig2a():
    p = FabricParams(hop_lat=3)
    prog = S.fig2a_program(p)
    run = execute(prog)
    assert run.ok and lint(prog) == []
    m = [prog.data_image(t) for t in range(3)]
    mask = 0xFFFF
    x = [int(v) for v in m[0][0x20:0x2A]]
    k1, k2 = [int(v) for v in m[1][0x10:0x1A]], [int(v) for v in m[1][0x30:0x3A]]
    k3, k4 = [int(v) for v in m[2][0x10:0x1A]], [int(v) for v in m[2][0x30:0x3A]]
    y = [((a + b) * c + a) & mask for a, b, c in zip(x, k1, k2)]
    z = [((a + b) * c) & mask for a, b, c in zip(y, k3, k4)]
    assert list(run.mems[1][0x00:0x0A]) == x and list(run.mems[2][0x00:0x0A]) == y
    assert list(run.mems[0][0x00:0x0A]) == z
    o = 1                                                     # patent time + 1 (rule FIRST)
    assert issues(run, 0)[0][0] == 1 + o
    rb = [e[0] for e in run.events("write", 1) if e[3] == 0]
    assert rb == list(range(6 + o, 16 + o))                   # data occupies B at 006..015
    assert all(16 + o <= e[0] <= 62 + o for e in issues(run, 1)[1:4])
    assert issues(run, 1)[4][0] == 63 + o
    rc = [e[0] for e in run.events("write", 2) if e[3] == 0]
    assert 63 + o <= rc[0] and rc[-1] <= 82 + o
    assert all(83 + o <= e[0] <= 130 + o for e in issues(run, 2)[1:3]) and issues(run, 2)[3][0] == 131 + o
    ra = [e[0] for e in run.events("write", 0) if e[3] == 0]
    assert len(ra) == 10 and ra[-1] <= 148 + o


def test_fig2a_needs_hop_lat3():
    with pytest.raises(ParamError, match="hop_lat"):
        S.fig2a_program(P0)
    with pytest.raises(ParamError, match="nt"):
        S.fig2a_program(FabricParams(hop_lat=3, nt=4))


@pytest.mark.parametrize("bus", [True, False])
def test_schedule_c(bus):
    p = FabricParams(bus=bus)
    prog = S.schedule_c_program(p)
    run = execute(prog)
    assert run.ok and lint(prog) == []
    m0 = prog.data_image(0)
    s = [int(m0[i] + m0[64 + i]) & 0xFFFF for i in range(4)]
    vadd = [e for e in issues(run, 0) if decode(e[3], p).op == OPS["VADD"]]
    send = [e for e in issues(run, 0) if decode(e[3], p).op == OPS["SEND"]]
    assert vadd[0][0] == 30 and send[0][0] == 43
    words = run.events("word", 0)
    assert words[0][0] == 44 and [w[4] for w in words] == s       # leaves the port at 043 + P_SEND
    got = [e[5] for e in run.events("write", 1) if e[3] != S.SRC_ALU]
    assert got == s


def test_periodic6():
    p = FabricParams()
    comp, expd = S.periodic6_program(p)
    assert len(comp.schedules[1]) == 5 and len(expd.schedules[1]) == 301 and expd.params.sd >= 301
    a, b = execute(comp), execute(expd)
    assert a.ok and b.ok and lint(comp) == [] and lint(expd) == []
    assert a.trace == b.trace                                  # identical issue (and every other) event
    b1 = 10 + p.l_path(1)
    assert [e[0] for e in issues(a, 1)][:6] == [b1, b1 + 2, b1 + 5, b1 + 6, b1 + 8, b1 + 11]
    d1 = comp.data_image(1)
    x0, c = int(comp.data_image(0)[0]), int(d1[1])
    assert int(a.mems[2][1]) == sum(x0 + r + c for r in range(100)) & 0xFFFF


def test_large_random_program_runs_clean():
    """A dense 2000-cycle program (400 transactions) is legal and runs without error
    (its speed is measured by `make bench`, not asserted here)."""
    p = FabricParams(sd=1024)
    prog = S.random_program(3, p, n_txn=400, span=2000, max_len=16)
    run = execute(prog)
    assert lint(prog) == []
    assert run.ok and run.cycles >= 1900 and len(run.trace) > 3000


# ======================================================================================
# MAC array and VPU (docs/sched.md section 11)
# ======================================================================================
PK = dataclasses.replace(P0, nt=2, k=2, dw=8, accw=16, hop_lat=1)


def masm(text: str, **kw) -> Program:
    return assemble(text, dataclasses.replace(PK, **kw))


def writes(run: S.Run, tile: int) -> list[tuple]:
    return [e[:1] + e[3:] for e in run.events("write", tile)]


MAC1 = """
.tile 0
.data 0: 1 2 3 4          # weight rows: row 0 = (1, 2), row 1 = (3, 4)
.data 8: 1 1 2 -1         # x_0 = (1, 1), x_1 = (2, -1)
@2  LDW    a=0 len=2
@4  SWPW
@5  MATVEC b=8 d=16 len=2
@20 HALT
.tile 1
@20 HALT
"""


def test_mac_ldw_swpw_matvec_trace():
    run = execute(masm(MAC1))
    assert run.ok
    # LDW busy wload [2, 3]; SWPW at 4; MATVEC reads x_i at 5+i, writes at the end of 5+i+1
    # y_0 = (1*1 + 1*3, 1*2 + 1*4) = (4, 6); y_1 = (2 - 3, 4 - 4) = (-1, 0) -> 0xFF, 0
    assert writes(run, 0) == [(6, 4, 16, 4), (6, 5, 17, 6), (7, 4, 18, 0xFF), (7, 5, 19, 0)]
    assert list(run.mems[0][16:20]) == [4, 6, 0xFF, 0]
    assert run.events("psum") == []


def test_mac_front_is_zero_before_swpw():
    run = execute(masm(MAC1.replace("@4  SWPW\n", "")))
    assert run.ok and list(run.mems[0][16:20]) == [0, 0, 0, 0]


def test_mac_psum_out_replaces_the_write():
    run = execute(masm(MAC1.replace("MATVEC b=8", "MATVEC psum_out=1 b=8")))
    assert run.ok
    assert run.events("write", 0) == []
    # valid on psum_out during n+i+l_mm: 7 and 8 (lanes mod 2**accw)
    assert run.events("psum") == [(7, "psum", 0, (4, 6)), (8, "psum", 0, (0xFFFF, 0))]


CHAIN = """
.tile 0
.data 0: 1 2 3 4
.data 8: 1 1 2 -1
@2  LDW    a=0 len=2
@4  SWPW
@5  MATVEC psum_out=1 b=8 len=2
@30 HALT
.tile 1
.data 0: 1 0 0 1          # identity
.data 8: 5 6 7 8
@2  LDW    a=0 len=2
@4  SWPW
@{t} MATVEC psum_in=1 b=8 d=16 len=2
@30 HALT
"""


def test_psum_chain_timing():
    # psum word i on tile 0 at 7+i reaches tile 1's psum_in at 8+i (hop_lat 1); tile 1's
    # MATVEC at n samples at n+i+1, so n = 5 + hop_lat + 1 = 7
    prog = masm(CHAIN.format(t=7))
    run = execute(prog)
    assert run.ok and lint(prog) == []
    assert writes(run, 1) == [(8, 4, 16, 9), (8, 5, 17, 12), (9, 4, 18, 6), (9, 5, 19, 8)]


def test_psum_chain_hop_lat_3():
    prog = masm(CHAIN.format(t=9), hop_lat=3)
    run = execute(prog)
    assert run.ok and list(run.mems[1][16:20]) == [9, 12, 6, 8]


@pytest.mark.parametrize("t", [6, 8])
def test_psum_idle_sample_raises_tap_idle(t):
    prog = masm(CHAIN.format(t=t))
    run = execute(prog)
    # t=6: vector 0 samples at 7 (idle), vector 1 at 8 (psum word 0);
    # t=8: vector 0 samples at 9 (word 1), vector 1 at 10 (idle)
    idle = 7 if t == 6 else 10
    assert run.events("err") == [(idle, "err", 1, ERR_TAP_IDLE)]
    assert "TAP" in rules(prog)
    if t == 6:   # the idle sample adds 0: y_0 = 5, 6 (x_0 only); y_1 = x_1 + psum 0
        assert list(run.mems[1][16:20]) == [5, 6, 11, 14]
    else:
        assert list(run.mems[1][16:20]) == [4, 6, 7, 8]


def test_vpu_trace():
    prog = masm("""
.tile 0
.data 0: 5 -7 100 -1
.data 8: -2 3 100 1
@2  VPU a=0 b=8 d=16 len=4
@20 HALT
.tile 1
@20 HALT
""", vpu_shift=1)
    run = execute(prog)
    assert run.ok
    # signed: 5-2=3 ->1; -7+3=-4 ->0; 100+100=200 (no wrap of the sum) ->100; -1+1=0 ->0
    assert writes(run, 0) == [(3, 3, 16, 1), (4, 3, 17, 0), (5, 3, 18, 100), (6, 3, 19, 0)]


def test_mac_busy_cases():
    base = ".tile 0\n{body}\n@40 HALT\n.tile 1\n@40 HALT\n"
    cases = [
        ("@2 LDW a=0 len=2\n@3 LDW a=0 len=2", 3),        # wload [2, 3]
        ("@2 LDW a=0 len=2\n@3 SWPW", 3),                  # SWPW needs wload
        ("@2 MATVEC b=8 len=3\n@4 SWPW", 4),               # SWPW needs mac [2, 4]
        ("@2 MATVEC b=8 len=3\n@4 MATVEC b=8", 4),
        ("@2 VADD a=0 b=0 d=9 len=3\n@4 VPU a=0 b=0 d=9", 4),   # VPU uses the ALU
    ]
    for body, c in cases:
        prog = masm(base.format(body=body))
        run = execute(prog)
        assert run.events("err") == [(c, "err", 0, ERR_BUSY)], body
        assert "BUSY" in rules(prog), body
    ok = ["@2 LDW a=0 len=2\n@4 SWPW\n@5 LDW a=0 len=2", "@2 MATVEC b=8 len=3\n@5 SWPW",
          "@2 LDW a=0 len=2\n@3 MATVEC b=8 len=3", "@2 SWPW\n@3 SWPW\n@4 MATVEC b=8"]
    for body in ok:
        prog = masm(base.format(body=body))
        assert execute(prog).ok and lint(prog) == [], body


def test_mac_wconf_lanes_beat_alu():
    prog = masm("""
.tile 0
.data 8: 1 1
@2  MATVEC b=8 d=16
@3  VADD a=0 b=0 d=17 len=1
@20 HALT
.tile 1
@20 HALT
""", l_alu=1)
    run = execute(prog)
    # MATVEC writes 16, 17 at the end of 3 (sources 4, 5); VADD writes 17 at the end of 3
    assert run.events("err") == [(3, "err", 0, ERR_WCONF)]
    assert writes(run, 0) == [(3, 3, 17, 0), (3, 4, 16, 0), (3, 5, 17, 0)]
    assert "WCONF" in rules(prog)


def test_ldw_len_must_be_k():
    prog = masm(".tile 0\n@2 LDW a=0 len=3\n@9 HALT\n.tile 1\n@9 HALT\n")
    assert execute(prog).events("err") == [(2, "err", 0, ERR_OPCODE)]
    assert "OPCODE" in rules(prog)


@pytest.mark.parametrize("line", ["@5 LDW a=0 len=2", "@5 SWPW", "@5 MATVEC b=0", "@5 VPU a=0 b=0 d=0",
                                  "@5 MATVR a=0 b=0 d=0"])
def test_mac_ops_without_mac_array_raise_opcode(line):
    prog = asm(f".tile 0\n{line}\n@9 HALT\n.tile 1\n@9 HALT\n.tile 2\n@9 HALT\n")
    run = execute(prog)
    assert run.events("err") == [(5, "err", 0, ERR_OPCODE)]
    assert "OPCODE" in rules(prog)


def test_mac_asm_round_trip():
    text = """
.tile 0
.data 0: 1 2 3 4
@2      LDW   a=0 len=2
@4      SWPW
@5      MATVEC psum_in=1 psum_out=1 b=8 d=0 len=3
@6      MATVEC port=1 b=8 d=16 len=1
@9      VPU   a=0 b=8 d=16 len=4
@10     LDW   port=2 a=3 len=2
@12     MATVR psum_in=1 a=2 b=8 d=16 len=2
@20     HALT
"""
    prog = masm(text)
    ents = prog.entries(0)
    assert ents[2].port == 3 and ents[3].port == 1 and ents[5].port == 2
    assert masm(".tile 0\n@2 LDW a=0\n").entries(0)[0].len == 1   # LDW len defaults to k
    d = disassemble(prog)
    assert "MATVEC psum_in=1 psum_out=1 b=8 d=0 len=3" in d
    assert "MATVR psum_in=1 a=2 b=8 d=16 len=2" in d
    assert assemble(d, prog.params) == prog
    assert disassemble(assemble(d, prog.params)) == d
    rnd = random.Random(7)
    for p in (PK, P0):
        words = [rnd.getrandbits(p.ew) for _ in range(40)]
        words += [W(p, 5, op, port=rnd.randrange(4), unit=u, len=rnd.randrange(256))
                  for op in (7, 8, 9, 10, 13) for u in (0, 1)]
        prog = Program(p, [words, []] if p.nt == 2 else [words, [], []])
        assert assemble(disassemble(prog), p) == prog
    with pytest.raises(S.AsmError):
        masm(".tile 0\n@2 MATVEC psum_in=1 port=1\n")
    with pytest.raises(S.AsmError):
        masm(".tile 0\n@2 VPU psum_in=1\n")


@pytest.mark.parametrize("seed", range(12))
def test_random_program_with_mac_is_legal(seed):
    p = dataclasses.replace(P0, nt=2 + seed % 3, k=2 + seed % 3, hop_lat=1 + seed % 2, aw=6 + seed % 3,
                            dw=8 + seed % 5, vpu_shift=seed % 3)
    prog = S.random_program(seed, p, n_txn=14, kinds={"mac": 2, "mac_chain": 2, "vpu": 1, "alu": 1, "ring": 1})
    assert lint(prog) == []
    run = execute(prog)
    assert run.ok
    assert {"mac", "mac_chain"} & set(prog.meta["kinds"])
    if "mac_chain" in prog.meta["kinds"]:
        assert run.events("psum")
    assert assemble(disassemble(prog), p) == prog
    for rule in ("ORDER", "OPCODE", "BUSY"):
        var, exp = S.illegal_variant(seed, prog, rule)
        fe = execute(var).first_error()
        assert (fe[0], fe[2], fe[3]) == (exp.cycle, exp.tile, exp.bits)


def test_random_program_k0_has_no_mac_ops():
    prog = S.random_program(3, P0, n_txn=20, kinds={"mac": 1, "alu": 1})
    assert all(decode(w, P0).op not in (7, 8, 9, 10) for s in prog.schedules for w in s)
    assert lint(prog) == []


def test_matvr_with_psum_out_raises_opcode():
    prog = masm(".tile 0\n@5 MATVR psum_out=1 a=0 b=0 d=0\n@9 HALT\n.tile 1\n@9 HALT\n")
    assert execute(prog).events("err") == [(5, "err", 0, ERR_OPCODE)]
    assert "OPCODE" in rules(prog)


def test_matvr_bias_on_the_full_sum():
    # y = 3 * 20000 = 60000 (beyond dw = 16 bits); + bias -10000 = 50000 >> vpu_shift
    p = dataclasses.replace(PK, dw=16, accw=32, vpu_shift=1)
    text = """
.tile 0
.data 0: 3 0 0 3
.data 8: 20000 -20000
.data 16: -10000 10000
@2      LDW   a=0
@4      SWPW
@5      MATVR a=16 b=8 d=24
@9      HALT
"""
    run = execute(assemble(text + ".tile 1\n@9 HALT\n" * (p.nt - 1), p))
    assert run.ok
    assert [e[4:] for e in run.events("write") if e[3] >= 4] == [(24, 25000), (25, 0)]
