"""Schedule memory, fetch path with the on-the-fly periodic decompressor, and the
prefetch queue of one tile (docs/sched.md sections 5 and 6).

Structure
=========

* ``smem``: ``sd`` words of ``ew`` bits, a register array. The load port writes it;
  ``rst`` clears it (so words never loaded read as the zero word, which matches the
  golden model's "zeros after the program"); a load in the same cycle as ``rst`` wins.
* ``wa``: the fetch address. The word ``smem[wa]`` is read combinationally and handled in
  the same cycle ("one word per cycle"):

  - an ordinary entry is pushed into the queue as it is;
  - a good PERIODIC header is absorbed (no push: the header read costs one cycle) and
    loads the block registers (base, P, n_body, reps - 1);
  - a body word ``j`` of repetition ``r`` is pushed with ``T = base + r*P + d_j``; after
    the last body word the fetch address jumps back to the body start (the body is
    re-read every repetition) or, after the last repetition, past the block;
  - a bad header or a bad body entry is pushed as a *poison* entry (queue flag), see
    below.

  Fetch starts in the first cycle with ``run = 1`` after ``rst`` (``started`` keeps it
  going). It stops for good when ``wa`` reaches ``sd``; the tile then waits forever for a
  head that never comes (no error).
* The prefetch queue (:data:`~lockstep.gen.sched.parts.PREFETCH_DEPTH` = 2 entries,
  ``q0`` = head). A word is taken (pushed) only when ``q1`` is free at the start of the
  cycle, so there is no combinational path from the issue decision back into fetch.

Why two entries are enough (the contract's fetch requirement)
--------------------------------------------------------------
Let entry ``E_k`` be the head and issue (pop) in cycle ``n``. Either ``E_{k+1}`` is
already in ``q1`` (it moves to ``q0``), or ``q1`` is empty, and then ``E_{k+1}``'s word is
the word at ``wa`` in cycle ``n`` and is pushed at the end of ``n`` (``q1`` free means
there is room). Either way ``E_{k+1}`` is the head in cycle ``n + 1``, and the same holds
again in ``n + 1`` (``q1`` is empty after a pop without a push, and at most one entry is
behind the head after a pop with a push), so issue at T, T+1, T+2, ... is sustained
indefinitely, periodic bodies with P = 1 included (each read of the single body word
yields one expanded entry). The only word that yields no entry is a good header: it is
absorbed in one cycle, so a block's first entry reaches the head at ``n + 2`` at the
latest (rule HDR_GAP asks for ``>= 2`` counts). With one entry the pop would have to
forward into the same cycle's push (a combinational issue -> fetch path); with three or
more nothing is gained.

Start-up (FETCH_LEAD): ``wa = 0`` is read in cycle 0 (the first ``run`` cycle) and its
entry is in the queue from cycle 1; a program that starts with a good periodic header
has its first body entry there from cycle 2. The sequencer looks at the head only from
cycle ``FETCH_LEAD`` (2), or ``FETCH_LEAD + 1`` (3) when the program starts with a
well-formed periodic block (``h_ready``; a saturating start-up counter and a flag "the
first word absorbed was a good header"). This is the golden model's fetch model
(models/sched/__init__.py decision 6) and the linter's FIRST / HDR_GAP-at-start rules: a first
entry with T < FETCH_LEAD (or a block-first entry with T < FETCH_LEAD + 1) raises MISSED
in that first cycle. In mid-stream the header bubble is real: a block whose first entry
is only one count after the previous entry (illegal by HDR_GAP) gives MISSED here when
fetch is not ahead (e.g. the entries before it issued back to back), while the golden
model, which does not model that bubble, issues it.

Decisions where docs/sched.md is silent
---------------------------------------
* Poison entries carry the offending word: for a bad header the header word itself
  (its T is ``base``); for a bad body entry the body word with T replaced by
  ``(base + r*P + d) mod 2**cw``. When a poison entry's T equals ``count`` it raises
  DECOMP and halts the tile; like every entry that raises an error at its cycle it is
  *not* issued (no ``issue`` tap; models/sched/__init__.py decision 2).
* A header whose body does not fit in the schedule memory (``header + n_body >= sd``)
  is a bad header (spec 000 section 4.9 lists "truncated body" under DECOMP): one
  poison entry with ``T = base``, and expansion continues after the header (the golden
  model's decision 8 too).
* The order test ``d <= d_prev`` compares with the previous body entry of the same
  repetition (the body is re-read, so later repetitions repeat repetition 0's checks).
"""

