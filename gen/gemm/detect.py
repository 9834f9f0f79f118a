"""The leading-dimension conflict detector ``ld_detect`` of the gemm family
(docs/gemm.md sections 2 and 9), plus the helpers the family's generators share.

Ports (:func:`ld_detect_ports`; ``aw`` = ``GemmParams.aw``, widths in :func:`detect_widths`):

==============  ===  =========  =====================================================
port            dir  width      meaning
==============  ===  =========  =====================================================
clk, rst        in   1          clock, synchronous active-high reset
start           in   1          sample ``base``, ``ld``, ``m`` (ignored while busy)
base            in   aw         byte address of row 0's segment
ld              in   aw         leading dimension in elements (stride ``s = ld*eb``)
m               in   mb         rows, 1..m_max (``mb`` bits hold m_max + 1)
done            out  1          one-cycle pulse: cycle ``visits + 1`` (1 when refused)
busy            out  1          cycles 1 .. visits
err             out  1          the last start was refused (``ld = 0``, ``m = 0`` or ``> m_max``)
worst           out  cb         largest per-set count after the walk
keep            out  kb         rows kept (``m`` when no set count exceeds ``budget``)
conflict        out  1          ``keep < m``
visits          out  vb         steps of the walk (lines visited)
way_multiple    out  1          closed form, combinational: ``s % (S*L) == 0``
way_fraction    out  1          ``(S*L) % s == 0``
aligned         out  1          ``base % L == 0 and s % L == 0``
period          out  lgS + 1    ``S / gcd(S, s/L)`` when aligned, else 0
worst_cf        out  kb         ``ceil(m / period)`` when aligned and ``V*eb <= L``, else 0
==============  ===  =========  =====================================================

Cycle behaviour (cycle 0 is the ``start`` cycle): an accepted start clears the per-set
counters and samples the inputs; cycles ``1 .. visits`` each visit one line of the walk
in order (row ``r``'s lines ``lo_r .. hi_r``, ``a_r = base + r*s``); a line greater than
every line counted before adds one to its set's counter (``x mod S``). ``done`` pulses in
cycle ``visits + 1``; ``worst``, ``keep``, ``conflict`` and ``visits`` are registers, final
from ``done`` until the next accepted start (during a walk they show its progress). A
refused start pulses ``done`` and sets ``err`` in cycle 1 with those four outputs 0. The
closed-form outputs follow ``base``/``ld``/``m`` combinationally and are all 0 for inputs
a start would refuse.

Resources: ``S`` counters of ``cb = bits(m_max * nl)`` bits (``nl`` the most lines one
``V*eb``-byte segment can touch), cleared in the start cycle; a ``ab``-bit row-address
accumulator (``base + r*s`` without a multiplier: ``+ s`` per row) and three ``ab -
log2(L)``-bit line registers (current, row end, last counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv
from myhdl._Signal import Constant

from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..common import Emitted, check_record, emit_stream_unit, flat_signal, resize

__all__ = [
    "DetectWidths",
    "check_gemm",
    "count_bits",
    "detect_widths",
    "emit_gemm",
    "emit_ld_detect",
    "ld_detect",
    "ld_detect_ports",
]


def check_gemm(fmt: object, who: str) -> GemmParams:
    """Refuse anything but a :class:`GemmParams` (the message names the type)."""
    return check_record(fmt, GemmParams, who)


def count_bits(n: int) -> int:
    """Width of a count ``0..n``."""
    return max(1, n.bit_length())


def const(value: int, width: int) -> Constant:
    """A constant input of ``width`` bits (a localparam in the Verilog)."""
    return Constant(bool(value)) if width == 1 else Constant(intbv(value)[width:])


@dataclass(frozen=True)
class DetectWidths:
    """Widths of :func:`ld_detect` (derived from :class:`GemmParams` only).

    Attributes:
        lgs, lgl, lge: ``log2`` of ``sets``, ``line`` and ``eb``.
        veb: segment bytes ``V*eb``; nl: the most lines one segment touches.
        lb: ``ld`` (``aw``: every stride the tile accepts, ``ld*eb < 2**aw``).
        mb: ``m`` (holds ``m_max + 1``, which is refused); kb: ``keep`` (0..m_max).
        cb: a set counter and ``worst`` (0..m_max*nl); vb: ``visits`` (same bound).
        ab: the row-address accumulator (``base + (m_max-1)*s + V*eb - 1`` at most);
        xb: a line number, ``ab - lgl``; pb: ``period`` (1..S).
    """

    lgs: int
    lgl: int
    lge: int
    veb: int
    nl: int
    lb: int
    mb: int
    kb: int
    cb: int
    vb: int
    ab: int
    xb: int
    pb: int


def detect_widths(fmt: GemmParams) -> DetectWidths:
    """The widths of :func:`ld_detect` for ``fmt``."""
    veb = fmt.v * fmt.eb
    nl = -(-(veb - 1) // fmt.line) + 1
    amax = (1 << fmt.aw) - 1 + (fmt.m_max - 1) * ((1 << fmt.aw) - 1) * fmt.eb + veb - 1
    ab = amax.bit_length()
    lgl = clog2(fmt.line)
    return DetectWidths(
        lgs=clog2(fmt.sets), lgl=lgl, lge=clog2(fmt.eb), veb=veb, nl=nl, lb=fmt.aw,
        mb=count_bits(fmt.m_max + 1), kb=count_bits(fmt.m_max), cb=count_bits(fmt.m_max * nl),
        vb=count_bits(fmt.m_max * nl), ab=ab, xb=ab - lgl, pb=clog2(fmt.sets) + 1,
    )


# ---------------------------------------------------------------------------------------
# small pieces


def _widen(sig, width: int):
    """A ``width``-bit copy of ``sig``: a fresh signal (the caller connects it with
    :func:`resize`), or, when ``sig`` is a :class:`Constant` (the selector's fixed
    ``m = m_max``), a constant of the same value (a combinational block needs a signal
    input)."""
    if isinstance(sig, Constant):
        return const(int(sig.val) % (1 << width), width)
    return flat_signal(width)


@block
def _low_zero(x, n: int, out):
    """``out = (x mod 2**n == 0)``; always true for ``n = 0``."""
    if n == 0:
        one = const(1, 1)

        @always_comb
        def always_true():
            out.next = one

        return always_true
    if n == len(x):

        @always_comb
        def all_zero():
            out.next = x == 0

        return all_zero

    @always_comb
    def low_zero():
        out.next = x[n:0] == 0

    return low_zero


@block
def _stride(ld, s, lge: int):
    """``s = ld * 2**lge`` in ``len(s)`` bits (``len(s) >= len(ld) + lge``)."""
    if lge == 0:
        return resize(ld, s)
    sh = flat_signal(len(ld) + lge)
    k = lge

    @always_comb
    def shift():
        sh.next = concat(ld, intbv(0)[k:])

    return shift, resize(sh, s)


@block
def _lines(a, lo, hi, veb: int, lgl: int):
    """The lines of the segment at byte ``a``: ``lo = a >> lgl``, ``hi = (a + veb - 1) >> lgl``
    (``a`` wide enough that the sum does not wrap where it is used)."""
    ab = len(a)
    end = flat_signal(ab)
    add = veb - 1
    # the byte offset inside the line is not needed
    lo_unused, hi_unused = flat_signal(lgl), flat_signal(lgl)

    @always_comb
    def seg_end():
        end.next = a + add

    @always_comb
    def split():
        lo.next = a[ab:lgl]
        hi.next = end[ab:lgl]
        lo_unused.next = a[lgl:0]
        hi_unused.next = end[lgl:0]

    return seg_end, split


@block
def _closed_form(base, ld, m, way_multiple, way_fraction, aligned, period, worst_cf, fmt: GemmParams):
    """The closed-form outputs of docs/gemm.md section 2 (combinational), all 0 when
    ``ld = 0``, ``m = 0`` or ``m > m_max``.

    ``s = ld*eb`` with ``S``, ``L``, ``eb`` powers of two: ``s % (S*L) == 0`` is ``ld``'s
    low ``lgs + lgl - lge`` bits zero; ``(S*L) % s == 0`` is ``ld`` a power of two no
    greater than ``2**(lgs + lgl - lge)``; ``s % L == 0`` is ``ld``'s low ``lgl - lge``
    bits zero; then ``gcd(S, s/L) = 2**g`` with ``g = min(lgs, tz(ld) - (lgl - lge))``, so
    ``period = 2**pe``, ``pe = lgs - g``, and ``ceil(m/period) = (m + period - 1) >> pe``.
    """
    wd = detect_widths(fmt)
    lgs, lgl, lge = wd.lgs, wd.lgl, wd.lge
    kw = lgs + lgl - lge  # way_multiple: ld's low kw bits zero
    jw = lgl - lge  # s % L == 0: ld's low jw bits zero
    lmax = 1 << kw  # way_fraction: ld a power of two <= lmax
    single = wd.veb <= fmt.line  # else there is no closed form: worst_cf = 0
    m_max = fmt.m_max
    aw = fmt.aw
    pb = wd.pb
    xw = max(wd.mb, lgs + 1) + 1  # m + period - 1 without wrapping
    gb = clog2(xw)  # holds lgs; indexes per (xw bits) exactly
    lb = len(ld)
    mul_z, lin_z, base_z = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    ld_m1 = flat_signal(lb)
    m_x = _widen(m, xw)
    insts = [_low_zero(ld, kw, mul_z), _low_zero(ld, jw, lin_z), _low_zero(base, lgl, base_z)]
    if not isinstance(m_x, Constant):
        insts.append(resize(m, m_x))
    assert jw + lgs <= aw  # the bits the trailing-zero count reads exist (aw > lgs + lgl)

    @always_comb
    def pow2():
        ld_m1.next = ld - 1

    @always_comb
    def cf():
        ok = ld != 0 and m != 0 and m <= m_max
        al = ok and base_z and lin_z
        way_multiple.next = ok and mul_z
        way_fraction.next = ok and (ld & ld_m1) == 0 and ld <= lmax
        aligned.next = al
        # g = min(lgs, trailing zeros of ld above bit jw)
        g = intbv(0)[gb:]
        stop = False
        for i in range(lgs):
            if not stop:
                if ld[jw + i]:
                    stop = True
                else:
                    g[:] = g + 1
        pe = intbv(0)[gb:]
        pe[:] = lgs - g
        per = intbv(0)[xw:]
        per[pe] = 1
        mask = intbv(0)[xw:]
        mask[:] = per - 1
        t = intbv(0)[xw:]
        t[:] = m_x + mask
        t[:] = t >> pe
        if al:
            period.next = per[pb:]
        else:
            period.next = 0
        if al and single:
            worst_cf.next = t[len(worst_cf):]
        else:
            worst_cf.next = 0

    return insts, pow2, cf


@block
def _ld_walk(clk, rst, start, base, ld, m, done, busy, err, worst, keep, conflict, visits, fmt: GemmParams):
    """The exact detector's walk (docs/gemm.md section 2): one line per cycle, per-set
    counters. Ports as :func:`ld_detect`'s of the same names."""
    wd = detect_widths(fmt)
    lgs, lgl, ab, xb, kb, cb = wd.lgs, wd.lgl, wd.ab, wd.xb, wd.kb, wd.cb
    m_max, budget, nsets = fmt.m_max, fmt.budget, fmt.sets

    s_x, base_x = flat_signal(ab), flat_signal(ab)
    a_r, s_r, a_n = flat_signal(ab), flat_signal(ab), flat_signal(ab)
    x_r, hi_r, last_r = flat_signal(xb), flat_signal(xb), flat_signal(xb)
    b_lo, b_hi, n_lo, n_hi = flat_signal(xb), flat_signal(xb), flat_signal(xb), flat_signal(xb)
    row_r, mlast_r, m_r = flat_signal(kb), flat_signal(kb), flat_signal(kb)
    m_k = _widen(m, kb)
    any_r, over_r = Signal(bool(0)), Signal(bool(0))
    go, bad, is_new, ovf_now = (Signal(bool(0)) for _ in range(4))
    c_cur, c_one = flat_signal(cb), flat_signal(cb)
    insts = [_stride(ld, s_x, wd.lge), resize(base, base_x),
             _lines(base_x, b_lo, b_hi, wd.veb, lgl), _lines(a_n, n_lo, n_hi, wd.veb, lgl)]
    if not isinstance(m_k, Constant):
        insts.append(resize(m, m_k))

    @always_comb
    def next_row():
        a_n.next = a_r + s_r

    @always_comb
    def accept():
        b = ld == 0 or m == 0 or m > m_max
        bad.next = b
        go.next = start and not busy and not b

    @always_comb
    def step():
        nw = not any_r or x_r > last_r
        is_new.next = nw
        c_one.next = c_cur + 1
        ovf_now.next = nw and not over_r and c_cur >= budget

    if nsets == 1:
        cnt0 = flat_signal(cb)

        @always_comb
        def read_one():
            c_cur.next = cnt0

        @always(clk.posedge)
        def write_one():
            if rst or go:
                cnt0.next = 0
            elif busy and is_new:
                cnt0.next = c_one

        insts += [read_one, write_one]
    else:
        cnt = [Signal(intbv(0)[cb:]) for _ in range(nsets)]
        set_ix = flat_signal(lgs)
        x_unused = flat_signal(xb - lgs)  # the line's tag part does not pick a counter

        @always_comb
        def set_of():
            set_ix.next = x_r[lgs:0]
            x_unused.next = x_r[xb:lgs]

        @always_comb
        def read_cnt():
            c_cur.next = cnt[set_ix]

        @always(clk.posedge)
        def write_cnt():
            if rst or go:
                for i in range(nsets):
                    cnt[i].next = 0
            elif busy and is_new:
                cnt[set_ix].next = c_one

        insts += [set_of, read_cnt, write_cnt]

    @always_seq(clk.posedge, reset=rst)
    def walk():
        done.next = 0
        if start and not busy:
            worst.next = 0
            keep.next = 0
            conflict.next = 0
            visits.next = 0
            err.next = bad
            done.next = bad
            busy.next = not bad
            a_r.next = base_x
            s_r.next = s_x
            x_r.next = b_lo
            hi_r.next = b_hi
            any_r.next = 0
            over_r.next = 0
            row_r.next = 0
            m_r.next = m_k
            mlast_r.next = m_k - 1
        elif busy:
            visits.next = visits + 1
            if is_new:
                last_r.next = x_r
                any_r.next = 1
                if c_one > worst:
                    worst.next = c_one
            if ovf_now:
                over_r.next = 1
                keep.next = row_r
            if x_r == hi_r:
                if row_r == mlast_r:
                    busy.next = 0
                    done.next = 1
                    conflict.next = over_r or ovf_now
                    if not (over_r or ovf_now):
                        keep.next = m_r
                else:
                    row_r.next = row_r + 1
                    a_r.next = a_n
                    x_r.next = n_lo
                    hi_r.next = n_hi
            else:
                x_r.next = x_r + 1

    return insts, next_row, accept, step, walk


