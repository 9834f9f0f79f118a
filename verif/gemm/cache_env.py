"""Testbench knowledge of the gemm family's cache model ``sa_cache`` (docs/gemm.md
sections 5 and 9); the shared environment is :mod:`.block_env`.

An item is a *burst*: one operation per cycle, each a lookup (``lk_valid`` with an address
and a kind code 0..7), an idle cycle (``lk_valid`` low, a random address or the last lookup's, any kind), ``clr``
alone or with a lookup in the same cycle, or a one-cycle ``rst`` (no lookup); after the
burst one idle cycle in which the counters are read.

Stimulus: directed bursts first (every kind code missing then hitting; a set filled, its
LRU line refreshed, then new lines evicting in LRU order; ``clr`` alone and with a
lookup; ``rst`` in the middle and the same lines again; ``clr`` with a hit and with a
miss of every kind code; every counter past its top bit; an LRU soak of 32 cycles per
way in two full sets, one in four idle at a cached line), then random bursts with a
chosen locality: ``hot`` (one to three sets and a pool of ``ways + 1 .. ways + 3`` tags,
so the LRU order decides every miss), ``stream`` (consecutive lines with jumps back),
``random`` (anywhere in the ``aw``-bit space) or ``mixed``; each burst has its own idle
rate (an idle cycle at the last lookup's address, a hot line's or any), kinds 0..5 with
the unused codes 6 and 7 one lookup in ten, an occasional ``clr``,
and one burst in seven an ``rst``.

Checks, against :class:`~lockstep.models.gemm.CacheSim` (carried from burst to burst as
the DUT carries its tags; ``clr`` is :meth:`CacheSim.clear`, ``rst`` :meth:`CacheSim.reset`;
codes 6 and 7 are ``access(addr, kind=None)``):

* every lookup's ``lk_hit`` equals ``CacheSim.access``, and ``lk_evict`` is a miss in a
  full set (the model's set holds ``ways`` lines before the lookup);
* ``lk_hit`` is low in every cycle without ``lk_valid``;
* after each burst, and in each ``clr`` or ``rst`` cycle (the counts before it):
  ``cnt_lookups``, ``cnt_hits``, ``cnt_misses`` per kind and ``n_evict`` equal the model's
  counters (modulo ``2**32``); so the counts after a ``clr`` (from its own lookup on) and
  after a ``rst`` are checked by the next read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from lockstep.models import gemm
from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..coverage import Covergroup
from .block_env import BlockBfm, BlockUnit

__all__ = ["Burst", "CacheUnit"]

NK = len(GemmParams.KINDS)
#: Names of the kind codes (6 and 7 count in no kind).
CODES = GemmParams.KINDS + ("code6", "code7")


@dataclass
class Burst:
    """One burst: ``ops`` is a list of ``(op, addr, kind)``, ``op`` one of ``lk``,
    ``idle``, ``clr``, ``clr_lk``, ``rst``."""

    tag: str
    ops: list[tuple[str, int, int]]

    def __repr__(self) -> str:
        n = sum(op in ("lk", "clr_lk") for op, _, _ in self.ops)
        extra = [op for op, _, _ in self.ops if op in ("clr", "clr_lk", "rst")]
        return f"{self.tag}: {len(self.ops)} cycles, {n} lookups{', ' + ' '.join(extra) if extra else ''}"


@dataclass
class CacheObs:
    """``lk_hit``, ``lk_evict`` per cycle of a burst and the counters after it."""

    rows: list[tuple[int, int]] = field(default_factory=list)
    counters: dict[str, list[int]] = field(default_factory=dict)
    before: dict[int, dict[str, list[int]]] = field(default_factory=dict)  # op index -> counters in a clr/rst cycle


class CacheUnit(BlockUnit):
    """``sa_cache`` against :class:`CacheSim` (module docstring)."""

    idle: ClassVar[dict[str, int]] = {"rst": 0, "clr": 0, "lk_valid": 0, "lk_addr": 0, "lk_kind": 0}
    covergroup = "gemm.cache"
    default_items = 80

    def __init__(self, ctx: Any, params: GemmParams, widths: dict[str, int]) -> None:
        super().__init__(ctx, params, widths)
        p = params
        self.sim = gemm.CacheSim(p.sets, p.ways, p.line)  # the scoreboard's model
        self.cov = gemm.CacheSim(p.sets, p.ways, p.line)  # the cover group's (same stimulus)
        self.lgs, self.lgl = clog2(p.sets), clog2(p.line)

    # ---- stimulus -----------------------------------------------------------------------
    def addr(self, rng: np.random.Generator, tag: int, s: int) -> int:
        """A byte address in line ``tag``/set ``s``."""
        return ((tag << self.lgs | s) << self.lgl) | int(rng.integers(0, self.params.line))

    def kind(self, rng: np.random.Generator) -> int:
        return int(rng.integers(NK, 8)) if rng.random() < 0.1 else int(rng.integers(0, NK))

    def tags(self, rng: np.random.Generator, n: int) -> list[int]:
        top = 1 << self.params.tag_bits
        return [int(t) for t in rng.choice(top, size=min(n, top), replace=False)]

    def items(self, rng: np.random.Generator, count: int) -> list[Burst]:
        p = self.params
        W, S = p.ways, p.sets
        lk = lambda a, k: ("lk", a, k)  # noqa: E731
        s0 = int(rng.integers(0, S))
        t = self.tags(rng, W + 3)
        # every code misses then hits (each its own line in set s0, all invalid after rst)
        ops = [("rst", 0, 0)]
        for k in range(8):
            a = self.addr(rng, t[k % len(t)] + 0, s0) if k < W else self.addr(rng, t[k % len(t)], (s0 + 1 + k) % S)
            ops += [lk(a, k), lk(a ^ (int(rng.integers(0, p.line))), k)]
        bursts = [Burst("kinds", ops)]
        # LRU order: fill a set, refresh its LRU line, then new lines evict in LRU order
        s1 = (s0 + 1) % S
        fill = [lk(self.addr(rng, t[i], s1), self.kind(rng)) for i in range(W)]
        ops = [("rst", 0, 0)] + fill + [fill[0]] + [lk(self.addr(rng, t[W + i], s1), self.kind(rng)) for i in range(3)]
        ops += fill[::-1] + fill + [("idle",) + fill[-1][1:]] + fill[1:2]
        bursts.append(Burst("lru", ops))
        # clr alone, clr with a lookup (a hit, then a miss that evicts), rst in the middle and
        # the same lines again
        new = ("clr_lk", self.addr(rng, t[W + 2], s1), self.kind(rng))
        ops = (fill + [("clr", 0, 0)] + fill[:2] + [("clr_lk",) + fill[2 % W][1:]] + fill + [new] + fill
               + [("rst", 0, 0)] + fill)
        bursts.append(Burst("clr_rst", ops))
        # clr with a lookup of every kind code, a hit and then a miss: each kind's counters
        # restart at 1 from that lookup (a kind's "hits <= 1" dropped survived every run)
        ops = [("rst", 0, 0)] + fill
        for k in range(8):
            ops += [("clr_lk", fill[k % W][1], k), lk(fill[(k + 1) % W][1], k),
                    ("clr_lk", self.addr(rng, t[W + k % 3], s1), k)] + fill
        bursts.append(Burst("clr_kinds", ops))
        # every kind's lookup, hit and miss counters and n_evict round past their top, with no
        # clr or rst between: c = 2**b + 2**(b-1) + 2**(b-2) + 1 new lines per kind, each
        # missed then hit, so misses and hits read c and lookups 2c modulo 2**b, both with
        # the top bit set (a count that ends below it, or exactly 2**b + 1, reads the same
        # with that bit stuck at 0: sa_cache@fced m073, kind 5's misses, survived; the random
        # bursts clear or reset the counts before 128 of a kind). A counter wider than 8 bits
        # gets the counts of an 8-bit one: no wrap in a quick run, but each of bits 0..8 set
        # on the way, so a stuck 0 in any of them shows (sa_cache@4875 m008 and m018, bit 4
        # of a 32-bit hit counter, survived)
        b = min(p.cnt_bits, 8)
        ops = [("rst", 0, 0)]
        line = int(rng.integers(0, 1 << (p.aw - self.lgl)))
        for _ in range((1 << b) + (1 << (b - 1)) + (1 << (b - 2)) + 1):
            for k in range(NK):
                line = (line + 1) % (1 << (p.aw - self.lgl))
                a = (line << self.lgl) | int(rng.integers(0, p.line))
                ops += [lk(a, k), lk(a, k)]
        bursts.append(Burst("wrap", ops))
        # LRU soak: 32 cycles per way in two sets at random with a pool of ways + 1 tags, so
        # the sets stay full and hits come at every age, the other set's between; one cycle
        # in four idle (lk_valid low) at a pool address, a line of any age that must not
        # move. A way's matched age held over (a latch where a default assignment is
        # dropped: sa_cache@fced m024 and m054) shows only after such a cycle: in a lookup
        # the latch takes the hit way's age after the write, 0, within the cycle
        pool = self.tags(rng, W + 1)
        sets = [s0, (s0 + S // 2) % S]
        ops = [("rst", 0, 0)]
        for _ in range(32 * W):
            a = self.addr(rng, int(rng.choice(pool)), sets[int(rng.integers(0, 2))])
            ops.append(("idle" if rng.random() < 1 / 4 else "lk", a, int(rng.integers(0, NK))))
        bursts.append(Burst("soak", ops))
        while len(bursts) < count:
            bursts.append(self.random_burst(rng))
        return bursts

    def random_burst(self, rng: np.random.Generator) -> Burst:
        p = self.params
        S, W = p.sets, p.ways
        mode = str(rng.choice(["hot", "hot", "stream", "random", "mixed"]))
        idle = float(rng.choice([0.0, 0.1, 0.3, 0.5]))
        n = int(rng.integers(20, 81))
        hot = [int(s) for s in rng.choice(S, size=min(S, int(rng.integers(1, 4))), replace=False)]
        pool = self.tags(rng, W + int(rng.integers(1, 4)))
        line = int(rng.integers(0, 1 << (p.aw - self.lgl)))
        top_line = (1 << (p.aw - self.lgl)) - 1
        rst_at = int(rng.integers(0, n)) if rng.random() < 1 / 7 else None
        ops: list[tuple[str, int, int]] = []
        for i in range(n):
            if i == rst_at:
                ops.append(("rst", 0, 0))
                continue
            if rng.random() < idle:  # lk_valid low: the last lookup's address (cached), a hot
                last = [a for op, a, _ in ops if op in ("lk", "clr_lk")][-1:]  # line, or any
                r = rng.random()
                a = (last[0] if last and r < 1 / 3 else self.addr(rng, int(rng.choice(pool)), int(rng.choice(hot)))
                     if r < 2 / 3 else int(rng.integers(0, 1 << p.aw)))
                ops.append(("idle", a, int(rng.integers(0, 8))))
                continue
            m = mode if mode != "mixed" else str(rng.choice(["hot", "stream", "random"]))
            if m == "hot":
                a = self.addr(rng, int(rng.choice(pool)), int(rng.choice(hot)))
            elif m == "stream":
                line = line + 1 if rng.random() < 0.8 else max(0, line - int(rng.integers(1, 2 * S * W + 1)))
                line = min(line, top_line)
                a = (line << self.lgl) | int(rng.integers(0, p.line))
            else:
                a = int(rng.integers(0, 1 << p.aw))
            r = rng.random()
            ops.append(("clr_lk" if r < 0.01 else "lk", a, self.kind(rng)))
            if 0.01 <= r < 0.02:
                ops.append(("clr", 0, 0))
        return Burst(mode, ops)

    def budget(self, burst: Burst) -> int:
        return len(burst.ops) + 4

    # ---- driving ------------------------------------------------------------------------
    async def drive(self, bfm: BlockBfm, burst: Burst) -> CacheObs:
        obs = CacheObs()
        for op, a, k in burst.ops:
            vals = {"lk_addr": a, "lk_kind": k}
            if op in ("lk", "clr_lk"):
                vals["lk_valid"] = 1
            if op in ("clr", "clr_lk"):
                vals["clr"] = 1
            if op == "rst":
                vals["rst"] = 1
            await bfm.next_cycle(vals)
            await bfm.settle()
            r = bfm.read(("lk_hit", "lk_evict"))
            obs.rows.append((r["lk_hit"], r["lk_evict"]))
            if op in ("clr", "clr_lk", "rst"):
                obs.before[len(obs.rows) - 1] = self.counters(bfm)
        await bfm.next_cycle()
        await bfm.settle()
        obs.counters = self.counters(bfm)
        return obs

    def counters(self, bfm: BlockBfm) -> dict[str, list[int]]:
        """The counters now (per kind, ``cnt_bits`` each; ``n_evict`` a list of one)."""
        r = bfm.read(("cnt_lookups", "cnt_hits", "cnt_misses", "n_evict"))
        w, mask = self.params.cnt_bits, self.params.cnt_mask
        out = {name: [(r[name] >> (w * k)) & mask for k in range(NK)]
               for name in ("cnt_lookups", "cnt_hits", "cnt_misses")}
        out["n_evict"] = [r["n_evict"]]
        return out

    def compare(self, sim: gemm.CacheSim, got: dict[str, list[int]] | None, when: str) -> list[str]:
        """The counters against the model's (each modulo ``2**cnt_bits``)."""
        mask = self.params.cnt_mask
        want = {"cnt_lookups": [v & mask for v in sim.lookups], "cnt_hits": [v & mask for v in sim.hits],
                "cnt_misses": [v & mask for v in sim.misses], "n_evict": [sim.evictions & mask]}
        got = got or {}
        return [f"{name} {when}: got {got.get(name)}, want {w}" for name, w in want.items() if got.get(name) != w]

    # ---- checks -------------------------------------------------------------------------
    @staticmethod
    def step(sim: gemm.CacheSim, op: str, a: int, k: int) -> dict[str, Any] | None:
        """One operation on a model; for a lookup, what it did and the set before it."""
        if op == "rst":
            sim.reset()
            return None
        if op in ("clr", "clr_lk"):
            sim.clear()
        if op not in ("lk", "clr_lk"):
            return None
        x = a // sim.line
        before = sim.contents(x % sim.sets)
        hit = sim.access(a, k if k < NK else None)
        return {"hit": hit, "evict": not hit and len(before) == sim.ways, "before": before, "line": x}

    def check(self, burst: Burst, obs: CacheObs) -> list[str]:
        errs: list[str] = []
        sim = self.sim
        for i, ((op, a, k), (hit, evict)) in enumerate(zip(burst.ops, obs.rows)):
            if i in obs.before:
                errs += self.compare(sim, obs.before[i], f"in the {op} cycle {i} (before it)")
            r = self.step(sim, op, a, k)
            if r is None:
                if hit:
                    errs.append(f"cycle {i} ({op}): lk_hit high without lk_valid")
                continue
            if (hit, evict) != (int(r["hit"]), int(r["evict"])):
                errs.append(f"cycle {i}: lookup of {a:#x} ({CODES[k]}, line {r['line']:#x} in set "
                            f"{r['line'] % sim.sets} holding {[hex(x) for x in r['before']]}, LRU first): "
                            f"lk_hit={hit} lk_evict={evict}, want {int(r['hit'])} {int(r['evict'])}")
        if len(errs) > 8:
            errs = errs[:8] + [f"... {len(errs) - 8} more"]
        return errs + self.compare(sim, obs.counters, "after the burst")

    # ---- coverage -----------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        W = self.params.ways
        cg.point("lookup", lambda s: s["lookup"], [f"{c}.{o}" for c in CODES for o in ("hit", "miss")])
        cg.point("miss", lambda s: s["miss"], ["fill_invalid", "evict"])
        cg.point("hit_age", lambda s: s["hit_age"], ["mru", "mid", "lru"][: min(W, 3)] if W != 2 else ["mru", "lru"])
        cg.point("set_fill", lambda s: s["set_fill"], ["empty", "partial", "full"] if W > 1 else ["empty", "full"])
        cg.point("control", lambda s: s["control"], ["idle", "clr", "clr_lookup", "rst"])

    def samples(self, burst: Burst, obs: CacheObs) -> list[dict[str, Any]]:
        W = self.params.ways
        out = []
        none = dict.fromkeys(("lookup", "miss", "hit_age", "set_fill", "control"))
        for op, a, k in burst.ops:
            r = self.step(self.cov, op, a, k)
            if op != "lk":
                out.append({**none, "control": {"clr_lk": "clr_lookup"}.get(op, op)})
            if r is None:
                continue
            b = r["before"]
            s = {**none, "lookup": f"{CODES[k]}.{'hit' if r['hit'] else 'miss'}",
                 "set_fill": "empty" if not b else "full" if len(b) == W else "partial"}
            if r["hit"]:
                age = len(b) - 1 - b.index(r["line"])  # 0: most recently used
                s["hit_age"] = "mru" if age == 0 else "lru" if age == W - 1 else "mid"
            else:
                s["miss"] = "evict" if r["evict"] else "fill_invalid"
            out.append(s)
        return out