from __future__ import annotations

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.record import clog2
from lockstep.models.sched.params import FabricParams

from ..common import lane, new_bool, new_vec, resize
from .parts import OP, field_lsb


__all__ = ["fetch_widths", "sched_fetch"]


def fetch_widths(fmt: FabricParams) -> dict[str, int]:
    """Widths used by the fetch path.

    * ``fw``: fetch addresses and body bounds; holds ``sd + 31`` (a header address plus
      the low five bits of ``n_body``), so the fit test never overflows.
    * ``ix``: schedule-memory index, ``clog2(sd)``.
    * ``mw``: ``max(cw, aw)``, for the phase test ``d >= P`` (``P`` may exceed
      ``2**cw`` when ``aw > cw``).
    * ``nbw``: five bits, enough for ``n_body`` up to ``BODY_MAX`` (16).
    """
    return {
        "fw": clog2(fmt.sd + 32),
        "ix": max(1, clog2(fmt.sd)),
        "mw": max(fmt.cw, fmt.aw),
        "nbw": clog2(fmt.BODY_MAX + 1),
    }


@block
def _hdr_check(wa, w_a, w_b, b5, hdr_bad, fmt: FabricParams):
    """A PERIODIC header word is bad: ``P == 0``, ``n_body == 0``, ``n_body > BODY_MAX``
    or the body does not fit below ``sd``.

    Ports:
        wa: the header's address (``fw`` bits).
        w_a, w_b: the word's A (period) and B (n_body) fields.
        b5: ``n_body`` on ``nbw`` bits (B truncated or zero-extended).
        hdr_bad: the verdict (only meaningful for a PERIODIC word).
    """
    fw, nbw = fetch_widths(fmt)["fw"], fetch_widths(fmt)["nbw"]
    k = fw - nbw
    sd = fmt.sd
    bmax = fmt.BODY_MAX
    if (1 << fmt.aw) - 1 > bmax:

        @always_comb
        def check():
            endb = intbv(0)[fw:]
            endb[:] = wa + concat(intbv(0)[k:], b5)
            hdr_bad.next = w_a == 0 or w_b == 0 or w_b > bmax or endb >= sd

        return check

    @always_comb
    def check_small():
        endb = intbv(0)[fw:]
        endb[:] = wa + concat(intbv(0)[k:], b5)
        hdr_bad.next = w_a == 0 or w_b == 0 or endb >= sd

    return check_small


