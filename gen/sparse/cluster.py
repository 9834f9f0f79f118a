"""The sparse tensor compute cluster ``stc_cluster`` (docs/sparse.md sections 6 and 9;
spec 001 section 4.1): ``m`` feature-map memory units, ``m`` STUs, the broadcast weight
memory, the ``route_sel`` switch, ``cluster_done`` and ``cluster_cycles``.

* **Data write port** (shared by the memory units): ``wr_desc_*`` takes a descriptor for
  memory unit ``wr_unit`` (sampled with it, like ``wr_bank`` and ``wr_dense``), then
  ``wr_*`` takes its data words until LAST; each memory unit checks its own job exactly
  as ``fm_mem_unit`` does. The descriptor port is ready while no memory unit has an
  open job (and ``wr_unit < m``: an address beyond the cluster is never accepted).
  ``wr_done`` is the memory unit's; ``mem_err`` holds every unit's sticky vector (unit
  ``i`` at ``[i*6 +: 6]``).
* **Weight write port**: ``w_start`` / ``w_*`` / ``fc_*`` are ``w_mem``'s write ports,
  broadcast. Every STU walks the weights at its own pace (its ``q`` differs), so each
  needs its own read lanes; the weight memory is built as ``m`` copies of ``w_mem``
  behind the one broadcast write port (identical contents by construction: same inputs,
  same reset). ``w_ready`` and ``w_done`` are the AND / OR of the copies, ``w_err`` the
  OR, ``w_wnz`` copy 0's count; STU ``u`` reads copy ``u`` (``cfg_wnz`` = its ``wnz``).
* **A pass**: ``start`` while ``busy`` is low samples ``route_sel``, ``cfg_active``
  (bit ``i``: memory unit ``i`` holds a job), ``cfg_bank`` (the bank every unit reads)
  and the broadcast ``cfg_*``. Memory unit ``i`` feeds STU ``i`` (``route_sel[i] = 0``)
  or STU ``(i+1) mod m`` (``1``). STU ``u`` starts when one active memory unit feeds
  it; its ``cfg_h``, ``cfg_w`` and ``cfg_nnz`` are that memory unit's descriptor H, W
  (0, which the STU refuses, when beyond ``hmax``/``wmax``) and stored count ``rd_q``.
  Two active memory units routed to one STU refuse the pass: no STU starts, the sticky
  ``err`` bit ROUTE is set, ``cluster_done`` pulses in the next cycle. A ``start``
  while busy is ignored (``err`` bit START_BUSY).
* **Completion**: ``unit_active`` (registered at the start) marks the STUs that run,
  ``unit_desc`` holds the descriptor of the memory unit that feeds each (ORG_ROW/ORG_COL
  place its result), ``unit_done``/``unit_busy`` are the STUs'. ``cluster_done`` pulses
  (combinationally, in the same cycle) with the last running STU's ``done``, or in the
  cycle after the start when none runs; ``cluster_cycles`` counts from the start to
  that cycle (``max_i`` of the units' start-to-done) and holds it. ``busy`` is high from
  the cycle after the start to the cycle before ``cluster_done``.
* **Outputs**: one output stream per STU, packed: ``o_valid[u]``, ``o_ready[u]`` and
  ``o_data[u*out_bits +: out_bits]`` (local indices of the unit's output map), and
  each STU's counters at ``[u*32 +: 32]`` and ``err`` at ``[u*4 +: 4]``.

Routing is combinational and follows the inputs while idle (so the start cycle reads
the right memory unit and bank, as the STU addresses its reads one cycle ahead) and the
sampled values during a pass.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import always_comb, always_seq, block, concat, intbv

from lockstep.models.record import ParamError, clog2
from lockstep.models.sparse.params import SparseParams

from ..common import Emitted, bit_of, cat_lanes, emit_stream_unit, new_bool, new_vec, port, resize, wire
from .memory import DESC_BITS, check_fm_layout, desc_lsb, fm_mem_ports, fm_mem_unit, w_mem, w_mem_ports
from .stream import mux2, part
from .stu import stu, stu_check, stu_ports, stu_timing, stu_widths

__all__ = ["CL_ERR_NAMES", "cluster_check", "cluster_ports", "emit_cluster", "stc_cluster", "unit_bits"]

#: Sticky error bits of the cluster itself, bit 0 first.
CL_ERR_NAMES = ("ROUTE", "START_BUSY")
#: The STU's per-unit outputs the cluster packs (name -> lane width from its port list).
_UNIT_COUNTERS = SparseParams.COUNTERS
#: The STU's cfg ports broadcast from the cluster's.
_BCAST_CFG = ("cfg_k", "cfg_mode", "cfg_n_out", "cfg_emit", "cfg_relu", "cfg_pool", "cfg_shift", "cfg_dense")
#: The memory unit's read fields routed to an STU (fm_mem_unit port -> STU port).
_RD_FIELDS = (("rd_row", "rd_row"), ("rd_col", "rd_col"), ("rd_val", "rd_val"), ("rd_lane_valid", "rd_lane_valid"))


def unit_bits(fmt: SparseParams) -> int:
    """Width of ``wr_unit`` (a memory unit index ``< m``)."""
    return max(1, clog2(fmt.m))


def cluster_check(fmt: object, who: str = "stc_cluster") -> SparseParams:
    """Refuse parameters the cluster cannot be built for, naming the field: those of the
    STU (:func:`~.stu.stu_check`) and of the memory unit (:func:`~.memory.check_fm_layout`),
    and an STU ``cfg_nnz`` port that cannot hold the memory unit's stored count.

    Raises:
        ParamError: as above.
    """
    fmt = check_fm_layout(stu_check(fmt, who))
    if stu_widths(fmt).qb != fm_mem_ports(fmt)["rd_q"]["width"]:  # both count 0..depth today
        raise ParamError(f"{who}: SparseParams.depth={fmt.depth}: the STU's cfg_nnz and the memory unit's rd_q differ")
    return fmt


# ---------------------------------------------------------------------------------------
# write side


@block
def _wr_route(clk, rst, wr_unit, wr_desc_valid, wr_desc_ready, wr_valid, wr_ready, wr_done, d_ready, r_ready, dones,
              ok, wsel, m: int):
    """The shared data write port: the descriptor goes to memory unit ``wr_unit`` (while
    no unit has an open job), the words to the unit that took the last descriptor
    (:func:`_wr_hit` decodes both per unit).

    Ports:
        d_ready, r_ready, dones: (packed, bit ``i`` = memory unit ``i``) the units'
            ``wr_desc_ready``, ``wr_ready``, ``wr_done``.
        ok: a descriptor is accepted now if valid; wsel: the unit of the open job.
    """
    ub = len(wr_unit)
    all_ready = (1 << m) - 1

    if m == 1 << ub:  # wr_unit cannot name a unit beyond the cluster

        @always_comb
        def accept_all():
            ok.next = d_ready == all_ready

        acc = accept_all
    else:

        @always_comb
        def accept():
            ok.next = d_ready == all_ready and wr_unit < m

        acc = accept

    @always_comb
    def status():
        wr_desc_ready.next = ok
        wr_ready.next = r_ready != 0
        wr_done.next = dones != 0

    @always_seq(clk.posedge, reset=rst)
    def held():
        if wr_desc_valid and ok:
            wsel.next = wr_unit

    return acc, status, held


@block
def _wr_hit(wr_unit, wsel, ok, wr_desc_valid, wr_valid, i: int, dv, rv):
    """Memory unit ``i``'s ``wr_desc_valid`` and ``wr_valid``."""
    ic = i

    @always_comb
    def hit():
        dv.next = wr_desc_valid and ok and wr_unit == ic
        rv.next = wr_valid and wsel == ic

    return hit


