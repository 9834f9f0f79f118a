"""The memories of the sparse family (docs/sparse.md sections 7 and 9): the feature-map
memory unit ``fm_mem_unit`` (memory unit 600) and the weight memory ``w_mem`` (700).

``fm_mem_unit``: two banks (ping-pong), each a 64-bit descriptor register, a stored count
``q`` and ``depth`` entries ``{ROW, COL, VAL}``; entry ``e`` sits in lane ``e mod p`` at
group ``e div p``.

* Write side, one job at a time. The descriptor is taken on ``wr_desc_*`` (ready while no
  job is open), with ``wr_bank`` and ``wr_dense`` sampled beside it; it replaces the
  bank's descriptor and empties the bank (``q = 0``). Then the data words come on
  ``wr_*`` (ready while the job is open: one entry per cycle) until LAST; a descriptor
  with ``NNZ = 0`` is a whole job. Every word is checked (section 7, the priority of
  :func:`lockstep.models.sparse.load_data`): a refused job (DESC) drops every word
  without further checks; else OVERFLOW (the word's number in the job, counting every
  word from 0, is ``>= depth``), IDX_OOB and ORDER (against the last *stored* entry)
  drop the word, the first that holds; a stored zero raises ZERO unless ``wr_dense``;
  NNZ is checked on every word of an accepted job. ``err`` is the sticky OR, bit order ``SparseParams.MEM_ERR_NAMES``.
  ``wr_done`` pulses in the cycle after the job's last handshake.
* Read side, combinational: ``rd_bank`` and ``rd_group = g`` give lanes ``l = 0..p-1``
  holding entries ``g*p + l`` with ``rd_lane_valid[l] = g*p + l < q`` (an invalid lane
  reads 0), plus the bank's ``rd_q`` and ``rd_desc``. A write is visible from the next
  cycle.

``w_mem``: ``wr_start`` (while no job or during one) samples ``cfg_k``/``cfg_dense``,
empties the conv region (``wnz = 0``) and opens a job; weight words ``{LAST, A, B, W}``
come on ``wr_*`` until LAST (``wr_done`` pulses in the cycle after it). W_OVERFLOW (the
word's number in the job is ``>= kmax**2``), W_IDX_OOB (``a`` or ``b >= K``) and W_DUP
(an ``(a, b)`` stored before in this job) drop the word, the first that holds; a stored
zero raises W_ZERO unless ``cfg_dense`` (:func:`lockstep.models.sparse.load_weights`). ``rd_idx`` lane ``i`` (``u`` lanes) reads entry ``j`` in stream order:
``rd_a``, ``rd_b``, ``rd_w`` and ``rd_valid = j < wnz``. The FC region holds a dense
``nmax_out x wmax`` matrix (cleared by ``rst``): ``fc_we`` writes ``fc_data`` at
``[fc_row][fc_col]``; the gather read gives ``fc_rd_w`` lane ``l = W[fc_rd_row][idx_l]``
for the ``p`` indices of ``fc_rd_idx``. All reads are combinational.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from lockstep.models.record import ParamError, clog2
from lockstep.models.sparse.params import SparseParams

from ..common import Emitted, flat_signal, lane_bus, mem_read, resize
from .stream import _emit, _stream, check_sparse, mux2, part

__all__ = [
    "DESC_BITS",
    "check_fm_layout",
    "desc_lsb",
    "emit_fm_mem",
    "emit_w_mem",
    "fm_mem_ports",
    "fm_mem_unit",
    "w_mem",
    "w_mem_ports",
]

#: Width of the sub-feature-map descriptor (docs/sparse.md section 2).
DESC_BITS = sum(w for _, w in SparseParams.DESC_FIELDS)


def desc_lsb() -> dict[str, tuple[int, int]]:
    """Descriptor field -> (lsb, width), from ``SparseParams.DESC_FIELDS`` (MSB first)."""
    out, pos = {}, DESC_BITS
    for name, width in SparseParams.DESC_FIELDS:
        pos -= width
        out[name] = (pos, width)
    return out


def check_fm_layout(fmt: SparseParams) -> SparseParams:
    """Refuse what the feature-map memory unit cannot check: a stream index wider than the
    descriptor's H/W fields it is compared with (``rb``/``cb`` follow ``hmax``/``wmax``
    and ``kmax``), or a ``depth`` beyond what the NNZ field can count."""
    f = desc_lsb()
    if fmt.rb > f["h"][1] or fmt.cb > f["w"][1]:
        raise ParamError(f"fm_mem_unit: SparseParams.hmax={fmt.hmax}, wmax={fmt.wmax} with kmax={fmt.kmax} give "
                         f"{fmt.rb}/{fmt.cb}-bit indices, wider than the descriptor's H/W fields")
    if fmt.depth >= 1 << f["nnz"][1]:
        raise ParamError(f"fm_mem_unit: SparseParams.depth={fmt.depth} must be below 2**{f['nnz'][1]} "
                         f"(the descriptor's NNZ field)")
    return fmt


def group_bits(fmt: SparseParams) -> int:
    """Width of ``rd_group``: it addresses ``ceil(depth / p)`` groups."""
    return max(1, clog2(-(-fmt.depth // fmt.p)))


def count_bits(n: int) -> int:
    """Width of a count ``0..n``."""
    return max(1, n.bit_length())


@block
def _lane_mem(clk, we, waddr, wdata, raddr, valid, rdata, size: int):
    """A register file of ``size`` words (``size = 2**len(waddr)``), no reset: written at
    ``waddr`` when ``we``; ``rdata = mem[raddr]`` when ``valid``, else 0."""
    mem = [Signal(intbv(0)[len(wdata):]) for _ in range(size)]

    @always(clk.posedge)
    def write():
        if we:
            mem[waddr].next = wdata

    @always_comb
    def read():
        if valid:
            rdata.next = mem[raddr]
        else:
            rdata.next = 0

    return write, read


@block
def _fm_bank(clk, rst, clear, store, wdata, desc_in, rd_group, q, desc, rows, cols, vals, lane_valid,
             fmt: SparseParams):
    """One bank: descriptor register, stored count and ``p`` lane memories.

    Ports:
        clear: load ``desc_in`` into the descriptor register and empty the bank.
        store: append ``wdata`` ``{ROW, COL, VAL}`` as entry ``q`` (the caller checks room).
        rd_group: group read by the read side.
        q, desc: stored count and descriptor.
        rows, cols, vals: lane ``l``'s fields at ``[l*width +: width]`` (0 when invalid).
        lane_valid: bit ``l`` = entry ``rd_group*p + l`` is stored.
    """
    p, rb, cb, dw = fmt.p, fmt.rb, fmt.cb, fmt.dw
    gb, lb = group_bits(fmt), max(1, clog2(p))
    wa = flat_signal(gb + 1)  # full groups stored (q div p); the next entry's group
    wl = flat_signal(lb)  # q mod p: the next entry's lane
    wa_g = flat_signal(gb)
    g_ext = flat_signal(gb + 1)
    last_lane = p - 1
    insts = [resize(wa, wa_g), resize(rd_group, g_ext)]
    wes = [Signal(bool(0)) for _ in range(p)]
    valids = [Signal(bool(0)) for _ in range(p)]
    words = [flat_signal(rb + cb + dw) for _ in range(p)]
    lrow = [flat_signal(rb) for _ in range(p)]
    lcol = [flat_signal(cb) for _ in range(p)]
    lval = [flat_signal(dw) for _ in range(p)]
    for lo in range(p):
        insts.append(_fm_lane_ctl(store, wl, wa, g_ext, wes[lo], valids[lo], lo))
        insts.append(_lane_mem(clk, wes[lo], wa_g, wdata, rd_group, valids[lo], words[lo], 1 << gb))
        insts += [part(words[lo], dw + cb, rb, lrow[lo]), part(words[lo], dw, cb, lcol[lo]),
                  part(words[lo], 0, dw, lval[lo])]
    insts += [resize(lane_bus(lrow), rows), resize(lane_bus(lcol), cols), resize(lane_bus(lval), vals), resize(lane_bus(valids), lane_valid)]

    @always_seq(clk.posedge, reset=rst)
    def count():
        if clear:
            desc.next = desc_in
            q.next = 0
            wa.next = 0
            wl.next = 0
        elif store:
            q.next = q + 1
            if wl == last_lane:
                wl.next = 0
                wa.next = wa + 1
            else:
                wl.next = wl + 1

    return insts, count


@block
def _fm_lane_ctl(store, wl, wa, g_ext, we, valid, lane_no: int):
    """Lane ``lane_no``'s write enable and read valid bit (``g < wa``, or the group being
    filled and ``lane_no < wl``)."""

    if lane_no == (1 << len(wl)) - 1:  # the widest lane: never below the filling group's wl

        @always_comb
        def ctl_top():
            we.next = store and wl == lane_no
            valid.next = g_ext < wa

        return ctl_top

    @always_comb
    def ctl():
        we.next = store and wl == lane_no
        valid.next = g_ext < wa or (g_ext == wa and wl > lane_no)

    return ctl


@block
def fm_mem_unit(clk, rst, wr_desc_valid, wr_desc_ready, wr_desc_data, wr_bank, wr_dense, wr_valid, wr_ready,
                wr_data, wr_done, rd_bank, rd_group, rd_row, rd_col, rd_val, rd_lane_valid, rd_q, rd_desc, err,
                fmt: SparseParams):
    """Feature-map memory unit (memory unit 600). Ports: :func:`fm_mem_ports`; behaviour:
    the module docstring."""
    check_fm_layout(check_sparse(fmt, "fm_mem_unit"))
    rb, cb, dw, depth = fmt.rb, fmt.cb, fmt.dw, fmt.depth
    hmax, wmax = fmt.hmax, fmt.wmax
    f = desc_lsb()
    (h_lo, h_w), (w_lo, w_w), (n_lo, n_w), (r_lo, r_w) = f["h"], f["w"], f["nnz"], f["rsvd"]
    names = SparseParams.MEM_ERR_NAMES
    e_desc, e_oob, e_order, e_zero, e_nnz, e_ovf = (
        1 << names.index(n) for n in ("DESC", "IDX_OOB", "ORDER", "ZERO", "NNZ", "OVERFLOW"))
    top = fmt.data_bits - 1
    qb = count_bits(depth)

    opened, refused, bank, dense, have_last = (Signal(bool(0)) for _ in range(5))
    d_h, d_w, d_nnz, d_rsvd = flat_signal(h_w), flat_signal(w_w), flat_signal(n_w), flat_signal(r_w)
    lim_h, lim_w = flat_signal(h_w), flat_signal(w_w)  # H and W of the open job
    # NNZ - 1, and the word's number in the job (saturating: it stays >= depth and never
    # equals NNZ - 1 <= 2**16 - 2 again after 2**16 - 1 words without LAST)
    nnz_m1, k = flat_signal(n_w), flat_signal(n_w)
    k_sat = (1 << n_w) - 1
    wrow, wcol, wval = flat_signal(rb), flat_signal(cb), flat_signal(dw)
    wrow8, wcol8 = flat_signal(h_w), flat_signal(w_w)
    wlast = Signal(bool(0))
    last_row, last_col = flat_signal(rb), flat_signal(cb)
    take_desc, take, store = (Signal(bool(0)) for _ in range(3))
    clears = [Signal(bool(0)) for _ in range(2)]
    stores = [Signal(bool(0)) for _ in range(2)]
    qs = [flat_signal(qb) for _ in range(2)]
    descs = [flat_signal(DESC_BITS) for _ in range(2)]
    b_rows = [flat_signal(len(rd_row)) for _ in range(2)]
    b_cols = [flat_signal(len(rd_col)) for _ in range(2)]
    b_vals = [flat_signal(len(rd_val)) for _ in range(2)]
    b_valid = [flat_signal(len(rd_lane_valid)) for _ in range(2)]
    flags = flat_signal(len(err))
    entry = flat_signal(rb + cb + dw)

    insts = [
        part(wr_desc_data, h_lo, h_w, d_h), part(wr_desc_data, w_lo, w_w, d_w),
        part(wr_desc_data, n_lo, n_w, d_nnz), part(wr_desc_data, r_lo, r_w, d_rsvd),
        part(wr_data, dw + cb, rb, wrow), part(wr_data, dw, cb, wcol), part(wr_data, 0, dw, wval),
        part(wr_data, 0, rb + cb + dw, entry), resize(wrow, wrow8), resize(wcol, wcol8),
    ]
    for banks, out in ((b_rows, rd_row), (b_cols, rd_col), (b_vals, rd_val), (b_valid, rd_lane_valid), (qs, rd_q),
                       (descs, rd_desc)):
        insts.append(mux2(rd_bank, banks[0], banks[1], out))
    for b in range(2):
        insts.append(_fm_bank(clk, rst, clears[b], stores[b], entry, wr_desc_data, rd_group, qs[b], descs[b],
                              b_rows[b], b_cols[b], b_vals[b], b_valid[b], fmt))

    @always_comb
    def word():
        wlast.next = wr_data[top]

    @always_comb
    def check():
        wr_desc_ready.next = not opened
        wr_ready.next = opened
        take_desc.next = wr_desc_valid and not opened
        take.next = wr_valid and opened
        fl = intbv(0)[len(err):]
        st = False
        if wr_valid and opened and not refused:
            if k >= depth:
                fl[:] = e_ovf
            elif wrow8 >= lim_h or wcol8 >= lim_w:
                fl[:] = e_oob
            elif have_last and (wrow < last_row or (wrow == last_row and wcol <= last_col)):
                fl[:] = e_order
            else:
                st = True
                if wval == 0 and not dense:
                    fl[:] = e_zero
            if (wlast and k != nnz_m1) or (not wlast and k == nnz_m1):
                fl[:] = fl | e_nnz
        if wr_desc_valid and not opened:
            if d_rsvd != 0 or d_h == 0 or d_h > hmax or d_w == 0 or d_w > wmax:
                fl[:] = e_desc
        flags.next = fl
        store.next = st

    @always_comb
    def route():
        clears[0].next = take_desc and not wr_bank
        clears[1].next = take_desc and wr_bank
        stores[0].next = store and not bank
        stores[1].next = store and bank

    @always_seq(clk.posedge, reset=rst)
    def job():
        wr_done.next = 0
        err.next = err | flags
        if take_desc:
            bank.next = wr_bank
            dense.next = wr_dense
            lim_h.next = d_h
            lim_w.next = d_w
            nnz_m1.next = d_nnz - 1
            k.next = 0
            have_last.next = 0
            refused.next = flags != 0
            if d_nnz == 0:
                wr_done.next = 1
            else:
                opened.next = 1
        elif take:
            if k != k_sat:
                k.next = k + 1
            if store:
                have_last.next = 1
                last_row.next = wrow
                last_col.next = wcol
            if wlast:
                opened.next = 0
                wr_done.next = 1

    return insts, word, check, route, job


def fm_mem_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`fm_mem_unit` (name -> direction, width, doc)."""
    p = fmt.p
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset (banks empty, err 0)"},
        **_stream("wr_desc", True, DESC_BITS, "sub-FM descriptor (ready while no job is open)"),
        "wr_bank": {"dir": "in", "width": 1, "doc": "bank written by the job (sampled with the descriptor)"},
        "wr_dense": {"dir": "in", "width": 1, "doc": "dense job: zero values allowed (sampled with the descriptor)"},
        **_stream("wr", True, fmt.data_bits, "data entries {LAST, ROW, COL, VAL} of the open job"),
        "wr_done": {"dir": "out", "width": 1, "doc": "one-cycle pulse after a job's last handshake"},
        "rd_bank": {"dir": "in", "width": 1, "doc": "bank read"},
        "rd_group": {"dir": "in", "width": group_bits(fmt), "doc": "group g: entries g*p .. g*p+p-1"},
        "rd_row": {"dir": "out", "width": p * fmt.rb, "doc": "lane l's ROW at [l*rb +: rb] (combinational)"},
        "rd_col": {"dir": "out", "width": p * fmt.cb, "doc": "lane l's COL at [l*cb +: cb]"},
        "rd_val": {"dir": "out", "width": p * fmt.dw, "doc": "lane l's VAL at [l*dw +: dw] (signed)"},
        "rd_lane_valid": {"dir": "out", "width": p, "doc": "bit l: entry g*p+l is stored (else the lane reads 0)"},
        "rd_q": {"dir": "out", "width": count_bits(fmt.depth), "doc": "entries stored in the bank"},
        "rd_desc": {"dir": "out", "width": DESC_BITS, "doc": "the bank's descriptor"},
        "err": {"dir": "out", "width": len(SparseParams.MEM_ERR_NAMES),
                "doc": "sticky " + ",".join(SparseParams.MEM_ERR_NAMES) + " (bit 0 first)"},
    }


