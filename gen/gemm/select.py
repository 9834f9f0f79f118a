"""The kernel selector ``kernel_select`` of the gemm family (docs/gemm.md sections 3 and 9).

Ports (:func:`kernel_select_ports`; widths of the detector from
:func:`~lockstep.gen.gemm.detect.detect_widths`, the rest in :func:`select_widths`):

=============  ===  =====  ==========================================================
port           dir  width  meaning
=============  ===  =====  ==========================================================
clk, rst       in   1      clock, synchronous active-high reset
start          in   1      sample ``n``, ``lda``, ``base_a``, ``limit_m`` (ignored while busy)
n              in   dimw   N (columns of C): the task balance
lda            in   aw     A's leading dimension in elements; 0 is refused
base_a         in   aw     A's byte address
limit_m        in   1      on a conflict, pick a smaller ``m`` rather than copy
done           out  1      one-cycle pulse in cycle ``sel_cycles`` (1 when refused)
busy           out  1      cycles 1 .. sel_cycles - 1
err            out  1      the last start was refused (``lda = 0``)
prog           out  2      program, ``GemmParams.PROGS`` code (0 NORMAL, 1 NO_COPY, 2 OVERFLOW_COPY)
m, z, keep     out  kb/zb  the kernel (``z`` a power of two) and the rows kept in place
worst          out  cb     the detector's ``worst`` over ``m_max`` rows
keep_all       out  kb     the detector's ``keep`` over ``m_max`` rows
conflict       out  1      ``keep_all < m_max``
aligned        out  1      closed form on the sampled ``base_a``, ``lda``
way_multiple   out  1      ``lda*eb % (S*L) == 0``
way_fraction   out  1      ``(S*L) % (lda*eb) == 0``
sel_cycles     out  sb     cycles from ``start`` to ``done``: ``visits + n_cand + 1`` (1 when refused)
=============  ===  =====  ==========================================================

All outputs are registers (the flags: combinational on registers), valid from ``done``
until the next ``start``; a refused start makes them 0 (``sel_cycles`` 1).

Cycle behaviour (cycle 0 is the ``start`` cycle): the start also starts an internal
``ld_detect`` walk over ``m_max`` rows (cycles ``1 .. visits``); in its ``done`` cycle
(``visits + 1``) the candidate walk takes ROM entry 0, then one entry per cycle, so entry
``i`` is looked at in cycle ``visits + 1 + i``; each cycle updates ``pick(m_max)`` and
``pick(keep_all)`` side by side, and the last entry's cycle also registers the decision
(section 3 steps 3 and 4), so ``done`` pulses in cycle ``visits + n_cand + 1``.

``pick(cap)`` per entry ``(m, z)``: ``m' = min(m, cap)``; valid when ``m' >= mmin(z) =
floor(l_hw / z) + 1`` (the same as ``m' >= 1 and m'*z > l_hw``); balanced when ``nb =
ceil(N / (z*V)) >= ncores``. Kept: the balanced valid entry with the greatest ``r = m'z /
(m'+z)`` (compared as ``m'z * den_best > num_best * (m'+z)``, the first on a tie), and the
valid entry with the most N-blocks (the first on a tie) for when none is balanced.

Resources: a ROM of ``n_cand`` entries (``m``, ``z``, ``mmin``, ``z*V - 1`` and
``log2(z*V)`` as case statements); per pick two ``pw``-bit products, ``pw = bits(m_max *
z_max) + bits(m_max + z_max)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from myhdl import Signal, always_comb, always_seq, block

from lockstep.models.gemm.params import GemmParams
from lockstep.models.record import clog2

from ..common import Emitted, flat_signal, resize
from .detect import _closed_form, _ld_walk, check_gemm, const, count_bits, detect_widths, emit_gemm

__all__ = ["SelectWidths", "emit_kernel_select", "kernel_select", "kernel_select_ports", "select_widths"]

#: Program codes (``GemmParams.PROGS``).
P_NORMAL, P_NO_COPY, P_OVERFLOW_COPY = (GemmParams.PROGS.index(n) for n in ("NORMAL", "NO_COPY", "OVERFLOW_COPY"))


@dataclass(frozen=True)
class SelectWidths:
    """Widths of :func:`kernel_select` (derived from :class:`GemmParams` only).

    Attributes:
        ncand: ROM entries; ib: the ROM index.
        kb: ``m``, ``keep``, ``keep_all``; zb: ``z``; pgb: ``prog``; sb: ``sel_cycles``.
        nw: ``m'*z``; dw: ``m'+z``; pw: their cross products.
        xb: ``N + z*V - 1``; shb: ``log2(z*V)``.
    """

    ncand: int
    ib: int
    kb: int
    zb: int
    pgb: int
    sb: int
    nw: int
    dw: int
    pw: int
    xb: int
    shb: int


def select_widths(fmt: GemmParams) -> SelectWidths:
    """The widths of :func:`kernel_select` for ``fmt``."""
    dwd = detect_widths(fmt)
    ncand = len(fmt.candidates)
    nw = count_bits(fmt.m_max * fmt.z_max)
    dw = count_bits(fmt.m_max + fmt.z_max)
    zv = fmt.z_max * fmt.v
    return SelectWidths(
        ncand=ncand, ib=max(1, clog2(ncand)), kb=dwd.kb, zb=count_bits(fmt.z_max),
        pgb=count_bits(len(GemmParams.PROGS) - 1), sb=count_bits(fmt.m_max * dwd.nl + ncand + 1),
        nw=nw, dw=dw, pw=nw + dw, xb=max(fmt.dimw, count_bits(zv)) + 1, shb=count_bits(clog2(zv)),
    )


@block
def _rom(idx, mi, zi, mmin, zv1, sh, fmt: GemmParams):
    """ROM entry ``idx`` of ``GemmParams.candidates``: ``m``, ``z``, ``mmin = l_hw//z + 1``,
    ``z*V - 1`` and ``log2(z*V)``."""
    cands = fmt.candidates
    rom_m = tuple(m for m, _ in cands)
    rom_z = tuple(z for _, z in cands)
    rom_mmin = tuple(fmt.l_hw // z + 1 for _, z in cands)
    rom_zv1 = tuple(z * fmt.v - 1 for _, z in cands)
    rom_sh = tuple(clog2(z * fmt.v) for _, z in cands)
    assert all(mn <= m for (m, _), mn in zip(cands, rom_mmin))  # every entry is valid at cap m_max

    if len(cands) == 1:  # a one-entry ROM: constants (MyHDL cannot index a 1-tuple)
        c_m, c_z, c_mmin, c_zv1, c_sh = rom_m[0], rom_z[0], rom_mmin[0], rom_zv1[0], rom_sh[0]
        idx_unused = flat_signal(len(idx))

        @always_comb
        def rom_one():
            idx_unused.next = idx
            mi.next = c_m
            zi.next = c_z
            mmin.next = c_mmin
            zv1.next = c_zv1
            sh.next = c_sh

        return rom_one

    @always_comb
    def rom():
        mi.next = rom_m[idx]
        zi.next = rom_z[idx]
        mmin.next = rom_mmin[idx]
        zv1.next = rom_zv1[idx]
        sh.next = rom_sh[idx]

    return rom


@block
def _mul(a, b, y):
    """``y = a * b`` with ``a`` and ``b`` widened to ``len(y)`` first."""
    ax, bx = flat_signal(len(y)), flat_signal(len(y))

    @always_comb
    def mul():
        y.next = ax * bx

    return resize(a, ax), resize(b, bx), mul


@block
def _pick(clk, rst, clear, step, mi, zi, mmin, nb, cap, ok, pm, pz, fmt: GemmParams):
    """One ``pick(cap)`` of docs/gemm.md section 3, one ROM entry per ``step`` cycle.

    Ports:
        clear: forget every entry (at a start): the flags fall, the values stay (unread until
            their flag is set again).
        step: entry ``(mi, zi)`` is looked at this cycle (``mmin``: its least valid m;
            ``nb``: its N-blocks).
        cap: the pick's cap on m.
        ok, pm, pz: the pick *including this cycle's entry* (combinational): a valid
            entry exists, and its ``m'`` and ``z``.
    """
    sw = select_widths(fmt)
    kb, zb, nw, dw, pw = sw.kb, sw.zb, sw.nw, sw.dw, sw.pw
    ncores = fmt.ncores
    mp = flat_signal(kb)
    mp_d, z_d, den = flat_signal(dw), flat_signal(dw), flat_signal(dw)
    num = flat_signal(nw)
    prod_c, prod_b = flat_signal(pw), flat_signal(pw)  # num * best_den, best_num * den
    valid, take_bal, take_any = (Signal(bool(0)) for _ in range(3))
    has_bal, has_any = Signal(bool(0)), Signal(bool(0))
    bal_m, any_m = flat_signal(kb), flat_signal(kb)
    bal_z, any_z = flat_signal(zb), flat_signal(zb)
    b_num, b_den = flat_signal(nw), flat_signal(dw)
    b_nb = flat_signal(len(nb))
    insts = [_mul(mp, zi, num), resize(mp, mp_d), resize(zi, z_d), _mul(num, b_den, prod_c), _mul(b_num, den, prod_b)]

    @always_comb
    def cand():
        if mi < cap:
            mp.next = mi
        else:
            mp.next = cap

    @always_comb
    def score():
        den.next = mp_d + z_d
        valid.next = mp >= mmin

    @always_comb
    def compare():
        bal = nb >= ncores
        tb = valid and bal and (not has_bal or prod_c > prod_b)
        ta = valid and (not has_any or nb > b_nb)
        take_bal.next = tb
        take_any.next = ta
        ok.next = has_bal or has_any or tb or ta
        if tb:
            pm.next = mp
            pz.next = zi
        elif has_bal:
            pm.next = bal_m
            pz.next = bal_z
        elif ta:
            pm.next = mp
            pz.next = zi
        else:
            pm.next = any_m
            pz.next = any_z

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if clear:  # the flags only: an entry's values are read only while its flag is set
            has_bal.next = 0
            has_any.next = 0
        elif step:
            if take_bal:
                has_bal.next = 1
                bal_m.next = mp
                bal_z.next = zi
                b_num.next = num
                b_den.next = den
            if take_any:
                has_any.next = 1
                any_m.next = mp
                any_z.next = zi
                b_nb.next = nb

    return insts, cand, score, compare, regs


@block
def kernel_select(clk, rst, start, n, lda, base_a, limit_m, done, busy, err, prog, m, z, keep, worst, keep_all,
                  conflict, aligned, way_multiple, way_fraction, sel_cycles, fmt: GemmParams):
    """Kernel selector ``kernel_select``. Ports: :func:`kernel_select_ports`; behaviour:
    the module docstring."""
    check_gemm(fmt, "kernel_select")
    dwd, sw = detect_widths(fmt), select_widths(fmt)
    kb, zb, ib, xb, shb = sw.kb, sw.zb, sw.ib, sw.xb, sw.shb
    last = sw.ncand - 1

    # the detector over m_max rows, started with every start (it refuses lda = 0 itself,
    # zeroing worst/keep_all/conflict in cycle 1, the cycle of this block's done)
    det_go, det_done = Signal(bool(0)), Signal(bool(0))
    det_busy_unused, det_err_unused = Signal(bool(0)), Signal(bool(0))  # this block's busy/err cover them
    det_visits_unused = flat_signal(dwd.vb)  # sel_cycles is counted here
    m_rows = const(fmt.m_max, dwd.mb)
    lda_r = flat_signal(fmt.aw)
    base_r = flat_signal(dwd.lgl)  # base_a mod L: all the closed form reads of it
    cf_period_unused, cf_wcf_unused = flat_signal(dwd.pb), flat_signal(dwd.kb)  # only the flags are exported
    insts = [
        _ld_walk(clk, rst, det_go, base_a, lda, m_rows, det_done, det_busy_unused, det_err_unused, worst, keep_all,
                 conflict, det_visits_unused, fmt),
        _closed_form(base_r, lda_r, m_rows, way_multiple, way_fraction, aligned, cf_period_unused, cf_wcf_unused,
                     fmt),
    ]

    # the candidate walk
    idx = flat_signal(ib)
    n_r = flat_signal(len(n))
    lim_r, in_cand, step = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    cyc = flat_signal(sw.sb)
    mi, mmin = flat_signal(kb), flat_signal(kb)
    zi = flat_signal(zb)
    zv1, n_x, nsum, nb = flat_signal(xb), flat_signal(xb), flat_signal(xb), flat_signal(xb)
    sh = flat_signal(shb)
    cap_all = const(fmt.m_max, kb)
    ok_a = Signal(bool(0))
    ok_a_unused = Signal(bool(0))  # pick(m_max) always exists: every ROM entry is valid at m_max
    base_lo = flat_signal(dwd.lgl)
    ok_b = Signal(bool(0))
    pm_a, pm_b = flat_signal(kb), flat_signal(kb)
    pz_a, pz_b = flat_signal(zb), flat_signal(zb)
    d_prog = flat_signal(sw.pgb)
    d_m, d_keep = flat_signal(kb), flat_signal(kb)
    d_z = flat_signal(zb)
    insts += [
        _rom(idx, mi, zi, mmin, zv1, sh, fmt),
        resize(n_r, n_x),
        _pick(clk, rst, det_go, step, mi, zi, mmin, nb, cap_all, ok_a, pm_a, pz_a, fmt),
        _pick(clk, rst, det_go, step, mi, zi, mmin, nb, keep_all, ok_b, pm_b, pz_b, fmt),
    ]

    @always_comb
    def sinks():
        ok_a_unused.next = ok_a
        base_lo.next = base_a[dwd.lgl:0]

    @always_comb
    def blocks():
        nsum.next = n_x + zv1
        nb.next = nsum >> sh

    @always_comb
    def control():
        det_go.next = start and not busy
        step.next = busy and (in_cand or det_done)

    @always_comb
    def decide():
        if keep_all >= pm_a:
            if way_multiple or way_fraction:
                d_prog.next = P_NO_COPY
            else:
                d_prog.next = P_NORMAL
            d_m.next = pm_a
            d_z.next = pz_a
            d_keep.next = pm_a
        elif lim_r and ok_b:
            d_prog.next = P_NO_COPY
            d_m.next = pm_b
            d_z.next = pz_b
            d_keep.next = pm_b
        else:
            d_prog.next = P_OVERFLOW_COPY
            d_m.next = pm_a
            d_z.next = pz_a
            d_keep.next = keep_all

    @always_seq(clk.posedge, reset=rst)
    def fsm():
        done.next = 0
        if start and not busy:
            n_r.next = n
            lda_r.next = lda
            base_r.next = base_lo
            lim_r.next = limit_m
            idx.next = 0
            in_cand.next = 0
            cyc.next = 1
            prog.next = 0
            m.next = 0
            z.next = 0
            keep.next = 0
            if lda == 0:
                done.next = 1
                err.next = 1
                sel_cycles.next = 1
            else:
                busy.next = 1
                err.next = 0
                sel_cycles.next = 0
        elif busy:
            cyc.next = cyc + 1
            if step:
                in_cand.next = 1
                idx.next = idx + 1
                if idx == last:
                    busy.next = 0
                    done.next = 1
                    sel_cycles.next = cyc + 1
                    prog.next = d_prog
                    m.next = d_m
                    z.next = d_z
                    keep.next = d_keep

    return insts, sinks, blocks, control, decide, fsm


def kernel_select_ports(fmt: GemmParams) -> dict[str, dict]:
    """Port list of :func:`kernel_select` (name -> direction, width, doc)."""
    dwd, sw = detect_widths(fmt), select_widths(fmt)
    progs = ", ".join(f"{i} {p}" for i, p in enumerate(GemmParams.PROGS))
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset"},
        "start": {"dir": "in", "width": 1, "doc": "sample n, lda, base_a, limit_m and select (ignored while busy)"},
        "n": {"dir": "in", "width": fmt.dimw, "doc": "N, columns of C (task balance)"},
        "lda": {"dir": "in", "width": dwd.lb, "doc": "A's leading dimension in elements; 0 is refused"},
        "base_a": {"dir": "in", "width": fmt.aw, "doc": "A's byte address"},
        "limit_m": {"dir": "in", "width": 1, "doc": "on a conflict, take pick(keep_all) rather than copy"},
        "done": {"dir": "out", "width": 1, "doc": "one-cycle pulse in cycle sel_cycles after start (1 when refused)"},
        "busy": {"dir": "out", "width": 1, "doc": "selection runs (cycles 1 .. sel_cycles - 1)"},
        "err": {"dir": "out", "width": 1, "doc": "the last start was refused (lda = 0)"},
        "prog": {"dir": "out", "width": sw.pgb, "doc": f"program ({progs}), from done"},
        "m": {"dir": "out", "width": sw.kb, "doc": "kernel rows m, from done"},
        "z": {"dir": "out", "width": sw.zb, "doc": "kernel vectors z (a power of two), from done"},
        "keep": {"dir": "out", "width": sw.kb, "doc": "rows kept in place (m, or keep_all with OVERFLOW_COPY)"},
        "worst": {"dir": "out", "width": dwd.cb, "doc": "detector worst over m_max rows, from done"},
        "keep_all": {"dir": "out", "width": dwd.kb, "doc": "detector keep over m_max rows, from done"},
        "conflict": {"dir": "out", "width": 1, "doc": "keep_all < m_max, from done"},
        "aligned": {"dir": "out", "width": 1, "doc": "closed form on the sampled base_a, lda"},
        "way_multiple": {"dir": "out", "width": 1, "doc": "lda*eb % (S*L) == 0 (sampled lda)"},
        "way_fraction": {"dir": "out", "width": 1, "doc": "(S*L) % (lda*eb) == 0 (sampled lda)"},
        "sel_cycles": {"dir": "out", "width": sw.sb, "doc": "start to done: visits + n_cand + 1 (1 when refused)"},
    }


def emit_kernel_select(fmt: GemmParams, outdir: Path | str, name: str = "kernel_select") -> Emitted:
    """Write ``kernel_select`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a GemmParams, or ``name`` is a keyword.
    """
    check_gemm(fmt, name)
    return emit_gemm(kernel_select, kernel_select_ports, fmt, outdir, name, {
        "detect": "ld_detect over m_max rows: cycles 1 .. visits",
        "candidates": "one ROM entry per cycle, cycles visits + 1 .. visits + n_cand",
        "done": "sel_cycles = visits + n_cand + 1 cycles after start",
        "n_cand": len(fmt.candidates),
        "refused_start_to_done": 1,
    }, "kernel selector: conflict walk over m_max rows, then pick(m_max) and pick(keep_all) over the candidate ROM")
