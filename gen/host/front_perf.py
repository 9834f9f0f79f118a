"""The front end's performance counters (docs/host.md sections 4 and 6):
``HostParams.cnt_bits`` bits each (the CSR read zero-extends them to 32), wrapping modulo
``2**cnt_bits``, reset 0, cleared together by PERF_CTRL bit 0 (a clear wins over a count
in its cycle)."""

from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from lockstep.models.host import ST

from ..common import new_vec


__all__ = ["COUNTERS", "front_perf"]

#: The counters, in the order :func:`front_perf` and ``front_csr.csr_read`` take them.
COUNTERS = ("PERF_BUSY", "PERF_TOTAL", "PERF_DONE", "PERF_ERR", "PERF_RD_BEATS", "PERF_WR_BEATS", "PERF_CQ_STALL",
            "PERF_BUSY1", "PERF_MEM_STALL")


@block
def _counter(clk, rst, clr, inc, q):
    """``q <= 0`` on ``clr``, else ``q + inc`` (``inc`` zero-extended to ``len(q)``,
    wrapping modulo ``2**len(q)``)."""
    incx = new_vec(len(q))
    k = len(q) - len(inc)

    @always_comb
    def ext():
        incx.next = concat(intbv(0)[k:], inc)

    @always_seq(clk.posedge, reset=rst)
    def count():
        if clr:
            q.next = 0
        else:
            q.next = q + incx

    return ext, count


@block
def _events(en, kb0, wr, sel_d, rd_beat, wr_beat, cq_full, any_cpl, fe_req, e_busy, e_tot, e_done, e_err, e_rd,
            e_wr, e_cqs):
    """This cycle's increments: kernel 0 busy, ``en``, an OK / an error completion written,
    the memory port's accepted read / write, a completion waiting on a full CQ (a kernel's
    or the front end's)."""
    s_ok = ST["OK"]
    st_lo, st_hi = 16, 20  # packed completion: status bits

    @always_comb
    def ev():
        e_busy.next = kb0
        e_tot.next = en
        e_done.next = wr and sel_d[st_hi:st_lo] == s_ok
        e_err.next = wr and sel_d[st_hi:st_lo] != s_ok
        e_rd.next = rd_beat
        e_wr.next = wr_beat
        e_cqs.next = cq_full and (any_cpl or fe_req)

    return ev


@block
def _stalls2(s0, s1, n):
    """``n`` (2 bits) = ``s0 + s1``: the kernels whose memory request waits this cycle."""

    @always_comb
    def count():
        if s0 and s1:
            n.next = 2
        elif s0 or s1:
            n.next = 1
        else:
            n.next = 0

    return count


@block
def front_perf(clk, rst, clr, en, kb, wr, sel_d, rd_beat, wr_beat, cq_full, any_cpl, fe_req, stalls, cnt):
    """The counters of :data:`COUNTERS` into the list ``cnt`` (``cnt_bits``-wide signals,
    the width the caller gives them; PERF_BUSY1 is a constant 0 with one kernel).

    Ports:
        clr: PERF_CTRL bit 0 written.
        en: CTRL.enable; kb: list of the kernels' busy bits.
        wr, sel_d: a completion written to the CQ and the packed completion.
        rd_beat, wr_beat: the shared memory port accepted a read / a write.
        cq_full, any_cpl, fe_req: the CQ is full while a kernel or the front end waits.
        stalls: list of the kernels' ``k_stall`` bits; PERF_MEM_STALL adds how many
            kernels wait in a cycle.
    """
    ev = [new_vec(1) for _ in range(7)]
    e_busy, e_tot, e_done, e_err, e_rd, e_wr, e_cqs = ev
    insts = [_events(en, kb[0], wr, sel_d, rd_beat, wr_beat, cq_full, any_cpl, fe_req, e_busy, e_tot, e_done, e_err,
                     e_rd, e_wr, e_cqs)]
    c_busy, c_tot, c_done, c_err, c_rd, c_wr, c_cqs, c_busy1, c_mst = cnt
    for e, c in zip(ev, (c_busy, c_tot, c_done, c_err, c_rd, c_wr, c_cqs)):
        insts.append(_counter(clk, rst, clr, e, c))
    if len(kb) == 1:  # one kernel: PERF_MEM_STALL counts its stall cycles, PERF_BUSY1 is the caller's 0
        insts.append(_counter(clk, rst, clr, stalls[0], c_mst))
    else:
        e_mst = new_vec(2)
        insts += [_stalls2(stalls[0], stalls[1], e_mst), _counter(clk, rst, clr, e_mst, c_mst),
                  _counter(clk, rst, clr, kb[1], c_busy1)]
    return insts