def emit_fm_mem(fmt: SparseParams, outdir: Path | str, name: str = "fm_mem_unit") -> Emitted:
    """Write ``fm_mem_unit`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, its indices do not fit the descriptor
            (:func:`check_fm_layout`), or ``name`` is a keyword.
    """
    check_fm_layout(check_sparse(fmt, name))
    return _emit(fm_mem_unit, fm_mem_ports, fmt, outdir, name, {
        "fill": "one entry per cycle with wr_valid high (wr_ready is high while a job is open)",
        "desc_to_first_entry": 1,
        "wr_done": "1 cycle after the LAST handshake (after the descriptor when NNZ = 0)",
        "read_latency": 0,
        "write_to_read": 1,
    }, "feature-map memory unit: two banks of descriptor + entries, checked writes, p-wide group reads")


def widx_bits(fmt: SparseParams) -> int:
    """Width of a weight index ``j < kmax**2`` (``rd_idx`` lanes)."""
    return max(1, clog2(fmt.kmax * fmt.kmax))


def k_bits(fmt: SparseParams) -> int:
    """Width of ``cfg_k``: it holds ``kmax`` and values beyond."""
    return (fmt.kmax + 1).bit_length()


def fc_bits(fmt: SparseParams) -> tuple[int, int]:
    """Widths of an FC row (output neuron ``o < nmax_out``) and column (``i < wmax``)."""
    return max(1, clog2(fmt.nmax_out)), max(1, clog2(fmt.wmax))


