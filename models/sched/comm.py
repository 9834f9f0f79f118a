"""Programs and external-input stimulus for the communication interface (docs/sched.md
section 11): frames of external words taken through the FIFO of tile ``COMM_TILE``,
guarded by CHECK (suspend or pad), and handed on along the ring.

Import through :mod:`lockstep.models.sched`.
"""

from __future__ import annotations

import random
from typing import Any

from ..record import ParamError
from .params import FabricParams
from .core import COMM_TILE, OPS, P_FIFO, Entry, Program, encode

__all__ = ["COMM_SCENARIOS", "comm_program", "ext_schedule"]

_CHECK = FabricParams.COMM_OPCODES["CHECK"]
_SEND, _RECV, _VADD, _HALT = OPS["SEND"], OPS["RECV"], OPS["VADD"], OPS["HALT"]
_NEXT, _PREV = 1, 0

#: Stimulus scenarios of :func:`ext_schedule`.
COMM_SCENARIOS: tuple[str, ...] = ("ontime", "suspend", "pad", "late", "overflow")


def comm_program(params: FabricParams, frames: int = 4, words: int = 4, delay: int = 12, mode: str = "suspend",
                 t0: int = 4) -> Program:
    """``frames`` frames of ``words`` external words: tile 0 checks, pops and forwards
    each frame to tile 1, which adds it to a running sum.

    Frame ``f`` starts at ``T_f = t0 + f * period`` (times in the schedule's own time
    base; a suspension shifts everything after it):

    ==========================  ======  ================================================
    entry                       tile    effect
    ==========================  ======  ================================================
    ``@T_f   CHECK port=fifo``  0       ``len=words``, ``a=delay``, ``b=`` 0 (suspend) or
                                        1 (pad)
    ``@T_f+1 RECV port=fifo``   0       frame ``f`` into ``mem[f*words ..]``
    ``@T_f+1+W SEND next``      0       the frame to tile 1
    ``@T_f+1+W+l_path RECV``    1       into ``mem[0x40 ..]`` (zero slack)
    ``@.. + W VADD``            1       ``acc += frame`` at ``mem[0x80 ..]``
    ==========================  ======  ================================================

    The period leaves every unit idle and no word in flight at each CHECK (rule
    CHECK_QUIET). ``meta`` holds ``frames`` (the ``T_f``), ``words``, ``delay``,
    ``mode``, ``period``, ``recv`` (tile 0's RECV times) and ``acc`` (tile 1's sum
    address).

    Raises:
        ParamError: not ``comm``, ``nt < 2``, memory too small, bad ``mode``, ``delay``
            beyond ``2**aw - 1`` or a program longer than ``sd``.
    """
    p = params
    if not isinstance(p, FabricParams) or not p.comm:
        raise ParamError("comm_program: needs FabricParams with comm = True")
    if mode not in ("suspend", "pad"):
        raise ParamError(f"comm_program: mode={mode!r} (suspend or pad)")
    if not 1 <= words <= 16 or frames < 1 or frames * words > 0x40 or p.aw < 8:
        raise ParamError("comm_program: needs 1 <= words <= 16, frames * words <= 64 and aw >= 8")
    if not 0 <= delay < p.words:
        raise ParamError(f"comm_program: delay={delay} must fit the A field (< {p.words})")
    lp = p.l_path(1)
    period = 1 + words + lp + words + p.l_alu + words + 2
    a0, ents0, ents1 = [], [], []
    b = 0 if mode == "suspend" else 1
    recv = []
    for f in range(frames):
        tf = t0 + f * period
        base = f * words
        ents0 += [Entry(tf, _CHECK, P_FIFO, a=delay, b=b, len=words - 1),
                  Entry(tf + 1, _RECV, P_FIFO, d=base, len=words - 1),
                  Entry(tf + 1 + words, _SEND, _NEXT, a=base, len=words - 1)]
        r1 = tf + 1 + words + lp
        ents1 += [Entry(r1, _RECV, _PREV, d=0x40, len=words - 1),
                  Entry(r1 + words, _VADD, a=0x40, b=0x80, d=0x80, len=words - 1)]
        a0.append(tf)
        recv.append(tf + 1)
    end = t0 + frames * period
    ents0.append(Entry(end, _HALT))
    ents1.append(Entry(end, _HALT))
    ents = [ents0, ents1] + [[Entry(end, _HALT)] for _ in range(2, p.nt)]
    mask = (1 << p.cw) - 1
    for t, es in enumerate(ents):
        if len(es) > p.sd:
            raise ParamError(f"comm_program: tile {t} needs {len(es)} schedule words, sd = {p.sd}")
    scheds = [[encode(e.replace(t=e.t & mask), p) for e in es] for es in ents]
    meta = {"generator": "comm_program", "name": "comm", "frames": a0, "words": words, "delay": delay,
            "mode": mode, "period": period, "recv": recv, "acc": 0x80}
    return Program(p, scheds, [{} for _ in range(p.nt)], meta)