@block
def ld_detect(clk, rst, start, base, ld, m, done, busy, err, worst, keep, conflict, visits, way_multiple,
              way_fraction, aligned, period, worst_cf, fmt: GemmParams):
    """Conflict detector ``ld_detect``. Ports: :func:`ld_detect_ports`; behaviour: the
    module docstring."""
    check_gemm(fmt, "ld_detect")
    return (_ld_walk(clk, rst, start, base, ld, m, done, busy, err, worst, keep, conflict, visits, fmt),
            _closed_form(base, ld, m, way_multiple, way_fraction, aligned, period, worst_cf, fmt))


def ld_detect_ports(fmt: GemmParams) -> dict[str, dict]:
    """Port list of :func:`ld_detect` (name -> direction, width, doc)."""
    wd = detect_widths(fmt)
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "start": {"dir": "in", "width": 1, "doc": "sample base, ld and m and walk (ignored while busy)"},
        "base": {"dir": "in", "width": fmt.aw, "doc": "byte address of row 0's segment"},
        "ld": {"dir": "in", "width": wd.lb, "doc": "leading dimension in elements (stride ld*eb bytes); 0 is refused"},
        "m": {"dir": "in", "width": wd.mb, "doc": "rows 1..m_max (0 and beyond m_max are refused)"},
        "done": {"dir": "out", "width": 1, "doc": "one-cycle pulse in cycle visits + 1 after start (1 when refused)"},
        "busy": {"dir": "out", "width": 1, "doc": "the walk runs (cycles 1 .. visits)"},
        "err": {"dir": "out", "width": 1, "doc": "the last start was refused (from its done to the next start)"},
        "worst": {"dir": "out", "width": wd.cb, "doc": "largest set count (final from done)"},
        "keep": {"dir": "out", "width": wd.kb, "doc": "leading rows whose lines fit the budget (final from done)"},
        "conflict": {"dir": "out", "width": 1, "doc": "keep < m (final from done)"},
        "visits": {"dir": "out", "width": wd.vb, "doc": "steps of the walk (final from done)"},
        "way_multiple": {"dir": "out", "width": 1, "doc": "s % (S*L) == 0 (combinational)"},
        "way_fraction": {"dir": "out", "width": 1, "doc": "(S*L) % s == 0 (combinational)"},
        "aligned": {"dir": "out", "width": 1, "doc": "base % L == 0 and s % L == 0 (combinational)"},
        "period": {"dir": "out", "width": wd.pb, "doc": "S / gcd(S, s/L) when aligned, else 0 (combinational)"},
        "worst_cf": {"dir": "out", "width": wd.kb,
                     "doc": "ceil(m / period) when aligned and V*eb <= L, else 0 (combinational)"},
    }


def emit_gemm(top, ports_of, fmt: GemmParams, outdir: Path | str, name: str, timing: dict, doc: str) -> Emitted:
    """Type-check ``fmt`` and :func:`~lockstep.gen.common.emit_stream_unit` a gemm block."""
    check_gemm(fmt, name)
    return emit_stream_unit(top, fmt, GemmParams, ports_of, outdir, name, family="gemm", timing=timing, doc=doc)


def emit_ld_detect(fmt: GemmParams, outdir: Path | str, name: str = "ld_detect") -> Emitted:
    """Write ``ld_detect`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a GemmParams, or ``name`` is a keyword.
    """
    return emit_gemm(ld_detect, ld_detect_ports, fmt, outdir, name, {
        "step": "one line of the walk per cycle (cycles 1 .. visits)",
        "done": "visits + 1 cycles after start",
        "refused_start_to_done": 1,
        "closed_form": "combinational on base, ld, m",
    }, "leading-dimension conflict detector: exact per-set walk (one line per cycle) and closed form")