@block
def _w_read(mem, idx, idx_ext, wnz, word, valid):
    """One conv read lane: ``word = mem[idx]`` (``{A, B, W}``) when ``idx < wnz``, else 0
    (``idx_ext`` is ``idx`` in the width of ``wnz``)."""

    @always_comb
    def read():
        valid.next = idx_ext < wnz
        if idx_ext < wnz:
            word.next = mem[idx]
        else:
            word.next = 0

    return read


@block
def w_mem(clk, rst, cfg_k, cfg_dense, wr_start, wr_valid, wr_ready, wr_data, wr_done, wnz, rd_idx, rd_a, rd_b,
          rd_w, rd_valid, fc_we, fc_row, fc_col, fc_data, fc_rd_row, fc_rd_idx, fc_rd_w, err, fmt: SparseParams):
    """Weight memory (700). Ports: :func:`w_mem_ports`; behaviour: the module docstring."""
    check_sparse(fmt, "w_mem")
    kb, ww, u, p = fmt.kb, fmt.ww, fmt.u, fmt.p
    cap = fmt.kmax * fmt.kmax
    jb, nb = widx_bits(fmt), count_bits(cap)
    ob, ib = fc_bits(fmt)
    kw = k_bits(fmt)
    names = SparseParams.W_ERR_NAMES
    e_oob, e_dup, e_zero, e_ovf = (1 << names.index(n) for n in ("W_IDX_OOB", "W_DUP", "W_ZERO", "W_OVERFLOW"))
    top = fmt.weight_bits - 1
    eb = 2 * kb + ww  # a stored entry {A, B, W}

    opened, dense, st = (Signal(bool(0)) for _ in range(3))
    lim_k = flat_signal(kw)
    n_rx = flat_signal(nb)  # words received in the job, saturating at kmax**2
    wa_, wb_, a_ext, b_ext = flat_signal(kb), flat_signal(kb), flat_signal(kw), flat_signal(kw)
    wv = flat_signal(ww)
    ab = flat_signal(2 * kb)  # {A, B}: the seen-bitmap index
    seen = flat_signal(1 << (2 * kb))
    flags = flat_signal(len(err))
    entry = flat_signal(eb)
    wr_j = flat_signal(jb)
    fc_wa = flat_signal(ob + ib)
    mem = [Signal(intbv(0)[eb:]) for _ in range(cap)]  # a job stores at most kmax**2 (W_OVERFLOW beyond)
    fc_mem = [Signal(intbv(0)[ww:]) for _ in range(1 << (ob + ib))]

    insts = [part(wr_data, kb + ww, kb, wa_), part(wr_data, ww, kb, wb_), part(wr_data, 0, ww, wv),
             part(wr_data, 0, eb, entry), part(wr_data, ww, 2 * kb, ab),
             resize(wa_, a_ext), resize(wb_, b_ext), resize(wnz, wr_j)]
    ra, rb_, rw, rv = [], [], [], []
    for i in range(u):
        idx_i, idx_x, word_i, v_i = flat_signal(jb), flat_signal(nb), flat_signal(eb), Signal(bool(0))
        a_i, b_i, w_i = flat_signal(kb), flat_signal(kb), flat_signal(ww)
        insts += [part(rd_idx, i * jb, jb, idx_i), resize(idx_i, idx_x), _w_read(mem, idx_i, idx_x, wnz, word_i, v_i),
                  part(word_i, kb + ww, kb, a_i), part(word_i, ww, kb, b_i), part(word_i, 0, ww, w_i)]
        ra.append(a_i)
        rb_.append(b_i)
        rw.append(w_i)
        rv.append(v_i)
    fcw = []
    for lo in range(p):
        idx_l, addr_l, w_l = flat_signal(ib), flat_signal(ob + ib), flat_signal(ww)
        insts += [part(fc_rd_idx, lo * ib, ib, idx_l), _fc_addr(fc_rd_row, idx_l, addr_l), mem_read(fc_mem, addr_l, w_l)]
        fcw.append(w_l)
    insts.append(_fc_addr(fc_row, fc_col, fc_wa))
    insts += [resize(lane_bus(ra), rd_a), resize(lane_bus(rb_), rd_b), resize(lane_bus(rw), rd_w), resize(lane_bus(rv), rd_valid),
              resize(lane_bus(fcw), fc_rd_w)]

    @always_comb
    def check():
        wr_ready.next = opened and not wr_start
        fl = intbv(0)[len(err):]
        s = False
        if wr_valid and opened and not wr_start:
            if n_rx == cap:
                fl[:] = e_ovf
            elif a_ext >= lim_k or b_ext >= lim_k:
                fl[:] = e_oob
            elif seen[ab]:
                fl[:] = e_dup
            else:
                s = True
                if wv == 0 and not dense:
                    fl[:] = e_zero
        flags.next = fl
        st.next = s

    @always_seq(clk.posedge, reset=rst)
    def job():
        wr_done.next = 0
        err.next = err | flags
        if wr_start:
            opened.next = 1
            dense.next = cfg_dense
            lim_k.next = cfg_k
            wnz.next = 0
            n_rx.next = 0
            seen.next = 0
        elif wr_valid and opened:
            if n_rx != cap:
                n_rx.next = n_rx + 1
            if st:
                wnz.next = wnz + 1
                seen.next[ab] = 1
            if wr_data[top]:
                opened.next = 0
                wr_done.next = 1

    @always(clk.posedge)
    def write():
        if st:
            mem[wr_j].next = entry

    @always(clk.posedge)
    def fc_write():
        if rst:
            for i in range(len(fc_mem)):
                fc_mem[i].next = 0
        elif fc_we:
            fc_mem[fc_wa].next = fc_data

    return insts, check, job, write, fc_write