@block
def _w_join(rdy, dones, errs, w_ready, w_done, w_err, m: int):
    """The weight copies' status: ready when all are, done and err as the OR (``errs``:
    the copies' err vectors, OR-ed in a chain)."""
    all_ready = (1 << m) - 1
    chain = [errs[0]] + [new_vec(len(w_err)) for _ in range(m - 2)] + ([w_err] if m > 1 else [])
    insts = [wire(errs[0], w_err)] if m == 1 else [_or2(chain[i - 1], errs[i], chain[i]) for i in range(1, m)]

    @always_comb
    def join():
        w_ready.next = rdy == all_ready
        w_done.next = dones != 0

    return insts, join


@block
def _or2(a, b, y):
    """``y = a | b``."""

    @always_comb
    def or2():
        y.next = a | b

    return or2


# ---------------------------------------------------------------------------------------
# a pass


@block
def _pass_ctl(clk, rst, start, route_sel, cfg_active, cfg_bank, unit_done, busy, cluster_done, cluster_cycles, err,
              unit_active, go, ustart, from_prev, sel_eff, bank_eff, m: int):
    """Start, route check, completion and the cycle count of a pass (module docstring).

    Ports:
        go: a start is accepted (also one refused by ROUTE).
        ustart: (packed) the STUs' ``start``.
        from_prev: (packed) STU ``u`` is fed by memory unit ``(u-1) mod m``, else by ``u``.
        sel_eff, bank_eff: ``route_sel`` and the bank in effect (the inputs while idle,
            the values sampled at start during a pass).
        from_prev and sel_eff are None for ``m = 1`` (nothing to route).
    """
    running = new_bool()
    fin = new_vec(m)  # units whose done has come in this pass
    act_r, act_eff, has_src = new_vec(m), new_vec(m), new_vec(m)
    bank_r, conflict = new_bool(), new_bool()
    all_ones = (1 << m) - 1
    b_route, b_busy = (CL_ERR_NAMES.index(n) for n in ("ROUTE", "START_BUSY"))
    ne = len(CL_ERR_NAMES)
    top = m - 1

    @always_comb
    def finish():
        cluster_done.next = running and (~unit_active | fin | unit_done) & all_ones == all_ones
        busy.next = running and not (~unit_active | fin | unit_done) & all_ones == all_ones

    eff = [mux2(busy, cfg_active, act_r, act_eff), mux2(busy, cfg_bank, bank_r, bank_eff)]

    if m == 1:
        route_unused = new_bool()  # m = 1: memory unit 0 feeds STU 0 whatever route_sel says

        @always_comb
        def sources_one():
            route_unused.next = route_sel
            has_src.next = act_eff
            conflict.next = 0

        routing = [sources_one]
    else:
        sel_r = new_vec(m)

        @always_seq(clk.posedge, reset=rst)
        def sel_reg():
            if start and not busy:
                sel_r.next = route_sel

        @always_comb
        def sources_ring():
            own = intbv(0)[m:]
            sa = intbv(0)[m:]
            fp = intbv(0)[m:]
            own[:] = act_eff & ~sel_eff
            sa[:] = act_eff & sel_eff
            fp[:] = concat(sa[top:0], sa[top])  # bit u: memory unit u-1 feeds unit u
            from_prev.next = fp
            has_src.next = own | fp
            conflict.next = (own & fp) != 0

        routing = [mux2(busy, route_sel, sel_r, sel_eff), sel_reg, sources_ring]

    @always_comb
    def starts():
        go.next = start and not busy
        if start and not busy and not conflict:
            ustart.next = has_src
        else:
            ustart.next = 0

    @always_seq(clk.posedge, reset=rst)
    def regs():
        e = intbv(0)[ne:]
        e[:] = err
        if start and busy:
            e[b_busy] = 1
        if start and not busy:
            running.next = 1
            cluster_cycles.next = 1
            fin.next = 0
            act_r.next = cfg_active
            bank_r.next = cfg_bank
            if conflict:
                e[b_route] = 1
                unit_active.next = 0
            else:
                unit_active.next = has_src
        elif running:
            if cluster_done:
                running.next = 0
            else:
                cluster_cycles.next = cluster_cycles + 1
                fin.next = fin | unit_done
        err.next = e

    return finish, eff, routing, starts, regs


