"""Program builders of the ``sched`` family: random legal programs, illegal variants,
and the directed programs of the patent examples.

Import through :mod:`lockstep.models.sched`.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any, NamedTuple

import numpy as np

from ..record import ParamError
from .params import FabricParams
from .core import (
    ERR_BUSY, ERR_COLLISION, ERR_DECOMP, ERR_MISSED, ERR_OPCODE, ERR_OVERFLOW, ERR_TAP_IDLE, ERR_UNDERFLOW,
    ERR_WCONF, MAC_OPS, OP_NAMES, OPS, RESERVED_OPS, Entry, ExpandedEntry, Program, decode, encode, entry_busy_len,
    entry_units, expand, opcode_problem, unwrap_times,
)

__all__ = [
    "ILLEGAL_RULES",
    "Expected",
    "fig2a_program",
    "illegal_kinds",
    "illegal_round",
    "illegal_step",
    "illegal_variant",
    "jitter_variant",
    "periodic6_program",
    "random_program",
    "schedule_c_program",
]

NOP, SEND, RECV, TAP = OPS["NOP"], OPS["SEND"], OPS["RECV"], OPS["TAP"]
VADD, VMUL, DOT, FWD = OPS["VADD"], OPS["VMUL"], OPS["DOT"], OPS["FWD"]
HALT, PERIODIC = OPS["HALT"], OPS["PERIODIC"]
LDW, SWPW, MATVEC, VPU, MATVR = (MAC_OPS[n] for n in ("LDW", "SWPW", "MATVEC", "VPU", "MATVR"))
_OUT, _IN, _ALU = 0, 3, 6
_WLOAD, _MAC = 7, 8
#: planner pseudo-unit: the cycles in which a tile writes memory region 3 (ALU, VPU and
#: MAC lane writes share it; used only with ``k > 0`` so that they never conflict)
_WR3 = 9
PREV, NEXT, BUS = 0, 1, 2


def _as_rng(rng: Any) -> random.Random:
    """A :class:`random.Random` from a Random, a numpy Generator, an int seed or None."""
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, np.random.Generator):
        return random.Random(int(rng.integers(0, 2**63 - 1)))
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return random.Random(None if rng is None else int(rng))
    raise ParamError(f"rng: expected random.Random, numpy Generator, int or None, got {type(rng).__name__}")


def _overlap(a: int, b: int, c: int, d: int) -> bool:
    return a <= d and c <= b


# ======================================================================================
# random legal programs
# ======================================================================================
class _Txn:
    """The resources and entries of one planned transaction (all times unwrapped)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.slots: list[tuple[int, int]] = []          # (tile, u) plain issue slots
        self.units: list[tuple[int, int, int, int]] = []  # (tile, unit, lo, hi)
        self.wins: list[tuple[int, int, int, int]] = []   # (tile, in port, lo, hi)
        self.bus: list[tuple[int, int]] = []             # bus drive cycles
        self.blocks: list[tuple[int, int, int, list[int]]] = []  # (tile, lo, hi, entry times)
        # ("plain", t, u, Entry) or ("block", t, u, P, reps, body)
        self.items: list[tuple] = []
        self.consumers: list[dict] = []
        self.words: dict[int, int] = {}

    def plain(self, t: int, u: int, e: Entry) -> tuple:
        it = ("plain", t, u, e)
        self.slots.append((t, u))
        self.items.append(it)
        self.words[t] = self.words.get(t, 0) + 1
        return it

    def block(self, t: int, u: int, period: int, reps: int, body: list[tuple[int, Entry]]) -> tuple:
        it = ("block", t, u, period, reps, body)
        times = [u + r * period + d for r in range(reps) for d, _ in body]
        self.blocks.append((t, u - 1, times[-1], times))
        self.items.append(it)
        self.words[t] = self.words.get(t, 0) + 1 + len(body)
        return it


