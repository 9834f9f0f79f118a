"""The tag-only cache model ``sa_cache`` of the gemm family (docs/gemm.md sections 5 and 9).

Ports (:func:`sa_cache_ports`; ``nk = len(GemmParams.KINDS)``, counters 32 bits):

============  ===  =======  ===========================================================
port          dir  width    meaning
============  ===  =======  ===========================================================
clk, rst      in   1        clock, synchronous active-high reset (every way invalid, counters 0)
clr           in   1        clear the counters (a lookup in the same cycle counts from 0)
lk_valid      in   1        a lookup this cycle: the state updates at this cycle's clock edge
lk_addr       in   aw       byte address; the line ``lk_addr >> log2(line)`` is looked up
lk_kind       in   3        ``GemmParams.KINDS`` code; codes ``>= nk`` count in no kind
lk_hit        out  1        combinational: the line is in the cache (0 without ``lk_valid``)
lk_evict      out  1        combinational: the lookup misses in a full set (evicts a valid line)
cnt_lookups   out  nk*c     kind ``k``'s lookups at ``[c*k +: c]`` (``c = cnt_bits``)
cnt_hits      out  nk*c     kind ``k``'s hits
cnt_misses    out  nk*c     kind ``k``'s misses
n_evict       out  c        evictions of valid lines (every kind)
============  ===  =======  ===========================================================

Behaviour: ``sets x ways`` of ``line`` bytes, true LRU, write-allocate (every lookup, of
any kind, is a read: a hit refreshes its way, a miss fills the least recently used way),
tags only. The set is ``(lk_addr >> log2(line)) mod sets``, the tag the bits above. A
lookup is one cycle: ``lk_hit`` and ``lk_evict`` are combinational on ``lk_addr`` and the
state, and the set's new state is written at the clock edge of that cycle. Counters wrap
modulo ``2**cnt_bits``.

Micro-architecture: the tag array is a memory of ``sets`` words indexed by set, one word
per set, read once per lookup (``ways`` fields of ``{valid, tag, age}``, way 0 in the low
bits; no reset), next to a ``sets``-bit register of sets written since ``rst`` (a set
not written reads as every way invalid with ages ``0..ways-1``). True LRU by ages: the
ages of a set are a permutation of ``0..ways-1`` (0 the most recent); an access to a way
of age ``a`` makes it 0 and ages every younger way by one. A miss fills the way of age
``ways - 1``: invalid ways always hold the oldest ages (they start oldest and only a fill
makes a way young), so that way is invalid whenever the set has one, and a valid line is
evicted exactly when every way is valid. ``ways = 1`` (direct-mapped) keeps no ages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..common import Emitted, flat_signal, lane, lane_bus, resize
from .detect import check_gemm, emit_gemm

__all__ = ["CacheWidths", "cache_widths", "emit_sa_cache", "sa_cache", "sa_cache_ports"]


@dataclass(frozen=True)
class CacheWidths:
    """Widths of :func:`sa_cache` (derived from :class:`GemmParams` only).

    Attributes:
        lgs, lgl: ``log2`` of ``sets`` and ``line``; tb: tag bits (``GemmParams.tag_bits``).
        agb: age bits per way (0 when direct-mapped); wb: one way's field ``1 + tb + agb``;
            eb: a set's word, ``ways * wb``.
        nk: kinds; kb: ``lk_kind``.
    """

    lgs: int
    lgl: int
    tb: int
    agb: int
    wb: int
    eb: int
    nk: int
    kb: int


def cache_widths(fmt: GemmParams) -> CacheWidths:
    """The widths of :func:`sa_cache` for ``fmt``."""
    agb = clog2(fmt.ways)
    wb = 1 + fmt.tag_bits + agb
    nk = len(GemmParams.KINDS)
    return CacheWidths(lgs=clog2(fmt.sets), lgl=clog2(fmt.line), tb=fmt.tag_bits, agb=agb, wb=wb,
                       eb=fmt.ways * wb, nk=nk, kb=max(1, clog2(nk)))


@block
def _way(word, live, tag, hit_any, a_tgt, v, hit, mage, new, way: int, fmt: GemmParams):
    """Way ``way`` of the set's word ``word``.

    Ports:
        live: the set was written since ``rst`` (else every way reads invalid, with age
            ``way``).
        tag: the lookup's tag.
        hit_any, a_tgt: some way hits; the target's age (the hit way's, else ``ways - 1``).
        v, hit: this way is valid; it holds ``tag``.
        mage: its age when it hits, else 0 (OR-ed over the ways into the hit way's age).
        new: its next field ``{valid, tag, age}``: the target (the hit way, or on a miss
            the way of age ``ways - 1``) takes ``{1, tag, 0}``; a way younger than the
            target ages by one; an invalid way keeps tag 0.
    """
    cw = cache_widths(fmt)
    tb, agb, wb = cw.tb, cw.agb, cw.wb
    lo = way * wb
    vbit = lo + tb + agb
    oldest = fmt.ways - 1
    w_tag, n_tag = flat_signal(tb), flat_signal(tb)
    n_v, tg = Signal(bool(0)), Signal(bool(0))
    insts = [lane(word, lo + agb, tb, w_tag)]

    @always_comb
    def field():
        n_v.next = tg or v
        if tg:
            n_tag.next = tag
        elif v:
            n_tag.next = w_tag
        else:
            n_tag.next = 0

    if agb == 0:  # direct-mapped: the one way is always the target
        hit_any_unused = Signal(bool(0))
        a_tgt_unused = Signal(bool(0))

        @always_comb
        def match_dm():
            vv = live and word[vbit]
            v.next = vv
            hit.next = vv and w_tag == tag
            mage.next = 0
            hit_any_unused.next = hit_any
            a_tgt_unused.next = a_tgt
            tg.next = 1

        @always_comb
        def pack_dm():
            new.next = concat(n_v, n_tag)

        return insts, match_dm, field, pack_dm

    w_age, age, n_age = flat_signal(agb), flat_signal(agb), flat_signal(agb)
    insts.append(lane(word, lo, agb, w_age))

    @always_comb
    def match():
        vv = live and word[vbit]
        v.next = vv
        h = vv and w_tag == tag
        hit.next = h
        if live:
            age.next = w_age
        else:
            age.next = way
        if h:
            mage.next = w_age
        else:
            mage.next = 0

    @always_comb
    def target():
        if hit_any:
            tg.next = hit
        else:
            tg.next = age == oldest

    @always_comb
    def aging():
        if tg:
            n_age.next = 0
        elif age < a_tgt:
            n_age.next = age + 1
        else:
            n_age.next = age

    @always_comb
    def pack():
        new.next = concat(n_v, n_tag, n_age)

    return insts, match, target, aging, field, pack


@block
def _or2(a, b, y):
    """``y = a | b``."""

    @always_comb
    def orr():
        y.next = a | b

    return orr


@block
def _kind_counters(clk, rst, clr, lk_valid, lk_kind, lk_hit, lookups, hits, misses, kind: int):
    """Kind ``kind``'s lookups, hits and misses (``clr``: restart from this cycle's lookup)."""

    @always_seq(clk.posedge, reset=rst)
    def count():
        mine = lk_valid and lk_kind == kind
        if clr:
            lookups.next = 0
            hits.next = 0
            misses.next = 0
            if mine:
                lookups.next = 1
                if lk_hit:
                    hits.next = 1
                else:
                    misses.next = 1
        elif mine:
            lookups.next = lookups + 1
            if lk_hit:
                hits.next = hits + 1
            else:
                misses.next = misses + 1

    return count


@block
def _evict_counter(clk, rst, clr, lk_evict, n_evict):
    """Evictions of valid lines (``clr``: restart from this cycle's lookup)."""

    @always_seq(clk.posedge, reset=rst)
    def count():
        if clr:
            if lk_evict:
                n_evict.next = 1
            else:
                n_evict.next = 0
        elif lk_evict:
            n_evict.next = n_evict + 1

    return count


@block
def sa_cache(clk, rst, clr, lk_valid, lk_addr, lk_kind, lk_hit, lk_evict, cnt_lookups, cnt_hits, cnt_misses,
             n_evict, fmt: GemmParams):
    """Cache model ``sa_cache``. Ports: :func:`sa_cache_ports`; behaviour: the module
    docstring."""
    check_gemm(fmt, "sa_cache")
    cw = cache_widths(fmt)
    lgs, lgl, tb, agb, eb, nk = cw.lgs, cw.lgl, cw.tb, cw.agb, cw.eb, cw.nk
    ways, nsets = fmt.ways, fmt.sets
    oldest = ways - 1
    all_valid = (1 << ways) - 1

    tag = flat_signal(tb)
    addr_unused = flat_signal(lgl)  # the byte inside the line
    word, new_word = flat_signal(eb), None
    live = Signal(bool(0))
    hit_any, evict = Signal(bool(0)), Signal(bool(0))
    insts = [lane(lk_addr, lgl + lgs, tb, tag)]

    @always_comb
    def offset():
        addr_unused.next = lk_addr[lgl:0]

    insts.append(offset)

    # ---- the ways
    vs = [Signal(bool(0)) for _ in range(ways)]
    hits_w = [Signal(bool(0)) for _ in range(ways)]
    news = [flat_signal(cw.wb) for _ in range(ways)]
    mages = [flat_signal(max(1, agb)) for _ in range(ways)]
    a_tgt = flat_signal(max(1, agb))
    for w in range(ways):
        insts.append(_way(word, live, tag, hit_any, a_tgt, vs[w], hits_w[w], mages[w], news[w], w, fmt))
    v_bus, hit_bus = lane_bus(vs), lane_bus(hits_w)
    new_word = lane_bus(news)
    if agb == 0:
        a_hit = mages[0]
    else:
        acc = mages[0]
        for w in range(1, ways):
            nxt = flat_signal(agb)
            insts.append(_or2(acc, mages[w], nxt))
            acc = nxt
        a_hit = acc

    @always_comb
    def lookup():
        h = hit_bus != 0
        hit_any.next = h
        if h:
            a_tgt.next = a_hit
        else:
            a_tgt.next = oldest
        lk_hit.next = lk_valid and h
        lk_evict.next = lk_valid and not h and v_bus == all_valid

    insts.append(lookup)

    # ---- the tag array: one word per set, and the sets written since rst
    if nsets == 1:
        mem0 = flat_signal(eb)

        @always_comb
        def read_one():
            word.next = mem0

        @always(clk.posedge)
        def write_one():
            if lk_valid:
                mem0.next = new_word

        @always_seq(clk.posedge, reset=rst)
        def live_one():
            if lk_valid:
                live.next = 1

        insts += [read_one, write_one, live_one]
    else:
        mem = [Signal(intbv(0)[eb:]) for _ in range(nsets)]
        set_ix = flat_signal(lgs)
        live_r = flat_signal(nsets)
        insts.append(lane(lk_addr, lgl, lgs, set_ix))

        @always_comb
        def read_set():
            word.next = mem[set_ix]
            live.next = live_r[set_ix]

        @always(clk.posedge)
        def write_set():
            if lk_valid:
                mem[set_ix].next = new_word

        @always_seq(clk.posedge, reset=rst)
        def live_set():
            if lk_valid:
                live_r.next[set_ix] = 1

        insts += [read_set, write_set, live_set]

    # ---- counters
    lks = [flat_signal(fmt.cnt_bits) for _ in range(nk)]
    hts = [flat_signal(fmt.cnt_bits) for _ in range(nk)]
    mss = [flat_signal(fmt.cnt_bits) for _ in range(nk)]
    for k in range(nk):
        insts.append(_kind_counters(clk, rst, clr, lk_valid, lk_kind, lk_hit, lks[k], hts[k], mss[k], k))
    insts += [resize(lane_bus(lks), cnt_lookups), resize(lane_bus(hts), cnt_hits), resize(lane_bus(mss), cnt_misses),
              _evict_counter(clk, rst, clr, lk_evict, n_evict)]
    return insts


def sa_cache_ports(fmt: GemmParams) -> dict[str, dict]:
    """Port list of :func:`sa_cache` (name -> direction, width, doc)."""
    cw = cache_widths(fmt)
    kinds = ", ".join(f"{i} {k}" for i, k in enumerate(GemmParams.KINDS))
    c = fmt.cnt_bits
    packed = f"kind k at [k*{c} +: {c}] ({kinds})"
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset: every way invalid, counters 0"},
        "clr": {"dir": "in", "width": 1, "doc": "clear the counters (a lookup in the same cycle counts from 0)"},
        "lk_valid": {"dir": "in", "width": 1, "doc": "a lookup this cycle (state updates at this cycle's edge)"},
        "lk_addr": {"dir": "in", "width": fmt.aw, "doc": "byte address of the lookup (its line is looked up)"},
        "lk_kind": {"dir": "in", "width": cw.kb, "doc": f"request kind ({kinds}); other codes count in no kind"},
        "lk_hit": {"dir": "out", "width": 1, "doc": "the line is cached (combinational; 0 without lk_valid)"},
        "lk_evict": {"dir": "out", "width": 1, "doc": "the lookup misses in a full set (combinational)"},
        "cnt_lookups": {"dir": "out", "width": cw.nk * c, "doc": f"lookups per kind, {packed}"},
        "cnt_hits": {"dir": "out", "width": cw.nk * c, "doc": f"hits per kind, {packed}"},
        "cnt_misses": {"dir": "out", "width": cw.nk * c, "doc": f"misses per kind, {packed}"},
        "n_evict": {"dir": "out", "width": c, "doc": "evictions of valid lines"},
    }


def emit_sa_cache(fmt: GemmParams, outdir: Path | str, name: str = "sa_cache") -> Emitted:
    """Write ``sa_cache`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a GemmParams, or ``name`` is a keyword.
    """
    check_gemm(fmt, name)  # before the record reads fmt.cnt_bits
    return emit_gemm(sa_cache, sa_cache_ports, fmt, outdir, name, {
        "lookup": "lk_hit/lk_evict combinational; the set's state updates at the edge of the lookup's cycle",
        "lookups_per_cycle": 1,
        "counter_bits": fmt.cnt_bits,
    }, "tag-only set-associative true-LRU cache model (write-allocate) with per-kind counters")