@block
def _sink(x):
    """Reads ``x``: an STU tap the cluster does not export (its testbench checks it)."""
    tap_unused = new_vec(len(x)) if len(x) > 1 else new_bool()

    @always_comb
    def sink():
        tap_unused.next = x

    return sink


@block
def _desc_reg(clk, rst, go, ustart, desc, q):
    """At an accepted start: ``q <= desc`` (the descriptor of the memory unit feeding
    the unit) if the unit starts, else 0."""

    @always_seq(clk.posedge, reset=rst)
    def reg():
        if go:
            if ustart:
                q.next = desc
            else:
                q.next = 0

    return reg


@block
def _size_cfg(d, lim: int, out):
    """``out = d`` when ``d <= lim``, else 0 (a size the STU refuses with CFG)."""
    ow = len(out)

    @always_comb
    def clamp():
        if d <= lim:
            out.next = d[ow:]
        else:
            out.next = 0

    return clamp


# ---------------------------------------------------------------------------------------
# the cluster


@block
def stc_cluster(clk, rst, wr_unit, wr_desc_valid, wr_desc_ready, wr_desc_data, wr_bank, wr_dense, wr_valid, wr_ready,
                wr_data, wr_done, mem_err, w_cfg_k, w_cfg_dense, w_start, w_valid, w_ready, w_data, w_done, w_wnz,
                w_err, fc_we, fc_row, fc_col, fc_data, start, route_sel, cfg_active, cfg_bank, cfg_k, cfg_mode,
                cfg_n_out, cfg_emit, cfg_relu, cfg_pool, cfg_shift, cfg_dense, busy, cluster_done, cluster_cycles,
                err, unit_active, unit_busy, unit_done, unit_desc, unit_err, o_valid, o_ready, o_data, cyc_compute,
                cyc_drain, n_rounds, n_mults, n_deferred, nnz_out, fmt: SparseParams):
    """The cluster. Ports: :func:`cluster_ports`; behaviour: the module docstring."""
    fmt = cluster_check(fmt, "stc_cluster")
    m = fmt.m
    sp, fp, wp = stu_ports(fmt), fm_mem_ports(fmt), w_mem_ports(fmt)
    cfg = dict(cfg_k=cfg_k, cfg_mode=cfg_mode, cfg_n_out=cfg_n_out, cfg_emit=cfg_emit, cfg_relu=cfg_relu,
               cfg_pool=cfg_pool, cfg_shift=cfg_shift, cfg_dense=cfg_dense)
    counters = dict(cyc_compute=cyc_compute, cyc_drain=cyc_drain, n_rounds=n_rounds, n_mults=n_mults,
                    n_deferred=n_deferred, nnz_out=nnz_out)
    insts = []

    def sig(ports: dict, name: str):
        return new_bool() if ports[name]["width"] == 1 else new_vec(ports[name]["width"])

    def per_unit(ports: dict, name: str) -> list:
        return [sig(ports, name) for _ in range(m)]

    # ---- the memory units and the shared write port
    d_ready, r_ready, dones = new_vec(m), new_vec(m), new_vec(m)
    fm_dr, fm_rr, fm_done = per_unit(fp, "wr_desc_ready"), per_unit(fp, "wr_ready"), per_unit(fp, "wr_done")
    fm_dv, fm_rv = per_unit(fp, "wr_desc_valid"), per_unit(fp, "wr_valid")
    fm_err = per_unit(fp, "err")
    fm_group = per_unit(fp, "rd_group")
    fm_rd = {f: per_unit(fp, f) for f, _ in _RD_FIELDS}
    fm_q, fm_desc = per_unit(fp, "rd_q"), per_unit(fp, "rd_desc")
    bank_eff = new_bool()
    wr_ok, wsel = new_bool(), new_vec(unit_bits(fmt))
    insts.append(_wr_route(clk, rst, wr_unit, wr_desc_valid, wr_desc_ready, wr_valid, wr_ready, wr_done, d_ready,
                           r_ready, dones, wr_ok, wsel, m))
    insts += [cat_lanes(fm_dr, d_ready), cat_lanes(fm_rr, r_ready), cat_lanes(fm_done, dones), cat_lanes(fm_err, mem_err)]
    for i in range(m):
        insts.append(_wr_hit(wr_unit, wsel, wr_ok, wr_desc_valid, wr_valid, i, fm_dv[i], fm_rv[i]))
        insts.append(fm_mem_unit(clk, rst, wr_desc_valid=fm_dv[i], wr_desc_ready=fm_dr[i], wr_desc_data=wr_desc_data,
                                 wr_bank=wr_bank, wr_dense=wr_dense, wr_valid=fm_rv[i], wr_ready=fm_rr[i],
                                 wr_data=wr_data, wr_done=fm_done[i], rd_bank=bank_eff, rd_group=fm_group[i],
                                 rd_q=fm_q[i], rd_desc=fm_desc[i], err=fm_err[i], fmt=fmt,
                                 **{f: fm_rd[f][i] for f, _ in _RD_FIELDS}))

    # ---- the weight memory: m copies behind one broadcast write port
    w_rdy, w_dn = per_unit(wp, "wr_ready"), per_unit(wp, "wr_done")
    w_er, w_nz = per_unit(wp, "err"), per_unit(wp, "wnz")
    rdy_all, dn_all = new_vec(m), new_vec(m)
    s_widx, s_fcrow, s_fcidx = per_unit(sp, "w_rd_idx"), per_unit(sp, "fc_rd_row"), per_unit(sp, "fc_rd_idx")
    s_wa, s_wb, s_ww, s_wv = per_unit(sp, "w_rd_a"), per_unit(sp, "w_rd_b"), per_unit(sp, "w_rd_w"), \
        per_unit(sp, "w_rd_valid")
    s_fcw = per_unit(sp, "fc_rd_w")
    for u in range(m):
        insts.append(w_mem(clk, rst, cfg_k=w_cfg_k, cfg_dense=w_cfg_dense, wr_start=w_start, wr_valid=w_valid,
                           wr_ready=w_rdy[u], wr_data=w_data, wr_done=w_dn[u], wnz=w_nz[u], rd_idx=s_widx[u],
                           rd_a=s_wa[u], rd_b=s_wb[u], rd_w=s_ww[u], rd_valid=s_wv[u], fc_we=fc_we, fc_row=fc_row,
                           fc_col=fc_col, fc_data=fc_data, fc_rd_row=s_fcrow[u], fc_rd_idx=s_fcidx[u],
                           fc_rd_w=s_fcw[u], err=w_er[u], fmt=fmt))
    insts += [cat_lanes(w_rdy, rdy_all), cat_lanes(w_dn, dn_all), wire(w_nz[0], w_wnz),
              _w_join(rdy_all, dn_all, w_er, w_ready, w_done, w_err, m)]

    # ---- pass control
    go, ustart = new_bool(), new_vec(m)
    from_prev, sel_eff = (new_vec(m), new_vec(m)) if m > 1 else (None, None)
    s_done = per_unit(sp, "done")
    insts.append(cat_lanes(s_done, unit_done))
    insts.append(_pass_ctl(clk, rst, start, route_sel, cfg_active, cfg_bank, unit_done, busy, cluster_done,
                           cluster_cycles, err, unit_active, go, ustart, from_prev, sel_eff, bank_eff, m))

    # ---- routing: memory unit i -> STU i or (i+1) mod m
    s_group = per_unit(sp, "rd_group")
    for i in range(m):
        if m == 1:
            insts.append(wire(s_group[0], fm_group[0]))
        else:
            sel_i = new_bool()
            insts += [bit_of(sel_eff, i, sel_i), mux2(sel_i, s_group[i], s_group[(i + 1) % m], fm_group[i])]
    s_rd = {f: per_unit(sp, f) for _, f in _RD_FIELDS}
    r_q, r_desc = per_unit(fp, "rd_q"), per_unit(fp, "rd_desc")
    for u in range(m):
        srcs = [(fm_rd[a], s_rd[b]) for a, b in _RD_FIELDS] + [(fm_q, r_q), (fm_desc, r_desc)]
        if m == 1:
            insts += [wire(a[0], b[0]) for a, b in srcs]
        else:
            fp_u = new_bool()
            insts.append(bit_of(from_prev, u, fp_u))
            insts += [mux2(fp_u, a[u], a[(u - 1) % m], b[u]) for a, b in srcs]

    # ---- the STUs
    f = desc_lsb()
    s_h, s_w = per_unit(sp, "cfg_h"), per_unit(sp, "cfg_w")
    s_start, s_busy, s_err = per_unit(sp, "start"), per_unit(sp, "busy"), per_unit(sp, "err")
    s_ov, s_or, s_od = per_unit(sp, "o_valid"), per_unit(sp, "o_ready"), per_unit(sp, "o_data")
    s_cnt = {n: per_unit(sp, n) for n in _UNIT_COUNTERS}
    s_desc = [new_vec(DESC_BITS) for _ in range(m)]
    # the accumulator taps (and the u = 2 FIFO occupancy) are for the STU's own testbench
    taps = {n: per_unit(sp, n) for n in ("acc_we", "acc_addr", "fifo_occ") if n in sp}
    for u in range(m):
        dh, dw_ = new_vec(f["h"][1]), new_vec(f["w"][1])
        insts += [bit_of(ustart, u, s_start[u]) if m > 1 else resize(ustart, s_start[u]),
                  part(r_desc[u], f["h"][0], f["h"][1], dh), part(r_desc[u], f["w"][0], f["w"][1], dw_),
                  _size_cfg(dh, fmt.hmax, s_h[u]), _size_cfg(dw_, fmt.wmax, s_w[u]),
                  _desc_reg(clk, rst, go, s_start[u], r_desc[u], s_desc[u]),
                  bit_of(o_ready, u, s_or[u]) if m > 1 else wire(o_ready, s_or[u])]
        insts.append(stu(clk, rst, start=s_start[u], cfg_h=s_h[u], cfg_w=s_w[u], cfg_nnz=r_q[u], cfg_wnz=w_nz[u],
                         busy=s_busy[u], done=s_done[u], err=s_err[u], rd_group=s_group[u], w_rd_idx=s_widx[u],
                         w_rd_a=s_wa[u], w_rd_b=s_wb[u], w_rd_w=s_ww[u], w_rd_valid=s_wv[u], fc_rd_row=s_fcrow[u],
                         fc_rd_idx=s_fcidx[u], fc_rd_w=s_fcw[u], o_valid=s_ov[u], o_ready=s_or[u], o_data=s_od[u],
                         fmt=fmt, **{n: t[u] for n, t in taps.items()}, **cfg, **{b: s_rd[b][u] for _, b in _RD_FIELDS},
                         **{n: s_cnt[n][u] for n in _UNIT_COUNTERS}))
    insts += [_sink(t[u]) for t in taps.values() for u in range(m)]
    insts += [cat_lanes(s_busy, unit_busy), cat_lanes(s_err, unit_err), cat_lanes(s_ov, o_valid), cat_lanes(s_od, o_data),
              cat_lanes(s_desc, unit_desc)]
    insts += [cat_lanes(s_cnt[n], counters[n]) for n in _UNIT_COUNTERS]
    return insts