class _Planner:
    """Reservation tables of the random generator (issue slots, units, ports, bus)."""

    def __init__(self, p: FabricParams, rng: random.Random, start: int, end: int, lead_nop: bool,
                 max_len: int) -> None:
        self.p = p
        self.rng = rng
        nt = p.nt
        self.start, self.end = start, end
        self.lo = start + 1 if lead_nop else start
        self.lead_nop = lead_nop
        self.slots: list[set[int]] = [set() for _ in range(nt)]
        self.excl: list[list[tuple[int, int]]] = [[] for _ in range(nt)]
        self.units = [[[] for _ in range(10)] for _ in range(nt)]
        self.wins = [[[] for _ in range(3)] for _ in range(nt)]
        self.bus: list[tuple[int, int]] = []
        self.words = [0] * nt
        self.cap = p.sd - 1 - (1 if lead_nop else 0)
        self.items: list[list[tuple]] = [[] for _ in range(nt)]
        self.consumers: list[tuple[dict, tuple]] = []
        self.kinds: list[str] = []
        self.region = p.words // 4
        self.max_len = max(1, min(max_len, self.region))
        self.pmax = min((1 << p.aw) - 1, p.half - 1)

    # ---- feasibility ----
    def fits(self, x: _Txn) -> bool:
        lo, hi_slot = self.lo, self.end - 1
        for t, n in x.words.items():
            if self.words[t] + n > self.cap:
                return False
        seen: dict[int, set[int]] = {}
        for t, u in x.slots:
            if not lo <= u <= hi_slot or u in self.slots[t] or u in seen.setdefault(t, set()):
                return False
            if any(a <= u <= b for a, b in self.excl[t]):
                return False
            seen[t].add(u)
        for i, (t, a, b, times) in enumerate(x.blocks):
            if a < lo or b > hi_slot:
                return False
            if any(a <= u <= b for u in self.slots[t]) or any(a <= u <= b for u in seen.get(t, ())):
                return False
            if any(_overlap(a, b, c, d) for c, d in self.excl[t]):
                return False
            for t2, a2, b2, _ in x.blocks[:i]:
                if t2 == t and _overlap(a, b, a2, b2):
                    return False
        for i, (t, un, a, b) in enumerate(x.units):
            if any(_overlap(a, b, c, d) for c, d in self.units[t][un]):
                return False
            if any(t2 == t and u2 == un and _overlap(a, b, c, d) for t2, u2, c, d in x.units[:i]):
                return False
        for i, (t, q, a, b) in enumerate(x.wins):
            if any(_overlap(a, b, c, d) for c, d in self.wins[t][q]):
                return False
            if any(t2 == t and q2 == q and _overlap(a, b, c, d) for t2, q2, c, d in x.wins[:i]):
                return False
        for i, (a, b) in enumerate(x.bus):
            if any(_overlap(a, b, c, d) for c, d in self.bus) or any(_overlap(a, b, c, d) for c, d in x.bus[:i]):
                return False
        return True

    def commit(self, x: _Txn) -> None:
        for t, u in x.slots:
            self.slots[t].add(u)
        for t, a, b, times in x.blocks:
            self.excl[t].append((a, b))
            self.slots[t].update(times)
        for t, un, a, b in x.units:
            self.units[t][un].append((a, b))
        for t, q, a, b in x.wins:
            self.wins[t][q].append((a, b))
        self.bus.extend(x.bus)
        for t, n in x.words.items():
            self.words[t] += n
        for it in x.items:
            self.items[it[1]].append(it)
        self.consumers.extend(x.consumers)
        self.kinds.append(x.kind)

    # ---- building blocks ----
    def _addr(self) -> int:
        return self.rng.randrange(self.p.words)

    def _dest(self, region: int, n: int) -> int:
        return region * self.region + self.rng.randrange(self.region - n + 1)

    def _n(self) -> int:
        r = self.rng.random()
        if r < 0.15:
            return 1
        if r < 0.3:
            return min(self.max_len, self.p.buf_d + 1 + self.rng.randrange(3))
        return self.rng.randint(1, self.max_len)

    def _slack(self, n: int) -> int:
        lim = self.p.buf_d - 1 if n > self.p.buf_d else 6
        r = self.rng.random()
        if r < 0.4:
            return 0
        if r < 0.55:
            return lim
        return self.rng.randint(0, lim)

    def _consume(self, x: _Txn, y: int, q: int, a: int, n: int, kind: str, role: str) -> None:
        d = self._dest(q, n)
        if q == BUS:                      # the bus input has no buffer: TAP only
            kind = "TAP"
        if kind == "TAP":
            it = x.plain(y, a, Entry(t=0, op=TAP, port=q, d=d, len=n - 1))
            x.wins.append((y, q, a, a + n - 1))
            u = a
        else:
            u = a + 1 + self._slack(n)
            it = x.plain(y, u, Entry(t=0, op=RECV, port=q, d=d, len=n - 1))
            x.wins.append((y, q, a, u + n - 1))
        x.consumers.append(({"tile": y, "kind": kind, "port": q, "u": u, "a": a, "n": n, "role": role,
                             "in_block": False}, it))

    def transfer(self, s: int, u: int, ports: list[int], n: int | None = None) -> _Txn:
        """SEND of ``n`` words (default: :meth:`_n`) from ``s`` at ``u`` along ``ports``
        (FWD relays between hops)."""
        p = self.p
        nt = p.nt
        n = n or self._n()
        x = _Txn("transfer:" + "-".join(("prev", "next", "bus")[q] for q in ports))
        x.plain(s, u, Entry(t=0, op=SEND, port=ports[0], a=self._addr(), len=n - 1))
        x.units.append((s, _OUT + ports[0], u, u + n - 1))
        if ports[0] == BUS:
            x.bus.append((u + 1, u + n))
        tx, cur = u, s
        for h, pt in enumerate(ports):
            if pt == BUS:
                a, q = tx + 2, 2
                nxt = self.rng.randrange(nt)
                for y in range(nt):      # other tiles may TAP the broadcast too
                    if y != nxt and self.rng.random() < 0.35:
                        self._consume(x, y, 2, a, n, "TAP", "bystander")
            else:
                a = tx + 1 + p.hop_lat
                nxt, q = p.link_dest(cur, pt)
            if h == len(ports) - 1:
                self._consume(x, nxt, q, a, n, self.rng.choice(("TAP", "RECV", "RECV")), "final")
            else:
                np_ = ports[h + 1]
                x.plain(nxt, a, Entry(t=0, op=FWD, port=np_, b=q, len=n - 1))
                x.wins.append((nxt, q, a, a + n - 1))
                x.units.append((nxt, _OUT + np_, a, a + n - 1))
                if np_ == BUS:
                    x.bus.append((a + 1, a + n))
                tx, cur = a, nxt
        return x

    def alu(self, t: int, u: int) -> _Txn:
        op = self.rng.choice((VADD, VMUL, DOT))
        n = self.rng.randint(1, self.max_len)
        d = self._dest(3, 1 if op == DOT else n)
        x = _Txn("alu")
        x.plain(t, u, Entry(t=0, op=op, a=self._addr(), b=self._addr(), d=d, len=n - 1))
        x.units.append((t, _ALU, u, u + n - 1))
        self._wr3(x, t, u + self.p.l_alu - 1, n)
        return x

    def _wr3(self, x: _Txn, t: int, first: int, n: int) -> None:
        """Reserve region-3 write cycles ``[first, first+n-1]`` (only with a MAC array)."""
        if self.p.k:
            x.units.append((t, _WR3, first, first + n - 1))

    # ---- MAC array / VPU (docs/sched.md section 11; k > 0) ----
    def _mac_n(self) -> int | None:
        top = min(4, self.region // self.p.k)
        return self.rng.randint(1, top) if top >= 1 else None

    def mac(self, t: int, u: int) -> _Txn | None:
        """LDW at u, SWPW at u+k, then a MATVEC (or MATVR: bias, ReLU, shift) of 1..4
        vectors writing region 3."""
        kk = self.p.k
        n = self._mac_n()
        if n is None:
            return None
        x = _Txn("mac")
        x.plain(t, u, Entry(t=0, op=LDW, a=self._addr(), len=kk - 1))
        x.plain(t, u + kk, Entry(t=0, op=SWPW))
        m = u + kk + 1 + self.rng.randint(0, 2)
        x.plain(t, m, self._mv(0, n, self._dest(3, kk * n)))
        x.units.append((t, _WLOAD, u, u + kk))
        x.units.append((t, _MAC, u + kk, u + kk))
        x.units.append((t, _MAC, m, m + n - 1))
        self._wr3(x, t, m + FabricParams.L_MM - 1, n)
        return x

    def mac_chain(self, t: int, u: int) -> _Txn | None:
        """MATVEC with psum_out on t, chained MATVECs (psum_in) on the next tiles of the
        psum chain (t+1, ... on the ring; east along a mesh row), issued ``hop_lat + 1``
        later each; the last one writes region 3."""
        p = self.p
        n = self._mac_n()
        if n is None:
            return None
        length = self.rng.randint(2, min(3, p.cols))
        x = _Txn("mac_chain")
        tj = t
        for j in range(length):
            uj = u + j * (p.hop_lat + 1)
            port = (1 if j else 0) | (2 if j < length - 1 else 0)
            d = 0 if port & 2 else self._dest(3, p.k * n)
            x.plain(tj, uj, self._mv(port, n, d))
            x.units.append((tj, _MAC, uj, uj + n - 1))
            if not port & 2:
                self._wr3(x, tj, uj + FabricParams.L_MM - 1, n)
            tj = p.psum_dest(tj)
        return x

    def _mv(self, port: int, n: int, d: int) -> Entry:
        """A MATVEC of ``n`` vectors; one that writes memory is a MATVR (bias from a
        random address) half the time."""
        e = Entry(t=0, op=MATVEC, port=port, b=self._addr(), d=d, len=n - 1)
        if not port & 2 and self.rng.random() < 0.5:
            e = e.replace(op=MATVR, a=self._addr())
        return e

    def vpu(self, t: int, u: int) -> _Txn:
        n = self.rng.randint(1, self.max_len)
        x = _Txn("vpu")
        x.plain(t, u, Entry(t=0, op=VPU, a=self._addr(), b=self._addr(), d=self._dest(3, n), len=n - 1))
        x.units.append((t, _ALU, u, u + n - 1))
        self._wr3(x, t, u + self.p.l_alu - 1, n)
        return x

    def nop(self, t: int, u: int) -> _Txn:
        x = _Txn("nop")
        x.plain(t, u, Entry(t=0, op=NOP))
        return x

    def periodic_alu(self, t: int, u: int) -> _Txn | None:
        nb = self.rng.randint(1, 3)
        body: list[tuple[int, Entry]] = []
        d = 0
        for _ in range(nb):
            op = self.rng.choice((VADD, VMUL, DOT, NOP))
            n = 1 if op == NOP else self.rng.randint(1, min(4, self.max_len))
            dst = self._dest(3, 1 if op in (DOT, NOP) else n)
            e = Entry(t=d, op=op, a=self._addr() if op != NOP else 0, b=self._addr() if op != NOP else 0,
                      d=dst if op != NOP else 0, len=n - 1)
            body.append((d, e))
            d += n + self.rng.randint(0, 2)
        period = d + self.rng.randint(0, 3)
        if not 1 <= period <= self.pmax:
            return None
        reps = self.rng.randint(2, 8)
        x = _Txn("periodic_alu")
        x.block(t, u, period, reps, body)
        for r in range(reps):
            for dd, e in body:
                if e.op != NOP:
                    x.units.append((t, _ALU, u + r * period + dd, u + r * period + dd + e.len))
                    self._wr3(x, t, u + r * period + dd + self.p.l_alu - 1, e.n)
        return x

    def periodic_ring(self, s: int, u: int) -> _Txn | None:
        p = self.p
        pt = self.rng.choice((PREV, NEXT))
        rcv, q = p.link_dest(s, pt)
        n = self.rng.randint(1, min(6, self.max_len))
        kind = self.rng.choice(("TAP", "RECV"))
        a0 = u + 1 + p.hop_lat
        slack = 0 if kind == "TAP" else self._slack(n)
        first_r = a0 if kind == "TAP" else a0 + 1 + slack
        win = n if kind == "TAP" else 1 + slack + n
        period = max(n, win) + self.rng.randint(0, 3)
        if period > self.pmax:
            return None
        reps = self.rng.randint(2, 8)
        x = _Txn("periodic_ring")
        x.block(s, u, period, reps, [(0, Entry(t=0, op=SEND, port=pt, a=self._addr(), len=n - 1))])
        d = self._dest(q, n)
        op = TAP if kind == "TAP" else RECV
        it = x.block(rcv, first_r, period, reps, [(0, Entry(t=0, op=op, port=q, d=d, len=n - 1))])
        for r in range(reps):
            o = r * period
            x.units.append((s, _OUT + pt, u + o, u + o + n - 1))
            x.wins.append((rcv, q, a0 + o, a0 + o + win - 1))
        x.consumers.append(({"tile": rcv, "kind": kind, "port": q, "u": first_r, "a": a0, "n": n,
                             "role": "final", "in_block": True, "period": period, "reps": reps}, it))
        return x


#: Transaction kinds of :func:`random_program` and their default weights.
_KINDS = {"ring": 4, "fwd": 2, "bus": 3, "bus_fwd": 2, "alu": 3, "nop": 1, "periodic_alu": 1, "periodic_ring": 1,
          "mac": 3, "mac_chain": 3, "vpu": 2}
#: Kinds that need a MAC array (``k > 0``); dropped from the weights when ``k == 0``.
_MAC_KINDS = ("mac", "mac_chain", "vpu")


def random_program(rng: Any, params: FabricParams, *, n_txn: int = 12, kinds: dict[str, float] | None = None,
                   start: int | None = None, span: int | None = None, wrap: bool = False,
                   max_len: int = 12, tries: int = 40) -> Program:
    """A random, coordinated, legal program (``lint`` reports nothing for it).

    Transactions are placed at random times on reservation tables (issue slots, units,
    input-port windows, bus cycles, schedule words), so they overlap in time:

    * ``ring``: SEND on prev/next (on a mesh: south/east), received by the neighbour
      that link reaches (``FabricParams.link_dest``) with RECV (slack 0 ..
      ``buf_d - 1``) or an exactly aligned TAP;
    * ``fwd``: a SEND relayed by one or two FWDs; each relay sends the words on either
      link, so a path may turn (on a ring: go back the way it came; on a mesh: east or
      south), and every FWD source port meets every output port;
    * ``bus``: a bus SEND, TAPped exactly by its receiver (any tile, the sender
      included) and by a random subset of the other tiles (the bus input is not
      buffered: a bus word nobody TAPs is lost, which LEN rejects);
    * ``bus_fwd``: bus -> FWD -> ring, ring -> FWD -> bus, or bus -> FWD -> bus (at most
      two words: the relay's follow the SEND's on the bus two cycles later);
    * ``alu``: VADD, VMUL or DOT; ``nop``: a NOP;
    * ``periodic_alu``: a PERIODIC block of 1..3 ALU/NOP body entries;
    * ``periodic_ring``: a periodic SEND block on one tile and the matching periodic
      RECV/TAP block on its neighbour.
    * with a MAC array (``k > 0``) only: ``mac`` (LDW; SWPW ``k`` cycles later; a
      MATVEC of 1..4 vectors writing memory), ``mac_chain`` (a MATVEC with psum_out on
      tile t and chained MATVECs with psum_in on t+1 (and t+2), each issued exactly
      ``hop_lat + 1`` later; the last one writes memory) and ``vpu``. With ``k > 0`` every
      region-3 writer (ALU, VPU, MAC lanes) also reserves its write cycles, so they never
      conflict.

    Memory is split in four regions of ``2**aw / 4`` words: writes from port ``q`` go to
    region ``q``, ALU writes to region 3, so writes never conflict. Every tile ends with
    HALT; with ``wrap`` (or a window reaching past ``half + 1``) every tile starts with a
    NOP at ``start`` so its first entry is issuable. The plan is kept in
    ``program.meta`` (used by :func:`illegal_variant`).

    Args:
        rng: ``random.Random``, numpy Generator, int seed or None.
        params: fabric parameters.
        n_txn: transactions to try to place (some may not fit and are skipped).
        kinds: transaction kind -> weight (default: all kinds that the parameters allow).
        start: first cycle of the window (default FETCH_LEAD, or ``half + 1`` with wrap).
        span: window length in cycles (at most ``half - 1``, the SPAN rule).
        wrap: put the window at ``[half + 1, 2**cw]`` and crowd its end, so operations
            in flight cross the wrap (``count`` going ``2**cw - 1 -> 0``). Entries cannot:
            the first entry must be issuable (``T <= half + 1``) and SPAN keeps the last
            within ``half`` of it.
        max_len: largest element count (also limited to the region size).
        tries: random placements tried per transaction.

    Returns:
        The program; ``meta`` holds ``start``, ``end``, ``kinds`` (placed),
        ``consumers`` (per consumer: tile, word, kind, port, u, a (first arrival), n,
        role, in_block), ``windows`` (``[tile][port]`` list of input-port windows: the
        cycles a consumer owns the port) and ``bus_words`` (intervals of the cycles in
        which a word is on the tiles' ``in[2]``).

    Raises:
        ParamError: a window that cannot be legal.
    """
    p = params
    if not isinstance(p, FabricParams):
        raise ParamError(f"params: expected a FabricParams, got {type(p).__name__}")
    r = _as_rng(rng)
    half = p.half
    lead = FabricParams.FETCH_LEAD
    if span is None:
        span = half - 1 if wrap else min(half - 1, 48 + 20 * n_txn)
    if not 8 <= span <= half - 1:
        raise ParamError(f"span={span}: must be in [8, half - 1 = {half - 1}] (SPAN and ORDER rules)")
    if start is None:
        start = half + 1 if wrap else lead
    if not lead <= start <= half + 1:
        raise ParamError(f"start={start}: must be in [FETCH_LEAD = {lead}, half + 1 = {half + 1}] (FIRST rule)")
    end = start + span
    lead_nop = end > half + 1
    pl = _Planner(p, r, start, end, lead_nop, max_len)
    w = dict(_KINDS if kinds is None else kinds)
    for k in w:
        if k not in _KINDS:
            raise ParamError(f"kinds: unknown transaction kind {k!r} (known: {sorted(_KINDS)})")
    if not p.bus:
        w.pop("bus", None)
        w.pop("bus_fwd", None)
    if not p.k:
        for kname in _MAC_KINDS:
            w.pop(kname, None)
    names = [k for k in w if w[k] > 0]
    weights = [w[k] for k in names]
    nt = p.nt
    for _ in range(n_txn if names else 0):
        kind = r.choices(names, weights)[0]
        for _try in range(tries):
            if wrap and r.random() < 0.5:   # crowd the end of the window: transfers cross the wrap
                u = r.randint(max(pl.lo, end - 40), end - 1)
            else:
                u = r.randint(pl.lo, end - 1)
            t = r.randrange(nt)
            if kind == "ring":
                x = pl.transfer(t, u, [r.choice((PREV, NEXT))])
            elif kind == "fwd":
                d = r.choice((PREV, NEXT))
                hops = r.randint(2, 3)   # the path may turn at each relay
                x = pl.transfer(t, u, [d] + [r.choice((PREV, NEXT)) for _ in range(hops - 1)])
            elif kind == "bus":
                x = pl.transfer(t, u, [BUS])
            elif kind == "bus_fwd":
                d = r.choice((PREV, NEXT))
                # bus -> bus as well: a relay re-broadcasts; its words follow the SEND's two
                # cycles later, so N <= 2 (a longer one would collide with itself)
                path = r.choice(([BUS, d], [d, BUS], [BUS, BUS]))
                x = pl.transfer(t, u, path, r.randint(1, min(2, max_len)) if path == [BUS, BUS] else None)
            elif kind == "alu":
                x = pl.alu(t, u)
            elif kind == "nop":
                x = pl.nop(t, u)
            elif kind == "periodic_alu":
                x = pl.periodic_alu(t, u)
            elif kind == "mac":
                x = pl.mac(t, u)
            elif kind == "mac_chain":
                x = pl.mac_chain(t, u)
            elif kind == "vpu":
                x = pl.vpu(t, u)
            else:
                x = pl.periodic_ring(t, u)
            if x is not None and pl.fits(x):
                pl.commit(x)
                break
    return _finish(pl, r)


def _finish(pl: _Planner, r: random.Random) -> Program:
    p = pl.p
    mask = (1 << p.cw) - 1
    scheds: list[list[int]] = []
    index: dict[int, int] = {}
    for t in range(p.nt):
        items = sorted(pl.items[t], key=lambda it: it[2])
        words: list[int] = []
        last = pl.start - 1
        if pl.lead_nop:
            words.append(encode(Entry(t=pl.start & mask, op=NOP), p))
            last = pl.start
        for it in items:
            index[id(it)] = len(words)
            if it[0] == "plain":
                words.append(encode(it[3].replace(t=it[2] & mask), p))
                last = max(last, it[2])
            else:
                _, _, u, period, reps, body = it
                words.append(encode(Entry(t=u & mask, op=PERIODIC, a=period, b=len(body), len=reps - 1), p))
                words.extend(encode(e.replace(t=d), p) for d, e in body)
                last = max(last, u + (reps - 1) * period + body[-1][0])
        halt_u = max(last + 1, pl.start)
        words.append(encode(Entry(t=halt_u & mask, op=HALT), p))
        scheds.append(words)
    data = [{a: r.getrandbits(p.dw) for a in range(p.words)} for _ in range(p.nt)]
    consumers = []
    for c, it in pl.consumers:
        c = dict(c)
        c["word"] = index[id(it)] + (1 if c["in_block"] else 0)
        consumers.append(c)
    meta = {"generator": "random_program", "start": pl.start, "end": pl.end, "lead_nop": pl.lead_nop,
            "kinds": list(pl.kinds), "consumers": consumers,
            "windows": [[sorted(pl.wins[t][q]) for q in range(3)] for t in range(p.nt)],
            "bus_words": sorted((lo + 1, hi + 1) for lo, hi in pl.bus)}
    return Program(p, scheds, data, meta)


# ======================================================================================
# illegal variants
# ======================================================================================
class Expected(NamedTuple):
    """The predicted first error of an illegal variant.

    Attributes:
        rule: the lint rule the variant breaks (lint must report it).
        tile: the tile that raises the first error (-1 = the bus).
        cycle: absolute cycle of the first ``err`` event of the whole run.
        bits: the bits of that event.
        count: the ``err_cnt`` (or ``bus_err_cnt``) value, ``cycle mod 2**cw``.
        detail: what was changed.
    """

    rule: str
    tile: int
    cycle: int
    bits: int
    count: int
    detail: str


#: Rule classes :func:`illegal_variant` can break.
ILLEGAL_RULES: tuple[str, ...] = ("ORDER", "DUPLICATE", "OPCODE", "BUSY", "RECV_EARLY", "OVERFLOW", "TAP",
                                  "COLLISION", "WCONF", "DECOMP", "HALT")


class _Tile:
    """Static view of one tile of a program: expanded stream up to HALT, issue cycles."""

    def __init__(self, prog: Program, t: int) -> None:
        p = prog.params
        self.t = t
        self.words = list(prog.schedules[t])
        xs = [x for x in expand(prog.schedule_image(t), p) if x.src < len(self.words)]
        hs = [j for j, x in enumerate(xs) if x.entry.op == HALT and not x.poison]
        self.eff: list[ExpandedEntry] = xs[:hs[0] + 1] if hs else xs
        self.us = unwrap_times(self.eff, p)
        self.sd = p.sd
        self.p = p
        self.ivals: list[tuple[int, int, int]] = []
        for j, x in enumerate(self.eff):
            if x.poison or opcode_problem(x.entry, p, t):
                continue
            for un in entry_units(x.entry, p):
                self.ivals.append((un, self.us[j], self.us[j] + entry_busy_len(x.entry) - 1))

    def item(self, j: int) -> int:
        x = self.eff[j]
        return x.header if x.header is not None else x.src

    def item_end(self, j: int) -> int:
        """Word index just after the top-level item of expanded entry ``j``."""
        x = self.eff[j]
        if x.header is None:
            return x.src + 1
        return x.header + 1 + decode(self.words[x.header], self.p).b

    def insert_index(self, u: int) -> int | None:
        """Word index where a plain entry issuing at ``u`` keeps the stream ordered."""
        if len(self.words) >= self.sd or not self.eff:
            return None
        before = [j for j, uu in enumerate(self.us) if uu < u]
        after = [j for j, uu in enumerate(self.us) if uu > u]
        if len(before) + len(after) != len(self.us) or not before or not after:
            return None
        jb, ja = before[-1], after[0]
        if self.item(jb) == self.item(ja):
            return None
        return self.item_end(jb)

    def unit_free(self, un: int, c: int) -> bool:
        return not any(u2 == un and a <= c <= b for u2, a, b in self.ivals)

    def index_of_word(self, w: int) -> int | None:
        for j, x in enumerate(self.eff):
            if x.src == w and x.header is None:
                return j
        return None


def _replace_word(prog: Program, t: int, w: int, e: Entry) -> list[list[int]]:
    s = [list(x) for x in prog.schedules]
    s[t][w] = encode(e, prog.params)
    return s


def _insert_word(prog: Program, t: int, w: int, e: Entry) -> list[list[int]]:
    s = [list(x) for x in prog.schedules]
    s[t].insert(w, encode(e, prog.params))
    return s


def illegal_variant(rng: Any, program: Program, rule: str, stratum: int | None = None) -> tuple[Program, Expected]:
    """Break one rule class of a legal program and predict the executor's first error.

    The prediction is made from the program's structure (and, for RECV_EARLY, OVERFLOW
    and TAP, from the plan :func:`random_program` stores in ``meta``), never by running
    the executor.

    ======================  ===============================================  ============
    rule                    change                                           first error
    ======================  ===============================================  ============
    ORDER / DUPLICATE       a plain entry's T set to before / equal to the   MISSED
                            previous entry's T
    OPCODE                  reserved opcode, UNIT != 0, PORT 3 on a SEND,    OPCODE
                            RECV, TAP or FWD, port 2 without a bus, RECV
                            on the bus, FWD source 3 (or the bus without
                            one)
    BUSY                    a copy of an entry (N >= 2) one cycle later      BUSY
    RECV_EARLY              a RECV moved to its first word's arrival cycle   UNDERFLOW
    OVERFLOW                the consumer of more than ``buf_d`` words        OVERFLOW
                            replaced by a NOP
    TAP                     a TAP moved one cycle early or late              TAP_IDLE
    COLLISION               a second bus SEND in the cycle of another        COLLISION
    WCONF                   a VADD writing a RECV/TAP's address in the same  WCONF
                            cycle
    DECOMP                  a malformed PERIODIC header inserted, or a body  DECOMP
                            entry turned into a PERIODIC header, or a
                            body entry's phase >= the period (the period
                            lowered to it)
    HALT                    a tile's final HALT removed                      MISSED
    ======================  ===============================================  ============

    Args:
        rng: ``random.Random``, numpy Generator, int seed or None.
        program: a legal program (for RECV_EARLY, OVERFLOW and TAP: from
            :func:`random_program`).
        rule: one of :data:`ILLEGAL_RULES` (``HALT-missing`` is accepted for HALT).
        stratum: the places to break the rule are grouped by tile (and, for OPCODE, by
            the kind of change: reserved opcode, UNIT, PORT 3 on a SEND, ...; for BUSY
            by the opcode of the entry copied, and its port; for DECOMP by
            :data:`DECOMP_KINDS`); stratum
            ``s`` is tile ``s % nt`` and kind ``s // nt`` (modulo their number), so
            consecutive strata sweep every tile and kind; None: a random group. The
            place is a random one of the group.

    Returns:
        ``(variant, expected)``; ``variant.meta`` holds ``{"illegal": rule, "expected": expected}``.

    Raises:
        ValueError: unknown rule, or the program offers no place to break it (in the
            stratum, when one is given).
    """
    r = _as_rng(rng)
    key = rule.upper().replace("-", "_")
    if key in ("HALT_MISSING", "HALT_MISSED"):
        key = "HALT"
    if key == "DUP":
        key = "DUPLICATE"
    if key not in ILLEGAL_RULES:
        raise ValueError(f"illegal_variant: unknown rule {rule!r} (known: {', '.join(ILLEGAL_RULES)})")
    if not isinstance(program, Program):
        raise ValueError("illegal_variant: expected a Program")
    p = program.params
    tiles = [_Tile(program, t) for t in range(p.nt)]
    cands = _CANDIDATES[key](r, program, tiles)
    if not cands:
        raise ValueError(f"illegal_variant: the program offers no place to break rule {key}")
    groups: dict[tuple[int, str], list] = {}
    for c in cands:   # (scheds, expected[, kind of change])
        groups.setdefault((c[1].tile, c[2] if len(c) > 2 else ""), []).append(c)
    keys = sorted(groups)
    if stratum is None:
        key_ = r.choice(keys)
    else:   # the stratum's tile and kind
        kinds = illegal_kinds(key, p)
        key_ = (stratum % p.nt, kinds[(stratum // p.nt) % len(kinds)])
        if key_ not in groups:
            raise ValueError(f"illegal_variant: the program offers no place to break rule {key} "
                             f"({key_[1] or 'any'} on tile {key_[0]})")
    group = groups[key_]
    scheds, exp = r.choice(group)[:2]
    prog = Program(p, scheds, program.data, {"illegal": key, "expected": exp})
    return prog, exp


def _busy_kind(e: Entry) -> str:
    """The kind of a BUSY place: the opcode copied, and for a port opcode its port (each
    port's unit has its own busy flag)."""
    name = OP_NAMES.get(e.op, "")
    return f"{name}@{e.port}" if e.op in (SEND, RECV, TAP, FWD) else name


def illegal_kinds(rule: str, p: FabricParams) -> list[str]:
    """The kinds of places of a rule (the strata of a sweep, with the tiles): for OPCODE
    the kinds of change an OPCODE variant makes (reserved opcode, UNIT, PORT 3, ...), for
    BUSY the opcode of the entry copied and its port (each checks another unit's busy
    flag), for DECOMP :data:`DECOMP_KINDS`; one kind for the other rules."""
    if rule == "BUSY":
        ports = range(3) if p.bus else range(2)
        return ([f"{o}@{q}" for o in ("SEND", "FWD", "TAP") for q in ports] + [f"RECV@{q}" for q in range(2)]
                + ["VADD", "VMUL", "DOT"] + (sorted(MAC_OPS) if p.k else []))
    if rule == "DECOMP":
        return list(DECOMP_KINDS)
    if rule != "OPCODE":
        return [""]
    ports = ("SEND", "RECV", "TAP", "FWD")
    kinds = ["reserved opcode", "UNIT != 0", *(f"PORT 3 on a {o}" for o in ports), "FWD source 3"]
    if p.bus:
        return kinds + ["RECV on the bus"]
    return kinds + [f"bus port without a bus on a {o}" for o in ports] + ["FWD source bus without a bus"]


def illegal_round(p: FabricParams) -> list[tuple[str, int]]:
    """One round of a sweep of every illegal rule the fabric can break (a COLLISION needs
    the bus), each as many times as it has kinds of places (:func:`illegal_kinds`):
    ``(rule, kind)`` pairs, the rules in :data:`ILLEGAL_RULES` order. Program ``s`` of a
    sweep takes pair ``i = s % len(round)`` of round ``k = s // len(round)`` at tile
    ``(i + k) % nt`` (the stratum ``tile + nt * kind`` of :func:`illegal_variant`), so
    ``nt`` rounds break every rule in every tile in every kind."""
    return [(rule, j) for rule in ILLEGAL_RULES if p.bus or rule != "COLLISION"
            for j in range(len(illegal_kinds(rule, p)))]


def illegal_step(p: FabricParams, s: int) -> tuple[str, int]:
    """Program ``s`` of a sweep of :func:`illegal_round`: ``(rule, stratum)`` for
    :func:`illegal_variant`."""
    sweep = illegal_round(p)
    i, k = s % len(sweep), s // len(sweep)
    rule, j = sweep[i]
    return rule, (i + k) % p.nt + p.nt * j


def _exp(p: FabricParams, rule: str, tile: int, cycle: int, bits: int, detail: str) -> Expected:
    return Expected(rule, tile, cycle, bits, cycle & ((1 << p.cw) - 1), detail)


def _c_order(r: random.Random, prog: Program, tiles: list[_Tile], dup: bool | None = None) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    out = []
    for tl in tiles:
        for j in range(1, len(tl.eff)):
            x = tl.eff[j]
            if x.header is not None or x.poison or x.entry.op in (RECV, TAP, FWD):
                continue
            prev_t = tl.eff[j - 1].entry.t
            d = dup if dup is not None else r.random() < 0.5
            new_t = prev_t if d else (prev_t - r.randint(1, min(p.half - 2, 40))) & mask
            what = "duplicates" if d else "goes before"
            out.append((_replace_word(prog, tl.t, x.src, x.entry.replace(t=new_t)),
                        _exp(p, "ORDER", tl.t, tl.us[j - 1] + 1, ERR_MISSED,
                             f"tile {tl.t} entry {x.src}: T={new_t} {what} the previous entry's T={prev_t}")))
    return out


def _c_dup(r, prog, tiles):
    return _c_order(r, prog, tiles, dup=True)


def _c_opcode(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    out = []
    # a RECV that does not issue leaves its words in the buffer: with more than buf_d of
    # them, the buffer overflows at a + buf_d (a: the first word's arrival), which is the
    # RECV's own cycle when it has no buffer slack left -- two errors in one cycle. Only
    # the random builder's RECVs (whose arrivals its plan keeps) with room are broken.
    # (A TAP or FWD issues at its first word's arrival, so its overflow comes later.)
    plan = prog.meta.get("consumers") if prog.meta.get("generator") == "random_program" else None
    room = {(c["tile"], c["word"]) for c in plan or () if c["kind"] == "RECV" and not c["in_block"]
            and (c["n"] <= p.buf_d or c["u"] < c["a"] + p.buf_d)}
    for tl in tiles:
        # a RECV moved to the bus would find the bus port's unit busy while a TAP or FWD
        # reads the bus: only in tiles that never read it is OPCODE its only error
        bus_read = any(y.entry.op == TAP and y.entry.port == 2 or y.entry.op == FWD and y.entry.b & 3 == 2
                       for y in tl.eff if y.header is None)
        for j, x in enumerate(tl.eff):
            e = x.entry
            if x.header is not None or x.poison or e.op == RECV and (tl.t, x.src) not in room:
                continue
            reserved = sorted(RESERVED_OPS - (set(MAC_OPS.values()) if p.k else set()))
            mods = [("reserved opcode", e.replace(op=r.choice(reserved))),
                    ("UNIT != 0", e.replace(unit=r.randint(1, 3)))]
            if e.op in (SEND, RECV, TAP, FWD):   # a port 3 names no unit: never BUSY as well
                mods.append((f"PORT 3 on a {OP_NAMES[e.op]}", e.replace(port=3)))
                if not p.bus:   # without a bus, the port-2 units never start: never busy
                    mods.append((f"bus port without a bus on a {OP_NAMES[e.op]}", e.replace(port=2)))
            if e.op == RECV and p.bus and not bus_read:
                mods.append(("RECV on the bus", e.replace(port=2)))
            if e.op == FWD:   # a source port 3 (or 2 without a bus) names no unit: never busy
                mods.append(("FWD source 3", e.replace(b=(e.b & ~3) | 3)))
                if not p.bus:
                    mods.append(("FWD source bus without a bus", e.replace(b=(e.b & ~3) | 2)))
            for what, ne in mods:
                if opcode_problem(ne, p, tl.t) is None:  # legal here: PORT 3 on the interface tile's RECV (its
                    continue                              # FIFO), a reserved opcode that is its CHECK
                out.append((_replace_word(prog, tl.t, x.src, ne),
                            _exp(p, "OPCODE", tl.t, tl.us[j], ERR_OPCODE, f"tile {tl.t} entry {x.src}: {what}"),
                            what))
    return out


def _c_busy(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    out = []
    for tl in tiles:
        for j, x in enumerate(tl.eff):
            e = x.entry
            if x.header is not None or x.poison or e.n < 2 or not entry_units(e, p) or opcode_problem(e, p, tl.t):
                continue
            u1 = tl.us[j] + 1
            w = tl.insert_index(u1)
            if w is None:
                continue
            out.append((_insert_word(prog, tl.t, w, e.replace(t=u1 & mask)),
                        _exp(p, "BUSY", tl.t, u1, ERR_BUSY, f"tile {tl.t}: copy of entry {x.src} inserted at "
                                                            f"word {w}, one cycle later"),
                        _busy_kind(e)))
    return out


def _plan(prog: Program, who: str = "illegal_variant: this rule") -> dict:
    m = prog.meta or {}
    if m.get("generator") != "random_program":
        raise ValueError(f"{who} needs the plan of a random_program() program (meta)")
    return m


def _c_recv_early(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    out = []
    for c in _plan(prog)["consumers"]:
        if c["kind"] != "RECV" or c["in_block"]:
            continue
        tl = tiles[c["tile"]]
        j = tl.index_of_word(c["word"])
        if j is None:
            continue
        a = c["a"]
        if j == 0 or tl.us[j - 1] >= a:
            continue
        e = tl.eff[j].entry
        out.append((_replace_word(prog, tl.t, c["word"], e.replace(t=a & mask)),
                    _exp(p, "RECV_EARLY", tl.t, a, ERR_UNDERFLOW,
                         f"tile {tl.t} entry {c['word']}: RECV moved from {c['u']} to the arrival cycle {a}")))
    return out


def _c_overflow(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    out = []
    for c in _plan(prog)["consumers"]:
        if c["in_block"] or c["n"] <= p.buf_d or c["port"] == BUS:
            continue
        tl = tiles[c["tile"]]
        j = tl.index_of_word(c["word"])
        if j is None:
            continue
        e = tl.eff[j].entry
        out.append((_replace_word(prog, tl.t, c["word"], Entry(t=e.t, op=NOP)),
                    _exp(p, "OVERFLOW", tl.t, c["a"] + p.buf_d, ERR_OVERFLOW,
                         f"tile {tl.t} entry {c['word']}: {c['kind']} of {c['n']} words replaced by NOP")))
    return out


def _c_tap(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    plan = _plan(prog)
    out = []
    for c in plan["consumers"]:
        if c["kind"] != "TAP" or c["in_block"]:
            continue
        t, q, a, n = c["tile"], c["port"], c["a"], c["n"]
        tl = tiles[t]
        j = tl.index_of_word(c["word"])
        if j is None:
            continue
        wins = list(plan["windows"][t][q]) + (list(plan["bus_words"]) if q == BUS else [])
        e = tl.eff[j].entry
        if j > 0 and tl.us[j - 1] < a - 1 and not any(lo <= a - 1 <= hi for lo, hi in wins):
            out.append((_replace_word(prog, t, c["word"], e.replace(t=(a - 1) & mask)),
                        _exp(p, "TAP", t, a - 1, ERR_TAP_IDLE,
                             f"tile {t} entry {c['word']}: TAP one cycle early")))
        if j + 1 < len(tl.eff) and tl.us[j + 1] > a + 1 and not any(lo <= a + n <= hi for lo, hi in wins):
            out.append((_replace_word(prog, t, c["word"], e.replace(t=(a + 1) & mask)),
                        _exp(p, "TAP", t, a + n, ERR_TAP_IDLE,
                             f"tile {t} entry {c['word']}: TAP one cycle late")))
    return out


def _c_collision(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    out = []
    if not p.bus:
        return out
    for tl in tiles:
        for j, x in enumerate(tl.eff):
            e = x.entry
            if x.poison or e.op != SEND or e.port != BUS or opcode_problem(e, p, tl.t):
                continue
            u = tl.us[j]
            for t2 in tiles:
                if t2.t == tl.t or not t2.unit_free(_OUT + BUS, u):
                    continue
                w = t2.insert_index(u)
                if w is None:
                    continue
                ne = Entry(t=u & mask, op=SEND, port=BUS, a=r.randrange(p.words))
                out.append((_insert_word(prog, t2.t, w, ne),
                            _exp(p, "COLLISION", -1, u + 1, ERR_COLLISION,
                                 f"tile {t2.t}: bus SEND inserted at word {w}, cycle {u}, with tile {tl.t} "
                                 f"entry {x.src}")))
    return out


def _c_wconf(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    amask = (1 << p.aw) - 1
    out = []
    for tl in tiles:
        for j, x in enumerate(tl.eff):
            e = x.entry
            if x.poison or e.op not in (RECV, TAP) or opcode_problem(e, p, tl.t):
                continue
            for i in range(e.n):
                tv = tl.us[j] + i - (p.l_alu - 1)
                if not tl.unit_free(_ALU, tv):
                    continue
                w = tl.insert_index(tv)
                if w is None:
                    continue
                ne = Entry(t=tv & mask, op=VADD, a=r.randrange(p.words), b=r.randrange(p.words),
                           d=(e.d + i) & amask)
                out.append((_insert_word(prog, tl.t, w, ne),
                            _exp(p, "WCONF", tl.t, tl.us[j] + i, ERR_WCONF,
                                 f"tile {tl.t}: VADD inserted at word {w} (cycle {tv}) writes address "
                                 f"{(e.d + i) & amask} with entry {x.src} element {i}")))
                break
    return out


def _c_decomp(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    out = []
    bads = [("period 0", dict(a=0, b=1)), ("n_body 0", dict(a=3, b=0))]
    if (1 << p.aw) - 1 > FabricParams.BODY_MAX:
        bads.append(("n_body > BODY_MAX", dict(a=3, b=FabricParams.BODY_MAX + 1)))
    for tl in tiles:
        for j in range(1, len(tl.eff)):
            u = tl.us[j - 1] + 1 + r.randint(0, 1)
            w = tl.insert_index(u)
            if w is None:
                continue
            what, f = r.choice(bads)
            out.append((_insert_word(prog, tl.t, w, Entry(t=u & mask, op=PERIODIC, **f)),
                        _exp(p, "DECOMP", tl.t, u, ERR_DECOMP, f"tile {tl.t}: bad header ({what}) inserted at "
                                                               f"word {w}, T={u & mask}"), DECOMP_KINDS[0]))
        for j, x in enumerate(tl.eff):
            if x.header is None or x.rep != 0 or x.poison or x.entry.op in (RECV, TAP, FWD):
                continue
            s = [list(y) for y in prog.schedules]
            be = decode(s[tl.t][x.src], p)
            s[tl.t][x.src] = encode(be.replace(op=PERIODIC), p)
            out.append((s, _exp(p, "DECOMP", tl.t, tl.us[j], ERR_DECOMP,
                                f"tile {tl.t} entry {x.src}: periodic body entry turned into a PERIODIC header"),
                        DECOMP_KINDS[1]))
            if be.t >= 1:   # the period lowered to this entry's phase d: d >= P (a period of 0 is a bad header)
                hdr = decode(prog.schedules[tl.t][x.header], p)
                out.append((_replace_word(prog, tl.t, x.header, hdr.replace(a=be.t)),
                            _exp(p, "DECOMP", tl.t, tl.us[j], ERR_DECOMP,
                                 f"tile {tl.t} entry {x.src}: phase d = {be.t} >= the period, lowered from {hdr.a} "
                                 f"to {be.t} in the header at word {x.header}"), DECOMP_KINDS[2]))
    return out


#: The kinds of DECOMP places (strata of :func:`illegal_variant`): a malformed header
#: inserted; a body entry of a block's first repetition made a PERIODIC header, or its
#: phase made >= the period (the header's period lowered to it). The entries before it
#: issue as before and the bad one raises DECOMP when the good one would have issued.
DECOMP_KINDS = ("bad header", "PERIODIC in a body", "body phase >= period")


def _c_halt(r: random.Random, prog: Program, tiles: list[_Tile]) -> list:
    p = prog.params
    mask = (1 << p.cw) - 1
    half = p.half
    out = []
    for tl in tiles:
        if not tl.words or not tl.eff or tl.eff[-1].entry.op != HALT or tl.eff[-1].header is not None \
                or tl.eff[-1].src != len(tl.words) - 1:
            continue
        pad = p.sd - (len(tl.words) - 1)
        c = tl.us[-2] + 1 if len(tl.eff) >= 2 else FabricParams.FETCH_LEAD
        used = 0
        hit = None
        while used < pad:   # the padding zeros are NOP entries at T = 0
            diff = (0 - (c & mask)) & mask
            if diff == 0:
                used += 1
                c += 1
            elif diff >= half:
                hit = c
                break
            else:
                c += diff
        if hit is None:
            continue
        s = [list(y) for y in prog.schedules]
        s[tl.t].pop()
        out.append((s, _exp(p, "HALT", tl.t, hit, ERR_MISSED, f"tile {tl.t}: final HALT removed")))
    return out


_CANDIDATES = {
    "ORDER": _c_order,
    "DUPLICATE": _c_dup,
    "OPCODE": _c_opcode,
    "BUSY": _c_busy,
    "RECV_EARLY": _c_recv_early,
    "OVERFLOW": _c_overflow,
    "TAP": _c_tap,
    "COLLISION": _c_collision,
    "WCONF": _c_wconf,
    "DECOMP": _c_decomp,
    "HALT": _c_halt,
}


# ======================================================================================
# jitter: one producer delayed within or beyond its receiver's slack
# ======================================================================================
#: Largest extra delay past the slack that :func:`jitter_variant` picks (``within=False``).
JITTER_EXTRA = 3


def jitter_variant(rng: Any, program: Program, within: bool, edge: bool = False) -> tuple[Program, Expected | None]:
    """Delay one ring SEND by ``j`` cycles, within or beyond its receiver's slack.

    A candidate is a plain RECV of the plan of :func:`random_program` (``meta``) on a
    ring port whose words come straight from a plain SEND on the neighbour (no FWD relay,
    no periodic block, not the bus). Its first word is on the receiver's ``in`` in cycle
    ``a`` and is pushed at the end of ``a``, so it can be popped from ``a + 1``
    (docs/sched.md section 4): the RECV issued at ``u`` has slack ``s = u - a - 1``, the
    executor's ``recv_slack`` (the cycles the first word was poppable before the RECV
    took it). Delaying the SEND by ``j`` delays every word by ``j``; word ``i`` is then
    poppable from ``a + j + i + 1``, and the RECV pops it in ``u + i``: ``j <= s`` keeps
    every pop fed, ``j = s + 1`` starves the first one.

    The SEND keeps the sender's schedule legal: it stays between its neighbours in the
    expanded stream (strictly before the next entry; two counts before a periodic block's
    first entry, HDR_GAP; a first entry stays issuable, FIRST), and ``out[PORT]`` is free
    in ``[T + j, T + j + N - 1]`` (no BUSY). A ring SEND drives no bus and writes no
    memory, and its words reach only the receiver's ``in`` port, which the plan gives the
    RECV alone in ``[a, u + N - 1]``, so nothing else sees them.

    * ``within=True``: ``1 <= j <= s``. The delayed words arrive in ``[a + j,
      a + j + N - 1]``, inside the RECV's window, so no TAP, FWD or other RECV sees them;
      the buffer holds fewer words than before (no OVERFLOW); the RECV pops the same
      words in the same cycles and writes the same values. The SEND reads
      ``mem[A + i]`` ``j`` cycles later, so candidates where any entry of the sender may
      write one of those addresses at the end of a cycle in ``[T, T + j + N - 2]`` are
      skipped. The variant lints clean, runs with ``err == 0`` and ends with the same data
      memories; only the sender's SEND issue and its words move (by ``j``).
    * ``within=False``: ``j = s + 1 + e`` with ``0 <= e <= JITTER_EXTRA`` (as room on the
      sender allows). The first error is UNDERFLOW on the receiver at ``u`` (lint rule
      RECV_EARLY): in the legal program the receiver's buffer on that port holds, at
      ``u``, only words of this transfer (the plan's port windows are disjoint, and every
      earlier transfer on the port was popped within its own window); now the first of
      them is pushed at the end of ``a + j >= u``, so the pop at ``u`` finds it empty.
      Nothing fires earlier: up to ``u`` the run differs from the legal program's only by
      the absence of this transfer's words (the sender stays legal, reads that come later
      change data, not errors; the receiver sees no word of it before ``u``), and the
      legal program raises nothing.

    Args:
        rng: ``random.Random``, numpy Generator, int seed or None.
        program: a legal program from :func:`random_program` (its plan is in ``meta``).
        within: delay within the slack (legal) or beyond it (illegal).
        edge: only the delays at the edge of the slack: ``j = s`` (the largest that must
            pass) or ``j = s + 1`` (the smallest that must fail).

    Returns:
        ``(variant, None)`` within the slack, ``(variant, expected)`` beyond it.
        ``variant.meta`` holds ``jitter`` (``"within"``/``"beyond"``), ``moved`` (sender
        tile and word, ``port``, ``t_from``, ``t_to``, ``j``, ``slack``, receiver tile and
        word, ``recv_u``, ``arrival``, ``n``) and ``expected``.

    Raises:
        ValueError: no plan in ``meta``, or the program offers no place to delay a SEND.
    """
    r = _as_rng(rng)
    if not isinstance(program, Program):
        raise ValueError("jitter_variant: expected a Program")
    plan = _plan(program, "jitter_variant")
    p = program.params
    mask = (1 << p.cw) - 1
    tiles = [_Tile(program, t) for t in range(p.nt)]
    cands = []
    for c in plan["consumers"]:
        if c["kind"] != "RECV" or c["in_block"] or c["port"] == BUS:
            continue
        y, q, a, n = c["tile"], c["port"], c["a"], c["n"]
        jr = tiles[y].index_of_word(c["word"])
        if jr is None:
            continue
        s = tiles[y].us[jr] - a - 1
        sx, pt = p.link_src(y, q)
        tl = tiles[sx]
        js = next((j for j, uu in enumerate(tl.us) if uu == a - 1 - p.hop_lat), None)
        if js is None:
            continue
        x = tl.eff[js]
        e = x.entry
        if x.header is not None or x.poison or e.op != SEND or e.port != pt or e.n != n:
            continue   # a FWD relays the words, or the SEND is in a periodic block
        js_ok = _jitter_room(tl, js)
        if within:
            js_ok = [j for j in js_ok if (j == s if edge else j <= s) and not _reads_rewritten(tl, js, j)]
        else:
            js_ok = [j for j in js_ok if s + 1 <= j <= s + 1 + (0 if edge else JITTER_EXTRA)]
        if js_ok:
            cands.append((c, jr, s, sx, js, js_ok))
    if not cands:
        raise ValueError(f"jitter_variant: the program offers no place to delay a SEND "
                         f"{'within' if within else 'beyond'} its receiver's slack")
    c, jr, s, sx, js, js_ok = r.choice(cands)
    j = r.choice(js_ok)
    tl = tiles[sx]
    e, t0 = tl.eff[js].entry, tl.us[js]
    u = tiles[c["tile"]].us[jr]
    moved = {"tile": sx, "word": tl.eff[js].src, "port": e.port, "t_from": t0, "t_to": t0 + j, "j": j,
             "slack": s, "recv_tile": c["tile"], "recv_word": c["word"], "recv_u": u, "arrival": c["a"], "n": e.n}
    what = (f"tile {sx} entry {moved['word']}: SEND of {e.n} word(s) moved from {t0} to {t0 + j} (j = {j}); "
            f"tile {c['tile']} entry {c['word']}: RECV at {u} has slack {s}")
    exp = None if within else _exp(p, "RECV_EARLY", c["tile"], u, ERR_UNDERFLOW, what)
    scheds = _replace_word(program, sx, moved["word"], e.replace(t=(t0 + j) & mask))
    meta = {"jitter": "within" if within else "beyond", "moved": moved, "detail": what, "expected": exp}
    return Program(p, scheds, program.data, meta), exp


def _jitter_room(tl: _Tile, js: int) -> list[int]:
    """Delays ``j >= 1`` that keep plain entry ``js`` (a SEND) of a tile legal where it is:
    ordered before the next entry (two counts before a periodic block's first entry),
    issuable if it is the first entry, and its units free for ``N`` cycles."""
    p = tl.p
    e, t0 = tl.eff[js].entry, tl.us[js]
    nxt = tl.eff[js + 1]
    last = tl.us[js + 1] - (2 if nxt.first_in_block else 1) - t0
    if js == 0:
        last = min(last, p.half + 1 - t0)
    units = entry_units(e, p)
    own = [(un, t0, t0 + e.n - 1) for un in units]
    others = [iv for iv in tl.ivals if iv not in own]
    return [j for j in range(1, last + 1)
            if not any(un in units and _overlap(lo, hi, t0 + j, t0 + j + e.n - 1) for un, lo, hi in others)]


def _reads_rewritten(tl: _Tile, js: int, j: int) -> bool:
    """May a write of the tile change what SEND ``js`` reads once delayed by ``j``?

    The SEND reads ``mem[A + i]`` in cycle ``T + j + i`` instead of ``T + i``: a write to
    one of those addresses at the end of a cycle in ``[T, T + j + N - 2]`` may change it.
    Every entry's writes are taken as its whole address range over its whole write span
    (conservative)."""
    p = tl.p
    amask = p.words - 1
    e, t0 = tl.eff[js].entry, tl.us[js]
    reads = {(e.a + i) & amask for i in range(e.n)}
    lo, hi = t0, t0 + j + e.n - 2
    for k, x in enumerate(tl.eff):
        w = x.entry
        if x.poison or opcode_problem(w, p, tl.t):
            continue
        uk = tl.us[k]
        if w.op in (RECV, TAP):
            span = (uk, uk + w.n - 1, w.n)
        elif w.op in (VADD, VMUL, VPU):
            span = (uk + p.l_alu - 1, uk + w.n + p.l_alu - 2, w.n)
        elif w.op == DOT:
            span = (uk + w.n + p.l_alu - 2, uk + w.n + p.l_alu - 2, 1)
        elif w.op == MATVEC and not w.port & 2:
            span = (uk + FabricParams.L_MM - 1, uk + w.n + FabricParams.L_MM - 2, w.n * p.k)
        else:
            continue
        if _overlap(span[0], span[1], lo, hi) and reads & {(w.d + i) & amask for i in range(span[2])}:
            return True
    return False


# ======================================================================================
# directed programs (patent examples)
# ======================================================================================
def _need(cond: bool, what: str) -> None:
    if not cond:
        raise ParamError(what)


def _prog(p: FabricParams, ents: list[list[Entry]], data: list[dict[int, int]], meta: dict) -> Program:
    mask = (1 << p.cw) - 1
    for t, es in enumerate(ents):
        _need(len(es) <= p.sd, f"{meta['name']}: tile {t} needs {len(es)} schedule words, sd = {p.sd}")
    return Program(p, [[encode(e.replace(t=e.t & mask) if e.op != PERIODIC else e, p) for e in es]
                       for es in ents], data, meta)


def fig2a_program(params: FabricParams, offset: int = 1, seed: int = 2026) -> Program:
    """The Fig. 2A ring replay A -> B -> C -> A (tiles 0, 1, 2), patent times + ``offset``.

    Patent times (count = patent time + ``offset``): A SENDs 10 words on next at 1;
    B RECVs them from 6 (zero slack: ``l_path(1) = 5``), computes
    ``y = (x + k1) * k2 + x`` with VADD 16, VMUL 30, VADD 45 and SENDs ``y`` at 63;
    C RECVs at 68, computes ``z = (y + k3) * k4`` with VADD 83, VMUL 100 and SENDs at
    131; A RECVs ``z`` at 136..145 (done by 148). The contract forbids an issue before
    ``FETCH_LEAD = 2`` (rule FIRST), so the default ``offset`` is 1: A's SEND issues at
    count 2.

    Data (addresses): A: ``x`` at 0x20, result ``z`` at 0x00; B: received ``x`` at 0x00,
    ``k1`` 0x10, ``k2`` 0x30, ``y`` 0x20; C: received ``y`` 0x00, ``k3`` 0x10, ``k4``
    0x30, ``z`` 0x20. ``meta["expect"]`` maps (tile, address) to the expected words.

    Raises:
        ParamError: ``nt != 3``, ``l_path(1) != 5`` (needs ``hop_lat = 3``), ``aw < 6``,
            ``sd < 6`` or ``offset < 1``.
    """
    p = params
    _need(p.nt == 3, f"fig2a_program: the ring A->B->C->A needs nt = 3 (got {p.nt})")
    _need(p.l_path(1) == 5, f"fig2a_program: needs l_path(1) == 5, i.e. hop_lat = 3 (got hop_lat = {p.hop_lat})")
    _need(p.aw >= 6, f"fig2a_program: needs aw >= 6 (64 words), got {p.aw}")
    _need(offset >= FabricParams.FETCH_LEAD - 1,
          f"fig2a_program: offset={offset} puts A's SEND before FETCH_LEAD")
    o = offset
    n = 10
    L = n - 1
    rr = random.Random(seed)
    dmask = (1 << p.dw) - 1
    rnd = lambda: [rr.getrandbits(p.dw) for _ in range(n)]  # noqa: E731
    x, k1, k2, k3, k4 = rnd(), rnd(), rnd(), rnd(), rnd()
    y = [(((a + b) * c) + a) & dmask for a, b, c in zip(x, k1, k2)]
    z = [((a + b) * c) & dmask for a, b, c in zip(y, k3, k4)]
    A = [Entry(1 + o, SEND, NEXT, a=0x20, len=L), Entry(136 + o, RECV, PREV, d=0x00, len=L), Entry(137 + o, HALT)]
    B = [Entry(6 + o, RECV, PREV, d=0x00, len=L), Entry(16 + o, VADD, a=0x00, b=0x10, d=0x20, len=L),
         Entry(30 + o, VMUL, a=0x20, b=0x30, d=0x20, len=L), Entry(45 + o, VADD, a=0x20, b=0x00, d=0x20, len=L),
         Entry(63 + o, SEND, NEXT, a=0x20, len=L), Entry(64 + o, HALT)]
    C = [Entry(68 + o, RECV, PREV, d=0x00, len=L), Entry(83 + o, VADD, a=0x00, b=0x10, d=0x20, len=L),
         Entry(100 + o, VMUL, a=0x20, b=0x30, d=0x20, len=L), Entry(131 + o, SEND, NEXT, a=0x20, len=L),
         Entry(132 + o, HALT)]
    blk = lambda base, v: {base + i: w for i, w in enumerate(v)}  # noqa: E731
    data = [blk(0x20, x), {**blk(0x10, k1), **blk(0x30, k2)}, {**blk(0x10, k3), **blk(0x30, k4)}]
    expect = {(0, 0x00): z, (1, 0x00): x, (1, 0x20): y, (2, 0x00): y, (2, 0x20): z}
    return _prog(p, [A, B, C], data, {"name": "fig2a", "offset": o, "expect": expect,
                                      "windows": {"B_recv": (6 + o, 15 + o), "B_compute": (16 + o, 62 + o),
                                                  "C_recv": (63 + o, 82 + o), "C_compute": (83 + o, 130 + o),
                                                  "A_recv_done": 148 + o}})


def schedule_c_program(params: FabricParams, n: int = 4, seed: int = 2026) -> Program:
    """Patent schedule C: op.3 = VADD at 30, the SEND of its result at 43.

    Tile 0 computes ``s = u + v`` (``n`` words, ``u`` at 0, ``v`` at ``2**aw / 4``, ``s``
    at ``3 * 2**aw / 4``) with VADD at 30 and SENDs ``s`` at 43 on the bus (on next when
    ``bus=False``); its first word leaves the port at 44 (43 + P_SEND). Tile 1 takes it
    with a TAP at ``43 + l_bus - 1`` (the bus input is not buffered) into address
    ``2 * 2**aw / 4``, or with a RECV at ``43 + l_path(1)`` into address 0.
    ``meta["expect"]`` maps (tile, address) to the expected words.

    Raises:
        ParamError: ``aw < 5`` or ``n`` outside ``[1, 2**aw / 4]``.
    """
    p = params
    _need(p.aw >= 5, f"schedule_c_program: needs aw >= 5, got {p.aw}")
    reg = p.words // 4
    _need(1 <= n <= reg, f"schedule_c_program: n={n} outside [1, {reg}]")
    rr = random.Random(seed)
    dmask = (1 << p.dw) - 1
    u = [rr.getrandbits(p.dw) for _ in range(n)]
    v = [rr.getrandbits(p.dw) for _ in range(n)]
    s = [(a + b) & dmask for a, b in zip(u, v)]
    L = n - 1
    res = 3 * reg
    ents: list[list[Entry]] = [[] for _ in range(p.nt)]
    ents[0] = [Entry(30, VADD, a=0, b=reg, d=res, len=L)]
    if p.bus:
        ents[0].append(Entry(43, SEND, BUS, a=res, len=L))
        ents[1].append(Entry(43 + p.l_bus - 1, TAP, BUS, d=2 * reg, len=L))
        rx = 2 * reg
    else:
        ents[0].append(Entry(43, SEND, NEXT, a=res, len=L))
        ents[1].append(Entry(43 + p.l_path(1), RECV, PREV, d=0, len=L))
        rx = 0
    for t in range(p.nt):
        last = max((e.t for e in ents[t]), default=FabricParams.FETCH_LEAD - 1)
        ents[t].append(Entry(last + 1, HALT))
    data = [dict() for _ in range(p.nt)]
    data[0] = {**{i: w for i, w in enumerate(u)}, **{reg + i: w for i, w in enumerate(v)}}
    expect = {(0, res): s, (1, rx): s}
    return _prog(p, ents, data, {"name": "schedule_c", "expect": expect, "vadd_t": 30, "send_t": 43,
                                 "first_word_out": 43 + FabricParams.P_SEND})


def periodic6_program(params: FabricParams, reps: int = 100, base: int = 10,
                      x0: int = 5, c: int = 1000) -> tuple[Program, Program]:
    """The six-cycle periodic example: P = 6, body {d0: RECV, d2: VADD, d5: SEND}.

    A pipeline over tiles 0 -> 1 -> 2, each a PERIODIC block of ``reps`` repetitions:

    * tile 0 at ``base``: {d0: SEND next a=0 (one word), d1: VADD mem[0] += mem[1]}
      with ``mem[0] = x0``, ``mem[1] = 1``: it sends ``x0 + r`` in repetition ``r``;
    * tile 1 at ``base + l_path(1)``: {d0: RECV prev d=0, d2: VADD mem[2] = mem[0] + mem[1],
      d5: SEND next a=2} with ``mem[1] = c``;
    * tile 2 at ``base + l_path(1) + 5 + l_path(1)``: {d0: RECV prev d=0, d1: VADD
      mem[1] += mem[0]}: ``mem[1]`` ends as ``sum_r (x0 + r + c) mod 2**dw``
      (when ``l_alu <= 3``; with ``l_alu = 4`` tile 1's SEND at d5 reads ``mem[2]`` before
      the VADD's write lands, and sends the previous repetition's sum).

    Returns:
        ``(compressed, expanded)``: the same program with PERIODIC blocks and with every
        block written out as plain entries. The expanded one needs more schedule words;
        its params are ``params`` with ``sd`` raised to fit when necessary.

    Raises:
        ParamError: ``nt < 3``, ``reps`` outside ``[1, 256]``, ``base < FETCH_LEAD + 1``,
            or an expanded schedule longer than 1024 words.
    """
    p = params
    _need(p.nt >= 3, f"periodic6_program: needs nt >= 3 (got {p.nt})")
    _need(1 <= reps <= 256, f"periodic6_program: reps={reps} outside [1, 256]")
    _need(base >= FabricParams.FETCH_LEAD + 1, f"periodic6_program: base={base} < FETCH_LEAD + 1")
    mask = (1 << p.cw) - 1
    P = 6
    b1 = base + p.l_path(1)
    b2 = b1 + 5 + p.l_path(1)
    blocks = {
        0: (base, [Entry(0, SEND, NEXT, a=0), Entry(1, VADD, a=0, b=1, d=0)]),
        1: (b1, [Entry(0, RECV, PREV, d=0), Entry(2, VADD, a=0, b=1, d=2), Entry(5, SEND, NEXT, a=2)]),
        2: (b2, [Entry(0, RECV, PREV, d=0), Entry(1, VADD, a=0, b=1, d=1)]),
    }
    comp: list[list[Entry]] = [[] for _ in range(p.nt)]
    expd: list[list[Entry]] = [[] for _ in range(p.nt)]
    for t in range(p.nt):
        if t in blocks:
            b, body = blocks[t]
            comp[t].append(Entry(b & mask, PERIODIC, a=P, b=len(body), len=reps - 1))
            comp[t].extend(body)
            for r in range(reps):
                expd[t].extend(e.replace(t=(b + r * P + e.t) & mask) for e in body)
            last = b + (reps - 1) * P + body[-1].t
            comp[t].append(Entry((last + 1) & mask, HALT))
            expd[t].append(Entry((last + 1) & mask, HALT))
        else:
            comp[t].append(Entry(FabricParams.FETCH_LEAD, HALT))
            expd[t].append(Entry(FabricParams.FETCH_LEAD, HALT))
    dmask = (1 << p.dw) - 1
    data = [dict() for _ in range(p.nt)]
    data[0] = {0: x0 & dmask, 1: 1}
    data[1] = {1: c & dmask}
    total = sum(x0 + r + c for r in range(reps)) & dmask
    meta = {"name": "periodic6", "reps": reps, "period": P, "bases": (base, b1, b2),
            "expect": {(2, 1): [total], (2, 0): [(x0 + reps - 1 + c) & dmask], (0, 0): [(x0 + reps) & dmask]}}
    need = max(len(e) for e in expd)
    _need(need <= 1024, f"periodic6_program: the expanded form needs {need} schedule words (> 1024)")
    pe = p if need <= p.sd else dataclasses.replace(p, sd=need)
    words_c = [[encode(e, p) for e in es] for es in comp]
    words_e = [[encode(e, pe) for e in es] for es in expd]
    return (Program(p, words_c, data, dict(meta, form="compressed")),
            Program(pe, words_e, data, dict(meta, form="expanded")))