@block
def _fc_addr(row, col, addr):
    """``addr = {row, col}``: FC row ``row`` is ``2**len(col)`` words long."""

    @always_comb
    def cat():
        addr.next = concat(row, col)

    return cat


def w_mem_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`w_mem` (name -> direction, width, doc)."""
    u, p = fmt.u, fmt.p
    ob, ib = fc_bits(fmt)
    jb = widx_bits(fmt)
    return {
        "clk": {"dir": "in", "width": 1, "doc": "clock"},
        "rst": {"dir": "in", "width": 1, "doc": "synchronous active-high reset (empty, FC region 0, err 0)"},
        "cfg_k": {"dir": "in", "width": k_bits(fmt), "doc": "kernel size K of the job (sampled at wr_start)"},
        "cfg_dense": {"dir": "in", "width": 1, "doc": "dense job: zero weights allowed (sampled at wr_start)"},
        "wr_start": {"dir": "in", "width": 1, "doc": "empty the conv region and open a weight job"},
        **_stream("wr", True, fmt.weight_bits, "weight entries {LAST, A, B, W} of the open job"),
        "wr_done": {"dir": "out", "width": 1, "doc": "one-cycle pulse after the LAST handshake"},
        "wnz": {"dir": "out", "width": count_bits(fmt.kmax * fmt.kmax), "doc": "weight entries stored"},
        "rd_idx": {"dir": "in", "width": u * jb, "doc": f"u read lanes: entry index j at [i*{jb} +: {jb}]"},
        "rd_a": {"dir": "out", "width": u * fmt.kb, "doc": "lane i's A (combinational, 0 when invalid)"},
        "rd_b": {"dir": "out", "width": u * fmt.kb, "doc": "lane i's B"},
        "rd_w": {"dir": "out", "width": u * fmt.ww, "doc": "lane i's W (signed)"},
        "rd_valid": {"dir": "out", "width": u, "doc": "bit i: j < wnz"},
        "fc_we": {"dir": "in", "width": 1, "doc": "FC region write enable"},
        "fc_row": {"dir": "in", "width": ob, "doc": "FC write row (output neuron o)"},
        "fc_col": {"dir": "in", "width": ib, "doc": "FC write column (input i)"},
        "fc_data": {"dir": "in", "width": fmt.ww, "doc": "FC weight W[o][i] (signed)"},
        "fc_rd_row": {"dir": "in", "width": ob, "doc": "FC gather row o"},
        "fc_rd_idx": {"dir": "in", "width": p * ib, "doc": f"p gather indices idx_l at [l*{ib} +: {ib}]"},
        "fc_rd_w": {"dir": "out", "width": p * fmt.ww, "doc": "lane l: W[o][idx_l] (combinational)"},
        "err": {"dir": "out", "width": len(SparseParams.W_ERR_NAMES),
                "doc": "sticky " + ",".join(SparseParams.W_ERR_NAMES) + " (bit 0 first)"},
    }


def emit_w_mem(fmt: SparseParams, outdir: Path | str, name: str = "w_mem") -> Emitted:
    """Write ``w_mem`` for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, or ``name`` is a keyword.
    """
    return _emit(w_mem, w_mem_ports, fmt, outdir, name, {
        "fill": "one weight per cycle with wr_valid high (wr_ready is high while a job is open)",
        "wr_done": "1 cycle after the LAST handshake",
        "read_latency": 0,
        "write_to_read": 1,
    }, "weight memory: checked conv weight entries (u read lanes) and a dense FC region (p-wide gather)")