def cluster_ports(fmt: SparseParams) -> dict[str, dict]:
    """Port list of :func:`stc_cluster` (name -> dir, width, doc); the memories' and the
    STU's ports keep their widths and meaning (docs/sparse.md section 9)."""
    m = fmt.m
    sp, fp, wp = stu_ports(fmt), fm_mem_ports(fmt), w_mem_ports(fmt)

    def packed(ports: dict, name: str, doc: str) -> dict:
        w = ports[name]["width"]
        return port(ports[name]["dir"], m * w, f"{doc}: unit u's at [u*{w} +: {w}]")

    out = {"clk": sp["clk"], "rst": port("in", 1, "synchronous active-high reset (memories, STUs, pass state)")}
    out["wr_unit"] = port("in", unit_bits(fmt), "memory unit of the next descriptor (sampled with it; < m)")
    out.update({n: fp[n] for n in ("wr_desc_valid", "wr_desc_ready", "wr_desc_data", "wr_bank", "wr_dense",
                                   "wr_valid", "wr_ready", "wr_data", "wr_done")})
    out["wr_desc_ready"] = port("out", 1, "sub-FM descriptor: ready while no memory unit has an open job")
    out["mem_err"] = packed(fp, "err", "memory units' sticky " + ",".join(SparseParams.MEM_ERR_NAMES))
    out.update({
        "w_cfg_k": wp["cfg_k"], "w_cfg_dense": wp["cfg_dense"],
        "w_start": port("in", 1, "weight memory: empty the conv region and open a weight job"),
        "w_valid": port("in", 1, "weight entries {LAST, A, B, W}: valid"),
        "w_ready": port("out", 1, "weight entries: ready"),
        "w_data": port("in", fmt.weight_bits, "weight entries {LAST, A, B, W} (broadcast to every unit)"),
        "w_done": port("out", 1, "one-cycle pulse after the weight job's LAST handshake"),
        "w_wnz": wp["wnz"],
        "w_err": port("out", wp["err"]["width"], "weight memory's sticky " + ",".join(SparseParams.W_ERR_NAMES)),
    })
    out.update({n: wp[n] for n in ("fc_we", "fc_row", "fc_col", "fc_data")})
    out.update({
        "start": port("in", 1, "start a pass (sampled with route_sel, cfg_active, cfg_bank, cfg_* while busy is low)"),
        "route_sel": port("in", m, "bit i: memory unit i feeds STU i (0) or STU (i+1) mod m (1)"),
        "cfg_active": port("in", m, "bit i: memory unit i holds a job for this pass"),
        "cfg_bank": port("in", 1, "bank every memory unit is read from in this pass"),
    })
    out.update({n: sp[n] for n in _BCAST_CFG})
    out.update({
        "busy": port("out", 1, "a pass runs (from the cycle after start to the cycle before cluster_done)"),
        "cluster_done": port("out", 1, "one-cycle pulse with the last running unit's done (or after a refused pass)"),
        "cluster_cycles": port("out", fmt.cnt_bits, "cycles from the last start to cluster_done (max over the units)"),
        "err": port("out", len(CL_ERR_NAMES), "sticky " + ",".join(CL_ERR_NAMES) + " (bit 0 first)"),
        "unit_active": port("out", m, "bit u: STU u runs a job in this pass (registered at start)"),
        "unit_busy": port("out", m, "bit u: STU u's busy"),
        "unit_done": port("out", m, "bit u: STU u's done pulse"),
        "unit_desc": port("out", m * DESC_BITS, f"descriptor of the memory unit feeding STU u at [u*{DESC_BITS} +: "
                                                f"{DESC_BITS}] (registered at start; ORG places the result)"),
        "unit_err": packed(sp, "err", "STUs' sticky " + ",".join(SparseParams.STU_ERR_NAMES)),
        "o_valid": port("out", m, "bit u: STU u's output stream valid"),
        "o_ready": port("in", m, "bit u: STU u's output stream ready"),
        "o_data": packed(sp, "o_data", "STUs' output words {LAST, ROW, COL, VAL}"),
    })
    out.update({n: packed(sp, n, sp[n]["doc"]) for n in _UNIT_COUNTERS})
    return out


