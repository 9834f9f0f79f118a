"""The ``sched`` schedule linter (docs/sched.md section 7).

Import through :mod:`lockstep.models.sched`.
"""

from __future__ import annotations

from typing import NamedTuple

from ..record import ParamError
from .params import FabricParams
from .core import (
    ERR_BUSY, ERR_COLLISION, ERR_DECOMP, ERR_MISSED, ERR_OPCODE, ERR_OVERFLOW, ERR_TAP_IDLE, ERR_UNDERFLOW,
    ERR_WCONF, OP_NAMES, OPS, N_UNITS, ExpandedEntry, Program, entry_busy_len, entry_units, _Sim, expand,
    opcode_problem,
)

__all__ = ["LINT_RULES", "Violation", "lint"]

#: Every rule of docs/sched.md section 7, in table order.
LINT_RULES: tuple[str, ...] = (
    "FIRST", "ORDER", "HALT", "SIZE", "OPCODE", "DECOMP", "HDR_GAP", "BUSY", "RECV_EARLY",
    "OVERFLOW", "LEN", "TAP", "COLLISION", "WCONF", "SPAN", "CHECK_QUIET",
)

_HALT = OPS["HALT"]


class Violation(NamedTuple):
    """One linter finding.

    Attributes:
        rule: the rule name (one of :data:`LINT_RULES`).
        tile: the tile (-1 only for a bus finding without a responsible tile).
        entry: index of the responsible schedule word on ``tile`` (None for a finding
            about the whole tile, or an input buffer).
        cycle: the absolute cycle where it bites (None for SIZE and HALT).
        message: names the tile, the entry and the rule.
    """

    rule: str
    tile: int
    entry: int | None
    cycle: int | None
    message: str


def _where(t: int, x: ExpandedEntry, j: int) -> str:
    s = f"tile {t} entry {x.src}"
    if x.rep is not None:
        s += f" (rep {x.rep}, expanded entry {j})"
    return s


def _static(program: Program, t: int, words: list[int]) -> tuple[list[Violation], bool]:
    """Static rules of one tile; returns the findings and whether the stream is ordered."""
    p = program.params
    mask = (1 << p.cw) - 1
    half = p.half
    lead = FabricParams.FETCH_LEAD
    out: list[Violation] = []

    def v(rule: str, entry: int | None, cycle: int | None, msg: str) -> None:
        out.append(Violation(rule, t, entry, cycle, f"{rule}: {msg}"))

    image = words + [0] * (p.sd - len(words))
    xs = [x for x in expand(image, p) if x.src < len(words)]
    # HALT: the last word is a top-level HALT and the only HALT
    halts = [j for j, x in enumerate(xs) if x.entry.op == _HALT and not x.poison]
    top_halt_words = [x.src for x in xs if x.entry.op == _HALT and not x.poison and x.header is None]
    body_halts = [x for x in xs if x.entry.op == _HALT and not x.poison and x.header is not None]
    if not words:
        v("HALT", None, None, f"tile {t}: the schedule is empty (no HALT)")
    elif body_halts:
        x = body_halts[0]
        v("HALT", x.src, None, f"tile {t} entry {x.src}: HALT inside the periodic block at word {x.header}")
    elif not top_halt_words:
        v("HALT", len(words) - 1, None, f"tile {t}: the schedule does not end with HALT")
    elif top_halt_words[0] != len(words) - 1:
        h = top_halt_words[0]
        v("HALT", h, None, f"tile {t} entry {h}: HALT is followed by {len(words) - 1 - h} more word(s)")
    eff = xs[:halts[0] + 1] if halts else xs
    if not eff:
        return out, True
    # unwrapped issue cycles
    us = [eff[0].entry.t]
    for j in range(1, len(eff)):
        us.append(us[-1] + ((eff[j].entry.t - eff[j - 1].entry.t) & mask))
    ordered = True
    # FIRST
    t0 = eff[0].entry.t
    if t0 < lead or ((t0 - lead) & mask) >= half:
        ordered = False
        v("FIRST", eff[0].src, lead, f"{_where(t, eff[0], 0)}: first entry T={t0} is not in "
          f"[FETCH_LEAD={lead}, {lead + half - 1}] (not issuable after fetch start-up)")
    elif eff[0].first_in_block and t0 < lead + 1:
        v("HDR_GAP", eff[0].src, t0, f"{_where(t, eff[0], 0)}: a periodic block's first entry at T={t0} "
          f"needs T >= FETCH_LEAD + 1 = {lead + 1} (header read)")
    # ORDER, HDR_GAP
    for j in range(1, len(eff)):
        d = (eff[j].entry.t - eff[j - 1].entry.t) & mask
        if not 1 <= d < half:
            ordered = False
            v("ORDER", eff[j].src, us[j - 1] + 1,
              f"{_where(t, eff[j], j)}: T={eff[j].entry.t} after T={eff[j - 1].entry.t} "
              f"(difference {d} mod 2**cw is not in [1, {half - 1}])")
        elif eff[j].first_in_block and d < 2:
            v("HDR_GAP", eff[j].src, us[j], f"{_where(t, eff[j], j)}: periodic block's first entry T="
              f"{eff[j].entry.t} is {d} count after the previous entry (needs >= 2)")
    # OPCODE, DECOMP
    for j, x in enumerate(eff):
        if x.poison:
            v("DECOMP", x.src, us[j], f"{_where(t, x, j)}: {x.reason}")
            continue
        why = opcode_problem(x.entry, p, t)
        if why:
            v("OPCODE", x.src, us[j], f"{_where(t, x, j)}: {OP_NAMES.get(x.entry.op, f'OP{x.entry.op}')}: {why}")
    for x in xs[len(eff):]:
        if x.poison:
            v("DECOMP", x.src, None, f"tile {t} entry {x.src}: {x.reason} (after the HALT)")
    # BUSY (meaningful on an ordered stream)
    if ordered:
        busy = [-1] * N_UNITS
        for j, x in enumerate(eff):
            if x.poison or opcode_problem(x.entry, p, t):
                continue
            units = entry_units(x.entry, p)
            hit = [u for u in units if busy[u] >= us[j]]
            if hit:
                v("BUSY", x.src, us[j], f"{_where(t, x, j)}: {OP_NAMES[x.entry.op]} at cycle {us[j]} "
                  f"while its unit is busy until cycle {max(busy[u] for u in hit)}")
                continue
            for u in units:
                busy[u] = us[j] + entry_busy_len(x.entry) - 1
        # SPAN
        if us[-1] - us[0] > half:
            v("SPAN", eff[-1].src, us[-1], f"tile {t}: expanded span {us[-1] - us[0]} (cycles {us[0]}.."
              f"{us[-1]}) exceeds half the counter range ({half})")
    return out, ordered


