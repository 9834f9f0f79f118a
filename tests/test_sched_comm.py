"""The communication interface of the sched family (docs/sched.md section 11): the
external FIFO, CHECK (suspend with a no-op delay, pad with zeros or the last word),
FIFO_OVF and the CHECK_QUIET rule. Expected values are worked out from the contract
here, not read from the executor."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lockstep.models import sched as S
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams

P = FabricParams(comm=True)


def _issues(run, tile):
    return [(e[0], e[3]) for e in run.events("issue", tile)]


def test_comm_program_is_legal_and_runs_with_words_on_time():
    prog = S.comm_program(P, frames=3, words=4, delay=10)
    assert S.lint(prog) == []
    ext = S.ext_schedule(1, prog, "ontime")
    run = S.execute(prog, ext=ext)
    assert run.ok and run.events("suspend") == [] and run.events("pad") == []
    # tile 1 ends with the sum of the three frames, word by word
    vals = [v for _, v in ext]
    want = [sum(vals[f * 4 + i] for f in range(3)) & 0xFFFF for i in range(4)]
    assert run.mems[1][0x80:0x84].tolist() == want
    # the schedule ran in its own time: every issue at its T
    for t in range(2):
        assert [c for c, _ in _issues(run, t)] == [S.decode(w, P).t for w in prog.schedules[t]]


def test_suspend_shifts_the_rest_of_the_program_by_the_delay():
    d = 10
    prog = S.comm_program(P, frames=3, words=4, delay=d)
    m = prog.meta
    ontime = S.ext_schedule(3, prog, "ontime")
    # frame 1 arrives late: its last word is pushed at the end of its CHECK's cycle
    t1 = m["frames"][1]
    late = [(c, v) for c, v in ontime[:4]] + [(t1 - 3 + i, v) for i, (_, v) in enumerate(ontime[4:8])]
    late += [(c + d, v) for c, v in ontime[8:]]     # frame 2 on time in the shifted program
    a, b = S.execute(prog, ext=ontime), S.execute(prog, ext=late)
    assert a.ok and b.ok
    assert b.events("suspend") == [(t1, "suspend", -1, d)]
    for t in range(2):
        ia, ib = _issues(a, t), _issues(b, t)
        assert [w for _, w in ia] == [w for _, w in ib]
        assert [c + (d if c > t1 else 0) for c, _ in ia] == [c for c, _ in ib]
    for ma, mb in zip(a.mems, b.mems):
        assert np.array_equal(ma, mb)
    # the chip counter never stopped: err_cnt and halt_cnt are counter values of real cycles
    assert b.halt_cnt[0] == a.halt_cnt[0] + d


def test_pad_gives_zero_at_start_up_then_the_last_word():
    prog = S.comm_program(P, frames=3, words=4, delay=0, mode="pad")
    run = S.execute(prog)               # no external word at all: every pop is a pad of 0
    assert run.ok and len(run.events("pad")) == 12 and {e[3] for e in run.events("pad")} == {0}
    assert run.mems[1][0x80:0x84].tolist() == [0, 0, 0, 0]
    # frame 0 arrives; frames 1 and 2 are missing: pads repeat frame 0's last word
    f0 = [(c, 100 + c) for c in range(4)]
    run = S.execute(prog, ext=f0)
    assert run.ok and [e[3] for e in run.events("pad")] == [103] * 8
    assert run.mems[1][0x80:0x84].tolist() == [100 + 103 * 2, 101 + 103 * 2, 102 + 103 * 2, 103 * 3]


def test_missing_words_without_check_underflow():
    # suspend mode but the delay is 0: CHECK cannot help, the first pop underflows
    prog = S.comm_program(P, frames=1, words=2, delay=0)
    run = S.execute(prog)
    t0 = prog.meta["frames"][0]
    assert run.first_error() == (t0 + 1, "err", 0, S.ERR_UNDERFLOW)


def test_fifo_overflow_drops_the_word_and_halts_the_tile():
    p = dataclasses.replace(P, fifo_d=2)
    prog = S.comm_program(p, frames=1, words=2, delay=4)
    run = S.execute(prog, ext=[(0, 1), (1, 2), (2, 3)])
    assert run.first_error() == (2, "err", 0, S.ERR_FIFO_OVF)
    assert run.err_cnt[0] == 2 and run.ext_dropped == [2] and run.fifo_max == 2
    assert _issues(run, 0) == []        # halted before its first entry (T = 4)


def test_check_quiet_rule():
    text = """