def cluster_timing(fmt: SparseParams) -> dict:
    """Timing facts of the cluster (recorded in the JSON sidecar)."""
    return {
        "unit": stu_timing(fmt),
        "cluster_cycles": "max over the running units of their start-to-done; 1 for a refused pass or no unit",
        "cluster_done": "combinational, in the cycle of the last running unit's done",
        "weight_memory": f"{fmt.m} copies of w_mem behind one broadcast write port",
        "routing": "combinational; the inputs while idle, the values sampled at start during a pass",
    }


def emit_cluster(fmt: SparseParams, outdir: Path | str, name: str = "stc_cluster") -> Emitted:
    """Write the cluster for ``fmt`` as ``<outdir>/<name>.v`` plus its JSON record.

    Raises:
        ParamError: ``fmt`` is not a SparseParams, the STU or the memory unit cannot be
            built for it (:func:`cluster_check`), or ``name`` is a keyword.
    """
    cluster_check(fmt, name)
    return emit_stream_unit(stc_cluster, fmt, SparseParams, cluster_ports, outdir, name, family="sparse",
                            timing=cluster_timing(fmt),
                            doc=f"sparse tensor compute cluster: {fmt.m} x (fm_mem_unit + STU), broadcast weights, "
                                "route_sel switch, cluster_done and cluster_cycles")