_DYN_RULE = {
    ERR_UNDERFLOW: "RECV_EARLY",
    ERR_OVERFLOW: "OVERFLOW",
    ERR_TAP_IDLE: "TAP",
    ERR_COLLISION: "COLLISION",
    ERR_WCONF: "WCONF",
    ERR_MISSED: "ORDER",
    ERR_OPCODE: "OPCODE",
    ERR_BUSY: "BUSY",
    ERR_DECOMP: "DECOMP",
}


def lint(program: Program, params: FabricParams | None = None) -> list[Violation]:
    """Check a program against every rule of docs/sched.md section 7.

    Static rules (FIRST, ORDER, HALT, SIZE, OPCODE, DECOMP, HDR_GAP, BUSY, SPAN) are
    checked on each tile's expanded stream (up to its first HALT). Dynamic rules
    (RECV_EARLY, OVERFLOW, LEN, TAP, COLLISION, WCONF) come from running
    :func:`~lockstep.models.sched.execute` with checks until nothing is in flight. Any
    other error the executor raises is reported under its static rule, so a program
    without violations runs with ``err == 0`` on every tile and no bus collision.

    Args:
        program: the program (a schedule longer than ``sd`` is reported as SIZE and
            linted as its first ``sd`` words).
        params: optional; must equal ``program.params``.

    Returns:
        The violations (empty for a legal program).
    """
    if not isinstance(program, Program):
        raise ParamError(f"lint: expected a Program, got {type(program).__name__}")
    p = program.params
    if params is not None and params != p:
        raise ParamError("lint: params differ from program.params")
    out: list[Violation] = []
    scheds = []
    for t, s in enumerate(program.schedules):
        if len(s) > p.sd:
            out.append(Violation("SIZE", t, p.sd, None, f"SIZE: tile {t}: {len(s)} schedule words, more than "
                                                       f"sd = {p.sd}"))
            s = s[:p.sd]
        scheds.append(s)
        found, _ = _static(program, t, s)
        out.extend(found)
    prog = program if all(len(s) <= p.sd for s in program.schedules) else Program(p, scheds, program.data)
    # the dynamic rules are checked in the schedule's own time base: the external FIFO
    # never lacks a word and CHECK never suspends or pads (CHECK_QUIET makes that safe)
    run = _Sim(prog, True, None, ideal_fifo=True).run(None)
    seen = {(v.rule, v.tile, v.entry) for v in out}
    static_tiles = {(v.rule, v.tile) for v in out}
    for c in run.errors:
        rule = _DYN_RULE.get(c.bit)
        if rule is None:   # pragma: no cover - reserved bits are never raised
            continue
        tile, word = c.tile, c.word
        if c.bit == ERR_COLLISION and len(c.others) > 1:
            tile, _, word = c.others[1]
        if c.bit in (ERR_MISSED, ERR_OPCODE, ERR_BUSY, ERR_DECOMP):
            if (rule, tile) in static_tiles or ("FIRST", tile) in static_tiles or ("HALT", tile) in static_tiles \
                    or ("ORDER", tile) in static_tiles or ("HDR_GAP", tile) in static_tiles:
                continue
        key = (rule, tile, word)
        if key in seen:
            continue
        seen.add(key)
        where = f"tile {c.tile}" + (f" entry {c.word}" if c.word is not None else "")
        out.append(Violation(rule, tile, word, c.cycle, f"{rule}: {where} at cycle {c.cycle}: {c.detail}"))
    for cyc, xidx, w, why in run.checks_noisy:
        out.append(Violation("CHECK_QUIET", 0, w, cyc, f"CHECK_QUIET: tile 0 entry {w}: CHECK at cycle {cyc} "
                                                       f"while {why}"))
    for cyc, t, _x, w, msg in run.len_issues:
        key = ("LEN", t, w)
        if key in seen:
            continue
        seen.add(key)
        out.append(Violation("LEN", t, w, cyc, f"LEN: {msg}"))
    return out