.tile 0
@4      SEND  port=next a=0 len=4
@6      CHECK port=fifo a=3 b=0 len=1
@7      RECV  port=fifo d=8 len=1
@20     HALT
.tile 1
@7      RECV  port=prev d=0 len=4
@20     HALT
.tile 2
@20     HALT
"""
    prog = S.assemble(text, P)
    v = [x for x in S.lint(prog) if x.rule == "CHECK_QUIET"]
    assert len(v) == 1 and v[0].tile == 0 and v[0].entry == 1 and "out[next] busy" in v[0].message
    quiet = S.assemble(text.replace("@6      CHECK", "@12     CHECK").replace("@7      RECV  port=fifo",
                                                                                 "@13     RECV  port=fifo"), P)
    assert S.lint(quiet) == []


@pytest.mark.parametrize("text,params", [
    (".tile 0\n@4 CHECK port=fifo a=1 len=1\n@9 HALT\n", FabricParams()),            # no comm
    (".tile 1\n@4 CHECK port=fifo a=1 len=1\n@9 HALT\n", P),                         # not tile 0
    (".tile 0\n@4 CHECK port=prev a=1 len=1\n@9 HALT\n", P),                         # PORT != 3
    (".tile 0\n@4 CHECK port=fifo a=1 b=2 len=1\n@9 HALT\n", P),                     # mode 2
    (".tile 1\n@4 RECV port=fifo d=0 len=1\n@9 HALT\n", P),                          # FIFO of tile 1
    (".tile 0\n@4 RECV port=fifo d=0 len=1\n@9 HALT\n", FabricParams()),             # no comm
    (".tile 0\n@4 SEND port=3 a=0 len=1\n@9 HALT\n", P),                             # SEND to the FIFO
])
def test_comm_opcode_errors(text, params):
    tiles = {int(line.split()[1]) for line in text.splitlines() if line.startswith(".tile")}
    text += "".join(f".tile {t}\n@9 HALT\n" for t in range(params.nt) if t not in tiles)
    prog = S.assemble(text, params)
    tile = min(tiles)
    assert S.execute(prog).first_error() == (4, "err", tile, S.ERR_OPCODE)
    assert "OPCODE" in {v.rule for v in S.lint(prog)}


def test_comm_asm_round_trip():
    text = ".tile 0\n@4 CHECK port=fifo a=7 b=1 len=3\n@5 RECV port=fifo d=16 len=3\n@20 HALT\n"
    prog = S.assemble(text, P)
    d = S.disassemble(prog)
    assert "CHECK port=fifo a=7 b=1 len=3" in d and "RECV  port=fifo d=16 len=3" in d
    assert S.assemble(d, P) == prog


@pytest.mark.parametrize("ext,msg", [
    ([(0, 1), (0, 2)], "two ext words"), ([(-1, 1)], "negative"), ([(0, 1 << 16)], "outside"),
    ([(0,)], "must be"),
])
def test_ext_validation(ext, msg):
    prog = S.comm_program(P)
    with pytest.raises(ParamError, match=msg):
        S.execute(prog, ext=ext)


def test_ext_needs_comm():
    prog = S.random_program(1, FabricParams(), n_txn=2)
    with pytest.raises(ParamError, match="comm"):
        S.execute(prog, ext=[(0, 1)])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("scenario", ["ontime", "suspend", "pad", "late", "overflow"])
def test_scenarios_do_what_they_say(seed, scenario):
    prog = S.comm_program(P, mode="pad" if scenario == "pad" else "suspend")
    assert S.lint(prog) == []
    run = S.execute(prog, ext=S.ext_schedule(seed, prog, scenario))
    if scenario in ("ontime", "suspend", "pad"):
        assert run.ok
    assert bool(run.events("suspend")) == (scenario in ("suspend", "late"))
    assert bool(run.events("pad")) == (scenario == "pad")
    first = run.first_error()
    if scenario == "late":
        assert first[2:] == (0, S.ERR_UNDERFLOW)
    if scenario == "overflow":
        assert first[2:] == (0, S.ERR_FIFO_OVF)