@block
def sched_fetch(clk, rst, run, ld_swe, ld_sidx, ld_data, pop, h_valid, h_word, h_poison, h_ready,
                fmt: FabricParams):
    """Schedule memory + fetch/decompressor + two-entry prefetch queue.

    Ports:
        clk, rst: clock and synchronous reset (clears the memory, the fetch state and
            the queue).
        run: the counter runs this cycle (fetch starts with the first such cycle).
        ld_swe: write ``ld_data`` to ``smem[ld_sidx]`` at the end of this cycle.
        ld_sidx: schedule-memory index (``ix`` bits, already checked ``< sd``).
        ld_data: the word (``ew`` bits).
        pop: the sequencer consumes the head this cycle (only when ``h_valid``).
        h_valid, h_word, h_poison: the head entry (registers).
        h_ready: the start-up lead has passed: the sequencer may look at the head
            (cycle ``FETCH_LEAD``, or ``FETCH_LEAD + 1`` when the program starts with a
            well-formed periodic block; see the module docstring).
    """
    wd = fetch_widths(fmt)
    fw, ix, mw, nbw = wd["fw"], wd["ix"], wd["mw"], wd["nbw"]
    sd, cw, ew, aw = fmt.sd, fmt.cw, fmt.ew, fmt.aw
    lay = {f: lo for f, (lo, _w) in field_lsb(fmt).items()}
    op_periodic = OP["PERIODIC"]
    nbk = fw - nbw

    smem = [Signal(intbv(0)[ew:]) for _ in range(sd)]

    @always(clk.posedge)
    def smem_write():
        if rst:
            for i in range(sd):
                smem[i].next = 0
        if ld_swe:
            smem[ld_sidx].next = ld_data

    wa = new_vec(fw)
    ridx = new_vec(ix)
    word = new_vec(ew)

    @always_comb
    def read_index():
        if wa < sd:
            ridx.next = wa[ix:]
        else:
            ridx.next = 0

    @always_comb
    def read_word():
        word.next = smem[ridx]

    w_t, w_op, w_a, w_b, w_len = new_vec(cw), new_vec(4), new_vec(aw), new_vec(aw), new_vec(8)
    w_rest = new_vec(ew - cw)
    fields = [
        lane(word, lay["t"], cw, w_t),
        lane(word, lay["op"], 4, w_op),
        lane(word, lay["a"], aw, w_a),
        lane(word, lay["b"], aw, w_b),
        lane(word, lay["len"], 8, w_len),
        lane(word, 0, ew - cw, w_rest),
    ]
    d_m, a_m, b5 = new_vec(mw), new_vec(mw), new_vec(nbw)
    widen = [resize(w_t, d_m), resize(w_a, a_m), resize(w_b, b5)]
    hdr_bad = new_bool()
    hdr = _hdr_check(wa, w_a, w_b, b5, hdr_bad, fmt)

    started, blk = new_bool(), new_bool()
    bs = new_vec(fw)  # body start address (header + 1)
    nb = new_vec(nbw)  # n_body
    per = new_vec(mw)  # period P
    reps = new_vec(8)  # reps - 1
    rep = new_vec(8)  # current repetition r
    jj = new_vec(nbw)  # body index j
    base = new_vec(cw)  # base + r*P (mod 2**cw)
    dprev = new_vec(cw)  # d of body entry j - 1 (same repetition)
    q1, p1, v1 = new_vec(ew), new_bool(), new_bool()
    lead_first = fmt.FETCH_LEAD  # first cycle the head may be looked at
    lead_max = fmt.FETCH_LEAD + 1  # ... when the program starts with a good header
    lead = new_vec(clog2(lead_max + 1))  # cycles since the first run cycle, saturating
    pushed, hdr_first = new_bool(), new_bool()

    @always_comb
    def ready():
        if hdr_first:
            h_ready.next = lead >= lead_max
        else:
            h_ready.next = lead >= lead_first

    @always_seq(clk.posedge, reset=rst)
    def fetch():
        go = bool(0)
        room = bool(0)
        push = bool(0)
        pp = bool(0)
        adv = bool(0)
        bad = bool(0)
        pw = intbv(0)[ew:]
        nxt = intbv(0)[fw:]
        tt = intbv(0)[cw:]
        go = run or started
        if run:
            started.next = 1
        if go and lead != lead_max:
            lead.next = lead + 1
        room = not v1
        pw[:] = word
        nxt[:] = wa + 1
        tt[:] = base + w_t
        if go and wa < sd:
            if not blk:
                if w_op == op_periodic:
                    if hdr_bad:
                        if room:
                            push = True
                            pp = True
                            adv = True
                    else:
                        adv = True
                        if not pushed:
                            hdr_first.next = 1
                        blk.next = 1
                        bs.next = wa + 1
                        nb.next = b5
                        per.next = a_m
                        reps.next = w_len
                        rep.next = 0
                        jj.next = 0
                        base.next = w_t
                elif room:
                    push = True
                    adv = True
            elif room:
                bad = d_m >= per or (jj != 0 and w_t <= dprev) or w_op == op_periodic
                push = True
                pp = bad
                adv = True
                pw[:] = concat(tt, w_rest)
                if bad or (jj == nb - 1 and rep == reps):
                    blk.next = 0
                    nxt[:] = bs + concat(intbv(0)[nbk:], nb)
                elif jj == nb - 1:
                    rep.next = rep + 1
                    jj.next = 0
                    base.next = base + per[cw:]
                    nxt[:] = bs
                else:
                    jj.next = jj + 1
                    dprev.next = w_t
        if adv:
            wa.next = nxt
        if push:
            pushed.next = 1
        # the queue: q0 = head (h_word), q1 behind it; a push needs q1 free (room)
        if pop:
            if v1:
                h_word.next = q1
                h_poison.next = p1
                v1.next = 0
            elif push:
                h_word.next = pw
                h_poison.next = pp
            else:
                h_valid.next = 0
        elif push:
            if h_valid:
                q1.next = pw
                p1.next = pp
                v1.next = 1
            else:
                h_word.next = pw
                h_poison.next = pp
                h_valid.next = 1

    return smem_write, read_index, read_word, fields, widen, hdr, ready, fetch