def ext_schedule(rng: Any, program: Program, scenario: str) -> list[tuple[int, int]]:
    """External words ``(cycle, value)`` for a :func:`comm_program` program.

    The stimulus is built frame by frame in real time, following the suspensions it
    causes (each late frame in suspend mode shifts the rest of the program by
    ``delay``):

    * ``ontime``: every word of frame ``f`` arrives before its CHECK (no suspension).
    * ``suspend``: about half the frames (at least one) arrive late, by less than the
      delay, so their CHECK suspends and the RECV still finds every word.
    * ``pad`` (pad mode): frame 0 is missing (start-up: pads of 0) and some later
      frames lose their last words (hold-last pads); the rest arrive on time.
    * ``late``: one frame arrives later than the delay covers (UNDERFLOW at its RECV).
    * ``overflow``: a word in every cycle from cycle 0, more than the FIFO and all the
      program's pops take (FIFO_OVF).

    Raises:
        ParamError: not a :func:`comm_program` program, an unknown scenario, or a
            scenario that does not fit the program's mode.
    """
    m = program.meta or {}
    if m.get("generator") != "comm_program":
        raise ParamError("ext_schedule: needs a comm_program() program")
    if scenario not in COMM_SCENARIOS:
        raise ParamError(f"ext_schedule: unknown scenario {scenario!r} ({', '.join(COMM_SCENARIOS)})")
    if (scenario == "pad") != (m["mode"] == "pad"):
        raise ParamError(f"ext_schedule: scenario {scenario!r} does not fit a program in {m['mode']} mode")
    if scenario in ("suspend", "late") and m["delay"] < 1:
        raise ParamError(f"ext_schedule: scenario {scenario!r} needs a delay >= 1")
    r = rng if isinstance(rng, random.Random) else random.Random(rng if isinstance(rng, int) else None)
    p = program.params
    w, d, nf = m["words"], m["delay"], len(m["frames"])
    dmask = (1 << p.dw) - 1
    val = lambda: r.getrandbits(p.dw) & dmask  # noqa: E731
    out: list[tuple[int, int]] = []
    if scenario == "overflow":
        # one word every cycle from cycle 0, more than the FIFO and every pop together
        return [(c, val()) for c in range(p.fifo_d + w * nf + 1 + r.randint(0, 2))]
    late = set()
    if scenario == "suspend":
        late = {f for f in range(nf) if r.random() < 0.5} or {r.randrange(nf)}
    bad = r.randrange(nf) if scenario == "late" else None
    shift = 0
    last = -1
    for f, tf in enumerate(m["frames"]):
        check = tf + shift          # real cycle of frame f's CHECK
        if scenario == "pad" and f == 0:
            continue                # start-up: the whole frame is padded with zeros
        n = w
        if scenario == "pad" and r.random() < 0.5:
            n = r.randint(0, w - 1)  # the last words are missing: hold-last pads
        if f in late:
            # consecutive words, the last pushed at the end of cycle check + x (0 <= x <=
            # delay): the CHECK sees fewer than W words and suspends; word i is pushed by
            # the end of check + delay + i, before its pop in check + delay + 1 + i
            x = r.randint(0, d)
            start = max(last + 1, check - n + 1 + x)
            shift += d
        elif f == bad:
            # beyond the delay: the first word arrives after its pop in check + delay + 1
            start = max(last + 1, check + d + 1 + r.randint(0, 3))
            shift += d
        else:
            # on time: pushed by the end of check - 1 (after the previous frame's pops,
            # which the period guarantees, so the FIFO never holds more than a frame)
            start = max(last + 1, check - n - r.randint(0, 6))
            if n and start + n - 1 > check - 1:
                raise ParamError("ext_schedule: no room for an on-time frame; raise the program's t0")
        times = list(range(start, start + n))
        if times:
            last = times[-1]
        out += [(c, val()) for c in times]
    return out
